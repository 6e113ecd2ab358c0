/* fast/amx.c, the bf16 GEMM on AMX: against a double-precision reference of the same
 * bf16-rounded operands, on shapes around its 32 x 32 blocks and 16-row tiles (tails in M, K
 * and N), both block orders (panel by panel, row block by row block), A and C stored float32 or
 * bf16, a bias, a residual (bf16, float32, C's own buffer), the activations, B transposed with
 * alpha, at 1-3 threads; and through the kernel (fast/pgemm.c) as a bf16 MatMul / Gemm node.
 * Skipped where the processor or the OS has no AMX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include "backend/cpu/fast/fast_amx.h"
#include "backend/cpu/threadpool.h"
#include "helpers/test_common.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "ir/ir.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float rnd(void) { return ge_test_rand_unit(&rng); }

static float bf(float x) { return ge_bf16_to_f32_inline(ge_f32_to_bf16_inline(x)); }

static void *xalloc(size_t bytes) {
  void *p = ge_aligned_alloc(bytes ? bytes : 64);
  assert_non_null(p);
  return p;
}

/* `bytes` that end where an unreadable page begins: a read past them faults (the kernel reads A
   in place, in tiles of 16 rows, which ASan does not see) */
typedef struct guarded {
  void *base;
  size_t len;
} guarded;
static void *guarded_alloc(size_t bytes, guarded *g) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
  g->len = body + page;
  g->base = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(g->base != MAP_FAILED);
  assert_int_equal(mprotect((char *)g->base + body, page, PROT_NONE), 0);
  return (char *)g->base + body - bytes;
}

typedef struct amx_case {
  size_t M, K, N;
  bool trans, a16, c16, bias, sum, sum16, sum_in_c;
  float alpha;
  ge_fused_act act;
  float p0, p1;
} amx_case;

static double act_ref(ge_fused_act act, float p0, float p1, double v) {
  float f = (float)v;
  ge_fo_act_inplace(act, p0, p1, &f, 1); /* the element-wise definition, scalar */
  return f;
}

static void run_case(const amx_case *c) {
  const size_t M = c->M, K = c->K, N = c->N;
  float *A = xalloc(M * K * sizeof(float)), *B = xalloc(K * N * sizeof(float)), *bias = xalloc(N * sizeof(float));
  float *S = xalloc(M * N * sizeof(float));
  guarded ga;
  uint16_t *A16 = guarded_alloc(M * K * sizeof(uint16_t), &ga), *S16 = xalloc(M * N * sizeof(uint16_t));
  for (size_t i = 0; i < M * K; i++) {
    A[i] = rnd();
    A16[i] = ge_f32_to_bf16_inline(A[i]);
  }
  for (size_t i = 0; i < K * N; i++) B[i] = rnd() * 0.25f; /* [K,N], or [N,K] with trans */
  for (size_t i = 0; i < N; i++) bias[i] = rnd();
  for (size_t i = 0; i < M * N; i++) {
    S[i] = rnd();
    S16[i] = ge_f32_to_bf16_inline(S[i]);
  }
  /* the reference: bf16-rounded operands (alpha applied before B's rounding, as the packing
     does), products and sums in double */
  double *R = xalloc(M * N * sizeof(double)), *mag = xalloc(M * N * sizeof(double));
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double s = 0, m = 0;
      for (size_t k = 0; k < K; k++) {
        double a = bf(A[i * K + k]), b = bf((c->trans ? B[j * K + k] : B[k * N + j]) * c->alpha);
        s += a * b;
        m += fabs(a * b);
      }
      if (c->bias) s += bias[j];
      if (c->sum) s += c->sum16 ? bf(S[i * N + j]) : S[i * N + j];
      R[i * N + j] = act_ref(c->act, c->p0, c->p1, s);
      mag[i * N + j] = m + fabs(s);
    }
  uint16_t *bp = xalloc(ge_amx_packed_elems(K, N) * sizeof(uint16_t));
  ge_amx_pack(B, K, N, c->trans, c->alpha, bp);
  for (int threads = 1; threads <= 3; threads++) {
    /* the scratch that a converted A goes to holds NaN: its padding must be written as zeros */
    size_t sn = (M + 32) * (K + 32) * sizeof(uint16_t);
    void *scratch = ge_cpu_thread_scratch(sn);
    assert_non_null(scratch);
    memset(scratch, 0xff, sn);
    void *C = xalloc(M * N * sizeof(float));
    const void *sum = NULL;
    if (c->sum && c->sum_in_c) { /* the residual in C's buffer, as a FusedConv may have it */
      memcpy(C, c->sum16 ? (void *)S16 : (void *)S, M * N * (c->sum16 ? 2 : 4));
      sum = C;
    } else if (c->sum) {
      sum = c->sum16 ? (void *)S16 : (void *)S;
    } else {
      memset(C, 0xff, M * N * sizeof(float)); /* NaN everywhere: every element must be written */
    }
    ge_amx_gemm g = {.M = M, .K = K, .N = N, .bp = bp, .a = c->a16 ? (void *)A16 : (void *)A, .a16 = c->a16,
                     .c = C, .c16 = c->c16, .bias = c->bias ? bias : NULL, .sum = sum, .sum16 = c->sum16,
                     .act = c->act, .p0 = c->p0, .p1 = c->p1};
    assert_true(ge_amx_run(&g, threads));
    for (size_t i = 0; i < M * N; i++) {
      double got = c->c16 ? ge_bf16_to_f32_inline(((uint16_t *)C)[i]) : ((float *)C)[i];
      /* float32 accumulation of K bf16 products; a bf16 output rounds once more */
      double tol = 2e-6 * mag[i] + 1e-6 + (c->c16 ? fabs(R[i]) / 256.0 : 0.0);
      if (!(fabs(got - R[i]) <= tol))
        fail_msg("M %zu K %zu N %zu (a16 %d c16 %d bias %d sum %d/%d act %d) threads %d: C[%zu, %zu] = %.7g, want %.7g",
                 M, K, N, c->a16, c->c16, c->bias, c->sum, c->sum16, (int)c->act, threads, i / N, i % N, got, R[i]);
    }
    ge_aligned_free(C);
  }
  ge_aligned_free(bp);
  ge_aligned_free(A);
  ge_aligned_free(B);
  ge_aligned_free(bias);
  ge_aligned_free(S);
  munmap(ga.base, ga.len);
  ge_aligned_free(S16);
  ge_aligned_free(R);
  ge_aligned_free(mag);
}

static bool amx_or_skip(void) {
  if (ge_amx_usable()) return true;
  fprintf(stderr, "test_amx: no AMX-BF16 here (processor, OS or ONEDNN_MAX_CPU_ISA): skipped\n");
  return false;
}

/* The packed layout: element (k, n) of B where ge_amx_pack's comment says it is. */
static void test_amx_pack(void **unused) {
  (void)unused;
  const size_t K = 70, N = 45, Kp = 96, np = 2;
  float *B = xalloc(K * N * sizeof(float));
  for (size_t i = 0; i < K * N; i++) B[i] = (float)i;
  assert_int_equal(ge_amx_packed_elems(K, N), np * 32 * Kp);
  uint16_t *bp = xalloc(ge_amx_packed_elems(K, N) * sizeof(uint16_t));
  ge_amx_pack(B, K, N, false, 1.f, bp);
  for (size_t p = 0; p < np; p++)
    for (size_t k = 0; k < Kp; k++)
      for (size_t j = 0; j < 32; j++) {
        size_t n = p * 32 + j;
        uint16_t want = k < K && n < N ? ge_f32_to_bf16_inline(B[k * N + n]) : 0;
        uint16_t got = bp[p * Kp * 32 + (k / 32) * 1024 + (j / 16) * 512 + (k % 32) / 2 * 32 + (j % 16) * 2 + (k & 1)];
        if (got != want) fail_msg("B[%zu, %zu]: packed 0x%04x, want 0x%04x", k, n, got, want);
      }
  ge_aligned_free(bp);
  ge_aligned_free(B);
}

static void test_amx_shapes(void **unused) {
  (void)unused;
  if (!amx_or_skip()) return;
  /* tails around the 32-row blocks and 16-row tiles, K steps, 32-column panels */
  static const size_t Ms[] = {1, 15, 16, 17, 33, 64, 100}, Ks[] = {16, 31, 32, 65, 768}, Ns[] = {16, 17, 32, 33, 100};
  for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
    for (size_t b = 0; b < sizeof Ks / sizeof *Ks; b++)
      for (size_t n = 0; n < sizeof Ns / sizeof *Ns; n++) {
        amx_case c = {.M = Ms[a], .K = Ks[b], .N = Ns[n], .alpha = 1.f, .a16 = (a + b) % 2 == 1, .c16 = (a + n) % 3 == 1,
                      .bias = (b + n) % 2 == 0};
        run_case(&c);
      }
  /* row block by row block (B small, many rows), with an in-place and a separate residual */
  run_case(&(amx_case){.M = 300, .K = 64, .N = 40, .alpha = 1.f, .a16 = true, .c16 = true, .bias = true,
                       .sum = true, .sum16 = true, .sum_in_c = true, .act = GE_ACT_RELU});
  run_case(&(amx_case){.M = 333, .K = 96, .N = 64, .alpha = 1.f, .bias = true, .sum = true, .act = GE_ACT_RELU});
  run_case(&(amx_case){.M = 200, .K = 32, .N = 32, .alpha = 1.f, .a16 = true, .sum = true, .sum_in_c = true});
  /* row block by row block at 2 and 3 threads only (as many row blocks as panels, B at most
     twice the activations), with residuals and an activation */
  run_case(&(amx_case){.M = 200, .K = 768, .N = 200, .alpha = 1.f, .a16 = true, .c16 = true, .bias = true,
                       .sum = true, .sum16 = true, .sum_in_c = true, .act = GE_ACT_CLIP, .p0 = 0.f, .p1 = 6.f});
  run_case(&(amx_case){.M = 230, .K = 1024, .N = 300, .alpha = 1.f, .bias = true, .sum = true, .act = GE_ACT_RELU});
  /* panel by panel with many panels (claims of whole panels at 1-3 threads) and a long K */
  run_case(&(amx_case){.M = 128, .K = 768, .N = 1000, .alpha = 1.f, .a16 = true, .c16 = true, .bias = true,
                       .act = GE_ACT_GELU});
  run_case(&(amx_case){.M = 50, .K = 3072, .N = 200, .alpha = 1.f, .bias = true});
}

static void test_amx_epilogue(void **unused) {
  (void)unused;
  if (!amx_or_skip()) return;
  const struct {
    ge_fused_act act;
    float p0, p1;
  } acts[] = {{GE_ACT_RELU, 0, 0},         {GE_ACT_GELU, 0, 0},           {GE_ACT_GELU_TANH, 0, 0},
              {GE_ACT_TANH, 0, 0},         {GE_ACT_SIGMOID, 0, 0},        {GE_ACT_LEAKY_RELU, 0.1f, 0},
              {GE_ACT_CLIP, -0.5f, 0.75f}, {GE_ACT_HARD_SIGMOID, 0.2f, 0.5f}, {GE_ACT_HARD_SWISH, 0, 0}};
  for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
    if (!ge_fo_act_supported(acts[i].act)) continue;
    run_case(&(amx_case){.M = 37, .K = 48, .N = 50, .alpha = 1.f, .bias = true, .c16 = i % 2 == 1,
                         .act = acts[i].act, .p0 = acts[i].p0, .p1 = acts[i].p1});
  }
  /* Gemm's transB and alpha, folded into the packing */
  run_case(&(amx_case){.M = 45, .K = 70, .N = 81, .trans = true, .alpha = 0.5f, .bias = true});
  run_case(&(amx_case){.M = 64, .K = 64, .N = 64, .trans = true, .alpha = -2.f, .a16 = true, .sum = true});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_amx_pack),
      cmocka_unit_test(test_amx_shapes),
      cmocka_unit_test(test_amx_epilogue),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
