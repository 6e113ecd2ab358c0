/* Tests of the signal family: DFT (radix-2, Bluestein and direct lengths against a naive
 * double DFT written here; inverse; onesided; irfft), STFT, windows, MelWeightMatrix. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static uint64_t rng_state = 0x13198a2e03707344ull;
static double rndd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)((rng_state >> 11) % 20001) / 10000.0 - 1.0;
}

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

/* naive DFT of n complex values (interleaved), sign -1 forward */
static void naive_dft(const double *x, size_t n, double sign, double *y) {
  for (size_t k = 0; k < n; k++) {
    double sr = 0, si = 0;
    for (size_t j = 0; j < n; j++) {
      double a = sign * 2 * M_PI * (double)((k * j) % n) / (double)n;
      sr += x[2 * j] * cos(a) - x[2 * j + 1] * sin(a);
      si += x[2 * j] * sin(a) + x[2 * j + 1] * cos(a);
    }
    y[2 * k] = sr;
    y[2 * k + 1] = si;
  }
}

static void test_dft_lengths(void **unused) {
  (void)unused;
  const size_t lens[] = {1, 2, 7, 12, 64, 37, 100, 257};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    size_t n = lens[li];
    double *x = malloc(2 * n * sizeof *x), *want = malloc(2 * n * sizeof *want);
    for (size_t i = 0; i < 2 * n; i++) x[i] = rndd();
    naive_dft(x, n, -1, want);
    ge_tensor *in[3] = {ge_test_tensor_f64((int64_t[]){1, (int64_t)n, 2}, 3, x), NULL, NULL};
    ge_tensor *out = NULL;
    run_ok("DFT", 20, NULL, 0, in, 1, &out, 1); /* axis -2 by default */
    ge_test_assert_close_f64(out, want, 2 * n, 1e-9 * (double)n, 1e-9);
    ge_tensor_free(out);
    /* inverse gives back x */
    ge_tensor *fy = ge_test_tensor_f64((int64_t[]){1, (int64_t)n, 2}, 3, want);
    ge_attr inv = GE_ATTR_INT("inverse", 1);
    ge_tensor *in2[1] = {fy};
    run_ok("DFT", 17, &inv, 1, in2, 1, &out, 1);
    ge_test_assert_close_f64(out, x, 2 * n, 1e-9, 1e-9);
    ge_tensor_free(out);
    ge_tensor_free(fy);
    ge_tensor_free(in[0]);
    free(x);
    free(want);
  }
}

static void test_dft_real_onesided_axis(void **unused) {
  (void)unused;
  /* real input [2, 5, 3, 1], DFT over axis 1 with dft_length 8 (zero padded), onesided */
  float x[30];
  for (int i = 0; i < 30; i++) x[i] = (float)rndd();
  ge_tensor *in[3] = {ge_test_tensor_f32((int64_t[]){2, 5, 3, 1}, 4, x),
                      ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){8}),
                      ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){1})};
  ge_attr os = GE_ATTR_INT("onesided", 1);
  ge_tensor *out = NULL;
  run_ok("DFT", 20, &os, 1, in, 3, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 5, 3, 2}, 4);
  float want[60];
  for (int b = 0; b < 2; b++)
    for (int c = 0; c < 3; c++) {
      double line[16] = {0}, y[16];
      for (int k = 0; k < 5; k++) line[2 * k] = x[(b * 5 + k) * 3 + c];
      naive_dft(line, 8, -1, y);
      for (int k = 0; k < 5; k++) {
        want[((b * 5 + k) * 3 + c) * 2] = (float)y[2 * k];
        want[((b * 5 + k) * 3 + c) * 2 + 1] = (float)y[2 * k + 1];
      }
    }
  ge_test_assert_close(out, want, 60, 1e-5f, 1e-5f);
  ge_tensor_free(out);
  /* irfft of that one-sided spectrum (dft_length 8) gives back the zero-padded signal */
  ge_tensor *spec = ge_test_tensor_f32((int64_t[]){2, 5, 3, 2}, 4, want);
  ge_attr ia[] = {GE_ATTR_INT("onesided", 1), GE_ATTR_INT("inverse", 1)};
  ge_tensor *in2[3] = {spec, in[1], in[2]};
  run_ok("DFT", 20, ia, 2, in2, 3, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 8, 3, 1}, 4);
  float back[48] = {0};
  for (int b = 0; b < 2; b++)
    for (int k = 0; k < 5; k++)
      for (int c = 0; c < 3; c++) back[(b * 8 + k) * 3 + c] = x[(b * 5 + k) * 3 + c];
  ge_test_assert_close(out, back, 48, 1e-5f, 1e-5f);
  ge_tensor_free(out);
  ge_tensor_free(spec);
  /* the complex dim is not a valid axis */
  ge_tensor *bad_axis = ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){-1});
  ge_tensor *in3[3] = {in[0], NULL, bad_axis};
  assert_int_not_equal(ge_test_run_node("DFT", 20, NULL, 0, in3, 3, &out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(bad_axis);
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
}

static void test_stft(void **unused) {
  (void)unused;
  enum { L = 20, FL = 6, STEP = 4 };
  double x[L], win[FL];
  for (int i = 0; i < L; i++) x[i] = rndd();
  for (int i = 0; i < FL; i++) win[i] = 0.5 - 0.5 * cos(2 * M_PI * i / FL);
  ge_tensor *in[4] = {ge_test_tensor_f64((int64_t[]){1, L, 1}, 3, x),
                      ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){STEP}),
                      ge_test_tensor_f64((int64_t[]){FL}, 1, win),
                      ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){FL})};
  ge_tensor *out = NULL;
  run_ok("STFT", 17, NULL, 0, in, 4, &out, 1);
  int frames = 1 + (L - FL) / STEP, bins = FL / 2 + 1;
  ge_test_assert_shape(out, GE_F64, (int64_t[]){1, frames, bins, 2}, 4);
  double want[1 * 4 * 4 * 2];
  for (int f = 0; f < frames; f++) {
    double line[2 * FL] = {0}, y[2 * FL];
    for (int k = 0; k < FL; k++) line[2 * k] = x[f * STEP + k] * win[k];
    naive_dft(line, FL, -1, y);
    memcpy(want + f * bins * 2, y, sizeof(double) * 2 * bins);
  }
  ge_test_assert_close_f64(out, want, (size_t)(frames * bins * 2), 1e-12, 1e-9);
  ge_tensor_free(out);
  for (int i = 0; i < 4; i++) ge_tensor_free(in[i]);
}

static void test_windows_mel(void **unused) {
  (void)unused;
  ge_tensor *n4 = ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){4});
  ge_tensor *out = NULL;
  run_ok("HannWindow", 17, NULL, 0, &n4, 1, &out, 1);
  ge_test_assert_close(out, (float[]){0, 0.5f, 1, 0.5f}, 4, 1e-7f, 1e-6f);
  ge_tensor_free(out);
  ge_attr sym[] = {GE_ATTR_INT("periodic", 0), GE_ATTR_INT("output_datatype", 11 /* double */)};
  run_ok("HammingWindow", 17, sym, 2, &n4, 1, &out, 1);
  double a0 = 25.0 / 46.0, a1 = 1 - a0;
  ge_test_assert_shape(out, GE_F64, (int64_t[]){4}, 1);
  ge_test_assert_close_f64(out, (double[]){a0 - a1, a0 - a1 * cos(2 * M_PI / 3), a0 - a1 * cos(4 * M_PI / 3), a0 - a1},
                           4, 1e-12, 1e-12);
  ge_tensor_free(out);
  run_ok("BlackmanWindow", 17, NULL, 0, &n4, 1, &out, 1);
  ge_test_assert_close(out, (float[]){0, 0.34f, 1, 0.34f}, 4, 1e-6f, 1e-5f);
  ge_tensor_free(out);
  ge_tensor_free(n4);
  /* MelWeightMatrix: shape and each filter a triangle with peak 1 */
  ge_tensor *m[5] = {ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){8}),
                     ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){16}),
                     ge_test_tensor_i64((int64_t[]){0}, 0, (int64_t[]){8192}),
                     ge_test_tensor_f32((int64_t[]){0}, 0, (float[]){0}),
                     ge_test_tensor_f32((int64_t[]){0}, 0, (float[]){8192 / 2})};
  run_ok("MelWeightMatrix", 17, NULL, 0, m, 5, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){9, 8}, 2);
  const float *v = out->data;
  for (int i = 0; i < 8; i++) {
    float mx = 0;
    for (int j = 0; j < 9; j++) mx = v[j * 8 + i] > mx ? v[j * 8 + i] : mx;
    assert_true(fabsf(mx - 1.0f) < 1e-6f);
  }
  ge_tensor_free(out);
  for (int i = 0; i < 5; i++) ge_tensor_free(m[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dft_lengths), cmocka_unit_test(test_dft_real_onesided_axis),
      cmocka_unit_test(test_stft),        cmocka_unit_test(test_windows_mel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
