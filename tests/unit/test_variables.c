/* Variables, Assign/AssignAdd/AssignSub, get/set_variables, run modes, concurrent writes and
 * safetensors checkpoints (save, load, restore). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ge/ge.h"

static const ge_option train_opts[] = {{"ge.graphRunMode", "1"}};

static ge_tensor *f32_tensor(const float *v, int64_t n) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, &n, 1, &t), GE_OK);
  memcpy(ge_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

/* counter += 1 (output: the new value); w -= 0.5 (output w_new); y = x * w */
static ge_graph *make_graph(const char *op_for_w) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("train", &g), GE_OK);
  int64_t two = 2;
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, &two, 1), GE_OK);
  float z[] = {0}, w0[] = {1, 2}, one[] = {1}, half[] = {0.5f, 0.5f};
  ge_tensor *t = f32_tensor(z, 1);
  assert_int_equal(ge_graph_add_variable(g, "counter", t), GE_OK);
  ge_tensor_free(t);
  t = f32_tensor(w0, 2);
  assert_int_equal(ge_graph_add_variable(g, "w", t), GE_OK);
  ge_tensor_free(t);
  t = f32_tensor(one, 1);
  assert_int_equal(ge_graph_add_constant(g, "one", t), GE_OK);
  ge_tensor_free(t);
  t = f32_tensor(half, 2);
  assert_int_equal(ge_graph_add_constant(g, "half", t), GE_OK);
  ge_tensor_free(t);
  const char *i1[] = {"x", "w"}, *o1[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Mul", "mul", i1, 2, o1, 1, NULL, 0), GE_OK);
  const char *i2[] = {"counter", "one"}, *o2[] = {"counter_new"};
  assert_int_equal(ge_graph_add_node(g, "ai.ge::AssignAdd", "inc", i2, 2, o2, 1, NULL, 0), GE_OK);
  const char *i3[] = {"w", "half"}, *o3[] = {"w_new"};
  assert_int_equal(ge_graph_add_node(g, op_for_w, "upd", i3, 2, o3, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "counter_new"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "w_new"), GE_OK);
  return g;
}

static ge_session *train_session(const char *op_for_w) {
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(train_opts, 1, &s), GE_OK);
  ge_graph *g = make_graph(op_for_w);
  ge_status st = ge_session_add_graph(s, 1, g);
  if (st != GE_OK) fprintf(stderr, "add_graph: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  ge_graph_free(g);
  return s;
}

static void run_once(ge_session *s, float *y, float *counter, float *w_new) {
  float xv[] = {3, 4};
  ge_tensor *x = f32_tensor(xv, 2);
  ge_tensor *outs[3] = {0};
  assert_int_equal(ge_session_run_graph(s, 1, &x, 1, outs, 3), GE_OK);
  const float *yp = ge_tensor_data(outs[0]), *cp = ge_tensor_data(outs[1]),
              *wp = ge_tensor_data(outs[2]);
  if (y) memcpy(y, yp, 2 * sizeof *y);
  if (counter) *counter = cp[0];
  if (w_new) memcpy(w_new, wp, 2 * sizeof *w_new);
  for (int i = 0; i < 3; i++) ge_tensor_free(outs[i]);
  ge_tensor_free(x);
}

static float get_scalar(ge_session *s, const char *name) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_session_get_variables(s, &name, 1, &t), GE_OK);
  float v = ((const float *)ge_tensor_data(t))[0];
  ge_tensor_free(t);
  return v;
}

static void test_persist_across_runs(void **u) {
  (void)u;
  ge_session *s = train_session("ai.ge::AssignSub");
  float y[2], c, w[2];
  run_once(s, y, &c, w);
  assert_float_equal(y[0], 3, 0);   /* reads the value at the start of the run */
  assert_float_equal(y[1], 8, 0);
  assert_float_equal(c, 1, 0);
  assert_float_equal(w[0], 0.5f, 0);
  run_once(s, y, &c, w);
  assert_float_equal(y[0], 1.5f, 0);
  assert_float_equal(c, 2, 0);
  run_once(s, NULL, &c, NULL);
  assert_float_equal(c, 3, 0);
  assert_float_equal(get_scalar(s, "counter"), 3, 0);
  const char *names[] = {"w", "counter"};
  ge_tensor *vals[2] = {0};
  assert_int_equal(ge_session_get_variables(s, names, 2, vals), GE_OK);
  assert_float_equal(((float *)ge_tensor_data(vals[0]))[1], 0.5f, 0);
  ge_tensor_free(vals[0]);
  ge_tensor_free(vals[1]);
  const char *bad[] = {"counter", "nope"};
  vals[0] = vals[1] = (ge_tensor *)1;
  assert_int_equal(ge_session_get_variables(s, bad, 2, vals), GE_ERR_NOT_FOUND);
  assert_null(vals[0]);
  assert_non_null(strstr(ge_last_error(), "nope"));
  ge_session_free(s);
  ge_finalize();
}

static void test_assign(void **u) {
  (void)u;
  ge_session *s = train_session("ai.ge::Assign");
  float w[2];
  run_once(s, NULL, NULL, w);
  assert_float_equal(w[0], 0.5f, 0);
  const char *n = "w";
  ge_tensor *t = NULL;
  assert_int_equal(ge_session_get_variables(s, &n, 1, &t), GE_OK);
  assert_float_equal(((float *)ge_tensor_data(t))[1], 0.5f, 0);
  ge_tensor_free(t);
  ge_session_free(s);
  ge_finalize();
}

static void test_isolated_between_sessions(void **u) {
  (void)u;
  ge_session *a = train_session("ai.ge::AssignAdd");
  ge_session *b = NULL;
  assert_int_equal(ge_session_create(train_opts, 1, &b), GE_OK);
  ge_graph *g = make_graph("ai.ge::AssignAdd");
  assert_int_equal(ge_session_add_graph(b, 7, g), GE_OK);
  /* the same variables in a second graph of session a are shared */
  assert_int_equal(ge_session_add_graph(a, 2, g), GE_OK);
  ge_graph_free(g);
  run_once(a, NULL, NULL, NULL);
  run_once(a, NULL, NULL, NULL);
  assert_float_equal(get_scalar(a, "counter"), 2, 0);
  assert_float_equal(get_scalar(b, "counter"), 0, 0);
  float xv[] = {1, 1};
  ge_tensor *x = f32_tensor(xv, 2), *outs[3] = {0};
  assert_int_equal(ge_session_run_graph(a, 2, &x, 1, outs, 3), GE_OK);
  assert_float_equal(((float *)ge_tensor_data(outs[1]))[0], 3, 0);
  for (int i = 0; i < 3; i++) ge_tensor_free(outs[i]);
  ge_tensor_free(x);
  ge_session_free(a);
  ge_session_free(b);
  ge_finalize();
}

static void test_set_variables(void **u) {
  (void)u;
  ge_session *s = train_session("ai.ge::AssignAdd");
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  float v[] = {41};
  assert_int_equal(ge_tensor_map_put(m, "counter", f32_tensor(v, 1)), GE_OK);
  assert_int_equal(ge_session_set_variables(s, m), GE_OK);
  float c;
  run_once(s, NULL, &c, NULL);
  assert_float_equal(c, 42, 0);
  /* wrong shape: nothing changes, even the valid entry */
  float v2[] = {1, 2, 3};
  assert_int_equal(ge_tensor_map_put(m, "w", f32_tensor(v2, 3)), GE_OK);
  assert_int_equal(ge_session_set_variables(s, m), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "'w'"));
  assert_float_equal(get_scalar(s, "counter"), 42, 0);
  ge_tensor_map_free(m);
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  assert_int_equal(ge_tensor_map_put(m, "unknown", f32_tensor(v, 1)), GE_OK);
  assert_int_equal(ge_session_set_variables(s, m), GE_ERR_NOT_FOUND);
  ge_tensor_map_free(m);
  assert_int_equal(ge_session_set_variables(s, NULL), GE_ERR_INVALID_ARGUMENT);
  ge_session_free(s);
  ge_finalize();
}

static void test_inference_mode_read_only(void **u) {
  (void)u;
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  ge_graph *g = make_graph("ai.ge::AssignAdd");
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_ERR_STATE);
  assert_non_null(strstr(ge_last_error(), "graphRunMode"));
  ge_graph_free(g);
  /* a graph that only reads variables runs in inference mode */
  assert_int_equal(ge_graph_create("ro", &g), GE_OK);
  int64_t two = 2;
  float w0[] = {2, 3};
  ge_tensor *t = f32_tensor(w0, 2);
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, &two, 1), GE_OK);
  assert_int_equal(ge_graph_add_variable(g, "w", t), GE_OK);
  ge_tensor_free(t);
  const char *in[] = {"x", "w"}, *out[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Mul", "mul", in, 2, out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  ge_graph_free(g);
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  float w1[] = {10, 20};
  assert_int_equal(ge_tensor_map_put(m, "w", f32_tensor(w1, 2)), GE_OK);
  assert_int_equal(ge_session_set_variables(s, m), GE_OK); /* loading weights is allowed */
  ge_tensor_map_free(m);
  float xv[] = {1, 2};
  ge_tensor *x = f32_tensor(xv, 2), *y = NULL;
  assert_int_equal(ge_session_run_graph(s, 1, &x, 1, &y, 1), GE_OK);
  assert_float_equal(((float *)ge_tensor_data(y))[1], 40, 0);
  ge_tensor_free(y);
  ge_tensor_free(x);
  ge_session_free(s);
  ge_finalize();
}

static void test_bad_graphs(void **u) {
  (void)u;
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(train_opts, 1, &s), GE_OK);
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("bad", &g), GE_OK);
  int64_t two = 2;
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, &two, 1), GE_OK);
  float v[] = {1, 2};
  ge_tensor *t = f32_tensor(v, 2);
  assert_int_equal(ge_graph_add_variable(g, "x", t), GE_ERR_INVALID_ARGUMENT); /* taken */
  assert_int_equal(ge_graph_add_variable(g, "", t), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_graph_add_variable(g, "v", NULL), GE_ERR_INVALID_ARGUMENT);
  ge_tensor_free(t);
  /* Assign to something that is not a variable */
  const char *in[] = {"x", "x"}, *out[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "ai.ge::Assign", "as", in, 2, out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  assert_int_equal(ge_session_build_graph(s, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "not a variable"));
  ge_graph_free(g);
  /* a second graph declaring the same variable with another shape */
  ge_graph *g2 = make_graph("ai.ge::AssignAdd"), *g3 = NULL;
  assert_int_equal(ge_session_add_graph(s, 2, g2), GE_OK);
  ge_graph_free(g2);
  assert_int_equal(ge_graph_create("clash", &g3), GE_OK);
  float w3[] = {1, 2, 3};
  t = f32_tensor(w3, 3);
  assert_int_equal(ge_graph_add_variable(g3, "w", t), GE_OK);
  ge_tensor_free(t);
  const char *i3[] = {"w"}, *o3[] = {"z"};
  assert_int_equal(ge_graph_add_node(g3, "Relu", "r", i3, 1, o3, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g3, "z"), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 3, g3), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "'w'"));
  ge_graph_free(g3);
  ge_session_free(s);
  ge_finalize();
}

#define N_THREADS 4
#define N_RUNS 50

static void *runner(void *arg) {
  ge_session *s = arg;
  float xv[] = {1, 1};
  ge_tensor *x = NULL;
  int64_t two = 2;
  if (ge_tensor_create(GE_F32, &two, 1, &x) != GE_OK) return (void *)1;
  memcpy(ge_tensor_data(x), xv, sizeof xv);
  intptr_t bad = 0;
  for (int i = 0; i < N_RUNS; i++) {
    ge_tensor *outs[3] = {0};
    if (ge_session_run_graph(s, 1, &x, 1, outs, 3) != GE_OK) bad++;
    for (int k = 0; k < 3; k++) ge_tensor_free(outs[k]);
  }
  ge_tensor_free(x);
  return (void *)bad;
}

static void test_concurrent_increments(void **u) {
  (void)u;
  ge_session *s = train_session("ai.ge::AssignAdd");
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, runner, s), 0);
  for (int i = 0; i < N_THREADS; i++) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  /* AssignAdd applies its delta at commit: no increment is lost */
  assert_float_equal(get_scalar(s, "counter"), N_THREADS * N_RUNS, 0);
  ge_session_free(s);
  ge_finalize();
}

static void test_checkpoint_roundtrip(void **u) {
  (void)u;
  char path[] = "/tmp/ge_ckpt_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  float w[] = {1.5f, -2, 3};
  assert_int_equal(ge_tensor_map_put(m, "layer.\"w\"", f32_tensor(w, 3)), GE_OK);
  int64_t d[] = {2, 2};
  ge_tensor *it = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, d, 2, &it), GE_OK);
  for (int i = 0; i < 4; i++) ((int64_t *)ge_tensor_data(it))[i] = i * 1000000000000LL;
  assert_int_equal(ge_tensor_map_put(m, "step", it), GE_OK);
  assert_int_equal(ge_checkpoint_save(m, path), GE_OK);
  ge_tensor_map *r = NULL;
  assert_int_equal(ge_checkpoint_load(path, &r), GE_OK);
  assert_int_equal(ge_tensor_map_size(r), 2);
  const ge_tensor *rw = ge_tensor_map_find(r, "layer.\"w\"");
  assert_non_null(rw);
  assert_memory_equal(ge_tensor_data(rw), w, sizeof w);
  const ge_tensor *rs = ge_tensor_map_find(r, "step");
  assert_int_equal(ge_tensor_dtype(rs), GE_I64);
  assert_int_equal(ge_tensor_rank(rs), 2);
  assert_int_equal(((int64_t *)ge_tensor_data(rs))[3], 3000000000000LL);
  ge_tensor_map_free(r);
  ge_tensor_map_free(m);
  /* corrupt files are errors, not crashes */
  FILE *f = fopen(path, "wb");
  fwrite("\x10\0\0\0\0\0\0\0{\"a\":{\"dtype\":", 1, 22, f);
  fclose(f);
  assert_int_not_equal(ge_checkpoint_load(path, &r), GE_OK);
  assert_int_equal(ge_checkpoint_load("/nonexistent/x.safetensors", &r), GE_ERR_IO);
  remove(path);
}

static void test_restore(void **u) {
  (void)u;
  ge_session *s = train_session("ai.ge::AssignAdd");
  run_once(s, NULL, NULL, NULL);
  run_once(s, NULL, NULL, NULL);
  const char *names[] = {"counter", "w"};
  ge_tensor *vals[2];
  assert_int_equal(ge_session_get_variables(s, names, 2, vals), GE_OK);
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  assert_int_equal(ge_tensor_map_put(m, "counter", vals[0]), GE_OK);
  assert_int_equal(ge_tensor_map_put(m, "w", vals[1]), GE_OK);
  char path[] = "/tmp/ge_restore_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  assert_int_equal(ge_checkpoint_save(m, path), GE_OK);
  ge_tensor_map_free(m);
  ge_session_free(s);
  s = train_session("ai.ge::AssignAdd");
  assert_float_equal(get_scalar(s, "counter"), 0, 0);
  assert_int_equal(ge_session_restore_variables(s, path), GE_OK);
  assert_float_equal(get_scalar(s, "counter"), 2, 0);
  float c;
  run_once(s, NULL, &c, NULL);
  assert_float_equal(c, 3, 0);
  remove(path);
  ge_session_free(s);
  ge_finalize();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_persist_across_runs),
      cmocka_unit_test(test_assign),
      cmocka_unit_test(test_isolated_between_sessions),
      cmocka_unit_test(test_set_variables),
      cmocka_unit_test(test_inference_mode_read_only),
      cmocka_unit_test(test_bad_graphs),
      cmocka_unit_test(test_concurrent_increments),
      cmocka_unit_test(test_checkpoint_roundtrip),
      cmocka_unit_test(test_restore),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
