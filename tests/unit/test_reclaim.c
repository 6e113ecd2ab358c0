/* Reclaimable weights: a model loaded from a file keeps its large weights backed by the file;
 * once oneDNN has packed a weight that nothing else reads, its bytes are dropped from memory,
 * and read back whenever someone needs them again (a recompile for a new input shape, another
 * session, ge_graph_save). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ge/ge.h"
#include "ir/ir.h"

#define K 256
#define N 512 /* K * N floats = 512 KiB: large enough to get a backing */

static float wval(int w, size_t i) { return (float)((int)((i * 2654435761u + (unsigned)w * 97u) % 1999u) - 999) / 1000.f; }

static ge_tensor *weight(int w) {
  int64_t d[2] = {K, N};
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, d, 2, &t), GE_OK);
  float *p = ge_tensor_data(t);
  for (size_t i = 0; i < (size_t)K * N; i++) p[i] = wval(w, i);
  return t;
}

/* Y1 = X @ W1 (W1 read only by the MatMul: packed, then dropped);
   Y2 = X @ W2 + ReduceSum(W2 * ReduceSum(X)) (W2 also read at run time by Mul: stays
   resident). */
static char *make_model(void) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("reclaim", &g), GE_OK);
  int64_t xd[2] = {-1, K};
  assert_int_equal(ge_graph_add_input(g, "X", GE_F32, xd, 2), GE_OK);
  ge_tensor *w1 = weight(1), *w2 = weight(2);
  assert_int_equal(ge_graph_add_constant(g, "W1", w1), GE_OK);
  assert_int_equal(ge_graph_add_constant(g, "W2", w2), GE_OK);
  ge_tensor_free(w1);
  ge_tensor_free(w2);
  const char *in1[] = {"X", "W1"}, *out1[] = {"Y1"};
  assert_int_equal(ge_graph_add_node(g, "MatMul", "mm1", in1, 2, out1, 1, NULL, 0), GE_OK);
  const char *in2[] = {"X", "W2"}, *out2[] = {"P2"};
  assert_int_equal(ge_graph_add_node(g, "MatMul", "mm2", in2, 2, out2, 1, NULL, 0), GE_OK);
  ge_attr kd = {.name = "keepdims", .kind = GE_ATTR_KIND_INT, .v = {.i = 0}};
  const char *in5[] = {"X"}, *out5[] = {"XS"};
  assert_int_equal(ge_graph_add_node(g, "ReduceSum", "rx", in5, 1, out5, 1, &kd, 1), GE_OK);
  const char *in6[] = {"W2", "XS"}, *out6[] = {"M2"};
  assert_int_equal(ge_graph_add_node(g, "Mul", "mul", in6, 2, out6, 1, NULL, 0), GE_OK);
  const char *in3[] = {"M2"}, *out3[] = {"S2"};
  assert_int_equal(ge_graph_add_node(g, "ReduceSum", "rs", in3, 1, out3, 1, &kd, 1), GE_OK);
  const char *in4[] = {"P2", "S2"}, *out4[] = {"Y2"};
  assert_int_equal(ge_graph_add_node(g, "Add", "add", in4, 2, out4, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "Y1"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "Y2"), GE_OK);
  char *path = strdup("/tmp/ge_reclaim_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(ge_graph_save(g, path), GE_OK);
  ge_graph_free(g);
  return path;
}

static const ge_tensor *find_const(const ge_graph *g, const char *name) {
  for (size_t i = 0; i < g->n_values; i++)
    if (g->values[i].constant && !strcmp(g->values[i].name, name)) return g->values[i].constant;
  return NULL;
}

static void run_and_check(ge_session *s, int64_t rows) {
  int64_t d[2] = {rows, K};
  ge_tensor *x = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, d, 2, &x), GE_OK);
  float *xp = ge_tensor_data(x);
  for (int64_t i = 0; i < rows * K; i++) xp[i] = (float)((i * 7) % 13) / 13.f - 0.5f;
  ge_tensor *out[2] = {NULL, NULL};
  ge_status rst = ge_session_run_graph(s, 0, &x, 1, out, 2);
  if (rst != GE_OK) fprintf(stderr, "run: %s\n", ge_last_error());
  assert_int_equal(rst, GE_OK);
  double s2 = 0, xs = 0;
  for (size_t i = 0; i < (size_t)K * N; i++) s2 += wval(2, i);
  for (int64_t i = 0; i < rows * K; i++) xs += xp[i];
  s2 *= xs;
  for (int w = 1; w <= 2; w++) {
    const float *y = ge_tensor_data(out[w - 1]);
    assert_int_equal(ge_tensor_numel(out[w - 1]), (size_t)(rows * N));
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < N; c += 37) {
        double ref = w == 2 ? s2 : 0;
        for (int64_t k = 0; k < K; k++) ref += (double)xp[r * K + k] * wval(w, (size_t)(k * N + c));
        assert_true(fabs(y[r * N + c] - ref) < 1e-2 * (1 + fabs(ref)));
      }
    ge_tensor_free(out[w - 1]);
  }
  ge_tensor_free(x);
}

static void test_reclaim(void **state) {
  (void)state;
  char *path = make_model();
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_load(path, NULL, 0, &g), GE_OK);
  const ge_tensor *w1 = find_const(g, "W1"), *w2 = find_const(g, "W2");
  assert_non_null(w1);
  assert_non_null(w2);
  assert_true(ge_tensor_has_backing(w1));
  assert_true(ge_tensor_has_backing(w2));
  assert_false(ge_tensor_is_evicted(w1));

  ge_session *s1 = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s1), GE_OK);
  ge_status ast = ge_session_add_graph(s1, 0, g);
  if (ast != GE_OK) fprintf(stderr, "add: %s\n", ge_last_error());
  assert_int_equal(ast, GE_OK);
  run_and_check(s1, 2);
  assert_true(ge_tensor_is_evicted(w1));  /* packed by oneDNN, read by no one else */
  assert_false(ge_tensor_is_evicted(w2)); /* ReduceSum reads it at run time */
  /* a new input shape: compiled and packed again from the weights read back */
  run_and_check(s1, 3);
  assert_true(ge_tensor_is_evicted(w1));
  run_and_check(s1, 2);

  /* the graph still saves its real weights */
  char *path2 = strdup("/tmp/ge_reclaim2_XXXXXX");
  int fd = mkstemp(path2);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(ge_graph_save(g, path2), GE_OK);
  ge_graph *g2 = NULL;
  assert_int_equal(ge_graph_load(path2, NULL, 0, &g2), GE_OK);
  const ge_tensor *c = find_const(g2, "W1");
  assert_non_null(c);
  for (size_t i = 0; i < (size_t)K * N; i++) assert_true(((const float *)c->data)[i] == wval(1, i));
  ge_graph_free(g2);

  /* a second session on the same graph (opt level 0: plain kernels may read W1 at run time) */
  ge_option o = {"ge.graphOptimizationLevel", "0"};
  ge_session *s2 = NULL;
  assert_int_equal(ge_session_create(&o, 1, &s2), GE_OK);
  assert_int_equal(ge_session_add_graph(s2, 0, g), GE_OK);
  ge_graph_free(g); /* the sessions keep the weights */
  run_and_check(s2, 4);
  run_and_check(s1, 5);
  ge_session_free(s1);
  run_and_check(s2, 1);
  ge_session_free(s2);
  unlink(path);
  unlink(path2);
  free(path);
  free(path2);
}

/* A model loaded from memory has no backing: nothing is ever dropped. */
static void test_no_backing_from_memory(void **state) {
  (void)state;
  char *path = make_model();
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc((size_t)n);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_load_buffer(buf, (size_t)n, NULL, &g), GE_OK);
  free(buf);
  assert_false(ge_tensor_has_backing(find_const(g, "W1")));
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 0, g), GE_OK);
  run_and_check(s, 2);
  assert_false(ge_tensor_is_evicted(find_const(g, "W1")));
  ge_session_free(s);
  ge_graph_free(g);
  unlink(path);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reclaim),
      cmocka_unit_test(test_no_backing_from_memory),
  };
  if (ge_initialize(NULL, 0) != GE_OK) return 1;
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ge_finalize();
  return rc;
}
