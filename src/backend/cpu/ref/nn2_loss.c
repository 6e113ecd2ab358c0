/* Reference CPU kernels of the nn2 family: NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss, the ai.onnx.preview.training optimizers (Adagrad, Adam, Momentum)
 * and DeformConv (2-D).  Arithmetic in float64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/nn2_kernels.h"
#include "backend/cpu/ref/nn_util.h"

#define END GE_DTYPE_COUNT

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};
static const ge_dtype k_index[] = {GE_I32, GE_I64, END};

/* ------------------------------------------------------------------ losses */

enum { RED_NONE, RED_SUM, RED_MEAN };

typedef struct loss_state {
  int red;
  bool has_ii;
  int64_t ii;
} loss_state;

static ge_status loss_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  GE_CHECK(ge_prepare_check_dtype(p, 1, k_index));
  const char *red = ge_node_attr_string(p->node, "reduction", "mean");
  loss_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  if (!strcmp(red, "none")) s->red = RED_NONE;
  else if (!strcmp(red, "sum")) s->red = RED_SUM;
  else if (!strcmp(red, "mean")) s->red = RED_MEAN;
  else {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "reduction '%s' is not none, sum or mean", red);
  }
  s->has_ii = ge_node_attr(p->node, "ignore_index") != NULL;
  s->ii = ge_node_attr_int(p->node, "ignore_index", 0);
  *state = s;
  return GE_OK;
}

ge_status ge_nn2_nll_prepare(const ge_prepare_ctx *p, void **state) { return loss_prepare(p, state); }
ge_status ge_nn2_sce_prepare(const ge_prepare_ctx *p, void **state) { return loss_prepare(p, state); }

/* lp: log-probabilities [N, C, D]; writes the loss output. */
static ge_status nll_core(const loss_state *s, ge_kctx *c, const double *lp, const ge_tensor *X,
                          const ge_tensor *Tg, const ge_tensor *Wt) {
  int64_t N = X->dims[0], C = X->dims[1];
  size_t D = ge_nn_prod(X->dims, 2, X->rank);
  if (Tg->rank != X->rank - 1 || Tg->numel != (size_t)N * D)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 1 (target) must have shape [N, d1, ...] of input 0 (%zu elements), has %zu",
                        (size_t)N * D, Tg->numel);
  if (Wt && (Wt->rank != 1 || Wt->dims[0] != C))
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 2 (weight) must be [C=%lld]", (long long)C);
  ge_tensor *O = c->out[0];
  ge_status st = GE_OK;
  ge_dbuf w = {0}, o = {0};
  if (Wt && (st = ge_nn_load_f64(c, Wt, &w))) return st;
  if ((st = ge_nn_out_f64(c, O, &o))) goto done;
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; n++)
    for (size_t d = 0; d < D; d++) {
      size_t ti = (size_t)n * D + d;
      int64_t t = ge_tensor_get_i64(Tg, ti);
      double l = 0, wt = 0;
      if (!(s->has_ii && t == s->ii)) {
        if (t < 0 || t >= C) {
          st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "target[%zu] = %lld is outside [0, %lld)", ti,
                            (long long)t, (long long)C);
          goto done;
        }
        wt = Wt ? w.p[t] : 1.0;
        l = -lp[((size_t)n * (size_t)C + (size_t)t) * D + d] * wt;
      }
      if (s->red == RED_NONE) o.p[ti] = l;
      sum += l;
      wsum += wt;
    }
  if (s->red == RED_SUM) o.p[0] = sum;
  if (s->red == RED_MEAN) o.p[0] = sum / wsum;
  ge_nn_store_f64(O, &o);
done:
  ge_dbuf_free(&w);
  ge_dbuf_free(&o);
  return st;
}

static ge_status loss_check(ge_kctx *c, const ge_tensor *X) {
  if (X->rank < 2) return ge_kctx_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 2 (N, C, ...), got %d", X->rank);
  return GE_OK;
}

ge_status ge_nn2_nll_run(const void *state, ge_kctx *c) {
  const ge_tensor *X = c->in[0];
  GE_CHECK(loss_check(c, X));
  ge_dbuf x = {0};
  GE_CHECK(ge_nn_load_f64(c, X, &x));
  ge_status st = nll_core(state, c, x.p, X, c->in[1], c->n_in > 2 ? c->in[2] : NULL);
  ge_dbuf_free(&x);
  return st;
}

ge_status ge_nn2_sce_run(const void *state, ge_kctx *c) {
  const ge_tensor *X = c->in[0];
  GE_CHECK(loss_check(c, X));
  int64_t N = X->dims[0], C = X->dims[1];
  size_t D = ge_nn_prod(X->dims, 2, X->rank);
  ge_dbuf x = {0}, lp = {0};
  ge_status st = ge_nn_load_f64(c, X, &x);
  if (st) return st;
  ge_tensor *LP = c->n_out > 1 ? c->out[1] : NULL;
  double *buf = NULL;
  if (LP) {
    if ((st = ge_nn_out_f64(c, LP, &lp))) goto done;
  } else {
    buf = ge_nn2_dalloc(c, X->numel);
    if (!buf) {
      st = GE_ERR_OUT_OF_MEMORY;
      goto done;
    }
  }
  double *l = LP ? lp.p : buf;
  for (int64_t n = 0; n < N; n++)
    for (size_t d = 0; d < D; d++) {
      const double *xr = x.p + (size_t)n * (size_t)C * D + d;
      double *lr = l + (size_t)n * (size_t)C * D + d;
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < C; k++)
        if (xr[(size_t)k * D] > mx) mx = xr[(size_t)k * D];
      for (int64_t k = 0; k < C; k++) sum += exp(xr[(size_t)k * D] - mx);
      double ls = log(sum);
      for (int64_t k = 0; k < C; k++) lr[(size_t)k * D] = xr[(size_t)k * D] - mx - ls;
    }
  st = nll_core(state, c, l, X, c->in[1], c->n_in > 2 ? c->in[2] : NULL);
  if (st == GE_OK && LP) ge_nn_store_f64(LP, &lp);
done:
  ge_dbuf_free(&x);
  ge_dbuf_free(&lp);
  free(buf);
  return st;
}

/* ------------------------------------------------------------------ optimizers */

enum { OPT_ADAGRAD, OPT_MOMENTUM, OPT_ADAM };

typedef struct opt_state {
  int kind;
  bool nesterov;
  double alpha, beta, eps, norm, norm_post, decay;
} opt_state;

ge_status ge_nn2_optim_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  opt_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  const char *op = p->node->op_type;
  s->norm = ge_node_attr_float(p->node, "norm_coefficient", 0.0f);
  if (!strcmp(op, "Adagrad")) {
    s->kind = OPT_ADAGRAD;
    s->decay = ge_node_attr_float(p->node, "decay_factor", 0.0f);
    s->eps = ge_node_attr_float(p->node, "epsilon", 1e-6f);
  } else if (!strcmp(op, "Momentum")) {
    s->kind = OPT_MOMENTUM;
    const char *mode = ge_node_attr_string(p->node, "mode", "standard");
    s->nesterov = !strcmp(mode, "nesterov");
    if (!s->nesterov && strcmp(mode, "standard")) {
      free(s);
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "mode '%s' is not standard or nesterov", mode);
    }
    s->alpha = ge_node_attr_float(p->node, "alpha", 0.0f);
    s->beta = ge_node_attr_float(p->node, "beta", 0.0f);
  } else {
    s->kind = OPT_ADAM;
    s->alpha = ge_node_attr_float(p->node, "alpha", 0.9f);
    s->beta = ge_node_attr_float(p->node, "beta", 0.999f);
    s->eps = ge_node_attr_float(p->node, "epsilon", 1e-6f);
    s->norm_post = ge_node_attr_float(p->node, "norm_coefficient_post", 0.0f);
  }
  *state = s;
  return GE_OK;
}

ge_status ge_nn2_optim_run(const void *state, ge_kctx *c) {
  const opt_state *s = state;
  size_t groups = s->kind == OPT_ADAM ? 4 : 3, nouts = s->kind == OPT_ADAM ? 3 : 2;
  if (c->n_in < 2 + groups || (c->n_in - 2) % groups)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "expected R, T and %zu tensors per parameter", groups);
  size_t n = (c->n_in - 2) / groups;
  if (c->n_out != n * nouts)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "expected %zu outputs for %zu parameters, got %zu",
                        n * nouts, n, c->n_out);
  for (size_t i = 0; i < c->n_in; i++)
    if (!c->in[i]) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu is missing", i);
  if (c->in[0]->numel != 1 || c->in[1]->numel != 1)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "R and T must be scalars");
  double r = ge_tensor_get_f64(c->in[0], 0);
  double t = (double)ge_tensor_get_i64(c->in[1], 0);
  ge_status st = GE_OK;
  for (size_t i = 0; i < n && st == GE_OK; i++) {
    const ge_tensor *in[4];
    for (size_t g = 0; g < groups; g++) {
      in[g] = c->in[2 + g * n + i];
      if (in[g]->numel != in[0]->numel)
        return ge_kctx_fail(c, GE_ERR_SHAPE, "input %zu has %zu elements but X has %zu", 2 + g * n + i,
                            in[g]->numel, in[0]->numel);
    }
    ge_dbuf b[4] = {{0}}, o[3] = {{0}};
    for (size_t g = 0; g < groups && st == GE_OK; g++) st = ge_nn_load_f64(c, in[g], &b[g]);
    for (size_t k = 0; k < nouts && st == GE_OK; k++) {
      ge_tensor *ot = c->out[k * n + i];
      if (ot && ot->numel != in[0]->numel)
        st = ge_kctx_fail(c, GE_ERR_SHAPE, "output %zu has the wrong size", k * n + i);
      else if (ot)
        st = ge_nn_out_f64(c, ot, &o[k]);
    }
    if (st == GE_OK) {
      size_t m = in[0]->numel;
      const double *x = b[0].p, *g = b[1].p;
      if (s->kind == OPT_ADAGRAD) {
        const double *h = b[2].p;
        double rr = r / (1.0 + t * s->decay);
        for (size_t e = 0; e < m; e++) {
          double gr = s->norm * x[e] + g[e];
          double hn = h[e] + gr * gr;
          if (o[0].p) o[0].p[e] = x[e] - rr * gr / (sqrt(hn) + s->eps);
          if (o[1].p) o[1].p[e] = hn;
        }
      } else if (s->kind == OPT_MOMENTUM) {
        const double *v = b[2].p;
        double ba = t > 0 ? s->beta : 1.0;
        for (size_t e = 0; e < m; e++) {
          double gr = s->norm * x[e] + g[e];
          double vn = s->alpha * v[e] + ba * gr;
          if (o[0].p) o[0].p[e] = s->nesterov ? x[e] - r * (gr + s->alpha * vn) : x[e] - r * vn;
          if (o[1].p) o[1].p[e] = vn;
        }
      } else {
        const double *v = b[2].p, *h = b[3].p;
        double ra = t > 0 ? r * sqrt(1.0 - pow(s->beta, t)) / (1.0 - pow(s->alpha, t)) : r;
        for (size_t e = 0; e < m; e++) {
          double gr = s->norm * x[e] + g[e];
          double vn = s->alpha * v[e] + (1.0 - s->alpha) * gr;
          double hn = s->beta * h[e] + (1.0 - s->beta) * gr * gr;
          double xn = x[e] - ra * (vn / (sqrt(hn) + s->eps));
          if (o[0].p) o[0].p[e] = (1.0 - s->norm_post) * xn;
          if (o[1].p) o[1].p[e] = vn;
          if (o[2].p) o[2].p[e] = hn;
        }
      }
      for (size_t k = 0; k < nouts; k++)
        if (c->out[k * n + i]) ge_nn_store_f64(c->out[k * n + i], &o[k]);
    }
    for (size_t g = 0; g < groups; g++) ge_dbuf_free(&b[g]);
    for (size_t k = 0; k < nouts; k++) ge_dbuf_free(&o[k]);
  }
  return st;
}

/* ------------------------------------------------------------------ DeformConv */

typedef struct deform_state {
  int64_t group, offset_group;
  int64_t strides[2], pads[4], dil[2];
} deform_state;

ge_status ge_nn2_deform_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  deform_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->group = ge_node_attr_int(p->node, "group", 1);
  s->offset_group = ge_node_attr_int(p->node, "offset_group", 1);
  const int64_t *a;
  size_t n;
  s->strides[0] = s->strides[1] = s->dil[0] = s->dil[1] = 1;
  const char *bad = NULL;
  if (ge_node_attr_ints(p->node, "strides", &a, &n)) {
    if (n != 2) bad = "strides";
    else memcpy(s->strides, a, sizeof s->strides);
  }
  if (ge_node_attr_ints(p->node, "dilations", &a, &n)) {
    if (n != 2) bad = "dilations";
    else memcpy(s->dil, a, sizeof s->dil);
  }
  if (ge_node_attr_ints(p->node, "pads", &a, &n)) {
    if (n != 4) bad = "pads";
    else memcpy(s->pads, a, sizeof s->pads);
  }
  if (!bad && (s->group < 1 || s->offset_group < 1 || s->strides[0] < 1 || s->strides[1] < 1 ||
               s->dil[0] < 1 || s->dil[1] < 1))
    bad = "group/offset_group/strides/dilations";
  if (bad) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "attribute %s is invalid (only 2-D DeformConv is supported)", bad);
  }
  *state = s;
  return GE_OK;
}

static double bilinear0(const double *img, int64_t H, int64_t W, double y, double x) {
  if (!(y > -1.0 && y < (double)H && x > -1.0 && x < (double)W)) return 0.0; /* also NaN */
  double fy = floor(y), fx = floor(x);
  int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
  double wy = y - fy, wx = x - fx, v = 0;
  if (y0 >= 0 && y0 < H) {
    if (x0 >= 0 && x0 < W) v += (1 - wy) * (1 - wx) * img[y0 * W + x0];
    if (x0 + 1 >= 0 && x0 + 1 < W) v += (1 - wy) * wx * img[y0 * W + x0 + 1];
  }
  if (y0 + 1 >= 0 && y0 + 1 < H) {
    if (x0 >= 0 && x0 < W) v += wy * (1 - wx) * img[(y0 + 1) * W + x0];
    if (x0 + 1 >= 0 && x0 + 1 < W) v += wy * wx * img[(y0 + 1) * W + x0 + 1];
  }
  return v;
}

ge_status ge_nn2_deform_run(const void *state, ge_kctx *c) {
  const deform_state *s = state;
  const ge_tensor *X = c->in[0], *Wt = c->in[1], *OF = c->in[2];
  const ge_tensor *Bt = c->n_in > 3 ? c->in[3] : NULL, *MK = c->n_in > 4 ? c->in[4] : NULL;
  ge_tensor *Y = c->out[0];
  if (X->rank != 4 || Wt->rank != 4 || OF->rank != 4)
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "only 2-D DeformConv is supported (X rank %d)", X->rank);
  int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
  int64_t OC = Wt->dims[0], cpg = Wt->dims[1], kh = Wt->dims[2], kw = Wt->dims[3];
  int64_t OH = OF->dims[2], OW = OF->dims[3], G = s->group, OG = s->offset_group;
  if (cpg * G != C || OC % G || C % OG || OF->dims[0] != N || OF->dims[1] != OG * kh * kw * 2)
    return ge_kctx_fail(c, GE_ERR_SHAPE,
                        "inconsistent shapes: X channels %lld, W [%lld, %lld, %lld, %lld], group %lld, "
                        "offset channels %lld (expected %lld)",
                        (long long)C, (long long)OC, (long long)cpg, (long long)kh, (long long)kw,
                        (long long)G, (long long)OF->dims[1], (long long)(OG * kh * kw * 2));
  if (MK && MK->numel != (size_t)(N * OG * kh * kw * OH * OW))
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 4 (mask) must be [N, offset_group*kh*kw, oh, ow]");
  if (Bt && Bt->numel != (size_t)OC) return ge_kctx_fail(c, GE_ERR_SHAPE, "input 3 (B) must have %lld elements", (long long)OC);
  if (Y->numel != (size_t)(N * OC * OH * OW)) return ge_kctx_fail(c, GE_ERR_SHAPE, "output shape mismatch");
  size_t P = (size_t)(OH * OW), KK = (size_t)(kh * kw), ncol;
  if (__builtin_mul_overflow((size_t)C * KK, P, &ncol))
    return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "column buffer size overflows");
  ge_status st = GE_OK;
  ge_dbuf x = {0}, w = {0}, of = {0}, b = {0}, mk = {0}, y = {0};
  double *col = NULL;
  if ((st = ge_nn_load_f64(c, X, &x)) || (st = ge_nn_load_f64(c, Wt, &w)) ||
      (st = ge_nn_load_f64(c, OF, &of)) || (st = ge_nn_out_f64(c, Y, &y)))
    goto done;
  if (Bt && (st = ge_nn_load_f64(c, Bt, &b))) goto done;
  if (MK && (st = ge_nn_load_f64(c, MK, &mk))) goto done;
  col = ge_nn2_dalloc(c, ncol);
  if (!col) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  int64_t cpog = C / OG;
  for (int64_t n = 0; n < N; n++) {
    for (int64_t ch = 0; ch < C; ch++) {
      int64_t og = ch / cpog;
      const double *img = x.p + (size_t)(n * C + ch) * (size_t)(H * W);
      for (int64_t a = 0; a < kh; a++)
        for (int64_t bb = 0; bb < kw; bb++) {
          size_t kidx = (size_t)(a * kw + bb);
          const double *offh = of.p + ((size_t)(n * OG + og) * KK * 2 + kidx * 2) * P;
          const double *offw = offh + P;
          const double *mrow = MK ? mk.p + ((size_t)(n * OG + og) * KK + kidx) * P : NULL;
          double *cr = col + ((size_t)ch * KK + kidx) * P;
          for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
              size_t pi = (size_t)(i * OW + j);
              double yy = (double)(i * s->strides[0] - s->pads[0] + a * s->dil[0]) + offh[pi];
              double xx = (double)(j * s->strides[1] - s->pads[1] + bb * s->dil[1]) + offw[pi];
              double v = bilinear0(img, H, W, yy, xx);
              cr[pi] = mrow ? v * mrow[pi] : v;
            }
        }
    }
    int64_t opg = OC / G;
    for (int64_t o = 0; o < OC; o++) {
      int64_t g = o / opg;
      double *yo = y.p + (size_t)(n * OC + o) * P;
      double bias = Bt ? b.p[o] : 0.0;
      for (size_t pi = 0; pi < P; pi++) yo[pi] = bias;
      for (int64_t ci = 0; ci < cpg; ci++) {
        int64_t ch = g * cpg + ci;
        for (size_t kidx = 0; kidx < KK; kidx++) {
          double wv = w.p[((size_t)o * (size_t)cpg + (size_t)ci) * KK + kidx];
          const double *cr = col + ((size_t)ch * KK + kidx) * P;
          for (size_t pi = 0; pi < P; pi++) yo[pi] += wv * cr[pi];
        }
      }
    }
  }
  ge_nn_store_f64(Y, &y);
done:
  ge_dbuf_free(&x);
  ge_dbuf_free(&w);
  ge_dbuf_free(&of);
  ge_dbuf_free(&b);
  ge_dbuf_free(&mk);
  ge_dbuf_free(&y);
  free(col);
  return st;
}
