/* Fast ai.ge::Attention: Y = softmax(Q @ KT * scale + Mask) @ V (see src/ops/fused.h).
 *
 * The reference kernel runs every (batch, head) one after the other, each GEMM threaded on its
 * own (threads started twice per head) and exp from libm.  Here the (batch, head) pairs are
 * split over ge.intraOpThreads threads once per run; each runs its GEMMs single-threaded
 * (ge_sgemm) and a vectorised softmax.  When there are fewer pairs than threads, the GEMMs are
 * threaded instead.  Same semantics as the reference: a fully masked row gives NaN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/attention_geom.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/threadpool.h"
#include "ops/fused.h"

typedef struct fa_state {
  float scale;
} fa_state;

static const ge_dtype k_f32[] = {GE_F32, GE_DTYPE_COUNT};

static ge_status fa_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present && (!p->in[i].type || p->in[i].type->dtype != GE_F32))
      return ge_prepare_check_dtype(p, i, k_f32);
  if (p->n_out < 1 || p->out[0].dtype != GE_F32)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Attention: float32 only");
  fa_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->scale = ge_node_attr_float(p->node, "scale", 1.0f);
  *state = s;
  return GE_OK;
}

/* One row: row += mask (stride mcol: 0 broadcast, 1 dense), then softmax in place.  Returns
   false for a fully masked row (every entry -inf), which the caller fills with NaN.
   Reductions run in 16 lanes so that they vectorise without reassociation flags. */
#define FA_LANES 16
GE_FAST_CLONES
static bool fa_softmax_row(float *restrict row, const float *restrict mask, size_t mcol, size_t n) {
  if (mask) {
    if (mcol) {
      for (size_t j = 0; j < n; j++) row[j] += mask[j];
    } else {
      float m = mask[0];
      for (size_t j = 0; j < n; j++) row[j] += m;
    }
  }
  float lm[FA_LANES];
  for (size_t l = 0; l < FA_LANES; l++) lm[l] = -INFINITY;
  size_t j = 0;
  for (; j + FA_LANES <= n; j += FA_LANES)
    for (size_t l = 0; l < FA_LANES; l++) lm[l] = row[j + l] > lm[l] ? row[j + l] : lm[l];
  float mx = -INFINITY;
  for (; j < n; j++) mx = row[j] > mx ? row[j] : mx;
  for (size_t l = 0; l < FA_LANES; l++) mx = lm[l] > mx ? lm[l] : mx;
  if (mx == -INFINITY) return false;
  for (j = 0; j < n; j++) row[j] = ge_fast_expf(row[j] - mx);
  float ls[FA_LANES] = {0};
  for (j = 0; j + FA_LANES <= n; j += FA_LANES)
    for (size_t l = 0; l < FA_LANES; l++) ls[l] += row[j + l];
  float sum = 0.f;
  for (; j < n; j++) sum += row[j];
  for (size_t l = 0; l < FA_LANES; l++) sum += ls[l];
  float inv = 1.f / sum;
  for (j = 0; j < n; j++) row[j] *= inv;
  return true;
}

typedef struct fa_job {
  const fa_state *s;
  const float *q, *k, *v, *mk;
  float *y;
  size_t M, N, D, Dv, m_row, m_col;
  int32_t rb;
  const int64_t *ob;
  const size_t *qs, *ks, *vs, *ms;
  int gemm_threads;
  int status; /* first failure (ge_status), written atomically */
} fa_job;

static void fa_one(fa_job *j, size_t b, float *sc) {
  size_t qo = 0, ko = 0, vo = 0, mo = 0, rem = b;
  for (int32_t d = j->rb - 1; d >= 0; d--) {
    size_t i = rem % (size_t)j->ob[d];
    rem /= (size_t)j->ob[d];
    qo += i * j->qs[d];
    ko += i * j->ks[d];
    vo += i * j->vs[d];
    mo += i * j->ms[d];
  }
  size_t M = j->M, N = j->N;
  ge_status st = ge_sgemm(false, false, M, N, j->D, j->s->scale, j->q + qo, j->D, j->k + ko, N, 0.f, sc, N,
                          j->gemm_threads);
  if (st == GE_OK) {
    for (size_t i = 0; i < M; i++) {
      float *row = sc + i * N;
      const float *mr = j->mk ? j->mk + mo + i * j->m_row : NULL;
      if (!fa_softmax_row(row, mr, j->m_col, N))
        for (size_t c = 0; c < N; c++) row[c] = NAN;
    }
    st = ge_sgemm(false, false, M, j->Dv, N, 1.f, sc, N, j->v + vo, j->Dv, 0.f, j->y + b * M * j->Dv, j->Dv,
                  j->gemm_threads);
  }
  if (st != GE_OK) {
    int expected = GE_OK;
    __atomic_compare_exchange_n(&j->status, &expected, (int)st, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
}

static void fa_chunk(void *arg, size_t begin, size_t end) {
  fa_job *j = arg;
  float *sc = ge_aligned_alloc(j->M * j->N * sizeof(float));
  if (!sc) {
    int expected = GE_OK;
    __atomic_compare_exchange_n(&j->status, &expected, (int)GE_ERR_OUT_OF_MEMORY, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    return;
  }
  for (size_t b = begin; b < end; b++) fa_one(j, b, sc);
  ge_aligned_free(sc);
}

static ge_status fa_run(const void *state, ge_kctx *ctx) {
  const fa_state *s = state;
  const ge_tensor *Q = ctx->in[0], *K = ctx->in[1], *V = ctx->in[2];
  const ge_tensor *Mk = ctx->n_in > 3 ? ctx->in[3] : NULL;
  ge_tensor *Y = ctx->out[0];
  ge_attn_geom geo;
  GE_CHECK(ge_attn_geom_init(ctx, &geo));
  if (Q->dtype != GE_F32 || K->dtype != GE_F32 || V->dtype != GE_F32 || Y->dtype != GE_F32 ||
      (Mk && Mk->dtype != GE_F32))
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast Attention: every tensor must be float32");
  const size_t M = geo.M, N = geo.N, D = geo.D, Dv = geo.Dv, batch = geo.batch;
  const size_t m_row = geo.m_row, m_col = geo.m_col;
  const int32_t rb = geo.rb;
  const int64_t *ob = geo.ob;
  const size_t *qs = geo.qs, *ks = geo.ks, *vs = geo.vs, *ms = geo.ms;
  if (!M || !Dv || !batch) return GE_OK;
  if (!N) {
    memset(Y->data, 0, Y->nbytes);
    return GE_OK;
  }
  size_t nmn = 0;
  if (ge_mul_overflow_size(M, N, &nmn) || nmn > SIZE_MAX / sizeof(float))
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "scores too large");
  int threads = ctx->threads > 0 ? ctx->threads : 1;
  fa_job j = {.s = s, .q = Q->data, .k = K->data, .v = V->data, .mk = Mk ? Mk->data : NULL, .y = Y->data,
              .M = M, .N = N, .D = D, .Dv = Dv, .m_row = m_row, .m_col = m_col, .rb = rb, .ob = ob,
              .qs = qs, .ks = ks, .vs = vs, .ms = ms, .gemm_threads = 1, .status = GE_OK};
  if (batch >= (size_t)threads) {
    ge_parallel_for(threads, batch, fa_chunk, &j);
  } else {
    j.gemm_threads = threads; /* few heads: thread the GEMMs instead */
    fa_chunk(&j, 0, batch);
  }
  if (j.status != GE_OK)
    return ge_kctx_fail(ctx, (ge_status)j.status, "fast Attention: %s for [%zu x %zu] scores",
                        j.status == GE_ERR_OUT_OF_MEMORY ? "out of memory" : "GEMM failed", M, N);
  return GE_OK;
}

const ge_kernel_def ge_fast_kernels_fast[] = {
    {GE_FUSED_DOMAIN, "Attention", 1, 0, {fa_prepare, fa_run, free, false}},
    {0},
};
