/* Weights are held once: shared constant storage behind graph clones, and the ONNX loader
 * (mapped file, raw_data buffers taken over by the tensors instead of copied). */
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
#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "ir/ir.h"

static ge_tensor *iota_f32(int64_t n) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, &n, 1, &t), GE_OK);
  float *p = ge_tensor_data(t);
  for (int64_t i = 0; i < n; i++) p[i] = (float)i * 0.5f - 3.f;
  return t;
}

static void check_iota(const ge_tensor *t, int64_t n) {
  assert_non_null(t);
  assert_int_equal(t->numel, (size_t)n);
  const float *p = t->data;
  for (int64_t i = 0; i < n; i++) assert_true(p[i] == (float)i * 0.5f - 3.f);
}

static void test_share_tensor(void **state) {
  (void)state;
  ge_tensor *t = iota_f32(1000);
  void *data = t->data;
  assert_false(ge_tensor_is_shared(t));
  /* not shared: ge_tensor_share deep-copies */
  ge_tensor *c = NULL;
  assert_int_equal(ge_tensor_share(t, &c), GE_OK);
  assert_ptr_not_equal(c->data, data);
  check_iota(c, 1000);
  ge_tensor_free(c);
  /* shared: same storage, alive until the last reference goes */
  assert_int_equal(ge_tensor_make_shared(t), GE_OK);
  assert_true(ge_tensor_is_shared(t));
  assert_ptr_equal(t->data, data);
  assert_int_equal(ge_tensor_make_shared(t), GE_OK); /* idempotent */
  ge_tensor *a = NULL, *b = NULL;
  assert_int_equal(ge_tensor_share(t, &a), GE_OK);
  assert_int_equal(ge_tensor_share(a, &b), GE_OK);
  assert_ptr_equal(a->data, data);
  assert_ptr_equal(b->data, data);
  ge_tensor_free(t);
  check_iota(a, 1000);
  ge_tensor_free(a);
  check_iota(b, 1000);
  /* a deep clone of a shared tensor is its own */
  assert_int_equal(ge_tensor_clone(b, &c), GE_OK);
  assert_false(ge_tensor_is_shared(c));
  assert_ptr_not_equal(c->data, b->data);
  ge_tensor_free(b);
  check_iota(c, 1000);
  ge_tensor_free(c);
}

static void count_release(void *data, void *ctx) {
  free(data);
  ++*(int *)ctx;
}

static void test_share_wrapped(void **state) {
  (void)state;
  int released = 0;
  float *mem = malloc(16 * sizeof(float));
  assert_non_null(mem);
  for (int i = 0; i < 16; i++) mem[i] = (float)i;
  int64_t n = 16;
  ge_tensor *t = NULL, *c = NULL;
  assert_int_equal(ge_tensor_wrap(GE_F32, &n, 1, mem, sizeof(float) * 16, count_release, &released, &t),
                   GE_OK);
  assert_int_equal(ge_tensor_make_shared(t), GE_OK);
  assert_int_equal(ge_tensor_share(t, &c), GE_OK);
  assert_ptr_equal(c->data, mem);
  ge_tensor_free(t);
  assert_int_equal(released, 0);
  assert_true(((float *)c->data)[15] == 15.f);
  ge_tensor_free(c);
  assert_int_equal(released, 1);
}

/* A graph with one large weight (MatMul) and a small one (Add). */
static ge_graph *weight_graph(int64_t k, int64_t m) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("w", &g), GE_OK);
  assert_int_equal(ge_graph_set_opset(g, "", 17), GE_OK);
  int64_t xd[] = {2, k};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  ge_tensor *w = iota_f32(k * m);
  int64_t wd[] = {k, m};
  ge_tensor *w2 = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, wd, 2, &w2), GE_OK);
  memcpy(w2->data, w->data, w->nbytes);
  ge_tensor_free(w);
  assert_int_equal(ge_graph_add_constant(g, "w", w2), GE_OK);
  ge_tensor_free(w2);
  ge_tensor *b = iota_f32(m);
  assert_int_equal(ge_graph_add_constant(g, "b", b), GE_OK);
  ge_tensor_free(b);
  const char *mi[] = {"x", "w"}, *mo[] = {"xw"}, *ai[] = {"xw", "b"}, *ao[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "MatMul", "mm", mi, 2, mo, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Add", "add", ai, 2, ao, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static const ge_tensor *const_of(const ge_graph *g, const char *name) {
  int32_t id = ge_graph_find_value(g, name);
  assert_true(id >= 0);
  assert_int_equal(g->values[id].kind, GE_VALUE_CONSTANT);
  return g->values[id].constant;
}

static ge_tensor *run_graph(const ge_graph *g, int64_t k) {
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  ge_status st = ge_session_add_graph(s, 1, g);
  int64_t xd[] = {2, k};
  ge_tensor *x = NULL, *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &x), GE_OK);
  float *xp = x->data;
  for (int64_t i = 0; i < 2 * k; i++) xp[i] = (float)(i % 7) - 3.f;
  if (st == GE_OK) st = ge_session_run_graph(s, 1, &x, 1, &y, 1);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  ge_tensor_free(x);
  ge_session_free(s);
  return y;
}

static void test_graph_clone_shares(void **state) {
  (void)state;
  const int64_t k = 64, m = 48;
  ge_graph *g = weight_graph(k, m);
  const ge_tensor *w = const_of(g, "w");
  assert_true(ge_tensor_is_shared(w));
  ge_graph *c = NULL;
  assert_int_equal(ge_graph_clone(g, NULL, &c), GE_OK);
  assert_ptr_equal(const_of(c, "w")->data, w->data);
  assert_ptr_equal(const_of(c, "b")->data, const_of(g, "b")->data);
  ge_tensor *y0 = run_graph(g, k);
  /* the clone outlives the original */
  ge_graph_free(g);
  check_iota(const_of(c, "b"), m);
  ge_tensor *y1 = run_graph(c, k);
  assert_int_equal(y0->nbytes, y1->nbytes);
  assert_memory_equal(y0->data, y1->data, y0->nbytes);
  ge_tensor_free(y0);
  ge_tensor_free(y1);
  ge_graph_free(c);
}

static void test_onnx_load_takes_raw_data(void **state) {
  (void)state;
  const int64_t k = 64, m = 48; /* w: 12 KiB of raw_data, b: 192 bytes */
  ge_graph *g = weight_graph(k, m);
  char path[] = "/tmp/ge_test_shared_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  char onnx_path[64];
  snprintf(onnx_path, sizeof onnx_path, "%s.onnx", path);
  assert_int_equal(ge_graph_save(g, onnx_path), GE_OK);
  ge_tensor *y0 = run_graph(g, k);
  ge_graph_free(g);

  ge_graph *l = NULL;
  ge_status st = ge_graph_load(onnx_path, NULL, 0, &l);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  const ge_tensor *w = const_of(l, "w");
  assert_true(ge_tensor_is_shared(w));
  assert_int_equal((uintptr_t)w->data % 64, 0);
  const float *wp = w->data;
  for (int64_t i = 0; i < k * m; i++) assert_true(wp[i] == (float)i * 0.5f - 3.f);
  check_iota(const_of(l, "b"), m);
  ge_graph *c = NULL;
  assert_int_equal(ge_graph_clone(l, NULL, &c), GE_OK);
  assert_ptr_equal(const_of(c, "w")->data, w->data);
  ge_graph_free(l);
  ge_tensor *y1 = run_graph(c, k);
  assert_memory_equal(y0->data, y1->data, y0->nbytes);
  ge_graph_free(c);
  ge_tensor_free(y0);
  ge_tensor_free(y1);
  unlink(onnx_path);
  unlink(path);
}

/* x [16, 256] -> MatMul(w) -> MatMul(w) -> MatMul(w2) -> y: w read by two nodes. */
static ge_graph *tied_graph(void) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("tied", &g), GE_OK);
  assert_int_equal(ge_graph_set_opset(g, "", 17), GE_OK);
  int64_t xd[] = {16, 256}, wd[] = {256, 256};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  const char *names[] = {"w", "w2"};
  for (int c = 0; c < 2; c++) {
    ge_tensor *w = NULL;
    assert_int_equal(ge_tensor_create(GE_F32, wd, 2, &w), GE_OK);
    float *p = w->data;
    for (int64_t i = 0; i < 256 * 256; i++) p[i] = (float)((i * 37 + c * 11) % 23 - 11) / 64.f;
    assert_int_equal(ge_graph_add_constant(g, names[c], w), GE_OK);
    ge_tensor_free(w);
  }
  const char *i1[] = {"x", "w"}, *o1[] = {"y1"}, *i2[] = {"y1", "w"}, *o2[] = {"y2"}, *i3[] = {"y2", "w2"},
             *o3[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "MatMul", "mm1", i1, 2, o1, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "MatMul", "mm2", i2, 2, o2, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "MatMul", "mm3", i3, 2, o3, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static ge_tensor *tied_run(ge_session *s, const float **want) {
  int64_t xd[] = {16, 256};
  ge_tensor *x = NULL, *y = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &x), GE_OK);
  float *xp = x->data;
  for (int64_t i = 0; i < 16 * 256; i++) xp[i] = (float)((i * 13) % 17 - 8) / 8.f;
  ge_status st = ge_session_run_graph(s, 1, &x, 1, &y, 1);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  /* the product in double precision */
  static double a[16 * 256], b[16 * 256];
  for (int64_t i = 0; i < 16 * 256; i++) a[i] = xp[i];
  for (int layer = 0; layer < 3; layer++) {
    const float *w = want[layer];
    for (int r = 0; r < 16; r++)
      for (int n = 0; n < 256; n++) {
        double acc = 0;
        for (int k = 0; k < 256; k++) acc += a[r * 256 + k] * (double)w[k * 256 + n];
        b[r * 256 + n] = acc;
      }
    memcpy(a, b, sizeof a);
  }
  const float *yp = y->data;
  for (int64_t i = 0; i < 16 * 256; i++) assert_true(fabs(yp[i] - a[i]) <= 1e-4 * (1.0 + fabs(a[i])));
  ge_tensor_free(x);
  return y;
}

/* Nodes that multiply by one constant hold one packed copy of it (fast/pgemm.c's shared
   panels), across the sessions that run the graph too; a distinct constant has its own, and
   the last node released frees it. */
static void test_tied_weights_packed_once(void **state) {
  (void)state;
  if (!ge_cpu_avx512_fma()) skip(); /* oneDNN packs them instead */
  const size_t one = (256 + 47) / 48 * 48 * 256 * sizeof(float); /* 6 panels of 48 columns */
  size_t base = ge_pgemm_packed_bytes();
  ge_graph *g = tied_graph();
  const float *want[3] = {const_of(g, "w")->data, const_of(g, "w")->data, const_of(g, "w2")->data};
  ge_session *s1 = NULL, *s2 = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s1), GE_OK);
  assert_int_equal(ge_session_add_graph(s1, 1, g), GE_OK);
  ge_tensor *y1 = tied_run(s1, want);
  assert_int_equal(ge_pgemm_packed_bytes() - base, 2 * one);
  assert_int_equal(ge_session_create(NULL, 0, &s2), GE_OK);
  assert_int_equal(ge_session_add_graph(s2, 1, g), GE_OK);
  ge_tensor *y2 = tied_run(s2, want);
  assert_int_equal(ge_pgemm_packed_bytes() - base, 2 * one);
  assert_memory_equal(y1->data, y2->data, y1->nbytes);
  ge_session_free(s1); /* the other session's nodes keep the blocks */
  ge_tensor_free(y2);
  y2 = tied_run(s2, want);
  assert_memory_equal(y1->data, y2->data, y1->nbytes);
  assert_int_equal(ge_pgemm_packed_bytes() - base, 2 * one);
  ge_session_free(s2);
  assert_int_equal(ge_pgemm_packed_bytes(), base);
  ge_tensor_free(y1);
  ge_tensor_free(y2);
  ge_graph_free(g);
}

int main(void) {
  if (ge_initialize(NULL, 0) != GE_OK) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_share_tensor),
      cmocka_unit_test(test_share_wrapped),
      cmocka_unit_test(test_graph_clone_shares),
      cmocka_unit_test(test_onnx_load_takes_raw_data),
      cmocka_unit_test(test_tied_weights_packed_once),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ge_finalize();
  return rc;
}
