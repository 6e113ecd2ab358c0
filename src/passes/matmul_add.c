/* MatMul(A, W) + b with W a 2-D float32 constant and b a 1-D float32 constant of W's column
 * count becomes Gemm(A, W, b) when A is 2-D, else ai.ge::FusedMatMul(A, W, b). */
#include <stdio.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

ge_status ge_pass_matmul_add(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    if (!ge_edit_is_op(&e, (int32_t)ni, "Add")) continue;
    const ge_node *add = &g->nodes[ni];
    if (add->n_inputs != 2 || add->inputs[0] < 0 || add->inputs[1] < 0 || add->outputs[0] < 0) continue;
    for (size_t s = 0; s < 2; s++) {
      int32_t mm_v = add->inputs[s], b_v = add->inputs[1 - s];
      int32_t p = ge_edit_producer(&e, mm_v);
      if (p < 0 || !ge_edit_is_op(&e, p, "MatMul") || !ge_edit_single_use(&e, mm_v)) continue;
      const ge_node *mm = &g->nodes[p];
      const ge_tensor *W = ge_edit_const(&e, mm->inputs[1]), *B = ge_edit_const(&e, b_v);
      if (!W || !B || W->dtype != GE_F32 || B->dtype != GE_F32 || W->rank != 2 || B->rank != 1 ||
          B->dims[0] != W->dims[1])
        continue;
      if (!ge_pu_is_f32(&e, mm->inputs[0])) continue;
      /* the Add must not broadcast the MatMul result to something bigger */
      if (!ge_pu_same_type(&e, mm_v, add->outputs[0]) &&
          ge_edit_type(&e, mm_v)->shape.rank != ge_edit_type(&e, add->outputs[0])->shape.rank)
        continue;
      int32_t ra = ge_edit_type(&e, mm->inputs[0])->shape.rank;
      if (ra < 1) continue;
      int32_t in[3] = {mm->inputs[0], mm->inputs[1], b_v};
      int32_t out[1] = {add->outputs[0]};
      char nm[256];
      snprintf(nm, sizeof nm, "%s", mm->name);
      ge_edit_kill(&e, (int32_t)ni);
      ge_edit_kill(&e, p);
      int32_t id;
      if (ra == 2)
        st = ge_edit_add_node(&e, "Gemm", "", nm, in, 3, out, 1, &id);
      else
        st = ge_edit_add_node(&e, "FusedMatMul", "ai.ge", nm, in, 3, out, 1, &id);
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
