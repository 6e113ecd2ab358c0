/* Schemas of the misc family: newer ops that fit no other family's file well —
 * SwiGLU (a gated activation), TensorScatter (KV-cache update), AffineGrid (sampling grids
 * for GridSample). */
#include <string.h>

#include "ops/op.h"

static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};

static bool rank_known(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) && c->in[i].type->kind == GE_TYPE_TENSOR &&
         c->in[i].type->shape.rank != GE_RANK_UNKNOWN;
}

/* ------------------------------------------------------------------ SwiGLU */

static ge_status infer_swiglu(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, float_types));
  if (ge_infer_has_input(c, 0) && ge_infer_has_input(c, 1) &&
      c->in[0].type->dtype != c->in[1].type->dtype)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "inputs have dtypes %s and %s",
                         ge_dtype_name(c->in[0].type->dtype), ge_dtype_name(c->in[1].type->dtype));
  if (rank_known(c, 0) && rank_known(c, 1)) {
    const ge_shape *a = &c->in[0].type->shape, *b = &c->in[1].type->shape;
    bool same = a->rank == b->rank;
    for (int32_t d = 0; same && d < a->rank; d++)
      if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d]) same = false;
    if (!same) {
      char sa[128], sb[128];
      return ge_infer_fail(c, GE_ERR_SHAPE, "inputs must have the same shape (%s vs %s; no broadcasting)",
                           ge_shape_str(a, c->graph, sa, sizeof sa), ge_shape_str(b, c->graph, sb, sizeof sb));
    }
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ TensorScatter */

static ge_status infer_tensor_scatter(ge_infer_ctx *c) {
  const char *mode = ge_node_attr_string(c->node, "mode", "linear");
  if (strcmp(mode, "linear") && strcmp(mode, "circular"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "mode '%s' is not linear or circular", mode);
  if (c->n_in > 2 && c->in[2].present)
    GE_CHECK(ge_infer_check_dtype(c, 2, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
  if (ge_infer_has_input(c, 0) && ge_infer_has_input(c, 1) &&
      c->in[0].type->dtype != c->in[1].type->dtype)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "past_cache is %s but update is %s",
                         ge_dtype_name(c->in[0].type->dtype), ge_dtype_name(c->in[1].type->dtype));
  if (rank_known(c, 0)) {
    int64_t axis;
    int32_t r = c->in[0].type->shape.rank;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", -2), r, &axis));
    if (axis == 0)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis must not be the batch axis 0");
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ AffineGrid */

static ge_status infer_affine_grid(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
  ge_dtype dt = ge_infer_has_input(c, 0) ? c->in[0].type->dtype : GE_DTYPE_COUNT;
  int64_t size[5];
  size_t n = 0;
  if (ge_infer_const_ints(c, 1, size, 5, &n)) {
    if (n != 4 && n != 5)
      return ge_infer_fail(c, GE_ERR_SHAPE, "size must hold 4 (N,C,H,W) or 5 (N,C,D,H,W) values, not %zu", n);
    ge_shape s;
    s.rank = (int32_t)n;
    s.dims[0] = size[0];
    for (size_t i = 2; i < n; i++) s.dims[i - 1] = size[i];
    s.dims[n - 1] = (int64_t)n - 2;
    for (int32_t d = 0; d < s.rank; d++)
      if (s.dims[d] < 0) return ge_infer_fail(c, GE_ERR_SHAPE, "size has a negative value");
    ge_infer_set(c, 0, dt, &s);
    return GE_OK;
  }
  ge_infer_set(c, 0, dt, NULL);
  return GE_OK;
}

const ge_op_schema ge_schemas_misc[] = {
    {"", "SwiGLU", 1, 0, 2, 2, 1, 1, infer_swiglu},
    {"", "TensorScatter", 24, 0, 2, 3, 1, 1, infer_tensor_scatter},
    {"", "AffineGrid", 20, 0, 2, 2, 1, 1, infer_affine_grid},
    {0},
};
