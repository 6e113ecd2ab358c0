/* The oneDNN fast kernels against the reference kernels: every case builds one node, prepares
 * each candidate kernel (ge_cpu_find_kernels: fast first, reference last) with the weights as
 * constants and the activations as run-time inputs, runs them on the same random data and
 * compares.  Cases cover odd sizes, tails, groups, depthwise, dilations, asymmetric pads,
 * broadcast batch dims, transposes and every fused activation. */
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

#include "backend/kernel.h"
#include "helpers/ops_harness.h"
#include "helpers/test_common.h"
#include "ir/ir.h"
#include "ops/op.h"

#define MAX_IO 8

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static ge_tensor *rand_t(const int64_t *d, size_t r) { return ge_test_rand_f32(&rng, d, r, 1.f); }

typedef struct node_ctx {
  ge_graph *g;
  ge_node *node;
  ge_type in_t[MAX_IO], out_t[MAX_IO];
  ge_infer_input ins[MAX_IO];
  size_t n_in, n_out;
} node_ctx;

/* Builds the graph and runs inference.  const_mask bit i: input i is a compile-time constant. */
static void build(node_ctx *c, const char *op, int64_t opset, const ge_attr *attrs, size_t na,
                  ge_tensor *const *in, size_t n_in, size_t n_out, unsigned const_mask) {
  memset(c, 0, sizeof *c);
  c->n_in = n_in;
  c->n_out = n_out;
  assert_int_equal(ge_graph_create("t", &c->g), GE_OK);
  assert_int_equal(ge_graph_set_opset(c->g, "", opset), GE_OK);
  assert_int_equal(ge_graph_set_opset(c->g, "ai.ge", 1), GE_OK);
  const char *in_names[MAX_IO], *out_names[MAX_IO];
  char ib[MAX_IO][24], ob[MAX_IO][24];
  for (size_t i = 0; i < n_in; i++) {
    if (!in[i]) {
      in_names[i] = "";
      continue;
    }
    snprintf(ib[i], sizeof ib[i], "i%zu", i);
    in_names[i] = ib[i];
    assert_int_equal(ge_graph_add_input(c->g, ib[i], GE_F32, in[i]->dims, (size_t)in[i]->rank), GE_OK);
    c->in_t[i] = ge_test_type(GE_F32, in[i]->dims, in[i]->rank);
    c->ins[i].present = true;
    c->ins[i].type = &c->in_t[i];
    c->ins[i].value = (const_mask >> i) & 1u ? in[i] : NULL;
  }
  for (size_t o = 0; o < n_out; o++) {
    snprintf(ob[o], sizeof ob[o], "o%zu", o);
    out_names[o] = ob[o];
  }
  assert_int_equal(ge_graph_add_node(c->g, op, "n", in_names, n_in, out_names, n_out, attrs, na), GE_OK);
  c->node = &c->g->nodes[c->g->n_nodes - 1];
  if (c->node->opset == 0) c->node->opset = opset;
  ge_infer_ctx ic = {.graph = c->g, .node = c->node, .opset = c->node->opset, .n_in = n_in, .n_out = n_out,
                     .in = c->ins, .out = c->out_t};
  ge_status st = ge_op_infer(&ic);
  if (st != GE_OK) fprintf(stderr, "infer: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
}

static ge_status run_kernel(node_ctx *c, const ge_kernel *k, void *state, ge_tensor *const *in, ge_tensor **out,
                            int threads) {
  ge_kctx kc = {.node = c->node, .n_in = c->n_in, .n_out = c->n_out, .in = in, .out = out, .threads = threads};
  return k->run(state, &kc);
}

static ge_tensor *alloc_out(const node_ctx *c, size_t o) {
  ge_tensor *t = NULL;
  assert_true(ge_shape_is_static(&c->out_t[o].shape));
  int64_t one = 1;
  const int64_t *dims = c->out_t[o].shape.rank ? c->out_t[o].shape.dims : &one;
  assert_int_equal(ge_tensor_create(GE_F32, dims, c->out_t[o].shape.rank ? (size_t)c->out_t[o].shape.rank : 1, &t),
                   GE_OK);
  return t;
}

static void compare(const ge_tensor *a, const ge_tensor *b, double atol, double rtol, const char *what) {
  assert_int_equal(a->numel, b->numel);
  const float *x = a->data, *y = b->data;
  for (size_t i = 0; i < a->numel; i++) {
    if (!(fabs((double)x[i] - y[i]) <= atol + rtol * fabs((double)y[i]))) {
      fprintf(stderr, "%s: element %zu: fast %.7g reference %.7g\n", what, i, x[i], y[i]);
      fail();
    }
  }
}

/* Runs the fast kernel and the reference kernel on the same inputs and compares.  expect_fast:
   the fast kernel must accept the node (not decline). */
static void check_op(const char *op, int64_t opset, const ge_attr *attrs, size_t na, ge_tensor *const *in,
                     size_t n_in, unsigned const_mask, bool expect_fast, double tol) {
  node_ctx c;
  build(&c, op, opset, attrs, na, in, n_in, 1, const_mask);
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(c.node->domain, c.node->op_type, c.node->opset, cand, 8);
  const ge_kernel *ref = ge_cpu_find_kernel(c.node->domain, c.node->op_type, c.node->opset);
  assert_non_null(ref);
  assert_true(nc >= 1);
  assert_ptr_equal(cand[nc - 1], ref);
  ge_prepare_ctx pc = {.graph = c.g, .node = c.node, .opset = c.node->opset, .n_in = n_in, .n_out = 1,
                       .in = c.ins, .out = c.out_t, .intra_threads = 2};
  void *rs = NULL;
  if (ref->prepare) assert_int_equal(ref->prepare(&pc, &rs), GE_OK);
  ge_tensor *ro = alloc_out(&c, 0);
  assert_int_equal(run_kernel(&c, ref, rs, in, &ro, 2), GE_OK);
  bool accepted = false;
  for (size_t k = 0; k + 1 < nc; k++) {
    void *fs = NULL;
    ge_status st = cand[k]->prepare ? cand[k]->prepare(&pc, &fs) : GE_OK;
    if (st == GE_ERR_UNSUPPORTED) continue;
    if (st != GE_OK) fprintf(stderr, "%s: prepare: %s\n", op, ge_last_error());
    assert_int_equal(st, GE_OK);
    accepted = true;
    ge_tensor *fo = alloc_out(&c, 0);
    st = run_kernel(&c, cand[k], fs, in, &fo, 2);
    if (st != GE_OK) fprintf(stderr, "%s: run: %s\n", op, ge_last_error());
    assert_int_equal(st, GE_OK);
    compare(fo, ro, tol, tol, op);
    /* a second run on the same state gives the same result (no state kept between runs) */
    memset(fo->data, 0, fo->nbytes);
    assert_int_equal(run_kernel(&c, cand[k], fs, in, &fo, 1), GE_OK);
    compare(fo, ro, tol, tol, op);
    ge_tensor_free(fo);
    if (cand[k]->release) cand[k]->release(fs);
  }
  if (expect_fast && !accepted) {
    fprintf(stderr, "%s: no fast kernel accepted the node: %s\n", op, ge_last_error());
    fail();
  }
  ge_tensor_free(ro);
  if (ref->release && rs) ref->release(rs);
  ge_graph_free(c.g);
}

static void free_all(ge_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ge_tensor_free(t[i]);
}

/* ------------------------------------------------------------------ Conv */

typedef struct conv_case {
  int nsp;
  int64_t n, c, oc, g;
  int64_t sp[3], k[3], s[3], d[3], pads[6];
  bool bias;
} conv_case;

static void conv_one(const conv_case *cc, const char *op, const char *act, bool sum) {
  int64_t xd[5] = {cc->n, cc->c}, wd[5] = {cc->oc, cc->c / cc->g};
  for (int i = 0; i < cc->nsp; i++) {
    xd[2 + i] = cc->sp[i];
    wd[2 + i] = cc->k[i];
  }
  size_t r = (size_t)cc->nsp + 2;
  ge_tensor *in[4] = {rand_t(xd, r), rand_t(wd, r), NULL, NULL};
  if (cc->bias) in[2] = rand_t((int64_t[]){cc->oc}, 1);
  ge_attr at[8];
  size_t na = 0;
  at[na++] = GE_ATTR_INT("group", cc->g);
  at[na++] = GE_ATTR_INTS("strides", cc->s, (size_t)cc->nsp);
  at[na++] = GE_ATTR_INTS("dilations", cc->d, (size_t)cc->nsp);
  at[na++] = GE_ATTR_INTS("pads", cc->pads, 2 * (size_t)cc->nsp);
  if (act) at[na++] = GE_ATTR_STRING("activation", act);
  size_t n_in = cc->bias ? 3 : 2;
  if (sum) {
    /* the output shape, from inference on the plain Conv */
    node_ctx c;
    build(&c, "Conv", 17, at, 4, in, n_in, 1, 0x6);
    in[3] = rand_t(c.out_t[0].shape.dims, (size_t)c.out_t[0].shape.rank);
    ge_graph_free(c.g);
    n_in = 4;
  }
  check_op(op, 17, at, na, in, n_in, 0x6, true, 1e-4);
  free_all(in, 4);
}

static void test_conv(void **st) {
  (void)st;
  const conv_case cases[] = {
      {2, 1, 3, 8, 1, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {2, 2, 5, 7, 1, {11, 6}, {3, 2}, {2, 1}, {1, 1}, {0, 1, 2, 0}, false},       /* asymmetric pads */
      {2, 1, 6, 9, 3, {8, 8}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, true},         /* groups + dilation */
      {2, 1, 16, 16, 16, {13, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true},    /* depthwise, stride 2 */
      {2, 1, 8, 16, 8, {5, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false},       /* depthwise multiplier 2 */
      {2, 1, 64, 33, 1, {7, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},       /* 1x1, odd oc */
      {2, 3, 17, 19, 1, {5, 5}, {3, 3}, {1, 1}, {1, 2}, {1, 2, 1, 2}, true},       /* odd channels (tails) */
      {1, 2, 4, 6, 2, {15}, {5}, {2}, {1}, {2, 1}, true},                          /* 1-D */
      {3, 1, 3, 5, 1, {5, 6, 7}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1, 1, 0, 1}, true}, /* 3-D */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) conv_one(&cases[i], "Conv", NULL, false);
}

static void test_fused_conv(void **st) {
  (void)st;
  const conv_case cc = {2, 1, 8, 12, 2, {9, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true};
  const char *acts[] = {"", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Gelu", "GeluTanh", "SiLU",
                        "HardSwish", "HardSigmoid"};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    conv_one(&cc, "ai.ge::FusedConv", acts[i], false);
    conv_one(&cc, "ai.ge::FusedConv", acts[i], true);
  }
  const conv_case dw = {2, 1, 16, 16, 16, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true};
  conv_one(&dw, "ai.ge::FusedConv", "Clip", false);
}

static void test_conv_transpose(void **st) {
  (void)st;
  struct {
    int64_t n, c, oc, g, h, w, k, s, p, op;
  } cases[] = {{1, 4, 6, 1, 5, 7, 3, 2, 1, 1}, {2, 6, 4, 2, 4, 4, 2, 2, 0, 0}, {1, 3, 5, 1, 6, 5, 3, 1, 1, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t xd[4] = {cases[i].n, cases[i].c, cases[i].h, cases[i].w};
    int64_t wd[4] = {cases[i].c, cases[i].oc / cases[i].g, cases[i].k, cases[i].k};
    ge_tensor *in[3] = {rand_t(xd, 4), rand_t(wd, 4), rand_t((int64_t[]){cases[i].oc}, 1)};
    int64_t s2[2] = {cases[i].s, cases[i].s}, p4[4] = {cases[i].p, cases[i].p, cases[i].p, cases[i].p};
    int64_t op2[2] = {cases[i].op, cases[i].op};
    ge_attr at[4] = {GE_ATTR_INT("group", cases[i].g), GE_ATTR_INTS("strides", s2, 2), GE_ATTR_INTS("pads", p4, 4),
                     GE_ATTR_INTS("output_padding", op2, 2)};
    check_op("ConvTranspose", 17, at, 4, in, 3, 0x6, true, 1e-4);
    free_all(in, 3);
  }
}

/* ------------------------------------------------------------------ MatMul / Gemm */

static void test_matmul(void **st) {
  (void)st;
  struct {
    int ra, rb;
    int64_t a[4], b[4];
    unsigned cmask;
  } cases[] = {
      {2, 2, {5, 7}, {7, 3}, 0x2},
      {2, 2, {17, 33}, {33, 19}, 0x0},
      {3, 2, {2, 9, 16}, {16, 31}, 0x2},             /* constant weight, batch broadcast */
      {4, 4, {2, 3, 5, 8}, {2, 3, 8, 6}, 0x0},       /* batched */
      {4, 4, {2, 1, 5, 8}, {1, 3, 8, 6}, 0x0},       /* broadcast batch dims */
      {3, 4, {3, 5, 8}, {2, 3, 8, 6}, 0x0},          /* rank differs */
      {1, 2, {9}, {9, 4}, 0x2},                      /* 1-D A */
      {3, 1, {2, 3, 9}, {9}, 0x0},                   /* 1-D B */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ge_tensor *in[2] = {rand_t(cases[i].a, (size_t)cases[i].ra), rand_t(cases[i].b, (size_t)cases[i].rb)};
    check_op("MatMul", 13, NULL, 0, in, 2, cases[i].cmask, true, 1e-4);
    free_all(in, 2);
  }
  /* FusedMatMul with bias and activations */
  const char *acts[] = {"", "Relu", "Gelu", "GeluTanh", "Tanh"};
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    ge_tensor *in[3] = {rand_t((int64_t[]){2, 7, 24}, 3), rand_t((int64_t[]){24, 13}, 2),
                        rand_t((int64_t[]){13}, 1)};
    ge_attr at[1] = {GE_ATTR_STRING("activation", acts[i])};
    check_op("ai.ge::FusedMatMul", 13, at, 1, in, 3, 0x6, true, 1e-4);
    check_op("ai.ge::FusedMatMul", 13, at, 1, in, 2, 0x2, true, 1e-4);
    free_all(in, 3);
  }
  /* FusedMatMul with a residual Sum (input 3): of the product's shape the fast kernels take it
     (a sum post-op); one that broadcasts (a row, or one that enlarges the product) runs on
     the reference kernel only */
  {
    ge_tensor *in[4] = {rand_t((int64_t[]){2, 7, 24}, 3), rand_t((int64_t[]){24, 13}, 2), rand_t((int64_t[]){13}, 1),
                        rand_t((int64_t[]){2, 7, 13}, 3)};
    for (size_t i = 0; i < 2; i++) {
      ge_attr at[1] = {GE_ATTR_STRING("activation", i ? "Relu" : "")};
      check_op("ai.ge::FusedMatMul", 13, at, 1, in, 4, 0x6, true, 1e-4);
      check_op("ai.ge::FusedMatMul", 13, at, 1, in, 4, 0x2, true, 1e-4);
    }
    ge_tensor *row = rand_t((int64_t[]){13}, 1), *big = rand_t((int64_t[]){3, 2, 7, 13}, 4);
    ge_tensor *in2[4] = {in[0], in[1], in[2], row};
    check_op("ai.ge::FusedMatMul", 13, NULL, 0, in2, 4, 0x6, false, 1e-4);
    in2[3] = big;
    check_op("ai.ge::FusedMatMul", 13, NULL, 0, in2, 4, 0x6, false, 1e-4);
    ge_tensor_free(row);
    ge_tensor_free(big);
    free_all(in, 4);
  }
}

static void test_gemm(void **st) {
  (void)st;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int cm = 0; cm < 4; cm++) {
        int64_t M = 7, K = 13, N = 5;
        int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
        int64_t cdims[4][2] = {{N, 0}, {1, N}, {M, N}, {M, 1}};
        size_t crank = cm == 0 ? 1 : 2;
        ge_tensor *in[3] = {rand_t(ad, 2), rand_t(bd, 2), rand_t(cdims[cm], crank)};
        float alpha = cm == 2 ? 0.5f : 1.f;
        ge_attr at[4] = {GE_ATTR_INT("transA", ta), GE_ATTR_INT("transB", tb), GE_ATTR_FLOAT("alpha", alpha),
                         GE_ATTR_FLOAT("beta", 1.f)};
        check_op("Gemm", 13, at, 4, in, 3, 0x6, true, 1e-4);
        check_op("Gemm", 13, at, 4, in, 2, 0x0, true, 1e-4);
        ge_attr fat[5] = {at[0], at[1], at[2], at[3], GE_ATTR_STRING("activation", "Relu")};
        check_op("ai.ge::FusedGemm", 13, fat, 5, in, 3, 0x6, true, 1e-4);
        free_all(in, 3);
      }
  /* beta != 1 is declined, the reference runs it */
  ge_tensor *in[3] = {rand_t((int64_t[]){3, 4}, 2), rand_t((int64_t[]){4, 5}, 2), rand_t((int64_t[]){5}, 1)};
  ge_attr at[1] = {GE_ATTR_FLOAT("beta", 2.f)};
  check_op("Gemm", 13, at, 1, in, 3, 0x6, false, 1e-4);
  free_all(in, 3);
}

/* ------------------------------------------------------------------ pooling, norms, softmax */

static void test_pool(void **st) {
  (void)st;
  struct {
    const char *op;
    int64_t k, s, p0, p1, ceil, incl;
    int64_t h, w;
  } cases[] = {
      {"MaxPool", 3, 2, 1, 1, 0, 0, 13, 11}, {"MaxPool", 2, 2, 0, 0, 1, 0, 7, 9},
      {"MaxPool", 3, 1, 0, 2, 0, 0, 6, 5},   {"AveragePool", 3, 2, 1, 1, 0, 0, 9, 10},
      {"AveragePool", 3, 2, 1, 1, 0, 1, 9, 10}, {"AveragePool", 2, 2, 0, 0, 1, 0, 7, 7},
      {"AveragePool", 7, 1, 0, 0, 0, 0, 7, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ge_tensor *in[1] = {rand_t((int64_t[]){2, 5, cases[i].h, cases[i].w}, 4)};
    int64_t k2[2] = {cases[i].k, cases[i].k}, s2[2] = {cases[i].s, cases[i].s};
    int64_t p4[4] = {cases[i].p0, cases[i].p0, cases[i].p1, cases[i].p1};
    ge_attr at[5] = {GE_ATTR_INTS("kernel_shape", k2, 2), GE_ATTR_INTS("strides", s2, 2), GE_ATTR_INTS("pads", p4, 4),
                     GE_ATTR_INT("ceil_mode", cases[i].ceil), GE_ATTR_INT("count_include_pad", cases[i].incl)};
    check_op(cases[i].op, 17, at, 5, in, 1, 0, true, 1e-5);
    free_all(in, 1);
  }
  ge_tensor *in[1] = {rand_t((int64_t[]){2, 19, 7, 5}, 4)};
  check_op("GlobalAveragePool", 17, NULL, 0, in, 1, 0, true, 1e-5);
  check_op("GlobalMaxPool", 17, NULL, 0, in, 1, 0, true, 1e-5);
  free_all(in, 1);
}

static void test_batchnorm(void **st) {
  (void)st;
  int64_t c = 11;
  ge_tensor *in[5] = {rand_t((int64_t[]){2, c, 5, 3}, 4), rand_t(&c, 1), rand_t(&c, 1), rand_t(&c, 1), rand_t(&c, 1)};
  float *var = in[4]->data;
  for (int64_t i = 0; i < c; i++) var[i] = fabsf(var[i]) + 0.1f;
  check_op("BatchNormalization", 15, NULL, 0, in, 5, 0x1e, true, 1e-4);
  free_all(in, 5);
}

static void test_layernorm(void **st) {
  (void)st;
  int64_t d[3] = {3, 5, 33};
  ge_tensor *in[3] = {rand_t(d, 3), rand_t(&d[2], 1), rand_t(&d[2], 1)};
  check_op("LayerNormalization", 17, NULL, 0, in, 3, 0x6, true, 1e-4);
  check_op("ai.ge::LayerNormalization", 17, NULL, 0, in, 3, 0x6, true, 1e-4);
  check_op("ai.ge::LayerNormalization", 17, NULL, 0, in, 2, 0x2, true, 1e-4);
  free_all(in, 3);
  /* over the last two axes */
  ge_tensor *in2[3] = {rand_t(d, 3), rand_t(&d[1], 2), rand_t(&d[1], 2)};
  ge_attr at[1] = {GE_ATTR_INT("axis", 1)};
  check_op("LayerNormalization", 17, at, 1, in2, 3, 0x6, true, 1e-4);
  free_all(in2, 3);
}

static void test_softmax(void **st) {
  (void)st;
  int64_t d[4] = {2, 3, 5, 17};
  ge_tensor *in[1] = {rand_t(d, 4)};
  for (int64_t axis = -1; axis < 4; axis++) {
    ge_attr at[1] = {GE_ATTR_INT("axis", axis)};
    check_op("Softmax", 13, at, 1, in, 1, 0, true, 1e-5);
    check_op("LogSoftmax", 13, at, 1, in, 1, 0, true, 1e-5);
    check_op("Softmax", 11, at, 1, in, 1, 0, true, 1e-5);
  }
  free_all(in, 1);
}

/* ------------------------------------------------------------------ concurrency */

typedef struct thr_arg {
  node_ctx *c;
  const ge_kernel *k;
  void *state;
  ge_tensor **in;
  const ge_tensor *ref;
  int ok;
} thr_arg;

static void *thr_main(void *p) {
  thr_arg *a = p;
  a->ok = 1;
  for (int it = 0; it < 5; it++) {
    ge_tensor *o = alloc_out(a->c, 0);
    if (run_kernel(a->c, a->k, a->state, a->in, &o, 1) != GE_OK) a->ok = 0;
    const float *x = o->data, *y = a->ref->data;
    for (size_t i = 0; i < o->numel; i++)
      if (fabsf(x[i] - y[i]) > 1e-4f * (1 + fabsf(y[i]))) a->ok = 0;
    ge_tensor_free(o);
  }
  return NULL;
}

static void test_concurrent_runs(void **st) {
  (void)st;
  ge_tensor *in[3] = {rand_t((int64_t[]){1, 16, 14, 14}, 4), rand_t((int64_t[]){32, 16, 3, 3}, 4),
                      rand_t((int64_t[]){32}, 1)};
  int64_t p4[4] = {1, 1, 1, 1};
  ge_attr at[1] = {GE_ATTR_INTS("pads", p4, 4)};
  node_ctx c;
  build(&c, "Conv", 17, at, 1, in, 3, 1, 0x6);
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels("", "Conv", 17, cand, 8);
  assert_true(nc >= 2);
  ge_prepare_ctx pc = {.graph = c.g, .node = c.node, .opset = 17, .n_in = 3, .n_out = 1, .in = c.ins,
                       .out = c.out_t, .intra_threads = 1};
  void *fs = NULL, *rs = NULL;
  /* the first candidate that takes the node (fast/pgemm.c declines a plain-layout conv) */
  size_t k0 = 0;
  while (k0 + 1 < nc && cand[k0]->prepare(&pc, &fs) == GE_ERR_UNSUPPORTED) k0++;
  assert_true(k0 + 1 < nc);
  assert_non_null(fs);
  const ge_kernel *ref = cand[nc - 1];
  if (ref->prepare) assert_int_equal(ref->prepare(&pc, &rs), GE_OK);
  ge_tensor *ro = alloc_out(&c, 0);
  assert_int_equal(run_kernel(&c, ref, rs, in, &ro, 1), GE_OK);
  pthread_t th[4];
  thr_arg ta[4];
  for (int i = 0; i < 4; i++) {
    ta[i] = (thr_arg){&c, cand[k0], fs, in, ro, 0};
    assert_int_equal(pthread_create(&th[i], NULL, thr_main, &ta[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(ta[i].ok, 1);
  }
  cand[k0]->release(fs);
  if (ref->release && rs) ref->release(rs);
  ge_tensor_free(ro);
  ge_graph_free(c.g);
  free_all(in, 3);
}

/* A dynamic input shape or a run-time weight is declined (the reference kernel runs it). */
static void test_declines(void **st) {
  (void)st;
  ge_tensor *in[2] = {rand_t((int64_t[]){1, 3, 5, 5}, 4), rand_t((int64_t[]){4, 3, 3, 3}, 4)};
  node_ctx c;
  build(&c, "Conv", 17, NULL, 0, in, 2, 1, 0x0); /* weights not constant */
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels("", "Conv", 17, cand, 8);
  assert_true(nc >= 2);
  ge_prepare_ctx pc = {.graph = c.g, .node = c.node, .opset = 17, .n_in = 2, .n_out = 1, .in = c.ins,
                       .out = c.out_t, .intra_threads = 1};
  void *fs = NULL;
  /* every candidate but the reference (the last) declines */
  for (size_t k = 0; k + 1 < nc; k++) assert_int_equal(cand[k]->prepare(&pc, &fs), GE_ERR_UNSUPPORTED);
  c.ins[1].value = in[1];
  c.in_t[0].shape.dims[0] = GE_DIM_UNKNOWN; /* dynamic batch */
  for (size_t k = 0; k + 1 < nc; k++) assert_int_equal(cand[k]->prepare(&pc, &fs), GE_ERR_UNSUPPORTED);
  ge_graph_free(c.g);
  free_all(in, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv),        cmocka_unit_test(test_fused_conv), cmocka_unit_test(test_conv_transpose),
      cmocka_unit_test(test_matmul),      cmocka_unit_test(test_gemm),       cmocka_unit_test(test_pool),
      cmocka_unit_test(test_batchnorm),   cmocka_unit_test(test_layernorm),  cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_concurrent_runs), cmocka_unit_test(test_declines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
