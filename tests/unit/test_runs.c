/* The executor's run path: buffers reused in place, outputs written into the caller's
 * tensors (ge_session_run_graph_into), and runs of a static-shape graph that allocate
 * nothing once the first run has made its workspace (checked by counting every malloc of
 * the process while the runs execute). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "ge/ge.h"
#include "helpers/test_common.h"
#include "runtime/options.h"

/* ------------------------------------------------------------------ allocation counting
 * This executable replaces malloc & co. (forwarding to glibc's own entry points) so that it
 * can count every allocation of the process, oneDNN's and OpenMP's included.  Sanitizer
 * builds bring their own allocator: there the count is not taken. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_ALLOCS 0
#else
#define COUNT_ALLOCS 1
#endif

static atomic_int counting;
static atomic_long n_allocs;

#if COUNT_ALLOCS
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static void count_one(void) {
  if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add(&n_allocs, 1);
}
void *malloc(size_t n) {
  count_one();
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t m) {
  count_one();
  return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n) {
  count_one();
  return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) {
  count_one();
  return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n) {
  count_one();
  return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
  count_one();
  void *p = __libc_memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
#endif

/* ------------------------------------------------------------------ graphs */

static ge_tensor *tensor_f32(const int64_t *d, size_t rank, float base, float step) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, d, rank, &t), GE_OK);
  float *p = ge_tensor_data(t);
  size_t n = ge_tensor_numel(t);
  for (size_t i = 0; i < n; i++) p[i] = base + step * (float)(i % 97);
  return t;
}

/* x [R, C] -> Neg -> Relu -> Abs -> Add(·, x) -> Sigmoid -> y.  Every intermediate dies
   where the next step reads it, so with in-place reuse the whole chain needs the arena of one
   buffer (plus the one x keeps alive is the graph input, not in the arena). */
static ge_graph *chain_graph(int64_t r, int64_t c) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("chain", &g), GE_OK);
  int64_t xd[] = {r, c};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  const char *i0[] = {"x"}, *o0[] = {"a"};
  const char *i1[] = {"a"}, *o1[] = {"b"};
  const char *i2[] = {"b"}, *o2[] = {"c"};
  const char *i3[] = {"c", "x"}, *o3[] = {"d"};
  const char *i4[] = {"d"}, *o4[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Neg", "neg", i0, 1, o0, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu", i1, 1, o1, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Abs", "abs", i2, 1, o2, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Add", "add", i3, 2, o3, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Sigmoid", "sig", i4, 1, o4, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static float chain_ref(float x) {
  float a = -x, b = a > 0 ? a : 0, c = b < 0 ? -b : b, d = c + x;
  return 1.f / (1.f + expf(-d));
}

/* ------------------------------------------------------------------ in place */

static void test_inplace_chain(void **unused) {
  (void)unused;
  ge_graph *g = chain_graph(8, 33);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  size_t buf = 8 * 33 * sizeof(float), abuf = (buf + 63) / 64 * 64;
  for (int reuse = 1; reuse >= 0; reuse--) {
    ge_options o;
    ge_options_default(&o);
    o.disable_reuse = !reuse;
    ge_plan *p = NULL;
    assert_int_equal(ge_plan_compile(g, NULL, &o, &p), GE_OK);
    assert_int_equal(p->n_steps, 5);
    /* a, b, c, d are planned; each dies where the next is made */
    assert_int_equal(p->arena_lower_bound, reuse ? abuf : 2 * abuf); /* an in-place pair counts once */
    if (reuse)
      assert_int_equal(p->arena_bytes, abuf); /* every step in place */
    else
      assert_int_equal(p->arena_bytes, 4 * abuf);
    if (reuse) {
      uint32_t a = p->steps[0].out[0], d = p->steps[3].out[0];
      assert_int_equal(p->arena_offset[a], p->arena_offset[d]);
    }
    int64_t xd[] = {8, 33};
    ge_tensor *x = tensor_f32(xd, 2, -3.f, 0.07f), *y = NULL;
    for (int rep = 0; rep < 3; rep++) { /* the workspace is reused from the second run on */
      assert_int_equal(ge_plan_run(p, &x, 1, &y, 1), GE_OK);
      const float *xp = ge_tensor_data(x), *yp = ge_tensor_data(y);
      for (size_t i = 0; i < 8 * 33; i++) assert_float_equal(yp[i], chain_ref(xp[i]), 1e-6);
      ge_tensor_free(y);
      y = NULL;
    }
    ge_tensor_free(x);
    ge_plan_free(p);
  }
  ge_graph_free(g);
}

/* A residual block: the residual Add fuses into the Conv (ai.ge FusedConv with a Sum input),
   whose output may take the residual's buffer.  Level 3 must equal level 0. */
static ge_graph *residual_graph(void) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("residual", &g), GE_OK);
  int64_t xd[] = {1, 8, 6, 6};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  int64_t wd[] = {8, 8, 3, 3};
  ge_tensor *w1 = tensor_f32(wd, 4, -0.2f, 0.005f), *w2 = tensor_f32(wd, 4, 0.15f, -0.004f);
  assert_int_equal(ge_graph_add_constant(g, "w1", w1), GE_OK);
  assert_int_equal(ge_graph_add_constant(g, "w2", w2), GE_OK);
  ge_tensor_free(w1);
  ge_tensor_free(w2);
  ge_attr pads = GE_ATTR_INTS("pads", ((int64_t[]){1, 1, 1, 1}), 4);
  const char *i0[] = {"x", "w1"}, *o0[] = {"c1"};
  const char *i1[] = {"c1"}, *o1[] = {"r1"};
  const char *i2[] = {"r1", "w2"}, *o2[] = {"c2"};
  const char *i3[] = {"c2", "r1"}, *o3[] = {"s"};
  const char *i4[] = {"s"}, *o4[] = {"r2"};
  const char *i5[] = {"r2"}, *o5[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Conv", "conv1", i0, 2, o0, 1, &pads, 1), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu1", i1, 1, o1, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Conv", "conv2", i2, 2, o2, 1, &pads, 1), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Add", "add", i3, 2, o3, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu2", i4, 1, o4, 1, NULL, 0), GE_OK);
  /* not a graph output and read by a pool (channels-last like r1), so that the fused conv's
     output is planned in the arena: r1 is both its input 0 and its residual, so the two must
     not share a buffer */
  ge_attr ks = GE_ATTR_INTS("kernel_shape", ((int64_t[]){2, 2}), 2); /* reads channels-last */
  assert_int_equal(ge_graph_add_node(g, "MaxPool", "pool", i5, 1, o5, 1, &ks, 1), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static void run_session(ge_graph *g, const char *level, ge_tensor *x, ge_tensor **y) {
  ge_option opts[] = {{"ge.graphOptimizationLevel", level}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(opts, 1, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  assert_int_equal(ge_session_run_graph(s, 1, &x, 1, y, 1), GE_OK);
  ge_session_free(s);
}

static void test_inplace_residual(void **unused) {
  (void)unused;
  ge_graph *g = residual_graph();
  int64_t xd[] = {1, 8, 6, 6};
  ge_tensor *x = tensor_f32(xd, 4, -1.f, 0.03f), *y0 = NULL, *y3 = NULL;
  run_session(g, "0", x, &y0);
  run_session(g, "3", x, &y3);
  const float *a = ge_tensor_data(y0), *b = ge_tensor_data(y3);
  for (size_t i = 0; i < ge_tensor_numel(y0); i++) assert_float_equal(a[i], b[i], 1e-4);
  ge_tensor_free(y0);
  ge_tensor_free(y3);
  ge_tensor_free(x);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ outputs into the caller's tensors */

static ge_session *session_with(ge_graph *g, const char *threads) {
  ge_option opts[] = {{"ge.intraOpThreads", threads}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(opts, 1, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  return s;
}

static void test_run_into(void **unused) {
  (void)unused;
  ge_graph *g = chain_graph(4, 17);
  ge_session *s = session_with(g, "1");
  ge_dtype dt;
  int64_t dims[8];
  size_t rank = 0;
  assert_int_equal(ge_session_graph_output_info(s, 1, 0, &dt, dims, 8, &rank), GE_OK);
  assert_int_equal(dt, GE_F32);
  assert_int_equal(rank, 2);
  assert_int_equal(dims[0], 4);
  assert_int_equal(dims[1], 17);
  assert_int_equal(ge_session_graph_output_info(s, 1, 1, &dt, dims, 8, &rank), GE_ERR_INVALID_ARGUMENT);

  int64_t xd[] = {4, 17};
  ge_tensor *x = tensor_f32(xd, 2, -2.f, 0.05f);
  float ybuf[4 * 17];
  ge_tensor *y = NULL;
  assert_int_equal(ge_tensor_wrap(GE_F32, xd, 2, ybuf, sizeof ybuf, NULL, NULL, &y), GE_OK);
  for (int rep = 0; rep < 2; rep++) {
    memset(ybuf, 0xff, sizeof ybuf);
    assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 1), GE_OK);
    assert_ptr_equal(ge_tensor_data(y), ybuf);
    const float *xp = ge_tensor_data(x);
    for (size_t i = 0; i < 4 * 17; i++) assert_float_equal(ybuf[i], chain_ref(xp[i]), 1e-6);
  }
  /* the output tensor may be the input itself: written after the run has read it */
  float xs[4 * 17];
  memcpy(xs, ge_tensor_data(x), sizeof xs);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &x, 1), GE_OK);
  const float *xp = ge_tensor_data(x);
  for (size_t i = 0; i < 4 * 17; i++) assert_float_equal(xp[i], chain_ref(xs[i]), 1e-6);

  /* wrong shape / dtype / missing tensor: errors that name the output */
  int64_t bad[] = {4, 16};
  ge_tensor *yb = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, bad, 2, &yb), GE_OK);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &yb, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "'y'"));
  ge_tensor_free(yb);
  assert_int_equal(ge_tensor_create(GE_F64, xd, 2, &yb), GE_OK);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &yb, 1), GE_ERR_SHAPE);
  ge_tensor_free(yb);
  ge_tensor *none = NULL;
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &none, 1), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 2), GE_ERR_INVALID_ARGUMENT);
  ge_session_free(s);
  ge_tensor_free(y);
  ge_tensor_free(x);
  ge_graph_free(g);
}

/* An output that is a graph input passes through (copied), a duplicated output is written
   twice, and a dynamic-shape graph compiles for the concrete shape and writes directly. */
static void test_run_into_passthrough_and_dynamic(void **unused) {
  (void)unused;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("pt", &g), GE_OK);
  int64_t xd[] = {-1, 3};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  const char *i0[] = {"x"}, *o0[] = {"r"};
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu", i0, 1, o0, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "x"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "r"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "r"), GE_OK);
  ge_session *s = session_with(g, "1");
  int64_t d[] = {5, 3};
  ge_tensor *x = tensor_f32(d, 2, -1.f, 0.2f), *outs[3] = {0};
  for (int i = 0; i < 3; i++) assert_int_equal(ge_tensor_create(GE_F32, d, 2, &outs[i]), GE_OK);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, outs, 3), GE_OK);
  const float *xp = ge_tensor_data(x);
  for (size_t i = 0; i < 15; i++) {
    assert_float_equal(((float *)ge_tensor_data(outs[0]))[i], xp[i], 0);
    float r = xp[i] > 0 ? xp[i] : 0;
    assert_float_equal(((float *)ge_tensor_data(outs[1]))[i], r, 0);
    assert_float_equal(((float *)ge_tensor_data(outs[2]))[i], r, 0);
  }
  for (int i = 0; i < 3; i++) ge_tensor_free(outs[i]);
  ge_tensor_free(x);
  ge_session_free(s);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ allocation-free runs */

typedef struct conc_arg {
  ge_session *s;
  int id;
  int bad;
} conc_arg;

static void *conc_main(void *arg) {
  conc_arg *a = arg;
  int64_t xd[] = {16, 64};
  ge_tensor *x = tensor_f32(xd, 2, (float)a->id - 2.f, 0.01f), *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &y), GE_OK);
  for (int rep = 0; rep < 20; rep++) {
    if (ge_session_run_graph_into(a->s, 1, &x, 1, &y, 1) != GE_OK) a->bad++;
    const float *xp = ge_tensor_data(x), *yp = ge_tensor_data(y);
    for (size_t i = 0; i < 16 * 64; i++)
      if (fabsf(yp[i] - chain_ref(xp[i])) > 1e-6f) a->bad++;
  }
  ge_tensor_free(x);
  ge_tensor_free(y);
  return NULL;
}

/* The allocations of the process during `reps` runs of s from x into y. */
static long allocs_in_runs(ge_session *s, ge_tensor *x, ge_tensor *y, int reps) {
  atomic_store(&n_allocs, 0);
  atomic_store(&counting, 1);
  for (int rep = 0; rep < reps; rep++) assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 1), GE_OK);
  atomic_store(&counting, 0);
  return atomic_load(&n_allocs);
}

/* Element-wise kernels, on one thread and on two (a tensor big enough to be split: the
   threads come from the runtime's team, none is created per run). */
static void check_no_alloc(int64_t rows, int64_t cols, const char *threads) {
  ge_graph *g = chain_graph(rows, cols);
  ge_session *s = session_with(g, threads);
  int64_t xd[] = {rows, cols};
  size_t n = (size_t)(rows * cols);
  ge_tensor *x = tensor_f32(xd, 2, -1.f, 0.02f), *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &y), GE_OK);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 1), GE_OK); /* first run: compiles, makes a workspace */
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 1), GE_OK);
  long allocs = allocs_in_runs(s, x, y, 10);
  if (COUNT_ALLOCS) assert_int_equal(allocs, 0);
  const float *xp = ge_tensor_data(x), *yp = ge_tensor_data(y);
  for (size_t i = 0; i < n; i++) assert_float_equal(yp[i], chain_ref(xp[i]), 1e-6);
  ge_tensor_free(x);
  ge_tensor_free(y);
  ge_session_free(s);
  ge_graph_free(g);
}

static void test_runs_allocate_nothing(void **unused) {
  (void)unused;
  check_no_alloc(256, 1024, "2");
  ge_graph *g = chain_graph(16, 64);
  ge_session *s = session_with(g, "1");
  int64_t xd[] = {16, 64};
  ge_tensor *x = tensor_f32(xd, 2, -1.f, 0.02f), *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &y), GE_OK);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 1), GE_OK); /* first run: compiles, makes a workspace */
  long allocs = allocs_in_runs(s, x, y, 10);
  if (COUNT_ALLOCS) assert_int_equal(allocs, 0);
  const float *xp = ge_tensor_data(x), *yp = ge_tensor_data(y);
  for (size_t i = 0; i < 16 * 64; i++) assert_float_equal(yp[i], chain_ref(xp[i]), 1e-6);

  /* concurrent runs each take a workspace of their own and agree with the reference */
  pthread_t th[4];
  conc_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (conc_arg){.s = s, .id = i};
    assert_int_equal(pthread_create(&th[i], NULL, conc_main, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(args[i].bad, 0);
  }
  ge_tensor_free(x);
  ge_tensor_free(y);
  ge_session_free(s);
  ge_graph_free(g);
}

/* The same with oneDNN kernels (a residual conv block, level 3: FusedConv with a Sum input). */
static void test_dnnl_runs_allocate_nothing(void **unused) {
  (void)unused;
  ge_graph *g = residual_graph();
  ge_session *s = session_with(g, "1");
  int64_t xd[] = {1, 8, 6, 6};
  int64_t yd[] = {1, 8, 5, 5}; /* after the 2x2 pool */
  ge_tensor *x = tensor_f32(xd, 4, -1.f, 0.03f), *y = NULL, *ref = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, yd, 4, &y), GE_OK);
  assert_int_equal(ge_session_run_graph(s, 1, &x, 1, &ref, 1), GE_OK);
  assert_int_equal(ge_session_run_graph_into(s, 1, &x, 1, &y, 1), GE_OK);
  print_message("allocations in 10 oneDNN runs: %ld\n", allocs_in_runs(s, x, y, 10));
  const float *a = ge_tensor_data(ref), *b = ge_tensor_data(y);
  for (size_t i = 0; i < ge_tensor_numel(y); i++) assert_float_equal(a[i], b[i], 0);
  ge_tensor_free(x);
  ge_tensor_free(y);
  ge_tensor_free(ref);
  ge_session_free(s);
  ge_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inplace_chain),
      cmocka_unit_test(test_inplace_residual),
      cmocka_unit_test(test_run_into),
      cmocka_unit_test(test_run_into_passthrough_and_dynamic),
      cmocka_unit_test(test_runs_allocate_nothing),
      cmocka_unit_test(test_dnnl_runs_allocate_nothing),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
}
