/* Reference CPU kernels of the reduce family: ReduceX, ArgMax/ArgMin, CumSum, and the table of
 * the whole family (the other kernels live in ref/reduce_misc.c, ref/reduce_extra.c and ref/resize.c). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/reduce_family.h"

/* ------------------------------------------------------------------ conversions */

#define LOAD_CASES(DST_T)                                                              \
  case GE_F32: { const float *s = (const float *)base + off;                           \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_F64: { const double *s = (const double *)base + off;                         \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_F16: { const uint16_t *s = (const uint16_t *)base + off;                     \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)ge_f16_to_f32(s[i]); } break; }       \
  case GE_BF16: { const uint16_t *s = (const uint16_t *)base + off;                    \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)ge_bf16_to_f32(s[i]); } break; }      \
  case GE_I8: { const int8_t *s = (const int8_t *)base + off;                          \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_I16: { const int16_t *s = (const int16_t *)base + off;                       \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_I32: { const int32_t *s = (const int32_t *)base + off;                       \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_I64: { const int64_t *s = (const int64_t *)base + off;                       \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_U8: { const uint8_t *s = (const uint8_t *)base + off;                        \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_BOOL: { const uint8_t *s = (const uint8_t *)base + off;                      \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)(s[i] != 0); } break; }               \
  case GE_U16: { const uint16_t *s = (const uint16_t *)base + off;                     \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }                      \
  case GE_U32: { const uint32_t *s = (const uint32_t *)base + off;                     \
    for (size_t i = 0; i < n; i++) { dst[i] = (DST_T)s[i]; } break; }

void ge_rd_load_f64(ge_dtype dt, const void *base, size_t off, size_t n, double *dst) {
  switch (dt) {
    LOAD_CASES(double)
    case GE_U64: {
      const uint64_t *s = (const uint64_t *)base + off;
      for (size_t i = 0; i < n; i++) dst[i] = (double)s[i];
      break;
    }
    default:
      memset(dst, 0, n * sizeof *dst);
  }
}

/* Floats convert to int64 saturating (NaN -> 0) so no cast is undefined. */
static int64_t f2i(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

static void load_i64_impl(ge_dtype dt, const void *base, size_t off, size_t n, int64_t *dst,
                          bool key) {
  switch (dt) {
    case GE_F32: {
      const float *s = (const float *)base + off;
      for (size_t i = 0; i < n; i++) dst[i] = f2i(s[i]);
      break;
    }
    case GE_F64: {
      const double *s = (const double *)base + off;
      for (size_t i = 0; i < n; i++) dst[i] = f2i(s[i]);
      break;
    }
    case GE_F16: {
      const uint16_t *s = (const uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) dst[i] = f2i(ge_f16_to_f32(s[i]));
      break;
    }
    case GE_BF16: {
      const uint16_t *s = (const uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) dst[i] = f2i(ge_bf16_to_f32(s[i]));
      break;
    }
    case GE_I8: { const int8_t *s = (const int8_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i]; } break; }
    case GE_I16: { const int16_t *s = (const int16_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i]; } break; }
    case GE_I32: { const int32_t *s = (const int32_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i]; } break; }
    case GE_I64: memcpy(dst, (const int64_t *)base + off, n * sizeof *dst); break;
    case GE_U8: { const uint8_t *s = (const uint8_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i]; } break; }
    case GE_BOOL: { const uint8_t *s = (const uint8_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i] != 0; } break; }
    case GE_U16: { const uint16_t *s = (const uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i]; } break; }
    case GE_U32: { const uint32_t *s = (const uint32_t *)base + off;
      for (size_t i = 0; i < n; i++) { dst[i] = s[i]; } break; }
    case GE_U64: {
      const uint64_t *s = (const uint64_t *)base + off;
      const uint64_t flip = key ? (UINT64_C(1) << 63) : 0;
      for (size_t i = 0; i < n; i++) dst[i] = (int64_t)(s[i] ^ flip);
      break;
    }
    default:
      memset(dst, 0, n * sizeof *dst);
  }
}

void ge_rd_load_i64(ge_dtype dt, const void *base, size_t off, size_t n, int64_t *dst) {
  load_i64_impl(dt, base, off, n, dst, false);
}

void ge_rd_load_key_i64(ge_dtype dt, const void *base, size_t off, size_t n, int64_t *dst) {
  load_i64_impl(dt, base, off, n, dst, true);
}

#define STORE_SAT_F(T, LO, HI)                                   \
  {                                                              \
    T *d = (T *)base + off;                                      \
    for (size_t i = 0; i < n; i++) {                             \
      double v = src[i];                                         \
      d[i] = v != v ? (T)0 : v <= (LO) ? (T)(LO) : v >= (HI) ? (T)(HI) : (T)v; \
    }                                                            \
    break;                                                       \
  }

void ge_rd_store_f64(ge_dtype dt, void *base, size_t off, size_t n, const double *src) {
  switch (dt) {
    case GE_F32: { float *d = (float *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = (float)src[i]; } break; }
    case GE_F64: memcpy((double *)base + off, src, n * sizeof *src); break;
    case GE_F16: { uint16_t *d = (uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = ge_f32_to_f16((float)src[i]); } break; }
    case GE_BF16: { uint16_t *d = (uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = ge_f32_to_bf16((float)src[i]); } break; }
    case GE_I8: STORE_SAT_F(int8_t, -128.0, 127.0)
    case GE_I16: STORE_SAT_F(int16_t, -32768.0, 32767.0)
    case GE_I32: STORE_SAT_F(int32_t, -2147483648.0, 2147483647.0)
    case GE_U8: STORE_SAT_F(uint8_t, 0.0, 255.0)
    case GE_U16: STORE_SAT_F(uint16_t, 0.0, 65535.0)
    case GE_U32: STORE_SAT_F(uint32_t, 0.0, 4294967295.0)
    case GE_I64: { int64_t *d = (int64_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = f2i(src[i]); } break; }
    case GE_U64: {
      uint64_t *d = (uint64_t *)base + off;
      for (size_t i = 0; i < n; i++) {
        double v = src[i];
        d[i] = v != v || v <= 0 ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
      }
      break;
    }
    case GE_BOOL: { uint8_t *d = (uint8_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = src[i] != 0; } break; }
    default:
      break;
  }
}

void ge_rd_store_i64(ge_dtype dt, void *base, size_t off, size_t n, const int64_t *src) {
  switch (dt) {
#define ST(T) { T *d = (T *)base + off; for (size_t i = 0; i < n; i++) { d[i] = (T)src[i]; } break; }
    case GE_F32: ST(float)
    case GE_F64: ST(double)
    case GE_I8: ST(int8_t)
    case GE_I16: ST(int16_t)
    case GE_I32: ST(int32_t)
    case GE_I64: ST(int64_t)
    case GE_U8: ST(uint8_t)
    case GE_U16: ST(uint16_t)
    case GE_U32: ST(uint32_t)
    case GE_U64: ST(uint64_t)
#undef ST
    case GE_F16: { uint16_t *d = (uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = ge_f32_to_f16((float)src[i]); } break; }
    case GE_BF16: { uint16_t *d = (uint16_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = ge_f32_to_bf16((float)src[i]); } break; }
    case GE_BOOL: { uint8_t *d = (uint8_t *)base + off;
      for (size_t i = 0; i < n; i++) { d[i] = src[i] != 0; } break; }
    default:
      break;
  }
}

bool ge_rd_split_axis(const ge_tensor *t, int32_t axis, size_t *outer, size_t *len, size_t *inner) {
  size_t o = 1, in = 1;
  for (int32_t d = 0; d < axis; d++)
    if (ge_mul_overflow_size(o, (size_t)t->dims[d], &o)) return false;
  for (int32_t d = axis + 1; d < t->rank; d++)
    if (ge_mul_overflow_size(in, (size_t)t->dims[d], &in)) return false;
  *outer = o;
  *len = t->rank > 0 ? (size_t)t->dims[axis] : 1;
  *inner = in;
  return true;
}

/* ------------------------------------------------------------------ ReduceX */

typedef enum red_op {
  RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L1, RED_L2, RED_LOGSUM, RED_LOGSUMEXP,
  RED_SUMSQUARE
} red_op;

static const struct { const char *name; red_op op; } red_names[] = {
    {"ReduceSum", RED_SUM},       {"ReduceMean", RED_MEAN},
    {"ReduceMax", RED_MAX},       {"ReduceMin", RED_MIN},
    {"ReduceProd", RED_PROD},     {"ReduceL1", RED_L1},
    {"ReduceL2", RED_L2},         {"ReduceLogSum", RED_LOGSUM},
    {"ReduceLogSumExp", RED_LOGSUMEXP}, {"ReduceSumSquare", RED_SUMSQUARE},
};

typedef struct reduce_state {
  red_op op;
  bool keepdims, noop, axes_input;
  size_t n_axes;
  int64_t axes[GE_MAX_RANK * 4];
} reduce_state;

enum { COMB_ADD, COMB_MUL, COMB_MAX, COMB_MIN };
enum { MAP_NONE, MAP_ABS, MAP_SQUARE, MAP_EXP };

static int red_comb(red_op op) {
  switch (op) {
    case RED_PROD: return COMB_MUL;
    case RED_MAX: return COMB_MAX;
    case RED_MIN: return COMB_MIN;
    default: return COMB_ADD;
  }
}

static int red_map(red_op op) {
  switch (op) {
    case RED_L1: return MAP_ABS;
    case RED_L2: case RED_SUMSQUARE: return MAP_SQUARE;
    default: return MAP_NONE;
  }
}

static ge_status reduce_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16, GE_I32,
                                   GE_I64, GE_U8,  GE_U16,  GE_U32, GE_U64, GE_BOOL, GE_DTYPE_COUNT};
  const ge_node *n = p->node;
  reduce_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  bool found = false;
  for (size_t i = 0; i < sizeof red_names / sizeof red_names[0]; i++)
    if (!strcmp(n->op_type, red_names[i].name)) {
      s->op = red_names[i].op;
      found = true;
    }
  if (!found) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INTERNAL, "not a reduce op");
  }
  ge_status st = ge_prepare_check_dtype(p, 0, types);
  if (st != GE_OK) {
    free(s);
    return st;
  }
  if (p->n_in > 0 && p->in[0].type && p->in[0].type->dtype == GE_BOOL && s->op != RED_MAX &&
      s->op != RED_MIN) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "input 0 of dtype bool is not supported by %s",
                           n->op_type);
  }
  s->keepdims = ge_node_attr_int(n, "keepdims", 1) != 0;
  s->axes_input = s->op == RED_SUM ? p->opset >= 13 : p->opset >= 18;
  s->noop = s->axes_input && ge_node_attr_int(n, "noop_with_empty_axes", 0) != 0;
  if (!s->axes_input) {
    const int64_t *a;
    size_t na;
    if (ge_node_attr_ints(n, "axes", &a, &na)) {
      if (na > sizeof s->axes / sizeof s->axes[0]) {
        free(s);
        return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "too many axes (%zu)", na);
      }
      memcpy(s->axes, a, na * sizeof *a);
      s->n_axes = na;
    }
  }
  *state = s;
  return GE_OK;
}

/* Identity of the reduction, in the double or the int64 domain, for output dtype dt. */
static double ident_f64(red_op op) {
  switch (op) {
    case RED_PROD: return 1.0;
    case RED_MAX: return -INFINITY;
    case RED_MIN: return INFINITY;
    default: return 0.0;
  }
}

static int64_t ident_i64(red_op op, ge_dtype dt) {
  if (op == RED_PROD) return 1;
  if (op != RED_MAX && op != RED_MIN) return 0;
  bool mx = op == RED_MAX;
  switch (dt) {
    case GE_I8: return mx ? INT8_MIN : INT8_MAX;
    case GE_I16: return mx ? INT16_MIN : INT16_MAX;
    case GE_I32: return mx ? INT32_MIN : INT32_MAX;
    case GE_I64: return mx ? INT64_MIN : INT64_MAX;
    case GE_U8: return mx ? 0 : UINT8_MAX;
    case GE_U16: return mx ? 0 : UINT16_MAX;
    case GE_U32: return mx ? 0 : (int64_t)UINT32_MAX;
    case GE_U64: return mx ? 0 : -1; /* bit pattern of UINT64_MAX */
    case GE_BOOL: return mx ? 0 : 1;
    default: return 0;
  }
}

#define RED_BLOCK 1024

/* Combine a block of mapped values into acc: reduced inner (one accumulator) or kept inner
   (one accumulator per element). */
static void comb_f64(int comb, const double *b, size_t n, double *acc, bool inner_red) {
  if (inner_red) {
    double a = *acc;
    switch (comb) {
      case COMB_ADD: {
        /* eight independent partial sums: no serial dependency, vectorizable */
        double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        size_t i = 0;
        for (; i + 8 <= n; i += 8)
          for (int q = 0; q < 8; q++) p[q] += b[i + q];
        for (; i < n; i++) p[0] += b[i];
        a += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
        break;
      }
      case COMB_MUL: for (size_t i = 0; i < n; i++) { a *= b[i]; } break;
      case COMB_MAX: for (size_t i = 0; i < n; i++) { a = (b[i] > a || b[i] != b[i]) && a == a ? b[i] : a; } break;
      case COMB_MIN: for (size_t i = 0; i < n; i++) { a = (b[i] < a || b[i] != b[i]) && a == a ? b[i] : a; } break;
    }
    *acc = a;
  } else {
    switch (comb) {
      case COMB_ADD: for (size_t i = 0; i < n; i++) { acc[i] += b[i]; } break;
      case COMB_MUL: for (size_t i = 0; i < n; i++) { acc[i] *= b[i]; } break;
      case COMB_MAX:
        for (size_t i = 0; i < n; i++)
          acc[i] = (b[i] > acc[i] || b[i] != b[i]) && acc[i] == acc[i] ? b[i] : acc[i];
        break;
      case COMB_MIN:
        for (size_t i = 0; i < n; i++)
          acc[i] = (b[i] < acc[i] || b[i] != b[i]) && acc[i] == acc[i] ? b[i] : acc[i];
        break;
    }
  }
}

static void comb_i64(int comb, bool is_unsigned, const int64_t *b, size_t n, int64_t *acc,
                     bool inner_red) {
  size_t step = inner_red ? 0 : 1;
  int64_t *a = acc;
  switch (comb) {
    case COMB_ADD:
      for (size_t i = 0; i < n; i++, a += step) *a = (int64_t)((uint64_t)*a + (uint64_t)b[i]);
      break;
    case COMB_MUL:
      for (size_t i = 0; i < n; i++, a += step) *a = (int64_t)((uint64_t)*a * (uint64_t)b[i]);
      break;
    case COMB_MAX:
      if (is_unsigned)
        for (size_t i = 0; i < n; i++, a += step) *a = (uint64_t)b[i] > (uint64_t)*a ? b[i] : *a;
      else
        for (size_t i = 0; i < n; i++, a += step) *a = b[i] > *a ? b[i] : *a;
      break;
    case COMB_MIN:
      if (is_unsigned)
        for (size_t i = 0; i < n; i++, a += step) *a = (uint64_t)b[i] < (uint64_t)*a ? b[i] : *a;
      else
        for (size_t i = 0; i < n; i++, a += step) *a = b[i] < *a ? b[i] : *a;
      break;
  }
}

typedef struct red_plan {
  int m;                       /* compacted rank (>= 1) */
  size_t dims[GE_MAX_RANK];
  size_t ostr[GE_MAX_RANK];    /* output stride per compacted dim (0: reduced) */
  bool red[GE_MAX_RANK];
  size_t count;                /* elements reduced into each output */
} red_plan;

static void make_plan(const ge_tensor *x, const bool *red, red_plan *pl) {
  int m = 0;
  pl->count = 1;
  for (int32_t d = 0; d < x->rank; d++) {
    size_t sz = (size_t)x->dims[d];
    if (red[d]) pl->count *= sz;
    if (sz == 1) continue;
    if (m > 0 && pl->red[m - 1] == red[d]) {
      pl->dims[m - 1] *= sz;
    } else {
      pl->dims[m] = sz;
      pl->red[m] = red[d];
      m++;
    }
  }
  if (m == 0) {
    pl->dims[0] = 1;
    pl->red[0] = true;
    m = 1;
  }
  pl->m = m;
  size_t s = 1;
  for (int d = m - 1; d >= 0; d--) {
    pl->ostr[d] = pl->red[d] ? 0 : s;
    if (!pl->red[d]) s *= pl->dims[d];
  }
}

/* Walks every input row (the innermost compacted dim) in order; for each calls the body with
   the input offset `ioff` and output offset `ooff`. */
#define FOR_EACH_ROW(pl, numel, BODY)                                           \
  do {                                                                          \
    size_t inner_ = (pl)->dims[(pl)->m - 1];                                    \
    size_t rows_ = inner_ ? (numel) / inner_ : 0;                               \
    size_t idx_[GE_MAX_RANK] = {0};                                             \
    size_t ooff = 0;                                                            \
    for (size_t r_ = 0; r_ < rows_; r_++) {                                     \
      size_t ioff = r_ * inner_;                                                \
      BODY                                                                      \
      for (int d_ = (pl)->m - 2; d_ >= 0; d_--) {                               \
        ooff += (pl)->ostr[d_];                                                 \
        if (++idx_[d_] < (pl)->dims[d_]) break;                                 \
        ooff -= (pl)->ostr[d_] * (pl)->dims[d_];                                \
        idx_[d_] = 0;                                                           \
      }                                                                         \
    }                                                                           \
  } while (0)

static ge_status reduce_f64(const reduce_state *s, const ge_tensor *x, ge_tensor *y,
                            const red_plan *pl, ge_kctx *ctx) {
  size_t no = y->numel;
  double *acc = malloc((no ? no : 1) * sizeof *acc);
  double *mx = NULL;
  double *buf = malloc(RED_BLOCK * sizeof *buf);
  if (!acc || !buf) {
    free(acc);
    free(buf);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory for %zu accumulators", no);
  }
  bool inner_red = pl->red[pl->m - 1];
  size_t inner = pl->dims[pl->m - 1];
  if (s->op == RED_LOGSUMEXP) {
    /* pass 1: the max of each output, used as shift */
    mx = malloc((no ? no : 1) * sizeof *mx);
    if (!mx) {
      free(acc);
      free(buf);
      return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < no; i++) mx[i] = -INFINITY;
    FOR_EACH_ROW(pl, x->numel, {
      for (size_t b0 = 0; b0 < inner; b0 += RED_BLOCK) {
        size_t nb = inner - b0 < RED_BLOCK ? inner - b0 : RED_BLOCK;
        ge_rd_load_f64(x->dtype, x->data, ioff + b0, nb, buf);
        comb_f64(COMB_MAX, buf, nb, inner_red ? mx + ooff : mx + ooff + b0, inner_red);
      }
    });
    for (size_t i = 0; i < no; i++)
      if (!isfinite(mx[i])) mx[i] = 0;
  }
  int comb = red_comb(s->op), map = red_map(s->op);
  double id = ident_f64(s->op);
  for (size_t i = 0; i < no; i++) acc[i] = id;
  FOR_EACH_ROW(pl, x->numel, {
    for (size_t b0 = 0; b0 < inner; b0 += RED_BLOCK) {
      size_t nb = inner - b0 < RED_BLOCK ? inner - b0 : RED_BLOCK;
      ge_rd_load_f64(x->dtype, x->data, ioff + b0, nb, buf);
      if (map == MAP_ABS)
        for (size_t i = 0; i < nb; i++) buf[i] = fabs(buf[i]);
      else if (map == MAP_SQUARE)
        for (size_t i = 0; i < nb; i++) buf[i] *= buf[i];
      if (mx) {
        if (inner_red) {
          double sh = mx[ooff];
          for (size_t i = 0; i < nb; i++) buf[i] = exp(buf[i] - sh);
        } else {
          const double *sh = mx + ooff + b0;
          for (size_t i = 0; i < nb; i++) buf[i] = exp(buf[i] - sh[i]);
        }
      }
      comb_f64(comb, buf, nb, inner_red ? acc + ooff : acc + ooff + b0, inner_red);
    }
  });
  switch (s->op) {
    case RED_MEAN:
      for (size_t i = 0; i < no; i++) acc[i] /= (double)pl->count;
      break;
    case RED_L2:
      for (size_t i = 0; i < no; i++) acc[i] = sqrt(acc[i]);
      break;
    case RED_LOGSUM:
      for (size_t i = 0; i < no; i++) acc[i] = log(acc[i]);
      break;
    case RED_LOGSUMEXP:
      for (size_t i = 0; i < no; i++) acc[i] = mx[i] + log(acc[i]);
      break;
    default:
      break;
  }
  ge_rd_store_f64(y->dtype, y->data, 0, no, acc);
  free(acc);
  free(buf);
  free(mx);
  return GE_OK;
}

static ge_status reduce_i64(const reduce_state *s, const ge_tensor *x, ge_tensor *y,
                            const red_plan *pl, ge_kctx *ctx) {
  size_t no = y->numel;
  int64_t *acc = malloc((no ? no : 1) * sizeof *acc);
  int64_t *buf = malloc(RED_BLOCK * sizeof *buf);
  if (!acc || !buf) {
    free(acc);
    free(buf);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory for %zu accumulators", no);
  }
  bool inner_red = pl->red[pl->m - 1];
  size_t inner = pl->dims[pl->m - 1];
  bool is_unsigned = x->dtype == GE_U8 || x->dtype == GE_U16 || x->dtype == GE_U32 ||
                     x->dtype == GE_U64 || x->dtype == GE_BOOL;
  int comb = red_comb(s->op), map = red_map(s->op);
  int64_t id = ident_i64(s->op, x->dtype);
  for (size_t i = 0; i < no; i++) acc[i] = id;
  FOR_EACH_ROW(pl, x->numel, {
    for (size_t b0 = 0; b0 < inner; b0 += RED_BLOCK) {
      size_t nb = inner - b0 < RED_BLOCK ? inner - b0 : RED_BLOCK;
      ge_rd_load_i64(x->dtype, x->data, ioff + b0, nb, buf);
      if (map == MAP_ABS && !is_unsigned)
        for (size_t i = 0; i < nb; i++) buf[i] = buf[i] < 0 ? (int64_t)(0 - (uint64_t)buf[i]) : buf[i];
      else if (map == MAP_SQUARE)
        for (size_t i = 0; i < nb; i++) buf[i] = (int64_t)((uint64_t)buf[i] * (uint64_t)buf[i]);
      comb_i64(comb, is_unsigned, buf, nb, inner_red ? acc + ooff : acc + ooff + b0, inner_red);
    }
  });
  ge_rd_store_i64(y->dtype, y->data, 0, no, acc);
  free(acc);
  free(buf);
  return GE_OK;
}

static ge_status reduce_run(const void *state, ge_kctx *ctx) {
  const reduce_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  const int64_t *axes = s->axes;
  size_t n_axes = s->n_axes;
  int64_t *axes_buf = NULL;
  if (s->axes_input && ctx->n_in > 1 && ctx->in[1]) {
    const ge_tensor *a = ctx->in[1];
    if (a->dtype != GE_I64)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input 1 (axes) must be int64, is %s",
                          ge_dtype_name(a->dtype));
    axes = a->data;
    n_axes = a->numel;
  }
  if (n_axes == 0 && s->noop) {
    if (y->numel != x->numel)
      return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel,
                          x->numel);
    if (x->nbytes) memcpy(y->data, x->data, x->nbytes);
    return GE_OK;
  }
  bool red[GE_MAX_RANK] = {false};
  if (n_axes == 0)
    for (int32_t d = 0; d < x->rank; d++) red[d] = true;
  for (size_t k = 0; k < n_axes; k++) {
    int64_t a = axes[k];
    if (a < -(int64_t)x->rank || a >= x->rank)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                          (long long)a, (int)x->rank);
    red[a < 0 ? a + x->rank : a] = true;
  }
  free(axes_buf);
  red_plan pl;
  make_plan(x, red, &pl);
  size_t expect = 1;
  for (int32_t d = 0; d < x->rank; d++)
    if (!red[d]) expect *= (size_t)x->dims[d];
  if (expect != y->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, expect);
  if (y->numel == 0) return GE_OK;
  bool f64 = ge_dtype_is_float(x->dtype) || s->op == RED_MEAN || s->op == RED_L2 ||
             s->op == RED_LOGSUM || s->op == RED_LOGSUMEXP;
  return f64 ? reduce_f64(s, x, y, &pl, ctx) : reduce_i64(s, x, y, &pl, ctx);
}

/* ------------------------------------------------------------------ ArgMax / ArgMin */

typedef struct arg_state {
  bool is_max, select_last;
  int64_t axis;
} arg_state;

static ge_status arg_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16, GE_I32,
                                   GE_I64, GE_U8,  GE_U16,  GE_U32, GE_U64, GE_BOOL, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, types));
  arg_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->is_max = !strcmp(p->node->op_type, "ArgMax");
  s->select_last = p->opset >= 12 && ge_node_attr_int(p->node, "select_last_index", 0) != 0;
  s->axis = ge_node_attr_int(p->node, "axis", 0);
  *state = s;
  return GE_OK;
}

#define ARG_LOOP(KT, LOAD, NANCHK)                                                        \
  do {                                                                                    \
    KT *best = malloc(inner * sizeof(KT)), *buf = malloc(inner * sizeof(KT));             \
    if (!best || !buf) {                                                                  \
      free(best);                                                                         \
      free(buf);                                                                          \
      free(bidx);                                                                         \
      return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");                    \
    }                                                                                     \
    for (size_t o = 0; o < outer; o++) {                                                  \
      LOAD(x->dtype, x->data, o * len * inner, inner, best);                              \
      for (size_t j = 0; j < inner; j++) bidx[j] = 0;                                     \
      for (size_t l = 1; l < len; l++) {                                                  \
        LOAD(x->dtype, x->data, (o * len + l) * inner, inner, buf);                       \
        for (size_t j = 0; j < inner; j++) {                                              \
          KT v = buf[j], b = best[j];                                                     \
          bool take = s->is_max ? (s->select_last ? v >= b : v > b)                       \
                                : (s->select_last ? v <= b : v < b);                      \
          NANCHK                                                                          \
          if (take) {                                                                     \
            best[j] = v;                                                                  \
            bidx[j] = (int64_t)l;                                                         \
          }                                                                               \
        }                                                                                 \
      }                                                                                   \
      memcpy(yd + o * inner, bidx, inner * sizeof *bidx);                                 \
    }                                                                                     \
    free(best);                                                                           \
    free(buf);                                                                            \
  } while (0)

static ge_status arg_run(const void *state, ge_kctx *ctx) {
  const arg_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  if (s->axis < -(int64_t)x->rank || s->axis >= (x->rank ? x->rank : 1))
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)s->axis, (int)x->rank);
  int32_t axis = (int32_t)(s->axis < 0 ? s->axis + x->rank : s->axis);
  size_t outer, len, inner;
  if (!ge_rd_split_axis(x, axis, &outer, &len, &inner))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 is too large");
  if (outer * inner != y->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel,
                        outer * inner);
  if (y->numel == 0) return GE_OK;
  if (len == 0)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "cannot take %s over an axis of size 0",
                        ctx->node ? ctx->node->op_type : "ArgMax");
  int64_t *yd = y->data;
  int64_t *bidx = malloc(inner * sizeof *bidx);
  if (!bidx) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  if (ge_dtype_is_float(x->dtype)) {
    /* NaN wins (first one, or last with select_last_index), as numpy does */
    ARG_LOOP(double, ge_rd_load_f64, if (v != v || b != b) take = (b == b) || (s->select_last && v != v););
  } else {
    ARG_LOOP(int64_t, ge_rd_load_key_i64, );
  }
  free(bidx);
  return GE_OK;
}

/* ------------------------------------------------------------------ CumSum */

typedef struct cumsum_state {
  bool exclusive, reverse;
} cumsum_state;

static ge_status cumsum_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16, GE_I32,
                                   GE_I64, GE_U8,  GE_U16,  GE_U32, GE_U64, GE_DTYPE_COUNT};
  static const ge_dtype axis_types[] = {GE_I32, GE_I64, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, types));
  GE_CHECK(ge_prepare_check_dtype(p, 1, axis_types));
  cumsum_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->exclusive = ge_node_attr_int(p->node, "exclusive", 0) != 0;
  s->reverse = ge_node_attr_int(p->node, "reverse", 0) != 0;
  *state = s;
  return GE_OK;
}

#define CUMSUM_LOOP(KT, LOAD, STORE, ADD)                                                 \
  do {                                                                                    \
    KT *run = malloc(inner * sizeof(KT)), *buf = malloc(inner * sizeof(KT));             \
    if (!run || !buf) {                                                                   \
      free(run);                                                                          \
      free(buf);                                                                          \
      return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");                    \
    }                                                                                     \
    for (size_t o = 0; o < outer; o++) {                                                  \
      memset(run, 0, inner * sizeof(KT));                                                 \
      for (size_t l0 = 0; l0 < len; l0++) {                                               \
        size_t l = s->reverse ? len - 1 - l0 : l0;                                        \
        size_t off = (o * len + l) * inner;                                               \
        LOAD(x->dtype, x->data, off, inner, buf);                                         \
        if (s->exclusive) {                                                               \
          STORE(y->dtype, y->data, off, inner, run);                                      \
          for (size_t j = 0; j < inner; j++) run[j] = ADD(run[j], buf[j]);                \
        } else {                                                                          \
          for (size_t j = 0; j < inner; j++) run[j] = ADD(run[j], buf[j]);                \
          STORE(y->dtype, y->data, off, inner, run);                                      \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    free(run);                                                                            \
    free(buf);                                                                            \
  } while (0)

#define ADD_F(a, b) ((a) + (b))
#define ADD_I(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))

static ge_status cumsum_run(const void *state, ge_kctx *ctx) {
  const cumsum_state *s = state;
  const ge_tensor *x = ctx->in[0], *a = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  if (!a || a->numel != 1)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input 1 (axis) must hold one value");
  int64_t ax = ge_tensor_get_i64(a, 0);
  int32_t r = x->rank;
  if (ax < -(int64_t)r || ax >= (r ? r : 1))
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)ax, (int)r);
  if (ax < 0) ax += r;
  if (y->numel != x->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, x->numel);
  if (x->numel == 0) return GE_OK;
  size_t outer, len, inner;
  if (!ge_rd_split_axis(x, (int32_t)ax, &outer, &len, &inner))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 is too large");
  if (ge_dtype_is_float(x->dtype))
    CUMSUM_LOOP(double, ge_rd_load_f64, ge_rd_store_f64, ADD_F);
  else
    CUMSUM_LOOP(int64_t, ge_rd_load_i64, ge_rd_store_i64, ADD_I);
  return GE_OK;
}

/* ------------------------------------------------------------------ table */

#define RK(name, since, until) {"", name, since, until, {reduce_prepare, reduce_run, free, false}}

const ge_kernel_def ge_ref_kernels_reduce[] = {
    RK("ReduceSum", 1, 0),
    RK("ReduceMean", 1, 0),
    RK("ReduceMax", 1, 0),
    RK("ReduceMin", 1, 0),
    RK("ReduceProd", 1, 0),
    RK("ReduceL1", 1, 0),
    RK("ReduceL2", 1, 0),
    RK("ReduceLogSum", 1, 0),
    RK("ReduceLogSumExp", 1, 0),
    RK("ReduceSumSquare", 1, 0),
    {"", "ArgMax", 1, 0, {arg_prepare, arg_run, free, false}},
    {"", "ArgMin", 1, 0, {arg_prepare, arg_run, free, false}},
    {"", "CumSum", 11, 0, {cumsum_prepare, cumsum_run, free, false}},
    {"", "TopK", 1, 0, {ge_rd_topk_prepare, ge_rd_topk_run, free, false}},
    {"", "Det", 11, 0, {ge_rd_det_prepare, ge_rd_det_run, free, false}},
    {"", "Unique", 11, 0, {ge_rd_unique_prepare, ge_rd_unique_run, free, true}},
    {"", "Shrink", 9, 0, {ge_rd_shrink_prepare, ge_rd_shrink_run, free, false}},
    {"", "LpNormalization", 1, 0, {ge_rd_lpnorm_prepare, ge_rd_lpnorm_run, free, false}},
    {"", "Resize", 10, 0, {ge_rd_resize_prepare, ge_rd_resize_run, free, false}},
    {"", "Upsample", 7, 0, {ge_rd_resize_prepare, ge_rd_resize_run, free, false}},
    {"", "NonMaxSuppression", 10, 0, {ge_rd_nms_prepare, ge_rd_nms_run, free, true}},
    {"", "RoiAlign", 10, 0, {ge_rd_roialign_prepare, ge_rd_roialign_run, free, false}},
    {"", "MaxRoiPool", 1, 0, {ge_rd_maxroipool_prepare, ge_rd_maxroipool_run, free, false}},
    {"", "GridSample", 16, 0, {ge_rd_gridsample_prepare, ge_rd_gridsample_run, free, false}},
    {"", "MaxUnpool", 9, 0, {ge_rd_maxunpool_prepare, ge_rd_maxunpool_run, free, false}},
    {0},
};
