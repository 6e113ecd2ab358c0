/* Reference CPU kernels of the nn2 family: the table, and CumProd, BitCast, Col2Im and
 * CenterCropPad.  The attention-like kernels live in nn2_attn.c, the losses, optimizers and
 * DeformConv in nn2_loss.c. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/nn2_kernels.h"
#include "backend/cpu/ref/nn_util.h"

#define END GE_DTYPE_COUNT

static void free_state(void *s) { free(s); }

static size_t elem_size(ge_dtype dt) {
  switch (dt) {
    case GE_F64: case GE_I64: case GE_U64: return 8;
    case GE_F32: case GE_I32: case GE_U32: return 4;
    case GE_F16: case GE_BF16: case GE_I16: case GE_U16: return 2;
    case GE_I8: case GE_U8: case GE_BOOL: return 1;
    default: return 0;
  }
}

/* ------------------------------------------------------------------ CumProd */

typedef struct cum_state {
  bool reverse, exclusive;
} cum_state;

static const ge_dtype k_cum[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I32, GE_I64, GE_U32, GE_U64, END};

static ge_status cumprod_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_cum));
  cum_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->reverse = ge_node_attr_int(p->node, "reverse", 0) != 0;
  s->exclusive = ge_node_attr_int(p->node, "exclusive", 0) != 0;
  *state = s;
  return GE_OK;
}

/* products wrap for ints (computed in the unsigned type UT) */
#define CUMPROD(NAME, T, UT)                                                                  \
  static void NAME(const T *x, T *y, size_t outer, size_t len, size_t inner, bool rev, bool ex) { \
    for (size_t o = 0; o < outer; o++)                                                        \
      for (size_t in = 0; in < inner; in++) {                                                 \
        UT acc = (UT)1;                                                                       \
        for (size_t k = 0; k < len; k++) {                                                    \
          size_t kk = rev ? len - 1 - k : k;                                                  \
          size_t i = (o * len + kk) * inner + in;                                             \
          if (ex) {                                                                           \
            y[i] = (T)acc;                                                                    \
            acc = (UT)(acc * (UT)x[i]);                                                       \
          } else {                                                                            \
            acc = (UT)(acc * (UT)x[i]);                                                       \
            y[i] = (T)acc;                                                                    \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
  }
CUMPROD(cum_f32, float, float)
CUMPROD(cum_f64, double, double)
CUMPROD(cum_i32, int32_t, uint32_t)
CUMPROD(cum_i64, int64_t, uint64_t)
CUMPROD(cum_u32, uint32_t, uint32_t)
CUMPROD(cum_u64, uint64_t, uint64_t)

static ge_status cumprod_run(const void *state, ge_kctx *c) {
  const cum_state *s = state;
  const ge_tensor *X = c->in[0], *A = c->in[1];
  ge_tensor *Y = c->out[0];
  if (A->numel != 1) return ge_kctx_fail(c, GE_ERR_SHAPE, "input 1 (axis) must be a scalar, has %zu elements", A->numel);
  int64_t ax = ge_tensor_get_i64(A, 0), r = X->rank;
  if (ax < -r || ax >= r || r == 0)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld out of range for rank %lld", (long long)ax, (long long)r);
  if (ax < 0) ax += r;
  size_t outer = ge_nn_prod(X->dims, 0, (int32_t)ax), len = (size_t)X->dims[ax];
  size_t inner = ge_nn_prod(X->dims, (int32_t)ax + 1, X->rank);
  switch (X->dtype) {
    case GE_F32: cum_f32(X->data, Y->data, outer, len, inner, s->reverse, s->exclusive); break;
    case GE_F64: cum_f64(X->data, Y->data, outer, len, inner, s->reverse, s->exclusive); break;
    case GE_I32: cum_i32(X->data, Y->data, outer, len, inner, s->reverse, s->exclusive); break;
    case GE_I64: cum_i64(X->data, Y->data, outer, len, inner, s->reverse, s->exclusive); break;
    case GE_U32: cum_u32(X->data, Y->data, outer, len, inner, s->reverse, s->exclusive); break;
    case GE_U64: cum_u64(X->data, Y->data, outer, len, inner, s->reverse, s->exclusive); break;
    case GE_F16:
    case GE_BF16: {
      ge_fbuf x = {0}, y = {0};
      GE_CHECK(ge_nn_load_f32(c, X, &x));
      ge_status st = ge_nn_out_f32(c, Y, &y);
      if (st == GE_OK) {
        cum_f32(x.p, y.p, outer, len, inner, s->reverse, s->exclusive);
        ge_nn_store_f32(Y, &y);
      }
      ge_fbuf_free(&x);
      ge_fbuf_free(&y);
      return st;
    }
    default:
      return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "no CumProd kernel for dtype %s", ge_dtype_name(X->dtype));
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ BitCast */

static ge_status bitcast_run(const void *state, ge_kctx *c) {
  const ge_tensor *X = c->in[0];
  ge_tensor *Y = c->out[0];
  if (elem_size(X->dtype) == 0 || elem_size(X->dtype) != elem_size(Y->dtype) || X->nbytes != Y->nbytes)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "cannot bitcast %s to %s", ge_dtype_name(X->dtype),
                        ge_dtype_name(Y->dtype));
  if (X->nbytes) memcpy(Y->data, X->data, X->nbytes);
  if (Y->dtype == GE_BOOL) /* ge bools are 0/1 bytes */
    for (size_t i = 0; i < Y->numel; i++) ((uint8_t *)Y->data)[i] = ((uint8_t *)Y->data)[i] != 0;
  return GE_OK;
}

/* ------------------------------------------------------------------ Col2Im */

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};

static ge_status col2im_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  return GE_OK;
}

static ge_status col2im_run(const void *state, ge_kctx *c) {
  const ge_tensor *X = c->in[0], *IS = c->in[1], *BS = c->in[2];
  ge_tensor *Y = c->out[0];
  size_t nsp = IS->numel;
  if (X->rank != 3 || nsp == 0 || nsp > GE_MAX_RANK - 2 || BS->numel != nsp || Y->rank != (int32_t)nsp + 2)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input must be [N, C*prod(block), L] and image_shape/block_shape of equal length");
  int64_t img[GE_MAX_RANK], blk[GE_MAX_RANK], str[GE_MAX_RANK], dil[GE_MAX_RANK], pb[GE_MAX_RANK],
      pe[GE_MAX_RANK], ncol[GE_MAX_RANK];
  const int64_t *a;
  size_t n;
  for (size_t i = 0; i < nsp; i++) {
    img[i] = ge_tensor_get_i64(IS, i);
    blk[i] = ge_tensor_get_i64(BS, i);
    str[i] = dil[i] = 1;
    pb[i] = pe[i] = 0;
  }
  if (ge_node_attr_ints(c->node, "strides", &a, &n) && n == nsp) memcpy(str, a, nsp * sizeof *a);
  if (ge_node_attr_ints(c->node, "dilations", &a, &n) && n == nsp) memcpy(dil, a, nsp * sizeof *a);
  if (ge_node_attr_ints(c->node, "pads", &a, &n) && n == 2 * nsp) {
    memcpy(pb, a, nsp * sizeof *a);
    memcpy(pe, a + nsp, nsp * sizeof *a);
  }
  size_t KK = 1, L = 1;
  const int64_t lim = (int64_t)1 << 31;
  for (size_t i = 0; i < nsp; i++) {
    if (blk[i] <= 0 || img[i] < 0 || str[i] <= 0 || dil[i] <= 0 || blk[i] > lim || img[i] > lim ||
        str[i] > lim || dil[i] > lim || pb[i] < -lim || pb[i] > lim || pe[i] < -lim || pe[i] > lim)
      return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT,
                          "bad block_shape/image_shape/strides/dilations/pads at dim %zu", i);
    ncol[i] = (img[i] + pb[i] + pe[i] - (dil[i] * (blk[i] - 1) + 1)) / str[i] + 1;
    if (ncol[i] <= 0) return ge_kctx_fail(c, GE_ERR_SHAPE, "no sliding blocks fit along dim %zu", i);
    if (__builtin_mul_overflow(KK, (size_t)blk[i], &KK) || __builtin_mul_overflow(L, (size_t)ncol[i], &L))
      return ge_kctx_fail(c, GE_ERR_SHAPE, "block or column count overflows");
  }
  int64_t N = X->dims[0];
  if ((size_t)X->dims[1] % KK || (size_t)X->dims[2] != L)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "input is [%lld, %lld, %lld]; expected dim 1 divisible by %zu and dim 2 = %zu blocks",
                        (long long)X->dims[0], (long long)X->dims[1], (long long)X->dims[2], KK, L);
  int64_t C = X->dims[1] / (int64_t)KK;
  size_t isz = 1;
  for (size_t i = 0; i < nsp; i++)
    if (__builtin_mul_overflow(isz, (size_t)img[i], &isz))
      return ge_kctx_fail(c, GE_ERR_SHAPE, "image size overflows");
  if (Y->numel != (size_t)(N * C) * isz) return ge_kctx_fail(c, GE_ERR_SHAPE, "output shape mismatch");
  ge_dbuf x = {0}, y = {0};
  ge_status st = ge_nn_load_f64(c, X, &x);
  if (st) return st;
  if ((st = ge_nn_out_f64(c, Y, &y))) {
    ge_dbuf_free(&x);
    return st;
  }
  memset(y.p, 0, Y->numel * sizeof(double));
  for (int64_t nc = 0; nc < N * C; nc++) {
    const double *xs = x.p + (size_t)nc * KK * L;
    double *ys = y.p + (size_t)nc * isz;
    for (size_t k = 0; k < KK; k++) {
      int64_t kidx[GE_MAX_RANK];
      size_t rem = k;
      for (size_t i = nsp; i-- > 0;) {
        kidx[i] = (int64_t)(rem % (size_t)blk[i]);
        rem /= (size_t)blk[i];
      }
      for (size_t l = 0; l < L; l++) {
        size_t rl = l, off = 0;
        bool in = true;
        int64_t pos[GE_MAX_RANK];
        for (size_t i = nsp; i-- > 0;) {
          int64_t ci = (int64_t)(rl % (size_t)ncol[i]);
          rl /= (size_t)ncol[i];
          pos[i] = ci * str[i] - pb[i] + kidx[i] * dil[i];
          if (pos[i] < 0 || pos[i] >= img[i]) in = false;
        }
        if (!in) continue;
        for (size_t i = 0; i < nsp; i++) off = off * (size_t)img[i] + (size_t)pos[i];
        ys[off] += xs[k * L + l];
      }
    }
  }
  ge_nn_store_f64(Y, &y);
  ge_dbuf_free(&x);
  return GE_OK;
}

/* ------------------------------------------------------------------ CenterCropPad */

static ge_status ccp_run(const void *state, ge_kctx *c) {
  const ge_tensor *X = c->in[0];
  ge_tensor *Y = c->out[0];
  size_t es = elem_size(X->dtype);
  if (!es || Y->rank != X->rank || Y->dtype != X->dtype)
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "CenterCropPad of dtype %s", ge_dtype_name(X->dtype));
  int32_t r = X->rank;
  int64_t ioff[GE_MAX_RANK], ooff[GE_MAX_RANK], cnt[GE_MAX_RANK];
  size_t total = 1;
  for (int32_t i = 0; i < r; i++) {
    int64_t d = X->dims[i], sh = Y->dims[i];
    ioff[i] = sh < d ? (d - sh) / 2 : 0;
    ooff[i] = sh > d ? (sh - d) / 2 : 0;
    cnt[i] = sh < d ? sh : d;
    total *= (size_t)cnt[i];
  }
  if (Y->nbytes) memset(Y->data, 0, Y->nbytes);
  if (total == 0) return GE_OK;
  if (r == 0) {
    memcpy(Y->data, X->data, es);
    return GE_OK;
  }
  size_t rows = total / (size_t)cnt[r - 1], run = (size_t)cnt[r - 1] * es;
  const uint8_t *xs = X->data;
  uint8_t *yd = Y->data;
  for (size_t rr = 0; rr < rows; rr++) {
    size_t rem = rr, xi = 0, yi = 0, xm = 1, ym = 1;
    xi = (size_t)ioff[r - 1];
    yi = (size_t)ooff[r - 1];
    xm = (size_t)X->dims[r - 1];
    ym = (size_t)Y->dims[r - 1];
    for (int32_t i = r - 2; i >= 0; i--) {
      size_t idx = rem % (size_t)cnt[i];
      rem /= (size_t)cnt[i];
      xi += (idx + (size_t)ioff[i]) * xm;
      yi += (idx + (size_t)ooff[i]) * ym;
      xm *= (size_t)X->dims[i];
      ym *= (size_t)Y->dims[i];
    }
    memcpy(yd + yi * es, xs + xi * es, run);
  }
  return GE_OK;
}

#define TRAIN "ai.onnx.preview.training"

const ge_kernel_def ge_ref_kernels_nn2[] = {
    {"", "Attention", 23, 0, {ge_nn2_attention_prepare, ge_nn2_attention_run, free_state, false}},
    {"ai.onnx.preview", "FlexAttention", 1, 0, {ge_nn2_flex_prepare, ge_nn2_flex_run, ge_nn2_flex_release, false}},
    {"", "RMSNormalization", 23, 0, {ge_nn2_rmsnorm_prepare, ge_nn2_rmsnorm_run, free_state, false}},
    {"", "RotaryEmbedding", 23, 0, {ge_nn2_rotary_prepare, ge_nn2_rotary_run, free_state, false}},
    {"", "LinearAttention", 27, 0, {ge_nn2_linattn_prepare, ge_nn2_linattn_run, free_state, false}},
    {"", "CausalConvWithState", 27, 0, {ge_nn2_causalconv_prepare, ge_nn2_causalconv_run, free_state, false}},
    {"", "DeformConv", 19, 0, {ge_nn2_deform_prepare, ge_nn2_deform_run, free_state, false}},
    {"", "Col2Im", 18, 0, {col2im_prepare, col2im_run, NULL, false}},
    {"", "CenterCropPad", 18, 0, {NULL, ccp_run, NULL, false}},
    {"", "NegativeLogLikelihoodLoss", 12, 0, {ge_nn2_nll_prepare, ge_nn2_nll_run, free_state, false}},
    {"", "SoftmaxCrossEntropyLoss", 12, 0, {ge_nn2_sce_prepare, ge_nn2_sce_run, free_state, false}},
    {"", "CumProd", 26, 0, {cumprod_prepare, cumprod_run, free_state, false}},
    {"", "BitCast", 26, 0, {NULL, bitcast_run, NULL, false}},
    {TRAIN, "Adagrad", 1, 0, {ge_nn2_optim_prepare, ge_nn2_optim_run, free_state, false}},
    {TRAIN, "Momentum", 1, 0, {ge_nn2_optim_prepare, ge_nn2_optim_run, free_state, false}},
    {TRAIN, "Adam", 1, 0, {ge_nn2_optim_prepare, ge_nn2_optim_run, free_state, false}},
    {0},
};
