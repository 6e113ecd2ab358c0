/* Tests of the reduce family: ReduceX, ArgMax/ArgMin, CumSum, TopK, Det, Unique, Shrink,
 * LpNormalization, Resize, Upsample.
 *
 * Hand-written inference and kernel tests, a naive-loop reference for random reductions, and
 * the single-node cases of onnx's backend node tests (inputs and reference outputs written by
 * tests/unit/data/gen_reduce_cases.py into tests/unit/data/reduce_node_cases.txt). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

/* ------------------------------------------------------------------ small helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 11);
}
static float rndf(void) { return (float)(rnd() % 20001) / 10000.0f - 1.0f; }

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

/* ------------------------------------------------------------------ inference */

static void test_reduce_infer(void **unused) {
  (void)unused;
  int64_t d[] = {GE_DIM_SYM(0), 3, 4};
  ge_type x = ge_test_type(GE_F32, d, 3);
  ge_type out[1];
  /* opset 11: axes attribute */
  int64_t ax[] = {-1};
  ge_attr a[] = {GE_ATTR_INTS("axes", ax, 1), GE_ATTR_INT("keepdims", 0)};
  const ge_type *in[] = {&x};
  assert_int_equal(ge_test_infer_node("ReduceMean", 11, a, 2, in, NULL, 1, out, 1), GE_OK);
  assert_int_equal(out[0].dtype, GE_F32);
  assert_int_equal(out[0].shape.rank, 2);
  assert_true(out[0].shape.dims[0] == GE_DIM_SYM(0));
  assert_int_equal(out[0].shape.dims[1], 3);
  /* keepdims default: rank kept */
  assert_int_equal(ge_test_infer_node("ReduceMax", 11, a, 1, in, NULL, 1, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, 3);
  assert_int_equal(out[0].shape.dims[2], 1);
  /* no axes: reduce everything */
  assert_int_equal(ge_test_infer_node("ReduceSum", 11, NULL, 0, in, NULL, 1, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, 3);
  for (int i = 0; i < 3; i++) assert_int_equal(out[0].shape.dims[i], 1);
  /* opset 18: axes as a non-constant input, keepdims: rank known, dims unknown */
  int64_t one = 1;
  ge_type axt = ge_test_type(GE_I64, &one, 1);
  const ge_type *in2[] = {&x, &axt};
  assert_int_equal(ge_test_infer_node("ReduceL2", 18, NULL, 0, in2, NULL, 2, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, 3);
  assert_true(out[0].shape.dims[1] == GE_DIM_UNKNOWN);
  /* ... without keepdims: rank unknown */
  ge_attr nk[] = {GE_ATTR_INT("keepdims", 0)};
  assert_int_equal(ge_test_infer_node("ReduceL2", 18, nk, 1, in2, NULL, 2, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, GE_RANK_UNKNOWN);
  /* constant axes input */
  ge_tensor *axv = ge_test_tensor_i64(&one, 1, (int64_t[]){1});
  const ge_tensor *vals[] = {NULL, axv};
  assert_int_equal(ge_test_infer_node("ReduceSum", 13, nk, 1, in2, vals, 2, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, 2);
  assert_int_equal(out[0].shape.dims[1], 4);
  ge_tensor_free(axv);
  /* unknown rank in -> unknown out */
  ge_type ur = ge_test_type(GE_F16, NULL, -1);
  const ge_type *in3[] = {&ur};
  assert_int_equal(ge_test_infer_node("ReduceProd", 18, NULL, 0, in3, NULL, 1, out, 1), GE_OK);
  assert_int_equal(out[0].dtype, GE_F16);
  assert_int_equal(out[0].shape.rank, GE_RANK_UNKNOWN);
  /* bad axis: error names the node */
  int64_t bad[] = {3};
  ge_attr ab[] = {GE_ATTR_INTS("axes", bad, 1)};
  assert_int_not_equal(ge_test_infer_node("ReduceSum", 11, ab, 1, in, NULL, 1, out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  assert_non_null(strstr(ge_last_error(), "axis 3"));
  /* bool only for max/min */
  ge_type xb = ge_test_type(GE_BOOL, d, 3);
  const ge_type *in4[] = {&xb};
  assert_int_equal(ge_test_infer_node("ReduceMax", 18, NULL, 0, in4, NULL, 1, out, 1), GE_OK);
  assert_int_not_equal(ge_test_infer_node("ReduceSum", 18, NULL, 0, in4, NULL, 1, out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "bool"));
}

static void test_misc_infer(void **unused) {
  (void)unused;
  int64_t d[] = {GE_DIM_SYM(1), 5, 6};
  ge_type x = ge_test_type(GE_F32, d, 3);
  ge_type out[4];
  const ge_type *in[] = {&x};
  ge_attr a[] = {GE_ATTR_INT("axis", 1), GE_ATTR_INT("keepdims", 0)};
  assert_int_equal(ge_test_infer_node("ArgMin", 13, a, 2, in, NULL, 1, out, 1), GE_OK);
  assert_int_equal(out[0].dtype, GE_I64);
  assert_int_equal(out[0].shape.rank, 2);
  assert_int_equal(out[0].shape.dims[1], 6);
  /* TopK with unknown k: axis dim unknown */
  int64_t one = 1;
  ge_type kt = ge_test_type(GE_I64, &one, 1);
  const ge_type *in2[] = {&x, &kt};
  assert_int_equal(ge_test_infer_node("TopK", 11, NULL, 0, in2, NULL, 2, out, 2), GE_OK);
  assert_int_equal(out[0].shape.rank, 3);
  assert_true(out[0].shape.dims[2] == GE_DIM_UNKNOWN);
  assert_int_equal(out[1].dtype, GE_I64);
  ge_tensor *kv = ge_test_tensor_i64(&one, 1, (int64_t[]){7});
  const ge_tensor *vals[] = {NULL, kv};
  assert_int_not_equal(ge_test_infer_node("TopK", 11, NULL, 0, in2, vals, 2, out, 2), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(kv);
  /* TopK-1: k attribute */
  ge_attr ka[] = {GE_ATTR_INT("k", 2), GE_ATTR_INT("axis", 1)};
  assert_int_equal(ge_test_infer_node("TopK", 9, ka, 2, in, NULL, 1, out, 2), GE_OK);
  assert_int_equal(out[0].shape.dims[1], 2);
  /* Det */
  int64_t dd[] = {2, GE_DIM_SYM(3), GE_DIM_SYM(3)};
  ge_type xd = ge_test_type(GE_F64, dd, 3);
  const ge_type *in3[] = {&xd};
  assert_int_equal(ge_test_infer_node("Det", 11, NULL, 0, in3, NULL, 1, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, 1);
  assert_int_equal(out[0].shape.dims[0], 2);
  int64_t dn[] = {2, 3, 4};
  ge_type xn = ge_test_type(GE_F32, dn, 3);
  const ge_type *in4[] = {&xn};
  assert_int_not_equal(ge_test_infer_node("Det", 11, NULL, 0, in4, NULL, 1, out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "square"));
  /* Unique: data-dependent sizes */
  assert_int_equal(ge_test_infer_node("Unique", 11, NULL, 0, in4, NULL, 1, out, 4), GE_OK);
  assert_int_equal(out[0].shape.rank, 1);
  assert_true(out[0].shape.dims[0] == GE_DIM_UNKNOWN);
  assert_int_equal(out[2].shape.dims[0], 24);
  /* Resize: unknown scales -> unknown dims of known rank; constant scales -> dims */
  int64_t four = 4;
  ge_type sc = ge_test_type(GE_F32, &four, 1);
  int64_t xr_d[] = {1, 1, 4, GE_DIM_SYM(2)};
  ge_type xr = ge_test_type(GE_F32, xr_d, 4);
  const ge_type *in5[] = {&xr, NULL, &sc};
  assert_int_equal(ge_test_infer_node("Resize", 19, NULL, 0, in5, NULL, 3, out, 1), GE_OK);
  assert_int_equal(out[0].shape.rank, 4);
  assert_true(out[0].shape.dims[2] == GE_DIM_UNKNOWN);
  ge_tensor *scv = ge_test_tensor_f32(&four, 1, (float[]){1, 1, 0.6f, 2});
  const ge_tensor *v5[] = {NULL, NULL, scv};
  assert_int_equal(ge_test_infer_node("Resize", 19, NULL, 0, in5, v5, 3, out, 1), GE_OK);
  assert_int_equal(out[0].shape.dims[2], 2);
  assert_true(out[0].shape.dims[3] == GE_DIM_UNKNOWN);
  ge_tensor_free(scv);
}

static void test_extra_infer(void **unused) {
  (void)unused;
  ge_type out[1];
  /* NonMaxSuppression: [?, 3] int64; bad boxes rank is an error naming the node */
  int64_t bd[] = {1, 6, 4}, sd[] = {1, 2, 6};
  ge_type boxes = ge_test_type(GE_F32, bd, 3), scores = ge_test_type(GE_F32, sd, 3);
  const ge_type *in[] = {&boxes, &scores};
  assert_int_equal(ge_test_infer_node("NonMaxSuppression", 11, NULL, 0, in, NULL, 2, out, 1), GE_OK);
  assert_int_equal(out[0].dtype, GE_I64);
  assert_int_equal(out[0].shape.rank, 2);
  assert_true(out[0].shape.dims[0] == GE_DIM_UNKNOWN);
  assert_int_equal(out[0].shape.dims[1], 3);
  ge_type b2 = ge_test_type(GE_F32, bd, 2);
  const ge_type *in2[] = {&b2, &scores};
  assert_int_not_equal(ge_test_infer_node("NonMaxSuppression", 11, NULL, 0, in2, NULL, 2, out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  /* RoiAlign */
  int64_t xd[] = {2, 8, 16, 16}, rd[] = {GE_DIM_SYM(0), 4}, id[] = {GE_DIM_SYM(0)};
  ge_type x = ge_test_type(GE_F32, xd, 4), rois = ge_test_type(GE_F32, rd, 2), bi = ge_test_type(GE_I64, id, 1);
  const ge_type *in3[] = {&x, &rois, &bi};
  ge_attr ra[] = {GE_ATTR_INT("output_height", 7), GE_ATTR_INT("output_width", 5)};
  assert_int_equal(ge_test_infer_node("RoiAlign", 16, ra, 2, in3, NULL, 3, out, 1), GE_OK);
  assert_true(out[0].shape.dims[0] == GE_DIM_SYM(0));
  assert_int_equal(out[0].shape.dims[1], 8);
  assert_int_equal(out[0].shape.dims[2], 7);
  assert_int_equal(out[0].shape.dims[3], 5);
  /* GridSample */
  int64_t gd[] = {2, 3, 9, 2};
  ge_type grid = ge_test_type(GE_F32, gd, 4);
  const ge_type *in4[] = {&x, &grid};
  assert_int_equal(ge_test_infer_node("GridSample", 16, NULL, 0, in4, NULL, 2, out, 1), GE_OK);
  assert_int_equal(out[0].shape.dims[1], 8);
  assert_int_equal(out[0].shape.dims[2], 3);
  assert_int_equal(out[0].shape.dims[3], 9);
  /* MaxUnpool: (in - 1) * stride + kernel - pads */
  int64_t ud[] = {1, 2, 3, GE_DIM_SYM(1)};
  ge_type ux = ge_test_type(GE_F32, ud, 4), ui = ge_test_type(GE_I64, ud, 4);
  const ge_type *in5[] = {&ux, &ui};
  int64_t ks[] = {2, 2}, st[] = {2, 2};
  ge_attr ua[] = {GE_ATTR_INTS("kernel_shape", ks, 2), GE_ATTR_INTS("strides", st, 2)};
  assert_int_equal(ge_test_infer_node("MaxUnpool", 11, ua, 2, in5, NULL, 2, out, 1), GE_OK);
  assert_int_equal(out[0].shape.dims[2], 6);
  assert_true(out[0].shape.dims[3] == GE_DIM_UNKNOWN);
  assert_int_not_equal(ge_test_infer_node("MaxUnpool", 11, NULL, 0, in5, NULL, 2, out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "kernel_shape"));
}

/* ------------------------------------------------------------------ reductions vs naive loop */

typedef enum { N_SUM, N_MEAN, N_MAX, N_MIN, N_PROD, N_L1, N_L2, N_LOGSUM, N_LSE, N_SSQ } nop;
static const char *nop_names[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                  "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

static void naive_reduce(nop op, const float *x, const int64_t *dims, int rank, const bool *red,
                         double *out, size_t n_out) {
  size_t numel = 1;
  for (int d = 0; d < rank; d++) numel *= (size_t)dims[d];
  double *acc = calloc(n_out, sizeof *acc), *mx = calloc(n_out, sizeof *mx);
  size_t cnt = numel / (n_out ? n_out : 1);
  for (size_t i = 0; i < n_out; i++) {
    acc[i] = op == N_PROD ? 1 : op == N_MAX ? -INFINITY : op == N_MIN ? INFINITY : 0;
    mx[i] = -INFINITY;
  }
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < numel; i++) {
      size_t rem = i, o = 0, ostride = 1;
      for (int d = rank - 1; d >= 0; d--) {
        size_t idx = rem % (size_t)dims[d];
        rem /= (size_t)dims[d];
        if (!red[d]) {
          o += idx * ostride;
          ostride *= (size_t)dims[d];
        }
      }
      double v = x[i];
      if (pass == 0) {
        if (v > mx[o]) mx[o] = v;
        continue;
      }
      switch (op) {
        case N_SUM: case N_MEAN: case N_LOGSUM: acc[o] += v; break;
        case N_MAX: acc[o] = v > acc[o] ? v : acc[o]; break;
        case N_MIN: acc[o] = v < acc[o] ? v : acc[o]; break;
        case N_PROD: acc[o] *= v; break;
        case N_L1: acc[o] += fabs(v); break;
        case N_L2: case N_SSQ: acc[o] += v * v; break;
        case N_LSE: acc[o] += exp(v - mx[o]); break;
      }
    }
  }
  for (size_t i = 0; i < n_out; i++) {
    double v = acc[i];
    if (op == N_MEAN) v /= (double)cnt;
    if (op == N_L2) v = sqrt(v);
    if (op == N_LOGSUM) v = log(v);
    if (op == N_LSE) v = mx[i] + log(v);
    out[i] = v;
  }
  free(acc);
  free(mx);
}

static void test_reduce_random(void **unused) {
  (void)unused;
  for (int iter = 0; iter < 300; iter++) {
    int rank = 1 + (int)(rnd() % 4);
    int64_t dims[4];
    size_t numel = 1;
    for (int d = 0; d < rank; d++) {
      dims[d] = 1 + (int64_t)(rnd() % 5);
      numel *= (size_t)dims[d];
    }
    float *x = malloc(numel * sizeof *x);
    for (size_t i = 0; i < numel; i++) x[i] = rndf() + (iter % 10 == N_PROD ? 1.0f : 0.0f);
    bool red[4] = {false};
    int64_t axes[4];
    size_t na = 0;
    for (int d = 0; d < rank; d++)
      if (rnd() % 2) {
        red[d] = true;
        axes[na++] = (rnd() % 2) ? d : d - rank;
      }
    if (na == 0)
      for (int d = 0; d < rank; d++) red[d] = true;
    nop op = (nop)(iter % 10);
    bool keep = rnd() % 2;
    bool new_style = rnd() % 2;
    int64_t opset = new_style ? 18 : 11;
    size_t n_out = 1;
    for (int d = 0; d < rank; d++)
      if (!red[d]) n_out *= (size_t)dims[d];
    double *ref = malloc(n_out * sizeof *ref);
    naive_reduce(op, x, dims, rank, red, ref, n_out);
    ge_tensor *xt = ge_test_tensor_f32(dims, (size_t)rank, x);
    ge_tensor *at = NULL;
    ge_attr attrs[2];
    size_t n_attrs = 0;
    attrs[n_attrs++] = GE_ATTR_INT("keepdims", keep);
    if (!new_style && na) attrs[n_attrs++] = GE_ATTR_INTS("axes", axes, na);
    int64_t nad = (int64_t)na;
    if (new_style && na) at = ge_test_tensor_i64(&nad, 1, axes);
    ge_tensor *ins[] = {xt, at};
    ge_tensor *out = NULL;
    run_ok(nop_names[op], opset, attrs, n_attrs, ins, at ? 2 : 1, &out, 1);
    assert_int_equal(out->rank, keep ? rank : rank - (int)(na ? na : (size_t)rank));
    ge_test_assert_close_f64(out, ref, n_out, 1e-5, 1e-4);
    ge_tensor_free(out);
    ge_tensor_free(xt);
    ge_tensor_free(at);
    free(ref);
    free(x);
  }
}

static void test_reduce_dtypes(void **unused) {
  (void)unused;
  int64_t d[] = {2, 3};
  ge_tensor *out = NULL;
  /* int32 sum over axis 1, opset 13 axes input */
  ge_tensor *xi = ge_test_tensor_i32(d, 2, (int32_t[]){1, 2, 3, -4, 5, 6});
  int64_t one = 1;
  ge_tensor *ax = ge_test_tensor_i64(&one, 1, (int64_t[]){1});
  ge_tensor *in[] = {xi, ax};
  ge_attr nk[] = {GE_ATTR_INT("keepdims", 0)};
  run_ok("ReduceSum", 13, nk, 1, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_I32, (int64_t[]){2}, 1);
  ge_test_assert_ints(out, (int64_t[]){6, 7}, 2);
  ge_tensor_free(out);
  run_ok("ReduceMin", 18, nk, 1, in, 2, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){1, -4}, 2);
  ge_tensor_free(out);
  run_ok("ReduceProd", 18, nk, 1, in, 2, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){6, -120}, 2);
  ge_tensor_free(out);
  run_ok("ReduceMean", 18, nk, 1, in, 2, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){2, 2}, 2);
  ge_tensor_free(out);
  ge_tensor_free(xi);
  /* int64 max keeps exact large values */
  int64_t big = INT64_C(9007199254740993);
  ge_tensor *x64 = ge_test_tensor_i64(d, 2, (int64_t[]){big, 1, 2, 3, big - 1, 5});
  in[0] = x64;
  ge_attr a0[] = {GE_ATTR_INTS("axes", (int64_t[]){0}, 1), GE_ATTR_INT("keepdims", 0)};
  run_ok("ReduceMax", 11, a0, 2, in, 1, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){big, big - 1, 5}, 3);
  ge_tensor_free(out);
  ge_tensor_free(x64);
  /* uint8 min over all, float16 sum */
  ge_tensor *xu = ge_test_tensor(GE_U8, d, 2, (uint8_t[]){200, 7, 255, 9, 8, 100});
  in[0] = xu;
  run_ok("ReduceMin", 18, nk, 1, in, 1, &out, 1);
  ge_test_assert_shape(out, GE_U8, NULL, 0);
  ge_test_assert_ints(out, (int64_t[]){7}, 1);
  ge_tensor_free(out);
  run_ok("ReduceSumSquare", 18, nk, 1, in, 1, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){(200 * 200 + 49 + 255 * 255 + 81 + 64 + 10000) & 255}, 1);
  ge_tensor_free(out);
  ge_tensor_free(xu);
  ge_tensor *xh = ge_test_tensor_from_f32(GE_F16, d, 2, (float[]){0.5f, 1, 1.5f, 2, 2.5f, 3});
  in[0] = xh;
  run_ok("ReduceSum", 13, nk, 1, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_F16, (int64_t[]){2}, 1);
  ge_test_assert_close(out, (float[]){3, 7.5f}, 2, 0, 0);
  ge_tensor_free(out);
  run_ok("ReduceLogSumExp", 18, nk, 1, in, 2, &out, 1);
  ge_test_assert_close(out, (float[]){(float)log(exp(0.5) + exp(1) + exp(1.5)),
                                      (float)log(exp(2) + exp(2.5) + exp(3))}, 2, 1e-2f, 1e-3f);
  ge_tensor_free(out);
  ge_tensor_free(xh);
  ge_tensor_free(ax);
  /* noop_with_empty_axes, and an empty reduction giving the identity */
  ge_tensor *xf = ge_test_tensor_f32(d, 2, (float[]){1, 2, 3, 4, 5, 6});
  in[0] = xf;
  ge_attr noop[] = {GE_ATTR_INT("noop_with_empty_axes", 1)};
  run_ok("ReduceL1", 18, noop, 1, in, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, d, 2);
  ge_test_assert_close(out, (float[]){1, 2, 3, 4, 5, 6}, 6, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(xf);
  int64_t de[] = {2, 0};
  ge_tensor *xe = ge_test_tensor_f32(de, 2, NULL);
  ge_tensor *xei = ge_test_tensor_i32(de, 2, NULL);
  ge_tensor *ax1 = ge_test_tensor_i64(&one, 1, (int64_t[]){1});
  ge_tensor *ine[] = {xe, ax1};
  run_ok("ReduceMax", 18, nk, 1, ine, 2, &out, 1);
  ge_test_assert_close(out, (float[]){-INFINITY, -INFINITY}, 2, 0, 0);
  ge_tensor_free(out);
  run_ok("ReduceProd", 18, nk, 1, ine, 2, &out, 1);
  ge_test_assert_close(out, (float[]){1, 1}, 2, 0, 0);
  ge_tensor_free(out);
  ine[0] = xei;
  run_ok("ReduceMin", 18, nk, 1, ine, 2, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){INT32_MAX, INT32_MAX}, 2);
  ge_tensor_free(out);
  ge_tensor_free(xe);
  ge_tensor_free(xei);
  ge_tensor_free(ax1);
}

/* ------------------------------------------------------------------ other ops */

static void test_arg_cumsum(void **unused) {
  (void)unused;
  int64_t d[] = {2, 3};
  ge_tensor *x = ge_test_tensor_f32(d, 2, (float[]){1, 5, 5, 7, 2, 7});
  ge_tensor *out = NULL;
  ge_attr a[] = {GE_ATTR_INT("axis", 1), GE_ATTR_INT("keepdims", 0),
                 GE_ATTR_INT("select_last_index", 1)};
  run_ok("ArgMax", 13, a, 2, &x, 1, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){1, 0}, 2);
  ge_tensor_free(out);
  run_ok("ArgMax", 13, a, 3, &x, 1, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){2, 2}, 2);
  ge_tensor_free(out);
  run_ok("ArgMin", 11, a, 1, &x, 1, &out, 1); /* keepdims default 1 */
  ge_test_assert_shape(out, GE_I64, (int64_t[]){2, 1}, 2);
  ge_test_assert_ints(out, (int64_t[]){0, 1}, 2);
  ge_tensor_free(out);
  /* CumSum along axis 0 / 1, exclusive + reverse */
  int64_t one = 1;
  ge_tensor *ax = ge_test_tensor_i32(&one, 0, (int32_t[]){1});
  ge_tensor *in[] = {x, ax};
  run_ok("CumSum", 14, NULL, 0, in, 2, &out, 1);
  ge_test_assert_close(out, (float[]){1, 6, 11, 7, 9, 16}, 6, 0, 0);
  ge_tensor_free(out);
  ge_attr er[] = {GE_ATTR_INT("exclusive", 1), GE_ATTR_INT("reverse", 1)};
  run_ok("CumSum", 14, er, 2, in, 2, &out, 1);
  ge_test_assert_close(out, (float[]){10, 5, 0, 9, 7, 0}, 6, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(ax);
  ge_tensor_free(x);
}

static int cmp_desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

static void test_topk_random(void **unused) {
  (void)unused;
  for (int iter = 0; iter < 50; iter++) {
    int64_t n = 1 + (int64_t)(rnd() % 40), rows = 1 + (int64_t)(rnd() % 4);
    int64_t k = (int64_t)(rnd() % (uint32_t)(n + 1));
    int64_t d[] = {n, rows}; /* top-k along axis 0 (strided) */
    float *x = malloc((size_t)(n * rows) * sizeof *x);
    for (int64_t i = 0; i < n * rows; i++) x[i] = (float)(rnd() % 10); /* many ties */
    ge_tensor *xt = ge_test_tensor_f32(d, 2, x);
    int64_t one = 1;
    ge_tensor *kt = ge_test_tensor_i64(&one, 1, &k);
    ge_tensor *in[] = {xt, kt};
    ge_tensor *out[2];
    ge_attr a[] = {GE_ATTR_INT("axis", 0)};
    run_ok("TopK", 11, a, 1, in, 2, out, 2);
    ge_test_assert_shape(out[0], GE_F32, (int64_t[]){k, rows}, 2);
    for (int64_t r = 0; r < rows; r++) {
      float *col = malloc((size_t)n * sizeof *col);
      for (int64_t i = 0; i < n; i++) col[i] = x[i * rows + r];
      qsort(col, (size_t)n, sizeof *col, cmp_desc);
      const float *v = out[0]->data;
      const int64_t *ix = out[1]->data;
      for (int64_t q = 0; q < k; q++) {
        assert_true(v[q * rows + r] == col[q]);
        assert_true(x[ix[q * rows + r] * rows + r] == col[q]);
        if (q > 0 && v[q * rows + r] == v[(q - 1) * rows + r])
          assert_true(ix[q * rows + r] > ix[(q - 1) * rows + r]); /* ties: lower index first */
      }
      free(col);
    }
    ge_tensor_free(out[0]);
    ge_tensor_free(out[1]);
    ge_tensor_free(xt);
    ge_tensor_free(kt);
    free(x);
  }
}

static void test_unique_det_misc(void **unused) {
  (void)unused;
  int64_t d6 = 6;
  ge_tensor *x = ge_test_tensor_f32(&d6, 1, (float[]){2, 1, 1, 3, 4, 3});
  ge_tensor *out[4];
  ge_attr uns[] = {GE_ATTR_INT("sorted", 0)};
  run_ok("Unique", 11, uns, 1, &x, 1, out, 4);
  ge_test_assert_close(out[0], (float[]){2, 1, 3, 4}, 4, 0, 0);
  ge_test_assert_ints(out[1], (int64_t[]){0, 1, 3, 4}, 4);
  ge_test_assert_ints(out[2], (int64_t[]){0, 1, 1, 2, 3, 2}, 6);
  ge_test_assert_ints(out[3], (int64_t[]){1, 2, 2, 1}, 4);
  for (int i = 0; i < 4; i++) ge_tensor_free(out[i]);
  ge_tensor_free(x);
  /* strings */
  const char *sv[] = {"b", "a", "b", "c"};
  int64_t d4 = 4;
  ge_tensor *xs = ge_test_tensor(GE_STRING, &d4, 1, sv);
  run_ok("Unique", 11, NULL, 0, &xs, 1, out, 1);
  assert_int_equal(out[0]->numel, 3);
  assert_string_equal(((char **)out[0]->data)[0], "a");
  assert_string_equal(((char **)out[0]->data)[2], "c");
  ge_tensor_free(out[0]);
  ge_tensor_free(xs);
  /* Det of a batch */
  int64_t dd[] = {2, 3, 3};
  ge_tensor *m = ge_test_tensor_f64(dd, 3, (double[]){2, 0, 0, 0, 3, 0, 0, 0, 4,
                                                      0, 1, 2, 1, 0, 3, 4, -3, 8});
  run_ok("Det", 11, NULL, 0, &m, 1, out, 1);
  ge_test_assert_close_f64(out[0], (double[]){24, -2}, 2, 1e-12, 1e-12);
  ge_tensor_free(out[0]);
  ge_tensor_free(m);
  /* Shrink on int8, LpNormalization p=1 */
  int64_t d5 = 5;
  ge_tensor *xi = ge_test_tensor(GE_I8, &d5, 1, (int8_t[]){-3, -1, 0, 1, 3});
  ge_attr sa[] = {GE_ATTR_FLOAT("lambd", 1.5f), GE_ATTR_FLOAT("bias", 1.0f)};
  run_ok("Shrink", 9, sa, 2, &xi, 1, out, 1);
  ge_test_assert_ints(out[0], (int64_t[]){-2, 0, 0, 0, 2}, 5);
  ge_tensor_free(out[0]);
  ge_tensor_free(xi);
  int64_t d2[] = {2, 2};
  ge_tensor *xl = ge_test_tensor_f32(d2, 2, (float[]){1, 3, -2, 2});
  ge_attr la[] = {GE_ATTR_INT("p", 1), GE_ATTR_INT("axis", 0)};
  run_ok("LpNormalization", 7, la, 2, &xl, 1, out, 1);
  ge_test_assert_close(out[0], (float[]){1.0f / 3, 0.6f, -2.0f / 3, 0.4f}, 4, 1e-6f, 0);
  ge_tensor_free(out[0]);
  ge_tensor_free(xl);
}

static void test_resize_old_opsets(void **unused) {
  (void)unused;
  int64_t d[] = {1, 1, 2, 2};
  ge_tensor *x = ge_test_tensor_f32(d, 4, (float[]){1, 2, 3, 4});
  ge_tensor *out = NULL;
  float sc[] = {1, 1, 2, 3};
  ge_attr a7[] = {GE_ATTR_STRING("mode", "nearest"), GE_ATTR_FLOATS("scales", sc, 4)};
  const float expect[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  run_ok("Upsample", 7, a7, 2, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1, 1, 4, 6}, 4);
  ge_test_assert_close(out, expect, 24, 0, 0);
  ge_tensor_free(out);
  int64_t four = 4;
  ge_tensor *st = ge_test_tensor_f32(&four, 1, sc);
  ge_tensor *in[] = {x, st};
  run_ok("Upsample", 9, a7, 1, in, 2, &out, 1);
  ge_test_assert_close(out, expect, 24, 0, 0);
  ge_tensor_free(out);
  run_ok("Resize", 10, a7, 1, in, 2, &out, 1);
  ge_test_assert_close(out, expect, 24, 0, 0);
  ge_tensor_free(out);
  /* linear, asymmetric (opset 10), uint8 */
  ge_tensor *xu = ge_test_tensor(GE_U8, d, 4, (uint8_t[]){10, 20, 30, 40});
  float s2[] = {1, 1, 2, 2};
  ge_tensor *st2 = ge_test_tensor_f32(&four, 1, s2);
  ge_tensor *in2[] = {xu, st2};
  ge_attr lin[] = {GE_ATTR_STRING("mode", "linear")};
  run_ok("Resize", 10, lin, 1, in2, 2, &out, 1);
  ge_test_assert_shape(out, GE_U8, (int64_t[]){1, 1, 4, 4}, 4);
  ge_test_assert_ints(out, (int64_t[]){10, 15, 20, 20, 20, 25, 30, 30, 30, 35, 40, 40, 30, 35, 40, 40}, 16);
  ge_tensor_free(out);
  ge_tensor_free(xu);
  ge_tensor_free(st2);
  ge_tensor_free(st);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ onnx node cases */

typedef struct pattr {
  char name[64];
  char s[64];
  ge_attr_kind kind;
  int64_t i;
  float f;
  int64_t ints[64];
  float floats[64];
  size_t n;
} pattr;

static bool dtype_by_name(const char *s, ge_dtype *dt) {
  for (int d = 0; d < GE_DTYPE_COUNT; d++)
    if (!strcmp(ge_dtype_name((ge_dtype)d), s)) {
      *dt = (ge_dtype)d;
      return true;
    }
  return false;
}

static bool next_tok(FILE *f, char *buf, size_t cap) {
  char fmt[16];
  snprintf(fmt, sizeof fmt, "%%%zus", cap - 1);
  return fscanf(f, fmt, buf) == 1;
}

/* Reads "<dtype> <rank> dims... values..." (after the in/out keyword); NULL for "none". */
static ge_tensor *read_tensor(FILE *f, double **expect_f, int64_t **expect_i, uint64_t **expect_u) {
  char tok[128];
  if (!next_tok(f, tok, sizeof tok)) fail_msg("truncated case file");
  if (!strcmp(tok, "none")) return NULL;
  ge_dtype dt = GE_F32;
  if (!dtype_by_name(tok, &dt)) fail_msg("unknown dtype %s", tok);
  int rank;
  if (fscanf(f, "%d", &rank) != 1) fail_msg("bad rank");
  int64_t dims[GE_MAX_RANK];
  size_t numel = 1;
  for (int d = 0; d < rank; d++) {
    long long v;
    if (fscanf(f, "%lld", &v) != 1) fail_msg("bad dim");
    dims[d] = v;
    numel *= (size_t)v;
  }
  ge_tensor *t = ge_test_tensor(dt, dims, (size_t)rank, NULL);
  double *ef = calloc(numel + 1, sizeof *ef);
  int64_t *ei = calloc(numel + 1, sizeof *ei);
  uint64_t *eu = calloc(numel + 1, sizeof *eu);
  for (size_t i = 0; i < numel; i++) {
    if (!next_tok(f, tok, sizeof tok)) fail_msg("truncated values");
    if (ge_dtype_is_float(dt)) {
      double v = strtod(tok, NULL);
      ef[i] = v;
      switch (dt) {
        case GE_F32: ((float *)t->data)[i] = (float)v; break;
        case GE_F64: ((double *)t->data)[i] = v; break;
        case GE_F16: ((uint16_t *)t->data)[i] = ge_f32_to_f16((float)v); break;
        default: ((uint16_t *)t->data)[i] = ge_f32_to_bf16((float)v); break;
      }
    } else {
      int64_t v = strtoll(tok, NULL, 10);
      uint64_t u = strtoull(tok, NULL, 10);
      ei[i] = v;
      eu[i] = u;
      switch (dt) {
        case GE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
        case GE_I16: ((int16_t *)t->data)[i] = (int16_t)v; break;
        case GE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
        case GE_I64: ((int64_t *)t->data)[i] = v; break;
        case GE_U8: case GE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)u; break;
        case GE_U16: ((uint16_t *)t->data)[i] = (uint16_t)u; break;
        case GE_U32: ((uint32_t *)t->data)[i] = (uint32_t)u; break;
        case GE_U64: ((uint64_t *)t->data)[i] = u; break;
        default: break;
      }
    }
  }
  if (expect_f) *expect_f = ef; else free(ef);
  if (expect_i) *expect_i = ei; else free(ei);
  if (expect_u) *expect_u = eu; else free(eu);
  return t;
}

/* Compares without failing the test; returns a description of the first difference or NULL. */
static const char *compare(const ge_tensor *got, const ge_tensor *exp, const double *ef,
                           const int64_t *ei, const uint64_t *eu, char *msg, size_t cap) {
  if (got->dtype != exp->dtype) {
    snprintf(msg, cap, "dtype %s, expected %s", ge_dtype_name(got->dtype), ge_dtype_name(exp->dtype));
    return msg;
  }
  if (got->rank != exp->rank || memcmp(got->dims, exp->dims, (size_t)got->rank * sizeof(int64_t))) {
    snprintf(msg, cap, "shape differs (rank %d vs %d)", (int)got->rank, (int)exp->rank);
    return msg;
  }
  double atol = 1e-5, rtol = 1e-3;
  if (got->dtype == GE_F16 || got->dtype == GE_BF16) atol = rtol = 1e-2;
  for (size_t i = 0; i < got->numel; i++) {
    if (ge_dtype_is_float(got->dtype)) {
      double g = ge_tensor_get_f64(got, i), e = ef[i];
      if (got->dtype == GE_F32) e = (float)e;
      bool ok = (g != g && e != e) || g == e || fabs(g - e) <= atol + rtol * fabs(e);
      if (!ok) {
        snprintf(msg, cap, "element %zu: %.9g, expected %.9g", i, g, e);
        return msg;
      }
    } else if (got->dtype == GE_U64) {
      if (((const uint64_t *)got->data)[i] != eu[i]) {
        snprintf(msg, cap, "element %zu differs", i);
        return msg;
      }
    } else if (ge_tensor_get_i64(got, i) != ei[i]) {
      snprintf(msg, cap, "element %zu: %lld, expected %lld", i, (long long)ge_tensor_get_i64(got, i),
               (long long)ei[i]);
      return msg;
    }
  }
  return NULL;
}

/* Runs every case of a case file; returns the number of failures (each is printed). */
static int run_case_file(const char *path, int *n_run) {
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  char tok[256];
  int n_cases = 0, n_fail = 0;
  while (next_tok(f, tok, sizeof tok) && strcmp(tok, "end")) {
    if (strcmp(tok, "case")) fail_msg("expected 'case', got '%s'", tok);
    char name[160], op[64];
    long long opset;
    int na, ni, no;
    if (fscanf(f, "%159s %63s %lld %d %d %d", name, op, &opset, &na, &ni, &no) != 6)
      fail_msg("bad case header");
    pattr *pa = calloc((size_t)na + 1, sizeof *pa);
    ge_attr *attrs = calloc((size_t)na + 1, sizeof *attrs);
    for (int a = 0; a < na; a++) {
      char kind[16];
      if (fscanf(f, "%*s %63s %15s", pa[a].name, kind) != 2) fail_msg("bad attr");
      if (!strcmp(kind, "i")) {
        long long v;
        if (fscanf(f, "%lld", &v) != 1) fail_msg("bad int attr");
        attrs[a] = GE_ATTR_INT(pa[a].name, v);
      } else if (!strcmp(kind, "f")) {
        if (!next_tok(f, tok, sizeof tok)) fail_msg("bad float attr");
        pa[a].f = strtof(tok, NULL);
        attrs[a] = GE_ATTR_FLOAT(pa[a].name, pa[a].f);
      } else if (!strcmp(kind, "s")) {
        if (fscanf(f, "%63s", pa[a].s) != 1) fail_msg("bad string attr");
        attrs[a] = GE_ATTR_STRING(pa[a].name, pa[a].s);
      } else if (!strcmp(kind, "ints") || !strcmp(kind, "floats")) {
        if (fscanf(f, "%zu", &pa[a].n) != 1 || pa[a].n > 64) fail_msg("bad list attr");
        for (size_t k = 0; k < pa[a].n; k++) {
          if (!next_tok(f, tok, sizeof tok)) fail_msg("bad list attr");
          if (kind[0] == 'i') pa[a].ints[k] = strtoll(tok, NULL, 10);
          else pa[a].floats[k] = strtof(tok, NULL);
        }
        attrs[a] = kind[0] == 'i' ? GE_ATTR_INTS(pa[a].name, pa[a].ints, pa[a].n)
                                  : GE_ATTR_FLOATS(pa[a].name, pa[a].floats, pa[a].n);
      } else {
        fail_msg("unknown attr kind %s", kind);
      }
    }
    ge_tensor *ins[16] = {0}, *exp[8] = {0}, *got[8] = {0};
    double *ef[8] = {0};
    int64_t *ei[8] = {0};
    uint64_t *eu[8] = {0};
    for (int i = 0; i < ni; i++) {
      if (!next_tok(f, tok, sizeof tok)) fail_msg("truncated");
      ins[i] = read_tensor(f, NULL, NULL, NULL);
    }
    for (int i = 0; i < no; i++) {
      if (!next_tok(f, tok, sizeof tok)) fail_msg("truncated");
      exp[i] = read_tensor(f, &ef[i], &ei[i], &eu[i]);
    }
    n_cases++;
    ge_status st = ge_test_run_node(op, opset, attrs, (size_t)na, ins, (size_t)ni, got, (size_t)no);
    char msg[256];
    const char *why = NULL;
    if (st != GE_OK) {
      snprintf(msg, sizeof msg, "%s", ge_last_error());
      why = msg;
    }
    for (int i = 0; !why && i < no; i++)
      if (exp[i]) why = compare(got[i], exp[i], ef[i], ei[i], eu[i], msg, sizeof msg);
    if (why) {
      n_fail++;
      print_message("FAIL %s (%s opset %lld): %s\n", name, op, opset, why);
    }
    for (int i = 0; i < ni; i++) ge_tensor_free(ins[i]);
    for (int i = 0; i < no; i++) {
      ge_tensor_free(exp[i]);
      ge_tensor_free(got[i]);
      free(ef[i]);
      free(ei[i]);
      free(eu[i]);
    }
    free(pa);
    free(attrs);
  }
  fclose(f);
  print_message("%s: %d run, %d failed\n", path, n_cases, n_fail);
  *n_run = n_cases;
  return n_fail;
}

static void test_onnx_node_cases(void **unused) {
  (void)unused;
  int n = 0;
  assert_int_equal(run_case_file(GE_SOURCE_DIR "/tests/unit/data/reduce_node_cases.txt", &n), 0);
  assert_true(n > 150);
}

/* Random cases with onnxruntime's outputs: older opsets, more dtypes, every Resize mode. */
static void test_ort_cases(void **unused) {
  (void)unused;
  int n = 0;
  assert_int_equal(run_case_file(GE_SOURCE_DIR "/tests/unit/data/reduce_ort_cases.txt", &n), 0);
  assert_true(n > 500);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduce_infer),      cmocka_unit_test(test_misc_infer),
      cmocka_unit_test(test_extra_infer),
      cmocka_unit_test(test_reduce_random),     cmocka_unit_test(test_reduce_dtypes),
      cmocka_unit_test(test_arg_cumsum),        cmocka_unit_test(test_topk_random),
      cmocka_unit_test(test_unique_det_misc),   cmocka_unit_test(test_resize_old_opsets),
      cmocka_unit_test(test_onnx_node_cases),   cmocka_unit_test(test_ort_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
