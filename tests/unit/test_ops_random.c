/* Tests of the random family: RandomNormal, RandomUniform, RandomNormalLike,
 * RandomUniformLike, Bernoulli, Multinomial; the numpy-compatible MT19937 behind them; and
 * Dropout in training mode, which draws from it.
 *
 * The reference numbers are numpy.random.RandomState(seed) draws (numpy 2.x, legacy
 * generator), so a seeded first run reproduces numpy exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/cpu/ref/random.h"
#include "helpers/ops_harness.h"

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

/* ------------------------------------------------------------------ generator */

static void test_mt19937_matches_numpy(void **unused) {
  (void)unused;
  ge_mt19937 m;
  ge_mt_seed(&m, 0);
  assert_int_equal(ge_mt_u32(&m), 2357136044u);
  assert_int_equal(ge_mt_u32(&m), 2546248239u);
  ge_mt_seed(&m, 0);
  const double u[] = {0.5488135, 0.71518937, 0.60276338, 0.54488318};
  for (int i = 0; i < 4; i++) assert_true(fabs(ge_mt_double(&m) - u[i]) < 1e-7);
  ge_mt_seed(&m, 42);
  const double g[] = {0.49671415, -0.1382643, 0.64768854, 1.52302986, -0.23415337};
  for (int i = 0; i < 5; i++) assert_true(fabs(ge_mt_gauss(&m) - g[i]) < 1e-7);
  /* run seeds: the first run of a seeded kernel uses the seed itself, later ones differ */
  assert_int_equal(ge_random_run_seed(true, 7.0f, 0, 0), 7u);
  assert_int_not_equal(ge_random_run_seed(true, 7.0f, 0, 1), 7u);
  assert_int_not_equal(ge_random_run_seed(false, 0, 1, 0), ge_random_run_seed(false, 0, 1, 1));
}

/* ------------------------------------------------------------------ ops */

static void test_random_normal_uniform(void **unused) {
  (void)unused;
  int64_t shape[] = {2, 3};
  ge_tensor *out = NULL;
  /* RandomUniform seed 7, [2, 5): numpy RandomState(7).rand(2, 3) * 3 + 2 */
  ge_attr ua[] = {GE_ATTR_INTS("shape", shape, 2), GE_ATTR_FLOAT("low", 2.0f),
                  GE_ATTR_FLOAT("high", 5.0f), GE_ATTR_FLOAT("seed", 7.0f)};
  run_ok("RandomUniform", 22, ua, 4, NULL, 0, &out, 1);
  ge_test_assert_shape(out, GE_F32, shape, 2);
  ge_test_assert_close(out, (float[]){2.2289248f, 4.3397565f, 3.3152277f, 4.1703954f, 4.9339685f,
                                      3.6154876f},
                       6, 1e-6f, 1e-6f);
  ge_tensor_free(out);
  /* RandomNormal seed 42, mean 1, scale 2, double */
  ge_attr na[] = {GE_ATTR_INTS("shape", shape, 2), GE_ATTR_FLOAT("mean", 1.0f),
                  GE_ATTR_FLOAT("scale", 2.0f), GE_ATTR_FLOAT("seed", 42.0f),
                  GE_ATTR_INT("dtype", 11)};
  run_ok("RandomNormal", 22, na, 5, NULL, 0, &out, 1);
  ge_test_assert_shape(out, GE_F64, shape, 2);
  const double g[] = {0.49671415, -0.1382643, 0.64768854, 1.52302986, -0.23415337};
  for (int i = 0; i < 5; i++) assert_true(fabs(((double *)out->data)[i] - (1.0 + 2.0 * g[i])) < 1e-6);
  ge_tensor_free(out);
  /* unseeded: right shape/dtype, values in range, two kernels differ */
  ge_attr ub[] = {GE_ATTR_INTS("shape", shape, 2), GE_ATTR_INT("dtype", 10)};
  ge_tensor *o2 = NULL;
  run_ok("RandomUniform", 22, ub, 2, NULL, 0, &out, 1);
  run_ok("RandomUniform", 22, ub, 2, NULL, 0, &o2, 1);
  ge_test_assert_shape(out, GE_F16, shape, 2);
  bool differ = false;
  for (size_t i = 0; i < 6; i++) {
    double v = ge_tensor_get_f64(out, i);
    assert_true(v >= 0.0 && v <= 1.0);
    differ |= v != ge_tensor_get_f64(o2, i);
  }
  assert_true(differ);
  ge_tensor_free(out);
  ge_tensor_free(o2);
  /* shape is required; a bad dtype is refused */
  assert_int_not_equal(ge_test_run_node("RandomNormal", 22, NULL, 0, NULL, 0, &out, 1), GE_OK);
  assert_null(out);
  ge_attr bad[] = {GE_ATTR_INTS("shape", shape, 2), GE_ATTR_INT("dtype", 6)};
  assert_int_equal(ge_test_run_node("RandomNormal", 22, bad, 2, NULL, 0, &out, 1),
                   GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "test_node"));
}

static void test_random_like(void **unused) {
  (void)unused;
  int64_t d[] = {3, 1, 2};
  ge_tensor *x = ge_test_tensor_from_f32(GE_F64, d, 3, NULL);
  ge_tensor *out = NULL;
  ge_attr a[] = {GE_ATTR_FLOAT("seed", 0.0f)};
  run_ok("RandomUniformLike", 22, a, 1, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_F64, d, 3);
  assert_true(fabs(((double *)out->data)[0] - 0.5488135) < 1e-7);
  ge_tensor_free(out);
  ge_attr b[] = {GE_ATTR_INT("dtype", 1)};
  run_ok("RandomNormalLike", 22, b, 1, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, d, 3);
  for (size_t i = 0; i < 6; i++) assert_true(isfinite(ge_tensor_get_f64(out, i)));
  ge_tensor_free(out);
  ge_tensor_free(x);
}

static void test_bernoulli(void **unused) {
  (void)unused;
  int64_t d[] = {8};
  ge_tensor *p = ge_test_tensor_f32(d, 1, (float[]){0, 1, 0, 1, 1, 0, 0, 1});
  ge_tensor *out = NULL;
  run_ok("Bernoulli", 22, NULL, 0, &p, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, d, 1);
  ge_test_assert_close(out, (float[]){0, 1, 0, 1, 1, 0, 0, 1}, 8, 0, 0);
  ge_tensor_free(out);
  ge_attr a[] = {GE_ATTR_INT("dtype", 9), GE_ATTR_FLOAT("seed", 3.0f)};
  run_ok("Bernoulli", 22, a, 2, &p, 1, &out, 1);
  ge_test_assert_shape(out, GE_BOOL, d, 1);
  ge_test_assert_ints(out, (int64_t[]){0, 1, 0, 1, 1, 0, 0, 1}, 8);
  ge_tensor_free(out);
  ge_tensor_free(p);
  /* a probability outside [0, 1] is a run-time error naming the node */
  int64_t one = 1;
  ge_tensor *bad = ge_test_tensor_f32(&one, 1, (float[]){1.5f});
  assert_int_not_equal(ge_test_run_node("Bernoulli", 22, NULL, 0, &bad, 1, &out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(bad);
  /* integer input is refused at inference */
  ge_tensor *ints = ge_test_tensor_i32(&one, 1, (int32_t[]){1});
  assert_int_not_equal(ge_test_run_node("Bernoulli", 22, NULL, 0, &ints, 1, &out, 1), GE_OK);
  ge_tensor_free(ints);
}

static void test_multinomial(void **unused) {
  (void)unused;
  int64_t d[] = {3, 4};
  const float ninf = -INFINITY;
  /* each row has one class with all the mass */
  ge_tensor *x = ge_test_tensor_f32(d, 2, (float[]){0, ninf, ninf, ninf, ninf, ninf, 5, ninf,
                                                    ninf, ninf, ninf, -1});
  ge_tensor *out = NULL;
  ge_attr a[] = {GE_ATTR_INT("sample_size", 5), GE_ATTR_FLOAT("seed", 1.0f)};
  run_ok("Multinomial", 22, a, 2, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_I32, (int64_t[]){3, 5}, 2);
  ge_test_assert_ints(out, (int64_t[]){0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3}, 15);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* uniform logits over 4 classes: 4000 draws land roughly evenly, int64 output */
  int64_t d1[] = {1, 4};
  x = ge_test_tensor_f32(d1, 2, (float[]){0.5f, 0.5f, 0.5f, 0.5f});
  ge_attr b[] = {GE_ATTR_INT("sample_size", 4000), GE_ATTR_INT("dtype", 7)};
  run_ok("Multinomial", 22, b, 2, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_I64, (int64_t[]){1, 4000}, 2);
  int counts[4] = {0};
  for (size_t i = 0; i < 4000; i++) {
    int64_t c = ((int64_t *)out->data)[i];
    assert_true(c >= 0 && c < 4);
    counts[c]++;
  }
  for (int c = 0; c < 4; c++) assert_true(counts[c] > 850 && counts[c] < 1150);
  ge_tensor_free(out);
  ge_tensor_free(x);
}

/* Dropout in training mode (nn family) draws its mask from the same generator: the onnx
   backend test's numbers (numpy seed 0, ratio 0.75). */
static void test_dropout_training(void **unused) {
  (void)unused;
  int64_t d[] = {4};
  int64_t none = 0;
  ge_tensor *x = ge_test_tensor_f32(d, 1, (float[]){1, 2, 3, 4});
  ge_tensor *r = ge_test_tensor_f32(&none, 0, (float[]){0.5f});
  ge_tensor *t = ge_test_tensor_bool(&none, 0, (bool[]){true});
  ge_tensor *in[] = {x, r, t};
  ge_tensor *out[2] = {NULL, NULL};
  ge_attr a[] = {GE_ATTR_INT("seed", 0)};
  run_ok("Dropout", 22, a, 1, in, 3, out, 2);
  /* numpy RandomState(0).uniform(size=4) = .549 .715 .603 .545: all >= 0.5, kept, scaled 2 */
  ge_test_assert_close(out[0], (float[]){2, 4, 6, 8}, 4, 0, 0);
  ge_test_assert_ints(out[1], (int64_t[]){1, 1, 1, 1}, 4);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  ge_tensor_free(r);
  r = ge_test_tensor_f32(&none, 0, (float[]){0.6f});
  in[1] = r;
  run_ok("Dropout", 22, a, 1, in, 3, out, 2);
  ge_test_assert_close(out[0], (float[]){0, 2 / 0.4f, 3 / 0.4f, 0}, 4, 1e-6f, 1e-6f);
  ge_test_assert_ints(out[1], (int64_t[]){0, 1, 1, 0}, 4);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  ge_tensor_free(x);
  ge_tensor_free(r);
  ge_tensor_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mt19937_matches_numpy),
      cmocka_unit_test(test_random_normal_uniform),
      cmocka_unit_test(test_random_like),
      cmocka_unit_test(test_bernoulli),
      cmocka_unit_test(test_multinomial),
      cmocka_unit_test(test_dropout_training),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
