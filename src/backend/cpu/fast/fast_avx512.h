/* AVX-512 helpers shared by the fast kernels that are written with intrinsics (attention.c,
 * pgemm.c, amx.c).  Each is compiled for AVX-512F through a target attribute: call them only from
 * code that has checked the processor has it. */
#ifndef GE_BACKEND_CPU_FAST_AVX512_H
#define GE_BACKEND_CPU_FAST_AVX512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stddef.h>

/* The mask of the lanes [off, off + 16) that fall below nn: the columns of a 16-wide vector at
   offset off in a row of nn valid ones (0 past them). */
static inline __mmask16 ge_fast_cols_mask(size_t nn, size_t off) {
  if (nn <= off) return 0;
  size_t v = nn - off;
  return v >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << v) - 1u);
}

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

/* GELU (erf form), 16 lanes: 0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(z) = 2 - erfc(z) for
   z >= 0 and erfc(|z|) for z < 0 (no cancellation), erfc by the fit the element-wise Gelu uses
   (fast/ew.c fo_erfc_pos, fractional error 1.2e-7), 1 / (1 + |z|/2) by a reciprocal estimate
   and a Newton step.  Against 0.5 x (1 + erf) in double over [-10, 10]: absolute error 3.7e-7,
   relative 1.6e-6 where |GELU| > 1e-6; 0.73 ns an element against 1.72 for the element-wise
   loop (scratch benchmark, 1 thread), which BERT's FFN pays for 393K elements a layer (pgemm.c, amx.c). */
__attribute__((target("avx512f,fma"))) static inline __m512 ge_fast_gelu16(__m512 v) {
  /* |z| capped at 10 (erfc is 0 in float32 from about 9.2 on), so that an infinite x gives
     t = 1/6 rather than a reciprocal of infinity times zero: GELU(+inf) = +inf, GELU(-inf) = NaN
     as 0.5 x (1 + erf) gives, and a NaN stays NaN */
  __m512 az = _mm512_min_ps(_mm512_abs_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.7071067811865476f))), _mm512_set1_ps(10.f));
  __m512 d = _mm512_fmadd_ps(az, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.f));
  __m512 t = _mm512_rcp14_ps(d);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.f)));
  static const float c[10] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f,
                              -0.18628806f, 0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f};
  __m512 p = _mm512_set1_ps(c[0]);
  for (int i = 1; i < 10; i++) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c[i]));
  __m512 ec = _mm512_mul_ps(t, ge_fast_exp16(_mm512_fnmadd_ps(az, az, p)));
  __mmask16 pos = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
  __m512 one_p = _mm512_mask_sub_ps(ec, pos, _mm512_set1_ps(2.f), ec);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), one_p);
}

/* GELU, tanh form, 16 lanes: 0.5 x (1 + tanh u) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715
   x^3): no cancellation at either end (x for large u, x e^(2u) -> 0 for very negative u). */
__attribute__((target("avx512f,fma"))) static inline __m512 ge_fast_gelu_tanh16(__m512 v) {
  __m512 v3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
  __m512 u2 = _mm512_mul_ps(_mm512_fmadd_ps(v3, _mm512_set1_ps(0.044715f), v), _mm512_set1_ps(-1.5957691216057308f));
  __m512 d = _mm512_add_ps(_mm512_set1_ps(1.f), ge_fast_exp16(u2));
  __m512 r = _mm512_rcp14_ps(d);
  r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.f)));
  /* e^(-2u) past float32 (x below about -9.4): the factor is 0, so that GELU(-inf) is NaN as
     0.5 x (1 + tanh u) gives (and a finite x gives -0, its value to float32 precision) */
  r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u2, _mm512_set1_ps(88.f), _CMP_LE_OQ), r);
  return _mm512_mul_ps(v, r);
}
#endif

#endif
