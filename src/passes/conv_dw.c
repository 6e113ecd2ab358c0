/* A 1x1 convolution whose only reader is a depthwise convolution becomes one
 * ai.ge::FusedConvDw (ops/fused.h) when the value between them does not fit the cores' L2
 * caches: its kernel then computes that value a band of rows at a time, each band read back
 * by the depthwise step while it is still in the cache, instead of writing all of it to memory
 * and reading it back.  Taken where:
 *   - the 1x1 is a Conv / FusedConv without a residual: kernel 1x1, stride 1, unpadded,
 *     ungrouped, constant weights;
 *   - the depthwise one is a Conv / FusedConv without a residual, group = channels = its
 *     output channels, constant weights [E, 1, kh, kw], a vertical stride of 2 or more (with
 *     stride 1 every band would recompute kh - 1 rows of the 1x1's output: MobileNetV2's
 *     56x56 stride-1 pair at 2 threads was 1.06-1.29x slower banded, bands of 14 to 4 rows,
 *     in a scratch benchmark of oneDNN primitives), explicit pads;
 *   - float32 2-D images whose channels and sizes are known (the batch may not be yet), the
 *     value read once and not a graph output;
 *   - the value's bytes (an unknown batch counts as 1), shared among ge.intraOpThreads cores,
 *     exceed the L2 cache of one (ge_l2_cache_bytes), unless the pass is listed in
 *     ge.passes.enable, which fuses every pair that qualifies otherwise;
 *   - no precision mode (ge.exec.precision_mode allow_*): those compute convolutions in
 *     bf16 / fp16, which this op does not.
 * MobileNetV2's 112x112 expansion (16 -> 96 channels, 4.8 MB) and its stride-2 depthwise step,
 * per-node minima of `ge profile` with the pass disabled and not: 610 -> 449 us at 1 thread,
 * 295 -> 262 us at 2.  Its other pairs fit the L2 and stay apart. */
#include <stdio.h>
#include <string.h>

#include "ops/fused.h"
#include "ops/nn_geom.h"
#include "passes/pass.h"
#include "passes/pass_util.h"

/* Conv node ni's window attributes (ge_nn_win_parse / resolve, as the kernels read them) and
   its constant 2-D weight; its bias, if any, constant too.  NULL when any of that is missing. */
static const ge_tensor *conv_attrs(const ge_edit *e, int32_t ni, ge_nn_win_attrs *at) {
  const ge_node *n = &e->g->nodes[ni];
  if (n->n_inputs < 2) return NULL;
  const ge_tensor *w = ge_edit_const(e, n->inputs[1]);
  if (!w || w->rank != 4 || (n->n_inputs > 2 && n->inputs[2] >= 0 && !ge_edit_const(e, n->inputs[2])))
    return NULL;
  if (ge_nn_win_parse(n, false, at) != GE_OK || ge_nn_win_resolve(n, at, 2, &w->dims[2]) != GE_OK) return NULL;
  return w;
}

static bool pointwise(const ge_edit *e, int32_t p, int64_t *c_in) {
  ge_nn_win_attrs at;
  const ge_tensor *w = conv_attrs(e, p, &at);
  if (!w || w->dims[2] != 1 || w->dims[3] != 1 || at.group != 1 ||
      (at.auto_pad != GE_PAD_NOTSET && at.auto_pad != GE_PAD_VALID))
    return false;
  for (int i = 0; i < 2; i++)
    if (at.strides[i] != 1 || at.dilations[i] != 1 || at.pads[i] != 0 || at.pads[2 + i] != 0) return false;
  *c_in = w->dims[1];
  return true;
}

static bool depthwise(const ge_edit *e, int32_t d, int64_t ch) {
  ge_nn_win_attrs at;
  const ge_tensor *w = conv_attrs(e, d, &at);
  return w && w->dims[0] == ch && w->dims[1] == 1 && at.group == ch && at.auto_pad == GE_PAD_NOTSET &&
         at.strides[0] >= 2;
}

/* A float32 [N, C, H, W] value with C, H and W known (N may not be yet: the plan's inputs fix it). */
static const ge_shape *image(const ge_edit *e, int32_t v) {
  if (!ge_pu_is_f32(e, v)) return NULL;
  const ge_shape *s = &e->g->values[v].type.shape;
  if (s->rank != 4) return NULL;
  for (int d = 1; d < 4; d++)
    if (s->dims[d] < 1) return NULL;
  return s;
}

ge_status ge_pass_conv_dw(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  if (c->cfg && c->cfg->precision >= GE_PRECISION_FP32_TO_BF16) return GE_OK;
  bool always = c->cfg && ge_pass_config_enables(c->cfg, "conv_dw");
  int threads = c->cfg && c->cfg->threads > 0 ? c->cfg->threads : 1;
  size_t l2 = ge_l2_cache_bytes();
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t di = 0; di < n0 && st == GE_OK; di++) {
    int32_t d = (int32_t)di;
    if (!ge_pu_conv_no_sum(&e, d)) continue;
    const ge_node *dn = &g->nodes[d];
    if (dn->n_inputs < 2 || dn->inputs[0] < 0 || dn->n_outputs < 1 || dn->outputs[0] < 0) continue;
    if (ge_node_attr(dn, GE_PRECISION_ATTR)) continue;
    int32_t mid = dn->inputs[0], y = dn->outputs[0];
    int32_t p = ge_edit_producer(&e, mid);
    if (!ge_pu_conv_no_sum(&e, p) || !ge_edit_single_use(&e, mid)) continue;
    const ge_node *pn = &g->nodes[p];
    if (pn->n_outputs < 1 || pn->outputs[0] != mid || pn->inputs[0] < 0 || ge_node_attr(pn, GE_PRECISION_ATTR))
      continue;
    const ge_shape *xs = image(&e, pn->inputs[0]), *ms = image(&e, mid);
    if (!xs || !ms || !image(&e, y)) continue;
    int64_t c_in = 0;
    if (!pointwise(&e, p, &c_in) || c_in != xs->dims[1] || !depthwise(&e, d, ms->dims[1])) continue;
    /* a batch not known yet counts as 1 */
    size_t bytes = (size_t)((ms->dims[0] > 0 ? ms->dims[0] : 1) * ms->dims[1] * ms->dims[2] * ms->dims[3]) * sizeof(float);
    if (!always && bytes / (size_t)threads <= l2) continue;
    int32_t in[5] = {pn->inputs[0], pn->inputs[1], pn->n_inputs > 2 ? pn->inputs[2] : -1, dn->inputs[1],
                     dn->n_inputs > 2 ? dn->inputs[2] : -1};
    int32_t out[1] = {y};
    char nm[256];
    snprintf(nm, sizeof nm, "%s", dn->name);
    ge_edit_kill(&e, d);
    ge_edit_kill(&e, p);
    int32_t id;
    st = ge_edit_add_node(&e, "FusedConvDw", GE_FUSED_DOMAIN, nm, in, 5, out, 1, &id);
    if (st == GE_OK) st = ge_edit_copy_attrs(&g->nodes[id], &g->nodes[d]);
    if (st == GE_OK && ge_node_attr(&g->nodes[p], "activation"))
      st = ge_edit_set_attr_string(&g->nodes[id], "pw_activation",
                                   ge_node_attr_string(&g->nodes[p], "activation", ""));
    if (st == GE_OK) {
      const float *ap = NULL;
      size_t na = 0;
      ge_node_attr_floats(&g->nodes[p], "activation_params", &ap, &na);
      if (na) st = ge_edit_set_attr_floats(&g->nodes[id], "pw_activation_params", ap, na);
    }
    *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
