/* Helpers shared by the quant, rnn and signal reference kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/qrs_util.h"

#define CONV_CASES(DT, EXPR16, EXPRB16)                                                 \
  case GE_F32: { const float *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_F64: { const double *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_F16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)EXPR16; break; } \
  case GE_BF16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)EXPRB16; break; } \
  case GE_I8: { const int8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_I16: { const int16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_I32: { const int32_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_I64: { const int64_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_U8: case GE_BOOL: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_U16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_U32: { const uint32_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; } \
  case GE_U64: { const uint64_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (DT)s[i]; break; }

void ge_qrs_to_f32(ge_dtype dt, const void *src, float *dst, size_t n) {
  switch (dt) {
    CONV_CASES(float, ge_f16_to_f32(s[i]), ge_bf16_to_f32(s[i]))
    default: memset(dst, 0, n * sizeof *dst);
  }
}

void ge_qrs_to_f64(ge_dtype dt, const void *src, double *dst, size_t n) {
  switch (dt) {
    CONV_CASES(double, ge_f16_to_f32(s[i]), ge_bf16_to_f32(s[i]))
    default: memset(dst, 0, n * sizeof *dst);
  }
}

void ge_qrs_to_i32(ge_dtype dt, const void *src, int32_t *dst, size_t n) {
  switch (dt) {
    case GE_I8: { const int8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    case GE_U8: case GE_BOOL: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    case GE_I16: { const int16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    case GE_U16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; break; }
    case GE_I32: memcpy(dst, src, n * sizeof *dst); break;
    default: {
      for (size_t i = 0; i < n; i++) {
        double v;
        ge_qrs_to_f64(dt, (const char *)src + i * ge_dtype_size(dt), &v, 1);
        dst[i] = v != v ? 0 : v <= -2147483648.0 ? INT32_MIN : v >= 2147483647.0 ? INT32_MAX : (int32_t)v;
      }
    }
  }
}

void ge_qrs_from_f32(ge_dtype dt, const float *src, void *dst, size_t n) {
  switch (dt) {
    case GE_F32: memcpy(dst, src, n * sizeof *src); break;
    case GE_F64: { double *d = dst; for (size_t i = 0; i < n; i++) d[i] = src[i]; break; }
    case GE_F16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = ge_f32_to_f16(src[i]); break; }
    case GE_BF16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = ge_f32_to_bf16(src[i]); break; }
    default: break;
  }
}

void ge_qrs_from_f64(ge_dtype dt, const double *src, void *dst, size_t n) {
  switch (dt) {
    case GE_F64: memcpy(dst, src, n * sizeof *src); break;
    case GE_F32: { float *d = dst; for (size_t i = 0; i < n; i++) d[i] = (float)src[i]; break; }
    case GE_F16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = ge_f32_to_f16((float)src[i]); break; }
    case GE_BF16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = ge_f32_to_bf16((float)src[i]); break; }
    default: break;
  }
}

void ge_qrs_int_range(ge_dtype dt, double *lo, double *hi) {
  switch (dt) {
    case GE_I8: *lo = -128; *hi = 127; break;
    case GE_U8: *lo = 0; *hi = 255; break;
    case GE_I16: *lo = -32768; *hi = 32767; break;
    case GE_U16: *lo = 0; *hi = 65535; break;
    case GE_I32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    case GE_U32: *lo = 0; *hi = 4294967295.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854775807.0; break;
  }
}

#define STORE_SAT(T)                                                                \
  {                                                                                 \
    T *d = dst;                                                                     \
    for (size_t i = 0; i < n; i++) {                                                \
      double v = src[i];                                                            \
      d[i] = v != v ? (T)0 : v <= lo ? (T)lo : v >= hi ? (T)hi : (T)v;              \
    }                                                                               \
    break;                                                                          \
  }

void ge_qrs_store_sat(ge_dtype dt, const double *src, void *dst, size_t n) {
  double lo, hi;
  ge_qrs_int_range(dt, &lo, &hi);
  switch (dt) {
    case GE_I8: STORE_SAT(int8_t)
    case GE_U8: STORE_SAT(uint8_t)
    case GE_I16: STORE_SAT(int16_t)
    case GE_U16: STORE_SAT(uint16_t)
    case GE_I32: STORE_SAT(int32_t)
    case GE_U32: STORE_SAT(uint32_t)
    case GE_I64: {
      int64_t *d = dst;
      for (size_t i = 0; i < n; i++) {
        double v = src[i];
        d[i] = v != v ? 0 : v <= lo ? INT64_MIN : v >= hi ? INT64_MAX : (int64_t)v;
      }
      break;
    }
    default: ge_qrs_from_f64(dt, src, dst, n);
  }
}

void *ge_qrs_alloc(const ge_kctx *c, size_t a, size_t b) {
  size_t bytes;
  if (ge_mul_overflow_size(a, b, &bytes) || bytes == SIZE_MAX) {
    ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "scratch of %zu x %zu bytes overflows", a, b);
    return NULL;
  }
  void *p = malloc(bytes + 1);
  if (!p) ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes of scratch", bytes);
  return p;
}

size_t ge_qrs_prod(const int64_t *dims, int32_t lo, int32_t hi) {
  size_t p = 1;
  for (int32_t i = lo; i < hi; i++) p *= (size_t)dims[i];
  return p;
}
