/* Helpers shared by the nn-family CPU kernels (see nn_util.h). */
#include "backend/cpu/ref/nn_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float *ge_nn_falloc(const ge_kctx *c, size_t n) {
  size_t bytes;
  if (__builtin_mul_overflow(n, sizeof(float), &bytes)) {
    ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "scratch of %zu floats overflows", n);
    return NULL;
  }
  float *p = malloc(bytes ? bytes : 1);
  if (!p) ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of scratch", bytes);
  return p;
}

void ge_nn_to_f32(ge_dtype dt, const void *src, float *dst, size_t n) {
  switch (dt) {
    case GE_F32: memcpy(dst, src, n * sizeof(float)); break;
    case GE_F16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = ge_f16_to_f32(s[i]); } break;
    case GE_BF16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = ge_bf16_to_f32(s[i]); } break;
    case GE_F64: { const double *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case GE_I8: { const int8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; } break;
    case GE_U8: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; } break;
    case GE_I16: { const int16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; } break;
    case GE_U16: { const uint16_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i]; } break;
    case GE_I32: { const int32_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case GE_U32: { const uint32_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case GE_I64: { const int64_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case GE_U64: { const uint64_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = (float)s[i]; } break;
    case GE_BOOL: { const uint8_t *s = src; for (size_t i = 0; i < n; i++) dst[i] = s[i] ? 1.0f : 0.0f; } break;
    default: memset(dst, 0, n * sizeof(float)); break;
  }
}

#define SAT(T, lo, hi)                                          \
  do {                                                          \
    T *d = dst;                                                 \
    for (size_t i = 0; i < n; i++) {                            \
      float v = nearbyintf(src[i]);                             \
      d[i] = v != v ? 0 : v <= (float)(lo) ? (T)(lo) : v >= (float)(hi) ? (T)(hi) : (T)v; \
    }                                                           \
  } while (0)

void ge_nn_f32_to(ge_dtype dt, const float *src, void *dst, size_t n) {
  switch (dt) {
    case GE_F32: memcpy(dst, src, n * sizeof(float)); break;
    case GE_F16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = ge_f32_to_f16(src[i]); } break;
    case GE_BF16: { uint16_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = ge_f32_to_bf16(src[i]); } break;
    case GE_F64: { double *d = dst; for (size_t i = 0; i < n; i++) d[i] = src[i]; } break;
    case GE_I8: SAT(int8_t, INT8_MIN, INT8_MAX); break;
    case GE_U8: SAT(uint8_t, 0, UINT8_MAX); break;
    case GE_I16: SAT(int16_t, INT16_MIN, INT16_MAX); break;
    case GE_U16: SAT(uint16_t, 0, UINT16_MAX); break;
    case GE_I32: SAT(int32_t, INT32_MIN, INT32_MAX); break;
    case GE_U32: SAT(uint32_t, 0, UINT32_MAX); break;
    case GE_I64: SAT(int64_t, INT64_MIN, INT64_MAX); break;
    case GE_U64: SAT(uint64_t, 0, UINT64_MAX); break;
    case GE_BOOL: { uint8_t *d = dst; for (size_t i = 0; i < n; i++) d[i] = src[i] != 0.0f; } break;
    default: break;
  }
}

ge_status ge_nn_load_f32(const ge_kctx *c, const ge_tensor *t, ge_fbuf *b) {
  b->owned = NULL;
  if (t->dtype == GE_F32) {
    b->p = t->data;
    return GE_OK;
  }
  b->owned = ge_nn_falloc(c, t->numel);
  if (!b->owned) return GE_ERR_OUT_OF_MEMORY;
  ge_nn_to_f32(t->dtype, t->data, b->owned, t->numel);
  b->p = b->owned;
  return GE_OK;
}

ge_status ge_nn_out_f32(const ge_kctx *c, ge_tensor *t, ge_fbuf *b) {
  b->owned = NULL;
  if (t->dtype == GE_F32) {
    b->p = t->data;
    return GE_OK;
  }
  b->owned = ge_nn_falloc(c, t->numel);
  if (!b->owned) return GE_ERR_OUT_OF_MEMORY;
  memset(b->owned, 0, t->numel * sizeof(float));
  b->p = b->owned;
  return GE_OK;
}

void ge_nn_store_f32(ge_tensor *t, ge_fbuf *b) {
  if (b->owned) ge_nn_f32_to(t->dtype, b->owned, t->data, t->numel);
  ge_fbuf_free(b);
}

void ge_fbuf_free(ge_fbuf *b) {
  free(b->owned);
  b->owned = NULL;
  b->p = NULL;
}

size_t ge_nn_prod(const int64_t *dims, int32_t lo, int32_t hi) {
  size_t p = 1;
  for (int32_t i = lo; i < hi; i++) p *= (size_t)dims[i];
  return p;
}

ge_status ge_nn_load_f64(const ge_kctx *c, const ge_tensor *t, ge_dbuf *b) {
  b->owned = NULL;
  if (t->dtype == GE_F64) {
    b->p = t->data;
    return GE_OK;
  }
  size_t bytes;
  if (__builtin_mul_overflow(t->numel ? t->numel : 1, sizeof(double), &bytes) || !(b->owned = malloc(bytes)))
    return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "cannot allocate %zu doubles of scratch", t->numel);
  for (size_t i = 0; i < t->numel; i++) b->owned[i] = ge_tensor_get_f64(t, i);
  b->p = b->owned;
  return GE_OK;
}

ge_status ge_nn_out_f64(const ge_kctx *c, ge_tensor *t, ge_dbuf *b) {
  b->owned = NULL;
  if (t->dtype == GE_F64) {
    b->p = t->data;
    return GE_OK;
  }
  b->owned = calloc(t->numel ? t->numel : 1, sizeof(double));
  if (!b->owned) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "cannot allocate %zu doubles of scratch", t->numel);
  b->p = b->owned;
  return GE_OK;
}

void ge_nn_store_f64(ge_tensor *t, ge_dbuf *b) {
  if (b->owned) {
    float *tmp = malloc((t->numel ? t->numel : 1) * sizeof(float));
    if (tmp) {
      for (size_t i = 0; i < t->numel; i++) tmp[i] = (float)b->owned[i];
      ge_nn_f32_to(t->dtype, tmp, t->data, t->numel);
      free(tmp);
    }
  }
  ge_dbuf_free(b);
}

void ge_dbuf_free(ge_dbuf *b) {
  free(b->owned);
  b->owned = NULL;
  b->p = NULL;
}
