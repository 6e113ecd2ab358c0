/* Run-time CPU dispatch: a function marked GE_CPU_CLONES is compiled for AVX-512
 * (x86-64-v4), AVX2+FMA (x86-64-v3) and baseline x86-64, and the loader picks the best for
 * the processor it runs on (GNU ifunc).  The binary never requires more than x86-64.
 *
 * ThreadSanitizer runs ifunc resolvers before its own runtime is ready and crashes, so TSan
 * builds get the baseline version only; so do compilers without target_clones (clang builds
 * of the fuzzer). */
#ifndef GE_BACKEND_CPU_DISPATCH_H
#define GE_BACKEND_CPU_DISPATCH_H

#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define GE_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GE_CPU_CLONES
#endif

/* Before a loop whose output may be one of its inputs at the same positions (an in-place
   element-wise kernel): there is no loop-carried dependence, so vectorise without restrict. */
#if defined(__clang__)
#define GE_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define GE_IVDEP _Pragma("GCC ivdep")
#else
#define GE_IVDEP
#endif

/* The processor has AVX-512 F and FMA: what pgemm's and the stem convolution's float32
   micro-kernels (target "avx512f,fma") need. */
static inline bool ge_cpu_avx512_fma(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

/* The processor has AVX-512 F, BW and VL: what ge's AVX-512 kernels written with intrinsics
   on 8/16-bit lanes and 256-bit halves are compiled for.  The processor's own answer, whatever
   oneDNN's ISA ceiling (ONEDNN_MAX_CPU_ISA). */
static inline bool ge_cpu_avx512_bw_vl(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

/* The processor has AVX-512 F, BW and VL (above) and AVX512-BF16: what ge's bf16 kernels
   written with intrinsics are compiled for (target avx512f,avx512bw,avx512vl,avx512bf16). */
static inline bool ge_cpu_avx512_bf16(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return ge_cpu_avx512_bw_vl() && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

#endif
