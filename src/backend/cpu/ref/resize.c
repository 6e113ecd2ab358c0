/* Reference CPU kernel of Resize (opsets 10..19+) and Upsample (7, 9).
 *
 * Interpolation is separable: for each resized dim a table of taps (input index, weight) per
 * output index is built, then the dims are resized one after another.  Nearest mode moves raw
 * elements (every dtype but string); linear and cubic compute in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/reduce_family.h"

typedef enum { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC } rs_mode;
typedef enum {
  CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC,
  CT_TF_HALF_PIXEL_FOR_NN, CT_TF_CROP_AND_RESIZE
} rs_coord;
typedef enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE } rs_nearest;
typedef enum { KA_STRETCH, KA_NOT_LARGER, KA_NOT_SMALLER } rs_keep;
typedef enum { V_UPSAMPLE7, V_SCALES1, V_RESIZE11 } rs_variant;

typedef struct resize_state {
  rs_variant variant;
  rs_mode mode;
  rs_coord coord;
  rs_nearest nearest;
  rs_keep keep;
  double cubic_a, extrapolation;
  bool exclude_outside, antialias;
  size_t n_axes; /* 0: all dims */
  int64_t axes[GE_MAX_RANK];
  size_t n_scales_attr;
  double scales_attr[GE_MAX_RANK];
} resize_state;

static const struct { const char *name; int v; } coord_names[] = {
    {"half_pixel", CT_HALF_PIXEL},
    {"half_pixel_symmetric", CT_HALF_PIXEL_SYM},
    {"pytorch_half_pixel", CT_PYTORCH_HALF_PIXEL},
    {"align_corners", CT_ALIGN_CORNERS},
    {"asymmetric", CT_ASYMMETRIC},
    {"tf_half_pixel_for_nn", CT_TF_HALF_PIXEL_FOR_NN},
    {"tf_crop_and_resize", CT_TF_CROP_AND_RESIZE},
};
static const struct { const char *name; int v; } nearest_names[] = {
    {"round_prefer_floor", NM_ROUND_PREFER_FLOOR},
    {"round_prefer_ceil", NM_ROUND_PREFER_CEIL},
    {"floor", NM_FLOOR},
    {"ceil", NM_CEIL},
};

ge_status ge_rd_resize_prepare(const ge_prepare_ctx *p, void **state) {
  const ge_node *n = p->node;
  bool upsample = !strcmp(n->op_type, "Upsample");
  if (p->n_in > 0 && p->in[0].type &&
      (p->in[0].type->dtype == GE_STRING))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "input 0 of dtype string is not supported by %s",
                           n->op_type);
  resize_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = GE_OK;
  if (upsample)
    s->variant = p->opset < 9 ? V_UPSAMPLE7 : V_SCALES1;
  else
    s->variant = p->opset < 11 ? V_SCALES1 : V_RESIZE11;
  const char *mode = ge_node_attr_string(n, "mode", "nearest");
  if (!strcmp(mode, "nearest"))
    s->mode = MODE_NEAREST;
  else if (!strcmp(mode, "linear") || (upsample && !strcmp(mode, "bilinear")))
    s->mode = MODE_LINEAR;
  else if (!strcmp(mode, "cubic") && s->variant == V_RESIZE11)
    s->mode = MODE_CUBIC;
  else {
    st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown mode '%s'", mode);
    goto fail;
  }
  if (s->mode != MODE_NEAREST && p->n_in > 0 && p->in[0].type && p->in[0].type->dtype == GE_BOOL) {
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "input 0 of dtype bool is not supported in mode '%s'", mode);
    goto fail;
  }
  s->coord = CT_ASYMMETRIC;
  s->nearest = NM_SIMPLE;
  s->keep = KA_STRETCH;
  s->cubic_a = -0.75;
  if (s->variant == V_RESIZE11) {
    const char *ct = ge_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    bool ok = false;
    for (size_t i = 0; i < sizeof coord_names / sizeof coord_names[0]; i++)
      if (!strcmp(ct, coord_names[i].name)) {
        s->coord = (rs_coord)coord_names[i].v;
        ok = true;
      }
    if (!ok || (s->coord == CT_HALF_PIXEL_SYM && p->opset < 19)) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown coordinate_transformation_mode '%s'", ct);
      goto fail;
    }
    const char *nm = ge_node_attr_string(n, "nearest_mode", "round_prefer_floor");
    ok = false;
    for (size_t i = 0; i < sizeof nearest_names / sizeof nearest_names[0]; i++)
      if (!strcmp(nm, nearest_names[i].name)) {
        s->nearest = (rs_nearest)nearest_names[i].v;
        ok = true;
      }
    if (!ok) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown nearest_mode '%s'", nm);
      goto fail;
    }
    s->cubic_a = ge_node_attr_float(n, "cubic_coeff_a", -0.75f);
    s->exclude_outside = ge_node_attr_int(n, "exclude_outside", 0) != 0;
    s->extrapolation = ge_node_attr_float(n, "extrapolation_value", 0.0f);
    if (p->opset >= 18) {
      s->antialias = ge_node_attr_int(n, "antialias", 0) != 0;
      const char *ka = ge_node_attr_string(n, "keep_aspect_ratio_policy", "stretch");
      if (!strcmp(ka, "stretch"))
        s->keep = KA_STRETCH;
      else if (!strcmp(ka, "not_larger"))
        s->keep = KA_NOT_LARGER;
      else if (!strcmp(ka, "not_smaller"))
        s->keep = KA_NOT_SMALLER;
      else {
        st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown keep_aspect_ratio_policy '%s'", ka);
        goto fail;
      }
      const int64_t *a;
      size_t na;
      if (ge_node_attr_ints(n, "axes", &a, &na)) {
        if (na > GE_MAX_RANK) {
          st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "too many axes (%zu)", na);
          goto fail;
        }
        memcpy(s->axes, a, na * sizeof *a);
        s->n_axes = na;
      }
    }
  } else if (s->variant == V_UPSAMPLE7) {
    const float *f;
    size_t nf;
    if (!ge_node_attr_floats(n, "scales", &f, &nf) || nf > GE_MAX_RANK) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute 'scales' is missing or too long");
      goto fail;
    }
    for (size_t i = 0; i < nf; i++) s->scales_attr[i] = f[i];
    s->n_scales_attr = nf;
  }
  *state = s;
  return GE_OK;
fail:
  free(s);
  return st;
}

/* Taps of one resized dim: for output index o, nt taps idx/w; oob[o]: extrapolate. */
typedef struct rs_taps {
  size_t nt;
  int64_t *idx;
  double *w;
  bool *oob;
  bool identity;
} rs_taps;

static double cubic_kernel(double x, double a) {
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

/* Output coordinate o -> input coordinate.  As the onnx reference does, align_corners,
   pytorch_half_pixel and tf_crop_and_resize use the un-floored output length scale * lin. */
static double transform(const resize_state *s, double o, double scale, int64_t lin, int64_t lout,
                        double rs, double re) {
  double owf = scale * (double)lin;
  switch (s->coord) {
    case CT_HALF_PIXEL: return (o + 0.5) / scale - 0.5;
    case CT_HALF_PIXEL_SYM: {
      double adj = (double)lout / owf;
      double center = (double)lin / 2.0;
      double off = center * (1.0 - adj);
      return off + (o + 0.5) / scale - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL: return owf == 1.0 ? -0.5 : (o + 0.5) / scale - 0.5;
    case CT_ALIGN_CORNERS:
      return owf == 1.0 ? 0.0 : o * (double)(lin - 1) / (owf - 1.0);
    case CT_ASYMMETRIC: return o / scale;
    case CT_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / scale;
    case CT_TF_CROP_AND_RESIZE: {
      /* roi arithmetic in float, as the onnx reference does with a float32 roi */
      double span = (double)((float)re - (float)rs), off = (double)((float)rs * (float)(lin - 1));
      if (owf == 1.0) return span * (double)(lin - 1) / 2.0 + off;
      return o * span * (double)(lin - 1) / (owf - 1.0) + off;
    }
  }
  return o / scale;
}

static ge_status build_taps(const resize_state *s, int64_t lin, int64_t lout, double scale,
                            double rs, double re, rs_taps *t) {
  size_t nt = 1;
  double sa = s->antialias && scale < 1.0 ? scale : 1.0;
  int64_t start = 0;
  if (s->mode == MODE_LINEAR) {
    start = (int64_t)floor(-1.0 / sa) + 1;
    nt = (size_t)(2 - 2 * start);
  } else if (s->mode == MODE_CUBIC) {
    start = (int64_t)floor(-2.0 / sa) + 1;
    nt = (size_t)(2 - 2 * start);
  }
  if (nt > (1u << 20)) return GE_ERR_SHAPE;
  size_t total;
  if (ge_mul_overflow_size((size_t)lout, nt, &total)) return GE_ERR_SHAPE;
  t->nt = nt;
  t->idx = malloc((total ? total : 1) * sizeof *t->idx);
  t->w = malloc((total ? total : 1) * sizeof *t->w);
  t->oob = calloc((size_t)lout ? (size_t)lout : 1, sizeof *t->oob);
  if (!t->idx || !t->w || !t->oob) return GE_ERR_OUT_OF_MEMORY;
  bool ident = lin == lout;
  for (int64_t o = 0; o < lout; o++) {
    double x = transform(s, (double)o, scale, lin, lout, rs, re);
    int64_t *ix = t->idx + (size_t)o * nt;
    double *w = t->w + (size_t)o * nt;
    if (s->coord == CT_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(lin - 1))) {
      t->oob[o] = true;
      for (size_t k = 0; k < nt; k++) {
        ix[k] = 0;
        w[k] = 0;
      }
      ident = false;
      continue;
    }
    if (!isfinite(x)) x = 0;
    if (s->mode == MODE_NEAREST) {
      double f = floor(x);
      int64_t xi;
      if (s->nearest == NM_SIMPLE) {
        xi = (int64_t)(scale < 1.0 ? ceil(x) : f);
      } else if (x == f) {
        xi = (int64_t)f;
      } else {
        double r = x - f;
        bool up;
        switch (s->nearest) {
          case NM_ROUND_PREFER_FLOOR: up = r > 0.5; break;
          case NM_ROUND_PREFER_CEIL: up = r >= 0.5; break;
          case NM_FLOOR: up = false; break;
          default: up = true; break;
        }
        xi = (int64_t)f + (up ? 1 : 0);
      }
      if (xi < 0) xi = 0;
      if (xi > lin - 1) xi = lin - 1;
      ix[0] = xi;
      w[0] = 1.0;
      if (xi != o) ident = false;
      continue;
    }
    double f = floor(x), ratio;
    int64_t base;
    if (x == f) {
      base = (int64_t)f - 1;
      ratio = 1.0;
    } else {
      base = (int64_t)f;
      ratio = x - f;
    }
    double sum = 0;
    for (size_t k = 0; k < nt; k++) {
      int64_t i = start + (int64_t)k;
      double arg = ((double)i - ratio) * sa;
      double c = s->mode == MODE_LINEAR ? fmax(0.0, 1.0 - fabs(arg)) : cubic_kernel(arg, s->cubic_a);
      int64_t id = base + i;
      if (s->exclude_outside && (id < 0 || id >= lin)) c = 0;
      ix[k] = id < 0 ? 0 : id >= lin ? lin - 1 : id;
      w[k] = c;
      sum += c;
    }
    if ((s->antialias || s->exclude_outside) && sum != 0)
      for (size_t k = 0; k < nt; k++) w[k] /= sum;
    if (ident)
      for (size_t k = 0; k < nt; k++)
        if (w[k] != 0 && (ix[k] != o || w[k] != 1.0)) ident = false;
  }
  t->identity = ident;
  return GE_OK;
}

static void free_taps(rs_taps *t) {
  free(t->idx);
  free(t->w);
  free(t->oob);
}

ge_status ge_rd_resize_run(const void *state, ge_kctx *ctx) {
  const resize_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  int32_t r = x->rank;
  if (y->rank != r)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output rank %d differs from input rank %d", (int)y->rank, (int)r);
  /* axes */
  int32_t axes[GE_MAX_RANK];
  size_t na = s->n_axes ? s->n_axes : (size_t)r;
  bool listed[GE_MAX_RANK] = {false};
  for (size_t k = 0; k < na; k++) {
    int64_t a = s->n_axes ? s->axes[k] : (int64_t)k;
    if (a < -(int64_t)r || a >= r)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                          (long long)a, (int)r);
    axes[k] = (int32_t)(a < 0 ? a + r : a);
    listed[axes[k]] = true;
  }
  /* scales, sizes, roi */
  double scale[GE_MAX_RANK], roi_s[GE_MAX_RANK], roi_e[GE_MAX_RANK];
  for (int32_t d = 0; d < r; d++) {
    scale[d] = 1.0;
    roi_s[d] = 0.0;
    roi_e[d] = 1.0;
  }
  const ge_tensor *scales_t = NULL, *sizes_t = NULL, *roi_t = NULL;
  if (s->variant == V_UPSAMPLE7) {
    if (s->n_scales_attr != (size_t)r)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "%zu scales given for rank %d", s->n_scales_attr, (int)r);
    for (int32_t d = 0; d < r; d++) scale[d] = s->scales_attr[d];
  } else if (s->variant == V_SCALES1) {
    scales_t = ctx->n_in > 1 ? ctx->in[1] : NULL;
    if (!scales_t) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input 1 (scales) is missing");
  } else {
    roi_t = ctx->n_in > 1 ? ctx->in[1] : NULL;
    scales_t = ctx->n_in > 2 ? ctx->in[2] : NULL;
    sizes_t = ctx->n_in > 3 ? ctx->in[3] : NULL;
    if (scales_t && scales_t->numel == 0) scales_t = NULL;
    if (sizes_t && sizes_t->numel == 0) sizes_t = NULL;
    if (roi_t && roi_t->numel == 0) roi_t = NULL;
    if (!scales_t && !sizes_t)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "one of scales and sizes must be given");
    if (scales_t && sizes_t)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "only one of scales and sizes may be given");
  }
  if (scales_t) {
    if (scales_t->numel != na)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "scales has %zu entries, expected %zu", scales_t->numel, na);
    for (size_t k = 0; k < na; k++) {
      double v = ge_tensor_get_f64(scales_t, k);
      if (!(v > 0))
        return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "scales[%zu] = %g must be positive", k, v);
      scale[axes[k]] = v;
    }
  } else if (sizes_t) {
    if (sizes_t->numel != na)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "sizes has %zu entries, expected %zu", sizes_t->numel, na);
    if (s->keep == KA_STRETCH) {
      for (size_t k = 0; k < na; k++) {
        int64_t in = x->dims[axes[k]];
        scale[axes[k]] = in > 0 ? (double)ge_tensor_get_i64(sizes_t, k) / (double)in : 1.0;
      }
    } else {
      double sc = s->keep == KA_NOT_SMALLER ? 0.0 : INFINITY;
      for (size_t k = 0; k < na; k++) {
        int64_t in = x->dims[axes[k]];
        double q = in > 0 ? (double)ge_tensor_get_i64(sizes_t, k) / (double)in : 1.0;
        sc = s->keep == KA_NOT_SMALLER ? fmax(sc, q) : fmin(sc, q);
      }
      for (size_t k = 0; k < na; k++) scale[axes[k]] = sc;
    }
  }
  if (roi_t && s->coord == CT_TF_CROP_AND_RESIZE) {
    if (roi_t->numel != 2 * na)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "roi has %zu entries, expected %zu", roi_t->numel, 2 * na);
    for (size_t k = 0; k < na; k++) {
      roi_s[axes[k]] = ge_tensor_get_f64(roi_t, k);
      roi_e[axes[k]] = ge_tensor_get_f64(roi_t, na + k);
    }
  }
  for (int32_t d = 0; d < r; d++)
    if (!listed[d] && y->dims[d] != x->dims[d])
      return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output dim %d (%lld) differs from the input's (%lld) on an unlisted axis",
                          (int)d, (long long)y->dims[d], (long long)x->dims[d]);
  if (y->numel == 0) return GE_OK;
  if (x->numel == 0)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "cannot resize an empty input to a non-empty output");

  /* taps per dim */
  rs_taps taps[GE_MAX_RANK];
  memset(taps, 0, sizeof taps);
  ge_status st = GE_OK;
  for (int32_t d = 0; d < r; d++) {
    /* like the onnx reference (and onnxruntime), a dim with scale 1, the same length and a
       trivial roi is left alone, whatever the coordinate mode */
    bool roi_trivial = s->coord != CT_TF_CROP_AND_RESIZE ||
                       (fabs(roi_s[d]) <= 1e-9 && fabs(roi_e[d] - 1.0) <= 1e-9);
    if (!listed[d] || (fabs(scale[d] - 1.0) <= 1e-9 && y->dims[d] == x->dims[d] && roi_trivial)) {
      taps[d].identity = true;
      continue;
    }
    st = build_taps(s, x->dims[d], y->dims[d], scale[d], roi_s[d], roi_e[d], &taps[d]);
    if (st != GE_OK) {
      st = ge_kctx_fail(ctx, st, "cannot build the interpolation table of dim %d", (int)d);
      goto done;
    }
  }

  size_t es = ge_dtype_size(x->dtype);
  int64_t cur[GE_MAX_RANK];
  memcpy(cur, x->dims, (size_t)r * sizeof *cur);
  if (s->mode == MODE_NEAREST) {
    /* raw gathers, dim by dim */
    const char *src = x->data;
    char *owned = NULL;
    unsigned char extra[16] = {0};
    double ev = s->extrapolation;
    ge_rd_store_f64(x->dtype, extra, 0, 1, &ev);
    for (int32_t d = 0; d < r; d++) {
      if (taps[d].identity) continue;
      size_t outer = 1, inner = 1, lin = (size_t)cur[d], lout = (size_t)y->dims[d];
      for (int32_t q = 0; q < d; q++) outer *= (size_t)cur[q];
      for (int32_t q = d + 1; q < r; q++) inner *= (size_t)cur[q];
      size_t chunk = inner * es, total;
      if (ge_mul_overflow_size(outer * lout, chunk, &total)) {
        st = ge_kctx_fail(ctx, GE_ERR_SHAPE, "intermediate too large");
        free(owned);
        goto done;
      }
      char *dst = malloc(total ? total : 1);
      if (!dst) {
        st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
        free(owned);
        goto done;
      }
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < lout; i++) {
          char *dp = dst + (o * lout + i) * chunk;
          if (taps[d].oob[i]) {
            for (size_t j = 0; j < inner; j++) memcpy(dp + j * es, extra, es);
          } else {
            memcpy(dp, src + (o * lin + (size_t)taps[d].idx[i]) * chunk, chunk);
          }
        }
      free(owned);
      owned = dst;
      src = dst;
      cur[d] = y->dims[d];
    }
    memcpy(y->data, src, y->nbytes);
    free(owned);
  } else {
    size_t n0 = x->numel;
    double *buf = malloc(n0 * sizeof *buf);
    if (!buf) {
      st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    ge_rd_load_f64(x->dtype, x->data, 0, n0, buf);
    for (int32_t d = 0; d < r; d++) {
      if (taps[d].identity) continue;
      size_t outer = 1, inner = 1, lin = (size_t)cur[d], lout = (size_t)y->dims[d], total;
      for (int32_t q = 0; q < d; q++) outer *= (size_t)cur[q];
      for (int32_t q = d + 1; q < r; q++) inner *= (size_t)cur[q];
      if (ge_mul_overflow_size(outer * lout, inner, &total) ||
          ge_mul_overflow_size(total, sizeof(double), &(size_t){0})) {
        free(buf);
        st = ge_kctx_fail(ctx, GE_ERR_SHAPE, "intermediate too large");
        goto done;
      }
      double *dst = malloc((total ? total : 1) * sizeof *dst);
      if (!dst) {
        free(buf);
        st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
      }
      size_t nt = taps[d].nt;
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < lout; i++) {
          double *dp = dst + (o * lout + i) * inner;
          if (taps[d].oob[i]) {
            for (size_t j = 0; j < inner; j++) dp[j] = s->extrapolation;
            continue;
          }
          for (size_t j = 0; j < inner; j++) dp[j] = 0;
          for (size_t k = 0; k < nt; k++) {
            double w = taps[d].w[i * nt + k];
            if (w == 0) continue;
            const double *sp = buf + (o * lin + (size_t)taps[d].idx[i * nt + k]) * inner;
            for (size_t j = 0; j < inner; j++) dp[j] += w * sp[j];
          }
        }
      free(buf);
      buf = dst;
      cur[d] = y->dims[d];
    }
    /* integers: Resize-11+ rounds half to even (as the onnx reference); Resize-10 and
       Upsample round down (as onnxruntime, which computes in float: hence the epsilon) */
    if (!ge_dtype_is_float(y->dtype) && s->variant == V_RESIZE11)
      for (size_t i = 0; i < y->numel; i++) buf[i] = nearbyint(buf[i]);
    else if (!ge_dtype_is_float(y->dtype))
      for (size_t i = 0; i < y->numel; i++) buf[i] = floor(buf[i] + 1e-4);
    ge_rd_store_f64(y->dtype, y->data, 0, y->numel, buf);
    free(buf);
  }
done:
  for (int32_t d = 0; d < r; d++) free_taps(&taps[d]);
  return st;
}
