/* The fast element-wise, broadcast, mover and reduction kernels (src/backend/cpu/fast/ew.c,
 * move.c, reduce.c) against the reference kernel of each op: one node, inferred, prepared and
 * run by every fast candidate that accepts it (at 1, 2 and 3 threads) and by the reference
 * kernel; outputs must agree, exactly for movers and casts, within a tolerance for math.
 * Shapes are random-ish with odd sizes, vector tails, broadcasts, 0-size tensors and sizes
 * large enough to be split over threads.  Also: in-place runs (output buffer == input buffer)
 * of the element-wise kernels, the float16/bfloat16 conversions on every 16-bit pattern and a
 * million float32 patterns, Gather's bad-index error, and 60 draws of random shapes (ranks 1-5,
 * dims 0..33, random permutations, broadcasts, axes, slice bounds and steps).
 * GE_FAST_OPS_SEED=N draws other random cases. */
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

#define NIO 8

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { return ge_test_rand_u64(&rng); }

/* float32 tensor of uniform values in [-scale, scale] */
static ge_tensor *rand_f32(const int64_t *d, size_t r, float scale) { return ge_test_rand_f32(&rng, d, r, scale); }

/* any fixed-size dtype: random bytes (bool: 0/1) */
static ge_tensor *rand_bytes(ge_dtype dt, const int64_t *d, size_t r) {
  ge_tensor *t = ge_test_tensor(dt, d, r, NULL);
  uint8_t *p = t->data;
  for (size_t i = 0; i < t->nbytes; i++) p[i] = (uint8_t)(next_u64() >> 32);
  if (dt == GE_BOOL)
    for (size_t i = 0; i < t->nbytes; i++) p[i] &= 1;
  return t;
}

typedef struct op_case {
  const char *op;
  int64_t opset;           /* 0: the newest */
  const ge_attr *attrs;
  size_t na;
  ge_tensor *const *in;    /* NULL entry: omitted input */
  size_t n_in;
  unsigned consts;         /* bit i: input i's value known at compile time */
  double tol;              /* float32 outputs: |a - b| <= tol (1 + |b|); others exact */
  bool need_fast;          /* a fast candidate must accept the node */
} op_case;

static bool same_elem(const ge_tensor *a, const ge_tensor *b, size_t i, double tol) {
  if (a->dtype == GE_F32 && tol > 0) {
    float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    if (isinf(y)) return x == y;
    return fabs((double)x - y) <= tol + tol * fabs((double)y);
  }
  size_t es = ge_dtype_size(a->dtype);
  if (a->dtype == GE_F32) { /* exact, NaN payloads aside */
    float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
    if (isnan(x) && isnan(y)) return true;
  }
  return memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, es) == 0;
}

static void compare(const char *what, int threads, const ge_tensor *fo, const ge_tensor *ro, double tol) {
  assert_int_equal(fo->numel, ro->numel);
  assert_int_equal(fo->dtype, ro->dtype);
  for (size_t i = 0; i < ro->numel; i++)
    if (!same_elem(fo, ro, i, tol)) {
      if (ro->dtype == GE_F32)
        fail_msg("%s threads %d: element %zu: fast %.9g reference %.9g", what, threads, i,
                 (double)((const float *)fo->data)[i], (double)((const float *)ro->data)[i]);
      fail_msg("%s threads %d: element %zu differs (dtype %s)", what, threads, i, ge_dtype_name(ro->dtype));
    }
}

/* Runs the case through every fast candidate and the reference; returns how many fast
   candidates accepted it.  inplace: also run with the output in input 0's buffer. */
static size_t run_case(const op_case *c, bool inplace) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("t", &g), GE_OK);
  if (c->opset) assert_int_equal(ge_graph_set_opset(g, "", c->opset), GE_OK);
  const char *in_names[NIO];
  char ib[NIO][24];
  ge_type in_t[NIO], out_t[1];
  ge_infer_input ins[NIO];
  memset(ins, 0, sizeof ins);
  for (size_t i = 0; i < c->n_in; i++) {
    if (!c->in[i]) {
      in_names[i] = "";
      continue;
    }
    snprintf(ib[i], sizeof ib[i], "i%zu", i);
    in_names[i] = ib[i];
    assert_int_equal(ge_graph_add_input(g, ib[i], c->in[i]->dtype, c->in[i]->dims, (size_t)c->in[i]->rank), GE_OK);
    in_t[i] = ge_test_type(c->in[i]->dtype, c->in[i]->dims, c->in[i]->rank);
    ins[i].present = true;
    ins[i].type = &in_t[i];
    if (c->consts >> i & 1u) ins[i].value = c->in[i];
  }
  const char *outs[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, c->op, "n", in_names, c->n_in, outs, 1, c->attrs, c->na), GE_OK);
  ge_node *nd = &g->nodes[g->n_nodes - 1];
  ge_infer_ctx ic = {.graph = g, .node = nd, .opset = nd->opset, .n_in = c->n_in, .n_out = 1, .in = ins, .out = out_t};
  ge_status st = ge_op_infer(&ic);
  if (st != GE_OK) fail_msg("%s: infer: %s", c->op, ge_last_error());
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(nd->domain, nd->op_type, nd->opset, cand, 8);
  const ge_kernel *ref = ge_cpu_find_kernel(nd->domain, nd->op_type, nd->opset);
  assert_non_null(ref);
  ge_prepare_ctx pc = {.graph = g, .node = nd, .opset = nd->opset, .n_in = c->n_in, .n_out = 1, .in = ins,
                       .out = out_t, .intra_threads = 2};
  ge_tensor *ro = NULL;
  assert_int_equal(ge_tensor_create_shape(out_t[0].dtype, &out_t[0].shape, &ro), GE_OK);
  void *rs = NULL;
  if (ref->prepare) assert_int_equal(ref->prepare(&pc, &rs), GE_OK);
  ge_kctx kc = {.node = nd, .n_in = c->n_in, .n_out = 1, .in = c->in, .out = &ro, .threads = 1};
  st = ref->run(rs, &kc);
  if (st != GE_OK) fail_msg("%s: reference run: %s", c->op, ge_last_error());
  size_t accepted = 0;
  for (size_t k = 0; k + 1 < nc; k++) {
    void *fs = NULL;
    st = cand[k]->prepare ? cand[k]->prepare(&pc, &fs) : GE_OK;
    if (st == GE_ERR_UNSUPPORTED) continue;
    if (st != GE_OK) fail_msg("%s: fast prepare: %s", c->op, ge_last_error());
    accepted++;
    for (int threads = 1; threads <= 3; threads++) {
      ge_tensor *fo = NULL;
      assert_int_equal(ge_tensor_create_shape(out_t[0].dtype, &out_t[0].shape, &fo), GE_OK);
      ge_kctx fc = {.node = nd, .n_in = c->n_in, .n_out = 1, .in = c->in, .out = &fo, .threads = threads};
      st = cand[k]->run(fs, &fc);
      if (st != GE_OK) fail_msg("%s: fast run: %s", c->op, ge_last_error());
      compare(c->op, threads, fo, ro, c->tol);
      ge_tensor_free(fo);
    }
    bool same = c->in[0]->dtype == ro->dtype && c->in[0]->rank == ro->rank;
    for (int32_t d = 0; same && d < ro->rank; d++) same = c->in[0]->dims[d] == ro->dims[d];
    if (inplace && (cand[k]->inplace_inputs & 1u) && same) { /* as the memory planner shares */
      ge_tensor *copy = NULL;
      assert_int_equal(ge_value_clone(c->in[0], &copy), GE_OK);
      ge_tensor *args[NIO];
      memcpy(args, c->in, c->n_in * sizeof *args);
      args[0] = copy;
      ge_tensor *o = copy;
      ge_kctx fc = {.node = nd, .n_in = c->n_in, .n_out = 1, .in = args, .out = &o, .threads = 2};
      assert_int_equal(cand[k]->run(fs, &fc), GE_OK);
      compare(c->op, -1, copy, ro, c->tol);
      ge_tensor_free(copy);
    }
    if (cand[k]->release) cand[k]->release(fs);
  }
  if (c->need_fast && !accepted) fail_msg("%s: no fast kernel accepted the node", c->op);
  if (ref->release && rs) ref->release(rs);
  ge_tensor_free(ro);
  ge_graph_free(g);
  return accepted;
}

static void free_all(ge_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ge_tensor_free(t[i]);
}

/* ------------------------------------------------------------------ unary */

static const int64_t un_shapes[][4] = {{3, 5, 7, 11}, {1, 1, 1, 17}, {2, 64, 33, 65}, {1, 1, 1, 1}, {2, 0, 3, 5}};

static void unary_case(const char *op, const ge_attr *at, size_t na, float scale, double tol) {
  for (size_t s = 0; s < sizeof un_shapes / sizeof un_shapes[0]; s++) {
    ge_tensor *in[1] = {rand_f32(un_shapes[s], 4, scale)};
    float *x = in[0]->data;
    if (in[0]->numel > 8) { /* specials */
      x[0] = NAN;
      x[1] = INFINITY;
      x[2] = -INFINITY;
      x[3] = 0.f;
      x[4] = -0.f;
      x[5] = 1e-6f;
      x[6] = -3e-5f;
      x[7] = 0.29f;
      x[8] = -0.51f;
    }
    if (!strcmp(op, "Sqrt"))
      for (size_t i = 9; i < in[0]->numel; i++) x[i] = fabsf(x[i]);
    op_case c = {.op = op, .attrs = at, .na = na, .in = in, .n_in = 1, .tol = tol, .need_fast = true};
    run_case(&c, true);
    free_all(in, 1);
  }
}

static void test_unary(void **unused) {
  (void)unused;
  unary_case("Relu", NULL, 0, 4.f, 0);
  unary_case("Neg", NULL, 0, 4.f, 0);
  unary_case("Abs", NULL, 0, 4.f, 0);
  unary_case("Sqrt", NULL, 0, 100.f, 0);
  ge_attr lk[] = {GE_ATTR_FLOAT("alpha", 0.07f)};
  unary_case("LeakyRelu", lk, 1, 4.f, 0);
  unary_case("LeakyRelu", NULL, 0, 4.f, 0);
  unary_case("HardSigmoid", NULL, 0, 8.f, 1e-7);
  ge_attr hs[] = {GE_ATTR_FLOAT("alpha", 0.3f), GE_ATTR_FLOAT("beta", 0.4f)};
  unary_case("HardSigmoid", hs, 2, 8.f, 1e-7);
  unary_case("HardSwish", NULL, 0, 8.f, 1e-7);
  unary_case("Sigmoid", NULL, 0, 12.f, 1e-6);
  unary_case("Tanh", NULL, 0, 6.f, 1e-6);
  unary_case("Tanh", NULL, 0, 0.4f, 1e-6); /* the small-argument branch */
  unary_case("Exp", NULL, 0, 20.f, 1e-6);
  unary_case("Exp", NULL, 0, 95.f, 1e-6); /* overflow to inf, underflow */
  unary_case("Erf", NULL, 0, 4.f, 1e-6);
  unary_case("Erf", NULL, 0, 0.6f, 1e-6);
  unary_case("Gelu", NULL, 0, 6.f, 1e-6);
  ge_attr gt[] = {GE_ATTR_STRING("approximate", "tanh")};
  unary_case("Gelu", gt, 1, 6.f, 1e-6);
}

static void test_clip(void **unused) {
  (void)unused;
  int64_t d[] = {5, 33, 129}, sd[] = {0};
  ge_tensor *x = rand_f32(d, 3, 3.f);
  ge_tensor *lo = ge_test_tensor_f32(sd, 0, (float[]){-1.5f}), *hi = ge_test_tensor_f32(sd, 0, (float[]){0.25f});
  ge_tensor *in3[3] = {x, lo, hi}, *in2[2] = {x, lo}, *in_hi[3] = {x, NULL, hi};
  op_case c = {.op = "Clip", .in = in3, .n_in = 3, .tol = 0, .need_fast = true};
  run_case(&c, true);
  c.in = in2;
  c.n_in = 2;
  run_case(&c, true);
  c.in = in_hi;
  c.n_in = 3;
  run_case(&c, true);
  c.in = in3;
  c.n_in = 1;
  run_case(&c, true);
  /* opset 6: attributes */
  ge_attr at[] = {GE_ATTR_FLOAT("min", -0.5f), GE_ATTR_FLOAT("max", 2.f)};
  op_case c6 = {.op = "Clip", .opset = 6, .attrs = at, .na = 2, .in = in3, .n_in = 1, .need_fast = true};
  run_case(&c6, true);
  free_all(in3, 3);
}

/* ------------------------------------------------------------------ Cast */

static void test_cast_bits(void **unused) {
  (void)unused;
  /* every f16 / bf16 bit pattern up, a million random f32 patterns down, through the kernel */
  int64_t n16[] = {65536};
  ge_tensor *h = ge_test_tensor(GE_F16, n16, 1, NULL), *b = ge_test_tensor(GE_BF16, n16, 1, NULL);
  for (uint32_t i = 0; i < 65536; i++) ((uint16_t *)h->data)[i] = ((uint16_t *)b->data)[i] = (uint16_t)i;
  int64_t nf[] = {1 << 20};
  ge_tensor *f = ge_test_tensor(GE_F32, nf, 1, NULL);
  uint32_t *fb = f->data;
  for (size_t i = 0; i < (size_t)nf[0]; i++) {
    uint32_t u = (uint32_t)(next_u64() >> 32);
    /* half of them near the float16 range, where rounding matters */
    if (i & 1) u = (u & 0x80000000u) | (0x33000000u + u % (0x47900000u - 0x33000000u));
    fb[i] = u;
  }
  fb[0] = 0x477ff000u; /* 65520: rounds to inf */
  fb[2] = 0x477fefffu;
  fb[4] = 0x33000000u; /* 2^-25: ties to 0 */
  fb[6] = 0x7fc00001u;
  fb[8] = 0xff812345u; /* signalling NaN */
  static const int to[] = {10 /* FLOAT16 */, 16 /* BFLOAT16 */, 1 /* FLOAT */};
  ge_tensor *srcs[] = {h, b, f};
  for (size_t s = 0; s < 3; s++)
    for (size_t t = 0; t < 3; t++) {
      ge_attr at[] = {GE_ATTR_INT("to", to[t])};
      ge_tensor *in[1] = {srcs[s]};
      op_case c = {.op = "Cast", .attrs = at, .na = 1, .in = in, .n_in = 1, .tol = 0, .need_fast = true};
      run_case(&c, false);
    }
  /* CastLike */
  int64_t one[] = {1};
  ge_tensor *like = ge_test_tensor(GE_BF16, one, 1, NULL);
  ge_tensor *in2[2] = {f, like};
  op_case cl = {.op = "CastLike", .in = in2, .n_in = 2, .tol = 0, .need_fast = true};
  run_case(&cl, false);
  ge_tensor_free(like);
  ge_tensor_free(h);
  ge_tensor_free(b);
  ge_tensor_free(f);
}

/* ------------------------------------------------------------------ binary broadcasts */

static void bin_case(const char *op, const int64_t *ad, size_t ar, const int64_t *bd, size_t br, bool need_fast) {
  ge_tensor *in[2] = {rand_f32(ad, ar, 3.f), rand_f32(bd, br, 3.f)};
  float *b = in[1]->data, *a = in[0]->data;
  if (!strcmp(op, "Div"))
    for (size_t i = 0; i < in[1]->numel; i++) b[i] = b[i] >= 0 ? b[i] + 0.5f : b[i] - 0.5f;
  if (!strcmp(op, "Pow")) {
    for (size_t i = 0; i < in[0]->numel; i++) a[i] = fabsf(a[i]) + 0.1f;
    if (in[1]->numel == 1) b[0] = 2.f;
  }
  if ((!strcmp(op, "Max") || !strcmp(op, "Min")) && in[0]->numel > 3 && in[1]->numel > 3) {
    a[1] = NAN;
    b[2] = NAN;
  }
  op_case c = {.op = op, .in = in, .n_in = 2, .tol = 1e-6, .need_fast = need_fast};
  run_case(&c, true);
  free_all(in, 2);
}

static void test_binary(void **unused) {
  (void)unused;
  static const char *ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
  for (size_t o = 0; o < 7; o++) {
    bool mine_all = o >= 4; /* Max/Min/Pow: every float32 broadcast here */
    bin_case(ops[o], (int64_t[]){2, 13, 7, 9}, 4, (int64_t[]){1, 13, 1, 1}, 4, true);  /* per channel */
    bin_case(ops[o], (int64_t[]){1, 13, 1, 1}, 4, (int64_t[]){2, 13, 7, 9}, 4, true);  /* A broadcast */
    bin_case(ops[o], (int64_t[]){3, 1, 37}, 3, (int64_t[]){5, 1}, 2, true);            /* both broadcast */
    bin_case(ops[o], (int64_t[]){2, 96, 40, 40}, 4, (int64_t[]){96, 1, 1}, 3, true);    /* threaded rows */
    bin_case(ops[o], (int64_t[]){3, 300001}, 2, (int64_t[]){3, 1}, 2, true);            /* few long rows */
    bin_case(ops[o], (int64_t[]){4, 0, 3}, 3, (int64_t[]){4, 1, 3}, 3, true);           /* 0-size */
    bin_case(ops[o], (int64_t[]){2, 3, 31}, 3, (int64_t[]){2, 3, 31}, 3, mine_all);     /* same shape */
    bin_case(ops[o], (int64_t[]){7, 33}, 2, (int64_t[]){1}, 1, mine_all);              /* scalar */
  }
}

static void test_where_expand(void **unused) {
  (void)unused;
  static const ge_dtype dts[] = {GE_F32, GE_I64, GE_F16, GE_U8, GE_BOOL};
  for (size_t t = 0; t < 5; t++) {
    ge_tensor *in[3] = {rand_bytes(GE_BOOL, (int64_t[]){3, 1, 17}, 3), rand_bytes(dts[t], (int64_t[]){5, 17}, 2),
                        rand_bytes(dts[t], (int64_t[]){3, 5, 1}, 3)};
    op_case c = {.op = "Where", .in = in, .n_in = 3, .need_fast = true};
    run_case(&c, false);
    free_all(in, 3);
    ge_tensor *sm[3] = {rand_bytes(GE_BOOL, (int64_t[]){4, 1000, 77}, 3), rand_bytes(dts[t], (int64_t[]){4, 1000, 77}, 3),
                        rand_bytes(dts[t], (int64_t[]){1}, 1)};
    c.in = sm;
    run_case(&c, false);
    free_all(sm, 3);
    /* Expand: middle and leading broadcast, a 0-size target */
    const int64_t shp[][4] = {{2, 7, 5, 9}, {3, 4, 1, 300}, {2, 0, 5, 9}, {4, 64, 33, 35}};
    const int64_t xs[][3] = {{7, 1, 9}, {4, 1, 300}, {1, 5, 1}, {64, 1, 35}};
    for (size_t k = 0; k < 4; k++) {
      ge_tensor *ex[2] = {rand_bytes(dts[t], xs[k], 3), ge_test_tensor_i64((int64_t[]){4}, 1, shp[k])};
      op_case e = {.op = "Expand", .in = ex, .n_in = 2, .consts = 2, .need_fast = true};
      run_case(&e, false);
      free_all(ex, 2);
    }
  }
}

/* ------------------------------------------------------------------ movers */

static void transpose_case(ge_dtype dt, const int64_t *d, size_t r, const int64_t *perm) {
  ge_tensor *in[1] = {rand_bytes(dt, d, r)};
  ge_attr at[] = {GE_ATTR_INTS("perm", perm, r)};
  op_case c = {.op = "Transpose", .attrs = at, .na = perm ? 1 : 0, .in = in, .n_in = 1, .need_fast = true};
  run_case(&c, false);
  free_all(in, 1);
}

static void test_transpose(void **unused) {
  (void)unused;
  static const ge_dtype dts[] = {GE_F32, GE_U8, GE_F16, GE_I64};
  for (size_t t = 0; t < 4; t++) {
    ge_dtype dt = dts[t];
    transpose_case(dt, (int64_t[]){37, 53}, 2, (int64_t[]){1, 0});                  /* 2-D, tails */
    transpose_case(dt, (int64_t[]){2, 3, 5, 7}, 4, NULL);                           /* reversed */
    transpose_case(dt, (int64_t[]){2, 17, 12, 64}, 4, (int64_t[]){0, 2, 1, 3});     /* BERT heads */
    transpose_case(dt, (int64_t[]){2, 12, 17, 64}, 4, (int64_t[]){0, 2, 3, 1});     /* K^T */
    transpose_case(dt, (int64_t[]){1, 5, 1, 19}, 4, (int64_t[]){3, 1, 2, 0});       /* size-1 dims */
    transpose_case(dt, (int64_t[]){3, 1, 4}, 3, (int64_t[]){1, 0, 2});              /* a copy */
    transpose_case(dt, (int64_t[]){4, 0, 3}, 3, (int64_t[]){2, 1, 0});              /* 0-size */
    transpose_case(dt, (int64_t[]){3, 4, 5, 6, 7}, 5, (int64_t[]){4, 2, 0, 3, 1});  /* any */
    transpose_case(dt, (int64_t[]){2, 64, 56, 57}, 4, (int64_t[]){0, 2, 3, 1});     /* NCHW -> NHWC, threaded */
    transpose_case(dt, (int64_t[]){600, 513}, 2, (int64_t[]){-1, 0});               /* negative perm, threaded */
    transpose_case(dt, (int64_t[]){4, 300, 12, 64}, 4, (int64_t[]){0, 2, 1, 3});    /* runs, threaded */
  }
}

static void slice_case(ge_dtype dt, const int64_t *d, size_t r, const int64_t *st, const int64_t *en,
                       const int64_t *ax, const int64_t *sp, size_t n) {
  ge_tensor *in[5] = {rand_bytes(dt, d, r), ge_test_tensor_i64((int64_t[]){(int64_t)n}, 1, st),
                      ge_test_tensor_i64((int64_t[]){(int64_t)n}, 1, en),
                      ax ? ge_test_tensor_i64((int64_t[]){(int64_t)n}, 1, ax) : NULL,
                      sp ? ge_test_tensor_i64((int64_t[]){(int64_t)n}, 1, sp) : NULL};
  size_t n_in = sp ? 5 : ax ? 4 : 3;
  op_case c = {.op = "Slice", .in = in, .n_in = n_in, .consts = 0x1e, .need_fast = true};
  run_case(&c, false);
  free_all(in, 5);
}

static void test_slice(void **unused) {
  (void)unused;
  static const ge_dtype dts[] = {GE_F32, GE_I8, GE_BF16, GE_F64};
  for (size_t t = 0; t < 4; t++) {
    ge_dtype dt = dts[t];
    int64_t d[] = {6, 11, 37};
    slice_case(dt, d, 3, (int64_t[]){1, 2}, (int64_t[]){5, 30}, (int64_t[]){0, 2}, NULL, 2);
    slice_case(dt, d, 3, (int64_t[]){-1, 3}, (int64_t[]){-100, 0}, (int64_t[]){1, 2}, (int64_t[]){-2, -1}, 2);
    slice_case(dt, d, 3, (int64_t[]){0, 1, 1}, (int64_t[]){INT64_MAX, 10, 37}, NULL, (int64_t[]){3, 4, 5}, 3);
    slice_case(dt, d, 3, (int64_t[]){4}, (int64_t[]){2}, NULL, NULL, 1); /* empty */
    int64_t big[] = {4, 300, 257};
    slice_case(dt, big, 3, (int64_t[]){1, -200}, (int64_t[]){299, 256}, (int64_t[]){1, -1}, NULL, 2);
    int64_t big2[] = {8, 300, 257}; /* threaded: contiguous rows, then strided rows */
    slice_case(dt, big2, 3, (int64_t[]){0, 1}, (int64_t[]){8, 300}, (int64_t[]){0, 1}, NULL, 2);
    slice_case(dt, big2, 3, (int64_t[]){-1}, (int64_t[]){-300}, (int64_t[]){-1}, (int64_t[]){-1}, 1);
  }
}

static void gather_case(ge_dtype dt, const int64_t *d, size_t r, int64_t axis, const int64_t *id, size_t ir,
                        bool i32) {
  size_t n = ge_test_numel(id, ir), dim = (size_t)d[axis < 0 ? axis + (int64_t)r : axis];
  int64_t *v = malloc((n + 1) * sizeof *v);
  int32_t *v32 = malloc((n + 1) * sizeof *v32);
  for (size_t i = 0; i < n; i++) {
    v[i] = (int64_t)(next_u64() % (2 * dim)) - (int64_t)dim; /* negatives too */
    v32[i] = (int32_t)v[i];
  }
  ge_tensor *in[2] = {rand_bytes(dt, d, r), i32 ? ge_test_tensor_i32(id, ir, v32) : ge_test_tensor_i64(id, ir, v)};
  ge_attr at[] = {GE_ATTR_INT("axis", axis)};
  op_case c = {.op = "Gather", .attrs = at, .na = 1, .in = in, .n_in = 2, .need_fast = true};
  run_case(&c, false);
  free_all(in, 2);
  free(v);
  free(v32);
}

static void test_gather(void **unused) {
  (void)unused;
  static const ge_dtype dts[] = {GE_F32, GE_I64, GE_U8, GE_F16};
  for (size_t t = 0; t < 4; t++) {
    ge_dtype dt = dts[t];
    gather_case(dt, (int64_t[]){1000, 77}, 2, 0, (int64_t[]){3, 5}, 2, false); /* embedding rows */
    gather_case(dt, (int64_t[]){7, 9, 11}, 3, 1, (int64_t[]){4}, 1, true);
    gather_case(dt, (int64_t[]){7, 9, 11}, 3, -1, (int64_t[]){2, 3}, 2, false);
    gather_case(dt, (int64_t[]){5, 8}, 2, 1, (int64_t[]){0}, 0, false); /* scalar index */
    gather_case(dt, (int64_t[]){5, 8}, 2, 0, (int64_t[]){0, 3}, 2, false); /* no indices */
    gather_case(dt, (int64_t[]){3000, 200}, 2, 0, (int64_t[]){2000}, 1, true); /* threaded */
  }
  /* a bad index: an error naming the node and the index */
  int64_t d[] = {4, 3}, id[] = {2};
  ge_tensor *in[2] = {rand_f32(d, 2, 1.f), ge_test_tensor_i64(id, 1, (int64_t[]){1, 4})};
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("t", &g), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, d, 2), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "i", GE_I64, id, 1), GE_OK);
  const char *ins[] = {"x", "i"}, *outs[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Gather", "my_gather", ins, 2, outs, 1, NULL, 0), GE_OK);
  ge_node *nd = &g->nodes[g->n_nodes - 1];
  ge_type tt[2] = {ge_test_type(GE_F32, d, 2), ge_test_type(GE_I64, id, 1)}, ot[1];
  ge_infer_input ii[2] = {{true, &tt[0], NULL}, {true, &tt[1], NULL}};
  ge_infer_ctx ic = {.graph = g, .node = nd, .opset = nd->opset, .n_in = 2, .n_out = 1, .in = ii, .out = ot};
  assert_int_equal(ge_op_infer(&ic), GE_OK);
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(nd->domain, nd->op_type, nd->opset, cand, 8);
  assert_true(nc >= 2);
  ge_prepare_ctx pc = {.graph = g, .node = nd, .opset = nd->opset, .n_in = 2, .n_out = 1, .in = ii, .out = ot};
  void *fs = NULL;
  assert_int_equal(cand[0]->prepare(&pc, &fs), GE_OK);
  ge_tensor *o = NULL;
  assert_int_equal(ge_tensor_create_shape(GE_F32, &ot[0].shape, &o), GE_OK);
  ge_kctx kc = {.node = nd, .n_in = 2, .n_out = 1, .in = in, .out = &o, .threads = 2};
  assert_int_equal(cand[0]->run(fs, &kc), GE_ERR_INVALID_ARGUMENT);
  const char *msg = ge_last_error();
  if (!strstr(msg, "my_gather") || !strstr(msg, "index 4") || !strstr(msg, "position 1"))
    fail_msg("unexpected message: %s", msg);
  cand[0]->release(fs);
  ge_tensor_free(o);
  ge_graph_free(g);
  free_all(in, 2);
}

static void test_concat(void **unused) {
  (void)unused;
  static const ge_dtype dts[] = {GE_I32, GE_F16, GE_U8, GE_F64, GE_F32};
  for (size_t t = 0; t < 5; t++) {
    for (int64_t axis = -3; axis < 3; axis++) {
      int64_t ax = axis < 0 ? axis + 3 : axis;
      ge_tensor *in[3];
      const int64_t sizes[3] = {3, 0, 5};
      for (size_t k = 0; k < 3; k++) {
        int64_t d[3] = {4, 7, t == 4 ? 9000 : 9}; /* float32: threaded */
        d[ax] = sizes[k];
        in[k] = rand_bytes(dts[t], d, 3);
      }
      ge_attr at[] = {GE_ATTR_INT("axis", axis)};
      op_case c = {.op = "Concat", .attrs = at, .na = 1, .in = in, .n_in = 3, .need_fast = true};
      run_case(&c, false);
      free_all(in, 3);
    }
  }
}

/* ------------------------------------------------------------------ reductions */

static void reduce_case(const char *op, const int64_t *d, size_t r, const int64_t *axes, size_t na, int keep,
                        int64_t opset, bool need_fast) {
  ge_tensor *in[2] = {rand_f32(d, r, 3.f), NULL};
  if (in[0]->numel > 5) ((float *)in[0]->data)[5] = (strcmp(op, "ReduceMax") && strcmp(op, "ReduceMin")) ? 1.f : NAN;
  bool as_input = !strcmp(op, "ReduceSum") ? opset >= 13 : opset >= 18;
  ge_attr at[2] = {GE_ATTR_INT("keepdims", keep), GE_ATTR_INTS("axes", axes, na)};
  size_t n_at = 1, n_in = 1;
  if (axes && as_input) {
    in[1] = ge_test_tensor_i64((int64_t[]){(int64_t)na}, 1, axes);
    n_in = 2;
  } else if (axes) {
    n_at = 2;
  }
  op_case c = {.op = op, .opset = opset, .attrs = at, .na = n_at, .in = in, .n_in = n_in, .consts = 2, .tol = 2e-6,
               .need_fast = need_fast};
  run_case(&c, false);
  free_all(in, 2);
}

static void test_reduce(void **unused) {
  (void)unused;
  static const char *ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceL1",
                              "ReduceSumSquare"};
  static const int64_t opsets[] = {11, 13, 18};
  for (size_t o = 0; o < 7; o++)
    for (size_t v = 0; v < 3; v++) {
      int64_t os = opsets[v];
      int64_t d[] = {3, 17, 5, 131};
      reduce_case(ops[o], d, 4, (int64_t[]){-1}, 1, 1, os, true);           /* innermost */
      reduce_case(ops[o], d, 4, (int64_t[]){2, 3}, 2, 0, os, true);          /* inner two */
      reduce_case(ops[o], d, 4, (int64_t[]){0}, 1, 1, os, true);             /* outermost */
      reduce_case(ops[o], d, 4, (int64_t[]){1, 2}, 2, 0, os, true);          /* middle */
      reduce_case(ops[o], d, 4, NULL, 0, 0, os, true);                       /* everything */
      reduce_case(ops[o], d, 4, (int64_t[]){0, 2}, 2, 1, os, false);         /* other: reference */
      int64_t one[] = {1, 7, 1, 9};
      reduce_case(ops[o], one, 4, (int64_t[]){0, 2}, 2, 1, os, true);        /* size-1 axes only */
      int64_t big[] = {64, 3, 4099};
      reduce_case(ops[o], big, 3, (int64_t[]){2}, 1, 0, os, true);          /* threaded rows */
      reduce_case(ops[o], big, 3, (int64_t[]){1}, 1, 1, os, true);          /* threaded columns */
      int64_t empty[] = {3, 0, 5};
      reduce_case(ops[o], empty, 3, (int64_t[]){1}, 1, 1, os, true);        /* empty reduction */
      reduce_case(ops[o], empty, 3, (int64_t[]){2}, 1, 0, os, true);        /* empty output */
    }
}

/* ------------------------------------------------------------------ random shapes */

static int64_t rand_dim(void) {
  uint64_t r = next_u64() % 16;
  return r == 0 ? 0 : r < 10 ? (int64_t)(1 + next_u64() % 6) : r < 14 ? 17 : 33; /* 0, small, tails */
}

static void test_random_shapes(void **unused) {
  (void)unused;
  static const ge_dtype movers[] = {GE_F32, GE_U8, GE_F16, GE_I64};
  static const char *bins[] = {"Add", "Mul", "Max", "Min", "Sub", "Div"};
  static const char *reds[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2"};
  for (int it = 0; it < 60; it++) {
    size_t r = 1 + (size_t)(next_u64() % 5);
    int64_t d[5];
    for (size_t k = 0; k < r; k++) d[k] = rand_dim();
    /* Transpose: a random permutation */
    int64_t perm[5];
    for (size_t k = 0; k < r; k++) perm[k] = (int64_t)k;
    for (size_t k = r; k > 1; k--) {
      size_t q = (size_t)(next_u64() % k);
      int64_t t = perm[k - 1];
      perm[k - 1] = perm[q];
      perm[q] = t;
    }
    transpose_case(movers[it % 4], d, r, perm);
    /* a binary op against a random broadcast of the same shape */
    size_t br = 1 + (size_t)(next_u64() % r);
    int64_t bd[5];
    for (size_t k = 0; k < br; k++) bd[k] = next_u64() % 2 ? d[r - br + k] : 1;
    bin_case(bins[it % 6], d, r, bd, br, true);
    bin_case(bins[(it + 1) % 6], bd, br, d, r, true);
    /* a reduction over a random set of axes, attribute (opset 13) or input (18) */
    int64_t axes[5];
    size_t na = 0;
    for (size_t k = 0; k < r; k++)
      if (next_u64() % 2) axes[na++] = next_u64() % 2 ? (int64_t)k : (int64_t)k - (int64_t)r;
    reduce_case(reds[it % 4], d, r, na ? axes : NULL, na, (int)(next_u64() % 2), it % 2 ? 18 : 13, true);
    /* Slice of random bounds and steps on the last axis and one other */
    int64_t st[2] = {(int64_t)(next_u64() % 7) - 3, (int64_t)(next_u64() % 5)};
    int64_t en[2] = {(int64_t)(next_u64() % 40) - 10, INT64_MAX};
    int64_t ax[2] = {(int64_t)r - 1, 0};
    int64_t sp[2] = {next_u64() % 2 ? 1 + (int64_t)(next_u64() % 3) : -1 - (int64_t)(next_u64() % 3), 1};
    slice_case(movers[(it + 1) % 4], d, r, st, en, ax, sp, r > 1 ? 2 : 1);
    /* Gather on a random axis of non-empty data */
    bool empty = false;
    for (size_t k = 0; k < r; k++) empty |= d[k] == 0;
    if (!empty) gather_case(movers[(it + 2) % 4], d, r, (int64_t)(next_u64() % r), (int64_t[]){2, 3}, 2, it % 2);
  }
}

/* ------------------------------------------------------------------ Resize */

static void resize_case(const char *mode, const char *coord, const char *nearest, const int64_t *d,
                        const float *scales, const int64_t *sizes, bool need_fast) {
  ge_tensor *in[4] = {rand_f32(d, 4, 2.f), ge_test_tensor_f32((int64_t[]){0}, 1, NULL),
                      scales ? ge_test_tensor_f32((int64_t[]){4}, 1, scales) : NULL,
                      sizes ? ge_test_tensor_i64((int64_t[]){4}, 1, sizes) : NULL};
  ge_attr at[] = {GE_ATTR_STRING("mode", mode), GE_ATTR_STRING("coordinate_transformation_mode", coord),
                  GE_ATTR_STRING("nearest_mode", nearest)};
  op_case c = {.op = "Resize", .attrs = at, .na = 3, .in = in, .n_in = sizes ? 4 : 3, .consts = 0xe, .tol = 1e-5,
               .need_fast = need_fast};
  run_case(&c, false);
  free_all(in, 4);
}

static void test_resize(void **unused) {
  (void)unused;
  static const char *coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  static const char *nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  int64_t d[] = {2, 3, 7, 9};
  for (size_t c = 0; c < 4; c++) {
    resize_case("linear", coords[c], "floor", d, (float[]){1, 1, 2, 2}, NULL, true);        /* up x2 */
    resize_case("linear", coords[c], "floor", d, (float[]){1, 1, 0.6f, 1.7f}, NULL, true);  /* odd scales */
    resize_case("linear", coords[c], "floor", d, NULL, (int64_t[]){2, 3, 1, 13}, true);     /* sizes, to 1 */
    resize_case("linear", coords[c], "floor", d, (float[]){1, 1, 1, 3}, NULL, true);        /* W only */
    for (size_t n = 0; n < 4; n++) {
      resize_case("nearest", coords[c], nearest[n], d, (float[]){1, 1, 2, 3}, NULL, true);
      resize_case("nearest", coords[c], nearest[n], d, NULL, (int64_t[]){2, 3, 4, 5}, true);
    }
  }
  resize_case("nearest", "tf_half_pixel_for_nn", "round_prefer_floor", d, (float[]){1, 1, 1.5f, 2.5f}, NULL, true);
  int64_t big[] = {1, 16, 64, 64};
  resize_case("linear", "half_pixel", "floor", big, (float[]){1, 1, 2, 2}, NULL, true); /* threaded */
  resize_case("nearest", "asymmetric", "floor", big, (float[]){1, 1, 2, 2}, NULL, true);
  resize_case("linear", "half_pixel", "floor", d, (float[]){1, 2, 2, 2}, NULL, true); /* C resized: reference */
  resize_case("cubic", "half_pixel", "floor", d, (float[]){1, 1, 2, 2}, NULL, false); /* declined */
}

static int setup(void **unused) {
  (void)unused;
  const char *seed = getenv("GE_FAST_OPS_SEED"); /* another draw of the random cases */
  if (seed && strtoull(seed, NULL, 0)) rng = strtoull(seed, NULL, 0);
  return ge_test_setup_engine(unused);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unary),     cmocka_unit_test(test_clip),   cmocka_unit_test(test_cast_bits),
      cmocka_unit_test(test_binary),    cmocka_unit_test(test_where_expand), cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_slice),     cmocka_unit_test(test_gather), cmocka_unit_test(test_concat),
      cmocka_unit_test(test_reduce),    cmocka_unit_test(test_resize), cmocka_unit_test(test_random_shapes),
  };
  return cmocka_run_group_tests(tests, setup, ge_test_teardown_engine);
}
