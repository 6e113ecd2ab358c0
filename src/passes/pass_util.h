/* Small helpers shared by the pass files (private to src/passes). */
#ifndef GE_PASSES_PASS_UTIL_H
#define GE_PASSES_PASS_UTIL_H

#include <string.h>

#include "ops/fused.h"
#include "passes/graph_edit.h"

static inline bool ge_pu_is_f32(const ge_edit *e, int32_t v) {
  return v >= 0 && e->g->values[v].type.kind == GE_TYPE_TENSOR && e->g->values[v].type.dtype == GE_F32;
}

/* static shape of v into *s; false when not fully known */
static inline bool ge_pu_static_shape(const ge_edit *e, int32_t v, ge_shape *s) {
  if (v < 0) return false;
  const ge_type *t = &e->g->values[v].type;
  if (t->kind != GE_TYPE_TENSOR || !ge_shape_is_static(&t->shape)) return false;
  *s = t->shape;
  return true;
}

/* value types agree exactly (dtype and rank/dims, symbols included), and are tensors */
static inline bool ge_pu_same_type(const ge_edit *e, int32_t a, int32_t b) {
  const ge_type *x = &e->g->values[a].type, *y = &e->g->values[b].type;
  if (x->kind != GE_TYPE_TENSOR || y->kind != GE_TYPE_TENSOR || x->dtype != y->dtype ||
      x->dtype == GE_DTYPE_COUNT || x->shape.rank < 0 || x->shape.rank != y->shape.rank)
    return false;
  for (int32_t d = 0; d < x->shape.rank; d++)
    if (x->shape.dims[d] != y->shape.dims[d] || x->shape.dims[d] == GE_DIM_UNKNOWN) return false;
  return true;
}

/* A constant whose every element equals x (numeric dtypes). */
static inline bool ge_pu_const_all(const ge_edit *e, int32_t v, double x) {
  const ge_tensor *t = ge_edit_const(e, v);
  if (!t || t->dtype == GE_STRING) return false;
  for (size_t i = 0; i < t->numel; i++)
    if (ge_tensor_get_f64(t, i) != x) return false;
  return true;
}

/* The other input of a binary node (slot 0/1). */
static inline int32_t ge_pu_other(const ge_node *n, size_t slot) { return n->inputs[slot ? 0 : 1]; }

/* Node p (live) is the ai.ge op `fused` (FusedConv, FusedMatMul) without a residual input (its
   Sum, input 3). */
static inline bool ge_pu_fused_no_sum(const ge_edit *e, int32_t p, const char *fused) {
  if (p < 0 || (size_t)p >= e->g->n_nodes || e->dead[p]) return false;
  const ge_node *n = &e->g->nodes[p];
  return !strcmp(n->domain, GE_FUSED_DOMAIN) && !strcmp(n->op_type, fused) && (n->n_inputs < 4 || n->inputs[3] < 0);
}

/* Node p (live) is an ONNX Conv or an ai.ge::FusedConv without a residual input (its Sum). */
static inline bool ge_pu_conv_no_sum(const ge_edit *e, int32_t p) {
  return ge_edit_is_op(e, p, "Conv") || ge_pu_fused_no_sum(e, p, "FusedConv");
}

#endif
