/* AVX-512 helpers shared by the fast kernels that are written with intrinsics (attention.c,
 * pgemm.c).  Each is compiled for AVX-512F through a target attribute: call them only from
 * code that has checked the processor has it. */
#ifndef GE_BACKEND_CPU_FAST_AVX512_H
#define GE_BACKEND_CPU_FAST_AVX512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* e^x in 16 lanes, the method of ge_fast_expf (fast_math.h): x clamped to [-87, 88.38],
   x = n ln2 + r, the Cephes polynomial, 2^n by scalef; 0 below -87 (a NaN lane gives e^-87). */
__attribute__((target("avx512f"))) static inline __m512 ge_fast_exp16(__m512 x0) {
  __m512 x = _mm512_min_ps(_mm512_max_ps(x0, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.37626f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  p = _mm512_scalef_ps(p, n);
  __mmask16 tiny = _mm512_cmp_ps_mask(x0, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(tiny, p, _mm512_setzero_ps());
}
#endif

#endif
