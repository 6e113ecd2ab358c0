/* Sessions, options, the compiler's folding and lifetimes, and the executor, through the
 * public API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "ge/ge.h"
#include "helpers/test_common.h"

/* y = Relu(x + b) with b a constant [4]; x [N, 4] with a dynamic N. */
static ge_graph *make_graph(void) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("addrelu", &g), GE_OK);
  int64_t xd[] = {-1, 4};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  float bv[] = {1, -2, 3, -4};
  int64_t bd[] = {4};
  ge_tensor *b = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, bd, 1, &b), GE_OK);
  memcpy(ge_tensor_data(b), bv, sizeof bv);
  assert_int_equal(ge_graph_add_constant(g, "b", b), GE_OK);
  ge_tensor_free(b);
  const char *in1[] = {"x", "b"}, *out1[] = {"s"};
  assert_int_equal(ge_graph_add_node(g, "Add", "add", in1, 2, out1, 1, NULL, 0), GE_OK);
  const char *in2[] = {"s"}, *out2[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu", in2, 1, out2, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static ge_tensor *make_x(int64_t n, float base) {
  int64_t d[] = {n, 4};
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, d, 2, &t), GE_OK);
  float *p = ge_tensor_data(t);
  for (int64_t i = 0; i < n * 4; i++) p[i] = base + (float)i;
  return t;
}

static void check_y(const ge_tensor *x, const ge_tensor *y) {
  static const float b[] = {1, -2, 3, -4};
  assert_int_equal(ge_tensor_rank(y), 2);
  assert_int_equal(ge_tensor_dims(y)[0], ge_tensor_dims(x)[0]);
  const float *xp = ge_tensor_data(x), *yp = ge_tensor_data(y);
  for (size_t i = 0; i < ge_tensor_numel(x); i++) {
    float e = xp[i] + b[i % 4];
    assert_float_equal(yp[i], e > 0 ? e : 0, 1e-6);
  }
}

static void test_lifecycle(void **unused) {
  (void)unused;
  ge_finalize();
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_ERR_STATE);
  assert_non_null(strstr(ge_last_error(), "ge_initialize"));
  ge_option bad[] = {{"ge.noSuchKey", "1"}};
  assert_int_equal(ge_initialize(bad, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "ge.noSuchKey"));
  ge_option opts[] = {{"ge.intraOpThreads", "2"}};
  assert_int_equal(ge_initialize(opts, 1), GE_OK);
  assert_int_equal(ge_initialize(opts, 1), GE_OK); /* same options: harmless */
  ge_option other[] = {{"ge.intraOpThreads", "1"}};
  assert_int_equal(ge_initialize(other, 1), GE_ERR_STATE);
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  ge_graph *g = make_graph();
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  ge_graph_free(g);
  assert_int_equal(ge_finalize(), GE_OK);
  assert_int_equal(ge_session_build_graph(s, 1), GE_ERR_STATE);
  ge_session_free(s);
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
}

static void test_options(void **unused) {
  (void)unused;
  ge_session *s = NULL;
  ge_option bad_val[] = {{"ge.graphOptimizationLevel", "7"}};
  assert_int_equal(ge_session_create(bad_val, 1, &s), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "ge.graphOptimizationLevel"));
  ge_option bad_bool[] = {{"ge.enableSingleStream", "maybe"}};
  assert_int_equal(ge_session_create(bad_bool, 1, &s), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "maybe"));
  ge_option bad_wino[] = {{"ge.exec.disableWinograd", "sometimes"}};
  assert_int_equal(ge_session_create(bad_wino, 1, &s), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "ge.exec.disableWinograd"));
  ge_option good[] = {{"ge.graphOptimizationLevel", "0"}, {"ge.exec.disableReuseMemory", "1"},
                      {"ge.exec.precision_mode", "must_keep_origin_dtype"}, {"ge.exec.deviceId", "0"},
                      {"ge.exec.disableWinograd", "true"}};
  assert_int_equal(ge_session_create(good, 5, &s), GE_OK);
  ge_session_free(s);
}

static void test_run_sync_and_dynamic(void **unused) {
  (void)unused;
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  ge_graph *g = make_graph();
  assert_int_equal(ge_session_add_graph(s, 7, g), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 7, g), GE_ERR_INVALID_ARGUMENT);
  ge_graph_free(g);
  assert_int_equal(ge_session_build_graph(s, 7), GE_OK);
  for (int64_t n = 1; n <= 3; n++) {
    ge_tensor *x = make_x(n, -5.f), *y = NULL;
    assert_int_equal(ge_session_run_graph(s, 7, &x, 1, &y, 1), GE_OK);
    check_y(x, y);
    ge_tensor_free(x);
    ge_tensor_free(y);
  }
  /* wrong inner dim: the error names the input and both shapes */
  int64_t d[] = {2, 5};
  ge_tensor *x = NULL, *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, d, 2, &x), GE_OK);
  assert_int_equal(ge_session_run_graph(s, 7, &x, 1, &y, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "'x'"));
  ge_tensor_free(x);
  /* wrong dtype */
  assert_int_equal(ge_tensor_create(GE_F64, (int64_t[]){2, 4}, 2, &x), GE_OK);
  assert_int_equal(ge_session_run_graph(s, 7, &x, 1, &y, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "float64"));
  ge_tensor_free(x);
  assert_int_equal(ge_session_run_graph(s, 8, &x, 1, &y, 1), GE_ERR_NOT_FOUND);
  assert_int_equal(ge_session_remove_graph(s, 7), GE_OK);
  assert_int_equal(ge_session_remove_graph(s, 7), GE_ERR_NOT_FOUND);
  ge_session_free(s);
}

static void test_unknown_op_named_at_build(void **unused) {
  (void)unused;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("bad", &g), GE_OK);
  int64_t d[] = {2};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, d, 1), GE_OK);
  const char *in[] = {"x"}, *out[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "FrobnicateX", "frob1", in, 1, out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  assert_int_equal(ge_session_build_graph(s, 1), GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "frob1"));
  assert_non_null(strstr(ge_last_error(), "FrobnicateX"));
  ge_session_free(s);
  ge_graph_free(g);
}

typedef struct async_box {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  ge_status st;
  ge_tensor *y;
} async_box;

static void on_done(ge_status st, ge_tensor **outs, size_t n, void *user) {
  async_box *b = user;
  pthread_mutex_lock(&b->mu);
  b->st = st;
  b->y = st == GE_OK && n == 1 ? outs[0] : NULL;
  b->done++;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

static void test_async(void **unused) {
  (void)unused;
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  ge_graph *g = make_graph();
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  ge_graph_free(g);
  async_box b = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  ge_tensor *x = make_x(3, 0.5f);
  assert_int_equal(ge_session_run_graph_async(s, 1, &x, 1, on_done, &b), GE_OK);
  pthread_mutex_lock(&b.mu);
  while (!b.done) pthread_cond_wait(&b.cv, &b.mu);
  pthread_mutex_unlock(&b.mu);
  assert_int_equal(b.st, GE_OK);
  check_y(x, b.y);
  ge_tensor_free(b.y);
  assert_int_equal(ge_session_run_graph_async(s, 99, &x, 1, on_done, &b), GE_ERR_NOT_FOUND);
  /* freeing the session drains a run still in flight */
  b.done = 0;
  assert_int_equal(ge_session_run_graph_async(s, 1, &x, 1, on_done, &b), GE_OK);
  ge_session_free(s);
  assert_int_equal(b.done, 1);
  ge_tensor_free(b.y);
  ge_tensor_free(x);
}

typedef struct worker_arg {
  ge_session *s;
  int failures;
  int id;
} worker_arg;

static void *worker(void *p) {
  worker_arg *w = p;
  for (int it = 0; it < 50; it++) {
    int64_t n = 1 + (w->id + it) % 4;
    int64_t d[] = {n, 4};
    ge_tensor *x = NULL, *y = NULL;
    if (ge_tensor_create(GE_F32, d, 2, &x) != GE_OK) {
      w->failures++;
      continue;
    }
    float *xp = ge_tensor_data(x);
    for (int64_t i = 0; i < n * 4; i++) xp[i] = (float)(w->id * 100 + it) - (float)i;
    if (ge_session_run_graph(w->s, 1, &x, 1, &y, 1) != GE_OK) w->failures++;
    else {
      static const float b[] = {1, -2, 3, -4};
      const float *yp = ge_tensor_data(y);
      for (int64_t i = 0; i < n * 4; i++) {
        float e = xp[i] + b[i % 4];
        if (yp[i] != (e > 0 ? e : 0)) w->failures++;
      }
    }
    ge_tensor_free(x);
    ge_tensor_free(y);
  }
  return NULL;
}

static void test_concurrent_runs(void **unused) {
  (void)unused;
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  ge_graph *g = make_graph();
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  ge_graph_free(g);
  pthread_t th[4];
  worker_arg w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_arg){s, 0, i};
    assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(w[i].failures, 0);
  }
  ge_session_free(s);
}

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as torch exports it: the compiler folds
   the chain for a static input and the executor infers it at run time at level 0. */
static void test_folding_and_lifetimes(void **unused) {
  (void)unused;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("fold", &g), GE_OK);
  int64_t xd[] = {2, 3, 4};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 3), GE_OK);
  int64_t zero = 0, minus1 = -1, one_d[] = {1}, scal[] = {0};
  ge_tensor *i0 = NULL, *m1 = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, scal, 0, &i0), GE_OK);
  memcpy(ge_tensor_data(i0), &zero, 8);
  assert_int_equal(ge_tensor_create(GE_I64, one_d, 1, &m1), GE_OK);
  memcpy(ge_tensor_data(m1), &minus1, 8);
  assert_int_equal(ge_graph_add_constant(g, "i0", i0), GE_OK);
  assert_int_equal(ge_graph_add_constant(g, "m1", m1), GE_OK);
  ge_tensor_free(i0);
  ge_tensor_free(m1);
  int64_t ax[] = {0};
  ge_attr un_axes = GE_ATTR_INTS("axes", ax, 1);
  ge_attr cat_axis = GE_ATTR_INT("axis", 0);
  const char *a[] = {"x"}, *b[] = {"shp"};
  assert_int_equal(ge_graph_set_opset(g, "", 11), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Shape", "shape", a, 1, b, 1, NULL, 0), GE_OK);
  const char *c[] = {"shp", "i0"}, *d[] = {"n"};
  assert_int_equal(ge_graph_add_node(g, "Gather", "gather", c, 2, d, 1, NULL, 0), GE_OK);
  const char *e[] = {"n"}, *f[] = {"n1"};
  assert_int_equal(ge_graph_add_node(g, "Unsqueeze", "unsq", e, 1, f, 1, &un_axes, 1), GE_OK);
  const char *h[] = {"n1", "m1"}, *i[] = {"target"};
  assert_int_equal(ge_graph_add_node(g, "Concat", "cat", h, 2, i, 1, &cat_axis, 1), GE_OK);
  const char *j[] = {"x", "target"}, *k[] = {"r"};
  assert_int_equal(ge_graph_add_node(g, "Reshape", "reshape", j, 2, k, 1, NULL, 0), GE_OK);
  const char *l[] = {"r"}, *m[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu", l, 1, m, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);

  for (int level = 0; level <= 3; level += 3) {
    ge_options o;
    ge_options_default(&o);
    o.opt_level = level;
    ge_plan *p = NULL;
    assert_int_equal(ge_plan_compile(g, NULL, &o, &p), GE_OK);
    if (level == 3) {
      assert_int_equal(p->n_folded, 4);
      assert_int_equal(p->n_steps, 2);
      assert_true(p->steps[0].static_out);
      const ge_type *rt = &p->slots[p->steps[0].out[0]].type;
      assert_int_equal(rt->shape.rank, 2);
      assert_int_equal(rt->shape.dims[0], 2);
      assert_int_equal(rt->shape.dims[1], 12);
      /* the reshape is a view of the input x: no buffer of its own, nothing dies */
      assert_true(p->steps[0].view);
      assert_int_equal(p->alias_of[p->steps[0].out[0]], (int32_t)p->inputs[0]);
      assert_int_equal(p->steps[1].n_dead, 0);
    } else {
      assert_int_equal(p->n_folded, 0);
      assert_int_equal(p->n_steps, 6);
    }
    ge_tensor *x = NULL, *y = NULL;
    assert_int_equal(ge_tensor_create(GE_F32, xd, 3, &x), GE_OK);
    float *xp = ge_tensor_data(x);
    for (int q = 0; q < 24; q++) xp[q] = (float)(q - 12);
    assert_int_equal(ge_plan_run(p, &x, 1, &y, 1), GE_OK);
    assert_int_equal(ge_tensor_rank(y), 2);
    assert_int_equal(ge_tensor_dims(y)[1], 12);
    const float *yp = ge_tensor_data(y);
    for (int q = 0; q < 24; q++) assert_float_equal(yp[q], q > 12 ? (float)(q - 12) : 0.f, 0);
    ge_tensor_free(x);
    ge_tensor_free(y);
    ge_plan_free(p);
  }
  ge_graph_free(g);
}

/* x -> Relu -> Reshape -> Relu: the reshape views the first Relu's buffer, which must then
   live until the second Relu has read the view, in the lifetimes and in the arena plan. */
static void test_view_extends_lifetime(void **unused) {
  (void)unused;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("view", &g), GE_OK);
  int64_t xd[] = {2, 6};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  int64_t sd[] = {3}, shape[] = {3, 2, 2};
  ge_tensor *sh = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, sd, 1, &sh), GE_OK);
  memcpy(ge_tensor_data(sh), shape, sizeof shape);
  assert_int_equal(ge_graph_add_constant(g, "shape", sh), GE_OK);
  ge_tensor_free(sh);
  const char *a[] = {"x"}, *b[] = {"a"}, *c[] = {"a", "shape"}, *d[] = {"b"}, *e[] = {"b"}, *f[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Relu", "r1", a, 1, b, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Reshape", "view", c, 2, d, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Neg", "r2", e, 1, f, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  ge_options o;
  ge_options_default(&o);
  ge_plan *p = NULL;
  assert_int_equal(ge_plan_compile(g, NULL, &o, &p), GE_OK);
  assert_int_equal(p->n_steps, 3);
  assert_true(p->steps[1].view);
  uint32_t a_slot = p->steps[0].out[0];
  assert_int_equal(p->alias_of[p->steps[1].out[0]], (int32_t)a_slot);
  assert_int_equal(p->steps[0].n_dead + p->steps[1].n_dead, 0);
  assert_int_equal(p->steps[2].n_dead, 1);
  assert_int_equal(p->steps[2].dead[0], a_slot);
  ge_tensor *x = NULL, *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &x), GE_OK);
  float *xp = ge_tensor_data(x);
  for (int q = 0; q < 12; q++) xp[q] = (float)(q - 6);
  assert_int_equal(ge_plan_run(p, &x, 1, &y, 1), GE_OK);
  assert_int_equal(ge_tensor_rank(y), 3);
  const float *yp = ge_tensor_data(y);
  for (int q = 0; q < 12; q++) assert_float_equal(yp[q], q > 6 ? -(float)(q - 6) : 0.f, 0);
  ge_tensor_free(x);
  ge_tensor_free(y);
  ge_plan_free(p);
  ge_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lifecycle),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_run_sync_and_dynamic),
      cmocka_unit_test(test_unknown_op_named_at_build),
      cmocka_unit_test(test_async),
      cmocka_unit_test(test_concurrent_runs),
      cmocka_unit_test(test_folding_and_lifetimes),
      cmocka_unit_test(test_view_extends_lifetime),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, NULL);
}
