/* Vectorisable math for the fast kernels (family-private).  Plain C the compiler turns into
 * AVX-512 / AVX2 code inside functions built with target_clones. */
#ifndef GE_BACKEND_CPU_FAST_MATH_H
#define GE_BACKEND_CPU_FAST_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/cpu_dispatch.h"

/* The CPU dispatch of cpu_dispatch.h (AVX-512 / AVX2 / baseline, baseline only under TSan),
   with O3 for the vectoriser's full cost model (the build is -O2, which skips loops with
   tails). */
#if defined(__GNUC__) && !defined(__clang__)
#define GE_FAST_CLONES GE_CPU_CLONES __attribute__((optimize("O3")))
#else
#define GE_FAST_CLONES GE_CPU_CLONES
#endif

/* e^x for float32, about 2 ulp over the normal range: x = n ln2 + r, |r| <= ln2/2, e^r by the
   Cephes polynomial, 2^n through the exponent bits.  x is clamped to [-87, 88.37]; below -87
   the result is 0 (never subnormal, e^-inf is 0); NaN stays NaN. */
static inline float ge_fast_expf(float x0) {
  float x = x0 < -87.0f ? -87.0f : x0;
  x = x > 88.37626f ? 88.37626f : x;
  float n = x * 1.44269504088896341f + 12582912.0f; /* round to nearest */
  n -= 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t e = (int32_t)n + 127;
  uint32_t bits = (uint32_t)e << 23;
  float s;
  memcpy(&s, &bits, sizeof s);
  /* below -87 the result would be subnormal (slow in everything that reads it): 0 */
  return x0 < -87.0f ? 0.0f : p * s;
}

/* Lanes of the row loops below: independent accumulators the compiler keeps in one vector. */
#define GE_FAST_LANES 16

/* The largest of x[0..n) (-inf when n == 0). */
static inline float ge_fast_row_max(const float *x, size_t n) {
  float lm[GE_FAST_LANES];
  for (size_t l = 0; l < GE_FAST_LANES; l++) lm[l] = -INFINITY;
  size_t i = 0;
  for (; i + GE_FAST_LANES <= n; i += GE_FAST_LANES)
    for (size_t l = 0; l < GE_FAST_LANES; l++) lm[l] = x[i + l] > lm[l] ? x[i + l] : lm[l];
  float mx = -INFINITY;
  for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (size_t l = 0; l < GE_FAST_LANES; l++) mx = lm[l] > mx ? lm[l] : mx;
  return mx;
}

/* The sum of x[0..n), in GE_FAST_LANES partial sums (the tail first, then the lanes). */
static inline float ge_fast_row_sum(const float *x, size_t n) {
  float ls[GE_FAST_LANES] = {0};
  size_t i = 0;
  for (; i + GE_FAST_LANES <= n; i += GE_FAST_LANES)
    for (size_t l = 0; l < GE_FAST_LANES; l++) ls[l] += x[i + l];
  float sum = 0.f;
  for (; i < n; i++) sum += x[i];
  for (size_t l = 0; l < GE_FAST_LANES; l++) sum += ls[l];
  return sum;
}

/* y = softmax(x) over n elements, given mx = ge_fast_row_max(x, n); y may be x. */
static inline void ge_fast_softmax_from_max(const float *x, float *y, size_t n, float mx) {
  GE_IVDEP for (size_t i = 0; i < n; i++) y[i] = ge_fast_expf(x[i] - mx);
  float inv = 1.f / ge_fast_row_sum(y, n);
  GE_IVDEP for (size_t k = 0; k < n; k++) y[k] *= inv;
}

#endif
