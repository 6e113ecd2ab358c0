/* Control flow: If, Loop, Scan with subgraphs reading outer-scope values, built with the
 * public builder API and run through a session; toposort with implicit dependencies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"
#include "helpers/test_common.h"

#define N_(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ If */

/* y = If(c) then (x + k) else (x * k): both branches read x and k from the outer graph, and
   the If node comes before the node producing k in insertion order. */
static ge_graph *if_graph(void) {
  ge_graph *tb = NULL, *eb = NULL, *g = NULL;
  GE_TEST_OK(ge_graph_create("then", &tb));
  ge_test_add_node(tb, "Add", "add", (const char *[]){"x", "k"}, 2, (const char *[]){"t_out"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(tb, "t_out"));
  GE_TEST_OK(ge_graph_create("else", &eb));
  ge_test_add_node(eb, "Mul", "mul", (const char *[]){"x", "k"}, 2, (const char *[]){"e_out"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(eb, "e_out"));
  GE_TEST_OK(ge_graph_create("g", &g));
  int64_t d[] = {3};
  GE_TEST_OK(ge_graph_add_input(g, "c", GE_BOOL, NULL, 0));
  GE_TEST_OK(ge_graph_add_input(g, "x", GE_F32, d, 1));
  ge_attr a[] = {GE_ATTR_GRAPH("then_branch", tb), GE_ATTR_GRAPH("else_branch", eb)};
  ge_test_add_node(g, "If", "if", (const char *[]){"c"}, 1, (const char *[]){"y"}, 1, a, 2);
  ge_test_add_node(g, "Identity", "mk_k", (const char *[]){"x"}, 1, (const char *[]){"k"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(g, "y"));
  ge_graph_free(tb);
  ge_graph_free(eb);
  return g;
}

static void test_if_outer_values(void **state) {
  (void)state;
  int64_t d[] = {3};
  for (int b = 0; b < 2; b++) {
    ge_tensor *c = ge_test_tensor_bool(NULL, 0, (bool[]){b != 0});
    ge_tensor *x = ge_test_tensor_f32(d, 1, (float[]){1, 2, 3});
    ge_tensor *in[] = {c, x}, *y = NULL;
    GE_TEST_OK(ge_test_run_graph(if_graph(), in, 2, &y, 1));
    if (b) ge_test_assert_close(y, (float[]){2, 4, 6}, 3, 0, 0);
    else ge_test_assert_close(y, (float[]){1, 4, 9}, 3, 0, 0);
    ge_tensor_free(y);
    ge_tensor_free(c);
    ge_tensor_free(x);
  }
}

/* Branches of different shapes. */
static void test_if_shapes_differ(void **state) {
  (void)state;
  ge_graph *tb = NULL, *eb = NULL, *g = NULL;
  GE_TEST_OK(ge_graph_create("then", &tb));
  int64_t two[] = {2}, three[] = {3};
  ge_tensor *v2 = ge_test_tensor_f32(two, 1, (float[]){1, 2});
  ge_tensor *v3 = ge_test_tensor_f32(three, 1, (float[]){7, 8, 9});
  ge_attr ta = GE_ATTR_TENSOR("value", v2), ea = GE_ATTR_TENSOR("value", v3);
  ge_test_add_node(tb, "Constant", "c2", NULL, 0, (const char *[]){"a"}, 1, &ta, 1);
  GE_TEST_OK(ge_graph_add_output(tb, "a"));
  GE_TEST_OK(ge_graph_create("else", &eb));
  ge_test_add_node(eb, "Constant", "c3", NULL, 0, (const char *[]){"b"}, 1, &ea, 1);
  GE_TEST_OK(ge_graph_add_output(eb, "b"));
  GE_TEST_OK(ge_graph_create("g", &g));
  GE_TEST_OK(ge_graph_add_input(g, "c", GE_BOOL, NULL, 0));
  ge_attr a[] = {GE_ATTR_GRAPH("then_branch", tb), GE_ATTR_GRAPH("else_branch", eb)};
  ge_test_add_node(g, "If", "if", (const char *[]){"c"}, 1, (const char *[]){"y"}, 1, a, 2);
  GE_TEST_OK(ge_graph_add_output(g, "y"));
  ge_graph_free(tb);
  ge_graph_free(eb);
  ge_tensor *c = ge_test_tensor_bool(NULL, 0, (bool[]){false}), *y = NULL;
  GE_TEST_OK(ge_test_run_graph(g, &c, 1, &y, 1));
  ge_test_assert_shape(y, GE_F32, three, 1);
  ge_test_assert_close(y, (float[]){7, 8, 9}, 3, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(c);
  ge_tensor_free(v2);
  ge_tensor_free(v3);
}

/* ------------------------------------------------------------------ Loop */

/* Loop M times: acc = acc + x (x from the outer graph); carried `grow` gains one element per
   iteration (Concat: a changing shape); scan output: iteration number.  Many iterations
   switch the body to a plan compiled for unknown dims. */
static void check_loop(int64_t M) {
  ge_graph *body = NULL, *g = NULL;
  GE_TEST_OK(ge_graph_create("body", &body));
  GE_TEST_OK(ge_graph_add_input(body, "i", GE_I64, NULL, 0));
  GE_TEST_OK(ge_graph_add_input(body, "cond_in", GE_BOOL, NULL, 0));
  int64_t unk[] = {-1};
  GE_TEST_OK(ge_graph_add_input(body, "acc_in", GE_F32, unk, 1));
  GE_TEST_OK(ge_graph_add_input(body, "grow_in", GE_F32, unk, 1));
  ge_test_add_node(body, "Identity", "cid", (const char *[]){"cond_in"}, 1, (const char *[]){"cond_out"}, 1, NULL, 0);
  ge_test_add_node(body, "Add", "acc", (const char *[]){"acc_in", "x"}, 2, (const char *[]){"acc_out"}, 1, NULL, 0);
  ge_attr ax = GE_ATTR_INT("axis", 0);
  ge_test_add_node(body, "Concat", "cat", (const char *[]){"grow_in", "one"}, 2, (const char *[]){"grow_out"}, 1, &ax, 1);
  ge_test_add_node(body, "Identity", "scan", (const char *[]){"i"}, 1, (const char *[]){"i_out"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(body, "cond_out"));
  GE_TEST_OK(ge_graph_add_output(body, "acc_out"));
  GE_TEST_OK(ge_graph_add_output(body, "grow_out"));
  GE_TEST_OK(ge_graph_add_output(body, "i_out"));

  GE_TEST_OK(ge_graph_create("g", &g));
  int64_t d2[] = {2}, d1[] = {1};
  GE_TEST_OK(ge_graph_add_input(g, "M", GE_I64, NULL, 0));
  GE_TEST_OK(ge_graph_add_input(g, "x", GE_F32, d2, 1));
  ge_tensor *one = ge_test_tensor_f32(d1, 1, (float[]){5});
  ge_tensor *zero2 = ge_test_tensor_f32(d2, 1, (float[]){0, 0});
  GE_TEST_OK(ge_graph_add_constant(g, "one", one));
  GE_TEST_OK(ge_graph_add_constant(g, "acc0", zero2));
  ge_attr a = GE_ATTR_GRAPH("body", body);
  ge_test_add_node(g, "Loop", "loop", (const char *[]){"M", "", "acc0", "one"}, 4,
       (const char *[]){"acc", "grow", "iters"}, 3, &a, 1);
  GE_TEST_OK(ge_graph_add_output(g, "acc"));
  GE_TEST_OK(ge_graph_add_output(g, "grow"));
  GE_TEST_OK(ge_graph_add_output(g, "iters"));
  ge_graph_free(body);

  ge_tensor *m = ge_test_tensor_i64(NULL, 0, (int64_t[]){M});
  ge_tensor *x = ge_test_tensor_f32(d2, 1, (float[]){1, 10});
  ge_tensor *in[] = {m, x}, *out[3] = {0};
  GE_TEST_OK(ge_test_run_graph(g, in, 2, out, 3));
  ge_test_assert_close(out[0], (float[]){(float)M, 10.0f * (float)M}, 2, 0, 0);
  int64_t dg[] = {M + 1}, di[] = {M};
  float fives[64];
  int64_t its[64];
  for (int64_t i = 0; i < 64; i++) {
    fives[i] = 5;
    its[i] = i;
  }
  ge_test_assert_shape(out[1], GE_F32, dg, 1);
  ge_test_assert_close(out[1], fives, (size_t)M + 1, 0, 0);
  ge_test_assert_shape(out[2], GE_I64, di, 1);
  ge_test_assert_ints(out[2], its, (size_t)M);
  for (int i = 0; i < 3; i++) ge_tensor_free(out[i]);
  ge_tensor_free(m);
  ge_tensor_free(x);
  ge_tensor_free(one);
  ge_tensor_free(zero2);
}

static void test_loop(void **state) {
  (void)state;
  check_loop(3);
  check_loop(1);
  check_loop(40);
}

/* ------------------------------------------------------------------ Scan */

/* Scan (opset 9+): running sum over axis 1 of a [2,3] input, read backwards; the scan output
   stacked on axis 1. */
static void test_scan_axes_directions(void **state) {
  (void)state;
  ge_graph *body = NULL, *g = NULL;
  GE_TEST_OK(ge_graph_create("body", &body));
  int64_t d2[] = {2}, d23[] = {2, 3};
  GE_TEST_OK(ge_graph_add_input(body, "s_in", GE_F32, d2, 1));
  GE_TEST_OK(ge_graph_add_input(body, "x_in", GE_F32, d2, 1));
  ge_test_add_node(body, "Add", "add", (const char *[]){"s_in", "x_in"}, 2, (const char *[]){"s_out"}, 1, NULL, 0);
  ge_test_add_node(body, "Identity", "id", (const char *[]){"s_out"}, 1, (const char *[]){"y_out"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(body, "s_out"));
  GE_TEST_OK(ge_graph_add_output(body, "y_out"));
  GE_TEST_OK(ge_graph_create("g", &g));
  GE_TEST_OK(ge_graph_add_input(g, "s0", GE_F32, d2, 1));
  GE_TEST_OK(ge_graph_add_input(g, "x", GE_F32, d23, 2));
  int64_t one[] = {1}, rev[] = {1};
  ge_attr a[] = {GE_ATTR_GRAPH("body", body), GE_ATTR_INT("num_scan_inputs", 1),
                 GE_ATTR_INTS("scan_input_axes", one, 1), GE_ATTR_INTS("scan_input_directions", rev, 1),
                 GE_ATTR_INTS("scan_output_axes", one, 1)};
  ge_test_add_node(g, "Scan", "scan", (const char *[]){"s0", "x"}, 2, (const char *[]){"s", "y"}, 2, a, N_(a));
  GE_TEST_OK(ge_graph_add_output(g, "s"));
  GE_TEST_OK(ge_graph_add_output(g, "y"));
  ge_graph_free(body);
  ge_tensor *s0 = ge_test_tensor_f32(d2, 1, (float[]){0, 100});
  ge_tensor *x = ge_test_tensor_f32(d23, 2, (float[]){1, 2, 3, 4, 5, 6});
  ge_tensor *in[] = {s0, x}, *out[2] = {0};
  GE_TEST_OK(ge_test_run_graph(g, in, 2, out, 2));
  ge_test_assert_close(out[0], (float[]){6, 115}, 2, 0, 0);
  ge_test_assert_shape(out[1], GE_F32, d23, 2);
  /* backwards: 3, 3+2, 3+2+1 | 106, 111, 115 */
  ge_test_assert_close(out[1], (float[]){3, 5, 6, 106, 111, 115}, 6, 0, 0);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  ge_tensor_free(s0);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ toposort */

static void test_toposort_implicit_inputs(void **state) {
  (void)state;
  ge_graph *g = if_graph();
  ge_graph *c = NULL;
  GE_TEST_OK(ge_graph_clone(g, NULL, &c));
  GE_TEST_OK(ge_graph_toposort(c));
  /* mk_k (produces k, read by the branches) must run before the If */
  assert_string_equal(c->nodes[0].name, "mk_k");
  assert_string_equal(c->nodes[1].name, "if");
  ge_graph_free(c);
  ge_graph_free(g);
}

/* A bad cond (not one element) fails at run time with a message naming the node. */
static void test_if_bad_cond(void **state) {
  (void)state;
  int64_t d[] = {3}, d2[] = {2};
  ge_graph *g = if_graph();
  ge_session *s = NULL;
  GE_TEST_OK(ge_session_create(NULL, 0, &s));
  GE_TEST_OK(ge_session_add_graph(s, 1, g));
  ge_graph_free(g);
  ge_tensor *c = ge_test_tensor_bool(d2, 1, (bool[]){true, false});
  ge_tensor *x = ge_test_tensor_f32(d, 1, (float[]){1, 2, 3});
  ge_tensor *in[] = {c, x}, *y = NULL;
  assert_int_not_equal(ge_session_run_graph(s, 1, in, 2, &y, 1), GE_OK);
  assert_null(y);
  ge_session_free(s);
  ge_tensor_free(c);
  ge_tensor_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_if_outer_values),
      cmocka_unit_test(test_if_shapes_differ),
      cmocka_unit_test(test_loop),
      cmocka_unit_test(test_scan_axes_directions),
      cmocka_unit_test(test_toposort_implicit_inputs),
      cmocka_unit_test(test_if_bad_cond),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
}
