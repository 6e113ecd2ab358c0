/* Reference CPU kernels of the fused ops (domain ai.ge; see ops/fused.h).  FusedConv,
 * FusedGemm and FusedMatMul run the ONNX kernel of their base op (found in the registry),
 * then add the Sum / Bias and apply the activation in place on the output; FusedConvDw runs
 * the Conv kernel twice.  LayerNormalization, Gelu and Attention are direct implementations
 * (float32). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/attention_geom.h"
#include "backend/cpu/ref/broadcast.h"
#include "backend/kernel.h"
#include "ops/fused.h"

static const ge_dtype k_f32[] = {GE_F32, GE_DTYPE_COUNT};

/* ------------------------------------------------------------------ activations */

static void apply_act(float *y, size_t n, ge_fused_act act, float p0, float p1) {
  switch (act) {
  case GE_ACT_NONE: break;
  case GE_ACT_RELU:
    for (size_t i = 0; i < n; i++) y[i] = y[i] > 0.f ? y[i] : 0.f;
    break;
  case GE_ACT_LEAKY_RELU:
    for (size_t i = 0; i < n; i++) y[i] = y[i] >= 0.f ? y[i] : p0 * y[i];
    break;
  case GE_ACT_CLIP:
    for (size_t i = 0; i < n; i++) y[i] = y[i] < p0 ? p0 : y[i] > p1 ? p1 : y[i];
    break;
  case GE_ACT_SIGMOID:
    for (size_t i = 0; i < n; i++) y[i] = 1.f / (1.f + expf(-y[i]));
    break;
  case GE_ACT_TANH:
    for (size_t i = 0; i < n; i++) y[i] = tanhf(y[i]);
    break;
  case GE_ACT_GELU:
    for (size_t i = 0; i < n; i++) y[i] = 0.5f * y[i] * (1.f + erff(y[i] * 0.70710678118654752f));
    break;
  case GE_ACT_GELU_TANH:
    for (size_t i = 0; i < n; i++) {
      float x = y[i];
      y[i] = 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    }
    break;
  case GE_ACT_SILU:
    for (size_t i = 0; i < n; i++) y[i] = y[i] / (1.f + expf(-y[i]));
    break;
  case GE_ACT_HARD_SWISH:
    for (size_t i = 0; i < n; i++) {
      float t = y[i] / 6.f + 0.5f;
      t = t < 0.f ? 0.f : t > 1.f ? 1.f : t;
      y[i] *= t;
    }
    break;
  case GE_ACT_HARD_SIGMOID:
    for (size_t i = 0; i < n; i++) {
      float t = p0 * y[i] + p1;
      y[i] = t < 0.f ? 0.f : t > 1.f ? 1.f : t;
    }
    break;
  default: break;
  }
}

/* ------------------------------------------------------------------ Conv/Gemm/MatMul + post-ops */

typedef struct fused_state {
  const ge_kernel *inner;
  void *inner_state;
  size_t inner_n_in;   /* inputs the base op sees */
  ge_fused_act act;
  float p0, p1;
  int bias_input;      /* FusedMatMul: Bias (2), added along the last dim; -1: none */
  int sum_input;       /* FusedConv, FusedMatMul: Sum (3), added elementwise; -1: none */
  bool sum_bcast;      /* FusedMatMul: the Sum broadcasts with the product (fused_run_bcast) */
} fused_state;

static void fused_release(void *st) {
  fused_state *s = st;
  if (!s) return;
  if (s->inner && s->inner->release && s->inner_state) s->inner->release(s->inner_state);
  free(s);
}

/* the input i of node p where it is present, else -1 */
static int present_input(const ge_prepare_ctx *p, int i) {
  return i >= 0 && (size_t)i < p->n_in && p->in[i].present ? i : -1;
}

static ge_status fused_prepare_common(const ge_prepare_ctx *p, const char *base, int64_t opset,
                                      size_t base_n_in, int bias_input, int sum_input, void **state) {
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present) GE_CHECK(ge_prepare_check_dtype(p, i, k_f32));
  float p0, p1;
  ge_fused_act act = ge_fused_act_of(p->node, "activation", "activation_params", &p0, &p1);
  if (act == GE_ACT_COUNT)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown activation '%s'",
                           ge_node_attr_string(p->node, "activation", ""));
  const ge_kernel *k = ge_cpu_find_kernel("", base, opset);
  if (!k) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for the base op %s", base);
  fused_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->inner = k;
  s->inner_n_in = p->n_in < base_n_in ? p->n_in : base_n_in;
  s->act = act;
  s->p0 = p0;
  s->p1 = p1;
  s->bias_input = present_input(p, bias_input);
  s->sum_input = present_input(p, sum_input);
  ge_prepare_ctx ip = *p;
  ip.opset = opset;
  ip.n_in = s->inner_n_in;
  if (k->prepare) {
    ge_status st = k->prepare(&ip, &s->inner_state);
    if (st != GE_OK) {
      free(s);
      return st;
    }
  }
  *state = s;
  return GE_OK;
}

static ge_status fused_post(const fused_state *s, ge_kctx *ctx, ge_tensor *Y, const ge_tensor *B,
                            const ge_tensor *S, const float *sv);

static const ge_tensor *run_input(const ge_kctx *ctx, int i) {
  return i >= 0 && (size_t)i < ctx->n_in ? ctx->in[i] : NULL;
}

/* numpy matmul: the dims of A x B (a 1-D A is a row, a 1-D B a column, that unit dim dropped
   from the product; batch dims broadcast); false when they do not fit */
static bool product_dims(const ge_tensor *A, const ge_tensor *B, int64_t *d, int32_t *rank) {
  if (!A || !B || A->rank < 1 || B->rank < 1) return false;
  int64_t m = A->rank > 1 ? A->dims[A->rank - 2] : 1, k = A->dims[A->rank - 1];
  int64_t k2 = B->rank > 1 ? B->dims[B->rank - 2] : B->dims[0], n = B->rank > 1 ? B->dims[B->rank - 1] : 1;
  if (k != k2) return false;
  ge_shape ba = {.rank = A->rank > 2 ? A->rank - 2 : 0}, bb = {.rank = B->rank > 2 ? B->rank - 2 : 0}, bo;
  memcpy(ba.dims, A->dims, (size_t)ba.rank * sizeof *ba.dims);
  memcpy(bb.dims, B->dims, (size_t)bb.rank * sizeof *bb.dims);
  if (ge_shape_broadcast(&ba, &bb, &bo) != GE_OK) return false;
  int32_t r = bo.rank;
  memcpy(d, bo.dims, (size_t)r * sizeof *d);
  if (A->rank > 1) d[r++] = m;
  if (B->rank > 1) d[r++] = n;
  *rank = r;
  return r <= GE_MAX_RANK;
}

/* FusedMatMul whose Sum broadcasts (the output is not the product's shape pd / pr, or the Sum
   not the output's): the product (+ Bias) into a temporary, then
   Y = broadcast(product) + broadcast(Sum) and the activation. */
static ge_status fused_run_bcast(const fused_state *s, ge_kctx *ctx, ge_tensor *Y, const ge_tensor *B,
                                 const ge_tensor *S, const int64_t *pd, int32_t pr) {
  ge_tensor T;
  GE_CHECK(ge_tensor_init_alloc(&T, GE_F32, pd, pr));
  ge_tensor *tout[1] = {&T};
  ge_kctx ic = *ctx;
  ic.n_in = s->inner_n_in;
  ic.out = tout;
  ic.n_out = 1;
  ge_status st = s->inner->run(s->inner_state, &ic);
  fused_state nosum = *s;
  nosum.sum_input = -1;
  nosum.act = GE_ACT_NONE;
  if (st == GE_OK) st = fused_post(&nosum, ctx, &T, B, NULL, NULL);
  ge_bcast b;
  const ge_tensor *ins[2] = {&T, S};
  if (st == GE_OK) st = ge_bcast_init(&b, Y->dims, Y->rank, ins, 2);
  if (st == GE_OK) {
    const float *t = T.data, *sv = S->data;
    float *y = Y->data;
    ge_bcast_iter it;
    ge_bcast_begin(&b, &it);
    for (size_t r = 0; r < b.rows; r++, ge_bcast_next(&b, &it)) {
      float *yr = y + r * b.inner;
      for (size_t j = 0; j < b.inner; j++)
        yr[j] = t[it.off[0] + (ptrdiff_t)j * b.step[0]] + sv[it.off[1] + (ptrdiff_t)j * b.step[1]];
    }
    apply_act(y, Y->numel, s->act, s->p0, s->p1);
  }
  ge_tensor_release_storage(&T);
  return st;
}

static ge_status fused_run(const void *state, ge_kctx *ctx) {
  const fused_state *s = state;
  ge_kctx ic = *ctx;
  ic.n_in = s->inner_n_in;
  ge_tensor *Y = ctx->out[0];
  const ge_tensor *B = run_input(ctx, s->bias_input), *S = run_input(ctx, s->sum_input);
  if (Y && S && s->sum_bcast && Y->dtype == GE_F32 && S->dtype == GE_F32) {
    int64_t pd[GE_MAX_RANK];
    int32_t pr = 0;
    if (!product_dims(ctx->in[0], ctx->in[1], pd, &pr))
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inputs 0 and 1 do not multiply");
    bool same = S->rank == Y->rank && pr == Y->rank;
    for (int32_t d = 0; same && d < Y->rank; d++) same = S->dims[d] == Y->dims[d] && pd[d] == Y->dims[d];
    if (!same) return fused_run_bcast(s, ctx, Y, B, S, pd, pr);
  }
  /* in place (the Sum input's buffer is the output's): keep the Sum values before the base op
     overwrites them */
  float *saved = NULL;
  if (Y && S && S->data == Y->data && S->nbytes) {
    saved = ge_aligned_alloc(S->nbytes);
    if (!saved) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(saved, S->data, S->nbytes);
    memset(Y->data, 0, Y->nbytes); /* the executor zeroes outputs, except one in place */
  }
  ge_status st = s->inner->run(s->inner_state, &ic);
  if (st == GE_OK && Y && Y->dtype != GE_F32)
    st = ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "output dtype %s (float32 only)", ge_dtype_name(Y->dtype));
  if (st == GE_OK && Y) st = fused_post(s, ctx, Y, B, S, saved ? saved : (S ? S->data : NULL));
  ge_aligned_free(saved);
  return st;
}

/* Y += the Bias along the last dim, += the Sum elementwise (its values sv), then the activation. */
static ge_status fused_post(const fused_state *s, ge_kctx *ctx, ge_tensor *Y, const ge_tensor *B,
                            const ge_tensor *S, const float *sv) {
  float *y = Y->data;
  if (B) {
    const float *bv = B->data;
    size_t n = Y->rank ? (size_t)Y->dims[Y->rank - 1] : 1;
    if (B->numel != n)
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input %d (Bias) has %zu entries, the output's last dim is %zu",
                          s->bias_input, B->numel, n);
    for (size_t r = 0; n && r < Y->numel / n; r++)
      for (size_t j = 0; j < n; j++) y[r * n + j] += bv[j];
  }
  if (S) {
    if (S->numel != Y->numel)
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input %d (Sum) has %zu elements, the output %zu", s->sum_input,
                          S->numel, Y->numel);
    for (size_t i = 0; i < Y->numel; i++) y[i] += sv[i];
  }
  apply_act(y, Y->numel, s->act, s->p0, s->p1);
  return GE_OK;
}

static ge_status fconv_prepare(const ge_prepare_ctx *p, void **state) {
  return fused_prepare_common(p, "Conv", 11, 3, -1, 3, state);
}
static ge_status fgemm_prepare(const ge_prepare_ctx *p, void **state) {
  return fused_prepare_common(p, "Gemm", 13, 3, -1, -1, state);
}
static ge_status fmatmul_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(fused_prepare_common(p, "MatMul", 13, 2, 2, 3, state));
  ((fused_state *)*state)->sum_bcast = true;
  return GE_OK;
}

/* ------------------------------------------------------------------ FusedConvDw */

/* The reference Conv twice: the 1x1 (a copy of the node without attributes: kernel 1x1,
   stride 1, no pads, group 1) into a whole intermediate tensor, its activation, then the
   depthwise convolution with the node's attributes and its activation. */
typedef struct convdw_state {
  const ge_kernel *k;
  void *pw, *dw;
  ge_fused_act pw_act, act;
  float pp0, pp1, p0, p1;
} convdw_state;

static void convdw_release(void *st) {
  convdw_state *s = st;
  if (!s) return;
  if (s->k && s->k->release) {
    if (s->pw) s->k->release(s->pw);
    if (s->dw) s->k->release(s->dw);
  }
  free(s);
}

static ge_status convdw_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present) GE_CHECK(ge_prepare_check_dtype(p, i, k_f32));
  if (p->n_in < 4 || !p->in[0].present || !p->in[1].present || !p->in[3].present)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "needs X, W and Wd (inputs 0, 1 and 3)");
  convdw_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->act = ge_fused_act_of(p->node, "activation", "activation_params", &s->p0, &s->p1);
  s->pw_act = ge_fused_act_of(p->node, "pw_activation", "pw_activation_params", &s->pp0, &s->pp1);
  if (s->act == GE_ACT_COUNT || s->pw_act == GE_ACT_COUNT) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown activation");
  }
  s->k = ge_cpu_find_kernel("", "Conv", 11);
  if (!s->k) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for Conv");
  }
  ge_type mid = *p->in[0].type;
  const ge_shape *w = &p->in[1].type->shape;
  if (mid.shape.rank >= 2) mid.shape.dims[1] = w->rank >= 1 ? w->dims[0] : GE_DIM_UNKNOWN;
  ge_node pwn = *p->node;
  pwn.attrs = NULL;
  pwn.n_attrs = 0;
  ge_infer_input none = {false, NULL, NULL};
  ge_infer_input pin[3] = {p->in[0], p->in[1], p->n_in > 2 ? p->in[2] : none};
  ge_infer_input din[3] = {{true, &mid, NULL}, p->in[3], p->n_in > 4 ? p->in[4] : none};
  ge_prepare_ctx pp = *p, pd = *p;
  pp.node = &pwn;
  pp.opset = pd.opset = 11;
  pp.in = pin;
  pd.in = din;
  pp.n_in = pd.n_in = 3;
  pp.out = &mid;
  pp.n_out = pd.n_out = 1;
  pp.in_layout = pp.out_layout = pd.in_layout = pd.out_layout = NULL;
  ge_status st = s->k->prepare ? s->k->prepare(&pp, &s->pw) : GE_OK;
  if (st == GE_OK && s->k->prepare) st = s->k->prepare(&pd, &s->dw);
  if (st != GE_OK) {
    convdw_release(s);
    return st;
  }
  *state = s;
  return GE_OK;
}

static ge_status convdw_run(const void *state, ge_kctx *ctx) {
  const convdw_state *s = state;
  const ge_tensor *X = ctx->in[0], *W = ctx->in[1];
  ge_tensor *Y = ctx->out[0];
  if (!Y) return GE_OK;
  if (X->rank < 3 || W->rank != X->rank)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "X has rank %d and W %d (need an image and a 1x1 kernel)", X->rank, W->rank);
  int64_t dims[GE_MAX_RANK];
  memcpy(dims, X->dims, sizeof(int64_t) * (size_t)X->rank);
  dims[1] = W->dims[0];
  ge_tensor mid;
  GE_CHECK(ge_tensor_init_alloc(&mid, GE_F32, dims, X->rank));
  ge_tensor *in1[3] = {(ge_tensor *)X, (ge_tensor *)W, ctx->n_in > 2 ? ctx->in[2] : NULL};
  ge_tensor *out1[1] = {&mid};
  ge_tensor *in2[3] = {&mid, ctx->in[3], ctx->n_in > 4 ? ctx->in[4] : NULL};
  ge_kctx c1 = *ctx, c2 = *ctx;
  c1.in = in1;
  c2.in = in2;
  c1.n_in = c2.n_in = 3;
  c1.out = out1;
  c1.n_out = c2.n_out = 1;
  ge_status st = s->k->run(s->pw, &c1);
  if (st == GE_OK) {
    apply_act(mid.data, mid.numel, s->pw_act, s->pp0, s->pp1);
    st = s->k->run(s->dw, &c2);
  }
  if (st == GE_OK) apply_act(Y->data, Y->numel, s->act, s->p0, s->p1);
  ge_tensor_release_storage(&mid);
  return st;
}

/* ------------------------------------------------------------------ LayerNormalization */

typedef struct ln_state {
  int64_t axis;
  float eps;
} ln_state;

static ge_status ln_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present) GE_CHECK(ge_prepare_check_dtype(p, i, k_f32));
  ln_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", -1);
  s->eps = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  *state = s;
  return GE_OK;
}

static ge_status ln_run(const void *state, ge_kctx *ctx) {
  const ln_state *s = state;
  const ge_tensor *X = ctx->in[0];
  const ge_tensor *Sc = ctx->n_in > 1 ? ctx->in[1] : NULL, *Bi = ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *Y = ctx->out[0];
  int64_t axis = s->axis < 0 ? s->axis + X->rank : s->axis;
  if (axis < 0 || axis >= X->rank)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)s->axis, X->rank);
  size_t inner = 1;
  for (int32_t d = (int32_t)axis; d < X->rank; d++) inner *= (size_t)X->dims[d];
  if (Sc && Sc->numel != inner)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 1 (Scale) has %zu elements, the normalized size is %zu", Sc->numel, inner);
  if (Bi && Bi->numel != inner)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 2 (Bias) has %zu elements, the normalized size is %zu", Bi->numel, inner);
  if (!inner) return GE_OK;
  size_t outer = X->numel / inner;
  const float *x = X->data, *sc = Sc ? Sc->data : NULL, *bi = Bi ? Bi->data : NULL;
  float *y = Y->data;
  for (size_t o = 0; o < outer; o++) {
    const float *xr = x + o * inner;
    float *yr = y + o * inner;
    double mean = 0, var = 0;
    for (size_t i = 0; i < inner; i++) mean += xr[i];
    mean /= (double)inner;
    for (size_t i = 0; i < inner; i++) {
      double d = xr[i] - mean;
      var += d * d;
    }
    var /= (double)inner;
    float m = (float)mean, rs = (float)(1.0 / sqrt(var + s->eps));
    for (size_t i = 0; i < inner; i++) {
      float v = (xr[i] - m) * rs;
      if (sc) v *= sc[i];
      if (bi) v += bi[i];
      yr[i] = v;
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ Gelu */

static ge_status gelu_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_f32));
  const char *a = ge_node_attr_string(p->node, "approximate", "none");
  ge_fused_act *s = malloc(sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  *s = !strcmp(a, "tanh") ? GE_ACT_GELU_TANH : GE_ACT_GELU;
  *state = s;
  return GE_OK;
}

static ge_status gelu_run(const void *state, ge_kctx *ctx) {
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (X->numel != Y->numel) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output size differs from input size");
  if (X->numel) memcpy(Y->data, X->data, X->numel * sizeof(float));
  apply_act(Y->data, Y->numel, *(const ge_fused_act *)state, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ Attention */

typedef struct attn_state {
  float scale;
} attn_state;

static ge_status attn_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype k_bool[] = {GE_BOOL, GE_DTYPE_COUNT};
  bool select = ge_node_attr_int(p->node, "mask_mode", GE_ATTN_MASK_ADD) == GE_ATTN_MASK_SELECT;
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present) GE_CHECK(ge_prepare_check_dtype(p, i, i == 3 && select ? k_bool : k_f32));
  attn_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->scale = ge_node_attr_float(p->node, "scale", 1.0f);
  *state = s;
  return GE_OK;
}

static ge_status attn_run(const void *state, ge_kctx *ctx) {
  const attn_state *s = state;
  const ge_tensor *Q = ctx->in[0], *K = ctx->in[1], *V = ctx->in[2];
  const ge_tensor *Mk = ctx->n_in > 3 ? ctx->in[3] : NULL;
  ge_tensor *Y = ctx->out[0];
  ge_attn_geom geo;
  GE_CHECK(ge_attn_geom_init(ctx, &geo));
  const size_t M = geo.M, N = geo.N, D = geo.D, Dv = geo.Dv, batch = geo.batch;
  const size_t m_row = geo.m_row, m_col = geo.m_col;
  const int32_t rb = geo.rb;
  const int64_t *ob = geo.ob;
  const size_t *qs = geo.qs, *ks = geo.ks, *vs = geo.vs, *ys = geo.ys, *ms = geo.ms;
  /* KT plain ([D x N] rows of stride k_rs) or stored as K [N x D] (rows of stride k_cs) */
  const bool kt_t = (geo.layout & GE_ATTN_LAYOUT_KT) != 0;
  if (!M || !Dv || !batch) return GE_OK;
  if (!N) {
    memset(Y->data, 0, Y->nbytes);
    return GE_OK;
  }
  size_t nmn = 0;
  if (ge_mul_overflow_size(M, N, &nmn)) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "scores too large");
  float *sc = ge_aligned_alloc(nmn * sizeof(float));
  if (!sc) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory for %zu x %zu scores", M, N);
  const float *q = Q->data, *k = K->data, *v = V->data;
  const float *mk = Mk && !geo.select ? Mk->data : NULL;
  const uint8_t *cond = Mk && geo.select ? Mk->data : NULL; /* bool: nonzero = keep */
  const float fill = geo.fill;
  float *y = Y->data;
  ge_status st = GE_OK;
  for (size_t b = 0; b < batch && st == GE_OK; b++) {
    size_t qo = 0, ko = 0, vo = 0, yo = 0, mo = 0, rem = b;
    for (int32_t d = rb - 1; d >= 0; d--) {
      size_t i = rem % (size_t)ob[d];
      rem /= (size_t)ob[d];
      qo += i * qs[d];
      ko += i * ks[d];
      vo += i * vs[d];
      yo += i * ys[d];
      mo += i * ms[d];
    }
    st = ge_sgemm(false, kt_t, M, N, D, s->scale, q + qo, geo.q_rs, k + ko, kt_t ? geo.k_cs : geo.k_rs, 0.f, sc,
                  N, ctx->threads);
    if (st != GE_OK) break;
    for (size_t i = 0; i < M; i++) {
      float *row = sc + i * N;
      if (mk) {
        const float *mr = mk + mo + i * m_row;
        for (size_t j = 0; j < N; j++) row[j] += mr[j * m_col];
      } else if (cond) {
        /* Where(cond, scores, fill): a fully masked row is all fill (uniform, NaN for -inf) */
        const uint8_t *cr = cond + mo + i * m_row;
        for (size_t j = 0; j < N; j++)
          if (!cr[j * m_col]) row[j] = fill;
      }
      float mx = -INFINITY;
      for (size_t j = 0; j < N; j++) mx = row[j] > mx ? row[j] : mx;
      if (mx == -INFINITY) { /* fully masked row: NaN, as Softmax of all -inf gives */
        for (size_t j = 0; j < N; j++) row[j] = NAN;
        continue;
      }
      float sum = 0.f;
      for (size_t j = 0; j < N; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
      }
      float inv = 1.f / sum;
      for (size_t j = 0; j < N; j++) row[j] *= inv;
    }
    st = ge_sgemm(false, false, M, Dv, N, 1.f, sc, N, v + vo, geo.v_rs, 0.f, y + yo, geo.y_rs, ctx->threads);
  }
  ge_aligned_free(sc);
  return st;
}

const ge_kernel_def ge_ref_kernels_fused[] = {
    {GE_FUSED_DOMAIN, "FusedConv", 1, 0, {fconv_prepare, fused_run, fused_release, false, false, 1u << 3}},
    {GE_FUSED_DOMAIN, "FusedConvDw", 1, 0, {convdw_prepare, convdw_run, convdw_release, false}},
    {GE_FUSED_DOMAIN, "FusedGemm", 1, 0, {fgemm_prepare, fused_run, fused_release, false}},
    {GE_FUSED_DOMAIN, "FusedMatMul", 1, 0, {fmatmul_prepare, fused_run, fused_release, false, false, 1u << 3}},
    {GE_FUSED_DOMAIN, "LayerNormalization", 1, 0, {ln_prepare, ln_run, free, false}},
    {GE_FUSED_DOMAIN, "Gelu", 1, 0, {gelu_prepare, gelu_run, free, false}},
    {GE_FUSED_DOMAIN, "Attention", 1, 0, {attn_prepare, attn_run, free, false}},
    {0},
};
