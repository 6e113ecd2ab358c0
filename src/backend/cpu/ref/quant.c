/* Reference CPU kernels of the quant family: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, QLinearMatMul, QLinearConv, ConvInteger. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/qrs_util.h"
#include "ir/dtype_lowp.h"
#include "ops/nn_geom.h"

#define END GE_DTYPE_COUNT

/* ------------------------------------------------------------------ (De)QuantizeLinear */

typedef struct qparam_state {
  int64_t axis;
  int64_t block;
  bool quantize;
  bool saturate; /* float8 outputs */
} qparam_state;

static ge_status qlinear_prepare(const ge_prepare_ctx *p, void **state) {
  qparam_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = p->opset >= 13 ? ge_node_attr_int(p->node, "axis", 1) : 1;
  s->block = p->opset >= 21 ? ge_node_attr_int(p->node, "block_size", 0) : 0;
  s->quantize = !strcmp(p->node->op_type, "QuantizeLinear");
  s->saturate = ge_node_attr_int(p->node, "saturate", 1) != 0;
  *state = s;
  return GE_OK;
}

/* How the scale / zero point map onto x: mode 0 per tensor, 1 per axis, 2 blocked. */
typedef struct qmap {
  int mode;
  size_t outer, len, inner, nblk, bs;
} qmap;

static ge_status qmap_make(const ge_kctx *ctx, const qparam_state *s, const ge_tensor *x,
                           const ge_tensor *p, size_t idx, qmap *m) {
  memset(m, 0, sizeof *m);
  if (s->block <= 0 && p->numel == 1) return GE_OK;
  int64_t ax = s->axis < 0 ? s->axis + x->rank : s->axis;
  if (ax < 0 || ax >= x->rank)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for x of rank %d",
                        (long long)s->axis, (int)x->rank);
  m->outer = ge_qrs_prod(x->dims, 0, (int32_t)ax);
  m->len = (size_t)x->dims[ax];
  m->inner = ge_qrs_prod(x->dims, (int32_t)ax + 1, x->rank);
  if (s->block > 0) {
    m->mode = 2;
    m->bs = (size_t)s->block;
    m->nblk = (m->len + m->bs - 1) / m->bs;
    bool ok = p->rank == x->rank;
    for (int32_t d = 0; ok && d < x->rank; d++)
      ok = p->dims[d] == (d == ax ? (int64_t)m->nblk : x->dims[d]);
    if (!ok)
      return ge_kctx_fail(ctx, GE_ERR_SHAPE,
                          "input %zu does not have the blocked shape of x (block_size %lld, axis %lld)",
                          idx, (long long)s->block, (long long)ax);
    return GE_OK;
  }
  m->mode = 1;
  if (p->rank != 1 || (size_t)p->dims[0] != m->len)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input %zu must be a scalar or 1-D of %zu elements (x axis %lld)",
                        idx, m->len, (long long)ax);
  return GE_OK;
}

static ge_status qlinear_run(const void *state, ge_kctx *ctx) {
  const qparam_state *s = state;
  const ge_tensor *x = ctx->in[0], *sc = ctx->in[1];
  const ge_tensor *zp = ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  qmap m;
  GE_CHECK(qmap_make(ctx, s, x, sc, 1, &m));
  if (zp) {
    qmap mz;
    GE_CHECK(qmap_make(ctx, s, x, zp, 2, &mz));
    if (mz.mode != m.mode)
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "the scale and the zero point have different shapes");
  }
  size_t n = x->numel, np = sc->numel;
  float *xf = ge_qrs_alloc(ctx, n, sizeof(float));
  float *sf = ge_qrs_alloc(ctx, np, sizeof(float));
  float *zf = ge_qrs_alloc(ctx, np, sizeof(float));
  double *out = ge_qrs_alloc(ctx, n, sizeof(double));
  if (!xf || !sf || !zf || !out) {
    free(xf); free(sf); free(zf); free(out);
    return GE_ERR_OUT_OF_MEMORY;
  }
  if (ge_dtype_is_lowp(x->dtype))
    ge_lowp_to_f32_n(x->dtype, x->data, n, xf);
  else
    ge_qrs_to_f32(x->dtype, x->data, xf, n);
  ge_qrs_to_f32(sc->dtype, sc->data, sf, np);
  double *zpd = ge_qrs_alloc(ctx, np, sizeof(double));
  if (!zpd) {
    free(xf); free(sf); free(zf); free(out);
    return GE_ERR_OUT_OF_MEMORY;
  }
  if (zp && ge_dtype_is_lowp(zp->dtype))
    for (size_t k = 0; k < np; k++) zpd[k] = ge_lowp_to_f32(zp->dtype, ((const uint8_t *)zp->data)[k]);
  else if (zp)
    ge_qrs_to_f64(zp->dtype, zp->data, zpd, np);
  else
    memset(zpd, 0, np * sizeof *zpd);
  for (size_t i = 0; i < np; i++) zf[i] = (float)zpd[i];
  bool half = x->dtype == GE_F16 && s->quantize;
  /* float8 / float4 outputs: x / scale + zero point, then a cast (no rounding to integers) */
  bool to_float = s->quantize && ge_dtype_is_lowp_float(y->dtype);
  size_t outer = m.mode ? m.outer : 1, len = m.mode ? m.len : 1, inner = m.mode ? m.inner : n;
  size_t i = 0;
  for (size_t o = 0; o < outer; o++)
    for (size_t a = 0; a < len; a++) {
      size_t base = m.mode == 2 ? (o * m.nblk + a / m.bs) * inner : m.mode == 1 ? a : 0;
      size_t step = m.mode == 2 ? 1 : 0;
      if (s->quantize) {
        for (size_t j = 0; j < inner; j++, i++) {
          float q = xf[i] / sf[base + j * step];
          if (half) q = ge_f16_to_f32(ge_f32_to_f16(q));
          out[i] = (to_float ? (double)q : nearbyint((double)q)) + zpd[base + j * step];
        }
      } else {
        for (size_t j = 0; j < inner; j++, i++)
          out[i] = (double)((xf[i] - zf[base + j * step]) * sf[base + j * step]);
      }
    }
  if (s->quantize && ge_dtype_is_lowp_float(y->dtype)) {
    uint8_t *yo = y->data;
    for (size_t k = 0; k < n; k++) yo[k] = ge_f32_to_lowp(y->dtype, (float)out[k], s->saturate);
  } else if (s->quantize && ge_dtype_is_lowp_int(y->dtype)) {
    int64_t lo, hi;
    ge_lowp_int_range(y->dtype, &lo, &hi);
    uint8_t *yo = y->data;
    for (size_t k = 0; k < n; k++) {
      double v = out[k] != out[k] ? 0.0 : out[k] < (double)lo ? (double)lo : out[k] > (double)hi ? (double)hi : out[k];
      yo[k] = ge_lowp_int_code(y->dtype, (int64_t)v);
    }
  } else if (s->quantize)
    ge_qrs_store_sat(y->dtype, out, y->data, n);
  else
    ge_qrs_from_f64(y->dtype, out, y->data, n);
  free(xf); free(sf); free(zf); free(out); free(zpd);
  return GE_OK;
}

/* ------------------------------------------------------------------ DynamicQuantizeLinear */

static ge_status dynq_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *x = ctx->in[0];
  if (x->dtype != GE_F32)
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "input 0 has dtype %s; only float32 is supported",
                        ge_dtype_name(x->dtype));
  const float *xd = x->data;
  size_t n = x->numel;
  float mn = 0.0f, mx = 0.0f;
  for (size_t i = 0; i < n; i++) {
    mn = xd[i] < mn ? xd[i] : mn;
    mx = xd[i] > mx ? xd[i] : mx;
  }
  float scale = (mx - mn) / 255.0f;
  float zpf = 0.0f;
  if (scale > 0.0f) {
    zpf = 0.0f - mn / scale;
    zpf = zpf < 0.0f ? 0.0f : zpf > 255.0f ? 255.0f : zpf;
    zpf = nearbyintf(zpf);
  }
  if (ctx->out[0]) {
    uint8_t *y = ctx->out[0]->data;
    for (size_t i = 0; i < n; i++) {
      float v = scale > 0.0f ? nearbyintf(xd[i] / scale) + zpf : zpf;
      y[i] = v != v ? 0 : v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
    }
  }
  if (ctx->out[1]) *(float *)ctx->out[1]->data = scale;
  if (ctx->out[2]) *(uint8_t *)ctx->out[2]->data = (uint8_t)zpf;
  return GE_OK;
}

/* ------------------------------------------------------------------ QLinearMatMul */

/* Offsets of the broadcast batches of a (ra dims) and b (rb dims) for output batch shape. */
static ge_status batch_offsets(const ge_kctx *ctx, const ge_tensor *a, int32_t nba, size_t amat,
                               const ge_tensor *b, int32_t nbb, size_t bmat, const ge_tensor *y,
                               int32_t nby, size_t **aoff, size_t **boff, size_t *nbatch) {
  size_t nb = ge_qrs_prod(y->dims, 0, nby);
  *nbatch = nb;
  *aoff = ge_qrs_alloc(ctx, nb, sizeof(size_t));
  *boff = ge_qrs_alloc(ctx, nb, sizeof(size_t));
  if (!*aoff || !*boff) {
    free(*aoff);
    free(*boff);
    return GE_ERR_OUT_OF_MEMORY;
  }
  int64_t idx[GE_MAX_RANK] = {0};
  for (size_t q = 0; q < nb; q++) {
    size_t oa = 0, ob = 0;
    for (int32_t d = 0; d < nby; d++) {
      int32_t da = d - (nby - nba), db = d - (nby - nbb);
      if (da >= 0) oa = oa * (size_t)a->dims[da] + (a->dims[da] == 1 ? 0 : (size_t)idx[d]);
      if (db >= 0) ob = ob * (size_t)b->dims[db] + (b->dims[db] == 1 ? 0 : (size_t)idx[d]);
    }
    (*aoff)[q] = oa * amat;
    (*boff)[q] = ob * bmat;
    for (int32_t d = nby - 1; d >= 0; d--) {
      if (++idx[d] < y->dims[d]) break;
      idx[d] = 0;
    }
  }
  return GE_OK;
}

/* Scalar multiplier product in the precision of the scales' dtype. */
static float scale_mul(ge_dtype dt, float a, float b, float y) {
  if (dt == GE_F16) {
    float ab = ge_f16_to_f32(ge_f32_to_f16(a * b));
    return ge_f16_to_f32(ge_f32_to_f16(ab / y));
  }
  return a * b / y;
}

static ge_status qlmatmul_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *a = ctx->in[0], *b = ctx->in[3];
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  int32_t ra = a->rank, rb = b->rank;
  size_t M = ra >= 2 ? (size_t)a->dims[ra - 2] : 1, K = (size_t)a->dims[ra - 1];
  size_t N = rb >= 2 ? (size_t)b->dims[rb - 1] : 1;
  size_t Kb = rb >= 2 ? (size_t)b->dims[rb - 2] : (size_t)b->dims[0];
  if (K != Kb)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inner dimensions differ (%zu vs %zu)", K, Kb);
  const ge_tensor *as = ctx->in[1], *az = ctx->in[2], *bs = ctx->in[4], *bz = ctx->in[5];
  const ge_tensor *ys = ctx->in[6], *yz = ctx->in[7];
  if ((as->numel != 1 && as->numel != M) || (az && az->numel != 1 && az->numel != M))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "a_scale / a_zero_point must be scalars or have M = %zu elements", M);
  if ((bs->numel != 1 && bs->numel != N) || (bz && bz->numel != 1 && bz->numel != N))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "b_scale / b_zero_point must be scalars or have N = %zu elements", N);
  if (ys->numel != 1 || (yz && yz->numel != 1))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "y_scale and y_zero_point must be scalars");
  float ysf;
  float *asv = ge_qrs_alloc(ctx, M, sizeof(float)), *bsv = ge_qrs_alloc(ctx, N, sizeof(float));
  int32_t *azv = ge_qrs_alloc(ctx, M, sizeof(int32_t)), *bzv = ge_qrs_alloc(ctx, N, sizeof(int32_t));
  int32_t *A = ge_qrs_alloc(ctx, a->numel, sizeof(int32_t)), *B = ge_qrs_alloc(ctx, b->numel, sizeof(int32_t));
  int32_t *acc = ge_qrs_alloc(ctx, N, sizeof(int32_t));
  size_t *aoff = NULL, *boff = NULL, nb = 0;
  ge_status st = GE_OK;
  if (!asv || !bsv || !azv || !bzv || !A || !B || !acc) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  {
    float t;
    ge_qrs_to_f32(as->dtype, as->data, asv, as->numel);
    for (size_t i = as->numel; i < M; i++) asv[i] = asv[0];
    ge_qrs_to_f32(bs->dtype, bs->data, bsv, bs->numel);
    for (size_t i = bs->numel; i < N; i++) bsv[i] = bsv[0];
    ge_qrs_to_f32(ys->dtype, ys->data, &t, 1);
    ysf = t;
    memset(azv, 0, M * sizeof *azv);
    memset(bzv, 0, N * sizeof *bzv);
    if (az) ge_qrs_to_i32(az->dtype, az->data, azv, az->numel);
    for (size_t i = az ? az->numel : M; i < M; i++) azv[i] = azv[0];
    if (bz) ge_qrs_to_i32(bz->dtype, bz->data, bzv, bz->numel);
    for (size_t i = bz ? bz->numel : N; i < N; i++) bzv[i] = bzv[0];
  }
  ge_qrs_to_i32(a->dtype, a->data, A, a->numel);
  ge_qrs_to_i32(b->dtype, b->data, B, b->numel);
  for (size_t i = 0; i < a->numel; i++) A[i] -= azv[(i / K) % M];
  for (size_t i = 0; i < b->numel; i++) B[i] -= bzv[i % N];
  double yzp = 0;
  if (yz) ge_qrs_to_f64(yz->dtype, yz->data, &yzp, 1);
  int32_t nby = y->rank - (ra >= 2) - (rb >= 2);
  st = batch_offsets(ctx, a, ra > 2 ? ra - 2 : 0, M * K, b, rb > 2 ? rb - 2 : 0, K * N, y, nby,
                     &aoff, &boff, &nb);
  if (st != GE_OK) goto done;
  double lo, hi;
  ge_qrs_int_range(y->dtype, &lo, &hi);
  double *row = ge_qrs_alloc(ctx, N, sizeof(double));
  if (!row) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  for (size_t q = 0; q < nb; q++) {
    const int32_t *Ab = A + aoff[q], *Bb = B + boff[q];
    for (size_t i = 0; i < M; i++) {
      memset(acc, 0, N * sizeof *acc);
      for (size_t k = 0; k < K; k++) {
        int32_t av = Ab[i * K + k];
        const int32_t *br = Bb + k * N;
        for (size_t j = 0; j < N; j++) acc[j] += av * br[j];
      }
      for (size_t j = 0; j < N; j++) {
        double mlt = scale_mul(as->dtype, asv[i], bsv[j], ysf);
        row[j] = nearbyint((double)acc[j] * mlt + yzp);
      }
      ge_qrs_store_sat(y->dtype, row, (char *)y->data + ((q * M + i) * N) * ge_dtype_size(y->dtype), N);
    }
  }
  free(row);
done:
  free(asv); free(bsv); free(azv); free(bzv); free(A); free(B); free(acc); free(aoff); free(boff);
  return st;
}

/* ------------------------------------------------------------------ integer convolution */

typedef struct iconv_state {
  ge_nn_win_attrs attrs;
  bool qlinear;
} iconv_state;

static ge_status iconv_prepare(const ge_prepare_ctx *p, void **state) {
  iconv_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = ge_nn_win_parse(p->node, false, &s->attrs);
  if (st != GE_OK) {
    free(s);
    return st;
  }
  s->qlinear = !strcmp(p->node->op_type, "QLinearConv");
  *state = s;
  return GE_OK;
}

/* out[N, M, osp] (int32) = conv(X[N, C, sp], W[M, C/g, k]) + bias (may be NULL). */
static ge_status iconv_compute(const ge_kctx *ctx, const iconv_state *s, const int32_t *X,
                               const ge_tensor *xt, const int32_t *W, const ge_tensor *wt,
                               const int32_t *bias, int32_t *out, const ge_tensor *yt) {
  ge_nn_win_attrs a = s->attrs;
  int32_t rank = xt->rank;
  if (rank < 3 || wt->rank != rank)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "x and w must have equal ranks >= 3");
  size_t nsp = (size_t)rank - 2;
  int64_t kd[GE_NN_MAX_SP];
  for (size_t i = 0; i < nsp; i++) kd[i] = wt->dims[2 + i];
  GE_CHECK(ge_nn_win_resolve(ctx->node, &a, nsp, kd));
  int64_t osp[GE_NN_MAX_SP], pb[GE_NN_MAX_SP], pe[GE_NN_MAX_SP];
  for (size_t i = 0; i < nsp; i++)
    GE_CHECK(ge_nn_win_out(ctx->node, &a, i, xt->dims[2 + i], false, &osp[i], &pb[i], &pe[i]));
  size_t Nb = (size_t)xt->dims[0], C = (size_t)xt->dims[1], M = (size_t)wt->dims[0];
  size_t G = (size_t)a.group, Cg = C / G, Mg = M / G;
  if (G == 0 || C % G || M % G || (size_t)wt->dims[1] != Cg)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "channels (x %zu, w %lld x group %zu) do not match", C,
                        (long long)wt->dims[1], G);
  size_t KS = ge_qrs_prod(wt->dims, 2, rank), L = ge_qrs_prod(yt->dims, 2, rank);
  size_t IS = ge_qrs_prod(xt->dims, 2, rank);
  size_t rows;
  if (ge_mul_overflow_size(Cg, KS, &rows))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "kernel too large");
  size_t cells;
  if (ge_mul_overflow_size(rows, L, &cells))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "im2col buffer too large");
  int32_t *col = ge_qrs_alloc(ctx, cells, sizeof(int32_t));
  /* for each kernel position its spatial offsets; for each output position its origin */
  int64_t *koff = ge_qrs_alloc(ctx, KS * nsp, sizeof(int64_t));
  int64_t *lorg = ge_qrs_alloc(ctx, L * nsp, sizeof(int64_t));
  if (!col || !koff || !lorg) {
    free(col); free(koff); free(lorg);
    return GE_ERR_OUT_OF_MEMORY;
  }
  {
    int64_t idx[GE_NN_MAX_SP] = {0};
    for (size_t k = 0; k < KS; k++) {
      for (size_t d = 0; d < nsp; d++) koff[k * nsp + d] = idx[d] * a.dilations[d];
      for (size_t d = nsp; d-- > 0;) {
        if (++idx[d] < wt->dims[2 + d]) break;
        idx[d] = 0;
      }
    }
    memset(idx, 0, sizeof idx);
    for (size_t l = 0; l < L; l++) {
      for (size_t d = 0; d < nsp; d++) lorg[l * nsp + d] = idx[d] * a.strides[d] - pb[d];
      for (size_t d = nsp; d-- > 0;) {
        if (++idx[d] < osp[d]) break;
        idx[d] = 0;
      }
    }
  }
  for (size_t n = 0; n < Nb; n++)
    for (size_t g = 0; g < G; g++) {
      /* im2col */
      for (size_t c = 0; c < Cg; c++) {
        const int32_t *xc = X + (n * C + g * Cg + c) * IS;
        for (size_t k = 0; k < KS; k++) {
          int32_t *cr = col + (c * KS + k) * L;
          const int64_t *ko = koff + k * nsp;
          for (size_t l = 0; l < L; l++) {
            const int64_t *lo = lorg + l * nsp;
            size_t off = 0;
            bool in = true;
            for (size_t d = 0; d < nsp; d++) {
              int64_t p = lo[d] + ko[d];
              if (p < 0 || p >= xt->dims[2 + d]) {
                in = false;
                break;
              }
              off = off * (size_t)xt->dims[2 + d] + (size_t)p;
            }
            cr[l] = in ? xc[off] : 0;
          }
        }
      }
      /* gemm: out[m, l] = sum_r W[m, r] col[r, l] */
      for (size_t mm = 0; mm < Mg; mm++) {
        size_t m = g * Mg + mm;
        int32_t *o = out + (n * M + m) * L;
        int32_t b0 = bias ? bias[m] : 0;
        for (size_t l = 0; l < L; l++) o[l] = b0;
        const int32_t *wr = W + m * rows;
        for (size_t r = 0; r < rows; r++) {
          int32_t wv = wr[r];
          if (!wv) continue;
          const int32_t *cr = col + r * L;
          for (size_t l = 0; l < L; l++) o[l] += wv * cr[l];
        }
      }
    }
  free(col); free(koff); free(lorg);
  return GE_OK;
}

static ge_status iconv_run(const void *state, ge_kctx *ctx) {
  const iconv_state *s = state;
  size_t xi = 0, wi = s->qlinear ? 3 : 1;
  const ge_tensor *x = ctx->in[xi], *w = ctx->in[wi];
  const ge_tensor *xz = s->qlinear ? ctx->in[2] : (ctx->n_in > 2 ? ctx->in[2] : NULL);
  const ge_tensor *wz = s->qlinear ? ctx->in[5] : (ctx->n_in > 3 ? ctx->in[3] : NULL);
  const ge_tensor *bt = s->qlinear && ctx->n_in > 8 ? ctx->in[8] : NULL;
  ge_tensor *y = ctx->out[0];
  if (!y) return GE_OK;
  size_t M = w->rank >= 1 ? (size_t)w->dims[0] : 0;
  if (xz && xz->numel != 1)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "x_zero_point must be a scalar, has %zu elements", xz->numel);
  if (wz && wz->numel != 1 && wz->numel != M)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "w_zero_point must be a scalar or have %zu elements, has %zu",
                        M, wz->numel);
  if (bt && bt->numel != M)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "B must have %zu elements, has %zu", M, bt->numel);
  int32_t *X = ge_qrs_alloc(ctx, x->numel, sizeof(int32_t));
  int32_t *W = ge_qrs_alloc(ctx, w->numel, sizeof(int32_t));
  int32_t *B = bt ? ge_qrs_alloc(ctx, M, sizeof(int32_t)) : NULL;
  int32_t *O = s->qlinear ? ge_qrs_alloc(ctx, y->numel, sizeof(int32_t)) : y->data;
  int32_t *wzv = ge_qrs_alloc(ctx, M, sizeof(int32_t));
  double *row = s->qlinear ? ge_qrs_alloc(ctx, y->numel, sizeof(double)) : NULL;
  ge_status st = GE_OK;
  if (!X || !W || (bt && !B) || !O || !wzv || (s->qlinear && !row)) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  ge_qrs_to_i32(x->dtype, x->data, X, x->numel);
  ge_qrs_to_i32(w->dtype, w->data, W, w->numel);
  if (B) ge_qrs_to_i32(bt->dtype, bt->data, B, M);
  int32_t xzv = 0;
  if (xz) ge_qrs_to_i32(xz->dtype, xz->data, &xzv, 1);
  memset(wzv, 0, M * sizeof *wzv);
  if (wz) ge_qrs_to_i32(wz->dtype, wz->data, wzv, wz->numel);
  if (wz && wz->numel == 1)
    for (size_t m = 1; m < M; m++) wzv[m] = wzv[0];
  for (size_t i = 0; i < x->numel; i++) X[i] -= xzv;
  size_t per = M ? w->numel / M : 0;
  for (size_t m = 0; m < M; m++)
    for (size_t i = 0; i < per; i++) W[m * per + i] -= wzv[m];
  st = iconv_compute(ctx, s, X, x, W, w, B, O, y);
  if (st != GE_OK || !s->qlinear) goto done;
  {
    const ge_tensor *xs = ctx->in[1], *ws = ctx->in[4], *ys = ctx->in[6], *yz = ctx->in[7];
    if (xs->numel != 1 || ys->numel != 1 || (yz && yz->numel != 1) || (ws->numel != 1 && ws->numel != M)) {
      st = ge_kctx_fail(ctx, GE_ERR_SHAPE, "x_scale, y_scale, y_zero_point must be scalars and w_scale "
                        "a scalar or %zu elements", M);
      goto done;
    }
    float xsf, ysf;
    double yzp = 0;
    ge_qrs_to_f32(xs->dtype, xs->data, &xsf, 1);
    ge_qrs_to_f32(ys->dtype, ys->data, &ysf, 1);
    if (yz) ge_qrs_to_f64(yz->dtype, yz->data, &yzp, 1);
    float *wsv = ge_qrs_alloc(ctx, M, sizeof(float));
    if (!wsv) {
      st = GE_ERR_OUT_OF_MEMORY;
      goto done;
    }
    ge_qrs_to_f32(ws->dtype, ws->data, wsv, ws->numel);
    for (size_t m = ws->numel; m < M; m++) wsv[m] = wsv[0];
    size_t Nb = (size_t)y->dims[0], L = ge_qrs_prod(y->dims, 2, y->rank);
    for (size_t n = 0; n < Nb; n++)
      for (size_t m = 0; m < M; m++) {
        double mlt = (double)(xsf * wsv[m] / ysf);
        size_t base = (n * M + m) * L;
        for (size_t l = 0; l < L; l++) row[base + l] = nearbyint((double)O[base + l] * mlt + yzp);
      }
    free(wsv);
    ge_qrs_store_sat(y->dtype, row, y->data, y->numel);
  }
done:
  free(X); free(W); free(B); free(wzv); free(row);
  if (s->qlinear) free(O);
  return st;
}

const ge_kernel_def ge_ref_kernels_quant[] = {
    {"", "QuantizeLinear", 10, 0, {qlinear_prepare, qlinear_run, free, false}},
    {"", "DequantizeLinear", 10, 0, {qlinear_prepare, qlinear_run, free, false}},
    {"", "DynamicQuantizeLinear", 11, 0, {NULL, dynq_run, NULL, false}},
    {"", "QLinearMatMul", 10, 0, {NULL, qlmatmul_run, NULL, false}},
    {"", "QLinearConv", 10, 0, {iconv_prepare, iconv_run, free, false}},
    {"", "ConvInteger", 10, 0, {iconv_prepare, iconv_run, free, false}},
    {0},
};
