/* The fp32 speed work against plain references:
 *   - channels-last activations between oneDNN kernels (src/backend/cpu/dnnl/dnnl_layout.c):
 *     the agreement predicate on hand-made graphs; the layout conversion; and whole CNN graphs
 *     (residual FusedConv, pools, depthwise, a convolution whose oneDNN kernel declines and runs
 *     as the wrapped reference kernel) compared with the same graph where every intermediate is
 *     also a graph output (so every tensor stays plain row-major), at 1 and 2 threads, on odd
 *     sizes;
 *   - the cached per-state run buffer: many runs of one session, and runs from two threads at
 *     once, give the same results;
 *   - every kernel of the fast family (src/backend/cpu/fast/) against the reference kernel of
 *     its op on random shapes with odd sizes, tails and broadcasts, and the vectorised exp
 *     against libm;
 *   - bf16 MatMul / Gemm nodes on AMX (fast/pgemm.c with fast/amx.c; test_amx checks the GEMM
 *     itself), their operands plain or stored row-major bf16, against the reference kernel on
 *     the bf16-rounded operands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_layout.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/dnnl/dnnl_pool.h"
#include "backend/cpu/dnnl/dnnl_prim.h"
#include "backend/cpu/fast/fast_amx.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "compiler/layout.h"
#include "helpers/ops_harness.h"
#include "helpers/test_common.h"
#include "ir/ir.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static ge_tensor *rand_t(const int64_t *d, size_t r, float scale) { return ge_test_rand_f32(&rng, d, r, scale); }

/* ------------------------------------------------------------------ layout conversion */

static void test_nchw_nhwc_roundtrip(void **unused) {
  (void)unused;
  size_t n = 2, c = 5, sp = 7 * 3, tot = n * c * sp;
  float *a = malloc(tot * sizeof *a), *b = malloc(tot * sizeof *b), *r = malloc(tot * sizeof *r);
  assert_true(a && b && r);
  for (size_t i = 0; i < tot; i++) a[i] = (float)i;
  ge_dn_nchw_nhwc(b, a, n, c, sp, true);
  /* element (1, 3, 4) of NCHW is at (1, 4, 3) in NHWC */
  assert_true(b[1 * c * sp + 4 * c + 3] == a[1 * c * sp + 3 * sp + 4]);
  ge_dn_nchw_nhwc(r, b, n, c, sp, false);
  assert_memory_equal(a, r, tot * sizeof *a);
  free(a);
  free(b);
  free(r);
}

/* A CNN's planar 3-channel graph input converted channels-last, float32 or bf16, by
   ge_fast_nchw3_to_nhwc (the oneDNN convolution's input conversion): every element at its place,
   bf16 rounded to nearest even (ties both ways, NaN stays NaN, infinities kept); pixel counts
   with a 16-pixel tail and over several 2048-pixel chunks; 1-3 threads.  The bf16 values are
   checked against ir.h's scalar rounding. */

static void test_nchw3_to_nhwc(void **unused) {
  (void)unused;
  for (int bf = 0; bf < 2; bf++) {
    if (!ge_fast_nchw3_usable(bf)) {
      print_message("nchw3_to_nhwc (%s): not usable on this processor, skipped\n", bf ? "bf16" : "float32");
      continue;
    }
    const size_t hws[] = {1, 15, 16, 37, 224 * 3 + 5, 2048, 4100};
    for (size_t hi = 0; hi < sizeof hws / sizeof *hws; hi++)
      for (size_t n = 1; n <= 2; n++)
        for (int t = 1; t <= 3; t++) {
          size_t hw = hws[hi], tot = n * 3 * hw;
          float *x = malloc(tot * 4);
          uint16_t *y16 = malloc(tot * 2 + 2);
          float *y = malloc(tot * 4 + 4);
          assert_true(x && y && y16);
          for (size_t i = 0; i < tot; i++) {
            uint32_t u = (uint32_t)(ge_test_rand_u64(&rng) >> 11);
            if (i % 7 == 3) u = (u & 0xffff0000u) | 0x8000u; /* a tie */
            u = (u & 0x3fffffffu) | 0x3c000000u;              /* normal, 2^-7 .. 2^1 */
            if (i % 11 == 5) u |= 0x80000000u;
            memcpy(&x[i], &u, 4);
          }
          x[0] = NAN;
          if (tot > 5) x[5] = -INFINITY;
          y[tot] = 7.f; /* sentinels past the end */
          y16[tot] = 0x1234;
          ge_fast_nchw3_to_nhwc(x, bf ? (void *)y16 : (void *)y, n, hw, bf, t);
          for (size_t b = 0; b < n; b++)
            for (size_t p = 0; p < hw; p++)
              for (size_t c = 0; c < 3; c++) {
                float v = x[(b * 3 + c) * hw + p];
                size_t o = (b * hw + p) * 3 + c;
                if (bf) {
                  uint16_t want = ge_f32_to_bf16_inline(v), got = y16[o];
                  if (isnan(v) ? (got & 0x7f80) != 0x7f80 || !(got & 0x7f) : got != want)
                    fail_msg("bf16 hw %zu n %zu threads %d: [%zu, %zu, %zu] = %#x, want %#x (of %a)", hw, n, t, b, p,
                             c, got, want, (double)v);
                } else if (memcmp(&y[o], &v, 4) && !(isnan(v) && isnan(y[o]))) {
                  fail_msg("float32 hw %zu n %zu threads %d: [%zu, %zu, %zu] = %g, want %g", hw, n, t, b, p, c,
                           (double)y[o], (double)v);
                }
              }
          assert_true(bf ? y16[tot] == 0x1234 : y[tot] == 7.f);
          free(x);
          free(y);
          free(y16);
        }
  }
}

/* ------------------------------------------------------------------ the predicate */

static int32_t vid(const ge_graph *g, const char *name) {
  int32_t v = ge_graph_find_value(g, name);
  assert_true(v >= 0);
  return v;
}

static void test_predicate(void **unused) {
  (void)unused;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("p", &g), GE_OK);
  int64_t xd[] = {1, 4, 6, 6}, wd[] = {4, 4, 1, 1};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  ge_tensor *w = rand_t(wd, 4, 1.f);
  assert_int_equal(ge_graph_add_constant(g, "w", w), GE_OK);
  const char *c1i[] = {"x", "w"}, *c1o[] = {"a"};
  const char *c2i[] = {"a", "w"}, *c2o[] = {"b"};
  const char *r1i[] = {"b"}, *r1o[] = {"c"};
  const char *c3i[] = {"b", "w"}, *c3o[] = {"d"};
  const char *c4i[] = {"d", "w"}, *c4o[] = {"e"};
  assert_int_equal(ge_graph_add_node(g, "Conv", "c1", c1i, 2, c1o, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Conv", "c2", c2i, 2, c2o, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Relu", "r1", r1i, 1, r1o, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Conv", "c3", c3i, 2, c3o, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Conv", "c4", c4i, 2, c4o, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "c"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "e"), GE_OK);
  ge_type t = ge_test_type(GE_F32, xd, 4);
  /* a: Conv -> Conv only */
  assert_true(ge_dn_value_nhwc(g, vid(g, "a"), &t));
  /* b: read by a Relu too */
  assert_false(ge_dn_value_nhwc(g, vid(g, "b"), &t));
  /* d: Conv -> Conv */
  assert_true(ge_dn_value_nhwc(g, vid(g, "d"), &t));
  /* graph outputs and graph inputs stay plain */
  assert_false(ge_dn_value_nhwc(g, vid(g, "e"), &t));
  assert_false(ge_dn_value_nhwc(g, vid(g, "x"), &t));
  /* not float32, not static, rank 2 */
  ge_type ti = ge_test_type(GE_I32, xd, 4);
  assert_false(ge_dn_value_nhwc(g, vid(g, "a"), &ti));
  int64_t dyn[] = {GE_DIM_UNKNOWN, 4, 6, 6};
  ge_type td = ge_test_type(GE_F32, dyn, 4);
  assert_false(ge_dn_value_nhwc(g, vid(g, "a"), &td));
  ge_type t2 = ge_test_type(GE_F32, xd, 2);
  assert_false(ge_dn_value_nhwc(g, vid(g, "a"), &t2));
  assert_false(ge_dn_value_nhwc(g, -1, &t));
  assert_false(ge_dn_value_nhwc(NULL, 0, &t));
  ge_graph_free(g);
  ge_tensor_free(w);
}

/* ------------------------------------------------------------------ whole graphs */

/* x [1, C, H, W] -> Conv3x3+Relu -> Conv1x1 + residual, Relu -> MaxPool -> Conv3x3 (C2) ->
   Conv1x1 with run-time weights (oneDNN declines: the wrapped reference kernel runs it) ->
   depthwise Conv3x3 -> AveragePool -> Conv -> GlobalAveragePool.
   expose: every intermediate is a graph output too (all tensors stay plain). */
static void build_cnn(ge_test_net *c, int64_t C, int64_t H, int64_t W, int64_t C2, bool expose) {
  rng = 0x2545f4914f6cdd1dull; /* same weights for both variants */
  ge_test_net_init(c, "cnn", &rng);
  int64_t xd[] = {1, C, H, W};
  assert_int_equal(ge_graph_add_input(c->g, "x", GE_F32, xd, 4), GE_OK);
  int64_t w4d[] = {C2 / 2, C2, 1, 1};
  assert_int_equal(ge_graph_add_input(c->g, "w4", GE_F32, w4d, 4), GE_OK);
  int64_t w1[] = {16, C, 3, 3}, b1[] = {16}, w2[] = {16, 16, 1, 1}, w3[] = {C2, 16, 3, 3};
  int64_t w5[] = {C2 / 2, 1, 3, 3}, w6[] = {C2, C2 / 2, 1, 1};
  ge_test_net_const(c, "w1", w1, 4, 0.3f);
  ge_test_net_const(c, "b1", b1, 1, 0.1f);
  ge_test_net_const(c, "w2", w2, 4, 0.3f);
  ge_test_net_const(c, "w3", w3, 4, 0.2f);
  ge_test_net_const(c, "w5", w5, 4, 0.3f);
  ge_test_net_const(c, "w6", w6, 4, 0.3f);
  int64_t pads1[] = {1, 1, 1, 1}, k2[] = {2, 2}, k3[] = {3, 3}, s2[] = {2, 2}, s1[] = {1, 1};
  ge_attr pad_attr[] = {GE_ATTR_INTS("pads", pads1, 4)};
  ge_attr dw_attr[] = {GE_ATTR_INTS("pads", pads1, 4), GE_ATTR_INT("group", C2 / 2)};
  ge_attr mp_attr[] = {GE_ATTR_INTS("kernel_shape", k2, 2), GE_ATTR_INTS("strides", s2, 2)};
  ge_attr ap_attr[] = {GE_ATTR_INTS("kernel_shape", k3, 2), GE_ATTR_INTS("strides", s1, 2),
                       GE_ATTR_INTS("pads", pads1, 4)};
  ge_test_net_node(c, "Conv", "c1", (const char *[]){"x", "w1", "b1"}, 3, "c1", pad_attr, 1);
  ge_test_net_node(c, "Relu", "r1", (const char *[]){"c1"}, 1, "r1", NULL, 0);
  ge_test_net_node(c, "Conv", "c2", (const char *[]){"r1", "w2"}, 2, "c2", NULL, 0);
  ge_test_net_node(c, "Add", "add", (const char *[]){"c2", "r1"}, 2, "add", NULL, 0);
  ge_test_net_node(c, "Relu", "r2", (const char *[]){"add"}, 1, "r2", NULL, 0);
  ge_test_net_node(c, "MaxPool", "mp", (const char *[]){"r2"}, 1, "mp", mp_attr, 2);
  ge_test_net_node(c, "Conv", "c3", (const char *[]){"mp", "w3"}, 2, "c3", pad_attr, 1);
  ge_test_net_node(c, "Conv", "c4", (const char *[]){"c3", "w4"}, 2, "c4", NULL, 0);
  ge_test_net_node(c, "Conv", "c5", (const char *[]){"c4", "w5"}, 2, "c5", dw_attr, 2);
  ge_test_net_node(c, "AveragePool", "ap", (const char *[]){"c5"}, 1, "ap", ap_attr, 3);
  ge_test_net_node(c, "Conv", "c6", (const char *[]){"ap", "w6"}, 2, "c6", NULL, 0);
  ge_test_net_node(c, "GlobalAveragePool", "gap", (const char *[]){"c6"}, 1, "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(c->g, "y"), GE_OK);
  if (expose) {
    const char *mids[] = {"c1", "r1", "c2", "add", "r2", "mp", "c3", "c4", "c5", "ap", "c6"};
    for (size_t i = 0; i < sizeof mids / sizeof mids[0]; i++)
      assert_int_equal(ge_graph_add_output(c->g, mids[i]), GE_OK);
  }
}

static ge_tensor *run_graph(ge_graph *g, int threads, ge_tensor *const *in, size_t n_in, size_t n_out) {
  char th[8];
  snprintf(th, sizeof th, "%d", threads);
  ge_option opts[] = {{"ge.intraOpThreads", th}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(opts, 1, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
  ge_tensor *outs[16] = {0};
  assert_true(n_out <= 16);
  ge_status st = ge_session_run_graph(s, 1, in, n_in, outs, n_out);
  if (st != GE_OK) fprintf(stderr, "run: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  /* a second run reuses the cached buffers: same result */
  ge_tensor *again[16] = {0};
  assert_int_equal(ge_session_run_graph(s, 1, in, n_in, again, n_out), GE_OK);
  assert_int_equal(outs[0]->nbytes, again[0]->nbytes);
  assert_memory_equal(outs[0]->data, again[0]->data, outs[0]->nbytes);
  for (size_t i = 1; i < n_out; i++) {
    ge_tensor_free(outs[i]);
    ge_tensor_free(again[i]);
  }
  ge_tensor_free(again[0]);
  ge_session_free(s);
  return outs[0];
}

/* x [1, C, H, W] -> Conv3x3 stride 2 pad 1 + Relu -> Conv3x3 dilation 2 pad 2 -> Conv1x1 +
   residual, Relu -> Conv 2x3 stride 2 pads (0,1,1,0) -> Conv1x1 with bias: convolutions of
   few pixels, which fast/pgemm.c runs as GEMMs on the gathered receptive fields.
   expose: every intermediate is a graph output too (all tensors stay plain). */
static void build_strided_cnn(ge_test_net *c, int64_t C, int64_t H, int64_t W, int64_t C2, bool expose) {
  rng = 0x9e3779b97f4a7c15ull;
  ge_test_net_init(c, "cnn2", &rng);
  int64_t xd[] = {1, C, H, W};
  assert_int_equal(ge_graph_add_input(c->g, "x", GE_F32, xd, 4), GE_OK);
  int64_t w4d[] = {C2 / 2, C2, 1, 1};
  assert_int_equal(ge_graph_add_input(c->g, "w4", GE_F32, w4d, 4), GE_OK); /* unused here */
  int64_t w1[] = {C2, C, 3, 3}, b1[] = {C2}, w2[] = {C2, C2, 3, 3}, w3[] = {C2, C2, 1, 1}, w5[] = {C2, C2, 2, 3};
  int64_t w6[] = {C2, C2, 1, 1};
  ge_test_net_const(c, "w1", w1, 4, 0.2f);
  ge_test_net_const(c, "b1", b1, 1, 0.1f);
  ge_test_net_const(c, "w2", w2, 4, 0.1f);
  ge_test_net_const(c, "w3", w3, 4, 0.2f);
  ge_test_net_const(c, "w5", w5, 4, 0.1f);
  ge_test_net_const(c, "w6", w6, 4, 0.2f);
  int64_t p1[] = {1, 1, 1, 1}, p2[] = {2, 2, 2, 2}, p5[] = {0, 1, 1, 0}, s2[] = {2, 2}, s5[] = {2, 2}, d2[] = {2, 2};
  ge_attr a1[] = {GE_ATTR_INTS("pads", p1, 4), GE_ATTR_INTS("strides", s2, 2)};
  ge_attr a2[] = {GE_ATTR_INTS("pads", p2, 4), GE_ATTR_INTS("dilations", d2, 2)};
  ge_attr a5[] = {GE_ATTR_INTS("pads", p5, 4), GE_ATTR_INTS("strides", s5, 2)};
  ge_test_net_node(c, "Conv", "c1", (const char *[]){"x", "w1", "b1"}, 3, "c1", a1, 2);
  ge_test_net_node(c, "Relu", "r1", (const char *[]){"c1"}, 1, "r1", NULL, 0);
  ge_test_net_node(c, "Conv", "c2", (const char *[]){"r1", "w2"}, 2, "c2", a2, 2);
  ge_test_net_node(c, "Conv", "c3", (const char *[]){"c2", "w3"}, 2, "c3", NULL, 0);
  ge_test_net_node(c, "Add", "add", (const char *[]){"c3", "r1"}, 2, "add", NULL, 0);
  ge_test_net_node(c, "Relu", "r2", (const char *[]){"add"}, 1, "r2", NULL, 0);
  ge_test_net_node(c, "Conv", "c5", (const char *[]){"r2", "w5"}, 2, "c5", a5, 2);
  ge_test_net_node(c, "Conv", "c6", (const char *[]){"c5", "w6", "b1"}, 3, "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(c->g, "y"), GE_OK);
  if (expose) {
    const char *mids[] = {"c1", "r1", "c2", "c3", "add", "r2", "c5"};
    for (size_t i = 0; i < sizeof mids / sizeof mids[0]; i++)
      assert_int_equal(ge_graph_add_output(c->g, mids[i]), GE_OK);
  }
}

typedef void (*cnn_builder)(ge_test_net *c, int64_t C, int64_t H, int64_t W, int64_t C2, bool expose);

/* The graph of `build` run as compiled (channels-last, fast kernels) against the same graph
   with every intermediate exposed (plain): `mids` intermediates. */
static void check_cnn_with(cnn_builder build, size_t mids, int64_t C, int64_t H, int64_t W, int64_t C2,
                           int threads) {
  int64_t xd[] = {1, C, H, W}, w4d[] = {C2 / 2, C2, 1, 1};
  ge_tensor *x = rand_t(xd, 4, 1.f), *w4 = rand_t(w4d, 4, 0.3f);
  ge_tensor *in[] = {x, w4};
  ge_test_net a, b;
  build(&a, C, H, W, C2, false);
  build(&b, C, H, W, C2, true);
  ge_tensor *ya = run_graph(a.g, threads, in, 2, 1);
  ge_tensor *yb = run_graph(b.g, threads, in, 2, 1 + mids);
  assert_int_equal(ya->numel, yb->numel);
  const float *pa = ya->data, *pb = yb->data;
  /* float32 sums in another order (oneDNN's kernels differ by ISA and layout): the error of an
     element scales with the magnitudes summed into it, not with its own (a near-zero output of
     large terms, five 500-channel layers deep, is off by 2e-4 in 264 under AVX2) */
  float big = 0.f;
  for (size_t i = 0; i < ya->numel; i++) big = fabsf(pb[i]) > big ? fabsf(pb[i]) : big;
  for (size_t i = 0; i < ya->numel; i++) {
    float d = fabsf(pa[i] - pb[i]), tol = 1e-4f + 1e-3f * fabsf(pb[i]) + 4e-6f * big;
    if (!(d <= tol)) fail_msg("C=%lld H=%lld W=%lld C2=%lld threads %d: y[%zu] %g vs plain %g", (long long)C,
                              (long long)H, (long long)W, (long long)C2, threads, i, pa[i], pb[i]);
  }
  ge_tensor_free(ya);
  ge_tensor_free(yb);
  ge_test_net_free(&a);
  ge_test_net_free(&b);
  ge_tensor_free(x);
  ge_tensor_free(w4);
}

static void check_cnn(int64_t C, int64_t H, int64_t W, int64_t C2, int threads) {
  check_cnn_with(build_cnn, 11, C, H, W, C2, threads);
}

static void test_cnn_channels_last(void **unused) {
  (void)unused;
  check_cnn(3, 9, 11, 24, 1);
  check_cnn(5, 13, 7, 18, 2);
  check_cnn(16, 8, 8, 32, 2);
  check_cnn(1, 5, 6, 6, 1);
  /* strided, dilated and asymmetric convolutions of few pixels (fast/pgemm.c) */
  check_cnn_with(build_strided_cnn, 7, 16, 9, 11, 32, 1);
  check_cnn_with(build_strided_cnn, 7, 24, 14, 14, 48, 2);
  check_cnn_with(build_strided_cnn, 7, 3, 7, 10, 20, 2);
  /* gathered fields of 42-49 pixels x 3456-4500 floats: the gather split over threads, and
     384 / 500 output channels (8 / 11 panels) */
  check_cnn_with(build_strided_cnn, 7, 128, 14, 14, 384, 2);
  check_cnn_with(build_strided_cnn, 7, 96, 13, 11, 500, 3);
  /* 1x1 convolutions of 196 and 210 pixels with 256 and 272 channels and a residual (c3), which
     pgemm takes up to 256 pixels where both channel counts are 32 or more; and with 40 and 33
     channels (MobileNetV2's 14x14 stage has 64-576) */
  check_cnn_with(build_strided_cnn, 7, 16, 28, 28, 256, 2);
  check_cnn_with(build_strided_cnn, 7, 8, 27, 29, 272, 3);
  check_cnn_with(build_strided_cnn, 7, 8, 27, 29, 272, 1);
  check_cnn_with(build_strided_cnn, 7, 8, 28, 28, 40, 2);
  check_cnn_with(build_strided_cnn, 7, 5, 27, 29, 33, 3);
  /* 3x3 convolutions of 196 and 165 pixels: Winograd F(2x2, 3x3) (fast/pgemm.c) */
  check_cnn(16, 14, 14, 32, 2);
  check_cnn(24, 15, 11, 40, 1);
}

/* two threads run one session at once: the cached buffer is never shared */
typedef struct par_arg {
  ge_session *s;
  ge_tensor *const *in;
  ge_tensor *out;
  ge_status st;
} par_arg;

static void *par_run(void *p) {
  par_arg *a = p;
  for (int i = 0; i < 4 && a->st == GE_OK; i++) {
    ge_tensor_free(a->out);
    a->out = NULL;
    a->st = ge_session_run_graph(a->s, 1, a->in, 2, &a->out, 1);
  }
  return NULL;
}

static void test_concurrent_runs(void **unused) {
  (void)unused;
  int64_t xd[] = {1, 4, 12, 10}, w4d[] = {8, 16, 1, 1};
  ge_tensor *x = rand_t(xd, 4, 1.f), *w4 = rand_t(w4d, 4, 0.3f);
  ge_tensor *in[] = {x, w4};
  ge_test_net a;
  build_cnn(&a, 4, 12, 10, 16, false);
  ge_tensor *ref = run_graph(a.g, 1, in, 2, 1);
  ge_option opts[] = {{"ge.intraOpThreads", "1"}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(opts, 1, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, a.g), GE_OK);
  assert_int_equal(ge_session_build_graph(s, 1), GE_OK);
  par_arg pa[2] = {{s, in, NULL, GE_OK}, {s, in, NULL, GE_OK}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, par_run, &pa[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(pa[i].st, GE_OK);
    assert_int_equal(pa[i].out->nbytes, ref->nbytes);
    assert_memory_equal(pa[i].out->data, ref->data, ref->nbytes);
    ge_tensor_free(pa[i].out);
  }
  ge_session_free(s);
  ge_tensor_free(ref);
  ge_test_net_free(&a);
  ge_tensor_free(x);
  ge_tensor_free(w4);
}

/* ------------------------------------------------------------------ fast kernels vs reference */

#define MAX_IO 6

static void test_fast_expf(void **unused) {
  (void)unused;
  for (float x = -100.f; x <= 88.f; x += 0.0137f) {
    float e = ge_fast_expf(x), r = expf(x);
    if (x < -87.f) {
      assert_true(e == 0.f);
      continue;
    }
    if (!(fabsf(e - r) <= 4e-7f * r)) fail_msg("exp(%g): %.9g vs libm %.9g", x, e, r);
  }
  assert_true(ge_fast_expf(-INFINITY) == 0.f);
  assert_true(isnan(ge_fast_expf(NAN)));
}

/* One node over inputs of the given tensors' dtypes and shapes, its output type inferred (the
   struct holds what the infer and prepare contexts point into: keep it in place). */
typedef struct one_node {
  ge_graph *g;
  ge_node *nd;
  const char *in_names[MAX_IO];
  char ib[MAX_IO][24];
  ge_type in_t[MAX_IO], out_t[1];
  ge_infer_input ins[MAX_IO];
} one_node;

static void one_node_build(one_node *o, const char *domain_op, const ge_attr *at, size_t na, ge_tensor *const *in,
                           size_t n_in) {
  memset(o, 0, sizeof *o);
  assert_true(n_in <= MAX_IO);
  assert_int_equal(ge_graph_create("t", &o->g), GE_OK);
  for (size_t i = 0; i < n_in; i++) {
    snprintf(o->ib[i], sizeof o->ib[i], "i%zu", i);
    o->in_names[i] = o->ib[i];
    assert_int_equal(ge_graph_add_input(o->g, o->ib[i], in[i]->dtype, in[i]->dims, (size_t)in[i]->rank), GE_OK);
    o->in_t[i] = ge_test_type(in[i]->dtype, in[i]->dims, in[i]->rank);
    o->ins[i].present = true;
    o->ins[i].type = &o->in_t[i];
  }
  const char *outs[] = {"y"};
  assert_int_equal(ge_graph_add_node(o->g, domain_op, "n", o->in_names, n_in, outs, 1, at, na), GE_OK);
  o->nd = &o->g->nodes[o->g->n_nodes - 1];
  ge_infer_ctx ic = {.graph = o->g, .node = o->nd, .opset = o->nd->opset, .n_in = n_in, .n_out = 1,
                     .in = o->ins, .out = o->out_t};
  ge_status st = ge_op_infer(&ic);
  if (st != GE_OK) fprintf(stderr, "%s: infer: %s\n", domain_op, ge_last_error());
  assert_int_equal(st, GE_OK);
}

/* The reference kernel's output for node o over in, at `threads` threads. */
static ge_tensor *one_node_ref(const one_node *o, ge_tensor *const *in, size_t n_in, int threads) {
  const ge_kernel *ref = ge_cpu_find_kernel(o->nd->domain, o->nd->op_type, o->nd->opset);
  assert_non_null(ref);
  ge_prepare_ctx pc = {.graph = o->g, .node = o->nd, .opset = o->nd->opset, .n_in = n_in, .n_out = 1,
                       .in = o->ins, .out = o->out_t, .intra_threads = threads};
  ge_tensor *ro = NULL;
  assert_int_equal(ge_tensor_create_shape(GE_F32, &o->out_t[0].shape, &ro), GE_OK);
  void *rs = NULL;
  if (ref->prepare) assert_int_equal(ref->prepare(&pc, &rs), GE_OK);
  ge_kctx kc = {.node = o->nd, .n_in = n_in, .n_out = 1, .in = in, .out = &ro, .threads = threads};
  ge_status st = ref->run(rs, &kc);
  if (st != GE_OK) fprintf(stderr, "ref run: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  if (ref->release && rs) ref->release(rs);
  return ro;
}

/* Builds one node on inputs of the given shapes, infers, then prepares and runs every fast
   candidate and the reference kernel; outputs must agree.  The fast family must accept it. */
/* check_fast_op with the inputs of bit i in const_mask given as compile-time constants (weights);
   first_accepts: the first candidate (the packed matmul kernels) must take the node, and give
   the same bits at 2 and 3 threads as at 1, however the threads claim its work. */
static void check_fast_op_c(const char *domain_op, const ge_attr *attrs, size_t na, ge_tensor *const *in,
                            size_t n_in, double tol, uint32_t const_mask, bool first_accepts);
static bool check_first_only; /* check_fast_op_c: the first candidate alone */
static void check_fast_op(const char *domain_op, const ge_attr *attrs, size_t na, ge_tensor *const *in, size_t n_in,
                          double tol) {
  check_fast_op_c(domain_op, attrs, na, in, n_in, tol, 0, false);
}
static void check_fast_op_c(const char *domain_op, const ge_attr *attrs, size_t na, ge_tensor *const *in,
                            size_t n_in, double tol, uint32_t const_mask, bool first_accepts) {
  one_node o;
  one_node_build(&o, domain_op, attrs, na, in, n_in);
  for (size_t i = 0; i < n_in; i++)
    if (const_mask & (1u << i)) o.ins[i].value = in[i];
  const ge_node *nd = o.nd;
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(nd->domain, nd->op_type, nd->opset, cand, 8);
  assert_true(nc >= 2);
  ge_tensor *ro = one_node_ref(&o, in, n_in, 2);
  ge_prepare_ctx pc = {.graph = o.g, .node = nd, .opset = nd->opset, .n_in = n_in, .n_out = 1, .in = o.ins,
                       .out = o.out_t, .intra_threads = 2};
  ge_status st;
  bool accepted = false;
  for (size_t k = 0; k + 1 < nc && (k == 0 || !check_first_only); k++) {
    void *fs = NULL;
    st = cand[k]->prepare ? cand[k]->prepare(&pc, &fs) : GE_OK;
    if (st != GE_OK && k == 0 && first_accepts) fail_msg("%s: the first candidate declines: %s", domain_op, ge_last_error());
    if (st == GE_ERR_UNSUPPORTED) continue;
    assert_int_equal(st, GE_OK);
    accepted = true;
    ge_tensor *one = NULL; /* the 1-thread output of the first candidate */
    for (int threads = 1; threads <= 3; threads++) {
      ge_tensor *fo = NULL;
      assert_int_equal(ge_tensor_create_shape(GE_F32, &o.out_t[0].shape, &fo), GE_OK);
      ge_kctx fc = {.node = nd, .n_in = n_in, .n_out = 1, .in = in, .out = &fo, .threads = threads};
      st = cand[k]->run(fs, &fc);
      if (st != GE_OK) fprintf(stderr, "%s: run: %s\n", domain_op, ge_last_error());
      assert_int_equal(st, GE_OK);
      const float *a = fo->data, *b = ro->data;
      for (size_t i = 0; i < ro->numel; i++) {
        bool same = (isnan(a[i]) && isnan(b[i])) || a[i] == b[i] ||
                    fabs((double)a[i] - b[i]) <= tol + tol * fabs((double)b[i]);
        if (!same) fail_msg("%s threads %d: element %zu: fast %.7g reference %.7g", domain_op, threads, i, a[i], b[i]);
      }
      if (k == 0 && first_accepts && one && memcmp(fo->data, one->data, fo->nbytes) != 0)
        fail_msg("%s: %d threads computed other bits than 1 thread", domain_op, threads);
      if (k == 0 && first_accepts && threads == 1) one = fo;
      else ge_tensor_free(fo);
    }
    ge_tensor_free(one);
    if (cand[k]->release) cand[k]->release(fs);
  }
  assert_true(accepted);
  ge_tensor_free(ro);
  ge_graph_free(o.g);
}

static void attn_case(const int64_t *qd, const int64_t *kd, const int64_t *vd, size_t r, const int64_t *md, size_t mr,
                      float scale, bool mask_inf) {
  ge_tensor *in[4] = {rand_t(qd, r, 1.f), rand_t(kd, r, 1.f), rand_t(vd, r, 1.f), NULL};
  size_t n_in = 3;
  if (md) {
    in[3] = rand_t(md, mr, 2.f);
    if (mask_inf) { /* some -inf entries, and a fully masked first row when the mask has rows */
      float *m = in[3]->data;
      for (size_t i = 0; i < in[3]->numel; i += 3) m[i] = -INFINITY;
      if (mr >= 2 && md[mr - 2] > 1)
        for (int64_t j = 0; j < md[mr - 1]; j++) m[j] = -INFINITY;
    }
    n_in = 4;
  }
  ge_attr at[] = {GE_ATTR_FLOAT("scale", scale)};
  check_fast_op("ai.ge::Attention", at, 1, in, n_in, 2e-5);
  for (size_t i = 0; i < 4; i++) ge_tensor_free(in[i]);
}

/* the reference kernel's output for one Attention node (attrs at) over in */
static ge_tensor *attn_ref_out(const ge_attr *at, size_t na, ge_tensor *const *in, size_t n_in) {
  one_node o;
  one_node_build(&o, "ai.ge::Attention", at, na, in, n_in);
  ge_tensor *ro = one_node_ref(&o, in, n_in, 1);
  ge_graph_free(o.g);
  return ro;
}

/* a rank-4 tensor permuted: out.dims[d] = t.dims[perm[d]] */
static ge_tensor *permute4(const ge_tensor *t, const int32_t *perm) {
  int64_t od[4];
  for (int d = 0; d < 4; d++) od[d] = t->dims[perm[d]];
  ge_tensor *o = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, od, 4, &o), GE_OK);
  size_t st[4], s = 1;
  for (int d = 3; d >= 0; d--) st[d] = s, s *= (size_t)t->dims[d];
  const float *x = t->data;
  float *y = o->data;
  size_t i = 0;
  for (int64_t a = 0; a < od[0]; a++)
    for (int64_t b = 0; b < od[1]; b++)
      for (int64_t c = 0; c < od[2]; c++)
        for (int64_t e = 0; e < od[3]; e++)
          y[i++] = x[(size_t)a * st[perm[0]] + (size_t)b * st[perm[1]] + (size_t)c * st[perm[2]] + (size_t)e * st[perm[3]]];
  return o;
}

/* Runs the prepared convolution kernel k (state fs) of node o on `in` at 1-3 threads into a
   channels-last [N, oh, ow, K] output (filled with NaN first: every element must be written) and
   compares it, back in plain order, with want: |got - want| <= atol + rtol |want|. */
static void check_conv_nhwc(const ge_kernel *k, void *fs, const one_node *o, ge_tensor *const *in, size_t n_in,
                            const ge_tensor *want, int64_t N, int64_t oh, int64_t ow, int64_t K, double atol,
                            double rtol, const char *what) {
  int64_t yd[4] = {N, oh, ow, K};
  static const int32_t to_nchw[4] = {0, 3, 1, 2};
  for (int threads = 1; threads <= 3; threads++) {
    ge_tensor *y = NULL;
    assert_int_equal(ge_tensor_create(GE_F32, yd, 4, &y), GE_OK);
    memset(y->data, 0xff, y->numel * sizeof(float));
    ge_kctx kc = {.node = o->nd, .n_in = n_in, .n_out = 1, .in = in, .out = &y, .threads = threads};
    ge_status st = k->run(fs, &kc);
    if (st != GE_OK) fprintf(stderr, "%s run: %s\n", what, ge_last_error());
    assert_int_equal(st, GE_OK);
    ge_tensor *got = permute4(y, to_nchw);
    const float *a = got->data, *b = want->data;
    assert_int_equal(got->numel, want->numel);
    for (size_t i = 0; i < want->numel; i++)
      if (!(fabs((double)a[i] - b[i]) <= atol + rtol * fabs((double)b[i])))
        fail_msg("%s N=%lld %lldx%lld K=%lld threads %d: element %zu: %.7g, reference %.7g", what, (long long)N,
                 (long long)oh, (long long)ow, (long long)K, threads, i, a[i], b[i]);
    ge_tensor_free(got);
    ge_tensor_free(y);
  }
}

/* layout attribute: stored [B, S, H, D] operands against the plain op on the transposed ones
   (reference kernel), and the fast kernels against the reference with the layout */
static void attn_layout_case(int64_t B, int64_t H, int64_t M, int64_t N, int64_t D, int64_t Dv, unsigned layout,
                             const int64_t *md, size_t mr) {
  static const int32_t p_q[4] = {0, 2, 1, 3}, p_k[4] = {0, 2, 3, 1}, p_ki[4] = {0, 3, 1, 2};
  int64_t qd[4] = {B, H, M, D}, kd[4] = {B, H, D, N}, vd[4] = {B, H, N, Dv};
  ge_tensor *plain[4] = {rand_t(qd, 4, 1.f), rand_t(kd, 4, 1.f), rand_t(vd, 4, 1.f), md ? rand_t(md, mr, 2.f) : NULL};
  if (md) { /* some -inf: a fully masked row when the mask has rows */
    float *m = plain[3]->data;
    if (mr >= 2 && md[mr - 2] > 1)
      for (int64_t j = 0; j < md[mr - 1]; j++) m[j] = -INFINITY;
  }
  size_t n_in = md ? 4 : 3;
  ge_tensor *stored[4] = {layout & 1 ? permute4(plain[0], p_q) : plain[0], layout & 2 ? permute4(plain[1], p_ki) : plain[1],
                          layout & 4 ? permute4(plain[2], p_q) : plain[2], plain[3]};
  ge_attr a0[] = {GE_ATTR_FLOAT("scale", 0.3f)};
  ge_attr a1[] = {GE_ATTR_FLOAT("scale", 0.3f), GE_ATTR_INT("layout", (int64_t)layout)};
  ge_tensor *want = attn_ref_out(a0, 1, plain, n_in), *got = attn_ref_out(a1, 2, stored, n_in);
  ge_tensor *gl = layout & 8 ? permute4(got, p_q) : got;
  assert_int_equal(gl->numel, want->numel);
  for (int d = 0; d < 4; d++) assert_int_equal(gl->dims[d], want->dims[d]);
  const float *a = gl->data, *b = want->data;
  for (size_t i = 0; i < want->numel; i++) {
    bool same = (isnan(a[i]) && isnan(b[i])) || fabs((double)a[i] - b[i]) <= 1e-5 + 1e-5 * fabs((double)b[i]);
    if (!same) fail_msg("layout %u: element %zu: %.7g, plain %.7g", layout, i, a[i], b[i]);
  }
  check_fast_op("ai.ge::Attention", a1, 2, stored, n_in, 2e-5);
  (void)p_k;
  if (gl != got) ge_tensor_free(gl);
  ge_tensor_free(got);
  ge_tensor_free(want);
  for (size_t i = 0; i < 3; i++)
    if (stored[i] != plain[i]) ge_tensor_free(stored[i]);
  for (size_t i = 0; i < 4; i++) ge_tensor_free(plain[i]);
}

static void test_fast_attention_layout(void **unused) {
  (void)unused;
  int64_t m1[4] = {2, 1, 1, 19}, m2[2] = {7, 19}, m3[4] = {2, 3, 7, 19};
  for (unsigned l = 1; l <= 15; l++) attn_layout_case(2, 3, 7, 19, 5, 6, l, m1, 4);
  attn_layout_case(2, 3, 7, 19, 5, 6, 15, m2, 2);
  attn_layout_case(2, 3, 7, 19, 5, 6, 15, m3, 4);
  attn_layout_case(1, 12, 33, 33, 64, 64, 15, NULL, 0);
  int64_t m4[3] = {1, 13, 70};
  attn_layout_case(1, 2, 13, 70, 17, 65, 6, m4, 3);
}

static void test_fast_attention(void **unused) {
  (void)unused;
  /* BERT-like: [B, H, M, D] x [B, H, D, N], mask [B, 1, 1, N] */
  attn_case((int64_t[]){2, 3, 17, 8}, (int64_t[]){2, 3, 8, 19}, (int64_t[]){2, 3, 19, 5}, 4,
            (int64_t[]){2, 1, 1, 19}, 4, 0.35f, false);
  /* no mask, odd sizes, one head (fewer pairs than threads: threaded GEMMs) */
  attn_case((int64_t[]){1, 33, 7}, (int64_t[]){1, 7, 41}, (int64_t[]){1, 41, 3}, 3, NULL, 0, 1.f, false);
  /* batch broadcast: K and V shared across heads; a full [M, N] mask with -inf entries */
  attn_case((int64_t[]){4, 5, 16}, (int64_t[]){1, 16, 35}, (int64_t[]){1, 35, 9}, 3, (int64_t[]){5, 35}, 2, 0.25f,
            true);
  /* rank 2, mask a scalar */
  attn_case((int64_t[]){6, 4}, (int64_t[]){4, 6}, (int64_t[]){6, 6}, 2, (int64_t[]){1}, 1, 0.5f, false);
  /* causal-like mask broadcast over batch, long rows (vector tails) */
  attn_case((int64_t[]){3, 2, 9, 16}, (int64_t[]){3, 2, 16, 67}, (int64_t[]){3, 2, 67, 16}, 4,
            (int64_t[]){1, 1, 9, 67}, 4, 0.125f, true);
  /* head sizes past one 64-column register tile, rows not a multiple of the 6-row block */
  attn_case((int64_t[]){2, 2, 47, 70}, (int64_t[]){2, 2, 70, 131}, (int64_t[]){2, 2, 131, 81}, 4,
            (int64_t[]){2, 1, 1, 131}, 4, 0.125f, true);
  attn_case((int64_t[]){1, 4, 64, 64}, (int64_t[]){1, 4, 64, 64}, (int64_t[]){1, 4, 64, 64}, 4,
            (int64_t[]){1, 1, 64, 64}, 4, 0.125f, false);
}

static void concat_case(int64_t axis, const int64_t *chans, size_t n, size_t rank, const int64_t *rest) {
  ge_tensor *in[MAX_IO] = {0};
  for (size_t i = 0; i < n; i++) {
    int64_t d[5] = {rest[0], chans[i], rest[1], rest[2], rest[3]};
    in[i] = rand_t(d, rank, 1.f);
  }
  ge_attr at[] = {GE_ATTR_INT("axis", axis)};
  check_fast_op("Concat", at, 1, in, n, 0);
  for (size_t i = 0; i < n; i++) ge_tensor_free(in[i]);
}

static void test_fast_concat(void **unused) {
  (void)unused;
  concat_case(1, (int64_t[]){3, 5, 1, 16}, 4, 4, (int64_t[]){1, 7, 9, 1});
  concat_case(-3, (int64_t[]){2, 7}, 2, 4, (int64_t[]){2, 5, 3, 1});
  concat_case(1, (int64_t[]){4, 1, 9}, 3, 3, (int64_t[]){3, 11, 1, 1});
  concat_case(1, (int64_t[]){2, 3}, 2, 5, (int64_t[]){1, 3, 2, 5});
  concat_case(1, (int64_t[]){6}, 1, 4, (int64_t[]){1, 4, 4, 1});
}


/* ------------------------------------------------------------------ transformer.c */

static void test_fast_layernorm(void **unused) {
  (void)unused;
  /* BERT-like rows (parallel), odd row length (tails), scale only, axis -2 */
  const int64_t shapes[][3] = {{3, 129, 77}, {2, 5, 33}, {1, 1, 7}, {260, 1, 131}};
  for (size_t c = 0; c < 4; c++) {
    int64_t xd[3] = {shapes[c][0], shapes[c][1], shapes[c][2]};
    int64_t axis = c == 1 ? -2 : -1;
    int64_t nd[2] = {xd[1], xd[2]};
    const int64_t *sd = axis == -1 ? &xd[2] : nd;
    size_t sr = axis == -1 ? 1 : 2;
    ge_tensor *in[3] = {rand_t(xd, 3, 3.f), rand_t(sd, sr, 1.f), rand_t(sd, sr, 1.f)};
    float *x = in[0]->data;
    for (size_t i = 0; i < in[0]->numel; i++) x[i] += 5.f; /* an offset mean */
    ge_attr at[] = {GE_ATTR_INT("axis", axis), GE_ATTR_FLOAT("epsilon", 1e-5f)};
    check_fast_op("ai.ge::LayerNormalization", at, 2, in, c == 2 ? 2 : 3, 5e-5);
    for (size_t i = 0; i < 3; i++) ge_tensor_free(in[i]);
  }
}

static void bin_case(const char *op, const int64_t *ad, size_t ar, const int64_t *bd, size_t br) {
  ge_tensor *in[2] = {rand_t(ad, ar, 2.f), rand_t(bd, br, 2.f)};
  if (!strcmp(op, "Div")) { /* keep divisors away from 0 */
    float *b = in[1]->data;
    for (size_t i = 0; i < in[1]->numel; i++) b[i] = b[i] >= 0 ? b[i] + 0.5f : b[i] - 0.5f;
  }
  check_fast_op(op, NULL, 0, in, 2, 1e-6);
  for (size_t i = 0; i < 2; i++) ge_tensor_free(in[i]);
}

static void test_fast_binary(void **unused) {
  (void)unused;
  static const char *ops[] = {"Add", "Sub", "Mul", "Div"};
  for (size_t o = 0; o < 4; o++) {
    bin_case(ops[o], (int64_t[]){3, 129, 101}, 3, (int64_t[]){3, 129, 101}, 3); /* same shape, parallel */
    bin_case(ops[o], (int64_t[]){2, 37, 769}, 3, (int64_t[]){769}, 1);          /* bias */
    bin_case(ops[o], (int64_t[]){1, 37}, 2, (int64_t[]){5, 3, 1, 37}, 4);        /* A is the block */
    bin_case(ops[o], (int64_t[]){1}, 1, (int64_t[]){4, 9000}, 2);                /* scalar A */
    bin_case(ops[o], (int64_t[]){7, 9000}, 2, (int64_t[]){1, 1}, 2);             /* scalar B */
    bin_case(ops[o], (int64_t[]){5, 1, 7}, 3, (int64_t[]){3, 1}, 2);             /* general: reference */
    bin_case(ops[o], (int64_t[]){2, 3, 1}, 3, (int64_t[]){2, 1, 5}, 3);          /* general: reference */
  }
}

static void test_fast_softmax(void **unused) {
  (void)unused;
  const int64_t shapes[][4] = {{2, 12, 64, 64}, {3, 5, 1, 37}, {1, 1, 9, 1}, {1, 4, 33, 130}};
  for (size_t c = 0; c < 4; c++) {
    ge_tensor *in[1] = {rand_t(shapes[c], 4, 8.f)};
    if (c == 3) { /* masked entries and a fully masked row */
      float *x = in[0]->data;
      for (size_t i = 0; i < in[0]->numel; i += 5) x[i] = -INFINITY;
      for (size_t i = 0; i < 130; i++) x[i] = -INFINITY;
    }
    ge_attr at[] = {GE_ATTR_INT("axis", c == 1 ? 3 : -1)};
    check_fast_op("Softmax", at, 1, in, 1, 2e-6);
    ge_tensor_free(in[0]);
  }
}
/* ------------------------------------------------------------------ Attention, select mask */

/* a bool condition of shape cd: about a third masked (pattern 0), or causal over its last two
   dims (1); with rows (cd[cr - 2] > 1) its first row fully masked */
static ge_tensor *attn_cond(const int64_t *cd, size_t cr, int pattern) {
  ge_tensor *c = NULL;
  assert_int_equal(ge_tensor_create(GE_BOOL, cd, cr, &c), GE_OK);
  uint8_t *b = c->data;
  size_t n = cr ? (size_t)cd[cr - 1] : 1, m = cr >= 2 ? (size_t)cd[cr - 2] : 1;
  for (size_t i = 0; i < c->numel; i++) {
    size_t col = i % n, row = i / n % m;
    b[i] = pattern ? col <= row : (uint8_t)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 62 != 0);
  }
  if (m > 1)
    for (size_t j = 0; j < n; j++) b[j] = 0;
  return c;
}

/* mask_mode 1: the fast kernels against the reference, stored operand shapes qd/kd/vd (layout) */
static void attn_select_case(const int64_t *qd, const int64_t *kd, const int64_t *vd, size_t r, const int64_t *cd,
                             size_t cr, int pattern, float scale, float fill, unsigned layout) {
  ge_tensor *in[4] = {rand_t(qd, r, 1.f), rand_t(kd, r, 1.f), rand_t(vd, r, 1.f), attn_cond(cd, cr, pattern)};
  ge_attr at[] = {GE_ATTR_FLOAT("scale", scale), GE_ATTR_INT("mask_mode", 1), GE_ATTR_FLOAT("mask_fill", fill),
                  GE_ATTR_INT("layout", (int64_t)layout)};
  check_fast_op("ai.ge::Attention", at, 4, in, 4, 2e-5);
  for (size_t i = 0; i < 4; i++) ge_tensor_free(in[i]);
}

/* the reference in select mode is Where(cond, scores, fill) -> Softmax: a fully masked row with a
   finite fill is uniform (the mean of V's rows), with fill -inf NaN; kept scores are those of the
   unmasked op (the additive mask 0 / -inf gives the same where a row keeps an entry) */
static void test_attention_select_ref(void **unused) {
  (void)unused;
  const int64_t qd[] = {2, 3, 5, 4}, kd[] = {2, 3, 4, 7}, vd[] = {2, 3, 7, 3}, cd[] = {1, 1, 5, 7};
  ge_tensor *in[4] = {rand_t(qd, 4, 1.f), rand_t(kd, 4, 1.f), rand_t(vd, 4, 1.f), attn_cond(cd, 4, 1)};
  ge_tensor *add = rand_t(cd, 4, 1.f);
  const uint8_t *c = in[3]->data;
  float *am = add->data;
  for (size_t i = 0; i < add->numel; i++) am[i] = c[i] ? 0.f : -INFINITY;
  const float fills[] = {-1e9f, -INFINITY, 3.f};
  ge_tensor *ain[4] = {in[0], in[1], in[2], add};
  ge_attr a0[] = {GE_ATTR_FLOAT("scale", 0.5f)};
  ge_tensor *want = attn_ref_out(a0, 1, ain, 4);
  for (int f = 0; f < 3; f++) {
    ge_attr at[] = {GE_ATTR_FLOAT("scale", 0.5f), GE_ATTR_INT("mask_mode", 1), GE_ATTR_FLOAT("mask_fill", fills[f])};
    ge_tensor *got = attn_ref_out(at, 3, in, 4);
    const float *y = got->data, *w = want->data, *v = in[2]->data;
    for (size_t b = 0; b < 6; b++)
      for (size_t i = 0; i < 5; i++)
        for (size_t d = 0; d < 3; d++) {
          float a = y[(b * 5 + i) * 3 + d];
          if (i == 0) { /* fully masked */
            if (isinf(fills[f])) {
              assert_true(isnan(a));
              continue;
            }
            double mean = 0;
            for (size_t n = 0; n < 7; n++) mean += v[(b * 7 + n) * 3 + d];
            mean /= 7;
            if (fabs(a - mean) > 1e-5) fail_msg("fill %g row 0: %.7g, mean of V %.7g", fills[f], a, mean);
          } else if (f < 2) {
            float e = w[(b * 5 + i) * 3 + d];
            if (a != e) fail_msg("fill %g: [%zu,%zu,%zu] %.9g, additive -inf mask %.9g", fills[f], b, i, d, a, e);
          }
        }
    ge_tensor_free(got);
  }
  ge_tensor_free(want);
  ge_tensor_free(add);
  for (size_t i = 0; i < 4; i++) ge_tensor_free(in[i]);
}

static void test_fast_attention_select(void **unused) {
  (void)unused;
  /* GPT-2-like: causal [1, 1, M, N], fill -1e9, first row fully masked (uniform) */
  attn_select_case((int64_t[]){1, 4, 64, 64}, (int64_t[]){1, 4, 64, 64}, (int64_t[]){1, 4, 64, 64}, 4,
                   (int64_t[]){1, 1, 64, 64}, 4, 1, 0.125f, -1e9f, 0);
  /* odd sizes, random condition [M, N] broadcast over batch and heads, -inf fill (NaN row) */
  attn_select_case((int64_t[]){2, 3, 17, 8}, (int64_t[]){2, 3, 8, 19}, (int64_t[]){2, 3, 19, 5}, 4,
                   (int64_t[]){17, 19}, 2, 0, 0.35f, -INFINITY, 0);
  /* per-batch key padding [B, 1, 1, N] (column stride, no rows), long rows with vector tails */
  attn_select_case((int64_t[]){2, 2, 47, 70}, (int64_t[]){2, 2, 70, 131}, (int64_t[]){2, 2, 131, 81}, 4,
                   (int64_t[]){2, 1, 1, 131}, 4, 0, 0.125f, -1e4f, 0);
  /* one value per row [B, H, M, 1] (column stride 0), a positive fill */
  attn_select_case((int64_t[]){2, 3, 9, 16}, (int64_t[]){2, 3, 16, 67}, (int64_t[]){2, 3, 67, 16}, 4,
                   (int64_t[]){2, 3, 9, 1}, 4, 0, 0.25f, 2.5f, 0);
  /* a scalar condition; one head (threaded GEMMs) */
  attn_select_case((int64_t[]){1, 33, 7}, (int64_t[]){1, 7, 41}, (int64_t[]){1, 41, 3}, 3, (int64_t[]){1}, 1, 0,
                   1.f, -1e9f, 0);
  attn_select_case((int64_t[]){1, 33, 7}, (int64_t[]){1, 7, 41}, (int64_t[]){1, 41, 3}, 3, (int64_t[]){33, 41}, 2,
                   0, 1.f, -1e9f, 0);
  /* with the layout: stored [B, S, H, D] operands (GPT-2 after the transpose folding) */
  attn_select_case((int64_t[]){2, 13, 3, 8}, (int64_t[]){2, 21, 3, 8}, (int64_t[]){2, 21, 3, 6}, 4,
                   (int64_t[]){1, 1, 13, 21}, 4, 1, 0.3f, -1e9f, 15);
  attn_select_case((int64_t[]){1, 3, 7, 5}, (int64_t[]){1, 19, 3, 5}, (int64_t[]){1, 3, 19, 6}, 4,
                   (int64_t[]){7, 19}, 2, 0, 0.3f, -1e9f, 2);
}

/* fast/pgemm.c: float32 MatMul / FusedMatMul with a constant B, against the reference: row
   counts around the 8-row blocks, column counts around the 48-wide panels and 16-wide vectors,
   K over the 1024-row K block, batch dims folded into M, bias and activations. */
static void pgemm_case(const char *op, int64_t b0, int64_t M, int64_t K, int64_t N, const char *act,
                       const float *params, size_t np) {
  int64_t ad[3] = {b0, M, K}, bd[2] = {K, N}, cd[1] = {N};
  ge_tensor *in[3] = {rand_t(b0 ? ad : ad + 1, b0 ? 3 : 2, 1.f), rand_t(bd, 2, 0.1f), rand_t(cd, 1, 1.f)};
  ge_attr at[2];
  size_t na = 0;
  if (act) at[na++] = GE_ATTR_STRING("activation", act);
  if (np) at[na++] = GE_ATTR_FLOATS("activation_params", params, np);
  bool fused = strstr(op, "Fused") != NULL;
  /* the packed kernel (tried first) must take these where the processor has AVX-512 */
  bool avx512 = ge_cpu_avx512_fma();
  check_fast_op_c(op, at, na, in, fused ? 3 : 2, 2e-5, 1u << 1, avx512);
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
}

/* FusedMatMul [M x K] x [K x N] (N > 7) whose A has a NaN in its last row and whose bias has one
   in column 7:
   the packed kernel's activations in registers (Relu, Clip) must treat them as the reference
   does (Relu: 0, Clip: NaN).  The packed kernel alone: oneDNN's Clip post-op (the next
   candidate) gives the lower bound for NaN. */
static void pgemm_nan_case(int64_t M, int64_t K, int64_t N, const char *act, const float *params, size_t np) {
  int64_t ad[2] = {M, K}, bd[2] = {K, N}, cd[1] = {N};
  ge_tensor *in[3] = {rand_t(ad, 2, 1.f), rand_t(bd, 2, 0.1f), rand_t(cd, 1, 1.f)};
  ((float *)in[0]->data)[(M - 1) * K + 3] = NAN;
  ((float *)in[2]->data)[7] = NAN;
  ge_attr at[2] = {GE_ATTR_STRING("activation", act)};
  size_t na = 1;
  if (np) at[na++] = GE_ATTR_FLOATS("activation_params", params, np);
  check_first_only = true;
  check_fast_op_c("ai.ge::FusedMatMul", at, na, in, 3, 2e-5, 1u << 1, ge_cpu_avx512_fma());
  check_first_only = false;
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
}

/* FusedMatMul with a bias and a residual Sum of the product's shape (input 3, a run-time
   input): the packed kernel adds the Sum in the first K block (pg_range's cin). */
static void pgemm_sum_case(int64_t b0, int64_t M, int64_t K, int64_t N, const char *act) {
  int64_t ad[3] = {b0, M, K}, bd[2] = {K, N}, cd[1] = {N}, sd[3] = {b0, M, N};
  ge_tensor *in[4] = {rand_t(b0 ? ad : ad + 1, b0 ? 3 : 2, 1.f), rand_t(bd, 2, 0.1f), rand_t(cd, 1, 1.f),
                      rand_t(b0 ? sd : sd + 1, b0 ? 3 : 2, 1.f)};
  ge_attr at[1];
  size_t na = 0;
  if (act) at[na++] = GE_ATTR_STRING("activation", act);
  check_fast_op_c("ai.ge::FusedMatMul", at, na, in, 4, 2e-5, 1u << 1, ge_cpu_avx512_fma());
  for (int i = 0; i < 4; i++) ge_tensor_free(in[i]);
}

/* Gemm / FusedGemm with a constant B ([K,N] or, transB, [N,K]), alpha, and C a row of N (a
   run-time input, or constant with beta != 1). */
static void gemm_case(const char *op, int64_t M, int64_t K, int64_t N, int64_t trans_b, float alpha, float beta,
                      bool c_const, bool c_2d, const char *act) {
  int64_t ad[2] = {M, K}, bd[2] = {trans_b ? N : K, trans_b ? K : N}, cd[2] = {1, N};
  ge_tensor *in[3] = {rand_t(ad, 2, 1.f), rand_t(bd, 2, 0.1f), rand_t(c_2d ? cd : cd + 1, c_2d ? 2 : 1, 1.f)};
  ge_attr at[4] = {GE_ATTR_INT("transB", trans_b), GE_ATTR_FLOAT("alpha", alpha), GE_ATTR_FLOAT("beta", beta)};
  size_t na = 3;
  if (act) at[na++] = GE_ATTR_STRING("activation", act);
  bool avx512 = ge_cpu_avx512_fma();
  check_fast_op_c(op, at, na, in, 3, 2e-5, (1u << 1) | (c_const ? 1u << 2 : 0u), avx512);
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
}

/* A 3x3 Conv / FusedConv of stride wino_stride on channels-last operands: fast/pgemm.c's
   Winograd F(2x2, 3x3) and F(4x4, 3x3), its stride-2 F(2x2, 3x3) and its direct GEMM against
   the reference kernel on the plain ones, at 1-3 threads.  pads: top, left, bottom, right.  act NULL: a plain Conv (with a bias); else a
   FusedConv with that activation (NULL name "": none) and, with sum, a residual.  expect: how
   the fast kernel must run it on AVX-512 (W2, W4, W2S: Winograd F(2x2) / F(4x4) / stride-2
   F(2x2); GT: the direct GEMM on gathered pixels), NULL: it must decline (as it must everywhere
   without AVX-512). */
/* A Conv (act NULL) or FusedConv with activation act ("" none; ap: its nap parameters) over `in`,
   its weight (input 1) a constant, with the na attributes at (room for two more): builds o,
   returns the reference kernel's output and the op's name in *op. */
static ge_tensor *conv_node_ref(one_node *o, ge_attr *at, size_t na, const char *act, const float *ap, size_t nap,
                                ge_tensor *const *in, size_t n_in, const char **op) {
  if (act && *act) at[na++] = (ge_attr)GE_ATTR_STRING("activation", act);
  if (act && nap) at[na++] = (ge_attr)GE_ATTR_FLOATS("activation_params", ap, nap);
  *op = act ? "ai.ge::FusedConv" : "Conv";
  one_node_build(o, *op, at, na, in, n_in);
  o->ins[1].value = in[1];
  return one_node_ref(o, in, n_in, 1);
}

static bool wino_off; /* prepare as with ge.exec.disableWinograd=1 */
static int64_t wino_stride = 1;
#define W2 "winograd F(2x2,3x3)"
#define W2S "winograd F(2x2,3x3) stride 2"
#define W4 "winograd F(4x4,3x3)"
#define GT "gathered taps"

static void wino_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, const int64_t *pads, const char *act,
                      const float *ap, size_t nap, bool sum, const char *expect) {
  const int64_t sh = wino_stride, strides[2] = {sh, sh};
  int64_t oh = (H + pads[0] + pads[2] - 3) / sh + 1, ow = (W + pads[1] + pads[3] - 3) / sh + 1;
  int64_t xd[4] = {N, C, H, W}, wd[4] = {K, C, 3, 3}, bd[1] = {K}, sd[4] = {N, K, oh, ow};
  ge_tensor *plain[4] = {rand_t(xd, 4, 1.f), rand_t(wd, 4, 0.2f), rand_t(bd, 1, 0.5f), sum ? rand_t(sd, 4, 1.f) : NULL};
  size_t n_in = sum ? 4 : 3;
  ge_attr at[4] = {GE_ATTR_INTS("pads", pads, 4), GE_ATTR_INTS("strides", strides, 2)};
  const char *op;
  one_node o;
  ge_tensor *want = conv_node_ref(&o, at, 2, act, ap, nap, plain, n_in, &op);
  static const int32_t to_nhwc[4] = {0, 2, 3, 1};
  ge_tensor *stored[4] = {permute4(plain[0], to_nhwc), plain[1], plain[2], sum ? permute4(plain[3], to_nhwc) : NULL};
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(o.nd->domain, o.nd->op_type, o.nd->opset, cand, 8);
  assert_true(nc >= 2);
  uint8_t il[4] = {GE_LAYOUT_NHWC, GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN, GE_LAYOUT_NHWC}, ol[1] = {GE_LAYOUT_NHWC};
  ge_prepare_ctx pc = {.graph = o.g, .node = o.nd, .opset = o.nd->opset, .n_in = n_in, .n_out = 1, .in = o.ins,
                       .out = o.out_t, .intra_threads = 2, .in_layout = il, .out_layout = ol,
                       .no_winograd = wino_off};
  void *fs = NULL;
  ge_status st = cand[0]->prepare(&pc, &fs); /* fast/pgemm.c: the first Conv candidate */
  bool avx512 = ge_cpu_avx512_fma();
  if (!expect || !avx512) {
    assert_int_equal(st, GE_ERR_UNSUPPORTED);
  } else {
    if (st != GE_OK) fail_msg("%s %lldx%lld: the fast kernel declines: %s", op, (long long)oh, (long long)ow, ge_last_error());
    const char *how = cand[0]->describe(fs);
    if (!how || strcmp(how, expect) != 0)
      fail_msg("%s %lld x %lldx%lld: %s, not %s", op, (long long)N, (long long)oh, (long long)ow, how ? how : "(null)", expect);
    /* F(2x2) rounds about as the direct sum does; F(4x4), taken from 400 output pixels on, up
       to about 1e-4 of the outputs' root mean square (its transforms multiply by up to 8 and
       25: measured 8e-5 at most over these cases), as oneDNN's F(4x4) does */
    double ms = 0;
    for (size_t i = 0; i < want->numel; i++) ms += (double)((const float *)want->data)[i] * ((const float *)want->data)[i];
    double tol = oh * ow >= 400 ? 2e-4 * sqrt(ms / (double)want->numel) : 3e-5;
    char what[96];
    snprintf(what, sizeof what, "winograd %s %s C=%lld", op, act ? act : "", (long long)C);
    check_conv_nhwc(cand[0], fs, &o, stored, n_in, want, N, oh, ow, K, tol, 3e-5, what);
  }
  if (fs && cand[0]->release) cand[0]->release(fs);
  ge_tensor_free(want);
  ge_tensor_free(stored[0]);
  ge_tensor_free(stored[3]);
  for (size_t i = 0; i < 4; i++) ge_tensor_free(plain[i]);
  ge_graph_free(o.g);
}

static void test_fast_winograd(void **unused) {
  (void)unused;
  const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0}, pa[4] = {0, 2, 1, 0}, pb[4] = {2, 0, 0, 1};
  const float leaky[] = {0.2f}, clip[] = {-0.3f, 0.6f};
  wino_case(1, 20, 13, 15, 40, p1, NULL, NULL, 0, false, W2);          /* odd width, channel tails */
  wino_case(2, 16, 12, 11, 50, pa, "Relu", NULL, 0, true, W2);       /* batch 2, asymmetric pads, residual */
  wino_case(1, 33, 16, 16, 17, p1, "LeakyRelu", leaky, 1, false, W2);
  wino_case(1, 24, 15, 14, 96, pb, "Clip", clip, 2, true, W2);       /* odd height, two full panels */
  wino_case(1, 17, 14, 14, 30, p0, "", NULL, 0, true, W2);           /* unpadded: 12x12 */
  wino_case(1, 64, 28, 28, 64, p1, "Relu", NULL, 0, true, W4);        /* 784 pixels: F(4x4), 49 tiles in one block */
  wino_case(1, 40, 21, 19, 56, p1, "Relu", NULL, 0, true, W2);        /* 399 pixels: the most F(2x2) takes */
  wino_case(3, 96, 20, 18, 160, p1, "Relu", NULL, 0, true, W2);       /* 270 tiles in blocks of 64 */
  wino_case(1, 160, 14, 14, 256, p1, "Relu", NULL, 0, true, W2);      /* weights past L2: one streamed block */
  wino_case(1, 1040, 12, 12, 24, p1, "", NULL, 0, false, W2);        /* Cin in two K blocks */
  /* 128 pixels or fewer: F(2x2) where it has 16 tiles or more that take at most 0.6 of the
     direct multiplies, else the direct GEMM on gathered pixels */
  wino_case(1, 16, 11, 11, 32, p1, "Relu", NULL, 0, false, W2);      /* 121 pixels, 36 tiles */
  wino_case(1, 64, 7, 7, 96, p1, "Relu", NULL, 0, true, W2);         /* 49 pixels, 16 tiles (0.58) */
  wino_case(2, 300, 7, 7, 100, p1, "Relu", NULL, 0, true, W2);       /* 2 x 16 tiles, 3 panels */
  wino_case(4, 24, 4, 4, 40, p1, "", NULL, 0, false, W2);            /* 4 x 4 tiles (0.44) */
  wino_case(1, 24, 4, 4, 40, p1, "", NULL, 0, false, GT);            /* 4 tiles */
  wino_case(1, 32, 6, 8, 40, p1, "Relu", NULL, 0, false, GT);        /* 12 tiles (0.44) */
  wino_case(2, 300, 5, 5, 100, p1, "Relu", NULL, 0, true, GT);       /* 2 x 9 tiles, 0.64: gathered over threads */
  wino_case(8, 16, 3, 3, 24, p1, "Relu", NULL, 0, false, GT);        /* 8 x 4 tiles, 0.79 */
  /* F(4x4, 3x3), from 400 output pixels on: partial tiles at the right and bottom edges */
  wino_case(1, 20, 23, 25, 40, p1, NULL, NULL, 0, false, W4);          /* 575: odd sizes, channel tails */
  wino_case(2, 16, 21, 22, 50, pa, "Relu", NULL, 0, true, W4);       /* 20x22, batch 2, asymmetric pads, residual */
  wino_case(1, 33, 24, 24, 17, p1, "LeakyRelu", leaky, 1, false, W4);
  wino_case(1, 24, 27, 26, 96, pb, "Clip", clip, 2, true, W4);       /* 27x25, two full panels */
  wino_case(1, 16, 29, 28, 32, p1, "Relu", NULL, 0, false, W4);      /* 812 */
  wino_case(1, 128, 28, 28, 128, p1, "Relu", NULL, 0, true, W4);     /* ResNet-50's 28x28 stage: streamed weights */
  wino_case(1, 1040, 20, 20, 24, p1, "", NULL, 0, false, W4);        /* Cin in two K blocks */
  wino_case(1, 64, 56, 56, 64, p1, "Relu", NULL, 0, true, W4);        /* 3136 pixels, the most it takes */
  wino_case(1, 16, 57, 56, 32, p1, "Relu", NULL, 0, false, NULL);     /* 3192: oneDNN's */
  /* stride 2: the stride-2 F(2x2) from 256 channels on each side, for even output sizes of 16
     tiles or more; else the direct GEMM (128 pixels or fewer) or oneDNN */
  wino_stride = 2;
  wino_case(1, 256, 28, 28, 256, p1, "Relu", NULL, 0, true, W2S);    /* ResNet-50's layer3.0: 14x14 */
  wino_case(2, 260, 29, 27, 270, pa, NULL, NULL, 0, false, W2S);     /* odd inputs, asymmetric pads, channel tails */
  wino_case(1, 256, 16, 16, 300, pb, "Clip", clip, 2, true, W2S);    /* 8x8: 64 pixels, 16 tiles */
  wino_case(1, 256, 14, 14, 256, p1, "", NULL, 0, false, GT);        /* 7x7: 16 tiles for 49 pixels (0.91) */
  wino_case(1, 128, 28, 28, 256, p1, "Relu", NULL, 0, false, NULL);  /* 128 input channels: oneDNN's */
  wino_case(1, 256, 28, 28, 255, p1, "Relu", NULL, 0, false, NULL);  /* 255 output channels */
  wino_stride = 1;
  /* ge.exec.disableWinograd: the 3x3 convolutions past the direct GEMM's pixels decline (to
     oneDNN's direct kernels); the direct GEMM takes the small ones */
  wino_off = true;
  wino_case(1, 64, 28, 28, 64, p1, "Relu", NULL, 0, true, NULL);
  wino_case(1, 20, 13, 15, 40, p1, NULL, NULL, 0, false, NULL);
  wino_case(1, 16, 11, 11, 32, p1, "Relu", NULL, 0, false, GT);
  wino_case(1, 64, 7, 7, 96, p1, "Relu", NULL, 0, true, GT);
  wino_stride = 2;
  wino_case(1, 256, 28, 28, 256, p1, "Relu", NULL, 0, true, NULL);
  wino_stride = 1;
  wino_off = false;
}

/* A Conv / FusedConv of a planar image of few channels written channels-last: fast/stem.c (the
   second Conv candidate, after pgemm, which declines a planar input) against the reference kernel
   on plain operands, at 1-3 threads.  win: kernel rows, columns; st: strides; pads: top, left,
   bottom, right; dil: dilations.  act NULL: a plain Conv; else a FusedConv with that activation
   ("" none).  expect: whether the stem kernel must take it (on AVX-512; else it must decline). */
static void stem_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, const int64_t *win, const int64_t *st_,
                      const int64_t *pads, const int64_t *dil, const char *act, const float *ap, size_t nap, bool bias,
                      bool expect) {
  int64_t oh = (H + pads[0] + pads[2] - dil[0] * (win[0] - 1) - 1) / st_[0] + 1;
  int64_t ow = (W + pads[1] + pads[3] - dil[1] * (win[1] - 1) - 1) / st_[1] + 1;
  int64_t xd[4] = {N, C, H, W}, wd[4] = {M, C, win[0], win[1]}, bd[1] = {M};
  ge_tensor *in[3] = {rand_t(xd, 4, 1.f), rand_t(wd, 4, 0.3f), bias ? rand_t(bd, 1, 0.5f) : NULL};
  size_t n_in = bias ? 3 : 2;
  ge_attr at[5] = {GE_ATTR_INTS("pads", pads, 4), GE_ATTR_INTS("strides", st_, 2), GE_ATTR_INTS("dilations", dil, 2)};
  const char *op;
  one_node o;
  ge_tensor *want = conv_node_ref(&o, at, 3, act, ap, nap, in, n_in, &op);
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(o.nd->domain, o.nd->op_type, o.nd->opset, cand, 8);
  assert_true(nc >= 3);
  uint8_t il[3] = {GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN}, ol[1] = {GE_LAYOUT_NHWC};
  ge_prepare_ctx pc = {.graph = o.g, .node = o.nd, .opset = o.nd->opset, .n_in = n_in, .n_out = 1, .in = o.ins,
                       .out = o.out_t, .intra_threads = 2, .in_layout = il, .out_layout = ol};
  void *fs = NULL;
  assert_int_equal(cand[0]->prepare(&pc, &fs), GE_ERR_UNSUPPORTED); /* pgemm: channels-last operands only */
  ge_status st = cand[1]->prepare(&pc, &fs);
  bool avx512 = ge_cpu_avx512_fma();
  if (!expect || !avx512) {
    assert_int_equal(st, GE_ERR_UNSUPPORTED);
  } else {
    if (st != GE_OK) fail_msg("%s C=%lld M=%lld: the stem kernel declines: %s", op, (long long)C, (long long)M, ge_last_error());
    char what[96];
    snprintf(what, sizeof what, "stem %s %s C=%lld", op, act ? act : "", (long long)C);
    check_conv_nhwc(cand[1], fs, &o, in, n_in, want, N, oh, ow, M, 2e-6, 2e-6, what);
  }
  if (fs && cand[1]->release) cand[1]->release(fs);
  ge_tensor_free(want);
  for (size_t i = 0; i < 3; i++) ge_tensor_free(in[i]);
  ge_graph_free(o.g);
}

static void test_fast_stem(void **unused) {
  (void)unused;
  const int64_t k33[2] = {3, 3}, k23[2] = {2, 3}, k31[2] = {3, 1}, k19[2] = {1, 9}, k55[2] = {5, 5};
  const int64_t s1[2] = {1, 1}, s2[2] = {2, 2}, s21[2] = {2, 1}, s3[2] = {3, 3}, s13[2] = {1, 3};
  const int64_t d1[2] = {1, 1}, d2[2] = {2, 2}, d12[2] = {1, 2};
  const int64_t p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0}, pa[4] = {0, 1, 1, 0}, pb[4] = {2, 0, 1, 3}, p4[4] = {4, 4, 4, 4};
  const float clip6[] = {0.f, 6.f}, leaky[] = {0.1f};
  /* MobileNetV2's stem: 3 channels, 3x3 stride 2, 32 outputs (blocks of 14 pixels), Clip 0..6 */
  stem_case(1, 3, 224, 224, 32, k33, s2, p1, d1, "Clip", clip6, 2, true, true);
  /* odd sizes and every channel-vector count, with tails: 1 (7 of 16), 2, 3 (45), 4 (50) */
  stem_case(1, 1, 19, 23, 7, k33, s1, p1, d1, "Relu", NULL, 0, true, true);
  stem_case(2, 4, 17, 31, 64, k33, s2, pa, d1, "Clip", clip6, 2, true, true); /* asymmetric pads, batch 2 */
  stem_case(1, 2, 21, 40, 45, k23, s21, pb, d1, "LeakyRelu", leaky, 1, true, true); /* 2x3, strides 2 and 1 */
  stem_case(3, 3, 15, 29, 50, k33, s3, p0, d1, NULL, NULL, 0, true, true);      /* stride 3: the general form */
  stem_case(1, 3, 33, 37, 16, k33, s1, p4, d2, "HardSwish", NULL, 0, false, true); /* dilation 2, pads past it */
  stem_case(1, 3, 12, 50, 24, k19, s13, p1, d12, "", NULL, 0, true, true);      /* 1x9, dilation 2 across */
  stem_case(1, 4, 9, 8, 33, k31, s1, p0, d1, "Sigmoid", NULL, 0, true, true);  /* a row narrower than a block */
  stem_case(1, 3, 2, 2, 32, k33, s1, p1, d1, "Relu", NULL, 0, true, true);     /* every pixel on the border */
  /* declined (oneDNN's): a window of more than 9 taps, more channels on either side */
  stem_case(1, 3, 32, 32, 64, k55, s2, p1, d1, "Relu", NULL, 0, true, false);
  stem_case(1, 5, 16, 16, 16, k33, s1, p1, d1, "Relu", NULL, 0, true, false);
  stem_case(1, 3, 16, 16, 65, k33, s1, p1, d1, "Relu", NULL, 0, true, false);
}

static void test_fast_pgemm(void **unused) {
  (void)unused;
  const float clip[] = {-0.5f, 0.75f}, leaky[] = {0.2f}, hsig[] = {0.3f, 0.4f};
  pgemm_case("MatMul", 0, 1, 16, 16, NULL, NULL, 0);
  pgemm_case("MatMul", 0, 1, 777, 300, NULL, NULL, 0);
  pgemm_case("MatMul", 0, 2, 1100, 70, NULL, NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 3, 50, 49, "Gelu", NULL, 0);
  pgemm_case("MatMul", 0, 4, 16, 16, NULL, NULL, 0);
  pgemm_case("MatMul", 0, 9, 33, 47, NULL, NULL, 0);
  pgemm_case("MatMul", 0, 17, 64, 49, NULL, NULL, 0);
  pgemm_case("MatMul", 2, 13, 100, 97, NULL, NULL, 0);
  pgemm_case("MatMul", 0, 64, 1100, 130, NULL, NULL, 0); /* two K blocks */
  pgemm_case("MatMul", 0, 37, 2500, 20, NULL, NULL, 0); /* three K blocks, one panel */
  /* 5 and 11 panels over 2 and 3 threads: shares of (panel, row block) pairs, a panel split
     between threads by rows (pgemm.c pg_claim), one K block and two */
  pgemm_case("MatMul", 0, 25, 700, 200, NULL, NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 49, 1500, 520, "Relu", NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 23, 48, 96, "Gelu", NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 3, 7, 40, 150, "GeluTanh", NULL, 0);
  /* weights of at most 2 MiB split by rows (pgemm.c pg_rows_claim) at 2 and 3 threads: one
     piece a thread (49 rows, 3 x 20 rows) and 2-4 (100 and 130 rows); pieces of 16-30 rows */
  pgemm_case("ai.ge::FusedMatMul", 0, 49, 960, 160, "Clip", clip, 2);
  pgemm_case("ai.ge::FusedMatMul", 0, 100, 300, 200, "Relu", NULL, 0);
  pgemm_case("MatMul", 0, 130, 256, 160, NULL, NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 3, 20, 400, 200, NULL, NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 12, 1030, 64, "Relu", NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 30, 24, 33, "Clip", clip, 2);
  pgemm_nan_case(30, 24, 50, "Clip", clip, 2); /* NaN through the activations in registers */
  pgemm_nan_case(9, 1030, 20, "Relu", NULL, 0); /* two K blocks */
  pgemm_nan_case(2, 24, 33, "Clip", clip, 2);   /* ukernel_few */
  pgemm_case("ai.ge::FusedMatMul", 0, 8, 24, 17, "LeakyRelu", leaky, 1);
  pgemm_case("ai.ge::FusedMatMul", 0, 8, 24, 17, "HardSigmoid", hsig, 2);
  pgemm_case("ai.ge::FusedMatMul", 0, 5, 31, 40, "Tanh", NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 5, 31, 40, "Sigmoid", NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 6, 31, 40, "HardSwish", NULL, 0);
  pgemm_case("ai.ge::FusedMatMul", 0, 6, 31, 40, NULL, NULL, 0);
  pgemm_sum_case(0, 128, 96, 200, NULL);  /* the row split (a small weight) */
  pgemm_sum_case(1, 64, 1100, 520, NULL); /* panels, two K blocks: the sum in the first */
  pgemm_sum_case(2, 13, 40, 50, "Relu");
  pgemm_sum_case(0, 3, 64, 47, "Gelu");
  /* the same computing in bf16 (the precision modes: AMX where the processor has it, else
     oneDNN): A and B hold bf16 values, so that the products are exact and only the order of
     the float32 sums differs from the reference's */
  {
    int64_t ad[3] = {2, 40, 96}, bd[2] = {96, 70}, cd[1] = {70}, sd[3] = {2, 40, 70};
    ge_tensor *in[4] = {rand_t(ad, 3, 1.f), rand_t(bd, 2, 0.1f), rand_t(cd, 1, 1.f), rand_t(sd, 3, 1.f)};
    for (int t = 0; t < 2; t++) {
      float *d = in[t]->data;
      for (size_t i = 0; i < in[t]->numel; i++) d[i] = ge_bf16_to_f32_inline(ge_f32_to_bf16_inline(d[i]));
    }
    ge_attr at[1] = {GE_ATTR_STRING("ge_compute_precision", "bf16")};
    check_fast_op_c("ai.ge::FusedMatMul", at, 1, in, 4, 1e-4, 1u << 1, ge_amx_usable());
    for (int i = 0; i < 4; i++) ge_tensor_free(in[i]);
  }
  /* infinite and NaN pre-activations (through the bias) in the GELU epilogues */
  const char *gelus[] = {"Gelu", "GeluTanh"};
  for (int g = 0; g < 2; g++) {
    int64_t ad[2] = {9, 20}, bd[2] = {20, 50}, cd[1] = {50};
    ge_tensor *in[3] = {rand_t(ad, 2, 1.f), rand_t(bd, 2, 0.1f), rand_t(cd, 1, 1.f)};
    float *bias = in[2]->data;
    bias[0] = INFINITY;
    bias[17] = -INFINITY;
    bias[33] = NAN;
    bias[49] = 30.f;
    bias[48] = -30.f;
    ge_attr at[1] = {GE_ATTR_STRING("activation", gelus[g])};
    check_fast_op_c("ai.ge::FusedMatMul", at, 1, in, 3, 2e-5, 1u << 1,
                    ge_cpu_avx512_fma());
    for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
  }
  gemm_case("Gemm", 9, 40, 50, 1, 1.f, 1.f, false, false, NULL);
  gemm_case("Gemm", 16, 1100, 33, 0, 0.5f, 1.f, false, true, NULL);
  gemm_case("Gemm", 5, 24, 100, 1, 1.f, 2.f, true, false, NULL);
  gemm_case("ai.ge::FusedGemm", 12, 64, 96, 1, 1.5f, 0.25f, true, true, "Relu");
  gemm_case("ai.ge::FusedGemm", 31, 48, 47, 0, 1.f, 1.f, false, false, "Gelu");
}

/* t (float32) stored as the plan stores a value of layout l16 ? bf16 : float32: a new tensor of
   t's shape, bf16 in the first half of its buffer or a copy */
static ge_tensor *stored_as(const ge_tensor *t, bool l16) {
  ge_tensor *o = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, t->dims, (size_t)t->rank, &o), GE_OK);
  for (size_t i = 0; i < t->numel; i++) {
    float v = ((const float *)t->data)[i];
    if (l16) ((uint16_t *)o->data)[i] = ge_f32_to_bf16_inline(v);
    else ((float *)o->data)[i] = v;
  }
  return o;
}

/* A MatMul / Gemm node marked bf16 (as the precision pass marks it) with a constant B: where
   AMX is usable, the first candidate (fast/pgemm.c) must take it, with A and Y plain (float32)
   or stored row-major bf16 (in16 / out16: GE_LAYOUT_BF16), and agree at 1-3 threads with the
   reference kernel run on A and B rounded to bf16 (products exact, float32 sums). */
static void amx_node_case(const char *op, const int64_t *ad, size_t ar, int64_t K, int64_t N, const ge_attr *extra,
                          size_t nextra, bool bias, bool in16, bool out16) {
  int64_t bd[2] = {K, N}, cd[1] = {N};
  bool trans = false;
  for (size_t i = 0; i < nextra; i++) trans |= !strcmp(extra[i].name, "transB") && extra[i].v.i != 0;
  if (trans) {
    bd[0] = N;
    bd[1] = K;
  }
  ge_tensor *in[3] = {rand_t(ad, ar, 1.f), rand_t(bd, 2, 0.1f), rand_t(cd, 1, 1.f)};
  float alpha = 1.f;
  for (size_t i = 0; i < nextra; i++)
    if (!strcmp(extra[i].name, "alpha")) alpha = extra[i].v.f;
  for (int t = 0; t < 2; t++) { /* A and alpha * B as bf16 values: the reference multiplies those */
    float *d = in[t]->data;
    for (size_t i = 0; i < in[t]->numel; i++)
      d[i] = ge_bf16_to_f32_inline(ge_f32_to_bf16_inline(t ? d[i] * alpha : d[i])) / (t ? alpha : 1.f);
  }
  ge_attr at[6] = {GE_ATTR_STRING("ge_compute_precision", "bf16")};
  size_t na = 1;
  for (size_t i = 0; i < nextra; i++) at[na++] = extra[i];
  size_t n_in = bias ? 3 : 2;
  one_node o;
  one_node_build(&o, op, at, na, in, n_in);
  o.ins[1].value = in[1];
  ge_tensor *want = one_node_ref(&o, in, n_in, 1);
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(o.nd->domain, o.nd->op_type, o.nd->opset, cand, 8);
  uint8_t il[3] = {in16 ? GE_LAYOUT_BF16 : GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN};
  uint8_t ol[1] = {out16 ? GE_LAYOUT_BF16 : GE_LAYOUT_PLAIN};
  ge_prepare_ctx pc = {.graph = o.g, .node = o.nd, .opset = o.nd->opset, .n_in = n_in, .n_out = 1, .in = o.ins,
                       .out = o.out_t, .intra_threads = 2, .in_layout = il, .out_layout = ol};
  void *fs = NULL;
  assert_true(nc >= 2);
  ge_status st = cand[0]->prepare(&pc, &fs);
  /* without AMX, oneDNN takes bf16 nodes; where the processor has no bf16 at all (as oneDNN
     sees it), a node with float32 operands may run here in float32 */
  if (st != GE_ERR_UNSUPPORTED || ge_amx_usable()) {
    if (st != GE_OK) fail_msg("%s: the AMX kernel declines: %s", op, ge_last_error());
    ge_tensor *a = stored_as(in[0], in16);
    ge_tensor *ins[3] = {a, in[1], in[2]};
    for (int threads = 1; threads <= 3; threads++) {
      ge_tensor *y = NULL;
      assert_int_equal(ge_tensor_create_shape(GE_F32, &o.out_t[0].shape, &y), GE_OK);
      ge_kctx kc = {.node = o.nd, .n_in = n_in, .n_out = 1, .in = ins, .out = &y, .threads = threads};
      st = cand[0]->run(fs, &kc);
      if (st != GE_OK) fail_msg("%s: run: %s", op, ge_last_error());
      const float *w = want->data;
      for (size_t i = 0; i < want->numel; i++) {
        double got = out16 ? ge_bf16_to_f32_inline(((const uint16_t *)y->data)[i]) : ((const float *)y->data)[i];
        double tol = 1e-5 + 1e-5 * fabs(w[i]) + (out16 ? fabs(w[i]) / 256.0 : 0.0);
        if (!(fabs(got - w[i]) <= tol))
          fail_msg("%s (in16 %d out16 %d) threads %d: element %zu: %.7g, reference %.7g", op, in16, out16, threads, i,
                   got, w[i]);
      }
      ge_tensor_free(y);
    }
    ge_tensor_free(a);
    cand[0]->release(fs);
  }
  ge_tensor_free(want);
  ge_graph_free(o.g);
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
}

/* A FusedConv (bias, Relu, optionally a residual) of a k x k window, padding `pad` on every
   side, marked bf16, on channels-last operands, float32 or stored bf16 (GE_LAYOUT_NHWC_BF16:
   what oneDNN's bf16 convolutions ask for): where AMX is usable the first candidate takes it
   (fast/amx.c: a 1x1 stride-1 unpadded one reads X as A, other stride-1 ones read padded
   copies of X tap by tap, the rest gathered fields) and agrees with the reference kernel on the
   bf16-rounded operands. */
static void amx_conv_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t k, int64_t pad,
                          int64_t stride, int64_t dil, bool sum, bool x16, bool y16, bool s16) {
  int64_t oh = (H + 2 * pad - dil * (k - 1) - 1) / stride + 1, ow = (W + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  int64_t xd[4] = {N, C, H, W}, wd[4] = {K, C, k, k}, bd[1] = {K}, sd[4] = {N, K, oh, ow};
  ge_tensor *plain[4] = {rand_t(xd, 4, 1.f), rand_t(wd, 4, 0.2f), rand_t(bd, 1, 0.5f), sum ? rand_t(sd, 4, 1.f) : NULL};
  size_t n_in = sum ? 4 : 3;
  for (size_t t = 0; t < n_in; t++) { /* the values bf16 holds (the bias stays float32) */
    if (t == 2 || (t == 3 && !s16)) continue;
    float *d = plain[t]->data;
    for (size_t i = 0; i < plain[t]->numel; i++) d[i] = ge_bf16_to_f32_inline(ge_f32_to_bf16_inline(d[i]));
  }
  int64_t strides[2] = {stride, stride}, dils[2] = {dil, dil}, pads[4] = {pad, pad, pad, pad};
  ge_attr at[5] = {GE_ATTR_STRING("ge_compute_precision", "bf16"), GE_ATTR_STRING("activation", "Relu"),
                   GE_ATTR_INTS("strides", strides, 2), GE_ATTR_INTS("dilations", dils, 2),
                   GE_ATTR_INTS("pads", pads, 4)};
  one_node o;
  one_node_build(&o, "ai.ge::FusedConv", at, 5, plain, n_in);
  o.ins[1].value = plain[1];
  ge_tensor *want = one_node_ref(&o, plain, n_in, 1);
  static const int32_t to_nhwc[4] = {0, 2, 3, 1};
  ge_tensor *xn = permute4(plain[0], to_nhwc), *sn = sum ? permute4(plain[3], to_nhwc) : NULL;
  ge_tensor *wn = permute4(want, to_nhwc);
  ge_tensor *stored[4] = {stored_as(xn, x16), plain[1], plain[2], sum ? stored_as(sn, s16) : NULL};
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(o.nd->domain, o.nd->op_type, o.nd->opset, cand, 8);
  assert_true(nc >= 2);
  uint8_t il[4] = {x16 ? GE_LAYOUT_NHWC_BF16 : GE_LAYOUT_NHWC, GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN,
                   s16 ? GE_LAYOUT_NHWC_BF16 : GE_LAYOUT_NHWC};
  uint8_t ol[1] = {y16 ? GE_LAYOUT_NHWC_BF16 : GE_LAYOUT_NHWC};
  ge_prepare_ctx pc = {.graph = o.g, .node = o.nd, .opset = o.nd->opset, .n_in = n_in, .n_out = 1, .in = o.ins,
                       .out = o.out_t, .intra_threads = 2, .in_layout = il, .out_layout = ol};
  void *fs = NULL;
  ge_status st = cand[0]->prepare(&pc, &fs);
  if (st != GE_ERR_UNSUPPORTED || ge_amx_usable()) { /* as in amx_node_case */
    if (st != GE_OK) fail_msg("FusedConv: the AMX kernel declines: %s", ge_last_error());
    for (int threads = 1; threads <= 3; threads++) {
      ge_tensor *y = NULL;
      int64_t yd[4] = {N, oh, ow, K};
      assert_int_equal(ge_tensor_create(GE_F32, yd, 4, &y), GE_OK);
      ge_kctx kc = {.node = o.nd, .n_in = n_in, .n_out = 1, .in = stored, .out = &y, .threads = threads};
      st = cand[0]->run(fs, &kc);
      if (st != GE_OK) fail_msg("FusedConv: run: %s", ge_last_error());
      const float *w = wn->data;
      for (size_t i = 0; i < wn->numel; i++) {
        double got = y16 ? ge_bf16_to_f32_inline(((const uint16_t *)y->data)[i]) : ((const float *)y->data)[i];
        double tol = 1e-5 + 1e-5 * fabs(w[i]) + (y16 ? fabs(w[i]) / 256.0 : 0.0);
        if (!(fabs(got - w[i]) <= tol))
          fail_msg("FusedConv %lldx%lldx%lld -> %lld, %lldx%lld pad %lld stride %lld dilation %lld (x16 %d y16 %d "
                   "sum %d/%d) threads %d: element %zu: %.7g, reference %.7g", (long long)C, (long long)H,
                   (long long)W, (long long)K, (long long)k, (long long)k, (long long)pad, (long long)stride,
                   (long long)dil, x16, y16, sum, s16, threads, i, got, w[i]);
      }
      ge_tensor_free(y);
    }
    cand[0]->release(fs);
  }
  ge_tensor_free(stored[0]);
  ge_tensor_free(stored[3]);
  ge_tensor_free(xn);
  ge_tensor_free(sn);
  ge_tensor_free(wn);
  ge_tensor_free(want);
  ge_graph_free(o.g);
  for (int i = 0; i < 4; i++) ge_tensor_free(plain[i]);
}

/* A MaxPool marked bf16 on a channels-last image stored bf16 (as the layout pass gives it between
   bf16 convolutions): the oneDNN family's kernel takes it with ge's own pooling
   (dnnl_pool.h), and its output must be, value for value, the reference kernel's float32 pooling
   of the same bf16 values (the maximum is exact), at 1-3 threads.  The values include ties,
   negatives, zeros of both signs and whole windows of negatives. */
static void pool16_case(int64_t N, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride, int64_t pad,
                        bool ceil_mode) {
  int64_t xd[4] = {N, C, H, W};
  ge_tensor *x = rand_t(xd, 4, 4.f);
  float *xv = x->data;
  for (size_t i = 0; i < x->numel; i++) {
    if ((i / (size_t)W) % 4 == 1) xv[i] = -fabsf(xv[i]) - 1.f; /* rows of negatives */
    xv[i] = ge_bf16_to_f32_inline(ge_f32_to_bf16_inline(xv[i]));
    if (i % 13 == 4) xv[i] = -0.f;
    if (i % 17 == 9) xv[i] = 0.f;
    if (i % 5 == 2) xv[i] = xv[i - 1]; /* a tie */
  }
  int64_t ks[2] = {k, k}, st2[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
  ge_attr at[5] = {GE_ATTR_STRING("ge_compute_precision", "bf16"), GE_ATTR_INTS("kernel_shape", ks, 2),
                   GE_ATTR_INTS("strides", st2, 2), GE_ATTR_INTS("pads", pads, 4),
                   GE_ATTR_INT("ceil_mode", ceil_mode ? 1 : 0)};
  one_node o;
  one_node_build(&o, "MaxPool", at, 5, &x, 1);
  ge_tensor *want = one_node_ref(&o, &x, 1, 1);
  static const int32_t to_nhwc[4] = {0, 2, 3, 1};
  ge_tensor *xn = permute4(x, to_nhwc), *wn = permute4(want, to_nhwc);
  ge_tensor *xs = stored_as(xn, true);
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(o.nd->domain, o.nd->op_type, o.nd->opset, cand, 8);
  assert_true(nc >= 2);
  uint8_t il[1] = {GE_LAYOUT_NHWC_BF16}, ol[1] = {GE_LAYOUT_NHWC_BF16};
  ge_prepare_ctx pc = {.graph = o.g, .node = o.nd, .opset = o.nd->opset, .n_in = 1, .n_out = 1, .in = o.ins,
                       .out = o.out_t, .intra_threads = 2, .in_layout = il, .out_layout = ol};
  if (ge_dn_lowp_dt(&pc) != dnnl_bf16 || !ge_dn_maxpool_bf16_usable()) {
    print_message("bf16 max pool: no bf16 on this processor (or oneDNN's ISA cap), skipped\n");
  } else {
    void *fs = NULL;
    ge_status st = cand[0]->prepare(&pc, &fs);
    if (st != GE_OK) fail_msg("MaxPool bf16: the oneDNN family's kernel declines: %s", ge_last_error());
    assert_non_null(((ge_dn_state *)fs)->maxpool); /* ge's pooling, not oneDNN's */
    for (int threads = 1; threads <= 3; threads++) {
      ge_tensor *y = NULL;
      assert_int_equal(ge_tensor_create(GE_F32, wn->dims, 4, &y), GE_OK);
      memset(y->data, 0xa5, y->nbytes); /* the half past the bf16 values must stay so */
      ge_kctx kc = {.node = o.nd, .n_in = 1, .n_out = 1, .in = &xs, .out = &y, .threads = threads};
      st = cand[0]->run(fs, &kc);
      if (st != GE_OK) fail_msg("MaxPool bf16: run: %s", ge_last_error());
      for (size_t b = y->numel * 2; b < y->nbytes; b++)
        if (((const unsigned char *)y->data)[b] != 0xa5) fail_msg("MaxPool bf16 C=%lld: byte %zu past the values written", (long long)C, b);
      const float *w = wn->data;
      for (size_t i = 0; i < wn->numel; i++) {
        float got = ge_bf16_to_f32_inline(((const uint16_t *)y->data)[i]);
        if (got != w[i])
          fail_msg("MaxPool bf16 C=%lld %lldx%lld k %lld stride %lld pad %lld ceil %d threads %d: element %zu: %g, "
                   "reference %g", (long long)C, (long long)H, (long long)W, (long long)k, (long long)stride,
                   (long long)pad, ceil_mode, threads, i, (double)got, (double)w[i]);
      }
      ge_tensor_free(y);
    }
    cand[0]->release(fs);
  }
  ge_tensor_free(xs);
  ge_tensor_free(xn);
  ge_tensor_free(wn);
  ge_tensor_free(want);
  ge_graph_free(o.g);
  ge_tensor_free(x);
}

static void test_fast_maxpool_bf16(void **unused) {
  (void)unused;
  pool16_case(1, 64, 22, 22, 3, 2, 1, false); /* ResNet's, smaller */
  pool16_case(2, 37, 9, 11, 3, 1, 1, false);  /* GoogLeNet's 3x3 stride 1; channels past a vector */
  pool16_case(1, 96, 8, 7, 2, 2, 0, false);
  pool16_case(1, 16, 10, 10, 3, 2, 0, true); /* ceil mode: the last window hangs over */
  pool16_case(1, 200, 7, 7, 3, 2, 1, false);
}

static void test_fast_amx_nodes(void **unused) {
  (void)unused;
  ge_attr gelu[1] = {GE_ATTR_STRING("activation", "Gelu")};
  ge_attr gemm[4] = {GE_ATTR_INT("transB", 1), GE_ATTR_FLOAT("alpha", 0.5f), GE_ATTR_FLOAT("beta", 1.f),
                     GE_ATTR_STRING("activation", "Relu")};
  /* BERT-like rows (batch dims folded into M) with bf16 storage on both sides */
  amx_node_case("MatMul", (int64_t[]){2, 64, 96}, 3, 96, 80, NULL, 0, false, true, true);
  amx_node_case("ai.ge::FusedMatMul", (int64_t[]){2, 50, 96}, 3, 96, 130, gelu, 1, true, true, true);
  /* float32 A and Y, tails everywhere */
  amx_node_case("MatMul", (int64_t[]){37, 70}, 2, 70, 45, NULL, 0, false, false, false);
  amx_node_case("ai.ge::FusedMatMul", (int64_t[]){5, 33}, 2, 33, 17, gelu, 1, true, true, false);
  amx_node_case("MatMul", (int64_t[]){40, 64}, 2, 64, 50, NULL, 0, false, false, true);
  /* Gemm with transB and alpha folded into the packed B, a bias row and an activation */
  amx_node_case("Gemm", (int64_t[]){9, 40}, 2, 40, 50, gemm, 3, true, false, false);
  amx_node_case("ai.ge::FusedGemm", (int64_t[]){33, 48}, 2, 48, 47, gemm, 4, true, true, true);
  /* 1x1 convolutions: ResNet's (a bf16 residual), odd sizes, float32 operands, a batch of two */
  amx_conv_case(1, 64, 14, 14, 256, 1, 0, 1, 1, true, true, true, true);
  amx_conv_case(2, 48, 7, 9, 70, 1, 0, 1, 1, true, false, false, false);
  amx_conv_case(1, 96, 5, 5, 33, 1, 0, 1, 1, false, true, false, false);
  /* direct (stride 1): ResNet's 3x3 at 7x7, odd channels and images, a batch (images stacked
     on the padded grid), 5x5, a padded 1x1, no padding */
  amx_conv_case(1, 64, 7, 7, 64, 3, 1, 1, 1, false, true, true, false);
  amx_conv_case(2, 40, 9, 6, 50, 3, 1, 1, 1, true, true, true, true);
  amx_conv_case(1, 3, 11, 13, 17, 5, 2, 1, 1, false, false, false, false);
  amx_conv_case(1, 32, 5, 5, 32, 1, 1, 1, 1, true, true, false, false);
  amx_conv_case(1, 32, 8, 8, 40, 3, 0, 1, 1, false, true, true, false);
  /* strided, by phases: ResNet's downsampling 1x1 and 3x3 (stride 2), odd sizes, stride 3 */
  amx_conv_case(1, 64, 8, 8, 64, 1, 0, 2, 1, false, true, true, false);
  amx_conv_case(1, 48, 9, 9, 64, 3, 1, 2, 1, true, true, true, true);
  amx_conv_case(2, 24, 11, 10, 40, 3, 1, 2, 1, false, false, false, false);
  amx_conv_case(1, 32, 13, 13, 33, 5, 2, 3, 1, true, true, false, false);
  /* gathered: dilation 2 */
  amx_conv_case(2, 16, 10, 7, 24, 3, 2, 1, 2, false, false, false, false);
  amx_conv_case(1, 40, 9, 9, 32, 3, 2, 2, 2, true, true, true, true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nchw_nhwc_roundtrip),
      cmocka_unit_test(test_nchw3_to_nhwc),
      cmocka_unit_test(test_predicate),
      cmocka_unit_test(test_cnn_channels_last),
      cmocka_unit_test(test_concurrent_runs),
      cmocka_unit_test(test_fast_expf),
      cmocka_unit_test(test_fast_attention),
      cmocka_unit_test(test_fast_attention_layout),
      cmocka_unit_test(test_attention_select_ref),
      cmocka_unit_test(test_fast_attention_select),
      cmocka_unit_test(test_fast_concat),
      cmocka_unit_test(test_fast_layernorm),
      cmocka_unit_test(test_fast_binary),
      cmocka_unit_test(test_fast_softmax),
      cmocka_unit_test(test_fast_pgemm),
      cmocka_unit_test(test_fast_winograd),
      cmocka_unit_test(test_fast_stem),
      cmocka_unit_test(test_fast_amx_nodes),
      cmocka_unit_test(test_fast_maxpool_bf16),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
}
