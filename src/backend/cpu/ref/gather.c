/* Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND (shape family). */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/shape_util.h"

static const ge_dtype dt_ind[] = {GE_I32, GE_I64, GE_DTYPE_COUNT};
static const ge_dtype dt_i64[] = {GE_I64, GE_DTYPE_COUNT};

typedef enum red_kind { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } red_kind;

typedef struct gather_state {
  int64_t axis;
  red_kind red;
} gather_state;

static inline int64_t index_at(const ge_tensor *t, size_t i) {
  return t->dtype == GE_I32 ? (int64_t)((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

ge_status ge_ref_gather_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 1, dt_ind));
  gather_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", 0);
  *state = s;
  return GE_OK;
}

static ge_status norm_axis(const ge_kctx *c, int64_t axis, int64_t rank, int64_t *out) {
  if (axis < -rank || axis >= rank)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %lld", (long long)axis,
                        (long long)rank);
  *out = axis < 0 ? axis + rank : axis;
  return GE_OK;
}

static ge_status bad_index(const ge_kctx *c, size_t at, int64_t v, int64_t dim, int64_t axis) {
  return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "index %lld (at %zu) is out of range for axis %lld of size %lld",
                      (long long)v, at, (long long)axis, (long long)dim);
}

/* ------------------------------------------------------------------ Gather */

ge_status ge_ref_gather_run(const void *state, ge_kctx *c) {
  const gather_state *s = state;
  const ge_tensor *x = c->in[0], *ind = c->in[1];
  ge_tensor *y = c->out[0];
  if (x->rank < 1) return ge_kctx_fail(c, GE_ERR_SHAPE, "data must have rank >= 1");
  int64_t ax = 0;
  GE_CHECK(norm_axis(c, s->axis, x->rank, &ax));
  size_t outer = ge_ref_prod(x->dims, 0, (int)ax), inner = ge_ref_prod(x->dims, (int)ax + 1, x->rank);
  int64_t dim = x->dims[ax];
  size_t n = ind->numel, es = ge_dtype_size(x->dtype), blk = inner * es;
  if (y->numel != outer * n * inner) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output size mismatch");
  /* validate once, then copy */
  for (size_t i = 0; i < n; i++) {
    int64_t v = index_at(ind, i);
    if (v < -dim || v >= dim) return bad_index(c, i, v, dim, ax);
  }
  char *yo = y->data;
  const char *xd = x->data;
  for (size_t o = 0; o < outer; o++) {
    const char *base = xd + o * (size_t)dim * blk;
    for (size_t i = 0; i < n; i++) {
      int64_t v = index_at(ind, i);
      if (v < 0) v += dim;
      if (x->dtype == GE_STRING)
        GE_CHECK(ge_ref_copy(yo, base + (size_t)v * blk, inner, GE_STRING));
      else if (es == 4 && inner == 1)
        memcpy(yo, base + (size_t)v * 4, 4);
      else
        memcpy(yo, base + (size_t)v * blk, blk);
      yo += blk;
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ element-wise index iteration */

/* Walks every element of `ind` (shape of indices) and yields the data offset of the element
   with its axis coordinate replaced by the index value.  BODY sees `i` (flat index into
   indices/updates) and `doff` (flat offset into data/out). */
#define FOR_EACH_INDEX(ind, xdims, rank, ax, BODY)                                      \
  do {                                                                                  \
    int64_t xstr_[GE_MAX_RANK], cnt_[GE_MAX_RANK] = {0};                                \
    ge_ref_strides((xdims), (rank), xstr_);                                             \
    int64_t base_ = 0;                                                                  \
    int64_t dimax_ = (xdims)[ax];                                                       \
    for (size_t i = 0; i < (ind)->numel; i++) {                                         \
      int64_t v_ = index_at((ind), i);                                                  \
      if (v_ < -dimax_ || v_ >= dimax_) return bad_index(c, i, v_, dimax_, (ax));       \
      if (v_ < 0) v_ += dimax_;                                                         \
      size_t doff = (size_t)(base_ + v_ * xstr_[ax]);                                   \
      BODY;                                                                             \
      for (int k_ = (rank)-1; k_ >= 0; k_--) {                                          \
        if (k_ != (ax)) base_ += xstr_[k_];                                             \
        if (++cnt_[k_] < (ind)->dims[k_]) break;                                        \
        if (k_ != (ax)) base_ -= xstr_[k_] * (ind)->dims[k_];                           \
        cnt_[k_] = 0;                                                                   \
      }                                                                                 \
    }                                                                                   \
  } while (0)

static ge_status check_elements_shapes(const ge_kctx *c, const ge_tensor *x, const ge_tensor *ind, int64_t ax) {
  if (ind->rank != x->rank)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "indices have rank %d, data has rank %d", (int)ind->rank, (int)x->rank);
  for (int d = 0; d < x->rank; d++)
    if (d != ax && ind->dims[d] > x->dims[d])
      return ge_kctx_fail(c, GE_ERR_SHAPE, "indices dim %d = %lld exceeds data dim %lld", d,
                          (long long)ind->dims[d], (long long)x->dims[d]);
  return GE_OK;
}

ge_status ge_ref_gather_elements_run(const void *state, ge_kctx *c) {
  const gather_state *s = state;
  const ge_tensor *x = c->in[0], *ind = c->in[1];
  ge_tensor *y = c->out[0];
  int64_t ax = 0;
  GE_CHECK(norm_axis(c, s->axis, x->rank, &ax));
  GE_CHECK(check_elements_shapes(c, x, ind, ax));
  if (y->numel != ind->numel) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output size mismatch");
  switch (x->dtype == GE_STRING ? 0 : ge_dtype_size(x->dtype)) {
  case 0: {
    char **yo = y->data;
    char *const *xd = x->data;
    FOR_EACH_INDEX(ind, x->dims, x->rank, ax, GE_CHECK(ge_ref_copy(&yo[i], &xd[doff], 1, GE_STRING)));
    return GE_OK;
  }
#define GE_CASE(T)                                                  \
  {                                                                 \
    T *yo = y->data;                                                \
    const T *xd = x->data;                                          \
    FOR_EACH_INDEX(ind, x->dims, x->rank, ax, yo[i] = xd[doff]);    \
    return GE_OK;                                                   \
  }
  case 1: GE_CASE(uint8_t)
  case 2: GE_CASE(uint16_t)
  case 4: GE_CASE(uint32_t)
  case 8: GE_CASE(uint64_t)
#undef GE_CASE
  default: return ge_kctx_fail(c, GE_ERR_INTERNAL, "bad dtype");
  }
}

/* ------------------------------------------------------------------ GatherND */

typedef struct gnd_state {
  int64_t batch_dims;
} gnd_state;

ge_status ge_ref_gather_nd_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 1, dt_i64));
  gnd_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->batch_dims = p->opset >= 12 ? ge_node_attr_int(p->node, "batch_dims", 0) : 0;
  *state = s;
  return GE_OK;
}

ge_status ge_ref_gather_nd_run(const void *state, ge_kctx *c) {
  const gnd_state *s = state;
  const ge_tensor *x = c->in[0], *ind = c->in[1];
  ge_tensor *y = c->out[0];
  int64_t b = s->batch_dims;
  if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= x->rank)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "bad batch_dims %lld for ranks %d and %d", (long long)b, (int)x->rank,
                        (int)ind->rank);
  int64_t k = ind->dims[ind->rank - 1];
  if (k < 1 || k > x->rank - b)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "indices last dim %lld out of range", (long long)k);
  for (int64_t d = 0; d < b; d++)
    if (x->dims[d] != ind->dims[d]) return ge_kctx_fail(c, GE_ERR_SHAPE, "batch dim %lld differs", (long long)d);
  size_t batch = ge_ref_prod(x->dims, 0, (int)b);
  size_t per_batch = ge_ref_prod(ind->dims, (int)b, ind->rank - 1);
  size_t blk = ge_ref_prod(x->dims, (int)(b + k), x->rank);
  size_t slice = ge_ref_prod(x->dims, (int)b, x->rank);
  if (y->numel != batch * per_batch * blk) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output size mismatch");
  int64_t str[GE_MAX_RANK];
  ge_ref_strides(x->dims + b, x->rank - (int)b, str);
  size_t es = ge_dtype_size(x->dtype);
  const int64_t *iv = ind->data;
  char *yo = y->data;
  for (size_t bi = 0; bi < batch; bi++)
    for (size_t j = 0; j < per_batch; j++) {
      const int64_t *t = iv + (bi * per_batch + j) * (size_t)k;
      size_t off = 0;
      for (int64_t q = 0; q < k; q++) {
        int64_t dim = x->dims[b + q], v = t[q];
        if (v < -dim || v >= dim) return bad_index(c, (size_t)(t - iv), v, dim, b + q);
        if (v < 0) v += dim;
        off += (size_t)v * (size_t)str[q];
      }
      GE_CHECK(ge_ref_copy(yo, (const char *)x->data + (bi * slice + off) * es, blk, x->dtype));
      yo += blk * es;
    }
  return GE_OK;
}

/* ------------------------------------------------------------------ Scatter family */

ge_status ge_ref_scatter_prepare(const ge_prepare_ctx *p, void **state) {
  const char *r = p->opset >= 16 ? ge_node_attr_string(p->node, "reduction", "none") : "none";
  red_kind red;
  if (!strcmp(r, "none")) red = RED_NONE;
  else if (!strcmp(r, "add")) red = RED_ADD;
  else if (!strcmp(r, "mul")) red = RED_MUL;
  else if (!strcmp(r, "max")) red = RED_MAX;
  else if (!strcmp(r, "min")) red = RED_MIN;
  else return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown reduction '%s'", r);
  if (!strcmp(p->node->op_type, "ScatterND")) GE_CHECK(ge_prepare_check_dtype(p, 1, dt_i64));
  else GE_CHECK(ge_prepare_check_dtype(p, 1, dt_ind));
  if (red != RED_NONE && p->n_in > 0 && p->in[0].type && p->in[0].type->dtype == GE_STRING)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "reduction '%s' on input 0 of dtype string", r);
  gather_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", 0);
  s->red = red;
  *state = s;
  return GE_OK;
}

/* dst[0..n) op= src[0..n) for one dtype.  A: the type add/mul compute in (integers wrap
   through uint64_t, never signed overflow); GET reads an element as A or as a comparable. */
#define RED_LOOP(T, A, GET, PUT)                                                \
  {                                                                             \
    T *d = dst;                                                                 \
    const T *sp = src;                                                          \
    switch (red) {                                                              \
    case RED_ADD: for (size_t i = 0; i < n; i++) d[i] = PUT((A)GET(d[i]) + (A)GET(sp[i])); break; \
    case RED_MUL: for (size_t i = 0; i < n; i++) d[i] = PUT((A)GET(d[i]) * (A)GET(sp[i])); break; \
    case RED_MAX: for (size_t i = 0; i < n; i++) if (GET(sp[i]) > GET(d[i])) d[i] = sp[i]; break; \
    case RED_MIN: for (size_t i = 0; i < n; i++) if (GET(sp[i]) < GET(d[i])) d[i] = sp[i]; break; \
    default: break;                                                             \
    }                                                                           \
    return GE_OK;                                                               \
  }
#define ID(x) (x)
#define F16G(x) ge_f16_to_f32(x)
#define F16P(x) ge_f32_to_f16(x)
#define BF16G(x) ge_bf16_to_f32(x)
#define BF16P(x) ge_f32_to_bf16(x)
#define I8P(x) ((int8_t)(x))
#define I16P(x) ((int16_t)(x))
#define I32P(x) ((int32_t)(x))
#define I64P(x) ((int64_t)(x))
#define U8P(x) ((uint8_t)(x))
#define U16P(x) ((uint16_t)(x))
#define U32P(x) ((uint32_t)(x))
#define U64P(x) ((uint64_t)(x))

static ge_status reduce_into(void *dst, const void *src, size_t n, ge_dtype dt, red_kind red) {
  if (red == RED_NONE) return ge_ref_copy(dst, src, n, dt);
  switch (dt) {
  case GE_F32: RED_LOOP(float, float, ID, ID)
  case GE_F64: RED_LOOP(double, double, ID, ID)
  case GE_F16: RED_LOOP(uint16_t, float, F16G, F16P)
  case GE_BF16: RED_LOOP(uint16_t, float, BF16G, BF16P)
  case GE_I8: RED_LOOP(int8_t, uint64_t, ID, I8P)
  case GE_I16: RED_LOOP(int16_t, uint64_t, ID, I16P)
  case GE_I32: RED_LOOP(int32_t, uint64_t, ID, I32P)
  case GE_I64: RED_LOOP(int64_t, uint64_t, ID, I64P)
  case GE_U8: RED_LOOP(uint8_t, uint64_t, ID, U8P)
  case GE_U16: RED_LOOP(uint16_t, uint64_t, ID, U16P)
  case GE_U32: RED_LOOP(uint32_t, uint64_t, ID, U32P)
  case GE_U64: RED_LOOP(uint64_t, uint64_t, ID, U64P)
  case GE_BOOL: {
    uint8_t *d = dst;
    const uint8_t *sp = src;
    for (size_t i = 0; i < n; i++) {
      bool a = d[i] != 0, b = sp[i] != 0;
      d[i] = (red == RED_ADD || red == RED_MAX) ? (a || b) : (a && b);
    }
    return GE_OK;
  }
  default: return ge_error(GE_ERR_UNSUPPORTED, "reduction on dtype %s", ge_dtype_name(dt));
  }
}

ge_status ge_ref_scatter_elements_run(const void *state, ge_kctx *c) {
  const gather_state *s = state;
  const ge_tensor *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
  ge_tensor *y = c->out[0];
  int64_t ax = 0;
  GE_CHECK(norm_axis(c, s->axis, x->rank, &ax));
  GE_CHECK(check_elements_shapes(c, x, ind, ax));
  if (upd->rank != ind->rank || upd->numel != ind->numel || upd->dtype != x->dtype)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "updates must have the shape of indices and the dtype of data");
  if (y->numel != x->numel) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output size mismatch");
  GE_CHECK(ge_ref_copy(y->data, x->data, x->numel, x->dtype));
  size_t es = ge_dtype_size(x->dtype);
  char *yo = y->data;
  const char *ud = upd->data;
  if (s->red == RED_NONE && x->dtype != GE_STRING) {
    switch (es) {
#define GE_CASE(T)                                                           \
  {                                                                          \
    T *yt = y->data;                                                         \
    const T *ut = upd->data;                                                 \
    FOR_EACH_INDEX(ind, x->dims, x->rank, ax, yt[doff] = ut[i]);             \
    return GE_OK;                                                            \
  }
    case 1: GE_CASE(uint8_t)
    case 2: GE_CASE(uint16_t)
    case 4: GE_CASE(uint32_t)
    case 8: GE_CASE(uint64_t)
#undef GE_CASE
    default: break;
    }
  }
  FOR_EACH_INDEX(ind, x->dims, x->rank, ax, {
    ge_status st_ = reduce_into(yo + doff * es, ud + i * es, 1, x->dtype, s->red);
    if (st_) return ge_error_prefix(st_, "node '%s' (%s): ", c->node ? c->node->name : "", c->node ? c->node->op_type : "");
  });
  return GE_OK;
}

ge_status ge_ref_scatter_nd_run(const void *state, ge_kctx *c) {
  const gather_state *s = state;
  const ge_tensor *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
  ge_tensor *y = c->out[0];
  if (ind->rank < 1) return ge_kctx_fail(c, GE_ERR_SHAPE, "indices must have rank >= 1");
  int64_t k = ind->dims[ind->rank - 1];
  if (k < 0 || k > x->rank) return ge_kctx_fail(c, GE_ERR_SHAPE, "indices last dim %lld exceeds data rank", (long long)k);
  size_t n = ge_ref_prod(ind->dims, 0, ind->rank - 1), blk = ge_ref_prod(x->dims, (int)k, x->rank);
  if (upd->numel != n * blk || upd->dtype != x->dtype)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "updates have %zu elements, expected %zu", upd->numel, n * blk);
  if (y->numel != x->numel) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output size mismatch");
  GE_CHECK(ge_ref_copy(y->data, x->data, x->numel, x->dtype));
  int64_t str[GE_MAX_RANK];
  ge_ref_strides(x->dims, x->rank, str);
  size_t es = ge_dtype_size(x->dtype);
  const int64_t *iv = ind->data;
  for (size_t j = 0; j < n; j++) {
    size_t off = 0;
    for (int64_t q = 0; q < k; q++) {
      int64_t dim = x->dims[q], v = iv[j * (size_t)k + (size_t)q];
      if (v < -dim || v >= dim) return bad_index(c, j * (size_t)k + (size_t)q, v, dim, q);
      if (v < 0) v += dim;
      off += (size_t)v * (size_t)str[q];
    }
    ge_status st = reduce_into((char *)y->data + off * es, (const char *)upd->data + j * blk * es, blk, x->dtype, s->red);
    if (st) return ge_kctx_fail(c, st, "reduction failed on dtype %s", ge_dtype_name(x->dtype));
  }
  return GE_OK;
}
