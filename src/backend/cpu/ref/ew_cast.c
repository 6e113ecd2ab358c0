/* Cast, CastLike and Where reference kernels (elementwise family). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/broadcast.h"
#include "backend/cpu/ref/ew_common.h"
#include "ir/dtype_lowp.h"

/* ------------------------------------------------------------------ numeric conversions */

/* float -> int truncates toward zero; NaN -> 0; beyond the int64 range saturates; narrower
   types then wrap (what numpy does on x86). */
static inline int64_t f2i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}
static inline uint64_t f2u64(double x) {
  if (x != x) return 0;
  if (x >= 18446744073709551615.0) return UINT64_MAX;
  if (x >= 9223372036854775807.0) return (uint64_t)x;
  return (uint64_t)f2i64(x);
}

#define CV_I8(x) ((int8_t)f2i64(x))
#define CV_I16(x) ((int16_t)f2i64(x))
#define CV_I32(x) ((int32_t)f2i64(x))
#define CV_I64(x) (f2i64(x))
#define CV_U8(x) ((uint8_t)f2i64(x))
#define CV_U16(x) ((uint16_t)f2i64(x))
#define CV_U32(x) ((uint32_t)f2i64(x))
#define CV_U64(x) (f2u64(x))

/* kinds: F float, I int, B bool (stored as uint8 0/1) */
#define NATIVE(X)                                                                             \
  X(F32, float, F) X(F64, double, F) X(I8, int8_t, I) X(I16, int16_t, I) X(I32, int32_t, I)   \
  X(I64, int64_t, I) X(U8, uint8_t, I) X(U16, uint16_t, I) X(U32, uint32_t, I)                \
  X(U64, uint64_t, I) X(BOOL, uint8_t, B)
#define NATIVE_DST(X)                                                                         \
  X(F32, float, F) X(F64, double, F) X(I8, int8_t, I) X(I16, int16_t, I) X(I32, int32_t, I)   \
  X(I64, int64_t, I) X(U8, uint8_t, I) X(U16, uint16_t, I) X(U32, uint32_t, I)                \
  X(U64, uint64_t, I) X(BOOL, uint8_t, B)

#define CONV_FF(DTAG, DT, x) ((DT)(x))
#define CONV_FI(DTAG, DT, x) (CV_##DTAG((double)(x)))
#define CONV_FB(DTAG, DT, x) ((DT)((x) != 0))
#define CONV_IF(DTAG, DT, x) ((DT)(x))
#define CONV_II(DTAG, DT, x) ((DT)(x))
#define CONV_IB(DTAG, DT, x) ((DT)((x) != 0))
#define CONV_BF(DTAG, DT, x) ((DT)((x) != 0))
#define CONV_BI(DTAG, DT, x) ((DT)((x) != 0))
#define CONV_BB(DTAG, DT, x) ((DT)((x) != 0))

#define CAST_CASE_F(DTAG, DT, DKIND) CAST_CASE(F, DTAG, DT, DKIND)
#define CAST_CASE_I(DTAG, DT, DKIND) CAST_CASE(I, DTAG, DT, DKIND)
#define CAST_CASE_B(DTAG, DT, DKIND) CAST_CASE(B, DTAG, DT, DKIND)
#define CAST_CASE(SKIND, DTAG, DT, DKIND)                               \
  case GE_##DTAG: {                                                     \
    DT *restrict o = dst;                                               \
    for (size_t i = 0; i < n; i++) o[i] = CONV_##SKIND##DKIND(DTAG, DT, s[i]); \
  } break;

#define DEF_CAST_FROM(STAG, ST, SKIND)                                                   \
  static bool cast_from_##STAG(const void *src, ge_dtype ddt, void *dst, size_t n) {     \
    const ST *restrict s = src;                                                          \
    switch (ddt) {                                                                       \
      NATIVE_DST(CAST_CASE_##SKIND)                                                      \
      default:                                                                           \
        return false;                                                                    \
    }                                                                                    \
    return true;                                                                         \
  }
NATIVE(DEF_CAST_FROM)

static bool cast_native(ge_dtype sdt, const void *src, ge_dtype ddt, void *dst, size_t n) {
#define FROM_CASE(STAG, ST, SKIND) \
  case GE_##STAG:                  \
    return cast_from_##STAG(src, ddt, dst, n);
  switch (sdt) {
    NATIVE(FROM_CASE)
    default:
      return false;
  }
#undef FROM_CASE
}

static bool is_native(ge_dtype dt) {
  return dt != GE_F16 && dt != GE_BF16 && dt != GE_STRING && dt < GE_DTYPE_COUNT &&
         !ge_dtype_is_lowp(dt);
}

/* ------------------------------------------------------------------ strings */

static char *fmt_number(ge_dtype dt, const void *src, size_t i, char *buf, size_t cap) {
  double d = 0;
  switch (dt) {
    case GE_F32: d = ((const float *)src)[i]; break;
    case GE_F64: d = ((const double *)src)[i]; break;
    case GE_F16: d = ge_f16_to_f32(((const uint16_t *)src)[i]); break;
    case GE_BF16: d = ge_bf16_to_f32(((const uint16_t *)src)[i]); break;
    case GE_I8: snprintf(buf, cap, "%d", ((const int8_t *)src)[i]); return buf;
    case GE_I16: snprintf(buf, cap, "%d", ((const int16_t *)src)[i]); return buf;
    case GE_I32: snprintf(buf, cap, "%d", ((const int32_t *)src)[i]); return buf;
    case GE_I64: snprintf(buf, cap, "%lld", (long long)((const int64_t *)src)[i]); return buf;
    case GE_U8: snprintf(buf, cap, "%u", ((const uint8_t *)src)[i]); return buf;
    case GE_U16: snprintf(buf, cap, "%u", ((const uint16_t *)src)[i]); return buf;
    case GE_U32: snprintf(buf, cap, "%u", ((const uint32_t *)src)[i]); return buf;
    case GE_U64:
      snprintf(buf, cap, "%llu", (unsigned long long)((const uint64_t *)src)[i]);
      return buf;
    case GE_BOOL: snprintf(buf, cap, "%d", ((const uint8_t *)src)[i] != 0); return buf;
    default:
      if (ge_dtype_is_lowp_int(dt)) {
        snprintf(buf, cap, "%lld", (long long)ge_lowp_int_value(dt, ((const uint8_t *)src)[i]));
        return buf;
      }
      if (!ge_dtype_is_lowp(dt)) {
        snprintf(buf, cap, "?");
        return buf;
      }
      d = ge_lowp_to_f32(dt, ((const uint8_t *)src)[i]);
      break;
  }
  if (isnan(d)) {
    snprintf(buf, cap, "NaN");
  } else if (isinf(d)) {
    snprintf(buf, cap, d < 0 ? "-INF" : "INF");
  } else {
    /* shortest text that reads back as the same value of the source type */
    int maxp = dt == GE_F64 ? 17 : 9;
    for (int p = 1; p <= maxp; p++) {
      snprintf(buf, cap, "%.*g", p, d);
      if (dt == GE_F64 ? strtod(buf, NULL) == d : strtof(buf, NULL) == (float)d) break;
    }
  }
  return buf;
}

static ge_status to_strings(ge_dtype sdt, const void *src, char **dst, size_t n) {
  char buf[64];
  const char *const *ss = src;
  for (size_t i = 0; i < n; i++) {
    const char *t = sdt == GE_STRING ? (ss[i] ? ss[i] : "") : fmt_number(sdt, src, i, buf, sizeof buf);
    char *c = strdup(t);
    if (!c) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory copying strings");
    free(dst[i]);
    dst[i] = c;
  }
  return GE_OK;
}

static ge_status from_strings(const char *const *src, ge_dtype ddt, void *dst, size_t n) {
  double dbuf[GE_EW_BLOCK];
  int64_t ibuf[GE_EW_BLOCK];
  bool as_int = (ge_dtype_is_int(ddt) && ddt != GE_U64) || ge_dtype_is_lowp_int(ddt);
  for (size_t i = 0; i < n; i += GE_EW_BLOCK) {
    size_t m = n - i < GE_EW_BLOCK ? n - i : GE_EW_BLOCK;
    for (size_t j = 0; j < m; j++) {
      const char *s = src[i + j] ? src[i + j] : "";
      char *end = NULL;
      errno = 0;
      if (as_int) {
        ibuf[j] = strtoll(s, &end, 10);
        if (end != s && *end && *end != ' ') { /* "1.5" or "1e3": parse as a float */
          ibuf[j] = f2i64(strtod(s, &end));
        }
      } else {
        dbuf[j] = strtod(s, &end);
      }
      if (end == s)
        return ge_error(GE_ERR_INVALID_ARGUMENT, "element %zu: cannot convert string '%.64s' to %s",
                        i + j, s, ge_dtype_name(ddt));
    }
    char *d = (char *)dst + i * ge_dtype_size(ddt);
    bool ok;
    if (as_int && ge_dtype_is_lowp_int(ddt)) {
      for (size_t j = 0; j < m; j++) ((uint8_t *)d)[j] = ge_lowp_int_code(ddt, ibuf[j]);
      ok = true;
    } else if (as_int) {
      ok = cast_native(GE_I64, ibuf, ddt, d, m);
    } else if (ge_dtype_is_lowp(ddt)) {
      float f[GE_EW_BLOCK];
      for (size_t j = 0; j < m; j++) f[j] = (float)dbuf[j];
      ge_f32_to_lowp_n(ddt, f, m, (uint8_t *)d, true, GE_E8M0_ROUND_UP);
      ok = true;
    } else if (ge_ew_is_half(ddt)) {
      float f[GE_EW_BLOCK];
      for (size_t j = 0; j < m; j++) f[j] = (float)dbuf[j];
      ge_ew_f32_to_half(ddt, f, m, (uint16_t *)d);
      ok = true;
    } else {
      ok = cast_native(GE_F64, dbuf, ddt, d, m);
    }
    if (!ok) return ge_error(GE_ERR_UNSUPPORTED, "cannot convert strings to %s", ge_dtype_name(ddt));
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ low-precision dtypes */

/* Either side float8/float4/int4/int2 (and not a string): through int64 blocks between
   integer types (exact, wrapping to the target width), through float32 blocks otherwise.
   saturate and mode are Cast's attributes for float8 targets. */
static ge_status convert_lowp(ge_dtype sdt, const void *src, ge_dtype ddt, void *dst, size_t n,
                              bool saturate, ge_e8m0_round mode) {
  bool s_int = ge_dtype_is_lowp_int(sdt) || ge_dtype_is_int(sdt) || sdt == GE_BOOL;
  bool d_int = ge_dtype_is_lowp_int(ddt) || ge_dtype_is_int(ddt) || ddt == GE_BOOL;
  size_t es = ge_dtype_size(sdt), ed = ge_dtype_size(ddt);
  if (!es || !ed || sdt == GE_STRING || ddt == GE_STRING) goto bad;
  for (size_t i = 0; i < n; i += GE_EW_BLOCK) {
    size_t m = n - i < GE_EW_BLOCK ? n - i : GE_EW_BLOCK;
    const char *s = (const char *)src + i * es;
    char *d = (char *)dst + i * ed;
    if (s_int && d_int) { /* integers: exact through int64 (wrapping) */
      int64_t v[GE_EW_BLOCK];
      if (ge_dtype_is_lowp_int(sdt)) {
        for (size_t j = 0; j < m; j++) v[j] = ge_lowp_int_value(sdt, ((const uint8_t *)s)[j]);
      } else if (!cast_native(sdt, s, GE_I64, v, m)) {
        goto bad;
      }
      if (ge_dtype_is_lowp_int(ddt)) {
        for (size_t j = 0; j < m; j++) ((uint8_t *)d)[j] = ge_lowp_int_code(ddt, v[j]);
      } else if (!cast_native(GE_I64, v, ddt, d, m)) {
        goto bad;
      }
      continue;
    }
    float f[GE_EW_BLOCK];
    /* float64 and wide ints reach float8 through float32 (two roundings), exactly as
       ml_dtypes, onnx's reference and onnxruntime do */
    if (ge_dtype_is_lowp(sdt))
      ge_lowp_to_f32_n(sdt, (const uint8_t *)s, m, f);
    else if (ge_ew_is_half(sdt))
      ge_ew_half_to_f32(sdt, (const uint16_t *)s, 1, m, f);
    else if (!cast_native(sdt, s, GE_F32, f, m))
      goto bad;
    if (ge_dtype_is_lowp(ddt))
      ge_f32_to_lowp_n(ddt, f, m, (uint8_t *)d, saturate, mode);
    else if (ge_ew_is_half(ddt))
      ge_ew_f32_to_half(ddt, f, m, (uint16_t *)d);
    else if (!cast_native(GE_F32, f, ddt, d, m))
      goto bad;
  }
  return GE_OK;
bad:
  return ge_error(GE_ERR_UNSUPPORTED, "cannot convert %s to %s", ge_dtype_name(sdt),
                  ge_dtype_name(ddt));
}

static ge_status convert_ex(ge_dtype sdt, const void *src, ge_dtype ddt, void *dst, size_t n,
                            bool saturate, ge_e8m0_round mode);

ge_status ge_ew_convert(ge_dtype sdt, const void *src, ge_dtype ddt, void *dst, size_t n) {
  return convert_ex(sdt, src, ddt, dst, n, true, GE_E8M0_ROUND_UP);
}

static ge_status convert_ex(ge_dtype sdt, const void *src, ge_dtype ddt, void *dst, size_t n,
                            bool saturate, ge_e8m0_round mode) {
  if (n == 0) return GE_OK;
  if (ddt == GE_STRING) return to_strings(sdt, src, dst, n);
  if (sdt == GE_STRING) return from_strings(src, ddt, dst, n);
  if (sdt == ddt) {
    memcpy(dst, src, n * ge_dtype_size(sdt));
    return GE_OK;
  }
  if (ge_dtype_is_lowp(sdt) || ge_dtype_is_lowp(ddt))
    return convert_lowp(sdt, src, ddt, dst, n, saturate, mode);
  if (is_native(sdt) && is_native(ddt)) {
    if (!cast_native(sdt, src, ddt, dst, n)) goto bad;
    return GE_OK;
  }
  /* through f32 blocks for f16/bf16 on either side */
  float f[GE_EW_BLOCK];
  size_t es = ge_dtype_size(sdt), ed = ge_dtype_size(ddt);
  for (size_t i = 0; i < n; i += GE_EW_BLOCK) {
    size_t m = n - i < GE_EW_BLOCK ? n - i : GE_EW_BLOCK;
    const char *s = (const char *)src + i * es;
    char *d = (char *)dst + i * ed;
    if (ge_ew_is_half(sdt))
      ge_ew_half_to_f32(sdt, (const uint16_t *)s, 1, m, f);
    else if (!cast_native(sdt, s, GE_F32, f, m))
      goto bad;
    if (ge_ew_is_half(ddt))
      ge_ew_f32_to_half(ddt, f, m, (uint16_t *)d);
    else if (!cast_native(GE_F32, f, ddt, d, m))
      goto bad;
  }
  return GE_OK;
bad:
  return ge_error(GE_ERR_UNSUPPORTED, "cannot convert %s to %s", ge_dtype_name(sdt),
                  ge_dtype_name(ddt));
}

/* ------------------------------------------------------------------ Cast / CastLike */

typedef struct cast_state {
  ge_dtype to; /* GE_DTYPE_COUNT: CastLike, from input 1 */
  bool saturate;           /* float8 targets (opset 19+) */
  ge_e8m0_round round;     /* float8e8m0 targets (opset 24+) */
} cast_state;

ge_status ge_ew_cast_prepare(const ge_prepare_ctx *p, void **state) {
  cast_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->to = GE_DTYPE_COUNT;
  s->saturate = ge_node_attr_int(p->node, "saturate", 1) != 0;
  const char *rm = ge_node_attr_string(p->node, "round_mode", "up");
  if (!strcmp(rm, "up")) {
    s->round = GE_E8M0_ROUND_UP;
  } else if (!strcmp(rm, "down")) {
    s->round = GE_E8M0_ROUND_DOWN;
  } else if (!strcmp(rm, "nearest")) {
    s->round = GE_E8M0_ROUND_NEAREST;
  } else {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "attribute 'round_mode' is '%.32s'; expected up, down or nearest", rm);
  }
  if (strcmp(p->node->op_type, "CastLike")) {
    const ge_attr_value *a = ge_node_attr(p->node, "to");
    if (!a || a->kind != GE_ATTR_KIND_INT || !ge_dtype_from_onnx((int32_t)a->i, &s->to)) {
      free(s);
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "attribute 'to' names no supported dtype");
    }
  }
  *state = s;
  return GE_OK;
}

ge_status ge_ew_cast_run(const void *state, ge_kctx *ctx) {
  const cast_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  ge_dtype to = s->to;
  if (to == GE_DTYPE_COUNT) {
    if (ctx->n_in < 2 || !ctx->in[1])
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input 1 (target_type) is missing");
    to = ctx->in[1]->dtype;
  }
  if (!y || y->dtype != to || y->numel != x->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output 0 was not allocated as %s with %zu elements",
                        ge_dtype_name(to), x->numel);
  ge_status st = convert_ex(x->dtype, x->data, to, y->data, x->numel, s->saturate, s->round);
  if (st != GE_OK) return ge_kctx_fail(ctx, st, "%s", ge_last_error());
  return GE_OK;
}

/* ------------------------------------------------------------------ Where */

ge_status ge_ew_where_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype cond[] = {GE_BOOL, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, cond));
  *state = NULL;
  return GE_OK;
}

#define WHERE_ROW(T)                                                                   \
  do {                                                                                 \
    const T *restrict xs = (const T *)px, *restrict ys = (const T *)py;               \
    T *restrict os = (T *)po;                                                          \
    if (sc == 1 && sx == 1 && sy == 1) {                                               \
      for (size_t i = 0; i < n; i++) os[i] = pc[i] ? xs[i] : ys[i];                    \
    } else {                                                                           \
      for (size_t i = 0; i < n; i++)                                                   \
        os[i] = pc[(ptrdiff_t)i * sc] ? xs[(ptrdiff_t)i * sx] : ys[(ptrdiff_t)i * sy];  \
    }                                                                                  \
  } while (0)

ge_status ge_ew_where_run(const void *state, ge_kctx *ctx) {
  const ge_tensor *c = ctx->in[0], *x = ctx->in[1], *y = ctx->in[2];
  ge_tensor *o = ctx->out[0];
  if (!c || !x || !y) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "missing input");
  if (c->dtype != GE_BOOL || x->dtype != y->dtype)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "inputs have dtypes %s, %s, %s",
                        ge_dtype_name(c->dtype), ge_dtype_name(x->dtype), ge_dtype_name(y->dtype));
  const ge_tensor *ins[3] = {c, x, y};
  ge_bcast bc;
  ge_status st = ge_bcast_init(&bc, o->dims, o->rank, ins, 3);
  if (st != GE_OK) return ge_kctx_fail(ctx, st, "%s", ge_last_error());
  if (o->dtype != x->dtype || o->numel != bc.numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output 0 was not allocated as %s",
                        ge_dtype_name(x->dtype));
  if (bc.numel == 0) return GE_OK;
  size_t es = ge_dtype_size(x->dtype);
  ge_bcast_iter it;
  ge_bcast_begin(&bc, &it);
  ptrdiff_t sc = bc.step[0], sx = bc.step[1], sy = bc.step[2];
  size_t n = bc.inner;
  for (size_t r = 0; r < bc.rows; r++, ge_bcast_next(&bc, &it)) {
    const uint8_t *pc = (const uint8_t *)c->data + it.off[0];
    const char *px = (const char *)x->data + it.off[1] * (ptrdiff_t)es;
    const char *py = (const char *)y->data + it.off[2] * (ptrdiff_t)es;
    char *po = (char *)o->data + r * n * es;
    if (x->dtype == GE_STRING) {
      char *const *xs = (char *const *)px, *const *ys = (char *const *)py;
      char **os = (char **)po;
      for (size_t i = 0; i < n; i++) {
        const char *v = pc[(ptrdiff_t)i * sc] ? xs[(ptrdiff_t)i * sx] : ys[(ptrdiff_t)i * sy];
        char *d = strdup(v ? v : "");
        if (!d) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
        free(os[i]);
        os[i] = d;
      }
      continue;
    }
    switch (es) {
      case 1: WHERE_ROW(uint8_t); break;
      case 2: WHERE_ROW(uint16_t); break;
      case 4: WHERE_ROW(uint32_t); break;
      case 8: WHERE_ROW(uint64_t); break;
      default:
        return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "no CPU kernel for dtype %s",
                            ge_dtype_name(x->dtype));
    }
  }
  return GE_OK;
}
