/* Run-time CPU dispatch: a function marked GE_CPU_CLONES is compiled for AVX-512
 * (x86-64-v4), AVX2+FMA (x86-64-v3) and baseline x86-64, and the loader picks the best for
 * the processor it runs on (GNU ifunc).  The binary never requires more than x86-64.
 *
 * ThreadSanitizer runs ifunc resolvers before its own runtime is ready and crashes, so TSan
 * builds get the baseline version only; so do compilers without target_clones (clang builds
 * of the fuzzer). */
#ifndef GE_BACKEND_CPU_DISPATCH_H
#define GE_BACKEND_CPU_DISPATCH_H

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

#endif
