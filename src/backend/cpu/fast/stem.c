/* A CNN's first convolution, on its planar graph input (issue 6).
 *
 * The first layer of a CNN reads the image as the user hands it: [N, C, H, W] float32 with
 * 1-4 channels.  oneDNN wants its activations channels-last, so ge used to reorder the image
 * (ge_fast_nchw3_to_nhwc) and run oneDNN's brgemm convolution on it, whose inner product has
 * just C * KH * KW = 27 terms (MobileNetV2's 3x3 stem): per-node minima of 236 us at 1 thread
 * and 134 at 2 (MobileNetV2, 224 x 224, 32 output channels).
 *
 * Here the weights are packed once, at prepare, as one row of output channels per tap (C x KH
 * x KW rows of M floats, M padded to a multiple of 16), and each block of NB adjacent output
 * pixels of one row keeps NB x M/16 accumulators in zmm registers (24 of them: 24 pixels of 16
 * channels, 12 of 32, 8 of 48 or 6 of 64): for every tap, the weight row is loaded once and each
 * pixel's input value is broadcast against it, reading the planar image directly.  The bias
 * starts the accumulators; the fused activation runs on each stored block.  Pixels whose window
 * crosses the left or right border are computed one at a time with the taps that fall inside;
 * rows at the top and bottom skip the kernel rows outside.  Threads take whole output rows.
 *
 * Taken for float32 convolutions (no bf16 or fp16 compute) where the processor has AVX-512F:
 * ungrouped, a constant weight of at most ST_MAX_C input channels, ST_MAX_M output channels and
 * ST_MAX_TAPS window taps, the input plain and the output channels-last, no residual input.  A
 * larger window stays with oneDNN: ResNet-50's 7 x 7 stem (64 channels) took 1.77-1.85 ms here
 * against oneDNN's 1.42-1.53 at 1 thread (scratch benchmark), and a 5 x 5 one 0.51-0.59 against
 * 0.43-0.49 (oneDNN timed with a copy of the image to channels-last). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* the block's pixel loops unroll into registers */
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/threadpool.h"
#include "compiler/layout.h"
#include "ops/fused.h"
#include "ops/nn_geom.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ST_X86 1
#define ST_TARGET __attribute__((target("avx512f,fma")))
#else
#define ST_X86 0
#endif

#define ST_MAX_C 4
#define ST_MAX_M 64
#define ST_MAX_TAPS 9

typedef struct st_state {
  int64_t n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, m;
  int64_t ox_lo, ox_hi; /* output columns whose window lies inside the row: [ox_lo, ox_hi) */
  size_t cp;            /* m rounded up to a multiple of 16: a packed weight row */
  float *wp;            /* c * kh * kw rows of cp floats (tap order: channel, kernel row, column) */
  bool bias;
  ge_fused_act act;
  float p0, p1;
} st_state;

static ge_status decline(const ge_prepare_ctx *p, const char *why) {
  return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "stem convolution: %s", why);
}

static ge_status st_prepare(const ge_prepare_ctx *p, void **state) {
  if (!ge_cpu_avx512_fma()) return decline(p, "needs AVX-512");
  if (ge_dn_lowp_dt(p) != dnnl_f32) return decline(p, "a reduced-precision node");
  if (p->n_in > 3 && p->in[3].present) return decline(p, "a residual input");
  if (p->n_out != 1 || p->out[0].dtype != GE_F32 || ge_fo_in_dtype(p, 0) != GE_F32 ||
      ge_fo_in_dtype(p, 1) != GE_F32)
    return decline(p, "float32 only");
  if (!p->in[1].value || !p->in[1].value->data) return decline(p, "needs a constant weight");
  if (p->in_layout && p->in_layout[0] != GE_LAYOUT_PLAIN) return decline(p, "needs a planar input");
  if (!p->out_layout || p->out_layout[0] != GE_LAYOUT_NHWC) return decline(p, "writes channels-last only");
  const ge_shape *x = &p->in[0].type->shape, *wt = &p->in[1].type->shape, *y = &p->out[0].shape;
  if (x->rank != 4 || wt->rank != 4 || y->rank != 4 || !ge_shape_is_static(x) || !ge_shape_is_static(y))
    return decline(p, "not a 2-D convolution of static shape");
  const ge_node *n = p->node;
  ge_nn_win_attrs at;
  if (ge_nn_win_parse(n, false, &at) != GE_OK || ge_nn_win_resolve(n, &at, 2, &wt->dims[2]) != GE_OK)
    return decline(p, "attributes");
  if (at.group != 1) return decline(p, "grouped");
  st_state g = {.n = x->dims[0], .c = x->dims[1], .h = x->dims[2], .w = x->dims[3], .kh = wt->dims[2],
                .kw = wt->dims[3], .sh = at.strides[0], .sw = at.strides[1], .dh = at.dilations[0],
                .dw = at.dilations[1], .oh = y->dims[2], .ow = y->dims[3], .m = wt->dims[0]};
  if (g.c < 1 || g.c > ST_MAX_C || wt->dims[1] != g.c) return decline(p, "more than 4 input channels");
  if (g.m < 1 || g.m > ST_MAX_M || y->dims[1] != g.m || y->dims[0] != g.n) return decline(p, "more than 64 output channels");
  if (g.kh < 1 || g.kw < 1 || g.kh * g.kw > ST_MAX_TAPS) return decline(p, "a window of more than 9 taps");
  int64_t oh = 0, ow = 0, pb = 0, pr = 0;
  if (ge_nn_win_out(n, &at, 0, g.h, false, &oh, &g.pt, &pb) != GE_OK ||
      ge_nn_win_out(n, &at, 1, g.w, false, &ow, &g.pl, &pr) != GE_OK || oh != g.oh || ow != g.ow || g.oh < 1 ||
      g.ow < 1)
    return decline(p, "geometry");
  bool fused = !strcmp(n->op_type, "FusedConv");
  g.act = GE_ACT_NONE;
  if (fused) {
    g.act = ge_fused_act_of(n, "activation", "activation_params", &g.p0, &g.p1);
    if (g.act == GE_ACT_COUNT || !ge_fo_act_supported(g.act)) return decline(p, "activation");
  }
  g.bias = p->n_in > 2 && p->in[2].present;
  size_t bn = 0;
  if (g.bias && (ge_fo_in_dtype(p, 2) != GE_F32 || !ge_shape_numel(&p->in[2].type->shape, &bn) ||
                 bn != (size_t)g.m))
    return decline(p, "bias");
  /* columns whose window is wholly inside: ox * sw - pl >= 0 and ox * sw - pl + (kw - 1) dw < w */
  int64_t span = (g.kw - 1) * g.dw;
  g.ox_lo = (g.pl + g.sw - 1) / g.sw;
  g.ox_hi = g.w - 1 - span + g.pl < 0 ? 0 : (g.w - 1 - span + g.pl) / g.sw + 1;
  if (g.ox_hi > g.ow) g.ox_hi = g.ow;
  if (g.ox_lo > g.ox_hi) g.ox_lo = g.ox_hi;
  g.cp = ((size_t)g.m + 15) / 16 * 16;
  size_t taps = (size_t)(g.c * g.kh * g.kw);
  st_state *s = calloc(1, sizeof *s);
  float *wp = s ? ge_const_alloc(taps * g.cp * sizeof(float)) : NULL;
  if (!wp) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "stem convolution: out of memory");
  }
  const float *w = p->in[1].value->data; /* [m][c][kh][kw]: tap t of output channel o at o * taps + t */
  memset(wp, 0, taps * g.cp * sizeof(float));
  for (size_t o = 0; o < (size_t)g.m; o++)
    for (size_t t = 0; t < taps; t++) wp[t * g.cp + o] = w[o * taps + t];
  g.wp = wp;
  *s = g;
  ge_prepare_drop_packed(p, 1u << 1);
  *state = s;
  return GE_OK;
}

#if ST_X86
typedef struct st_job {
  const st_state *s;
  const float *x, *bias;
  float *y;
} st_job;

static inline __mmask16 lanes(int64_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1); }

/* NB output pixels (ox .. ox + NB - 1, all inside the row) of row oy, image b: CB vectors of 16
   channels each, kernel rows [ky0, ky1).  S: the horizontal stride when it is 1 or 2 (so that
   the pixels' offsets are constants), else 0 and read from the state. */
ST_TARGET static inline __attribute__((always_inline)) void st_block(const st_job *j, const float *xb, float *yb,
                                                                      int64_t oy, int64_t ox, int64_t ky0,
                                                                      int64_t ky1, const int NB, const int CB,
                                                                      const int S) {
  const st_state *s = j->s;
  const int64_t sw = S ? S : s->sw, W = s->w, cp = (int64_t)s->cp;
  __m512 a0[30], a1[30], a2[30], a3[30];
  const int64_t m = s->m;
  __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0, b3 = b0;
  if (j->bias) {
    b0 = _mm512_maskz_loadu_ps(lanes(m), j->bias);
    if (CB > 1) b1 = _mm512_maskz_loadu_ps(lanes(m - 16), j->bias + 16);
    if (CB > 2) b2 = _mm512_maskz_loadu_ps(lanes(m - 32), j->bias + 32);
    if (CB > 3) b3 = _mm512_maskz_loadu_ps(lanes(m - 48), j->bias + 48);
  }
  _Pragma("GCC unroll 30") for (int i = 0; i < NB; i++) {
    a0[i] = b0;
    if (CB > 1) a1[i] = b1;
    if (CB > 2) a2[i] = b2;
    if (CB > 3) a3[i] = b3;
  }
  for (int64_t ci = 0; ci < s->c; ci++)
    for (int64_t ky = ky0; ky < ky1; ky++) {
      const float *xr = xb + (ci * s->h + oy * s->sh - s->pt + ky * s->dh) * W + ox * sw - s->pl;
      const float *wr = s->wp + (size_t)((ci * s->kh + ky) * s->kw) * s->cp;
      for (int64_t kx = 0; kx < s->kw; kx++, wr += cp, xr += s->dw) {
        __m512 w0 = _mm512_load_ps(wr), w1 = _mm512_setzero_ps(), w2 = w1, w3 = w1;
        if (CB > 1) w1 = _mm512_load_ps(wr + 16);
        if (CB > 2) w2 = _mm512_load_ps(wr + 32);
        if (CB > 3) w3 = _mm512_load_ps(wr + 48);
        _Pragma("GCC unroll 30") for (int i = 0; i < NB; i++) {
          __m512 xv = _mm512_set1_ps(xr[i * sw]);
          a0[i] = _mm512_fmadd_ps(xv, w0, a0[i]);
          if (CB > 1) a1[i] = _mm512_fmadd_ps(xv, w1, a1[i]);
          if (CB > 2) a2[i] = _mm512_fmadd_ps(xv, w2, a2[i]);
          if (CB > 3) a3[i] = _mm512_fmadd_ps(xv, w3, a3[i]);
        }
      }
    }
  float *y = yb + (oy * s->ow + ox) * m;
  if (s->act == GE_ACT_RELU || s->act == GE_ACT_CLIP) { /* in registers; NaN stays NaN */
    const __m512 lo = _mm512_set1_ps(s->act == GE_ACT_RELU ? 0.f : s->p0),
                 hi = _mm512_set1_ps(s->act == GE_ACT_RELU ? INFINITY : s->p1);
    _Pragma("GCC unroll 30") for (int i = 0; i < NB; i++) {
      a0[i] = _mm512_min_ps(hi, _mm512_max_ps(lo, a0[i]));
      if (CB > 1) a1[i] = _mm512_min_ps(hi, _mm512_max_ps(lo, a1[i]));
      if (CB > 2) a2[i] = _mm512_min_ps(hi, _mm512_max_ps(lo, a2[i]));
      if (CB > 3) a3[i] = _mm512_min_ps(hi, _mm512_max_ps(lo, a3[i]));
    }
  }
  _Pragma("GCC unroll 30") for (int i = 0; i < NB; i++) {
    float *yp = y + i * m;
    _mm512_mask_storeu_ps(yp, lanes(m), a0[i]);
    if (CB > 1) _mm512_mask_storeu_ps(yp + 16, lanes(m - 16), a1[i]);
    if (CB > 2) _mm512_mask_storeu_ps(yp + 32, lanes(m - 32), a2[i]);
    if (CB > 3) _mm512_mask_storeu_ps(yp + 48, lanes(m - 48), a3[i]);
  }
  if (s->act != GE_ACT_NONE && s->act != GE_ACT_RELU && s->act != GE_ACT_CLIP)
    ge_fo_act_inplace(s->act, s->p0, s->p1, y, (size_t)(NB * m));
}

/* Output pixel (oy, ox) whose window may cross the left or right border: the taps inside. */
ST_TARGET static void st_pixel(const st_job *j, const float *xb, float *yb, int64_t oy, int64_t ox, int64_t ky0,
                               int64_t ky1) {
  const st_state *s = j->s;
  float *y = yb + (oy * s->ow + ox) * s->m;
  for (int64_t c0 = 0; c0 < s->m; c0 += 16) {
    __mmask16 k = lanes(s->m - c0);
    __m512 acc = j->bias ? _mm512_maskz_loadu_ps(k, j->bias + c0) : _mm512_setzero_ps();
    for (int64_t ci = 0; ci < s->c; ci++)
      for (int64_t ky = ky0; ky < ky1; ky++) {
        const float *xr = xb + (ci * s->h + oy * s->sh - s->pt + ky * s->dh) * s->w;
        const float *wr = s->wp + (size_t)((ci * s->kh + ky) * s->kw) * s->cp + c0;
        for (int64_t kx = 0; kx < s->kw; kx++) {
          int64_t ix = ox * s->sw - s->pl + kx * s->dw;
          if (ix >= 0 && ix < s->w)
            acc = _mm512_fmadd_ps(_mm512_set1_ps(xr[ix]), _mm512_load_ps(wr + kx * (int64_t)s->cp), acc);
        }
      }
    _mm512_mask_storeu_ps(y + c0, k, acc);
  }
  if (s->act != GE_ACT_NONE) ge_fo_act_inplace(s->act, s->p0, s->p1, y, (size_t)s->m);
}

/* Row oy of image b: the border pixels one at a time, the inside in blocks of NB (the last block
   moved back to end at the last inside pixel, recomputing a few, when the inside is NB or more
   wide; single pixels otherwise). */
ST_TARGET static inline __attribute__((always_inline)) void st_row(const st_job *j, const float *xb, float *yb,
                                                                    int64_t oy, const int NB, const int CB,
                                                                    const int S) {
  const st_state *s = j->s;
  int64_t iy0 = oy * s->sh - s->pt, ky0 = 0, ky1 = s->kh;
  while (ky0 < ky1 && iy0 + ky0 * s->dh < 0) ky0++;
  while (ky1 > ky0 && iy0 + (ky1 - 1) * s->dh >= s->h) ky1--;
  int64_t lo = s->ox_lo, hi = s->ox_hi, ox = 0;
  for (; ox < lo; ox++) st_pixel(j, xb, yb, oy, ox, ky0, ky1);
  for (; ox + NB <= hi; ox += NB) st_block(j, xb, yb, oy, ox, ky0, ky1, NB, CB, S);
  if (ox < hi) {
    if (hi - lo >= NB) st_block(j, xb, yb, oy, hi - NB, ky0, ky1, NB, CB, S);
    else
      for (; ox < hi; ox++) st_block(j, xb, yb, oy, ox, ky0, ky1, 1, CB, S);
  }
  for (ox = hi; ox < s->ow; ox++) st_pixel(j, xb, yb, oy, ox, ky0, ky1);
}

#define ST_ROW_CB(NB, CB)                                                                                   \
  ST_TARGET static void st_row_##CB(const st_job *j, const float *xb, float *yb, int64_t oy) {             \
    if (j->s->sw == 1) st_row(j, xb, yb, oy, NB, CB, 1);                                                    \
    else if (j->s->sw == 2) st_row(j, xb, yb, oy, NB, CB, 2);                                               \
    else st_row(j, xb, yb, oy, NB, CB, 0);                                                                  \
  }
ST_ROW_CB(30, 1)
ST_ROW_CB(14, 2)
ST_ROW_CB(9, 3)
ST_ROW_CB(6, 4)
#undef ST_ROW_CB

/* Output rows [r0, r1) counted over the batch (row r: image r / oh, row r % oh). */
static void st_rows(void *arg, size_t r0, size_t r1) {
  const st_job *j = arg;
  const st_state *s = j->s;
  int cb = (int)((s->m + 15) / 16);
  for (size_t r = r0; r < r1; r++) {
    int64_t b = (int64_t)r / s->oh, oy = (int64_t)r % s->oh;
    const float *xb = j->x + b * s->c * s->h * s->w;
    float *yb = j->y + b * s->oh * s->ow * s->m;
    if (cb == 1) st_row_1(j, xb, yb, oy);
    else if (cb == 2) st_row_2(j, xb, yb, oy);
    else if (cb == 3) st_row_3(j, xb, yb, oy);
    else st_row_4(j, xb, yb, oy);
  }
}
#endif

static ge_status st_run(const void *state, ge_kctx *ctx) {
  const st_state *s = state;
  const ge_tensor *X = ctx->n_in > 0 ? ctx->in[0] : NULL;
  const ge_tensor *B = s->bias && ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *Y = ctx->n_out > 0 ? ctx->out[0] : NULL;
  size_t xn = (size_t)(s->n * s->c * s->h * s->w), yn = (size_t)(s->n * s->oh * s->ow * s->m);
  if (!X || X->dtype != GE_F32 || X->numel != xn || !X->data)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "stem convolution: input 0 has %zu elements (%s), the plan expects %zu float32",
                        X ? X->numel : 0, X ? ge_dtype_name(X->dtype) : "missing", xn);
  if (s->bias && (!B || B->dtype != GE_F32 || B->numel != (size_t)s->m || !B->data))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "stem convolution: the bias (input 2) must be %lld float32", (long long)s->m);
  if (!Y || Y->dtype != GE_F32 || Y->numel != yn || !Y->data)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "stem convolution: output must be %zu float32", yn);
#if ST_X86
  st_job j = {.s = s, .x = X->data, .bias = B ? B->data : NULL, .y = Y->data};
  size_t rows = (size_t)(s->n * s->oh);
  /* about half a MFLOP a thread at least */
  size_t flops = 2 * yn * (size_t)(s->c * s->kh * s->kw);
  ge_parallel_for(ge_fo_threads(ctx->threads, flops, (size_t)1 << 19), rows, st_rows, &j);
  return GE_OK;
#else
  return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "stem convolution: not built for this processor");
#endif
}

static void st_release(void *state) {
  st_state *s = state;
  if (!s) return;
  ge_const_free(s->wp);
  free(s);
}

/* the weight (input 1) lives packed in the state */
static uint32_t st_packed_inputs(const void *state) { return state ? 1u << 1 : 0; }

#define ST_KERNEL \
  {.prepare = st_prepare, .run = st_run, .release = st_release, .overwrites_outputs = true, .packed_inputs = st_packed_inputs}
const ge_kernel_def ge_fast_kernels_stem[] = {
    {"", "Conv", 1, 0, ST_KERNEL},
    {GE_FUSED_DOMAIN, "FusedConv", 1, 0, ST_KERNEL},
    {0},
};
#undef ST_KERNEL
