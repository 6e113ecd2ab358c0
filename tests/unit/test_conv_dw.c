/* ai.ge::FusedConvDw (ops/fused.h): a 1x1 convolution and the depthwise one that reads it,
 * created by the conv_dw pass (passes/conv_dw.c) and run a band of rows at a time by the
 * oneDNN kernel (backend/cpu/dnnl/dnnl_convdw.c):
 *   - the rewrite: which pairs fuse (activations carried over under their names), and which do
 *     not (stride 1, a strided or padded first convolution, a second reader, a graph output,
 *     a value that fits the L2 cache unless the pass is listed in ge.passes.enable, a
 *     precision mode); the fused graph computes what the original does (reference kernels);
 *   - the banded kernel inside a CNN (channels-last activations): rows of the 1x1's output of
 *     43-51 KiB, so that a third of a 2 MiB L2 cuts each image into 8, 6, 6 and 5 bands, with
 *     odd sizes, asymmetric pads, strides 2 and 3, a dilated window, a batch of 3, last bands
 *     of one row; outputs equal to the unfused plan's within 1e-4 at 1, 2 and 3 threads, and a
 *     second run (cached buffers) equal to the first;
 *   - the reference kernel's errors name the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ge/ge.h"
#include "helpers/test_common.h"
#include "ir/ir.h"
#include "passes/pass.h"

static uint64_t rng = 777;
static ge_tensor *rand_tensor(const int64_t *dims, size_t rank, float scale) {
  return ge_test_rand_f32(&rng, dims, rank, scale);
}

static void constant(ge_graph *g, const char *name, ge_tensor *t) {
  assert_int_equal(ge_graph_add_constant(g, name, t), GE_OK);
  ge_tensor_free(t);
}

static void node(ge_graph *g, const char *op, const char *name, const char *const *in, size_t n_in, const char *out,
                 const ge_attr *attrs, size_t n_attrs) {
  const char *outs[1] = {out};
  ge_status st = ge_graph_add_node(g, op, name, in, n_in, outs, 1, attrs, n_attrs);
  if (st != GE_OK) fail_msg("%s: %s", name, ge_last_error());
}

/* A convolution "name" from x to y: weights [cout, cin / group, k, k] (and a bias) as constants. */
static void conv(ge_graph *g, const char *name, const char *x, const char *y, int64_t cin, int64_t cout, int64_t k,
                 int64_t group, int64_t stride, const int64_t *pads, int64_t dil, bool bias) {
  char wn[64], bn[64];
  snprintf(wn, sizeof wn, "%s_w", name);
  snprintf(bn, sizeof bn, "%s_b", name);
  int64_t wd[] = {cout, cin / group, k, k}, bd[] = {cout};
  constant(g, wn, rand_tensor(wd, 4, 1.f / sqrtf((float)(cin / group * k * k))));
  if (bias) constant(g, bn, rand_tensor(bd, 1, 0.2f));
  int64_t st[] = {stride, stride}, dl[] = {dil, dil}, zero[] = {0, 0, 0, 0};
  ge_attr a[] = {GE_ATTR_INTS("pads", pads ? pads : zero, 4), GE_ATTR_INTS("strides", st, 2),
                 GE_ATTR_INTS("dilations", dl, 2), GE_ATTR_INT("group", group)};
  const char *in[3] = {x, wn, bn};
  node(g, "Conv", name, in, bias ? 3 : 2, y, a, 4);
}

static void clip6(ge_graph *g, const char *name, const char *x, const char *y) {
  char lo[64], hi[64];
  snprintf(lo, sizeof lo, "%s_lo", name);
  snprintf(hi, sizeof hi, "%s_hi", name);
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, NULL, 0, &t), GE_OK);
  *(float *)t->data = 0.f;
  constant(g, lo, t);
  assert_int_equal(ge_tensor_create(GE_F32, NULL, 0, &t), GE_OK);
  *(float *)t->data = 6.f;
  constant(g, hi, t);
  const char *in[3] = {x, lo, hi};
  node(g, "Clip", name, in, 3, y, NULL, 0);
}

static ge_session *session(int threads, const char *level, const char *enable, const char *disable,
                           const char *precision) {
  char th[8];
  snprintf(th, sizeof th, "%d", threads);
  ge_option o[5] = {{"ge.intraOpThreads", th}, {"ge.graphOptimizationLevel", level}};
  size_t n = 2;
  if (enable) o[n++] = (ge_option){"ge.passes.enable", enable};
  if (disable) o[n++] = (ge_option){"ge.passes.disable", disable};
  if (precision) o[n++] = (ge_option){"ge.exec.precision_mode", precision};
  ge_session *s = NULL;
  if (ge_session_create(o, n, &s) != GE_OK) fail_msg("session: %s", ge_last_error());
  return s;
}

static ge_tensor *run_graph(ge_session *s, const ge_graph *g, ge_tensor *x) {
  ge_tensor *y = NULL;
  ge_status st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, &x, 1, &y, 1);
  if (st != GE_OK) fail_msg("run: %s", ge_last_error());
  return y;
}

static void assert_close(const ge_tensor *a, const ge_tensor *b, float tol, const char *what) {
  assert_int_equal(a->numel, b->numel);
  const float *x = a->data, *y = b->data;
  for (size_t i = 0; i < a->numel; i++)
    if (!(fabsf(x[i] - y[i]) <= tol * (1 + fabsf(y[i])))) fail_msg("%s: element %zu: %g vs %g", what, i, x[i], y[i]);
}

/* ------------------------------------------------------------------ the rewrite */

/* x [n, c, h, w] -> Conv 1x1 (e, bias) -> Clip(0, 6) -> depthwise k x k / stride (bias) -> Relu -> y;
   flags: 1 the 1x1 has stride 2, 2 the mid value is also a graph output, 4 a second reader (Neg) */
static ge_graph *pair(int64_t n, int64_t c, int64_t e, int64_t h, int64_t w, int64_t k, int64_t stride, int flags) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("pair", &g), GE_OK);
  int64_t xd[] = {n, c, h, w};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  int64_t pads[] = {k / 2, k / 2, k / 2, k / 2};
  conv(g, "pw", "x", "m0", c, e, 1, 1, (flags & 1) ? 2 : 1, NULL, 1, true);
  clip6(g, "clip", "m0", "m");
  conv(g, "dw", "m", "d", e, e, k, e, stride, pads, 1, true);
  const char *r[1] = {"d"};
  node(g, "Relu", "relu", r, 1, "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  if (flags & 2) assert_int_equal(ge_graph_add_output(g, "m"), GE_OK);
  if (flags & 4) {
    const char *m[1] = {"m"};
    node(g, "Neg", "neg", m, 1, "z", NULL, 0);
    assert_int_equal(ge_graph_add_output(g, "z"), GE_OK);
  }
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  return g;
}

static size_t count_op(const ge_graph *g, const char *op) {
  size_t k = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].op_type, op)) k++;
  return k;
}

/* the passes at level 3, conv_dw listed in enable when `force`, for `threads` and a precision mode */
static ge_graph *optimized(const ge_graph *g, bool force, int threads, int precision) {
  ge_graph *o = NULL;
  assert_int_equal(ge_graph_clone(g, NULL, &o), GE_OK);
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 3);
  cfg.threads = threads;
  cfg.precision = precision;
  if (force) assert_int_equal(ge_pass_config_add_list(&cfg, true, "conv_dw"), GE_OK);
  ge_status st = ge_passes_run(o, &cfg, NULL);
  ge_pass_config_clear(&cfg);
  if (st != GE_OK) fail_msg("passes: %s", ge_last_error());
  return o;
}

static void test_rewrite(void **unused) {
  (void)unused;
  ge_graph *g = pair(2, 5, 12, 9, 11, 3, 2, 0);
  ge_graph *o = optimized(g, true, 2, GE_PRECISION_KEEP);
  assert_int_equal(o->n_nodes, 1);
  const ge_node *f = &o->nodes[0];
  assert_string_equal(f->op_type, "FusedConvDw");
  assert_string_equal(f->domain, "ai.ge");
  assert_int_equal(f->n_inputs, 5);
  assert_string_equal(ge_node_attr_string(f, "pw_activation", ""), "Clip");
  const float *pp = NULL;
  size_t np = 0;
  ge_node_attr_floats(f, "pw_activation_params", &pp, &np);
  assert_int_equal(np, 2);
  assert_true(pp[0] == 0.f && pp[1] == 6.f);
  assert_string_equal(ge_node_attr_string(f, "activation", ""), "Relu");
  assert_int_equal(ge_node_attr_int(f, "group", 1), 12);
  /* the same outputs: both graphs at level 0 (the fused one on the reference kernel: its
     activations are plain) */
  int64_t xd[] = {2, 5, 9, 11};
  ge_tensor *x = rand_tensor(xd, 4, 2.f);
  ge_session *s0 = session(2, "0", NULL, NULL, NULL), *s1 = session(2, "0", NULL, NULL, NULL);
  ge_tensor *a = run_graph(s0, g, x), *b = run_graph(s1, o, x);
  assert_int_equal(b->rank, 4);
  assert_int_equal(b->dims[2], 5);
  assert_int_equal(b->dims[3], 6);
  assert_close(b, a, 1e-5f, "reference FusedConvDw");
  ge_tensor_free(a);
  ge_tensor_free(b);
  ge_session_free(s0);
  ge_session_free(s1);
  ge_tensor_free(x);
  ge_graph_free(o);
  ge_graph_free(g);

  /* pairs that stay apart */
  struct {
    int64_t k, stride;
    int flags;
    const char *why;
  } keep[] = {{3, 1, 0, "depthwise stride 1"}, {3, 2, 1, "a strided 1x1"}, {3, 2, 2, "the value is a graph output"},
              {3, 2, 4, "a second reader"}};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
    g = pair(1, 4, 8, 9, 9, keep[i].k, keep[i].stride, keep[i].flags);
    o = optimized(g, true, 1, GE_PRECISION_KEEP);
    if (count_op(o, "FusedConvDw")) fail_msg("fused despite %s", keep[i].why);
    ge_graph_free(o);
    ge_graph_free(g);
  }
  /* the size rule: [1, 96, 112, 112] (4.8 MB) fuses at 1 thread (any L2 under 4.8 MB), a
     [1, 8, 9, 9] value does not unless the pass is listed; no precision mode fuses */
  g = pair(1, 4, 8, 9, 9, 3, 2, 0);
  o = optimized(g, false, 1, GE_PRECISION_KEEP);
  assert_int_equal(count_op(o, "FusedConvDw"), 0);
  ge_graph_free(o);
  ge_graph_free(g);
  g = pair(1, 16, 96, 112, 112, 3, 2, 0);
  o = optimized(g, false, 1, GE_PRECISION_KEEP);
  assert_int_equal(count_op(o, "FusedConvDw"), 1);
  ge_graph_free(o);
  o = optimized(g, true, 1, GE_PRECISION_FP32_TO_BF16);
  assert_int_equal(count_op(o, "FusedConvDw"), 0);
  ge_graph_free(o);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ the banded kernel */

typedef struct cnn_case {
  int64_t n, c, e, h, w, k, stride, dil;
  int64_t pads[4];
} cnn_case;

/* x [n, 3, h, w] -> Conv 3x3 pads 1 (c) -> Conv 1x1 (e) + Clip -> depthwise (case) + Relu ->
   Conv 1x1 (c) -> y: the pair's input and output are channels-last */
static ge_graph *cnn(const cnn_case *t) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("cnn", &g), GE_OK);
  int64_t xd[] = {t->n, 3, t->h, t->w}, p1[] = {1, 1, 1, 1};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  conv(g, "stem", "x", "a", 3, t->c, 3, 1, 1, p1, 1, true);
  conv(g, "pw", "a", "m0", t->c, t->e, 1, 1, 1, NULL, 1, true);
  clip6(g, "clip", "m0", "m");
  conv(g, "dw", "m", "d0", t->e, t->e, t->k, t->e, t->stride, t->pads, t->dil, true);
  const char *r[1] = {"d0"};
  node(g, "Relu", "relu", r, 1, "d", NULL, 0);
  conv(g, "proj", "d", "y", t->e, t->c, 1, 1, 1, NULL, 1, false);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  return g;
}

static void test_banded(void **unused) {
  (void)unused;
  static const cnn_case cases[] = {
      /* MobileNetV2's 112x112 expansion and stride-2 step */
      {1, 16, 96, 112, 112, 3, 2, 1, {1, 1, 1, 1}},
      /* odd sizes, a last band of one row, asymmetric pads */
      {1, 8, 64, 63, 200, 3, 2, 1, {0, 1, 1, 0}},
      /* 5x5 / 3, a batch of 3 */
      {3, 8, 80, 47, 160, 5, 3, 1, {2, 2, 2, 2}},
      /* a dilated window */
      {2, 12, 48, 50, 256, 3, 2, 2, {2, 1, 1, 2}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const cnn_case *t = &cases[i];
    ge_graph *g = cnn(t);
    int64_t xd[] = {t->n, 3, t->h, t->w};
    ge_tensor *x = rand_tensor(xd, 4, 1.f);
    ge_session *ref = session(2, "3", NULL, "conv_dw", NULL);
    ge_tensor *want = run_graph(ref, g, x);
    ge_session_free(ref);
    for (int th = 1; th <= 3; th++) {
      ge_session *s = session(th, "3", "conv_dw", NULL, NULL);
      ge_tensor *y = run_graph(s, g, x), *y2 = NULL;
      ge_status st = ge_session_run_graph(s, 1, &x, 1, &y2, 1);
      if (st != GE_OK) fail_msg("second run: %s", ge_last_error());
      char what[96];
      snprintf(what, sizeof what, "case %zu at %d threads", i, th);
      assert_close(y, want, 1e-4f, what);
      assert_memory_equal(y->data, y2->data, y->nbytes);
      ge_tensor_free(y);
      ge_tensor_free(y2);
      ge_session_free(s);
    }
    ge_tensor_free(want);
    ge_tensor_free(x);
    ge_graph_free(g);
  }
}

/* ------------------------------------------------------------------ errors */

static void test_errors(void **unused) {
  (void)unused;
  /* a FusedConvDw whose W is not 1x1: the graph is refused, naming the problem */
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("bad", &g), GE_OK);
  int64_t xd[] = {1, 4, 8, 8}, wd[] = {8, 4, 3, 3}, wdd[] = {8, 1, 3, 3};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  constant(g, "w", rand_tensor(wd, 4, 0.3f));
  constant(g, "wd", rand_tensor(wdd, 4, 0.3f));
  int64_t st[] = {2, 2}, pads[] = {1, 1, 1, 1};
  ge_attr a[] = {GE_ATTR_INT("group", 8), GE_ATTR_INTS("strides", st, 2), GE_ATTR_INTS("pads", pads, 4)};
  const char *in[5] = {"x", "w", "", "wd", ""};
  node(g, "ai.ge::FusedConvDw", "f", in, 5, "y", a, 3);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_session *s = session(1, "0", NULL, NULL, NULL);
  ge_tensor *x = rand_tensor(xd, 4, 1.f), *y = NULL;
  ge_status rc = ge_session_add_graph(s, 1, g);
  if (rc == GE_OK) rc = ge_session_run_graph(s, 1, &x, 1, &y, 1);
  assert_int_not_equal(rc, GE_OK);
  assert_non_null(strstr(ge_last_error(), "1x1"));
  ge_tensor_free(x);
  ge_session_free(s);
  ge_graph_free(g);
}

int main(void) {
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewrite),
      cmocka_unit_test(test_banded),
      cmocka_unit_test(test_errors),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ge_finalize();
  return rc;
}
