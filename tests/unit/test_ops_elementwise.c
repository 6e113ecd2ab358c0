/* Tests of the elementwise family: inference (incl. symbolic/unknown dims and errors naming
 * the node) and the reference CPU kernels against hand-checked values and naive loops. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/cpu/ref/broadcast.h"
#include "helpers/ops_harness.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static ge_tensor *run1(const char *op, int64_t opset, const ge_attr *attrs, size_t na,
                       ge_tensor *const *ins, size_t n_in) {
  ge_tensor *out = NULL;
  ge_status st = ge_test_run_node(op, opset, attrs, na, ins, n_in, &out, 1);
  if (st != GE_OK) fail_msg("%s failed: %s", op, ge_last_error());
  return out;
}

/* ------------------------------------------------------------------ inference */

static void test_infer_broadcast_symbolic(void **state) {
  int64_t da[] = {GE_DIM_SYM(0), 1, 4}, db[] = {3, 1};
  ge_type a = ge_test_type(GE_F32, da, 3), b = ge_test_type(GE_F32, db, 2), out;
  const ge_type *ins[] = {&a, &b};
  assert_int_equal(ge_test_infer_node("Add", 17, NULL, 0, ins, NULL, 2, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_F32);
  assert_int_equal(out.shape.rank, 3);
  assert_true(out.shape.dims[0] == GE_DIM_SYM(0));
  assert_true(out.shape.dims[1] == 3);
  assert_true(out.shape.dims[2] == 4);
  /* comparisons give bool */
  assert_int_equal(ge_test_infer_node("Less", 17, NULL, 0, ins, NULL, 2, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_BOOL);
  /* unknown rank -> unknown rank, unknown dtype stays unknown */
  ge_type u = ge_test_type(GE_DTYPE_COUNT, NULL, -1);
  const ge_type *ins2[] = {&u, &b};
  assert_int_equal(ge_test_infer_node("Mul", 17, NULL, 0, ins2, NULL, 2, &out, 1), GE_OK);
  assert_int_equal(out.shape.rank, GE_RANK_UNKNOWN);
  assert_int_equal(out.dtype, GE_F32);
  const ge_type *ins3[] = {&u};
  assert_int_equal(ge_test_infer_node("Relu", 17, NULL, 0, ins3, NULL, 1, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_DTYPE_COUNT);
}

static void test_infer_errors(void **state) {
  int64_t da[] = {2, 3}, db[] = {4};
  ge_type a = ge_test_type(GE_F32, da, 2), b = ge_test_type(GE_F32, db, 1);
  ge_type i = ge_test_type(GE_I64, da, 2), out;
  const ge_type *bad_shape[] = {&a, &b};
  assert_int_equal(ge_test_infer_node("Add", 17, NULL, 0, bad_shape, NULL, 2, &out, 1),
                   GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  const ge_type *bad_dt[] = {&a, &i};
  assert_int_not_equal(ge_test_infer_node("Sub", 17, NULL, 0, bad_dt, NULL, 2, &out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  assert_non_null(strstr(ge_last_error(), "int64"));
  /* Pow takes an exponent of another dtype */
  assert_int_equal(ge_test_infer_node("Pow", 15, NULL, 0, bad_dt, NULL, 2, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_F32);
  /* Sqrt of int64 */
  const ge_type *ints[] = {&i};
  assert_int_equal(ge_test_infer_node("Sqrt", 13, NULL, 0, ints, NULL, 1, &out, 1),
                   GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  /* Mod with fmod=0 on floats: numpy.mod semantics (allowed, as the onnx tests use it) */
  const ge_type *ff[] = {&a, &a};
  assert_int_equal(ge_test_infer_node("Mod", 13, NULL, 0, ff, NULL, 2, &out, 1), GE_OK);
  /* Where needs a bool condition */
  const ge_type *w[] = {&a, &a, &a};
  assert_int_not_equal(ge_test_infer_node("Where", 16, NULL, 0, w, NULL, 3, &out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  /* Cast needs 'to' */
  assert_int_not_equal(ge_test_infer_node("Cast", 19, NULL, 0, ints, NULL, 1, &out, 1), GE_OK);
  ge_attr to = GE_ATTR_INT("to", 1);
  assert_int_equal(ge_test_infer_node("Cast", 19, &to, 1, ints, NULL, 1, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_F32);
  assert_int_equal(out.shape.rank, 2);
  /* Gelu only from opset 20 */
  const ge_type *fa[] = {&a};
  assert_int_not_equal(ge_test_infer_node("Gelu", 17, NULL, 0, fa, NULL, 1, &out, 1), GE_OK);
  assert_int_equal(ge_test_infer_node("Gelu", 20, NULL, 0, fa, NULL, 1, &out, 1), GE_OK);
}

static void test_infer_where_variadic(void **state) {
  int64_t dc[] = {GE_DIM_UNKNOWN, 1}, dx[] = {5}, dy[] = {1, 1};
  ge_type c = ge_test_type(GE_BOOL, dc, 2), x = ge_test_type(GE_I32, dx, 1),
          y = ge_test_type(GE_I32, dy, 2), out;
  const ge_type *ins[] = {&c, &x, &y};
  assert_int_equal(ge_test_infer_node("Where", 16, NULL, 0, ins, NULL, 3, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_I32);
  assert_int_equal(out.shape.rank, 2);
  assert_true(out.shape.dims[1] == 5);
  const ge_type *v[] = {&x, &y, &x};
  assert_int_equal(ge_test_infer_node("Max", 13, NULL, 0, v, NULL, 3, &out, 1), GE_OK);
  assert_int_equal(out.shape.rank, 2);
  assert_true(out.shape.dims[0] == 1 && out.shape.dims[1] == 5);
}

/* ------------------------------------------------------------------ unary kernels */

typedef struct un_case {
  const char *op;
  double (*ref)(double);
} un_case;

static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_softplus(double x) { return log(exp(x) + 1); }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
static double r_neg(double x) { return -x; }
static double r_recip(double x) { return 1 / x; }
static double r_sign(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
static double r_round(double x) { return nearbyint(x); }
static double r_hswish(double x) { return x * fmax(0, fmin(1, x / 6 + 0.5)); }
static double r_elu(double x) { return x < 0 ? exp(x) - 1 : x; }
static double r_mish(double x) { return x * tanh(log1p(exp(x))); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_selu(double x) {
  return x > 0 ? 1.0507009873554805 * x : 1.0507009873554805 * 1.6732632423543772 * (exp(x) - 1);
}

static void test_unary_float(void **state) {
  static const un_case cases[] = {
      {"Abs", fabs},     {"Neg", r_neg},         {"Reciprocal", r_recip}, {"Exp", exp},
      {"Floor", floor},  {"Ceil", ceil},         {"Round", r_round},      {"Sign", r_sign},
      {"Erf", erf},      {"Sin", sin},           {"Cos", cos},            {"Tan", tan},
      {"Atan", atan},    {"Sinh", sinh},         {"Cosh", cosh},          {"Asinh", asinh},
      {"Tanh", tanh},    {"Relu", r_relu},       {"Sigmoid", r_sigmoid},  {"Softplus", r_softplus},
      {"Softsign", r_softsign}, {"HardSwish", r_hswish}, {"Elu", r_elu},  {"Mish", r_mish},
      {"Selu", r_selu},  {"Gelu", r_gelu},
  };
  float vals[] = {-3.5f, -2.5f, -1.0f, -0.25f, 0.0f, 0.5f, 1.5f, 2.5f, 7.0f, -20.0f, 20.0f};
  int64_t d[] = {11};
  ge_dtype dts[] = {GE_F32, GE_F64, GE_F16, GE_BF16};
  for (size_t c = 0; c < N_OF(cases); c++) {
    for (size_t t = 0; t < N_OF(dts); t++) {
      ge_tensor *x = ge_test_tensor_from_f32(dts[t], d, 1, vals);
      ge_tensor *y = run1(cases[c].op, 22, NULL, 0, &x, 1);
      ge_test_assert_shape(y, dts[t], d, 1);
      double exp_[11];
      for (int i = 0; i < 11; i++) {
        exp_[i] = cases[c].ref(ge_tensor_get_f64(x, (size_t)i));
        /* what the half types can hold */
        if (dts[t] == GE_F16) exp_[i] = ge_f16_to_f32(ge_f32_to_f16((float)exp_[i]));
        if (dts[t] == GE_BF16) exp_[i] = ge_bf16_to_f32(ge_f32_to_bf16((float)exp_[i]));
      }
      double tol = dts[t] == GE_F32 ? 1e-5 : (dts[t] == GE_F64 ? 1e-7 : 1e-2);
      ge_test_assert_close_f64(y, exp_, 11, tol, tol);
      ge_tensor_free(x);
      ge_tensor_free(y);
    }
  }
  /* domain-limited ops */
  float pos[] = {0.25f, 0.5f, 0.9f};
  int64_t d3[] = {3};
  ge_tensor *x = ge_test_tensor_f32(d3, 1, pos);
  const char *ops[] = {"Sqrt", "Log", "Asin", "Acos", "Atanh"};
  double (*refs[])(double) = {sqrt, log, asin, acos, atanh};
  for (size_t k = 0; k < N_OF(ops); k++) {
    ge_tensor *y = run1(ops[k], 13, NULL, 0, &x, 1);
    double e[3];
    for (int i = 0; i < 3; i++) e[i] = refs[k](pos[i]);
    ge_test_assert_close_f64(y, e, 3, 1e-6, 1e-6);
    ge_tensor_free(y);
  }
  ge_tensor_free(x);
}

static void test_unary_attrs(void **state) {
  float v[] = {-2, -0.5f, 0, 0.5f, 2};
  int64_t d[] = {5};
  ge_tensor *x = ge_test_tensor_f32(d, 1, v);
  ge_attr a = GE_ATTR_FLOAT("alpha", 0.1f);
  ge_tensor *y = run1("LeakyRelu", 16, &a, 1, &x, 1);
  ge_test_assert_close(y, (float[]){-0.2f, -0.05f, 0, 0.5f, 2}, 5, 1e-6f, 0);
  ge_tensor_free(y);
  y = run1("LeakyRelu", 16, NULL, 0, &x, 1);
  ge_test_assert_close(y, (float[]){-0.02f, -0.005f, 0, 0.5f, 2}, 5, 1e-6f, 0);
  ge_tensor_free(y);
  y = run1("HardSigmoid", 7, NULL, 0, &x, 1);
  ge_test_assert_close(y, (float[]){0.1f, 0.4f, 0.5f, 0.6f, 0.9f}, 5, 1e-6f, 0);
  ge_tensor_free(y);
  ge_attr th = GE_ATTR_FLOAT("alpha", 0.4f);
  y = run1("ThresholdedRelu", 10, &th, 1, &x, 1);
  ge_test_assert_close(y, (float[]){0, 0, 0, 0.5f, 2}, 5, 0, 0);
  ge_tensor_free(y);
  ge_attr ca = GE_ATTR_FLOAT("alpha", 2.0f);
  y = run1("Celu", 12, &ca, 1, &x, 1);
  ge_test_assert_close(y, (float[]){2 * (expf(-1) - 1), 2 * (expf(-0.25f) - 1), 0, 0.5f, 2}, 5,
                       1e-6f, 1e-6f);
  ge_tensor_free(y);
  ge_attr tanh_a = GE_ATTR_STRING("approximate", "tanh");
  y = run1("Gelu", 20, &tanh_a, 1, &x, 1);
  float e[5];
  for (int i = 0; i < 5; i++)
    e[i] = 0.5f * v[i] * (1 + tanhf(0.7978845608f * (v[i] + 0.044715f * v[i] * v[i] * v[i])));
  ge_test_assert_close(y, e, 5, 1e-6f, 1e-5f);
  ge_tensor_free(y);
  ge_attr bad = GE_ATTR_STRING("approximate", "fast");
  ge_tensor *o = NULL;
  assert_int_not_equal(ge_test_run_node("Gelu", 20, &bad, 1, &x, 1, &o, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  assert_null(o);
  ge_attr sw = GE_ATTR_FLOAT("alpha", 1.5f);
  y = run1("Swish", 24, &sw, 1, &x, 1);
  for (int i = 0; i < 5; i++) e[i] = v[i] / (1 + expf(-1.5f * v[i]));
  ge_test_assert_close(y, e, 5, 1e-6f, 1e-5f);
  ge_tensor_free(y);
  ge_tensor_free(x);

  float sp[] = {INFINITY, -INFINITY, NAN, 1};
  int64_t d4[] = {4};
  x = ge_test_tensor_f32(d4, 1, sp);
  y = run1("HardSwish", 14, NULL, 0, &x, 1);
  ge_test_assert_close(y, (float[]){INFINITY, NAN, NAN, 1.0f * (1.0f / 6 + 0.5f)}, 4, 1e-6f, 0);
  ge_tensor_free(y);
  y = run1("Gelu", 20, NULL, 0, &x, 1);
  ge_test_assert_close(y, (float[]){INFINITY, NAN, NAN, 0.8413447f}, 4, 1e-6f, 1e-6f);
  ge_tensor_free(y);
  y = run1("IsInf", 20, NULL, 0, &x, 1);
  ge_test_assert_shape(y, GE_BOOL, d4, 1);
  ge_test_assert_ints(y, (int64_t[]){1, 1, 0, 0}, 4);
  ge_tensor_free(y);
  ge_attr neg_off = GE_ATTR_INT("detect_negative", 0);
  y = run1("IsInf", 20, &neg_off, 1, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){1, 0, 0, 0}, 4);
  ge_tensor_free(y);
  y = run1("IsNaN", 13, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){0, 0, 1, 0}, 4);
  ge_tensor_free(y);
  ge_tensor_free(x);
}

static void test_unary_int_bool(void **state) {
  int64_t d[] = {5};
  ge_tensor *x = ge_test_tensor(GE_I32, d, 1, (int32_t[]){-5, -1, 0, 3, INT32_MIN});
  ge_tensor *y = run1("Abs", 13, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){5, 1, 0, 3, INT32_MIN}, 5);
  ge_tensor_free(y);
  y = run1("Neg", 13, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){5, 1, 0, -3, INT32_MIN}, 5);
  ge_tensor_free(y);
  y = run1("Sign", 13, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){-1, -1, 0, 1, -1}, 5);
  ge_tensor_free(y);
  y = run1("Relu", 14, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){0, 0, 0, 3, 0}, 5);
  ge_tensor_free(y);
  y = run1("BitwiseNot", 18, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){4, 0, -1, -4, INT32_MAX}, 5);
  ge_tensor_free(y);
  ge_tensor_free(x);
  x = ge_test_tensor_bool(d, 1, (bool[]){true, false, true, false, false});
  y = run1("Not", 7, NULL, 0, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){0, 1, 0, 1, 1}, 5);
  ge_tensor_free(y);
  ge_tensor_free(x);
  /* unsupported dtype at prepare/infer names the node */
  x = ge_test_tensor(GE_I32, d, 1, NULL);
  ge_tensor *o = NULL;
  assert_int_not_equal(ge_test_run_node("Exp", 13, NULL, 0, &x, 1, &o, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ binary kernels */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* flat index of the element of input (dims/rank) that output index o maps to */
static size_t bidx(size_t o, const int64_t *od, int orank, const int64_t *d, int rank) {
  size_t idx = 0, mul = 1;
  for (int k = orank - 1; k >= 0; k--) {
    size_t c = o % (size_t)od[k];
    o /= (size_t)od[k];
    int ik = k - (orank - rank);
    if (ik < 0) continue;
    if (d[ik] != 1) idx += c * mul;
    mul *= (size_t)d[ik];
  }
  return idx;
}

static void random_bcast_shapes(int64_t *a, int *ra, int64_t *b, int *rb, int64_t *o, int *ro) {
  int r = 1 + (int)(rnd() % 5);
  for (int k = 0; k < r; k++) o[k] = 1 + (int64_t)(rnd() % 4);
  *ro = r;
  *ra = (int)(rnd() % (unsigned)(r + 1));
  *rb = (int)(rnd() % (unsigned)(r + 1));
  if (rnd() % 2) *ra = r; else *rb = r;
  for (int k = 0; k < *ra; k++) a[k] = rnd() % 3 == 0 ? 1 : o[r - *ra + k];
  for (int k = 0; k < *rb; k++) b[k] = rnd() % 3 == 0 ? 1 : o[r - *rb + k];
  /* the true output: where both are 1 (or absent), the dim is 1 */
  for (int k = 0; k < r; k++) {
    int64_t x = k - (r - *ra) >= 0 ? a[k - (r - *ra)] : 1;
    int64_t y = k - (r - *rb) >= 0 ? b[k - (r - *rb)] : 1;
    o[k] = x > y ? x : y;
  }
}

static void test_binary_random_broadcast(void **state) {
  const char *ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Less", "Equal"};
  ge_dtype dts[] = {GE_F32, GE_F64, GE_F16};
  for (int iter = 0; iter < 200; iter++) {
    int64_t da[GE_MAX_RANK], db[GE_MAX_RANK], dout[GE_MAX_RANK];
    int ra, rb, ro;
    random_bcast_shapes(da, &ra, db, &rb, dout, &ro);
    const char *op = ops[iter % N_OF(ops)];
    ge_dtype dt = dts[(iter / N_OF(ops)) % N_OF(dts)];
    size_t na = 1, nb = 1, no = 1;
    for (int k = 0; k < ra; k++) na *= (size_t)da[k];
    for (int k = 0; k < rb; k++) nb *= (size_t)db[k];
    for (int k = 0; k < ro; k++) no *= (size_t)dout[k];
    float va[256], vb[256];
    for (size_t i = 0; i < na; i++) va[i] = (float)(rnd() % 64) / 16.0f + 0.25f;
    for (size_t i = 0; i < nb; i++) vb[i] = (float)(rnd() % 64) / 16.0f - 2.0f;
    if (!strcmp(op, "Div")) for (size_t i = 0; i < nb; i++) if (vb[i] == 0) vb[i] = 1;
    ge_tensor *ins[2] = {ge_test_tensor_from_f32(dt, da, (size_t)ra, va),
                         ge_test_tensor_from_f32(dt, db, (size_t)rb, vb)};
    ge_tensor *y = run1(op, 15, NULL, 0, ins, 2);
    bool cmp = !strcmp(op, "Less") || !strcmp(op, "Equal");
    ge_test_assert_shape(y, cmp ? GE_BOOL : dt, dout, (size_t)ro);
    double e[1024];
    for (size_t i = 0; i < no; i++) {
      double x = ge_tensor_get_f64(ins[0], bidx(i, dout, ro, da, ra));
      double z = ge_tensor_get_f64(ins[1], bidx(i, dout, ro, db, rb));
      double r = 0;
      if (!strcmp(op, "Add")) r = x + z;
      if (!strcmp(op, "Sub")) r = x - z;
      if (!strcmp(op, "Mul")) r = x * z;
      if (!strcmp(op, "Div")) r = x / z;
      if (!strcmp(op, "Max")) r = x > z ? x : z;
      if (!strcmp(op, "Min")) r = x < z ? x : z;
      if (!strcmp(op, "Pow")) r = pow(x, z);
      if (!strcmp(op, "Less")) r = x < z;
      if (!strcmp(op, "Equal")) r = x == z;
      e[i] = r;
    }
    double tol = dt == GE_F16 ? 2e-2 : 1e-5;
    ge_test_assert_close_f64(y, e, no, tol, tol);
    ge_tensor_free(y);
    ge_tensor_free(ins[0]);
    ge_tensor_free(ins[1]);
  }
}

static void test_binary_int(void **state) {
  int64_t d[] = {6};
  ge_tensor *a = ge_test_tensor(GE_I32, d, 1, (int32_t[]){7, -7, 7, -7, 5, INT32_MIN});
  ge_tensor *b = ge_test_tensor(GE_I32, d, 1, (int32_t[]){2, 2, -2, -2, 0, -1});
  ge_tensor *ins[] = {a, b};
  ge_tensor *y = run1("Div", 14, NULL, 0, ins, 2);
  ge_test_assert_ints(y, (int64_t[]){3, -3, -3, 3, 0, INT32_MIN}, 6);
  ge_tensor_free(y);
  y = run1("Mod", 13, NULL, 0, ins, 2);
  ge_test_assert_ints(y, (int64_t[]){1, 1, -1, -1, 0, 0}, 6);
  ge_tensor_free(y);
  ge_attr fm = GE_ATTR_INT("fmod", 1);
  y = run1("Mod", 13, &fm, 1, ins, 2);
  ge_test_assert_ints(y, (int64_t[]){1, -1, 1, -1, 0, 0}, 6);
  ge_tensor_free(y);
  y = run1("Add", 14, NULL, 0, ins, 2);
  ge_test_assert_ints(y, (int64_t[]){9, -5, 5, -9, 5, INT32_MAX}, 6);
  ge_tensor_free(y);
  y = run1("BitwiseAnd", 18, NULL, 0, ins, 2);
  ge_test_assert_ints(y, (int64_t[]){2, 0, 6, -8, 0, INT32_MIN}, 6);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);

  /* Pow: int base, int and float exponents */
  int64_t d3[] = {3};
  a = ge_test_tensor(GE_I64, d3, 1, (int64_t[]){2, 3, -2});
  b = ge_test_tensor(GE_I64, d3, 1, (int64_t[]){10, 3, 3});
  ge_tensor *pw[] = {a, b};
  y = run1("Pow", 15, NULL, 0, pw, 2);
  ge_test_assert_ints(y, (int64_t[]){1024, 27, -8}, 3);
  ge_tensor_free(y);
  ge_tensor_free(b);
  b = ge_test_tensor_f32(d3, 1, (float[]){0.5f, 2, 1});
  pw[1] = b;
  y = run1("Pow", 15, NULL, 0, pw, 2);
  ge_test_assert_ints(y, (int64_t[]){1, 9, -2}, 3);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);

  /* BitShift */
  int64_t d2[] = {2};
  a = ge_test_tensor(GE_U8, d2, 1, (uint8_t[]){16, 4});
  b = ge_test_tensor(GE_U8, d2, 1, (uint8_t[]){1, 9});
  ge_tensor *bs[] = {a, b};
  ge_attr left = GE_ATTR_STRING("direction", "LEFT"), right = GE_ATTR_STRING("direction", "RIGHT");
  y = run1("BitShift", 11, &left, 1, bs, 2);
  ge_test_assert_ints(y, (int64_t[]){32, 0}, 2);
  ge_tensor_free(y);
  y = run1("BitShift", 11, &right, 1, bs, 2);
  ge_test_assert_ints(y, (int64_t[]){8, 0}, 2);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);

  /* logic */
  int64_t d4[] = {4};
  a = ge_test_tensor_bool(d4, 1, (bool[]){0, 0, 1, 1});
  b = ge_test_tensor_bool(d4, 1, (bool[]){0, 1, 0, 1});
  ge_tensor *lg[] = {a, b};
  y = run1("And", 7, NULL, 0, lg, 2);
  ge_test_assert_ints(y, (int64_t[]){0, 0, 0, 1}, 4);
  ge_tensor_free(y);
  y = run1("Or", 7, NULL, 0, lg, 2);
  ge_test_assert_ints(y, (int64_t[]){0, 1, 1, 1}, 4);
  ge_tensor_free(y);
  y = run1("Xor", 7, NULL, 0, lg, 2);
  ge_test_assert_ints(y, (int64_t[]){0, 1, 1, 0}, 4);
  ge_tensor_free(y);
  y = run1("Equal", 19, NULL, 0, lg, 2);
  ge_test_assert_ints(y, (int64_t[]){1, 0, 0, 1}, 4);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);

  /* strings */
  a = ge_test_tensor(GE_STRING, d2, 1, (const char *[]){"ab", "c"});
  b = ge_test_tensor(GE_STRING, d2, 1, (const char *[]){"ab", "d"});
  ge_tensor *st[] = {a, b};
  y = run1("Equal", 19, NULL, 0, st, 2);
  ge_test_assert_ints(y, (int64_t[]){1, 0}, 2);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);
}

static void test_prelu_and_scalar(void **state) {
  int64_t dx[] = {2, 3}, ds[] = {3}, d0[] = {0};
  ge_tensor *x = ge_test_tensor_f32(dx, 2, (float[]){-1, 2, -3, 4, -5, 6});
  ge_tensor *s = ge_test_tensor_f32(ds, 1, (float[]){0.5f, 1, 2});
  ge_tensor *ins[] = {x, s};
  ge_tensor *y = run1("PRelu", 16, NULL, 0, ins, 2);
  ge_test_assert_close(y, (float[]){-0.5f, 2, -6, 4, -5, 6}, 6, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(s);
  /* a rank-0 scalar */
  s = ge_test_tensor_f32(NULL, 0, (float[]){10});
  ins[1] = s;
  y = run1("Mul", 14, NULL, 0, ins, 2);
  ge_test_assert_close(y, (float[]){-10, 20, -30, 40, -50, 60}, 6, 0, 0);
  ge_tensor_free(y);
  ins[0] = s;
  ins[1] = x;
  y = run1("Sub", 14, NULL, 0, ins, 2);
  ge_test_assert_close(y, (float[]){11, 8, 13, 6, 15, 4}, 6, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(s);
  /* empty tensors */
  ge_tensor *e = ge_test_tensor_f32(d0, 1, NULL);
  ge_tensor *e1 = ge_test_tensor_f32((int64_t[]){1}, 1, (float[]){3});
  ge_tensor *ee[] = {e, e1};
  y = run1("Add", 14, NULL, 0, ee, 2);
  ge_test_assert_shape(y, GE_F32, d0, 1);
  ge_tensor_free(y);
  y = run1("Relu", 14, NULL, 0, &e, 1);
  ge_test_assert_shape(y, GE_F32, d0, 1);
  ge_tensor_free(y);
  ge_tensor_free(e);
  ge_tensor_free(e1);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ variadic, Where, Clip */

static void test_variadic(void **state) {
  int64_t d1[] = {3}, d2[] = {2, 1}, d0[] = {1};
  ge_tensor *a = ge_test_tensor_f32(d1, 1, (float[]){1, 5, 3});
  ge_tensor *b = ge_test_tensor_f32(d2, 2, (float[]){2, 4});
  ge_tensor *c = ge_test_tensor_f32(d0, 1, (float[]){3});
  ge_tensor *ins[] = {a, b, c};
  int64_t dout[] = {2, 3};
  ge_tensor *y = run1("Sum", 13, NULL, 0, ins, 3);
  ge_test_assert_shape(y, GE_F32, dout, 2);
  ge_test_assert_close(y, (float[]){6, 10, 8, 8, 12, 10}, 6, 0, 0);
  ge_tensor_free(y);
  y = run1("Mean", 13, NULL, 0, ins, 3);
  ge_test_assert_close(y, (float[]){2, 10.0f / 3, 8.0f / 3, 8.0f / 3, 4, 10.0f / 3}, 6, 1e-6f, 0);
  ge_tensor_free(y);
  y = run1("Max", 13, NULL, 0, ins, 3);
  ge_test_assert_close(y, (float[]){3, 5, 3, 4, 5, 4}, 6, 0, 0);
  ge_tensor_free(y);
  y = run1("Min", 13, NULL, 0, ins, 3);
  ge_test_assert_close(y, (float[]){1, 2, 2, 1, 3, 3}, 6, 0, 0);
  ge_tensor_free(y);
  y = run1("Max", 13, NULL, 0, ins, 1);
  ge_test_assert_close(y, (float[]){1, 5, 3}, 3, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);
  ge_tensor_free(c);
  /* int Max */
  a = ge_test_tensor_i64(d1, 1, (int64_t[]){-1, 7, INT64_MAX});
  b = ge_test_tensor_i64(d1, 1, (int64_t[]){3, -7, 0});
  ge_tensor *ii[] = {a, b};
  y = run1("Max", 13, NULL, 0, ii, 2);
  ge_test_assert_ints(y, (int64_t[]){3, 7, INT64_MAX}, 3);
  ge_tensor_free(y);
  ge_tensor_free(a);
  ge_tensor_free(b);
}

static void test_where(void **state) {
  int64_t dc[] = {2, 1}, dx[] = {3}, dy[] = {1};
  ge_tensor *c = ge_test_tensor_bool(dc, 2, (bool[]){true, false});
  ge_tensor *x = ge_test_tensor_i64(dx, 1, (int64_t[]){1, 2, 3});
  ge_tensor *y = ge_test_tensor_i64(dy, 1, (int64_t[]){-1});
  ge_tensor *ins[] = {c, x, y};
  ge_tensor *o = run1("Where", 16, NULL, 0, ins, 3);
  int64_t dout[] = {2, 3};
  ge_test_assert_shape(o, GE_I64, dout, 2);
  ge_test_assert_ints(o, (int64_t[]){1, 2, 3, -1, -1, -1}, 6);
  ge_tensor_free(o);
  ge_tensor_free(x);
  ge_tensor_free(y);
  x = ge_test_tensor(GE_STRING, dx, 1, (const char *[]){"a", "b", "c"});
  y = ge_test_tensor(GE_STRING, dy, 1, (const char *[]){"z"});
  ins[1] = x;
  ins[2] = y;
  o = run1("Where", 16, NULL, 0, ins, 3);
  const char *const *s = o->data;
  assert_string_equal(s[0], "a");
  assert_string_equal(s[2], "c");
  assert_string_equal(s[4], "z");
  ge_tensor_free(o);
  ge_tensor_free(x);
  ge_tensor_free(y);
  /* f16 with all-same shapes */
  int64_t d2[] = {2};
  ge_tensor *c2 = ge_test_tensor_bool(d2, 1, (bool[]){false, true});
  x = ge_test_tensor_from_f32(GE_F16, d2, 1, (float[]){1.5f, 2.5f});
  y = ge_test_tensor_from_f32(GE_F16, d2, 1, (float[]){-1, -2});
  ge_tensor *i2[] = {c2, x, y};
  o = run1("Where", 16, NULL, 0, i2, 3);
  ge_test_assert_close(o, (float[]){-1, 2.5f}, 2, 0, 0);
  ge_tensor_free(o);
  ge_tensor_free(x);
  ge_tensor_free(y);
  ge_tensor_free(c2);
  ge_tensor_free(c);
}

static void test_clip(void **state) {
  int64_t d[] = {5};
  float v[] = {-3, -1, 0, 1, 3};
  ge_tensor *x = ge_test_tensor_f32(d, 1, v);
  ge_attr at[] = {GE_ATTR_FLOAT("min", -1.5f), GE_ATTR_FLOAT("max", 2)};
  ge_tensor *y = run1("Clip", 7, at, 2, &x, 1);
  ge_test_assert_close(y, (float[]){-1.5f, -1, 0, 1, 2}, 5, 0, 0);
  ge_tensor_free(y);
  ge_tensor *lo = ge_test_tensor_f32(NULL, 0, (float[]){-0.5f});
  ge_tensor *hi = ge_test_tensor_f32(NULL, 0, (float[]){0.5f});
  ge_tensor *ins[] = {x, lo, hi};
  y = run1("Clip", 13, NULL, 0, ins, 3);
  ge_test_assert_close(y, (float[]){-0.5f, -0.5f, 0, 0.5f, 0.5f}, 5, 0, 0);
  ge_tensor_free(y);
  ge_tensor *only_max[] = {x, NULL, hi};
  y = run1("Clip", 13, NULL, 0, only_max, 3);
  ge_test_assert_close(y, (float[]){-3, -1, 0, 0.5f, 0.5f}, 5, 0, 0);
  ge_tensor_free(y);
  /* min > max gives max */
  ge_tensor *swapped[] = {x, hi, lo};
  y = run1("Clip", 13, NULL, 0, swapped, 3);
  ge_test_assert_close(y, (float[]){-0.5f, -0.5f, -0.5f, -0.5f, -0.5f}, 5, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(lo);
  ge_tensor_free(hi);
  ge_tensor_free(x);
  x = ge_test_tensor(GE_I32, d, 1, (int32_t[]){-3, -1, 0, 1, 3});
  lo = ge_test_tensor(GE_I32, NULL, 0, (int32_t[]){-2});
  ge_tensor *ii[] = {x, lo};
  y = run1("Clip", 13, NULL, 0, ii, 2);
  ge_test_assert_ints(y, (int64_t[]){-2, -1, 0, 1, 3}, 5);
  ge_tensor_free(y);
  ge_tensor_free(lo);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ Cast */

static void test_cast(void **state) {
  int64_t d[] = {5};
  ge_tensor *x = ge_test_tensor_f32(d, 1, (float[]){-2.7f, -0.5f, 0, 1.9f, 300.5f});
  ge_attr to_i32 = GE_ATTR_INT("to", 6), to_f16 = GE_ATTR_INT("to", 10),
          to_bool = GE_ATTR_INT("to", 9), to_str = GE_ATTR_INT("to", 8),
          to_f32 = GE_ATTR_INT("to", 1), to_bf16 = GE_ATTR_INT("to", 16),
          to_u8 = GE_ATTR_INT("to", 2), to_f64 = GE_ATTR_INT("to", 11);
  ge_tensor *y = run1("Cast", 21, &to_i32, 1, &x, 1);
  ge_test_assert_shape(y, GE_I32, d, 1);
  ge_test_assert_ints(y, (int64_t[]){-2, 0, 0, 1, 300}, 5);
  ge_tensor_free(y);
  y = run1("Cast", 21, &to_bool, 1, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){1, 1, 0, 1, 1}, 5);
  ge_tensor_free(y);
  y = run1("Cast", 21, &to_f16, 1, &x, 1);
  ge_test_assert_shape(y, GE_F16, d, 1);
  ge_test_assert_close(y, (float[]){-2.7f, -0.5f, 0, 1.9f, 300.5f}, 5, 0, 1e-3f);
  ge_tensor *z = run1("Cast", 21, &to_bf16, 1, &y, 1);
  ge_test_assert_close(z, (float[]){-2.7f, -0.5f, 0, 1.9f, 300.5f}, 5, 0, 1e-2f);
  ge_tensor_free(z);
  z = run1("Cast", 21, &to_f64, 1, &y, 1);
  ge_test_assert_close(z, (float[]){-2.7f, -0.5f, 0, 1.9f, 300.5f}, 5, 0, 1e-3f);
  ge_tensor_free(z);
  ge_tensor_free(y);
  y = run1("Cast", 21, &to_str, 1, &x, 1);
  const char *const *s = y->data;
  assert_string_equal(s[0], "-2.7");
  assert_string_equal(s[1], "-0.5");
  assert_string_equal(s[3], "1.9");
  z = run1("Cast", 21, &to_f32, 1, &y, 1);
  ge_test_assert_close(z, (float[]){-2.7f, -0.5f, 0, 1.9f, 300.5f}, 5, 0, 0);
  ge_tensor_free(z);
  ge_tensor_free(y);
  ge_tensor_free(x);
  x = ge_test_tensor(GE_STRING, d, 1, (const char *[]){"INF", "-inf", "NaN", "1e3", "+7"});
  y = run1("Cast", 21, &to_f32, 1, &x, 1);
  ge_test_assert_close(y, (float[]){INFINITY, -INFINITY, NAN, 1000, 7}, 5, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(x);
  x = ge_test_tensor_i64(d, 1, (int64_t[]){-1, 255, 256, 7, 0});
  y = run1("Cast", 21, &to_u8, 1, &x, 1);
  ge_test_assert_ints(y, (int64_t[]){255, 255, 0, 7, 0}, 5);
  ge_tensor_free(y);
  y = run1("Cast", 21, &to_str, 1, &x, 1);
  s = y->data;
  assert_string_equal(s[0], "-1");
  assert_string_equal(s[2], "256");
  ge_tensor_free(y);
  /* CastLike */
  ge_tensor *like = ge_test_tensor(GE_F64, (int64_t[]){1}, 1, NULL);
  ge_tensor *cl[] = {x, like};
  y = run1("CastLike", 19, NULL, 0, cl, 2);
  ge_test_assert_shape(y, GE_F64, d, 1);
  ge_test_assert_close(y, (float[]){-1, 255, 256, 7, 0}, 5, 0, 0);
  ge_tensor_free(y);
  ge_tensor_free(like);
  ge_tensor_free(x);
  /* a dtype ge lacks (float6e2m3; float8 is tested in test_dtypes_lowp.c) */
  x = ge_test_tensor_f32(d, 1, NULL);
  ge_attr to_f6 = GE_ATTR_INT("to", 27);
  ge_tensor *o = NULL;
  assert_int_equal(ge_test_run_node("Cast", 21, &to_f6, 1, &x, 1, &o, 1), GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ broadcast helper */

static void test_bcast_merge(void **state) {
  int64_t a[] = {2, 3, 4}, b[] = {2, 3, 4}, s[] = {1}, o[] = {2, 3, 4};
  const int64_t *dims[] = {a, b};
  int ranks[] = {3, 3};
  ge_bcast bc;
  assert_int_equal(ge_bcast_init_dims(&bc, o, 3, dims, ranks, 2), GE_OK);
  assert_int_equal(bc.rank, 1);
  assert_int_equal(bc.inner, 24);
  const int64_t *dims2[] = {a, s};
  int ranks2[] = {3, 1};
  assert_int_equal(ge_bcast_init_dims(&bc, o, 3, dims2, ranks2, 2), GE_OK);
  assert_int_equal(bc.rank, 1);
  assert_int_equal(bc.step[1], 0);
  int64_t bad[] = {5};
  const int64_t *dims3[] = {a, bad};
  assert_int_equal(ge_bcast_init_dims(&bc, o, 3, dims3, ranks2, 2), GE_ERR_SHAPE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_infer_broadcast_symbolic),
      cmocka_unit_test(test_infer_errors),
      cmocka_unit_test(test_infer_where_variadic),
      cmocka_unit_test(test_unary_float),
      cmocka_unit_test(test_unary_attrs),
      cmocka_unit_test(test_unary_int_bool),
      cmocka_unit_test(test_binary_random_broadcast),
      cmocka_unit_test(test_binary_int),
      cmocka_unit_test(test_prelu_and_scalar),
      cmocka_unit_test(test_variadic),
      cmocka_unit_test(test_where),
      cmocka_unit_test(test_clip),
      cmocka_unit_test(test_cast),
      cmocka_unit_test(test_bcast_merge),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
