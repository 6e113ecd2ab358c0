/* Shape family: inference (incl. symbolic/unknown dims and error messages) and CPU kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

#define N_(a) (sizeof(a) / sizeof((a)[0]))
#define SYM_N GE_DIM_SYM(0)
#define SYM_S GE_DIM_SYM(1)

/* ------------------------------------------------------------------ helpers */

static void run1(const char *op, int64_t opset, const ge_attr *attrs, size_t na, ge_tensor *const *in,
                 size_t n_in, ge_tensor **out) {
  ge_status st = ge_test_run_node(op, opset, attrs, na, in, n_in, out, 1);
  if (st != GE_OK) fail_msg("%s failed: %s", op, ge_last_error());
}

static void free_all(ge_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ge_tensor_free(t[i]);
}

static ge_tensor *i64v(const int64_t *v, int64_t n) { return ge_test_tensor_i64(&n, 1, v); }

static ge_tensor *arange_f32(const int64_t *dims, size_t rank) {
  ge_tensor *t = ge_test_tensor(GE_F32, dims, rank, NULL);
  float *p = t->data;
  for (size_t i = 0; i < t->numel; i++) p[i] = (float)i;
  return t;
}

static ge_tensor *str_tensor(const int64_t *dims, size_t rank, const char *const *vals) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_STRING, dims, rank, &t), GE_OK);
  for (size_t i = 0; i < t->numel; i++) assert_int_equal(ge_tensor_set_string(t, i, vals[i]), GE_OK);
  return t;
}

static void assert_strs(const ge_tensor *t, const char *const *want, size_t n) {
  assert_int_equal(t->dtype, GE_STRING);
  assert_int_equal(t->numel, n);
  char *const *p = t->data;
  for (size_t i = 0; i < n; i++) assert_string_equal(p[i] ? p[i] : "", want[i]);
}

static void assert_dims(const ge_type *t, const int64_t *dims, int rank) {
  assert_int_equal(t->shape.rank, rank);
  for (int i = 0; i < rank; i++) assert_int_equal(t->shape.dims[i], dims[i]);
}

/* ------------------------------------------------------------------ Reshape */

static void test_reshape_kernel(void **state) {
  int64_t d[] = {2, 3};
  ge_tensor *in[2] = {arange_f32(d, 2), i64v((int64_t[]){3, -1}, 2)}, *out = NULL;
  run1("Reshape", 14, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3, 2}, 2);
  ge_test_assert_close(out, (float[]){0, 1, 2, 3, 4, 5}, 6, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(in[1]);
  /* 0 copies the input dim */
  in[1] = i64v((int64_t[]){0, 3, 1}, 3);
  run1("Reshape", 14, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 3, 1}, 3);
  ge_tensor_free(out);
  ge_tensor_free(in[1]);
  /* allowzero=1 with an empty input */
  int64_t dz[] = {0, 3};
  ge_tensor_free(in[0]);
  in[0] = ge_test_tensor(GE_F32, dz, 2, NULL);
  in[1] = i64v((int64_t[]){3, 0}, 2);
  ge_attr az = GE_ATTR_INT("allowzero", 1);
  run1("Reshape", 14, &az, 1, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3, 0}, 2);
  ge_tensor_free(out);
  free_all(in, 2);
}

static void test_reshape_infer(void **state) {
  ge_type x = ge_test_type(GE_F32, (int64_t[]){SYM_N, SYM_S, 768}, 3);
  ge_type sh = ge_test_type(GE_I64, (int64_t[]){4}, 1);
  ge_tensor *v = i64v((int64_t[]){0, 0, 12, 64}, 4);
  const ge_type *ts[] = {&x, &sh};
  const ge_tensor *vs[] = {NULL, v};
  ge_type out;
  assert_int_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_F32);
  assert_dims(&out, (int64_t[]){SYM_N, SYM_S, 12, 64}, 4);
  ge_tensor_free(v);
  /* -1 resolves to a symbol: [N,S,12,64] -> [0,-1,768]... */
  ge_type x2 = ge_test_type(GE_F32, (int64_t[]){SYM_N, SYM_S, 12, 64}, 4);
  sh = ge_test_type(GE_I64, (int64_t[]){3}, 1);
  v = i64v((int64_t[]){0, -1, 768}, 3);
  ts[0] = &x2;
  vs[1] = v;
  assert_int_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_OK);
  assert_dims(&out, (int64_t[]){SYM_N, SYM_S, 768}, 3);
  ge_tensor_free(v);
  /* -1 with known dims */
  ge_type x3 = ge_test_type(GE_F32, (int64_t[]){4, 6}, 2);
  v = i64v((int64_t[]){-1, 8}, 2);
  ts[0] = &x3;
  vs[1] = v;
  sh = ge_test_type(GE_I64, (int64_t[]){2}, 1);
  assert_int_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_OK);
  assert_dims(&out, (int64_t[]){3, 8}, 2);
  ge_tensor_free(v);
  /* value unknown: rank from the shape input's length */
  vs[1] = NULL;
  assert_int_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_OK);
  assert_dims(&out, (int64_t[]){-1, -1}, 2);
  /* mismatch is an error naming the node */
  v = i64v((int64_t[]){5, 5}, 2);
  vs[1] = v;
  assert_int_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(v);
  /* two -1 */
  v = i64v((int64_t[]){-1, -1}, 2);
  vs[1] = v;
  assert_int_not_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_OK);
  ge_tensor_free(v);
  /* unknown input rank and dtype */
  ge_type xu = ge_test_type(GE_DTYPE_COUNT, NULL, -1);
  ts[0] = &xu;
  vs[1] = NULL;
  assert_int_equal(ge_test_infer_node("Reshape", 14, NULL, 0, ts, vs, 2, &out, 1), GE_OK);
  assert_int_equal(out.dtype, GE_DTYPE_COUNT);
}

/* ------------------------------------------------------------------ Shape, Size */

static void test_shape_size(void **state) {
  int64_t d[] = {2, 3, 4};
  ge_tensor *x = arange_f32(d, 3), *out = NULL;
  run1("Shape", 13, NULL, 0, &x, 1, &out);
  ge_test_assert_ints(out, (int64_t[]){2, 3, 4}, 3);
  ge_tensor_free(out);
  ge_attr a[] = {GE_ATTR_INT("start", 1), GE_ATTR_INT("end", -1)};
  run1("Shape", 15, a, 2, &x, 1, &out);
  ge_test_assert_ints(out, (int64_t[]){3}, 1);
  ge_tensor_free(out);
  run1("Size", 13, NULL, 0, &x, 1, &out);
  ge_test_assert_shape(out, GE_I64, NULL, 0);
  ge_test_assert_ints(out, (int64_t[]){24}, 1);
  ge_tensor_free(out);
  ge_tensor_free(x);
  ge_type t = ge_test_type(GE_F32, (int64_t[]){SYM_N, 3}, 2), o;
  const ge_type *ts[] = {&t};
  assert_int_equal(ge_test_infer_node("Shape", 15, NULL, 0, ts, NULL, 1, &o, 1), GE_OK);
  assert_int_equal(o.dtype, GE_I64);
  assert_dims(&o, (int64_t[]){2}, 1);
}

/* ------------------------------------------------------------------ Transpose */

static void check_transpose(ge_dtype dt, const int64_t *dims, int r, const int64_t *perm) {
  ge_tensor *x = ge_test_tensor(dt, dims, (size_t)r, NULL), *out = NULL;
  size_t es = ge_dtype_size(dt);
  for (size_t i = 0; i < x->numel; i++) {
    uint64_t v = (uint64_t)(i * 2654435761u);
    memcpy((char *)x->data + i * es, &v, es);
  }
  ge_attr a = GE_ATTR_INTS("perm", perm, (size_t)r);
  run1("Transpose", 13, &a, 1, &x, 1, &out);
  int64_t od[GE_MAX_RANK], istr[GE_MAX_RANK], idx[GE_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) od[i] = dims[perm[i]];
  ge_test_assert_shape(out, dt, od, (size_t)r);
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) istr[i] = s, s *= dims[i];
  for (size_t o = 0; o < out->numel; o++) {
    int64_t src = 0;
    for (int i = 0; i < r; i++) src += idx[i] * istr[perm[i]];
    if (memcmp((char *)out->data + o * es, (char *)x->data + (size_t)src * es, es)) fail_msg("mismatch at %zu", o);
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < od[i]) break;
      idx[i] = 0;
    }
  }
  ge_tensor_free(out);
  ge_tensor_free(x);
}

static void test_transpose(void **state) {
  check_transpose(GE_F32, (int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){0, 2, 3, 1});
  check_transpose(GE_F32, (int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){3, 1, 0, 2});
  check_transpose(GE_U8, (int64_t[]){67, 45}, 2, (int64_t[]){1, 0});
  check_transpose(GE_F16, (int64_t[]){3, 40, 33}, 3, (int64_t[]){0, 2, 1});
  check_transpose(GE_I64, (int64_t[]){5, 1, 7}, 3, (int64_t[]){2, 1, 0});
  check_transpose(GE_F64, (int64_t[]){2, 0, 3}, 3, (int64_t[]){2, 0, 1});
  /* default perm reverses; strings */
  const char *sv[] = {"a", "b", "c", "d", "e", "f"};
  ge_tensor *x = str_tensor((int64_t[]){2, 3}, 2, sv), *out = NULL;
  run1("Transpose", 13, NULL, 0, &x, 1, &out);
  assert_strs(out, (const char *[]){"a", "d", "b", "e", "c", "f"}, 6);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* inference permutes symbols; bad perm names the node */
  ge_type t = ge_test_type(GE_F32, (int64_t[]){SYM_N, SYM_S, 8}, 3), o;
  const ge_type *ts[] = {&t};
  ge_attr a = GE_ATTR_INTS("perm", ((int64_t[]){1, 2, 0}), 3);
  assert_int_equal(ge_test_infer_node("Transpose", 13, &a, 1, ts, NULL, 1, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_S, 8, SYM_N}, 3);
  ge_attr bad = GE_ATTR_INTS("perm", ((int64_t[]){1, 1, 0}), 3);
  assert_int_not_equal(ge_test_infer_node("Transpose", 13, &bad, 1, ts, NULL, 1, &o, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
}

/* ------------------------------------------------------------------ Concat, Split */

static void test_concat(void **state) {
  ge_tensor *in[3] = {arange_f32((int64_t[]){2, 1}, 2), ge_test_tensor(GE_F32, (int64_t[]){2, 0}, 2, NULL),
                      arange_f32((int64_t[]){2, 2}, 2)};
  ge_tensor *out = NULL;
  ge_attr a = GE_ATTR_INT("axis", -1);
  run1("Concat", 13, &a, 1, in, 3, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 3}, 2);
  ge_test_assert_close(out, (float[]){0, 0, 1, 1, 2, 3}, 6, 0, 0);
  ge_tensor_free(out);
  free_all(in, 3);
  const char *s1[] = {"x"}, *s2[] = {"y", "z"};
  ge_tensor *sin[2] = {str_tensor((int64_t[]){1}, 1, s1), str_tensor((int64_t[]){2}, 1, s2)};
  ge_attr a0 = GE_ATTR_INT("axis", 0);
  run1("Concat", 13, &a0, 1, sin, 2, &out);
  assert_strs(out, (const char *[]){"x", "y", "z"}, 3);
  ge_tensor_free(out);
  free_all(sin, 2);
  /* inference: symbolic non-axis dims, sums on the axis */
  ge_type t1 = ge_test_type(GE_F32, (int64_t[]){SYM_N, 3}, 2), t2 = ge_test_type(GE_F32, (int64_t[]){SYM_N, 5}, 2), o;
  const ge_type *ts[] = {&t1, &t2};
  ge_attr a1 = GE_ATTR_INT("axis", 1);
  assert_int_equal(ge_test_infer_node("Concat", 13, &a1, 1, ts, NULL, 2, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, 8}, 2);
  assert_int_equal(ge_test_infer_node("Concat", 13, &a0, 1, ts, NULL, 2, &o, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
}

static void test_split(void **state) {
  ge_tensor *in[2] = {arange_f32((int64_t[]){2, 5}, 2), i64v((int64_t[]){2, 3}, 2)}, *out[3] = {0};
  ge_attr a = GE_ATTR_INT("axis", 1);
  assert_int_equal(ge_test_run_node("Split", 13, &a, 1, in, 2, out, 2), GE_OK);
  ge_test_assert_close(out[0], (float[]){0, 1, 5, 6}, 4, 0, 0);
  ge_test_assert_close(out[1], (float[]){2, 3, 4, 7, 8, 9}, 6, 0, 0);
  free_all(out, 2);
  /* attribute split, opset 11 */
  ge_attr a11[] = {GE_ATTR_INT("axis", 1), GE_ATTR_INTS("split", ((int64_t[]){4, 1}), 2)};
  assert_int_equal(ge_test_run_node("Split", 11, a11, 2, in, 1, out, 2), GE_OK);
  ge_test_assert_shape(out[0], GE_F32, (int64_t[]){2, 4}, 2);
  ge_test_assert_close(out[1], (float[]){4, 9}, 2, 0, 0);
  free_all(out, 2);
  /* num_outputs, uneven (opset 18): 5 -> 2,2,1 */
  ge_attr a18[] = {GE_ATTR_INT("axis", 1), GE_ATTR_INT("num_outputs", 3)};
  assert_int_equal(ge_test_run_node("Split", 18, a18, 2, in, 1, out, 3), GE_OK);
  ge_test_assert_shape(out[2], GE_F32, (int64_t[]){2, 1}, 2);
  ge_test_assert_close(out[1], (float[]){2, 3, 7, 8}, 4, 0, 0);
  free_all(out, 3);
  /* equal split that does not divide fails */
  assert_int_not_equal(ge_test_run_node("Split", 13, &a, 1, in, 1, out, 2), GE_OK);
  free_all(in, 2);
}

/* ------------------------------------------------------------------ Slice */

static void test_slice(void **state) {
  ge_tensor *x = arange_f32((int64_t[]){3, 4}, 2), *out = NULL;
  ge_tensor *in[5] = {x, i64v((int64_t[]){-1, 10}, 2), i64v((int64_t[]){-100, -100}, 2), i64v((int64_t[]){1, 0}, 2),
                      i64v((int64_t[]){-2, -1}, 2)};
  /* axis 1: from 10 (clamped to 3) down step -2 -> 3,1 ; axis 0: from 2 down step -1 -> 2,1,0 */
  run1("Slice", 13, NULL, 0, in, 5, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3, 2}, 2);
  ge_test_assert_close(out, (float[]){11, 9, 7, 5, 3, 1}, 6, 0, 0);
  ge_tensor_free(out);
  /* no axes/steps; empty result */
  ge_tensor *in2[3] = {x, i64v((int64_t[]){1, 2}, 2), i64v((int64_t[]){1, 4}, 2)};
  run1("Slice", 13, NULL, 0, in2, 3, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){0, 2}, 2);
  ge_tensor_free(out);
  /* opset 9 attributes */
  ge_attr a[] = {GE_ATTR_INTS("starts", ((int64_t[]){1}), 1), GE_ATTR_INTS("ends", ((int64_t[]){INT64_MAX}), 1),
                 GE_ATTR_INTS("axes", ((int64_t[]){1}), 1)};
  run1("Slice", 9, a, 3, &x, 1, &out);
  ge_test_assert_close(out, (float[]){1, 2, 3, 5, 6, 7, 9, 10, 11}, 9, 0, 0);
  ge_tensor_free(out);
  /* inference: unknown starts keep unsliced axes, full slice keeps a symbol */
  ge_type t = ge_test_type(GE_F32, (int64_t[]){SYM_N, 8}, 2), ti = ge_test_type(GE_I64, (int64_t[]){1}, 1), o;
  const ge_type *ts[] = {&t, &ti, &ti, &ti};
  ge_tensor *ax = i64v((int64_t[]){1}, 1), *st = i64v((int64_t[]){2}, 1), *en = i64v((int64_t[]){INT64_MAX}, 1);
  const ge_tensor *vs[] = {NULL, NULL, NULL, ax};
  assert_int_equal(ge_test_infer_node("Slice", 13, NULL, 0, ts, vs, 4, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, -1}, 2);
  const ge_tensor *vs2[] = {NULL, st, en, ax};
  assert_int_equal(ge_test_infer_node("Slice", 13, NULL, 0, ts, vs2, 4, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, 6}, 2);
  ge_tensor_free(ax);
  ge_tensor_free(st);
  ge_tensor_free(en);
  for (int i = 1; i < 5; i++) ge_tensor_free(in[i]);
  ge_tensor_free(in2[1]);
  ge_tensor_free(in2[2]);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ Gather family */

static void test_gather(void **state) {
  ge_tensor *in[2] = {arange_f32((int64_t[]){2, 3}, 2), ge_test_tensor_i32((int64_t[]){2, 2}, 2, (int32_t[]){0, 2, -1, 1})};
  ge_tensor *out = NULL;
  ge_attr a = GE_ATTR_INT("axis", 1);
  run1("Gather", 13, &a, 1, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 2, 2}, 3);
  ge_test_assert_close(out, (float[]){0, 2, 2, 1, 3, 5, 5, 4}, 8, 0, 0);
  ge_tensor_free(out);
  /* scalar index on axis 0 */
  ge_tensor_free(in[1]);
  in[1] = ge_test_tensor_i64(NULL, 0, (int64_t[]){1});
  run1("Gather", 13, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3}, 1);
  ge_test_assert_close(out, (float[]){3, 4, 5}, 3, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(in[1]);
  /* out of range is an error, not a crash */
  in[1] = ge_test_tensor_i64((int64_t[]){1}, 1, (int64_t[]){7});
  assert_int_not_equal(ge_test_run_node("Gather", 13, NULL, 0, in, 2, &out, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  free_all(in, 2);
  /* inference with symbols */
  ge_type d = ge_test_type(GE_F32, (int64_t[]){100, 768}, 2), i = ge_test_type(GE_I64, (int64_t[]){SYM_N, SYM_S}, 2), o;
  const ge_type *ts[] = {&d, &i};
  assert_int_equal(ge_test_infer_node("Gather", 13, NULL, 0, ts, NULL, 2, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, SYM_S, 768}, 3);
}

static void test_gather_elements_nd(void **state) {
  ge_tensor *in[2] = {arange_f32((int64_t[]){2, 2}, 2), ge_test_tensor_i64((int64_t[]){2, 2}, 2, (int64_t[]){0, 0, 1, 0})};
  ge_tensor *out = NULL;
  ge_attr a = GE_ATTR_INT("axis", 1);
  run1("GatherElements", 13, &a, 1, in, 2, &out);
  ge_test_assert_close(out, (float[]){0, 0, 3, 2}, 4, 0, 0);
  ge_tensor_free(out);
  ge_attr a0 = GE_ATTR_INT("axis", 0);
  run1("GatherElements", 13, &a0, 1, in, 2, &out);
  ge_test_assert_close(out, (float[]){0, 1, 2, 1}, 4, 0, 0);
  ge_tensor_free(out);
  free_all(in, 2);
  /* GatherND batch_dims=1: data [2,2,2], indices [2,1] */
  ge_tensor *g[2] = {arange_f32((int64_t[]){2, 2, 2}, 3), ge_test_tensor_i64((int64_t[]){2, 1}, 2, (int64_t[]){1, 0})};
  ge_attr b = GE_ATTR_INT("batch_dims", 1);
  run1("GatherND", 13, &b, 1, g, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 2}, 2);
  ge_test_assert_close(out, (float[]){2, 3, 4, 5}, 4, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(g[1]);
  g[1] = ge_test_tensor_i64((int64_t[]){2, 3}, 2, (int64_t[]){0, 1, 1, 1, 0, -1});
  run1("GatherND", 13, NULL, 0, g, 2, &out);
  ge_test_assert_close(out, (float[]){3, 5}, 2, 0, 0);
  ge_tensor_free(out);
  free_all(g, 2);
}

static void test_scatter(void **state) {
  /* ScatterElements reduction add (duplicates accumulate) */
  ge_tensor *in[3] = {ge_test_tensor_f32((int64_t[]){1, 5}, 2, (float[]){1, 2, 3, 4, 5}),
                      ge_test_tensor_i64((int64_t[]){1, 2}, 2, (int64_t[]){1, 1}),
                      ge_test_tensor_f32((int64_t[]){1, 2}, 2, (float[]){1.1f, 2.1f})};
  ge_tensor *out = NULL;
  ge_attr a[] = {GE_ATTR_INT("axis", 1), GE_ATTR_STRING("reduction", "add")};
  run1("ScatterElements", 18, a, 2, in, 3, &out);
  ge_test_assert_close(out, (float[]){1, 5.2f, 3, 4, 5}, 5, 1e-6f, 0);
  ge_tensor_free(out);
  ge_attr amax[] = {GE_ATTR_INT("axis", 1), GE_ATTR_STRING("reduction", "max")};
  run1("ScatterElements", 18, amax, 2, in, 3, &out);
  ge_test_assert_close(out, (float[]){1, 2.1f, 3, 4, 5}, 5, 1e-6f, 0);
  ge_tensor_free(out);
  /* no reduction, negative index, Scatter opset 10 */
  ge_tensor_free(in[1]);
  in[1] = ge_test_tensor_i64((int64_t[]){1, 2}, 2, (int64_t[]){-1, 0});
  run1("Scatter", 10, a, 1, in, 3, &out);
  ge_test_assert_close(out, (float[]){2.1f, 2, 3, 4, 1.1f}, 5, 0, 0);
  ge_tensor_free(out);
  free_all(in, 3);
  /* ScatterND mul */
  ge_tensor *nd[3] = {ge_test_tensor_f32((int64_t[]){4}, 1, (float[]){1, 2, 3, 4}),
                      ge_test_tensor_i64((int64_t[]){3, 1}, 2, (int64_t[]){1, 3, 1}),
                      ge_test_tensor_f32((int64_t[]){3}, 1, (float[]){10, 20, 3})};
  ge_attr m = GE_ATTR_STRING("reduction", "mul");
  run1("ScatterND", 16, &m, 1, nd, 3, &out);
  ge_test_assert_close(out, (float[]){1, 60, 3, 80}, 4, 0, 0);
  ge_tensor_free(out);
  free_all(nd, 3);
  /* ScatterND on 2-D data with row updates */
  ge_tensor *n2[3] = {arange_f32((int64_t[]){3, 2}, 2), ge_test_tensor_i64((int64_t[]){1, 1}, 2, (int64_t[]){2}),
                      ge_test_tensor_f32((int64_t[]){1, 2}, 2, (float[]){-1, -2})};
  run1("ScatterND", 13, NULL, 0, n2, 3, &out);
  ge_test_assert_close(out, (float[]){0, 1, 2, 3, -1, -2}, 6, 0, 0);
  ge_tensor_free(out);
  free_all(n2, 3);
}

/* ------------------------------------------------------------------ Squeeze, Unsqueeze, Expand, Tile */

static void test_squeeze_unsqueeze(void **state) {
  ge_tensor *in[2] = {arange_f32((int64_t[]){3, 4}, 2), i64v((int64_t[]){0, -1}, 2)}, *out = NULL;
  run1("Unsqueeze", 13, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1, 3, 4, 1}, 4);
  ge_tensor *sq[2] = {out, i64v((int64_t[]){3}, 1)}, *out2 = NULL;
  run1("Squeeze", 13, NULL, 0, sq, 2, &out2);
  ge_test_assert_shape(out2, GE_F32, (int64_t[]){1, 3, 4}, 3);
  ge_tensor_free(out2);
  run1("Squeeze", 13, NULL, 0, sq, 1, &out2);
  ge_test_assert_shape(out2, GE_F32, (int64_t[]){3, 4}, 2);
  ge_test_assert_close(out2, (float[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12, 0, 0);
  ge_tensor_free(out2);
  ge_attr ax = GE_ATTR_INTS("axes", ((int64_t[]){1}), 1);
  run1("Unsqueeze", 11, &ax, 1, in, 1, &out2);
  ge_test_assert_shape(out2, GE_F32, (int64_t[]){3, 1, 4}, 3);
  ge_tensor_free(out2);
  /* squeezing a non-1 axis is an error */
  assert_int_not_equal(ge_test_run_node("Squeeze", 11, &ax, 1, in, 1, &out2, 1), GE_OK);
  free_all(sq, 2);
  free_all(in, 2);
  /* inference: Unsqueeze inserts 1 around symbols */
  ge_type t = ge_test_type(GE_F32, (int64_t[]){SYM_N, SYM_S}, 2), ti = ge_test_type(GE_I64, (int64_t[]){1}, 1), o;
  ge_tensor *v = i64v((int64_t[]){1}, 1);
  const ge_type *ts[] = {&t, &ti};
  const ge_tensor *vs[] = {NULL, v};
  assert_int_equal(ge_test_infer_node("Unsqueeze", 13, NULL, 0, ts, vs, 2, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, 1, SYM_S}, 3);
  vs[1] = NULL;
  assert_int_equal(ge_test_infer_node("Unsqueeze", 13, NULL, 0, ts, vs, 2, &o, 1), GE_OK);
  assert_int_equal(o.shape.rank, 3);
  ge_tensor_free(v);
}

static void test_expand_tile(void **state) {
  ge_tensor *in[2] = {arange_f32((int64_t[]){3, 1}, 2), i64v((int64_t[]){2, 1, 2}, 3)}, *out = NULL;
  run1("Expand", 13, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 3, 2}, 3);
  ge_test_assert_close(out, (float[]){0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}, 12, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(in[1]);
  ge_tensor_free(in[0]);
  in[0] = arange_f32((int64_t[]){2, 2}, 2);
  in[1] = i64v((int64_t[]){1, 2}, 2);
  run1("Tile", 13, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 4}, 2);
  ge_test_assert_close(out, (float[]){0, 1, 0, 1, 2, 3, 2, 3}, 8, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(in[1]);
  in[1] = i64v((int64_t[]){2, 0}, 2);
  run1("Tile", 13, NULL, 0, in, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){4, 0}, 2);
  ge_tensor_free(out);
  free_all(in, 2);
  /* Expand inference with a symbolic input dim */
  ge_type t = ge_test_type(GE_F32, (int64_t[]){SYM_N, 1}, 2), ts1 = ge_test_type(GE_I64, (int64_t[]){2}, 1), o;
  ge_tensor *v = i64v((int64_t[]){1, 5}, 2);
  const ge_type *ts[] = {&t, &ts1};
  const ge_tensor *vs[] = {NULL, v};
  assert_int_equal(ge_test_infer_node("Expand", 13, NULL, 0, ts, vs, 2, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, 5}, 2);
  ge_tensor_free(v);
}

/* ------------------------------------------------------------------ constants, Range, EyeLike */

static void test_constants(void **state) {
  ge_tensor *out = NULL;
  ge_attr a = GE_ATTR_INTS("value_ints", ((int64_t[]){4, 5, 6}), 3);
  run1("Constant", 13, &a, 1, NULL, 0, &out);
  ge_test_assert_ints(out, (int64_t[]){4, 5, 6}, 3);
  ge_tensor_free(out);
  ge_attr f = GE_ATTR_FLOAT("value_float", 2.5f);
  run1("Constant", 13, &f, 1, NULL, 0, &out);
  ge_test_assert_shape(out, GE_F32, NULL, 0);
  ge_test_assert_close(out, (float[]){2.5f}, 1, 0, 0);
  ge_tensor_free(out);
  ge_tensor *vt = ge_test_tensor_i32((int64_t[]){2}, 1, (int32_t[]){7, 8});
  ge_attr t = GE_ATTR_TENSOR("value", vt);
  run1("Constant", 13, &t, 1, NULL, 0, &out);
  ge_test_assert_shape(out, GE_I32, (int64_t[]){2}, 1);
  ge_test_assert_ints(out, (int64_t[]){7, 8}, 2);
  ge_tensor_free(out);
  ge_tensor_free(vt);
  /* ConstantOfShape */
  ge_tensor *sh = i64v((int64_t[]){2, 3}, 2);
  run1("ConstantOfShape", 13, NULL, 0, &sh, 1, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 3}, 2);
  ge_test_assert_close(out, (float[]){0, 0, 0, 0, 0, 0}, 6, 0, 0);
  ge_tensor_free(out);
  ge_tensor *one = ge_test_tensor_i64((int64_t[]){1}, 1, (int64_t[]){9});
  ge_attr ov = GE_ATTR_TENSOR("value", one);
  run1("ConstantOfShape", 13, &ov, 1, &sh, 1, &out);
  ge_test_assert_ints(out, (int64_t[]){9, 9, 9, 9, 9, 9}, 6);
  ge_tensor_free(out);
  ge_tensor_free(one);
  ge_tensor_free(sh);
  /* Range */
  ge_tensor *r[3] = {ge_test_tensor_i32(NULL, 0, (int32_t[]){10}), ge_test_tensor_i32(NULL, 0, (int32_t[]){4}),
                     ge_test_tensor_i32(NULL, 0, (int32_t[]){-3})};
  run1("Range", 13, NULL, 0, r, 3, &out);
  ge_test_assert_shape(out, GE_I32, (int64_t[]){2}, 1);
  ge_test_assert_ints(out, (int64_t[]){10, 7}, 2);
  ge_tensor_free(out);
  free_all(r, 3);
  ge_tensor *rf[3] = {ge_test_tensor_f32(NULL, 0, (float[]){1}), ge_test_tensor_f32(NULL, 0, (float[]){2}),
                      ge_test_tensor_f32(NULL, 0, (float[]){0.25f})};
  run1("Range", 13, NULL, 0, rf, 3, &out);
  ge_test_assert_close(out, (float[]){1, 1.25f, 1.5f, 1.75f}, 4, 0, 0);
  ge_tensor_free(out);
  free_all(rf, 3);
  /* EyeLike with k and dtype */
  ge_tensor *x = ge_test_tensor(GE_F32, (int64_t[]){3, 4}, 2, NULL);
  ge_attr e[] = {GE_ATTR_INT("k", 1), GE_ATTR_INT("dtype", 7 /* int64 */)};
  run1("EyeLike", 13, e, 2, &x, 1, &out);
  ge_test_assert_shape(out, GE_I64, (int64_t[]){3, 4}, 2);
  ge_test_assert_ints(out, (int64_t[]){0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 12);
  ge_tensor_free(out);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ Pad */

static void test_pad(void **state) {
  ge_tensor *x = arange_f32((int64_t[]){2, 3}, 2), *pads = i64v((int64_t[]){1, 2, 1, 3}, 4), *out = NULL;
  static const float refl[] = {5, 4, 3, 4, 5, 4, 3, 4, 2, 1, 0, 1, 2, 1, 0, 1, 5, 4, 3, 4, 5, 4, 3, 4, 2, 1, 0, 1, 2, 1, 0, 1};
  static const float edge[] = {0, 0, 0, 1, 2, 2, 2, 2, 0, 0, 0, 1, 2, 2, 2, 2, 3, 3, 3, 4, 5, 5, 5, 5, 3, 3, 3, 4, 5, 5, 5, 5};
  static const float wrap[] = {4, 5, 3, 4, 5, 3, 4, 5, 1, 2, 0, 1, 2, 0, 1, 2, 4, 5, 3, 4, 5, 3, 4, 5, 1, 2, 0, 1, 2, 0, 1, 2};
  const char *modes[] = {"reflect", "edge", "wrap"};
  const float *want[] = {refl, edge, wrap};
  ge_tensor *in[2] = {x, pads};
  for (int m = 0; m < 3; m++) {
    ge_attr a = GE_ATTR_STRING("mode", modes[m]);
    run1("Pad", 19, &a, 1, in, 2, &out);
    ge_test_assert_shape(out, GE_F32, (int64_t[]){4, 8}, 2);
    ge_test_assert_close(out, want[m], 32, 0, 0);
    ge_tensor_free(out);
  }
  /* constant with value and negative pads, axes (opset 18) */
  ge_tensor *p2 = i64v((int64_t[]){-1, 1}, 2), *cv = ge_test_tensor_f32(NULL, 0, (float[]){9}), *ax = i64v((int64_t[]){1}, 1);
  ge_tensor *in4[4] = {x, p2, cv, ax};
  run1("Pad", 18, NULL, 0, in4, 4, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 3}, 2);
  ge_test_assert_close(out, (float[]){1, 2, 9, 4, 5, 9}, 6, 0, 0);
  ge_tensor_free(out);
  /* opset 10 attributes */
  ge_attr a2[] = {GE_ATTR_INTS("pads", ((int64_t[]){0, 1, 0, 0}), 4), GE_ATTR_FLOAT("value", 7.0f)};
  run1("Pad", 10, a2, 2, &x, 1, &out);
  ge_test_assert_close(out, (float[]){7, 0, 1, 2, 7, 3, 4, 5}, 8, 0, 0);
  ge_tensor_free(out);
  /* inference: symbolic dims stay when not padded */
  ge_type t = ge_test_type(GE_F32, (int64_t[]){SYM_N, 3}, 2), tp = ge_test_type(GE_I64, (int64_t[]){4}, 1), o;
  ge_tensor *pv = i64v((int64_t[]){0, 1, 0, 1}, 4);
  const ge_type *ts[] = {&t, &tp};
  const ge_tensor *vs[] = {NULL, pv};
  assert_int_equal(ge_test_infer_node("Pad", 13, NULL, 0, ts, vs, 2, &o, 1), GE_OK);
  assert_dims(&o, (int64_t[]){SYM_N, 5}, 2);
  ge_tensor_free(pv);
  ge_tensor_free(p2);
  ge_tensor_free(cv);
  ge_tensor_free(ax);
  ge_tensor_free(pads);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ the rest */

static void test_trilu_d2s(void **state) {
  ge_tensor *x = arange_f32((int64_t[]){3, 3}, 2), *k = ge_test_tensor_i64(NULL, 0, (int64_t[]){-1}), *out = NULL;
  ge_tensor *in[2] = {x, k};
  run1("Trilu", 14, NULL, 0, in, 2, &out);
  ge_test_assert_close(out, (float[]){0, 1, 2, 3, 4, 5, 0, 7, 8}, 9, 0, 0);
  ge_tensor_free(out);
  ge_attr lo = GE_ATTR_INT("upper", 0);
  run1("Trilu", 14, &lo, 1, in, 1, &out);
  ge_test_assert_close(out, (float[]){0, 0, 0, 3, 4, 0, 6, 7, 8}, 9, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(x);
  ge_tensor_free(k);
  ge_tensor *d = arange_f32((int64_t[]){1, 8, 1, 2}, 4);
  ge_attr dcr[] = {GE_ATTR_INT("blocksize", 2), GE_ATTR_STRING("mode", "DCR")};
  run1("DepthToSpace", 13, dcr, 2, &d, 1, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1, 2, 2, 4}, 4);
  ge_test_assert_close(out, (float[]){0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15}, 16, 0, 0);
  ge_tensor_free(out);
  ge_attr crd[] = {GE_ATTR_INT("blocksize", 2), GE_ATTR_STRING("mode", "CRD")};
  run1("DepthToSpace", 13, crd, 2, &d, 1, &out);
  ge_test_assert_close(out, (float[]){0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15}, 16, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(d);
  ge_tensor *s = arange_f32((int64_t[]){1, 1, 4, 4}, 4);
  run1("SpaceToDepth", 13, dcr, 1, &s, 1, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1, 4, 2, 2}, 4);
  ge_test_assert_close(out, (float[]){0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15}, 16, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(s);
}

static void test_onehot_nonzero(void **state) {
  ge_tensor *in[3] = {ge_test_tensor_i64((int64_t[]){3}, 1, (int64_t[]){0, -1, 5}),
                      ge_test_tensor_f32(NULL, 0, (float[]){3}), ge_test_tensor_f32((int64_t[]){2}, 1, (float[]){-1, 1})};
  ge_tensor *out = NULL;
  run1("OneHot", 11, NULL, 0, in, 3, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3, 3}, 2);
  ge_test_assert_close(out, (float[]){1, -1, -1, -1, -1, 1, -1, -1, -1}, 9, 0, 0);
  ge_tensor_free(out);
  ge_attr a0 = GE_ATTR_INT("axis", 0);
  run1("OneHot", 11, &a0, 1, in, 3, &out);
  ge_test_assert_close(out, (float[]){1, -1, -1, -1, -1, -1, -1, 1, -1}, 9, 0, 0);
  ge_tensor_free(out);
  free_all(in, 3);
  ge_tensor *x = ge_test_tensor_f32((int64_t[]){2, 2}, 2, (float[]){1, 0, 0, -2});
  run1("NonZero", 13, NULL, 0, &x, 1, &out);
  ge_test_assert_shape(out, GE_I64, (int64_t[]){2, 2}, 2);
  ge_test_assert_ints(out, (int64_t[]){0, 1, 0, 1}, 4);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* Compress with and without axis */
  ge_tensor *c[2] = {arange_f32((int64_t[]){3, 2}, 2), ge_test_tensor_bool((int64_t[]){2}, 1, (bool[]){false, true})};
  ge_attr ax = GE_ATTR_INT("axis", 0);
  run1("Compress", 11, &ax, 1, c, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1, 2}, 2);
  ge_test_assert_close(out, (float[]){2, 3}, 2, 0, 0);
  ge_tensor_free(out);
  run1("Compress", 11, NULL, 0, c, 2, &out);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){1}, 1);
  ge_test_assert_close(out, (float[]){1}, 1, 0, 0);
  ge_tensor_free(out);
  free_all(c, 2);
  /* ReverseSequence, time major */
  ge_tensor *r[2] = {arange_f32((int64_t[]){3, 2}, 2), ge_test_tensor_i64((int64_t[]){2}, 1, (int64_t[]){3, 1})};
  run1("ReverseSequence", 10, NULL, 0, r, 2, &out);
  ge_test_assert_close(out, (float[]){4, 1, 2, 3, 0, 5}, 6, 0, 0);
  ge_tensor_free(out);
  free_all(r, 2);
}

static void test_identity_strings(void **state) {
  const char *sv[] = {"p", "q", "r"};
  ge_tensor *x = str_tensor((int64_t[]){3}, 1, sv), *out = NULL;
  run1("Identity", 16, NULL, 0, &x, 1, &out);
  assert_strs(out, sv, 3);
  ge_tensor_free(out);
  ge_tensor *in[2] = {x, ge_test_tensor_i64((int64_t[]){2}, 1, (int64_t[]){2, 0})};
  run1("Gather", 13, NULL, 0, in, 2, &out);
  assert_strs(out, (const char *[]){"r", "p"}, 2);
  ge_tensor_free(out);
  ge_tensor_free(in[1]);
  ge_tensor_free(x);
  /* bf16 / bool moves */
  ge_tensor *b = ge_test_tensor_from_f32(GE_BF16, (int64_t[]){2, 2}, 2, (float[]){1, 2, 3, 4}), *o2 = NULL;
  run1("Transpose", 13, NULL, 0, &b, 1, &o2);
  ge_test_assert_close(o2, (float[]){1, 3, 2, 4}, 4, 0, 0);
  ge_tensor_free(o2);
  ge_tensor_free(b);
}


/* ------------------------------------------------------------------ randomized vs naive loops */

static uint32_t rng_next(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static void test_random_expand_slice(void **state) {
  uint32_t seed = 12345;
  for (int iter = 0; iter < 200; iter++) {
    /* Expand: out rank 1..5, input rank <= out rank, input dims 1 or the out dim */
    int ro = 1 + (int)(rng_next(&seed) % 5), ri = 1 + (int)(rng_next(&seed) % (unsigned)ro);
    int64_t od[8], id[8], shv[8];
    for (int d = 0; d < ro; d++) od[d] = 1 + (int64_t)(rng_next(&seed) % 4);
    for (int d = 0; d < ri; d++) id[d] = rng_next(&seed) % 2 ? od[ro - ri + d] : 1;
    for (int d = 0; d < ro; d++) shv[d] = (rng_next(&seed) % 3 == 0 && d >= ro - ri && id[d - (ro - ri)] == od[d]) ? 1 : od[d];
    ge_tensor *in[2] = {arange_f32(id, (size_t)ri), i64v(shv, ro)}, *out = NULL;
    run1("Expand", 13, NULL, 0, in, 2, &out);
    ge_test_assert_shape(out, GE_F32, od, (size_t)ro);
    int64_t idx[8] = {0}, istr[8], s = 1;
    for (int d = ri - 1; d >= 0; d--) istr[d] = s, s *= id[d];
    const float *o = out->data;
    for (size_t k = 0; k < out->numel; k++) {
      int64_t src = 0;
      for (int d = 0; d < ri; d++) src += (id[d] == 1 ? 0 : idx[ro - ri + d]) * istr[d];
      if (o[k] != (float)src) fail_msg("expand iter %d element %zu: %g != %lld", iter, k, o[k], (long long)src);
      for (int d = ro - 1; d >= 0; d--) {
        if (++idx[d] < od[d]) break;
        idx[d] = 0;
      }
    }
    ge_tensor_free(out);
    free_all(in, 2);

    /* Slice: random rank 1..4, random starts/ends/steps (incl. negative and out of range) */
    int r = 1 + (int)(rng_next(&seed) % 4);
    int64_t xd[4], st[4], en[4], sp[4], ax[4];
    for (int d = 0; d < r; d++) {
      xd[d] = (int64_t)(rng_next(&seed) % 6);
      st[d] = (int64_t)(rng_next(&seed) % 15) - 7;
      en[d] = (int64_t)(rng_next(&seed) % 15) - 7;
      sp[d] = (int64_t)(rng_next(&seed) % 5) - 2;
      if (sp[d] == 0) sp[d] = 3;
      ax[d] = r - 1 - d; /* reversed axes order */
    }
    ge_tensor *x = arange_f32(xd, (size_t)r);
    ge_tensor *si[5] = {x, i64v(st, r), i64v(en, r), i64v(ax, r), i64v(sp, r)};
    run1("Slice", 13, NULL, 0, si, 5, &out);
    /* naive: per axis the list of source coordinates */
    int64_t lists[4][16], len[4], xs[4];
    s = 1;
    for (int d = r - 1; d >= 0; d--) xs[d] = s, s *= xd[d];
    for (int k = 0; k < r; k++) {
      int d = (int)ax[k];
      int64_t dim = xd[d], b = st[k], e = en[k], p = sp[k];
      if (b < 0) b += dim;
      if (e < 0) e += dim;
      if (p > 0) {
        b = b < 0 ? 0 : b > dim ? dim : b;
        e = e < 0 ? 0 : e > dim ? dim : e;
      } else {
        b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
        e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      }
      len[d] = 0;
      for (int64_t i = b; dim > 0 && (p > 0 ? i < e : i > e); i += p) lists[d][len[d]++] = i;
    }
    ge_test_assert_shape(out, GE_F32, len, (size_t)r);
    int64_t c[4] = {0};
    o = out->data;
    for (size_t k = 0; k < out->numel; k++) {
      int64_t src = 0;
      for (int d = 0; d < r; d++) src += lists[d][c[d]] * xs[d];
      if (o[k] != (float)src) fail_msg("slice iter %d element %zu r=%d xd=%lld,%lld,%lld,%lld st=%lld,%lld,%lld,%lld en=%lld,%lld,%lld,%lld sp=%lld,%lld,%lld,%lld got %g want %lld", iter, k, r, (long long)xd[0], (long long)xd[1], (long long)xd[2], (long long)xd[3], (long long)st[0], (long long)st[1], (long long)st[2], (long long)st[3], (long long)en[0], (long long)en[1], (long long)en[2], (long long)en[3], (long long)sp[0], (long long)sp[1], (long long)sp[2], (long long)sp[3], o[k], (long long)src);
      for (int d = r - 1; d >= 0; d--) {
        if (++c[d] < len[d]) break;
        c[d] = 0;
      }
    }
    ge_tensor_free(out);
    free_all(si, 5);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reshape_kernel),    cmocka_unit_test(test_reshape_infer),
      cmocka_unit_test(test_shape_size),        cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_concat),            cmocka_unit_test(test_split),
      cmocka_unit_test(test_slice),             cmocka_unit_test(test_gather),
      cmocka_unit_test(test_gather_elements_nd), cmocka_unit_test(test_scatter),
      cmocka_unit_test(test_squeeze_unsqueeze), cmocka_unit_test(test_expand_tile),
      cmocka_unit_test(test_constants),         cmocka_unit_test(test_pad),
      cmocka_unit_test(test_trilu_d2s),         cmocka_unit_test(test_onehot_nonzero),
      cmocka_unit_test(test_identity_strings),  cmocka_unit_test(test_random_expand_slice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
