/* Reference CPU kernels of the shape family.  Almost all are dtype-agnostic moves: they
 * dispatch on element size (ref/shape_util.c) and duplicate GE_STRING elements.  Gather,
 * Scatter and Pad live in ref/gather.c and ref/pad.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/shape_util.h"
#include "ops/slice_axis.h"

/* ------------------------------------------------------------------ common */

static const ge_dtype dt_i64[] = {GE_I64, GE_DTYPE_COUNT};
static const ge_dtype dt_ind[] = {GE_I32, GE_I64, GE_DTYPE_COUNT};
static const ge_dtype dt_bool[] = {GE_BOOL, GE_DTYPE_COUNT};

static ge_status check_out(const ge_kctx *c, size_t i, size_t numel) {
  if (!c->out[i]) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output %zu is missing", i);
  if (c->out[i]->numel != numel)
    return ge_kctx_fail(c, GE_ERR_INTERNAL, "output %zu has %zu elements, expected %zu", i, c->out[i]->numel,
                        numel);
  return GE_OK;
}

/* Normalised axis at run time. */
static ge_status run_axis(const ge_kctx *c, int64_t axis, int64_t rank, int64_t *out) {
  if (axis < -rank || axis >= rank)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %lld",
                        (long long)axis, (long long)rank);
  *out = axis < 0 ? axis + rank : axis;
  return GE_OK;
}

static ge_status alloc_state(const ge_prepare_ctx *p, size_t size, void **state) {
  *state = calloc(1, size);
  if (!*state) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  return GE_OK;
}

/* ------------------------------------------------------------------ Identity, Reshape, Squeeze, Unsqueeze */

static ge_status run_copy(const void *st, ge_kctx *c) {
  const ge_tensor *x = c->in[0];
  if (!x) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 is missing");
  GE_CHECK(check_out(c, 0, x->numel));
  if (c->out[0]->dtype != x->dtype)
    return ge_kctx_fail(c, GE_ERR_INTERNAL, "output dtype %s differs from input dtype %s",
                        ge_dtype_name(c->out[0]->dtype), ge_dtype_name(x->dtype));
  return ge_ref_copy(c->out[0]->data, x->data, x->numel, x->dtype);
}

static ge_status prepare_reshape(const ge_prepare_ctx *p, void **state) {
  return ge_prepare_check_dtype(p, 1, dt_i64);
}

/* ------------------------------------------------------------------ Shape, Size */

typedef struct shape_state {
  int64_t start, end;
  bool has_end;
} shape_state;

static ge_status prepare_shape(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(alloc_state(p, sizeof(shape_state), state));
  shape_state *s = *state;
  s->start = p->opset >= 15 ? ge_node_attr_int(p->node, "start", 0) : 0;
  s->has_end = p->opset >= 15 && ge_node_attr(p->node, "end") != NULL;
  s->end = s->has_end ? ge_node_attr_int(p->node, "end", 0) : 0;
  return GE_OK;
}

static ge_status run_shape(const void *state, ge_kctx *c) {
  const shape_state *s = state;
  const ge_tensor *x = c->in[0];
  int64_t r = x->rank, b = s->start, e = s->has_end ? s->end : r;
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = b < 0 ? 0 : b > r ? r : b;
  e = e < 0 ? 0 : e > r ? r : e;
  size_t n = e > b ? (size_t)(e - b) : 0;
  GE_CHECK(check_out(c, 0, n));
  int64_t *o = c->out[0]->data;
  for (size_t i = 0; i < n; i++) o[i] = x->dims[b + (int64_t)i];
  return GE_OK;
}

static ge_status run_size(const void *state, ge_kctx *c) {
  GE_CHECK(check_out(c, 0, 1));
  *(int64_t *)c->out[0]->data = (int64_t)c->in[0]->numel;
  return GE_OK;
}

/* ------------------------------------------------------------------ Transpose */

typedef struct transpose_state {
  size_t n;
  int64_t perm[GE_MAX_RANK];
} transpose_state;

static ge_status prepare_transpose(const ge_prepare_ctx *p, void **state) {
  const int64_t *perm;
  size_t n = 0;
  bool has = ge_node_attr_ints(p->node, "perm", &perm, &n);
  if (n > GE_MAX_RANK) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "perm has %zu entries", n);
  GE_CHECK(alloc_state(p, sizeof(transpose_state), state));
  transpose_state *s = *state;
  s->n = has ? n : 0;
  if (has) memcpy(s->perm, perm, n * sizeof *perm);
  return GE_OK;
}

static ge_status run_transpose(const void *state, ge_kctx *c) {
  const transpose_state *s = state;
  const ge_tensor *x = c->in[0];
  int r = x->rank;
  int64_t perm[GE_MAX_RANK], istr[GE_MAX_RANK], dims[GE_MAX_RANK], sstr[GE_MAX_RANK];
  if (s->n == 0 && r > 0) {
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
  } else {
    if ((int)s->n != r)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "perm has %zu entries for an input of rank %d", s->n, r);
    unsigned seen = 0;
    for (int i = 0; i < r; i++) {
      int64_t q = s->perm[i] < 0 ? s->perm[i] + r : s->perm[i];
      if (q < 0 || q >= r || (seen >> q & 1u))
        return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "perm is not a permutation");
      seen |= 1u << q;
      perm[i] = q;
    }
  }
  GE_CHECK(check_out(c, 0, x->numel));
  ge_ref_strides(x->dims, r, istr);
  for (int i = 0; i < r; i++) {
    dims[i] = x->dims[perm[i]];
    sstr[i] = istr[perm[i]];
  }
  return ge_ref_strided_copy(c->out[0]->data, x->data, x->dtype, r, dims, sstr, 0);
}

/* ------------------------------------------------------------------ Concat */

typedef struct axis_state {
  int64_t axis;
  bool has_axis;
} axis_state;

static ge_status prepare_concat(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(alloc_state(p, sizeof(axis_state), state));
  axis_state *s = *state;
  s->axis = ge_node_attr_int(p->node, "axis", 1);
  return GE_OK;
}

static ge_status run_concat(const void *state, ge_kctx *c) {
  const axis_state *s = state;
  ge_tensor *y = c->out[0];
  int64_t ax = 0;
  GE_CHECK(run_axis(c, s->axis, y->rank, &ax));
  size_t outer = ge_ref_prod(y->dims, 0, (int)ax), inner = ge_ref_prod(y->dims, (int)ax + 1, y->rank);
  size_t es = ge_dtype_size(y->dtype), ydim = (size_t)y->dims[ax];
  size_t total = 0;
  for (size_t i = 0; i < c->n_in; i++) {
    const ge_tensor *x = c->in[i];
    if (!x) continue;
    if (x->rank != y->rank || x->dtype != y->dtype)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "input %zu has rank %d / dtype %s, output has %d / %s", i,
                          (int)x->rank, ge_dtype_name(x->dtype), (int)y->rank, ge_dtype_name(y->dtype));
    for (int d = 0; d < y->rank; d++)
      if (d != ax && x->dims[d] != y->dims[d])
        return ge_kctx_fail(c, GE_ERR_SHAPE, "input %zu has dim %d = %lld, expected %lld", i, d,
                            (long long)x->dims[d], (long long)y->dims[d]);
    total += (size_t)x->dims[ax];
  }
  if (total != ydim) return ge_kctx_fail(c, GE_ERR_SHAPE, "inputs sum to %zu along the axis, output has %zu", total, ydim);
  char *yd = y->data;
  for (size_t o = 0; o < outer; o++) {
    size_t at = 0;
    for (size_t i = 0; i < c->n_in; i++) {
      const ge_tensor *x = c->in[i];
      if (!x) continue;
      size_t blk = (size_t)x->dims[ax] * inner;
      if (blk)
        GE_CHECK(ge_ref_copy(yd + (o * ydim * inner + at) * es, (const char *)x->data + o * blk * es, blk, y->dtype));
      at += blk;
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ Split */

typedef struct split_state {
  int64_t axis;
  int64_t num_outputs;
  bool split_input; /* sizes come from input 1 */
  size_t n_split;   /* attribute sizes follow */
  int64_t split[];
} split_state;

static ge_status prepare_split(const ge_prepare_ctx *p, void **state) {
  const int64_t *a = NULL;
  size_t n = 0;
  bool attr = p->opset < 13 && ge_node_attr_ints(p->node, "split", &a, &n);
  if (p->n_in > 1 && p->in[1].present) GE_CHECK(ge_prepare_check_dtype(p, 1, dt_i64));
  *state = calloc(1, sizeof(split_state) + n * sizeof(int64_t));
  if (!*state) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  split_state *s = *state;
  s->axis = ge_node_attr_int(p->node, "axis", 0);
  s->num_outputs = p->opset >= 18 ? ge_node_attr_int(p->node, "num_outputs", 0) : 0;
  s->split_input = !attr && p->n_in > 1 && p->in[1].present;
  s->n_split = attr ? n : 0;
  if (attr) memcpy(s->split, a, n * sizeof *a);
  return GE_OK;
}

static ge_status run_split(const void *state, ge_kctx *c) {
  const split_state *s = state;
  const ge_tensor *x = c->in[0];
  int64_t ax = 0;
  GE_CHECK(run_axis(c, s->axis, x->rank, &ax));
  size_t n = c->n_out, dim = (size_t)x->dims[ax];
  int64_t *sizes = malloc((n ? n : 1) * sizeof *sizes);
  if (!sizes) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = GE_OK;
  const ge_tensor *sp = c->n_in > 1 ? c->in[1] : NULL;
  if ((s->split_input && sp) || s->n_split) {
    size_t ns = sp && s->split_input ? sp->numel : s->n_split;
    if (ns != n) {
      st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "split has %zu entries for %zu outputs", ns, n);
      goto done;
    }
    size_t sum = 0;
    for (size_t i = 0; i < n; i++) {
      sizes[i] = sp && s->split_input ? ge_tensor_get_i64(sp, i) : s->split[i];
      if (sizes[i] < 0) {
        st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "split[%zu] = %lld is negative", i, (long long)sizes[i]);
        goto done;
      }
      sum += (size_t)sizes[i];
    }
    if (sum != dim) {
      st = ge_kctx_fail(c, GE_ERR_SHAPE, "split sums to %zu, the axis has %zu", sum, dim);
      goto done;
    }
  } else if (s->num_outputs > 0) {
    size_t chunk = (dim + n - 1) / n;
    for (size_t i = 0; i < n; i++) {
      size_t b = chunk * i;
      sizes[i] = (int64_t)(b >= dim ? 0 : dim - b < chunk ? dim - b : chunk);
    }
  } else {
    if (dim % n) {
      st = ge_kctx_fail(c, GE_ERR_SHAPE, "axis of size %zu does not split evenly into %zu outputs", dim, n);
      goto done;
    }
    for (size_t i = 0; i < n; i++) sizes[i] = (int64_t)(dim / n);
  }
  size_t outer = ge_ref_prod(x->dims, 0, (int)ax), inner = ge_ref_prod(x->dims, (int)ax + 1, x->rank);
  size_t es = ge_dtype_size(x->dtype), at = 0;
  for (size_t i = 0; i < n; i++) {
    size_t blk = (size_t)sizes[i] * inner;
    ge_tensor *y = c->out[i];
    if (y) {
      if ((st = check_out(c, i, outer * blk))) goto done;
      for (size_t o = 0; o < outer && blk; o++)
        if ((st = ge_ref_copy((char *)y->data + o * blk * es, (const char *)x->data + (o * dim * inner + at) * es,
                              blk, x->dtype)))
          goto done;
    }
    at += blk;
  }
done:
  free(sizes);
  return st;
}

/* ------------------------------------------------------------------ Slice */

typedef struct slice_state {
  size_t n; /* opset < 10: attribute starts/ends/axes */
  bool has_axes;
  int64_t v[]; /* starts[n], ends[n], axes[n] */
} slice_state;

static ge_status prepare_slice(const ge_prepare_ctx *p, void **state) {
  if (p->opset >= 10) {
    for (size_t i = 1; i < 5 && i < p->n_in; i++) GE_CHECK(ge_prepare_check_dtype(p, i, dt_ind));
    *state = NULL;
    return GE_OK;
  }
  const int64_t *s, *e, *a = NULL;
  size_t ns = 0, ne = 0, na = 0;
  if (!ge_node_attr_ints(p->node, "starts", &s, &ns) || !ge_node_attr_ints(p->node, "ends", &e, &ne))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attributes 'starts' and 'ends' are required");
  bool ha = ge_node_attr_ints(p->node, "axes", &a, &na);
  if (ns != ne || (ha && na != ns))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "starts, ends and axes differ in length");
  *state = calloc(1, sizeof(slice_state) + 3 * (ns + 1) * sizeof(int64_t));
  if (!*state) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  slice_state *st = *state;
  st->n = ns;
  st->has_axes = ha;
  memcpy(st->v, s, ns * sizeof *s);
  memcpy(st->v + ns, e, ns * sizeof *e);
  if (ha) memcpy(st->v + 2 * ns, a, ns * sizeof *a);
  return GE_OK;
}

static ge_status run_slice(const void *state, ge_kctx *c) {
  const slice_state *ss = state;
  const ge_tensor *x = c->in[0];
  int r = x->rank;
  int64_t start[GE_MAX_RANK], step[GE_MAX_RANK], dims[GE_MAX_RANK], istr[GE_MAX_RANK], sstr[GE_MAX_RANK];
  for (int d = 0; d < r; d++) start[d] = 0, step[d] = 1, dims[d] = x->dims[d];
  size_t n;
  const ge_tensor *ts = NULL, *te = NULL, *ta = NULL, *tp = NULL;
  if (ss) {
    n = ss->n;
  } else {
    ts = c->in[1];
    te = c->in[2];
    ta = c->n_in > 3 ? c->in[3] : NULL;
    tp = c->n_in > 4 ? c->in[4] : NULL;
    n = ts->numel;
    if (te->numel != n || (ta && ta->numel != n) || (tp && tp->numel != n))
      return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "starts, ends, axes and steps differ in length");
  }
  if (n > (size_t)r) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "%zu starts for rank %d", n, r);
  unsigned seen = 0;
  for (size_t k = 0; k < n; k++) {
    int64_t s0 = ss ? ss->v[k] : ge_tensor_get_i64(ts, k);
    int64_t e0 = ss ? ss->v[ss->n + k] : ge_tensor_get_i64(te, k);
    int64_t a0 = ss ? (ss->has_axes ? ss->v[2 * ss->n + k] : (int64_t)k) : ta ? ge_tensor_get_i64(ta, k) : (int64_t)k;
    int64_t p0 = tp ? ge_tensor_get_i64(tp, k) : 1;
    int64_t ax = 0;
    GE_CHECK(run_axis(c, a0, r, &ax));
    if (seen >> ax & 1u) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is repeated", (long long)a0);
    seen |= 1u << ax;
    if (p0 == 0) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "steps[%zu] is 0", k);
    dims[ax] = ge_slice_axis(x->dims[ax], s0, e0, p0, &start[ax]);
    step[ax] = p0;
  }
  size_t numel = ge_ref_prod(dims, 0, r);
  GE_CHECK(check_out(c, 0, numel));
  if (numel == 0) return GE_OK;
  ge_ref_strides(x->dims, r, istr);
  int64_t off = 0;
  for (int d = 0; d < r; d++) {
    off += start[d] * istr[d];
    sstr[d] = istr[d] * step[d];
  }
  return ge_ref_strided_copy(c->out[0]->data, x->data, x->dtype, r, dims, sstr, off);
}

/* ------------------------------------------------------------------ Expand, Tile */

static ge_status prepare_shape_input(const ge_prepare_ctx *p, void **state) {
  return ge_prepare_check_dtype(p, 1, dt_i64);
}

static ge_status run_expand(const void *state, ge_kctx *c) {
  const ge_tensor *x = c->in[0];
  ge_tensor *y = c->out[0];
  int r = y->rank;
  if (x->rank > r) return ge_kctx_fail(c, GE_ERR_SHAPE, "input rank %d exceeds output rank %d", (int)x->rank, r);
  int64_t istr[GE_MAX_RANK], sstr[GE_MAX_RANK];
  ge_ref_strides(x->dims, x->rank, istr);
  int lead = r - x->rank;
  for (int d = 0; d < r; d++) {
    if (d < lead) {
      sstr[d] = 0;
      continue;
    }
    int64_t xd = x->dims[d - lead];
    if (xd == y->dims[d]) sstr[d] = istr[d - lead];
    else if (xd == 1) sstr[d] = 0;
    else
      return ge_kctx_fail(c, GE_ERR_SHAPE, "input dim %d = %lld cannot expand to %lld", d - lead, (long long)xd,
                          (long long)y->dims[d]);
  }
  return ge_ref_strided_copy(y->data, x->data, x->dtype, r, y->dims, sstr, 0);
}

static ge_status run_tile(const void *state, ge_kctx *c) {
  const ge_tensor *x = c->in[0], *rep = c->in[1];
  ge_tensor *y = c->out[0];
  int r = x->rank;
  if ((int64_t)rep->numel != r)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "repeats has %zu entries for rank %d", rep->numel, r);
  int64_t istr[GE_MAX_RANK], dims[2 * GE_MAX_RANK], sstr[2 * GE_MAX_RANK];
  ge_ref_strides(x->dims, r, istr);
  for (int d = 0; d < r; d++) {
    int64_t k = ge_tensor_get_i64(rep, (size_t)d);
    if (k < 0) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "repeats[%d] = %lld is negative", d, (long long)k);
    if (y->rank != r || y->dims[d] != k * x->dims[d])
      return ge_kctx_fail(c, GE_ERR_INTERNAL, "output dim %d does not match repeats", d);
    dims[2 * d] = k;
    sstr[2 * d] = 0;
    dims[2 * d + 1] = x->dims[d];
    sstr[2 * d + 1] = istr[d];
  }
  return ge_ref_strided_copy(y->data, x->data, x->dtype, 2 * r, dims, sstr, 0);
}

/* ------------------------------------------------------------------ DepthToSpace, SpaceToDepth */

typedef struct d2s_state {
  int64_t b;
  bool crd;
} d2s_state;

static ge_status prepare_d2s(const ge_prepare_ctx *p, void **state) {
  int64_t b = ge_node_attr_int(p->node, "blocksize", 0);
  if (b <= 0) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute 'blocksize' must be positive");
  /* DepthToSpace has a mode since opset 11, SpaceToDepth since opset 28 */
  int64_t since = !strcmp(p->node->op_type, "SpaceToDepth") ? 28 : 11;
  const char *m = p->opset >= since ? ge_node_attr_string(p->node, "mode", "DCR") : "DCR";
  if (strcmp(m, "DCR") && strcmp(m, "CRD"))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "mode '%s' must be DCR or CRD", m);
  GE_CHECK(alloc_state(p, sizeof(d2s_state), state));
  d2s_state *s = *state;
  s->b = b;
  s->crd = !strcmp(m, "CRD");
  return GE_OK;
}

static ge_status run_depth_to_space(const void *state, ge_kctx *c) {
  const d2s_state *s = state;
  const ge_tensor *x = c->in[0];
  if (x->rank != 4) return ge_kctx_fail(c, GE_ERR_SHAPE, "input must be 4-D, has rank %d", (int)x->rank);
  int64_t b = s->b, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (C % (b * b)) return ge_kctx_fail(c, GE_ERR_SHAPE, "channels %lld not divisible by %lld", (long long)C, (long long)(b * b));
  int64_t Cp = C / (b * b), HW = H * W;
  GE_CHECK(check_out(c, 0, x->numel));
  /* output viewed as [N, C', H, b1, W, b2] */
  int64_t dims[6] = {N, Cp, H, b, W, b};
  int64_t sstr[6];
  sstr[0] = C * HW;
  sstr[2] = W;
  sstr[4] = 1;
  if (s->crd) {
    sstr[1] = b * b * HW, sstr[3] = b * HW, sstr[5] = HW;
  } else {
    sstr[1] = HW, sstr[3] = b * Cp * HW, sstr[5] = Cp * HW;
  }
  return ge_ref_strided_copy(c->out[0]->data, x->data, x->dtype, 6, dims, sstr, 0);
}

static ge_status run_space_to_depth(const void *state, ge_kctx *c) {
  const d2s_state *s = state;
  const ge_tensor *x = c->in[0];
  if (x->rank != 4) return ge_kctx_fail(c, GE_ERR_SHAPE, "input must be 4-D, has rank %d", (int)x->rank);
  int64_t b = s->b, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  if (H % b || W % b) return ge_kctx_fail(c, GE_ERR_SHAPE, "spatial dims %lldx%lld not divisible by %lld", (long long)H, (long long)W, (long long)b);
  GE_CHECK(check_out(c, 0, x->numel));
  if (s->crd) { /* opset 28: output viewed as [N, C, b1, b2, H', W'] */
    int64_t dims[6] = {N, C, b, b, H / b, W / b};
    int64_t sstr[6] = {C * H * W, H * W, W, 1, b * W, b};
    return ge_ref_strided_copy(c->out[0]->data, x->data, x->dtype, 6, dims, sstr, 0);
  }
  /* output viewed as [N, b1, b2, C, H', W'] */
  int64_t dims[6] = {N, b, b, C, H / b, W / b};
  int64_t sstr[6] = {C * H * W, W, 1, H * W, b * W, b};
  return ge_ref_strided_copy(c->out[0]->data, x->data, x->dtype, 6, dims, sstr, 0);
}

/* ------------------------------------------------------------------ Constant, ConstantOfShape */

typedef struct const_state {
  ge_tensor t; /* owned */
} const_state;

static void release_const(void *state) {
  const_state *s = state;
  if (!s) return;
  if (s->t.dtype == GE_STRING && s->t.data) {
    char **p = s->t.data;
    for (size_t i = 0; i < s->t.numel; i++) free(p[i]);
    memset(p, 0, s->t.numel * sizeof *p);
  }
  ge_tensor_release_storage(&s->t);
  free(s);
}

static ge_status prepare_constant(const ge_prepare_ctx *p, void **state) {
  const ge_node *n = p->node;
  const ge_attr_value *a = NULL;
  for (size_t i = 0; i < n->n_attrs && !a; i++)
    if (!strncmp(n->attrs[i].name, "value", 5)) a = &n->attrs[i];
  if (!a) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "no value attribute");
  const_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = GE_OK;
  int64_t len = (int64_t)a->n;
  if (!strcmp(a->name, "value") && a->kind == GE_ATTR_KIND_TENSOR && a->t) {
    st = ge_tensor_init_alloc(&s->t, a->t->dtype, a->t->dims, a->t->rank);
    if (!st) st = ge_ref_copy(s->t.data, a->t->data, a->t->numel, a->t->dtype);
  } else if (!strcmp(a->name, "value_float")) {
    if (!(st = ge_tensor_init_alloc(&s->t, GE_F32, NULL, 0))) *(float *)s->t.data = a->f;
  } else if (!strcmp(a->name, "value_int")) {
    if (!(st = ge_tensor_init_alloc(&s->t, GE_I64, NULL, 0))) *(int64_t *)s->t.data = a->i;
  } else if (!strcmp(a->name, "value_string")) {
    if (!(st = ge_tensor_init_alloc(&s->t, GE_STRING, NULL, 0))) st = ge_ref_copy(s->t.data, &a->s, 1, GE_STRING);
  } else if (!strcmp(a->name, "value_floats")) {
    if (!(st = ge_tensor_init_alloc(&s->t, GE_F32, &len, 1)) && a->n) memcpy(s->t.data, a->floats, a->n * sizeof(float));
  } else if (!strcmp(a->name, "value_ints")) {
    if (!(st = ge_tensor_init_alloc(&s->t, GE_I64, &len, 1)) && a->n) memcpy(s->t.data, a->ints, a->n * sizeof(int64_t));
  } else if (!strcmp(a->name, "value_strings")) {
    if (!(st = ge_tensor_init_alloc(&s->t, GE_STRING, &len, 1))) st = ge_ref_copy(s->t.data, a->strings, a->n, GE_STRING);
  } else {
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "attribute '%s' is not supported", a->name);
  }
  if (st) {
    release_const(s);
    return ge_error_prefix(st, "node '%s' (Constant): ", n->name ? n->name : "");
  }
  *state = s;
  return GE_OK;
}

static ge_status run_constant(const void *state, ge_kctx *c) {
  const const_state *s = state;
  GE_CHECK(check_out(c, 0, s->t.numel));
  return ge_ref_copy(c->out[0]->data, s->t.data, s->t.numel, s->t.dtype);
}

typedef struct cos_state {
  ge_dtype dt;
  uint64_t bits; /* the element, for non-string dtypes */
  char *str;
} cos_state;

static void release_cos(void *state) {
  cos_state *s = state;
  if (s) free(s->str);
  free(s);
}

static ge_status prepare_constant_of_shape(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, dt_i64));
  const ge_attr_value *a = ge_node_attr(p->node, "value");
  cos_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->dt = GE_F32;
  if (a) {
    if (a->kind != GE_ATTR_KIND_TENSOR || !a->t || a->t->numel != 1) {
      free(s);
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute 'value' must be a one-element tensor");
    }
    s->dt = a->t->dtype;
    if (s->dt == GE_STRING) {
      const char *v = *(char *const *)a->t->data;
      if (v && !(s->str = strdup(v))) {
        free(s);
        return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
      }
    } else {
      memcpy(&s->bits, a->t->data, ge_dtype_size(s->dt));
    }
  }
  *state = s;
  return GE_OK;
}

static ge_status run_constant_of_shape(const void *state, ge_kctx *c) {
  const cos_state *s = state;
  ge_tensor *y = c->out[0];
  const ge_tensor *sh = c->in[0];
  size_t n = 1;
  for (size_t i = 0; i < sh->numel; i++) {
    int64_t d = ge_tensor_get_i64(sh, i);
    if (d < 0) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "shape[%zu] = %lld is negative", i, (long long)d);
    n *= (size_t)d;
  }
  GE_CHECK(check_out(c, 0, n));
  if (y->dtype != s->dt) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output dtype mismatch");
  if (s->dt == GE_STRING) return ge_ref_fill(y->data, &s->str, n, GE_STRING);
  return ge_ref_fill(y->data, &s->bits, n, s->dt);
}

/* ------------------------------------------------------------------ Range */

static ge_status prepare_range(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype ok[] = {GE_F32, GE_F64, GE_F16, GE_BF16, GE_I16, GE_I32, GE_I64, GE_DTYPE_COUNT};
  for (size_t i = 0; i < 3; i++) GE_CHECK(ge_prepare_check_dtype(p, i, ok));
  return GE_OK;
}

static ge_status run_range(const void *state, ge_kctx *c) {
  const ge_tensor *a = c->in[0], *b = c->in[1], *d = c->in[2];
  ge_tensor *y = c->out[0];
  if (a->numel != 1 || b->numel != 1 || d->numel != 1)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "start, limit and delta must be scalars");
  size_t n = y->numel;
  switch (y->dtype) {
#define RANGE_INT(T)                                                                    \
  {                                                                                     \
    int64_t s0 = ge_tensor_get_i64(a, 0), l = ge_tensor_get_i64(b, 0), dl = ge_tensor_get_i64(d, 0); \
    if (dl == 0) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "delta is 0");        \
    double want = ceil(((double)l - (double)s0) / (double)dl);                          \
    if ((want > 0 ? (size_t)want : 0) != n)                                             \
      return ge_kctx_fail(c, GE_ERR_INTERNAL, "output has %zu elements, range has %g", n, want); \
    T *o = y->data;                                                                     \
    for (size_t i = 0; i < n; i++) o[i] = (T)(s0 + (int64_t)i * dl);                    \
    return GE_OK;                                                                       \
  }
  case GE_I16: RANGE_INT(int16_t)
  case GE_I32: RANGE_INT(int32_t)
  case GE_I64: RANGE_INT(int64_t)
#undef RANGE_INT
  case GE_F32: case GE_F64: case GE_F16: case GE_BF16: {
    double s0 = ge_tensor_get_f64(a, 0), l = ge_tensor_get_f64(b, 0), dl = ge_tensor_get_f64(d, 0);
    if (dl == 0) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "delta is 0");
    double want = ceil((l - s0) / dl);
    if ((want > 0 ? (size_t)want : 0) != n)
      return ge_kctx_fail(c, GE_ERR_INTERNAL, "output has %zu elements, range has %g", n, want);
    if (y->dtype == GE_F64) {
      double *o = y->data;
      for (size_t i = 0; i < n; i++) o[i] = s0 + (double)i * dl;
    } else if (y->dtype == GE_F32) {
      float *o = y->data, fs = (float)s0, fd = (float)dl;
      for (size_t i = 0; i < n; i++) o[i] = fs + (float)i * fd;
    } else {
      uint16_t *o = y->data;
      float fs = (float)s0, fd = (float)dl;
      bool h = y->dtype == GE_F16;
      for (size_t i = 0; i < n; i++) {
        float v = fs + (float)i * fd;
        o[i] = h ? ge_f32_to_f16(v) : ge_f32_to_bf16(v);
      }
    }
    return GE_OK;
  }
  default:
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "no Range kernel for dtype %s", ge_dtype_name(y->dtype));
  }
}

/* ------------------------------------------------------------------ EyeLike, Trilu */

typedef struct eye_state {
  int64_t k;
} eye_state;

static ge_status prepare_eye_like(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(alloc_state(p, sizeof(eye_state), state));
  ((eye_state *)*state)->k = ge_node_attr_int(p->node, "k", 0);
  return GE_OK;
}

static ge_status run_eye_like(const void *state, ge_kctx *c) {
  const eye_state *s = state;
  ge_tensor *y = c->out[0];
  if (y->rank != 2) return ge_kctx_fail(c, GE_ERR_SHAPE, "output must be 2-D");
  uint64_t one = 0;
  if (!ge_ref_scalar_from_f64(y->dtype, 1.0, &one))
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "no EyeLike kernel for dtype %s", ge_dtype_name(y->dtype));
  int64_t R = y->dims[0], C = y->dims[1];
  size_t es = ge_dtype_size(y->dtype);
  char *o = y->data;
  for (int64_t i = 0; i < R; i++) {
    int64_t j = i + s->k;
    if (j >= 0 && j < C) memcpy(o + (size_t)(i * C + j) * es, &one, es);
  }
  return GE_OK;
}

typedef struct trilu_state {
  bool upper;
} trilu_state;

static ge_status prepare_trilu(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 1, dt_i64));
  GE_CHECK(alloc_state(p, sizeof(trilu_state), state));
  ((trilu_state *)*state)->upper = ge_node_attr_int(p->node, "upper", 1) != 0;
  return GE_OK;
}

static ge_status run_trilu(const void *state, ge_kctx *c) {
  const trilu_state *s = state;
  const ge_tensor *x = c->in[0], *kt = c->n_in > 1 ? c->in[1] : NULL;
  ge_tensor *y = c->out[0];
  if (x->rank < 2) return ge_kctx_fail(c, GE_ERR_SHAPE, "input must have rank >= 2");
  GE_CHECK(check_out(c, 0, x->numel));
  int64_t k = kt && kt->numel ? ge_tensor_get_i64(kt, 0) : 0;
  int64_t R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
  size_t mats = ge_ref_prod(x->dims, 0, x->rank - 2), es = ge_dtype_size(x->dtype);
  static const char *const empty = "";
  for (size_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < R; i++) {
      size_t row = (m * (size_t)R + (size_t)i) * (size_t)C;
      int64_t b, e; /* kept columns [b, e) */
      if (s->upper) {
        b = i + k < 0 ? 0 : i + k > C ? C : i + k;
        e = C;
      } else {
        b = 0;
        e = i + k + 1 < 0 ? 0 : i + k + 1 > C ? C : i + k + 1;
      }
      if (e > b) GE_CHECK(ge_ref_copy((char *)y->data + (row + (size_t)b) * es, (const char *)x->data + (row + (size_t)b) * es, (size_t)(e - b), x->dtype));
      if (x->dtype == GE_STRING) {
        char **yo = (char **)y->data + row;
        if (b > 0) GE_CHECK(ge_ref_fill(yo, &empty, (size_t)b, GE_STRING));
        if (e < C) GE_CHECK(ge_ref_fill(yo + e, &empty, (size_t)(C - e), GE_STRING));
      }
    }
  return GE_OK;
}

/* ------------------------------------------------------------------ OneHot */

static ge_status prepare_one_hot(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(alloc_state(p, sizeof(axis_state), state));
  ((axis_state *)*state)->axis = ge_node_attr_int(p->node, "axis", -1);
  return GE_OK;
}

static ge_status run_one_hot(const void *state, ge_kctx *c) {
  const axis_state *s = state;
  const ge_tensor *ind = c->in[0], *dep = c->in[1], *val = c->in[2];
  ge_tensor *y = c->out[0];
  if (dep->numel != 1) return ge_kctx_fail(c, GE_ERR_SHAPE, "depth must have one element");
  if (val->numel != 2) return ge_kctx_fail(c, GE_ERR_SHAPE, "values must have two elements");
  double dd = ge_tensor_get_f64(dep, 0);
  if (!(dd >= 1.0)) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "depth %g must be positive", dd);
  int64_t depth = (int64_t)dd, r = ind->rank + 1, ax = 0;
  GE_CHECK(run_axis(c, s->axis, r, &ax));
  size_t outer = ge_ref_prod(ind->dims, 0, (int)ax), inner = ge_ref_prod(ind->dims, (int)ax, ind->rank);
  GE_CHECK(check_out(c, 0, outer * inner * (size_t)depth));
  size_t es = ge_dtype_size(val->dtype);
  const char *off = val->data, *on = (const char *)val->data + es;
  GE_CHECK(ge_ref_fill(y->data, off, y->numel, val->dtype));
  char *yo = y->data;
  bool fl = ge_dtype_is_float(ind->dtype);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      size_t at = o * inner + i;
      int64_t v = fl ? (int64_t)ge_tensor_get_f64(ind, at) : ge_tensor_get_i64(ind, at);
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;
      size_t dst = (o * (size_t)depth + (size_t)v) * inner + i;
      GE_CHECK(ge_ref_copy(yo + dst * es, on, 1, val->dtype));
    }
  return GE_OK;
}

/* ------------------------------------------------------------------ NonZero, Compress */

/* Marks nonzero elements of x into flags (one byte each); returns the count. */
static size_t nonzero_flags(const ge_tensor *x, uint8_t *flags) {
  size_t n = x->numel, cnt = 0;
  switch (x->dtype) {
  case GE_F32: { const float *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = p[i] != 0.0f; break; }
  case GE_F64: { const double *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = p[i] != 0.0; break; }
  case GE_F16: case GE_BF16: { const uint16_t *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = (p[i] & 0x7fff) != 0; break; }
  case GE_STRING: { char *const *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = p[i] && p[i][0]; break; }
  /* low-precision floats with a -0 code; float8e8m0 has no zero at all */
  case GE_F8E4M3FN: case GE_F8E5M2: { const uint8_t *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = (p[i] & 0x7f) != 0; break; }
  case GE_F4E2M1: { const uint8_t *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = (p[i] & 0x7) != 0; break; }
  case GE_F8E8M0: memset(flags, 1, n); cnt = n; break;
  default:
    switch (ge_dtype_size(x->dtype)) {
#define NZ(T) { const T *p = x->data; for (size_t i = 0; i < n; i++) cnt += flags[i] = p[i] != 0; break; }
    case 1: NZ(uint8_t)
    case 2: NZ(uint16_t)
    case 4: NZ(uint32_t)
    case 8: NZ(uint64_t)
#undef NZ
    default: break;
    }
  }
  return cnt;
}

static ge_status run_non_zero(const void *state, ge_kctx *c) {
  const ge_tensor *x = c->in[0];
  uint8_t *flags = malloc(x->numel ? x->numel : 1);
  if (!flags) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  size_t cnt = nonzero_flags(x, flags);
  int64_t dims[2] = {x->rank, (int64_t)cnt};
  ge_status st = ge_kctx_alloc_output(c, 0, GE_I64, dims, 2);
  if (st) {
    free(flags);
    return st;
  }
  int64_t *o = c->out[0]->data, idx[GE_MAX_RANK] = {0};
  int r = x->rank;
  size_t j = 0;
  for (size_t i = 0; i < x->numel; i++) {
    if (flags[i]) {
      for (int d = 0; d < r; d++) o[(size_t)d * cnt + j] = idx[d];
      j++;
    }
    for (int d = r - 1; d >= 0; d--) {
      if (++idx[d] < x->dims[d]) break;
      idx[d] = 0;
    }
  }
  free(flags);
  return GE_OK;
}

static ge_status prepare_compress(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 1, dt_bool));
  GE_CHECK(alloc_state(p, sizeof(axis_state), state));
  axis_state *s = *state;
  const ge_attr_value *a = ge_node_attr(p->node, "axis");
  s->has_axis = a != NULL;
  s->axis = a ? a->i : 0;
  return GE_OK;
}

static ge_status run_compress(const void *state, ge_kctx *c) {
  const axis_state *s = state;
  const ge_tensor *x = c->in[0], *cond = c->in[1];
  const uint8_t *cf = cond->data;
  int64_t ax = 0;
  int64_t dims[GE_MAX_RANK];
  int rank;
  size_t outer, inner, len;
  if (s->has_axis) {
    GE_CHECK(run_axis(c, s->axis, x->rank, &ax));
    rank = x->rank;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)rank);
    outer = ge_ref_prod(x->dims, 0, (int)ax);
    len = (size_t)x->dims[ax];
    inner = ge_ref_prod(x->dims, (int)ax + 1, x->rank);
  } else {
    rank = 1;
    outer = 1;
    len = x->numel;
    inner = 1;
  }
  size_t n = cond->numel < len ? cond->numel : len, cnt = 0;
  for (size_t i = 0; i < n; i++) cnt += cf[i] != 0;
  for (size_t i = n; i < cond->numel; i++)
    if (cf[i]) return ge_kctx_fail(c, GE_ERR_SHAPE, "condition[%zu] is true beyond the %zu entries of the axis", i, len);
  dims[s->has_axis ? ax : 0] = (int64_t)cnt;
  GE_CHECK(ge_kctx_alloc_output(c, 0, x->dtype, dims, rank));
  size_t es = ge_dtype_size(x->dtype);
  char *yo = c->out[0]->data;
  const char *xi = x->data;
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < n; i++)
      if (cf[i]) {
        GE_CHECK(ge_ref_copy(yo, xi + (o * len + i) * inner * es, inner, x->dtype));
        yo += inner * es;
      }
  return GE_OK;
}

/* ------------------------------------------------------------------ ReverseSequence */

typedef struct revseq_state {
  int64_t batch_axis, time_axis;
} revseq_state;

static ge_status prepare_reverse_sequence(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 1, dt_i64));
  int64_t ba = ge_node_attr_int(p->node, "batch_axis", 1), ta = ge_node_attr_int(p->node, "time_axis", 0);
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "batch_axis %lld and time_axis %lld must be 0 and 1",
                           (long long)ba, (long long)ta);
  GE_CHECK(alloc_state(p, sizeof(revseq_state), state));
  revseq_state *s = *state;
  s->batch_axis = ba;
  s->time_axis = ta;
  return GE_OK;
}

static ge_status run_reverse_sequence(const void *state, ge_kctx *c) {
  const revseq_state *s = state;
  const ge_tensor *x = c->in[0], *lens = c->in[1];
  if (x->rank < 2) return ge_kctx_fail(c, GE_ERR_SHAPE, "input must have rank >= 2");
  GE_CHECK(check_out(c, 0, x->numel));
  int64_t B = x->dims[s->batch_axis], T = x->dims[s->time_axis];
  if ((int64_t)lens->numel != B)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "sequence_lens has %zu entries, batch is %lld", lens->numel, (long long)B);
  size_t inner = ge_ref_prod(x->dims, 2, x->rank), es = ge_dtype_size(x->dtype);
  const int64_t *l = lens->data;
  for (int64_t b = 0; b < B; b++) {
    int64_t n = l[b];
    if (n < 0 || n > T)
      return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                          (long long)b, (long long)n, (long long)T);
    for (int64_t t = 0; t < T; t++) {
      int64_t src = t < n ? n - 1 - t : t;
      size_t od = (size_t)(s->time_axis == 0 ? t * B + b : b * T + t);
      size_t sd = (size_t)(s->time_axis == 0 ? src * B + b : b * T + src);
      GE_CHECK(ge_ref_copy((char *)c->out[0]->data + od * inner * es, (const char *)x->data + sd * inner * es, inner,
                           x->dtype));
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ the table */

#define K(prep, run, rel) {prep, run, rel, false}
#define FREE ge_ref_free_state

const ge_kernel_def ge_ref_kernels_shape[] = {
    {"", "Identity", 1, 0, K(NULL, run_copy, NULL)},
    {"", "Reshape", 5, 0, K(prepare_reshape, run_copy, NULL)},
    {"", "Squeeze", 1, 0, K(NULL, run_copy, NULL)},
    {"", "Unsqueeze", 1, 0, K(NULL, run_copy, NULL)},
    {"", "Shape", 1, 0, K(prepare_shape, run_shape, FREE)},
    {"", "Size", 1, 0, K(NULL, run_size, NULL)},
    {"", "Transpose", 1, 0, K(prepare_transpose, run_transpose, FREE)},
    {"", "Concat", 1, 0, K(prepare_concat, run_concat, FREE)},
    {"", "Split", 1, 0, K(prepare_split, run_split, FREE)},
    {"", "Slice", 1, 0, K(prepare_slice, run_slice, FREE)},
    {"", "Expand", 8, 0, K(prepare_shape_input, run_expand, NULL)},
    {"", "Tile", 6, 0, K(prepare_shape_input, run_tile, NULL)},
    {"", "DepthToSpace", 1, 0, K(prepare_d2s, run_depth_to_space, FREE)},
    {"", "SpaceToDepth", 1, 0, K(prepare_d2s, run_space_to_depth, FREE)},
    {"", "Constant", 1, 0, K(prepare_constant, run_constant, release_const)},
    {"", "ConstantOfShape", 9, 0, K(prepare_constant_of_shape, run_constant_of_shape, release_cos)},
    {"", "Range", 11, 0, K(prepare_range, run_range, NULL)},
    {"", "EyeLike", 9, 0, K(prepare_eye_like, run_eye_like, FREE)},
    {"", "Trilu", 14, 0, K(prepare_trilu, run_trilu, FREE)},
    {"", "OneHot", 9, 0, K(prepare_one_hot, run_one_hot, FREE)},
    {"", "NonZero", 9, 0, {NULL, run_non_zero, NULL, true}},
    {"", "Compress", 9, 0, {prepare_compress, run_compress, FREE, true}},
    {"", "ReverseSequence", 10, 0, K(prepare_reverse_sequence, run_reverse_sequence, FREE)},
    {"", "Gather", 1, 0, K(ge_ref_gather_prepare, ge_ref_gather_run, FREE)},
    {"", "GatherElements", 11, 0, K(ge_ref_gather_prepare, ge_ref_gather_elements_run, FREE)},
    {"", "GatherND", 11, 0, K(ge_ref_gather_nd_prepare, ge_ref_gather_nd_run, FREE)},
    {"", "Scatter", 9, 0, K(ge_ref_scatter_prepare, ge_ref_scatter_elements_run, FREE)},
    {"", "ScatterElements", 11, 0, K(ge_ref_scatter_prepare, ge_ref_scatter_elements_run, FREE)},
    {"", "ScatterND", 11, 0, K(ge_ref_scatter_prepare, ge_ref_scatter_nd_run, FREE)},
    {"", "Pad", 2, 0, K(ge_ref_pad_prepare, ge_ref_pad_run, FREE)},
    {0},
};
