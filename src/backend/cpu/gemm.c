/* Cache-blocked SGEMM in the Goto/BLIS style: pack a KC x NC block of B into NR-wide panels
 * and an M x KC block of A into MR-high panels, then run an MR x NR register-blocked
 * micro-kernel over the tiles.  The tile loop is compiled for several ISAs with
 * target_clones, so the binary runs on any x86-64 and uses AVX-512 where present. */
#pragma GCC optimize("fp-contract=fast")

#include "backend/cpu/gemm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/threadpool.h"
#include "ir/error.h"

#define MR 6
#define NR 32
#define KC 256
#define NC 4096
#define MB_PANELS 16 /* A panels (of MR rows) per task: 96 rows */
#define NB_PANELS 4  /* B panels (of NR cols) per task: 128 cols */

#include "backend/cpu/cpu_dispatch.h"
#define GE_GEMM_CLONES GE_CPU_CLONES

typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));

typedef struct gemm_job {
  bool ta, tb;
  size_t M, N;
  const float *A, *B;
  size_t lda, ldb;
  float alpha;
  float *C;
  size_t ldc;
  /* current block */
  size_t pc, kc, jc, nc;
  float *Ap, *Bp;
  size_t n_apanels, n_bpanels, n_mtasks, n_ntasks;
} gemm_job;

/* ---- packing ---- */

static void pack_a(void *arg, size_t p0, size_t p1) {
  const gemm_job *g = arg;
  size_t kc = g->kc, pc = g->pc;
  for (size_t p = p0; p < p1; p++) {
    float *dst = g->Ap + p * kc * MR;
    size_t i0 = p * MR, rows = g->M - i0 < MR ? g->M - i0 : MR;
    if (!g->ta) {
      for (size_t i = 0; i < MR; i++) {
        if (i < rows) {
          const float *src = g->A + (i0 + i) * g->lda + pc;
          for (size_t k = 0; k < kc; k++) dst[k * MR + i] = src[k];
        } else {
          for (size_t k = 0; k < kc; k++) dst[k * MR + i] = 0.0f;
        }
      }
    } else {
      for (size_t k = 0; k < kc; k++) {
        const float *src = g->A + (pc + k) * g->lda + i0;
        size_t i = 0;
        for (; i < rows; i++) dst[k * MR + i] = src[i];
        for (; i < MR; i++) dst[k * MR + i] = 0.0f;
      }
    }
  }
}

static void pack_b(void *arg, size_t p0, size_t p1) {
  const gemm_job *g = arg;
  size_t kc = g->kc, pc = g->pc;
  for (size_t p = p0; p < p1; p++) {
    float *dst = g->Bp + p * kc * NR;
    size_t j0 = g->jc + p * NR, cols = g->jc + g->nc - j0 < NR ? g->jc + g->nc - j0 : NR;
    if (!g->tb) {
      for (size_t k = 0; k < kc; k++) {
        const float *src = g->B + (pc + k) * g->ldb + j0;
        size_t j = 0;
        for (; j < cols; j++) dst[k * NR + j] = src[j];
        for (; j < NR; j++) dst[k * NR + j] = 0.0f;
      }
    } else {
      for (size_t j = 0; j < NR; j++) {
        if (j < cols) {
          const float *src = g->B + (j0 + j) * g->ldb + pc;
          for (size_t k = 0; k < kc; k++) dst[k * NR + j] = src[k];
        } else {
          for (size_t k = 0; k < kc; k++) dst[k * NR + j] = 0.0f;
        }
      }
    }
  }
}

/* ---- the micro-kernel over a range of tiles ---- */

#define LOADV(p) (*(const v16 *)(p))

GE_GEMM_CLONES
static void gemm_tiles(const gemm_job *g, size_t ir0, size_t ir1, size_t jr0, size_t jr1) {
  const size_t kc = g->kc;
  const float alpha = g->alpha;
  for (size_t jr = jr0; jr < jr1; jr++) {
    const float *bpanel = g->Bp + jr * kc * NR;
    size_t col0 = g->jc + jr * NR;
    size_t cols = g->jc + g->nc - col0 < NR ? g->jc + g->nc - col0 : NR;
    for (size_t ir = ir0; ir < ir1; ir++) {
      const float *a = g->Ap + ir * kc * MR;
      const float *b = bpanel;
      size_t row0 = ir * MR, rows = g->M - row0 < MR ? g->M - row0 : MR;
      v16 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
      v16 c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
      for (size_t k = 0; k < kc; k++) {
        v16 b0 = LOADV(b), b1 = LOADV(b + 16);
        float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5];
        c00 += a0 * b0; c01 += a0 * b1;
        c10 += a1 * b0; c11 += a1 * b1;
        c20 += a2 * b0; c21 += a2 * b1;
        c30 += a3 * b0; c31 += a3 * b1;
        c40 += a4 * b0; c41 += a4 * b1;
        c50 += a5 * b0; c51 += a5 * b1;
        a += MR;
        b += NR;
      }
      float *c = g->C + row0 * g->ldc + col0;
      if (rows == MR && cols == NR) {
#define STORE_ROW(r, v0, v1)                              \
  do {                                                    \
    v16 *cp0 = (v16 *)(c + (r) * g->ldc);                 \
    v16 *cp1 = (v16 *)(c + (r) * g->ldc + 16);            \
    *cp0 += alpha * (v0);                                 \
    *cp1 += alpha * (v1);                                 \
  } while (0)
        STORE_ROW(0, c00, c01);
        STORE_ROW(1, c10, c11);
        STORE_ROW(2, c20, c21);
        STORE_ROW(3, c30, c31);
        STORE_ROW(4, c40, c41);
        STORE_ROW(5, c50, c51);
#undef STORE_ROW
      } else {
        float tmp[MR][NR];
        *(v16 *)&tmp[0][0] = c00; *(v16 *)&tmp[0][16] = c01;
        *(v16 *)&tmp[1][0] = c10; *(v16 *)&tmp[1][16] = c11;
        *(v16 *)&tmp[2][0] = c20; *(v16 *)&tmp[2][16] = c21;
        *(v16 *)&tmp[3][0] = c30; *(v16 *)&tmp[3][16] = c31;
        *(v16 *)&tmp[4][0] = c40; *(v16 *)&tmp[4][16] = c41;
        *(v16 *)&tmp[5][0] = c50; *(v16 *)&tmp[5][16] = c51;
        for (size_t i = 0; i < rows; i++)
          for (size_t j = 0; j < cols; j++) c[i * g->ldc + j] += alpha * tmp[i][j];
      }
    }
  }
}

static void compute_tasks(void *arg, size_t t0, size_t t1) {
  const gemm_job *g = arg;
  for (size_t t = t0; t < t1; t++) {
    size_t mt = t % g->n_mtasks, nt = t / g->n_mtasks;
    size_t ir0 = mt * MB_PANELS, ir1 = ir0 + MB_PANELS;
    size_t jr0 = nt * NB_PANELS, jr1 = jr0 + NB_PANELS;
    if (ir1 > g->n_apanels) ir1 = g->n_apanels;
    if (jr1 > g->n_bpanels) jr1 = g->n_bpanels;
    gemm_tiles(g, ir0, ir1, jr0, jr1);
  }
}

static void *buf_alloc(size_t nfloats) {
  size_t bytes;
  if (__builtin_mul_overflow(nfloats, sizeof(float), &bytes)) return NULL;
  bytes = (bytes + 63) & ~(size_t)63;
  if (bytes == 0) bytes = 64;
  return aligned_alloc(64, bytes);
}

static void scale_c(float *C, size_t M, size_t N, size_t ldc, float beta) {
  if (beta == 1.0f) return;
  for (size_t i = 0; i < M; i++) {
    float *c = C + i * ldc;
    if (beta == 0.0f)
      memset(c, 0, N * sizeof(float));
    else
      for (size_t j = 0; j < N; j++) c[j] *= beta;
  }
}

ge_status ge_sgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                   const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                   size_t ldc, int threads) {
  if (M == 0 || N == 0) return GE_OK;
  if (ldc < N || (K > 0 && lda < (trans_a ? M : K)) || (K > 0 && ldb < (trans_b ? K : N)))
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "ge_sgemm: leading dimension too small (M=%zu N=%zu K=%zu lda=%zu ldb=%zu "
                    "ldc=%zu trans_a=%d trans_b=%d)",
                    M, N, K, lda, ldb, ldc, (int)trans_a, (int)trans_b);
  scale_c(C, M, N, ldc, beta);
  if (K == 0 || alpha == 0.0f) return GE_OK;

  gemm_job g = {.ta = trans_a, .tb = trans_b, .M = M, .N = N, .A = A, .B = B, .lda = lda,
                .ldb = ldb, .alpha = alpha, .C = C, .ldc = ldc};
  g.n_apanels = (M + MR - 1) / MR;
  size_t ncmax = N < NC ? N : NC;
  size_t kcmax = K < KC ? K : KC;
  size_t na, nb;
  if (__builtin_mul_overflow(g.n_apanels * MR, kcmax, &na) ||
      __builtin_mul_overflow((ncmax + NR - 1) / NR * NR, kcmax, &nb))
    return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_sgemm: packing buffer size overflows (M=%zu)", M);
  g.Ap = buf_alloc(na);
  g.Bp = buf_alloc(nb);
  if (!g.Ap || !g.Bp) {
    free(g.Ap);
    free(g.Bp);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_sgemm: cannot allocate packing buffers (M=%zu N=%zu K=%zu)",
                    M, N, K);
  }
  g.n_mtasks = (g.n_apanels + MB_PANELS - 1) / MB_PANELS;
  /* tiny problems: threads cost more than they save */
  double flops = 2.0 * (double)M * (double)N * (double)K;
  int th = threads;
  if (flops < 2e5) th = 1;
  for (size_t pc = 0; pc < K; pc += KC) {
    g.pc = pc;
    g.kc = K - pc < KC ? K - pc : KC;
    ge_parallel_for(th, g.n_apanels, pack_a, &g);
    for (size_t jc = 0; jc < N; jc += NC) {
      g.jc = jc;
      g.nc = N - jc < NC ? N - jc : NC;
      g.n_bpanels = (g.nc + NR - 1) / NR;
      g.n_ntasks = (g.n_bpanels + NB_PANELS - 1) / NB_PANELS;
      ge_parallel_for(th, g.n_bpanels, pack_b, &g);
      ge_parallel_for(th, g.n_mtasks * g.n_ntasks, compute_tasks, &g);
    }
  }
  free(g.Ap);
  free(g.Bp);
  return GE_OK;
}

const char *ge_sgemm_isa(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
#endif
  return "generic";
}

/* ---- double precision ---- */

typedef struct dgemm_job {
  size_t M, N, K;
  double alpha;
  const double *A, *B; /* A: M x K (row stride lda), B: K x N (row stride ldb), untransposed */
  size_t lda, ldb;
  double *C;
  size_t ldc;
} dgemm_job;

GE_GEMM_CLONES
static void dgemm_rows(void *arg, size_t i0, size_t i1) {
  const dgemm_job *g = arg;
  const size_t KB = 128, NB = 512;
  for (size_t jb = 0; jb < g->N; jb += NB) {
    size_t je = g->N - jb < NB ? g->N : jb + NB;
    for (size_t kb = 0; kb < g->K; kb += KB) {
      size_t ke = g->K - kb < KB ? g->K : kb + KB;
      for (size_t i = i0; i < i1; i++) {
        double *c = g->C + i * g->ldc;
        const double *a = g->A + i * g->lda;
        for (size_t k = kb; k < ke; k++) {
          double av = g->alpha * a[k];
          const double *b = g->B + k * g->ldb;
          for (size_t j = jb; j < je; j++) c[j] += av * b[j];
        }
      }
    }
  }
}

static double *dtranspose(const double *src, size_t rows, size_t cols, size_t ld) {
  size_t n;
  if (__builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n ? n : 1, sizeof(double), &n))
    return NULL;
  double *d = malloc(n);
  if (!d) return NULL;
  /* src is rows x cols (stride ld); d is cols x rows */
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) d[c * rows + r] = src[r * ld + c];
  return d;
}

ge_status ge_dgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, double alpha,
                   const double *A, size_t lda, const double *B, size_t ldb, double beta,
                   double *C, size_t ldc, int threads) {
  if (M == 0 || N == 0) return GE_OK;
  if (ldc < N || (K > 0 && lda < (trans_a ? M : K)) || (K > 0 && ldb < (trans_b ? K : N)))
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "ge_dgemm: leading dimension too small (M=%zu N=%zu K=%zu lda=%zu ldb=%zu ldc=%zu)",
                    M, N, K, lda, ldb, ldc);
  for (size_t i = 0; i < M; i++) {
    double *c = C + i * ldc;
    if (beta == 0.0)
      for (size_t j = 0; j < N; j++) c[j] = 0.0;
    else if (beta != 1.0)
      for (size_t j = 0; j < N; j++) c[j] *= beta;
  }
  if (K == 0 || alpha == 0.0) return GE_OK;
  double *at = NULL, *bt = NULL;
  if (trans_a) {
    at = dtranspose(A, K, M, lda);
    if (!at) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_dgemm: cannot allocate %zu x %zu", K, M);
    A = at;
    lda = K;
  }
  if (trans_b) {
    bt = dtranspose(B, N, K, ldb);
    if (!bt) {
      free(at);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_dgemm: cannot allocate %zu x %zu", N, K);
    }
    B = bt;
    ldb = N;
  }
  dgemm_job g = {M, N, K, alpha, A, B, lda, ldb, C, ldc};
  double flops = 2.0 * (double)M * (double)N * (double)K;
  ge_parallel_for(flops < 2e5 ? 1 : threads, M, dgemm_rows, &g);
  free(at);
  free(bt);
  return GE_OK;
}
