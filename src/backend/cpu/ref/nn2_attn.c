/* Reference CPU kernels of the nn2 family: Attention (opset 23+: 3-D/4-D, GQA, bool/float
 * masks, causal, sliding windows, past/present cache, nonpad_kv_seqlen, softcap,
 * qk_matmul_output modes), RMSNormalization, RotaryEmbedding, LinearAttention and
 * CausalConvWithState.  All arithmetic is float64 (f16/bf16/f32 converted in and out). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/nn2_kernels.h"
#include "backend/cpu/ref/nn_util.h"

#define END GE_DTYPE_COUNT

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};

double *ge_nn2_dalloc(const ge_kctx *c, size_t n) {
  size_t bytes;
  if (__builtin_mul_overflow(n ? n : 1, sizeof(double), &bytes)) {
    ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "scratch of %zu doubles overflows", n);
    return NULL;
  }
  double *p = malloc(bytes);
  if (!p) ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of scratch", bytes);
  return p;
}

static bool mul3(size_t a, size_t b, size_t c, size_t *out) {
  size_t t;
  return !__builtin_mul_overflow(a, b, &t) && !__builtin_mul_overflow(t, c, out);
}

/* ------------------------------------------------------------------ Attention */

typedef struct attn_state {
  int64_t q_heads, kv_heads;
  bool causal, has_scale;
  double scale, softcap;
  int64_t mode, left, right;
} attn_state;

ge_status ge_nn2_attention_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  GE_CHECK(ge_prepare_check_dtype(p, 1, k_float));
  GE_CHECK(ge_prepare_check_dtype(p, 2, k_float));
  attn_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->q_heads = ge_node_attr_int(p->node, "q_num_heads", 0);
  s->kv_heads = ge_node_attr_int(p->node, "kv_num_heads", 0);
  s->causal = ge_node_attr_int(p->node, "is_causal", 0) != 0;
  s->has_scale = ge_node_attr(p->node, "scale") != NULL;
  s->scale = ge_node_attr_float(p->node, "scale", 1.0f);
  s->softcap = ge_node_attr_float(p->node, "softcap", 0.0f);
  s->mode = ge_node_attr_int(p->node, "qk_matmul_output_mode", 0);
  s->left = ge_node_attr_int(p->node, "left_window_size", -1);
  s->right = ge_node_attr_int(p->node, "right_window_size", -1);
  if (s->mode < 0 || s->mode > 3 || s->left < -1 || s->right < -1) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "qk_matmul_output_mode must be 0..3 and window sizes >= -1");
  }
  *state = s;
  return GE_OK;
}

/* Broadcast strides of the mask against (B, Hq, S, T): a mask dim of 1 (or a missing leading
   dim) has stride 0. */
static ge_status mask_strides(const ge_kctx *c, const ge_tensor *m, const int64_t want[4],
                              size_t st[4], int64_t *mlast) {
  if (m->rank < 1 || m->rank > 4)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 3 (attn_mask) must have rank 1..4, got %d", m->rank);
  size_t stride = 1;
  for (int k = 3; k >= 0; k--) {
    int md = k - (4 - m->rank);
    if (md < 0) {
      st[k] = 0;
      continue;
    }
    int64_t d = m->dims[md];
    bool ok = k == 3 ? d <= want[3] : (d == 1 || d == want[k]);
    if (!ok)
      return ge_kctx_fail(c, GE_ERR_SHAPE,
                          "input 3 (attn_mask) dim %d is %lld, not broadcastable to %lld", md,
                          (long long)d, (long long)want[k]);
    st[k] = (d == 1 && k != 3) ? 0 : stride;
    stride *= (size_t)d;
  }
  *mlast = m->dims[m->rank - 1];
  return GE_OK;
}

ge_status ge_nn2_attention_run(const void *state, ge_kctx *c) {
  const attn_state *s = state;
  const ge_tensor *Q = c->in[0], *K = c->in[1], *V = c->in[2];
  const ge_tensor *M = c->n_in > 3 ? c->in[3] : NULL;
  const ge_tensor *PK = c->n_in > 4 ? c->in[4] : NULL, *PV = c->n_in > 5 ? c->in[5] : NULL;
  const ge_tensor *NP = c->n_in > 6 ? c->in[6] : NULL;
  if (!Q || !K || !V) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "Q, K and V are required");
  if ((PK == NULL) != (PV == NULL))
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "past_key and past_value must be given together");
  int r = Q->rank;
  if ((r != 3 && r != 4) || K->rank != r || V->rank != r)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "Q, K, V must all be 3-D or 4-D (ranks %d, %d, %d)", Q->rank,
                        K->rank, V->rank);
  int64_t B = Q->dims[0], hq, hkv, S, D, L, Dk, Dv, Lv;
  if (r == 3) {
    hq = s->q_heads;
    hkv = s->kv_heads;
    if (hq <= 0 || hkv <= 0 || Q->dims[2] % hq || K->dims[2] % hkv || V->dims[2] % hkv)
      return ge_kctx_fail(c, GE_ERR_SHAPE,
                          "3-D inputs: hidden sizes %lld/%lld/%lld must divide by q_num_heads %lld "
                          "and kv_num_heads %lld",
                          (long long)Q->dims[2], (long long)K->dims[2], (long long)V->dims[2],
                          (long long)hq, (long long)hkv);
    S = Q->dims[1];
    D = Q->dims[2] / hq;
    L = K->dims[1];
    Dk = K->dims[2] / hkv;
    Lv = V->dims[1];
    Dv = V->dims[2] / hkv;
  } else {
    hq = Q->dims[1];
    hkv = K->dims[1];
    S = Q->dims[2];
    D = Q->dims[3];
    L = K->dims[2];
    Dk = K->dims[3];
    Lv = V->dims[2];
    Dv = V->dims[3];
    if (V->dims[1] != hkv)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "K has %lld heads but V has %lld", (long long)hkv,
                          (long long)V->dims[1]);
  }
  if (K->dims[0] != B || V->dims[0] != B || Dk != D || Lv != L || hkv <= 0 || hq % hkv)
    return ge_kctx_fail(c, GE_ERR_SHAPE,
                        "inconsistent shapes: batch %lld/%lld/%lld, head size Q %lld K %lld, "
                        "sequence K %lld V %lld, heads q %lld kv %lld",
                        (long long)B, (long long)K->dims[0], (long long)V->dims[0], (long long)D,
                        (long long)Dk, (long long)L, (long long)Lv, (long long)hq, (long long)hkv);
  int64_t P = 0;
  if (PK) {
    if (PK->rank != 4 || PV->rank != 4 || PK->dims[0] != B || PK->dims[1] != hkv ||
        PK->dims[3] != D || PV->dims[0] != B || PV->dims[1] != hkv || PV->dims[3] != Dv ||
        PV->dims[2] != PK->dims[2])
      return ge_kctx_fail(c, GE_ERR_SHAPE,
                          "past_key/past_value must be [B=%lld, kv_heads=%lld, P, %lld/%lld]",
                          (long long)B, (long long)hkv, (long long)D, (long long)Dv);
    P = PK->dims[2];
  }
  if (NP && PK)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "nonpad_kv_seqlen cannot be combined with past_key");
  if (NP && (NP->numel != (size_t)B))
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 6 (nonpad_kv_seqlen) must have %lld elements, has %zu",
                        (long long)B, NP->numel);
  int64_t T = P + L, G = hq / hkv;
  size_t mst[4] = {0, 0, 0, 0};
  int64_t mlast = 0;
  bool mbool = false;
  if (M) {
    int64_t want[4] = {B, hq, S, T};
    GE_CHECK(mask_strides(c, M, want, mst, &mlast));
    mbool = M->dtype == GE_BOOL;
  }
  double scale = s->has_scale ? s->scale : 1.0 / sqrt((double)D);
  double sq = sqrt(scale);

  ge_status st = GE_OK;
  ge_dbuf q = {0}, k = {0}, v = {0}, pk = {0}, pv = {0}, m = {0}, y = {0}, ok_ = {0}, ov = {0}, oq = {0};
  double *kall = NULL, *vall = NULL, *row = NULL;
  size_t nk, nv;
  if (!mul3((size_t)(B * hkv), (size_t)T, (size_t)D, &nk) || !mul3((size_t)(B * hkv), (size_t)T, (size_t)Dv, &nv))
    return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "present cache size overflows");
  if ((st = ge_nn_load_f64(c, Q, &q)) || (st = ge_nn_load_f64(c, K, &k)) ||
      (st = ge_nn_load_f64(c, V, &v)))
    goto done;
  if (PK && ((st = ge_nn_load_f64(c, PK, &pk)) || (st = ge_nn_load_f64(c, PV, &pv)))) goto done;
  if (M && !mbool && (st = ge_nn_load_f64(c, M, &m))) goto done;
  kall = ge_nn2_dalloc(c, nk);
  vall = ge_nn2_dalloc(c, nv);
  row = ge_nn2_dalloc(c, (size_t)T * 3);
  if (!kall || !vall || !row) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  /* present = concat(past, new) along the sequence, in [B, Hkv, T, D] */
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < hkv; h++) {
      double *kd = kall + ((size_t)(b * hkv + h) * (size_t)T) * (size_t)D;
      double *vd = vall + ((size_t)(b * hkv + h) * (size_t)T) * (size_t)Dv;
      if (P) {
        memcpy(kd, pk.p + (size_t)(b * hkv + h) * (size_t)P * (size_t)D, (size_t)(P * D) * sizeof(double));
        memcpy(vd, pv.p + (size_t)(b * hkv + h) * (size_t)P * (size_t)Dv, (size_t)(P * Dv) * sizeof(double));
      }
      for (int64_t j = 0; j < L; j++) {
        const double *ks, *vs;
        if (r == 3) {
          ks = k.p + ((size_t)(b * L + j) * (size_t)hkv + (size_t)h) * (size_t)D;
          vs = v.p + ((size_t)(b * L + j) * (size_t)hkv + (size_t)h) * (size_t)Dv;
        } else {
          ks = k.p + ((size_t)(b * hkv + h) * (size_t)L + (size_t)j) * (size_t)D;
          vs = v.p + ((size_t)(b * hkv + h) * (size_t)L + (size_t)j) * (size_t)Dv;
        }
        memcpy(kd + (size_t)(P + j) * (size_t)D, ks, (size_t)D * sizeof(double));
        memcpy(vd + (size_t)(P + j) * (size_t)Dv, vs, (size_t)Dv * sizeof(double));
      }
    }
  ge_tensor *Y = c->out[0], *OK = c->n_out > 1 ? c->out[1] : NULL, *OV = c->n_out > 2 ? c->out[2] : NULL;
  ge_tensor *OQ = c->n_out > 3 ? c->out[3] : NULL;
  if (!Y) {
    st = ge_kctx_fail(c, GE_ERR_INTERNAL, "output 0 is missing");
    goto done;
  }
  if ((st = ge_nn_out_f64(c, Y, &y))) goto done;
  if (OK && (st = ge_nn_out_f64(c, OK, &ok_))) goto done;
  if (OV && (st = ge_nn_out_f64(c, OV, &ov))) goto done;
  if (OQ && (st = ge_nn_out_f64(c, OQ, &oq))) goto done;
  if (OK) memcpy(ok_.p, kall, nk * sizeof(double));
  if (OV) memcpy(ov.p, vall, nv * sizeof(double));

  double *x = row, *bias = row + T, *qkr = row + 2 * T;
  const uint8_t *mb = M && mbool ? (const uint8_t *)M->data : NULL;
  for (int64_t b = 0; b < B; b++) {
    int64_t off = P;
    if (NP) off = ge_tensor_get_i64(NP, (size_t)b) - S;
    int64_t nonpad = NP ? ge_tensor_get_i64(NP, (size_t)b) : T;
    for (int64_t h = 0; h < hq; h++) {
      int64_t kh = h / G;
      const double *kb = kall + (size_t)(b * hkv + kh) * (size_t)T * (size_t)D;
      const double *vb = vall + (size_t)(b * hkv + kh) * (size_t)T * (size_t)Dv;
      for (int64_t i = 0; i < S; i++) {
        const double *qi = r == 3 ? q.p + ((size_t)(b * S + i) * (size_t)hq + (size_t)h) * (size_t)D
                                  : q.p + ((size_t)(b * hq + h) * (size_t)S + (size_t)i) * (size_t)D;
        size_t mrow = (size_t)b * mst[0] + (size_t)h * mst[1] + (size_t)i * mst[2];
        double bmax = -INFINITY;
        bool bnan = false;
        for (int64_t j = 0; j < T; j++) {
          const double *kj = kb + (size_t)j * (size_t)D;
          double acc = 0;
          for (int64_t d = 0; d < D; d++) acc += (qi[d] * sq) * (kj[d] * sq);
          if (s->softcap > 0) acc = tanh(acc / s->softcap) * s->softcap;
          qkr[j] = acc;
          double bj = 0;
          if (M) {
            if (j < mlast) {
              size_t mi = mrow + (size_t)j * mst[3];
              bj = mbool ? (mb[mi] ? 0.0 : -INFINITY) : m.p[mi];
            } else {
              bj = -INFINITY;
            }
          }
          if (s->causal && j > i + off) bj += -INFINITY;
          if (s->left >= 0 || s->right >= 0) {
            int64_t diff = i + off - j;
            if ((s->left >= 0 && diff > s->left) || (s->right >= 0 && -diff > s->right)) bj += -INFINITY;
          }
          if (NP && j >= nonpad) bj += -INFINITY;
          bias[j] = bj;
          if (bj != bj) bnan = true;
          else if (bj > bmax) bmax = bj;
          x[j] = acc + bj;
        }
        bool all_masked = !bnan && bmax == -INFINITY;
        double *oqr = OQ ? oq.p + ((size_t)(b * hq + h) * (size_t)S + (size_t)i) * (size_t)T : NULL;
        if (OQ && s->mode <= 1) memcpy(oqr, qkr, (size_t)T * sizeof(double));
        if (OQ && s->mode == 2) memcpy(oqr, x, (size_t)T * sizeof(double));
        /* softmax with NaN propagation like numpy; a fully -inf row gives zeros */
        double mx = -INFINITY;
        bool xnan = false;
        for (int64_t j = 0; j < T; j++) {
          if (x[j] != x[j]) xnan = true;
          else if (x[j] > mx) mx = x[j];
        }
        if (xnan) mx = NAN;
        double safe = mx == -INFINITY ? 0.0 : mx, sum = 0;
        for (int64_t j = 0; j < T; j++) {
          x[j] = exp(x[j] - safe);
          sum += x[j];
        }
        if (sum == 0) sum = 1;
        for (int64_t j = 0; j < T; j++) x[j] = all_masked ? 0.0 : x[j] / sum;
        if (OQ && s->mode == 3) memcpy(oqr, x, (size_t)T * sizeof(double));
        double *yo = r == 3 ? y.p + ((size_t)(b * S + i) * (size_t)hq + (size_t)h) * (size_t)Dv
                            : y.p + ((size_t)(b * hq + h) * (size_t)S + (size_t)i) * (size_t)Dv;
        for (int64_t d = 0; d < Dv; d++) yo[d] = 0;
        for (int64_t j = 0; j < T; j++) {
          double pj = x[j];
          const double *vj = vb + (size_t)j * (size_t)Dv;
          for (int64_t d = 0; d < Dv; d++) yo[d] += pj * vj[d];
        }
      }
    }
  }
  ge_nn_store_f64(Y, &y);
  if (OK) ge_nn_store_f64(OK, &ok_);
  if (OV) ge_nn_store_f64(OV, &ov);
  if (OQ) ge_nn_store_f64(OQ, &oq);
done:
  ge_dbuf_free(&q);
  ge_dbuf_free(&k);
  ge_dbuf_free(&v);
  ge_dbuf_free(&pk);
  ge_dbuf_free(&pv);
  ge_dbuf_free(&m);
  ge_dbuf_free(&y);
  ge_dbuf_free(&ok_);
  ge_dbuf_free(&ov);
  ge_dbuf_free(&oq);
  free(kall);
  free(vall);
  free(row);
  return st;
}

/* ------------------------------------------------------------------ RMSNormalization */

typedef struct norm_state {
  int64_t axis;
  double eps;
} norm_state;

ge_status ge_nn2_rmsnorm_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  GE_CHECK(ge_prepare_check_dtype(p, 1, k_float));
  norm_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->axis = ge_node_attr_int(p->node, "axis", -1);
  s->eps = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  *state = s;
  return GE_OK;
}

ge_status ge_nn2_rmsnorm_run(const void *state, ge_kctx *c) {
  const norm_state *s = state;
  const ge_tensor *X = c->in[0], *W = c->in[1];
  ge_tensor *Y = c->out[0];
  int64_t ax = s->axis < 0 ? s->axis + X->rank : s->axis;
  if (ax < 0 || ax >= X->rank)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld out of range for rank %d",
                        (long long)s->axis, X->rank);
  size_t outer = ge_nn_prod(X->dims, 0, (int32_t)ax), inner = ge_nn_prod(X->dims, (int32_t)ax, X->rank);
  int32_t nr = X->rank - (int32_t)ax;
  if (W->rank > nr)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 1 (scale) has rank %d > normalized rank %d", W->rank, nr);
  for (int32_t i = 0; i < W->rank; i++) {
    int64_t wd = W->dims[W->rank - 1 - i], xd = X->dims[X->rank - 1 - i];
    if (wd != 1 && wd != xd)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "input 1 (scale) dim %d is %lld; X dim is %lld",
                          W->rank - 1 - i, (long long)wd, (long long)xd);
  }
  ge_status st = GE_OK;
  ge_dbuf x = {0}, w = {0}, y = {0};
  double *ws = NULL;
  if ((st = ge_nn_load_f64(c, X, &x)) || (st = ge_nn_load_f64(c, W, &w)) || (st = ge_nn_out_f64(c, Y, &y)))
    goto done;
  ws = ge_nn2_dalloc(c, inner);
  if (!ws) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  /* scale broadcast to the normalized block */
  for (size_t e = 0; e < inner; e++) {
    size_t rem = e, wi = 0, wstride = 1;
    for (int32_t i = X->rank - 1, wd = W->rank - 1; i >= (int32_t)ax; i--, wd--) {
      size_t idx = rem % (size_t)X->dims[i];
      rem /= (size_t)X->dims[i];
      if (wd >= 0) {
        if (W->dims[wd] != 1) wi += idx * wstride;
        wstride *= (size_t)W->dims[wd];
      }
    }
    ws[e] = w.p[wi];
  }
  for (size_t o = 0; o < outer; o++) {
    const double *xr = x.p + o * inner;
    double *yr = y.p + o * inner;
    double ss = 0;
    for (size_t e = 0; e < inner; e++) ss += xr[e] * xr[e];
    double inv = 1.0 / sqrt(ss / (double)(inner ? inner : 1) + s->eps);
    for (size_t e = 0; e < inner; e++) yr[e] = xr[e] * inv * ws[e];
  }
  ge_nn_store_f64(Y, &y);
done:
  ge_dbuf_free(&x);
  ge_dbuf_free(&w);
  ge_dbuf_free(&y);
  free(ws);
  return st;
}

/* ------------------------------------------------------------------ RotaryEmbedding */

typedef struct rot_state {
  int64_t num_heads, rot_dim;
  bool interleaved;
} rot_state;

ge_status ge_nn2_rotary_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  rot_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->num_heads = ge_node_attr_int(p->node, "num_heads", 0);
  s->rot_dim = ge_node_attr_int(p->node, "rotary_embedding_dim", 0);
  s->interleaved = ge_node_attr_int(p->node, "interleaved", 0) != 0;
  *state = s;
  return GE_OK;
}

ge_status ge_nn2_rotary_run(const void *state, ge_kctx *c) {
  const rot_state *s = state;
  const ge_tensor *X = c->in[0], *CC = c->in[1], *SC = c->in[2];
  const ge_tensor *PI = c->n_in > 3 ? c->in[3] : NULL;
  ge_tensor *Y = c->out[0];
  int64_t B = X->dims[0], H, S, hd;
  if (X->rank == 4) {
    H = X->dims[1];
    S = X->dims[2];
    hd = X->dims[3];
  } else if (X->rank == 3) {
    H = s->num_heads;
    S = X->dims[1];
    if (H <= 0 || X->dims[2] % H)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "hidden size %lld is not divisible by num_heads %lld",
                          (long long)X->dims[2], (long long)H);
    hd = X->dims[2] / H;
  } else {
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input 0 must be 3-D or 4-D, got rank %d", X->rank);
  }
  int64_t rd = s->rot_dim ? s->rot_dim : hd, half = rd / 2;
  if (rd <= 0 || rd > hd || rd % 2)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "rotary_embedding_dim %lld must be even and <= head size %lld",
                        (long long)rd, (long long)hd);
  if (CC->rank < 2 || CC->dims[CC->rank - 1] != half || SC->numel != CC->numel)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "cos/sin caches must end in rotary_embedding_dim/2 = %lld",
                        (long long)half);
  int64_t max_pos = PI ? CC->dims[0] : 0;
  if (PI ? (PI->numel != (size_t)(B * S) || CC->rank != 2)
         : (CC->numel != (size_t)(B * S * half)))
    return ge_kctx_fail(c, GE_ERR_SHAPE, "cos/sin caches do not match batch %lld x sequence %lld%s",
                        (long long)B, (long long)S, PI ? " (with position_ids)" : "");
  ge_status st = GE_OK;
  ge_dbuf x = {0}, cc = {0}, sc = {0}, y = {0};
  if ((st = ge_nn_load_f64(c, X, &x)) || (st = ge_nn_load_f64(c, CC, &cc)) ||
      (st = ge_nn_load_f64(c, SC, &sc)) || (st = ge_nn_out_f64(c, Y, &y)))
    goto done;
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < S; t++) {
      size_t crow;
      if (PI) {
        int64_t pos = ge_tensor_get_i64(PI, (size_t)(b * S + t));
        if (pos < 0 || pos >= max_pos) {
          st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "position_ids[%lld,%lld] = %lld out of range [0, %lld)",
                            (long long)b, (long long)t, (long long)pos, (long long)max_pos);
          goto done;
        }
        crow = (size_t)pos * (size_t)half;
      } else {
        crow = (size_t)(b * S + t) * (size_t)half;
      }
      const double *cr = cc.p + crow, *sr = sc.p + crow;
      for (int64_t h = 0; h < H; h++) {
        size_t base = X->rank == 4 ? ((size_t)(b * H + h) * (size_t)S + (size_t)t) * (size_t)hd
                                   : ((size_t)(b * S + t) * (size_t)H + (size_t)h) * (size_t)hd;
        const double *xi = x.p + base;
        double *yo = y.p + base;
        for (int64_t e = 0; e < half; e++) {
          size_t i1 = s->interleaved ? (size_t)(2 * e) : (size_t)e;
          size_t i2 = s->interleaved ? (size_t)(2 * e + 1) : (size_t)(e + half);
          double x1 = xi[i1], x2 = xi[i2];
          yo[i1] = cr[e] * x1 - sr[e] * x2;
          yo[i2] = sr[e] * x1 + cr[e] * x2;
        }
        for (int64_t e = rd; e < hd; e++) yo[e] = xi[e];
      }
    }
  ge_nn_store_f64(Y, &y);
done:
  ge_dbuf_free(&x);
  ge_dbuf_free(&cc);
  ge_dbuf_free(&sc);
  ge_dbuf_free(&y);
  return st;
}

/* ------------------------------------------------------------------ LinearAttention */

typedef struct lin_state {
  int64_t q_heads, kv_heads;
  double scale;
  bool gating, delta;
} lin_state;

ge_status ge_nn2_linattn_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  lin_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->q_heads = ge_node_attr_int(p->node, "q_num_heads", 0);
  s->kv_heads = ge_node_attr_int(p->node, "kv_num_heads", 0);
  s->scale = ge_node_attr_float(p->node, "scale", 0.0f);
  const char *rule = ge_node_attr_string(p->node, "update_rule", "gated_delta");
  s->gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  s->delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (s->q_heads <= 0 || s->kv_heads <= 0 || s->q_heads % s->kv_heads) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "q_num_heads must be a positive multiple of kv_num_heads");
  }
  *state = s;
  return GE_OK;
}

ge_status ge_nn2_linattn_run(const void *state, ge_kctx *c) {
  const lin_state *s = state;
  const ge_tensor *Qt = c->in[0], *Kt = c->in[1], *Vt = c->in[2];
  const ge_tensor *PS = c->n_in > 3 ? c->in[3] : NULL, *DE = c->n_in > 4 ? c->in[4] : NULL;
  const ge_tensor *BE = c->n_in > 5 ? c->in[5] : NULL;
  ge_tensor *O = c->out[0], *OS = c->n_out > 1 ? c->out[1] : NULL;
  int64_t hq = s->q_heads, hkv = s->kv_heads, G = hq / hkv;
  if (Qt->rank != 3 || Kt->rank != 3 || Vt->rank != 3)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "query, key and value must be rank 3");
  int64_t B = Qt->dims[0], T = Qt->dims[1];
  if (Qt->dims[2] % hq || Kt->dims[2] % hkv || Vt->dims[2] % hkv)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "hidden sizes are not divisible by the head counts");
  int64_t dk = Qt->dims[2] / hq, dv = Vt->dims[2] / hkv;
  if (Kt->dims[2] / hkv != dk || Kt->dims[0] != B || Vt->dims[0] != B || Kt->dims[1] != T || Vt->dims[1] != T)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "key/value shapes do not match query");
  if ((DE != NULL) != s->gating || (BE != NULL) != s->delta)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "decay/beta inputs do not match update_rule");
  bool dec_full = false;
  if (DE) {
    if (DE->rank != 3 || DE->dims[0] != B || DE->dims[1] != T ||
        (DE->dims[2] != hkv && DE->dims[2] != hkv * dk))
      return ge_kctx_fail(c, GE_ERR_SHAPE, "decay must be [B, T, kv_num_heads or kv_num_heads*d_k]");
    dec_full = DE->dims[2] == hkv * dk && dk != 1;
  }
  int64_t blast = 0;
  if (BE) {
    if (BE->rank != 3 || BE->dims[0] != B || BE->dims[1] != T || (BE->dims[2] != hkv && BE->dims[2] != 1))
      return ge_kctx_fail(c, GE_ERR_SHAPE, "beta must be [B, T, kv_num_heads or 1]");
    blast = BE->dims[2];
  }
  if (PS && (PS->rank != 4 || PS->dims[0] != B || PS->dims[1] != hkv || PS->dims[2] != dk || PS->dims[3] != dv))
    return ge_kctx_fail(c, GE_ERR_SHAPE, "past_state must be [%lld, %lld, %lld, %lld]", (long long)B,
                        (long long)hkv, (long long)dk, (long long)dv);
  double scale = s->scale != 0.0 ? s->scale : 1.0 / sqrt((double)dk);
  size_t ns;
  if (!mul3((size_t)(B * hkv), (size_t)dk, (size_t)dv, &ns))
    return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "state size overflows");
  ge_status st = GE_OK;
  ge_dbuf q = {0}, k = {0}, v = {0}, de = {0}, be = {0}, ps = {0}, o = {0}, os = {0};
  double *S_ = NULL, *tmp = NULL;
  if ((st = ge_nn_load_f64(c, Qt, &q)) || (st = ge_nn_load_f64(c, Kt, &k)) ||
      (st = ge_nn_load_f64(c, Vt, &v)) || (st = ge_nn_out_f64(c, O, &o)))
    goto done;
  if (DE && (st = ge_nn_load_f64(c, DE, &de))) goto done;
  if (BE && (st = ge_nn_load_f64(c, BE, &be))) goto done;
  if (PS && (st = ge_nn_load_f64(c, PS, &ps))) goto done;
  S_ = ge_nn2_dalloc(c, ns);
  tmp = ge_nn2_dalloc(c, (size_t)dv);
  if (!S_ || !tmp) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  if (PS) memcpy(S_, ps.p, ns * sizeof(double));
  else memset(S_, 0, ns * sizeof(double));
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++)
      for (int64_t h = 0; h < hkv; h++) {
        double *st_ = S_ + (size_t)(b * hkv + h) * (size_t)(dk * dv);
        const double *kt = k.p + (size_t)(b * T + t) * (size_t)(hkv * dk) + (size_t)(h * dk);
        const double *vt = v.p + (size_t)(b * T + t) * (size_t)(hkv * dv) + (size_t)(h * dv);
        if (DE) {
          for (int64_t d = 0; d < dk; d++) {
            double g = dec_full ? de.p[(size_t)(b * T + t) * (size_t)(hkv * dk) + (size_t)(h * dk + d)]
                                : de.p[(size_t)(b * T + t) * (size_t)DE->dims[2] + (size_t)h];
            double eg = exp(g);
            for (int64_t m = 0; m < dv; m++) st_[d * dv + m] *= eg;
          }
        }
        if (BE) {
          double bt = be.p[(size_t)(b * T + t) * (size_t)blast + (size_t)(blast == 1 ? 0 : h)];
          for (int64_t m = 0; m < dv; m++) {
            double ret = 0;
            for (int64_t d = 0; d < dk; d++) ret += st_[d * dv + m] * kt[d];
            tmp[m] = bt * (vt[m] - ret);
          }
        } else {
          memcpy(tmp, vt, (size_t)dv * sizeof(double));
        }
        for (int64_t d = 0; d < dk; d++)
          for (int64_t m = 0; m < dv; m++) st_[d * dv + m] += kt[d] * tmp[m];
        for (int64_t g = 0; g < G; g++) {
          int64_t qh = h * G + g;
          const double *qt = q.p + (size_t)(b * T + t) * (size_t)(hq * dk) + (size_t)(qh * dk);
          double *ot = o.p + (size_t)(b * T + t) * (size_t)(hq * dv) + (size_t)(qh * dv);
          for (int64_t m = 0; m < dv; m++) ot[m] = 0;
          for (int64_t d = 0; d < dk; d++) {
            double qd = qt[d];
            for (int64_t m = 0; m < dv; m++) ot[m] += qd * st_[d * dv + m];
          }
          for (int64_t m = 0; m < dv; m++) ot[m] *= scale;
        }
      }
  ge_nn_store_f64(O, &o);
  if (OS) {
    if ((st = ge_nn_out_f64(c, OS, &os))) goto done;
    memcpy(os.p, S_, ns * sizeof(double));
    ge_nn_store_f64(OS, &os);
  }
done:
  ge_dbuf_free(&q);
  ge_dbuf_free(&k);
  ge_dbuf_free(&v);
  ge_dbuf_free(&de);
  ge_dbuf_free(&be);
  ge_dbuf_free(&ps);
  ge_dbuf_free(&o);
  ge_dbuf_free(&os);
  free(S_);
  free(tmp);
  return st;
}

/* ------------------------------------------------------------------ CausalConvWithState */

ge_status ge_nn2_causalconv_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  const char *act = ge_node_attr_string(p->node, "activation", "none");
  int *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  if (!strcmp(act, "silu") || !strcmp(act, "swish")) *s = 1;
  else if (strcmp(act, "none")) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "activation '%s' is not none, silu or swish", act);
  }
  *state = s;
  return GE_OK;
}

ge_status ge_nn2_causalconv_run(const void *state, ge_kctx *c) {
  const int *silu = state;
  const ge_tensor *X = c->in[0], *W = c->in[1];
  const ge_tensor *Bi = c->n_in > 2 ? c->in[2] : NULL, *PS = c->n_in > 3 ? c->in[3] : NULL;
  ge_tensor *Y = c->out[0], *OS = c->n_out > 1 ? c->out[1] : NULL;
  if (X->rank != 3 || W->rank != 3)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input and weight must be rank 3");
  int64_t B = X->dims[0], C = X->dims[1], L = X->dims[2], K = W->dims[2];
  if (W->dims[0] != C || W->dims[1] != 1 || K < 1)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "weight must be [channels=%lld, 1, k]", (long long)C);
  if (Bi && Bi->numel != (size_t)C)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "bias must have %lld elements", (long long)C);
  if (PS && (PS->rank != 3 || PS->dims[0] != B || PS->dims[1] != C || PS->dims[2] != K - 1))
    return ge_kctx_fail(c, GE_ERR_SHAPE, "past_state must be [%lld, %lld, %lld]", (long long)B,
                        (long long)C, (long long)(K - 1));
  ge_status st = GE_OK;
  ge_dbuf x = {0}, w = {0}, bi = {0}, ps = {0}, y = {0}, os = {0};
  double *pad = NULL;
  size_t PL = (size_t)(K - 1 + L);
  if ((st = ge_nn_load_f64(c, X, &x)) || (st = ge_nn_load_f64(c, W, &w)) || (st = ge_nn_out_f64(c, Y, &y)))
    goto done;
  if (Bi && (st = ge_nn_load_f64(c, Bi, &bi))) goto done;
  if (PS && (st = ge_nn_load_f64(c, PS, &ps))) goto done;
  if (OS && (st = ge_nn_out_f64(c, OS, &os))) goto done;
  pad = ge_nn2_dalloc(c, PL);
  if (!pad) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  for (int64_t b = 0; b < B; b++)
    for (int64_t ch = 0; ch < C; ch++) {
      size_t bc = (size_t)(b * C + ch);
      for (int64_t i = 0; i < K - 1; i++) pad[i] = PS ? ps.p[bc * (size_t)(K - 1) + (size_t)i] : 0.0;
      memcpy(pad + K - 1, x.p + bc * (size_t)L, (size_t)L * sizeof(double));
      const double *wk = w.p + (size_t)ch * (size_t)K;
      double bias = Bi ? bi.p[ch] : 0.0;
      for (int64_t t = 0; t < L; t++) {
        double acc = bias;
        for (int64_t j = 0; j < K; j++) acc += wk[j] * pad[t + j];
        if (*silu) {
          acc = acc / (1.0 + exp(-acc));
        }
        y.p[bc * (size_t)L + (size_t)t] = acc;
      }
      if (OS) memcpy(os.p + bc * (size_t)(K - 1), pad + L, (size_t)(K - 1) * sizeof(double));
    }
  ge_nn_store_f64(Y, &y);
  if (OS) ge_nn_store_f64(OS, &os);
done:
  ge_dbuf_free(&x);
  ge_dbuf_free(&w);
  ge_dbuf_free(&bi);
  ge_dbuf_free(&ps);
  ge_dbuf_free(&y);
  ge_dbuf_free(&os);
  free(pad);
  return st;
}
