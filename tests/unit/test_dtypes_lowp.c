/* Low-precision dtypes: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4e2m1, int4,
 * uint4, int2, uint2.  Conversions on the values of the ONNX spec's tables, rounding and
 * saturation, ONNX packing, tensors, Cast / CastLike / QuantizeLinear / DequantizeLinear, and
 * an ONNX save -> load round trip of packed initializers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"
#include "ir/dtype_lowp.h"
#include "ir/ir.h"

static const ge_dtype all_lowp[] = {GE_F8E4M3FN, GE_F8E4M3FNUZ, GE_F8E5M2, GE_F8E5M2FNUZ,
                                    GE_F8E8M0,   GE_U4,         GE_I4,     GE_F4E2M1,
                                    GE_U2,       GE_I2};
#define N_LOWP (sizeof all_lowp / sizeof all_lowp[0])

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Bit-exact float comparison (NaN equals any NaN). */
static void assert_same_float(float got, float want, const char *what, unsigned code) {
  if (isnan(want) && isnan(got)) return;
  if (fbits(got) != fbits(want)) {
    print_error("%s code 0x%02x: got %.9g (0x%08x), want %.9g (0x%08x)\n", what, code,
                (double)got, fbits(got), (double)want, fbits(want));
    fail();
  }
}

/* ------------------------------------------------------------------ names, sizes, codes */

static void test_names_sizes_codes(void **state) {
  (void)state;
  static const char *const names[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                      "float8e5m2fnuz", "float8e8m0", "uint4", "int4",
                                      "float4e2m1", "uint2", "int2"};
  static const int32_t onnx[] = {17, 18, 19, 20, 24, 21, 22, 23, 25, 26};
  for (size_t i = 0; i < N_LOWP; i++) {
    ge_dtype dt = all_lowp[i], back;
    assert_string_equal(ge_dtype_name(dt), names[i]);
    assert_int_equal(ge_dtype_size(dt), 1);
    assert_int_equal(ge_dtype_to_onnx(dt), onnx[i]);
    assert_true(ge_dtype_from_onnx(onnx[i], &back));
    assert_int_equal(back, dt);
    assert_true(ge_dtype_is_lowp(dt));
    assert_false(ge_dtype_is_float(dt)); /* arithmetic kernels must not take them */
    assert_false(ge_dtype_is_int(dt));
  }
  assert_false(ge_dtype_is_lowp(GE_U8));
  assert_false(ge_dtype_is_lowp(GE_STRING));
  /* float6 (27, 28) stays unsupported */
  assert_false(ge_dtype_from_onnx(27, NULL));
  assert_false(ge_dtype_from_onnx(28, NULL));
  assert_int_equal(ge_dtype_lowp_bits(GE_I4), 4);
  assert_int_equal(ge_dtype_lowp_bits(GE_F4E2M1), 4);
  assert_int_equal(ge_dtype_lowp_bits(GE_U2), 2);
  assert_int_equal(ge_dtype_lowp_bits(GE_F8E5M2), 8);
}

/* ------------------------------------------------------------------ decoding */

static void test_decode_tables(void **state) {
  (void)state;
  struct { ge_dtype dt; unsigned code; float v; } t[] = {
      /* E4M3FN: bias 7, max 448, subnormal step 2^-9, NaN S.1111.111 */
      {GE_F8E4M3FN, 0x00, 0.0f}, {GE_F8E4M3FN, 0x80, -0.0f}, {GE_F8E4M3FN, 0x01, 0x1p-9f},
      {GE_F8E4M3FN, 0x07, 7 * 0x1p-9f}, {GE_F8E4M3FN, 0x08, 0x1p-6f},
      {GE_F8E4M3FN, 0x38, 1.0f}, {GE_F8E4M3FN, 0x3c, 1.5f}, {GE_F8E4M3FN, 0x7e, 448.0f},
      {GE_F8E4M3FN, 0xfe, -448.0f}, {GE_F8E4M3FN, 0x7f, NAN}, {GE_F8E4M3FN, 0xff, NAN},
      {GE_F8E4M3FN, 0x78, 256.0f},
      /* E4M3FNUZ: bias 8, max 240, NaN only 0x80 */
      {GE_F8E4M3FNUZ, 0x00, 0.0f}, {GE_F8E4M3FNUZ, 0x80, NAN}, {GE_F8E4M3FNUZ, 0x01, 0x1p-10f},
      {GE_F8E4M3FNUZ, 0x40, 1.0f}, {GE_F8E4M3FNUZ, 0x7f, 240.0f},
      {GE_F8E4M3FNUZ, 0xff, -240.0f},
      /* E5M2: IEEE-like, bias 15, max 57344, inf and NaN */
      {GE_F8E5M2, 0x00, 0.0f}, {GE_F8E5M2, 0x80, -0.0f}, {GE_F8E5M2, 0x01, 0x1p-16f},
      {GE_F8E5M2, 0x04, 0x1p-14f}, {GE_F8E5M2, 0x3c, 1.0f}, {GE_F8E5M2, 0x7b, 57344.0f},
      {GE_F8E5M2, 0x7c, INFINITY}, {GE_F8E5M2, 0xfc, -INFINITY}, {GE_F8E5M2, 0x7d, NAN},
      {GE_F8E5M2, 0x7e, NAN}, {GE_F8E5M2, 0xff, NAN},
      /* E5M2FNUZ: bias 16, max 57344, NaN only 0x80 */
      {GE_F8E5M2FNUZ, 0x00, 0.0f}, {GE_F8E5M2FNUZ, 0x80, NAN}, {GE_F8E5M2FNUZ, 0x01, 0x1p-17f},
      {GE_F8E5M2FNUZ, 0x40, 1.0f}, {GE_F8E5M2FNUZ, 0x7f, 57344.0f},
      {GE_F8E5M2FNUZ, 0xfc, -32768.0f},
      /* E8M0: 2^(code-127), 0xff NaN */
      {GE_F8E8M0, 0x00, 0x1p-127f}, {GE_F8E8M0, 0x7f, 1.0f}, {GE_F8E8M0, 0x80, 2.0f},
      {GE_F8E8M0, 0xfe, 0x1p127f}, {GE_F8E8M0, 0xff, NAN},
      /* ints */
      {GE_I4, 0x0, 0}, {GE_I4, 0x7, 7}, {GE_I4, 0x8, -8}, {GE_I4, 0xf, -1},
      {GE_U4, 0xf, 15}, {GE_I2, 0x1, 1}, {GE_I2, 0x2, -2}, {GE_I2, 0x3, -1}, {GE_U2, 0x3, 3},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    assert_same_float(ge_lowp_to_f32(t[i].dt, (uint8_t)t[i].code), t[i].v,
                      ge_dtype_name(t[i].dt), t[i].code);
  /* float4e2m1: every code */
  static const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6,
                                 -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (unsigned c = 0; c < 16; c++)
    assert_same_float(ge_lowp_to_f32(GE_F4E2M1, (uint8_t)c), e2m1[c], "float4e2m1", c);
  /* blocks decode like single elements (the table path at >= 256 elements) */
  uint8_t codes[300];
  float f[300];
  for (size_t i = 0; i < 300; i++) codes[i] = (uint8_t)(i * 7);
  ge_lowp_to_f32_n(GE_F8E5M2, codes, 300, f);
  for (size_t i = 0; i < 300; i++)
    assert_same_float(f[i], ge_lowp_to_f32(GE_F8E5M2, codes[i]), "block", codes[i]);
}

/* Every finite code re-encodes to itself, saturating or not. */
static void test_roundtrip_all_codes(void **state) {
  (void)state;
  const ge_dtype fl[] = {GE_F8E4M3FN, GE_F8E4M3FNUZ, GE_F8E5M2, GE_F8E5M2FNUZ, GE_F4E2M1};
  for (size_t k = 0; k < 5; k++) {
    unsigned n = fl[k] == GE_F4E2M1 ? 16 : 256;
    for (unsigned c = 0; c < n; c++) {
      float v = ge_lowp_to_f32(fl[k], (uint8_t)c);
      if (isnan(v) || isinf(v)) continue;
      for (int sat = 0; sat < 2; sat++) {
        uint8_t back = ge_f32_to_lowp(fl[k], v, sat);
        if (back != c) {
          print_error("%s: code 0x%02x (%g) came back as 0x%02x\n", ge_dtype_name(fl[k]), c,
                      (double)v, back);
          fail();
        }
      }
    }
  }
  /* (code 0, 2^-127, is a float32 subnormal with a fraction: "up" makes it 2^-126) */
  for (unsigned c = 1; c < 255; c++)
    assert_int_equal(ge_f32_to_lowp(GE_F8E8M0, ge_lowp_to_f32(GE_F8E8M0, (uint8_t)c), true), c);
}

/* ------------------------------------------------------------------ encoding */

static void test_encode_rounding_saturation(void **state) {
  (void)state;
  struct { ge_dtype dt; float x; int sat; unsigned want; } t[] = {
      /* round to nearest even */
      {GE_F8E4M3FN, 1.0625f, 1, 0x38},  /* tie between 1 and 1.125: even 1 */
      {GE_F8E4M3FN, 1.1875f, 1, 0x3a},  /* tie between 1.125 and 1.25: even 1.25 */
      {GE_F8E4M3FN, 1.07f, 1, 0x39},
      {GE_F8E4M3FN, 0x1p-10f, 1, 0x00}, /* half the smallest subnormal: even 0 */
      {GE_F8E4M3FN, 0x1.8p-10f, 1, 0x01},
      {GE_F8E4M3FN, -0x1p-12f, 1, 0x80}, /* underflow keeps the sign */
      {GE_F8E4M3FN, 0.46875f, 0, 0x2f}, {GE_F8E4M3FN, 0.4789f, 0, 0x2f},
      {GE_F8E4M3FN, 464.0f, 0, 0x7e},   /* tie between 448 and (NaN) 480: even 448 */
      /* saturation: E4M3FN */
      {GE_F8E4M3FN, 1e6f, 1, 0x7e}, {GE_F8E4M3FN, -1e6f, 1, 0xfe},
      {GE_F8E4M3FN, INFINITY, 1, 0x7e}, {GE_F8E4M3FN, -INFINITY, 1, 0xfe},
      {GE_F8E4M3FN, 1e6f, 0, 0x7f}, {GE_F8E4M3FN, INFINITY, 0, 0x7f},
      {GE_F8E4M3FN, -INFINITY, 0, 0xff}, {GE_F8E4M3FN, 480.0f, 0, 0x7f},
      {GE_F8E4M3FN, NAN, 1, 0x7f}, {GE_F8E4M3FN, -0.0f, 1, 0x80},
      /* E4M3FNUZ: no -0, NaN 0x80 */
      {GE_F8E4M3FNUZ, -0.0f, 1, 0x00}, {GE_F8E4M3FNUZ, -1e-7f, 1, 0x00},
      {GE_F8E4M3FNUZ, NAN, 1, 0x80}, {GE_F8E4M3FNUZ, 1e6f, 1, 0x7f},
      {GE_F8E4M3FNUZ, -INFINITY, 1, 0xff}, {GE_F8E4M3FNUZ, 1e6f, 0, 0x80},
      {GE_F8E4M3FNUZ, INFINITY, 0, 0x80},
      /* E5M2: overflow is inf without saturation */
      {GE_F8E5M2, 61440.0f, 0, 0x7c}, /* tie between 57344 and inf: even (inf) */
      {GE_F8E5M2, 61439.0f, 0, 0x7b}, {GE_F8E5M2, 61440.0f, 1, 0x7b},
      {GE_F8E5M2, INFINITY, 0, 0x7c}, {GE_F8E5M2, -INFINITY, 0, 0xfc},
      {GE_F8E5M2, INFINITY, 1, 0x7b}, {GE_F8E5M2, -1e6f, 1, 0xfb}, {GE_F8E5M2, 1e6f, 0, 0x7c},
      {GE_F8E5M2, 0.4789f, 1, 0x38},
      /* E5M2FNUZ */
      {GE_F8E5M2FNUZ, 1e6f, 1, 0x7f}, {GE_F8E5M2FNUZ, 1e6f, 0, 0x80},
      {GE_F8E5M2FNUZ, INFINITY, 1, 0x7f}, {GE_F8E5M2FNUZ, -1e-7f, 1, 0x00},
      /* float4e2m1: always saturates, NaN -> -0 */
      {GE_F4E2M1, 0.25f, 1, 0x0}, {GE_F4E2M1, 0.75f, 1, 0x2}, {GE_F4E2M1, 1.25f, 1, 0x2},
      {GE_F4E2M1, 2.5f, 1, 0x4}, {GE_F4E2M1, 5.0f, 1, 0x6}, {GE_F4E2M1, 1.05f, 1, 0x2},
      {GE_F4E2M1, -3.5f, 1, 0xe}, {GE_F4E2M1, 9.0f, 0, 0x7}, {GE_F4E2M1, 1e6f, 1, 0x7},
      {GE_F4E2M1, INFINITY, 0, 0x7}, {GE_F4E2M1, -INFINITY, 1, 0xf},
      {GE_F4E2M1, -0.0f, 1, 0x8}, {GE_F4E2M1, NAN, 1, 0x8},
      /* ints: Cast truncates toward zero and wraps */
      {GE_I4, -9.0f, 1, 0x7}, {GE_I4, 8.0f, 1, 0x8}, {GE_I4, -1.9f, 1, 0xf},
      {GE_U4, 17.5f, 1, 0x1}, {GE_U2, -3.0f, 1, 0x1}, {GE_I2, 2.0f, 1, 0x2},
      {GE_I4, NAN, 1, 0x0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    uint8_t got = ge_f32_to_lowp(t[i].dt, t[i].x, t[i].sat);
    if (got != t[i].want) {
      print_error("%s(%g, saturate=%d) = 0x%02x, want 0x%02x\n", ge_dtype_name(t[i].dt),
                  (double)t[i].x, t[i].sat, got, t[i].want);
      fail();
    }
  }
}

static void test_e8m0_rounding(void **state) {
  (void)state;
  /* up (the default): any fraction rounds up; down truncates; nearest as onnx's reference */
  assert_int_equal(ge_f32_to_e8m0(1.1f, true, GE_E8M0_ROUND_UP), 128);
  assert_int_equal(ge_f32_to_e8m0(1.1f, true, GE_E8M0_ROUND_DOWN), 127);
  assert_int_equal(ge_f32_to_e8m0(1.1f, true, GE_E8M0_ROUND_NEAREST), 127);
  assert_int_equal(ge_f32_to_e8m0(1.75f, true, GE_E8M0_ROUND_NEAREST), 128);
  assert_int_equal(ge_f32_to_e8m0(2.0f, true, GE_E8M0_ROUND_UP), 128);
  assert_int_equal(ge_f32_to_e8m0(0.124f, true, GE_E8M0_ROUND_UP), 124); /* 0.125 */
  assert_int_equal(ge_f32_to_e8m0(0.0f, true, GE_E8M0_ROUND_UP), 0);
  assert_int_equal(ge_f32_to_e8m0(NAN, true, GE_E8M0_ROUND_UP), 0xff);
  assert_int_equal(ge_f32_to_e8m0(INFINITY, true, GE_E8M0_ROUND_UP), 0xff);
  /* the largest finite exponent: saturation keeps it, otherwise it rounds up to NaN */
  assert_int_equal(ge_f32_to_e8m0(3e38f, true, GE_E8M0_ROUND_UP), 0xfe);
  assert_int_equal(ge_f32_to_e8m0(3e38f, false, GE_E8M0_ROUND_UP), 0xff);
}

/* ------------------------------------------------------------------ packing */

static void test_pack_unpack(void **state) {
  (void)state;
  /* onnx.helper.make_tensor(INT4, [5], [1, -1, 0, 1, 2]).int32_data == [241, 16, 2] */
  const uint8_t i4[5] = {0x1, 0xf, 0x0, 0x1, 0x2};
  uint8_t pk[4] = {0xaa, 0xaa, 0xaa, 0xaa}, un[8];
  size_t nb;
  assert_true(ge_dtype_packed_nbytes(GE_I4, 5, &nb));
  assert_int_equal(nb, 3);
  ge_lowp_pack(GE_I4, i4, 5, pk);
  assert_int_equal(pk[0], 241);
  assert_int_equal(pk[1], 16);
  assert_int_equal(pk[2], 2); /* the unused high nibble is zero */
  assert_int_equal(pk[3], 0xaa);
  ge_lowp_unpack(GE_I4, pk, 5, un);
  assert_memory_equal(un, i4, 5);
  /* make_tensor(UINT2, [5], [1, 3, 0, 1, 2]).int32_data == [77, 2] */
  const uint8_t u2[5] = {1, 3, 0, 1, 2};
  assert_true(ge_dtype_packed_nbytes(GE_U2, 5, &nb));
  assert_int_equal(nb, 2);
  ge_lowp_pack(GE_U2, u2, 5, pk);
  assert_int_equal(pk[0], 77);
  assert_int_equal(pk[1], 2);
  ge_lowp_unpack(GE_U2, pk, 5, un);
  assert_memory_equal(un, u2, 5);
  assert_true(ge_dtype_packed_nbytes(GE_U2, 8, &nb));
  assert_int_equal(nb, 2);
  assert_true(ge_dtype_packed_nbytes(GE_F8E4M3FN, 5, &nb));
  assert_int_equal(nb, 5);
  assert_true(ge_dtype_packed_nbytes(GE_I4, 0, &nb));
  assert_int_equal(nb, 0);
  /* unpack masks garbage high bits away */
  uint8_t g = 0xff;
  ge_lowp_unpack(GE_I2, &g, 4, un);
  for (int i = 0; i < 4; i++) assert_int_equal(un[i], 3);
}

static void test_tensors(void **state) {
  (void)state;
  int64_t d[] = {3, 5};
  for (size_t i = 0; i < N_LOWP; i++) {
    ge_tensor *t = NULL;
    assert_int_equal(ge_tensor_create(all_lowp[i], d, 2, &t), GE_OK);
    assert_int_equal(ge_tensor_nbytes(t), 15); /* one byte per element */
    ge_tensor_free(t);
    uint8_t buf[15] = {0};
    assert_int_equal(ge_tensor_wrap(all_lowp[i], d, 2, buf, 15, NULL, NULL, &t), GE_OK);
    ge_tensor_free(t);
    assert_int_not_equal(ge_tensor_wrap(all_lowp[i], d, 2, buf, 8, NULL, NULL, &t), GE_OK);
  }
  int64_t n = 4;
  ge_tensor *t = ge_test_tensor(GE_I4, &n, 1, (uint8_t[]){0x8, 0xf, 0x7, 0x1});
  assert_int_equal(ge_tensor_get_i64(t, 0), -8);
  assert_int_equal(ge_tensor_get_i64(t, 1), -1);
  assert_true(ge_tensor_get_f64(t, 2) == 7.0);
  ge_tensor_free(t);
  t = ge_test_tensor(GE_F8E4M3FN, &n, 1, (uint8_t[]){0x38, 0xbc, 0x7e, 0x00});
  assert_true(ge_tensor_get_f64(t, 0) == 1.0);
  assert_true(ge_tensor_get_f64(t, 1) == -1.5);
  assert_int_equal(ge_tensor_get_i64(t, 2), 448);
  ge_tensor_free(t);
}

/* ------------------------------------------------------------------ ops */

static ge_tensor *run1(const char *op, int64_t opset, const ge_attr *attrs, size_t na,
                       ge_tensor *const *in, size_t n_in) {
  ge_tensor *out = NULL;
  ge_status st = ge_test_run_node(op, opset, attrs, na, in, n_in, &out, 1);
  if (st != GE_OK) {
    print_error("%s failed: %s\n", op, ge_last_error());
    fail();
  }
  return out;
}

static void assert_bytes(const ge_tensor *t, ge_dtype dt, const uint8_t *want, size_t n) {
  assert_int_equal(t->dtype, dt);
  assert_int_equal(t->numel, n);
  assert_memory_equal(t->data, want, n);
}

static void test_cast(void **state) {
  (void)state;
  int64_t d[] = {6};
  ge_tensor *x = ge_test_tensor_f32(d, 1, (float[]){1e6f, -INFINITY, 0.4789f, NAN, -1e-7f, 1.0f});
  ge_attr a[2] = {GE_ATTR_INT("to", 17), GE_ATTR_INT("saturate", 0)};
  ge_tensor *y = run1("Cast", 19, a, 1, &x, 1); /* saturate defaults to 1 */
  assert_bytes(y, GE_F8E4M3FN, (uint8_t[]){0x7e, 0xfe, 0x2f, 0x7f, 0x80, 0x38}, 6);
  ge_tensor_free(y);
  y = run1("Cast", 19, a, 2, &x, 1);
  assert_bytes(y, GE_F8E4M3FN, (uint8_t[]){0x7f, 0xff, 0x2f, 0x7f, 0x80, 0x38}, 6);
  /* float8 -> float32 -> float16 */
  ge_attr to_f16 = GE_ATTR_INT("to", 10);
  ge_tensor *h = run1("Cast", 19, &to_f16, 1, &y, 1);
  ge_test_assert_close(h, (float[]){NAN, NAN, 0.46875f, NAN, -0.0f, 1.0f}, 6, 0, 0);
  ge_tensor_free(h);
  ge_tensor_free(y);
  /* E5M2 without saturation: inf */
  a[0] = GE_ATTR_INT("to", 19);
  y = run1("Cast", 19, a, 2, &x, 1);
  assert_bytes(y, GE_F8E5M2, (uint8_t[]){0x7c, 0xfc, 0x38, 0x7e, 0x80, 0x3c}, 6);
  ge_tensor_free(y);
  ge_tensor_free(x);

  /* int4: float -> int4 wraps; int4 -> int8 sign-extends */
  int64_t d5[] = {5};
  x = ge_test_tensor_f32(d5, 1, (float[]){-9, -8, 7, 8, 1.7f});
  ge_attr to_i4 = GE_ATTR_INT("to", 22), to_i8 = GE_ATTR_INT("to", 3),
          to_u2 = GE_ATTR_INT("to", 25), to_f32 = GE_ATTR_INT("to", 1);
  y = run1("Cast", 21, &to_i4, 1, &x, 1);
  assert_bytes(y, GE_I4, (uint8_t[]){0x7, 0x8, 0x7, 0x8, 0x1}, 5);
  ge_tensor *z = run1("Cast", 21, &to_i8, 1, &y, 1);
  ge_test_assert_ints(z, (int64_t[]){7, -8, 7, -8, 1}, 5);
  ge_tensor_free(z);
  z = run1("Cast", 21, &to_f32, 1, &y, 1);
  ge_test_assert_close(z, (float[]){7, -8, 7, -8, 1}, 5, 0, 0);
  ge_tensor_free(z);
  z = run1("Cast", 25, &to_u2, 1, &y, 1); /* int4 -> uint2: wraps to 2 bits */
  assert_bytes(z, GE_U2, (uint8_t[]){0x3, 0x0, 0x3, 0x0, 0x1}, 5);
  ge_tensor_free(z);
  ge_tensor_free(y);
  ge_tensor_free(x);

  /* float8e8m0 with round_mode */
  int64_t d3[] = {3};
  x = ge_test_tensor_f32(d3, 1, (float[]){1.1f, 0.124f, 3.0f});
  ge_attr e8[2] = {GE_ATTR_INT("to", 24), GE_ATTR_STRING("round_mode", "down")};
  y = run1("Cast", 25, e8, 1, &x, 1);
  assert_bytes(y, GE_F8E8M0, (uint8_t[]){128, 124, 129}, 3);
  ge_tensor_free(y);
  y = run1("Cast", 25, e8, 2, &x, 1);
  assert_bytes(y, GE_F8E8M0, (uint8_t[]){127, 123, 128}, 3);
  ge_tensor_free(y);
  e8[1] = GE_ATTR_STRING("round_mode", "sideways");
  ge_tensor *bad = NULL;
  assert_int_not_equal(ge_test_run_node("Cast", 25, e8, 2, &x, 1, &bad, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "round_mode"));
  ge_tensor_free(x);

  /* CastLike to float4e2m1 */
  x = ge_test_tensor_f32(d3, 1, (float[]){2.5f, -100.0f, 0.3f});
  ge_tensor *like = ge_test_tensor(GE_F4E2M1, d3, 1, NULL);
  ge_tensor *in2[] = {x, like};
  y = run1("CastLike", 23, NULL, 0, in2, 2);
  assert_bytes(y, GE_F4E2M1, (uint8_t[]){0x4, 0xf, 0x1}, 3);
  ge_tensor_free(y);
  ge_tensor_free(like);
  ge_tensor_free(x);

  /* strings */
  x = ge_test_tensor(GE_I4, d3, 1, (uint8_t[]){0xf, 0x7, 0x8});
  ge_attr to_str = GE_ATTR_INT("to", 8);
  y = run1("Cast", 21, &to_str, 1, &x, 1);
  const char *const *s = y->data;
  assert_string_equal(s[0], "-1");
  assert_string_equal(s[2], "-8");
  z = run1("Cast", 21, &to_i4, 1, &y, 1);
  assert_bytes(z, GE_I4, (uint8_t[]){0xf, 0x7, 0x8}, 3);
  ge_tensor_free(z);
  ge_tensor_free(y);
  ge_tensor_free(x);
}

static void test_quantize(void **state) {
  (void)state;
  /* onnx's test_quantizelinear_int4 */
  int64_t dx[] = {3, 4}, dp[] = {3};
  ge_tensor *x = ge_test_tensor_f32(dx, 2, (float[]){0, 2.5f, 4.8f, 8.6f, -30, -20, 6, 9, 12, 15,
                                                      16, 40});
  ge_tensor *sc = ge_test_tensor_f32(dp, 1, (float[]){2, 3, 4});
  ge_tensor *zp = ge_test_tensor(GE_I4, dp, 1, (uint8_t[]){1, 1, 1});
  ge_attr axis = GE_ATTR_INT("axis", 0);
  ge_tensor *in[] = {x, sc, zp};
  ge_tensor *y = run1("QuantizeLinear", 21, &axis, 1, in, 3);
  assert_int_equal(y->dtype, GE_I4);
  int64_t want[] = {1, 2, 3, 5, -8, -6, 3, 4, 4, 5, 5, 7};
  for (size_t i = 0; i < 12; i++) assert_int_equal(ge_tensor_get_i64(y, i), want[i]);
  /* and back */
  ge_tensor *din[] = {y, sc, zp};
  ge_tensor *r = run1("DequantizeLinear", 21, &axis, 1, din, 3);
  ge_test_assert_close(r, (float[]){0, 2, 4, 8, -27, -21, 6, 9, 12, 16, 16, 24}, 12, 0, 0);
  ge_tensor_free(r);
  ge_tensor_free(y);
  ge_tensor_free(zp);
  ge_tensor_free(sc);
  ge_tensor_free(x);

  /* float8: x / scale, then a saturating cast (no rounding to integers) */
  int64_t d5[] = {5};
  x = ge_test_tensor_f32(d5, 1, (float[]){0, 1, 2, 100000, 200});
  sc = ge_test_tensor_f32(NULL, 0, (float[]){2});
  zp = ge_test_tensor(GE_F8E4M3FN, (int64_t[]){1}, 1, (uint8_t[]){0});
  ge_tensor *q[] = {x, sc, zp};
  y = run1("QuantizeLinear", 19, NULL, 0, q, 3);
  ge_test_assert_close(y, (float[]){0, 0.5f, 1, 448, 96}, 5, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(zp);
  ge_tensor_free(sc);
  ge_tensor_free(x);
}

/* Ops that move bytes take the low-precision dtypes; arithmetic refuses them at inference. */
static void test_data_movement_and_refusal(void **state) {
  (void)state;
  int64_t d[] = {2, 3}, shp[] = {3, 2};
  ge_tensor *x = ge_test_tensor(GE_I4, d, 2, (uint8_t[]){0x1, 0x2, 0x3, 0xf, 0xe, 0x8});
  ge_tensor *s = ge_test_tensor_i64((int64_t[]){2}, 1, shp);
  ge_tensor *in[] = {x, s};
  ge_tensor *y = run1("Reshape", 21, NULL, 0, in, 2);
  assert_bytes(y, GE_I4, (uint8_t[]){0x1, 0x2, 0x3, 0xf, 0xe, 0x8}, 6);
  ge_tensor_free(y);
  int64_t perm[] = {1, 0};
  ge_attr pa = GE_ATTR_INTS("perm", perm, 2);
  y = run1("Transpose", 21, &pa, 1, &x, 1);
  assert_bytes(y, GE_I4, (uint8_t[]){0x1, 0xf, 0x2, 0xe, 0x3, 0x8}, 6);
  ge_tensor_free(y);
  ge_tensor *xx[] = {x, x};
  ge_tensor *out = NULL;
  assert_int_not_equal(ge_test_run_node("Add", 21, NULL, 0, xx, 2, &out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "int4"));
  ge_tensor_free(s);
  ge_tensor_free(x);
  /* NonZero sees -0 of float8 as zero and every float8e8m0 as nonzero */
  int64_t d4[] = {4};
  x = ge_test_tensor(GE_F8E5M2, d4, 1, (uint8_t[]){0x80, 0x00, 0x3c, 0x01});
  y = run1("NonZero", 13, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){2, 3}, 2);
  ge_tensor_free(y);
  ge_tensor_free(x);
  x = ge_test_tensor(GE_F8E8M0, d4, 1, (uint8_t[]){0x00, 0x01, 0x7f, 0xfe});
  y = run1("NonZero", 13, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){0, 1, 2, 3}, 4);
  ge_tensor_free(y);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ ONNX save -> load */

static void test_onnx_roundtrip_packed(void **state) {
  (void)state;
  char path[] = "/tmp/ge_test_lowp_XXXXXX.onnx";
  int fd = mkstemps(path, 5);
  assert_true(fd >= 0);
  close(fd);
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("lowp", &g), GE_OK);
  static const char *const names[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"};
  uint8_t vals[N_LOWP][7];
  int64_t n = 7;
  for (size_t k = 0; k < N_LOWP; k++) {
    unsigned mask = ge_dtype_lowp_bits(all_lowp[k]) == 8 ? 0xffu : (1u << ge_dtype_lowp_bits(all_lowp[k])) - 1u;
    for (size_t i = 0; i < 7; i++) vals[k][i] = (uint8_t)((i * 37u + k * 11u + 1u) & mask);
    ge_tensor *t = ge_test_tensor(all_lowp[k], &n, 1, vals[k]);
    assert_int_equal(ge_graph_add_constant(g, names[k], t), GE_OK);
    assert_int_equal(ge_graph_add_output(g, names[k]), GE_OK);
    ge_tensor_free(t);
  }
  assert_int_equal(ge_graph_save(g, path), GE_OK);
  ge_graph_free(g);
  g = NULL;
  ge_status st = ge_graph_load(path, NULL, 0, &g);
  if (st != GE_OK) print_error("load: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  for (size_t k = 0; k < N_LOWP; k++) {
    int32_t id = ge_graph_find_value(g, names[k]);
    assert_true(id >= 0);
    const ge_tensor *t = g->values[id].constant;
    assert_non_null(t);
    assert_bytes(t, all_lowp[k], vals[k], 7);
  }
  ge_graph_free(g);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_sizes_codes),
      cmocka_unit_test(test_decode_tables),
      cmocka_unit_test(test_roundtrip_all_codes),
      cmocka_unit_test(test_encode_rounding_saturation),
      cmocka_unit_test(test_e8m0_rounding),
      cmocka_unit_test(test_pack_unpack),
      cmocka_unit_test(test_tensors),
      cmocka_unit_test(test_cast),
      cmocka_unit_test(test_quantize),
      cmocka_unit_test(test_data_movement_and_refusal),
      cmocka_unit_test(test_onnx_roundtrip_packed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
