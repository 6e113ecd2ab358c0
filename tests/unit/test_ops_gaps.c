/* Tests of the coverage fixes made outside the text/random families: Mod with fmod=0 on
 * floats (numpy.mod), ai.onnx opsets below 7 (legacy broadcast refused loudly, PRelu's
 * per-channel slope, BatchNormalization-6), and the misc family: SwiGLU, TensorScatter,
 * AffineGrid. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

static void test_mod_fmod0_float(void **unused) {
  (void)unused;
  int64_t d[] = {8};
  const float inf = INFINITY;
  ge_tensor *a = ge_test_tensor_f32(d, 1, (float[]){-4.5f, 7.5f, 0.0f, -0.0f, -3, 1, 5, 1});
  ge_tensor *b = ge_test_tensor_f32(d, 1, (float[]){2, -2, -2, 2, inf, -inf, 0, NAN});
  ge_tensor *in[] = {a, b}, *out = NULL;
  run_ok("Mod", 13, NULL, 0, in, 2, &out, 1);
  const float *y = out->data;
  const float want[] = {1.5f, -0.5f, -0.0f, 0.0f, inf, -inf};
  for (int i = 0; i < 6; i++) {
    assert_true(y[i] == want[i]);
    assert_int_equal(signbit(y[i]) != 0, signbit(want[i]) != 0);
  }
  assert_true(isnan(y[6]) && isnan(y[7]));
  ge_tensor_free(out);
  /* fmod=1 keeps C fmod */
  ge_attr f1[] = {GE_ATTR_INT("fmod", 1)};
  run_ok("Mod", 13, f1, 1, in, 2, &out, 1);
  assert_true(((float *)out->data)[0] == -0.5f && ((float *)out->data)[1] == 1.5f);
  ge_tensor_free(out);
  ge_tensor_free(a);
  ge_tensor_free(b);
}

static void test_legacy_broadcast(void **unused) {
  (void)unused;
  int64_t da[] = {2, 3, 3}, db[] = {3};
  ge_tensor *a = ge_test_tensor_f32(da, 3, NULL), *b = ge_test_tensor_f32(db, 1, (float[]){1, 2, 3});
  ge_tensor *in[] = {a, b}, *out = NULL;
  /* axis 1 of a rank-3 tensor for a rank-1 operand is not numpy alignment: refused */
  ge_attr ax1[] = {GE_ATTR_INT("broadcast", 1), GE_ATTR_INT("axis", 1)};
  assert_int_equal(ge_test_run_node("Add", 6, ax1, 2, in, 2, &out, 1), GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  assert_null(out);
  /* trailing alignment (axis 2, or no axis) is numpy broadcasting */
  ge_attr ax2[] = {GE_ATTR_INT("broadcast", 1), GE_ATTR_INT("axis", 2)};
  run_ok("Add", 6, ax2, 2, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_F32, da, 3);
  for (size_t i = 0; i < 18; i++) assert_true(((float *)out->data)[i] == (float)(i % 3 + 1));
  ge_tensor_free(out);
  ge_tensor_free(a);
  ge_tensor_free(b);
}

static void test_prelu_opset6(void **unused) {
  (void)unused;
  int64_t dx[] = {1, 2, 3}, ds[] = {2};
  ge_tensor *x = ge_test_tensor_f32(dx, 3, (float[]){-1, -2, 3, -4, 5, -6});
  ge_tensor *s = ge_test_tensor_f32(ds, 1, (float[]){0.5f, 0.25f});
  ge_tensor *in[] = {x, s}, *out = NULL;
  run_ok("PRelu", 6, NULL, 0, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_F32, dx, 3);
  ge_test_assert_close(out, (float[]){-0.5f, -1, 3, -1, 5, -1.5f}, 6, 0, 0);
  ge_tensor_free(out);
  /* from opset 7 the same shapes are numpy broadcasting, which fails loudly */
  assert_int_not_equal(ge_test_run_node("PRelu", 7, NULL, 0, in, 2, &out, 1), GE_OK);
  ge_tensor_free(x);
  ge_tensor_free(s);
}

static void test_batchnorm_opset6(void **unused) {
  (void)unused;
  int64_t dx[] = {1, 2, 1, 2}, dc[] = {2};
  ge_tensor *x = ge_test_tensor_f32(dx, 4, (float[]){1, 2, 3, 4});
  ge_tensor *sc = ge_test_tensor_f32(dc, 1, (float[]){1, 2});
  ge_tensor *bi = ge_test_tensor_f32(dc, 1, (float[]){0, 1});
  ge_tensor *mu = ge_test_tensor_f32(dc, 1, (float[]){1, 3});
  ge_tensor *va = ge_test_tensor_f32(dc, 1, (float[]){1, 4});
  ge_tensor *in[] = {x, sc, bi, mu, va}, *out = NULL;
  ge_attr a[] = {GE_ATTR_INT("is_test", 1), GE_ATTR_FLOAT("epsilon", 0.0f)};
  run_ok("BatchNormalization", 6, a, 2, in, 5, &out, 1);
  ge_test_assert_close(out, (float[]){0, 1, 1, 2}, 4, 1e-5f, 1e-5f);
  ge_tensor_free(out);
  for (int i = 0; i < 5; i++) ge_tensor_free(in[i]);
}

static void test_swiglu(void **unused) {
  (void)unused;
  int64_t d[] = {2, 4};
  ge_tensor *a = ge_test_tensor_f32(d, 2, (float[]){1, -2, 3, 4, -1, 2, -3, 0.5f});
  ge_tensor *b = ge_test_tensor_f32(d, 2, (float[]){0.5f, 1, -1, 2, 2, -1, 0.5f, 1});
  ge_tensor *in[] = {a, b}, *out = NULL;
  run_ok("SwiGLU", 28, NULL, 0, in, 2, &out, 1);
  ge_test_assert_close(out, (float[]){0.3655293f, -0.23840587f, -2.8577223f, 7.85611f, -0.5378828f,
                                      -1.761594f, -0.07113881f, 0.31122968f},
                       8, 1e-6f, 1e-5f);
  ge_tensor_free(out);
  ge_tensor_free(b);
  /* no broadcasting */
  int64_t d1[] = {4};
  b = ge_test_tensor_f32(d1, 1, NULL);
  in[1] = b;
  assert_int_equal(ge_test_run_node("SwiGLU", 28, NULL, 0, in, 2, &out, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(b);
  ge_tensor_free(a);
}

static void test_tensor_scatter(void **unused) {
  (void)unused;
  int64_t dc[] = {2, 3, 1}, du[] = {2, 2, 1}, two = 2;
  ge_tensor *cache = ge_test_tensor_f32(dc, 3, (float[]){1, 2, 3, 4, 5, 6});
  ge_tensor *upd = ge_test_tensor_f32(du, 3, (float[]){10, 11, 20, 21});
  ge_tensor *wi = ge_test_tensor_i64(&two, 1, (int64_t[]){1, 2});
  ge_tensor *in[] = {cache, upd, wi}, *out = NULL;
  /* axis -2 = 1; batch 1 writes at 2 and wraps to 0 */
  ge_attr circ[] = {GE_ATTR_STRING("mode", "circular")};
  run_ok("TensorScatter", 24, circ, 1, in, 3, &out, 1);
  ge_test_assert_close(out, (float[]){1, 10, 11, 21, 5, 20}, 6, 0, 0);
  ge_tensor_free(out);
  /* linear: the same write runs past the end and is an error naming the node */
  assert_int_equal(ge_test_run_node("TensorScatter", 24, NULL, 0, in, 3, &out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  /* no write_indices: from 0 */
  run_ok("TensorScatter", 24, NULL, 0, in, 2, &out, 1);
  ge_test_assert_close(out, (float[]){10, 11, 3, 20, 21, 6}, 6, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(cache);
  ge_tensor_free(upd);
  ge_tensor_free(wi);
}

static void test_affine_grid(void **unused) {
  (void)unused;
  int64_t dt[] = {1, 2, 3}, four = 4;
  ge_tensor *theta = ge_test_tensor_f32(dt, 3, (float[]){1, 0, 0, 0, 2, 1});
  ge_tensor *size = ge_test_tensor_i64(&four, 1, (int64_t[]){1, 1, 2, 2});
  ge_tensor *in[] = {theta, size}, *out = NULL;
  /* align_corners 0: x, y in {-0.5, 0.5}; output (x, 2y + 1) */
  run_ok("AffineGrid", 20, NULL, 0, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1, 2, 2, 2}, 4);
  ge_test_assert_close(out, (float[]){-0.5f, 0, 0.5f, 0, -0.5f, 2, 0.5f, 2}, 8, 1e-6f, 0);
  ge_tensor_free(out);
  ge_attr al[] = {GE_ATTR_INT("align_corners", 1)};
  run_ok("AffineGrid", 20, al, 1, in, 2, &out, 1);
  ge_test_assert_close(out, (float[]){-1, -1, 1, -1, -1, 3, 1, 3}, 8, 1e-6f, 0);
  ge_tensor_free(out);
  ge_tensor_free(size);
  /* a 3-D size needs a [N, 3, 4] theta */
  int64_t five = 5;
  size = ge_test_tensor_i64(&five, 1, (int64_t[]){1, 1, 2, 2, 2});
  in[1] = size;
  assert_int_not_equal(ge_test_run_node("AffineGrid", 20, NULL, 0, in, 2, &out, 1), GE_OK);
  ge_tensor_free(size);
  ge_tensor_free(theta);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mod_fmod0_float),
      cmocka_unit_test(test_legacy_broadcast),
      cmocka_unit_test(test_prelu_opset6),
      cmocka_unit_test(test_batchnorm_opset6),
      cmocka_unit_test(test_swiglu),
      cmocka_unit_test(test_tensor_scatter),
      cmocka_unit_test(test_affine_grid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
