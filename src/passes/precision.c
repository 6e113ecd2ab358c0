/* The precision pass: the rewrite of ge.exec.precision_mode (issue 5, "Precision").
 *
 * It does not insert Casts.  It marks every float32 node whose kernel can compute in the lower
 * precision with the string attribute GE_PRECISION_ATTR ("bf16" or "fp16"); the kernel then
 * converts its float32 inputs (and its constant weights, once, at prepare time) to that
 * precision, computes in it, and writes float32 outputs.  On oneDNN, a convolution or a matmul
 * with bf16 source and weights and a float32 destination is one primitive (AMX / AVX512-BF16),
 * so the graph keeps its float32 types, its memory plan and its interface, and no Cast node
 * costs a pass over memory.  A kernel that cannot compute in the lower precision on this
 * processor ignores the mark and computes in float32 (see docs/precision.md).
 *
 * Modes:
 *   allow_fp32_to_bf16 / allow_fp32_to_fp16   every op with a lower-precision kernel is marked:
 *       the compute ops (Conv, ConvTranspose, MatMul, Gemm, their ai.ge fused forms and
 *       ai.ge Attention, whose softmax stays float32) and
 *       the others oneDNN runs in bf16/fp16 (pooling, BatchNormalization, LayerNormalization,
 *       Softmax, LogSoftmax).
 *   allow_mix_precision_bf16 / _fp16          only the compute ops are marked; the numerically
 *       sensitive ops stay float32: reductions, Softmax/LogSoftmax, the norms, the losses, and
 *       everything else.
 * A node already marked keeps its mark when it agrees with the mode and gets the mode's when
 * not; marks on ops outside the mode's set are removed (a mix-mode graph never computes a
 * sensitive op in low precision, whatever the model said).  Only nodes whose present inputs
 * and outputs are all float32 tensors are marked.  Subgraphs (If/Loop/Scan bodies) are not
 * visited: their ops run through the same kernels but stay float32. */
#include <string.h>

#include "ops/fused.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"

typedef enum op_class {
  OP_OTHER = 0, /* never marked */
  OP_COMPUTE,   /* marked in every allow_* mode */
  OP_SENSITIVE, /* marked only in allow_fp32_to_* (has a low-precision kernel) */
} op_class;

static bool in_list(const char *op, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(op, list[i])) return true;
  return false;
}

static op_class classify(const ge_node *n) {
  static const char *const onnx_compute[] = {"Conv", "ConvTranspose", "MatMul", "Gemm"};
  static const char *const onnx_sensitive[] = {"Softmax", "LogSoftmax", "LayerNormalization",
                                               "BatchNormalization", "MaxPool", "AveragePool",
                                               "GlobalAveragePool", "GlobalMaxPool"};
  /* Attention: its two GEMMs in the lower precision, the mask and the softmax in float32 (as
     the unfused MatMul / Softmax / MatMul in the mix modes) */
  static const char *const ge_compute[] = {"FusedConv", "FusedGemm", "FusedMatMul", "Attention"};
  static const char *const ge_sensitive[] = {"LayerNormalization"};
  const char *d = n->domain ? n->domain : "";
  bool onnx = !*d || !strcmp(d, "ai.onnx");
  bool ge = !strcmp(d, GE_FUSED_DOMAIN);
#define IN_LIST(list) in_list(n->op_type, list, sizeof list / sizeof list[0])
  if (onnx && IN_LIST(onnx_compute)) return OP_COMPUTE;
  if (onnx && IN_LIST(onnx_sensitive)) return OP_SENSITIVE;
  if (ge && IN_LIST(ge_compute)) return OP_COMPUTE;
  if (ge && IN_LIST(ge_sensitive)) return OP_SENSITIVE;
#undef IN_LIST
  return OP_OTHER;
}

static bool is_f32(const ge_graph *g, int32_t v) {
  if (v < 0 || (size_t)v >= g->n_values) return false;
  const ge_type *t = &g->values[v].type;
  return t->kind == GE_TYPE_TENSOR && t->dtype == GE_F32;
}

static bool all_f32(const ge_graph *g, const ge_node *n) {
  bool any_in = false;
  /* ai.ge Attention in mask_mode 1: its Mask (input 3) is a bool condition */
  bool sel = !strcmp(n->op_type, "Attention") && n->domain && !strcmp(n->domain, GE_FUSED_DOMAIN) &&
             ge_node_attr_int(n, "mask_mode", GE_ATTN_MASK_ADD) == GE_ATTN_MASK_SELECT;
  for (size_t i = 0; i < n->n_inputs; i++) {
    if (n->inputs[i] < 0) continue;
    if (sel && i == 3 && (size_t)n->inputs[i] < g->n_values && g->values[n->inputs[i]].type.kind == GE_TYPE_TENSOR &&
        g->values[n->inputs[i]].type.dtype == GE_BOOL)
      continue;
    if (!is_f32(g, n->inputs[i])) return false;
    any_in = true;
  }
  bool any_out = false;
  for (size_t o = 0; o < n->n_outputs; o++) {
    if (n->outputs[o] < 0) continue;
    if (!is_f32(g, n->outputs[o])) return false;
    any_out = true;
  }
  return any_in && any_out;
}

static void del_attr(ge_node *n, const char *name, bool *changed) {
  if (!ge_node_attr(n, name)) return;
  ge_edit_del_attr(n, name);
  *changed = true;
}

ge_status ge_pass_precision(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  *changed = false;
  int mode = c && c->cfg ? c->cfg->precision : GE_PRECISION_KEEP;
  const char *lowp = NULL;
  bool mix = false;
  switch (mode) {
  case GE_PRECISION_FP32_TO_BF16: lowp = "bf16"; break;
  case GE_PRECISION_FP32_TO_FP16: lowp = "fp16"; break;
  case GE_PRECISION_MIX_BF16: lowp = "bf16"; mix = true; break;
  case GE_PRECISION_MIX_FP16: lowp = "fp16"; mix = true; break;
  case GE_PRECISION_KEEP:
  case GE_PRECISION_FORCE_FP32: break;
  default:
    return ge_error(GE_ERR_INVALID_ARGUMENT, "precision pass: unknown precision mode %d", mode);
  }
  if (!lowp) {
    /* force_fp32: every kernel computes in float32; drop any mark a model carried */
    if (mode == GE_PRECISION_FORCE_FP32)
      for (size_t i = 0; i < g->n_nodes; i++) del_attr(&g->nodes[i], GE_PRECISION_ATTR, changed);
    return GE_OK;
  }
  for (size_t i = 0; i < g->n_nodes; i++) {
    ge_node *n = &g->nodes[i];
    op_class k = classify(n);
    bool want = all_f32(g, n) && (k == OP_COMPUTE || (k == OP_SENSITIVE && !mix));
    const ge_attr_value *a = ge_node_attr(n, GE_PRECISION_ATTR);
    if (!want) {
      del_attr(n, GE_PRECISION_ATTR, changed);
      continue;
    }
    if (a && a->kind == GE_ATTR_KIND_STRING && a->s && !strcmp(a->s, lowp)) continue;
    ge_status st = ge_edit_set_attr_string(n, GE_PRECISION_ATTR, lowp);
    if (st != GE_OK) {
      char buf[160];
      return ge_error_prefix(st, "precision pass: marking %s: ", ge_node_desc(n, buf, sizeof buf));
    }
    *changed = true;
  }
  return GE_OK;
}
