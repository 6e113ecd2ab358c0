/* Fast ai.ge::Attention: Y = softmax(Q @ KT * scale + Mask) @ V (see src/ops/fused.h).
 *
 * The reference kernel runs every (batch, head) one after the other, each GEMM threaded on its
 * own (threads started twice per head) and exp from libm.  Here the (batch, head) pairs are
 * split over ge.intraOpThreads threads (claimed one at a time on the fused path below: fa_claim);
 * each runs its GEMMs single-threaded
 * (ge_sgemm) and a vectorised softmax.  When there are fewer pairs than threads, the GEMMs are
 * threaded instead.  Same semantics as the reference: a row of all -inf scores gives NaN; in
 * mask_mode 1 (select, ops/fused.h) the bool Mask replaces masked scores by mask_fill.
 * On AVX-512 processors each pair runs fa_one_avx512 instead: register-tiled GEMMs and the
 * softmax fused per block of 6 query rows (the scores stay in L1), about twice as fast as the
 * packed ge_sgemm path on BERT-base's 12 x [128 x 64] heads.  In bf16 mode the oneDNN kernel
 * of dnnl/dnnl_attn.c runs the node instead (it declines float32). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/attention_geom.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/threadpool.h"
#include "ops/fused.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#include "backend/cpu/fast/fast_avx512.h"
#define FA_AVX512 1
#endif

typedef struct fa_state {
  float scale;
} fa_state;

static const ge_dtype k_f32[] = {GE_F32, GE_DTYPE_COUNT};

static ge_status fa_prepare(const ge_prepare_ctx *p, void **state) {
  static const ge_dtype k_bool[] = {GE_BOOL, GE_DTYPE_COUNT};
  bool select = ge_node_attr_int(p->node, "mask_mode", GE_ATTN_MASK_ADD) == GE_ATTN_MASK_SELECT;
  for (size_t i = 0; i < p->n_in; i++) {
    ge_dtype want = i == 3 && select ? GE_BOOL : GE_F32;
    if (p->in[i].present && (!p->in[i].type || p->in[i].type->dtype != want))
      return ge_prepare_check_dtype(p, i, want == GE_BOOL ? k_bool : k_f32);
  }
  if (p->n_out < 1 || p->out[0].dtype != GE_F32)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Attention: float32 only");
  fa_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->scale = ge_node_attr_float(p->node, "scale", 1.0f);
  *state = s;
  return GE_OK;
}

/* One row: row += mask (stride mcol: 0 broadcast, 1 dense), or with `select` row[j] = fill
   where the bool mask byte is 0, then softmax in place.  Returns false for a fully masked row
   (every entry -inf), which the caller fills with NaN.
   Reductions run in 16 lanes so that they vectorise without reassociation flags. */
GE_FAST_CLONES
static bool fa_softmax_row(float *restrict row, const void *restrict mask_, size_t mcol, size_t n, bool select,
                           float fill) {
  const float *mask = select ? NULL : mask_;
  if (select && mask_) {
    const uint8_t *c = mask_;
    if (mcol) {
      for (size_t j = 0; j < n; j++) row[j] = c[j] ? row[j] : fill;
    } else if (!c[0]) {
      for (size_t j = 0; j < n; j++) row[j] = fill;
    }
  }
  if (mask) {
    if (mcol) {
      for (size_t j = 0; j < n; j++) row[j] += mask[j];
    } else {
      float m = mask[0];
      for (size_t j = 0; j < n; j++) row[j] += m;
    }
  }
  float mx = ge_fast_row_max(row, n);
  if (mx == -INFINITY) return false;
  ge_fast_softmax_from_max(row, row, n, mx);
  return true;
}

typedef struct fa_job {
  const fa_state *s;
  const float *q, *k, *v;
  const void *mk;  /* the Mask: float32, or bool bytes when select */
  bool select;     /* mask_mode 1 (ge_attn_geom) */
  float fill;
  float *y;
  size_t M, N, D, Dv, m_row, m_col;
  int32_t rb;
  const int64_t *ob;
  const size_t *qs, *ks, *vs, *ys, *ms;
  size_t q_rs, k_rs, k_cs, v_rs, y_rs; /* row strides (ge_attn_geom) */
  size_t scn;      /* floats of scratch per thread on the fused path (checked) */
  bool kt_t;       /* KT stored as K [N x D] (rows of stride k_cs): the layout attribute */
  int gemm_threads;
  bool avx512; /* the fused AVX-512 path (fa_one_avx512); sc then holds FA_R x N + max(D, N)
                  (+ D x N for KT transposed when kt_t) */
  int status; /* first failure (ge_status), written atomically */
} fa_job;

/* the Mask at element offset off (float32 or bool bytes) */
static inline const void *fa_mask_at(const fa_job *j, size_t off) {
  return j->select ? (const void *)((const uint8_t *)j->mk + off) : (const void *)((const float *)j->mk + off);
}

#ifdef FA_AVX512
/* The AVX-512 path: per (batch, head), blocks of FA_R query rows go through
 *   S = scale * Q_blk x KT  ->  mask + softmax (float32)  ->  Y_blk = S x V
 * with the scores of the block (FA_R x N floats) staying in L1.  The register tile is FA_R rows
 * x 64 columns (24 accumulators, B rows loaded once per k, A broadcast from memory); column
 * tails use masked loads and stores, row tails point the missing A rows at a zero row and do
 * not store them. */
#define FA_R 6
#define FA_NB 64
_Static_assert(FA_R == GE_FAST_ATTN_GROUP, "one softmax group per register tile");

/* C[r][0..ncols) = alpha[r] * sum_k a[r][k] * B[k][0..ncols) for r < rows (ncols <= 64).  Written
   out row by row so that the 24 accumulators stay in registers at -O2. */
#define FA_ROW_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0, c##r##2 = c##r##0, c##r##3 = c##r##0
#define FA_ROW_FMA(r)                                   \
  do {                                                  \
    __m512 av = _mm512_set1_ps(a##r[k]);                \
    c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);         \
    c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);         \
    c##r##2 = _mm512_fmadd_ps(av, b2, c##r##2);         \
    c##r##3 = _mm512_fmadd_ps(av, b3, c##r##3);         \
  } while (0)
#define FA_ROW_STORE(r)                                                     \
  do {                                                                      \
    if ((r) >= rows) return;                                                \
    const __m512 al = _mm512_set1_ps(alpha[r]);                             \
    _mm512_mask_storeu_ps(c[r], m0, _mm512_mul_ps(c##r##0, al));            \
    _mm512_mask_storeu_ps(c[r] + 16, m1, _mm512_mul_ps(c##r##1, al));       \
    _mm512_mask_storeu_ps(c[r] + 32, m2, _mm512_mul_ps(c##r##2, al));       \
    _mm512_mask_storeu_ps(c[r] + 48, m3, _mm512_mul_ps(c##r##3, al));       \
  } while (0)

static inline __mmask16 fa_mask(size_t ncols, size_t lo) {
  size_t cnt = ncols > lo ? ncols - lo : 0;
  return cnt >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cnt) - 1u);
}

__attribute__((target("avx512f"))) static void fa_tile(size_t K, const float *const a[FA_R], const float *B,
                                                       size_t ldb, size_t ncols, const float alpha[FA_R],
                                                       float *const c[FA_R], size_t rows) {
  const __mmask16 m0 = fa_mask(ncols, 0), m1 = fa_mask(ncols, 16), m2 = fa_mask(ncols, 32),
                  m3 = fa_mask(ncols, 48);
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  FA_ROW_DECL(0);
  FA_ROW_DECL(1);
  FA_ROW_DECL(2);
  FA_ROW_DECL(3);
  FA_ROW_DECL(4);
  FA_ROW_DECL(5);
  for (size_t k = 0; k < K; k++) {
    const float *br = B + k * ldb;
    __m512 b0 = _mm512_maskz_loadu_ps(m0, br), b1 = _mm512_maskz_loadu_ps(m1, br + 16),
           b2 = _mm512_maskz_loadu_ps(m2, br + 32), b3 = _mm512_maskz_loadu_ps(m3, br + 48);
    FA_ROW_FMA(0);
    FA_ROW_FMA(1);
    FA_ROW_FMA(2);
    FA_ROW_FMA(3);
    FA_ROW_FMA(4);
    FA_ROW_FMA(5);
  }
  FA_ROW_STORE(0);
  FA_ROW_STORE(1);
  FA_ROW_STORE(2);
  FA_ROW_STORE(3);
  FA_ROW_STORE(4);
  FA_ROW_STORE(5);
}
#undef FA_ROW_DECL
#undef FA_ROW_FMA
#undef FA_ROW_STORE


/* The softmax of up to FA_R rows at once (their chains interleaved, so that the reductions and
   the exp polynomials of one row overlap with the others'): row[r] = e^(row[r] * scale + mask[r]
   - max) left unnormalised, inv[r] = 1 / sum.  mask[r] NULL: none; mcol 0: one value for the
   row, 1: dense; float32 added, or with `select` bool bytes, a 0 byte replacing the scaled score
   by fill.  A fully masked row (every entry -inf) becomes NaN with inv NaN. */
__attribute__((target("avx512f"))) static inline __mmask16 fa_keep16(const uint8_t *c, size_t cnt) {
  __m128i b;
  if (cnt >= 16) {
    b = _mm_loadu_si128((const __m128i *)(const void *)c);
  } else {
    uint8_t t[16] = {0};
    memcpy(t, c, cnt);
    b = _mm_loadu_si128((const __m128i *)(const void *)t);
  }
  __m512i w = _mm512_cvtepu8_epi32(b);
  return _mm512_test_epi32_mask(w, w);
}

__attribute__((target("avx512f"))) static void fa_softmax_group(float *const row[FA_R],
                                                                const void *const mask[FA_R], size_t g,
                                                                size_t mcol, size_t n, float scale,
                                                                bool select, float fill, float inv[FA_R]) {
  __m512 mx[FA_R], sum[FA_R];
  const __m512 vs = _mm512_set1_ps(scale), vf = _mm512_set1_ps(fill);
  for (size_t r = 0; r < FA_R; r++) mx[r] = _mm512_set1_ps(-INFINITY), sum[r] = _mm512_setzero_ps();
  for (size_t j = 0; j < n; j += 16) {
    __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
#pragma GCC unroll 6
    for (size_t r = 0; r < FA_R; r++) {
      if (r >= g) break;
      __m512 x = _mm512_maskz_loadu_ps(m, row[r] + j);
      if (scale != 1.f) x = _mm512_mul_ps(x, vs);
      if (mask[r] && select) {
        const uint8_t *c = mask[r];
        __mmask16 keep = mcol ? fa_keep16(c + j, n - j) : c[0] ? (__mmask16)0xFFFF : (__mmask16)0;
        x = _mm512_mask_blend_ps(keep, vf, x);
      } else if (mask[r]) {
        const float *a = mask[r];
        x = _mm512_add_ps(x, mcol ? _mm512_maskz_loadu_ps(m, a + j) : _mm512_set1_ps(a[0]));
      }
      _mm512_mask_storeu_ps(row[r] + j, m, x);
      mx[r] = _mm512_mask_max_ps(mx[r], m, mx[r], x);
    }
  }
  float mxs[FA_R];
  bool live[FA_R];
  for (size_t r = 0; r < FA_R; r++) {
    mxs[r] = r < g ? _mm512_reduce_max_ps(mx[r]) : 0.f;
    live[r] = r < g && mxs[r] != -INFINITY;
    mx[r] = _mm512_set1_ps(mxs[r]);
  }
  for (size_t j = 0; j < n; j += 16) {
    __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
#pragma GCC unroll 6
    for (size_t r = 0; r < FA_R; r++) {
      if (r >= g) break;
      if (!live[r]) continue;
      __m512 e = ge_fast_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row[r] + j), mx[r]));
      e = _mm512_maskz_mov_ps(m, e);
      _mm512_mask_storeu_ps(row[r] + j, m, e);
      sum[r] = _mm512_add_ps(sum[r], e);
    }
  }
  for (size_t r = 0; r < g; r++) {
    if (live[r]) {
      inv[r] = 1.f / _mm512_reduce_add_ps(sum[r]);
    } else {
      inv[r] = NAN;
      for (size_t c = 0; c < n; c++) row[r][c] = NAN;
    }
  }
}

/* One (batch, head) pair; sc holds FA_R x N scores, zero at least max(D, N) zeros, kbuf D x N
   floats when KT comes as K [N x D] (transposed there first).  The softmax is left
   unnormalised: its 1 / sum per row scales the rows of the second GEMM. */
__attribute__((target("avx512f"))) static void fa_one_avx512(fa_job *j, size_t qo, size_t ko, size_t vo,
                                                             size_t mo, float *y, float *sc,
                                                             const float *zero, float *kbuf) {
  const size_t M = j->M, N = j->N, D = j->D, Dv = j->Dv;
  const float *q = j->q + qo, *kt = j->k + ko, *v = j->v + vo;
  size_t ldk = j->k_rs;
  if (j->kt_t) {
    /* K [N x D] -> KT [D x N] in 16 x 16 blocks (in-register transposes would do better) */
    const float *k = kt;
    for (size_t n0 = 0; n0 < N; n0 += 16)
      for (size_t d0 = 0; d0 < D; d0 += 16) {
        size_t ne = N - n0 < 16 ? N - n0 : 16, de = D - d0 < 16 ? D - d0 : 16;
        for (size_t n = 0; n < ne; n++)
          for (size_t d = 0; d < de; d++) kbuf[(d0 + d) * N + n0 + n] = k[(n0 + n) * j->k_cs + d0 + d];
      }
    kt = kbuf;
    ldk = N;
  }
  float sal[FA_R];
  for (size_t r = 0; r < FA_R; r++) sal[r] = j->s->scale;
  for (size_t i0 = 0; i0 < M; i0 += FA_R) {
    size_t rows = M - i0 < FA_R ? M - i0 : FA_R;
    const float *a[FA_R];
    float *c[FA_R];
    const void *mr[FA_R];
    for (size_t r = 0; r < FA_R; r++) {
      a[r] = r < rows ? q + (i0 + r) * j->q_rs : zero;
      c[r] = sc + r * N;
      mr[r] = j->mk && r < rows ? fa_mask_at(j, mo + (i0 + r) * j->m_row) : NULL;
    }
    for (size_t n0 = 0; n0 < N; n0 += FA_NB) {
      float *cn[FA_R];
      for (size_t r = 0; r < FA_R; r++) cn[r] = c[r] + n0;
      fa_tile(D, a, kt + n0, ldk, N - n0 < FA_NB ? N - n0 : FA_NB, sal, cn, rows);
    }
    float inv[FA_R] = {1.f, 1.f, 1.f, 1.f, 1.f, 1.f};
    fa_softmax_group(c, mr, rows, j->m_col, N, 1.f, j->select, j->fill, inv);
    const float *pa[FA_R];
    for (size_t r = 0; r < FA_R; r++) pa[r] = r < rows ? sc + r * N : zero;
    for (size_t d0 = 0; d0 < Dv; d0 += FA_NB) {
      float *yc[FA_R];
      for (size_t r = 0; r < FA_R; r++) yc[r] = y + (i0 + (r < rows ? r : 0)) * j->y_rs + d0;
      fa_tile(N, pa, v + d0, j->v_rs, Dv - d0 < FA_NB ? Dv - d0 : FA_NB, inv, yc, rows);
    }
  }
}
#endif

size_t ge_fast_attn_softmax_rows(float *const *row, const void *const *mask, size_t g, size_t mcol,
                                 size_t n, float scale, bool select, float fill, float *inv) {
  if (g > GE_FAST_ATTN_GROUP) g = GE_FAST_ATTN_GROUP;
#ifdef FA_AVX512
  if (__builtin_cpu_supports("avx512f")) {
    fa_softmax_group(row, mask, g, mcol, n, scale, select, fill, inv);
    return g;
  }
#endif
  for (size_t r = 0; r < g; r++) {
    if (scale != 1.f)
      for (size_t c = 0; c < n; c++) row[r][c] *= scale;
    inv[r] = 1.f;
    if (!fa_softmax_row(row[r], mask[r], mcol, n, select, fill)) {
      for (size_t c = 0; c < n; c++) row[r][c] = NAN;
      inv[r] = NAN;
    }
  }
  return g;
}

static void fa_one(fa_job *j, size_t b, float *sc) {
  size_t qo = 0, ko = 0, vo = 0, yo = 0, mo = 0, rem = b;
  for (int32_t d = j->rb - 1; d >= 0; d--) {
    size_t i = rem % (size_t)j->ob[d];
    rem /= (size_t)j->ob[d];
    qo += i * j->qs[d];
    ko += i * j->ks[d];
    vo += i * j->vs[d];
    yo += i * j->ys[d];
    mo += i * j->ms[d];
  }
  size_t M = j->M, N = j->N;
#ifdef FA_AVX512
  if (j->avx512) {
    size_t zn = j->D > N ? j->D : N;
    fa_one_avx512(j, qo, ko, vo, mo, j->y + yo, sc, sc + FA_R * N, sc + FA_R * N + zn);
    return;
  }
#endif
  ge_status st = ge_sgemm(false, j->kt_t, M, N, j->D, j->s->scale, j->q + qo, j->q_rs, j->k + ko,
                          j->kt_t ? j->k_cs : j->k_rs, 0.f, sc, N, j->gemm_threads);
  if (st == GE_OK) {
    for (size_t i = 0; i < M; i++) {
      float *row = sc + i * N;
      const void *mr = j->mk ? fa_mask_at(j, mo + i * j->m_row) : NULL;
      if (!fa_softmax_row(row, mr, j->m_col, N, j->select, j->fill))
        for (size_t c = 0; c < N; c++) row[c] = NAN;
    }
    st = ge_sgemm(false, false, M, j->Dv, N, 1.f, sc, N, j->v + vo, j->v_rs, 0.f, j->y + yo, j->y_rs,
                  j->gemm_threads);
  }
  if (st != GE_OK) {
    int expected = GE_OK;
    __atomic_compare_exchange_n(&j->status, &expected, (int)st, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
}

/* Pairs [begin, end).  The fused path's scores (a few rows) live in this thread's scratch; the
   general path's (M x N, as large as the sequence makes them) are allocated for the chunk. */
static void fa_chunk(void *arg, size_t begin, size_t end) {
  fa_job *j = arg;
  size_t scn = j->M * j->N; /* checked by fa_run */
  bool fused = false;
#ifdef FA_AVX512
  fused = j->avx512;
  if (fused) scn = j->scn;
#endif
  float *own = fused ? NULL : ge_aligned_alloc(scn * sizeof(float));
  float *sc = fused ? ge_cpu_thread_scratch(scn * sizeof(float)) : own;
  if (!sc) {
    int expected = GE_OK;
    __atomic_compare_exchange_n(&j->status, &expected, (int)GE_ERR_OUT_OF_MEMORY, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    return;
  }
#ifdef FA_AVX512
  if (j->avx512) memset(sc + FA_R * j->N, 0, (j->D > j->N ? j->D : j->N) * sizeof(float));
#endif
  for (size_t b = begin; b < end; b++) fa_one(j, b, sc);
  ge_aligned_free(own);
}

/* The fused path's threads claim pairs one at a time (ge_parallel_steal): a thread on a slower
   core (another tenant on it) leaves its last pairs to the others instead of holding up the run. */
static void fa_claim(void *arg, size_t begin, size_t end, size_t next) {
  (void)next;
  fa_chunk(arg, begin, end);
}

static ge_status fa_run(const void *state, ge_kctx *ctx) {
  const fa_state *s = state;
  const ge_tensor *Q = ctx->in[0], *K = ctx->in[1], *V = ctx->in[2];
  const ge_tensor *Mk = ctx->n_in > 3 ? ctx->in[3] : NULL;
  ge_tensor *Y = ctx->out[0];
  ge_attn_geom geo;
  GE_CHECK(ge_attn_geom_init(ctx, &geo));
  if (Q->dtype != GE_F32 || K->dtype != GE_F32 || V->dtype != GE_F32 || Y->dtype != GE_F32)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast Attention: every tensor must be float32");
  const size_t M = geo.M, N = geo.N, D = geo.D, Dv = geo.Dv, batch = geo.batch;
  const size_t m_row = geo.m_row, m_col = geo.m_col;
  const int32_t rb = geo.rb;
  const int64_t *ob = geo.ob;
  const size_t *qs = geo.qs, *ks = geo.ks, *vs = geo.vs, *ys = geo.ys, *ms = geo.ms;
  if (!M || !Dv || !batch) return GE_OK;
  if (!N) {
    memset(Y->data, 0, Y->nbytes);
    return GE_OK;
  }
  size_t nmn = 0;
  if (ge_mul_overflow_size(M, N, &nmn) || nmn > SIZE_MAX / sizeof(float))
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "scores too large");
  int threads = ctx->threads > 0 ? ctx->threads : 1;
  fa_job j = {.s = s, .q = Q->data, .k = K->data, .v = V->data, .mk = Mk ? Mk->data : NULL,
              .select = geo.select, .fill = geo.fill, .y = Y->data,
              .M = M, .N = N, .D = D, .Dv = Dv, .m_row = m_row, .m_col = m_col, .rb = rb, .ob = ob,
              .qs = qs, .ks = ks, .vs = vs, .ys = ys, .ms = ms, .q_rs = geo.q_rs, .k_rs = geo.k_rs,
              .k_cs = geo.k_cs, .v_rs = geo.v_rs, .y_rs = geo.y_rs,
              .kt_t = (geo.layout & GE_ATTN_LAYOUT_KT) != 0, .gemm_threads = 1, .status = GE_OK};
#ifdef FA_AVX512
  __builtin_cpu_init();
  /* the fused path runs the pairs on threads; with fewer pairs than threads the threaded GEMMs
     of the general path use the cores better */
  /* scratch of the fused path: FA_R x N scores, max(D, N) zeros, D x N for a transposed KT */
  size_t zn = D > N ? D : N, kn = 0, scn = 0;
  bool fits = N <= SIZE_MAX / FA_R && !ge_mul_overflow_size(D, N, &kn) && FA_R * N <= SIZE_MAX - zn &&
              (!j.kt_t || FA_R * N + zn <= SIZE_MAX - kn);
  if (fits) scn = FA_R * N + zn + (j.kt_t ? kn : 0);
  j.scn = scn;
  j.avx512 = __builtin_cpu_supports("avx512f") && batch >= (size_t)threads && fits &&
             scn <= SIZE_MAX / sizeof(float);
#endif
  bool fused = false;
#ifdef FA_AVX512
  fused = j.avx512;
#endif
  if (batch >= (size_t)threads && fused) {
    ge_parallel_steal(threads, batch, 1, 0, fa_claim, &j);
  } else if (batch >= (size_t)threads) {
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
