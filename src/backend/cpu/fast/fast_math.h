/* Vectorisable math for the fast kernels (family-private).  Plain C the compiler turns into
 * AVX-512 / AVX2 code inside functions built with target_clones. */
#ifndef GE_BACKEND_CPU_FAST_MATH_H
#define GE_BACKEND_CPU_FAST_MATH_H

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

#endif
