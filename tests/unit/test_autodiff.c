/* Gradient (ai.onnx.preview.training) expanded by compiler/autodiff.c: the gradients a session
 * computes are compared with central finite differences of sum(y) on small graphs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ge/ge.h"

typedef void (*build_fn)(ge_graph *g);

static void node(ge_graph *g, const char *op, const char *const *in, size_t n_in, const char *out,
                 const ge_attr *attrs, size_t n_attrs) {
  const char *o[] = {out};
  assert_int_equal(ge_graph_add_node(g, op, out, in, n_in, o, 1, attrs, n_attrs), GE_OK);
}

static void constant(ge_graph *g, const char *name, const float *v, const int64_t *dims, size_t rank) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, dims, rank, &t), GE_OK);
  memcpy(ge_tensor_data(t), v, ge_tensor_numel(t) * sizeof(float));
  assert_int_equal(ge_graph_add_constant(g, name, t), GE_OK);
  ge_tensor_free(t);
}

/* a [2,3], b [3]: broadcasting Mul/Sub/Add/Div, Sigmoid, Tanh, Exp, Sum, ReduceMean, Identity */
static void build_elementwise(ge_graph *g) {
  const char *mul[] = {"a", "b"}, *sig[] = {"b"}, *div[] = {"c", "sb"}, *sub[] = {"d", "a"};
  const char *th[] = {"e"}, *ex[] = {"f"}, *sum[] = {"h", "a", "b"}, *idn[] = {"s"};
  const char *rm[] = {"i", "ax"};
  node(g, "Mul", mul, 2, "c", NULL, 0);
  node(g, "Sigmoid", sig, 1, "sb", NULL, 0);
  node(g, "Div", div, 2, "d", NULL, 0);
  node(g, "Sub", sub, 2, "e", NULL, 0);
  node(g, "Tanh", th, 1, "f", NULL, 0);
  node(g, "Exp", ex, 1, "h", NULL, 0);
  node(g, "Sum", sum, 3, "s", NULL, 0);
  node(g, "Identity", idn, 1, "i", NULL, 0);
  int64_t axd[] = {1};
  int64_t axv[] = {1};
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, axd, 1, &t), GE_OK);
  memcpy(ge_tensor_data(t), axv, sizeof axv);
  assert_int_equal(ge_graph_add_constant(g, "ax", t), GE_OK);
  ge_tensor_free(t);
  ge_attr kd = GE_ATTR_INT("keepdims", 0);
  node(g, "ReduceMean", rm, 2, "y", &kd, 1);
}

/* a [2,3], b [3,4]: MatMul, Relu, Transpose, Gemm, Neg, Reshape, Log, Add, ReduceSum */
static void build_matmul(ge_graph *g) {
  const char *mm[] = {"a", "b"}, *re[] = {"m"}, *tr[] = {"r"}, *ge[] = {"t", "a", "cb"};
  const char *ng[] = {"q"}, *rs[] = {"n", "shp"}, *sq[] = {"rr", "rr"}, *ad[] = {"sq", "one"};
  const char *lg[] = {"p"}, *rsum[] = {"l"};
  node(g, "MatMul", mm, 2, "m", NULL, 0);
  node(g, "Relu", re, 1, "r", NULL, 0);
  node(g, "Transpose", tr, 1, "t", NULL, 0); /* [4,2] */
  float cb[] = {0.5f, -0.25f, 1.0f};
  int64_t cbd[] = {3};
  constant(g, "cb", cb, cbd, 1);
  ge_attr ga[] = {GE_ATTR_FLOAT("alpha", 0.5f), GE_ATTR_FLOAT("beta", 2.0f)};
  node(g, "Gemm", ge, 3, "q", ga, 2); /* [4,2] x [2,3] + [3] -> [4,3] */
  node(g, "Neg", ng, 1, "n", NULL, 0);
  int64_t sd[] = {1};
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, sd, 1, &t), GE_OK);
  *(int64_t *)ge_tensor_data(t) = 12;
  assert_int_equal(ge_graph_add_constant(g, "shp", t), GE_OK);
  ge_tensor_free(t);
  node(g, "Reshape", rs, 2, "rr", NULL, 0);
  node(g, "Mul", sq, 2, "sq", NULL, 0);
  float one = 1.0f;
  constant(g, "one", &one, NULL, 0);
  node(g, "Add", ad, 2, "p", NULL, 0);
  node(g, "Log", lg, 1, "l", NULL, 0);
  node(g, "ReduceSum", rsum, 1, "y", NULL, 0);
}

static ge_graph *make(build_fn build, const int64_t *ad, size_t ar, const int64_t *bd, size_t br,
                      bool with_grad) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("ad", &g), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "a", GE_F32, ad, ar), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "b", GE_F32, bd, br), GE_OK);
  build(g);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  if (with_grad) {
    assert_int_equal(ge_graph_set_opset(g, "ai.onnx.preview.training", 1), GE_OK);
    const char *xs[] = {"a", "b"}, *outs[] = {"da", "db"};
    ge_attr at[] = {GE_ATTR_STRINGS("xs", xs, 2), GE_ATTR_STRING("y", "y")};
    assert_int_equal(ge_graph_add_node(g, "ai.onnx.preview.training::Gradient", "grad", xs, 2, outs, 2, at, 2),
                     GE_OK);
    assert_int_equal(ge_graph_add_output(g, "da"), GE_OK);
    assert_int_equal(ge_graph_add_output(g, "db"), GE_OK);
  }
  return g;
}

static double loss(ge_session *s, ge_tensor *a, ge_tensor *b) {
  ge_tensor *in[] = {a, b}, *out[1] = {NULL};
  assert_int_equal(ge_session_run_graph(s, 1, in, 2, out, 1), GE_OK);
  double sum = 0;
  const float *p = ge_tensor_data(out[0]);
  for (size_t i = 0; i < ge_tensor_numel(out[0]); i++) sum += p[i];
  ge_tensor_free(out[0]);
  return sum;
}

static void check_fd(build_fn build, const int64_t *ad, size_t ar, const int64_t *bd, size_t br) {
  ge_session *sf = NULL, *sg = NULL;
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  assert_int_equal(ge_session_create(NULL, 0, &sf), GE_OK);
  assert_int_equal(ge_session_create(NULL, 0, &sg), GE_OK);
  ge_graph *gf = make(build, ad, ar, bd, br, false), *gg = make(build, ad, ar, bd, br, true);
  assert_int_equal(ge_session_add_graph(sf, 1, gf), GE_OK);
  ge_status st = ge_session_add_graph(sg, 1, gg);
  if (st != GE_OK) fail_msg("%s", ge_last_error());
  ge_graph_free(gf);
  ge_graph_free(gg);
  ge_tensor *x[2] = {NULL, NULL};
  assert_int_equal(ge_tensor_create(GE_F32, ad, ar, &x[0]), GE_OK);
  assert_int_equal(ge_tensor_create(GE_F32, bd, br, &x[1]), GE_OK);
  for (int k = 0; k < 2; k++) {
    float *p = ge_tensor_data(x[k]);
    for (size_t i = 0; i < ge_tensor_numel(x[k]); i++) p[i] = 0.3f + 0.17f * (float)i * (k ? -1.0f : 1.0f) + 0.1f * (float)k;
  }
  ge_tensor *out[3] = {NULL, NULL, NULL};
  st = ge_session_run_graph(sg, 1, x, 2, out, 3);
  if (st != GE_OK) fail_msg("%s", ge_last_error());
  for (int k = 0; k < 2; k++) {
    assert_int_equal(ge_tensor_numel(out[1 + k]), ge_tensor_numel(x[k]));
    float *p = ge_tensor_data(x[k]);
    const float *gp = ge_tensor_data(out[1 + k]);
    for (size_t i = 0; i < ge_tensor_numel(x[k]); i++) {
      const float h = 1e-2f, v = p[i];
      p[i] = v + h;
      double lp = loss(sf, x[0], x[1]);
      p[i] = v - h;
      double lm = loss(sf, x[0], x[1]);
      p[i] = v;
      double fd = (lp - lm) / (2.0 * h);
      if (fabs(fd - gp[i]) > 2e-2 * (1.0 + fabs(fd)))
        fail_msg("d y / d %s[%zu]: autodiff %g, finite differences %g", k ? "b" : "a", i, gp[i], fd);
    }
  }
  for (int k = 0; k < 3; k++) ge_tensor_free(out[k]);
  ge_tensor_free(x[0]);
  ge_tensor_free(x[1]);
  ge_session_free(sf);
  ge_session_free(sg);
}

static void test_elementwise_broadcast(void **unused) {
  (void)unused;
  int64_t ad[] = {2, 3}, bd[] = {3};
  check_fd(build_elementwise, ad, 2, bd, 1);
}

static void test_matmul_gemm(void **unused) {
  (void)unused;
  int64_t ad[] = {2, 3}, bd[] = {3, 4};
  check_fd(build_matmul, ad, 2, bd, 2);
}

/* y does not depend on b: its gradient is zeros of b's shape */
static void build_only_a(ge_graph *g) {
  const char *in[] = {"a", "a"};
  node(g, "Mul", in, 2, "y", NULL, 0);
}

static void test_independent_input(void **unused) {
  (void)unused;
  int64_t ad[] = {2}, bd[] = {2, 2};
  check_fd(build_only_a, ad, 1, bd, 2);
}

static void build_sin(ge_graph *g) {
  const char *in[] = {"a"}, *in2[] = {"s", "b"};
  node(g, "Sin", in, 1, "s", NULL, 0);
  node(g, "Add", in2, 2, "y", NULL, 0);
}

static void test_unsupported_op(void **unused) {
  (void)unused;
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  int64_t d[] = {2};
  ge_graph *g = make(build_sin, d, 1, d, 1, true);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_ERR_UNSUPPORTED);
  const char *msg = ge_last_error();
  assert_non_null(strstr(msg, "Sin"));
  assert_non_null(strstr(msg, "Gradient"));
  ge_graph_free(g);
  ge_session_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elementwise_broadcast),
      cmocka_unit_test(test_matmul_gemm),
      cmocka_unit_test(test_independent_input),
      cmocka_unit_test(test_unsupported_op),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ge_finalize();
  return rc;
}
