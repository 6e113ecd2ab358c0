/* Compile-time layout assignment (src/compiler/layout.c) and the oneDNN kernels that honour
 * it (src/backend/cpu/dnnl/):
 *   - ge_layout_convert round trips and ge_layout_fits;
 *   - a small Conv -> FusedConv(Relu) -> MaxPool(ceil) -> Conv -> AveragePool(ceil, declined by
 *     oneDNN: the wrapped reference kernel) -> Conv graph compiled under every policy: the
 *     layouts the plan records, and outputs equal to the all-plain plan's within 1e-4;
 *   - dumps (ge.exec.enableDump) of non-plain values are written plain;
 *   - bf16 storage (GE_LAYOUT_NHWC_BF16): its conversions, and a chain Conv -> FusedConv with
 *     residual -> MaxPool -> Conv marked bf16 under allow_fp32_to_bf16: values between them are
 *     stored bf16 (where the processor computes bf16), one also read by a float32 Conv stays
 *     float32 channels-last, and the outputs agree with float32 within bf16 tolerance (run
 *     twice, at 1 and 2 threads); not under allow_mix_precision_bf16;
 *   - row-major bf16 storage (GE_LAYOUT_BF16): its conversions (any rank), and a chain of
 *     MatMuls marked bf16 under allow_fp32_to_bf16: the values between them are stored bf16, one
 *     also read by a float32 kernel stays plain, a bf16 Conv's output read by a bf16 MatMul stays
 *     plain (neither kind takes the other's layout); outputs agree with float32 within bf16
 *     tolerance and with the plain-policy bf16 run; dumps are written plain float32;
 *   - the option ge.exec.layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>

#include <dnnl.h>

#include "compiler/layout.h"
#include "compiler/program.h"
#include "helpers/ops_harness.h"
#include "helpers/test_common.h"
#include "runtime/npy.h"
#include "runtime/options.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static ge_tensor *rand_t(const int64_t *d, size_t r, float scale) { return ge_test_rand_f32(&rng, d, r, scale); }

/* ------------------------------------------------------------------ conversions */

static void roundtrip(const int64_t *dims, int rank, int layout) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  assert_true(a && b && c);
  for (size_t i = 0; i < n; i++) a[i] = (float)i;
  assert_int_equal(ge_layout_convert(b, a, dims, rank, 4, GE_LAYOUT_PLAIN, layout), GE_OK);
  assert_int_equal(ge_layout_convert(c, b, dims, rank, 4, layout, GE_LAYOUT_PLAIN), GE_OK);
  assert_memory_equal(a, c, n * sizeof *a);
  /* spot checks of the element order: (n=0, c=1, s=0) */
  size_t sp = 1;
  for (int i = 2; i < rank; i++) sp *= (size_t)dims[i];
  if (layout == GE_LAYOUT_NHWC) assert_true(b[1] == (float)sp);
  if (layout == GE_LAYOUT_NC8C || layout == GE_LAYOUT_NC16C) assert_true(b[1] == (float)sp);
  if (layout == GE_LAYOUT_NC16C && dims[1] >= 32) /* c = 16 starts the second block */
    assert_true(b[16 * sp] == (float)(16 * sp));
  free(a);
  free(b);
  free(c);
}

static void test_convert(void **unused) {
  (void)unused;
  int64_t d4[] = {2, 32, 3, 5}, d5[] = {1, 16, 2, 3, 2}, d3[] = {3, 8, 7};
  for (int l = GE_LAYOUT_NHWC; l < GE_LAYOUT_COUNT; l++) {
    if (l == GE_LAYOUT_NHWC_BF16 || l == GE_LAYOUT_BF16) continue; /* lossy: test_convert_bf16 / _rows */
    roundtrip(d4, 4, l);
    roundtrip(d5, 5, l);
    if (l != GE_LAYOUT_NC16C) roundtrip(d3, 3, l);
  }
  /* a block that does not divide C */
  int64_t bad[] = {1, 24, 2, 2};
  float x[96] = {0}, y[96];
  assert_int_equal(ge_layout_convert(y, x, bad, 4, 4, GE_LAYOUT_PLAIN, GE_LAYOUT_NC16C), GE_ERR_INVALID_ARGUMENT);
  ge_type t = ge_test_type(GE_F32, bad, 4);
  assert_true(ge_layout_fits(GE_LAYOUT_NC8C, &t));
  assert_false(ge_layout_fits(GE_LAYOUT_NC16C, &t));
  assert_true(ge_layout_fits(GE_LAYOUT_NHWC, &t));
  int64_t two[] = {4, 4};
  ge_type t2 = ge_test_type(GE_F32, two, 2);
  assert_false(ge_layout_fits(GE_LAYOUT_NHWC, &t2));
  assert_true(ge_layout_fits(GE_LAYOUT_PLAIN, &t2));
  assert_string_equal(ge_layout_name(GE_LAYOUT_NC16C), "nChw16c");
}

/* float32 <-> bf16 storage: exact for values with 8 significant bits, round to nearest even,
   NaN kept; the element order is channels-last; only float32 elements. */
static void test_convert_bf16(void **unused) {
  (void)unused;
  int64_t d[] = {2, 5, 3, 4};
  size_t n = 2 * 5 * 3 * 4;
  float a[120], c[120], e[120];
  uint16_t b[240]; /* float32-sized like a slot: only the first half is written */
  for (size_t i = 0; i < n; i++) a[i] = (float)i - 60.f; /* exact in bf16 */
  a[7] = 1.f + 1.f / 256.f;        /* a tie: rounds to even (1.0) */
  a[8] = 1.f + 3.f / 256.f;        /* a tie: rounds to even (1 + 1/64) */
  a[9] = NAN;
  memset(b, 0xab, sizeof b);
  assert_int_equal(ge_layout_convert(b, a, d, 4, 4, GE_LAYOUT_PLAIN, GE_LAYOUT_NHWC_BF16), GE_OK);
  assert_int_equal(b[n], 0xabab);
  assert_int_equal(ge_layout_convert(c, b, d, 4, 4, GE_LAYOUT_NHWC_BF16, GE_LAYOUT_PLAIN), GE_OK);
  for (size_t i = 0; i < n; i++) {
    if (i == 9) {
      assert_true(isnan(c[i]));
      continue;
    }
    float want = i == 7 ? 1.f : i == 8 ? 1.f + 1.f / 64.f : a[i];
    if (c[i] != want) fail_msg("bf16 round trip [%zu]: %g -> %g, expected %g", i, a[i], c[i], want);
  }
  /* element (n=0, c=1, s=0) is the second stored element */
  float f;
  uint32_t u = (uint32_t)b[1] << 16;
  memcpy(&f, &u, 4);
  assert_true(f == a[12]);
  /* through channels-last float32 */
  assert_int_equal(ge_layout_convert(e, b, d, 4, 4, GE_LAYOUT_NHWC_BF16, GE_LAYOUT_NHWC), GE_OK);
  assert_int_equal(ge_layout_convert(c, e, d, 4, 4, GE_LAYOUT_NHWC, GE_LAYOUT_PLAIN), GE_OK);
  assert_true(c[0] == a[0] && c[119] == a[119]);
  assert_int_equal(ge_layout_convert(b, a, d, 4, 2, GE_LAYOUT_PLAIN, GE_LAYOUT_NHWC_BF16), GE_ERR_INVALID_ARGUMENT);
  ge_type t = ge_test_type(GE_F32, d, 4);
  assert_true(ge_layout_fits(GE_LAYOUT_NHWC_BF16, &t));
  assert_string_equal(ge_layout_name(GE_LAYOUT_NHWC_BF16), "nhwc_bf16");
}

/* ------------------------------------------------------------------ a small CNN */

/* x [1, 3, 19, 19] -> Conv3x3 (C) "a" -> FusedConv 3x3 + Relu (C) "b" -> MaxPool 3/2 ceil "c" ->
   Conv 1x1 (C2) "d" -> AveragePool 2/2 ceil_mode, count_include_pad (oneDNN declines) "e" ->
   Conv 1x1 (C) "y" */
static void build(ge_test_net *c, int64_t C, int64_t C2) {
  rng = 0x9e3779b97f4a7c15ull;
  ge_test_net_init(c, "layout", &rng);
  int64_t xd[] = {1, 3, 19, 19};
  assert_int_equal(ge_graph_add_input(c->g, "x", GE_F32, xd, 4), GE_OK);
  int64_t w1[] = {C, 3, 3, 3}, w2[] = {C, C, 3, 3}, b2[] = {C}, w3[] = {C2, C, 1, 1}, w4[] = {C, C2, 1, 1};
  ge_test_net_const(c, "w1", w1, 4, 0.3f);
  ge_test_net_const(c, "w2", w2, 4, 0.2f);
  ge_test_net_const(c, "b2", b2, 1, 0.1f);
  ge_test_net_const(c, "w3", w3, 4, 0.3f);
  ge_test_net_const(c, "w4", w4, 4, 0.3f);
  int64_t pads1[] = {1, 1, 1, 1}, k2[] = {2, 2}, s2[] = {2, 2};
  ge_attr pad_attr[] = {GE_ATTR_INTS("pads", pads1, 4)};
  ge_attr fc_attr[] = {GE_ATTR_INTS("pads", pads1, 4), GE_ATTR_STRING("activation", "Relu")};
  int64_t k3[] = {3, 3};
  /* 3x3 / 2, pads 1 and ceil mode: windows clipped on both sides (dnnl_pool.c's channels-last
     max pool) */
  ge_attr mp_attr[] = {GE_ATTR_INTS("kernel_shape", k3, 2), GE_ATTR_INTS("strides", s2, 2),
                       GE_ATTR_INTS("pads", pads1, 4), GE_ATTR_INT("ceil_mode", 1)};
  ge_attr ap_attr[] = {GE_ATTR_INTS("kernel_shape", k2, 2), GE_ATTR_INTS("strides", s2, 2),
                       GE_ATTR_INT("ceil_mode", 1), GE_ATTR_INT("count_include_pad", 1)};
  ge_test_net_node(c, "Conv", "c1", (const char *[]){"x", "w1"}, 2, "a", pad_attr, 1);
  ge_test_net_node(c, "ai.ge::FusedConv", "c2", (const char *[]){"a", "w2", "b2"}, 3, "b", fc_attr, 2);
  ge_test_net_node(c, "MaxPool", "mp", (const char *[]){"b"}, 1, "c", mp_attr, 4);
  ge_test_net_node(c, "Conv", "c3", (const char *[]){"c", "w3"}, 2, "d", NULL, 0);
  ge_test_net_node(c, "AveragePool", "ap", (const char *[]){"d"}, 1, "e", ap_attr, 4);
  ge_test_net_node(c, "Conv", "c4", (const char *[]){"e", "w4"}, 2, "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(c->g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(c->g), GE_OK);
}

/* A plan of g at `threads` threads with ge.exec.precision_mode = mode and ge.exec.layout =
   policy (NULL: the option left at its default). */
static ge_plan *compile_opts(const ge_graph *g, const char *mode, const char *policy, int threads) {
  ge_options o;
  ge_options_default(&o);
  char th[8];
  snprintf(th, sizeof th, "%d", threads);
  ge_option kv[3] = {{"ge.intraOpThreads", th}};
  size_t n = 1;
  if (mode) kv[n++] = (ge_option){"ge.exec.precision_mode", mode};
  if (policy) kv[n++] = (ge_option){"ge.exec.layout", policy};
  assert_int_equal(ge_options_apply(&o, kv, n), GE_OK);
  ge_plan *p = NULL;
  ge_status st = ge_plan_compile(g, NULL, &o, &p);
  if (st != GE_OK) fail_msg("compile (%s, %s): %s", mode ? mode : "-", policy ? policy : "-", ge_last_error());
  assert_non_null(p->layout);
  return p;
}

static int lay(const ge_plan *p, const char *name) {
  int32_t v = ge_graph_find_value(p->graph, name);
  assert_true(v >= 0);
  return p->layout[v];
}

static ge_tensor *run(const ge_plan *p, ge_tensor *x) {
  ge_tensor *y = NULL;
  ge_status st = ge_plan_run(p, &x, 1, &y, 1);
  if (st != GE_OK) fail_msg("run: %s", ge_last_error());
  return y;
}

static void check_net(int64_t C, int64_t C2, int threads) {
  ge_test_net n;
  build(&n, C, C2);
  int64_t xd[] = {1, 3, 19, 19};
  ge_tensor *x = rand_t(xd, 4, 1.f);
  ge_plan *pp = compile_opts(n.g, NULL, "plain", threads);
  for (size_t v = 0; v < pp->n_slots; v++) assert_int_equal(pp->layout[v], GE_LAYOUT_PLAIN);
  ge_tensor *ref = run(pp, x);
  const char *policies[] = {"auto", "nhwc", "blocked"};
  for (size_t k = 0; k < 3; k++) {
    ge_plan *p = compile_opts(n.g, NULL, policies[k], threads);
    /* graph input and output, and the AveragePool's output (read by a Conv, written by a kernel
       that takes any layout) */
    assert_int_equal(lay(p, "x"), GE_LAYOUT_PLAIN);
    assert_int_equal(lay(p, "y"), GE_LAYOUT_PLAIN);
    const char *mids[] = {"a", "b", "c", "d", "e"};
    int64_t ch[] = {C, C, C, C2, C2};
    for (size_t i = 0; i < 5; i++) {
      int l = lay(p, mids[i]);
      if (l == GE_LAYOUT_PLAIN || l >= GE_LAYOUT_COUNT)
        fail_msg("policy %s: value %s is %s", policies[k], mids[i], ge_layout_name(l));
      if (k == 1) assert_int_equal(l, GE_LAYOUT_NHWC);
      if (k == 2) assert_int_equal(l, ch[i] % 16 == 0 ? GE_LAYOUT_NC16C : GE_LAYOUT_NHWC);
    }
    /* the pool writes what it reads */
    assert_int_equal(lay(p, "c"), lay(p, "b"));
    assert_int_equal(lay(p, "e"), lay(p, "d"));
    ge_tensor *y = run(p, x);
    ge_tensor *y2 = run(p, x); /* cached run buffers: same result */
    assert_int_equal(y->numel, ref->numel);
    assert_memory_equal(y->data, y2->data, y->nbytes);
    const float *a = y->data, *b = ref->data;
    for (size_t i = 0; i < y->numel; i++)
      if (!(fabsf(a[i] - b[i]) <= 1e-4f + 1e-4f * fabsf(b[i])))
        fail_msg("C=%lld C2=%lld policy %s threads %d: y[%zu] %g vs plain %g", (long long)C, (long long)C2,
                 policies[k], threads, i, a[i], b[i]);
    ge_tensor_free(y);
    ge_tensor_free(y2);
    ge_plan_free(p);
  }
  ge_tensor_free(ref);
  ge_plan_free(pp);
  ge_tensor_free(x);
  ge_test_net_free(&n);
}

static void test_plan_layouts(void **unused) {
  (void)unused;
  check_net(16, 32, 1);
  check_net(32, 24, 2); /* C2 = 24: blocked falls back to channels-last */
  check_net(16, 16, 2);
}

/* A value read by a kernel without a layout hook (Relu) or that is a graph output stays plain. */
static void test_plain_boundaries(void **unused) {
  (void)unused;
  ge_test_net n;
  build(&n, 16, 16);
  const char *ri[] = {"c"}, *ro[] = {"r"};
  assert_int_equal(ge_graph_add_node(n.g, "Relu", "relu", ri, 1, ro, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(n.g, "r"), GE_OK);
  assert_int_equal(ge_graph_add_output(n.g, "a"), GE_OK);
  assert_int_equal(ge_graph_toposort(n.g), GE_OK);
  ge_plan *p = compile_opts(n.g, NULL, "blocked", 1);
  assert_int_equal(lay(p, "a"), GE_LAYOUT_PLAIN); /* a graph output */
  assert_int_equal(lay(p, "c"), GE_LAYOUT_PLAIN); /* read by Relu */
  assert_int_equal(lay(p, "b"), GE_LAYOUT_NC16C);
  assert_int_equal(lay(p, "d"), GE_LAYOUT_NC16C);
  ge_plan_free(p);
  ge_test_net_free(&n);
}

/* Runs the net in a session with dumps on; returns the dumped value `name`. */
static ge_tensor *dumped(ge_test_net *n, ge_tensor *x, const char *policy, const char *dir, const char *name) {
  ge_option kv[] = {{"ge.exec.layout", policy}, {"ge.exec.enableDump", "1"}, {"ge.exec.dumpPath", dir},
                    {"ge.intraOpThreads", "1"}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(kv, 4, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, n->g), GE_OK);
  ge_tensor *y = NULL;
  ge_status st = ge_session_run_graph(s, 1, &x, 1, &y, 1);
  if (st != GE_OK) fail_msg("run: %s", ge_last_error());
  ge_tensor_free(y);
  ge_session_free(s);
  char path[512];
  snprintf(path, sizeof path, "%s/0/%s.npy", dir, name);
  ge_tensor *t = NULL;
  assert_int_equal(ge_npy_read(path, &t), GE_OK);
  return t;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path); /* best effort */
  return 0;
}

static void test_dump_plain(void **unused) {
  (void)unused;
  ge_test_net n;
  build(&n, 16, 32);
  int64_t xd[] = {1, 3, 19, 19};
  ge_tensor *x = rand_t(xd, 4, 1.f);
  char dir[] = "/tmp/ge_test_layout_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char d1[600], d2[600];
  snprintf(d1, sizeof d1, "%s/plain", dir);
  snprintf(d2, sizeof d2, "%s/blocked", dir);
  const char *names[] = {"b", "c", "d"};
  for (size_t i = 0; i < 3; i++) {
    ge_tensor *a = dumped(&n, x, "plain", d1, names[i]), *b = dumped(&n, x, "blocked", d2, names[i]);
    assert_int_equal(a->numel, b->numel);
    assert_int_equal(a->rank, 4);
    const float *pa = a->data, *pb = b->data;
    for (size_t k = 0; k < a->numel; k++)
      if (!(fabsf(pa[k] - pb[k]) <= 1e-4f + 1e-4f * fabsf(pa[k])))
        fail_msg("dump of %s [%zu]: %g (blocked) vs %g (plain)", names[i], k, pb[k], pa[k]);
    ge_tensor_free(a);
    ge_tensor_free(b);
  }
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  ge_tensor_free(x);
  ge_test_net_free(&n);
}

/* ------------------------------------------------------------------ bf16 storage */

/* x [1, 16, 20, 20] -> Conv 3x3 (32) "a" -> FusedConv 3x3 + bias + residual r + Relu "b" (r:
   Conv 1x1 (32) of x; its buffer may be b's: both bf16) ->
   MaxPool 3/2 "c" -> Conv 1x1 (64) "d" -> GlobalAveragePool "y"; c is also read by a Conv 1x1
   (32) "e" -> GlobalAveragePool "z".  With `marked`, every node but c4 is marked bf16. */
static void build_bf16(ge_test_net *c, bool marked) {
  rng = 0x9e3779b97f4a7c15ull;
  ge_test_net_init(c, "bf16act", &rng);
  int64_t xd[] = {1, 16, 20, 20};
  assert_int_equal(ge_graph_add_input(c->g, "x", GE_F32, xd, 4), GE_OK);
  int64_t w1[] = {32, 16, 3, 3}, w2[] = {32, 32, 3, 3}, b2[] = {32}, w3[] = {64, 32, 1, 1}, w4[] = {32, 32, 1, 1}, w0[] = {32, 16, 1, 1};
  ge_test_net_const(c, "w1", w1, 4, 0.2f);
  ge_test_net_const(c, "w0", w0, 4, 0.3f);
  ge_test_net_const(c, "w2", w2, 4, 0.1f);
  ge_test_net_const(c, "b2", b2, 1, 0.1f);
  ge_test_net_const(c, "w3", w3, 4, 0.2f);
  ge_test_net_const(c, "w4", w4, 4, 0.2f);
  int64_t pads1[] = {1, 1, 1, 1}, k3[] = {3, 3}, s2[] = {2, 2};
  size_t m = marked ? 1 : 0;
  ge_attr c_attr[] = {GE_ATTR_INTS("pads", pads1, 4), GE_ATTR_STRING("ge_compute_precision", "bf16")};
  ge_attr fc_attr[] = {GE_ATTR_INTS("pads", pads1, 4), GE_ATTR_STRING("activation", "Relu"),
                       GE_ATTR_STRING("ge_compute_precision", "bf16")};
  ge_attr mp_attr[] = {GE_ATTR_INTS("kernel_shape", k3, 2), GE_ATTR_INTS("strides", s2, 2),
                       GE_ATTR_INTS("pads", pads1, 4), GE_ATTR_STRING("ge_compute_precision", "bf16")};
  ge_attr p_attr[] = {GE_ATTR_STRING("ge_compute_precision", "bf16")};
  ge_test_net_node(c, "Conv", "c0", (const char *[]){"x", "w0"}, 2, "r", p_attr, m);
  ge_test_net_node(c, "Conv", "c1", (const char *[]){"x", "w1"}, 2, "a", c_attr, 1 + m);
  ge_test_net_node(c, "ai.ge::FusedConv", "c2", (const char *[]){"a", "w2", "b2", "r"}, 4, "b", fc_attr, 2 + m);
  ge_test_net_node(c, "MaxPool", "mp", (const char *[]){"b"}, 1, "c", mp_attr, 3 + m);
  ge_test_net_node(c, "Conv", "c3", (const char *[]){"c", "w3"}, 2, "d", p_attr, m);
  ge_test_net_node(c, "GlobalAveragePool", "gap", (const char *[]){"d"}, 1, "y", p_attr, m);
  ge_test_net_node(c, "Conv", "c4", (const char *[]){"c", "w4"}, 2, "e", NULL, 0);
  ge_test_net_node(c, "GlobalAveragePool", "gap2", (const char *[]){"e"}, 1, "z", p_attr, m);
  assert_int_equal(ge_graph_add_output(c->g, "y"), GE_OK);
  assert_int_equal(ge_graph_add_output(c->g, "z"), GE_OK);
  assert_int_equal(ge_graph_toposort(c->g), GE_OK);
}


/* oneDNN computes bf16 on this processor (AVX512-BF16 or AMX) */
static bool cpu_has_bf16(void) {
  unsigned isa = (unsigned)dnnl_get_effective_cpu_isa(), want = (unsigned)dnnl_cpu_isa_avx512_core_bf16;
  return (isa & want) == want;
}

static void run2(const ge_plan *p, ge_tensor *x, ge_tensor **out) {
  out[0] = out[1] = NULL;
  ge_status st = ge_plan_run(p, &x, 1, out, 2);
  if (st != GE_OK) fail_msg("run: %s", ge_last_error());
}

static void test_bf16_storage(void **unused) {
  (void)unused;
  bool has_bf16 = cpu_has_bf16();
  ge_test_net nf, nb;
  build_bf16(&nf, false);
  build_bf16(&nb, true);
  int64_t xd[] = {1, 16, 20, 20};
  ge_tensor *x = rand_t(xd, 4, 1.f);
  ge_plan *pf = compile_opts(nf.g, "allow_fp32_to_bf16", NULL, 1); /* nothing marked: float32 */
  for (size_t v = 0; v < pf->n_slots; v++) assert_true(pf->layout[v] != GE_LAYOUT_NHWC_BF16);
  ge_tensor *ref[2];
  run2(pf, x, ref);
  for (int threads = 1; threads <= 2; threads++) {
    ge_plan *p = compile_opts(nb.g, "allow_fp32_to_bf16", NULL, threads);
    const char *bf[] = {"r", "a", "b", "d"};
    for (size_t i = 0; i < 4; i++) {
      int l = lay(p, bf[i]);
      if (has_bf16 ? l != GE_LAYOUT_NHWC_BF16 : l == GE_LAYOUT_NHWC_BF16)
        fail_msg("bf16 %s: value %s is %s", has_bf16 ? "available" : "unavailable", bf[i], ge_layout_name(l));
    }
    /* c: read by a float32 Conv too, so float32; d: read by the pool, stored bf16 */
    if (has_bf16) {
      assert_int_equal(lay(p, "c"), GE_LAYOUT_NHWC);
      assert_true(lay(p, "e") != GE_LAYOUT_NHWC_BF16);
    }
    assert_int_equal(lay(p, "y"), GE_LAYOUT_PLAIN);
    ge_tensor *y[2], *y2[2];
    run2(p, x, y);
    run2(p, x, y2);
    for (int k = 0; k < 2; k++) {
      assert_int_equal(y[k]->numel, ref[k]->numel);
      assert_memory_equal(y[k]->data, y2[k]->data, y[k]->nbytes);
      const float *a = y[k]->data, *b = ref[k]->data;
      double scale = 0;
      for (size_t i = 0; i < ref[k]->numel; i++) scale = fmax(scale, fabs(b[i]));
      for (size_t i = 0; i < y[k]->numel; i++)
        if (!(fabs((double)a[i] - b[i]) <= 2e-2 * scale + 1e-6))
          fail_msg("threads %d output %d [%zu]: bf16 %g vs float32 %g (max %g)", threads, k, i, a[i], b[i], scale);
      ge_tensor_free(y[k]);
      ge_tensor_free(y2[k]);
    }
    ge_plan_free(p);
  }
  /* the mix mode keeps float32 storage */
  ge_plan *pm = compile_opts(nb.g, "allow_mix_precision_bf16", NULL, 1);
  for (size_t v = 0; v < pm->n_slots; v++) assert_true(pm->layout[v] != GE_LAYOUT_NHWC_BF16);
  ge_plan_free(pm);
  for (int k = 0; k < 2; k++) ge_tensor_free(ref[k]);
  ge_plan_free(pf);
  ge_tensor_free(x);
  ge_test_net_free(&nf);
  ge_test_net_free(&nb);
}

/* ------------------------------------------------------------------ row-major bf16 storage */

/* float32 <-> GE_LAYOUT_BF16: plain element order, any rank 1..GE_MAX_RANK, round to nearest
   even, NaN kept; to / from the channels-last layouts for images; only float32 elements. */
static void test_convert_rows(void **unused) {
  (void)unused;
  float a[120], c[120], e[120];
  uint16_t b[240];
  for (size_t i = 0; i < 120; i++) a[i] = (float)i - 60.f;
  a[7] = 1.f + 1.f / 256.f; /* tie: 1.0 */
  a[8] = 1.f + 3.f / 256.f; /* tie: 1 + 1/64 */
  a[9] = NAN;
  a[10] = 1.f + 1.f / 256.f + 1.f / 1024.f; /* above the tie: rounds up to 1 + 1/128 */
  int64_t shapes[][6] = {{120}, {8, 15}, {2, 3, 20}, {2, 5, 3, 4}, {1, 2, 3, 2, 5, 2}};
  int ranks[] = {1, 2, 3, 4, 6};
  for (size_t k = 0; k < 5; k++) {
    memset(b, 0xab, sizeof b);
    assert_int_equal(ge_layout_convert(b, a, shapes[k], ranks[k], 4, GE_LAYOUT_PLAIN, GE_LAYOUT_BF16), GE_OK);
    assert_int_equal(b[120], 0xabab); /* only the first half of a float32-sized buffer */
    assert_int_equal(ge_layout_convert(c, b, shapes[k], ranks[k], 4, GE_LAYOUT_BF16, GE_LAYOUT_PLAIN), GE_OK);
    for (size_t i = 0; i < 120; i++) {
      if (i == 9) {
        assert_true(isnan(c[i]));
        continue;
      }
      float want = i == 7 ? 1.f : i == 8 ? 1.f + 1.f / 64.f : i == 10 ? 1.f + 1.f / 128.f : a[i];
      if (c[i] != want) fail_msg("rank %d: bf16 round trip [%zu]: %g -> %g, expected %g", ranks[k], i, a[i], c[i], want);
    }
    /* plain order: element i is the i-th stored */
    float f;
    uint32_t u = (uint32_t)b[11] << 16;
    memcpy(&f, &u, 4);
    assert_true(f == a[11]);
  }
  /* an image: bf16 row-major <-> channels-last (float32 and bf16) */
  int64_t d[] = {2, 5, 3, 4};
  uint16_t h[240];
  assert_int_equal(ge_layout_convert(b, a, d, 4, 4, GE_LAYOUT_PLAIN, GE_LAYOUT_BF16), GE_OK);
  assert_int_equal(ge_layout_convert(h, b, d, 4, 4, GE_LAYOUT_BF16, GE_LAYOUT_NHWC_BF16), GE_OK);
  assert_int_equal(ge_layout_convert(e, h, d, 4, 4, GE_LAYOUT_NHWC_BF16, GE_LAYOUT_NHWC), GE_OK);
  assert_int_equal(ge_layout_convert(c, e, d, 4, 4, GE_LAYOUT_NHWC, GE_LAYOUT_PLAIN), GE_OK);
  assert_true(c[0] == a[0] && c[11] == a[11] && c[119] == a[119] && c[7] == 1.f);
  assert_int_equal(ge_layout_convert(e, b, d, 4, 4, GE_LAYOUT_BF16, GE_LAYOUT_NHWC), GE_OK);
  assert_true(e[1] == a[12]); /* (n=0, c=1, s=0) */
  /* refused: 2-byte elements, rank 0, a channels-last side on a rank-2 tensor */
  assert_int_equal(ge_layout_convert(b, a, d, 4, 2, GE_LAYOUT_PLAIN, GE_LAYOUT_BF16), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_layout_convert(b, a, d, 0, 4, GE_LAYOUT_PLAIN, GE_LAYOUT_BF16), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_layout_convert(b, a, shapes[1], 2, 4, GE_LAYOUT_BF16, GE_LAYOUT_NHWC), GE_ERR_INVALID_ARGUMENT);
  ge_type t2 = ge_test_type(GE_F32, shapes[1], 2), t6 = ge_test_type(GE_F32, shapes[4], 6);
  assert_true(ge_layout_fits(GE_LAYOUT_BF16, &t2));
  assert_true(ge_layout_fits(GE_LAYOUT_BF16, &t6));
  assert_false(ge_layout_fits(GE_LAYOUT_NHWC_BF16, &t2));
  ge_type t0 = ge_test_type(GE_F32, NULL, 0);
  assert_false(ge_layout_fits(GE_LAYOUT_BF16, &t0));
  assert_string_equal(ge_layout_name(GE_LAYOUT_BF16), "bf16");
}

/* x [2, 8, 64] -> MatMul w1 [64, 96] "a" -> FusedMatMul w2 [96, 80] + b2 + Gelu "b" ->
   MatMul w3 [80, 48] "c" -> MatMul w4 [48, 32] "y"; c is also read by Relu "z" (float32).
   Image side: i [1, 16, 8, 8] -> Conv 1x1 (16) "v" -> MatMul wv [8, 8] "w".
   Gemm side: g [16, 64] -> Gemm w1 "ga" -> Gemm w2 + C b2 "gb" -> MatMul w3 "gy".
   Transformer side: ai.ge::LayerNormalization(x) "ln" -> MatMul w1 "lm", and "la" = ln + x (a
   residual Add, which takes bf16 without asking for it); "lq" = MatMul(x, w1), "ls" = lq + lm
   (MatMul outputs read only by an Add: no reader asks for bf16).  With `marked`, every MatMul,
   Gemm and the Conv are marked bf16. */
static void build_rows(ge_test_net *c, bool marked) {
  rng = 0x5eed5eedull;
  ge_test_net_init(c, "bf16rows", &rng);
  int64_t xd[] = {2, 8, 64}, id[] = {1, 16, 8, 8};
  assert_int_equal(ge_graph_add_input(c->g, "x", GE_F32, xd, 3), GE_OK);
  assert_int_equal(ge_graph_add_input(c->g, "i", GE_F32, id, 4), GE_OK);
  int64_t gd[] = {16, 64};
  assert_int_equal(ge_graph_add_input(c->g, "g", GE_F32, gd, 2), GE_OK);
  int64_t w1[] = {64, 96}, w2[] = {96, 80}, b2[] = {80}, w3[] = {80, 48}, w4[] = {48, 32}, wc[] = {16, 16, 1, 1},
          wv[] = {8, 8};
  ge_test_net_const(c, "w1", w1, 2, 0.15f);
  ge_test_net_const(c, "w2", w2, 2, 0.12f);
  ge_test_net_const(c, "b2", b2, 1, 0.1f);
  ge_test_net_const(c, "w3", w3, 2, 0.12f);
  ge_test_net_const(c, "w4", w4, 2, 0.15f);
  ge_test_net_const(c, "wc", wc, 4, 0.25f);
  ge_test_net_const(c, "wv", wv, 2, 0.3f);
  size_t m = marked ? 1 : 0;
  ge_attr p_attr[] = {GE_ATTR_STRING("ge_compute_precision", "bf16")};
  ge_attr f_attr[] = {GE_ATTR_STRING("activation", "Gelu"), GE_ATTR_STRING("ge_compute_precision", "bf16")};
  ge_test_net_node(c, "MatMul", "m1", (const char *[]){"x", "w1"}, 2, "a", p_attr, m);
  ge_test_net_node(c, "ai.ge::FusedMatMul", "m2", (const char *[]){"a", "w2", "b2"}, 3, "b", f_attr, 1 + m);
  ge_test_net_node(c, "MatMul", "m3", (const char *[]){"b", "w3"}, 2, "c", p_attr, m);
  ge_test_net_node(c, "MatMul", "m4", (const char *[]){"c", "w4"}, 2, "y", p_attr, m);
  ge_test_net_node(c, "Relu", "r", (const char *[]){"c"}, 1, "z", NULL, 0);
  ge_test_net_node(c, "Conv", "cv", (const char *[]){"i", "wc"}, 2, "v", p_attr, m);
  ge_test_net_node(c, "MatMul", "mv", (const char *[]){"v", "wv"}, 2, "w", p_attr, m);
  ge_test_net_node(c, "Gemm", "g1", (const char *[]){"g", "w1"}, 2, "ga", p_attr, m);
  ge_test_net_node(c, "Gemm", "g2", (const char *[]){"ga", "w2", "b2"}, 3, "gb", p_attr, m);
  ge_test_net_node(c, "MatMul", "g3", (const char *[]){"gb", "w3"}, 2, "gy", p_attr, m);
  int64_t lnd[] = {64};
  ge_test_net_const(c, "lsc", lnd, 1, 1.f);
  ge_test_net_const(c, "lbi", lnd, 1, 0.2f);
  ge_test_net_node(c, "ai.ge::LayerNormalization", "lnn", (const char *[]){"x", "lsc", "lbi"}, 3, "ln", NULL, 0);
  ge_test_net_node(c, "MatMul", "lmm", (const char *[]){"ln", "w1"}, 2, "lm", p_attr, m);
  ge_test_net_node(c, "Add", "lad", (const char *[]){"ln", "x"}, 2, "la", NULL, 0);
  ge_test_net_node(c, "MatMul", "lqm", (const char *[]){"x", "w1"}, 2, "lq", p_attr, m);
  ge_test_net_node(c, "Add", "lsd", (const char *[]){"lq", "lm"}, 2, "ls", NULL, 0);
  assert_int_equal(ge_graph_add_output(c->g, "y"), GE_OK);
  assert_int_equal(ge_graph_add_output(c->g, "z"), GE_OK);
  assert_int_equal(ge_graph_add_output(c->g, "w"), GE_OK);
  assert_int_equal(ge_graph_add_output(c->g, "gy"), GE_OK);
  assert_int_equal(ge_graph_add_output(c->g, "la"), GE_OK);
  assert_int_equal(ge_graph_add_output(c->g, "ls"), GE_OK);
  assert_int_equal(ge_graph_toposort(c->g), GE_OK);
}


#define ROWS_OUT 6
static void run3(const ge_plan *p, ge_tensor **in, ge_tensor **out) {
  for (int k = 0; k < ROWS_OUT; k++) out[k] = NULL;
  ge_status st = ge_plan_run(p, in, 3, out, ROWS_OUT);
  if (st != GE_OK) fail_msg("run: %s", ge_last_error());
}

/* max |a - b| <= tol * max |ref| */
static void near(const ge_tensor *a, const ge_tensor *ref, double tol, const char *what) {
  assert_int_equal(a->numel, ref->numel);
  assert_int_equal(a->dtype, GE_F32);
  const float *x = a->data, *r = ref->data;
  double scale = 0;
  for (size_t i = 0; i < ref->numel; i++) scale = fmax(scale, fabs(r[i]));
  for (size_t i = 0; i < a->numel; i++)
    if (!(fabs((double)x[i] - r[i]) <= tol * scale + 1e-6))
      fail_msg("%s [%zu]: %g vs %g (max %g)", what, i, x[i], r[i], scale);
}

static void test_bf16_rows(void **unused) {
  (void)unused;
  bool has_bf16 = cpu_has_bf16();
  ge_test_net nf, nb;
  build_rows(&nf, false);
  build_rows(&nb, true);
  int64_t xd[] = {2, 8, 64}, id[] = {1, 16, 8, 8}, gd[] = {16, 64};
  ge_tensor *in[3] = {rand_t(xd, 3, 1.f), rand_t(id, 4, 1.f), rand_t(gd, 2, 1.f)};
  /* float32: nothing marked, or the mix mode (no bf16 storage) */
  ge_plan *pf = compile_opts(nf.g, "allow_fp32_to_bf16", "auto", 1);
  ge_plan *pm = compile_opts(nb.g, "allow_mix_precision_bf16", "auto", 1);
  for (size_t v = 0; v < pf->n_slots; v++) assert_int_equal(pf->layout[v], GE_LAYOUT_PLAIN);
  for (size_t v = 0; v < pm->n_slots; v++) assert_true(pm->layout[v] != GE_LAYOUT_BF16);
  ge_tensor *ref[ROWS_OUT];
  run3(pf, in, ref);
  /* bf16 compute with every value plain: the same numbers as bf16 storage (a bf16 MatMul
     rounds its float32 input to bf16 anyway; oneDNN rounds its bf16 destination the same way) */
  ge_plan *pp = compile_opts(nb.g, "allow_fp32_to_bf16", "plain", 1);
  ge_tensor *pl[ROWS_OUT];
  run3(pp, in, pl);
  for (int threads = 1; threads <= 2; threads++) {
    ge_plan *p = compile_opts(nb.g, "allow_fp32_to_bf16", "auto", threads);
    int want = has_bf16 ? GE_LAYOUT_BF16 : GE_LAYOUT_PLAIN;
    const char *rows[] = {"a", "b", "ga", "gb", "ln"};
    for (size_t k = 0; k < 5; k++)
      if (lay(p, rows[k]) != want)
        fail_msg("bf16 %s: value %s is %s", has_bf16 ? "available" : "unavailable", rows[k],
                 ge_layout_name(lay(p, rows[k])));
    assert_int_equal(lay(p, "c"), GE_LAYOUT_PLAIN); /* also read by Relu */
    assert_int_equal(lay(p, "y"), GE_LAYOUT_PLAIN); /* graph outputs */
    assert_int_equal(lay(p, "z"), GE_LAYOUT_PLAIN);
    /* a bf16 Conv's output read by a bf16 MatMul: neither channels-last nor row-major bf16 */
    assert_int_equal(lay(p, "v"), GE_LAYOUT_PLAIN);
    /* read only by an Add, which takes bf16 but does not ask for it */
    assert_int_equal(lay(p, "lq"), GE_LAYOUT_PLAIN);
    assert_int_equal(lay(p, "lm"), GE_LAYOUT_PLAIN);
    ge_tensor *y[ROWS_OUT], *y2[ROWS_OUT];
    run3(p, in, y);
    run3(p, in, y2);
    for (int k = 0; k < ROWS_OUT; k++) {
      assert_memory_equal(y[k]->data, y2[k]->data, y[k]->nbytes);
      near(y[k], ref[k], 3e-2, "bf16 vs float32");
      /* the same numbers as bf16 compute on plain values, but for la (its Add reads the
         LayerNormalization output rounded to bf16) */
      near(y[k], pl[k], k == 4 ? 1e-2 : 1e-5, "bf16 storage vs bf16 plain");
      ge_tensor_free(y[k]);
      ge_tensor_free(y2[k]);
    }
    ge_plan_free(p);
  }
  for (int k = 0; k < ROWS_OUT; k++) {
    ge_tensor_free(ref[k]);
    ge_tensor_free(pl[k]);
  }
  ge_plan_free(pp);
  ge_plan_free(pm);
  ge_plan_free(pf);
  for (int k = 0; k < 3; k++) ge_tensor_free(in[k]);
  ge_test_net_free(&nf);
  ge_test_net_free(&nb);
}

/* Dumps of row-major bf16 values are float32, plain, of the value's shape. */
static void test_dump_rows(void **unused) {
  (void)unused;
  ge_test_net n;
  build_rows(&n, true);
  int64_t xd[] = {2, 8, 64}, id[] = {1, 16, 8, 8}, gd[] = {16, 64};
  ge_tensor *in[3] = {rand_t(xd, 3, 1.f), rand_t(id, 4, 1.f), rand_t(gd, 2, 1.f)};
  char dir[] = "/tmp/ge_test_layout_XXXXXX";
  assert_non_null(mkdtemp(dir));
  ge_tensor *got[2][2] = {{NULL, NULL}, {NULL, NULL}};
  const char *pol[] = {"plain", "auto"}, *names[] = {"a", "b"};
  for (int k = 0; k < 2; k++) {
    char d[600];
    snprintf(d, sizeof d, "%s/%s", dir, pol[k]);
    ge_option kv[] = {{"ge.exec.layout", pol[k]}, {"ge.exec.enableDump", "1"}, {"ge.exec.dumpPath", d},
                      {"ge.intraOpThreads", "1"}, {"ge.exec.precision_mode", "allow_fp32_to_bf16"}};
    ge_session *s = NULL;
    assert_int_equal(ge_session_create(kv, 5, &s), GE_OK);
    assert_int_equal(ge_session_add_graph(s, 1, n.g), GE_OK);
    ge_tensor *y[ROWS_OUT] = {NULL};
    ge_status st = ge_session_run_graph(s, 1, in, 3, y, ROWS_OUT);
    if (st != GE_OK) fail_msg("run: %s", ge_last_error());
    for (int j = 0; j < ROWS_OUT; j++) ge_tensor_free(y[j]);
    ge_session_free(s);
    for (int j = 0; j < 2; j++) {
      char path[700];
      snprintf(path, sizeof path, "%s/0/%s.npy", d, names[j]);
      assert_int_equal(ge_npy_read(path, &got[k][j]), GE_OK);
      assert_int_equal(got[k][j]->dtype, GE_F32);
      assert_int_equal(got[k][j]->rank, 3);
      assert_int_equal(got[k][j]->dims[0], 2);
      assert_int_equal(got[k][j]->dims[1], 8);
    }
  }
  /* the stored value is the float32 one rounded to bf16 (where the processor has bf16: every
     element exactly a bf16, unlike the plain-policy run's) */
  bool has_bf16 = cpu_has_bf16();
  for (int j = 0; j < 2; j++) {
    near(got[1][j], got[0][j], 1e-2, names[j]);
    if (has_bf16) {
      const uint32_t *u = got[1][j]->data, *w = got[0][j]->data;
      size_t low = 0, low_plain = 0;
      for (size_t i = 0; i < got[1][j]->numel; i++) {
        low += (u[i] & 0xffffu) != 0;
        low_plain += (w[i] & 0xffffu) != 0;
      }
      assert_int_equal(low, 0);
      assert_true(low_plain > 0);
    }
    ge_tensor_free(got[0][j]);
    ge_tensor_free(got[1][j]);
  }
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  for (int k = 0; k < 3; k++) ge_tensor_free(in[k]);
  ge_test_net_free(&n);
}

static void test_option(void **unused) {
  (void)unused;
  ge_options o;
  ge_options_default(&o);
  assert_int_equal(o.layout_policy, GE_LAYOUT_POLICY_AUTO);
  ge_option bad[] = {{"ge.exec.layout", "nchw"}};
  assert_int_equal(ge_options_apply(&o, bad, 1), GE_ERR_INVALID_ARGUMENT);
  ge_option ok[] = {{"ge.exec.layout", "blocked"}};
  assert_int_equal(ge_options_apply(&o, ok, 1), GE_OK);
  assert_int_equal(o.layout_policy, GE_LAYOUT_POLICY_BLOCKED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_convert),
      cmocka_unit_test(test_convert_bf16),
      cmocka_unit_test(test_bf16_storage),
      cmocka_unit_test(test_convert_rows),
      cmocka_unit_test(test_bf16_rows),
      cmocka_unit_test(test_dump_rows),
      cmocka_unit_test(test_plan_layouts),
      cmocka_unit_test(test_plain_boundaries),
      cmocka_unit_test(test_dump_plain),
      cmocka_unit_test(test_option),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
}
