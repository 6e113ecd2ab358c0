/* A residual Add fused into the Conv that produces one of its inputs (the sum post-op):
 * Add(Conv(X, W, B), R) -> ai.ge::FusedConv(X, W, B, R) when the Conv output has no other
 * reader, is not a graph output, and R has exactly the Add's output type (no broadcast). */
#include <stdio.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

/* a Conv, or a FusedConv with neither a residual nor an activation (the sum comes before it) */
static bool conv_like(const ge_edit *e, int32_t p) {
  return ge_pu_conv_no_sum(e, p) && !ge_node_attr_string(&e->g->nodes[p], "activation", "")[0];
}

ge_status ge_pass_conv_sum(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    if (!ge_edit_is_op(&e, (int32_t)ni, "Add")) continue;
    const ge_node *add = &g->nodes[ni];
    if (add->n_inputs != 2 || add->inputs[0] < 0 || add->inputs[1] < 0 || add->outputs[0] < 0) continue;
    for (size_t s = 0; s < 2; s++) {
      int32_t cv = add->inputs[s], r = add->inputs[1 - s], y = add->outputs[0];
      if (cv == r) continue;
      int32_t p = ge_edit_producer(&e, cv);
      if (p < 0 || !conv_like(&e, p) || !ge_edit_single_use(&e, cv)) continue;
      if (!ge_pu_is_f32(&e, cv) || !ge_pu_same_type(&e, cv, y) || !ge_pu_same_type(&e, r, y)) continue;
      const ge_node *pn = &g->nodes[p];
      int32_t in[4] = {pn->inputs[0], pn->inputs[1], pn->n_inputs > 2 ? pn->inputs[2] : -1, r};
      int32_t out[1] = {y};
      char nm[256];
      snprintf(nm, sizeof nm, "%s", pn->name);
      ge_edit_kill(&e, (int32_t)ni);
      ge_edit_kill(&e, p);
      int32_t id;
      st = ge_edit_add_node(&e, "FusedConv", "ai.ge", nm, in, 4, out, 1, &id);
      if (st == GE_OK) st = ge_edit_copy_attrs(&g->nodes[id], &g->nodes[p]);
      *changed = true;
      break;
    }
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
