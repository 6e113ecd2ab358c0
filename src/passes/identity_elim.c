/* Removes nodes that compute their input unchanged: Identity, Dropout at inference, and
 * no-ops (Reshape/Expand to the same shape, identity Transpose, Cast to the same dtype, Pad
 * with zero pads, x+0, x-0, x*1, x/1 with an unchanged type).  The name of a graph output
 * survives (see ge_edit_forward). */
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

/* The input the node passes through unchanged, or -1. */
static int32_t passthrough(const ge_edit *e, const ge_pass_ctx *c, const ge_node *n) {
  if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return -1;
  if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return -1;
  int32_t x = n->inputs[0], y = n->outputs[0];
  const char *op = n->op_type;
  if (!strcmp(op, "Identity")) return x;
  if (!strcmp(op, "Dropout")) {
    if (c->cfg && c->cfg->training) return -1;
    if (n->n_outputs > 1 && n->outputs[1] >= 0 && (e->uses[n->outputs[1]] > 0 || e->is_out[n->outputs[1]]))
      return -1;
    if (n->n_inputs > 2 && n->inputs[2] >= 0 && !ge_pu_const_all(e, n->inputs[2], 0)) return -1;
    return x;
  }
  bool same = ge_pu_same_type(e, x, y);
  if (!strcmp(op, "Reshape") || !strcmp(op, "Expand")) return same ? x : -1;
  if (!strcmp(op, "Cast") || !strcmp(op, "CastLike")) {
    const ge_type *tx = ge_edit_type(e, x);
    ge_dtype to = GE_DTYPE_COUNT;
    if (!strcmp(op, "Cast")) {
      if (!ge_dtype_from_onnx((int32_t)ge_node_attr_int(n, "to", 0), &to)) return -1;
    } else if (n->n_inputs > 1 && n->inputs[1] >= 0) {
      to = ge_edit_type(e, n->inputs[1])->dtype;
    }
    return tx->kind == GE_TYPE_TENSOR && tx->dtype != GE_DTYPE_COUNT && tx->dtype == to ? x : -1;
  }
  if (!strcmp(op, "Transpose")) {
    const int64_t *perm;
    size_t np;
    int32_t r = ge_edit_type(e, x)->shape.rank;
    if (!ge_node_attr_ints(n, "perm", &perm, &np)) return r == 0 || r == 1 ? x : -1;
    for (size_t i = 0; i < np; i++)
      if (perm[i] != (int64_t)i) return -1;
    return x;
  }
  if (!strcmp(op, "Pad")) {
    if (n->opset >= 11) {
      if (n->n_inputs < 2 || n->inputs[1] < 0 || !ge_pu_const_all(e, n->inputs[1], 0)) return -1;
      return x;
    }
    const int64_t *pads;
    size_t np;
    if (!ge_node_attr_ints(n, "pads", &pads, &np)) return -1;
    for (size_t i = 0; i < np; i++)
      if (pads[i]) return -1;
    return x;
  }
  if (n->n_inputs == 2 && n->inputs[1] >= 0) {
    double neutral;
    if (!strcmp(op, "Add") || !strcmp(op, "Sub")) neutral = 0;
    else if (!strcmp(op, "Mul") || !strcmp(op, "Div")) neutral = 1;
    else return -1;
    if (same && ge_pu_const_all(e, n->inputs[1], neutral)) return x;
    if ((!strcmp(op, "Add") || !strcmp(op, "Mul")) && ge_pu_same_type(e, n->inputs[1], y) &&
        ge_pu_const_all(e, x, neutral))
      return n->inputs[1];
  }
  return -1;
}

ge_status ge_pass_identity_elim(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  for (size_t ni = 0; ni < g->n_nodes; ni++) {
    if (e.dead[ni]) continue;
    const ge_node *n = &g->nodes[ni];
    int32_t x = passthrough(&e, c, n);
    if (x < 0) continue;
    int32_t y = n->outputs[0];
    if (!ge_edit_can_forward(&e, y, x)) continue;
    ge_edit_forward(&e, y, x);
    *changed = true;
  }
  return ge_edit_commit(&e);
}
