/* Pad (shape family): constant, reflect, edge and wrap modes; pads as attribute (opset < 11)
 * or input, optional constant_value and axes (opset 18) inputs.
 *
 * Every output coordinate of every axis maps to a source coordinate (or to "the constant"),
 * computed once per axis; rows of the output then copy through the innermost map. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/shape_util.h"

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

typedef struct pad_state {
  pad_mode mode;
  float value;          /* opset < 11 attribute */
  size_t n_pads;        /* opset < 11 attribute pads follow */
  int64_t pads[];
} pad_state;

static const ge_dtype dt_i64[] = {GE_I64, GE_DTYPE_COUNT};
static const ge_dtype dt_ind[] = {GE_I32, GE_I64, GE_DTYPE_COUNT};

ge_status ge_ref_pad_prepare(const ge_prepare_ctx *p, void **state) {
  const char *m = ge_node_attr_string(p->node, "mode", "constant");
  pad_mode mode;
  if (!strcmp(m, "constant")) mode = PAD_CONSTANT;
  else if (!strcmp(m, "reflect")) mode = PAD_REFLECT;
  else if (!strcmp(m, "edge")) mode = PAD_EDGE;
  else if (!strcmp(m, "wrap")) mode = PAD_WRAP;
  else return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown mode '%s'", m);
  const int64_t *a = NULL;
  size_t n = 0;
  if (p->opset < 11) {
    if (!ge_node_attr_ints(p->node, "pads", &a, &n))
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute 'pads' is required");
  } else {
    GE_CHECK(ge_prepare_check_dtype(p, 1, dt_i64));
    GE_CHECK(ge_prepare_check_dtype(p, 3, dt_ind));
  }
  pad_state *s = calloc(1, sizeof *s + n * sizeof(int64_t));
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->mode = mode;
  s->value = ge_node_attr_float(p->node, "value", 0.0f);
  s->n_pads = n;
  if (n) memcpy(s->pads, a, n * sizeof *a);
  *state = s;
  return GE_OK;
}

/* source coordinate of out coordinate o (already shifted by -pad_begin) on an axis of size dim;
   -1 for the constant */
static int64_t map_coord(int64_t i, int64_t dim, pad_mode mode) {
  if (i >= 0 && i < dim) return i;
  switch (mode) {
  case PAD_EDGE: return i < 0 ? 0 : dim - 1;
  case PAD_WRAP: {
    int64_t m = i % dim;
    return m < 0 ? m + dim : m;
  }
  case PAD_REFLECT: {
    if (dim == 1) return 0;
    int64_t period = 2 * (dim - 1);
    int64_t m = i % period;
    if (m < 0) m += period;
    return m < dim ? m : period - m;
  }
  default: return -1;
  }
}

#define ROW_LOOP(T)                                                          \
  {                                                                          \
    T cv;                                                                    \
    memcpy(&cv, cval, sizeof cv);                                            \
    T *d = (T *)y->data + row * n1;                                          \
    if (src < 0) {                                                           \
      for (int64_t j = 0; j < n1; j++) d[j] = cv;                            \
    } else {                                                                 \
      const T *sp = (const T *)x->data + src;                                \
      for (int64_t j = 0; j < n1; j++) d[j] = m1[j] < 0 ? cv : sp[m1[j]];    \
    }                                                                        \
    break;                                                                   \
  }

ge_status ge_ref_pad_run(const void *state, ge_kctx *c) {
  const pad_state *s = state;
  const ge_tensor *x = c->in[0];
  ge_tensor *y = c->out[0];
  int r = x->rank;
  int64_t pb[GE_MAX_RANK] = {0}, pe[GE_MAX_RANK] = {0}, odims[GE_MAX_RANK];
  /* pads */
  const ge_tensor *tp = c->n_in > 1 ? c->in[1] : NULL, *tv = c->n_in > 2 ? c->in[2] : NULL;
  const ge_tensor *ta = c->n_in > 3 ? c->in[3] : NULL;
  size_t np = tp ? tp->numel : s->n_pads;
  int64_t axes[GE_MAX_RANK];
  size_t na = (size_t)r;
  if (ta) {
    na = ta->numel;
    if (na > (size_t)r) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "%zu axes for rank %d", na, r);
    for (size_t k = 0; k < na; k++) {
      int64_t v = ge_tensor_get_i64(ta, k);
      if (v < -r || v >= r) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld out of range", (long long)v);
      axes[k] = v < 0 ? v + r : v;
    }
  } else {
    for (size_t k = 0; k < na; k++) axes[k] = (int64_t)k;
  }
  if (np != 2 * na) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "pads has %zu entries, expected %zu", np, 2 * na);
  for (size_t k = 0; k < na; k++) {
    pb[axes[k]] = tp ? ge_tensor_get_i64(tp, k) : s->pads[k];
    pe[axes[k]] = tp ? ge_tensor_get_i64(tp, k + na) : s->pads[k + na];
  }
  size_t total = 1;
  for (int d = 0; d < r; d++) {
    odims[d] = x->dims[d] + pb[d] + pe[d];
    if (odims[d] < 0) return ge_kctx_fail(c, GE_ERR_SHAPE, "pads make axis %d negative", d);
    if (s->mode != PAD_CONSTANT && x->dims[d] == 0 && odims[d] > 0)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "cannot pad empty axis %d in this mode", d);
    total *= (size_t)odims[d];
  }
  if (y->numel != total || y->rank != r) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output shape mismatch");
  if (total == 0) return GE_OK;
  /* constant */
  uint64_t cbits = 0;
  char *cstr = NULL;
  const void *cval = &cbits;
  if (x->dtype == GE_STRING) {
    if (tv && tv->numel) cstr = *(char **)tv->data;
    cval = &cstr;
  } else if (tv && tv->numel) {
    memcpy(&cbits, tv->data, ge_dtype_size(x->dtype));
  } else if (s->value != 0.0f) {
    ge_ref_scalar_from_f64(x->dtype, s->value, &cbits);
  }
  if (r == 0) return ge_ref_copy(y->data, x->data, 1, x->dtype);
  /* per-axis maps */
  size_t sum = 0;
  for (int d = 0; d < r; d++) sum += (size_t)odims[d];
  int64_t *maps = malloc(sum * sizeof *maps), *mp[GE_MAX_RANK];
  if (!maps) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t istr[GE_MAX_RANK];
  ge_ref_strides(x->dims, r, istr);
  size_t at = 0;
  for (int d = 0; d < r; d++) {
    mp[d] = maps + at;
    for (int64_t o = 0; o < odims[d]; o++) mp[d][o] = map_coord(o - pb[d], x->dims[d], s->mode);
    at += (size_t)odims[d];
  }
  int64_t n1 = odims[r - 1];
  const int64_t *m1 = mp[r - 1];
  size_t rows = total / (size_t)n1;
  int64_t idx[GE_MAX_RANK] = {0};
  size_t es = x->dtype == GE_STRING ? 0 : ge_dtype_size(x->dtype);
  ge_status st = GE_OK;
  for (size_t row = 0; row < rows; row++) {
    int64_t src = 0;
    for (int d = 0; d < r - 1; d++) {
      int64_t m = mp[d][idx[d]];
      if (m < 0) {
        src = -1;
        break;
      }
      src += m * istr[d];
    }
    switch (es) {
    case 0: {
      char **d = (char **)y->data + row * (size_t)n1;
      char *const *sp = (char *const *)x->data + (src < 0 ? 0 : src);
      for (int64_t j = 0; j < n1 && !st; j++)
        st = ge_ref_copy(&d[j], (src < 0 || m1[j] < 0) ? &cstr : &sp[m1[j]], 1, GE_STRING);
      break;
    }
    case 1: ROW_LOOP(uint8_t)
    case 2: ROW_LOOP(uint16_t)
    case 4: ROW_LOOP(uint32_t)
    case 8: ROW_LOOP(uint64_t)
    default: st = ge_kctx_fail(c, GE_ERR_INTERNAL, "bad dtype");
    }
    if (st) break;
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < odims[d]) break;
      idx[d] = 0;
    }
  }
  free(maps);
  return st;
}
