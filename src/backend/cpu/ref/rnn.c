/* Reference CPU kernels of the rnn family: RNN, GRU, LSTM (every direction, layout 0/1,
 * sequence_lens, initial states, peepholes, clip, input_forget, activations).
 * Computes in float32: the input projection of all time steps is one sgemm, each step one
 * (GRU without linear_before_reset: two) sgemm of the hidden state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/ref/qrs_util.h"

typedef enum act_kind {
  ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU,
  ACT_SCALEDTANH, ACT_HARDSIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS
} act_kind;

typedef struct act {
  act_kind kind;
  float alpha, beta;
} act;

enum { K_RNN, K_GRU, K_LSTM };

typedef struct rnn_state {
  int kind;
  int gates;      /* 1, 3, 4 */
  int nd;         /* directions */
  bool reverse;   /* single direction, reversed */
  int64_t layout;
  int64_t hidden; /* -1: from W */
  bool has_clip;
  float clip;
  bool input_forget;
  bool lbr;       /* GRU linear_before_reset */
  act acts[2][3]; /* per direction: f, g, h */
} rnn_state;

static bool act_lookup(const char *name, act_kind *k, bool *takes_alpha, bool *takes_beta,
                       float *da, float *db) {
  static const struct { const char *n; act_kind k; int np; float a, b; } tab[] = {
      {"Sigmoid", ACT_SIGMOID, 0, 0, 0},       {"Tanh", ACT_TANH, 0, 0, 0},
      {"Relu", ACT_RELU, 0, 0, 0},             {"Affine", ACT_AFFINE, 2, 1.0f, 0.0f},
      {"LeakyRelu", ACT_LEAKYRELU, 1, 0.01f, 0}, {"ThresholdedRelu", ACT_THRESHOLDEDRELU, 1, 1.0f, 0},
      {"ScaledTanh", ACT_SCALEDTANH, 2, 1.0f, 1.0f}, {"HardSigmoid", ACT_HARDSIGMOID, 2, 0.2f, 0.5f},
      {"Elu", ACT_ELU, 1, 1.0f, 0},            {"Softsign", ACT_SOFTSIGN, 0, 0, 0},
      {"Softplus", ACT_SOFTPLUS, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (!strcmp(name, tab[i].n)) {
      *k = tab[i].k;
      *takes_alpha = tab[i].np >= 1;
      *takes_beta = tab[i].np >= 2;
      *da = tab[i].a;
      *db = tab[i].b;
      return true;
    }
  return false;
}

static ge_status rnn_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype ft[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, ft));
  const ge_node *n = p->node;
  rnn_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->kind = !strcmp(n->op_type, "LSTM") ? K_LSTM : !strcmp(n->op_type, "GRU") ? K_GRU : K_RNN;
  s->gates = s->kind == K_LSTM ? 4 : s->kind == K_GRU ? 3 : 1;
  const char *dir = ge_node_attr_string(n, "direction", "forward");
  s->nd = !strcmp(dir, "bidirectional") ? 2 : 1;
  s->reverse = !strcmp(dir, "reverse");
  s->layout = p->opset >= 14 ? ge_node_attr_int(n, "layout", 0) : 0;
  s->hidden = ge_node_attr_int(n, "hidden_size", -1);
  const ge_attr_value *cl = ge_node_attr(n, "clip");
  s->has_clip = cl != NULL;
  s->clip = cl ? cl->f : 0.0f;
  if (s->has_clip && !(s->clip > 0.0f)) {
    float cv = s->clip;
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "clip must be > 0, got %g", (double)cv);
  }
  s->input_forget = s->kind == K_LSTM && ge_node_attr_int(n, "input_forget", 0) != 0;
  s->lbr = s->kind == K_GRU && ge_node_attr_int(n, "linear_before_reset", 0) != 0;
  int per = s->kind == K_LSTM ? 3 : s->kind == K_GRU ? 2 : 1;
  static const act_kind defaults[3][3] = {{ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
  const act_kind *dflt = defaults[s->kind == K_LSTM ? 2 : s->kind == K_GRU ? 1 : 0];
  const ge_attr_value *an = ge_node_attr(n, "activations");
  const float *alphas = NULL, *betas = NULL;
  size_t na = 0, nb = 0, ia = 0, ib = 0;
  ge_node_attr_floats(n, "activation_alpha", &alphas, &na);
  ge_node_attr_floats(n, "activation_beta", &betas, &nb);
  if (an && an->n != (size_t)(per * s->nd) && an->n != (size_t)per) {
    int want = per * s->nd;
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "activations has %zu entries, expected %d",
                           an->n, want);
  }
  for (int d = 0; d < s->nd; d++)
    for (int k = 0; k < per; k++) {
      act *a = &s->acts[d][k];
      if (!an) {
        a->kind = dflt[k];
        continue;
      }
      size_t idx = an->n == (size_t)per ? (size_t)k : (size_t)(d * per + k);
      bool ta, tb;
      float da, db;
      if (!act_lookup(an->strings[idx], &a->kind, &ta, &tb, &da, &db)) {
        free(s);
        return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "activation '%s' is not supported", an->strings[idx]);
      }
      a->alpha = ta && ia < na ? alphas[ia++] : da;
      a->beta = tb && ib < nb ? betas[ib++] : db;
    }
  *state = s;
  return GE_OK;
}

static void apply_act(const act *a, float *v, size_t n) {
  float al = a->alpha, be = a->beta;
  switch (a->kind) {
    case ACT_SIGMOID:
      for (size_t i = 0; i < n; i++) v[i] = 1.0f / (1.0f + expf(-v[i]));
      break;
    case ACT_TANH:
      for (size_t i = 0; i < n; i++) v[i] = tanhf(v[i]);
      break;
    case ACT_RELU:
      for (size_t i = 0; i < n; i++) v[i] = v[i] > 0 ? v[i] : 0;
      break;
    case ACT_AFFINE:
      for (size_t i = 0; i < n; i++) v[i] = al * v[i] + be;
      break;
    case ACT_LEAKYRELU:
      for (size_t i = 0; i < n; i++) v[i] = v[i] >= 0 ? v[i] : al * v[i];
      break;
    case ACT_THRESHOLDEDRELU:
      for (size_t i = 0; i < n; i++) v[i] = v[i] > al ? v[i] : 0;
      break;
    case ACT_SCALEDTANH:
      for (size_t i = 0; i < n; i++) v[i] = al * tanhf(be * v[i]);
      break;
    case ACT_HARDSIGMOID:
      for (size_t i = 0; i < n; i++) {
        float x = al * v[i] + be;
        v[i] = x < 0 ? 0 : x > 1 ? 1 : x;
      }
      break;
    case ACT_ELU:
      for (size_t i = 0; i < n; i++) v[i] = v[i] >= 0 ? v[i] : al * (expf(v[i]) - 1.0f);
      break;
    case ACT_SOFTSIGN:
      for (size_t i = 0; i < n; i++) v[i] = v[i] / (1.0f + fabsf(v[i]));
      break;
    case ACT_SOFTPLUS:
      for (size_t i = 0; i < n; i++) v[i] = v[i] > 20.0f ? v[i] : log1pf(expf(v[i]));
      break;
  }
}

static void clip_vec(const rnn_state *s, float *v, size_t n) {
  if (!s->has_clip) return;
  float c = s->clip;
  for (size_t i = 0; i < n; i++) v[i] = v[i] < -c ? -c : v[i] > c ? c : v[i];
}

static bool check_dims(const ge_tensor *t, int32_t rank, const int64_t *want) {
  if (t->rank != rank) return false;
  for (int32_t i = 0; i < rank; i++)
    if (t->dims[i] != want[i]) return false;
  return true;
}

static ge_status rnn_run(const void *state, ge_kctx *ctx) {
  const rnn_state *s = state;
  const ge_tensor *X = ctx->in[0], *Wt = ctx->in[1], *Rt = ctx->in[2];
  const ge_tensor *Bt = ctx->n_in > 3 ? ctx->in[3] : NULL;
  const ge_tensor *SL = ctx->n_in > 4 ? ctx->in[4] : NULL;
  const ge_tensor *H0 = ctx->n_in > 5 ? ctx->in[5] : NULL;
  const ge_tensor *C0 = s->kind == K_LSTM && ctx->n_in > 6 ? ctx->in[6] : NULL;
  const ge_tensor *Pt = s->kind == K_LSTM && ctx->n_in > 7 ? ctx->in[7] : NULL;
  if (X->rank != 3 || Wt->rank != 3 || Rt->rank != 3)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "X, W and R must have rank 3");
  size_t T = (size_t)X->dims[s->layout ? 1 : 0], Bn = (size_t)X->dims[s->layout ? 0 : 1];
  size_t I = (size_t)X->dims[2];
  size_t G = (size_t)s->gates, ND = (size_t)s->nd;
  size_t H = s->hidden >= 0 ? (size_t)s->hidden : (size_t)Wt->dims[1] / G;
  size_t GH = G * H;
  if (!check_dims(Wt, 3, (int64_t[]){(int64_t)ND, (int64_t)GH, (int64_t)I}))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "W must be [%zu, %zu, %zu]", ND, GH, I);
  if (!check_dims(Rt, 3, (int64_t[]){(int64_t)ND, (int64_t)GH, (int64_t)H}))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "R must be [%zu, %zu, %zu]", ND, GH, H);
  if (Bt && !check_dims(Bt, 2, (int64_t[]){(int64_t)ND, (int64_t)(2 * GH)}))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "B must be [%zu, %zu]", ND, 2 * GH);
  if (SL && (SL->rank != 1 || (size_t)SL->dims[0] != Bn))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "sequence_lens must be [%zu]", Bn);
  int64_t hdims[3];
  if (s->layout) { hdims[0] = (int64_t)Bn; hdims[1] = (int64_t)ND; }
  else { hdims[0] = (int64_t)ND; hdims[1] = (int64_t)Bn; }
  hdims[2] = (int64_t)H;
  if (H0 && !check_dims(H0, 3, hdims))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "initial_h has the wrong shape");
  if (C0 && !check_dims(C0, 3, hdims))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "initial_c has the wrong shape");
  if (Pt && !check_dims(Pt, 2, (int64_t[]){(int64_t)ND, (int64_t)(3 * H)}))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "P must be [%zu, %zu]", ND, 3 * H);

  ge_status st = GE_OK;
  size_t TB = T * Bn;
  float *x = ge_qrs_alloc(ctx, TB * I + 1, sizeof(float));
  float *w = ge_qrs_alloc(ctx, Wt->numel + 1, sizeof(float));
  float *r = ge_qrs_alloc(ctx, Rt->numel + 1, sizeof(float));
  float *b = ge_qrs_alloc(ctx, ND * 2 * GH + 1, sizeof(float));
  float *p = ge_qrs_alloc(ctx, ND * 3 * H + 1, sizeof(float));
  float *xw = ge_qrs_alloc(ctx, TB * GH + 1, sizeof(float));
  float *hr = ge_qrs_alloc(ctx, Bn * GH + 1, sizeof(float));
  float *rh = ge_qrs_alloc(ctx, Bn * H * 2 + 1, sizeof(float));
  float *y = ge_qrs_alloc(ctx, T * ND * Bn * H + 1, sizeof(float));
  float *hs = ge_qrs_alloc(ctx, ND * Bn * H + 1, sizeof(float));
  float *cs = ge_qrs_alloc(ctx, ND * Bn * H + 1, sizeof(float));
  float *gt = ge_qrs_alloc(ctx, GH + 1, sizeof(float));
  int32_t *len = ge_qrs_alloc(ctx, Bn + 1, sizeof(int32_t));
  size_t ntmp = X->numel > T * ND * Bn * H ? X->numel : T * ND * Bn * H;
  if (H0 && H0->numel > ntmp) ntmp = H0->numel;
  if (C0 && C0->numel > ntmp) ntmp = C0->numel;
  float *tmp = ge_qrs_alloc(ctx, ntmp + 1, sizeof(float));
  if (!x || !w || !r || !b || !p || !xw || !hr || !rh || !y || !hs || !cs || !gt || !len || !tmp) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  /* X as [T, B, I] */
  if (s->layout) {
    ge_qrs_to_f32(X->dtype, X->data, tmp, X->numel);
    for (size_t bb = 0; bb < Bn; bb++)
      for (size_t t = 0; t < T; t++) memcpy(x + (t * Bn + bb) * I, tmp + (bb * T + t) * I, I * sizeof *x);
  } else {
    ge_qrs_to_f32(X->dtype, X->data, x, X->numel);
  }
  ge_qrs_to_f32(Wt->dtype, Wt->data, w, Wt->numel);
  ge_qrs_to_f32(Rt->dtype, Rt->data, r, Rt->numel);
  if (Bt) ge_qrs_to_f32(Bt->dtype, Bt->data, b, Bt->numel);
  else memset(b, 0, ND * 2 * GH * sizeof *b);
  if (Pt) ge_qrs_to_f32(Pt->dtype, Pt->data, p, Pt->numel);
  else memset(p, 0, ND * 3 * H * sizeof *p);
  for (size_t bb = 0; bb < Bn; bb++) len[bb] = (int32_t)T;
  if (SL) {
    ge_qrs_to_i32(SL->dtype, SL->data, len, Bn);
    for (size_t bb = 0; bb < Bn; bb++)
      if (len[bb] < 0 || (size_t)len[bb] > T) {
        st = ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "sequence_lens[%zu] = %d is outside [0, %zu]",
                          bb, (int)len[bb], T);
        goto done;
      }
  }
  /* initial states as [ND, B, H] */
  memset(hs, 0, ND * Bn * H * sizeof *hs);
  memset(cs, 0, ND * Bn * H * sizeof *cs);
  for (int which = 0; which < 2; which++) {
    const ge_tensor *t0 = which ? C0 : H0;
    float *dst = which ? cs : hs;
    if (!t0) continue;
    ge_qrs_to_f32(t0->dtype, t0->data, tmp, t0->numel);
    for (size_t d = 0; d < ND; d++)
      for (size_t bb = 0; bb < Bn; bb++)
        memcpy(dst + (d * Bn + bb) * H, tmp + (s->layout ? (bb * ND + d) : (d * Bn + bb)) * H, H * sizeof *dst);
  }
  memset(y, 0, T * ND * Bn * H * sizeof *y);

  for (size_t d = 0; d < ND; d++) {
    bool rev = s->nd == 2 ? d == 1 : s->reverse;
    const act *fa = &s->acts[d][0], *ga = &s->acts[d][1], *ha = &s->acts[d][2];
    const float *wd = w + d * GH * I, *rd = r + d * GH * H, *wb = b + d * 2 * GH, *rb = wb + GH;
    const float *pd = p + d * 3 * H;
    float *hd = hs + d * Bn * H, *cd = cs + d * Bn * H;
    if (TB) {
      st = ge_sgemm(false, true, TB, GH, I, 1.0f, x, I, wd, I, 0.0f, xw, GH, ctx->threads);
      if (st != GE_OK) goto done;
    }
    size_t hgate = 2 * H; /* GRU h gate offset */
    for (size_t row = 0; row < TB; row++) {
      float *xr = xw + row * GH;
      for (size_t j = 0; j < GH; j++) xr[j] += wb[j];
      size_t rlim = s->kind == K_GRU && s->lbr ? hgate : GH;
      for (size_t j = 0; j < rlim; j++) xr[j] += rb[j];
    }
    for (size_t step = 0; step < T; step++) {
      if (Bn) {
        st = ge_sgemm(false, true, Bn, GH, H, 1.0f, hd, H, rd, H, 0.0f, hr, GH, ctx->threads);
        if (st != GE_OK) goto done;
      }
      if (s->kind == K_GRU && !s->lbr) {
        /* r gate needed before (r . H) R_h^T */
        for (size_t bb = 0; bb < Bn; bb++) {
          if (step >= (size_t)len[bb]) continue;
          size_t t = rev ? (size_t)len[bb] - 1 - step : step;
          const float *xr = xw + (t * Bn + bb) * GH;
          float *rg = rh + bb * H;
          for (size_t j = 0; j < H; j++) rg[j] = xr[H + j] + hr[bb * GH + H + j];
          clip_vec(s, rg, H);
          apply_act(fa, rg, H);
          for (size_t j = 0; j < H; j++) rg[j] *= hd[bb * H + j];
        }
        if (Bn) {
          st = ge_sgemm(false, true, Bn, H, H, 1.0f, rh, H, rd + hgate * H, H, 0.0f, rh + Bn * H, H,
                        ctx->threads);
          if (st != GE_OK) goto done;
        }
      }
      for (size_t bb = 0; bb < Bn; bb++) {
        if (step >= (size_t)len[bb]) continue;
        size_t t = rev ? (size_t)len[bb] - 1 - step : step;
        const float *xr = xw + (t * Bn + bb) * GH;
        const float *hrr = hr + bb * GH;
        float *hb = hd + bb * H, *cb = cd + bb * H;
        for (size_t j = 0; j < GH; j++) gt[j] = xr[j] + hrr[j];
        if (s->kind == K_RNN) {
          clip_vec(s, gt, H);
          apply_act(fa, gt, H);
          memcpy(hb, gt, H * sizeof *hb);
        } else if (s->kind == K_GRU) {
          float *z = gt, *rg = gt + H, *hh = gt + 2 * H;
          clip_vec(s, z, 2 * H);
          apply_act(fa, z, 2 * H);
          if (s->lbr) {
            for (size_t j = 0; j < H; j++) hh[j] = xr[hgate + j] + rg[j] * (hrr[hgate + j] + rb[hgate + j]);
          } else {
            const float *q = rh + Bn * H + bb * H;
            for (size_t j = 0; j < H; j++) hh[j] = xr[hgate + j] + q[j];
          }
          clip_vec(s, hh, H);
          apply_act(ga, hh, H);
          for (size_t j = 0; j < H; j++) hb[j] = (1.0f - z[j]) * hh[j] + z[j] * hb[j];
        } else {
          float *ig = gt, *og = gt + H, *fg = gt + 2 * H, *cg = gt + 3 * H;
          const float *pi = pd, *po = pd + H, *pf = pd + 2 * H;
          for (size_t j = 0; j < H; j++) {
            ig[j] += pi[j] * cb[j];
            fg[j] += pf[j] * cb[j];
          }
          clip_vec(s, ig, H);
          apply_act(fa, ig, H);
          if (s->input_forget) {
            for (size_t j = 0; j < H; j++) fg[j] = 1.0f - ig[j];
          } else {
            clip_vec(s, fg, H);
            apply_act(fa, fg, H);
          }
          clip_vec(s, cg, H);
          apply_act(ga, cg, H);
          for (size_t j = 0; j < H; j++) cb[j] = fg[j] * cb[j] + ig[j] * cg[j];
          for (size_t j = 0; j < H; j++) og[j] += po[j] * cb[j];
          clip_vec(s, og, H);
          apply_act(fa, og, H);
          memcpy(ig, cb, H * sizeof *ig); /* reuse ig as h(C) */
          apply_act(ha, ig, H);
          for (size_t j = 0; j < H; j++) hb[j] = og[j] * ig[j];
        }
        memcpy(y + ((t * ND + d) * Bn + bb) * H, hb, H * sizeof *hb);
      }
    }
  }
  /* outputs */
  ge_tensor *Y = ctx->out[0], *YH = ctx->n_out > 1 ? ctx->out[1] : NULL;
  ge_tensor *YC = ctx->n_out > 2 ? ctx->out[2] : NULL;
  if (Y) {
    if (s->layout) {
      for (size_t t = 0; t < T; t++)
        for (size_t d = 0; d < ND; d++)
          for (size_t bb = 0; bb < Bn; bb++)
            memcpy(tmp + ((bb * T + t) * ND + d) * H, y + ((t * ND + d) * Bn + bb) * H, H * sizeof *tmp);
      ge_qrs_from_f32(Y->dtype, tmp, Y->data, T * ND * Bn * H);
    } else {
      ge_qrs_from_f32(Y->dtype, y, Y->data, T * ND * Bn * H);
    }
  }
  for (int which = 0; which < 2; which++) {
    ge_tensor *o = which ? YC : YH;
    const float *src = which ? cs : hs;
    if (!o) continue;
    if (s->layout) {
      for (size_t d = 0; d < ND; d++)
        for (size_t bb = 0; bb < Bn; bb++)
          memcpy(y + (bb * ND + d) * H, src + (d * Bn + bb) * H, H * sizeof *y);
      src = y;
    }
    ge_qrs_from_f32(o->dtype, src, o->data, ND * Bn * H);
  }
done:
  free(x); free(w); free(r); free(b); free(p); free(xw); free(hr); free(rh);
  free(y); free(hs); free(cs); free(gt); free(len); free(tmp);
  return st;
}

const ge_kernel_def ge_ref_kernels_rnn[] = {
    {"", "RNN", 7, 0, {rnn_prepare, rnn_run, free, false}},
    {"", "GRU", 7, 0, {rnn_prepare, rnn_run, free, false}},
    {"", "LSTM", 7, 0, {rnn_prepare, rnn_run, free, false}},
    {0},
};
