/* Tests of the quant family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * QLinearMatMul, QLinearConv, ConvInteger. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

static void free_all(ge_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ge_tensor_free(t[i]);
}

static void test_quantize_per_tensor(void **unused) {
  (void)unused;
  int64_t d6[] = {6}, d0[] = {0};
  ge_tensor *in[3] = {
      ge_test_tensor_f32(d6, 1, (float[]){0, 2, 3, 1000, -254, 5}),
      ge_test_tensor_f32(d0, 0, (float[]){2}),
      ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){128}),
  };
  ge_tensor *out = NULL;
  run_ok("QuantizeLinear", 13, NULL, 0, in, 3, &out, 1);
  ge_test_assert_shape(out, GE_U8, d6, 1);
  /* 1.5 -> 2 and 2.5 -> 2 (half to even); saturation at 0 and 255 */
  ge_test_assert_ints(out, (int64_t[]){128, 129, 130, 255, 1, 130}, 6);
  ge_tensor_free(out);
  /* no zero point: uint8 */
  run_ok("QuantizeLinear", 13, NULL, 0, in, 2, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){0, 1, 2, 255, 0, 2}, 6);
  ge_tensor_free(out);
  free_all(in, 3);
}

static void test_quantize_axis_blocked(void **unused) {
  (void)unused;
  int64_t dx[] = {2, 4}, ds[] = {2}, db[] = {2, 2};
  ge_tensor *x = ge_test_tensor_f32(dx, 2, (float[]){1, 2, 3, 4, -4, -8, 12, 16});
  ge_tensor *s = ge_test_tensor_f32(ds, 1, (float[]){1, 4});
  ge_tensor *z = ge_test_tensor(GE_I8, ds, 1, (int8_t[]){0, -1});
  ge_tensor *in[3] = {x, s, z}, *out = NULL;
  ge_attr ax0 = GE_ATTR_INT("axis", 0);
  run_ok("QuantizeLinear", 13, &ax0, 1, in, 3, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){1, 2, 3, 4, -2, -3, 2, 3}, 8);
  ge_tensor_free(out);
  /* dequantize back (per axis) */
  ge_tensor *q = ge_test_tensor(GE_I8, dx, 2, (int8_t[]){1, 2, 3, 4, -2, -3, 2, 3});
  ge_tensor *din[3] = {q, s, z};
  run_ok("DequantizeLinear", 13, &ax0, 1, din, 3, &out, 1);
  ge_test_assert_close(out, (float[]){1, 2, 3, 4, -4, -8, 12, 16}, 8, 0, 0);
  ge_tensor_free(out);
  /* blocked along axis 1 with block 2: scale [2, 2] */
  ge_tensor *sb = ge_test_tensor_f32(db, 2, (float[]){1, 2, 4, 8});
  ge_tensor *bin[2] = {x, sb};
  ge_attr attrs[] = {GE_ATTR_INT("axis", 1), GE_ATTR_INT("block_size", 2),
                     GE_ATTR_INT("output_dtype", 3 /* int8 */)};
  run_ok("QuantizeLinear", 21, attrs, 3, bin, 2, &out, 1);
  ge_test_assert_shape(out, GE_I8, dx, 2);
  ge_test_assert_ints(out, (int64_t[]){1, 2, 2, 2, -1, -2, 2, 2}, 8);
  ge_tensor_free(out);
  /* a per-axis scale of the wrong length is a shape error */
  ge_tensor *bad = ge_test_tensor_f32((int64_t[]){3}, 1, (float[]){1, 2, 3});
  ge_tensor *badin[2] = {x, bad};
  assert_int_equal(ge_test_run_node("QuantizeLinear", 13, &ax0, 1, badin, 2, &out, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(bad);
  ge_tensor_free(sb);
  ge_tensor_free(q);
  free_all(in, 3);
}

static void test_quantize_16bit_f16(void **unused) {
  (void)unused;
  int64_t d3[] = {3}, d0[] = {0};
  ge_tensor *in[3] = {
      ge_test_tensor_from_f32(GE_F16, d3, 1, (float[]){-1, 0.5f, 100}),
      ge_test_tensor_from_f32(GE_F16, d0, 0, (float[]){0.5f}),
      ge_test_tensor(GE_U16, d0, 0, (uint16_t[]){65500}),
  };
  ge_tensor *out = NULL;
  run_ok("QuantizeLinear", 21, NULL, 0, in, 3, &out, 1);
  ge_test_assert_shape(out, GE_U16, d3, 1);
  ge_test_assert_ints(out, (int64_t[]){65498, 65501, 65535}, 3);
  ge_tensor_free(out);
  ge_tensor *din[3] = {NULL, in[1], in[2]};
  din[0] = ge_test_tensor(GE_U16, d3, 1, (uint16_t[]){65498, 65501, 65535});
  run_ok("DequantizeLinear", 21, NULL, 0, din, 3, &out, 1);
  ge_test_assert_shape(out, GE_F16, d3, 1);
  ge_test_assert_close(out, (float[]){-1, 0.5f, 17.5f}, 3, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(din[0]);
  free_all(in, 3);
}

static void test_dynamic_quantize(void **unused) {
  (void)unused;
  int64_t d6[] = {6};
  ge_tensor *x = ge_test_tensor_f32(d6, 1, (float[]){0, 2, -3, -2.5f, 1.34f, 0.5f});
  ge_tensor *out[3] = {0};
  run_ok("DynamicQuantizeLinear", 11, NULL, 0, &x, 1, out, 3);
  ge_test_assert_ints(out[0], (int64_t[]){153, 255, 0, 26, 221, 179}, 6);
  ge_test_assert_close(out[1], (float[]){5.0f / 255.0f}, 1, 1e-7f, 1e-6f);
  ge_test_assert_ints(out[2], (int64_t[]){153}, 1);
  free_all(out, 3);
  ge_tensor_free(x);
}

static void test_qlinear_matmul(void **unused) {
  (void)unused;
  int64_t da[] = {2, 4}, dbm[] = {4, 3}, d0[] = {0};
  ge_tensor *in[8] = {
      ge_test_tensor(GE_U8, da, 2, (uint8_t[]){208, 236, 0, 238, 3, 214, 255, 29}),
      ge_test_tensor_f32(d0, 0, (float[]){0.0066f}),
      ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){113}),
      ge_test_tensor(GE_U8, dbm, 2, (uint8_t[]){152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}),
      ge_test_tensor_f32(d0, 0, (float[]){0.00705f}),
      ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){114}),
      ge_test_tensor_f32(d0, 0, (float[]){0.0107f}),
      ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){118}),
  };
  ge_tensor *out = NULL;
  run_ok("QLinearMatMul", 10, NULL, 0, in, 8, &out, 1);
  ge_test_assert_shape(out, GE_U8, (int64_t[]){2, 3}, 2);
  ge_test_assert_ints(out, (int64_t[]){168, 115, 255, 1, 66, 151}, 6);
  ge_tensor_free(out);
  free_all(in, 8);
}

static void test_conv_integer(void **unused) {
  (void)unused;
  int64_t dx[] = {1, 1, 3, 3}, dw[] = {1, 1, 2, 2}, d0[] = {0};
  ge_tensor *in[4] = {
      ge_test_tensor(GE_U8, dx, 4, (uint8_t[]){2, 3, 4, 5, 6, 7, 8, 9, 10}),
      ge_test_tensor(GE_U8, dw, 4, (uint8_t[]){1, 1, 1, 1}),
      ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){1}),
      NULL,
  };
  ge_tensor *out = NULL;
  run_ok("ConvInteger", 10, NULL, 0, in, 3, &out, 1);
  ge_test_assert_shape(out, GE_I32, (int64_t[]){1, 1, 2, 2}, 4);
  ge_test_assert_ints(out, (int64_t[]){12, 16, 24, 28}, 4);
  ge_tensor_free(out);
  ge_attr pads = GE_ATTR_INTS("pads", ((int64_t[]){1, 1, 1, 1}), 4);
  run_ok("ConvInteger", 10, &pads, 1, in, 3, &out, 1);
  ge_test_assert_shape(out, GE_I32, (int64_t[]){1, 1, 4, 4}, 4);
  ge_test_assert_ints(out, (int64_t[]){1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}, 16);
  ge_tensor_free(out);
  /* QLinearConv: same integer conv, scaled: x_scale 1, w_scale 0.5, y_scale 2, y_zp 10 */
  ge_tensor *q[9] = {in[0], ge_test_tensor_f32(d0, 0, (float[]){1}), in[2], in[1],
                     ge_test_tensor_f32(d0, 0, (float[]){0.5f}), ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){0}),
                     ge_test_tensor_f32(d0, 0, (float[]){2}), ge_test_tensor(GE_U8, d0, 0, (uint8_t[]){10}),
                     ge_test_tensor_i32((int64_t[]){1}, 1, (int32_t[]){4})};
  run_ok("QLinearConv", 10, NULL, 0, q, 9, &out, 1);
  ge_test_assert_shape(out, GE_U8, (int64_t[]){1, 1, 2, 2}, 4);
  /* (12+4)/4 + 10 = 14, (16+4)/4 + 10 = 15, (24+4)/4 + 10 = 17, (28+4)/4 + 10 = 18 */
  ge_test_assert_ints(out, (int64_t[]){14, 15, 17, 18}, 4);
  ge_tensor_free(out);
  for (size_t i = 4; i < 9; i++) ge_tensor_free(q[i]);
  ge_tensor_free(q[1]);
  free_all(in, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantize_per_tensor), cmocka_unit_test(test_quantize_axis_blocked),
      cmocka_unit_test(test_quantize_16bit_f16),  cmocka_unit_test(test_dynamic_quantize),
      cmocka_unit_test(test_qlinear_matmul),      cmocka_unit_test(test_conv_integer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
