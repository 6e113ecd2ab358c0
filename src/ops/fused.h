/* The fused ops of domain ai.ge that the compiler's fusion passes create.
 *
 *   FusedConv(X, W, [B], [Sum])   Conv attributes + activation, activation_params:
 *                                 Y = act(Conv(X, W, B) + Sum)        (Sum: same shape as Y)
 *   FusedConvDw(X, W, [B], Wd, [Bd])  a 1x1 convolution followed by a depthwise one:
 *                                 Y = act(Conv(pw_act(Conv(X, W, B)), Wd, Bd)) where the first
 *                                 Conv is 1x1, stride 1, unpadded, ungrouped (W [E, C, 1, 1])
 *                                 and the second is depthwise (Wd [E, 1, kh, kw], group = E);
 *                                 the node's Conv attributes (strides, pads, dilations, group,
 *                                 kernel_shape) are the depthwise one's; activation /
 *                                 activation_params its activation, pw_activation /
 *                                 pw_activation_params the 1x1's.  Created by the conv_dw pass
 *                                 where the [N, E, H, W] value between them is too large for the
 *                                 cores' L2 caches: the kernel computes it a band of rows at a
 *                                 time (backend/cpu/dnnl/dnnl_convdw.c), so it stays in the cache.
 *   FusedGemm(A, B, [C])          Gemm attributes + activation: Y = act(Gemm(A, B, C))
 *   FusedMatMul(A, B, [Bias], [Sum])  Y = act(MatMul(A, B) + Bias + Sum)  (Bias: [N], last
 *                                 dim; Sum: a residual (conv_sum pass), broadcast with the
 *                                 product as ONNX Add does; the fast kernels take only a Sum
 *                                 of the product's shape)
 *   LayerNormalization(X, [Scale], [Bias])  axis (-1), epsilon (1e-5): over axes axis..r-1
 *   Gelu(X)                       approximate = "none" (erf) | "tanh"
 *   Attention(Q, KT, V, [Mask])   scale (1.0): Y = softmax(Q @ KT * scale + Mask) @ V,
 *                                 Q [..,M,D], KT [..,D,N], V [..,N,Dv], batch dims broadcast
 *                                 as MatMul does; Mask broadcastable to the scores [..,M,N]
 *                                 (it must not enlarge them)
 *                                 layout (0): bit set = that operand is stored in the
 *                                 pre-transpose [B, S, H, D] order of a rank-4 attention,
 *                                 i.e. the op reads/writes it through the Transpose it replaces:
 *                                 1: Q is [B, M, H, D]   (logical Q  = Transpose(., 0,2,1,3))
 *                                 2: KT is [B, N, H, D]  (logical KT = Transpose(., 0,2,3,1))
 *                                 4: V is [B, N, H, Dv]  (logical V  = Transpose(., 0,2,1,3))
 *                                 8: Y is [B, M, H, Dv]  (= Transpose(logical Y, 0,2,1,3))
 *                                 A set bit needs that operand (and Y) of rank 4; the Mask
 *                                 always broadcasts to the logical scores [B, H, M, N].
 *                                 mask_mode (0): 0 = additive, Mask float, added to the scores;
 *                                 1 = select, Mask bool (the Where condition, true = keep):
 *                                 Y = softmax(Where(Mask, Q @ KT * scale, mask_fill)) @ V,
 *                                 i.e. masked scores are replaced by mask_fill (float, default
 *                                 -inf) before the softmax; a fully masked row is then uniform
 *                                 (every score mask_fill), NaN for mask_fill -inf, as Where +
 *                                 Softmax give.  Without a Mask the mode has no effect.
 *
 * activation: "" (none), Relu, LeakyRelu (params: alpha), Clip (min, max), Sigmoid, Tanh,
 * Gelu, GeluTanh, SiLU, HardSwish, HardSigmoid (alpha, beta). */
#ifndef GE_OPS_FUSED_H
#define GE_OPS_FUSED_H

#include <float.h>
#include <string.h>

#include "ir/ir.h"

#define GE_FUSED_DOMAIN "ai.ge"

/* bits of ai.ge::Attention's layout attribute (see above) */
#define GE_ATTN_LAYOUT_Q 1u
#define GE_ATTN_LAYOUT_KT 2u
#define GE_ATTN_LAYOUT_V 4u
#define GE_ATTN_LAYOUT_Y 8u
#define GE_ATTN_LAYOUT_ALL 15u

/* ai.ge::Attention's mask_mode attribute (see above) */
#define GE_ATTN_MASK_ADD 0
#define GE_ATTN_MASK_SELECT 1

typedef enum ge_fused_act {
  GE_ACT_NONE = 0,
  GE_ACT_RELU,
  GE_ACT_LEAKY_RELU,
  GE_ACT_CLIP,
  GE_ACT_SIGMOID,
  GE_ACT_TANH,
  GE_ACT_GELU,
  GE_ACT_GELU_TANH,
  GE_ACT_SILU,
  GE_ACT_HARD_SWISH,
  GE_ACT_HARD_SIGMOID,
  GE_ACT_COUNT
} ge_fused_act;

static const char *const ge_fused_act_names[GE_ACT_COUNT] = {
    "", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Gelu", "GeluTanh", "SiLU", "HardSwish",
    "HardSigmoid"};

/* GE_ACT_COUNT when the name is unknown. */
static inline ge_fused_act ge_fused_act_parse(const char *s) {
  if (!s) return GE_ACT_NONE;
  for (int i = 0; i < GE_ACT_COUNT; i++)
    if (!strcmp(s, ge_fused_act_names[i])) return (ge_fused_act)i;
  return GE_ACT_COUNT;
}

/* The activation node n names in string attribute act_attr ("activation"), with its parameters
   from float-list attribute params_attr ("activation_params") or their defaults (LeakyRelu
   alpha 0.01; HardSigmoid alpha 0.2, beta 0.5; Clip unbounded).  GE_ACT_COUNT when unknown. */
static inline ge_fused_act ge_fused_act_of(const ge_node *n, const char *act_attr, const char *params_attr, float *p0,
                                           float *p1) {
  ge_fused_act act = ge_fused_act_parse(ge_node_attr_string(n, act_attr, ""));
  const float *ap = NULL;
  size_t na = 0;
  ge_node_attr_floats(n, params_attr, &ap, &na);
  *p0 = na > 0 ? ap[0] : act == GE_ACT_LEAKY_RELU ? 0.01f : act == GE_ACT_HARD_SIGMOID ? 0.2f : -FLT_MAX;
  *p1 = na > 1 ? ap[1] : act == GE_ACT_HARD_SIGMOID ? 0.5f : FLT_MAX;
  return act;
}

#endif
