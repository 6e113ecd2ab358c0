/* Reference CPU kernels of the reduce family: NonMaxSuppression, RoiAlign, MaxRoiPool,
 * GridSample, MaxUnpool. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/reduce_family.h"

static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};

/* ------------------------------------------------------------------ NonMaxSuppression */

typedef struct nms_state {
  bool center_point_box;
} nms_state;

ge_status ge_rd_nms_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype f32[] = {GE_F32, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, f32));
  GE_CHECK(ge_prepare_check_dtype(p, 1, f32));
  nms_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t cpb = ge_node_attr_int(p->node, "center_point_box", 0);
  if (cpb != 0 && cpb != 1) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "center_point_box must be 0 or 1, got %lld",
                           (long long)cpb);
  }
  s->center_point_box = cpb == 1;
  *state = s;
  return GE_OK;
}

typedef struct nms_box {
  float score;
  int64_t idx;
} nms_box;

static int nms_cmp(const void *pa, const void *pb) {
  const nms_box *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* corners (x_min, y_min, x_max, y_max) of box i */
static void nms_corners(const float *b, bool center, float *c) {
  if (center) {
    float hw = b[2] / 2, hh = b[3] / 2;
    c[0] = b[0] - hw;
    c[2] = b[0] + hw;
    c[1] = b[1] - hh;
    c[3] = b[1] + hh;
  } else {
    c[0] = fminf(b[1], b[3]);
    c[2] = fmaxf(b[1], b[3]);
    c[1] = fminf(b[0], b[2]);
    c[3] = fmaxf(b[0], b[2]);
  }
}

static bool nms_suppress(const float *a, const float *b, float thr) {
  float ix0 = fmaxf(a[0], b[0]), ix1 = fminf(a[2], b[2]);
  if (ix1 <= ix0) return false;
  float iy0 = fmaxf(a[1], b[1]), iy1 = fminf(a[3], b[3]);
  if (iy1 <= iy0) return false;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  if (inter <= 0) return false;
  float a1 = (a[2] - a[0]) * (a[3] - a[1]), a2 = (b[2] - b[0]) * (b[3] - b[1]);
  float uni = a1 + a2 - inter;
  if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
  return inter / uni > thr;
}

ge_status ge_rd_nms_run(const void *state, ge_kctx *ctx) {
  const nms_state *s = state;
  const ge_tensor *boxes = ctx->in[0], *scores = ctx->in[1];
  const ge_tensor *mo = ctx->n_in > 2 ? ctx->in[2] : NULL;
  const ge_tensor *iou = ctx->n_in > 3 ? ctx->in[3] : NULL;
  const ge_tensor *sth = ctx->n_in > 4 ? ctx->in[4] : NULL;
  if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
      scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "boxes must be [B, N, 4] and scores [B, C, N]");
  int64_t max_out = mo && mo->numel ? ge_tensor_get_i64(mo, 0) : 0;
  if (max_out < 0) max_out = 0;
  float iou_thr = iou && iou->numel ? (float)ge_tensor_get_f64(iou, 0) : 0.0f;
  bool has_sth = sth && sth->numel;
  float score_thr = has_sth ? (float)ge_tensor_get_f64(sth, 0) : 0.0f;
  if (iou_thr < 0 || iou_thr > 1)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "iou_threshold %g is outside [0, 1]", (double)iou_thr);
  size_t nb = (size_t)boxes->dims[0], nc = (size_t)scores->dims[1], n = (size_t)boxes->dims[1];
  const float *bd = boxes->data, *sd = scores->data;
  nms_box *cand = malloc((n ? n : 1) * sizeof *cand);
  float *corners = malloc((n ? n : 1) * 4 * sizeof *corners);
  int64_t *sel = malloc((n ? n : 1) * sizeof *sel);
  int64_t *out = NULL;
  size_t n_out = 0, cap_out = 0;
  ge_status st = GE_OK;
  if (!cand || !corners || !sel) {
    st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t b = 0; b < nb; b++) {
    for (size_t i = 0; i < n; i++) nms_corners(bd + (b * n + i) * 4, s->center_point_box, corners + i * 4);
    for (size_t c = 0; c < nc; c++) {
      const float *sc = sd + (b * nc + c) * n;
      size_t m = 0;
      for (size_t i = 0; i < n; i++)
        if (!has_sth || sc[i] > score_thr) {
          cand[m].score = sc[i];
          cand[m].idx = (int64_t)i;
          m++;
        }
      qsort(cand, m, sizeof *cand, nms_cmp);
      size_t ns = 0;
      for (size_t q = 0; q < m && (int64_t)ns < max_out; q++) {
        const float *cb = corners + cand[q].idx * 4;
        bool keep = true;
        for (size_t k = 0; k < ns && keep; k++)
          if (nms_suppress(cb, corners + sel[k] * 4, iou_thr)) keep = false;
        if (!keep) continue;
        sel[ns++] = cand[q].idx;
        if (n_out == cap_out) {
          size_t nc2 = cap_out ? cap_out * 2 : 64;
          int64_t *p = realloc(out, nc2 * 3 * sizeof *p);
          if (!p) {
            st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
          }
          out = p;
          cap_out = nc2;
        }
        out[n_out * 3] = (int64_t)b;
        out[n_out * 3 + 1] = (int64_t)c;
        out[n_out * 3 + 2] = cand[q].idx;
        n_out++;
      }
    }
  }
  int64_t dims[2] = {(int64_t)n_out, 3};
  st = ge_kctx_alloc_output(ctx, 0, GE_I64, dims, 2);
  if (st == GE_OK && n_out) memcpy(ctx->out[0]->data, out, n_out * 3 * sizeof *out);
done:
  free(cand);
  free(corners);
  free(sel);
  free(out);
  return st;
}

/* ------------------------------------------------------------------ RoiAlign */

typedef struct roialign_state {
  bool max_mode, half_pixel;
  int64_t oh, ow, sampling;
  double scale;
} roialign_state;

ge_status ge_rd_roialign_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, float_types));
  GE_CHECK(ge_prepare_check_dtype(p, 1, float_types));
  roialign_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  const char *mode = ge_node_attr_string(p->node, "mode", "avg");
  const char *ct = p->opset >= 16
                       ? ge_node_attr_string(p->node, "coordinate_transformation_mode", "half_pixel")
                       : "output_half_pixel";
  s->max_mode = !strcmp(mode, "max");
  s->half_pixel = !strcmp(ct, "half_pixel");
  s->oh = ge_node_attr_int(p->node, "output_height", 1);
  s->ow = ge_node_attr_int(p->node, "output_width", 1);
  s->sampling = ge_node_attr_int(p->node, "sampling_ratio", 0);
  s->scale = ge_node_attr_float(p->node, "spatial_scale", 1.0f);
  if ((!s->max_mode && strcmp(mode, "avg")) || (!s->half_pixel && strcmp(ct, "output_half_pixel")) ||
      s->oh <= 0 || s->ow <= 0 || s->sampling < 0) {
    long long oh = (long long)s->oh, ow = (long long)s->ow;
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "bad attributes (mode '%s', coordinate_transformation_mode '%s', output %lldx%lld)",
                           mode, ct, oh, ow);
  }
  *state = s;
  return GE_OK;
}

ge_status ge_rd_roialign_run(const void *state, ge_kctx *ctx) {
  const roialign_state *s = state;
  const ge_tensor *x = ctx->in[0], *rois = ctx->in[1], *bi = ctx->in[2];
  ge_tensor *y = ctx->out[0];
  if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->numel != (size_t)rois->dims[0])
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "expected X [N,C,H,W], rois [R,4] and batch_indices [R]");
  size_t nr = (size_t)rois->dims[0], C = (size_t)x->dims[1];
  int64_t H = x->dims[2], W = x->dims[3];
  size_t oh = (size_t)s->oh, ow = (size_t)s->ow, plane = (size_t)(H * W);
  if (y->numel != nr * C * oh * ow)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, nr * C * oh * ow);
  if (y->numel == 0) return GE_OK;
  double *xd = malloc((x->numel ? x->numel : 1) * sizeof *xd);
  double *res = malloc(y->numel * sizeof *res);
  double roi[4];
  ge_status st = GE_OK;
  typedef struct { size_t p[4]; double w[4]; } pc_t;
  pc_t *pc = NULL;
  if (!xd || !res) {
    st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  ge_rd_load_f64(x->dtype, x->data, 0, x->numel, xd);
  for (size_t r = 0; r < nr; r++) {
    int64_t b = ge_tensor_get_i64(bi, r);
    if (b < 0 || b >= x->dims[0]) {
      st = ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "batch_indices[%zu] = %lld is out of range", r, (long long)b);
      goto done;
    }
    ge_rd_load_f64(rois->dtype, rois->data, r * 4, 4, roi);
    double off = s->half_pixel ? 0.5 : 0.0;
    double sw = roi[0] * s->scale - off, sh = roi[1] * s->scale - off;
    double ew = roi[2] * s->scale - off, eh = roi[3] * s->scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!s->half_pixel) {
      rw = fmax(rw, 1.0);
      rh = fmax(rh, 1.0);
    }
    double bh = rh / (double)oh, bw = rw / (double)ow;
    double gh_d = s->sampling > 0 ? (double)s->sampling : ceil(rh / (double)oh);
    double gw_d = s->sampling > 0 ? (double)s->sampling : ceil(rw / (double)ow);
    if (!(gh_d >= 0) || !(gw_d >= 0) || gh_d > 1e6 || gw_d > 1e6) {
      st = ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "roi %zu is degenerate or too large", r);
      goto done;
    }
    size_t gh = (size_t)gh_d, gw = (size_t)gw_d;
    size_t count = gh * gw > 0 ? gh * gw : 1;
    size_t npc = oh * ow * gh * gw;
    pc_t *np2 = realloc(pc, (npc ? npc : 1) * sizeof *pc);
    if (!np2) {
      st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
    pc = np2;
    size_t k = 0;
    for (size_t ph = 0; ph < oh; ph++)
      for (size_t pw = 0; pw < ow; pw++)
        for (size_t iy = 0; iy < gh; iy++) {
          double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
          for (size_t ix = 0; ix < gw; ix++, k++) {
            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
            pc_t *q = &pc[k];
            if (yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W) {
              memset(q, 0, sizeof *q);
              continue;
            }
            double yv = fmax(yy, 0), xv = fmax(xx, 0);
            int64_t yl = (int64_t)yv, xl = (int64_t)xv, yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              yv = (double)yl;
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xv = (double)xl;
            } else {
              xh = xl + 1;
            }
            double ly = yv - (double)yl, lx = xv - (double)xl, hy = 1 - ly, hx = 1 - lx;
            q->p[0] = (size_t)(yl * W + xl);
            q->p[1] = (size_t)(yl * W + xh);
            q->p[2] = (size_t)(yh * W + xl);
            q->p[3] = (size_t)(yh * W + xh);
            q->w[0] = hy * hx;
            q->w[1] = hy * lx;
            q->w[2] = ly * hx;
            q->w[3] = ly * lx;
          }
        }
    for (size_t c = 0; c < C; c++) {
      const double *src = xd + ((size_t)b * C + c) * plane;
      double *dst = res + (r * C + c) * oh * ow;
      size_t q = 0;
      for (size_t bin = 0; bin < oh * ow; bin++) {
        double acc = 0;
        bool first = true;
        for (size_t g = 0; g < gh * gw; g++, q++) {
          const pc_t *e = &pc[q];
          if (!s->max_mode) {
            acc += e->w[0] * src[e->p[0]] + e->w[1] * src[e->p[1]] + e->w[2] * src[e->p[2]] +
                   e->w[3] * src[e->p[3]];
          } else {
            double v = fmax(fmax(e->w[0] * src[e->p[0]], e->w[1] * src[e->p[1]]),
                            fmax(e->w[2] * src[e->p[2]], e->w[3] * src[e->p[3]]));
            acc = first ? v : fmax(acc, v);
            first = false;
          }
        }
        dst[bin] = s->max_mode ? acc : acc / (double)count;
      }
    }
  }
  ge_rd_store_f64(y->dtype, y->data, 0, y->numel, res);
done:
  free(xd);
  free(res);
  free(pc);
  return st;
}

/* ------------------------------------------------------------------ MaxRoiPool */

typedef struct maxroipool_state {
  int64_t ph, pw;
  double scale;
} maxroipool_state;

ge_status ge_rd_maxroipool_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, float_types));
  const int64_t *ps;
  size_t np;
  if (!ge_node_attr_ints(p->node, "pooled_shape", &ps, &np) || np != 2 || ps[0] <= 0 || ps[1] <= 0)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute pooled_shape must hold 2 positive ints");
  maxroipool_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->ph = ps[0];
  s->pw = ps[1];
  s->scale = ge_node_attr_float(p->node, "spatial_scale", 1.0f);
  *state = s;
  return GE_OK;
}

ge_status ge_rd_maxroipool_run(const void *state, ge_kctx *ctx) {
  const maxroipool_state *s = state;
  const ge_tensor *x = ctx->in[0], *rois = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 5)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "expected X [N,C,H,W] and rois [R,5]");
  size_t nr = (size_t)rois->dims[0], C = (size_t)x->dims[1];
  int64_t H = x->dims[2], W = x->dims[3];
  size_t ph = (size_t)s->ph, pw = (size_t)s->pw;
  if (y->numel != nr * C * ph * pw)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, nr * C * ph * pw);
  if (y->numel == 0) return GE_OK;
  double *xd = malloc((x->numel ? x->numel : 1) * sizeof *xd);
  double *res = malloc(y->numel * sizeof *res);
  if (!xd || !res) {
    free(xd);
    free(res);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  ge_rd_load_f64(x->dtype, x->data, 0, x->numel, xd);
  for (size_t r = 0; r < nr; r++) {
    double roi[5];
    ge_rd_load_f64(rois->dtype, rois->data, r * 5, 5, roi);
    int64_t b = (int64_t)roi[0];
    if (b < 0 || b >= x->dims[0]) {
      free(xd);
      free(res);
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "roi %zu has batch index %lld out of range", r, (long long)b);
    }
    int64_t sw = (int64_t)round(roi[1] * s->scale), sh = (int64_t)round(roi[2] * s->scale);
    int64_t ew = (int64_t)round(roi[3] * s->scale), eh = (int64_t)round(roi[4] * s->scale);
    int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;
    double bh = (double)rh / (double)ph, bw = (double)rw / (double)pw;
    for (size_t c = 0; c < C; c++) {
      const double *src = xd + ((size_t)b * C + c) * (size_t)(H * W);
      double *dst = res + (r * C + c) * ph * pw;
      for (size_t i = 0; i < ph; i++)
        for (size_t j = 0; j < pw; j++) {
          int64_t hs = (int64_t)floor((double)i * bh) + sh, he = (int64_t)ceil((double)(i + 1) * bh) + sh;
          int64_t ws = (int64_t)floor((double)j * bw) + sw, we = (int64_t)ceil((double)(j + 1) * bw) + sw;
          hs = hs < 0 ? 0 : hs > H ? H : hs;
          he = he < 0 ? 0 : he > H ? H : he;
          ws = ws < 0 ? 0 : ws > W ? W : ws;
          we = we < 0 ? 0 : we > W ? W : we;
          double m = 0;
          if (he > hs && we > ws) {
            m = -INFINITY;
            for (int64_t h = hs; h < he; h++)
              for (int64_t w = ws; w < we; w++) m = fmax(m, src[h * W + w]);
          }
          dst[i * pw + j] = m;
        }
    }
  }
  ge_rd_store_f64(y->dtype, y->data, 0, y->numel, res);
  free(xd);
  free(res);
  return GE_OK;
}

/* ------------------------------------------------------------------ GridSample */

typedef enum { GS_NEAREST, GS_LINEAR, GS_CUBIC } gs_mode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

typedef struct gridsample_state {
  gs_mode mode;
  gs_pad pad;
  bool align;
} gridsample_state;

ge_status ge_rd_gridsample_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8,  GE_I16, GE_I32,
                                   GE_I64, GE_U8,  GE_U16,  GE_U32, GE_U64, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, types));
  GE_CHECK(ge_prepare_check_dtype(p, 1, float_types));
  gridsample_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  const char *mode = ge_node_attr_string(p->node, "mode", p->opset >= 20 ? "linear" : "bilinear");
  const char *pad = ge_node_attr_string(p->node, "padding_mode", "zeros");
  s->align = ge_node_attr_int(p->node, "align_corners", 0) != 0;
  if (!strcmp(mode, "nearest"))
    s->mode = GS_NEAREST;
  else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear"))
    s->mode = GS_LINEAR;
  else if (!strcmp(mode, "cubic") || !strcmp(mode, "bicubic"))
    s->mode = GS_CUBIC;
  else {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown mode '%s'", mode);
  }
  if (!strcmp(pad, "zeros"))
    s->pad = GS_ZEROS;
  else if (!strcmp(pad, "border"))
    s->pad = GS_BORDER;
  else if (!strcmp(pad, "reflection"))
    s->pad = GS_REFLECTION;
  else {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown padding_mode '%s'", pad);
  }
  *state = s;
  return GE_OK;
}

static double gs_reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    double n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

/* Index of tap i along a dim of length d, or -1 for a zero (padding) sample. */
static int64_t gs_index(const gridsample_state *s, int64_t i, int64_t d, double lo, double hi) {
  if (s->pad == GS_ZEROS) return i >= 0 && i < d ? i : -1;
  if (s->pad == GS_BORDER) return i < 0 ? 0 : i >= d ? d - 1 : i;
  int64_t r = (int64_t)gs_reflect((double)i, lo, hi);
  return r < 0 ? 0 : r >= d ? d - 1 : r;
}

static void gs_cubic_coeffs(double t, double *c) {
  const double A = -0.75;
  double x = t + 1;
  c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  x = 1 - t;
  c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
  x = 2 - t;
  c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

ge_status ge_rd_gridsample_run(const void *state, ge_kctx *ctx) {
  const gridsample_state *s = state;
  const ge_tensor *x = ctx->in[0], *grid = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  int32_t r = x->rank, nd = r - 2;
  if (r < 3 || grid->rank != r || grid->dims[r - 1] != nd || grid->dims[0] != x->dims[0])
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "expected X [N,C,D...] and grid [N,D_out...,%d]", (int)nd);
  size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1];
  size_t in_sp = 1, out_sp = 1;
  for (int32_t d = 0; d < nd; d++) {
    in_sp *= (size_t)x->dims[d + 2];
    out_sp *= (size_t)grid->dims[d + 1];
  }
  if (y->numel != N * C * out_sp)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu", y->numel, N * C * out_sp);
  if (y->numel == 0) return GE_OK;
  if (in_sp == 0) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "cannot sample an empty input");
  size_t ntap1 = s->mode == GS_NEAREST ? 1 : s->mode == GS_LINEAR ? 2 : 4;
  size_t ntaps = 1;
  for (int32_t d = 0; d < nd; d++) ntaps *= ntap1;
  if (ntaps > 4096) return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "too many spatial dims (%d)", (int)nd);
  double *xd = malloc(x->numel * sizeof *xd), *res = malloc(y->numel * sizeof *res);
  double *gd = malloc((grid->numel ? grid->numel : 1) * sizeof *gd);
  int64_t *toff = malloc(ntaps * sizeof *toff);
  double *tw = malloc(ntaps * sizeof *tw);
  if (!xd || !res || !gd || !toff || !tw) {
    free(xd), free(res), free(gd), free(toff), free(tw);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  ge_rd_load_f64(x->dtype, x->data, 0, x->numel, xd);
  ge_rd_load_f64(grid->dtype, grid->data, 0, grid->numel, gd);
  int64_t dims[GE_MAX_RANK];
  size_t stride[GE_MAX_RANK];
  for (int32_t d = 0; d < nd; d++) dims[d] = x->dims[d + 2];
  size_t acc = 1;
  for (int32_t d = nd - 1; d >= 0; d--) {
    stride[d] = acc;
    acc *= (size_t)dims[d];
  }
  for (size_t n = 0; n < N; n++)
    for (size_t o = 0; o < out_sp; o++) {
      const double *g = gd + (n * out_sp + o) * (size_t)nd;
      /* per dim taps: index (or -1) and weight */
      int64_t ti[GE_MAX_RANK][4];
      double tv[GE_MAX_RANK][4];
      for (int32_t d = 0; d < nd; d++) {
        double len = (double)dims[d];
        float gv = (float)g[nd - 1 - d]; /* grid lists x (last dim) first */
        float fx = s->align ? (gv + 1.0f) / 2.0f * (float)(len - 1) : ((gv + 1.0f) * (float)len - 1.0f) / 2.0f;
        double xv = fx;
        double lo = s->align ? 0.0 : -0.5, hi = s->align ? len - 1 : len - 0.5;
        if (s->mode == GS_NEAREST) xv = nearbyint(xv);
        if (xv < lo || xv > hi) {
          if (s->pad == GS_BORDER)
            xv = xv < 0 ? 0 : xv > len - 1 ? len - 1 : xv;
          else if (s->pad == GS_REFLECTION)
            xv = gs_reflect(xv, lo, hi);
        }
        if (s->mode == GS_NEAREST) {
          ti[d][0] = gs_index(s, (int64_t)xv, dims[d], lo, hi);
          tv[d][0] = 1.0;
        } else {
          double f = floor(xv), t = xv - f;
          int64_t b = (int64_t)f;
          if (s->mode == GS_LINEAR) {
            ti[d][0] = gs_index(s, b, dims[d], lo, hi);
            ti[d][1] = gs_index(s, b + 1, dims[d], lo, hi);
            tv[d][0] = 1 - t;
            tv[d][1] = t;
          } else {
            gs_cubic_coeffs(t, tv[d]);
            for (int k = 0; k < 4; k++) ti[d][k] = gs_index(s, b - 1 + k, dims[d], lo, hi);
          }
        }
      }
      /* combine the taps (product over dims) */
      size_t nt = 0;
      size_t idx[GE_MAX_RANK] = {0};
      for (size_t q = 0; q < ntaps; q++) {
        double w = 1;
        int64_t off = 0;
        for (int32_t d = 0; d < nd && off >= 0; d++) {
          int64_t ii = ti[d][idx[d]];
          if (ii < 0) off = -1;
          else off += ii * (int64_t)stride[d];
          w *= tv[d][idx[d]];
        }
        if (off >= 0 && w != 0) {
          toff[nt] = off;
          tw[nt] = w;
          nt++;
        }
        for (int32_t d = nd - 1; d >= 0; d--) {
          if (++idx[d] < ntap1) break;
          idx[d] = 0;
        }
      }
      for (size_t c = 0; c < C; c++) {
        const double *src = xd + (n * C + c) * in_sp;
        double v = 0;
        for (size_t q = 0; q < nt; q++) v += tw[q] * src[toff[q]];
        res[(n * C + c) * out_sp + o] = v;
      }
    }
  if (!ge_dtype_is_float(y->dtype))
    for (size_t i = 0; i < y->numel; i++) res[i] = nearbyint(res[i]);
  ge_rd_store_f64(y->dtype, y->data, 0, y->numel, res);
  free(xd), free(res), free(gd), free(toff), free(tw);
  return GE_OK;
}

/* ------------------------------------------------------------------ MaxUnpool */

typedef struct maxunpool_state {
  size_t nk;
  int64_t kernel[GE_MAX_RANK], strides[GE_MAX_RANK], pads[2 * GE_MAX_RANK];
} maxunpool_state;

ge_status ge_rd_maxunpool_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype i64[] = {GE_I64, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, float_types));
  GE_CHECK(ge_prepare_check_dtype(p, 1, i64));
  const int64_t *ks, *st = NULL, *pads = NULL;
  size_t nk, ns = 0, np = 0;
  if (!ge_node_attr_ints(p->node, "kernel_shape", &ks, &nk) || nk == 0 || nk > GE_MAX_RANK - 2)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute kernel_shape is required");
  ge_node_attr_ints(p->node, "strides", &st, &ns);
  ge_node_attr_ints(p->node, "pads", &pads, &np);
  if ((ns && ns != nk) || (np && np != 2 * nk))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "strides/pads do not match kernel_shape");
  maxunpool_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->nk = nk;
  for (size_t k = 0; k < nk; k++) {
    s->kernel[k] = ks[k];
    s->strides[k] = ns ? st[k] : 1;
    s->pads[k] = np ? pads[k] : 0;
    s->pads[k + nk] = np ? pads[k + nk] : 0;
  }
  *state = s;
  return GE_OK;
}

/* Values scatter into the unpooled shape inferred from the attributes (flat indices, as MaxPool
   produces them); with an explicit output_shape that block sits at the origin of the output, the
   rest being zero (as the onnx reference). */
ge_status ge_rd_maxunpool_run(const void *state, ge_kctx *ctx) {
  const maxunpool_state *s = state;
  const ge_tensor *x = ctx->in[0], *ind = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  int32_t r = x->rank;
  if (ind->numel != x->numel)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 1 (I) has %zu elements, input 0 has %zu", ind->numel, x->numel);
  if ((size_t)r != s->nk + 2 || y->rank != r)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 has rank %d, expected %zu", (int)r, s->nk + 2);
  int64_t inf[GE_MAX_RANK];
  size_t inf_numel = 1;
  bool same = true;
  for (int32_t d = 0; d < r; d++) {
    inf[d] = d < 2 ? x->dims[d]
                   : (x->dims[d] - 1) * s->strides[d - 2] + s->kernel[d - 2] - s->pads[d - 2] - s->pads[d - 2 + s->nk];
    if (inf[d] < 0) inf[d] = 0;
    inf_numel *= (size_t)inf[d];
    if (inf[d] != y->dims[d]) same = false;
  }
  size_t es = ge_dtype_size(x->dtype);
  memset(y->data, 0, y->nbytes);
  const int64_t *iv = ind->data;
  for (size_t i = 0; i < x->numel; i++) {
    int64_t k = iv[i];
    if (k < 0 || (uint64_t)k >= inf_numel)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "index %lld at %zu is outside the unpooled tensor (%zu elements)",
                          (long long)k, i, inf_numel);
    size_t dst = (size_t)k;
    if (!same) {
      /* multi-index in the inferred shape -> flat index in the output, if inside */
      size_t rem = (size_t)k, mul = 1;
      bool inside = true;
      dst = 0;
      for (int32_t d = r - 1; d >= 0; d--) {
        size_t id = rem % (size_t)inf[d];
        rem /= (size_t)inf[d];
        if ((int64_t)id >= y->dims[d]) inside = false;
        dst += id * mul;
        mul *= (size_t)y->dims[d];
      }
      if (!inside) continue;
    }
    memcpy((char *)y->data + dst * es, (const char *)x->data + i * es, es);
  }
  return GE_OK;
}
