/* BatchNormalization (inference) folded into the Conv or Gemm before it, when the weights,
 * bias and BN parameters are float32 constants and the Conv/Gemm output has no other reader:
 *   s = scale / sqrt(var + eps);  W' = W * s (per output channel);  B' = (B - mean) * s + bias */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

static const float *f32_const(const ge_edit *e, int32_t v, size_t numel) {
  const ge_tensor *t = ge_edit_const(e, v);
  if (!t || t->dtype != GE_F32 || t->numel != numel) return NULL;
  return t->data;
}

/* The Gemm bias C as a per-column vector of n entries (C of shape [], [1], [n], [1,n]). */
static bool gemm_bias_vec(const ge_edit *e, const ge_node *gm, size_t n, float beta, float *out) {
  if (gm->n_inputs < 3 || gm->inputs[2] < 0) {
    for (size_t j = 0; j < n; j++) out[j] = 0;
    return true;
  }
  const ge_tensor *t = ge_edit_const(e, gm->inputs[2]);
  if (!t || t->dtype != GE_F32) return false;
  if (t->rank == 2 && t->dims[0] != 1) return false;
  if (t->numel != 1 && t->numel != n) return false;
  const float *c = t->data;
  for (size_t j = 0; j < n; j++) out[j] = beta * c[t->numel == 1 ? 0 : j];
  return true;
}

static ge_status fold_one(ge_edit *e, int32_t bn_i, int32_t p_i, bool *done) {
  ge_graph *g = e->g;
  *done = false;
  const ge_node *bn = &g->nodes[bn_i], *pn = &g->nodes[p_i];
  bool is_conv = ge_edit_is_op(e, p_i, "Conv");
  int32_t w_v = pn->inputs[1];
  const ge_tensor *W = ge_edit_const(e, w_v);
  if (!W || W->dtype != GE_F32) return GE_OK;
  size_t M, per;  /* output channels, weights per channel stride info */
  bool trans_b = false;
  float alpha = 1, beta = 1;
  if (is_conv) {
    if (W->rank < 3 || bn->n_inputs < 5) return GE_OK;
    M = (size_t)W->dims[0];
    per = M ? W->numel / M : 0;
  } else {
    if (W->rank != 2 || ge_edit_type(e, pn->outputs[0])->shape.rank != 2) return GE_OK;
    trans_b = ge_node_attr_int(pn, "transB", 0) != 0;
    alpha = ge_node_attr_float(pn, "alpha", 1.f);
    beta = ge_node_attr_float(pn, "beta", 1.f);
    M = (size_t)W->dims[trans_b ? 0 : 1];
    per = (size_t)W->dims[trans_b ? 1 : 0];
  }
  const float *sc = f32_const(e, bn->inputs[1], M), *bi = f32_const(e, bn->inputs[2], M);
  const float *mean = f32_const(e, bn->inputs[3], M), *var = f32_const(e, bn->inputs[4], M);
  if (!sc || !bi || !mean || !var || M == 0) return GE_OK;
  const float *B = NULL;
  if (is_conv && pn->n_inputs > 2 && pn->inputs[2] >= 0) {
    B = f32_const(e, pn->inputs[2], M);
    if (!B) return GE_OK;
  }
  float eps = ge_node_attr_float(bn, "epsilon", 1e-5f);
  ge_tensor *W2 = NULL, *B2 = NULL;
  GE_CHECK(ge_tensor_clone(W, &W2));
  int64_t bd[1] = {(int64_t)M};
  ge_status st = ge_tensor_create(GE_F32, bd, 1, &B2);
  if (st != GE_OK) {
    ge_tensor_free(W2);
    return st;
  }
  float *w = W2->data, *b2 = B2->data;
  if (!is_conv && !gemm_bias_vec(e, pn, M, beta, b2)) {
    ge_tensor_free(W2);
    ge_tensor_free(B2);
    return GE_OK;
  }
  for (size_t m = 0; m < M; m++) {
    float s = sc[m] / sqrtf(var[m] + eps);
    if (is_conv) {
      for (size_t k = 0; k < per; k++) w[m * per + k] *= s;
      b2[m] = ((B ? B[m] : 0.f) - mean[m]) * s + bi[m];
    } else {
      for (size_t k = 0; k < per; k++) {
        size_t idx = trans_b ? m * per + k : k * M + m;
        w[idx] *= s;
      }
      b2[m] = (b2[m] - mean[m]) * s + bi[m];
    }
  }
  int32_t w2_v, b2_v;
  GE_CHECK(ge_edit_add_constant(e, g->values[w_v].name, W2, &w2_v));
  char bname[256];
  snprintf(bname, sizeof bname, "%s_bias", g->values[w_v].name);
  GE_CHECK(ge_edit_add_constant(e, bname, B2, &b2_v));
  int32_t in[3] = {g->nodes[p_i].inputs[0], w2_v, b2_v};
  int32_t out[1] = {g->nodes[bn_i].outputs[0]};
  char nm[256];
  snprintf(nm, sizeof nm, "%s", g->nodes[p_i].name);
  ge_edit_kill(e, bn_i);
  ge_edit_kill(e, p_i);
  int32_t ni;
  GE_CHECK(ge_edit_add_node(e, is_conv ? "Conv" : "Gemm", "", nm, in, 3, out, 1, &ni));
  GE_CHECK(ge_edit_copy_attrs(&g->nodes[ni], &g->nodes[p_i]));
  if (!is_conv) GE_CHECK(ge_edit_set_attr_float(&g->nodes[ni], "beta", 1.f));
  g->nodes[ni].opset = g->nodes[p_i].opset;
  (void)alpha;
  *done = true;
  return GE_OK;
}

ge_status ge_pass_fold_bn(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    if (!ge_edit_is_op(&e, (int32_t)ni, "BatchNormalization")) continue;
    const ge_node *bn = &g->nodes[ni];
    if (bn->n_inputs != 5 || bn->inputs[0] < 0) continue;
    if (ge_node_attr_int(bn, "training_mode", 0)) continue;
    bool extra = false;
    for (size_t o = 1; o < bn->n_outputs; o++)
      if (bn->outputs[o] >= 0 && e.uses[bn->outputs[o]] > 0) extra = true;
    if (extra || bn->outputs[0] < 0) continue;
    int32_t x = bn->inputs[0];
    int32_t p = ge_edit_producer(&e, x);
    if (p < 0 || !ge_edit_single_use(&e, x) || !ge_pu_is_f32(&e, x)) continue;
    if (!ge_edit_is_op(&e, p, "Conv") && !ge_edit_is_op(&e, p, "Gemm")) continue;
    bool done = false;
    st = fold_one(&e, (int32_t)ni, p, &done);
    if (done) *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
