/* Schemas of the reduce family: ReduceX, ArgMax/ArgMin, CumSum, TopK, Det, Unique, Shrink,
 * LpNormalization, Resize and Upsample. */
#include <math.h>
#include <string.h>

#include "ops/op.h"

static const ge_dtype numeric_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16,
                                         GE_I32, GE_I64, GE_U8,   GE_U16, GE_U32, GE_U64,
                                         GE_DTYPE_COUNT};
static const ge_dtype numeric_bool_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,
                                              GE_I16, GE_I32, GE_I64,  GE_U8,  GE_U16,
                                              GE_U32, GE_U64, GE_BOOL, GE_DTYPE_COUNT};
static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};
static const ge_dtype int_index_types[] = {GE_I32, GE_I64, GE_DTYPE_COUNT};

static bool rank_known(const ge_infer_ctx *c, size_t i) {
  return i < c->n_in && c->in[i].present && c->in[i].type &&
         c->in[i].type->kind == GE_TYPE_TENSOR && c->in[i].type->shape.rank != GE_RANK_UNKNOWN;
}

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) ? c->in[i].type->dtype : GE_DTYPE_COUNT;
}

/* ------------------------------------------------------------------ ReduceX */

static bool reduce_axes_are_input(const char *op, int64_t opset) {
  if (!strcmp(op, "ReduceSum")) return opset >= 13;
  return opset >= 18;
}

static ge_status infer_reduce(ge_infer_ctx *c) {
  const ge_node *n = c->node;
  bool minmax = !strcmp(n->op_type, "ReduceMax") || !strcmp(n->op_type, "ReduceMin");
  GE_CHECK(ge_infer_check_dtype(c, 0, minmax ? numeric_bool_types : numeric_types));
  ge_dtype dt = in_dtype(c, 0);
  int64_t keepdims = ge_node_attr_int(n, "keepdims", 1);
  bool axes_input = reduce_axes_are_input(n->op_type, c->opset);
  int64_t noop = axes_input ? ge_node_attr_int(n, "noop_with_empty_axes", 0) : 0;
  if (!rank_known(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  int64_t rank = is->rank;
  int64_t axes[64];
  size_t n_axes = 0;
  if (axes_input) {
    if (c->n_in > 1 && c->in[1].present) {
      GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
      if (!ge_infer_const_ints(c, 1, axes, 64, &n_axes)) {
        /* axes unknown until run time */
        ge_shape s;
        if (keepdims) {
          s.rank = is->rank;
          for (int32_t d = 0; d < is->rank; d++) s.dims[d] = is->dims[d] == 1 ? 1 : GE_DIM_UNKNOWN;
          ge_infer_set(c, 0, dt, &s);
        } else {
          ge_infer_set(c, 0, dt, NULL);
        }
        return GE_OK;
      }
    }
  } else {
    const int64_t *a;
    size_t na;
    if (ge_node_attr_ints(n, "axes", &a, &na)) {
      if (na > 64) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "too many axes (%zu)", na);
      memcpy(axes, a, na * sizeof *a);
      n_axes = na;
    }
  }
  bool red[GE_MAX_RANK] = {false};
  if (n_axes == 0) {
    if (noop) {
      ge_infer_copy(c, 0, 0);
      return GE_OK;
    }
    for (int64_t d = 0; d < rank; d++) red[d] = true;
  }
  for (size_t k = 0; k < n_axes; k++) {
    int64_t ax;
    GE_CHECK(ge_infer_axis(c, axes[k], rank, &ax));
    red[ax] = true;
  }
  ge_shape s;
  s.rank = 0;
  for (int64_t d = 0; d < rank; d++) {
    if (!red[d])
      s.dims[s.rank++] = is->dims[d];
    else if (keepdims)
      s.dims[s.rank++] = 1;
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ ArgMax/ArgMin */

static ge_status infer_arg(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, numeric_bool_types));
  int64_t axis = ge_node_attr_int(c->node, "axis", 0);
  int64_t keepdims = ge_node_attr_int(c->node, "keepdims", 1);
  if (!rank_known(c, 0)) {
    ge_infer_set(c, 0, GE_I64, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  int64_t ax;
  GE_CHECK(ge_infer_axis(c, axis, is->rank, &ax));
  if (is->dims[ax] == 0)
    return ge_infer_fail(c, GE_ERR_SHAPE, "cannot take %s over axis %lld of size 0",
                         c->node->op_type, (long long)ax);
  ge_shape s;
  s.rank = 0;
  for (int32_t d = 0; d < is->rank; d++) {
    if (d != ax)
      s.dims[s.rank++] = is->dims[d];
    else if (keepdims)
      s.dims[s.rank++] = 1;
  }
  ge_infer_set(c, 0, GE_I64, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ CumSum */

static ge_status infer_cumsum(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, numeric_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, int_index_types));
  if (c->in[1].type && c->in[1].type->shape.rank > 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (axis) must be a scalar or 1-element tensor, has rank %d",
                         (int)c->in[1].type->shape.rank);
  int64_t ax;
  size_t na;
  if (rank_known(c, 0) && ge_infer_const_ints(c, 1, &ax, 1, &na) && na == 1) {
    int64_t a2;
    GE_CHECK(ge_infer_axis(c, ax, c->in[0].type->shape.rank, &a2));
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ TopK */

static ge_status infer_topk(ge_infer_ctx *c) {
  static const ge_dtype topk_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16,
                                        GE_I32, GE_I64, GE_U8,   GE_U16, GE_U32, GE_U64,
                                        GE_DTYPE_COUNT};
  GE_CHECK(ge_infer_check_dtype(c, 0, topk_types));
  ge_dtype dt = in_dtype(c, 0);
  int64_t axis = ge_node_attr_int(c->node, "axis", -1);
  int64_t k = -1;
  bool k_known = false;
  if (c->opset < 10) {
    const ge_attr_value *a = ge_node_attr(c->node, "k");
    if (!a) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'k' is required");
    k = a->i;
    k_known = true;
  } else {
    GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
    size_t nk;
    int64_t kk[1];
    if (ge_infer_const_ints(c, 1, kk, 1, &nk) && nk == 1) {
      k = kk[0];
      k_known = true;
    }
  }
  if (k_known && k < 0)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "k must be >= 0, got %lld", (long long)k);
  if (!rank_known(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    ge_infer_set(c, 1, GE_I64, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  int64_t ax;
  GE_CHECK(ge_infer_axis(c, axis, is->rank, &ax));
  if (k_known && is->dims[ax] >= 0 && k > is->dims[ax])
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "k = %lld exceeds the size %lld of axis %lld",
                         (long long)k, (long long)is->dims[ax], (long long)ax);
  ge_shape s = *is;
  s.dims[ax] = k_known ? k : GE_DIM_UNKNOWN;
  ge_infer_set(c, 0, dt, &s);
  ge_infer_set(c, 1, GE_I64, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ Det */

static ge_status infer_det(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  ge_dtype dt = in_dtype(c, 0);
  if (!rank_known(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  if (is->rank < 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 2, has rank %d", (int)is->rank);
  int64_t a = is->dims[is->rank - 2], b = is->dims[is->rank - 1];
  if (a >= 0 && b >= 0 && a != b)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must hold square matrices, last dims are %lld x %lld",
                         (long long)a, (long long)b);
  ge_shape s = *is;
  s.rank -= 2;
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ Unique */

static ge_status infer_unique(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  if (dt == GE_BOOL)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input 0 has dtype bool, which Unique does not take");
  const ge_attr_value *axis_attr = ge_node_attr(c->node, "axis");
  ge_shape s1 = {.rank = 1, .dims = {GE_DIM_UNKNOWN}};
  for (size_t o = 1; o < c->n_out; o++) ge_infer_set(c, o, GE_I64, &s1);
  if (!rank_known(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  if (!axis_attr) {
    ge_infer_set(c, 0, dt, &s1);
    size_t numel;
    if (c->n_out > 2 && ge_shape_numel(is, &numel)) {
      ge_shape s2 = {.rank = 1, .dims = {(int64_t)numel}};
      ge_infer_set(c, 2, GE_I64, &s2);
    }
    return GE_OK;
  }
  int64_t ax;
  if (is->rank == 0)
    return ge_infer_fail(c, GE_ERR_SHAPE, "attribute axis is given but input 0 is a scalar");
  GE_CHECK(ge_infer_axis(c, axis_attr->i, is->rank, &ax));
  ge_shape s = *is;
  s.dims[ax] = GE_DIM_UNKNOWN;
  ge_infer_set(c, 0, dt, &s);
  if (c->n_out > 2) {
    ge_shape s2 = {.rank = 1, .dims = {is->dims[ax]}};
    ge_infer_set(c, 2, GE_I64, &s2);
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ Shrink / LpNormalization */

static ge_status infer_shrink(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, numeric_types));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_lpnorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  int64_t p = ge_node_attr_int(c->node, "p", 2);
  if (p != 1 && p != 2)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute p must be 1 or 2, got %lld", (long long)p);
  if (rank_known(c, 0)) {
    int64_t ax;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", -1), c->in[0].type->shape.rank, &ax));
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ Resize / Upsample */

/* Reads a float constant input (any float dtype) into dst; false when not constant. */
static bool const_floats(const ge_infer_ctx *c, size_t i, double *dst, size_t cap, size_t *n) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].value) return false;
  const ge_tensor *t = c->in[i].value;
  if (!ge_dtype_is_float(t->dtype) || t->numel > cap) return false;
  for (size_t k = 0; k < t->numel; k++) dst[k] = ge_tensor_get_f64(t, k);
  *n = t->numel;
  return true;
}

static bool input_is_empty(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present) return true;
  if (c->in[i].value) return c->in[i].value->numel == 0;
  const ge_type *t = c->in[i].type;
  return t && t->shape.rank == 1 && t->shape.dims[0] == 0;
}

static ge_status infer_resize(ge_infer_ctx *c) {
  const ge_node *n = c->node;
  bool upsample = !strcmp(n->op_type, "Upsample");
  ge_dtype dt = in_dtype(c, 0);
  if (dt == GE_STRING)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input 0 has dtype string, which %s does not take",
                         n->op_type);
  if (!rank_known(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  int32_t rank = is->rank;
  ge_shape s;
  s.rank = rank;
  for (int32_t d = 0; d < rank; d++) s.dims[d] = GE_DIM_UNKNOWN;
  /* axes (opset 18+) */
  int64_t axes[GE_MAX_RANK];
  size_t n_axes = (size_t)rank;
  for (int32_t d = 0; d < rank; d++) axes[d] = d;
  if (!upsample && c->opset >= 18) {
    const int64_t *a;
    size_t na;
    if (ge_node_attr_ints(n, "axes", &a, &na)) {
      if (na > (size_t)rank)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "%zu axes given for rank %d", na, (int)rank);
      bool seen[GE_MAX_RANK] = {false};
      for (size_t k = 0; k < na; k++) {
        int64_t ax;
        GE_CHECK(ge_infer_axis(c, a[k], rank, &ax));
        if (seen[ax]) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld repeated", (long long)ax);
        seen[ax] = true;
        axes[k] = ax;
      }
      n_axes = na;
      for (int32_t d = 0; d < rank; d++)
        if (!seen[d]) s.dims[d] = is->dims[d];
    }
  }
  double scales[GE_MAX_RANK];
  size_t ns = 0;
  bool have_scales = false, have_sizes = false;
  int64_t sizes[GE_MAX_RANK];
  size_t nz = 0;
  if (upsample && c->opset < 9) {
    const float *f;
    size_t nf;
    if (!ge_node_attr_floats(n, "scales", &f, &nf))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'scales' is required");
    if (nf != (size_t)rank)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "%zu scales given for rank %d", nf, (int)rank);
    for (size_t k = 0; k < nf; k++) scales[k] = f[k];
    ns = nf;
    have_scales = true;
  } else if (upsample || c->opset < 11) {
    if (c->n_in < 2 || !c->in[1].present)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 1 (scales) is required");
    have_scales = const_floats(c, 1, scales, GE_MAX_RANK, &ns);
    if (!have_scales && c->in[1].value)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 1 (scales) must be a float tensor of at most %d entries",
                           GE_MAX_RANK);
  } else {
    bool scales_given = !input_is_empty(c, 2);
    bool sizes_given = !input_is_empty(c, 3);
    if (scales_given && sizes_given && c->in[2].value && c->in[3].value)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "only one of scales and sizes may be given");
    if (!scales_given && !sizes_given && (c->n_in < 3 || !c->in[2].present || c->in[2].value) &&
        (c->n_in < 4 || !c->in[3].present || c->in[3].value))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "one of scales and sizes must be given");
    if (scales_given) {
      have_scales = const_floats(c, 2, scales, GE_MAX_RANK, &ns);
      if (!have_scales && c->in[2].value)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 2 (scales) must be a float tensor of at most %d entries",
                             GE_MAX_RANK);
    } else if (sizes_given) {
      have_sizes = ge_infer_const_ints(c, 3, sizes, GE_MAX_RANK, &nz);
      if (!have_sizes && c->in[3].value)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 3 (sizes) must be an int64 tensor of at most %d entries",
                             GE_MAX_RANK);
    }
  }
  if (have_scales) {
    if (ns != n_axes)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "scales has %zu entries, expected %zu", ns, n_axes);
    for (size_t k = 0; k < ns; k++) {
      if (!(scales[k] > 0))
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "scales[%zu] = %g must be positive", k, scales[k]);
      int64_t d = is->dims[axes[k]];
      if (d >= 0) {
        double v = floor((double)d * scales[k]);
        if (v > 9.0e15)
          return ge_infer_fail(c, GE_ERR_SHAPE, "output dim %lld is too large", (long long)axes[k]);
        s.dims[axes[k]] = (int64_t)v;
      }
    }
  } else if (have_sizes) {
    if (nz != n_axes)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "sizes has %zu entries, expected %zu", nz, n_axes);
    for (size_t k = 0; k < nz; k++)
      if (sizes[k] < 0)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "sizes[%zu] = %lld is negative", k,
                             (long long)sizes[k]);
    const char *policy = c->opset >= 18 ? ge_node_attr_string(n, "keep_aspect_ratio_policy", "stretch")
                                        : "stretch";
    if (!strcmp(policy, "stretch")) {
      for (size_t k = 0; k < nz; k++) s.dims[axes[k]] = sizes[k];
    } else if (!strcmp(policy, "not_larger") || !strcmp(policy, "not_smaller")) {
      bool larger = !strcmp(policy, "not_smaller");
      double sc = larger ? 0.0 : INFINITY;
      bool all_known = true;
      for (size_t k = 0; k < nz; k++) {
        int64_t d = is->dims[axes[k]];
        if (d < 0) {
          all_known = false;
          break;
        }
        double r = d == 0 ? (larger ? 0.0 : INFINITY) : (double)sizes[k] / (double)d;
        sc = larger ? fmax(sc, r) : fmin(sc, r);
      }
      if (all_known)
        for (size_t k = 0; k < nz; k++) {
          double v = floor((double)is->dims[axes[k]] * sc + 0.5);
          s.dims[axes[k]] = isfinite(v) ? (int64_t)v : 0;
        }
    } else {
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "unknown keep_aspect_ratio_policy '%s'", policy);
    }
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ detection / sampling */

static int64_t dim_or_unknown(const ge_infer_ctx *c, size_t i, int32_t d) {
  if (!rank_known(c, i) || c->in[i].type->shape.rank <= d) return GE_DIM_UNKNOWN;
  return c->in[i].type->shape.dims[d];
}

static ge_status infer_nms(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_F32, GE_DTYPE_COUNT}));
  GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_F32, GE_DTYPE_COUNT}));
  if (rank_known(c, 0) && c->in[0].type->shape.rank != 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (boxes) must have rank 3, has rank %d",
                         (int)c->in[0].type->shape.rank);
  if (rank_known(c, 0) && c->in[0].type->shape.dims[2] >= 0 && c->in[0].type->shape.dims[2] != 4)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (boxes) must have 4 coordinates per box, has %lld",
                         (long long)c->in[0].type->shape.dims[2]);
  if (rank_known(c, 1) && c->in[1].type->shape.rank != 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (scores) must have rank 3, has rank %d",
                         (int)c->in[1].type->shape.rank);
  ge_shape s = {.rank = 2, .dims = {GE_DIM_UNKNOWN, 3}};
  ge_infer_set(c, 0, GE_I64, &s);
  return GE_OK;
}

static ge_status infer_roialign(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 2, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
  ge_dtype dt = in_dtype(c, 0);
  if (rank_known(c, 0) && c->in[0].type->shape.rank != 4)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank 4, has rank %d",
                         (int)c->in[0].type->shape.rank);
  if (rank_known(c, 1) && (c->in[1].type->shape.rank != 2 ||
                           (c->in[1].type->shape.dims[1] >= 0 && c->in[1].type->shape.dims[1] != 4)))
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (rois) must have shape [num_rois, 4]");
  int64_t oh = ge_node_attr_int(c->node, "output_height", 1);
  int64_t ow = ge_node_attr_int(c->node, "output_width", 1);
  if (oh <= 0 || ow <= 0)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "output_height/output_width must be positive");
  int64_t nr = dim_or_unknown(c, 1, 0);
  if (nr < 0) nr = dim_or_unknown(c, 2, 0);
  ge_shape s = {.rank = 4, .dims = {nr, dim_or_unknown(c, 0, 1), oh, ow}};
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_maxroipool(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  ge_dtype dt = in_dtype(c, 0);
  const int64_t *ps;
  size_t np;
  if (!ge_node_attr_ints(c->node, "pooled_shape", &ps, &np) || np != 2 || ps[0] <= 0 || ps[1] <= 0)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute pooled_shape must hold 2 positive ints");
  if (rank_known(c, 0) && c->in[0].type->shape.rank != 4)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank 4, has rank %d",
                         (int)c->in[0].type->shape.rank);
  ge_shape s = {.rank = 4, .dims = {dim_or_unknown(c, 1, 0), dim_or_unknown(c, 0, 1), ps[0], ps[1]}};
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_gridsample(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, float_types));
  ge_dtype dt = in_dtype(c, 0);
  if (dt == GE_STRING || dt == GE_BOOL)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input 0 has dtype %s, which GridSample does not take",
                         ge_dtype_name(dt));
  if (!rank_known(c, 0) && !rank_known(c, 1)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  int32_t r = rank_known(c, 0) ? c->in[0].type->shape.rank : c->in[1].type->shape.rank;
  if (r < 3 || (c->opset < 20 && r != 4))
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank %s, has rank %d",
                         c->opset < 20 ? "4" : ">= 3", (int)r);
  if (rank_known(c, 1)) {
    const ge_shape *g = &c->in[1].type->shape;
    if (g->rank != r)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (grid) has rank %d, expected %d", (int)g->rank, (int)r);
    if (g->dims[r - 1] >= 0 && g->dims[r - 1] != r - 2)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (grid) last dim is %lld, expected %d",
                           (long long)g->dims[r - 1], (int)(r - 2));
  }
  ge_shape s;
  s.rank = r;
  s.dims[0] = dim_or_unknown(c, 0, 0);
  if (s.dims[0] < 0) s.dims[0] = dim_or_unknown(c, 1, 0);
  s.dims[1] = dim_or_unknown(c, 0, 1);
  for (int32_t d = 2; d < r; d++) s.dims[d] = dim_or_unknown(c, 1, d - 1);
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_maxunpool(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
  ge_dtype dt = in_dtype(c, 0);
  const int64_t *ks, *st = NULL, *pads = NULL;
  size_t nk, ns = 0, np = 0;
  if (!ge_node_attr_ints(c->node, "kernel_shape", &ks, &nk) || nk == 0 || nk > GE_MAX_RANK - 2)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute kernel_shape is required");
  ge_node_attr_ints(c->node, "strides", &st, &ns);
  ge_node_attr_ints(c->node, "pads", &pads, &np);
  if ((ns && ns != nk) || (np && np != 2 * nk))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "strides/pads do not match kernel_shape (%zu dims)", nk);
  if (rank_known(c, 0) && c->in[0].type->shape.rank != (int32_t)nk + 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 has rank %d, expected %zu",
                         (int)c->in[0].type->shape.rank, nk + 2);
  ge_shape s;
  s.rank = (int32_t)nk + 2;
  if (c->n_in > 2 && c->in[2].present) {
    int64_t os[GE_MAX_RANK];
    size_t no;
    if (ge_infer_const_ints(c, 2, os, GE_MAX_RANK, &no)) {
      if (no != nk + 2)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 2 (output_shape) has %zu entries, expected %zu", no, nk + 2);
      memcpy(s.dims, os, no * sizeof *os);
    } else {
      for (int32_t d = 0; d < s.rank; d++) s.dims[d] = GE_DIM_UNKNOWN;
    }
    ge_infer_set(c, 0, dt, &s);
    return GE_OK;
  }
  s.dims[0] = dim_or_unknown(c, 0, 0);
  s.dims[1] = dim_or_unknown(c, 0, 1);
  for (size_t k = 0; k < nk; k++) {
    int64_t in = dim_or_unknown(c, 0, (int32_t)k + 2);
    int64_t stv = ns ? st[k] : 1, pb = np ? pads[k] : 0, pe = np ? pads[k + nk] : 0;
    if (stv <= 0 || ks[k] <= 0)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "kernel_shape and strides must be positive");
    s.dims[k + 2] = in < 0 ? GE_DIM_UNKNOWN : (in - 1) * stv + ks[k] - pb - pe;
    if (in >= 0 && s.dims[k + 2] < 0)
      return ge_infer_fail(c, GE_ERR_SHAPE, "output dim %zu would be negative", k + 2);
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ table */

#define REDUCE_SCHEMAS(name)                       \
  {"", name, 1, 17, 1, 1, 1, 1, infer_reduce},     \
  {"", name, 18, 0, 1, 2, 1, 1, infer_reduce}

const ge_op_schema ge_schemas_reduce[] = {
    {"", "ReduceSum", 1, 12, 1, 1, 1, 1, infer_reduce},
    {"", "ReduceSum", 13, 0, 1, 2, 1, 1, infer_reduce},
    REDUCE_SCHEMAS("ReduceMean"),
    REDUCE_SCHEMAS("ReduceMax"),
    REDUCE_SCHEMAS("ReduceMin"),
    REDUCE_SCHEMAS("ReduceProd"),
    REDUCE_SCHEMAS("ReduceL1"),
    REDUCE_SCHEMAS("ReduceL2"),
    REDUCE_SCHEMAS("ReduceLogSum"),
    REDUCE_SCHEMAS("ReduceLogSumExp"),
    REDUCE_SCHEMAS("ReduceSumSquare"),
    {"", "ArgMax", 1, 0, 1, 1, 1, 1, infer_arg},
    {"", "ArgMin", 1, 0, 1, 1, 1, 1, infer_arg},
    {"", "CumSum", 11, 0, 2, 2, 1, 1, infer_cumsum},
    {"", "TopK", 1, 9, 1, 1, 2, 2, infer_topk},
    {"", "TopK", 10, 0, 2, 2, 2, 2, infer_topk},
    {"", "Det", 11, 0, 1, 1, 1, 1, infer_det},
    {"", "Unique", 11, 0, 1, 1, 1, 4, infer_unique},
    {"", "Shrink", 9, 0, 1, 1, 1, 1, infer_shrink},
    {"", "LpNormalization", 1, 0, 1, 1, 1, 1, infer_lpnorm},
    {"", "Resize", 10, 10, 2, 2, 1, 1, infer_resize},
    {"", "Resize", 11, 0, 1, 4, 1, 1, infer_resize},
    {"", "Upsample", 7, 8, 1, 1, 1, 1, infer_resize},
    {"", "Upsample", 9, 0, 2, 2, 1, 1, infer_resize},
    {"", "NonMaxSuppression", 10, 0, 2, 5, 1, 1, infer_nms},
    {"", "RoiAlign", 10, 0, 3, 3, 1, 1, infer_roialign},
    {"", "MaxRoiPool", 1, 0, 2, 2, 1, 1, infer_maxroipool},
    {"", "GridSample", 16, 0, 2, 2, 1, 1, infer_gridsample},
    {"", "MaxUnpool", 9, 0, 2, 3, 1, 1, infer_maxunpool},
    {0},
};
