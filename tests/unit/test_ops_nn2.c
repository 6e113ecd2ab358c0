/* The nn2 family: Attention (against a naive reference), RMSNormalization, RotaryEmbedding,
 * LinearAttention, CausalConvWithState, DeformConv, Col2Im, CenterCropPad, the losses,
 * CumProd, BitCast, signed BitShift and the training optimizers, plus inference errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernel.h"
#include "helpers/ops_harness.h"
#include "helpers/test_common.h"
#include "ir/ir.h"
#include "ops/op.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { return ge_test_rand_unit(&rng); }

static ge_tensor *rand_f32(const int64_t *d, size_t r, float *copy) {
  size_t n = ge_test_numel(d, r);
  float *v = malloc((n + 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) v[i] = frand();
  if (copy) memcpy(copy, v, n * sizeof(float));
  ge_tensor *t = ge_test_tensor_f32(d, r, v);
  free(v);
  return t;
}

/* a run that must succeed; prints the message when it does not */
#define RUN_OK(expr)                                         \
  do {                                                       \
    ge_status st_ = (expr);                                  \
    if (st_ != GE_OK) fprintf(stderr, "%s\n", ge_last_error()); \
    assert_int_equal(st_, GE_OK);                            \
  } while (0)

static void free_all(ge_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ge_tensor_free(t[i]);
}

/* ------------------------------------------------------------------ Attention */

/* naive 4-D attention: causal (offset P), GQA, past cache, optional float mask [S, T] */
static void ref_attention(const float *q, const float *k, const float *v, const float *pk,
                          const float *pv, const float *mask, int B, int Hq, int Hkv, int S, int L,
                          int P, int D, int Dv, bool causal, double *y) {
  int T = P + L, G = Hq / Hkv;
  double *sc = malloc(sizeof(double) * (size_t)T);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < Hq; h++)
      for (int i = 0; i < S; i++) {
        int kh = h / G;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < T; j++) {
          double acc = 0;
          for (int d = 0; d < D; d++) {
            double kv = j < P ? pk[(((b * Hkv + kh) * P) + j) * D + d]
                              : k[(((b * Hkv + kh) * L) + j - P) * D + d];
            acc += q[(((b * Hq + h) * S) + i) * D + d] * kv;
          }
          acc /= sqrt((double)D);
          if (mask) acc += mask[i * T + j];
          if (causal && j > i + P) acc = -INFINITY;
          sc[j] = acc;
          if (acc > mx) mx = acc;
        }
        for (int j = 0; j < T; j++) sum += (sc[j] = exp(sc[j] - mx));
        for (int d = 0; d < Dv; d++) {
          double acc = 0;
          for (int j = 0; j < T; j++) {
            double vv = j < P ? pv[(((b * Hkv + kh) * P) + j) * Dv + d]
                              : v[(((b * Hkv + kh) * L) + j - P) * Dv + d];
            acc += sc[j] / sum * vv;
          }
          y[(((b * Hq + h) * S) + i) * Dv + d] = acc;
        }
      }
  free(sc);
}

static void check_d(const ge_tensor *t, const double *e, size_t n, double tol) {
  assert_int_equal(t->numel, n);
  for (size_t i = 0; i < n; i++) {
    double g = ge_tensor_get_f64(t, i);
    if (!(fabs(g - e[i]) <= tol * (1 + fabs(e[i])))) {
      fprintf(stderr, "element %zu: got %.7g expected %.7g\n", i, g, e[i]);
      fail();
    }
  }
}

static void test_attention_gqa_causal_past(void **st) {
  (void)st;
  enum { B = 2, Hq = 4, Hkv = 2, S = 3, L = 3, P = 2, D = 4, Dv = 5 };
  int64_t dq[] = {B, Hq, S, D}, dk[] = {B, Hkv, L, D}, dv[] = {B, Hkv, L, Dv};
  int64_t dpk[] = {B, Hkv, P, D}, dpv[] = {B, Hkv, P, Dv};
  static float q[B * Hq * S * D], k[B * Hkv * L * D], v[B * Hkv * L * Dv], pk[B * Hkv * P * D],
      pv[B * Hkv * P * Dv];
  ge_tensor *in[6] = {rand_f32(dq, 4, q), rand_f32(dk, 4, k), rand_f32(dv, 4, v), NULL,
                      rand_f32(dpk, 4, pk), rand_f32(dpv, 4, pv)};
  ge_attr at[] = {GE_ATTR_INT("is_causal", 1)};
  ge_tensor *out[3] = {0};
  RUN_OK(ge_test_run_node("Attention", 23, at, 1, in, 6, out, 3));
  int64_t ey[] = {B, Hq, S, Dv}, ek[] = {B, Hkv, P + L, D};
  ge_test_assert_shape(out[0], GE_F32, ey, 4);
  ge_test_assert_shape(out[1], GE_F32, ek, 4);
  static double y[B * Hq * S * Dv];
  ref_attention(q, k, v, pk, pv, NULL, B, Hq, Hkv, S, L, P, D, Dv, true, y);
  check_d(out[0], y, sizeof y / sizeof y[0], 1e-5);
  /* present_key = concat(past, K) */
  const float *pkk = out[1]->data;
  assert_true(pkk[0] == pk[0] && pkk[P * D] == k[0]);
  free_all(out, 3);
  free_all(in, 6);
}

static void test_attention_3d_mask_modes(void **st) {
  (void)st;
  /* B=1, S=2, L=2, one head of size 2: 3-D layout equals 4-D with H=1 */
  int64_t d3[] = {1, 2, 2}, dm[] = {2, 2};
  float q[] = {1, 0, 0, 1}, k[] = {1, 0, 0, 1}, v[] = {1, 2, 3, 4};
  bool m[] = {true, false, false, false}; /* row 1 fully masked */
  ge_tensor *in[4] = {ge_test_tensor_f32(d3, 3, q), ge_test_tensor_f32(d3, 3, k),
                      ge_test_tensor_f32(d3, 3, v), ge_test_tensor_bool(dm, 2, m)};
  ge_attr at[] = {GE_ATTR_INT("q_num_heads", 1), GE_ATTR_INT("kv_num_heads", 1),
                  GE_ATTR_INT("qk_matmul_output_mode", 3)};
  ge_tensor *out[4] = {0};
  RUN_OK(ge_test_run_node("Attention", 23, at, 3, in, 4, out, 4));
  /* row 0 attends key 0 only; row 1 has no key: zeros */
  ge_test_assert_close(out[0], (float[]){1, 2, 0, 0}, 4, 1e-6f, 0);
  ge_test_assert_close(out[3], (float[]){1, 0, 0, 0}, 4, 1e-6f, 0);
  free_all(out, 4);
  /* mode 0 with softcap: tanh(qk/c)*c, scale 1 */
  ge_attr at2[] = {GE_ATTR_INT("q_num_heads", 1), GE_ATTR_INT("kv_num_heads", 1),
                   GE_ATTR_FLOAT("softcap", 2.0f), GE_ATTR_FLOAT("scale", 1.0f)};
  ge_tensor *in2[3] = {in[0], in[1], in[2]};
  RUN_OK(ge_test_run_node("Attention", 23, at2, 4, in2, 3, out, 4));
  float t = 2.0f * tanhf(0.5f);
  ge_test_assert_close(out[3], (float[]){t, 0, 0, t}, 4, 1e-6f, 1e-6f);
  free_all(out, 4);
  free_all(in, 4);
}

static void test_attention_errors(void **st) {
  (void)st;
  int64_t d3[] = {1, 2, 4};
  ge_type t = ge_test_type(GE_F32, d3, 3);
  const ge_type *ts[3] = {&t, &t, &t};
  ge_type out[4];
  /* 3-D inputs without head counts */
  assert_int_equal(ge_test_infer_node("Attention", 23, NULL, 0, ts, NULL, 3, out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_attr at[] = {GE_ATTR_INT("q_num_heads", 3), GE_ATTR_INT("kv_num_heads", 1)};
  assert_int_equal(ge_test_infer_node("Attention", 23, at, 2, ts, NULL, 3, out, 1), GE_ERR_SHAPE);
  int64_t dkv[] = {1, 2, 2};
  ge_type tkv = ge_test_type(GE_F32, dkv, 3);
  const ge_type *ts2[3] = {&t, &tkv, &tkv};
  ge_attr ok[] = {GE_ATTR_INT("q_num_heads", 2), GE_ATTR_INT("kv_num_heads", 1)};
  assert_int_equal(ge_test_infer_node("Attention", 23, ok, 2, ts2, NULL, 3, out, 4), GE_OK);
  int64_t ey[] = {1, 2, 4}, ek[] = {1, 1, 2, 2}, eq[] = {1, 2, 2, 2};
  assert_int_equal(out[0].shape.rank, 3);
  assert_memory_equal(out[0].shape.dims, ey, sizeof ey);
  assert_memory_equal(out[1].shape.dims, ek, sizeof ek);
  assert_memory_equal(out[3].shape.dims, eq, sizeof eq);
}

static void test_flex_attention(void **st) {
  (void)st;
  enum { B = 1, Hq = 2, Hkv = 1, S = 2, L = 3, D = 2, Dv = 2 };
  int64_t dq[] = {B, Hq, S, D}, dk[] = {B, Hkv, L, D}, dv[] = {B, Hkv, L, Dv};
  static float q[B * Hq * S * D], k[B * Hkv * L * D], v[B * Hkv * L * Dv];
  ge_tensor *in[3] = {rand_f32(dq, 4, q), rand_f32(dk, 4, k), rand_f32(dv, 4, v)};
  ge_tensor *out = NULL;
  /* without modifiers: plain attention with GQA */
  RUN_OK(ge_test_run_node("ai.onnx.preview::FlexAttention", 23, NULL, 0, in, 3, &out, 1));
  static double y[B * Hq * S * Dv];
  ref_attention(q, k, v, NULL, NULL, NULL, B, Hq, Hkv, S, L, 0, D, Dv, false, y);
  check_d(out, y, sizeof y / sizeof y[0], 1e-5);
  ge_tensor_free(out);
  /* score_mod = scores * 0: uniform weights, Y = mean of the V rows */
  ge_graph *g = NULL;
  int64_t sd[] = {B, Hq, S, L}, one[] = {1};
  assert_int_equal(ge_graph_create("score_mod", &g), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "scores", GE_F32, sd, 4), GE_OK);
  ge_tensor *zero = ge_test_tensor_f32(one, 1, (float[]){0});
  assert_int_equal(ge_graph_add_constant(g, "zero", zero), GE_OK);
  const char *ins[] = {"scores", "zero"}, *outs[] = {"out"};
  assert_int_equal(ge_graph_add_node(g, "Mul", "mul", ins, 2, outs, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "out"), GE_OK);
  ge_attr at[] = {GE_ATTR_GRAPH("score_mod", g)};
  RUN_OK(ge_test_run_node("ai.onnx.preview::FlexAttention", 23, at, 1, in, 3, &out, 1));
  float m0 = (v[0] + v[2] + v[4]) / 3, m1 = (v[1] + v[3] + v[5]) / 3;
  ge_test_assert_close(out, (float[]){m0, m1, m0, m1, m0, m1, m0, m1}, 8, 1e-6f, 1e-5f);
  ge_tensor_free(out);
  ge_tensor_free(zero);
  ge_graph_free(g);
  free_all(in, 3);
}

/* ------------------------------------------------------------------ norms, rotary */

static void test_rmsnorm(void **st) {
  (void)st;
  int64_t d[] = {2, 2}, ds[] = {2};
  ge_tensor *in[2] = {ge_test_tensor_f32(d, 2, (float[]){3, 4, 1, 1}),
                      ge_test_tensor_f32(ds, 1, (float[]){1, 2})};
  ge_attr at[] = {GE_ATTR_FLOAT("epsilon", 0.0f)};
  ge_tensor *out = NULL;
  RUN_OK(ge_test_run_node("RMSNormalization", 23, at, 1, in, 2, &out, 1));
  float r = sqrtf(12.5f);
  ge_test_assert_close(out, (float[]){3 / r, 8 / r, 1, 2}, 4, 1e-6f, 1e-6f);
  ge_tensor_free(out);
  free_all(in, 2);
}

static void test_rotary(void **st) {
  (void)st;
  /* X [1, 1, 1, 4] (B, H, S, D), cos/sin [1, 1, 2] */
  int64_t dx[] = {1, 1, 1, 4}, dc[] = {1, 1, 2};
  float c0 = 0.5f, s0 = 0.25f, c1 = -1.0f, s1 = 2.0f;
  ge_tensor *in[3] = {ge_test_tensor_f32(dx, 4, (float[]){1, 2, 3, 4}),
                      ge_test_tensor_f32(dc, 3, (float[]){c0, c1}),
                      ge_test_tensor_f32(dc, 3, (float[]){s0, s1})};
  ge_tensor *out = NULL;
  RUN_OK(ge_test_run_node("RotaryEmbedding", 23, NULL, 0, in, 3, &out, 1));
  /* halves: x1 = (1, 2), x2 = (3, 4) */
  ge_test_assert_close(out, (float[]){c0 * 1 - s0 * 3, c1 * 2 - s1 * 4, s0 * 1 + c0 * 3, s1 * 2 + c1 * 4},
                       4, 1e-6f, 0);
  ge_tensor_free(out);
  ge_attr at[] = {GE_ATTR_INT("interleaved", 1)};
  RUN_OK(ge_test_run_node("RotaryEmbedding", 23, at, 1, in, 3, &out, 1));
  /* pairs: (1, 2), (3, 4) */
  ge_test_assert_close(out, (float[]){c0 * 1 - s0 * 2, s0 * 1 + c0 * 2, c1 * 3 - s1 * 4, s1 * 3 + c1 * 4},
                       4, 1e-6f, 0);
  ge_tensor_free(out);
  free_all(in, 3);
}

static void test_linear_attention_and_causal_conv(void **st) {
  (void)st;
  /* linear rule, one step, one head of size 1 each: out = scale * q * k * v */
  int64_t d[] = {1, 1, 1};
  ge_tensor *in[3] = {ge_test_tensor_f32(d, 3, (float[]){2}), ge_test_tensor_f32(d, 3, (float[]){3}),
                      ge_test_tensor_f32(d, 3, (float[]){5})};
  ge_attr at[] = {GE_ATTR_INT("q_num_heads", 1), GE_ATTR_INT("kv_num_heads", 1),
                  GE_ATTR_STRING("update_rule", "linear"), GE_ATTR_FLOAT("scale", 0.5f)};
  ge_tensor *out[2] = {0};
  RUN_OK(ge_test_run_node("LinearAttention", 27, at, 4, in, 3, out, 2));
  ge_test_assert_close(out[0], (float[]){15}, 1, 1e-6f, 0);
  ge_test_assert_close(out[1], (float[]){15}, 1, 1e-6f, 0);
  free_all(out, 2);
  free_all(in, 3);
  /* causal depthwise conv: k = 2, x = [1, 2, 3], past = [10], w = [1, 100] */
  int64_t dx[] = {1, 1, 3}, dw[] = {1, 1, 2}, dp[] = {1, 1, 1};
  ge_tensor *ci[4] = {ge_test_tensor_f32(dx, 3, (float[]){1, 2, 3}),
                      ge_test_tensor_f32(dw, 3, (float[]){1, 100}), NULL,
                      ge_test_tensor_f32(dp, 3, (float[]){10})};
  RUN_OK(ge_test_run_node("CausalConvWithState", 27, NULL, 0, ci, 4, out, 2));
  ge_test_assert_close(out[0], (float[]){110, 201, 302}, 3, 1e-5f, 0);
  ge_test_assert_close(out[1], (float[]){3}, 1, 0, 0);
  free_all(out, 2);
  free_all(ci, 4);
}

/* ------------------------------------------------------------------ DeformConv, Col2Im, CenterCropPad */

static void test_deform_conv_zero_offset(void **st) {
  (void)st;
  /* zero offsets: an ordinary 2x2 convolution of a 3x3 image */
  int64_t dx[] = {1, 1, 3, 3}, dw[] = {1, 1, 2, 2}, dof[] = {1, 8, 2, 2};
  ge_tensor *in[3] = {ge_test_tensor_f32(dx, 4, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9}),
                      ge_test_tensor_f32(dw, 4, (float[]){1, 0, 0, 1}), ge_test_tensor_f32(dof, 4, NULL)};
  ge_tensor *out = NULL;
  RUN_OK(ge_test_run_node("DeformConv", 22, NULL, 0, in, 3, &out, 1));
  ge_test_assert_close(out, (float[]){6, 8, 12, 14}, 4, 1e-6f, 0);
  ge_tensor_free(out);
  ge_tensor_free(in[2]);
  /* offset of +0.5 in x for every tap: bilinear halfway */
  float of[8 * 4];
  for (int i = 0; i < 32; i++) of[i] = (i / 4) % 2 ? 0.5f : 0.0f;
  in[2] = ge_test_tensor_f32(dof, 4, of);
  RUN_OK(ge_test_run_node("DeformConv", 22, NULL, 0, in, 3, &out, 1));
  ge_test_assert_close(out, (float[]){7, 5.5f, 13, 10}, 4, 1e-6f, 0);
  ge_tensor_free(out);
  free_all(in, 3);
}

static void test_col2im_center_crop(void **st) {
  (void)st;
  /* 1 channel, block 1x2 over a 1x3 image: 2 blocks; overlaps add */
  int64_t dx[] = {1, 2, 2}, d2[] = {2};
  ge_tensor *in[3] = {ge_test_tensor_f32(dx, 3, (float[]){1, 2, 10, 20}),
                      ge_test_tensor_i64(d2, 1, (int64_t[]){1, 3}),
                      ge_test_tensor_i64(d2, 1, (int64_t[]){1, 2})};
  ge_tensor *out = NULL;
  RUN_OK(ge_test_run_node("Col2Im", 18, NULL, 0, in, 3, &out, 1));
  int64_t eo[] = {1, 1, 1, 3};
  ge_test_assert_shape(out, GE_F32, eo, 4);
  ge_test_assert_close(out, (float[]){1, 12, 20}, 3, 0, 0);
  ge_tensor_free(out);
  free_all(in, 3);
  /* crop 4 -> 2 (start 1) along axis 0, pad 1 -> 3 (start 1) along axis 1 */
  int64_t dc[] = {4, 1};
  ge_tensor *cc[2] = {ge_test_tensor_i32(dc, 2, (int32_t[]){1, 2, 3, 4}),
                      ge_test_tensor_i64(d2, 1, (int64_t[]){2, 3})};
  RUN_OK(ge_test_run_node("CenterCropPad", 18, NULL, 0, cc, 2, &out, 1));
  int64_t ec[] = {2, 3};
  ge_test_assert_shape(out, GE_I32, ec, 2);
  ge_test_assert_ints(out, (int64_t[]){0, 2, 0, 0, 3, 0}, 6);
  ge_tensor_free(out);
  free_all(cc, 2);
}

/* ------------------------------------------------------------------ losses */

static void test_losses(void **st) {
  (void)st;
  /* NLL: N=3, C=2; targets 1, 0, ignored(-1); weight (2, 3) */
  int64_t dx[] = {3, 2}, dt[] = {3}, dw[] = {2};
  ge_tensor *in[3] = {ge_test_tensor_f32(dx, 2, (float[]){-1, -2, -3, -4, -5, -6}),
                      ge_test_tensor_i64(dt, 1, (int64_t[]){1, 0, -1}),
                      ge_test_tensor_f32(dw, 1, (float[]){2, 3})};
  ge_attr at[] = {GE_ATTR_INT("ignore_index", -1)};
  ge_tensor *out[2] = {0};
  RUN_OK(ge_test_run_node("NegativeLogLikelihoodLoss", 22, at, 1, in, 3, out, 1));
  ge_test_assert_close(out[0], (float[]){(2 * 3 + 3 * 2) / 5.0f}, 1, 1e-6f, 0);
  ge_tensor_free(out[0]);
  ge_attr at2[] = {GE_ATTR_INT("ignore_index", -1), GE_ATTR_STRING("reduction", "none")};
  RUN_OK(ge_test_run_node("NegativeLogLikelihoodLoss", 22, at2, 2, in, 2, out, 1));
  ge_test_assert_close(out[0], (float[]){2, 3, 0}, 3, 0, 0);
  ge_tensor_free(out[0]);
  /* a target out of range is an error, not a crash */
  ge_tensor *bad[2] = {in[0], ge_test_tensor_i64(dt, 1, (int64_t[]){1, 7, 0})};
  assert_int_equal(ge_test_run_node("NegativeLogLikelihoodLoss", 22, NULL, 0, bad, 2, out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  ge_tensor_free(bad[1]);
  /* SCE: log_softmax then NLL (sum) */
  ge_attr at3[] = {GE_ATTR_STRING("reduction", "sum")};
  assert_int_equal(ge_test_run_node("SoftmaxCrossEntropyLoss", 13, at3, 1, in, 2, out, 2),
                   GE_ERR_INVALID_ARGUMENT);
  double l0 = log(1 + exp(-1.0)); /* logsumexp(-1,-2) = -1 + l0 */
  double lp1 = -2 - (-1 + l0), lp0 = -1 - (-1 + l0);
  assert_int_equal(out[0], NULL); /* target -1 without ignore_index is out of range */
  ge_attr at4[] = {GE_ATTR_STRING("reduction", "sum"), GE_ATTR_INT("ignore_index", -1)};
  RUN_OK(ge_test_run_node("SoftmaxCrossEntropyLoss", 13, at4, 2, in, 2, out, 2));
  ge_test_assert_close(out[0], (float[]){(float)(-lp1 - lp0)}, 1, 1e-6f, 1e-6f);
  ge_test_assert_shape(out[1], GE_F32, dx, 2);
  ge_test_assert_close(out[1], (float[]){(float)lp0, (float)lp1, (float)lp0, (float)lp1, (float)lp0, (float)lp1},
                       6, 1e-6f, 1e-6f);
  free_all(out, 2);
  free_all(in, 3);
}

/* ------------------------------------------------------------------ CumProd, BitCast, BitShift */

static void test_cumprod_bitcast_bitshift(void **st) {
  (void)st;
  int64_t d[] = {4}, d0[] = {0};
  ge_tensor *in[2] = {ge_test_tensor_i32(d, 1, (int32_t[]){1, 2, 3, 4}), ge_test_tensor_i64(d0, 0, (int64_t[]){0})};
  ge_tensor *out = NULL;
  RUN_OK(ge_test_run_node("CumProd", 26, NULL, 0, in, 2, &out, 1));
  ge_test_assert_ints(out, (int64_t[]){1, 2, 6, 24}, 4);
  ge_tensor_free(out);
  ge_attr at[] = {GE_ATTR_INT("reverse", 1), GE_ATTR_INT("exclusive", 1)};
  RUN_OK(ge_test_run_node("CumProd", 26, at, 2, in, 2, &out, 1));
  ge_test_assert_ints(out, (int64_t[]){24, 12, 4, 1}, 4);
  ge_tensor_free(out);
  free_all(in, 2);

  int64_t d1[] = {1};
  ge_tensor *x = ge_test_tensor_f32(d1, 1, (float[]){1.0f});
  ge_attr to[] = {GE_ATTR_INT("to", 6)}; /* INT32 */
  RUN_OK(ge_test_run_node("BitCast", 26, to, 1, &x, 1, &out, 1));
  ge_test_assert_ints(out, (int64_t[]){0x3f800000}, 1);
  ge_tensor_free(out);
  ge_attr to8[] = {GE_ATTR_INT("to", 7)}; /* INT64: width differs */
  assert_int_equal(ge_test_run_node("BitCast", 26, to8, 1, &x, 1, &out, 1), GE_ERR_INVALID_ARGUMENT);
  ge_tensor_free(x);

  int64_t d3[] = {4};
  ge_tensor *bs[2] = {ge_test_tensor(GE_I8, d3, 1, (int8_t[]){-16, -16, 64, 5}),
                      ge_test_tensor(GE_I8, d3, 1, (int8_t[]){2, 9, 1, -1})};
  ge_attr right[] = {GE_ATTR_STRING("direction", "RIGHT")}, left[] = {GE_ATTR_STRING("direction", "LEFT")};
  RUN_OK(ge_test_run_node("BitShift", 28, right, 1, bs, 2, &out, 1));
  ge_test_assert_ints(out, (int64_t[]){-4, -1, 32, 0}, 4);
  ge_tensor_free(out);
  RUN_OK(ge_test_run_node("BitShift", 28, left, 1, bs, 2, &out, 1));
  ge_test_assert_ints(out, (int64_t[]){-64, 0, -128, 0}, 4);
  ge_tensor_free(out);
  free_all(bs, 2);
}

/* ------------------------------------------------------------------ optimizers */

static void test_optimizers(void **st) {
  (void)st;
  int64_t d[] = {1};
  ge_tensor *R = ge_test_tensor_f32(NULL, 0, (float[]){0.1f});
  ge_tensor *T = ge_test_tensor_i64(NULL, 0, (int64_t[]){1});
  ge_tensor *X = ge_test_tensor_f32(d, 1, (float[]){1.0f}), *G = ge_test_tensor_f32(d, 1, (float[]){2.0f});
  ge_tensor *V = ge_test_tensor_f32(d, 1, (float[]){0.5f}), *H = ge_test_tensor_f32(d, 1, (float[]){0.25f});
  ge_tensor *out[3] = {0};
  /* Momentum standard: v' = alpha v + beta g, x' = x - r v' */
  ge_attr mo[] = {GE_ATTR_FLOAT("alpha", 0.9f), GE_ATTR_FLOAT("beta", 0.5f), GE_ATTR_STRING("mode", "standard"),
                  GE_ATTR_FLOAT("norm_coefficient", 0.0f)};
  ge_tensor *mi[5] = {R, T, X, G, V};
  RUN_OK(ge_test_run_node("ai.onnx.preview.training::Momentum", 23, mo, 4, mi, 5, out, 2));
  float vn = 0.9f * 0.5f + 0.5f * 2.0f;
  ge_test_assert_close(out[1], (float[]){vn}, 1, 1e-6f, 1e-6f);
  ge_test_assert_close(out[0], (float[]){1.0f - 0.1f * vn}, 1, 1e-6f, 1e-6f);
  free_all(out, 2);
  /* Adagrad: h' = h + g^2, x' = x - r/(1 + t d) * g / (sqrt(h') + eps) */
  ge_attr ad[] = {GE_ATTR_FLOAT("decay_factor", 0.1f), GE_ATTR_FLOAT("epsilon", 0.0f)};
  ge_tensor *ai[5] = {R, T, X, G, H};
  RUN_OK(ge_test_run_node("ai.onnx.preview.training::Adagrad", 23, ad, 2, ai, 5, out, 2));
  float hn = 0.25f + 4.0f;
  ge_test_assert_close(out[1], (float[]){hn}, 1, 1e-6f, 1e-6f);
  ge_test_assert_close(out[0], (float[]){1.0f - 0.1f / 1.1f * 2.0f / sqrtf(hn)}, 1, 1e-6f, 1e-5f);
  free_all(out, 2);
  /* Adam, t = 1 */
  ge_tensor *am[6] = {R, T, X, G, V, H};
  RUN_OK(ge_test_run_node("ai.onnx.preview.training::Adam", 23, NULL, 0, am, 6, out, 3));
  double v2 = 0.9 * 0.5 + 0.1 * 2, h2 = 0.999 * 0.25 + 0.001 * 4;
  double ra = 0.1 * sqrt(1 - 0.999) / (1 - 0.9);
  ge_test_assert_close(out[1], (float[]){(float)v2}, 1, 1e-6f, 1e-6f);
  ge_test_assert_close(out[2], (float[]){(float)h2}, 1, 1e-6f, 1e-6f);
  ge_test_assert_close(out[0], (float[]){(float)(1 - ra * v2 / (sqrt(h2) + 1e-6))}, 1, 1e-6f, 1e-5f);
  free_all(out, 3);
  /* wrong arity: an error naming the node */
  ge_tensor *bad[4] = {R, T, X, G};
  assert_int_not_equal(ge_test_run_node("ai.onnx.preview.training::Adam", 23, NULL, 0, bad, 4, out, 3), GE_OK);
  ge_tensor *all[6] = {R, T, X, G, V, H};
  free_all(all, 6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention_gqa_causal_past),
      cmocka_unit_test(test_attention_3d_mask_modes),
      cmocka_unit_test(test_attention_errors),
      cmocka_unit_test(test_flex_attention),
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_rotary),
      cmocka_unit_test(test_linear_attention_and_causal_conv),
      cmocka_unit_test(test_deform_conv_zero_offset),
      cmocka_unit_test(test_col2im_center_crop),
      cmocka_unit_test(test_losses),
      cmocka_unit_test(test_cumprod_bitcast_bitshift),
      cmocka_unit_test(test_optimizers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
