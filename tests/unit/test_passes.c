/* The optimisation passes: each on a small hand-built graph checks the exact rewrite (node
 * counts and op types after) and that the graph computes the same outputs before and after
 * (both run through a session at ge.graphOptimizationLevel=0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ge/ge.h"
#include "ir/ir.h"
#include "passes/pass.h"

/* ------------------------------------------------------------------ helpers */

static uint32_t rng = 12345;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return ((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static ge_tensor *rand_tensor(const int64_t *dims, size_t rank, float scale) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, dims, rank, &t), GE_OK);
  float *p = ge_tensor_data(t);
  for (size_t i = 0; i < t->numel; i++) p[i] = frand() * scale;
  return t;
}

static ge_graph *new_graph(int64_t opset) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("t", &g), GE_OK);
  if (opset) assert_int_equal(ge_graph_set_opset(g, "", opset), GE_OK);
  return g;
}

static void input(ge_graph *g, const char *name, const int64_t *dims, size_t rank) {
  assert_int_equal(ge_graph_add_input(g, name, GE_F32, dims, rank), GE_OK);
}

static void constant(ge_graph *g, const char *name, ge_tensor *t) {
  assert_int_equal(ge_graph_add_constant(g, name, t), GE_OK);
  ge_tensor_free(t);
}

static void const_f32(ge_graph *g, const char *name, const int64_t *dims, size_t rank, const float *v) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, dims, rank, &t), GE_OK);
  if (t->numel) memcpy(t->data, v, t->numel * sizeof(float));
  constant(g, name, t);
}

static void scalar(ge_graph *g, const char *name, float v) { const_f32(g, name, NULL, 0, &v); }

static void const_i64(ge_graph *g, const char *name, const int64_t *v, int64_t n) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, &n, 1, &t), GE_OK);
  memcpy(t->data, v, (size_t)n * sizeof(int64_t));
  constant(g, name, t);
}

static void node(ge_graph *g, const char *op, const char *name, const char *in_csv, const char *out_csv,
                 const ge_attr *attrs, size_t n_attrs) {
  const char *ins[8], *outs[4];
  char ib[256], ob[256];
  size_t ni = 0, no = 0;
  snprintf(ib, sizeof ib, "%s", in_csv);
  snprintf(ob, sizeof ob, "%s", out_csv);
  for (char *s = ib, *tok; (tok = strsep(&s, ","));) ins[ni++] = tok;
  for (char *s = ob, *tok; (tok = strsep(&s, ","));) outs[no++] = tok;
  if (!in_csv[0]) ni = 0;
  ge_status st = ge_graph_add_node(g, op, name, ins, ni, outs, no, attrs, n_attrs);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
}

static size_t count_op(const ge_graph *g, const char *op) {
  size_t n = 0;
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].op_type, op)) n++;
  return n;
}

static const ge_node *find_op(const ge_graph *g, const char *op) {
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].op_type, op)) return &g->nodes[i];
  return NULL;
}

static void run(const ge_graph *g, ge_tensor **inputs, size_t n_in, ge_tensor **outs, size_t n_out) {
  ge_option o[] = {{"ge.graphOptimizationLevel", "0"}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(o, 1, &s), GE_OK);
  ge_status st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, inputs, n_in, outs, n_out);
  if (st != GE_OK) fprintf(stderr, "run failed: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  ge_session_free(s);
}

static void assert_close(const ge_tensor *a, const ge_tensor *b, float tol) {
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->rank, b->rank);
  for (int32_t d = 0; d < a->rank; d++) assert_int_equal(a->dims[d], b->dims[d]);
  assert_int_equal(a->numel, b->numel);
  if (a->dtype != GE_F32) {
    assert_memory_equal(a->data, b->data, a->nbytes);
    return;
  }
  const float *x = a->data, *y = b->data;
  for (size_t i = 0; i < a->numel; i++) {
    float d = fabsf(x[i] - y[i]);
    if (!(d <= tol * (1 + fabsf(y[i])))) {
      fprintf(stderr, "element %zu: %g vs %g\n", i, x[i], y[i]);
      fail();
    }
  }
}

/* Runs `g` (level 0) and a copy optimised with `pass` (NULL: the whole pipeline at level 3),
   compares the outputs; returns the optimised copy (caller frees). */
static ge_graph *check_pass(const ge_graph *g, const char *pass, ge_tensor **inputs, size_t n_in, float tol) {
  ge_graph *opt = NULL;
  assert_int_equal(ge_graph_clone(g, NULL, &opt), GE_OK);
  assert_int_equal(ge_graph_toposort(opt), GE_OK);
  ge_status st;
  if (pass) {
    st = ge_pass_run_one(opt, pass, NULL);
  } else {
    ge_pass_config cfg;
    ge_pass_config_init(&cfg, 3);
    ge_pass_report rep;
    st = ge_passes_run(opt, &cfg, &rep);
    ge_pass_report_clear(&rep);
    ge_pass_config_clear(&cfg);
  }
  if (st != GE_OK) fprintf(stderr, "pass failed: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  /* output names survive */
  assert_int_equal(opt->n_outputs, g->n_outputs);
  for (size_t i = 0; i < g->n_outputs; i++)
    assert_string_equal(opt->values[opt->outputs[i]].name, g->values[g->outputs[i]].name);
  size_t n_out = g->n_outputs;
  ge_tensor *a[8] = {0}, *b[8] = {0};
  assert_true(n_out <= 8);
  run(g, inputs, n_in, a, n_out);
  run(opt, inputs, n_in, b, n_out);
  for (size_t i = 0; i < n_out; i++) {
    assert_close(b[i], a[i], tol);
    ge_tensor_free(a[i]);
    ge_tensor_free(b[i]);
  }
  return opt;
}

static void free_inputs(ge_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) ge_tensor_free(t[i]);
}

/* ------------------------------------------------------------------ cleanups */

static void test_identity_elim(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 3};
  input(g, "x", d, 2);
  node(g, "Identity", "i1", "x", "a", NULL, 0);
  node(g, "Relu", "r", "a", "b", NULL, 0);
  node(g, "Dropout", "dr", "b", "c", NULL, 0);
  node(g, "Identity", "i2", "c", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 2, 1)};
  ge_graph *opt = check_pass(g, "identity_elim", in, 1, 0);
  assert_int_equal(opt->n_nodes, 1);
  assert_string_equal(opt->nodes[0].op_type, "Relu");
  assert_string_equal(opt->values[opt->nodes[0].outputs[0]].name, "y");
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);

  /* input -> Identity -> output: the names must both survive, so it stays */
  g = new_graph(0);
  input(g, "x", d, 2);
  node(g, "Identity", "i", "x", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  in[0] = rand_tensor(d, 2, 1);
  opt = check_pass(g, "identity_elim", in, 1, 0);
  assert_int_equal(opt->n_nodes, 1);
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);
}

static void test_noop_elim(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 3, 4};
  input(g, "x", d, 3);
  int64_t shp[] = {2, 3, 4}, pads[6] = {0};
  const_i64(g, "shape", shp, 3);
  const_i64(g, "pads", pads, 6);
  scalar(g, "zero", 0.f);
  scalar(g, "one", 1.f);
  int64_t perm[] = {0, 1, 2};
  ge_attr tp = GE_ATTR_INTS("perm", perm, 3), to = GE_ATTR_INT("to", 1);
  node(g, "Relu", "r", "x", "a", NULL, 0);
  node(g, "Reshape", "rs", "a,shape", "b", NULL, 0);
  node(g, "Transpose", "t", "b", "c", &tp, 1);
  node(g, "Cast", "cast", "c", "d", &to, 1);
  node(g, "Add", "add0", "d,zero", "e", NULL, 0);
  node(g, "Mul", "mul1", "one,e", "f", NULL, 0);
  node(g, "Pad", "pad", "f,pads", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 3, 1)};
  ge_graph *opt = check_pass(g, "identity_elim", in, 1, 0);
  assert_int_equal(opt->n_nodes, 1);
  assert_string_equal(opt->nodes[0].op_type, "Relu");
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);
}

static void test_dce_cse(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {4, 5};
  input(g, "x", d, 2);
  node(g, "Relu", "r1", "x", "a", NULL, 0);
  node(g, "Relu", "r2", "x", "b", NULL, 0);
  node(g, "Add", "add", "a,b", "y", NULL, 0);
  node(g, "Sigmoid", "dead1", "x", "u", NULL, 0);
  node(g, "Neg", "dead2", "u", "w", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 2, 1)};
  ge_graph *opt = check_pass(g, "dce", in, 1, 0);
  assert_int_equal(opt->n_nodes, 3);
  assert_int_equal(count_op(opt, "Sigmoid"), 0);
  ge_graph *opt2 = check_pass(opt, "cse", in, 1, 0);
  assert_int_equal(opt2->n_nodes, 2);
  assert_int_equal(count_op(opt2, "Relu"), 1);
  const ge_node *add = find_op(opt2, "Add");
  assert_non_null(add);
  assert_int_equal(add->inputs[0], add->inputs[1]);
  ge_graph_free(opt2);
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);

  /* random ops are not merged; two graph outputs of equal nodes keep both names */
  g = new_graph(0);
  input(g, "x", d, 2);
  node(g, "Relu", "r1", "x", "y1", NULL, 0);
  node(g, "Relu", "r2", "x", "y2", NULL, 0);
  ge_attr sh = GE_ATTR_INTS("shape", d, 2);
  node(g, "RandomUniform", "ru1", "", "q1", &sh, 1);
  node(g, "RandomUniform", "ru2", "", "q2", &sh, 1);
  node(g, "Add", "a", "q1,q2", "z", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y1"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y2"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "z"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  bool changed = false;
  assert_int_equal(ge_pass_run_one(g, "cse", &changed), GE_OK);
  assert_false(changed);
  assert_int_equal(count_op(g, "RandomUniform"), 2);
  assert_int_equal(count_op(g, "Relu"), 2);
  ge_graph_free(g);
}

static void test_chains(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 3, 4};
  input(g, "x", d, 3);
  int64_t p1[] = {1, 0, 2}, p2[] = {0, 2, 1};
  ge_attr a1 = GE_ATTR_INTS("perm", p1, 3), a2 = GE_ATTR_INTS("perm", p2, 3);
  ge_attr c64 = GE_ATTR_INT("to", 11), c32 = GE_ATTR_INT("to", 1);
  int64_t s1[] = {6, 4}, s2[] = {4, -1};
  const_i64(g, "s1", s1, 2);
  const_i64(g, "s2", s2, 2);
  node(g, "Relu", "r", "x", "a", NULL, 0);
  node(g, "Transpose", "t1", "a", "b", &a1, 1);
  node(g, "Transpose", "t2", "b", "c", &a2, 1);
  node(g, "Cast", "c1", "c", "e", &c64, 1);
  node(g, "Cast", "c2", "e", "f", &c32, 1);
  node(g, "Reshape", "rs1", "f,s1", "h", NULL, 0);
  node(g, "Reshape", "rs2", "h,s2", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 3, 1)};
  ge_graph *opt = check_pass(g, NULL, in, 1, 0);
  /* Relu, one Transpose (perm composed), one Reshape; the casts are gone */
  assert_int_equal(opt->n_nodes, 3);
  assert_int_equal(count_op(opt, "Transpose"), 1);
  assert_int_equal(count_op(opt, "Reshape"), 1);
  assert_int_equal(count_op(opt, "Cast"), 0);
  const int64_t *perm;
  size_t np;
  assert_true(ge_node_attr_ints(find_op(opt, "Transpose"), "perm", &perm, &np));
  assert_int_equal(np, 3);
  assert_int_equal(perm[0], 1);
  assert_int_equal(perm[1], 2);
  assert_int_equal(perm[2], 0);
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);

  /* a lossy first cast (f32 -> i32 -> f32) stays */
  g = new_graph(0);
  input(g, "x", d, 3);
  ge_attr ci = GE_ATTR_INT("to", 6);
  node(g, "Cast", "c1", "x", "e", &ci, 1);
  node(g, "Cast", "c2", "e", "y", &c32, 1);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  in[0] = rand_tensor(d, 3, 10);
  opt = check_pass(g, NULL, in, 1, 0);
  assert_int_equal(count_op(opt, "Cast"), 2);
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);
}

/* Constant nodes (tensor, float, ints) become initializers with the same values; a Constant
   whose value is a graph output keeps its node. */
static void test_const_to_init(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 3};
  input(g, "x", d, 2);
  ge_tensor *cv = rand_tensor(d, 2, 1);
  ge_attr a_t = GE_ATTR_TENSOR("value", cv);
  ge_attr a_f = GE_ATTR_FLOAT("value_float", 2.5f);
  int64_t shp[] = {3, 2};
  ge_attr a_is = GE_ATTR_INTS("value_ints", shp, 2);
  ge_attr a_o = GE_ATTR_FLOAT("value_float", -1.f);
  node(g, "Constant", "ct", "", "c", &a_t, 1);
  node(g, "Constant", "cf", "", "f", &a_f, 1);
  node(g, "Constant", "ci", "", "s", &a_is, 1);
  node(g, "Constant", "co", "", "y2", &a_o, 1);
  node(g, "Add", "add", "x,c", "a", NULL, 0);
  node(g, "Mul", "mul", "a,f", "b", NULL, 0);
  node(g, "Reshape", "rs", "b,s", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y2"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 2, 1)};
  ge_graph *opt = check_pass(g, "const_to_init", in, 1, 0);
  /* three Constants folded into initializers; the output one stays */
  assert_int_equal(opt->n_nodes, 4);
  assert_int_equal(count_op(opt, "Constant"), 1);
  const ge_value *vc = &opt->values[ge_graph_find_value(opt, "c")];
  assert_int_equal(vc->kind, GE_VALUE_CONSTANT);
  assert_non_null(vc->constant);
  assert_int_equal(vc->producer, -1);
  assert_memory_equal(vc->constant->data, cv->data, cv->nbytes);
  const ge_value *vf = &opt->values[ge_graph_find_value(opt, "f")];
  assert_int_equal(vf->kind, GE_VALUE_CONSTANT);
  assert_int_equal(vf->constant->dtype, GE_F32);
  assert_int_equal(vf->constant->rank, 0);
  assert_true(*(const float *)vf->constant->data == 2.5f);
  const ge_value *vs = &opt->values[ge_graph_find_value(opt, "s")];
  assert_int_equal(vs->kind, GE_VALUE_CONSTANT);
  assert_int_equal(vs->constant->dtype, GE_I64);
  assert_int_equal(vs->constant->numel, 2);
  assert_int_equal(((const int64_t *)vs->constant->data)[0], 3);
  assert_int_equal(((const int64_t *)vs->constant->data)[1], 2);
  assert_int_equal(opt->values[ge_graph_find_value(opt, "y2")].kind, GE_VALUE_INTERMEDIATE);
  /* a second run changes nothing */
  bool changed = true;
  assert_int_equal(ge_pass_run_one(opt, "const_to_init", &changed), GE_OK);
  assert_false(changed);
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_tensor_free(cv);
  ge_graph_free(g);
}

/* The chains pass alone: Transpose pairs compose, a lossless Cast round trip and a Reshape
   chain collapse (test_chains checks the same through the whole pipeline). */
static void test_chains_alone(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 3, 4};
  input(g, "x", d, 3);
  int64_t p1[] = {1, 0, 2}, p2[] = {0, 2, 1};
  ge_attr a1 = GE_ATTR_INTS("perm", p1, 3), a2 = GE_ATTR_INTS("perm", p2, 3);
  ge_attr c64 = GE_ATTR_INT("to", 11), c32 = GE_ATTR_INT("to", 1);
  int64_t s1[] = {6, 4}, s2[] = {4, -1};
  const_i64(g, "s1", s1, 2);
  const_i64(g, "s2", s2, 2);
  node(g, "Transpose", "t1", "x", "b", &a1, 1);
  node(g, "Transpose", "t2", "b", "c", &a2, 1);
  node(g, "Cast", "c1", "c", "e", &c64, 1);
  node(g, "Cast", "c2", "e", "f", &c32, 1);
  node(g, "Reshape", "rs1", "f,s1", "h", NULL, 0);
  node(g, "Reshape", "rs2", "h,s2", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 3, 1)};
  ge_graph *opt = check_pass(g, "chains", in, 1, 0);
  /* the chains pass may leave dead producers for dce: count what the output depends on */
  ge_graph *clean = check_pass(opt, "dce", in, 1, 0);
  assert_int_equal(count_op(clean, "Transpose"), 1);
  assert_int_equal(count_op(clean, "Reshape"), 1);
  assert_true(count_op(clean, "Cast") <= 1);
  ge_graph_free(clean);
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ folding and fusions */

static void add_conv(ge_graph *g, const char *x, const char *y, int64_t cin, int64_t cout, bool bias,
                     const char *prefix) {
  char wn[64], bn[64], ins[160], nm[64];
  snprintf(wn, sizeof wn, "%s_w", prefix);
  snprintf(bn, sizeof bn, "%s_b", prefix);
  snprintf(nm, sizeof nm, "%s", prefix);
  int64_t wd[] = {cout, cin, 3, 3}, bd[] = {cout};
  constant(g, wn, rand_tensor(wd, 4, 0.5f));
  if (bias) constant(g, bn, rand_tensor(bd, 1, 0.5f));
  snprintf(ins, sizeof ins, bias ? "%s,%s,%s" : "%s,%s", x, wn, bn);
  int64_t pads[] = {1, 1, 1, 1};
  ge_attr a = GE_ATTR_INTS("pads", pads, 4);
  node(g, "Conv", nm, ins, y, &a, 1);
}

/* ------------------------------------------------------------------ f16_compute */

/* A tensor of dtype dt (GE_F16, GE_BF16 or GE_F32) holding vals rounded to dt's precision (the
   float32 one holds the same rounded values, so that both graphs compute on equal numbers). */
static ge_tensor *half_tensor(ge_dtype dt, ge_dtype round_to, const int64_t *dims, size_t rank, const float *vals) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(dt, dims, rank, &t), GE_OK);
  for (size_t i = 0; i < t->numel; i++) {
    uint16_t h = round_to == GE_F16 ? ge_f32_to_f16(vals[i]) : ge_f32_to_bf16(vals[i]);
    float f = round_to == GE_F16 ? ge_f16_to_f32(h) : ge_bf16_to_f32(h);
    if (dt == GE_F32) ((float *)t->data)[i] = f;
    else ((uint16_t *)t->data)[i] = h;
  }
  return t;
}

/* x -> Conv(w, b) -> Relu -> Add(k) -> y, and Relu -> Cast(float32) -> z: in 16-bit type d (dt
   d) or in float32 on the same values (dt GE_F32). */
static ge_graph *f16_net(ge_dtype dt, ge_dtype d, const float *w, const float *b, const float *k) {
  ge_graph *g = new_graph(17);
  int64_t xd[] = {1, 8, 10, 10}, wd[] = {16, 8, 3, 3}, bd[] = {16}, kd[] = {1, 16, 1, 1};
  assert_int_equal(ge_graph_add_input(g, "x", dt, xd, 4), GE_OK);
  constant(g, "w", half_tensor(dt, d, wd, 4, w));
  constant(g, "b", half_tensor(dt, d, bd, 1, b));
  constant(g, "k", half_tensor(dt, d, kd, 4, k));
  int64_t pads[] = {1, 1, 1, 1};
  ge_attr a = GE_ATTR_INTS("pads", pads, 4);
  node(g, "Conv", "conv", "x,w,b", "c", &a, 1);
  node(g, "Relu", "relu", "c", "r", NULL, 0);
  node(g, "Add", "add", "r,k", "y", NULL, 0);
  ge_attr to = GE_ATTR_INT("to", ge_dtype_to_onnx(GE_F32));
  node(g, "Cast", "cast", "r", "z", &to, 1);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "z"), GE_OK);
  return g;
}

static void run_level(const ge_graph *g, const char *level, ge_tensor *x, ge_tensor **outs) {
  ge_option o[] = {{"ge.graphOptimizationLevel", level}, {"ge.intraOpThreads", "2"}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(o, 2, &s), GE_OK);
  ge_status st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, &x, 1, outs, 2);
  if (st != GE_OK) fprintf(stderr, "run failed: %s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  ge_session_free(s);
}

static float half_at(const ge_tensor *t, size_t i) {
  uint16_t h = ((const uint16_t *)t->data)[i];
  return t->dtype == GE_F16 ? ge_f16_to_f32(h) : ge_bf16_to_f32(h);
}

/* A float16 / bfloat16 region computes on float32 values: after the pipeline no node but a
   Cast has a 16-bit output, the convolution fused as in float32, and the outputs are exactly
   the float32 graph's (same values) rounded; against the per-node reference kernels (level 0:
   each op rounds) they agree to the 16-bit type's precision. */
static void test_f16_compute(void **state) {
  (void)state;
  float w[16 * 8 * 9], b[16], k[16], x[8 * 100];
  for (size_t i = 0; i < sizeof w / sizeof *w; i++) w[i] = frand() * 0.3f;
  for (size_t i = 0; i < 16; i++) b[i] = frand() * 0.5f, k[i] = frand();
  for (size_t i = 0; i < 800; i++) x[i] = frand() * 2;
  int64_t xd[] = {1, 8, 10, 10};
  static const ge_dtype types[] = {GE_F16, GE_BF16};
  for (size_t ti = 0; ti < 2; ti++) {
    ge_dtype d = types[ti];
    ge_graph *g16 = f16_net(d, d, w, b, k), *g32 = f16_net(GE_F32, d, w, b, k);
    ge_tensor *x16 = half_tensor(d, d, xd, 4, x), *x32 = half_tensor(GE_F32, d, xd, 4, x);
    /* the pipeline's graph */
    ge_graph *opt = NULL;
    assert_int_equal(ge_graph_clone(g16, NULL, &opt), GE_OK);
    assert_int_equal(ge_graph_toposort(opt), GE_OK);
    ge_pass_config cfg;
    ge_pass_config_init(&cfg, 3);
    assert_int_equal(ge_passes_run(opt, &cfg, NULL), GE_OK);
    ge_pass_config_clear(&cfg);
    for (size_t i = 0; i < opt->n_nodes; i++) {
      const ge_node *n = &opt->nodes[i];
      if (!strcmp(n->op_type, "Cast")) continue;
      for (size_t o = 0; o < n->n_outputs; o++)
        assert_int_not_equal(opt->values[n->outputs[o]].type.dtype, d);
    }
    assert_non_null(find_op(opt, "FusedConv"));
    assert_int_equal(opt->values[opt->outputs[0]].type.dtype, d); /* the interface keeps its types */
    ge_graph_free(opt);
    ge_tensor *a[2] = {0}, *r[2] = {0}, *f[2] = {0};
    run_level(g16, "3", x16, a);
    run_level(g16, "0", x16, r);
    run_level(g32, "3", x32, f);
    assert_int_equal(a[0]->dtype, d);
    assert_int_equal(a[1]->dtype, GE_F32);
    const float *fy = f[0]->data, *fz = f[1]->data, *az = a[1]->data;
    double tol = d == GE_F16 ? 4e-3 : 3e-2;
    for (size_t i = 0; i < a[0]->numel; i++) {
      uint16_t want = d == GE_F16 ? ge_f32_to_f16(fy[i]) : ge_f32_to_bf16(fy[i]);
      assert_int_equal(((const uint16_t *)a[0]->data)[i], want);
      /* z: the Relu's value leaves the region through a Cast back to d, then to float32 */
      float zr = d == GE_F16 ? ge_f16_to_f32(ge_f32_to_f16(fz[i])) : ge_bf16_to_f32(ge_f32_to_bf16(fz[i]));
      assert_true(az[i] == zr);
      assert_true(fabs(half_at(a[0], i) - half_at(r[0], i)) <= tol * (1 + fabs(half_at(r[0], i))));
    }
    for (size_t i = 0; i < 2; i++) {
      ge_tensor_free(a[i]);
      ge_tensor_free(r[i]);
      ge_tensor_free(f[i]);
    }
    ge_tensor_free(x16);
    ge_tensor_free(x32);
    ge_graph_free(g16);
    ge_graph_free(g32);
  }
}

static void test_fold_bn(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {1, 3, 6, 6}, c[] = {4};
  input(g, "x", d, 4);
  add_conv(g, "x", "cv", 3, 4, true, "conv");
  constant(g, "sc", rand_tensor(c, 1, 1));
  constant(g, "bi", rand_tensor(c, 1, 1));
  constant(g, "mean", rand_tensor(c, 1, 1));
  float var[] = {0.5f, 1.0f, 2.0f, 0.1f};
  const_f32(g, "var", c, 1, var);
  ge_attr eps = GE_ATTR_FLOAT("epsilon", 1e-3f);
  node(g, "BatchNormalization", "bn", "cv,sc,bi,mean,var", "y", &eps, 1);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[1] = {rand_tensor(d, 4, 1)};
  ge_graph *opt = check_pass(g, "fold_bn", in, 1, 1e-4f);
  assert_int_equal(opt->n_nodes, 1);
  assert_string_equal(opt->nodes[0].op_type, "Conv");
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);

  /* Gemm (transB) + BN */
  g = new_graph(0);
  int64_t xd[] = {3, 5}, wd[] = {4, 5};
  input(g, "x", xd, 2);
  constant(g, "w", rand_tensor(wd, 2, 1));
  constant(g, "cb", rand_tensor(c, 1, 1));
  constant(g, "sc", rand_tensor(c, 1, 1));
  constant(g, "bi", rand_tensor(c, 1, 1));
  constant(g, "mean", rand_tensor(c, 1, 1));
  const_f32(g, "var", c, 1, var);
  ge_attr ga[] = {GE_ATTR_INT("transB", 1), GE_ATTR_FLOAT("beta", 0.5f)};
  node(g, "Gemm", "gm", "x,w,cb", "gy", ga, 2);
  node(g, "BatchNormalization", "bn", "gy,sc,bi,mean,var", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  in[0] = rand_tensor(xd, 2, 1);
  opt = check_pass(g, "fold_bn", in, 1, 1e-4f);
  assert_int_equal(opt->n_nodes, 1);
  assert_string_equal(opt->nodes[0].op_type, "Gemm");
  ge_graph_free(opt);
  free_inputs(in, 1);
  ge_graph_free(g);
}

static void test_matmul_add(void **state) {
  for (int rank3 = 0; rank3 < 2; rank3++) {
    ge_graph *g = new_graph(0);
    int64_t d2[] = {4, 8}, d3[] = {2, 4, 8}, wd[] = {8, 16}, bd[] = {16};
    if (rank3) input(g, "x", d3, 3);
    else input(g, "x", d2, 2);
    constant(g, "w", rand_tensor(wd, 2, 1));
    constant(g, "b", rand_tensor(bd, 1, 1));
    node(g, "MatMul", "mm", "x,w", "m", NULL, 0);
    node(g, "Add", "add", "b,m", "y", NULL, 0);
    assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
    ge_tensor *in[1] = {rank3 ? rand_tensor(d3, 3, 1) : rand_tensor(d2, 2, 1)};
    ge_graph *opt = check_pass(g, "matmul_add", in, 1, 1e-5f);
    assert_int_equal(opt->n_nodes, 1);
    assert_string_equal(opt->nodes[0].op_type, rank3 ? "FusedMatMul" : "Gemm");
    ge_graph_free(opt);
    free_inputs(in, 1);
    ge_graph_free(g);
  }
}

static void test_act_fusion(void **state) {
  /* Conv + Relu, Conv + Clip(0, 6), Gemm + Sigmoid, MatMul + SiLU, MatMul(rank 3)+bias + HardSwish */
  ge_graph *g = new_graph(0);
  int64_t d[] = {1, 3, 5, 5};
  input(g, "x", d, 4);
  add_conv(g, "x", "c1", 3, 4, true, "conv1");
  node(g, "Relu", "relu", "c1", "y1", NULL, 0);
  add_conv(g, "x", "c2", 3, 2, false, "conv2");
  scalar(g, "lo", 0.f);
  scalar(g, "hi", 6.f);
  node(g, "Clip", "clip", "c2,lo,hi", "y2", NULL, 0);
  int64_t ad[] = {3, 7}, wd[] = {7, 5}, w3[] = {7, 6}, bd[] = {6};
  input(g, "a", ad, 2);
  constant(g, "gw", rand_tensor(wd, 2, 1));
  node(g, "Gemm", "gemm", "a,gw", "g1", NULL, 0);
  node(g, "Sigmoid", "sig", "g1", "y3", NULL, 0);
  constant(g, "mw", rand_tensor(wd, 2, 1));
  node(g, "MatMul", "mm", "a,mw", "m1", NULL, 0);
  node(g, "Sigmoid", "s2", "m1", "m2", NULL, 0);
  node(g, "Mul", "silu", "m2,m1", "y4", NULL, 0);
  int64_t a3[] = {2, 3, 7};
  input(g, "a3", a3, 3);
  constant(g, "w3", rand_tensor(w3, 2, 1));
  constant(g, "b3", rand_tensor(bd, 1, 1));
  node(g, "MatMul", "mm3", "a3,w3", "n1", NULL, 0);
  node(g, "Add", "ad3", "n1,b3", "n2", NULL, 0);
  node(g, "HardSwish", "hs", "n2", "y5", NULL, 0);
  const char *outs[] = {"y1", "y2", "y3", "y4", "y5"};
  for (int i = 0; i < 5; i++) assert_int_equal(ge_graph_add_output(g, outs[i]), GE_OK);
  ge_tensor *in[3] = {rand_tensor(d, 4, 1), rand_tensor(ad, 2, 1), rand_tensor(a3, 3, 1)};
  ge_graph *opt = check_pass(g, NULL, in, 3, 1e-4f);
  assert_int_equal(opt->n_nodes, 5);
  assert_int_equal(count_op(opt, "FusedConv"), 2);
  assert_int_equal(count_op(opt, "FusedGemm"), 1);
  assert_int_equal(count_op(opt, "FusedMatMul"), 2);
  for (size_t i = 0; i < opt->n_nodes; i++) {
    const ge_node *n = &opt->nodes[i];
    assert_string_equal(n->domain, "ai.ge");
    const char *act = ge_node_attr_string(n, "activation", "");
    const char *out = opt->values[n->outputs[0]].name;
    const char *want = !strcmp(out, "y1") ? "Relu" : !strcmp(out, "y2") ? "Clip"
                       : !strcmp(out, "y3") ? "Sigmoid" : !strcmp(out, "y4") ? "SiLU" : "HardSwish";
    assert_string_equal(act, want);
  }
  ge_graph_free(opt);
  free_inputs(in, 3);
  ge_graph_free(g);

  /* the Conv output is also a graph output: no fusion */
  g = new_graph(0);
  input(g, "x", d, 4);
  add_conv(g, "x", "c1", 3, 4, true, "conv1");
  node(g, "Relu", "relu", "c1", "y1", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y1"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "c1"), GE_OK);
  in[0] = rand_tensor(d, 4, 1);
  opt = check_pass(g, NULL, in, 1, 1e-5f);
  assert_int_equal(count_op(opt, "Conv"), 1);
  assert_int_equal(count_op(opt, "Relu"), 1);
  ge_graph_free(opt);
  ge_tensor_free(in[0]);
  ge_graph_free(g);
}

static void test_conv_sum(void **state) {
  /* y = Relu(Conv(x) + r): one FusedConv with the sum and the activation */
  ge_graph *g = new_graph(0);
  int64_t d[] = {1, 4, 5, 5};
  input(g, "x", d, 4);
  input(g, "r", d, 4);
  add_conv(g, "x", "c", 4, 4, true, "conv");
  node(g, "Add", "add", "r,c", "s", NULL, 0);
  node(g, "Relu", "relu", "s", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *in[2] = {rand_tensor(d, 4, 1), rand_tensor(d, 4, 1)};
  ge_graph *opt = check_pass(g, NULL, in, 2, 1e-4f);
  assert_int_equal(opt->n_nodes, 1);
  assert_string_equal(opt->nodes[0].op_type, "FusedConv");
  assert_int_equal(opt->nodes[0].n_inputs, 4);
  assert_string_equal(ge_node_attr_string(&opt->nodes[0], "activation", ""), "Relu");
  ge_graph_free(opt);
  free_inputs(in, 2);
  ge_graph_free(g);
}

/* A transformer's projection and residual: Add(MatMul(x, w) + b, r) -> one FusedMatMul with r
   as its Sum, also where the shapes are unknown before the run (they broadcast as the Add
   did): a residual of the product's shape, a row (broadcast along the rows), and one that
   enlarges the product (the reference kernel's broadcast).  Not in allow_fp32_to_bf16. */
static void test_matmul_sum(void **state) {
  int64_t dyn[] = {-1, -1, 8}, rdyn[] = {-1, -1, 16}, wd[] = {8, 16}, bd[] = {16};
  int64_t xs[3][3] = {{2, 4, 8}, {2, 4, 8}, {1, 1, 8}}, rs[3][3] = {{2, 4, 16}, {1, 1, 16}, {3, 5, 16}};
  for (int c = 0; c < 3; c++) {
    ge_graph *g = new_graph(0);
    input(g, "x", dyn, 3);
    input(g, "r", rdyn, 3);
    constant(g, "w", rand_tensor(wd, 2, 1));
    constant(g, "b", rand_tensor(bd, 1, 1));
    node(g, "MatMul", "mm", "x,w", "m", NULL, 0);
    node(g, "Add", "bias", "m,b", "mb", NULL, 0);
    node(g, "Add", "res", "r,mb", "y", NULL, 0);
    assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
    ge_tensor *in[2] = {rand_tensor(xs[c], 3, 1), rand_tensor(rs[c], 3, 1)};
    ge_graph *opt = check_pass(g, NULL, in, 2, 1e-4f);
    assert_int_equal(opt->n_nodes, 1);
    assert_string_equal(opt->nodes[0].op_type, "FusedMatMul");
    assert_int_equal(opt->nodes[0].n_inputs, 4);
    ge_graph_free(opt);
    if (c == 0) { /* allow_fp32_to_bf16: the residual Add stays */
      ge_graph *o2 = NULL;
      assert_int_equal(ge_graph_clone(g, NULL, &o2), GE_OK);
      assert_int_equal(ge_graph_toposort(o2), GE_OK);
      ge_pass_config cfg;
      ge_pass_config_init(&cfg, 3);
      cfg.precision = GE_PRECISION_FP32_TO_BF16;
      assert_int_equal(ge_passes_run(o2, &cfg, NULL), GE_OK);
      ge_pass_config_clear(&cfg);
      assert_int_equal(count_op(o2, "Add"), 1);
      ge_graph_free(o2);
    }
    free_inputs(in, 2);
    ge_graph_free(g);
  }
}

static void test_gelu(void **state) {
  for (int form = 0; form < 3; form++) {
    ge_graph *g = new_graph(0);
    int64_t d[] = {3, 8};
    input(g, "x", d, 2);
    scalar(g, "half", 0.5f);
    scalar(g, "one", 1.f);
    if (form < 2) {
      scalar(g, "sqrt2", 1.4142135f);
      node(g, "Div", "div", "x,sqrt2", "a", NULL, 0);
      node(g, "Erf", "erf", "a", "b", NULL, 0);
    } else {
      scalar(g, "three", 3.f);
      scalar(g, "k", 0.044715f);
      scalar(g, "c", 0.7978845608f);
      node(g, "Pow", "pow", "x,three", "p", NULL, 0);
      node(g, "Mul", "mk", "p,k", "pk", NULL, 0);
      node(g, "Add", "ax", "x,pk", "s", NULL, 0);
      node(g, "Mul", "mc", "s,c", "sc", NULL, 0);
      node(g, "Tanh", "tanh", "sc", "b", NULL, 0);
    }
    node(g, "Add", "add1", "b,one", "e", NULL, 0);
    if (form == 0) { /* (x * (1+erf)) * 0.5 */
      node(g, "Mul", "m1", "x,e", "f", NULL, 0);
      node(g, "Mul", "m2", "f,half", "y", NULL, 0);
    } else { /* (x * 0.5) * (1+t) */
      node(g, "Mul", "h", "x,half", "xh", NULL, 0);
      node(g, "Mul", "m1", "xh,e", "y", NULL, 0);
    }
    assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
    ge_tensor *in[1] = {rand_tensor(d, 2, 2)};
    ge_graph *opt = check_pass(g, NULL, in, 1, 1e-5f);
    assert_int_equal(count_op(opt, "Gelu"), 1);
    assert_int_equal(opt->n_nodes, 1);
    assert_string_equal(ge_node_attr_string(find_op(opt, "Gelu"), "approximate", ""), form < 2 ? "none" : "tanh");
    ge_graph_free(opt);
    free_inputs(in, 1);
    ge_graph_free(g);
  }
}

static void build_layernorm(ge_graph *g, bool affine, int64_t opset) {
  int64_t d[] = {2, 3, 8}, nd[] = {8};
  input(g, "x", d, 3);
  int64_t axes[] = {-1};
  ge_attr ax = GE_ATTR_INTS("axes", axes, 1);
  scalar(g, "two", 2.f);
  scalar(g, "eps", 1e-5f);
  if (opset >= 18) {
    const_i64(g, "axes", axes, 1);
    node(g, "ReduceMean", "rm1", "x,axes", "m", NULL, 0);
  } else {
    node(g, "ReduceMean", "rm1", "x", "m", &ax, 1);
  }
  node(g, "Sub", "sub", "x,m", "dd", NULL, 0);
  node(g, "Pow", "pow", "dd,two", "p", NULL, 0);
  if (opset >= 18) node(g, "ReduceMean", "rm2", "p,axes", "v", NULL, 0);
  else node(g, "ReduceMean", "rm2", "p", "v", &ax, 1);
  node(g, "Add", "add", "v,eps", "ve", NULL, 0);
  node(g, "Sqrt", "sqrt", "ve", "sd", NULL, 0);
  node(g, "Div", "div", "dd,sd", affine ? "n" : "y", NULL, 0);
  if (affine) {
    constant(g, "gamma", rand_tensor(nd, 1, 1));
    constant(g, "beta", rand_tensor(nd, 1, 1));
    node(g, "Mul", "mul", "n,gamma", "ng", NULL, 0);
    node(g, "Add", "addb", "ng,beta", "y", NULL, 0);
  }
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
}

static void test_layernorm(void **state) {
  int64_t d[] = {2, 3, 8};
  const int64_t opsets[] = {13, 17, 18};
  for (int k = 0; k < 3; k++)
    for (int affine = 0; affine < 2; affine++) {
      ge_graph *g = new_graph(opsets[k]);
      build_layernorm(g, affine, opsets[k]);
      ge_tensor *in[1] = {rand_tensor(d, 3, 2)};
      ge_graph *opt = check_pass(g, NULL, in, 1, 1e-4f);
      assert_int_equal(opt->n_nodes, 1);
      const ge_node *n = &opt->nodes[0];
      assert_string_equal(n->op_type, "LayerNormalization");
      assert_string_equal(n->domain, opsets[k] >= 17 ? "" : "ai.ge");
      assert_int_equal(ge_node_attr_int(n, "axis", 0), 2);
      ge_graph_free(opt);
      free_inputs(in, 1);
      ge_graph_free(g);
    }
}

static void test_attention(void **state) {
  /* 0: Div scale; 1: Mul scale; 2: K broadcast over heads; 3: dynamic declared dims */
  for (int variant = 0; variant < 4; variant++) {
    ge_graph *g = new_graph(0);
    int64_t d[] = {2, 3, 4, 8}, md[] = {1, 1, 4, 4}, kd[] = {2, 1, 4, 8}, dyn[] = {-1, 3, -1, 8},
            mdyn[] = {1, 1, -1, -1};
    input(g, "q", variant == 3 ? dyn : d, 4);
    input(g, "k", variant == 2 ? kd : variant == 3 ? dyn : d, 4);
    input(g, "v", variant == 3 ? dyn : d, 4);
    input(g, "mask", variant == 3 ? mdyn : md, 4);
    int64_t perm[] = {0, 1, 3, 2};
    ge_attr tp = GE_ATTR_INTS("perm", perm, 4), ax = GE_ATTR_INT("axis", -1);
    node(g, "Transpose", "kt", "k", "kT", &tp, 1);
    node(g, "MatMul", "qk", "q,kT", "s", NULL, 0);
    if (variant == 0) {
      scalar(g, "c", sqrtf(8.f));
      node(g, "Div", "scale", "s,c", "ss", NULL, 0);
    } else {
      scalar(g, "c", 1.f / sqrtf(8.f));
      node(g, "Mul", "scale", "c,s", "ss", NULL, 0);
    }
    node(g, "Add", "addmask", "ss,mask", "sm", NULL, 0);
    node(g, "Softmax", "softmax", "sm", "p", &ax, 1);
    node(g, "MatMul", "pv", "p,v", "y", NULL, 0);
    assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
    ge_tensor *in[4] = {rand_tensor(d, 4, 1), rand_tensor(variant == 2 ? kd : d, 4, 1),
                        rand_tensor(d, 4, 1), rand_tensor(md, 4, 1)};
    float *m = ge_tensor_data(in[3]);
    m[3] = -INFINITY; /* a masked position */
    ge_graph *opt = check_pass(g, NULL, in, 4, 1e-4f);
    assert_int_equal(count_op(opt, "Attention"), 1);
    assert_int_equal(count_op(opt, "Softmax"), 0);
    assert_int_equal(opt->n_nodes, 2); /* Transpose + Attention */
    assert_float_equal(ge_node_attr_float(find_op(opt, "Attention"), "scale", 0), 1.f / sqrtf(8.f), 1e-6);
    ge_graph_free(opt);
    free_inputs(in, 4);
    ge_graph_free(g);
  }
}

/* GPT-style causal mask: Where(Cond, s, Fill) with any constant scalar Fill (-inf, the float32
   minimum, -100) becomes an Attention in mask_mode 1 (select) with mask_fill = Fill and Cond as
   its Mask.  Cond is a graph input (bool), read at run time. */
static void test_attention_where(void **state) {
  (void)state;
  static const float fills[] = {-INFINITY, -3.4028234663852886e38f, -100.f};
  for (size_t f = 0; f < 3; f++) {
    ge_graph *g = new_graph(0);
    int64_t d[] = {1, 2, 5, 8}, kd[] = {1, 2, 8, 5}, cd[] = {1, 1, 5, 5};
    input(g, "q", d, 4);
    input(g, "kt", kd, 4);
    input(g, "v", d, 4);
    assert_int_equal(ge_graph_add_input(g, "cond", GE_BOOL, cd, 4), GE_OK);
    ge_attr ax = GE_ATTR_INT("axis", -1);
    scalar(g, "c", 8.f);
    scalar(g, "fill", fills[f]);
    node(g, "MatMul", "qk", "q,kt", "s", NULL, 0);
    node(g, "Div", "scale", "s,c", "ss", NULL, 0);
    node(g, "Where", "causal", "cond,ss,fill", "sm", NULL, 0);
    node(g, "Softmax", "softmax", "sm", "p", &ax, 1);
    node(g, "MatMul", "pv", "p,v", "y", NULL, 0);
    assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
    ge_tensor *cond = NULL;
    assert_int_equal(ge_tensor_create(GE_BOOL, cd, 4, &cond), GE_OK);
    bool *cb = ge_tensor_data(cond);
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 5; j++) cb[i * 5 + j] = j <= i; /* causal: every row keeps one entry */
    ge_tensor *in[4] = {rand_tensor(d, 4, 2), rand_tensor(kd, 4, 2), rand_tensor(d, 4, 1), cond};
    ge_graph *opt = check_pass(g, NULL, in, 4, 1e-4f);
    assert_int_equal(count_op(opt, "Attention"), 1);
    assert_int_equal(count_op(opt, "Softmax"), 0);
    assert_int_equal(count_op(opt, "Where"), 0);
    const ge_node *a = find_op(opt, "Attention");
    assert_int_equal(ge_node_attr_int(a, "mask_mode", 0), 1);
    float mf = ge_node_attr_float(a, "mask_fill", 0.f);
    assert_true(mf == fills[f]);
    ge_graph_free(opt);
    free_inputs(in, 4);
    ge_graph_free(g);
  }
}

/* The [B, S, H, D] form of BERT / GPT-2 exports:
 *   q = Transpose(xq, 0,2,1,3)  kT = Transpose(xk, 0,2,3,1)  v = Transpose(xv, 0,2,1,3)
 *   s = MatMul(q, kT) / c;  Add(s, mask) | Where(cond, s, -1e9);  Softmax;  MatMul(., v)
 *   y = Transpose(., 0,2,1,3)
 * variant 0: additive mask [B,1,1,S], every Transpose absorbed (layout 15);
 *         1: Where with a constant causal condition [1,1,S,S] whose first row is fully masked
 *            (uniform probabilities), layout 15, mask_mode 1, mask_fill -1e9;
 *         2: as 1 with the condition a graph input [S,S], but the transposed V has another
 *            reader: its Transpose stays (layout 1|2|8), the rest fuses;
 *         3: as 0 but the attention's output before the last Transpose is a graph output too:
 *            that Transpose stays (layout 1|2|4);
 *         4: as 0 but the scaled scores are a graph output: nothing fuses. */
static void test_attention_transposes(void **state) {
  (void)state;
  const int64_t B = 2, S = 5, H = 3, D = 4;
  for (int variant = 0; variant < 5; variant++) {
    ge_graph *g = new_graph(0);
    int64_t xd[] = {B, S, H, D}, md[] = {B, 1, 1, S}, cd4[] = {1, 1, S, S}, cd2[] = {S, S};
    input(g, "xq", xd, 4);
    input(g, "xk", xd, 4);
    input(g, "xv", xd, 4);
    ge_tensor *cond = NULL;
    bool add = variant == 0 || variant >= 3;
    if (add) {
      input(g, "mask", md, 4);
    } else {
      assert_int_equal(ge_tensor_create(GE_BOOL, variant == 1 ? cd4 : cd2, variant == 1 ? 4 : 2, &cond), GE_OK);
      bool *cb = ge_tensor_data(cond);
      for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) cb[i * S + j] = i > 0 && j <= i; /* row 0: fully masked */
      if (variant == 1) {
        constant(g, "cond", cond);
        cond = NULL;
      } else {
        assert_int_equal(ge_graph_add_input(g, "cond", GE_BOOL, cd2, 2), GE_OK);
      }
    }
    int64_t pq[] = {0, 2, 1, 3}, pk[] = {0, 2, 3, 1};
    ge_attr tq = GE_ATTR_INTS("perm", pq, 4), tk = GE_ATTR_INTS("perm", pk, 4), ax = GE_ATTR_INT("axis", -1);
    node(g, "Transpose", "tq", "xq", "q", &tq, 1);
    node(g, "Transpose", "tk", "xk", "kT", &tk, 1);
    node(g, "Transpose", "tv", "xv", "v", &tq, 1);
    node(g, "MatMul", "qk", "q,kT", "s", NULL, 0);
    scalar(g, "c", 2.f);
    node(g, "Div", "scale", "s,c", "ss", NULL, 0);
    if (add) {
      node(g, "Add", "addmask", "ss,mask", "sm", NULL, 0);
    } else {
      scalar(g, "fill", -1e9f);
      node(g, "Where", "causal", "cond,ss,fill", "sm", NULL, 0);
    }
    node(g, "Softmax", "softmax", "sm", "p", &ax, 1);
    node(g, "MatMul", "pv", "p,v", "o", NULL, 0);
    node(g, "Transpose", "ty", "o", "y", &tq, 1);
    assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
    if (variant == 2) {
      node(g, "Relu", "vreader", "v", "vr", NULL, 0);
      assert_int_equal(ge_graph_add_output(g, "vr"), GE_OK);
    }
    if (variant == 3) assert_int_equal(ge_graph_add_output(g, "o"), GE_OK);
    if (variant == 4) assert_int_equal(ge_graph_add_output(g, "ss"), GE_OK);
    ge_tensor *in[4] = {rand_tensor(xd, 4, 2), rand_tensor(xd, 4, 2), rand_tensor(xd, 4, 1), NULL};
    size_t n_in = 3;
    if (add) {
      in[3] = rand_tensor(md, 4, 1);
      ((float *)ge_tensor_data(in[3]))[1] = -INFINITY;
      n_in = 4;
    } else if (variant == 2) {
      in[3] = cond;
      n_in = 4;
    }
    ge_graph *opt = check_pass(g, NULL, in, n_in, 1e-4f);
    const ge_node *a = find_op(opt, "Attention");
    if (variant == 4) {
      assert_null(a);
      assert_int_equal(count_op(opt, "Softmax"), 1);
      assert_int_equal(count_op(opt, "Transpose"), 4);
    } else {
      assert_non_null(a);
      assert_int_equal(count_op(opt, "Attention"), 1);
      assert_int_equal(count_op(opt, "Softmax"), 0);
      assert_int_equal(count_op(opt, "Where"), 0);
      assert_int_equal(count_op(opt, "Transpose"), variant >= 2 ? 1 : 0);
      assert_int_equal(ge_node_attr_int(a, "layout", 0), variant == 2 ? 11 : variant == 3 ? 7 : 15);
      assert_int_equal(ge_node_attr_int(a, "mask_mode", 0), add ? 0 : 1);
      if (!add) assert_true(ge_node_attr_float(a, "mask_fill", 0.f) == -1e9f);
      assert_float_equal(ge_node_attr_float(a, "scale", 0), 0.5f, 1e-7);
      /* variant 2: + V's Transpose and Relu; 3: + the output Transpose */
      assert_int_equal(opt->n_nodes, variant == 2 ? 3 : variant == 3 ? 2 : 1);
    }
    if (variant == 1) {
      /* the fully masked query row is the mean of V's rows (uniform softmax), as Where + Softmax */
      ge_tensor *y[1] = {NULL};
      run(opt, in, n_in, y, 1);
      const float *yv = ge_tensor_data(y[0]), *xv = ge_tensor_data(in[2]);
      for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
          for (int64_t d = 0; d < D; d++) {
            double mean = 0;
            for (int64_t n = 0; n < S; n++) mean += xv[((b * S + n) * H + h) * D + d];
            mean /= (double)S;
            assert_float_equal(yv[((b * S + 0) * H + h) * D + d], mean, 1e-5);
          }
      ge_tensor_free(y[0]);
    }
    ge_graph_free(opt);
    free_inputs(in, 4);
    ge_graph_free(g);
  }
}

/* ------------------------------------------------------------------ pipeline */

static void test_pipeline_config(void **state) {
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 3);
  assert_int_equal(ge_pass_config_add_list(&cfg, false, "cse, dce"), GE_OK);
  assert_int_equal(cfg.n_disable, 2);
  assert_int_equal(ge_pass_config_add_list(&cfg, true, "bogus"), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "bogus"));
  ge_pass_config_clear(&cfg);

  /* level 0 does nothing; level 1 removes the Identity; disabling identity_elim keeps it */
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 2};
  input(g, "x", d, 2);
  node(g, "Relu", "r", "x", "a", NULL, 0);
  node(g, "Identity", "i", "a", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  for (int k = 0; k < 3; k++) {
    ge_graph *c = NULL;
    assert_int_equal(ge_graph_clone(g, NULL, &c), GE_OK);
    ge_pass_config_init(&cfg, k == 0 ? 0 : 1);
    if (k == 2) assert_int_equal(ge_pass_config_add_list(&cfg, false, "identity_elim"), GE_OK);
    ge_pass_report rep;
    assert_int_equal(ge_passes_run(c, &cfg, &rep), GE_OK);
    assert_int_equal(c->n_nodes, k == 1 ? 1 : 2);
    if (k == 1) {
      assert_true(rep.n_stats > 0);
      assert_int_equal(rep.nodes_before, 2);
      assert_int_equal(rep.nodes_after, 1);
      bool seen = false;
      for (size_t i = 0; i < rep.n_stats; i++)
        if (!strcmp(rep.stats[i].name, "identity_elim")) {
          seen = true;
          assert_true(rep.stats[i].changed);
          assert_int_equal(rep.stats[i].nodes_before, 2);
          assert_int_equal(rep.stats[i].nodes_after, 1);
        }
      assert_true(seen);
      char *buf = NULL;
      size_t len = 0;
      FILE *f = open_memstream(&buf, &len);
      ge_pass_report_print(f, &rep);
      fclose(f);
      assert_non_null(strstr(buf, "identity_elim"));
      free(buf);
    } else if (k == 0) {
      assert_int_equal(rep.n_stats, 0);
    }
    ge_pass_report_clear(&rep);
    ge_pass_config_clear(&cfg);
    ge_graph_free(c);
  }
  ge_graph_free(g);
}

/* Values read by name inside a subgraph (If branches) are neither removed nor renamed. */
static void test_subgraph_reads(void **state) {
  int64_t d[] = {2};
  ge_graph *then_g = new_graph(0), *else_g = new_graph(0);
  node(then_g, "Neg", "neg", "t", "yt", NULL, 0);
  assert_int_equal(ge_graph_add_output(then_g, "yt"), GE_OK);
  node(else_g, "Abs", "abs", "u", "ye", NULL, 0);
  assert_int_equal(ge_graph_add_output(else_g, "ye"), GE_OK);
  ge_graph *g = new_graph(0);
  input(g, "x", d, 1);
  assert_int_equal(ge_graph_add_input(g, "cond", GE_BOOL, NULL, 0), GE_OK);
  node(g, "Identity", "id", "x", "t", NULL, 0);
  node(g, "Relu", "relu", "x", "u", NULL, 0);
  ge_attr br[] = {GE_ATTR_GRAPH("then_branch", then_g), GE_ATTR_GRAPH("else_branch", else_g)};
  node(g, "If", "if", "cond", "y", br, 2);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 3);
  assert_int_equal(ge_passes_run(g, &cfg, NULL), GE_OK);
  ge_pass_config_clear(&cfg);
  assert_int_equal(g->n_nodes, 3);
  assert_int_equal(count_op(g, "Identity"), 1);
  assert_int_equal(count_op(g, "Relu"), 1);
  assert_true(g->values[ge_graph_find_value(g, "t")].producer >= 0);
  assert_true(g->values[ge_graph_find_value(g, "u")].producer >= 0);
  ge_graph_free(g);
  ge_graph_free(then_g);
  ge_graph_free(else_g);
}

static void test_infer_types(void **state) {
  ge_graph *g = new_graph(0);
  int64_t d[] = {2, 3, 4}, shp[] = {6, 4};
  input(g, "x", d, 3);
  const_i64(g, "s", shp, 2);
  node(g, "Relu", "r", "x", "a", NULL, 0);
  node(g, "Reshape", "rs", "a,s", "y", NULL, 0);
  node(g, "NoSuchOp", "bad", "y", "z", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "z"), GE_OK);
  assert_int_equal(ge_passes_infer_types(g), GE_OK);
  const ge_type *t = &g->values[ge_graph_find_value(g, "y")].type;
  assert_int_equal(t->dtype, GE_F32);
  assert_int_equal(t->shape.rank, 2);
  assert_int_equal(t->shape.dims[0], 6);
  assert_int_equal(t->shape.dims[1], 4);
  /* the unknown op's output stays unknown, without an error */
  assert_int_equal(g->values[ge_graph_find_value(g, "z")].type.dtype, GE_DTYPE_COUNT);
  ge_graph_free(g);
}

int main(void) {
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity_elim),  cmocka_unit_test(test_noop_elim),
      cmocka_unit_test(test_dce_cse),        cmocka_unit_test(test_chains),
      cmocka_unit_test(test_fold_bn),        cmocka_unit_test(test_matmul_add),
      cmocka_unit_test(test_act_fusion),     cmocka_unit_test(test_conv_sum),
      cmocka_unit_test(test_matmul_sum),     cmocka_unit_test(test_f16_compute),
      cmocka_unit_test(test_gelu),           cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_attention),      cmocka_unit_test(test_attention_where),
      cmocka_unit_test(test_attention_transposes),      cmocka_unit_test(test_pipeline_config),
      cmocka_unit_test(test_infer_types),    cmocka_unit_test(test_subgraph_reads),
      cmocka_unit_test(test_const_to_init),  cmocka_unit_test(test_chains_alone),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ge_finalize();
  return rc;
}
