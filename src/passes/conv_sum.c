/* A residual Add fused into the Conv or the matmul that produces one of its inputs (the sum
 * post-op): Add(Conv(X, W, B), R) -> ai.ge::FusedConv(X, W, B, R), and
 * Add(ai.ge::FusedMatMul(A, W, [Bias]), R) -> ai.ge::FusedMatMul(A, W, [Bias], R) (a
 * transformer's residual after its projections), when the producer's output has no other
 * reader and is not a graph output; for the Conv, R must have exactly the Add's output type
 * (no broadcast), while FusedMatMul's Sum broadcasts as Add does, so that the shapes (often
 * unknown before the inputs are: a transformer's batch and sequence) need not be known.
 * The matmuls stay apart in allow_fp32_to_bf16: there a LayerNorm output that is a residual
 * is stored bf16 for the matmuls that read it, and the residual Add reads it so; a fused
 * matmul reads its residual as float32 (compiler/layout.c would store it so). */
#include <stdio.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

/* a Conv, or a FusedConv with neither a residual nor an activation (the sum comes before it) */
static bool conv_like(const ge_edit *e, int32_t p) {
  return ge_pu_conv_no_sum(e, p) && !ge_node_attr_string(&e->g->nodes[p], "activation", "")[0];
}

/* a FusedMatMul with neither a residual nor an activation */
static bool matmul_like(const ge_edit *e, int32_t p) {
  return ge_pu_fused_no_sum(e, p, "FusedMatMul") && !ge_node_attr_string(&e->g->nodes[p], "activation", "")[0];
}

ge_status ge_pass_conv_sum(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  bool matmuls = !(c->cfg && c->cfg->precision == GE_PRECISION_FP32_TO_BF16);
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    if (!ge_edit_is_op(&e, (int32_t)ni, "Add")) continue;
    const ge_node *add = &g->nodes[ni];
    if (add->n_inputs != 2 || add->inputs[0] < 0 || add->inputs[1] < 0 || add->outputs[0] < 0) continue;
    for (size_t s = 0; s < 2; s++) {
      int32_t cv = add->inputs[s], r = add->inputs[1 - s], y = add->outputs[0];
      if (cv == r) continue;
      int32_t p = ge_edit_producer(&e, cv);
      bool mm = matmuls && matmul_like(&e, p);
      if (p < 0 || !(mm || conv_like(&e, p)) || !ge_edit_single_use(&e, cv)) continue;
      /* FusedMatMul's Sum broadcasts as the Add did (ops/fused.h): the shapes need not be known */
      if (!ge_pu_is_f32(&e, cv) ||
          (mm ? !ge_pu_is_f32(&e, r) : !ge_pu_same_type(&e, cv, y) || !ge_pu_same_type(&e, r, y)))
        continue;
      const ge_node *pn = &g->nodes[p];
      int32_t in[4] = {pn->inputs[0], pn->inputs[1], pn->n_inputs > 2 ? pn->inputs[2] : -1, r};
      int32_t out[1] = {y};
      char nm[256];
      snprintf(nm, sizeof nm, "%s", pn->name);
      ge_edit_kill(&e, (int32_t)ni);
      ge_edit_kill(&e, p);
      int32_t id;
      st = ge_edit_add_node(&e, mm ? "FusedMatMul" : "FusedConv", "ai.ge", nm, in, 4, out, 1, &id);
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
