/* Reference CPU kernels of the nn family: Gemm, MatMul, softmax-like ops, Flatten, Dropout,
 * normalisations, Einsum.  Conv/ConvTranspose live in conv.c and pooling in pool.c.
 * The float kernels live in nn_impl.inc, compiled twice: float32 (also used for float16 and
 * bfloat16, converted in and out) and float64 (so double models keep their precision). */
/* GCC -O2 only vectorises loops whose trip count is known; these loops are not. */
#pragma GCC optimize("vect-cost-model=dynamic")

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/ref/nn_kernels.h"
#include "backend/cpu/ref/nn_util.h"
#include "backend/cpu/ref/random.h"
#include "ops/nn_einsum.h"

#define END GE_DTYPE_COUNT

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};
static const ge_dtype k_matmul[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I32, GE_I64,
                                    GE_U32, GE_U64, GE_I8,  GE_U8,  GE_I16, GE_U16, END};

static bool is_floatish(ge_dtype dt) { return dt == GE_F32 || dt == GE_F16 || dt == GE_BF16 || dt == GE_F64; }

/* small state: an int array of options */
typedef struct nn_state {
  int64_t i[4];
  float f[4];
} nn_state;

static ge_status new_state(const ge_prepare_ctx *p, void **out, nn_state **s) {
  *s = calloc(1, sizeof **s);
  if (!*s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  *out = *s;
  return GE_OK;
}

static void free_state(void *s) { free(s); }

/* ------------------------------------------------------------------ integer matmul */

/* C[M,N] = A[M,K] * B[K,N] in T arithmetic (wrapping), A/B strides given per row/col. */
#define INT_MM(T)                                                                              \
  static void mm_##T(const T *A, size_t sam, size_t sak, const T *B, size_t sbk, size_t sbn,  \
                     T *C, size_t M, size_t N, size_t K, T alpha, T beta, bool accum) {        \
    for (size_t m = 0; m < M; m++)                                                             \
      for (size_t n = 0; n < N; n++) {                                                         \
        uint64_t s = 0;                                                                        \
        for (size_t k = 0; k < K; k++)                                                         \
          s += (uint64_t)(int64_t)A[m * sam + k * sak] * (uint64_t)(int64_t)B[k * sbk + n * sbn]; \
        T v = (T)((uint64_t)(int64_t)alpha * s);                                               \
        C[m * N + n] = accum ? (T)(v + (T)((uint64_t)(int64_t)beta * (uint64_t)(int64_t)C[m * N + n])) : v; \
      }                                                                                        \
  }
INT_MM(int8_t)
INT_MM(uint8_t)
INT_MM(int16_t)
INT_MM(uint16_t)
INT_MM(int32_t)
INT_MM(uint32_t)
INT_MM(int64_t)
INT_MM(uint64_t)

/* int matmul dispatch on raw pointers (element offsets) */
static void int_mm(ge_dtype dt, const void *A, size_t sam, size_t sak, const void *B, size_t sbk,
                   size_t sbn, void *C, size_t M, size_t N, size_t K, int64_t alpha, int64_t beta,
                   bool accum) {
#define CASE(D, T)                                                                             \
  case D:                                                                                      \
    mm_##T(A, sam, sak, B, sbk, sbn, C, M, N, K, (T)alpha, (T)beta, accum);                    \
    break;
  switch (dt) {
    CASE(GE_I8, int8_t)
    CASE(GE_U8, uint8_t)
    CASE(GE_I16, int16_t)
    CASE(GE_U16, uint16_t)
    CASE(GE_I32, int32_t)
    CASE(GE_U32, uint32_t)
    CASE(GE_I64, int64_t)
    CASE(GE_U64, uint64_t)
    default: break;
  }
#undef CASE
}


/* ------------------------------------------------------------------ MatMulInteger */

static ge_status matmulint_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype q8[] = {GE_U8, GE_I8, END};
  for (size_t i = 0; i < p->n_in; i++) GE_CHECK(ge_prepare_check_dtype(p, i, q8));
  return GE_OK;
}

/* zero point of row/col r: scalar or a vector of length n */
static ge_status zp_read(ge_kctx *ctx, size_t idx, size_t n, int32_t **out) {
  const ge_tensor *z = ctx->n_in > idx ? ctx->in[idx] : NULL;
  *out = calloc(n ? n : 1, sizeof(int32_t));
  if (!*out) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "cannot allocate zero points");
  if (!z) return GE_OK;
  if (z->numel != 1 && z->numel != n) {
    free(*out);
    *out = NULL;
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input %zu (zero point) has %zu elements; expected 1 or %zu", idx, z->numel, n);
  }
  for (size_t i = 0; i < n; i++) (*out)[i] = (int32_t)ge_tensor_get_i64(z, z->numel == 1 ? 0 : i);
  return GE_OK;
}

static ge_status matmulint_run(const void *state, ge_kctx *ctx) {
  const ge_tensor *A = ctx->in[0], *B = ctx->in[1];
  ge_tensor *Y = ctx->out[0];
  int32_t ra = A->rank, rb = B->rank;
  if (ra < 1 || rb < 1) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inputs must have rank >= 1");
  size_t M = ra >= 2 ? (size_t)A->dims[ra - 2] : 1, K = (size_t)A->dims[ra - 1];
  size_t Kb = rb >= 2 ? (size_t)B->dims[rb - 2] : (size_t)B->dims[0], N = rb >= 2 ? (size_t)B->dims[rb - 1] : 1;
  if (K != Kb) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inner dimensions differ: %zu vs %zu", K, Kb);
  int32_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, bo = ba > bb ? ba : bb;
  int64_t bdims[GE_MAX_RANK], sa[GE_MAX_RANK], sb[GE_MAX_RANK];
  size_t nbatch = 1, stra = M * K, strb = K * N;
  for (int32_t i = bo - 1; i >= 0; i--) {
    int32_t ia = i - (bo - ba), ib = i - (bo - bb);
    int64_t da = ia >= 0 ? A->dims[ia] : 1, db = ib >= 0 ? B->dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "batch dims do not broadcast (%lld vs %lld)", (long long)da, (long long)db);
    bdims[i] = da == 0 || db == 0 ? 0 : (da > db ? da : db);
    sa[i] = da == 1 ? 0 : (int64_t)stra;
    sb[i] = db == 1 ? 0 : (int64_t)strb;
    stra *= (size_t)da;
    strb *= (size_t)db;
    nbatch *= (size_t)bdims[i];
  }
  if (Y->numel == 0) return GE_OK;
  int32_t *za = NULL, *zb = NULL, *a32 = NULL, *b32 = NULL;
  ge_status st = zp_read(ctx, 2, M, &za);
  if (st == GE_OK) st = zp_read(ctx, 3, N, &zb);
  if (st == GE_OK) {
    a32 = calloc(A->numel ? A->numel : 1, sizeof(int32_t));
    b32 = calloc(B->numel ? B->numel : 1, sizeof(int32_t));
    if (!a32 || !b32) st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "cannot allocate int32 copies");
  }
  if (st == GE_OK) {
    for (size_t r = 0; r < A->numel / K; r++) {
      int32_t z = za[r % M];
      if (A->dtype == GE_U8)
        for (size_t k = 0; k < K; k++) a32[r * K + k] = (int32_t)((const uint8_t *)A->data)[r * K + k] - z;
      else
        for (size_t k = 0; k < K; k++) a32[r * K + k] = (int32_t)((const int8_t *)A->data)[r * K + k] - z;
    }
    for (size_t r = 0; r < B->numel / N; r++) {
      if (B->dtype == GE_U8)
        for (size_t n = 0; n < N; n++) b32[r * N + n] = (int32_t)((const uint8_t *)B->data)[r * N + n] - zb[n];
      else
        for (size_t n = 0; n < N; n++) b32[r * N + n] = (int32_t)((const int8_t *)B->data)[r * N + n] - zb[n];
    }
    int64_t idx[GE_MAX_RANK] = {0};
    size_t offa = 0, offb = 0;
    int32_t *y = Y->data;
    for (size_t t = 0; t < nbatch; t++) {
      mm_int32_t(a32 + offa, K, 1, b32 + offb, N, 1, y + t * M * N, M, N, K, 1, 0, false);
      for (int32_t i = bo - 1; i >= 0; i--) {
        idx[i]++;
        offa += (size_t)sa[i];
        offb += (size_t)sb[i];
        if (idx[i] < bdims[i]) break;
        offa -= (size_t)sa[i] * (size_t)bdims[i];
        offb -= (size_t)sb[i] * (size_t)bdims[i];
        idx[i] = 0;
      }
    }
  }
  free(za);
  free(zb);
  free(a32);
  free(b32);
  return st;
}

/* ------------------------------------------------------------------ Gemm */

static ge_status gemm_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_matmul));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  s->i[0] = ge_node_attr_int(p->node, "transA", 0) != 0;
  s->i[1] = ge_node_attr_int(p->node, "transB", 0) != 0;
  s->f[0] = ge_node_attr_float(p->node, "alpha", 1.0f);
  s->f[1] = ge_node_attr_float(p->node, "beta", 1.0f);
  return GE_OK;
}

/* Fills Y (f32 buffer [M,N]) with C broadcast. */
/* ------------------------------------------------------------------ MatMul */

static ge_status matmul_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_matmul));
  return GE_OK;
}

/* ------------------------------------------------------------------ Softmax family */

enum { SM_SOFTMAX, SM_LOGSOFTMAX, SM_HARDMAX };

static ge_status softmax_prepare_kind(const ge_prepare_ctx *p, void **state, int kind) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  s->i[0] = ge_node_attr_int(p->node, "axis", p->opset >= 13 ? -1 : 1);
  s->i[1] = p->opset >= 13;
  s->i[2] = kind;
  return GE_OK;
}
static ge_status softmax_prepare(const ge_prepare_ctx *p, void **st) { return softmax_prepare_kind(p, st, SM_SOFTMAX); }
static ge_status logsoftmax_prepare(const ge_prepare_ctx *p, void **st) { return softmax_prepare_kind(p, st, SM_LOGSOFTMAX); }
static ge_status hardmax_prepare(const ge_prepare_ctx *p, void **st) { return softmax_prepare_kind(p, st, SM_HARDMAX); }

/* ------------------------------------------------------------------ Flatten / Dropout */

static ge_status copy_tensor(ge_kctx *ctx, const ge_tensor *X, ge_tensor *Y) {
  if (X->numel != Y->numel || X->dtype != Y->dtype)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements of %s, input %zu of %s",
                        Y->numel, ge_dtype_name(Y->dtype), X->numel, ge_dtype_name(X->dtype));
  if (X->dtype == GE_STRING) {
    char *const *src = X->data;
    char **dst = Y->data;
    for (size_t i = 0; i < X->numel; i++) {
      free(dst[i]);
      dst[i] = src[i] ? strdup(src[i]) : NULL;
      if (src[i] && !dst[i]) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "cannot copy string %zu", i);
    }
    return GE_OK;
  }
  if (X->data != Y->data && X->nbytes) memcpy(Y->data, X->data, X->nbytes);
  return GE_OK;
}

static ge_status flatten_run(const void *state, ge_kctx *ctx) { return copy_tensor(ctx, ctx->in[0], ctx->out[0]); }

/* Dropout: a copy at inference; in training mode (opset >= 12, training_mode true) a mask
 * u >= ratio from the random family's numpy-compatible generator (ref/random.h): with a
 * `seed` attribute the first run reproduces numpy.random.RandomState(seed).uniform. */
static ge_status dropout_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  if (p->opset < 7 && ge_node_attr_int(p->node, "is_test", 0) == 0)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "is_test=0 (random dropout) is not supported");
  ge_random_stream *r = malloc(sizeof *r);
  if (!r) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_random_stream_init(r, p->node);
  *state = r;
  return GE_OK;
}

static ge_status dropout_train(const ge_random_stream *r, ge_kctx *ctx, double ratio) {
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  ge_tensor *M = ctx->n_out > 1 ? ctx->out[1] : NULL;
  if (!(ratio >= 0.0 && ratio <= 1.0))
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "ratio %g is not in [0, 1]", ratio);
  if (Y->numel != X->numel || Y->dtype != X->dtype || (M && M->numel != X->numel))
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "outputs do not match input 0 (%zu elements)", X->numel);
  double scale = ratio < 1.0 ? 1.0 / (1.0 - ratio) : 0.0;
  ge_mt19937 m;
  ge_random_stream_next(r, &m);
  for (size_t i = 0; i < X->numel; i++) {
    bool keep = ge_mt_double(&m) >= ratio;
    switch (X->dtype) {
    case GE_F32: ((float *)Y->data)[i] = keep ? (float)(((const float *)X->data)[i] * scale) : 0.0f; break;
    case GE_F64: ((double *)Y->data)[i] = keep ? ((const double *)X->data)[i] * scale : 0.0; break;
    case GE_F16:
      ((uint16_t *)Y->data)[i] =
          ge_f32_to_f16(keep ? (float)(ge_f16_to_f32(((const uint16_t *)X->data)[i]) * scale) : 0.0f);
      break;
    case GE_BF16:
      ((uint16_t *)Y->data)[i] =
          ge_f32_to_bf16(keep ? (float)(ge_bf16_to_f32(((const uint16_t *)X->data)[i]) * scale) : 0.0f);
      break;
    default: return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "dtype %s", ge_dtype_name(X->dtype));
    }
    if (M) {
      if (M->dtype == GE_BOOL) {
        ((bool *)M->data)[i] = keep;
      } else {
        float one = keep ? 1.0f : 0.0f;
        ge_nn_f32_to(M->dtype, &one, (char *)M->data + i * ge_dtype_size(M->dtype), 1);
      }
    }
  }
  return GE_OK;
}

static ge_status dropout_run(const void *state, ge_kctx *ctx) {
  if (ctx->n_in > 2 && ctx->in[2] && ctx->in[2]->numel == 1 && ge_tensor_get_i64(ctx->in[2], 0) != 0) {
    double ratio = 0.5;
    if (ctx->n_in > 1 && ctx->in[1] && ctx->in[1]->numel == 1) ratio = ge_tensor_get_f64(ctx->in[1], 0);
    if (ratio != 0.0) return dropout_train(state, ctx, ratio);
  }
  GE_CHECK(copy_tensor(ctx, ctx->in[0], ctx->out[0]));
  if (ctx->n_out > 1 && ctx->out[1]) {
    ge_tensor *m = ctx->out[1];
    if (m->dtype == GE_BOOL) {
      memset(m->data, 1, m->numel);
    } else {
      float one = 1.0f;
      size_t es = ge_dtype_size(m->dtype);
      for (size_t i = 0; i < m->numel; i++) ge_nn_f32_to(m->dtype, &one, (char *)m->data + i * es, 1);
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ BatchNormalization */

static ge_status bn_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < 5; i++) GE_CHECK(ge_prepare_check_dtype(p, i, k_float));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  s->f[0] = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  s->f[1] = ge_node_attr_float(p->node, "momentum", 0.9f);
  s->i[0] = p->opset >= 14 ? ge_node_attr_int(p->node, "training_mode", 0) != 0 : p->n_out > 1;
  if (p->opset < 7 && ge_node_attr_int(p->node, "is_test", 0)) s->i[0] = 0;
  return GE_OK;
}

/* ------------------------------------------------------------------ Instance/Group norm */

static ge_status instnorm_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < 3; i++) GE_CHECK(ge_prepare_check_dtype(p, i, k_float));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  s->f[0] = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  s->i[0] = ge_node_attr_int(p->node, "num_groups", 0);
  return GE_OK;
}

static ge_status groupnorm_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(instnorm_prepare(p, state));
  nn_state *s = *state;
  if (s->i[0] < 1) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute num_groups must be >= 1");
  s->i[1] = p->opset >= 21;
  return GE_OK;
}

/* shared: groups per sample G (instance norm: G = C), scale/bias per channel or per group */

/* ------------------------------------------------------------------ float kernels (f32, f64) */

#define GE_NN_TEMPLATE "backend/cpu/ref/nn_impl.inc"
#include "backend/cpu/ref/nn_real.inc"

static bool in_f64(const ge_kctx *ctx) { return ctx->in[0]->dtype == GE_F64; }
#define DISPATCH(name)                                                    \
  static ge_status name(const void *state, ge_kctx *ctx) {                \
    return in_f64(ctx) ? name##_f64(state, ctx) : name##_f32(state, ctx); \
  }
DISPATCH(gemm_run)
DISPATCH(matmul_run)
DISPATCH(softmax_run)
DISPATCH(bn_run)
DISPATCH(layernorm_run)
DISPATCH(lrn_run)
DISPATCH(mvn_run)
#undef DISPATCH

static ge_status groupwise_run(ge_kctx *ctx, float eps, size_t G, bool per_channel) {
  return in_f64(ctx) ? groupwise_run_f64(ctx, eps, G, per_channel) : groupwise_run_f32(ctx, eps, G, per_channel);
}

static ge_status instnorm_run(const void *state, ge_kctx *ctx) {
  const nn_state *s = state;
  const ge_tensor *X = ctx->in[0];
  if (X->rank < 2) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 must have rank >= 2");
  return groupwise_run(ctx, s->f[0], (size_t)X->dims[1], true);
}

static ge_status groupnorm_run(const void *state, ge_kctx *ctx) {
  const nn_state *s = state;
  return groupwise_run(ctx, s->f[0], (size_t)s->i[0], s->i[1]);
}

/* ------------------------------------------------------------------ LayerNormalization */

static ge_status layernorm_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < 3; i++) GE_CHECK(ge_prepare_check_dtype(p, i, k_float));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  s->i[0] = ge_node_attr_int(p->node, "axis", -1);
  s->f[0] = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  return GE_OK;
}

/* ------------------------------------------------------------------ LRN */

static ge_status lrn_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  s->i[0] = ge_node_attr_int(p->node, "size", 0);
  if (s->i[0] < 1) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute size must be >= 1");
  s->f[0] = ge_node_attr_float(p->node, "alpha", 1e-4f);
  s->f[1] = ge_node_attr_float(p->node, "beta", 0.75f);
  s->f[2] = ge_node_attr_float(p->node, "bias", 1.0f);
  return GE_OK;
}

/* ------------------------------------------------------------------ MeanVarianceNormalization */

static ge_status mvn_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  nn_state *s;
  GE_CHECK(new_state(p, state, &s));
  const int64_t *ax;
  size_t n;
  if (ge_node_attr_ints(p->node, "axes", &ax, &n)) {
    for (size_t i = 0; i < n; i++) {
      int64_t a = ax[i];
      if (a < -GE_MAX_RANK || a >= GE_MAX_RANK)
        return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "axes[%zu] = %lld is out of range", i, (long long)a);
      /* bit a for axis a >= 0; bit 32 + (a + GE_MAX_RANK) for a negative axis */
      s->i[0] |= (int64_t)1 << (a < 0 ? 32 + (a + GE_MAX_RANK) : a);
    }
  } else {
    s->i[0] = (1 << 0) | (1 << 2) | (1 << 3);
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ Einsum */

static ge_status einsum_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_matmul));
  if (!ge_node_attr_string(p->node, "equation", NULL))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute equation is required");
  if (p->n_in > GE_EINSUM_MAX_OPS) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "too many operands (%zu)", p->n_in);
  return GE_OK;
}

/* Two-operand contractions as batched GEMM: labels in A, B and the output are batch dims, in A
   and the output M dims, in B and the output N dims, in A and B only K dims.  Operands are
   gathered into [batch, M, K] and [batch, K, N], multiplied, and scattered to the output order.
   Returns false (nothing done) for diagonals, broadcast dims or labels summed within one operand. */
typedef struct es_geom {
  int bl[GE_EINSUM_MAX_LABELS], ml[GE_EINSUM_MAX_LABELS], nl[GE_EINSUM_MAX_LABELS], kl[GE_EINSUM_MAX_LABELS];
  size_t nb, nm, nn, nk;
  size_t Bt, Mt, Nt, Kt;
  int64_t sA[GE_EINSUM_MAX_LABELS], sB[GE_EINSUM_MAX_LABELS], sY[GE_EINSUM_MAX_LABELS];
} es_geom;

static bool es_plan(const ge_kctx *ctx, const ge_einsum_plan *pl, const int64_t *size, es_geom *g) {
  memset(g, 0, sizeof *g);
  int cnt[3][GE_EINSUM_MAX_LABELS];
  memset(cnt, 0, sizeof cnt);
  const ge_tensor *T[3] = {ctx->in[0], ctx->in[1], ctx->out[0]};
  int64_t *strides[3] = {g->sA, g->sB, g->sY};
  for (int t = 0; t < 3; t++) {
    int32_t r = t < 2 ? pl->op_rank[t] : (int32_t)pl->n_out;
    if (T[t]->rank != r) return false;
    int64_t stride = 1;
    for (int32_t d = r - 1; d >= 0; d--) {
      int l = t < 2 ? pl->op_labels[t][d] : pl->out_labels[d];
      if (cnt[t][l]++ || T[t]->dims[d] != size[l]) return false;
      strides[t][l] = stride;
      stride *= T[t]->dims[d];
    }
  }
  g->Bt = g->Mt = g->Nt = g->Kt = 1;
  for (size_t l = 0; l < pl->n_labels; l++) {
    bool a = cnt[0][l], b = cnt[1][l], o = cnt[2][l];
    size_t z = (size_t)size[l];
    if (o && a && b) { g->bl[g->nb++] = (int)l; g->Bt *= z; }
    else if (o && a) { g->ml[g->nm++] = (int)l; g->Mt *= z; }
    else if (o && b) { g->nl[g->nn++] = (int)l; g->Nt *= z; }
    else if (a && b) { g->kl[g->nk++] = (int)l; g->Kt *= z; }
    else if (a || b) return false;
  }
  return true;
}

/* dst[contiguous over labels lab[0..n)] <-> src strided (to_contig) or the reverse */
#define ES_COPY(T)                                                                               \
  static void es_copy_##T(T *contig, T *strided, const int *lab, size_t n, const int64_t *size, \
                          const int64_t *str, bool to_contig) {                                  \
    int64_t idx[GE_EINSUM_MAX_LABELS] = {0};                                                     \
    size_t total = 1, off = 0;                                                                   \
    for (size_t i = 0; i < n; i++) total *= (size_t)size[lab[i]];                                \
    for (size_t e = 0; e < total; e++) {                                                         \
      if (to_contig) contig[e] = strided[off];                                                   \
      else strided[off] = contig[e];                                                             \
      for (size_t i = n; i-- > 0;) {                                                             \
        int l = lab[i];                                                                          \
        idx[i]++;                                                                                \
        off += (size_t)str[l];                                                                   \
        if (idx[i] < size[l]) break;                                                             \
        off -= (size_t)str[l] * (size_t)size[l];                                                 \
        idx[i] = 0;                                                                              \
      }                                                                                          \
    }                                                                                            \
  }
ES_COPY(float)
ES_COPY(double)

#define ES_RUN(T, BUFT, LOADF, OUTF, STOREF, FREEF, GEMMF)                                         \
  static ge_status es_run_##T(ge_kctx *ctx, const es_geom *g, const int64_t *size) {              \
    int la[2 * GE_EINSUM_MAX_LABELS + 1], lb[2 * GE_EINSUM_MAX_LABELS + 1], ly[2 * GE_EINSUM_MAX_LABELS + 1]; \
    size_t na = 0, nb = 0, ny = 0;                                                                 \
    for (size_t i = 0; i < g->nb; i++) la[na++] = lb[nb++] = ly[ny++] = g->bl[i];                  \
    for (size_t i = 0; i < g->nm; i++) la[na++] = ly[ny++] = g->ml[i];                             \
    for (size_t i = 0; i < g->nk; i++) la[na++] = lb[nb++] = g->kl[i];                             \
    for (size_t i = 0; i < g->nn; i++) lb[nb++] = ly[ny++] = g->nl[i];                             \
    BUFT a = {0}, b = {0}, y = {0};                                                                \
    T *pa = NULL, *pb = NULL, *pc = NULL;                                                          \
    ge_status st = LOADF(ctx, ctx->in[0], &a);                                                     \
    if (st == GE_OK) st = LOADF(ctx, ctx->in[1], &b);                                              \
    if (st == GE_OK) st = OUTF(ctx, ctx->out[0], &y);                                              \
    size_t nA = g->Bt * g->Mt * g->Kt, nB = g->Bt * g->Kt * g->Nt, nC = g->Bt * g->Mt * g->Nt;     \
    if (st == GE_OK) {                                                                             \
      pa = malloc((nA ? nA : 1) * sizeof(T));                                                      \
      pb = malloc((nB ? nB : 1) * sizeof(T));                                                      \
      pc = malloc((nC ? nC : 1) * sizeof(T));                                                      \
      if (!pa || !pb || !pc) st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "cannot allocate einsum scratch"); \
    }                                                                                              \
    if (st == GE_OK) {                                                                             \
      es_copy_##T(pa, a.p, la, na, size, g->sA, true);                                             \
      es_copy_##T(pb, b.p, lb, nb, size, g->sB, true);                                             \
      for (size_t t = 0; t < g->Bt && st == GE_OK; t++)                                            \
        st = GEMMF(false, false, g->Mt, g->Nt, g->Kt, 1, pa + t * g->Mt * g->Kt, g->Kt,             \
                   pb + t * g->Kt * g->Nt, g->Nt, 0, pc + t * g->Mt * g->Nt, g->Nt, ctx->threads); \
      if (st == GE_OK) es_copy_##T(pc, y.p, ly, ny, size, g->sY, false);                           \
    }                                                                                              \
    free(pa);                                                                                      \
    free(pb);                                                                                      \
    free(pc);                                                                                      \
    FREEF(&a);                                                                                     \
    FREEF(&b);                                                                                     \
    if (st == GE_OK) STOREF(ctx->out[0], &y);                                                      \
    else FREEF(&y);                                                                                \
    return st;                                                                                     \
  }
ES_RUN(float, ge_fbuf, ge_nn_load_f32, ge_nn_out_f32, ge_nn_store_f32, ge_fbuf_free, ge_sgemm)
ES_RUN(double, ge_dbuf, ge_nn_load_f64, ge_nn_out_f64, ge_nn_store_f64, ge_dbuf_free, ge_dgemm)

static ge_status einsum_run(const void *state, ge_kctx *ctx) {
  const char *eq = ge_node_attr_string(ctx->node, "equation", "");
  size_t nop = ctx->n_in;
  int32_t ranks[GE_EINSUM_MAX_OPS];
  for (size_t i = 0; i < nop; i++) ranks[i] = ctx->in[i]->rank;
  ge_einsum_plan pl;
  char err[256];
  if (ge_einsum_parse(eq, nop, ranks, &pl, err, sizeof err) != GE_OK)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "equation '%s': %s", eq, err);
  int64_t size[GE_EINSUM_MAX_LABELS];
  for (size_t l = 0; l < pl.n_labels; l++) size[l] = 1;
  for (size_t i = 0; i < nop; i++)
    for (int32_t d = 0; d < ranks[i]; d++) {
      int l = pl.op_labels[i][d];
      int64_t v = ctx->in[i]->dims[d];
      if (v != 1 || !pl.label_is_ell[l]) {
        if (size[l] != 1 && size[l] != v && !(pl.label_is_ell[l] && v == 1))
          return ge_kctx_fail(ctx, GE_ERR_SHAPE, "operand %zu dim %d is %lld, label size is %lld", i, d,
                              (long long)v, (long long)size[l]);
        if (!pl.label_is_ell[l] && size[l] != 1 && size[l] != v)
          return ge_kctx_fail(ctx, GE_ERR_SHAPE, "label size mismatch");
        size[l] = v;
      }
    }
  /* label order: outputs, then summed labels */
  int order[GE_EINSUM_MAX_LABELS];
  size_t no = 0;
  bool in_out[GE_EINSUM_MAX_LABELS] = {0};
  for (size_t d = 0; d < pl.n_out; d++) { order[no++] = pl.out_labels[d]; in_out[pl.out_labels[d]] = true; }
  for (size_t l = 0; l < pl.n_labels; l++) if (!in_out[l]) order[no++] = (int)l;
  /* per operand stride of each label (in order) */
  int64_t st[GE_EINSUM_MAX_OPS][GE_EINSUM_MAX_LABELS];
  memset(st, 0, sizeof st);
  for (size_t i = 0; i < nop; i++) {
    int64_t stride = 1;
    for (int32_t d = ranks[i] - 1; d >= 0; d--) {
      int l = pl.op_labels[i][d];
      int64_t dim = ctx->in[i]->dims[d];
      for (size_t k = 0; k < no; k++)
        if (order[k] == l && dim != 1) st[i][k] += stride;
      stride *= dim;
    }
  }
  ge_tensor *Y = ctx->out[0];
  if (Y->numel == 0) return GE_OK;
  es_geom eg;
  if (nop == 2 && is_floatish(Y->dtype) && es_plan(ctx, &pl, size, &eg))
    return Y->dtype == GE_F64 ? es_run_double(ctx, &eg, size) : es_run_float(ctx, &eg, size);
  size_t nsum = 1;
  for (size_t k = pl.n_out; k < no; k++) nsum *= (size_t)size[order[k]];
  double *vals[GE_EINSUM_MAX_OPS] = {0};
  ge_status rs = GE_OK;
  for (size_t i = 0; i < nop && rs == GE_OK; i++) {
    const ge_tensor *t = ctx->in[i];
    vals[i] = malloc((t->numel ? t->numel : 1) * sizeof(double));
    if (!vals[i]) { rs = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "cannot allocate operand copy"); break; }
    if (t->dtype == GE_F64) memcpy(vals[i], t->data, t->numel * sizeof(double));
    else if (is_floatish(t->dtype)) {
      float *tmp = ge_nn_falloc(ctx, t->numel + 1);
      if (!tmp) { rs = GE_ERR_OUT_OF_MEMORY; break; }
      ge_nn_to_f32(t->dtype, t->data, tmp, t->numel);
      for (size_t e = 0; e < t->numel; e++) vals[i][e] = tmp[e];
      free(tmp);
    } else {
      for (size_t e = 0; e < t->numel; e++) vals[i][e] = (double)ge_tensor_get_i64(t, e);
    }
  }
  double *out = NULL;
  if (rs == GE_OK) {
    out = calloc(Y->numel, sizeof(double));
    if (!out) rs = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "cannot allocate output scratch");
  }
  if (rs == GE_OK && nsum > 0) {
    int64_t idx[GE_EINSUM_MAX_LABELS] = {0};
    size_t off[GE_EINSUM_MAX_OPS] = {0};
    size_t yi = 0;
    size_t ntot = Y->numel * nsum;
    for (size_t it = 0; it < ntot; it++) {
      double prod = 1;
      for (size_t i = 0; i < nop; i++) prod *= vals[i][off[i]];
      out[yi] += prod;
      /* advance odometer: summed labels innermost */
      for (size_t k = no; k-- > 0;) {
        idx[k]++;
        for (size_t i = 0; i < nop; i++) off[i] += (size_t)st[i][k];
        if (idx[k] < size[order[k]]) break;
        for (size_t i = 0; i < nop; i++) off[i] -= (size_t)st[i][k] * (size_t)size[order[k]];
        idx[k] = 0;
      }
      if ((it + 1) % nsum == 0) yi++;
    }
  }
  if (rs == GE_OK) {
    if (Y->dtype == GE_F64) memcpy(Y->data, out, Y->numel * sizeof(double));
    else if (is_floatish(Y->dtype)) {
      float *tmp = ge_nn_falloc(ctx, Y->numel);
      if (!tmp) rs = GE_ERR_OUT_OF_MEMORY;
      else {
        for (size_t e = 0; e < Y->numel; e++) tmp[e] = (float)out[e];
        ge_nn_f32_to(Y->dtype, tmp, Y->data, Y->numel);
        free(tmp);
      }
    } else {
      size_t es = ge_dtype_size(Y->dtype);
      for (size_t e = 0; e < Y->numel; e++) {
        int64_t v = (int64_t)out[e];
        switch (Y->dtype) {
          case GE_I8: ((int8_t *)Y->data)[e] = (int8_t)v; break;
          case GE_U8: ((uint8_t *)Y->data)[e] = (uint8_t)v; break;
          case GE_I16: ((int16_t *)Y->data)[e] = (int16_t)v; break;
          case GE_U16: ((uint16_t *)Y->data)[e] = (uint16_t)v; break;
          case GE_I32: ((int32_t *)Y->data)[e] = (int32_t)v; break;
          case GE_U32: ((uint32_t *)Y->data)[e] = (uint32_t)v; break;
          case GE_I64: ((int64_t *)Y->data)[e] = v; break;
          case GE_U64: ((uint64_t *)Y->data)[e] = (uint64_t)v; break;
          default: (void)es; break;
        }
      }
    }
  }
  free(out);
  for (size_t i = 0; i < nop; i++) free(vals[i]);
  return rs;
}

/* ------------------------------------------------------------------ table */

const ge_kernel_def ge_ref_kernels_nn[] = {
    {"", "Gemm", 1, 0, {gemm_prepare, gemm_run, free_state, false}},
    {"", "MatMul", 1, 0, {matmul_prepare, matmul_run, NULL, false}},
    {"", "MatMulInteger", 10, 0, {matmulint_prepare, matmulint_run, NULL, false}},
    {"", "Conv", 1, 0, {ge_nn_conv_prepare, ge_nn_conv_run, ge_nn_conv_release, false}},
    {"", "ConvTranspose", 1, 0, {ge_nn_convt_prepare, ge_nn_convt_run, ge_nn_conv_release, false}},
    {"", "MaxPool", 1, 0, {ge_nn_pool_prepare, ge_nn_pool_run, ge_nn_pool_release, false}},
    {"", "AveragePool", 1, 0, {ge_nn_pool_prepare, ge_nn_pool_run, ge_nn_pool_release, false}},
    {"", "LpPool", 1, 0, {ge_nn_pool_prepare, ge_nn_pool_run, ge_nn_pool_release, false}},
    {"", "GlobalAveragePool", 1, 0, {ge_nn_gpool_prepare, ge_nn_gpool_run, ge_nn_pool_release, false}},
    {"", "GlobalMaxPool", 1, 0, {ge_nn_gpool_prepare, ge_nn_gpool_run, ge_nn_pool_release, false}},
    {"", "GlobalLpPool", 1, 0, {ge_nn_gpool_prepare, ge_nn_gpool_run, ge_nn_pool_release, false}},
    {"", "BatchNormalization", 1, 0, {bn_prepare, bn_run, free_state, false}},
    {"", "InstanceNormalization", 1, 0, {instnorm_prepare, instnorm_run, free_state, false}},
    {"", "LayerNormalization", 17, 0, {layernorm_prepare, layernorm_run, free_state, false}},
    {"", "GroupNormalization", 18, 0, {groupnorm_prepare, groupnorm_run, free_state, false}},
    {"", "LRN", 1, 0, {lrn_prepare, lrn_run, free_state, false}},
    {"", "MeanVarianceNormalization", 1, 0, {mvn_prepare, mvn_run, free_state, false}},
    {"", "Softmax", 1, 0, {softmax_prepare, softmax_run, free_state, false}},
    {"", "LogSoftmax", 1, 0, {logsoftmax_prepare, softmax_run, free_state, false}},
    {"", "Hardmax", 1, 0, {hardmax_prepare, softmax_run, free_state, false}},
    {"", "Dropout", 1, 0, {dropout_prepare, dropout_run, free, false}},
    {"", "Flatten", 1, 0, {NULL, flatten_run, NULL, false}},
    {"", "Einsum", 12, 0, {einsum_prepare, einsum_run, NULL, false}},
    {0},
};
