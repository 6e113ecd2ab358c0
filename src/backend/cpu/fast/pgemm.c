/* Float32 MatMul, Gemm and small-image Conv (and their fused forms) with a constant B (a
 * weight), on AVX-512 (issue 6).
 *
 * Transformer inference multiplies a modest number of rows (the tokens: 64-512) by large
 * weights that are read once per run, so the weights come from memory every time.  oneDNN's
 * kernels (brgemm, jit sgemm) and onnxruntime's MLAS then stall on those loads: GPT-2's
 * 768 x 50257 LM head runs at ~115 GFLOP/s in both, against ~170 for the same multiply with B
 * in cache.  Here the weight is packed once, at prepare, into panels of 48 columns (K rows of
 * 48 floats, contiguous; the last panel zero-padded), and while a panel is being multiplied
 * the next one is prefetched into L2 a few cache lines per k-step, so the memory traffic hides
 * under the arithmetic.
 *
 * Loop nest (Goto order): K blocks of at most PG_KC rows, K split evenly (the A block of MC
 * rows x KC stays in L2), then panels, then 8-row blocks of A; the micro-kernel keeps an 8 x 48 block of C in 24
 * zmm accumulators over the K block, broadcasting A and loading the panel's row.  C is loaded
 * back for K blocks after the first; the bias and the activation are applied to a block of C
 * once its last K block is done.  Threads start on even shares of the (panel, row block) pairs
 * and claim them a panel at a time (ge_parallel_steal), each prefetching the panel it claims
 * next; a thread done with its share takes panels from the back of a slower thread's (BERT-base
 * at 2 threads, paired `ge bench` p50 against static shares on a shared VM: 0.83 and 0.95,
 * per-node minima 0.98; ResNet-50 and GPT-2 unchanged within noise).  A weight of at most
 * 2 MiB is split by rows instead (pg_rows_claim): every thread reads all of it, and only its
 * own rows of A and C.
 *
 * Measured (scratch benchmark, 1 thread, distinct weights each call, min of 8 rounds; oneDNN
 * 2.6 with "any" weights for comparison): [64x768]x[768x50257] 33 ms (oneDNN brgemm 43,
 * jit sgemm 45), [128x768]x[768x768] 0.97 ms (1.13 / 1.21), [64x768]x[768x3072] 1.9 ms
 * (2.6 / 3.1), [128x3072]x[3072x768] at parity with the jit sgemm.
 *
 * Taken where the processor has AVX-512F, the node computes in float32 (no bf16 or fp16 compute:
 * a bf16 mark on a processor without bf16 instructions computes in float32 everywhere) and
 * B is a constant without batch dims: MatMul and Gemm on plain operands, Conv on channels-last
 * ones with few output pixels, a 1x1 one of up to 256 pixels with 256 or more channels on each
 * side, or a 3x3 stride-1 one of up to 56x56 pixels by Winograd F(2x2, 3x3) or F(4x4, 3x3)
 * (conv_geom; not with ge.exec.disableWinograd); otherwise the node declines to oneDNN.
 *
 * A node that computes in bf16 (the precision modes) is taken where the processor has AMX and
 * runs on fast/amx.c's GEMM instead, B packed for it here: MatMul and Gemm with A and C plain
 * or stored row-major bf16, and every ungrouped convolution on channels-last operands (bf16-
 * stored or float32), whatever its pixel count, window, stride or dilation (conv_geom). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* the micro-kernel's row loops unroll into registers */
#endif
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/fast/fast_amx.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/threadpool.h"
#include "compiler/layout.h"
#include "ops/fused.h"
#include "ops/nn_geom.h"
#include "passes/pass.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "backend/cpu/fast/fast_avx512.h"
#define PG_X86 1
#define PG_TARGET __attribute__((target("avx512f,fma")))
#else
#define PG_X86 0
#endif

#define PG_NR 48   /* columns per panel: 3 zmm */
#define PG_MR 8    /* rows per micro-kernel block: 24 accumulators */
/* most rows of a K block; K is split into equal blocks (K = 1024 in one block ran 1.27 ms where
   768 + 256 ran 1.77, [196 x 1024] x [1024 x 512], scratch benchmark) */
#define PG_KC 1024
#define PG_ABLK ((size_t)128 * 1024) /* floats of A per (MC x KC) block: 512 KiB, in L2 */
/* the row split (pg_rows_claim) for weights of at most this many bytes, in pieces of at least
   PG_ROWS_MIN rows */
#define PG_ROWS_MAX_W ((size_t)2 << 20)
#define PG_ROWS_MIN 16

typedef struct pg_state {
  size_t M, K, N;     /* C[M,N] = A[M,K] x B[K,N] */
  size_t np;          /* panels */
  float *bp;          /* np panels of K x PG_NR, 64-byte aligned */
  bool bias;          /* FusedMatMul / Conv / Gemm input 2, [N] */
  float *bias_own;    /* Gemm: beta * C, when beta != 1 (C constant) */
  bool sum;           /* FusedConv / FusedMatMul input 3 (the residual), laid out as C */
  bool im2col;        /* A is gathered per run (not a 1x1, stride-1, unpadded convolution) */
  bool wino;          /* a 3x3 convolution by Winograd F(m x m, 3x3): M tiles, K = Cin, N = Cout, ng GEMMs */
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw; /* its geometry */
  int64_t th, tw;     /* Winograd: output tiles of m x m pixels per column and row */
  int wm, ne;         /* Winograd: tile outputs m (2 or 4) and transformed elements ne = (m + 2)^2
                         (stride 2: m = 2 and ne = 25, see wg_bt) */
  int ng;             /* Winograd: GEMMs, one per distinct transformed weight (ne; stride 2: 16) */
  ge_fused_act act;
  float p0, p1;       /* activation parameters, as ge_dn_append_act reads them */
  /* bf16 on AMX (fast/amx.c) where bp16 is set: B packed as bf16 there (bp NULL); A, C and the
     residual may be stored bf16 (GE_LAYOUT_BF16, GE_LAYOUT_NHWC_BF16) */
  uint16_t *bp16;
  bool a16, c16, sum16;
  ge_amx_conv acv; /* a convolution on AMX: its window (K is then ge_amx_conv_k) */
  struct pg_shared *packed; /* owns bp or bp16, shared with other nodes where it is listed */
} pg_state;

/* ---------------------------------------------------------------- packed weights, shared
 *
 * Nodes that multiply by the same constant (a layer applied twice, or ALBERT's 12 layers of
 * one set of weights) share one packed copy of it, where the packing is the same: the plain
 * float32 panels (MatMul, Gemm, 1x1 Conv) or the bf16 ones on AMX.  Before, every node packed
 * its own: 60 MatMuls reading one 2.36 MB weight held 141 MB of panels (peak RSS 145.6 MiB,
 * as for 60 distinct weights).  A block is found by the constant's address, its bytes'
 * 64-bit hash (so that a freed constant whose address a new one takes is not mistaken for it)
 * and every packing parameter; it lives while a node's state holds it (refs).  Every packed
 * B is held through one, listed (found by later nodes) only where the packing is the plain
 * one. */
typedef struct pg_shared {
  struct pg_shared *next;
  const void *src;
  uint64_t hash;
  size_t K, N, bytes;
  bool trans, amx;
  float alpha;
  int refs;   /* under pg_share_mu */
  bool listed; /* in pg_share_head's list */
  void *mem;
} pg_shared;

static pthread_mutex_t pg_share_mu = PTHREAD_MUTEX_INITIALIZER;
static pg_shared *pg_share_head; /* under pg_share_mu */
static _Atomic size_t pg_packed_live;

size_t ge_pgemm_packed_bytes(void) { return atomic_load(&pg_packed_live); }

static bool pg_share_match(const pg_shared *e, const pg_shared *k) {
  return e->src == k->src && e->hash == k->hash && e->K == k->K && e->N == k->N && e->bytes == k->bytes &&
         e->trans == k->trans && e->amx == k->amx && memcmp(&e->alpha, &k->alpha, sizeof e->alpha) == 0;
}

/* A block that matches *k, with one more reference; NULL where there is none.  Under pg_share_mu. */
static pg_shared *pg_share_find(const pg_shared *k) {
  for (pg_shared *e = pg_share_head; e; e = e->next)
    if (pg_share_match(e, k)) {
      e->refs++;
      return e;
    }
  return NULL;
}

/* Holds the freshly packed `mem` (k's packing) for a node: listed where `list`, unless another
   node listed the same packing meanwhile, whose block is then returned instead (mem freed).
   NULL when out of memory (mem not freed). */
static pg_shared *pg_share_hold(const pg_shared *k, void *mem, bool list) {
  pg_shared *e = malloc(sizeof *e);
  if (!e) return NULL;
  *e = *k;
  e->next = NULL;
  e->refs = 1;
  e->listed = false;
  e->mem = mem;
  pg_shared *other = NULL;
  if (list) {
    pthread_mutex_lock(&pg_share_mu);
    other = pg_share_find(k);
    if (!other) {
      e->next = pg_share_head;
      pg_share_head = e;
      e->listed = true;
    }
    pthread_mutex_unlock(&pg_share_mu);
  }
  if (other) {
    free(e);
    ge_const_free(mem);
    return other;
  }
  atomic_fetch_add(&pg_packed_live, e->bytes);
  return e;
}

static void pg_share_drop(pg_shared *e) {
  pthread_mutex_lock(&pg_share_mu);
  bool last = --e->refs == 0;
  if (last && e->listed)
    for (pg_shared **pp = &pg_share_head; *pp; pp = &(*pp)->next)
      if (*pp == e) {
        *pp = e->next;
        break;
      }
  pthread_mutex_unlock(&pg_share_mu);
  if (last) {
    atomic_fetch_sub(&pg_packed_live, e->bytes);
    ge_const_free(e->mem);
    free(e);
  }
}

/* Rows of C as stored: a Winograd convolution's output pixels (its M counts tiles), else M. */
static size_t out_rows(const pg_state *s) { return s->wino ? (size_t)(s->n * s->oh * s->ow) : s->M; }

/* The Winograd variants (see the Winograd section): F(2x2, 3x3), F(4x4, 3x3) and the stride-2
   F(2x2, 3x3); their outputs per tile side (wg_mo) and input tile side (wg_ai). */
enum { WG_F2 = 2, WG_F4 = 4, WG_S2 = 5 };
static inline int wg_mo(int var) { return var == WG_S2 ? 2 : var; }
static inline int wg_ai(int var) { return var == WG_S2 ? 5 : var + 2; }
static int wg_var(const pg_state *s) { return s->sh == 2 ? WG_S2 : s->wm; }
/* its GEMMs: one per distinct transformed weight (WG_S2: 16 of its 25 elements, wg_group) */
static inline int wg_ng(int var) { return var == WG_S2 ? 16 : wg_ai(var) * wg_ai(var); }

/* ------------------------------------------------------------------ packing */

/* Panel p holds columns [48p, 48p+48) of B: row k at bp + (p*K + k)*48.  B is row-major
   [K,N], or with trans [N,K] (a convolution's [Cout, Cin] weights, Gemm's transB), times alpha
   (Gemm's). */
static void pack_b(const float *B, size_t K, size_t N, bool trans, float alpha, float *bp) {
  size_t np = (N + PG_NR - 1) / PG_NR;
  for (size_t p = 0; p < np; p++) {
    size_t n0 = p * PG_NR, nn = N - n0 < PG_NR ? N - n0 : PG_NR;
    float *dst = bp + p * K * PG_NR;
    for (size_t k = 0; k < K; k++) {
      if (trans)
        for (size_t j = 0; j < nn; j++) dst[k * PG_NR + j] = B[(n0 + j) * K + k];
      else
        memcpy(dst + k * PG_NR, B + k * N + n0, nn * sizeof(float));
      if (alpha != 1.f)
        for (size_t j = 0; j < nn; j++) dst[k * PG_NR + j] *= alpha;
      if (nn < PG_NR) memset(dst + k * PG_NR + nn, 0, (PG_NR - nn) * sizeof(float));
    }
  }
}

#if PG_X86
/* ------------------------------------------------------------------ micro-kernel */

/* What one call of the micro-kernel needs beyond its block. */
typedef struct pg_blk {
  const float *a;      /* A at (row0, k0), row stride lda */
  size_t lda;
  const float *b;      /* the panel at row k0 */
  size_t kc;
  float *c;            /* C at (row0, col0), row stride ldc */
  size_t ldc;
  __mmask16 m0, m1, m2; /* the panel's valid columns, by zmm */
  const float *cin;    /* the accumulators start from this block (C for a K block after the
                          first, the residual for the first), or from zero when NULL */
  const float *bias;   /* at col0 when this is the last K block, else NULL */
  int act;             /* applied in registers before C is stored: PG_ACT_* (the last K block) */
  float lo, hi;        /* PG_ACT_CLIP's bounds */
  const char *pf;      /* next cache line of the next panel to prefetch, or NULL */
  const char *pf_end;
  int pf_per2;         /* lines prefetched per two k-steps */
} pg_blk;

/* The activations applied in registers before a result is stored (the micro-kernels' C, the
   Winograd output transform's pixels), as the element-wise kernels compute them (ew.c: Relu
   x > 0 ? x : 0; Clip x < lo ? lo : x, then > hi ? hi : that, NaN kept); the others run over
   the stored values (ge_fo_act_inplace), as Relu and Clip did before in the micro-kernels, a
   call per row of 48 columns. */
enum { PG_ACT_NONE, PG_ACT_RELU, PG_ACT_CLIP };
static inline int pg_act_kind(ge_fused_act act) {
  return act == GE_ACT_RELU ? PG_ACT_RELU : act == GE_ACT_CLIP ? PG_ACT_CLIP : PG_ACT_NONE;
}
PG_TARGET static inline __attribute__((always_inline)) __m512 pg_act_apply(int act, float lo, float hi, __m512 v) {
  /* compares and blends, not max/min, whose operands the compiler may swap (NaN, -0) */
  if (act == PG_ACT_RELU) return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
  if (act == PG_ACT_CLIP) {
    const __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, l, _CMP_LT_OQ), l);
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, h, _CMP_GT_OQ), h);
  }
  return v;
}
PG_TARGET static inline __attribute__((always_inline)) __m512 pg_act(const pg_blk *j, __m512 v) {
  return pg_act_apply(j->act, j->lo, j->hi, v);
}

/* MR rows (1..8) x NV column vectors (1..3: a last panel of at most 16 or 32 valid columns
   skips the vectors past them), constants at each call site so that the loops unroll. */
PG_TARGET static inline __attribute__((always_inline)) void ukernel(pg_blk *j, const int mr, const int nv) {
  __m512 c0[PG_MR], c1[PG_MR], c2[PG_MR];
  _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {
    c0[i] = c1[i] = c2[i] = _mm512_setzero_ps();
    if (j->cin) {
      const float *cr = j->cin + (size_t)i * j->ldc;
      c0[i] = _mm512_maskz_loadu_ps(j->m0, cr);
      if (nv > 1) c1[i] = _mm512_maskz_loadu_ps(j->m1, cr + 16);
      if (nv > 2) c2[i] = _mm512_maskz_loadu_ps(j->m2, cr + 32);
    }
  }
  const float *a = j->a, *b = j->b;
  const size_t lda = j->lda, kc = j->kc;
  const char *pf = j->pf, *pf_end = j->pf_end;
  const int per2 = j->pf_per2;
  /* one k-step: the panel's row k against the mr rows' element k */
#define PG_KSTEP(kk)                                                                                  \
  do {                                                                                                \
    const size_t k_ = (kk);                                                                           \
    __m512 b0 = _mm512_load_ps(b + k_ * PG_NR), b1 = _mm512_setzero_ps(), b2 = _mm512_setzero_ps();    \
    if (nv > 1) b1 = _mm512_load_ps(b + k_ * PG_NR + 16);                                              \
    if (nv > 2) b2 = _mm512_load_ps(b + k_ * PG_NR + 32);                                              \
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {                                            \
      __m512 av = _mm512_set1_ps(ar[i][k_]);                                                          \
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);                                                         \
      if (nv > 1) c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);                                             \
      if (nv > 2) c2[i] = _mm512_fmadd_ps(av, b2, c2[i]);                                             \
    }                                                                                                 \
  } while (0)
  const float *ar[PG_MR];
  _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) ar[i] = a + (size_t)i * lda;
  /* two k-steps a turn, the prefetch slots between them (a line each, up to per2), the rows'
     pointers held in registers.  Against one k-step a turn with its prefetch test (`ge bench` p50,
     the two builds alternating, paired medians): BERT-base 0.934 at 1 thread and 0.938 at 2,
     GPT-2 0.955 at 2, chains of [128 x 768] x [768 x 768] 0.952, ResNet-50 0.991-1.006 (its
     GEMMs wait on their weights more than on their FMAs); four k-steps a turn were 4-7% slower
     than two.  The FMAs keep their order, so the results do not change. */
  size_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    if (pf)
      for (int q = 0; q < per2 && pf < pf_end; q++, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
    PG_KSTEP(k);
    PG_KSTEP(k + 1);
  }
  if (k < kc) {
    if (pf)
      for (int q = 0; q < per2 && pf < pf_end; q++, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
    PG_KSTEP(k);
  }
#undef PG_KSTEP
  j->pf = pf;
  if (j->bias) {
    __m512 v0 = _mm512_maskz_loadu_ps(j->m0, j->bias), v1 = _mm512_maskz_loadu_ps(j->m1, j->bias + 16),
           v2 = _mm512_maskz_loadu_ps(j->m2, j->bias + 32);
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {
      c0[i] = _mm512_add_ps(c0[i], v0);
      if (nv > 1) c1[i] = _mm512_add_ps(c1[i], v1);
      if (nv > 2) c2[i] = _mm512_add_ps(c2[i], v2);
    }
  }
  if (j->act != PG_ACT_NONE)
    _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {
      c0[i] = pg_act(j, c0[i]);
      if (nv > 1) c1[i] = pg_act(j, c1[i]);
      if (nv > 2) c2[i] = pg_act(j, c2[i]);
    }
  _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {
    float *cr = j->c + (size_t)i * j->ldc;
    _mm512_mask_storeu_ps(cr, j->m0, c0[i]);
    if (nv > 1) _mm512_mask_storeu_ps(cr + 16, j->m1, c1[i]);
    if (nv > 2) _mm512_mask_storeu_ps(cr + 32, j->m2, c2[i]);
  }
}

/* 1 or 2 rows: with 3 or 6 accumulators the FMA latency, not the loads, would bound the loop,
   so two k-steps go to two sets of accumulators, summed at the end. */
PG_TARGET static inline __attribute__((always_inline)) void ukernel_few(pg_blk *j, const int mr, const int nv) {
  __m512 c[2][2][3];
  _Pragma("GCC unroll 2") for (int u = 0; u < 2; u++) _Pragma("GCC unroll 2") for (int i = 0; i < mr; i++)
    _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++) c[u][i][q] = _mm512_setzero_ps();
  const __mmask16 m[3] = {j->m0, j->m1, j->m2};
  if (j->cin)
    _Pragma("GCC unroll 2") for (int i = 0; i < mr; i++) _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++)
      c[0][i][q] = _mm512_maskz_loadu_ps(m[q], j->cin + (size_t)i * j->ldc + 16 * q);
  const float *a = j->a, *b = j->b;
  const size_t lda = j->lda, kc = j->kc;
  const char *pf = j->pf, *pf_end = j->pf_end;
  const int per2 = j->pf_per2;
  size_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    if (pf)
      for (int q = 0; q < per2 && pf < pf_end; q++, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
    _Pragma("GCC unroll 2") for (int u = 0; u < 2; u++) {
      const float *br = b + (k + u) * PG_NR;
      __m512 bv[3];
      _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++) bv[q] = _mm512_load_ps(br + 16 * q);
      _Pragma("GCC unroll 2") for (int i = 0; i < mr; i++) {
        __m512 av = _mm512_set1_ps(a[(size_t)i * lda + k + u]);
        _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++) c[u][i][q] = _mm512_fmadd_ps(av, bv[q], c[u][i][q]);
      }
    }
  }
  for (; k < kc; k++) {
    const float *br = b + k * PG_NR;
    __m512 bv[3];
    _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++) bv[q] = _mm512_load_ps(br + 16 * q);
    _Pragma("GCC unroll 2") for (int i = 0; i < mr; i++) {
      __m512 av = _mm512_set1_ps(a[(size_t)i * lda + k]);
      _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++) c[0][i][q] = _mm512_fmadd_ps(av, bv[q], c[0][i][q]);
    }
  }
  j->pf = pf;
  _Pragma("GCC unroll 2") for (int i = 0; i < mr; i++) _Pragma("GCC unroll 3") for (int q = 0; q < nv; q++) {
    __m512 v = _mm512_add_ps(c[0][i][q], c[1][i][q]);
    if (j->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m[q], j->bias + 16 * q));
    _mm512_mask_storeu_ps(j->c + (size_t)i * j->ldc + 16 * q, m[q], pg_act(j, v));
  }
}

#define PG_UK(nv)                          \
  switch (mr) {                            \
    case 8: ukernel(j, 8, nv); break;      \
    case 7: ukernel(j, 7, nv); break;      \
    case 6: ukernel(j, 6, nv); break;      \
    case 5: ukernel(j, 5, nv); break;      \
    case 4: ukernel(j, 4, nv); break;      \
    case 3: ukernel(j, 3, nv); break;      \
    case 2: ukernel_few(j, 2, nv); break;  \
    default: ukernel_few(j, 1, nv); break; \
  }
PG_TARGET static void ukernel_mr(pg_blk *j, size_t mr) {
  if (j->m2) {
    PG_UK(3)
  } else if (j->m1) {
    PG_UK(2)
  } else {
    PG_UK(1)
  }
}
#undef PG_UK

/* GELU (tanh_form: its tanh approximation) over rows x (the panel's valid columns) of C in place. */
PG_TARGET static void gelu_block(float *c, size_t ldc, size_t rows, __mmask16 m0, __mmask16 m1, __mmask16 m2,
                                 bool tanh_form) {
  const __mmask16 m[3] = {m0, m1, m2};
  for (size_t i = 0; i < rows; i++)
    for (int q = 0; q < 3; q++) {
      float *cr = c + i * ldc + 16 * q;
      __m512 v = _mm512_maskz_loadu_ps(m[q], cr);
      _mm512_mask_storeu_ps(cr, m[q], tanh_form ? ge_fast_gelu_tanh16(v) : ge_fast_gelu16(v));
    }
}

/* ------------------------------------------------------------------ one thread's share */

typedef struct pg_job {
  const pg_state *s;
  const float *A;
  float *C;
  const float *bias, *sum;
  size_t pieces; /* the row split (pg_rows_claim): M's rows in this many even pieces */
} pg_job;

/* Rows [r0, r1) of panels [q0, q1); pf_after (K x 48 floats, or NULL)
   is prefetched during the last panel: the panel this thread multiplies next.
   A row's sums are the same whichever rows share its micro-kernel block, except in blocks of 1
   or 2 rows (ukernel_few adds its k-steps in two sets): so no block here has fewer than 3 rows
   unless the range has, and callers cut a GEMM's rows only into ranges of 3 or more (pg_claim's
   row blocks, the row split's pieces), so that a run's results do not depend on which thread
   claimed what (ResNet-50's 49-row GEMMs at 2 threads differed by up to 3e-6 from run to run
   when a claim ended on the 1-row block [48, 49)). */
static void pg_range(const pg_job *g, size_t r0, size_t r1, size_t q0, size_t q1, const float *pf_after) {
  const pg_state *s = g->s;
  const size_t K = s->K, N = s->N;
  if (r0 >= r1 || q0 >= q1) return;
  size_t nkb = (K + PG_KC - 1) / PG_KC, kb = (K + nkb - 1) / nkb; /* K blocks of kb rows (the last may be less) */
  size_t mc = PG_ABLK / kb / PG_MR * PG_MR;
  if (mc < PG_MR) mc = PG_MR;
  for (size_t m0 = r0, m1; m0 < r1; m0 = m1) {
    m1 = r1 - m0 > mc + 2 ? m0 + mc : r1; /* a rest of 1-2 rows joins this chunk */
    size_t blocks = (m1 - m0 + PG_MR - 1) / PG_MR;
    /* the next panel (kc x 48 floats = 3*kc lines) spread over this panel's blocks x kc/2 slots */
    int per2 = (int)((6 + blocks - 1) / blocks);
    for (size_t k0 = 0; k0 < K; k0 += kb) {
      size_t kc = K - k0 < kb ? K - k0 : kb;
      bool last_k = k0 + kc == K;
      for (size_t q = q0; q < q1; q++) {
        size_t n0 = q * PG_NR, nn = N - n0 < PG_NR ? N - n0 : PG_NR;
        const float *panel = s->bp + (q * K + k0) * PG_NR;
        /* prefetch: the same K block of the next panel, else the next K block's first panel */
        const float *next = q + 1 < q1 ? panel + K * PG_NR
                            : k0 + kc < K ? s->bp + (q0 * K + k0 + kc) * PG_NR
                            : m0 + mc >= r1 ? pf_after
                                            : NULL;
        size_t next_kc = q + 1 < q1 ? kc : k0 + kc < K ? (K - k0 - kc < kb ? K - k0 - kc : kb) : K;
        pg_blk j = {.lda = K, .b = panel, .kc = kc, .ldc = N, .m0 = ge_fast_cols_mask(nn, 0),
                    .m1 = ge_fast_cols_mask(nn, 16), .m2 = ge_fast_cols_mask(nn, 32),
                    .bias = last_k && g->bias ? g->bias + n0 : NULL,
                    .act = last_k ? pg_act_kind(s->act) : PG_ACT_NONE,
                    .lo = s->p0, .hi = s->p1,
                    .pf = (const char *)next, .pf_end = next ? (const char *)(next + next_kc * PG_NR) : NULL,
                    .pf_per2 = per2};
        for (size_t bi = 0; bi < blocks; bi++) {
          /* rows split evenly over the blocks (49 = 7 x 7 rather than 6 x 8 + 1: a block of
             one row runs at a third of the micro-kernel's speed) */
          size_t r = m0 + (m1 - m0) * bi / blocks, mr = m0 + (m1 - m0) * (bi + 1) / blocks - r;
          j.a = g->A + r * K + k0;
          j.c = g->C + r * N + n0;
          /* a residual that shares C's buffer is read here before this block writes it */
          j.cin = k0 > 0 ? j.c : g->sum ? g->sum + r * N + n0 : NULL;
          ukernel_mr(&j, mr);
          if (last_k && (s->act == GE_ACT_GELU || s->act == GE_ACT_GELU_TANH))
            gelu_block(j.c, N, mr, j.m0, j.m1, j.m2, s->act == GE_ACT_GELU_TANH);
          else if (last_k && s->act != GE_ACT_NONE && j.act == PG_ACT_NONE)
            for (size_t i = 0; i < mr; i++) ge_fo_act_inplace(s->act, s->p0, s->p1, j.c + i * N, nn);
        }
      }
    }
  }
}

/* Row blocks of the panel split: M / 8 rounded up, except that a last block of 1 or 2 rows joins
   the one before it (pg_range: such a block would sum differently). */
static size_t pg_row_blocks(size_t M) {
  return M > PG_MR && M % PG_MR <= 2 ? M / PG_MR : (M + PG_MR - 1) / PG_MR;
}

/* The threads' work items are the (panel, row block) pairs, panel by panel: item w is rows
   [8 b, 8 (b + 1)) of panel w / nmb, b = w % nmb (the last block: to M).  A claim [w, w1) of them (from
   ge_parallel_steal) runs as whole panels where it covers them and row ranges of a panel where
   it does not, so that the even shares split 11 panels 5.5 / 5.5 over two threads (the 7x7
   stages' 512 output channels), and the panel of the item `next` (the claim this thread
   likely takes next) is prefetched during the last one. */
static void pg_claim(void *arg, size_t w, size_t w1, size_t next) {
  const pg_job *g = arg;
  const pg_state *s = g->s;
  const size_t M = s->M, nmb = pg_row_blocks(M);
  while (w < w1) {
    size_t q = w / nmb, b0 = w % nmb, b1 = w1 - q * nmb < nmb ? w1 - q * nmb : nmb, qe = q + 1;
    if (b0 == 0 && b1 == nmb) { /* whole panels [q, qe) */
      qe = w1 / nmb;
      b1 = nmb;
    }
    size_t w_next = b1 == nmb ? qe * nmb : q * nmb + b1;
    /* the panel this thread multiplies after this one: the claim's next, else the next claim's */
    size_t qn = w_next < w1 ? w_next / nmb : next != SIZE_MAX ? next / nmb : SIZE_MAX;
    const float *pf = qn != SIZE_MAX && qn != qe - 1 ? s->bp + qn * s->K * PG_NR : NULL;
    pg_range(g, b0 * PG_MR, b1 == nmb ? M : b1 * PG_MR, q, qe, pf);
    w = w_next;
  }
}

/* The row split, for a weight of at most PG_ROWS_MAX_W bytes: the work items are even pieces of
   M's rows, each multiplied by every panel, a thread's share whole pieces (pg_run).  Each
   thread then reads the whole weight (from L2 or L3: it is small) but only its own rows of A
   and C, which with the same split in the neighbouring layers are the rows its own core wrote
   or will read; the panel split instead has every thread read all of A, half of it written by
   the other core, and write columns of C that the next layer's threads read across cores.
   MobileNetV2's 7x7 stage (weights of 0.3-1.6 MiB, 49 rows) at 2 threads, per-node minima of
   `ge profile` against the panel split: 0.78-0.94 for the GEMMs and 0.73-0.80 for the
   depthwise convolutions after them, 75 us of 680 over the stage.  ResNet-50's 7x7 stage
   (4 and 9 MiB weights) and GPT-2 (2.3-9 MiB, 64 rows) ran 1.1-1.2x slower split by rows,
   hence the bound. */
static void pg_rows_claim(void *arg, size_t w, size_t w1, size_t next) {
  const pg_job *g = arg;
  const size_t M = g->s->M;
  (void)next;
  pg_range(g, M * w / g->pieces, M * w1 / g->pieces, 0, g->s->np, NULL);
}

/* ------------------------------------------------------------------ Winograd F(2x2, 3x3) and F(4x4, 3x3)

   Y = A^T [ (G g G^T) . (B^T d B) ] A per 2x2 output tile, d its 4x4 input tile (stride 2,
   zero outside X), g a 3x3 filter:  B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], A^T = [1 1 1 0; 0 1 -1 -1].  The 16 elements e of
   the transformed tile are 16 independent GEMMs over the channels: M_e [T x Cout] =
   V_e [T x Cin] x U_e [Cin x Cout], T the tiles; U_e is packed once into panels (prepare),
   V (the transformed input) and M (the products) are [16][T][C] buffers of the run.  2.25x
   fewer multiplies than the direct convolution; the transforms add and subtract only (and
   the filter's halves are exact), so it rounds about as the direct form does.
   F(4x4, 3x3) (conv_geom: from PG_WINO4_MIN_PX output pixels) is the same with 6x6 input tiles
   at stride 4, 36 elements and 4x4 outputs: V and M are [36][T][C]; its matrices are in wg_bt,
   wg_at and pack_wino.
   A stride-2 3x3 convolution (WG_S2) nests a one-dimensional algorithm for two outputs y0 =
   g0 x0 + g1 x1 + g2 x2, y1 = g0 x2 + g1 x3 + g2 x4 from a window of five inputs: the even ones
   by F(2, 2) with the taps g0, g2 (3 multiplies), the odd ones by g1 alone (2), so 5
   multiplies where the direct sum takes 6; in two dimensions 25 for a 2x2 output tile where
   it takes 36 (1.44x fewer), from 5x5 input tiles at stride 4.  B^T = [1 0 -1 0 0; 0 0 1 0 0;
   0 0 -1 0 1; 0 1 0 0 0; 0 0 0 1 0], G = [1 0 0; 1 0 1; 0 0 1; 0 1 0; 0 1 0], A^T = [1 1 0 1 0;
   0 1 1 0 1].  G's last two rows are equal, so of the 25 transformed weights 16 differ: the
   elements that share one are stored next to each other (wg_pos) and multiplied as one GEMM of
   2 or 4 times the tiles' rows.  The transforms add and subtract only. */

/* Where element (i, j) of a tile's transform lies among the ne: (i * a + j), except for WG_S2,
   whose elements sharing a transformed weight are adjacent (rows and columns 3 and 4 of G are
   equal): the 16 groups in order (gi, gj), gi = min(i, 3), each its elements row by row. */
static const uint8_t wg_s2_pos[5][5] = {{0, 1, 2, 3, 4},      {5, 6, 7, 8, 9},      {10, 11, 12, 13, 14},
                                        {15, 17, 19, 21, 22}, {16, 18, 20, 23, 24}};
static inline int wg_pos(int var, int i, int j) { return var == WG_S2 ? wg_s2_pos[i][j] : i * wg_ai(var) + j; }
/* GEMM k's first element and element count (WG_S2: group (k / 4, k % 4)); else (k, 1). */
static void wg_group(const pg_state *s, size_t k, size_t *e0, size_t *ne) {
  static const uint8_t start[16] = {0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 15, 17, 19, 21};
  static const uint8_t count[16] = {1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2, 2, 2, 2, 4};
  if (s->ng == s->ne) {
    *e0 = k;
    *ne = 1;
  } else {
    *e0 = start[k];
    *ne = count[k];
  }
}

/* Tiles per block.  Transformed weights (ng x Cin x Cout floats) that stay in L2 are read once
   per block: the tiles are then taken in blocks whose V and M (4 ne (Cin + Cout) bytes a tile)
   fill about 1 MiB, each block transformed, multiplied and transformed back while in cache,
   the blocks split over the threads.  Larger weights are streamed from memory once per run:
   one block of all the tiles, each phase split over the threads. */
#define PG_WINO_HOT_W ((size_t)1 << 20)
#define PG_WINO_BLOCK ((size_t)1 << 20)
static size_t wg_tiles_per_block(const pg_state *s) {
  if ((size_t)s->ng * s->K * s->N * sizeof(float) > PG_WINO_HOT_W) return s->M;
  size_t tb = PG_WINO_BLOCK / ((size_t)s->ne * sizeof(float) * (s->K + s->N)) / PG_MR * PG_MR;
  if (tb < 4 * PG_MR) tb = 4 * PG_MR;
  return tb < s->M ? tb : s->M;
}

typedef struct wg_job {
  const pg_state *s;
  const float *x, *bias, *sum;
  float *y, *buf;
  size_t tb; /* tiles per block: a block's V and M, [ne][tiles][C] each, lie in a slot of buf of
                ne * tb * (Cin + Cout) floats (wg_v) */
  _Atomic unsigned long long busy; /* blocked mode: the slots in use, one bit each */
} wg_job;

/* Blocked mode keeps one slot of V and M per thread, not one per block: a thread's next block
   reuses the slot its last one left in L2 instead of writing its transformed tiles to lines
   that come from L3 or memory.  (One per block, ResNet-50's 56x56 layers (4 blocks) wrote
   4 MiB of V and M a layer at 1 thread.)  ResNet-50 at 1 thread, scratch rdtsc over 53 runs:
   its F(4x4) input transforms 92-95 -> 70-72 M cycles, their GEMMs 377-388 -> 347-363.  A
   claim takes the lowest free slot; the blocks are shared by as many threads as
   there are slots (at most 64), so that no claim finds them all taken. */
#define WG_MAX_SLOTS 64
static size_t wg_slots(const pg_state *s, size_t tb, int threads) {
  size_t nb = (s->M + tb - 1) / tb, t = threads > 1 ? (size_t)threads : 1;
  if (t > WG_MAX_SLOTS) t = WG_MAX_SLOTS;
  return nb < t ? nb : t;
}
/* floats of scratch a run takes (wg_run's buf) */
static size_t wg_buf_floats(const pg_state *s, int threads) {
  size_t tb = wg_tiles_per_block(s);
  return wg_slots(s, tb, threads) * (size_t)s->ne * tb * (s->K + s->N);
}
static unsigned wg_slot_take(wg_job *g) {
  unsigned long long b = atomic_load_explicit(&g->busy, memory_order_relaxed);
  for (;;) {
    unsigned k = (unsigned)__builtin_ctzll(~b); /* a free one: claims <= slots <= 64 */
    if (atomic_compare_exchange_weak_explicit(&g->busy, &b, b | (1ull << k), memory_order_acquire,
                                              memory_order_relaxed))
      return k;
  }
}
static void wg_slot_give(wg_job *g, unsigned k) {
  atomic_fetch_and_explicit(&g->busy, ~(1ull << k), memory_order_release);
}

static size_t wg_block_tiles(const wg_job *g, size_t blk) {
  size_t t0 = blk * g->tb;
  return g->s->M - t0 < g->tb ? g->s->M - t0 : g->tb;
}
static float *wg_v(const wg_job *g, size_t slot) {
  return g->buf + slot * (size_t)g->s->ne * g->tb * (g->s->K + g->s->N);
}
static float *wg_m(const wg_job *g, size_t slot, size_t nt) { return wg_v(g, slot) + (size_t)g->s->ne * nt * g->s->K; }

/* Tile t's image and the top-left pixel of its m x m outputs (its input tile's is that times the
   stride, less the padding). */
static void wg_tile(const pg_state *s, size_t t, size_t *n, int64_t *oy, int64_t *ox) {
  size_t tiles = (size_t)(s->th * s->tw), r = t % tiles;
  *n = t / tiles;
  *oy = (int64_t)(r / (size_t)s->tw) * s->wm;
  *ox = (int64_t)(r % (size_t)s->tw) * s->wm;
}

/* The transforms of one column or row of a tile: the vectors x[0], x[st], .. in, y[0], y[st2],
   .. out.  F(2x2, 3x3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1].
   F(4x4, 3x3): B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
   0 4 0 -5 0 1], A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].  WG_S2: above.
   m is the variant (WG_F2, WG_F4, WG_S2). */
PG_TARGET static inline __attribute__((always_inline)) void wg_bt(const __m512 *x, int st, __m512 *y, int st2,
                                                                   const int m) {
  if (m == WG_S2) {
    y[0] = _mm512_sub_ps(x[0], x[2 * st]);
    y[st2] = x[2 * st];
    y[2 * st2] = _mm512_sub_ps(x[4 * st], x[2 * st]);
    y[3 * st2] = x[st];
    y[4 * st2] = x[3 * st];
    return;
  }
  if (m == 2) {
    y[0] = _mm512_sub_ps(x[0], x[2 * st]);
    y[st2] = _mm512_add_ps(x[st], x[2 * st]);
    y[2 * st2] = _mm512_sub_ps(x[2 * st], x[st]);
    y[3 * st2] = _mm512_sub_ps(x[st], x[3 * st]);
    return;
  }
  const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f);
  __m512 d0 = x[0], d1 = x[st], d2 = x[2 * st], d3 = x[3 * st], d4 = x[4 * st], d5 = x[5 * st];
  __m512 t1 = _mm512_fnmadd_ps(four, d2, d4), t2 = _mm512_fnmadd_ps(four, d1, d3); /* d4 - 4 d2, d3 - 4 d1 */
  __m512 t3 = _mm512_sub_ps(d4, d2), t4 = _mm512_add_ps(_mm512_sub_ps(d3, d1), _mm512_sub_ps(d3, d1));
  y[0] = _mm512_fmadd_ps(four, d0, _mm512_fnmadd_ps(five, d2, d4));
  y[st2] = _mm512_add_ps(t1, t2);
  y[2 * st2] = _mm512_sub_ps(t1, t2);
  y[3 * st2] = _mm512_add_ps(t3, t4);
  y[4 * st2] = _mm512_sub_ps(t3, t4);
  y[5 * st2] = _mm512_fmadd_ps(four, d1, _mm512_fnmadd_ps(five, d3, d5));
}
PG_TARGET static inline __attribute__((always_inline)) void wg_at(const __m512 *x, int st, __m512 *y, int st2,
                                                                   const int m) {
  if (m == WG_S2) {
    y[0] = _mm512_add_ps(_mm512_add_ps(x[0], x[st]), x[3 * st]);
    y[st2] = _mm512_add_ps(_mm512_add_ps(x[st], x[2 * st]), x[4 * st]);
    return;
  }
  if (m == 2) {
    y[0] = _mm512_add_ps(_mm512_add_ps(x[0], x[st]), x[2 * st]);
    y[st2] = _mm512_sub_ps(_mm512_sub_ps(x[st], x[2 * st]), x[3 * st]);
    return;
  }
  __m512 s12 = _mm512_add_ps(x[st], x[2 * st]), d12 = _mm512_sub_ps(x[st], x[2 * st]);
  __m512 s34 = _mm512_add_ps(x[3 * st], x[4 * st]), d34 = _mm512_sub_ps(x[3 * st], x[4 * st]);
  y[0] = _mm512_add_ps(_mm512_add_ps(x[0], s12), s34);
  y[st2] = _mm512_fmadd_ps(_mm512_set1_ps(2.f), d34, d12);
  y[2 * st2] = _mm512_fmadd_ps(_mm512_set1_ps(4.f), s34, s12);
  y[3 * st2] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.f), d34, d12), x[5 * st]);
}

/* One tile's transform, 16 channels at a time: V[e][c] at v + e * es + c for the elements e
   (wg_pos) of B^T d B, d being the tile's a x a input pixels: pixel (i, j) at x0 + i * rs +
   j * C where `inside` (the whole tile within the image), else at px[i][j] (NULL: padding).
   B^T d is taken a column at a time into q, then (B^T d) B a row of q at a time.  For 6x6
   tiles a column's 6 pixels are loaded at a time (a dozen vectors live instead of 72; q,
   spilled, stays in L1); up to 5x5 all the pixels first, which keeps more loads in flight.
   ResNet-50 at 1 thread (scratch rdtsc, 53 runs): the F(4x4) input transforms took 92-95 M
   cycles with every 6x6 tile's 36 pixels loaded first through a table of their addresses,
   64-66 M this way with the V slots of wg_slots.  What is left is mostly V's stores to L2: in
   a scratch benchmark 228 cycles a tile and 16 channels with V in L2, 104 with V in L1. */
PG_TARGET static inline __attribute__((always_inline)) void wg_input_tile(const float *x0, size_t rs,
                                                                           const float *const (*px)[6], size_t C,
                                                                           float *v, size_t es, const int var,
                                                                           const bool inside) {
  const int a = wg_ai(var);
  for (size_t c = 0; c < C; c += 16) {
    __mmask16 mk = ge_fast_cols_mask(C - c, 0);
    __m512 q[6][6], d[6][6];
#define WG_LD(i, j)                                                                                        \
  (d[i][j] = inside ? _mm512_maskz_loadu_ps(mk, x0 + (i) * rs + (j) * C + c)                               \
                    : px[i][j] ? _mm512_maskz_loadu_ps(mk, px[i][j] + c) : _mm512_setzero_ps())
    if (a <= 5) /* up to 5x5: all the loads first (more of them in flight), else a column's at a time */
      _Pragma("GCC unroll 6") for (int i = 0; i < a; i++)
        _Pragma("GCC unroll 6") for (int j = 0; j < a; j++) WG_LD(i, j);
    _Pragma("GCC unroll 6") for (int j = 0; j < a; j++) {
      if (a > 5) _Pragma("GCC unroll 6") for (int i = 0; i < a; i++) WG_LD(i, j);
      wg_bt(&d[0][j], 6, &q[0][j], 6, var); /* B^T d, by columns */
    }
#undef WG_LD
    _Pragma("GCC unroll 6") for (int i = 0; i < a; i++) { /* (B^T d) B, by rows */
      __m512 o[6];
      wg_bt(q[i], 1, o, 1, var);
      _Pragma("GCC unroll 6") for (int j = 0; j < a; j++)
        _mm512_mask_storeu_ps(v + (size_t)wg_pos(var, i, j) * es + c, mk, o[j]);
    }
  }
}

/* V[e][t - tb][c] = (B^T d B)[e] for tiles [t0, t1) of the block starting at tile tb, of nt tiles
   (wg_input_tile).  var: the variant (WG_F2, ..). */
PG_TARGET static inline __attribute__((always_inline)) void wg_input_m(const wg_job *g, size_t tb, size_t nt, float *v,
                                                                        size_t t0, size_t t1, const int var) {
  const pg_state *s = g->s;
  const size_t C = s->K, rs = (size_t)s->w * C;
  const int a = wg_ai(var);
  for (size_t t = t0; t < t1; t++) {
    size_t n;
    int64_t iy0, ix0;
    wg_tile(s, t, &n, &iy0, &ix0);
    iy0 = iy0 * s->sh - s->pt;
    ix0 = ix0 * s->sw - s->pl;
    float *vt = v + (t - tb) * C;
    if (iy0 >= 0 && ix0 >= 0 && iy0 + a <= s->h && ix0 + a <= s->w) {
      wg_input_tile(g->x + (size_t)((n * s->h + iy0) * s->w + ix0) * C, rs, NULL, C, vt, nt * C, var, true);
      continue;
    }
    const float *px[6][6];
    _Pragma("GCC unroll 6") for (int i = 0; i < a; i++)
      _Pragma("GCC unroll 6") for (int j = 0; j < a; j++) {
        int64_t iy = iy0 + i, ix = ix0 + j;
        px[i][j] = iy < 0 || iy >= s->h || ix < 0 || ix >= s->w ? NULL
                                                                : g->x + (size_t)((n * s->h + iy) * s->w + ix) * C;
      }
    wg_input_tile(NULL, 0, (const float *const (*)[6])px, C, vt, nt * C, var, false);
  }
}

/* The GEMM that work item i is (the items are what the threads claim, ge_parallel_steal):
   GEMM i, except for WG_S2, whose 16 GEMMs multiply 1, 2 or 4 elements' rows (wg_group).
   There the even shares of 8 items that 2 threads start on hold 13 and 12 elements (in GEMM
   order 10 and 15), larger GEMMs first and one-element ones last, the pieces that a thread
   done first takes from the other's share.  In GEMM order the thread done first took the
   4-element GEMM last and the other waited for it, long enough to fall asleep
   (GOMP_SPINCOUNT) and then to be woken late for the output transform.  ResNet-50's
   layer3.0.conv2 at 2 threads (scratch rdtsc in `ge bench`): the GEMMs took 1.69-1.74 M cycles
   (2.72 M at 1 thread), and the output transform began 0.10-0.24 M cycles after them for
   0.056 M of work; in this order the GEMMs take 1.41-1.49 M and the transform 0.07 M in all,
   and the node 602-610 us against 709-726 (`ge profile` medians). */
static size_t wg_item(const pg_state *s, size_t i) {
  static const uint8_t s2_order[16] = {15, 3, 7, 0, 1, 2, 4, 5, 11, 12, 13, 14, 6, 8, 9, 10};
  return s->ng != s->ne && i < 16 ? s2_order[i] : i;
}

/* M_e = V_e x U_e over a block's nt tiles for the work items i in [i0, i1) (wg_item: GEMM k,
   whole, of the elements of wg_group, which share U); during the last, the weights of item
   i_next's GEMM are prefetched (SIZE_MAX: none). */
static void wg_gemms(const wg_job *g, size_t nt, const float *v, float *m, size_t i0, size_t i1, size_t i_next) {
  const pg_state *s0 = g->s;
  const size_t per_e = s0->np * s0->K * PG_NR; /* floats of one GEMM's panels */
  for (size_t i = i0; i < i1; i++) {
    size_t e, ne, k = wg_item(s0, i);
    wg_group(s0, k, &e, &ne);
    pg_state se = *s0;
    se.M = ne * nt;
    se.bp = s0->bp + k * per_e;
    se.act = GE_ACT_NONE;
    pg_job j = {.s = &se, .A = v + e * nt * se.K, .C = m + e * nt * se.N};
    size_t in = i + 1 < i1 ? i + 1 : i_next;
    pg_range(&j, 0, se.M, 0, se.np, in != SIZE_MAX && se.K <= PG_KC ? s0->bp + wg_item(s0, in) * per_e : NULL);
  }
}

/* One tile's outputs, 16 channels at a time: Y = A^T M A plus the bias and the residual, then
   the activation, from M[e][c] at mt + e * es + c (the elements e as wg_pos places them); output
   pixel (i, j) at y0 + i * rs + j * N where `inside` (all m x m within the image), else at
   py[i][j] (NULL: past the edge).  A^T M a column at a time, as wg_input_tile takes B^T d
   (ResNet-50's F(4x4) output transforms 44-46 -> 37-39 M cycles, as there). */
PG_TARGET static inline __attribute__((always_inline)) void wg_output_tile(const wg_job *g, const float *mt, size_t es,
                                                                            float *y0, size_t rs, float *const (*py)[4],
                                                                            const int var, const bool inside) {
  const pg_state *s = g->s;
  const size_t N = s->N;
  const int a = wg_ai(var), m = wg_mo(var);
  const int act = pg_act_kind(s->act); /* in registers; the others after each pixel is stored */
  for (size_t k = 0; k < N; k += 16) {
    __mmask16 mk = ge_fast_cols_mask(N - k, 0);
    __m512 q[4][6], e[6][6];
#define WG_LD(i, j) (e[i][j] = _mm512_maskz_loadu_ps(mk, mt + (size_t)wg_pos(var, i, j) * es + k))
    if (a <= 5) /* as wg_input_tile */
      _Pragma("GCC unroll 6") for (int i = 0; i < a; i++)
        _Pragma("GCC unroll 6") for (int j = 0; j < a; j++) WG_LD(i, j);
    _Pragma("GCC unroll 6") for (int j = 0; j < a; j++) { /* A^T M, by columns */
      if (a > 5) _Pragma("GCC unroll 6") for (int i = 0; i < a; i++) WG_LD(i, j);
      wg_at(&e[0][j], 6, &q[0][j], 6, var);
    }
#undef WG_LD
    __m512 bv = g->bias ? _mm512_maskz_loadu_ps(mk, g->bias + k) : _mm512_setzero_ps();
    _Pragma("GCC unroll 6") for (int i = 0; i < m; i++) { /* (A^T M) A, by rows */
      __m512 o[4];
      wg_at(q[i], 1, o, 1, var);
      _Pragma("GCC unroll 6") for (int j = 0; j < m; j++) {
        float *yp = inside ? y0 + i * rs + j * N : py[i][j];
        if (!inside && !yp) continue;
        __m512 r = _mm512_add_ps(o[j], bv);
        if (g->sum) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, g->sum + (yp - g->y) + k));
        r = pg_act_apply(act, s->p0, s->p1, r);
        _mm512_mask_storeu_ps(yp + k, mk, r);
      }
    }
  }
  if (s->act != GE_ACT_NONE && act == PG_ACT_NONE)
    _Pragma("GCC unroll 6") for (int i = 0; i < m; i++)
      _Pragma("GCC unroll 6") for (int j = 0; j < m; j++) {
        float *yp = inside ? y0 + i * rs + j * N : py[i][j];
        if (yp) ge_fo_act_inplace(s->act, s->p0, s->p1, yp, N);
      }
}

/* Y for tiles [t0, t1) of the block starting at tile tb, of nt tiles (wg_output_tile); each tile
   gives m x m output pixels. */
PG_TARGET static inline __attribute__((always_inline)) void wg_output_m(const wg_job *g, size_t tb, size_t nt,
                                                                         const float *mb, size_t t0, size_t t1,
                                                                         const int var) {
  const pg_state *s = g->s;
  const size_t N = s->N;
  const int m = wg_mo(var);
  for (size_t t = t0; t < t1; t++) {
    size_t n;
    int64_t oy0, ox0;
    wg_tile(s, t, &n, &oy0, &ox0);
    const float *mt = mb + (t - tb) * N;
    float *y0 = g->y + (size_t)((n * s->oh + oy0) * s->ow + ox0) * N;
    if (oy0 + m <= s->oh && ox0 + m <= s->ow) {
      wg_output_tile(g, mt, nt * N, y0, (size_t)s->ow * N, NULL, var, true);
      continue;
    }
    float *py[4][4];
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++)
        py[i][j] = oy0 + i < s->oh && ox0 + j < s->ow ? y0 + (size_t)(i * s->ow + j) * N : NULL;
    wg_output_tile(g, mt, nt * N, NULL, 0, (float *const (*)[4])py, var, false);
  }
}

PG_TARGET static void wg_in(const wg_job *g, size_t tb, size_t nt, float *v, size_t t0, size_t t1) {
  int var = wg_var(g->s);
  if (var == WG_F4) wg_input_m(g, tb, nt, v, t0, t1, WG_F4);
  else if (var == WG_S2) wg_input_m(g, tb, nt, v, t0, t1, WG_S2);
  else wg_input_m(g, tb, nt, v, t0, t1, WG_F2);
}
PG_TARGET static void wg_out(const wg_job *g, size_t tb, size_t nt, const float *m, size_t t0, size_t t1) {
  int var = wg_var(g->s);
  if (var == WG_F4) wg_output_m(g, tb, nt, m, t0, t1, WG_F4);
  else if (var == WG_S2) wg_output_m(g, tb, nt, m, t0, t1, WG_S2);
  else wg_output_m(g, tb, nt, m, t0, t1, WG_F2);
}

/* stream mode: one block of all the tiles, each phase split over the threads */
static void wg_input_chunk(void *arg, size_t t0, size_t t1) {
  const wg_job *g = arg;
  wg_in(g, 0, g->s->M, wg_v(g, 0), t0, t1);
}
static void wg_gemm_claim(void *arg, size_t e0, size_t e1, size_t e_next) {
  const wg_job *g = arg;
  wg_gemms(g, g->s->M, wg_v(g, 0), wg_m(g, 0, g->s->M), e0, e1, e_next);
}
static void wg_output_chunk(void *arg, size_t t0, size_t t1) {
  const wg_job *g = arg;
  wg_out(g, 0, g->s->M, wg_m(g, 0, g->s->M), t0, t1);
}

/* blocked mode: each block whole (its V and M stay in cache), the blocks shared by the threads */
static void wg_block_claim(void *arg, size_t b0, size_t b1, size_t next) {
  wg_job *g = arg;
  (void)next; /* the weights stay in cache: nothing to prefetch */
  unsigned slot = wg_slot_take(g);
  for (size_t blk = b0; blk < b1; blk++) {
    size_t tb = blk * g->tb, nt = wg_block_tiles(g, blk);
    float *v = wg_v(g, slot), *m = wg_m(g, slot, nt);
    wg_in(g, tb, nt, v, tb, tb + nt);
    wg_gemms(g, nt, v, m, 0, (size_t)g->s->ng, SIZE_MAX);
    wg_out(g, tb, nt, m, tb, tb + nt);
  }
  wg_slot_give(g, slot);
}

/* The whole Winograd convolution of one run; buf holds V and M (wg_buf_floats(s, threads)). */
static void wg_run(const pg_state *s, int threads, const float *x, const float *bias, const float *sum, float *y,
                   float *buf) {
  wg_job g = {.s = s, .x = x, .bias = bias, .sum = sum, .y = y, .buf = buf, .tb = wg_tiles_per_block(s)};
  atomic_init(&g.busy, 0ull);
  size_t nb = (s->M + g.tb - 1) / g.tb;
  if (nb > 1) {
    ge_parallel_steal((int)wg_slots(s, g.tb, threads), nb, 1, 0, wg_block_claim, &g);
    return;
  }
  /* (ge_parallel_for runs on the caller alone for one thread, and takes at most one a tile) */
  ge_parallel_for(threads, s->M, wg_input_chunk, &g);
  ge_parallel_steal(threads, (size_t)s->ng, 1, 0, wg_gemm_claim, &g);
  ge_parallel_for(threads, s->M, wg_output_chunk, &g);
}
#endif /* PG_X86 */

/* ------------------------------------------------------------------ kernel */

static bool static_f32(const ge_prepare_ctx *p, size_t i) {
  return ge_fo_in_dtype(p, i) == GE_F32 && ge_shape_is_static(&p->in[i].type->shape);
}

static ge_status decline(const ge_prepare_ctx *p, const char *why) {
  return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "packed matmul: %s", why);
}

/* A and C are stored as their shapes read (the matmul forms take nothing else), as float32 or,
   computing in bf16 (amx), as bf16 (GE_LAYOUT_BF16: what oneDNN's bf16 matmul asks for, dnnl.c). */
static bool rows_ok(int l, bool amx) { return l == GE_LAYOUT_PLAIN || (amx && l == GE_LAYOUT_BF16); }
static bool plain_io(const ge_prepare_ctx *p, bool amx) {
  return (!p->in_layout || rows_ok(p->in_layout[0], amx)) && (!p->out_layout || rows_ok(p->out_layout[0], amx));
}

/* The geometry of a MatMul / FusedMatMul: A [.., M, K] (batch dims folded into M) x B [K, N];
   FusedMatMul's Sum (input 3, the residual) has C's elements, stored as C may be. */
static ge_status matmul_geom(const ge_prepare_ctx *p, bool amx, pg_state *g, size_t *M, size_t *K, size_t *N) {
  if (!plain_io(p, amx)) return decline(p, "plain operands only");
  const ge_shape *a = &p->in[0].type->shape, *b = &p->in[1].type->shape;
  if (a->rank < 2 || b->rank != 2) return decline(p, "A of rank >= 2 and a 2-D B");
  *M = 1;
  for (int32_t d = 0; d + 1 < a->rank; d++) *M *= (size_t)a->dims[d];
  *K = (size_t)a->dims[a->rank - 1];
  *N = (size_t)b->dims[1];
  if ((size_t)b->dims[0] != *K) return decline(p, "K differs");
  g->sum = p->n_in > 3 && p->in[3].present;
  size_t sn = 0;
  if (g->sum && (!static_f32(p, 3) || !ge_shape_numel(&p->in[3].type->shape, &sn) || sn != *M * *N ||
                 (p->in_layout && !rows_ok(p->in_layout[3], amx))))
    return decline(p, "the residual (input 3)");
  return GE_OK;
}

/* Gemm / FusedGemm: A [M, K] (transA = 0) x B [K, N] or, with transB, B^T for B [N, K]; alpha
   is folded into the packed B; C, when present, must be a row [N] or [1, N] (a bias): beta * C
   is precomputed when beta != 1 (C must then be constant). */
static ge_status gemm_geom(const ge_prepare_ctx *p, bool amx, size_t *M, size_t *K, size_t *N, bool *trans_b,
                          float *alpha) {
  if (!plain_io(p, amx)) return decline(p, "plain operands only");
  const ge_node *n = p->node;
  if (ge_node_attr_int(n, "transA", 0) != 0) return decline(p, "transA");
  const ge_shape *a = &p->in[0].type->shape, *b = &p->in[1].type->shape;
  if (a->rank != 2 || b->rank != 2) return decline(p, "2-D operands only");
  *trans_b = ge_node_attr_int(n, "transB", 0) != 0;
  *alpha = ge_node_attr_float(n, "alpha", 1.f);
  *M = (size_t)a->dims[0];
  *K = (size_t)a->dims[1];
  *N = (size_t)b->dims[*trans_b ? 0 : 1];
  if ((size_t)b->dims[*trans_b ? 1 : 0] != *K) return decline(p, "K differs");
  if (p->n_in > 2 && p->in[2].present) {
    const ge_shape *c = &p->in[2].type->shape;
    bool row = (c->rank == 1 && (size_t)c->dims[0] == *N) || (c->rank == 2 && c->dims[0] == 1 && (size_t)c->dims[1] == *N);
    if (!row || ge_fo_in_dtype(p, 2) != GE_F32) return decline(p, "C other than a row of N");
    if (ge_node_attr_float(n, "beta", 1.f) != 1.f && (!p->in[2].value || !p->in[2].value->data))
      return decline(p, "beta with a run-time C");
  }
  return GE_OK;
}

/* An ungrouped 2-D Conv / FusedConv on channels-last activations (the layout oneDNN's brgemm
   convolutions ask for, dnnl.c) with few output pixels, as a GEMM: the pixels' receptive fields
   [N*OH*OW, KH*KW*Cin] (gathered per run, except for a 1x1, stride-1, unpadded convolution,
   where they are X itself) x the weights [KH*KW*Cin, Cout].  Taken for at most PG_CONV_MAX_M
   pixels, where the weights outweigh the activations (the 7x7 stages of ResNet and GoogLeNet):
   there this kernel's prefetch beats oneDNN's brgemm convolutions (scratch benchmark, 1 thread,
   distinct weights: [49 x 2048] x [2048 x 512] 0.59 ms against 0.74-1.0; in ResNet-50 at 1
   thread the 1x1 convolutions of its last stage went from 1.08-1.11 to 0.72-0.73 ms); from
   about 200 pixels on, oneDNN is as fast or faster: with 256 allowed, ResNet-50's 14x14 stage
   at 1 thread went from 25.4 to 28.5 ms (its 3x3 convolutions 1.47 -> 1.97 ms each). */
#define PG_CONV_MAX_M 128
/* A 1x1, stride-1, unpadded convolution (X itself is A) with both channel counts at least
   PG_CONV1_MIN_KN runs here up to PG_CONV1_MAX_M pixels: ResNet-50's 14x14 1x1 layers (256 <->
   1024 channels), per-node minima against oneDNN's brgemm: 0.94-0.99 at 1 thread, 0.85-0.97 at
   2 (the row split: each core keeps its own pixels from layer to layer), the model 0.994 and
   0.974.  From 32 channels on: MobileNetV2's 14x14 expansions and projections (64 or 96 <->
   384 or 576 channels) were 1.11-1.19x and 1.01-1.05x slower here than on oneDNN at 1 thread,
   before the micro-kernel took two k-steps a turn and applied Clip in registers; since, the
   model in `make bench`'s pattern (bench.py, 60 rounds, two runs each way) reads ge/ort 0.81
   and 0.81 at 2 threads against 0.85 and 0.84 with 256 (the depthwise convolutions between
   them find their rows in the core that wrote them), 0.81 against 0.80-0.81 at 1 thread;
   GoogLeNet 0.74 against 0.73 at 2 threads, and 0.987 / 0.989 of its `ge profile` time. */
#define PG_CONV1_MAX_M 256
#define PG_CONV1_MIN_KN 32
/* More pixels than that, up to 20 x 20 an image, a 3x3 stride-1 convolution runs by Winograd
   F(2x2, 3x3) here (wg_run), larger ones by F(4x4) below.  Against oneDNN, per-layer minima
   alternating builds: ResNet-50's 14x14x256 layers 8.7 -> 6.7 ms (1 thread), 6.0 -> 4.6 (2
   threads); its 28x28x128 ones 4.7 -> 4.9 at 1 thread (oneDNN's own Winograd F(4x4, 3x3)) and
   3.47 -> 3.17 ms at 2 (oneDNN's brgemm); GoogLeNet's 3x3 layers at 2 threads 0.59-0.81x; but
   its 56x56x64 layers 2.7 -> 5.4 ms (the transformed tiles, 4x the activations, no longer stay
   in cache).
   At 128 pixels or fewer, F(2x2) replaces the direct GEMM on gathered pixels (above) where its
   4x4 input tiles number at least PG_WINO_MIN_TILES in all and take at most 0.6 of the direct
   multiplies, e.g. 16 tiles for 7 x 7 outputs (0.58).  Per-layer minima, 6 layers of 3x3
   convolutions of C -> C channels, alternating the two: at 7x7 0.77 (C = 96-192), 0.92 (512)
   and 0.88 (1024) at 1 thread, 0.74-0.85 at 2; ResNet-50's 7x7 stage 1845 -> 1641 us a layer
   at 1 thread, 1100 -> 830 at 2; GoogLeNet's 7x7 3x3 layers 0.88-0.92 and 0.69-1.01.  Its
   transformed weights are 16/9 the direct ones, which few tiles do not pay for at 1 thread:
   5x5 outputs (9 tiles, 0.64 the multiplies) 0.96-1.05, 4x4 at 512 channels (4 tiles) 1.43;
   4x4 in a batch of 4 (16 tiles) 0.82. */
#define PG_WINO_MIN_TILES 16
/* From 400 pixels on (20 x 20) up to 56 x 56 an image, Winograd F(4x4, 3x3) instead (wg_bt,
   wg_at): 36 GEMMs on 6x6 tiles, 4x fewer multiplies than the direct convolution where
   F(2x2) saves 2.25x, and the transformed tiles take 2.25 floats per output pixel instead of 4,
   so that 56x56 fits.  Per-layer minima, alternating builds (F(2x2) / oneDNN's F(4x4) with its
   reorders against this): ResNet-50's 28x28x128 layers 4.04 -> 3.01 ms at 1 thread, 2.23 ->
   1.50 at 2; its 56x56x64 ones 2.65 -> 2.22 and 1.58 -> 1.12; GoogLeNet's 28x28 layers
   0.49-0.65x, its 56x56x192 one 0.77-0.90x.  At 14x14 F(4x4) loses (1.34x: 16 tiles of 4x4
   for 196 pixels, and 9x the weights' floats to stream).  Its rounding: the transforms multiply
   by up to 25 and 8, so the result is off by up to about 1e-4 of the outputs' root mean square
   (F(2x2) and the direct sum: a few 1e-6); oneDNN's F(4x4) kernel does the same, and
   ge.exec.disableWinograd=1 turns both off. */
#define PG_WINO4_MIN_PX 400
#define PG_WINO4_MAX_PX 3136
/* A 3x3 stride-2 convolution by the stride-2 F(2x2, 3x3) (WG_S2, 1.44x fewer multiplies than
   the direct sum for even output sizes) where both channel counts are at least
   PG_WINO_S2_MIN_C, its tiles number at least PG_WINO_MIN_TILES, take at most 0.7 of the
   direct multiplies (even output sizes: 0.69), and the outputs are at most PG_WINO4_MAX_PX
   pixels an image.  Per-layer minima against oneDNN's brgemm convolution (or the direct GEMM on
   gathered pixels), 2-4 layers alternating, 1 / 2 threads: 256 -> 256 channels from 28x28 to
   14x14 0.82 / 0.75 (ResNet-50's layer3.0: 1937 -> 1733 and 1171 -> 986 us), 56x56 -> 28x28
   0.92 / 0.98, 16x16 -> 8x8 (to 384) 0.92 / 0.80, 512 from 28x28 0.75 / 0.62.  With fewer
   channels the transforms (25 (Cin + Cout) a tile against 25 Cin Cout multiplies) outweigh the
   saving: 128 from 56x56 (ResNet-50's layer2.0) 1.0-1.19, 64 from 112x112 1.1-1.4. */
#define PG_WINO_S2_MIN_C 256
/* Winograd's tile size m (2 or 4) for a 3x3 convolution of stride 1 or 2 over n images of oh x
   ow output pixels, M = n * oh * ow in all, Cin -> Cout channels; 0: the direct GEMM on
   gathered pixels (M <= PG_CONV_MAX_M) or oneDNN */
static int wino_tile(int64_t n, int64_t oh, int64_t ow, size_t M, int64_t stride, int64_t cin, int64_t cout) {
  int64_t px = oh * ow, tiles = ((oh + 1) / 2) * ((ow + 1) / 2);
  if (stride == 2)
    return cin >= PG_WINO_S2_MIN_C && cout >= PG_WINO_S2_MIN_C && px <= PG_WINO4_MAX_PX &&
                   n * tiles >= PG_WINO_MIN_TILES && 25 * tiles * 10 <= 9 * px * 7
               ? 2
               : 0; /* 25 / 36 multiplies, at most 0.7 */
  if (M > PG_CONV_MAX_M) return px > PG_WINO4_MAX_PX ? 0 : px >= PG_WINO4_MIN_PX ? 4 : 2;
  return n * tiles >= PG_WINO_MIN_TILES && 16 * tiles * 5 <= 9 * px * 3 ? 2 : 0; /* 16 / 9 multiplies, at most 0.6 */
}
static bool nhwc_ok(int l, bool amx) { return l == GE_LAYOUT_NHWC || (amx && l == GE_LAYOUT_NHWC_BF16); }
static ge_status conv_geom(const ge_prepare_ctx *p, bool amx, pg_state *g, size_t *M, size_t *K, size_t *N) {
  const ge_shape *x = &p->in[0].type->shape, *w = &p->in[1].type->shape, *y = &p->out[0].shape;
  if (x->rank != 4 || w->rank != 4 || y->rank != 4) return decline(p, "not a 2-D convolution");
  const ge_node *n = p->node;
  ge_nn_win_attrs at;
  if (ge_nn_win_parse(n, false, &at) != GE_OK || ge_nn_win_resolve(n, &at, 2, &w->dims[2]) != GE_OK)
    return decline(p, "attributes");
  if (at.group != 1 || at.auto_pad != GE_PAD_NOTSET) return decline(p, "groups or auto_pad");
  bool sum = p->n_in > 3 && p->in[3].present;
  if (!p->in_layout || !p->out_layout || !nhwc_ok(p->in_layout[0], amx) || !nhwc_ok(p->out_layout[0], amx) ||
      (sum && !nhwc_ok(p->in_layout[3], amx)))
    return decline(p, "channels-last operands only");
  int64_t oh = 0, ow = 0, pb = 0, pr = 0;
  *g = (pg_state){.n = x->dims[0], .c = x->dims[1], .h = x->dims[2], .w = x->dims[3], .kh = w->dims[2],
                  .kw = w->dims[3], .oh = y->dims[2], .ow = y->dims[3], .sh = at.strides[0], .sw = at.strides[1],
                  .dh = at.dilations[0], .dw = at.dilations[1], .sum = sum};
  if (ge_nn_win_out(n, &at, 0, g->h, false, &oh, &g->pt, &pb) != GE_OK ||
      ge_nn_win_out(n, &at, 1, g->w, false, &ow, &g->pl, &pr) != GE_OK || oh != g->oh || ow != g->ow ||
      w->dims[1] != g->c || y->dims[0] != g->n || y->dims[1] != w->dims[0])
    return decline(p, "geometry");
  g->im2col = g->kh != 1 || g->kw != 1 || g->sh != 1 || g->sw != 1 || g->pt || g->pl || pb || pr;
  *M = (size_t)(g->n * g->oh * g->ow);
  *K = (size_t)(g->kh * g->kw * g->c);
  *N = (size_t)w->dims[0];
  if (amx) { /* bf16 on AMX (fast/amx.c): any pixel count; a 1x1 stride-1 unpadded one reads X as A */
    if (g->kh * g->kw > GE_AMX_MAX_TAPS || g->sh * g->sw > GE_AMX_MAX_TAPS)
      return decline(p, "bf16: a kernel window or a stride of more than 64 taps");
    g->acv = (ge_amx_conv){.n = (size_t)g->n, .h = (size_t)g->h, .w = (size_t)g->w, .c = (size_t)g->c,
                           .kh = (size_t)g->kh, .kw = (size_t)g->kw, .sh = (size_t)g->sh, .sw = (size_t)g->sw,
                           .dh = (size_t)g->dh, .dw = (size_t)g->dw, .pt = (size_t)g->pt, .pl = (size_t)g->pl,
                           .oh = (size_t)g->oh, .ow = (size_t)g->ow};
    if (g->im2col) *K = ge_amx_conv_k(&g->acv);
  } else if (!p->no_winograd && g->kh == 3 && g->kw == 3 && g->sh == g->sw && (g->sh == 1 || g->sh == 2) &&
             g->dh == 1 && g->dw == 1 && (g->wm = wino_tile(g->n, g->oh, g->ow, *M, g->sh, g->c, (int64_t)*N)) != 0) {
    g->wino = true;
    g->im2col = false;
    g->ne = wg_ai(wg_var(g)) * wg_ai(wg_var(g));
    g->ng = wg_ng(wg_var(g));
    g->th = (g->oh + g->wm - 1) / g->wm;
    g->tw = (g->ow + g->wm - 1) / g->wm;
    *M = (size_t)(g->n * g->th * g->tw);
    *K = (size_t)g->c;
  } else if (*M > PG_CONV_MAX_M &&
             (g->im2col || *M > PG_CONV1_MAX_M || *K < PG_CONV1_MIN_KN || *N < PG_CONV1_MIN_KN))
    return decline(p, "more pixels than the weights pay for");
  if (sum) {
    size_t sn = 0;
    if (ge_fo_in_dtype(p, 3) != GE_F32 || !ge_shape_numel(&p->in[3].type->shape, &sn) ||
        sn != (size_t)(g->n * g->oh * g->ow) * *N)
      return decline(p, "residual");
  }
  return GE_OK;
}

/* The receptive field of output pixels m0..m1-1, row m = (n, oy, ox): [KH, KW, C], zero outside X. */
typedef struct pg_gather {
  const pg_state *s;
  const float *x;
  float *col;
} pg_gather;

static void gather_rows(void *arg, size_t m0, size_t m1) {
  const pg_gather *g = arg;
  const pg_state *s = g->s;
  size_t C = (size_t)s->c, K = s->K, px = (size_t)(s->oh * s->ow);
  for (size_t m = m0; m < m1; m++) {
    int64_t n = (int64_t)(m / px), oy = (int64_t)(m % px) / s->ow, ox = (int64_t)(m % px) % s->ow;
    float *row = g->col + m * K;
    for (int64_t ky = 0; ky < s->kh; ky++) {
      int64_t iy = oy * s->sh - s->pt + ky * s->dh;
      for (int64_t kx = 0; kx < s->kw; kx++, row += C) {
        int64_t ix = ox * s->sw - s->pl + kx * s->dw;
        if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) memset(row, 0, C * sizeof(float));
        else memcpy(row, g->x + (size_t)((n * s->h + iy) * s->w + ix) * C, C * sizeof(float));
      }
    }
  }
}

/* A Winograd convolution's weights [Cout, Cin, 3, 3]: U[e][ci][co] = (G g G^T)[e], packed as ng
   matrices [Cin x Cout] (K = Cin, N = Cout), one per GEMM (wg_group: the first of its elements),
   for the variant var (WG_F2, WG_F4, WG_S2).  The products are formed in double and rounded
   once.  False when out of memory. */
static bool pack_wino(const float *w, size_t K, size_t N, int var, float *bp) {
  const int a = wg_ai(var), ng = wg_ng(var), gc = var == WG_S2 ? 4 : a; /* GEMMs, per row */
  float *u = malloc((size_t)ng * K * N * sizeof(float));
  if (!u) return false;
  static const double G2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  static const double G4[6][3] = {{1. / 4, 0, 0},          {-1. / 6, -1. / 6, -1. / 6}, {-1. / 6, 1. / 6, -1. / 6},
                                  {1. / 24, 1. / 12, 1. / 6}, {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}};
  static const double GS2[4][3] = {{1, 0, 0}, {1, 0, 1}, {0, 0, 1}, {0, 1, 0}}; /* its 4 distinct rows */
  const double(*G)[3] = var == WG_F4 ? G4 : var == WG_S2 ? GS2 : G2;
  for (size_t co = 0; co < N; co++)
    for (size_t ci = 0; ci < K; ci++) {
      const float *f = w + (co * K + ci) * 9;
      double t[6][3];
      for (int i = 0; i < gc; i++)
        for (int b = 0; b < 3; b++) t[i][b] = G[i][0] * f[b] + G[i][1] * f[3 + b] + G[i][2] * f[6 + b];
      for (int i = 0; i < gc; i++)
        for (int j = 0; j < gc; j++)
          u[((size_t)(i * gc + j) * K + ci) * N + co] = (float)(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
    }
  size_t np = (N + PG_NR - 1) / PG_NR;
  for (size_t e = 0; e < (size_t)ng; e++) pack_b(u + e * K * N, K, N, false, 1.f, bp + e * np * K * PG_NR);
  free(u);
  return true;
}

/* A gathered convolution's weights [Cout, Cin, KH, KW] as B[k][co] for k = (ky*KW + kx)*Cin + ci:
   reordered to [Cout, KH, KW, Cin], then packed transposed.  False when out of memory. */
static bool pack_taps(const pg_state *g, const float *w, size_t K, size_t N, float *bp) {
  float *wt = malloc(K * N * sizeof(float));
  if (!wt) return false;
  size_t taps = (size_t)(g->kh * g->kw), C = (size_t)g->c;
  for (size_t co = 0; co < N; co++)
    for (size_t ci = 0; ci < C; ci++)
      for (size_t t = 0; t < taps; t++) wt[co * K + t * C + ci] = w[(co * C + ci) * taps + t];
  pack_b(wt, K, N, true, 1.f, bp);
  free(wt);
  return true;
}

static ge_status pg_prepare(const ge_prepare_ctx *p, void **state) {
  const char *op = p->node->op_type;
  bool conv = strstr(op, "Conv") != NULL, gemm = strstr(op, "Gemm") != NULL, fused = !strncmp(op, "Fused", 5);
  if (!ge_cpu_avx512_fma()) return decline(p, "needs AVX-512");
  /* a node marked bf16 where the processor has no bf16 compute runs in float32 (dnnl_lowp.c), as
     in the float32 mode: then here too, so that the fallback gives the float32 mode's results.
     One that computes in bf16 runs on AMX here (fast/amx.c): the matmul forms, and every
     ungrouped convolution on channels-last operands; without AMX oneDNN takes it */
  dnnl_data_type_t cdt = ge_dn_lowp_dt(p);
  bool amx = cdt == dnnl_bf16 && ge_amx_usable();
  if (cdt != dnnl_f32 && !amx) return decline(p, "a reduced-precision node");
  if (p->n_out != 1 || p->out[0].dtype != GE_F32 || !static_f32(p, 0) || !static_f32(p, 1))
    return decline(p, "needs static float32 operands");
  if (!p->in[1].value || !p->in[1].value->data || p->in[0].value) return decline(p, "needs a constant B only");
  size_t M = 0, K = 0, N = 0;
  pg_state geo = {0};
  bool trans_b = conv;
  float alpha = 1.f;
  GE_CHECK(conv ? conv_geom(p, amx, &geo, &M, &K, &N)
                : gemm ? gemm_geom(p, amx, &M, &K, &N, &trans_b, &alpha) : matmul_geom(p, amx, &geo, &M, &K, &N));
  /* narrow products: the panels do not pay (oneDNN takes them).  A few rows (M = 1..3, a
     classifier or a decoding step) stream the weights: on a chain of 60 [M x 768] x [768 x 768]
     (per-step minima, alternating builds) this kernel took M = 1: 10.9-11.0 ms against
     oneDNN's 11.7-12.3 at 1 thread, 4.2 against 4.8-5.0 at 2; M = 2: 4.0-4.3 against 6.8-6.9
     at 2 threads */
  if (K < 16 || N < 16) return decline(p, "too small");
  size_t yn = 0;
  geo.M = M;
  if (!ge_shape_numel(&p->out[0].shape, &yn) || yn != out_rows(&geo) * N)
    return decline(p, "output size");
  ge_fused_act act = GE_ACT_NONE;
  float p0 = 0.f, p1 = 0.f;
  if (fused) {
    act = ge_fused_act_of(p->node, "activation", "activation_params", &p0, &p1);
    if (act == GE_ACT_COUNT || !ge_fo_act_supported(act)) return decline(p, "activation");
  }
  bool bias = (fused || conv || gemm) && p->n_in > 2 && p->in[2].present;
  float beta = gemm ? ge_node_attr_float(p->node, "beta", 1.f) : 1.f;
  if (bias) {
    size_t bn = 0;
    if (ge_fo_in_dtype(p, 2) != GE_F32 || !ge_shape_numel(&p->in[2].type->shape, &bn) || bn != N)
      return decline(p, "bias");
  }
  size_t np = (N + PG_NR - 1) / PG_NR, nb = geo.wino ? (size_t)geo.ng : 1; /* packed B matrices */
  if (np > SIZE_MAX / PG_NR / K / sizeof(float) / nb) return decline(p, "too large");
  size_t bytes = amx ? ge_amx_packed_elems(K, N) * sizeof(uint16_t) : nb * np * K * PG_NR * sizeof(float);
  pg_state *s = calloc(1, sizeof *s);
  const float *w = p->in[1].value->data;
  /* how B is packed; the plain panels (float32 or bf16) may be another node's already (pg_shared) */
  enum { PK_AMX_CONV, PK_AMX, PK_WINO, PK_TAPS, PK_PLAIN } how =
      amx ? (conv && geo.im2col ? PK_AMX_CONV : PK_AMX)
          : geo.wino ? PK_WINO : conv && (geo.kh != 1 || geo.kw != 1) ? PK_TAPS : PK_PLAIN;
  bool shareable = how == PK_AMX || how == PK_PLAIN;
  pg_shared key = {.src = w, .K = K, .N = N, .bytes = bytes, .trans = trans_b, .amx = amx, .alpha = alpha};
  pg_shared *sh = NULL;
  if (s && shareable) {
    key.hash = ge_hash64(w, K * N * sizeof(float));
    pthread_mutex_lock(&pg_share_mu);
    sh = pg_share_find(&key);
    pthread_mutex_unlock(&pg_share_mu);
  }
  void *bmem = sh ? sh->mem : s ? ge_const_alloc(bytes) : NULL;
  float *bp = amx ? NULL : bmem;
  bool packed = bmem != NULL;
  if (packed && !sh) { /* else packed already */
    switch (how) {
      case PK_AMX_CONV: packed = ge_amx_pack_conv(w, N, &geo.acv, bmem); break;
      case PK_AMX: ge_amx_pack(w, K, N, trans_b, alpha, bmem); break;
      case PK_WINO: packed = pack_wino(w, K, N, wg_var(&geo), bp); break;
      case PK_TAPS: packed = pack_taps(&geo, w, K, N, bp); break;
      case PK_PLAIN: pack_b(w, K, N, trans_b, alpha, bp); break;
    }
  }
  if (packed && bias && beta != 1.f) { /* gemm_geom: C is constant here */
    geo.bias_own = malloc(N * sizeof(float));
    if (geo.bias_own) {
      const float *c = p->in[2].value->data;
      for (size_t i = 0; i < N; i++) geo.bias_own[i] = beta * c[i];
    }
    packed = geo.bias_own != NULL;
  }
  if (packed && !sh) { /* offered to the nodes prepared later (or one packed meanwhile taken) */
    sh = pg_share_hold(&key, bmem, shareable);
    packed = sh != NULL;
  }
  if (!packed) {
    if (sh) pg_share_drop(sh);
    else ge_const_free(bmem);
    free(geo.bias_own);
    free(s);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "packed matmul: out of memory (weights of %zu bytes)", bytes);
  }
  *s = geo; /* geo.M is set above */
  s->K = K;
  s->N = N;
  s->np = np;
  s->bp = amx ? NULL : sh->mem;
  s->bp16 = amx ? sh->mem : NULL;
  s->packed = sh;
  s->a16 = amx && p->in_layout && (p->in_layout[0] == GE_LAYOUT_BF16 || p->in_layout[0] == GE_LAYOUT_NHWC_BF16);
  s->c16 = amx && p->out_layout && (p->out_layout[0] == GE_LAYOUT_BF16 || p->out_layout[0] == GE_LAYOUT_NHWC_BF16);
  s->sum16 = amx && s->sum && p->in_layout &&
             (p->in_layout[3] == GE_LAYOUT_NHWC_BF16 || p->in_layout[3] == GE_LAYOUT_BF16);
  s->bias = bias;
  s->act = act;
  s->p0 = p0;
  s->p1 = p1;
  ge_prepare_drop_packed(p, 1u << 1);
  *state = s;
  return GE_OK;
}

static ge_status pg_run(const void *state, ge_kctx *ctx) {
  const pg_state *s = state;
  const ge_tensor *A = ctx->n_in > 0 ? ctx->in[0] : NULL;
  const ge_tensor *Bias = s->bias && ctx->n_in > 2 ? ctx->in[2] : NULL;
  const ge_tensor *Sum = s->sum && ctx->n_in > 3 ? ctx->in[3] : NULL;
  ge_tensor *C = ctx->n_out > 0 ? ctx->out[0] : NULL;
  size_t an = s->im2col || s->wino ? (size_t)(s->n * s->h * s->w * s->c) : s->M * s->K;
  size_t cn = out_rows(s) * s->N; /* elements of C */
  if (!A || A->dtype != GE_F32 || A->numel != an || !A->data)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "packed matmul: input 0 has %zu elements (%s), the plan expects %zu float32",
                        A ? A->numel : 0, A ? ge_dtype_name(A->dtype) : "missing", an);
  if (s->bias && !s->bias_own && (!Bias || Bias->dtype != GE_F32 || Bias->numel != s->N || !Bias->data))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "packed matmul: the bias (input 2) must be %zu float32", s->N);
  if (s->sum && (!Sum || Sum->dtype != GE_F32 || Sum->numel != cn || !Sum->data))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "packed matmul: the residual (input 3) must be %zu float32", cn);
  if (!C || C->dtype != GE_F32 || C->numel != cn || !C->data)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "packed matmul: output must be %zu float32", cn);
  const float *bias = s->bias_own ? s->bias_own : Bias ? Bias->data : NULL;
  if (s->bp16) {
    ge_amx_gemm ag = {.M = s->M, .K = s->K, .N = s->N, .conv = s->im2col ? &s->acv : NULL, .bp = s->bp16,
                      .a = A->data, .a16 = s->a16, .c = C->data,
                      .c16 = s->c16, .bias = bias, .sum = Sum ? Sum->data : NULL, .sum16 = s->sum16,
                      .act = s->act, .p0 = s->p0, .p1 = s->p1};
    if (!ge_amx_run(&ag, ctx->threads))
      return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "packed matmul: out of memory (A of %zu x %zu as bf16)", s->M, s->K);
    return GE_OK;
  }
#if PG_X86
  /* the gathered A (Winograd: V and M), in this thread's scratch */
  const float *a = A->data;
  float *col = NULL;
  int wt = s->wino ? ge_fo_threads(ctx->threads, 32 * s->M * s->N * s->K, (size_t)2 << 20) : 1;
  size_t coln = s->wino ? wg_buf_floats(s, wt) : s->M * s->K;
  if (s->im2col || s->wino) {
    col = ge_cpu_thread_scratch(coln * sizeof(float));
    if (!col)
      return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "packed matmul: out of memory (%zu bytes)", coln * sizeof(float));
    if (s->im2col) { /* a copy: split when it is more than about 64 K floats a thread */
      pg_gather pgat = {.s = s, .x = A->data, .col = col};
      ge_parallel_for(ge_fo_threads(ctx->threads, s->M * s->K, (size_t)64 << 10), s->M, gather_rows, &pgat);
    }
    a = col;
  }
  if (s->wino) {
    wg_run(s, wt, A->data, bias,
           Sum ? Sum->data : NULL, C->data, col);
    return GE_OK;
  }
  /* about 2 MFLOP per thread at least, a weight element counting as 16 (a few rows are bound
     by streaming the weights, which two cores do faster than one) */
  size_t flops = 2 * s->M * s->N * s->K, stream = 16 * s->N * s->K;
  int t = ge_fo_threads(ctx->threads, flops > stream ? flops : stream, (size_t)2 << 20);
  pg_job g = {.s = s, .A = a, .C = C->data, .bias = bias, .sum = Sum ? Sum->data : NULL};
  /* a small weight: pieces of at least PG_ROWS_MIN rows, 1-2 a thread (pg_rows_claim).  Each
     piece reads the whole weight, from L2 after the first.  Up to 4 a thread cut ResNet-50's
     14x14 1x1 layers (196 rows) at 2 threads into 8 pieces of 24-25 rows, which took 1.04x the
     time of 4 pieces of 49 (`ge profile`, the 12 layers' sum); the model at 2 threads took
     1.018-1.029x (`ge bench` p50, paired medians of 12-16 alternations).  With a spin loop on
     the other core, 4 pieces did as well as 8 (0.990). */
  size_t per = t > 1 ? s->M / (PG_ROWS_MIN * (size_t)t) : 0;
  if (per > 2) per = 2;
  if (per >= 1 && s->K * s->N * sizeof(float) <= PG_ROWS_MAX_W) {
    g.pieces = per * (size_t)t;
    ge_parallel_steal(t, g.pieces, 1, 0, pg_rows_claim, &g);
    return GE_OK;
  }
  /* else the panel split: claims of whole panels, the last of a share in quarters (ge_steal_blocks) */
  size_t nmb = pg_row_blocks(s->M), tail = 0, unit = ge_steal_blocks(t, s->np, nmb, &tail);
  ge_parallel_steal(t, s->np * nmb, unit, tail, pg_claim, &g);
  return GE_OK;
#else
  return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "packed matmul: not built for this processor");
#endif
}

static void pg_release(void *state) {
  pg_state *s = state;
  if (!s) return;
  if (s->packed) pg_share_drop(s->packed);
  free(s->bias_own);
  free(s);
}

/* B (input 1) lives packed in the state */
static uint32_t pg_packed_inputs(const void *state) { return state ? 1u << 1 : 0; }

static const char *pg_describe(const void *state) {
  const pg_state *s = state;
  if (!s) return NULL;
  if (s->bp16) return s->im2col ? "amx bf16, gathered taps" : "amx bf16";
  if (s->wino) return s->wm == 4 ? "winograd F(4x4,3x3)" : s->sh == 2 ? "winograd F(2x2,3x3) stride 2" : "winograd F(2x2,3x3)";
  return s->im2col ? "gathered taps" : NULL;
}

/* every op the same kernel; FusedConv's and FusedMatMul's residual (input 3) may be the
   output's buffer: each block reads it before writing */
#define PG_KERNEL(inplace)                                                                       \
  {.prepare = pg_prepare, .run = pg_run, .release = pg_release, .overwrites_outputs = true,     \
   .inplace_inputs = (inplace), .packed_inputs = pg_packed_inputs, .describe = pg_describe}
const ge_kernel_def ge_fast_kernels_pgemm[] = {
    {"", "MatMul", 1, 0, PG_KERNEL(0)},
    {GE_FUSED_DOMAIN, "FusedMatMul", 1, 0, PG_KERNEL(1u << 3)},
    {"", "Gemm", 1, 0, PG_KERNEL(0)},
    {GE_FUSED_DOMAIN, "FusedGemm", 1, 0, PG_KERNEL(0)},
    {"", "Conv", 1, 0, PG_KERNEL(0)},
    {GE_FUSED_DOMAIN, "FusedConv", 1, 0, PG_KERNEL(1u << 3)},
    {0},
};
#undef PG_KERNEL
