/* Schemas of the nn2 family: newer NN ops (Attention, RMSNormalization, RotaryEmbedding,
 * LinearAttention, CausalConvWithState, DeformConv, Col2Im, CenterCropPad), the losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), CumProd, BitCast and the
 * ai.onnx.preview.training optimizers (Adagrad, Adam, Momentum). */
#include <stdio.h>
#include <string.h>

#include "ops/op.h"

#define END GE_DTYPE_COUNT

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};
static const ge_dtype k_num[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I32, GE_I64,
                                 GE_U32, GE_U64, END};
static const ge_dtype k_index[] = {GE_I32, GE_I64, END};

static int32_t in_rank(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type) return GE_RANK_UNKNOWN;
  return c->in[i].type->shape.rank;
}

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) ? c->in[i].type->dtype : END;
}

static bool present(const ge_infer_ctx *c, size_t i) { return i < c->n_in && c->in[i].present; }

static int64_t in_dim(const ge_infer_ctx *c, size_t i, int32_t d) {
  int32_t r = in_rank(c, i);
  if (r == GE_RANK_UNKNOWN || d >= r) return GE_DIM_UNKNOWN;
  return c->in[i].type->shape.dims[d];
}

static int64_t div_dim(int64_t a, int64_t b) { return a >= 0 && b > 0 ? a / b : GE_DIM_UNKNOWN; }
static int64_t add_dim(int64_t a, int64_t b) { return a >= 0 && b >= 0 ? a + b : GE_DIM_UNKNOWN; }

static void set_dims(ge_infer_ctx *c, size_t out, ge_dtype dt, const int64_t *d, int32_t rank) {
  ge_shape s = {.rank = rank};
  for (int32_t i = 0; i < rank; i++) s.dims[i] = d[i];
  ge_infer_set(c, out, dt, &s);
}

static ge_status check_rank(const ge_infer_ctx *c, size_t i, int32_t lo, int32_t hi, const char *what) {
  int32_t r = in_rank(c, i);
  if (r != GE_RANK_UNKNOWN && (r < lo || r > hi))
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu (%s) must have rank %d..%d, got %d", i, what, lo,
                         hi, r);
  return GE_OK;
}

/* ------------------------------------------------------------------ Attention */

static ge_status infer_attention(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(ge_infer_check_dtype(c, 1, k_float));
  GE_CHECK(ge_infer_check_dtype(c, 2, k_float));
  int32_t r = in_rank(c, 0);
  if (r == GE_RANK_UNKNOWN) r = in_rank(c, 1);
  if (r != GE_RANK_UNKNOWN && r != 3 && r != 4)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (Q) must be 3-D or 4-D, got rank %d", r);
  for (size_t i = 1; i < 3; i++)
    if (in_rank(c, i) != GE_RANK_UNKNOWN && r != GE_RANK_UNKNOWN && in_rank(c, i) != r)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu has rank %d but Q has rank %d", i,
                           in_rank(c, i), r);
  if (present(c, 4) != present(c, 5))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "past_key and past_value must be given together");
  ge_dtype dt = in_dtype(c, 0);
  int64_t hq = ge_node_attr_int(c->node, "q_num_heads", 0);
  int64_t hkv = ge_node_attr_int(c->node, "kv_num_heads", 0);
  int64_t B = in_dim(c, 0, 0), S, D, L, Dv;
  if (r == 3) {
    if (hq <= 0 || hkv <= 0)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                           "3-D inputs need q_num_heads and kv_num_heads > 0 (got %lld, %lld)",
                           (long long)hq, (long long)hkv);
    S = in_dim(c, 0, 1);
    D = div_dim(in_dim(c, 0, 2), hq);
    L = in_dim(c, 1, 1);
    Dv = div_dim(in_dim(c, 2, 2), hkv);
    int64_t hd = in_dim(c, 0, 2), kd = in_dim(c, 1, 2), vd = in_dim(c, 2, 2);
    if ((hd >= 0 && hd % hq) || (kd >= 0 && kd % hkv) || (vd >= 0 && vd % hkv))
      return ge_infer_fail(c, GE_ERR_SHAPE,
                           "hidden sizes (Q %lld, K %lld, V %lld) are not divisible by the head "
                           "counts (%lld, %lld)",
                           (long long)hd, (long long)kd, (long long)vd, (long long)hq, (long long)hkv);
  } else {
    hq = in_dim(c, 0, 1);
    hkv = in_dim(c, 1, 1);
    S = in_dim(c, 0, 2);
    D = in_dim(c, 0, 3);
    L = in_dim(c, 1, 2);
    Dv = in_dim(c, 2, 3);
  }
  if (hq > 0 && hkv > 0 && hq % hkv)
    return ge_infer_fail(c, GE_ERR_SHAPE, "q heads (%lld) is not a multiple of kv heads (%lld)",
                         (long long)hq, (long long)hkv);
  int64_t P = present(c, 4) ? in_dim(c, 4, 2) : 0;
  int64_t T = add_dim(P, L);
  if (r == GE_RANK_UNKNOWN) {
    for (size_t o = 0; o < c->n_out; o++) ge_infer_set(c, o, o == 1 ? in_dtype(c, 1) : o == 2 ? in_dtype(c, 2) : dt, NULL);
    return GE_OK;
  }
  if (r == 3) {
    int64_t y[3] = {B, S, hq > 0 && Dv >= 0 ? hq * Dv : GE_DIM_UNKNOWN};
    set_dims(c, 0, dt, y, 3);
  } else {
    int64_t y[4] = {B, hq, S, Dv};
    set_dims(c, 0, dt, y, 4);
  }
  int64_t Dk = r == 3 ? div_dim(in_dim(c, 1, 2), hkv) : in_dim(c, 1, 3);
  if (D >= 0 && Dk >= 0 && D != Dk)
    return ge_infer_fail(c, GE_ERR_SHAPE, "Q head size %lld differs from K head size %lld", (long long)D,
                         (long long)Dk);
  int64_t pk[4] = {B, hkv, T, Dk}, pv[4] = {B, hkv, T, Dv}, qk[4] = {B, hq, S, T};
  if (c->n_out > 1) set_dims(c, 1, in_dtype(c, 1), pk, 4);
  if (c->n_out > 2) set_dims(c, 2, in_dtype(c, 2), pv, 4);
  if (c->n_out > 3) set_dims(c, 3, dt, qk, 4);
  return GE_OK;
}

static ge_status infer_flex_attention(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  for (size_t i = 0; i < 3; i++) GE_CHECK(check_rank(c, i, 4, 4, i == 0 ? "Q" : i == 1 ? "K" : "V"));
  int64_t hq = in_dim(c, 0, 1), hkv = in_dim(c, 1, 1);
  if (hq > 0 && hkv > 0 && hq % hkv)
    return ge_infer_fail(c, GE_ERR_SHAPE, "q heads (%lld) is not a multiple of kv heads (%lld)",
                         (long long)hq, (long long)hkv);
  int64_t y[4] = {in_dim(c, 0, 0), hq, in_dim(c, 0, 2), in_dim(c, 2, 3)};
  set_dims(c, 0, in_dtype(c, 0), y, 4);
  return GE_OK;
}

/* ------------------------------------------------------------------ RMSNormalization etc. */

static ge_status infer_rmsnorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(ge_infer_check_dtype(c, 1, k_float));
  int32_t r = in_rank(c, 0);
  if (r != GE_RANK_UNKNOWN) {
    int64_t ax;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", -1), r, &ax));
  }
  ge_dtype dt = in_dtype(c, 1) != END ? in_dtype(c, 1) : in_dtype(c, 0);
  ge_infer_set(c, 0, dt, r == GE_RANK_UNKNOWN ? NULL : &c->in[0].type->shape);
  return GE_OK;
}

static ge_status infer_rotary(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(check_rank(c, 0, 3, 4, "X"));
  if (present(c, 3)) GE_CHECK(ge_infer_check_dtype(c, 3, k_index));
  if (in_rank(c, 0) == 3 && ge_node_attr_int(c->node, "num_heads", 0) <= 0)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "3-D input needs attribute num_heads > 0");
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_linear_attention(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  for (size_t i = 0; i < 3; i++) GE_CHECK(check_rank(c, i, 3, 3, i == 0 ? "query" : i == 1 ? "key" : "value"));
  int64_t hq = ge_node_attr_int(c->node, "q_num_heads", 0);
  int64_t hkv = ge_node_attr_int(c->node, "kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                         (long long)hq, (long long)hkv);
  const char *rule = ge_node_attr_string(c->node, "update_rule", "gated_delta");
  bool gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gating && !delta && strcmp(rule, "linear"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "unknown update_rule '%s'", rule);
  if (gating != present(c, 4))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "update_rule '%s' %s the decay input", rule,
                         gating ? "requires" : "forbids");
  if (delta != present(c, 5))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "update_rule '%s' %s the beta input", rule,
                         delta ? "requires" : "forbids");
  ge_dtype dt = in_dtype(c, 0);
  int64_t B = in_dim(c, 0, 0), T = in_dim(c, 0, 1);
  int64_t dk = div_dim(in_dim(c, 0, 2), hq), dv = div_dim(in_dim(c, 2, 2), hkv);
  int64_t y[3] = {B, T, dv >= 0 ? hq * dv : GE_DIM_UNKNOWN}, st[4] = {B, hkv, dk, dv};
  set_dims(c, 0, dt, y, 3);
  if (c->n_out > 1) set_dims(c, 1, present(c, 3) ? in_dtype(c, 3) : dt, st, 4);
  return GE_OK;
}

static ge_status infer_causal_conv(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(check_rank(c, 0, 3, 3, "input"));
  GE_CHECK(check_rank(c, 1, 3, 3, "weight"));
  const char *act = ge_node_attr_string(c->node, "activation", "none");
  if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "activation '%s' is not one of none, silu, swish", act);
  ge_infer_copy(c, 0, 0);
  int64_t k = in_dim(c, 1, 2);
  int64_t st[3] = {in_dim(c, 0, 0), in_dim(c, 0, 1), k > 0 ? k - 1 : GE_DIM_UNKNOWN};
  if (c->n_out > 1) set_dims(c, 1, in_dtype(c, 0), st, 3);
  return GE_OK;
}

/* ------------------------------------------------------------------ DeformConv / Col2Im / CenterCropPad */

static ge_status infer_deform_conv(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(check_rank(c, 0, 3, GE_MAX_RANK, "X"));
  int32_t r = in_rank(c, 2);
  if (r == GE_RANK_UNKNOWN) r = in_rank(c, 0);
  if (r == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, in_dtype(c, 0), NULL);
    return GE_OK;
  }
  int64_t d[GE_MAX_RANK];
  d[0] = in_dim(c, 0, 0);
  d[1] = in_dim(c, 1, 0);
  for (int32_t i = 2; i < r; i++) d[i] = in_dim(c, 2, i);
  set_dims(c, 0, in_dtype(c, 0), d, r);
  return GE_OK;
}

static ge_status infer_col2im(ge_infer_ctx *c) {
  GE_CHECK(check_rank(c, 0, 3, 3, "input"));
  GE_CHECK(ge_infer_check_dtype(c, 1, k_index));
  GE_CHECK(ge_infer_check_dtype(c, 2, k_index));
  int64_t img[GE_MAX_RANK], blk[GE_MAX_RANK];
  size_t ni = 0, nb = 0;
  bool have_img = ge_infer_const_ints(c, 1, img, GE_MAX_RANK - 2, &ni);
  bool have_blk = ge_infer_const_ints(c, 2, blk, GE_MAX_RANK - 2, &nb);
  int64_t nsp = have_img ? (int64_t)ni : in_dim(c, 1, 0);
  if (nsp < 0 || nsp > GE_MAX_RANK - 2) {
    ge_infer_set(c, 0, in_dtype(c, 0), NULL);
    return GE_OK;
  }
  int64_t d[GE_MAX_RANK];
  d[0] = in_dim(c, 0, 0);
  d[1] = GE_DIM_UNKNOWN;
  if (have_blk) {
    int64_t p = 1;
    for (size_t i = 0; i < nb; i++) {
      if (blk[i] <= 0)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "block_shape[%zu] is %lld; must be > 0", i,
                             (long long)blk[i]);
      p *= blk[i];
    }
    int64_t cd = in_dim(c, 0, 1);
    if (cd >= 0 && cd % p)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input dim 1 (%lld) is not divisible by prod(block_shape) = %lld",
                           (long long)cd, (long long)p);
    d[1] = div_dim(cd, p);
  }
  for (int64_t i = 0; i < nsp; i++) {
    if (have_img && img[i] < 0)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "image_shape[%lld] is negative (%lld)", (long long)i,
                           (long long)img[i]);
    d[2 + i] = have_img ? img[i] : GE_DIM_UNKNOWN;
  }
  set_dims(c, 0, in_dtype(c, 0), d, (int32_t)nsp + 2);
  return GE_OK;
}

static ge_status infer_center_crop_pad(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, k_index));
  int32_t r = in_rank(c, 0);
  if (r == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, in_dtype(c, 0), NULL);
    return GE_OK;
  }
  const int64_t *axes = NULL;
  size_t n_axes = 0;
  bool has_axes = ge_node_attr_ints(c->node, "axes", &axes, &n_axes);
  int64_t sh[GE_MAX_RANK];
  size_t ns = 0;
  bool known = ge_infer_const_ints(c, 1, sh, GE_MAX_RANK, &ns);
  size_t want = has_axes ? n_axes : (size_t)r;
  if (known && ns != want)
    return ge_infer_fail(c, GE_ERR_SHAPE, "shape has %zu entries but %zu axes are cropped/padded", ns, want);
  int64_t d[GE_MAX_RANK];
  for (int32_t i = 0; i < r; i++) d[i] = c->in[0].type->shape.dims[i];
  for (size_t k = 0; k < want; k++) {
    int64_t ax = (int64_t)k;
    if (has_axes) GE_CHECK(ge_infer_axis(c, axes[k], r, &ax));
    if (known && sh[k] < 0)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "shape[%zu] is negative (%lld)", k, (long long)sh[k]);
    d[ax] = known ? sh[k] : GE_DIM_UNKNOWN;
  }
  set_dims(c, 0, in_dtype(c, 0), d, r);
  return GE_OK;
}

/* ------------------------------------------------------------------ losses */

static ge_status infer_nll(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(ge_infer_check_dtype(c, 1, k_index));
  GE_CHECK(check_rank(c, 0, 2, GE_MAX_RANK, "input"));
  const char *red = ge_node_attr_string(c->node, "reduction", "mean");
  if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "reduction '%s' is not none, sum or mean", red);
  int32_t r0 = in_rank(c, 0), r1 = in_rank(c, 1);
  if (r0 != GE_RANK_UNKNOWN && r1 != GE_RANK_UNKNOWN && r1 != r0 - 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "target rank %d must be input rank %d minus 1", r1, r0);
  ge_dtype dt = in_dtype(c, 0);
  if (!strcmp(red, "none")) {
    if (r1 != GE_RANK_UNKNOWN)
      ge_infer_set(c, 0, dt, &c->in[1].type->shape);
    else if (r0 != GE_RANK_UNKNOWN) {
      int64_t d[GE_MAX_RANK];
      d[0] = in_dim(c, 0, 0);
      for (int32_t i = 2; i < r0; i++) d[i - 1] = in_dim(c, 0, i);
      set_dims(c, 0, dt, d, r0 - 1);
    } else
      ge_infer_set(c, 0, dt, NULL);
  } else {
    set_dims(c, 0, dt, NULL, 0);
  }
  if (c->n_out > 1) ge_infer_copy(c, 1, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ CumProd / BitCast */

static ge_status infer_cumprod(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_num));
  GE_CHECK(ge_infer_check_dtype(c, 1, k_index));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static size_t dtype_bytes(ge_dtype dt) {
  switch (dt) {
    case GE_F64: case GE_I64: case GE_U64: return 8;
    case GE_F32: case GE_I32: case GE_U32: return 4;
    case GE_F16: case GE_BF16: case GE_I16: case GE_U16: return 2;
    case GE_I8: case GE_U8: case GE_BOOL: return 1;
    default: return 0;
  }
}

static ge_status infer_bitcast(ge_infer_ctx *c) {
  int64_t to = ge_node_attr_int(c->node, "to", -1);
  ge_dtype dt;
  if (!ge_dtype_from_onnx((int32_t)to, &dt) || dt == GE_STRING)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "attribute to = %lld is not a supported dtype", (long long)to);
  ge_dtype src = in_dtype(c, 0);
  if (src != END && dtype_bytes(src) != dtype_bytes(dt))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "cannot bitcast %s to %s: widths differ",
                         ge_dtype_name(src), ge_dtype_name(dt));
  if (src == GE_STRING) return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "cannot bitcast strings");
  ge_infer_set(c, 0, dt, in_rank(c, 0) == GE_RANK_UNKNOWN ? NULL : &c->in[0].type->shape);
  return GE_OK;
}

/* ------------------------------------------------------------------ optimizers */

/* groups: tensors per parameter among the inputs (3 Adagrad/Momentum, 4 Adam); outs: the
   input group index each output group copies (X, H / X, V / X, V, H). */
static ge_status infer_optimizer(ge_infer_ctx *c, size_t groups, const size_t *outs, size_t n_outs) {
  if (c->n_in < 2 || (c->n_in - 2) % groups)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "expected R, T and %zu tensors per parameter, got %zu inputs",
                         groups, c->n_in);
  size_t n = (c->n_in - 2) / groups;
  if (c->n_out != n * n_outs)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "expected %zu outputs for %zu parameters, got %zu",
                         n * n_outs, n, c->n_out);
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  for (size_t i = 2; i < c->n_in; i++) GE_CHECK(ge_infer_check_dtype(c, i, k_float));
  for (size_t g = 0; g < n_outs; g++)
    for (size_t i = 0; i < n; i++) ge_infer_copy(c, g * n + i, 2 + outs[g] * n + i);
  return GE_OK;
}

static ge_status infer_adagrad(ge_infer_ctx *c) {
  static const size_t o[] = {0, 2};
  return infer_optimizer(c, 3, o, 2);
}
static ge_status infer_momentum(ge_infer_ctx *c) {
  static const size_t o[] = {0, 2};
  return infer_optimizer(c, 3, o, 2);
}
static ge_status infer_adam(ge_infer_ctx *c) {
  static const size_t o[] = {0, 2, 3};
  return infer_optimizer(c, 4, o, 3);
}

#define TRAIN "ai.onnx.preview.training"

const ge_op_schema ge_schemas_nn2[] = {
    {"", "Attention", 23, 0, 3, 7, 1, 4, infer_attention},
    {"ai.onnx.preview", "FlexAttention", 1, 0, 3, 3, 1, 1, infer_flex_attention},
    {"", "RMSNormalization", 23, 0, 2, 2, 1, 1, infer_rmsnorm},
    {"", "RotaryEmbedding", 23, 0, 3, 4, 1, 1, infer_rotary},
    {"", "LinearAttention", 27, 0, 3, 6, 1, 2, infer_linear_attention},
    {"", "CausalConvWithState", 27, 0, 2, 4, 1, 2, infer_causal_conv},
    {"", "DeformConv", 19, 0, 3, 5, 1, 1, infer_deform_conv},
    {"", "Col2Im", 18, 0, 3, 3, 1, 1, infer_col2im},
    {"", "CenterCropPad", 18, 0, 2, 2, 1, 1, infer_center_crop_pad},
    {"", "NegativeLogLikelihoodLoss", 12, 0, 2, 3, 1, 1, infer_nll},
    {"", "SoftmaxCrossEntropyLoss", 12, 0, 2, 3, 1, 2, infer_nll},
    {"", "CumProd", 26, 0, 2, 2, 1, 1, infer_cumprod},
    {"", "BitCast", 26, 0, 1, 1, 1, 1, infer_bitcast},
    {TRAIN, "Adagrad", 1, 0, 5, GE_VARIADIC, 2, GE_VARIADIC, infer_adagrad},
    {TRAIN, "Momentum", 1, 0, 5, GE_VARIADIC, 2, GE_VARIADIC, infer_momentum},
    {TRAIN, "Adam", 1, 0, 6, GE_VARIADIC, 3, GE_VARIADIC, infer_adam},
    {0},
};
