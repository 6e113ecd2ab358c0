/* Reference CPU kernels of the signal family: DFT, STFT, HannWindow, HammingWindow,
 * BlackmanWindow, MelWeightMatrix.  Transforms are O(n log n): iterative radix-2 for powers of
 * two, Bluestein's chirp-z (through a power-of-two FFT) for other lengths, a direct sum only
 * for tiny lengths.  Computes in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/qrs_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ------------------------------------------------------------------ FFT plan */

enum { FFT_DIRECT, FFT_RADIX2, FFT_BLUESTEIN };

typedef struct fft_plan {
  size_t n;      /* transform length */
  int kind;
  size_t m;      /* radix-2 length (n itself, or Bluestein's padded length) */
  double *tw;    /* m/2 twiddles exp(-2 pi i k / m), interleaved; DIRECT: n twiddles of n */
  double *chirp; /* Bluestein: n values exp(-i pi k^2 / n) */
  double *bf;    /* Bluestein: FFT of the conjugate chirp filter (m complex) */
  double *work;  /* m complex */
} fft_plan;

static void fft_plan_free(fft_plan *p) {
  free(p->tw);
  free(p->chirp);
  free(p->bf);
  free(p->work);
  memset(p, 0, sizeof *p);
}

static bool is_pow2(size_t n) { return n && !(n & (n - 1)); }

/* In-place radix-2 forward FFT of m complex values (interleaved), twiddles tw. */
static void radix2(double *a, size_t m, const double *tw) {
  for (size_t i = 1, j = 0; i < m; i++) {
    size_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double tr = a[2 * i], ti = a[2 * i + 1];
      a[2 * i] = a[2 * j];
      a[2 * i + 1] = a[2 * j + 1];
      a[2 * j] = tr;
      a[2 * j + 1] = ti;
    }
  }
  for (size_t len = 2; len <= m; len <<= 1) {
    size_t half = len >> 1, step = m / len;
    for (size_t i = 0; i < m; i += len)
      for (size_t k = 0; k < half; k++) {
        double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
        double *u = a + 2 * (i + k), *v = a + 2 * (i + k + half);
        double xr = v[0] * wr - v[1] * wi, xi = v[0] * wi + v[1] * wr;
        v[0] = u[0] - xr;
        v[1] = u[1] - xi;
        u[0] += xr;
        u[1] += xi;
      }
  }
}

static double *twiddles(size_t m, size_t count) {
  double *t = malloc(2 * count * sizeof *t + 1);
  if (!t) return NULL;
  for (size_t k = 0; k < count; k++) {
    double ang = -2.0 * M_PI * (double)k / (double)m;
    t[2 * k] = cos(ang);
    t[2 * k + 1] = sin(ang);
  }
  return t;
}

static ge_status fft_plan_make(const ge_kctx *ctx, size_t n, fft_plan *p) {
  memset(p, 0, sizeof *p);
  p->n = n;
  if (n > ((size_t)1 << 40)) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "transform length %zu is too large", n);
  if (is_pow2(n)) {
    p->kind = FFT_RADIX2;
    p->m = n;
    p->tw = twiddles(n, n / 2 + 1);
    p->work = malloc(2 * n * sizeof(double) + 1);
    if (!p->tw || !p->work) goto oom;
    return GE_OK;
  }
  if (n <= 16) {
    p->kind = FFT_DIRECT;
    p->tw = twiddles(n, n);
    p->work = malloc(2 * n * sizeof(double) + 1);
    if (!p->tw || !p->work) goto oom;
    return GE_OK;
  }
  p->kind = FFT_BLUESTEIN;
  size_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  p->m = m;
  p->tw = twiddles(m, m / 2 + 1);
  p->chirp = malloc(2 * n * sizeof(double));
  p->bf = calloc(2 * m, sizeof(double));
  p->work = malloc(2 * m * sizeof(double));
  if (!p->tw || !p->chirp || !p->bf || !p->work) goto oom;
  for (size_t k = 0; k < n; k++) {
    /* k^2 mod 2n keeps the angle exact for large k */
    unsigned __int128 k2 = (unsigned __int128)k * k % (2 * (unsigned __int128)n);
    double ang = -M_PI * (double)(size_t)k2 / (double)n;
    p->chirp[2 * k] = cos(ang);
    p->chirp[2 * k + 1] = sin(ang);
  }
  p->bf[0] = p->chirp[0];
  p->bf[1] = -p->chirp[1];
  for (size_t k = 1; k < n; k++) {
    p->bf[2 * k] = p->bf[2 * (m - k)] = p->chirp[2 * k];
    p->bf[2 * k + 1] = p->bf[2 * (m - k) + 1] = -p->chirp[2 * k + 1];
  }
  radix2(p->bf, m, p->tw);
  return GE_OK;
oom:
  fft_plan_free(p);
  return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory planning a transform of length %zu", n);
}

/* Forward DFT of n complex values in place. */
static void fft_exec(fft_plan *p, double *a) {
  size_t n = p->n;
  if (p->kind == FFT_RADIX2) {
    radix2(a, n, p->tw);
  } else if (p->kind == FFT_DIRECT) {
    double *o = p->work;
    for (size_t k = 0; k < n; k++) {
      double sr = 0, si = 0;
      size_t idx = 0;
      for (size_t j = 0; j < n; j++) {
        double wr = p->tw[2 * idx], wi = p->tw[2 * idx + 1];
        sr += a[2 * j] * wr - a[2 * j + 1] * wi;
        si += a[2 * j] * wi + a[2 * j + 1] * wr;
        idx += k;
        if (idx >= n) idx -= n;
      }
      o[2 * k] = sr;
      o[2 * k + 1] = si;
    }
    memcpy(a, o, 2 * n * sizeof *a);
  } else {
    size_t m = p->m;
    double *w = p->work;
    const double *c = p->chirp;
    for (size_t j = 0; j < n; j++) {
      w[2 * j] = a[2 * j] * c[2 * j] - a[2 * j + 1] * c[2 * j + 1];
      w[2 * j + 1] = a[2 * j] * c[2 * j + 1] + a[2 * j + 1] * c[2 * j];
    }
    memset(w + 2 * n, 0, 2 * (m - n) * sizeof *w);
    radix2(w, m, p->tw);
    /* pointwise product, then inverse FFT as conj(FFT(conj(.))) */
    for (size_t k = 0; k < m; k++) {
      double xr = w[2 * k], xi = w[2 * k + 1], br = p->bf[2 * k], bi = p->bf[2 * k + 1];
      w[2 * k] = xr * br - xi * bi;
      w[2 * k + 1] = -(xr * bi + xi * br);
    }
    radix2(w, m, p->tw);
    double inv = 1.0 / (double)m;
    for (size_t k = 0; k < n; k++) {
      double yr = w[2 * k] * inv, yi = -w[2 * k + 1] * inv;
      a[2 * k] = yr * c[2 * k] - yi * c[2 * k + 1];
      a[2 * k + 1] = yr * c[2 * k + 1] + yi * c[2 * k];
    }
  }
}

/* ------------------------------------------------------------------ DFT */

typedef struct dft_state {
  bool inverse, onesided;
  int64_t axis_attr; /* opset < 20 */
  bool axis_input;
} dft_state;

static ge_status dft_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype ft[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, ft));
  dft_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->inverse = ge_node_attr_int(p->node, "inverse", 0) != 0;
  s->onesided = ge_node_attr_int(p->node, "onesided", 0) != 0;
  s->axis_input = p->opset >= 20;
  s->axis_attr = s->axis_input ? -2 : ge_node_attr_int(p->node, "axis", 1);
  *state = s;
  return GE_OK;
}

static ge_status read_scalar_int(const ge_kctx *ctx, size_t i, const char *what, int64_t *v) {
  const ge_tensor *t = ctx->in[i];
  if (t->numel != 1)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input %zu (%s) must hold one value, has %zu", i, what, t->numel);
  if (t->dtype == GE_I64)
    *v = *(const int64_t *)t->data;
  else if (t->dtype == GE_I32)
    *v = *(const int32_t *)t->data;
  else
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "input %zu (%s) has dtype %s; int32 or int64 expected", i,
                        what, ge_dtype_name(t->dtype));
  return GE_OK;
}

static ge_status dft_run(const void *state, ge_kctx *ctx) {
  const dft_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  int32_t rank = x->rank;
  int64_t axis = s->axis_attr;
  if (s->axis_input && ctx->n_in > 2 && ctx->in[2]) GE_CHECK(read_scalar_int(ctx, 2, "axis", &axis));
  if (axis < 0) axis += rank;
  if (rank < 2 || axis < 0 || axis >= rank - 1)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is not a signal dim of input 0 (rank %d)",
                        (long long)axis, (int)rank);
  size_t N = (size_t)x->dims[axis], cin = (size_t)x->dims[rank - 1];
  if (cin != 1 && cin != 2)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "the last dim of input 0 must be 1 or 2, is %zu", cin);
  int64_t nl;
  bool irfft = s->inverse && s->onesided;
  if (ctx->n_in > 1 && ctx->in[1]) {
    GE_CHECK(read_scalar_int(ctx, 1, "dft_length", &nl));
    if (nl <= 0) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "dft_length must be > 0, got %lld", (long long)nl);
  } else {
    nl = irfft ? 2 * ((int64_t)N - 1) : (int64_t)N;
    if (nl <= 0) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "signal dim %lld is too short", (long long)axis);
  }
  size_t n = (size_t)nl;
  size_t nout = irfft ? n : s->onesided ? n / 2 + 1 : n, cout = irfft ? 1 : 2;
  if ((size_t)y->dims[axis] != nout || (size_t)y->dims[rank - 1] != cout)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output shape does not match the transform (%zu x %zu)", nout, cout);
  size_t outer = ge_qrs_prod(x->dims, 0, (int32_t)axis);
  size_t inner = ge_qrs_prod(x->dims, (int32_t)axis + 1, rank - 1);
  double *xd = ge_qrs_alloc(ctx, x->numel + 1, sizeof(double));
  double *yd = ge_qrs_alloc(ctx, y->numel + 1, sizeof(double));
  double *line = ge_qrs_alloc(ctx, 2 * n + 2, sizeof(double));
  fft_plan plan = {0};
  ge_status st = GE_OK;
  if (!xd || !yd || !line) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  st = fft_plan_make(ctx, n, &plan);
  if (st != GE_OK) goto done;
  ge_qrs_to_f64(x->dtype, x->data, xd, x->numel);
  double scale = s->inverse ? 1.0 / (double)n : 1.0;
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      const double *src = xd + (o * N * inner + in) * cin;
      memset(line, 0, 2 * n * sizeof *line);
      if (irfft) {
        size_t half = n / 2;
        for (size_t k = 0; k <= half && k < N; k++) {
          const double *e = src + k * inner * cin;
          line[2 * k] = e[0];
          line[2 * k + 1] = cin == 2 ? e[1] : 0.0;
        }
        line[1] = 0.0;
        if (n % 2 == 0) line[2 * half + 1] = 0.0;
        for (size_t k = 1; k < (n + 1) / 2; k++) {
          line[2 * (n - k)] = line[2 * k];
          line[2 * (n - k) + 1] = -line[2 * k + 1];
        }
      } else {
        size_t lim = N < n ? N : n;
        for (size_t k = 0; k < lim; k++) {
          const double *e = src + k * inner * cin;
          line[2 * k] = e[0];
          line[2 * k + 1] = cin == 2 ? e[1] : 0.0;
        }
      }
      if (s->inverse)
        for (size_t k = 0; k < n; k++) line[2 * k + 1] = -line[2 * k + 1];
      fft_exec(&plan, line);
      double sign = s->inverse ? -1.0 : 1.0;
      double *dst = yd + (o * nout * inner + in) * cout;
      for (size_t k = 0; k < nout; k++) {
        double *e = dst + k * inner * cout;
        e[0] = line[2 * k] * scale;
        if (cout == 2) e[1] = sign * line[2 * k + 1] * scale;
      }
    }
  ge_qrs_from_f64(y->dtype, yd, y->data, y->numel);
done:
  fft_plan_free(&plan);
  free(xd);
  free(yd);
  free(line);
  return st;
}

/* ------------------------------------------------------------------ STFT */

static ge_status stft_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype ft[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};
  GE_CHECK(ge_prepare_check_dtype(p, 0, ft));
  bool *s = malloc(sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  *s = ge_node_attr_int(p->node, "onesided", 1) != 0;
  *state = s;
  return GE_OK;
}

static ge_status stft_run(const void *state, ge_kctx *ctx) {
  bool onesided = *(const bool *)state;
  const ge_tensor *x = ctx->in[0];
  const ge_tensor *win = ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "signal must be [batch, length, 1 or 2]");
  int64_t step, fl;
  GE_CHECK(read_scalar_int(ctx, 1, "frame_step", &step));
  size_t L = (size_t)x->dims[1], B = (size_t)x->dims[0], cin = (size_t)x->dims[2];
  if (win && win->rank != 1) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "window must have rank 1");
  if (ctx->n_in > 3 && ctx->in[3])
    GE_CHECK(read_scalar_int(ctx, 3, "frame_length", &fl));
  else
    fl = win ? win->dims[0] : (int64_t)L;
  if (step <= 0 || fl <= 0 || (size_t)fl > L)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "frame_step %lld / frame_length %lld invalid for length %zu",
                        (long long)step, (long long)fl, L);
  size_t n = (size_t)fl, wl = win ? (size_t)win->dims[0] : n;
  size_t frames = 1 + (L - n) / (size_t)step, bins = onesided ? n / 2 + 1 : n;
  if ((size_t)y->dims[0] != B || (size_t)y->dims[1] != frames || (size_t)y->dims[2] != bins)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output shape does not match [%zu, %zu, %zu, 2]", B, frames, bins);
  double *xd = ge_qrs_alloc(ctx, x->numel + 1, sizeof(double));
  double *wd = ge_qrs_alloc(ctx, wl + 1, sizeof(double));
  double *yd = ge_qrs_alloc(ctx, y->numel + 1, sizeof(double));
  double *line = ge_qrs_alloc(ctx, 2 * n + 2, sizeof(double));
  fft_plan plan = {0};
  ge_status st = GE_OK;
  if (!xd || !wd || !yd || !line) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  st = fft_plan_make(ctx, n, &plan);
  if (st != GE_OK) goto done;
  ge_qrs_to_f64(x->dtype, x->data, xd, x->numel);
  if (win)
    ge_qrs_to_f64(win->dtype, win->data, wd, wl);
  else
    for (size_t k = 0; k < wl; k++) wd[k] = 1.0;
  for (size_t b = 0; b < B; b++)
    for (size_t f = 0; f < frames; f++) {
      size_t begin = f * (size_t)step;
      memset(line, 0, 2 * n * sizeof *line);
      for (size_t k = 0; k < wl && k < n && begin + k < L; k++) {
        const double *e = xd + (b * L + begin + k) * cin;
        line[2 * k] = e[0] * wd[k];
        line[2 * k + 1] = cin == 2 ? e[1] * wd[k] : 0.0;
      }
      fft_exec(&plan, line);
      memcpy(yd + ((b * frames + f) * bins) * 2, line, 2 * bins * sizeof *line);
    }
  ge_qrs_from_f64(y->dtype, yd, y->data, y->numel);
done:
  fft_plan_free(&plan);
  free(xd);
  free(wd);
  free(yd);
  free(line);
  return st;
}

/* ------------------------------------------------------------------ windows */

typedef struct win_state {
  int kind; /* 0 hann, 1 hamming, 2 blackman */
  bool periodic;
} win_state;

static ge_status win_prepare(const ge_prepare_ctx *p, void **state) {
  win_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  const char *op = p->node->op_type;
  s->kind = !strcmp(op, "HannWindow") ? 0 : !strcmp(op, "HammingWindow") ? 1 : 2;
  s->periodic = ge_node_attr_int(p->node, "periodic", 1) != 0;
  *state = s;
  return GE_OK;
}

static ge_status win_run(const void *state, ge_kctx *ctx) {
  const win_state *s = state;
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  int64_t size;
  GE_CHECK(read_scalar_int(ctx, 0, "size", &size));
  if (size < 0 || y->numel != (size_t)size)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "size %lld does not match the output (%zu)", (long long)size, y->numel);
  size_t n = (size_t)size;
  double *v = ge_qrs_alloc(ctx, n + 1, sizeof(double));
  if (!v) return GE_ERR_OUT_OF_MEMORY;
  double den = s->periodic ? (double)n : (double)n - 1.0;
  const double a0 = 25.0 / 46.0;
  for (size_t i = 0; i < n; i++) {
    double t = 2.0 * M_PI * (double)i / den;
    if (s->kind == 0)
      v[i] = 0.5 - 0.5 * cos(t);
    else if (s->kind == 1)
      v[i] = a0 - (1.0 - a0) * cos(t);
    else
      v[i] = 0.42 - 0.5 * cos(t) + 0.08 * cos(2.0 * t);
  }
  if (n == 1 && !s->periodic) v[0] = 1.0;
  if (ge_dtype_is_float(y->dtype))
    ge_qrs_from_f64(y->dtype, v, y->data, n);
  else
    ge_qrs_store_sat(y->dtype, v, y->data, n);
  free(v);
  return GE_OK;
}

/* ------------------------------------------------------------------ MelWeightMatrix */

static ge_status mel_run(const void *state, ge_kctx *ctx) {
  (void)state;
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  int64_t bins, len, rate;
  GE_CHECK(read_scalar_int(ctx, 0, "num_mel_bins", &bins));
  GE_CHECK(read_scalar_int(ctx, 1, "dft_length", &len));
  GE_CHECK(read_scalar_int(ctx, 2, "sample_rate", &rate));
  double lo, hi;
  for (size_t i = 3; i < 5; i++)
    if (ctx->in[i]->numel != 1)
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input %zu must hold one value", i);
  ge_qrs_to_f64(ctx->in[3]->dtype, ctx->in[3]->data, &lo, 1);
  ge_qrs_to_f64(ctx->in[4]->dtype, ctx->in[4]->data, &hi, 1);
  if (bins <= 0 || len <= 0 || rate <= 0)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "num_mel_bins, dft_length and sample_rate must be > 0");
  size_t nspec = (size_t)len / 2 + 1, nb = (size_t)bins;
  if (y->numel != nspec * nb) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output shape mismatch");
  double *out = calloc(nspec * nb + 1, sizeof(double));
  int64_t *fb = ge_qrs_alloc(ctx, nb + 2, sizeof(int64_t));
  if (!out || !fb) {
    free(out);
    free(fb);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  /* the triangular filters' edges, in spectrogram bins (as the ONNX reference computes them) */
  double lmel = 2595.0 * log1p(lo / 700.0) / log(10.0);
  double hmel = 2595.0 * log1p(hi / 700.0) / log(10.0);
  double mstep = (hmel - lmel) / (double)(nb + 2);
  for (size_t i = 0; i < nb + 2; i++) {
    double f = (double)i * mstep + lmel;
    f = 700.0 * expm1(f / 2595.0 * log(10.0));
    fb[i] = (int64_t)floor((double)(len + 1) * f / (double)rate);
  }
  ge_status st = GE_OK;
  for (size_t i = 0; i < nb; i++) {
    int64_t l = fb[i], c = fb[i + 1], r = fb[i + 2];
    if (l < 0 || c < l || r < c || (size_t)c >= nspec || (size_t)r > nspec) {
      st = ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT,
                        "mel filter %zu spans bins [%lld, %lld, %lld] outside the %zu spectrogram bins",
                        i, (long long)l, (long long)c, (long long)r, nspec);
      break;
    }
    if (c == l) {
      out[(size_t)c * nb + i] = 1.0;
    } else {
      for (int64_t j = l; j <= c; j++) out[(size_t)j * nb + i] = (double)(j - l) / (double)(c - l);
    }
    for (int64_t j = c; j < r; j++) out[(size_t)j * nb + i] = (double)(r - j) / (double)(r - c);
  }
  if (st == GE_OK) {
    if (ge_dtype_is_float(y->dtype))
      ge_qrs_from_f64(y->dtype, out, y->data, y->numel);
    else
      ge_qrs_store_sat(y->dtype, out, y->data, y->numel);
  }
  free(out);
  free(fb);
  return st;
}

const ge_kernel_def ge_ref_kernels_signal[] = {
    {"", "DFT", 17, 0, {dft_prepare, dft_run, free, false}},
    {"", "STFT", 17, 0, {stft_prepare, stft_run, free, false}},
    {"", "HannWindow", 17, 0, {win_prepare, win_run, free, false}},
    {"", "HammingWindow", 17, 0, {win_prepare, win_run, free, false}},
    {"", "BlackmanWindow", 17, 0, {win_prepare, win_run, free, false}},
    {"", "MelWeightMatrix", 17, 0, {NULL, mel_run, NULL, false}},
    {0},
};
