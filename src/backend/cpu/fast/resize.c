/* Fast Resize (opset 11+, issue 6): float32 [N, C, H, W] resized over H and W only, modes
 * nearest (round_prefer_floor / round_prefer_ceil / floor / ceil) and linear, coordinate modes
 * half_pixel, pytorch_half_pixel, align_corners, asymmetric (and tf_half_pixel_for_nn for
 * nearest); scales or sizes (keep_aspect_ratio_policy stretch).  The per-dim index / weight
 * tables are built in double with the reference's formulas, so they pick the same source
 * pixels; rows of the output are split over threads.  The rest (antialias, cubic, axes,
 * crop-and-resize, resizing N or C, other dtypes) runs the reference kernel. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno") /* see fast_ops.h */
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/threadpool.h"

typedef enum { FR_HALF_PIXEL, FR_PYTORCH, FR_ALIGN, FR_ASYM, FR_TF_NN } fr_coord;
typedef enum { FN_PREFER_FLOOR, FN_PREFER_CEIL, FN_FLOOR, FN_CEIL } fr_nearest;

typedef struct fr_state {
  ge_fo_ref ref;
  bool linear;
  fr_coord coord;
  fr_nearest nearest;
} fr_state;
GE_FO_REF_FIRST(fr_state);

ge_status ge_fo_resize_prepare(const ge_prepare_ctx *p, void **state) {
  const ge_node *n = p->node;
  if (p->opset < 11 || ge_fo_in_dtype(p, 0) != GE_F32 || p->n_out != 1 || p->out[0].dtype != GE_F32 ||
      !p->in[0].type || p->in[0].type->shape.rank != 4)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Resize: float32 rank-4 input, opset 11+ only");
  fr_state s = {0};
  const char *mode = ge_node_attr_string(n, "mode", "nearest");
  const char *ct = ge_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = ge_node_attr_string(n, "nearest_mode", "round_prefer_floor");
  bool ok = true;
  if (!strcmp(mode, "linear")) s.linear = true;
  else if (strcmp(mode, "nearest")) ok = false;
  if (!strcmp(ct, "half_pixel")) s.coord = FR_HALF_PIXEL;
  else if (!strcmp(ct, "pytorch_half_pixel")) s.coord = FR_PYTORCH;
  else if (!strcmp(ct, "align_corners")) s.coord = FR_ALIGN;
  else if (!strcmp(ct, "asymmetric")) s.coord = FR_ASYM;
  else if (!strcmp(ct, "tf_half_pixel_for_nn") && !s.linear) s.coord = FR_TF_NN;
  else ok = false;
  if (!strcmp(nm, "round_prefer_floor")) s.nearest = FN_PREFER_FLOOR;
  else if (!strcmp(nm, "round_prefer_ceil")) s.nearest = FN_PREFER_CEIL;
  else if (!strcmp(nm, "floor")) s.nearest = FN_FLOOR;
  else if (!strcmp(nm, "ceil")) s.nearest = FN_CEIL;
  else ok = false;
  if (p->opset >= 18 && (ge_node_attr_int(n, "antialias", 0) || ge_node_attr(n, "axes") ||
                         strcmp(ge_node_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch")))
    ok = false;
  if (!ok) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Resize: attributes not handled");
  fr_state *st = calloc(1, sizeof *st);
  if (!st) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  *st = s;
  return ge_fo_prepare_finish(p, st, state);
}

/* input coordinate of output index o (the reference's transform) */
static double fr_transform(fr_coord c, double o, double scale, int64_t lin) {
  double owf = scale * (double)lin;
  switch (c) {
    case FR_HALF_PIXEL: return (o + 0.5) / scale - 0.5;
    case FR_PYTORCH: return owf == 1.0 ? -0.5 : (o + 0.5) / scale - 0.5;
    case FR_ALIGN: return owf == 1.0 ? 0.0 : o * (double)(lin - 1) / (owf - 1.0);
    case FR_ASYM: return o / scale;
    case FR_TF_NN: return (o + 0.5) / scale;
  }
  return o / scale;
}

/* taps of one dim: idx0/idx1 and weights w0/w1 (nearest: idx0 only) */
static void fr_taps(const fr_state *s, int64_t lin, int64_t lout, double scale, bool identity, int32_t *i0,
                    int32_t *i1, float *w0, float *w1) {
  for (int64_t o = 0; o < lout; o++) {
    if (identity) {
      i0[o] = i1[o] = (int32_t)o;
      w0[o] = 1.f;
      w1[o] = 0.f;
      continue;
    }
    double x = fr_transform(s->coord, (double)o, scale, lin);
    if (!isfinite(x)) x = 0;
    double f = floor(x);
    if (!s->linear) {
      int64_t xi;
      if (x == f) {
        xi = (int64_t)f;
      } else {
        double r = x - f;
        bool up = s->nearest == FN_PREFER_FLOOR ? r > 0.5 : s->nearest == FN_PREFER_CEIL ? r >= 0.5
                                                             : s->nearest == FN_CEIL;
        xi = (int64_t)f + (up ? 1 : 0);
      }
      xi = xi < 0 ? 0 : xi > lin - 1 ? lin - 1 : xi;
      i0[o] = i1[o] = (int32_t)xi;
      w0[o] = 1.f;
      w1[o] = 0.f;
      continue;
    }
    int64_t a, b;
    double wa, wb;
    if (x == f) {
      a = (int64_t)f - 1, b = (int64_t)f, wa = 0.0, wb = 1.0;
    } else {
      a = (int64_t)f, b = (int64_t)f + 1, wb = x - f, wa = 1.0 - wb;
    }
    a = a < 0 ? 0 : a > lin - 1 ? lin - 1 : a;
    b = b < 0 ? 0 : b > lin - 1 ? lin - 1 : b;
    i0[o] = (int32_t)a;
    i1[o] = (int32_t)b;
    w0[o] = (float)wa;
    w1[o] = (float)wb;
  }
}

typedef struct fr_job {
  const float *x;
  float *y;
  size_t ih, iw, oh, ow;
  bool linear;
  const int32_t *h0, *h1, *w0i, *w1i;
  const float *hw0, *hw1, *ww0, *ww1;
} fr_job;

GE_FO_CLONES
static void fr_rows_impl(const fr_job *j, size_t begin, size_t end) {
  for (size_t row = begin; row < end; row++) {
    size_t plane = row / j->oh, oy = row % j->oh;
    const float *xp = j->x + plane * j->ih * j->iw;
    float *yr = j->y + row * j->ow;
    const float *r0 = xp + (size_t)j->h0[oy] * j->iw;
    if (!j->linear) {
      for (size_t ox = 0; ox < j->ow; ox++) yr[ox] = r0[j->w0i[ox]];
      continue;
    }
    const float *r1 = xp + (size_t)j->h1[oy] * j->iw;
    float a = j->hw0[oy], b = j->hw1[oy];
    for (size_t ox = 0; ox < j->ow; ox++) {
      int32_t c0 = j->w0i[ox], c1 = j->w1i[ox];
      float top = j->ww0[ox] * r0[c0] + j->ww1[ox] * r0[c1];
      float bot = j->ww0[ox] * r1[c0] + j->ww1[ox] * r1[c1];
      yr[ox] = a * top + b * bot;
    }
  }
}

static void fr_rows(void *arg, size_t begin, size_t end) { fr_rows_impl(arg, begin, end); }

ge_status ge_fo_resize_run(const void *state, ge_kctx *ctx) {
  const fr_state *s = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || X->dtype != GE_F32 || Y->dtype != GE_F32 || X->rank != 4 || Y->rank != 4 ||
      X->dims[0] != Y->dims[0] || X->dims[1] != Y->dims[1] || !X->numel || !Y->numel ||
      X->dims[2] > INT32_MAX || X->dims[3] > INT32_MAX)
    return ge_fo_ref_run(&s->ref, ctx);
  const ge_tensor *sc = ctx->n_in > 2 ? ctx->in[2] : NULL, *sz = ctx->n_in > 3 ? ctx->in[3] : NULL;
  if (sc && !sc->numel) sc = NULL;
  if (sz && !sz->numel) sz = NULL;
  if ((sc != NULL) == (sz != NULL) || (sc && sc->numel != 4) || (sz && sz->numel != 4))
    return ge_fo_ref_run(&s->ref, ctx);
  double scale[4];
  for (int d = 0; d < 4; d++) {
    scale[d] = sc ? ge_tensor_get_f64(sc, (size_t)d) : (double)ge_tensor_get_i64(sz, (size_t)d) / (double)X->dims[d];
    if (!(scale[d] > 0)) return ge_fo_ref_run(&s->ref, ctx);
  }
  if (fabs(scale[0] - 1.0) > 1e-9 || fabs(scale[1] - 1.0) > 1e-9) return ge_fo_ref_run(&s->ref, ctx);
  size_t ih = (size_t)X->dims[2], iw = (size_t)X->dims[3], oh = (size_t)Y->dims[2], ow = (size_t)Y->dims[3];
  int32_t *idx = malloc(2 * (oh + ow) * sizeof *idx);
  float *wt = malloc(2 * (oh + ow) * sizeof *wt);
  if (!idx || !wt) {
    free(idx);
    free(wt);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory for the Resize tables of [%zu x %zu]", oh, ow);
  }
  fr_job j = {.x = X->data, .y = Y->data, .ih = ih, .iw = iw, .oh = oh, .ow = ow, .linear = s->linear,
              .h0 = idx, .h1 = idx + oh, .w0i = idx + 2 * oh, .w1i = idx + 2 * oh + ow,
              .hw0 = wt, .hw1 = wt + oh, .ww0 = wt + 2 * oh, .ww1 = wt + 2 * oh + ow};
  fr_taps(s, (int64_t)ih, (int64_t)oh, scale[2], fabs(scale[2] - 1.0) <= 1e-9 && ih == oh, idx, idx + oh, wt, wt + oh);
  fr_taps(s, (int64_t)iw, (int64_t)ow, scale[3], fabs(scale[3] - 1.0) <= 1e-9 && iw == ow, idx + 2 * oh,
          idx + 2 * oh + ow, wt + 2 * oh, wt + 2 * oh + ow);
  size_t rows = Y->numel / ow;
  ge_parallel_for(ge_fo_threads(ctx->threads, Y->numel, s->linear ? GE_FO_MIN_MATH : GE_FO_MIN_MOVE), rows, fr_rows,
                  &j);
  free(idx);
  free(wt);
  return GE_OK;
}
