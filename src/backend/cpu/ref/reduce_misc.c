/* Reference CPU kernels of the reduce family: TopK, Det, Unique, Shrink, LpNormalization. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/reduce_family.h"

static const ge_dtype numeric_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16,
                                         GE_I32, GE_I64, GE_U8,   GE_U16, GE_U32, GE_U64,
                                         GE_DTYPE_COUNT};
static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};

/* ------------------------------------------------------------------ TopK */

typedef struct topk_state {
  int64_t axis;
  int64_t k_attr; /* opset < 10; -1 otherwise */
  bool largest;
} topk_state;

ge_status ge_rd_topk_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, numeric_types));
  topk_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", -1);
  s->k_attr = p->opset < 10 ? ge_node_attr_int(p->node, "k", -1) : -1;
  s->largest = p->opset < 11 || ge_node_attr_int(p->node, "largest", 1) != 0;
  *state = s;
  return GE_OK;
}

/* A bounded heap whose root is the worst of the kept items; `better(a, b)`: a ranks before b
   (larger/smaller value; equal values: lower index first).  O(n log k) per row. */
#define DEFINE_TOPK(SUF, KT, ISNAN)                                                          \
  typedef struct { KT v; int64_t i; } item_##SUF;                                           \
  static inline bool better_##SUF(const item_##SUF *a, const item_##SUF *b, bool largest) { \
    if (ISNAN(a->v) || ISNAN(b->v)) {                                                        \
      if (ISNAN(a->v) && ISNAN(b->v)) return a->i < b->i;                                    \
      return largest ? ISNAN(a->v) : ISNAN(b->v);                                            \
    }                                                                                        \
    if (a->v != b->v) return largest ? a->v > b->v : a->v < b->v;                            \
    return a->i < b->i;                                                                      \
  }                                                                                          \
  static void sift_##SUF(item_##SUF *h, size_t n, size_t i, bool largest) {                  \
    for (;;) {                                                                               \
      size_t l = 2 * i + 1, r = l + 1, w = i;                                                \
      if (l < n && better_##SUF(&h[w], &h[l], largest)) w = l;                               \
      if (r < n && better_##SUF(&h[w], &h[r], largest)) w = r;                               \
      if (w == i) return;                                                                    \
      item_##SUF t = h[i];                                                                   \
      h[i] = h[w];                                                                           \
      h[w] = t;                                                                              \
      i = w;                                                                                 \
    }                                                                                        \
  }                                                                                          \
  /* vals: len keys of one row; out: k items, best first */                                  \
  static void topk_row_##SUF(const KT *vals, size_t len, size_t stride, size_t k,            \
                             bool largest, item_##SUF *h) {                                  \
    size_t n = 0;                                                                            \
    for (size_t l = 0; l < len; l++) {                                                       \
      item_##SUF it = {vals[l * stride], (int64_t)l};                                        \
      if (n < k) {                                                                           \
        size_t c = n++;                                                                      \
        h[c] = it;                                                                           \
        while (c > 0) { /* sift up: worst at root */                                         \
          size_t par = (c - 1) / 2;                                                          \
          if (!better_##SUF(&h[par], &h[c], largest)) break;                                 \
          item_##SUF t = h[par];                                                             \
          h[par] = h[c];                                                                     \
          h[c] = t;                                                                          \
          c = par;                                                                           \
        }                                                                                    \
      } else if (k > 0 && better_##SUF(&it, &h[0], largest)) {                               \
        h[0] = it;                                                                           \
        sift_##SUF(h, n, 0, largest);                                                        \
      }                                                                                      \
    }                                                                                        \
    while (n > 1) { /* pop the worst to the back: best ends first */                         \
      item_##SUF t = h[0];                                                                   \
      h[0] = h[n - 1];                                                                       \
      h[n - 1] = t;                                                                          \
      n--;                                                                                   \
      sift_##SUF(h, n, 0, largest);                                                          \
    }                                                                                        \
  }

#define ISNAN_F(x) ((x) != (x))
#define ISNAN_I(x) false
DEFINE_TOPK(f, double, ISNAN_F)
DEFINE_TOPK(i, int64_t, ISNAN_I)

#define TOPK_LOOP(SUF, KT, LOAD)                                                          \
  do {                                                                                    \
    KT *slab = malloc(len * inner * sizeof(KT) + 1);                                      \
    item_##SUF *h = malloc(k * sizeof(item_##SUF) + 1);                                   \
    if (!slab || !h) {                                                                    \
      free(slab);                                                                         \
      free(h);                                                                            \
      return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");                    \
    }                                                                                     \
    for (size_t o = 0; o < outer; o++) {                                                  \
      LOAD(x->dtype, x->data, o * len * inner, len * inner, slab);                        \
      for (size_t j = 0; j < inner; j++) {                                                \
        topk_row_##SUF(slab + j, len, inner, k, s->largest, h);                           \
        for (size_t q = 0; q < k; q++) {                                                  \
          size_t dst = (o * k + q) * inner + j;                                           \
          size_t src = (o * len + (size_t)h[q].i) * inner + j;                            \
          memcpy(vd + dst * es, xd + src * es, es);                                       \
          idx[dst] = h[q].i;                                                              \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    free(slab);                                                                           \
    free(h);                                                                              \
  } while (0)

ge_status ge_rd_topk_run(const void *state, ge_kctx *ctx) {
  const topk_state *s = state;
  const ge_tensor *x = ctx->in[0];
  int64_t kk = s->k_attr;
  if (kk < 0) {
    const ge_tensor *kt = ctx->n_in > 1 ? ctx->in[1] : NULL;
    if (!kt || kt->numel != 1)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input 1 (K) must hold one value");
    kk = ge_tensor_get_i64(kt, 0);
  }
  int32_t r = x->rank;
  if (r == 0) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 must not be a scalar");
  if (s->axis < -(int64_t)r || s->axis >= r)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)s->axis, (int)r);
  int32_t axis = (int32_t)(s->axis < 0 ? s->axis + r : s->axis);
  size_t outer, len, inner;
  if (!ge_rd_split_axis(x, axis, &outer, &len, &inner))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 is too large");
  if (kk < 0 || (uint64_t)kk > len)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "k = %lld is out of range for axis %d of size %zu",
                        (long long)kk, (int)axis, len);
  size_t k = (size_t)kk;
  ge_tensor *v = ctx->out[0], *it = ctx->out[1];
  if (!v || !it || v->numel != outer * k * inner || it->numel != v->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "outputs do not have %zu elements", outer * k * inner);
  if (v->numel == 0) return GE_OK;
  size_t es = ge_dtype_size(x->dtype);
  const char *xd = x->data;
  char *vd = v->data;
  int64_t *idx = it->data;
  if (ge_dtype_is_float(x->dtype))
    TOPK_LOOP(f, double, ge_rd_load_f64);
  else
    TOPK_LOOP(i, int64_t, ge_rd_load_key_i64);
  return GE_OK;
}

/* ------------------------------------------------------------------ Det */

ge_status ge_rd_det_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, float_types));
  *state = NULL;
  return GE_OK;
}

ge_status ge_rd_det_run(const void *state, ge_kctx *ctx) {
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  if (x->rank < 2) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 must have rank >= 2");
  int64_t n64 = x->dims[x->rank - 1];
  if (x->dims[x->rank - 2] != n64)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 holds %lld x %lld matrices, not square ones",
                        (long long)x->dims[x->rank - 2], (long long)n64);
  size_t n = (size_t)n64, nn;
  if (ge_mul_overflow_size(n, n, &nn)) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "matrix too large");
  size_t batch = y->numel;
  if (nn && batch * nn != x->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", batch,
                        x->numel / nn);
  double *a = malloc((nn ? nn : 1) * sizeof *a);
  double *res = malloc((batch ? batch : 1) * sizeof *res);
  if (!a || !res) {
    free(a);
    free(res);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (size_t b = 0; b < batch; b++) {
    ge_rd_load_f64(x->dtype, x->data, b * nn, nn, a);
    double det = 1.0;
    for (size_t c = 0; c < n; c++) {
      size_t piv = c;
      double best = fabs(a[c * n + c]);
      for (size_t r = c + 1; r < n; r++)
        if (fabs(a[r * n + c]) > best) {
          best = fabs(a[r * n + c]);
          piv = r;
        }
      if (best == 0.0) {
        det = 0.0;
        break;
      }
      if (piv != c) {
        for (size_t j = 0; j < n; j++) {
          double t = a[c * n + j];
          a[c * n + j] = a[piv * n + j];
          a[piv * n + j] = t;
        }
        det = -det;
      }
      double d = a[c * n + c];
      det *= d;
      for (size_t r = c + 1; r < n; r++) {
        double f = a[r * n + c] / d;
        if (f == 0.0) continue;
        for (size_t j = c + 1; j < n; j++) a[r * n + j] -= f * a[c * n + j];
      }
    }
    res[b] = det;
  }
  ge_rd_store_f64(y->dtype, y->data, 0, batch, res);
  free(a);
  free(res);
  return GE_OK;
}

/* ------------------------------------------------------------------ Unique */

typedef struct unique_state {
  bool sorted, has_axis;
  int64_t axis;
} unique_state;

ge_status ge_rd_unique_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16, GE_I32,
                                   GE_I64, GE_U8,  GE_U16,  GE_U32, GE_U64, GE_STRING,
                                   GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, types));
  unique_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->sorted = ge_node_attr_int(p->node, "sorted", 1) != 0;
  const ge_attr_value *a = ge_node_attr(p->node, "axis");
  s->has_axis = a != NULL;
  s->axis = a ? a->i : 0;
  *state = s;
  return GE_OK;
}

/* Items are rows of `w` keys; compared lexicographically. */
typedef struct uq_ctx {
  const double *kf;   /* float keys, or */
  const int64_t *ki;  /* integer keys, or */
  char *const *ks;    /* strings */
  size_t w;
} uq_ctx;

static int uq_cmp_items(const uq_ctx *u, size_t a, size_t b) {
  for (size_t q = 0; q < u->w; q++) {
    if (u->kf) {
      double x = u->kf[a * u->w + q], y = u->kf[b * u->w + q];
      if (x < y) return -1;
      if (x > y) return 1;
      /* NaN sorts last; NaNs are equal to each other */
      if (x != x && y == y) return 1;
      if (y != y && x == x) return -1;
    } else if (u->ki) {
      int64_t x = u->ki[a * u->w + q], y = u->ki[b * u->w + q];
      if (x != y) return x < y ? -1 : 1;
    } else {
      const char *x = u->ks[a * u->w + q], *y = u->ks[b * u->w + q];
      int c = strcmp(x ? x : "", y ? y : "");
      if (c) return c < 0 ? -1 : 1;
    }
  }
  return 0;
}

static int uq_cmp(const void *pa, const void *pb, void *arg) {
  size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
  int c = uq_cmp_items(arg, a, b);
  if (c) return c;
  return a < b ? -1 : a > b;
}

typedef struct uq_group {
  size_t first, count, rank;
} uq_group;

static int uq_group_cmp_first(const void *pa, const void *pb) {
  const uq_group *a = pa, *b = pb;
  return a->first < b->first ? -1 : a->first > b->first;
}

ge_status ge_rd_unique_run(const void *state, ge_kctx *ctx) {
  const unique_state *s = state;
  const ge_tensor *x = ctx->in[0];
  int32_t r = x->rank;
  size_t outer = 1, len = x->numel, inner = 1;
  int32_t axis = -1;
  if (s->has_axis) {
    if (r == 0 || s->axis < -(int64_t)r || s->axis >= r)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                          (long long)s->axis, (int)r);
    axis = (int32_t)(s->axis < 0 ? s->axis + r : s->axis);
    if (!ge_rd_split_axis(x, axis, &outer, &len, &inner))
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 is too large");
  }
  size_t w = outer * inner; /* keys per item */
  size_t es = ge_dtype_size(x->dtype);
  /* keys laid out item-major: key[i * w + o * inner + j] = x[o, i, j] */
  size_t nkeys = x->numel;
  bool fl = ge_dtype_is_float(x->dtype), str = x->dtype == GE_STRING;
  void *keys = NULL;
  size_t *order = malloc((len ? len : 1) * sizeof *order);
  int64_t *inv = malloc((len ? len : 1) * sizeof *inv);
  uq_group *grp = malloc((len ? len : 1) * sizeof *grp);
  size_t *rank_of = malloc((len ? len : 1) * sizeof *rank_of);
  if (!str) keys = malloc((nkeys ? nkeys : 1) * (fl ? sizeof(double) : sizeof(int64_t)));
  else keys = malloc((nkeys ? nkeys : 1) * sizeof(char *));
  ge_status st = GE_OK;
  if (!order || !inv || !grp || !rank_of || !keys) {
    st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < len; i++) {
      size_t src = (o * len + i) * inner, dst = i * w + o * inner;
      if (str)
        memcpy((char **)keys + dst, (char *const *)x->data + src, inner * sizeof(char *));
      else if (fl)
        ge_rd_load_f64(x->dtype, x->data, src, inner, (double *)keys + dst);
      else
        ge_rd_load_key_i64(x->dtype, x->data, src, inner, (int64_t *)keys + dst);
    }
  uq_ctx u = {fl && !str ? keys : NULL, !fl && !str ? keys : NULL, str ? keys : NULL, w};
  for (size_t i = 0; i < len; i++) order[i] = i;
  qsort_r(order, len, sizeof *order, uq_cmp, &u);
  size_t ng = 0;
  for (size_t q = 0; q < len; q++) {
    if (q == 0 || uq_cmp_items(&u, order[q - 1], order[q]) != 0) {
      grp[ng].first = order[q];
      grp[ng].count = 0;
      ng++;
    }
    grp[ng - 1].count++;
    rank_of[order[q]] = ng - 1; /* group id in sorted order (fixed up below) */
  }
  if (!s->sorted) {
    for (size_t g = 0; g < ng; g++) grp[g].rank = g;
    qsort(grp, ng, sizeof *grp, uq_group_cmp_first);
    /* map sorted group id -> output position */
    size_t *pos = malloc((ng ? ng : 1) * sizeof *pos);
    if (!pos) {
      st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    for (size_t g = 0; g < ng; g++) pos[grp[g].rank] = g;
    for (size_t i = 0; i < len; i++) inv[i] = (int64_t)pos[rank_of[i]];
    free(pos);
  } else {
    for (size_t i = 0; i < len; i++) inv[i] = (int64_t)rank_of[i];
  }
  /* outputs */
  int64_t dims[GE_MAX_RANK];
  int32_t yr;
  if (axis < 0) {
    yr = 1;
    dims[0] = (int64_t)ng;
  } else {
    yr = r;
    memcpy(dims, x->dims, (size_t)r * sizeof *dims);
    dims[axis] = (int64_t)ng;
  }
  st = ge_kctx_alloc_output(ctx, 0, x->dtype, dims, yr);
  if (st != GE_OK) goto done;
  ge_tensor *y = ctx->out[0];
  for (size_t o = 0; o < outer; o++)
    for (size_t g = 0; g < ng; g++) {
      size_t src = (o * len + grp[g].first) * inner, dst = (o * ng + g) * inner;
      if (str) {
        for (size_t j = 0; j < inner; j++) {
          const char *sv = ((char *const *)x->data)[src + j];
          st = ge_tensor_set_string(y, dst + j, sv ? sv : "");
          if (st != GE_OK) goto done;
        }
      } else {
        memcpy((char *)y->data + dst * es, (const char *)x->data + src * es, inner * es);
      }
    }
  int64_t n1[1];
  if (ctx->n_out > 1 && ctx->out[1]) {
    n1[0] = (int64_t)ng;
    st = ge_kctx_alloc_output(ctx, 1, GE_I64, n1, 1);
    if (st != GE_OK) goto done;
    for (size_t g = 0; g < ng; g++) ((int64_t *)ctx->out[1]->data)[g] = (int64_t)grp[g].first;
  }
  if (ctx->n_out > 2 && ctx->out[2]) {
    n1[0] = (int64_t)len;
    st = ge_kctx_alloc_output(ctx, 2, GE_I64, n1, 1);
    if (st != GE_OK) goto done;
    if (len) memcpy(ctx->out[2]->data, inv, len * sizeof *inv);
  }
  if (ctx->n_out > 3 && ctx->out[3]) {
    n1[0] = (int64_t)ng;
    st = ge_kctx_alloc_output(ctx, 3, GE_I64, n1, 1);
    if (st != GE_OK) goto done;
    for (size_t g = 0; g < ng; g++) ((int64_t *)ctx->out[3]->data)[g] = (int64_t)grp[g].count;
  }
done:
  free(order);
  free(inv);
  free(grp);
  free(rank_of);
  free(keys);
  return st;
}

/* ------------------------------------------------------------------ Shrink */

typedef struct shrink_state {
  double lambd, bias;
} shrink_state;

ge_status ge_rd_shrink_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, numeric_types));
  shrink_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->lambd = ge_node_attr_float(p->node, "lambd", 0.5f);
  s->bias = ge_node_attr_float(p->node, "bias", 0.0f);
  *state = s;
  return GE_OK;
}

ge_status ge_rd_shrink_run(const void *state, ge_kctx *ctx) {
  const shrink_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  if (y->numel != x->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, x->numel);
  enum { B = 1024 };
  double buf[B];
  for (size_t b0 = 0; b0 < x->numel; b0 += B) {
    size_t nb = x->numel - b0 < B ? x->numel - b0 : B;
    ge_rd_load_f64(x->dtype, x->data, b0, nb, buf);
    for (size_t i = 0; i < nb; i++) {
      double v = buf[i];
      buf[i] = v < -s->lambd ? v + s->bias : v > s->lambd ? v - s->bias : 0.0;
    }
    ge_rd_store_f64(y->dtype, y->data, b0, nb, buf);
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ LpNormalization */

typedef struct lpnorm_state {
  int64_t axis, p;
} lpnorm_state;

ge_status ge_rd_lpnorm_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, float_types));
  lpnorm_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", -1);
  s->p = ge_node_attr_int(p->node, "p", 2);
  if (s->p != 1 && s->p != 2) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute p must be 1 or 2");
  }
  *state = s;
  return GE_OK;
}

ge_status ge_rd_lpnorm_run(const void *state, ge_kctx *ctx) {
  const lpnorm_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  int32_t r = x->rank;
  if (y->numel != x->numel)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, x->numel);
  if (r == 0 || s->axis < -(int64_t)r || s->axis >= r)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)s->axis, (int)r);
  if (x->numel == 0) return GE_OK;
  int32_t axis = (int32_t)(s->axis < 0 ? s->axis + r : s->axis);
  size_t outer, len, inner;
  if (!ge_rd_split_axis(x, axis, &outer, &len, &inner))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 is too large");
  double *slab = malloc(len * inner * sizeof *slab), *nrm = malloc(inner * sizeof *nrm);
  if (!slab || !nrm) {
    free(slab);
    free(nrm);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (size_t o = 0; o < outer; o++) {
    ge_rd_load_f64(x->dtype, x->data, o * len * inner, len * inner, slab);
    for (size_t j = 0; j < inner; j++) nrm[j] = 0;
    for (size_t l = 0; l < len; l++) {
      const double *row = slab + l * inner;
      if (s->p == 1)
        for (size_t j = 0; j < inner; j++) nrm[j] += fabs(row[j]);
      else
        for (size_t j = 0; j < inner; j++) nrm[j] += row[j] * row[j];
    }
    if (s->p == 2)
      for (size_t j = 0; j < inner; j++) nrm[j] = sqrt(nrm[j]);
    for (size_t l = 0; l < len; l++) {
      double *row = slab + l * inner;
      for (size_t j = 0; j < inner; j++) row[j] = nrm[j] == 0 ? 0.0 : row[j] / nrm[j];
    }
    ge_rd_store_f64(y->dtype, y->data, o * len * inner, len * inner, slab);
  }
  free(slab);
  free(nrm);
  return GE_OK;
}
