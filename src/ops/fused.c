/* Schemas of the fused ops (domain ai.ge) that the compiler's fusion passes create.  See
 * ops/fused.h for their definitions.  The Conv/Gemm/MatMul parts reuse the ONNX schemas. */
#include <string.h>

#include "ops/fused.h"
#include "ops/op.h"

static ge_status check_act(ge_infer_ctx *c) {
  const char *a = ge_node_attr_string(c->node, "activation", "");
  if (ge_fused_act_parse(a) == GE_ACT_COUNT)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "unknown activation '%s'", a);
  return GE_OK;
}

/* Runs the ONNX schema `op` on the first n_in inputs. */
static ge_status delegate(ge_infer_ctx *c, const char *op, int64_t opset, size_t n_in) {
  const ge_op_schema *s = ge_op_find_schema("", op, opset);
  if (!s || !s->infer) return ge_infer_fail(c, GE_ERR_INTERNAL, "no schema for %s", op);
  ge_infer_ctx d = *c;
  d.opset = opset;
  d.n_in = c->n_in < n_in ? c->n_in : n_in;
  return s->infer(&d);
}

/* Input 3 (Sum), where present, has the output's dtype, and its shape (FusedConv: no
   broadcast); or, with bcast (FusedMatMul), it broadcasts with the product, which the output
   then takes, as the Add it replaces did. */
static ge_status check_sum(ge_infer_ctx *c, bool bcast) {
  if (c->n_in > 3 && c->in[3].present && c->in[3].type) {
    const ge_type *s = c->in[3].type;
    if (s->dtype != GE_DTYPE_COUNT && s->dtype != c->out[0].dtype)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 3 (Sum) has dtype %s, the output %s",
                           ge_dtype_name(s->dtype), ge_dtype_name(c->out[0].dtype));
    const ge_shape *o = &c->out[0].shape;
    if (bcast && s->shape.rank >= 0 && o->rank >= 0) {
      ge_shape y;
      if (ge_shape_broadcast(o, &s->shape, &y) != GE_OK)
        return ge_infer_fail(c, GE_ERR_SHAPE, "input 3 (Sum) does not broadcast with the product");
      c->out[0].shape = y;
    } else if (bcast) {
      c->out[0].shape.rank = GE_RANK_UNKNOWN;
    } else if (s->shape.rank >= 0 && o->rank >= 0) {
      bool ok = s->shape.rank == o->rank;
      for (int32_t d = 0; ok && d < o->rank; d++)
        if (s->shape.dims[d] >= 0 && o->dims[d] >= 0 && s->shape.dims[d] != o->dims[d]) ok = false;
      if (!ok) return ge_infer_fail(c, GE_ERR_SHAPE, "input 3 (Sum) does not have the output's shape");
    }
  }
  return GE_OK;
}

static ge_status infer_fused_conv(ge_infer_ctx *c) {
  GE_CHECK(check_act(c));
  GE_CHECK(delegate(c, "Conv", 11, 3));
  return check_sum(c, false);
}

/* X [N, C, ...] -> the 1x1 convolution's [N, E, ...] (W [E, C, 1.., 1]) -> the depthwise
   convolution's output, by the Conv schema on (that value, Wd, Bd) with the node's attributes */
static ge_status infer_fused_conv_dw(ge_infer_ctx *c) {
  GE_CHECK(check_act(c));
  const char *pa = ge_node_attr_string(c->node, "pw_activation", "");
  if (ge_fused_act_parse(pa) == GE_ACT_COUNT)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "unknown pw_activation '%s'", pa);
  if (c->n_in < 4 || !c->in[0].present || !c->in[1].present || !c->in[3].present)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "needs X, W and Wd (inputs 0, 1 and 3)");
  const ge_type *x = c->in[0].type, *w = c->in[1].type;
  if (x->dtype != GE_DTYPE_COUNT && x->dtype != GE_F32)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "X has dtype %s (float32 only)", ge_dtype_name(x->dtype));
  ge_type mid = *x;
  if (w->shape.rank >= 0) {
    if (x->shape.rank >= 0 && w->shape.rank != x->shape.rank)
      return ge_infer_fail(c, GE_ERR_SHAPE, "W has rank %d, X %d", w->shape.rank, x->shape.rank);
    for (int32_t d = 2; d < w->shape.rank; d++)
      if (w->shape.dims[d] >= 0 && w->shape.dims[d] != 1)
        return ge_infer_fail(c, GE_ERR_SHAPE, "W must be a 1x1 kernel [E, C, 1, 1]");
    if (x->shape.rank >= 2 && w->shape.dims[1] >= 0 && x->shape.dims[1] >= 0 && w->shape.dims[1] != x->shape.dims[1])
      return ge_infer_fail(c, GE_ERR_SHAPE, "W has %lld input channels, X %lld", (long long)w->shape.dims[1],
                           (long long)x->shape.dims[1]);
    if (mid.shape.rank >= 2) mid.shape.dims[1] = w->shape.dims[0];
  }
  if (c->n_in > 2 && c->in[2].present && c->in[2].type->shape.rank >= 0 &&
      (c->in[2].type->shape.rank != 1 ||
       (w->shape.rank >= 1 && c->in[2].type->shape.dims[0] >= 0 && w->shape.dims[0] >= 0 &&
        c->in[2].type->shape.dims[0] != w->shape.dims[0])))
    return ge_infer_fail(c, GE_ERR_SHAPE, "B must be [E], one entry per output channel of the 1x1");
  ge_infer_input in[3] = {{true, &mid, NULL}, c->in[3], {false, NULL, NULL}};
  if (c->n_in > 4) in[2] = c->in[4];
  ge_infer_ctx d = *c;
  d.in = in;
  d.n_in = 3;
  return delegate(&d, "Conv", 11, 3);
}

static ge_status infer_fused_gemm(ge_infer_ctx *c) {
  GE_CHECK(check_act(c));
  return delegate(c, "Gemm", 13, 3);
}

static ge_status infer_fused_matmul(ge_infer_ctx *c) {
  GE_CHECK(check_act(c));
  GE_CHECK(delegate(c, "MatMul", 13, 2));
  if (c->n_in > 2 && c->in[2].present && c->in[2].type) {
    const ge_type *b = c->in[2].type;
    const ge_shape *o = &c->out[0].shape;
    if (b->shape.rank > 1)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input 2 (Bias) must be 1-D, got rank %d", b->shape.rank);
    if (b->shape.rank == 1 && o->rank >= 1 && b->shape.dims[0] >= 0 && o->dims[o->rank - 1] >= 0 &&
        b->shape.dims[0] != o->dims[o->rank - 1])
      return ge_infer_fail(c, GE_ERR_SHAPE, "input 2 (Bias) has %lld entries, the output's last dim is %lld",
                           (long long)b->shape.dims[0], (long long)o->dims[o->rank - 1]);
  }
  return check_sum(c, true);
}

static const ge_dtype k_float[] = {GE_F32, GE_DTYPE_COUNT};

static ge_status infer_layernorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  ge_infer_copy(c, 0, 0);
  if (c->in[0].type->shape.rank >= 0) {
    int64_t axis;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", -1), c->in[0].type->shape.rank, &axis));
  }
  return GE_OK;
}

static ge_status infer_gelu(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  const char *a = ge_node_attr_string(c->node, "approximate", "none");
  if (strcmp(a, "none") && strcmp(a, "tanh"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "approximate must be 'none' or 'tanh', got '%s'", a);
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* Q [..,M,D], KT [..,D,N], V [..,N,Dv] -> [broadcast(..), M, Dv]; the layout attribute's
   operands are permuted to / from the logical order first */
static ge_status infer_attention(ge_infer_ctx *c) {
  for (size_t i = 0; i < 3; i++) GE_CHECK(ge_infer_check_dtype(c, i, k_float));
  int64_t mode = ge_node_attr_int(c->node, "mask_mode", GE_ATTN_MASK_ADD);
  if (mode != GE_ATTN_MASK_ADD && mode != GE_ATTN_MASK_SELECT)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "mask_mode %lld is not 0 (additive) or 1 (select)",
                         (long long)mode);
  if (c->n_in > 3 && c->in[3].present) {
    static const ge_dtype k_bool[] = {GE_BOOL, GE_DTYPE_COUNT};
    GE_CHECK(ge_infer_check_dtype(c, 3, mode == GE_ATTN_MASK_SELECT ? k_bool : k_float));
  }
  int64_t lay = ge_node_attr_int(c->node, "layout", 0);
  if (lay < 0 || lay > (int64_t)GE_ATTN_LAYOUT_ALL)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "layout %lld is not a combination of 1, 2, 4, 8",
                         (long long)lay);
  static const int32_t p_q[4] = {0, 2, 1, 3}, p_k[4] = {0, 2, 3, 1};
  ge_shape ls[3] = {c->in[0].type->shape, c->in[1].type->shape, c->in[2].type->shape};
  static const unsigned bits[3] = {GE_ATTN_LAYOUT_Q, GE_ATTN_LAYOUT_KT, GE_ATTN_LAYOUT_V};
  static const char *const names[3] = {"Q", "KT", "V"};
  for (int i = 0; i < 3; i++) {
    if (!((unsigned)lay & bits[i]) || ls[i].rank < 0) continue;
    if (ls[i].rank != 4)
      return ge_infer_fail(c, GE_ERR_SHAPE, "layout %lld: %s must have rank 4, got %d", (long long)lay,
                           names[i], ls[i].rank);
    ge_shape t = ls[i];
    for (int d = 0; d < 4; d++) ls[i].dims[d] = t.dims[i == 1 ? p_k[d] : p_q[d]];
  }
  const ge_shape *q = &ls[0], *k = &ls[1], *v = &ls[2];
  if (q->rank < 0 || k->rank < 0 || v->rank < 0) {
    ge_infer_set(c, 0, GE_F32, NULL);
    return GE_OK;
  }
  if (q->rank < 2 || k->rank < 2 || v->rank < 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "Q, KT and V must have rank >= 2 (got %d, %d, %d)",
                         q->rank, k->rank, v->rank);
  int64_t qd = q->dims[q->rank - 1], kd = k->dims[k->rank - 2], kn = k->dims[k->rank - 1],
          vn = v->dims[v->rank - 2];
  if (qd >= 0 && kd >= 0 && qd != kd)
    return ge_infer_fail(c, GE_ERR_SHAPE, "Q's last dim %lld differs from KT's second-last %lld",
                         (long long)qd, (long long)kd);
  if (kn >= 0 && vn >= 0 && kn != vn)
    return ge_infer_fail(c, GE_ERR_SHAPE, "KT's last dim %lld differs from V's second-last %lld",
                         (long long)kn, (long long)vn);
  ge_shape bq = {.rank = q->rank - 2}, bk = {.rank = k->rank - 2}, bv = {.rank = v->rank - 2}, t, o;
  memcpy(bq.dims, q->dims, (size_t)bq.rank * sizeof *q->dims);
  memcpy(bk.dims, k->dims, (size_t)bk.rank * sizeof *k->dims);
  memcpy(bv.dims, v->dims, (size_t)bv.rank * sizeof *v->dims);
  if (ge_shape_broadcast(&bq, &bk, &t) != GE_OK || ge_shape_broadcast(&t, &bv, &o) != GE_OK)
    return ge_infer_fail(c, GE_ERR_SHAPE, "batch dims of Q, KT and V do not broadcast");
  if (o.rank + 2 > GE_MAX_RANK) return ge_infer_fail(c, GE_ERR_SHAPE, "result rank too large");
  o.dims[o.rank++] = q->dims[q->rank - 2];
  o.dims[o.rank++] = v->dims[v->rank - 1];
  if ((unsigned)lay & GE_ATTN_LAYOUT_Y) {
    if (o.rank != 4)
      return ge_infer_fail(c, GE_ERR_SHAPE, "layout %lld: Y must have rank 4, got %d", (long long)lay, o.rank);
    int64_t h = o.dims[1];
    o.dims[1] = o.dims[2];
    o.dims[2] = h;
  }
  ge_infer_set(c, 0, GE_F32, &o);
  return GE_OK;
}

const ge_op_schema ge_schemas_fused[] = {
    {GE_FUSED_DOMAIN, "FusedConv", 1, 0, 2, 4, 1, 1, infer_fused_conv},
    {GE_FUSED_DOMAIN, "FusedConvDw", 1, 0, 4, 5, 1, 1, infer_fused_conv_dw},
    {GE_FUSED_DOMAIN, "FusedGemm", 1, 0, 2, 3, 1, 1, infer_fused_gemm},
    {GE_FUSED_DOMAIN, "FusedMatMul", 1, 0, 2, 4, 1, 1, infer_fused_matmul},
    {GE_FUSED_DOMAIN, "LayerNormalization", 1, 0, 1, 3, 1, 1, infer_layernorm},
    {GE_FUSED_DOMAIN, "Gelu", 1, 0, 1, 1, 1, 1, infer_gelu},
    {GE_FUSED_DOMAIN, "Attention", 1, 0, 3, 4, 1, 1, infer_attention},
    {0},
};
