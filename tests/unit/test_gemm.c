/* ge_sgemm: correctness against a naive triple loop, and a GFLOP/s print (no time asserts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/threadpool.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static float rnd(void) { return (float)((rng_next() >> 40) / (double)(1 << 24)) * 2.0f - 1.0f; }
static size_t rnd_size(size_t lo, size_t hi) { return lo + (size_t)(rng_next() % (hi - lo + 1)); }

static void naive(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A,
                  size_t lda, const float *B, size_t ldb, float beta, double *C, size_t ldc) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double s = 0;
      for (size_t k = 0; k < K; k++) {
        double a = ta ? A[k * lda + i] : A[i * lda + k];
        double b = tb ? B[j * ldb + k] : B[k * ldb + j];
        s += a * b;
      }
      double c0 = beta == 0.0f ? 0.0 : (double)beta * C[i * ldc + j];
      C[i * ldc + j] = alpha * s + c0;
    }
}

static void check_case(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, float beta,
                       size_t pad, int threads) {
  size_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  size_t arows = ta ? K : M, brows = tb ? N : K;
  float *A = malloc((arows * lda + 1) * sizeof(float));
  float *B = malloc((brows * ldb + 1) * sizeof(float));
  float *C = malloc((M * ldc + 1) * sizeof(float));
  double *R = malloc((M * ldc + 1) * sizeof(double));
  assert_non_null(A);
  assert_non_null(B);
  assert_non_null(C);
  assert_non_null(R);
  for (size_t i = 0; i < arows * lda; i++) A[i] = rnd();
  for (size_t i = 0; i < brows * ldb; i++) B[i] = rnd();
  for (size_t i = 0; i < M * ldc; i++) {
    C[i] = beta == 0.0f ? NAN : rnd();
    R[i] = C[i];
  }
  assert_int_equal(ge_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads), GE_OK);
  naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double want = R[i * ldc + j], got = C[i * ldc + j];
      double tol = 1e-4 * (double)(K + 1);
      if (!(fabs(want - got) <= tol)) {
        fprintf(stderr, "mismatch ta=%d tb=%d M=%zu N=%zu K=%zu alpha=%g beta=%g at (%zu,%zu): %g vs %g\n",
                ta, tb, M, N, K, alpha, beta, i, j, got, want);
        fail();
      }
    }
  /* padding columns untouched */
  for (size_t i = 0; i < M; i++)
    for (size_t j = N; j < ldc; j++)
      if (!(C[i * ldc + j] == (float)R[i * ldc + j] || (isnan(C[i * ldc + j]) && isnan(R[i * ldc + j])))) fail();
  free(A);
  free(B);
  free(C);
  free(R);
}

static void test_gemm_small_exact(void **state) {
  (void)state;
  float A[6] = {1, 2, 3, 4, 5, 6};       /* 2x3 */
  float B[6] = {7, 8, 9, 10, 11, 12};    /* 3x2 */
  float C[4] = {1, 1, 1, 1};
  assert_int_equal(ge_sgemm(false, false, 2, 2, 3, 1.0f, A, 3, B, 2, 2.0f, C, 2, 1), GE_OK);
  assert_true(C[0] == 60.0f && C[1] == 66.0f && C[2] == 141.0f && C[3] == 156.0f);
}

static void test_gemm_random(void **state) {
  (void)state;
  static const float alphas[] = {1.0f, 0.5f, -2.0f};
  static const float betas[] = {0.0f, 1.0f, 0.25f};
  for (int it = 0; it < 60; it++) {
    bool ta = it & 1, tb = (it >> 1) & 1;
    size_t M = rnd_size(1, 300), N = rnd_size(1, 300), K = rnd_size(1, 300);
    size_t pad = (it % 3 == 0) ? rnd_size(1, 9) : 0;
    check_case(ta, tb, M, N, K, alphas[it % 3], betas[(it / 3) % 3], pad, 1 + it % 3);
  }
}

static void test_gemm_edges(void **state) {
  (void)state;
  check_case(false, false, 1, 1, 1, 1.0f, 0.0f, 0, 1);
  check_case(false, true, 6, 32, 256, 1.0f, 1.0f, 0, 2);
  check_case(true, false, 7, 33, 257, 1.0f, 0.0f, 3, 2);
  check_case(false, false, 13, 4100, 5, 1.0f, 0.0f, 0, 2); /* N > NC */
  check_case(true, true, 97, 3, 600, -1.0f, 0.5f, 1, 2);
  /* K = 0: C = beta * C */
  float C[2] = {3, 4};
  assert_int_equal(ge_sgemm(false, false, 1, 2, 0, 1.0f, NULL, 1, NULL, 2, 0.5f, C, 2, 1), GE_OK);
  assert_true(C[0] == 1.5f && C[1] == 2.0f);
  /* bad leading dimension */
  float A[4] = {0}, B[4] = {0};
  assert_int_equal(ge_sgemm(false, false, 2, 2, 2, 1.0f, A, 1, B, 2, 0.0f, C, 2, 1),
                   GE_ERR_INVALID_ARGUMENT);
}


static void test_dgemm_random(void **state) {
  (void)state;
  for (int it = 0; it < 16; it++) {
    bool ta = it & 1, tb = (it >> 1) & 1;
    size_t M = rnd_size(1, 70), N = rnd_size(1, 600), K = rnd_size(1, 300), pad = it % 2;
    size_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    size_t arows = ta ? K : M, brows = tb ? N : K;
    double *A = malloc(arows * lda * sizeof(double)), *B = malloc(brows * ldb * sizeof(double));
    double *C = malloc(M * ldc * sizeof(double)), *R = malloc(M * ldc * sizeof(double));
    assert_true(A && B && C && R);
    for (size_t i = 0; i < arows * lda; i++) A[i] = rnd();
    for (size_t i = 0; i < brows * ldb; i++) B[i] = rnd();
    for (size_t i = 0; i < M * ldc; i++) C[i] = R[i] = rnd();
    double alpha = it % 3 ? 1.0 : -0.5, beta = it % 4 ? 0.25 : 0.0;
    assert_int_equal(ge_dgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1 + it % 2), GE_OK);
    for (size_t i = 0; i < M; i++)
      for (size_t j = 0; j < N; j++) {
        double s = 0;
        for (size_t k = 0; k < K; k++) s += (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
        double want = alpha * s + (beta == 0.0 ? 0.0 : beta * R[i * ldc + j]);
        assert_true(fabs(C[i * ldc + j] - want) <= 1e-12 * (double)(K + 1));
      }
    free(A);
    free(B);
    free(C);
    free(R);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(size_t M, size_t N, size_t K, int threads) {
  float *A = malloc(M * K * sizeof(float)), *B = malloc(K * N * sizeof(float)),
        *C = malloc(M * N * sizeof(float));
  assert_non_null(A);
  assert_non_null(B);
  assert_non_null(C);
  for (size_t i = 0; i < M * K; i++) A[i] = rnd();
  for (size_t i = 0; i < K * N; i++) B[i] = rnd();
  ge_sgemm(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, threads); /* warm up */
  int reps = 0;
  double t0 = now_s(), t;
  do {
    ge_sgemm(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, threads);
    reps++;
    t = now_s() - t0;
  } while (t < 0.3);
  printf("sgemm [%s] %zux%zux%zu threads=%d: %.1f GFLOP/s\n", ge_sgemm_isa(), M, N, K, threads,
         2.0 * M * N * K * reps / t * 1e-9);
  free(A);
  free(B);
  free(C);
}

static void test_gemm_bench(void **state) {
  (void)state;
  bench(512, 512, 512, 1);
  bench(128, 768, 768, 1);
  bench(64, 3136, 576, 1);
  int n = ge_cpu_count();
  if (n > 1) bench(512, 512, 512, n);
}

static void add_range(void *arg, size_t b, size_t e) {
  long *sum = arg;
  long s = 0;
  for (size_t i = b; i < e; i++) s += (long)i;
  __atomic_add_fetch(sum, s, __ATOMIC_RELAXED);
}

static void test_parallel_for(void **state) {
  (void)state;
  for (int th = 0; th <= 5; th++)
    for (size_t n = 0; n < 20; n++) {
      long sum = 0;
      ge_parallel_for(th, n, add_range, &sum);
      assert_int_equal(sum, (long)(n * (n ? n - 1 : 0) / 2));
    }
}

/* ge_parallel_steal: every item once, claims within one unit, `next` an item of [0, n); and
   a share whose owner is slow is finished by the other threads, also its last unit when a
   tail is given. */
typedef struct steal_rec {
  int *runs;          /* per item: times run */
  pthread_t *by;      /* per item: the thread that ran it */
  size_t n, unit;
  int bad;            /* claims that crossed a unit, or a `next` out of range */
  size_t longest;     /* the most items of one claim */
  size_t slow_end;    /* items below this sleep 1 ms each */
} steal_rec;

static void steal_fn(void *arg, size_t b, size_t e, size_t next) {
  steal_rec *r = arg;
  if (b >= e || e > r->n || b / r->unit != (e - 1) / r->unit || (next != SIZE_MAX && next >= r->n))
    __atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
  size_t len = e > b ? e - b : 0, was = __atomic_load_n(&r->longest, __ATOMIC_RELAXED);
  while (len > was && !__atomic_compare_exchange_n(&r->longest, &was, len, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  for (size_t i = b; i < e && i < r->n; i++) {
    __atomic_add_fetch(&r->runs[i], 1, __ATOMIC_RELAXED);
    r->by[i] = pthread_self();
    if (i < r->slow_end) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

static void test_parallel_steal(void **state) {
  (void)state;
  for (int th = 0; th <= 5; th++)
    for (size_t n = 0; n < 40; n += 3)
      for (size_t unit = 0; unit <= 7; unit += 1)
        for (size_t tail = 0; tail <= 8; tail++) { /* tails that do not divide unit count as unit */
          int runs[40] = {0};
          pthread_t by[40];
          steal_rec r = {.runs = runs, .by = by, .n = n, .unit = unit ? unit : 1};
          ge_parallel_steal(th, n, unit, tail, steal_fn, &r);
          assert_int_equal(r.bad, 0);
          for (size_t i = 0; i < n; i++)
            if (runs[i] != 1)
              fail_msg("threads %d, n %zu, unit %zu, tail %zu: item %zu ran %d times", th, n, unit, tail, i, runs[i]);
        }
  assert_int_equal(ge_steal_tail(16, 4), 4);
  assert_int_equal(ge_steal_tail(25, 4), 5);
  assert_int_equal(ge_steal_tail(98, 4), 14);
  assert_int_equal(ge_steal_tail(7, 4), 1);
  assert_int_equal(ge_steal_tail(1, 4), 1);
  assert_int_equal(ge_steal_tail(12, 0), 12);
  /* ge_steal_blocks: whole blocks with a quarter tail from 4 blocks a thread; else quarters of
     a share; one thread: everything at once */
  size_t bt = 99;
  assert_int_equal(ge_steal_blocks(2, 16, 16, &bt), 16);
  assert_int_equal(bt, 4);
  assert_int_equal(ge_steal_blocks(2, 5, 16, &bt), 10);
  assert_int_equal(bt, 0);
  assert_int_equal(ge_steal_blocks(1, 16, 16, &bt), 256);
  assert_int_equal(bt, 0);
  /* two threads, 40 items, the first 20 (the first share) taking 1 ms each: the second
     share's thread, done long before, takes the first share's items from its back, so that
     the two threads end up with about 10 each */
  int runs[40] = {0};
  pthread_t by[40];
  steal_rec r = {.runs = runs, .by = by, .n = 40, .unit = 1, .slow_end = 20};
  ge_parallel_steal(2, 40, 1, 0, steal_fn, &r);
  size_t other = 0;
  for (size_t i = 0; i < 40; i++) assert_int_equal(runs[i], 1);
  for (size_t i = 0; i < 20; i++) other += !pthread_equal(by[i], by[0]);
  if (other < 5) fail_msg("only %zu of the slow share's 20 items went to the other thread", other);
  /* two shares of one unit (8 items) each, the first slow: with tail 2 its owner claims 2 at a
     time and the other thread takes pieces of it from the back; without a tail every claim is
     a whole unit */
  for (int tail = 0; tail <= 2; tail += 2) {
    int runs16[16] = {0};
    pthread_t by16[16];
    steal_rec r16 = {.runs = runs16, .by = by16, .n = 16, .unit = 8, .slow_end = 8};
    ge_parallel_steal(2, 16, 8, (size_t)tail, steal_fn, &r16);
    assert_int_equal(r16.bad, 0);
    size_t moved = 0;
    for (size_t i = 0; i < 16; i++) assert_int_equal(runs16[i], 1);
    for (size_t i = 0; i < 8; i++) moved += !pthread_equal(by16[i], by16[0]);
    if (tail && moved < 2) fail_msg("tail 2: only %zu of the slow unit's 8 items went to the other thread", moved);
    if (!tail) assert_true(r16.longest == 8); /* whole units only */
    if (tail) assert_true(r16.longest <= 2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parallel_for),
      cmocka_unit_test(test_parallel_steal),
      cmocka_unit_test(test_gemm_small_exact),
      cmocka_unit_test(test_gemm_edges),
      cmocka_unit_test(test_gemm_random),
      cmocka_unit_test(test_dgemm_random),
      cmocka_unit_test(test_gemm_bench),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
