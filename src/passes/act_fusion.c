/* Conv / Gemm / MatMul (or their ai.ge fused forms without an activation yet) followed by an
 * activation become ai.ge::FusedConv / FusedGemm / FusedMatMul with `activation` (and
 * `activation_params`).  Activations: Relu, LeakyRelu, Clip (constant bounds; Relu6), Sigmoid,
 * Tanh, Gelu (ONNX or ai.ge, erf or tanh form), HardSwish, HardSigmoid, SiLU = x*Sigmoid(x). */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "ops/fused.h"
#include "passes/pass.h"
#include "passes/pass_util.h"

/* What the producer becomes; NULL when it cannot take an activation. */
static const char *fused_name(const ge_edit *e, int32_t p) {
  const ge_node *n = &e->g->nodes[p];
  if (ge_edit_is_op(e, p, "Conv")) return "FusedConv";
  if (ge_edit_is_op(e, p, "Gemm")) return "FusedGemm";
  if (ge_edit_is_op(e, p, "MatMul")) return "FusedMatMul";
  if (!strcmp(n->domain, "ai.ge") && !e->dead[p] &&
      (!strcmp(n->op_type, "FusedConv") || !strcmp(n->op_type, "FusedGemm") ||
       !strcmp(n->op_type, "FusedMatMul")) &&
      !ge_node_attr_string(n, "activation", "")[0])
    return n->op_type;
  return NULL;
}

/* The activation node ni as (act, params); false when it is not one we fuse.  *x_out is the
   value it applies to, *extra a second node of the pattern (SiLU's Sigmoid) or -1. */
static bool match_act(const ge_edit *e, int32_t ni, ge_fused_act *act, float *prm, size_t *n_prm,
                      int32_t *x_out, int32_t *extra) {
  const ge_node *n = &e->g->nodes[ni];
  *n_prm = 0;
  *extra = -1;
  if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return false;
  *x_out = n->inputs[0];
  if (!strcmp(n->domain, "ai.ge") && !strcmp(n->op_type, "Gelu")) {
    *act = !strcmp(ge_node_attr_string(n, "approximate", "none"), "tanh") ? GE_ACT_GELU_TANH : GE_ACT_GELU;
    return true;
  }
  if (n->domain[0] && strcmp(n->domain, "ai.onnx")) return false;
  const char *op = n->op_type;
  if (!strcmp(op, "Relu")) *act = GE_ACT_RELU;
  else if (!strcmp(op, "Sigmoid")) *act = GE_ACT_SIGMOID;
  else if (!strcmp(op, "Tanh")) *act = GE_ACT_TANH;
  else if (!strcmp(op, "HardSwish")) *act = GE_ACT_HARD_SWISH;
  else if (!strcmp(op, "Gelu")) {
    *act = !strcmp(ge_node_attr_string(n, "approximate", "none"), "tanh") ? GE_ACT_GELU_TANH : GE_ACT_GELU;
  } else if (!strcmp(op, "LeakyRelu")) {
    *act = GE_ACT_LEAKY_RELU;
    prm[0] = ge_node_attr_float(n, "alpha", 0.01f);
    *n_prm = 1;
  } else if (!strcmp(op, "HardSigmoid")) {
    *act = GE_ACT_HARD_SIGMOID;
    prm[0] = ge_node_attr_float(n, "alpha", 0.2f);
    prm[1] = ge_node_attr_float(n, "beta", 0.5f);
    *n_prm = 2;
  } else if (!strcmp(op, "Clip")) {
    *act = GE_ACT_CLIP;
    prm[0] = -FLT_MAX;
    prm[1] = FLT_MAX;
    if (n->opset < 11) {
      prm[0] = ge_node_attr_float(n, "min", -FLT_MAX);
      prm[1] = ge_node_attr_float(n, "max", FLT_MAX);
    } else {
      double v;
      for (size_t k = 1; k < 3; k++) {
        if (n->n_inputs <= k || n->inputs[k] < 0) continue;
        if (!ge_edit_const_scalar(e, n->inputs[k], &v)) return false;
        prm[k - 1] = (float)v;
      }
    }
    *n_prm = 2;
  } else if (!strcmp(op, "Mul") && n->n_inputs == 2 && n->inputs[1] >= 0) {
    /* SiLU: Mul(x, Sigmoid(x)) in either order */
    for (size_t s = 0; s < 2; s++) {
      int32_t sg = ge_edit_producer(e, n->inputs[s]);
      if (sg < 0 || !ge_edit_is_op(e, sg, "Sigmoid") || !ge_edit_single_use(e, n->inputs[s])) continue;
      if (e->g->nodes[sg].inputs[0] != n->inputs[1 - s]) continue;
      *act = GE_ACT_SILU;
      *x_out = n->inputs[1 - s];
      *extra = sg;
      return true;
    }
    return false;
  } else {
    return false;
  }
  return true;
}

ge_status ge_pass_act_fusion(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    if (e.dead[ni]) continue;
    ge_fused_act act;
    float prm[2];
    size_t n_prm;
    int32_t x, extra;
    if (!match_act(&e, (int32_t)ni, &act, prm, &n_prm, &x, &extra)) continue;
    int32_t p = ge_edit_producer(&e, x);
    if (p < 0 || !ge_pu_is_f32(&e, x) || e.is_out[x]) continue;
    /* x is read only by the activation (SiLU: by the Mul and the Sigmoid) */
    if (e.uses[x] != (extra >= 0 ? 2 : 1)) continue;
    const char *fname = fused_name(&e, p);
    if (!fname) continue;
    if (!strcmp(fname, "FusedConv") && ge_edit_type(&e, x)->shape.rank < 3) continue;
    const ge_node *pn = &g->nodes[p];
    int32_t in[4], out[1] = {g->nodes[ni].outputs[0]};
    size_t n_in = pn->n_inputs;
    if (n_in > 4) continue;
    memcpy(in, pn->inputs, n_in * sizeof *in);
    char nm[256];
    snprintf(nm, sizeof nm, "%s", pn->name);
    ge_edit_kill(&e, (int32_t)ni);
    if (extra >= 0) ge_edit_kill(&e, extra);
    ge_edit_kill(&e, p);
    int32_t id;
    st = ge_edit_add_node(&e, fname, "ai.ge", nm, in, n_in, out, 1, &id);
    if (st != GE_OK) break;
    ge_node *fn = &g->nodes[id];
    st = ge_edit_copy_attrs(fn, &g->nodes[p]);
    if (st == GE_OK) st = ge_edit_set_attr_string(fn, "activation", ge_fused_act_names[act]);
    if (st == GE_OK && n_prm) st = ge_edit_set_attr_floats(fn, "activation_params", prm, n_prm);
    *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
