/* The nn family: inference (incl. symbolic/unknown dims and errors naming the node) and the
 * CPU kernels against hand-checked values and naive loop references. */
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

/* ------------------------------------------------------------------ helpers */

static uint64_t rng = 0x1234567887654321ull;
static float frand(void) { return ge_test_rand_unit(&rng); }
static int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(ge_test_rand_u64(&rng) % (uint64_t)(hi - lo + 1)); }

static ge_tensor *rand_f32(const int64_t *d, size_t r) { return ge_test_rand_f32(&rng, d, r, 1.f); }

static const float *F(const ge_tensor *t) { return (const float *)t->data; }

static void expect_close_d(const ge_tensor *t, const double *e, size_t n, double tol) {
  assert_int_equal(t->numel, n);
  for (size_t i = 0; i < n; i++) {
    double g = ge_tensor_get_f64(t, i);
    if (!(fabs(g - e[i]) <= tol * (1 + fabs(e[i])))) {
      fprintf(stderr, "element %zu: got %.7g expected %.7g\n", i, g, e[i]);
      fail();
    }
  }
}

static ge_status run1(const char *op, int64_t opset, const ge_attr *attrs, size_t na, ge_tensor **in,
                      size_t nin, ge_tensor **out) {
  return ge_test_run_node(op, opset, attrs, na, in, nin, out, 1);
}

/* ------------------------------------------------------------------ Gemm */

static void test_gemm_random(void **state) {
  (void)state;
  for (int it = 0; it < 24; it++) {
    int64_t M = irand(1, 40), N = irand(1, 40), K = irand(1, 40);
    int ta = it & 1, tb = (it >> 1) & 1, cmode = (it >> 2) % 6;
    int64_t da[2] = {ta ? K : M, ta ? M : K}, db[2] = {tb ? N : K, tb ? K : N};
    int64_t dc[2];
    size_t rc = 0;
    switch (cmode) {
      case 0: rc = 2; dc[0] = M; dc[1] = N; break;
      case 1: rc = 1; dc[0] = N; break;
      case 2: rc = 2; dc[0] = M; dc[1] = 1; break;
      case 3: rc = 0; break;
      case 4: rc = 2; dc[0] = 1; dc[1] = N; break;
      default: rc = 99; break; /* no C */
    }
    ge_tensor *in[3] = {rand_f32(da, 2), rand_f32(db, 2), rc == 99 ? NULL : rand_f32(dc, rc)};
    float alpha = 0.5f + (float)(it % 3), beta = it % 4 == 0 ? 0.0f : -1.5f;
    ge_attr at[4] = {GE_ATTR_INT("transA", ta), GE_ATTR_INT("transB", tb), GE_ATTR_FLOAT("alpha", alpha),
                     GE_ATTR_FLOAT("beta", beta)};
    ge_tensor *out = NULL;
    assert_int_equal(run1("Gemm", 13, at, 4, in, rc == 99 ? 2 : 3, &out), GE_OK);
    int64_t dy[2] = {M, N};
    ge_test_assert_shape(out, GE_F32, dy, 2);
    double *ref = calloc((size_t)(M * N), sizeof(double));
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += (double)F(in[0])[ta ? k * M + m : m * K + k] * F(in[1])[tb ? n * K + k : k * N + n];
        double c = 0;
        if (rc != 99) {
          int64_t cm = rc == 2 ? dc[0] : 1, cn = rc >= 1 ? dc[rc - 1] : 1;
          c = F(in[2])[(cm == 1 ? 0 : m) * cn + (cn == 1 ? 0 : n)];
        }
        ref[m * N + n] = alpha * s + beta * c;
      }
    expect_close_d(out, ref, (size_t)(M * N), 1e-4);
    free(ref);
    ge_tensor_free(out);
    for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
  }
}

static void test_gemm_int_and_f16(void **state) {
  (void)state;
  int64_t d[2] = {2, 2};
  int32_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {1, 1, 1, 1};
  ge_tensor *in[3] = {ge_test_tensor_i32(d, 2, a), ge_test_tensor_i32(d, 2, b), ge_test_tensor_i32(d, 2, c)};
  ge_tensor *out = NULL;
  ge_attr at[1] = {GE_ATTR_FLOAT("beta", 2.0f)};
  assert_int_equal(run1("Gemm", 13, at, 1, in, 3, &out), GE_OK);
  int64_t e[4] = {21, 24, 45, 52};
  ge_test_assert_ints(out, e, 4);
  ge_tensor_free(out);
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);

  float fa[4] = {1, 2, 3, 4}, fb[4] = {0.5f, 0, 0, 0.5f};
  ge_tensor *h[2] = {ge_test_tensor_from_f32(GE_F16, d, 2, fa), ge_test_tensor_from_f32(GE_BF16, d, 2, fb)};
  /* mixed dtypes are an inference error naming the node */
  assert_int_not_equal(run1("Gemm", 13, NULL, 0, h, 2, &out), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(h[1]);
  h[1] = ge_test_tensor_from_f32(GE_F16, d, 2, fb);
  assert_int_equal(run1("Gemm", 13, NULL, 0, h, 2, &out), GE_OK);
  assert_int_equal(out->dtype, GE_F16);
  float ef[4] = {0.5f, 1, 1.5f, 2};
  ge_test_assert_close(out, ef, 4, 1e-3f, 0);
  ge_tensor_free(out);
  ge_tensor_free(h[0]);
  ge_tensor_free(h[1]);
}

/* ------------------------------------------------------------------ MatMul */

static void matmul_case(const int64_t *da, size_t ra, const int64_t *db, size_t rb, ge_dtype dt) {
  size_t na = ge_test_numel(da, ra), nb = ge_test_numel(db, rb);
  float *va = malloc((na + 1) * sizeof(float)), *vb = malloc((nb + 1) * sizeof(float));
  int64_t lo = dt == GE_U8 ? 0 : -5;
  for (size_t i = 0; i < na; i++) va[i] = dt == GE_F32 ? frand() : (float)irand(lo, 5);
  for (size_t i = 0; i < nb; i++) vb[i] = dt == GE_F32 ? frand() : (float)irand(lo, 5);
  ge_tensor *in[2] = {ge_test_tensor_from_f32(dt, da, ra, va), ge_test_tensor_from_f32(dt, db, rb, vb)};
  ge_tensor *out = NULL;
  assert_int_equal(run1("MatMul", 13, NULL, 0, in, 2, &out), GE_OK);
  /* reference: promote to >= 2-D, broadcast batch */
  int64_t A[GE_MAX_RANK], B[GE_MAX_RANK];
  size_t RA = ra < 2 ? 2 : ra, RB = rb < 2 ? 2 : rb;
  if (ra == 1) { A[0] = 1; A[1] = da[0]; } else memcpy(A, da, ra * sizeof *da);
  if (rb == 1) { B[0] = db[0]; B[1] = 1; } else memcpy(B, db, rb * sizeof *db);
  int64_t M = A[RA - 2], K = A[RA - 1], N = B[RB - 1];
  size_t bo = (RA > RB ? RA : RB) - 2;
  int64_t bd[GE_MAX_RANK];
  size_t nbatch = 1;
  for (size_t i = 0; i < bo; i++) {
    int64_t x = (int64_t)i - (int64_t)(bo - (RA - 2)) >= 0 ? A[i - (bo - (RA - 2))] : 1;
    int64_t y = (int64_t)i - (int64_t)(bo - (RB - 2)) >= 0 ? B[i - (bo - (RB - 2))] : 1;
    bd[i] = x > y ? x : y;
    nbatch *= (size_t)bd[i];
  }
  double *ref = calloc(nbatch * (size_t)(M * N) + 1, sizeof(double));
  for (size_t t = 0; t < nbatch; t++) {
    size_t rem = t, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t i = bo; i-- > 0;) {
      size_t id = rem % (size_t)bd[i];
      rem /= (size_t)bd[i];
      int64_t ia = (int64_t)i - (int64_t)(bo - (RA - 2)), ib = (int64_t)i - (int64_t)(bo - (RB - 2));
      if (ia >= 0) { if (A[ia] != 1) oa += id * sa; sa *= (size_t)A[ia]; }
      if (ib >= 0) { if (B[ib] != 1) ob += id * sb; sb *= (size_t)B[ib]; }
    }
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += (double)va[oa * (size_t)(M * K) + (size_t)(m * K + k)] * vb[ob * (size_t)(K * N) + (size_t)(k * N + n)];
        ref[t * (size_t)(M * N) + (size_t)(m * N + n)] = s;
      }
  }
  expect_close_d(out, ref, nbatch * (size_t)(M * N), 1e-4);
  assert_int_equal(out->dtype, dt);
  free(ref);
  free(va);
  free(vb);
  ge_tensor_free(out);
  ge_tensor_free(in[0]);
  ge_tensor_free(in[1]);
}

static void test_matmul(void **state) {
  (void)state;
  matmul_case((int64_t[]){3, 4}, 2, (int64_t[]){4, 5}, 2, GE_F32);
  matmul_case((int64_t[]){4}, 1, (int64_t[]){4, 5}, 2, GE_F32);
  matmul_case((int64_t[]){3, 4}, 2, (int64_t[]){4}, 1, GE_F32);
  matmul_case((int64_t[]){4}, 1, (int64_t[]){4}, 1, GE_F32);
  matmul_case((int64_t[]){2, 3, 4}, 3, (int64_t[]){4, 5}, 2, GE_F32);
  matmul_case((int64_t[]){2, 1, 3, 4}, 4, (int64_t[]){5, 4, 2}, 3, GE_F32);
  matmul_case((int64_t[]){1, 3, 4}, 3, (int64_t[]){2, 4, 6}, 3, GE_F32);
  matmul_case((int64_t[]){4}, 1, (int64_t[]){3, 4, 2}, 3, GE_F32);
  matmul_case((int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 4, 5}, 3, GE_I64);
  matmul_case((int64_t[]){2, 3, 4}, 3, (int64_t[]){4, 5}, 2, GE_I32);
  matmul_case((int64_t[]){3, 4}, 2, (int64_t[]){4, 2}, 2, GE_U8);
  matmul_case((int64_t[]){3, 0}, 2, (int64_t[]){0, 2}, 2, GE_F32);
  matmul_case((int64_t[]){0, 3}, 2, (int64_t[]){3, 2}, 2, GE_F32);
}


static void test_matmul_integer(void **state) {
  (void)state;
  /* the ONNX doc example: A uint8 [4,3], B uint8 [3,2], a_zp 12, b_zp 0 */
  uint8_t av[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, bv[6] = {1, 4, 2, 5, 3, 6}, az = 12, bz = 0;
  ge_tensor *in[4] = {ge_test_tensor(GE_U8, (int64_t[]){4, 3}, 2, av), ge_test_tensor(GE_U8, (int64_t[]){3, 2}, 2, bv),
                      ge_test_tensor(GE_U8, NULL, 0, &az), ge_test_tensor(GE_U8, NULL, 0, &bz)};
  ge_tensor *o = NULL;
  assert_int_equal(run1("MatMulInteger", 10, NULL, 0, in, 4, &o), GE_OK);
  ge_test_assert_shape(o, GE_I32, (int64_t[]){4, 2}, 2);
  ge_test_assert_ints(o, (int64_t[]){-38, -83, -44, -98, -50, -113, -56, -128}, 8);
  ge_tensor_free(o);
  /* int8 x uint8, batched, per-row / per-column zero points */
  int8_t a2[12] = {-3, 4, 5, 1, 0, -2, 7, 8, -9, 1, 1, 1};
  int8_t za[2] = {1, -1};
  uint8_t zb[2] = {2, 3};
  ge_tensor *in2[4] = {ge_test_tensor(GE_I8, (int64_t[]){2, 2, 3}, 3, a2), in[1],
                       ge_test_tensor(GE_I8, (int64_t[]){2}, 1, za), ge_test_tensor(GE_U8, (int64_t[]){2}, 1, zb)};
  assert_int_equal(run1("MatMulInteger", 10, NULL, 0, in2, 4, &o), GE_OK);
  int64_t e[8];
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 2; m++)
      for (int n = 0; n < 2; n++) {
        int64_t s = 0;
        for (int k = 0; k < 3; k++) s += (int64_t)(a2[(b * 2 + m) * 3 + k] - za[m]) * (bv[k * 2 + n] - zb[n]);
        e[(b * 2 + m) * 2 + n] = s;
      }
  ge_test_assert_ints(o, e, 8);
  ge_tensor_free(o);
  ge_tensor_free(in2[0]);
  ge_tensor_free(in2[2]);
  ge_tensor_free(in2[3]);
  for (int i = 0; i < 4; i++) ge_tensor_free(in[i]);
}

static void test_matmul_infer(void **state) {
  (void)state;
  ge_type a = ge_test_type(GE_F32, (int64_t[]){GE_DIM_SYM(0), GE_DIM_UNKNOWN, 768}, 3);
  ge_type b = ge_test_type(GE_F32, (int64_t[]){768, 64}, 2);
  const ge_type *ins[2] = {&a, &b};
  ge_type o;
  assert_int_equal(ge_test_infer_node("MatMul", 13, NULL, 0, ins, NULL, 2, &o, 1), GE_OK);
  assert_int_equal(o.shape.rank, 3);
  assert_true(o.shape.dims[0] == GE_DIM_SYM(0) && o.shape.dims[1] == GE_DIM_UNKNOWN && o.shape.dims[2] == 64);
  ge_type bad = ge_test_type(GE_F32, (int64_t[]){767, 64}, 2);
  ins[1] = &bad;
  assert_int_equal(ge_test_infer_node("MatMul", 13, NULL, 0, ins, NULL, 2, &o, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_type unk = ge_test_type(GE_F32, NULL, -1);
  ins[1] = &unk;
  assert_int_equal(ge_test_infer_node("MatMul", 13, NULL, 0, ins, NULL, 2, &o, 1), GE_OK);
  assert_int_equal(o.shape.rank, GE_RANK_UNKNOWN);
  assert_int_equal(o.dtype, GE_F32);
}

/* ------------------------------------------------------------------ Conv */

typedef struct conv_cfg {
  int nsp;
  int64_t N, C, M, G;
  int64_t in[3], k[3], s[3], d[3], pads[6];
  int bias;
  const char *auto_pad;
} conv_cfg;

/* naive direct conv; pads are the effective (resolved) pads */
static double *conv_ref(const conv_cfg *c, const float *x, const float *w, const float *b,
                        const int64_t *pb, const int64_t *out) {
  int nsp = c->nsp;
  size_t So = 1, Si = 1, ks = 1;
  for (int i = 0; i < nsp; i++) { So *= (size_t)out[i]; Si *= (size_t)c->in[i]; ks *= (size_t)c->k[i]; }
  int64_t Cg = c->C / c->G, Mg = c->M / c->G;
  double *y = calloc((size_t)(c->N * c->M) * So + 1, sizeof(double));
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t m = 0; m < c->M; m++) {
      int64_t g = m / Mg;
      for (size_t q = 0; q < So; q++) {
        int64_t o[3] = {0, 0, 0};
        size_t rem = q;
        for (int i = nsp - 1; i >= 0; i--) { o[i] = (int64_t)(rem % (size_t)out[i]); rem /= (size_t)out[i]; }
        double s = b ? b[m] : 0;
        for (int64_t cc = 0; cc < Cg; cc++)
          for (size_t kq = 0; kq < ks; kq++) {
            int64_t kk[3] = {0, 0, 0};
            size_t kr = kq;
            for (int i = nsp - 1; i >= 0; i--) { kk[i] = (int64_t)(kr % (size_t)c->k[i]); kr /= (size_t)c->k[i]; }
            size_t off = 0;
            bool ok = true;
            for (int i = 0; i < nsp; i++) {
              int64_t p = o[i] * c->s[i] - pb[i] + kk[i] * c->d[i];
              if (p < 0 || p >= c->in[i]) ok = false;
              off = off * (size_t)c->in[i] + (size_t)(p < 0 ? 0 : p);
            }
            if (!ok) continue;
            s += (double)x[((size_t)(n * c->C + g * Cg + cc)) * Si + off] * w[((size_t)(m * Cg + cc)) * ks + kq];
          }
        y[(size_t)(n * c->M + m) * So + q] = s;
      }
    }
  return y;
}

static void conv_case(const conv_cfg *c) {
  int nsp = c->nsp;
  int64_t dx[5] = {c->N, c->C}, dw[5] = {c->M, c->C / c->G};
  for (int i = 0; i < nsp; i++) { dx[2 + i] = c->in[i]; dw[2 + i] = c->k[i]; }
  int64_t db[1] = {c->M};
  ge_tensor *in[3] = {rand_f32(dx, (size_t)nsp + 2), rand_f32(dw, (size_t)nsp + 2), c->bias ? rand_f32(db, 1) : NULL};
  ge_attr at[6];
  size_t na = 0;
  at[na++] = GE_ATTR_INTS("strides", c->s, (size_t)nsp);
  at[na++] = GE_ATTR_INTS("dilations", c->d, (size_t)nsp);
  at[na++] = GE_ATTR_INT("group", c->G);
  at[na++] = GE_ATTR_INTS("kernel_shape", c->k, (size_t)nsp);
  if (c->auto_pad) at[na++] = GE_ATTR_STRING("auto_pad", c->auto_pad);
  else at[na++] = GE_ATTR_INTS("pads", c->pads, 2 * (size_t)nsp);
  ge_tensor *out = NULL;
  assert_int_equal(run1("Conv", 11, at, na, in, c->bias ? 3 : 2, &out), GE_OK);
  int64_t pb[3], od[3];
  for (int i = 0; i < nsp; i++) {
    int64_t ek = (c->k[i] - 1) * c->d[i] + 1;
    if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0) {
      od[i] = (c->in[i] + c->s[i] - 1) / c->s[i];
      int64_t tot = (od[i] - 1) * c->s[i] + ek - c->in[i];
      if (tot < 0) tot = 0;
      pb[i] = strcmp(c->auto_pad, "SAME_UPPER") == 0 ? tot / 2 : tot - tot / 2;
    } else if (c->auto_pad) {
      pb[i] = 0;
      od[i] = (c->in[i] - ek) / c->s[i] + 1;
    } else {
      pb[i] = c->pads[i];
      od[i] = (c->in[i] + c->pads[i] + c->pads[nsp + i] - ek) / c->s[i] + 1;
    }
    assert_int_equal(out->dims[2 + i], od[i]);
  }
  double *ref = conv_ref(c, F(in[0]), F(in[1]), c->bias ? F(in[2]) : NULL, pb, od);
  expect_close_d(out, ref, out->numel, 1e-4);
  free(ref);
  ge_tensor_free(out);
  for (int i = 0; i < 3; i++) ge_tensor_free(in[i]);
}

static void test_conv_cases(void **state) {
  (void)state;
  /* 1x1 pointwise, 3x3 pad 1, stride 2, dilation, groups, depthwise, 1-D, 3-D, auto_pad */
  conv_case(&(conv_cfg){2, 1, 8, 16, 1, {5, 6}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, NULL});
  conv_case(&(conv_cfg){2, 2, 3, 4, 1, {7, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL});
  conv_case(&(conv_cfg){2, 1, 3, 5, 1, {9, 10}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 2, 1}, 0, NULL});
  conv_case(&(conv_cfg){2, 1, 2, 4, 1, {9, 9}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, 1, NULL});
  conv_case(&(conv_cfg){2, 1, 6, 4, 2, {6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL});
  conv_case(&(conv_cfg){2, 2, 6, 6, 6, {7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, NULL});
  conv_case(&(conv_cfg){1, 2, 3, 4, 1, {11}, {3}, {2}, {1}, {1, 2}, 1, NULL});
  conv_case(&(conv_cfg){3, 1, 2, 3, 1, {4, 5, 6}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 0}, 1, NULL});
  conv_case(&(conv_cfg){2, 1, 3, 2, 1, {7, 6}, {3, 3}, {2, 2}, {1, 1}, {0}, 1, "SAME_UPPER"});
  conv_case(&(conv_cfg){2, 1, 3, 2, 1, {7, 6}, {4, 4}, {2, 1}, {1, 1}, {0}, 0, "SAME_LOWER"});
  conv_case(&(conv_cfg){2, 1, 3, 2, 1, {7, 6}, {3, 3}, {2, 2}, {1, 1}, {0}, 1, "VALID"});
  conv_case(&(conv_cfg){2, 1, 64, 32, 1, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, NULL});
  /* depthwise (one input channel per group) with a multiplier, strides, dilations, 1-D/3-D */
  conv_case(&(conv_cfg){2, 1, 4, 8, 4, {9, 7}, {3, 3}, {2, 1}, {2, 1}, {1, 2, 1, 0}, 1, NULL});
  conv_case(&(conv_cfg){1, 2, 3, 3, 3, {10}, {4}, {3}, {1}, {2, 1}, 0, NULL});
  conv_case(&(conv_cfg){3, 1, 2, 2, 2, {4, 5, 6}, {2, 2, 3}, {1, 1, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}, 1, NULL});
  conv_case(&(conv_cfg){2, 1, 8, 8, 8, {3, 3}, {5, 5}, {1, 1}, {1, 1}, {0}, 1, "SAME_UPPER"});
}


static void test_conv_errors_and_infer(void **state) {
  (void)state;
  ge_type x = ge_test_type(GE_F32, (int64_t[]){GE_DIM_SYM(0), 3, GE_DIM_UNKNOWN, 32}, 4);
  ge_type w = ge_test_type(GE_F32, (int64_t[]){8, 3, 3, 3}, 4);
  const ge_type *ins[2] = {&x, &w};
  ge_type o;
  int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
  ge_attr at[2] = {GE_ATTR_INTS("pads", pads, 4), GE_ATTR_INTS("strides", strides, 2)};
  assert_int_equal(ge_test_infer_node("Conv", 11, at, 2, ins, NULL, 2, &o, 1), GE_OK);
  assert_int_equal(o.shape.rank, 4);
  assert_true(o.shape.dims[0] == GE_DIM_SYM(0) && o.shape.dims[1] == 8 &&
              o.shape.dims[2] == GE_DIM_UNKNOWN && o.shape.dims[3] == 16);
  ge_type wbad = ge_test_type(GE_F32, (int64_t[]){8, 4, 3, 3}, 4);
  ins[1] = &wbad;
  assert_int_equal(ge_test_infer_node("Conv", 11, at, 2, ins, NULL, 2, &o, 1), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  assert_non_null(strstr(ge_last_error(), "channels"));
  ge_attr ap = GE_ATTR_STRING("auto_pad", "BOGUS");
  ins[1] = &w;
  assert_int_not_equal(ge_test_infer_node("Conv", 11, &ap, 1, ins, NULL, 2, &o, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "auto_pad"));
  ge_type ux = ge_test_type(GE_DTYPE_COUNT, NULL, -1);
  ins[0] = &ux;
  assert_int_equal(ge_test_infer_node("Conv", 11, NULL, 0, ins, NULL, 2, &o, 1), GE_OK);
  assert_int_equal(o.shape.rank, 4);
  assert_int_equal(o.shape.dims[1], 8);
}

/* ------------------------------------------------------------------ ConvTranspose */

static void test_conv_transpose(void **state) {
  (void)state;
  /* ONNX doc example: X 1x1x3x3 (0..8), W 1x2x3x3 ones -> 1x2x5x5 */
  int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 2, 3, 3};
  float xv[9], wv[18];
  for (int i = 0; i < 9; i++) xv[i] = (float)i;
  for (int i = 0; i < 18; i++) wv[i] = 1.0f;
  ge_tensor *in[2] = {ge_test_tensor_f32(dx, 4, xv), ge_test_tensor_f32(dw, 4, wv)};
  ge_tensor *out = NULL;
  assert_int_equal(run1("ConvTranspose", 11, NULL, 0, in, 2, &out), GE_OK);
  int64_t dy[4] = {1, 2, 5, 5};
  ge_test_assert_shape(out, GE_F32, dy, 4);
  static const float e[25] = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  float e2[50];
  memcpy(e2, e, sizeof e);
  memcpy(e2 + 25, e, sizeof e);
  ge_test_assert_close(out, e2, 50, 1e-5f, 0);
  ge_tensor_free(out);

  /* strides 3,2, output_padding, pads vs a naive scatter reference; group 2 */
  int64_t dx2[4] = {1, 4, 3, 4}, dw2[4] = {4, 3, 3, 2};
  ge_tensor *in2[3] = {rand_f32(dx2, 4), rand_f32(dw2, 4), rand_f32((int64_t[]){6}, 1)};
  int64_t st[2] = {3, 2}, op[2] = {1, 1}, pads[4] = {1, 0, 0, 1};
  ge_attr at[4] = {GE_ATTR_INTS("strides", st, 2), GE_ATTR_INTS("output_padding", op, 2),
                   GE_ATTR_INTS("pads", pads, 4), GE_ATTR_INT("group", 2)};
  assert_int_equal(run1("ConvTranspose", 11, at, 4, in2, 3, &out), GE_OK);
  int64_t OH = 3 * (3 - 1) + 1 + 3 - 1 - 0, OW = 2 * (4 - 1) + 1 + 2 - 0 - 1;
  assert_int_equal(out->dims[1], 6);
  assert_int_equal(out->dims[2], OH);
  assert_int_equal(out->dims[3], OW);
  double *ref = calloc((size_t)(6 * OH * OW), sizeof(double));
  for (int m = 0; m < 6; m++)
    for (int64_t q = 0; q < OH * OW; q++) ref[m * OH * OW + q] = F(in2[2])[m];
  for (int c = 0; c < 4; c++) {
    int g = c / 2;
    for (int mg = 0; mg < 3; mg++)
      for (int ih = 0; ih < 3; ih++)
        for (int iw = 0; iw < 4; iw++)
          for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 2; kw++) {
              int64_t oh = ih * 3 - 1 + kh, ow = iw * 2 - 0 + kw;
              if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
              ref[(g * 3 + mg) * OH * OW + oh * OW + ow] +=
                  (double)F(in2[0])[(c * 3 + ih) * 4 + iw] * F(in2[1])[((c * 3 + mg) * 3 + kh) * 2 + kw];
            }
  }
  expect_close_d(out, ref, (size_t)(6 * OH * OW), 1e-4);
  free(ref);
  ge_tensor_free(out);
  /* output_shape */
  int64_t os[2] = {10, 8};
  ge_attr at2[2] = {GE_ATTR_INTS("strides", st, 2), GE_ATTR_INTS("output_shape", os, 2)};
  ge_tensor *in3[2] = {in2[0], ge_test_tensor_f32((int64_t[]){4, 3, 3, 2}, 4, NULL)};
  ge_tensor_free(in3[1]);
  in3[1] = rand_f32((int64_t[]){4, 3, 3, 2}, 4);
  assert_int_equal(run1("ConvTranspose", 11, at2, 2, in3, 2, &out), GE_OK);
  assert_int_equal(out->dims[2], 10);
  assert_int_equal(out->dims[3], 8);
  ge_tensor_free(out);
  ge_tensor_free(in3[1]);
  for (int i = 0; i < 3; i++) ge_tensor_free(in2[i]);
  ge_tensor_free(in[0]);
  ge_tensor_free(in[1]);
}

/* ------------------------------------------------------------------ pooling */

static void test_maxpool(void **state) {
  (void)state;
  int64_t dx[4] = {1, 1, 4, 4};
  float xv[16];
  for (int i = 0; i < 16; i++) xv[i] = (float)(i + 1);
  ge_tensor *x = ge_test_tensor_f32(dx, 4, xv);
  int64_t k[2] = {3, 3}, s[2] = {2, 2};
  ge_attr at[3] = {GE_ATTR_INTS("kernel_shape", k, 2), GE_ATTR_INTS("strides", s, 2), GE_ATTR_INT("ceil_mode", 1)};
  ge_tensor *outs[2] = {NULL, NULL};
  assert_int_equal(ge_test_run_node("MaxPool", 12, at, 3, &x, 1, outs, 2), GE_OK);
  int64_t dy[4] = {1, 1, 2, 2};
  ge_test_assert_shape(outs[0], GE_F32, dy, 4);
  ge_test_assert_close(outs[0], (float[]){11, 12, 15, 16}, 4, 0, 0);
  ge_test_assert_ints(outs[1], (int64_t[]){10, 11, 14, 15}, 4);
  ge_tensor_free(outs[0]);
  ge_tensor_free(outs[1]);
  /* storage order 1 (column major indices) */
  ge_attr at2[3] = {GE_ATTR_INTS("kernel_shape", ((int64_t[]){2, 2}), 2), GE_ATTR_INT("storage_order", 1),
                    GE_ATTR_INTS("strides", ((int64_t[]){2, 2}), 2)};
  assert_int_equal(ge_test_run_node("MaxPool", 12, at2, 3, &x, 1, outs, 2), GE_OK);
  ge_test_assert_close(outs[0], (float[]){6, 8, 14, 16}, 4, 0, 0);
  ge_test_assert_ints(outs[1], (int64_t[]){5, 13, 7, 15}, 4);
  ge_tensor_free(outs[0]);
  ge_tensor_free(outs[1]);
  /* pads + dilation, uint8 */
  ge_tensor *xu = ge_test_tensor_from_f32(GE_U8, dx, 4, xv);
  ge_attr at3[3] = {GE_ATTR_INTS("kernel_shape", ((int64_t[]){2, 2}), 2), GE_ATTR_INTS("dilations", ((int64_t[]){2, 2}), 2),
                    GE_ATTR_INTS("pads", ((int64_t[]){1, 1, 1, 1}), 4)};
  ge_tensor *o = NULL;
  assert_int_equal(run1("MaxPool", 12, at3, 3, &xu, 1, &o), GE_OK);
  assert_int_equal(o->dtype, GE_U8);
  assert_int_equal(o->dims[2], 4);
  /* out(0,0): positions (-1,-1),(-1,1),(1,-1),(1,1) -> only (1,1)=6; out(3,3): only (2,2) */
  assert_int_equal(((uint8_t *)o->data)[0], 6);
  assert_int_equal(((uint8_t *)o->data)[15], 11);
  ge_tensor_free(o);
  ge_tensor_free(xu);
  /* 1-D default: window larger than input is an error naming the node */
  ge_attr big = GE_ATTR_INTS("kernel_shape", ((int64_t[]){5, 5}), 2);
  assert_int_not_equal(run1("MaxPool", 12, &big, 1, &x, 1, &o), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(x);
}

static void test_avgpool_lppool(void **state) {
  (void)state;
  int64_t dx[4] = {1, 1, 3, 3};
  float xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ge_tensor *x = ge_test_tensor_f32(dx, 4, xv);
  int64_t k[2] = {2, 2}, p[4] = {1, 1, 1, 1};
  ge_attr at[3] = {GE_ATTR_INTS("kernel_shape", k, 2), GE_ATTR_INTS("pads", p, 4), GE_ATTR_INT("count_include_pad", 0)};
  ge_tensor *o = NULL;
  assert_int_equal(run1("AveragePool", 19, at, 3, &x, 1, &o), GE_OK);
  assert_int_equal(o->dims[2], 4);
  float e0[16] = {1, 1.5f, 2.5f, 3, 2.5f, 3, 4, 4.5f, 5.5f, 6, 7, 7.5f, 7, 7.5f, 8.5f, 9};
  ge_test_assert_close(o, e0, 16, 1e-6f, 0);
  ge_tensor_free(o);
  at[2] = GE_ATTR_INT("count_include_pad", 1);
  assert_int_equal(run1("AveragePool", 19, at, 3, &x, 1, &o), GE_OK);
  float e1[16] = {0.25f, 0.75f, 1.25f, 0.75f, 1.25f, 3, 4, 2.25f, 2.75f, 6, 7, 3.75f, 1.75f, 3.75f, 4.25f, 2.25f};
  ge_test_assert_close(o, e1, 16, 1e-6f, 0);
  ge_tensor_free(o);
  ge_attr lp[2] = {GE_ATTR_INTS("kernel_shape", k, 2), GE_ATTR_INT("p", 2)};
  assert_int_equal(run1("LpPool", 18, lp, 2, &x, 1, &o), GE_OK);
  float e2[4] = {sqrtf(1 + 4 + 16 + 25), sqrtf(4 + 9 + 25 + 36), sqrtf(16 + 25 + 49 + 64), sqrtf(25 + 36 + 64 + 81)};
  ge_test_assert_close(o, e2, 4, 1e-5f, 1e-6f);
  ge_tensor_free(o);
  /* globals */
  assert_int_equal(run1("GlobalAveragePool", 13, NULL, 0, &x, 1, &o), GE_OK);
  ge_test_assert_shape(o, GE_F32, (int64_t[]){1, 1, 1, 1}, 4);
  ge_test_assert_close(o, (float[]){5}, 1, 1e-6f, 0);
  ge_tensor_free(o);
  assert_int_equal(run1("GlobalMaxPool", 13, NULL, 0, &x, 1, &o), GE_OK);
  ge_test_assert_close(o, (float[]){9}, 1, 0, 0);
  ge_tensor_free(o);
  assert_int_equal(run1("GlobalLpPool", 13, NULL, 0, &x, 1, &o), GE_OK);
  ge_test_assert_close(o, (float[]){sqrtf(285)}, 1, 1e-5f, 0);
  ge_tensor_free(o);
  ge_tensor_free(x);
  /* f16 average pool 1-D */
  int64_t d1[3] = {1, 2, 4};
  float v1[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ge_tensor *h = ge_test_tensor_from_f32(GE_F16, d1, 3, v1);
  ge_attr a1 = GE_ATTR_INTS("kernel_shape", ((int64_t[]){2}), 1);
  assert_int_equal(run1("AveragePool", 11, &a1, 1, &h, 1, &o), GE_OK);
  assert_int_equal(o->dtype, GE_F16);
  ge_test_assert_close(o, (float[]){1.5f, 2.5f, 3.5f, 5.5f, 6.5f, 7.5f}, 6, 1e-3f, 0);
  ge_tensor_free(o);
  ge_tensor_free(h);
}


/* Random pooling configurations against a naive reference (fast row path and the Indices path). */
static void test_pool_random(void **state) {
  (void)state;
  for (int it = 0; it < 40; it++) {
    int nsp = 1 + it % 3;
    int64_t dx[5] = {1 + it % 2, 1 + (it / 3) % 3}, k[3], st[3], dl[3], pads[6];
    for (int i = 0; i < nsp; i++) {
      dx[2 + i] = irand(5, nsp == 3 ? 7 : 10);
      k[i] = irand(1, 3);
      st[i] = irand(1, 3);
      dl[i] = irand(1, 2);
      pads[i] = irand(0, k[i] - 1);
      pads[nsp + i] = irand(0, k[i] - 1);
    }
    int ceil_mode = it % 4 == 1, cip = it % 2;
    ge_tensor *x = rand_f32(dx, (size_t)nsp + 2);
    ge_attr at[6] = {GE_ATTR_INTS("kernel_shape", k, (size_t)nsp), GE_ATTR_INTS("strides", st, (size_t)nsp),
                     GE_ATTR_INTS("dilations", dl, (size_t)nsp), GE_ATTR_INTS("pads", pads, 2 * (size_t)nsp),
                     GE_ATTR_INT("ceil_mode", ceil_mode), GE_ATTR_INT("count_include_pad", cip)};
    for (int kind = 0; kind < 3; kind++) {
      const char *op = kind == 0 ? "MaxPool" : kind == 1 ? "AveragePool" : "LpPool";
      ge_tensor *outs[2] = {0};
      size_t nout = kind == 0 && it % 2 ? 2 : 1;
      size_t na = kind == 1 ? 6 : 5;
      if (kind == 2) na = 4; /* LpPool: no ceil_mode at opset 18 is allowed, keep it simple */
      ge_status rs = ge_test_run_node(op, 19, at, na, &x, 1, outs, nout);
      assert_int_equal(rs, GE_OK);
      ge_tensor *y = outs[0];
      size_t So = 1, Si = 1;
      for (int i = 0; i < nsp; i++) { So *= (size_t)y->dims[2 + i]; Si *= (size_t)dx[2 + i]; }
      double *ref = calloc(y->numel, sizeof(double));
      for (size_t pl = 0; pl < (size_t)(dx[0] * dx[1]); pl++)
        for (size_t q = 0; q < So; q++) {
          int64_t o[3], rem = (int64_t)q;
          for (int i = nsp - 1; i >= 0; i--) { o[i] = rem % y->dims[2 + i]; rem /= y->dims[2 + i]; }
          double acc = kind == 0 ? -INFINITY : 0;
          int64_t cnt = 0, cntp = 0;
          int64_t kq = 1;
          for (int i = 0; i < nsp; i++) kq *= k[i];
          for (int64_t w = 0; w < kq; w++) {
            int64_t kk[3], r2 = w;
            for (int i = nsp - 1; i >= 0; i--) { kk[i] = r2 % k[i]; r2 /= k[i]; }
            bool ok = true, okp = true;
            size_t off = 0;
            for (int i = 0; i < nsp; i++) {
              int64_t pos = o[i] * st[i] - pads[i] + kk[i] * dl[i];
              if (pos < 0 || pos >= dx[2 + i]) ok = false;
              if (pos < -pads[i] || pos >= dx[2 + i] + pads[nsp + i]) okp = false;
              off = off * (size_t)dx[2 + i] + (size_t)(pos < 0 ? 0 : pos);
            }
            if (okp) cntp++;
            if (!ok) continue;
            cnt++;
            double v = F(x)[pl * Si + off];
            if (kind == 0) acc = v > acc ? v : acc;
            else if (kind == 1) acc += v;
            else acc += v * v;
          }
          if (kind == 1) acc /= (double)(cip ? cntp : cnt);
          if (kind == 2) acc = sqrt(acc);
          ref[pl * So + q] = acc;
        }
      expect_close_d(y, ref, y->numel, 1e-5);
      if (nout == 2) {
        for (size_t e = 0; e < y->numel; e++)
          assert_true(F(x)[((int64_t *)outs[1]->data)[e]] == F(y)[e]);
        ge_tensor_free(outs[1]);
      }
      free(ref);
      ge_tensor_free(y);
    }
    ge_tensor_free(x);
  }
}

static void test_pool_infer(void **state) {
  (void)state;
  ge_type x = ge_test_type(GE_F32, (int64_t[]){GE_DIM_SYM(1), 64, 112, GE_DIM_UNKNOWN}, 4);
  const ge_type *ins[1] = {&x};
  ge_type o[2];
  ge_attr at[3] = {GE_ATTR_INTS("kernel_shape", ((int64_t[]){3, 3}), 2), GE_ATTR_INTS("strides", ((int64_t[]){2, 2}), 2),
                   GE_ATTR_INTS("pads", ((int64_t[]){1, 1, 1, 1}), 4)};
  assert_int_equal(ge_test_infer_node("MaxPool", 12, at, 3, ins, NULL, 1, o, 2), GE_OK);
  assert_true(o[0].shape.dims[0] == GE_DIM_SYM(1) && o[0].shape.dims[1] == 64 && o[0].shape.dims[2] == 56 &&
              o[0].shape.dims[3] == GE_DIM_UNKNOWN);
  assert_int_equal(o[1].dtype, GE_I64);
  assert_int_not_equal(ge_test_infer_node("MaxPool", 12, NULL, 0, ins, NULL, 1, o, 1), GE_OK);
  assert_non_null(strstr(ge_last_error(), "kernel_shape"));
}

/* ------------------------------------------------------------------ normalisation */

static void test_batchnorm(void **state) {
  (void)state;
  int64_t dx[4] = {2, 3, 2, 2};
  ge_tensor *in[5] = {rand_f32(dx, 4)};
  float sc[3] = {1, 2, 0.5f}, b[3] = {0, 1, -1}, mu[3] = {0.1f, -0.2f, 0.3f}, var[3] = {1, 0.5f, 2};
  in[1] = ge_test_tensor_f32((int64_t[]){3}, 1, sc);
  in[2] = ge_test_tensor_f32((int64_t[]){3}, 1, b);
  in[3] = ge_test_tensor_f32((int64_t[]){3}, 1, mu);
  in[4] = ge_test_tensor_f32((int64_t[]){3}, 1, var);
  ge_attr eps = GE_ATTR_FLOAT("epsilon", 1e-3f);
  ge_tensor *o = NULL;
  assert_int_equal(run1("BatchNormalization", 15, &eps, 1, in, 5, &o), GE_OK);
  double ref[24];
  for (int i = 0; i < 24; i++) {
    int c = (i / 4) % 3;
    ref[i] = sc[c] * (F(in[0])[i] - mu[c]) / sqrt(var[c] + 1e-3) + b[c];
  }
  expect_close_d(o, ref, 24, 1e-5);
  ge_tensor_free(o);
  /* training mode: batch statistics and running outputs */
  ge_attr tm[2] = {eps, GE_ATTR_INT("training_mode", 1)};
  ge_tensor *outs[3] = {0};
  assert_int_equal(ge_test_run_node("BatchNormalization", 15, tm, 2, in, 5, outs, 3), GE_OK);
  for (int c = 0; c < 3; c++) {
    double m = 0, v = 0;
    for (int n = 0; n < 2; n++) for (int k = 0; k < 4; k++) m += F(in[0])[(n * 3 + c) * 4 + k];
    m /= 8;
    for (int n = 0; n < 2; n++) for (int k = 0; k < 4; k++) { double d = F(in[0])[(n * 3 + c) * 4 + k] - m; v += d * d; }
    v /= 8;
    assert_true(fabs(F(outs[1])[c] - (mu[c] * 0.9 + m * 0.1)) < 1e-5);
    assert_true(fabs(F(outs[2])[c] - (var[c] * 0.9 + v * 0.1)) < 1e-5);
    double y0 = sc[c] * (F(in[0])[c * 4] - m) / sqrt(v + 1e-3) + b[c];
    assert_true(fabs(F(outs[0])[c * 4] - y0) < 1e-4);
  }
  for (int i = 0; i < 3; i++) ge_tensor_free(outs[i]);
  for (int i = 0; i < 5; i++) ge_tensor_free(in[i]);
}

static void test_instance_group_layer_norm(void **state) {
  (void)state;
  int64_t dx[3] = {2, 4, 5};
  ge_tensor *x = rand_f32(dx, 3);
  float sc[4] = {1, 2, 3, 4}, bi[4] = {0.5f, -0.5f, 0, 1};
  ge_tensor *in[3] = {x, ge_test_tensor_f32((int64_t[]){4}, 1, sc), ge_test_tensor_f32((int64_t[]){4}, 1, bi)};
  ge_tensor *o = NULL;
  assert_int_equal(run1("InstanceNormalization", 13, NULL, 0, in, 3, &o), GE_OK);
  double ref[40];
  for (int nc = 0; nc < 8; nc++) {
    double m = 0, v = 0;
    for (int k = 0; k < 5; k++) m += F(x)[nc * 5 + k];
    m /= 5;
    for (int k = 0; k < 5; k++) v += (F(x)[nc * 5 + k] - m) * (F(x)[nc * 5 + k] - m);
    v /= 5;
    for (int k = 0; k < 5; k++) ref[nc * 5 + k] = sc[nc % 4] * (F(x)[nc * 5 + k] - m) / sqrt(v + 1e-5) + bi[nc % 4];
  }
  expect_close_d(o, ref, 40, 1e-4);
  ge_tensor_free(o);
  /* GroupNormalization opset 21: 2 groups, per-channel scale */
  ge_attr ng = GE_ATTR_INT("num_groups", 2);
  assert_int_equal(run1("GroupNormalization", 21, &ng, 1, in, 3, &o), GE_OK);
  for (int n = 0; n < 2; n++)
    for (int g = 0; g < 2; g++) {
      double m = 0, v = 0;
      const float *p = F(x) + (n * 4 + g * 2) * 5;
      for (int k = 0; k < 10; k++) m += p[k];
      m /= 10;
      for (int k = 0; k < 10; k++) v += (p[k] - m) * (p[k] - m);
      v /= 10;
      for (int k = 0; k < 10; k++) {
        int ch = g * 2 + k / 5;
        ref[(n * 4 + g * 2) * 5 + k] = sc[ch] * (p[k] - m) / sqrt(v + 1e-5) + bi[ch];
      }
    }
  expect_close_d(o, ref, 40, 1e-4);
  ge_tensor_free(o);
  /* opset 18: per-group scale must have num_groups entries -> error names the node */
  assert_int_not_equal(run1("GroupNormalization", 18, &ng, 1, in, 3, &o), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(in[1]);
  ge_tensor_free(in[2]);
  /* LayerNormalization axis=1 over [4,5], scale [5] broadcast, Mean and InvStdDev */
  float s5[5] = {1, 2, 3, 4, 5};
  in[1] = ge_test_tensor_f32((int64_t[]){5}, 1, s5);
  in[2] = NULL;
  ge_attr ax = GE_ATTR_INT("axis", 1);
  ge_tensor *outs[3] = {0};
  assert_int_equal(ge_test_run_node("LayerNormalization", 17, &ax, 1, in, 2, outs, 3), GE_OK);
  ge_test_assert_shape(outs[1], GE_F32, (int64_t[]){2, 1, 1}, 3);
  for (int n = 0; n < 2; n++) {
    double m = 0, v = 0;
    const float *p = F(x) + n * 20;
    for (int k = 0; k < 20; k++) m += p[k];
    m /= 20;
    for (int k = 0; k < 20; k++) v += (p[k] - m) * (p[k] - m);
    v /= 20;
    for (int k = 0; k < 20; k++) ref[n * 20 + k] = s5[k % 5] * (p[k] - m) / sqrt(v + 1e-5);
    assert_true(fabs(F(outs[1])[n] - m) < 1e-5);
    assert_true(fabs(F(outs[2])[n] - 1 / sqrt(v + 1e-5)) < 1e-3);
  }
  expect_close_d(outs[0], ref, 40, 1e-4);
  for (int i = 0; i < 3; i++) ge_tensor_free(outs[i]);
  ge_tensor_free(in[1]);
  ge_tensor_free(x);
}

static void test_lrn_mvn(void **state) {
  (void)state;
  int64_t dx[4] = {1, 5, 2, 1};
  ge_tensor *x = rand_f32(dx, 4);
  ge_attr at[4] = {GE_ATTR_INT("size", 3), GE_ATTR_FLOAT("alpha", 0.02f), GE_ATTR_FLOAT("beta", 0.5f), GE_ATTR_FLOAT("bias", 2.0f)};
  ge_tensor *o = NULL;
  assert_int_equal(run1("LRN", 13, at, 4, &x, 1, &o), GE_OK);
  double ref[10];
  for (int c = 0; c < 5; c++)
    for (int q = 0; q < 2; q++) {
      double s = 0;
      for (int cc = c - 1; cc <= c + 1; cc++)
        if (cc >= 0 && cc < 5) s += (double)F(x)[cc * 2 + q] * F(x)[cc * 2 + q];
      ref[c * 2 + q] = F(x)[c * 2 + q] / pow(2.0 + 0.02 / 3 * s, 0.5);
    }
  expect_close_d(o, ref, 10, 1e-5);
  ge_tensor_free(o);
  /* MVN default axes [0,2,3]: per channel */
  assert_int_equal(run1("MeanVarianceNormalization", 13, NULL, 0, &x, 1, &o), GE_OK);
  for (int c = 0; c < 5; c++) {
    double a = F(x)[c * 2], b = F(x)[c * 2 + 1], m = (a + b) / 2, sd = fabs(a - b) / 2;
    assert_true(fabs(F(o)[c * 2] - (a - m) / (sd + 1e-9)) < 1e-3);
  }
  ge_tensor_free(o);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ softmax family */

static void test_softmax_family(void **state) {
  (void)state;
  int64_t dx[3] = {2, 3, 4};
  ge_tensor *x = rand_f32(dx, 3);
  ge_attr ax = GE_ATTR_INT("axis", 1);
  ge_tensor *o = NULL;
  /* opset 13: softmax over dim 1 only */
  assert_int_equal(run1("Softmax", 13, &ax, 1, &x, 1, &o), GE_OK);
  double ref[24];
  for (int n = 0; n < 2; n++)
    for (int k = 0; k < 4; k++) {
      double s = 0;
      for (int c = 0; c < 3; c++) s += exp(F(x)[(n * 3 + c) * 4 + k]);
      for (int c = 0; c < 3; c++) ref[(n * 3 + c) * 4 + k] = exp(F(x)[(n * 3 + c) * 4 + k]) / s;
    }
  expect_close_d(o, ref, 24, 1e-5);
  ge_tensor_free(o);
  /* opset 11: flatten to [2, 12] */
  assert_int_equal(run1("Softmax", 11, &ax, 1, &x, 1, &o), GE_OK);
  for (int n = 0; n < 2; n++) {
    double s = 0;
    for (int k = 0; k < 12; k++) s += exp(F(x)[n * 12 + k]);
    for (int k = 0; k < 12; k++) ref[n * 12 + k] = exp(F(x)[n * 12 + k]) / s;
  }
  expect_close_d(o, ref, 24, 1e-5);
  ge_tensor_free(o);
  /* LogSoftmax default axis (opset 13: -1) */
  assert_int_equal(run1("LogSoftmax", 13, NULL, 0, &x, 1, &o), GE_OK);
  for (int r = 0; r < 6; r++) {
    double s = 0;
    for (int k = 0; k < 4; k++) s += exp(F(x)[r * 4 + k]);
    for (int k = 0; k < 4; k++) ref[r * 4 + k] = F(x)[r * 4 + k] - log(s);
  }
  expect_close_d(o, ref, 24, 1e-5);
  ge_tensor_free(o);
  ge_tensor_free(x);
  /* Hardmax: first maximum wins */
  float hv[6] = {1, 3, 3, 0, -1, -2};
  ge_tensor *h = ge_test_tensor_f32((int64_t[]){2, 3}, 2, hv);
  assert_int_equal(run1("Hardmax", 13, NULL, 0, &h, 1, &o), GE_OK);
  ge_test_assert_close(o, (float[]){0, 1, 0, 1, 0, 0}, 6, 0, 0);
  ge_tensor_free(o);
  ge_attr bad = GE_ATTR_INT("axis", 2);
  assert_int_not_equal(run1("Softmax", 13, &bad, 1, &h, 1, &o), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(h);
  /* bf16 softmax */
  ge_tensor *b = ge_test_tensor_from_f32(GE_BF16, (int64_t[]){1, 2}, 2, (float[]){0, 0});
  assert_int_equal(run1("Softmax", 13, NULL, 0, &b, 1, &o), GE_OK);
  assert_int_equal(o->dtype, GE_BF16);
  ge_test_assert_close(o, (float[]){0.5f, 0.5f}, 2, 1e-3f, 0);
  ge_tensor_free(o);
  ge_tensor_free(b);
}

/* ------------------------------------------------------------------ Dropout / Flatten / Einsum */

static void test_dropout_flatten(void **state) {
  (void)state;
  int64_t dx[4] = {2, 3, 4, 5};
  ge_tensor *x = rand_f32(dx, 4);
  ge_tensor *outs[2] = {0};
  assert_int_equal(ge_test_run_node("Dropout", 13, NULL, 0, &x, 1, outs, 2), GE_OK);
  assert_memory_equal(outs[0]->data, x->data, x->nbytes);
  assert_int_equal(outs[1]->dtype, GE_BOOL);
  for (size_t i = 0; i < outs[1]->numel; i++) assert_int_equal(((uint8_t *)outs[1]->data)[i], 1);
  ge_tensor_free(outs[0]);
  ge_tensor_free(outs[1]);
  /* training_mode = true: y is x / (1 - ratio) where the mask keeps it, else 0 */
  bool tr = true;
  ge_tensor *in3[3] = {x, ge_test_tensor_f32(NULL, 0, (float[]){0.25f}), ge_test_tensor_bool(NULL, 0, &tr)};
  ge_tensor *o = NULL;
  assert_int_equal(ge_test_run_node("Dropout", 13, NULL, 0, in3, 3, outs, 2), GE_OK);
  for (size_t i = 0; i < x->numel; i++) {
    bool keep = ((uint8_t *)outs[1]->data)[i] != 0;
    float want = keep ? F(x)[i] / 0.75f : 0.0f;
    assert_true(fabsf(F(outs[0])[i] - want) <= 1e-5f);
  }
  ge_tensor_free(outs[0]);
  ge_tensor_free(outs[1]);
  ge_tensor_free(in3[1]);
  ge_tensor_free(in3[2]);
  ge_attr ax = GE_ATTR_INT("axis", 2);
  assert_int_equal(run1("Flatten", 13, &ax, 1, &x, 1, &o), GE_OK);
  ge_test_assert_shape(o, GE_F32, (int64_t[]){6, 20}, 2);
  assert_memory_equal(o->data, x->data, x->nbytes);
  ge_tensor_free(o);
  ax = GE_ATTR_INT("axis", -4);
  assert_int_equal(run1("Flatten", 13, &ax, 1, &x, 1, &o), GE_OK);
  ge_test_assert_shape(o, GE_F32, (int64_t[]){1, 120}, 2);
  ge_tensor_free(o);
  ax = GE_ATTR_INT("axis", 4);
  assert_int_equal(run1("Flatten", 13, &ax, 1, &x, 1, &o), GE_OK);
  ge_test_assert_shape(o, GE_F32, (int64_t[]){120, 1}, 2);
  ge_tensor_free(o);
  ge_tensor_free(x);
  /* Flatten inference with a symbolic batch */
  ge_type t = ge_test_type(GE_F32, (int64_t[]){GE_DIM_SYM(0), 2048, 1, 1}, 4);
  const ge_type *ins[1] = {&t};
  ge_type ot;
  assert_int_equal(ge_test_infer_node("Flatten", 13, NULL, 0, ins, NULL, 1, &ot, 1), GE_OK);
  assert_true(ot.shape.rank == 2 && ot.shape.dims[0] == GE_DIM_SYM(0) && ot.shape.dims[1] == 2048);
}

static void test_einsum(void **state) {
  (void)state;
  ge_tensor *a = rand_f32((int64_t[]){2, 3, 4}, 3), *b = rand_f32((int64_t[]){2, 4, 5}, 3);
  ge_tensor *in[2] = {a, b}, *o = NULL;
  ge_attr eq = GE_ATTR_STRING("equation", "bij,bjk->bik");
  assert_int_equal(run1("Einsum", 12, &eq, 1, in, 2, &o), GE_OK);
  ge_tensor *mm = NULL;
  assert_int_equal(run1("MatMul", 13, NULL, 0, in, 2, &mm), GE_OK);
  ge_test_assert_close(o, F(mm), mm->numel, 1e-5f, 1e-5f);
  ge_tensor_free(o);
  ge_tensor_free(mm);
  /* implicit output, transpose, trace, diagonal, ellipsis, dot */
  ge_tensor *sq = rand_f32((int64_t[]){3, 3}, 2);
  eq = GE_ATTR_STRING("equation", "ii");
  assert_int_equal(run1("Einsum", 12, &eq, 1, &sq, 1, &o), GE_OK);
  assert_int_equal(o->rank, 0);
  ge_test_assert_close(o, (float[]){F(sq)[0] + F(sq)[4] + F(sq)[8]}, 1, 1e-5f, 0);
  ge_tensor_free(o);
  eq = GE_ATTR_STRING("equation", "ii->i");
  assert_int_equal(run1("Einsum", 12, &eq, 1, &sq, 1, &o), GE_OK);
  ge_test_assert_close(o, (float[]){F(sq)[0], F(sq)[4], F(sq)[8]}, 3, 0, 0);
  ge_tensor_free(o);
  eq = GE_ATTR_STRING("equation", "ji");
  assert_int_equal(run1("Einsum", 12, &eq, 1, &sq, 1, &o), GE_OK); /* implicit: "ij" sorted -> transpose */
  ge_test_assert_close(o, (float[]){F(sq)[0], F(sq)[3], F(sq)[6], F(sq)[1], F(sq)[4], F(sq)[7], F(sq)[2], F(sq)[5], F(sq)[8]}, 9, 0, 0);
  ge_tensor_free(o);
  eq = GE_ATTR_STRING("equation", "...ij,...jk->...ik");
  assert_int_equal(run1("Einsum", 12, &eq, 1, in, 2, &o), GE_OK);
  ge_test_assert_shape(o, GE_F32, (int64_t[]){2, 3, 5}, 3);
  ge_tensor_free(o);
  eq = GE_ATTR_STRING("equation", "ij,kj");
  ge_tensor *c2[2] = {sq, sq};
  assert_int_equal(run1("Einsum", 12, &eq, 1, c2, 2, &o), GE_OK);
  ge_test_assert_shape(o, GE_F32, (int64_t[]){3, 3}, 2);
  double r01 = 0;
  for (int j = 0; j < 3; j++) r01 += (double)F(sq)[j] * F(sq)[3 + j];
  assert_true(fabs(F(o)[1] - r01) < 1e-5);
  ge_tensor_free(o);
  eq = GE_ATTR_STRING("equation", "ij,jk->iq");
  assert_int_not_equal(run1("Einsum", 12, &eq, 1, in, 2, &o), GE_OK);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  /* attention-like and permuted outputs (the GEMM path) against loops */
  {
    ge_tensor *q = rand_f32((int64_t[]){2, 3, 4, 5}, 4), *k = rand_f32((int64_t[]){2, 3, 6, 5}, 4);
    ge_tensor *qk[2] = {q, k};
    eq = GE_ATTR_STRING("equation", "bhid,bhjd->bhij");
    assert_int_equal(run1("Einsum", 12, &eq, 1, qk, 2, &o), GE_OK);
    ge_test_assert_shape(o, GE_F32, (int64_t[]){2, 3, 4, 6}, 4);
    double ref[144];
    for (int bh = 0; bh < 6; bh++)
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) {
          double acc = 0;
          for (int d = 0; d < 5; d++) acc += (double)F(q)[(bh * 4 + i) * 5 + d] * F(k)[(bh * 6 + j) * 5 + d];
          ref[(bh * 4 + i) * 6 + j] = acc;
        }
    expect_close_d(o, ref, 144, 1e-5);
    ge_tensor_free(o);
    ge_tensor *x3 = rand_f32((int64_t[]){2, 3, 4}, 3), *w2 = rand_f32((int64_t[]){4, 5}, 2);
    ge_tensor *xw[2] = {x3, w2};
    eq = GE_ATTR_STRING("equation", "abc,cd->dba");
    assert_int_equal(run1("Einsum", 12, &eq, 1, xw, 2, &o), GE_OK);
    ge_test_assert_shape(o, GE_F32, (int64_t[]){5, 3, 2}, 3);
    double r2[30];
    for (int d = 0; d < 5; d++)
      for (int bb = 0; bb < 3; bb++)
        for (int a2 = 0; a2 < 2; a2++) {
          double acc = 0;
          for (int c = 0; c < 4; c++) acc += (double)F(x3)[(a2 * 3 + bb) * 4 + c] * F(w2)[c * 5 + d];
          r2[(d * 3 + bb) * 2 + a2] = acc;
        }
    expect_close_d(o, r2, 30, 1e-5);
    ge_tensor_free(o);
    /* outer product, and a label summed within one operand (naive path) */
    eq = GE_ATTR_STRING("equation", "abc,cd->ad");
    assert_int_equal(run1("Einsum", 12, &eq, 1, xw, 2, &o), GE_OK);
    double r3[10];
    for (int a2 = 0; a2 < 2; a2++)
      for (int d = 0; d < 5; d++) {
        double acc = 0;
        for (int bb = 0; bb < 3; bb++)
          for (int c = 0; c < 4; c++) acc += (double)F(x3)[(a2 * 3 + bb) * 4 + c] * F(w2)[c * 5 + d];
        r3[a2 * 5 + d] = acc;
      }
    expect_close_d(o, r3, 10, 1e-5);
    ge_tensor_free(o);
    ge_tensor_free(q);
    ge_tensor_free(k);
    ge_tensor_free(x3);
    ge_tensor_free(w2);
  }
  /* int64 */
  ge_tensor *ia = ge_test_tensor_i64((int64_t[]){3}, 1, (int64_t[]){1, 2, 3});
  ge_tensor *ii[2] = {ia, ia};
  eq = GE_ATTR_STRING("equation", "i,i->");
  assert_int_equal(run1("Einsum", 12, &eq, 1, ii, 2, &o), GE_OK);
  ge_test_assert_ints(o, (int64_t[]){14}, 1);
  ge_tensor_free(o);
  ge_tensor_free(ia);
  ge_tensor_free(sq);
  ge_tensor_free(a);
  ge_tensor_free(b);
}

/* ------------------------------------------------------------------ threads */

static void test_conv_threads_direct(void **state) {
  (void)state;
  /* run the kernel directly with ctx->threads = 2 and compare with threads = 1 */
  int64_t dx[4] = {1, 16, 20, 20}, dw[4] = {32, 16, 3, 3};
  ge_tensor *x = rand_f32(dx, 4), *w = rand_f32(dw, 4);
  ge_tensor *in[2] = {x, w}, *o1 = NULL;
  int64_t pads[4] = {1, 1, 1, 1};
  ge_attr at = GE_ATTR_INTS("pads", pads, 4);
  assert_int_equal(run1("Conv", 13, &at, 1, in, 2, &o1), GE_OK);
  const ge_kernel *k = ge_cpu_find_kernel("", "Conv", 13);
  assert_non_null(k);
  ge_graph *g = ge_graph_new("t", NULL);
  assert_non_null(g);
  const char *ins[2] = {"x", "w"}, *outs[1] = {"y"};
  int32_t nid;
  assert_int_equal(ge_graph_append_node(g, "Conv", "", "conv_t", ins, 2, outs, 1, &nid), GE_OK);
  ge_node *node = &g->nodes[nid];
  node->opset = 13;
  ge_attr_value av;
  assert_int_equal(ge_attr_value_from_public(&av, &at, g), GE_OK);
  assert_int_equal(ge_node_add_attr(node, &av), GE_OK);
  ge_type tx = ge_test_type(GE_F32, dx, 4), tw = ge_test_type(GE_F32, dw, 4);
  ge_infer_input ii[2] = {{true, &tx, NULL}, {true, &tw, NULL}};
  ge_type ty = ge_test_type(GE_F32, o1->dims, 4);
  ge_prepare_ctx pc = {.graph = g, .node = node, .opset = 13, .n_in = 2, .n_out = 1, .in = ii, .out = &ty, .intra_threads = 2};
  void *st = NULL;
  assert_int_equal(k->prepare(&pc, &st), GE_OK);
  ge_tensor y;
  assert_int_equal(ge_tensor_init_alloc(&y, GE_F32, o1->dims, 4), GE_OK);
  ge_tensor *yp = &y;
  ge_kctx kc = {.node = node, .n_in = 2, .n_out = 1, .in = in, .out = &yp, .threads = 2, .exec = NULL};
  assert_int_equal(k->run(st, &kc), GE_OK);
  ge_test_assert_close(&y, F(o1), o1->numel, 1e-5f, 1e-5f);
  if (k->release) k->release(st);
  ge_tensor_release_storage(&y);
  ge_graph_free(g);
  ge_tensor_free(o1);
  ge_tensor_free(x);
  ge_tensor_free(w);
}


/* ------------------------------------------------------------------ float64 keeps its precision */

static ge_tensor *rand_f64(const int64_t *d, size_t r) {
  size_t n = ge_test_numel(d, r);
  double *v = malloc((n + 1) * sizeof(double));
  for (size_t i = 0; i < n; i++) v[i] = (double)frand() + 1e-9 * frand();
  ge_tensor *t = ge_test_tensor_f64(d, r, v);
  free(v);
  return t;
}

static const double *D(const ge_tensor *t) { return (const double *)t->data; }

static void test_float64_precision(void **state) {
  (void)state;
  /* Gemm */
  int64_t da[2] = {7, 9}, db[2] = {9, 5};
  ge_tensor *in[3] = {rand_f64(da, 2), rand_f64(db, 2), NULL};
  ge_tensor *o = NULL;
  assert_int_equal(run1("Gemm", 13, NULL, 0, in, 2, &o), GE_OK);
  assert_int_equal(o->dtype, GE_F64);
  for (int m = 0; m < 7; m++)
    for (int n = 0; n < 5; n++) {
      double s = 0;
      for (int k = 0; k < 9; k++) s += D(in[0])[m * 9 + k] * D(in[1])[k * 5 + n];
      assert_true(fabs(D(o)[m * 5 + n] - s) < 1e-13);
    }
  ge_tensor_free(o);
  assert_int_equal(run1("MatMul", 13, NULL, 0, in, 2, &o), GE_OK);
  double s00 = 0;
  for (int k = 0; k < 9; k++) s00 += D(in[0])[k] * D(in[1])[k * 5];
  assert_true(fabs(D(o)[0] - s00) < 1e-13);
  ge_tensor_free(o);
  ge_tensor_free(in[0]);
  ge_tensor_free(in[1]);
  /* Conv */
  int64_t dx[4] = {1, 2, 5, 5}, dw[4] = {3, 2, 3, 3};
  in[0] = rand_f64(dx, 4);
  in[1] = rand_f64(dw, 4);
  ge_attr at = GE_ATTR_INTS("pads", ((int64_t[]){1, 1, 1, 1}), 4);
  assert_int_equal(run1("Conv", 13, &at, 1, in, 2, &o), GE_OK);
  assert_int_equal(o->dtype, GE_F64);
  double c0 = 0; /* output (0,0,2,2): full window */
  for (int c = 0; c < 2; c++)
    for (int kh = 0; kh < 3; kh++)
      for (int kw = 0; kw < 3; kw++) c0 += D(in[0])[(c * 5 + 1 + kh) * 5 + 1 + kw] * D(in[1])[(c * 3 + kh) * 3 + kw];
  assert_true(fabs(D(o)[2 * 5 + 2] - c0) < 1e-13);
  ge_tensor_free(o);
  /* Softmax / AveragePool */
  assert_int_equal(run1("Softmax", 13, NULL, 0, in, 1, &o), GE_OK);
  double sm = 0;
  for (int k = 0; k < 5; k++) sm += exp(D(in[0])[k]);
  assert_true(fabs(D(o)[0] - exp(D(in[0])[0]) / sm) < 1e-14);
  ge_tensor_free(o);
  ge_attr ks = GE_ATTR_INTS("kernel_shape", ((int64_t[]){2, 2}), 2);
  assert_int_equal(run1("AveragePool", 13, &ks, 1, in, 1, &o), GE_OK);
  double av = (D(in[0])[0] + D(in[0])[1] + D(in[0])[5] + D(in[0])[6]) / 4;
  assert_true(fabs(D(o)[0] - av) < 1e-15);
  ge_tensor_free(o);
  ge_tensor_free(in[0]);
  ge_tensor_free(in[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_random),
      cmocka_unit_test(test_gemm_int_and_f16),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_matmul_integer),
      cmocka_unit_test(test_matmul_infer),
      cmocka_unit_test(test_conv_cases),
      cmocka_unit_test(test_conv_errors_and_infer),
      cmocka_unit_test(test_conv_transpose),
      cmocka_unit_test(test_maxpool),
      cmocka_unit_test(test_avgpool_lppool),
      cmocka_unit_test(test_pool_random),
      cmocka_unit_test(test_pool_infer),
      cmocka_unit_test(test_batchnorm),
      cmocka_unit_test(test_instance_group_layer_norm),
      cmocka_unit_test(test_lrn_mvn),
      cmocka_unit_test(test_softmax_family),
      cmocka_unit_test(test_dropout_flatten),
      cmocka_unit_test(test_einsum),
      cmocka_unit_test(test_conv_threads_direct),
      cmocka_unit_test(test_float64_precision),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
