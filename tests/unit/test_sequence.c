/* Sequences and optionals: the public value API, sequence/optional ops run through a session,
 * sequence and optional graph inputs/outputs, Identity on sequences, SequenceMap. */
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

/* Declares input `name` as a sequence (or optional) of dtype dt. */
static void set_kind(ge_graph *g, const char *name, ge_type_kind kind, bool elem_is_seq) {
  int32_t id = ge_graph_find_value(g, name);
  assert_true(id >= 0);
  g->values[id].type.kind = kind;
  g->values[id].type.elem_is_seq = elem_is_seq;
  ge_shape_set_unknown(&g->values[id].type.shape);
}

/* ------------------------------------------------------------------ public API */

static void test_value_api(void **state) {
  (void)state;
  int64_t d[] = {2};
  ge_tensor *seq = NULL, *a = ge_test_tensor_f32(d, 1, (float[]){1, 2});
  GE_TEST_OK(ge_sequence_create(GE_F32, &seq));
  assert_int_equal(ge_tensor_kind(seq), GE_KIND_SEQUENCE);
  assert_int_equal(ge_tensor_kind(a), GE_KIND_TENSOR);
  GE_TEST_OK(ge_sequence_append(seq, a));
  GE_TEST_OK(ge_sequence_append(seq, a));
  assert_int_equal(ge_sequence_length(seq), 2);
  ge_test_assert_close(ge_sequence_at(seq, 1), (float[]){1, 2}, 2, 0, 0);
  assert_null(ge_sequence_at(seq, 2));
  ge_tensor *bad = ge_test_tensor_i64(NULL, 0, (int64_t[]){1});
  assert_int_equal(ge_sequence_append(seq, bad), GE_ERR_INVALID_ARGUMENT);

  ge_tensor *opt = NULL, *empty = NULL, *c = NULL;
  GE_TEST_OK(ge_optional_create(GE_F32, seq, &opt));
  assert_int_equal(ge_tensor_kind(opt), GE_KIND_OPTIONAL);
  assert_int_equal(ge_sequence_length(ge_optional_value(opt)), 2);
  GE_TEST_OK(ge_optional_create(GE_I64, NULL, &empty));
  assert_null(ge_optional_value(empty));
  assert_int_equal(ge_value_elem_dtype(empty), GE_I64);
  GE_TEST_OK(ge_value_clone(opt, &c));
  assert_int_equal(ge_sequence_length(ge_optional_value(c)), 2);
  ge_tensor_free(c);
  ge_tensor_free(opt);
  ge_tensor_free(empty);
  ge_tensor_free(seq);
  ge_tensor_free(a);
  ge_tensor_free(bad);
}

/* ------------------------------------------------------------------ sequence ops */

/* x [3,2] -> SplitToSequence (3 items [1,2]) -> insert a tensor at the front, erase the last,
   length, At(-1), ConcatFromSequence (axis 0) and new_axis stacking; the sequence is also a
   graph output. */
static void test_sequence_ops(void **state) {
  (void)state;
  ge_graph *g = NULL;
  GE_TEST_OK(ge_graph_create("g", &g));
  int64_t d32[] = {3, 2}, d12[] = {1, 2};
  GE_TEST_OK(ge_graph_add_input(g, "x", GE_F32, d32, 2));
  GE_TEST_OK(ge_graph_add_input(g, "t", GE_F32, d12, 2));
  ge_test_add_node(g, "SplitToSequence", "split", (const char *[]){"x"}, 1, (const char *[]){"s"}, 1, NULL, 0);
  ge_tensor *zero = ge_test_tensor_i64(NULL, 0, (int64_t[]){0});
  ge_tensor *minus1 = ge_test_tensor_i64(NULL, 0, (int64_t[]){-1});
  GE_TEST_OK(ge_graph_add_constant(g, "zero", zero));
  GE_TEST_OK(ge_graph_add_constant(g, "minus1", minus1));
  ge_test_add_node(g, "SequenceInsert", "ins", (const char *[]){"s", "t", "zero"}, 3, (const char *[]){"s2"}, 1, NULL, 0);
  ge_test_add_node(g, "SequenceErase", "erase", (const char *[]){"s2"}, 1, (const char *[]){"s3"}, 1, NULL, 0);
  ge_test_add_node(g, "SequenceLength", "len", (const char *[]){"s3"}, 1, (const char *[]){"n"}, 1, NULL, 0);
  ge_test_add_node(g, "SequenceAt", "at", (const char *[]){"s3", "minus1"}, 2, (const char *[]){"last"}, 1, NULL, 0);
  ge_test_add_node(g, "ConcatFromSequence", "cat", (const char *[]){"s3"}, 1, (const char *[]){"c"}, 1, NULL, 0);
  ge_attr na[] = {GE_ATTR_INT("axis", -1), GE_ATTR_INT("new_axis", 1)};
  ge_test_add_node(g, "ConcatFromSequence", "stack", (const char *[]){"s3"}, 1, (const char *[]){"st"}, 1, na, 2);
  const char *outs[] = {"s3", "n", "last", "c", "st"};
  for (size_t i = 0; i < N_(outs); i++) GE_TEST_OK(ge_graph_add_output(g, outs[i]));
  ge_tensor *x = ge_test_tensor_f32(d32, 2, (float[]){1, 2, 3, 4, 5, 6});
  ge_tensor *t = ge_test_tensor_f32(d12, 2, (float[]){9, 9});
  ge_tensor *in[] = {x, t}, *out[5] = {0};
  GE_TEST_OK(ge_test_run_graph(g, in, 2, out, 5));
  assert_int_equal(ge_tensor_kind(out[0]), GE_KIND_SEQUENCE);
  assert_int_equal(ge_sequence_length(out[0]), 3);
  ge_test_assert_close(ge_sequence_at(out[0], 0), (float[]){9, 9}, 2, 0, 0);
  ge_test_assert_ints(out[1], (int64_t[]){3}, 1);
  ge_test_assert_close(out[2], (float[]){3, 4}, 2, 0, 0);
  ge_test_assert_shape(out[3], GE_F32, (int64_t[]){3, 2}, 2);
  ge_test_assert_close(out[3], (float[]){9, 9, 1, 2, 3, 4}, 6, 0, 0);
  ge_test_assert_shape(out[4], GE_F32, (int64_t[]){1, 2, 3}, 3);
  ge_test_assert_close(out[4], (float[]){9, 1, 3, 9, 2, 4}, 6, 0, 0);
  for (size_t i = 0; i < 5; i++) ge_tensor_free(out[i]);
  ge_tensor_free(x);
  ge_tensor_free(t);
  ge_tensor_free(zero);
  ge_tensor_free(minus1);
}

/* A sequence graph input passed through Identity and SequenceMap (body: Add with an outer
   value), and a bad position failing at run time. */
static void test_sequence_input_map(void **state) {
  (void)state;
  ge_graph *body = NULL, *g = NULL;
  GE_TEST_OK(ge_graph_create("body", &body));
  GE_TEST_OK(ge_graph_add_input(body, "e", GE_F32, (int64_t[]){-1}, 1));
  ge_test_add_node(body, "Add", "add", (const char *[]){"e", "k"}, 2, (const char *[]){"r"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(body, "r"));
  GE_TEST_OK(ge_graph_create("g", &g));
  GE_TEST_OK(ge_graph_add_input(g, "s", GE_F32, NULL, 0));
  GE_TEST_OK(ge_graph_add_input(g, "k", GE_F32, NULL, 0));
  set_kind(g, "s", GE_TYPE_SEQUENCE, false);
  ge_test_add_node(g, "Identity", "id", (const char *[]){"s"}, 1, (const char *[]){"s_copy"}, 1, NULL, 0);
  ge_attr a = GE_ATTR_GRAPH("body", body);
  ge_test_add_node(g, "SequenceMap", "map", (const char *[]){"s"}, 1, (const char *[]){"m"}, 1, &a, 1);
  GE_TEST_OK(ge_graph_add_output(g, "s_copy"));
  GE_TEST_OK(ge_graph_add_output(g, "m"));
  ge_graph_free(body);

  ge_tensor *seq = NULL;
  GE_TEST_OK(ge_sequence_create(GE_F32, &seq));
  ge_tensor *a1 = ge_test_tensor_f32((int64_t[]){1}, 1, (float[]){1});
  ge_tensor *a3 = ge_test_tensor_f32((int64_t[]){3}, 1, (float[]){1, 2, 3});
  GE_TEST_OK(ge_sequence_append(seq, a1));
  GE_TEST_OK(ge_sequence_append(seq, a3));
  ge_tensor *k = ge_test_tensor_f32(NULL, 0, (float[]){10});
  ge_tensor *in[] = {seq, k}, *out[2] = {0};
  GE_TEST_OK(ge_test_run_graph(g, in, 2, out, 2));
  assert_int_equal(ge_sequence_length(out[0]), 2);
  ge_test_assert_close(ge_sequence_at(out[0], 1), (float[]){1, 2, 3}, 3, 0, 0);
  assert_int_equal(ge_sequence_length(out[1]), 2);
  ge_test_assert_close(ge_sequence_at(out[1], 0), (float[]){11}, 1, 0, 0);
  ge_test_assert_close(ge_sequence_at(out[1], 1), (float[]){11, 12, 13}, 3, 0, 0);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);

  /* a tensor where the graph takes a sequence: refused, naming the input */
  ge_tensor *in2[] = {a1, k};
  GE_TEST_OK(ge_graph_create("g2", &g));
  GE_TEST_OK(ge_graph_add_input(g, "s", GE_F32, NULL, 0));
  set_kind(g, "s", GE_TYPE_SEQUENCE, false);
  ge_test_add_node(g, "SequenceLength", "len", (const char *[]){"s"}, 1, (const char *[]){"n"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(g, "n"));
  assert_int_equal(ge_test_run_graph(g, in2, 1, out, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "'s'"));
  ge_tensor_free(seq);
  ge_tensor_free(a1);
  ge_tensor_free(a3);
  ge_tensor_free(k);
}

/* ------------------------------------------------------------------ optionals */

static ge_graph *optional_graph(void) {
  ge_graph *g = NULL;
  GE_TEST_OK(ge_graph_create("g", &g));
  GE_TEST_OK(ge_graph_add_input(g, "o", GE_F32, NULL, 0));
  set_kind(g, "o", GE_TYPE_OPTIONAL, false);
  ge_test_add_node(g, "OptionalHasElement", "has", (const char *[]){"o"}, 1, (const char *[]){"h"}, 1, NULL, 0);
  ge_test_add_node(g, "Identity", "id", (const char *[]){"o"}, 1, (const char *[]){"o2"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(g, "h"));
  GE_TEST_OK(ge_graph_add_output(g, "o2"));
  return g;
}

static void test_optionals(void **state) {
  (void)state;
  ge_tensor *empty = NULL, *out[2] = {0};
  GE_TEST_OK(ge_optional_create(GE_F32, NULL, &empty));
  GE_TEST_OK(ge_test_run_graph(optional_graph(), &empty, 1, out, 2));
  ge_test_assert_ints(out[0], (int64_t[]){0}, 1);
  assert_int_equal(ge_tensor_kind(out[1]), GE_KIND_OPTIONAL);
  assert_null(ge_optional_value(out[1]));
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);

  /* a plain tensor fed to an optional input holds it */
  ge_tensor *x = ge_test_tensor_f32((int64_t[]){2}, 1, (float[]){4, 5});
  GE_TEST_OK(ge_test_run_graph(optional_graph(), &x, 1, out, 2));
  ge_test_assert_ints(out[0], (int64_t[]){1}, 1);
  ge_test_assert_close(ge_optional_value(out[1]), (float[]){4, 5}, 2, 0, 0);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);

  /* Optional(x) -> OptionalGetElement; OptionalGetElement of an empty optional fails */
  ge_graph *g = NULL;
  GE_TEST_OK(ge_graph_create("g", &g));
  GE_TEST_OK(ge_graph_add_input(g, "x", GE_F32, (int64_t[]){2}, 1));
  ge_test_add_node(g, "Optional", "opt", (const char *[]){"x"}, 1, (const char *[]){"o"}, 1, NULL, 0);
  ge_test_add_node(g, "OptionalGetElement", "get", (const char *[]){"o"}, 1, (const char *[]){"y"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(g, "y"));
  GE_TEST_OK(ge_test_run_graph(g, &x, 1, out, 1));
  ge_test_assert_close(out[0], (float[]){4, 5}, 2, 0, 0);
  ge_tensor_free(out[0]);

  GE_TEST_OK(ge_graph_create("g", &g));
  GE_TEST_OK(ge_graph_add_input(g, "o", GE_F32, NULL, 0));
  set_kind(g, "o", GE_TYPE_OPTIONAL, false);
  ge_test_add_node(g, "OptionalGetElement", "get", (const char *[]){"o"}, 1, (const char *[]){"y"}, 1, NULL, 0);
  GE_TEST_OK(ge_graph_add_output(g, "y"));
  assert_int_equal(ge_test_run_graph(g, &empty, 1, out, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "empty"));
  assert_null(out[0]);
  ge_tensor_free(empty);
  ge_tensor_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_api),
      cmocka_unit_test(test_sequence_ops),
      cmocka_unit_test(test_sequence_input_map),
      cmocka_unit_test(test_optionals),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
}
