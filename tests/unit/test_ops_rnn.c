/* Tests of the rnn family: RNN, GRU, LSTM against a naive per-element reference written
 * here, layouts, directions, sequence_lens and shape errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static float rndf(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((rng_state >> 11) % 20001) / 10000.0f - 1.0f;
}
static void fill(float *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = rndf() * 0.5f;
}
static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

enum { T = 3, B = 2, I = 3, H = 4 };

/* Naive one-direction LSTM (gates i o f c) with peepholes, X [T, B, I]. rev: reversed. */
static void lstm_ref(const float *x, const float *w, const float *r, const float *bias,
                     const float *p, bool rev, const int32_t *lens, float *y /* [T, B, H] */,
                     float *yh, float *yc) {
  float h[B][H] = {{0}}, c[B][H] = {{0}};
  memset(y, 0, sizeof(float) * T * B * H);
  for (int b = 0; b < B; b++)
    for (int s = 0; s < lens[b]; s++) {
      int t = rev ? lens[b] - 1 - s : s;
      float g[4 * H];
      for (int j = 0; j < 4 * H; j++) {
        float acc = bias[j] + bias[4 * H + j];
        for (int k = 0; k < I; k++) acc += x[(t * B + b) * I + k] * w[j * I + k];
        for (int k = 0; k < H; k++) acc += h[b][k] * r[j * H + k];
        g[j] = acc;
      }
      float hn[H];
      for (int j = 0; j < H; j++) {
        float ig = sigm(g[j] + p[j] * c[b][j]);
        float fg = sigm(g[2 * H + j] + p[2 * H + j] * c[b][j]);
        float cc = tanhf(g[3 * H + j]);
        c[b][j] = fg * c[b][j] + ig * cc;
        float og = sigm(g[H + j] + p[H + j] * c[b][j]);
        hn[j] = og * tanhf(c[b][j]);
      }
      memcpy(h[b], hn, sizeof hn);
      memcpy(y + (t * B + b) * H, hn, sizeof hn);
    }
  memcpy(yh, h, sizeof h);
  memcpy(yc, c, sizeof c);
}

static void test_lstm_bidirectional_seq_lens(void **unused) {
  (void)unused;
  float x[T * B * I], w[2 * 4 * H * I], r[2 * 4 * H * H], bias[2 * 8 * H], p[2 * 3 * H];
  fill(x, sizeof x / 4); fill(w, sizeof w / 4); fill(r, sizeof r / 4);
  fill(bias, sizeof bias / 4); fill(p, sizeof p / 4);
  int32_t lens[B] = {3, 2};
  ge_tensor *in[8] = {
      ge_test_tensor_f32((int64_t[]){T, B, I}, 3, x),
      ge_test_tensor_f32((int64_t[]){2, 4 * H, I}, 3, w),
      ge_test_tensor_f32((int64_t[]){2, 4 * H, H}, 3, r),
      ge_test_tensor_f32((int64_t[]){2, 8 * H}, 2, bias),
      ge_test_tensor_i32((int64_t[]){B}, 1, lens),
      NULL, NULL,
      ge_test_tensor_f32((int64_t[]){2, 3 * H}, 2, p),
  };
  ge_attr attrs[] = {GE_ATTR_STRING("direction", "bidirectional"), GE_ATTR_INT("hidden_size", H)};
  ge_tensor *out[3] = {0};
  run_ok("LSTM", 14, attrs, 2, in, 8, out, 3);
  ge_test_assert_shape(out[0], GE_F32, (int64_t[]){T, 2, B, H}, 4);
  float want_y[T * 2 * B * H], want_h[2 * B * H], want_c[2 * B * H];
  for (int d = 0; d < 2; d++) {
    float y[T * B * H], yh[B * H], yc[B * H];
    lstm_ref(x, w + d * 4 * H * I, r + d * 4 * H * H, bias + d * 8 * H, p + d * 3 * H, d == 1, lens, y,
             yh, yc);
    for (int t = 0; t < T; t++) memcpy(want_y + (t * 2 + d) * B * H, y + t * B * H, sizeof(float) * B * H);
    memcpy(want_h + d * B * H, yh, sizeof yh);
    memcpy(want_c + d * B * H, yc, sizeof yc);
  }
  ge_test_assert_close(out[0], want_y, T * 2 * B * H, 1e-5f, 1e-4f);
  ge_test_assert_close(out[1], want_h, 2 * B * H, 1e-5f, 1e-4f);
  ge_test_assert_close(out[2], want_c, 2 * B * H, 1e-5f, 1e-4f);
  for (int i = 0; i < 3; i++) ge_tensor_free(out[i]);

  /* layout 1 gives the transposed results */
  float xt[B * T * I];
  for (int t = 0; t < T; t++)
    for (int b = 0; b < B; b++) memcpy(xt + (b * T + t) * I, x + (t * B + b) * I, sizeof(float) * I);
  ge_tensor *x1 = ge_test_tensor_f32((int64_t[]){B, T, I}, 3, xt);
  ge_tensor *in1[8] = {x1, in[1], in[2], in[3], in[4], NULL, NULL, in[7]};
  ge_attr attrs1[] = {attrs[0], attrs[1], GE_ATTR_INT("layout", 1)};
  run_ok("LSTM", 14, attrs1, 3, in1, 8, out, 3);
  ge_test_assert_shape(out[0], GE_F32, (int64_t[]){B, T, 2, H}, 4);
  ge_test_assert_shape(out[1], GE_F32, (int64_t[]){B, 2, H}, 3);
  float ty[B * T * 2 * H], th[B * 2 * H];
  for (int t = 0; t < T; t++)
    for (int d = 0; d < 2; d++)
      for (int b = 0; b < B; b++)
        memcpy(ty + ((b * T + t) * 2 + d) * H, want_y + ((t * 2 + d) * B + b) * H, sizeof(float) * H);
  for (int d = 0; d < 2; d++)
    for (int b = 0; b < B; b++) memcpy(th + (b * 2 + d) * H, want_h + (d * B + b) * H, sizeof(float) * H);
  ge_test_assert_close(out[0], ty, B * T * 2 * H, 1e-5f, 1e-4f);
  ge_test_assert_close(out[1], th, B * 2 * H, 1e-5f, 1e-4f);
  for (int i = 0; i < 3; i++) ge_tensor_free(out[i]);
  ge_tensor_free(x1);
  for (int i = 0; i < 8; i++) ge_tensor_free(in[i]);
}

static void test_gru_rnn(void **unused) {
  (void)unused;
  float x[T * B * I], w[3 * H * I], r[3 * H * H], bias[6 * H];
  fill(x, sizeof x / 4); fill(w, sizeof w / 4); fill(r, sizeof r / 4); fill(bias, sizeof bias / 4);
  for (int lbr = 0; lbr < 2; lbr++) {
    ge_tensor *in[4] = {
        ge_test_tensor_f32((int64_t[]){T, B, I}, 3, x),
        ge_test_tensor_f32((int64_t[]){1, 3 * H, I}, 3, w),
        ge_test_tensor_f32((int64_t[]){1, 3 * H, H}, 3, r),
        ge_test_tensor_f32((int64_t[]){1, 6 * H}, 2, bias),
    };
    ge_attr attrs[] = {GE_ATTR_INT("hidden_size", H), GE_ATTR_INT("linear_before_reset", lbr)};
    ge_tensor *out[2] = {0};
    run_ok("GRU", 14, attrs, 2, in, 4, out, 2);
    float h[B][H] = {{0}}, want[T * B * H];
    for (int t = 0; t < T; t++)
      for (int b = 0; b < B; b++) {
        float xw[3 * H], hr[3 * H];
        for (int j = 0; j < 3 * H; j++) {
          xw[j] = bias[j];
          hr[j] = bias[3 * H + j];
          for (int k = 0; k < I; k++) xw[j] += x[(t * B + b) * I + k] * w[j * I + k];
          for (int k = 0; k < H; k++) hr[j] += h[b][k] * r[j * H + k];
        }
        float hn[H];
        for (int j = 0; j < H; j++) {
          float z = sigm(xw[j] + hr[j]), rg = sigm(xw[H + j] + hr[H + j]);
          float hh;
          if (lbr) {
            hh = tanhf(xw[2 * H + j] + rg * hr[2 * H + j]);
          } else {
            float acc = bias[5 * H + j];
            for (int k = 0; k < H; k++) {
              float rk = sigm(xw[H + k] + hr[H + k]);
              acc += rk * h[b][k] * r[(2 * H + j) * H + k];
            }
            hh = tanhf(xw[2 * H + j] + acc);
          }
          hn[j] = (1 - z) * hh + z * h[b][j];
        }
        memcpy(h[b], hn, sizeof hn);
        memcpy(want + (t * B + b) * H, hn, sizeof hn);
      }
    ge_test_assert_close(out[0], want, T * B * H, 1e-5f, 1e-4f);
    ge_test_assert_close(out[1], want + (T - 1) * B * H, B * H, 1e-5f, 1e-4f);
    for (int i = 0; i < 2; i++) ge_tensor_free(out[i]);
    for (int i = 0; i < 4; i++) ge_tensor_free(in[i]);
  }
  /* RNN reverse with Relu: only Y_h requested */
  ge_tensor *rin[3] = {
      ge_test_tensor_f32((int64_t[]){T, B, I}, 3, x),
      ge_test_tensor_f32((int64_t[]){1, H, I}, 3, w),
      ge_test_tensor_f32((int64_t[]){1, H, H}, 3, r),
  };
  const char *acts[] = {"Relu"};
  ge_attr ra[] = {GE_ATTR_INT("hidden_size", H), GE_ATTR_STRING("direction", "reverse"),
                  GE_ATTR_STRINGS("activations", acts, 1)};
  ge_tensor *rout[2] = {0};
  run_ok("RNN", 14, ra, 3, rin, 3, rout, 2);
  float h[B][H] = {{0}};
  for (int t = T - 1; t >= 0; t--)
    for (int b = 0; b < B; b++) {
      float hn[H];
      for (int j = 0; j < H; j++) {
        float acc = 0;
        for (int k = 0; k < I; k++) acc += x[(t * B + b) * I + k] * w[j * I + k];
        for (int k = 0; k < H; k++) acc += h[b][k] * r[j * H + k];
        hn[j] = acc > 0 ? acc : 0;
      }
      memcpy(h[b], hn, sizeof hn);
    }
  ge_test_assert_close(rout[1], &h[0][0], B * H, 1e-5f, 1e-4f);
  for (int i = 0; i < 2; i++) ge_tensor_free(rout[i]);

  /* wrong W shape: an error naming the node, no crash */
  ge_tensor *bad = ge_test_tensor_f32((int64_t[]){1, H + 1, I}, 3, NULL);
  ge_tensor *bin[3] = {rin[0], bad, rin[2]};
  ge_tensor *o = NULL;
  assert_int_not_equal(ge_test_run_node("RNN", 14, ra, 1, bin, 3, &o, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(bad);
  for (int i = 0; i < 3; i++) ge_tensor_free(rin[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lstm_bidirectional_seq_lens),
      cmocka_unit_test(test_gru_rnn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
