/* The callback mechanism: Summary / Save / Callback ops, registration rules, priorities,
 * failures that never stop the graph, one key at a time, metrics, async mode with drain on
 * ge_session_free and ge_finalize, and a 4-thread concurrent run (run it under TSan with
 * -DGE_TSAN=ON). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ge/ge.h"

static const ge_option train_opts[] = {{"ge.graphRunMode", "1"}};
static const ge_option async_opts[] = {{"ge.graphRunMode", "1"}, {"ge.callbackMode", "async"}};

static ge_tensor *f32_tensor(const float *v, int64_t n) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, &n, 1, &t), GE_OK);
  memcpy(ge_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

/* x [2] -> y = x * w (the output); step += 1; Summary(step_new) tag "step" scalar;
   Summary(y) tag "y" histogram; Save(w, step); Callback(x, y) key "custom". */
static ge_graph *make_graph(bool with_effects) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("cb", &g), GE_OK);
  int64_t two = 2;
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, &two, 1), GE_OK);
  float w0[] = {1, 2}, z[] = {0}, one[] = {1};
  ge_tensor *t = f32_tensor(w0, 2);
  assert_int_equal(ge_graph_add_variable(g, "w", t), GE_OK);
  ge_tensor_free(t);
  t = f32_tensor(z, 1);
  assert_int_equal(ge_graph_add_variable(g, "step", t), GE_OK);
  ge_tensor_free(t);
  t = f32_tensor(one, 1);
  assert_int_equal(ge_graph_add_constant(g, "one", t), GE_OK);
  ge_tensor_free(t);
  const char *i1[] = {"x", "w"}, *o1[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Mul", "mul", i1, 2, o1, 1, NULL, 0), GE_OK);
  if (with_effects) {
    const char *i2[] = {"step", "one"}, *o2[] = {"step_new"};
    assert_int_equal(ge_graph_add_node(g, "ai.ge::AssignAdd", "inc", i2, 2, o2, 1, NULL, 0), GE_OK);
    ge_attr a1[] = {GE_ATTR_STRING("tag", "step"), GE_ATTR_STRING("type", "scalar")};
    const char *i3[] = {"step_new"};
    assert_int_equal(ge_graph_add_node(g, "ai.ge::Summary", "s_step", i3, 1, NULL, 0, a1, 2), GE_OK);
    ge_attr a2[] = {GE_ATTR_STRING("type", "histogram")};
    const char *i4[] = {"y"}, *o4[] = {"y_copy"};
    assert_int_equal(ge_graph_add_node(g, "ai.ge::Summary", "y", i4, 1, o4, 1, a2, 1), GE_OK);
    const char *i5[] = {"w", "step"};
    assert_int_equal(ge_graph_add_node(g, "ai.ge::Save", "save", i5, 2, NULL, 0, NULL, 0), GE_OK);
    ge_attr a3[] = {GE_ATTR_STRING("key", "custom")};
    const char *i6[] = {"x", "y"};
    assert_int_equal(ge_graph_add_node(g, "ai.ge::Callback", "cbk", i6, 2, NULL, 0, a3, 1), GE_OK);
  }
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static ge_session *new_session(const ge_option *opts, size_t n) {
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(opts, n, &s), GE_OK);
  ge_graph *g = make_graph(true);
  assert_int_equal(ge_session_add_graph(s, 3, g), GE_OK);
  ge_graph_free(g);
  return s;
}

static void run_once(ge_session *s) {
  float xv[] = {3, 4};
  ge_tensor *x = f32_tensor(xv, 2), *y = NULL;
  assert_int_equal(ge_session_run_graph(s, 3, &x, 1, &y, 1), GE_OK);
  const float *yp = ge_tensor_data(y);
  assert_float_equal(yp[0], 3, 0); /* outputs are unaffected by the side-effect ops */
  assert_float_equal(yp[1], 8, 0);
  ge_tensor_free(y);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ recording callbacks */

typedef struct rec {
  atomic_int calls;
  int order[16];
  atomic_int n_order;
  float last_step;
  float saved_step;
  float saved_w0;
  size_t map_size;
  uint32_t graph_id;
  bool bad;
} rec;

static uint32_t on_summary(uint32_t gid, const ge_tensor_map *m, void *user) {
  rec *r = user;
  r->graph_id = gid;
  r->map_size = ge_tensor_map_size(m);
  const ge_tensor *st = ge_tensor_map_find(m, "step");
  const ge_tensor *y = ge_tensor_map_find(m, "y");
  if (!st || !y || ge_tensor_numel(y) != 2) r->bad = true;
  else r->last_step = ((const float *)ge_tensor_data(st))[0];
  atomic_fetch_add(&r->calls, 1);
  return 0;
}

static uint32_t on_save(uint32_t gid, const ge_tensor_map *m, void *user) {
  rec *r = user;
  const ge_tensor *st = ge_tensor_map_find(m, "step"), *w = ge_tensor_map_find(m, "w");
  if (!st || !w) r->bad = true;
  else {
    r->saved_step = ((const float *)ge_tensor_data(st))[0];
    r->saved_w0 = ((const float *)ge_tensor_data(w))[0];
  }
  r->map_size = ge_tensor_map_size(m);
  atomic_fetch_add(&r->calls, 1);
  return 0;
}

static void test_summary_save_callback(void **u) {
  (void)u;
  ge_session *s = new_session(train_opts, 1);
  rec sum = {0}, sav = {0}, cus = {0};
  assert_int_equal(ge_session_register_callback(s, "Summary", on_summary, &sum), GE_OK);
  assert_int_equal(ge_session_register_callback(s, "Save", on_save, &sav), GE_OK);
  assert_int_equal(ge_session_register_callback(s, "custom", on_save, &cus), GE_OK);
  run_once(s);
  run_once(s);
  assert_int_equal(atomic_load(&sum.calls), 2); /* sync: before run_graph returns */
  assert_false(sum.bad);
  assert_int_equal(sum.graph_id, 3);
  assert_int_equal(sum.map_size, 2);
  assert_float_equal(sum.last_step, 2, 0);
  assert_int_equal(atomic_load(&sav.calls), 2);
  assert_false(sav.bad);
  assert_float_equal(sav.saved_step, 2, 0); /* Save delivers the values after the run */
  assert_float_equal(sav.saved_w0, 1, 0);
  assert_int_equal(atomic_load(&cus.calls), 2);
  assert_true(cus.bad); /* keyed by input name: x and y, not step and w */
  assert_int_equal(cus.map_size, 2);
  ge_callback_stats st;
  assert_int_equal(ge_session_callback_stats(s, "Summary", &st), GE_OK);
  assert_int_equal(st.calls, 2);
  assert_int_equal(st.failures, 0);
  assert_int_equal(st.bytes, 2 * (4 + 8));
  assert_true(st.max_ms >= 0 && st.total_ms >= 0);
  assert_int_equal(ge_session_callback_stats(s, "nothing", &st), GE_ERR_NOT_FOUND);
  const char *k = NULL;
  assert_int_equal(ge_session_callback_key(s, 0, &k), GE_OK);
  assert_string_equal(k, "Summary");
  assert_int_equal(ge_session_callback_key(s, 3, &k), GE_ERR_NOT_FOUND);
  ge_session_free(s);
  ge_finalize();
}

static uint32_t count_cb(uint32_t gid, const ge_tensor_map *m, void *user) {
  atomic_fetch_add((atomic_int *)user, 1);
  return 0;
}

static void test_registration_rules(void **u) {
  (void)u;
  ge_finalize();
  atomic_int a = 0, b = 0;
  assert_int_equal(ge_session_register_callback(NULL, "Summary", count_cb, &a), GE_ERR_STATE);
  ge_session *s = new_session(train_opts, 1);
  assert_int_equal(ge_session_register_callback(s, "Summary", NULL, &a), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_session_register_callback(s, "", count_cb, &a), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_session_register_callback(s, NULL, count_cb, &a), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_session_add_callback(s, "", count_cb, &a, 0), GE_ERR_INVALID_ARGUMENT);
  /* the same key again replaces */
  assert_int_equal(ge_session_register_callback(s, "Summary", count_cb, &a), GE_OK);
  assert_int_equal(ge_session_register_callback(s, "Summary", count_cb, &b), GE_OK);
  run_once(s);
  assert_int_equal(atomic_load(&a), 0);
  assert_int_equal(atomic_load(&b), 1);
  ge_finalize();
  assert_int_equal(ge_session_register_callback(s, "Summary", count_cb, &a), GE_ERR_STATE);
  float xv[] = {3, 4};
  ge_tensor *x = f32_tensor(xv, 2), *y = NULL;
  assert_int_equal(ge_session_run_graph(s, 3, &x, 1, &y, 1), GE_ERR_STATE);
  ge_tensor_free(x);
  ge_session_free(s);
}

typedef struct order_rec {
  int seen[8];
  int n;
} order_rec;
typedef struct order_arg {
  order_rec *r;
  int id;
  uint32_t rc;
} order_arg;

static uint32_t order_cb(uint32_t gid, const ge_tensor_map *m, void *user) {
  order_arg *a = user;
  if (a->r->n < 8) a->r->seen[a->r->n++] = a->id;
  return a->rc;
}

static void test_priorities_and_failures(void **u) {
  (void)u;
  ge_session *s = new_session(train_opts, 1);
  order_rec r = {0};
  order_arg a1 = {&r, 1, 0}, a2 = {&r, 2, 7}, a3 = {&r, 3, 0}, a4 = {&r, 4, 0};
  assert_int_equal(ge_session_add_callback(s, "Summary", order_cb, &a1, 10), GE_OK);
  assert_int_equal(ge_session_add_callback(s, "Summary", order_cb, &a2, -5), GE_OK);
  assert_int_equal(ge_session_add_callback(s, "Summary", order_cb, &a3, 10), GE_OK);
  assert_int_equal(ge_session_add_callback(s, "Summary", order_cb, &a4, 0), GE_OK);
  run_once(s); /* a2 fails: the others still run and the run returns GE_OK */
  assert_int_equal(r.n, 4);
  assert_int_equal(r.seen[0], 2);
  assert_int_equal(r.seen[1], 4);
  assert_int_equal(r.seen[2], 1);
  assert_int_equal(r.seen[3], 3);
  run_once(s);
  ge_callback_stats st;
  assert_int_equal(ge_session_callback_stats(s, "Summary", &st), GE_OK);
  assert_int_equal(st.calls, 8);
  assert_int_equal(st.failures, 2);
  ge_session_free(s);
  ge_finalize();
}

static void test_no_callback_warns(void **u) {
  (void)u;
  /* Summary ops without a Summary callback: a warning once per graph, the run succeeds */
  ge_session *s = new_session(train_opts, 1);
  run_once(s);
  run_once(s);
  ge_callback_stats st;
  assert_int_equal(ge_session_callback_stats(s, "Summary", &st), GE_OK);
  assert_int_equal(st.calls, 0);
  const char *n = "step";
  ge_tensor *t = NULL;
  assert_int_equal(ge_session_get_variables(s, &n, 1, &t), GE_OK);
  assert_float_equal(((float *)ge_tensor_data(t))[0], 2, 0);
  ge_tensor_free(t);
  ge_session_free(s);
  ge_finalize();
}

/* ------------------------------------------------------------------ one key at a time */

typedef struct overlap {
  atomic_int inside;
  atomic_int overlaps;
  atomic_int calls;
} overlap;

static uint32_t slow_cb(uint32_t gid, const ge_tensor_map *m, void *user) {
  overlap *o = user;
  if (atomic_fetch_add(&o->inside, 1) != 0) atomic_fetch_add(&o->overlaps, 1);
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
  atomic_fetch_sub(&o->inside, 1);
  atomic_fetch_add(&o->calls, 1);
  return 0;
}

#define N_THREADS 4
#define N_RUNS 25

static void *runner(void *arg) {
  ge_session *s = arg;
  float xv[] = {3, 4};
  int64_t two = 2;
  ge_tensor *x = NULL;
  if (ge_tensor_create(GE_F32, &two, 1, &x) != GE_OK) return (void *)1;
  memcpy(ge_tensor_data(x), xv, sizeof xv);
  intptr_t bad = 0;
  for (int i = 0; i < N_RUNS; i++) {
    ge_tensor *y = NULL;
    if (ge_session_run_graph(s, 3, &x, 1, &y, 1) != GE_OK) bad++;
    else if (((float *)ge_tensor_data(y))[1] != 8) bad++;
    ge_tensor_free(y);
  }
  ge_tensor_free(x);
  return (void *)bad;
}

static void concurrent(const ge_option *opts, size_t n_opts) {
  ge_session *s = new_session(opts, n_opts);
  overlap o1 = {0}, o2 = {0};
  assert_int_equal(ge_session_add_callback(s, "Summary", slow_cb, &o1, 0), GE_OK);
  assert_int_equal(ge_session_add_callback(s, "Summary", slow_cb, &o1, 1), GE_OK);
  assert_int_equal(ge_session_register_callback(s, "Save", slow_cb, &o2), GE_OK);
  pthread_t th[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, runner, s), 0);
  /* registering while runs are in flight is safe */
  atomic_int extra = 0;
  assert_int_equal(ge_session_register_callback(s, "custom", count_cb, &extra), GE_OK);
  for (int i = 0; i < N_THREADS; i++) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  ge_session_free(s); /* drains async work */
  assert_int_equal(atomic_load(&o1.overlaps), 0);
  assert_int_equal(atomic_load(&o2.overlaps), 0);
  assert_int_equal(atomic_load(&o1.calls), 2 * N_THREADS * N_RUNS);
  assert_int_equal(atomic_load(&o2.calls), N_THREADS * N_RUNS);
  assert_true(atomic_load(&extra) <= N_THREADS * N_RUNS);
  ge_finalize();
}

static void test_concurrent_sync(void **u) {
  (void)u;
  concurrent(train_opts, 1);
}

static void test_concurrent_async(void **u) {
  (void)u;
  concurrent(async_opts, 2);
}

/* ------------------------------------------------------------------ async */

typedef struct seq_rec {
  float steps[64];
  atomic_int n;
  int sleep_ms;
} seq_rec;

static uint32_t seq_cb(uint32_t gid, const ge_tensor_map *m, void *user) {
  seq_rec *r = user;
  if (r->sleep_ms) {
    struct timespec ts = {0, (long)r->sleep_ms * 1000000L};
    nanosleep(&ts, NULL);
  }
  const ge_tensor *st = ge_tensor_map_find(m, "step");
  int i = atomic_load(&r->n);
  if (st && i < 64) r->steps[i] = ((const float *)ge_tensor_data(st))[0];
  atomic_fetch_add(&r->n, 1);
  return 0;
}

static void test_async_order_and_drain_on_free(void **u) {
  (void)u;
  ge_session *s = new_session(async_opts, 2);
  seq_rec r = {.sleep_ms = 2};
  assert_int_equal(ge_session_register_callback(s, "Summary", seq_cb, &r), GE_OK);
  for (int i = 0; i < 20; i++) run_once(s);
  ge_session_free(s); /* nothing is lost */
  assert_int_equal(atomic_load(&r.n), 20);
  for (int i = 0; i < 20; i++) assert_float_equal(r.steps[i], (float)(i + 1), 0);
  ge_finalize();
}

static void test_async_drain_on_finalize(void **u) {
  (void)u;
  ge_session *s = new_session(async_opts, 2);
  seq_rec r = {.sleep_ms = 5};
  assert_int_equal(ge_session_register_callback(s, "Save", seq_cb, &r), GE_OK);
  for (int i = 0; i < 10; i++) run_once(s);
  assert_int_equal(ge_finalize(), GE_OK);
  assert_int_equal(atomic_load(&r.n), 10);
  assert_float_equal(r.steps[9], 10, 0);
  float xv[] = {3, 4};
  ge_tensor *x = f32_tensor(xv, 2), *y = NULL;
  assert_int_equal(ge_session_run_graph(s, 3, &x, 1, &y, 1), GE_ERR_STATE);
  const char *n = "w";
  assert_int_equal(ge_session_get_variables(s, &n, 1, &y), GE_ERR_STATE);
  ge_tensor_free(x);
  ge_session_free(s);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Prints (does not assert) how much of a 50 ms callback the run latency includes. */
static void test_async_latency_report(void **u) {
  (void)u;
  for (int mode = 0; mode < 2; mode++) {
    ge_session *s = new_session(mode ? async_opts : train_opts, mode ? 2 : 1);
    seq_rec r = {.sleep_ms = 50};
    assert_int_equal(ge_session_register_callback(s, "Summary", seq_cb, &r), GE_OK);
    double t0 = now_ms();
    for (int i = 0; i < 5; i++) run_once(s);
    double t1 = now_ms();
    ge_session_free(s);
    printf("callbacks: %s mode, 50 ms Summary callback: %.2f ms per run_graph\n",
           mode ? "async" : "sync", (t1 - t0) / 5);
    assert_int_equal(atomic_load(&r.n), 5);
    ge_finalize();
  }
}

static uint32_t failing_cb(uint32_t gid, const ge_tensor_map *m, void *user) { return 42; }

static void test_async_failures_counted(void **u) {
  (void)u;
  ge_session *s = new_session(async_opts, 2);
  atomic_int a = 0;
  assert_int_equal(ge_session_add_callback(s, "custom", failing_cb, NULL, 0), GE_OK);
  assert_int_equal(ge_session_add_callback(s, "custom", count_cb, &a, 1), GE_OK);
  run_once(s);
  run_once(s);
  ge_session_free(s);
  assert_int_equal(atomic_load(&a), 2);
  ge_finalize();
}

static void test_checkpoint_writer(void **u) {
  (void)u;
  char dir[] = "/tmp/ge_cbw_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s/ckpt", dir);
  ge_checkpoint_writer *w = NULL;
  assert_int_equal(ge_checkpoint_writer_create(prefix, &w), GE_OK);
  ge_session *s = new_session(train_opts, 1);
  assert_int_equal(ge_session_register_callback(s, "Save", ge_checkpoint_writer_callback, w), GE_OK);
  run_once(s);
  run_once(s);
  run_once(s);
  assert_int_equal(ge_checkpoint_writer_count(w), 3);
  char path[300];
  snprintf(path, sizeof path, "%s-3-1.safetensors", prefix);
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_checkpoint_load(path, &m), GE_OK);
  assert_float_equal(((const float *)ge_tensor_data(ge_tensor_map_find(m, "step")))[0], 2, 0);
  ge_tensor_map_free(m);
  ge_session_free(s);
  /* resume: a new session restores the latest checkpoint */
  assert_int_equal(ge_session_create(train_opts, 1, &s), GE_OK);
  ge_graph *g = make_graph(true);
  assert_int_equal(ge_session_add_graph(s, 3, g), GE_OK);
  ge_graph_free(g);
  snprintf(path, sizeof path, "%s-latest.safetensors", prefix);
  assert_int_equal(ge_session_restore_variables(s, path), GE_OK);
  const char *n = "step";
  ge_tensor *t = NULL;
  assert_int_equal(ge_session_get_variables(s, &n, 1, &t), GE_OK);
  assert_float_equal(((float *)ge_tensor_data(t))[0], 3, 0);
  ge_tensor_free(t);
  ge_session_free(s);
  ge_checkpoint_writer_free(w);
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s-3-%d.safetensors", prefix, i);
    remove(path);
  }
  snprintf(path, sizeof path, "%s-latest.safetensors", prefix);
  remove(path);
  rmdir(dir);
  ge_finalize();
}

typedef struct nest_arg {
  ge_session *s;
  int depth;
} nest_arg;

/* A Summary callback that runs the graph again (which produces Summary data again). */
static uint32_t nesting_cb(uint32_t gid, const ge_tensor_map *m, void *user) {
  nest_arg *a = user;
  if (a->depth++ > 0) return 0;
  float xv[] = {3, 4};
  ge_tensor *x = NULL, *y = NULL;
  int64_t two = 2;
  if (ge_tensor_create(GE_F32, &two, 1, &x) != GE_OK) return 1;
  memcpy(ge_tensor_data(x), xv, sizeof xv);
  ge_status st = ge_session_run_graph(a->s, 3, &x, 1, &y, 1);
  ge_tensor_free(x);
  ge_tensor_free(y);
  return st == GE_OK ? 0 : 1;
}

static void test_nested_run_in_callback(void **u) {
  (void)u;
  ge_session *s = new_session(train_opts, 1);
  nest_arg a = {s, 0};
  assert_int_equal(ge_session_register_callback(s, "Summary", nesting_cb, &a), GE_OK);
  run_once(s); /* no deadlock: the nested run's Summary data is dropped and counted */
  assert_int_equal(a.depth, 1);
  ge_callback_stats st;
  assert_int_equal(ge_session_callback_stats(s, "Summary", &st), GE_OK);
  assert_int_equal(st.calls, 1);
  assert_int_equal(st.failures, 1);
  ge_session_free(s);
  ge_finalize();
}

/* bitwise CRC32C, independent of the writer's table */
static uint32_t crc32c_bits(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  c = ~c;
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void test_summary_writer(void **u) {
  (void)u;
  char dir[] = "/tmp/ge_tb_XXXXXX";
  assert_non_null(mkdtemp(dir));
  ge_summary_writer *w = NULL;
  assert_int_equal(ge_summary_writer_create("/nonexistent/dir", &w), GE_ERR_IO);
  assert_int_equal(ge_summary_writer_create(dir, &w), GE_OK);
  ge_session *s = new_session(train_opts, 1);
  assert_int_equal(ge_session_register_callback(s, "Summary", ge_summary_writer_callback, w), GE_OK);
  run_once(s);
  run_once(s);
  /* images: float [N,H,W,C] and a bad channel count (skipped with a warning, not a failure) */
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  int64_t d4[] = {2, 3, 5, 1}, d3[] = {2, 2, 2};
  ge_tensor *img = NULL, *bad = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, d4, 4, &img), GE_OK);
  assert_int_equal(ge_tensor_create(GE_F32, d3, 3, &bad), GE_OK);
  assert_int_equal(ge_tensor_map_put(m, "img", img), GE_OK);
  assert_int_equal(ge_tensor_map_set_info(m, "img", "image"), GE_OK);
  assert_int_equal(ge_tensor_map_put(m, "bad", bad), GE_OK);
  assert_int_equal(ge_tensor_map_set_info(m, "bad", "image"), GE_OK);
  assert_int_equal(ge_tensor_map_set_info(m, "none", "image"), GE_ERR_NOT_FOUND);
  assert_string_equal(ge_tensor_map_info(m, 0), "image");
  assert_int_equal(ge_summary_writer_write(w, 7, m), GE_OK);
  ge_tensor_map_free(m);
  ge_session_free(s);
  /* framing: every record's masked CRC32C of the length and of the data */
  FILE *f = fopen(ge_summary_writer_path(w), "rb");
  assert_non_null(f);
  uint8_t buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  size_t pos = 0, records = 0;
  while (pos < n) {
    assert_true(pos + 12 <= n);
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)buf[pos + i] << (8 * i);
    uint32_t lc = 0, dc = 0;
    for (int i = 0; i < 4; i++) lc |= (uint32_t)buf[pos + 8 + i] << (8 * i);
    assert_int_equal(lc, crc32c_bits(buf + pos, 8));
    assert_true(pos + 16 + len <= n);
    for (int i = 0; i < 4; i++) dc |= (uint32_t)buf[pos + 12 + len + i] << (8 * i);
    assert_int_equal(dc, crc32c_bits(buf + pos + 12, (size_t)len));
    pos += 16 + (size_t)len;
    records++;
  }
  assert_int_equal(records, 4); /* file_version, 2 runs, 1 direct write */
  remove(ge_summary_writer_path(w));
  ge_summary_writer_free(w);
  rmdir(dir);
  ge_finalize();
}

static void test_bad_ops(void **u) {
  (void)u;
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(train_opts, 1, &s), GE_OK);
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("bad", &g), GE_OK);
  int64_t two = 2;
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, &two, 1), GE_OK);
  ge_attr a[] = {GE_ATTR_STRING("type", "pie-chart")};
  const char *in[] = {"x"};
  assert_int_equal(ge_graph_add_node(g, "ai.ge::Summary", "s", in, 1, NULL, 0, a, 1), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "x"), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  assert_int_equal(ge_session_build_graph(s, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "pie-chart"));
  ge_graph_free(g);
  assert_int_equal(ge_graph_create("bad2", &g), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, &two, 1), GE_OK);
  ge_attr sc[] = {GE_ATTR_STRING("type", "scalar")};
  assert_int_equal(ge_graph_add_node(g, "ai.ge::Summary", "s", in, 1, NULL, 0, sc, 1), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "ai.ge::Callback", "c", in, 1, NULL, 0, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "ai.ge::Save", "sv", in, 1, NULL, 0, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "x"), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 2, g), GE_OK);
  assert_int_equal(ge_session_build_graph(s, 2), GE_ERR_SHAPE); /* scalar of 2 elements */
  ge_graph_free(g);
  ge_session_free(s);
  ge_finalize();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_save_callback),
      cmocka_unit_test(test_registration_rules),
      cmocka_unit_test(test_priorities_and_failures),
      cmocka_unit_test(test_no_callback_warns),
      cmocka_unit_test(test_concurrent_sync),
      cmocka_unit_test(test_concurrent_async),
      cmocka_unit_test(test_async_order_and_drain_on_free),
      cmocka_unit_test(test_async_drain_on_finalize),
      cmocka_unit_test(test_async_latency_report),
      cmocka_unit_test(test_async_failures_counted),
      cmocka_unit_test(test_checkpoint_writer),
      cmocka_unit_test(test_summary_writer),
      cmocka_unit_test(test_nested_run_in_callback),
      cmocka_unit_test(test_bad_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
