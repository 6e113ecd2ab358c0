/* The precision pass (ge.exec.precision_mode) and the bf16/fp16 compute mode of the oneDNN
 * kernels: the exact marks per mode on small graphs (sensitive ops stay float32 in the mix
 * modes), idempotence, the options, and the numbers through a session (lower precision agrees
 * with float32 to bf16 accuracy; fp16 falls back to float32 where oneDNN has no kernel). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include <unistd.h>
#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "ge/ge.h"
#include "ir/ir.h"
#include "passes/pass.h"

/* ------------------------------------------------------------------ helpers */

static uint32_t rng = 4242;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return ((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static ge_tensor *rand_tensor(ge_dtype dt, const int64_t *dims, size_t rank, float scale) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(dt, dims, rank, &t), GE_OK);
  if (dt == GE_F32) {
    float *p = ge_tensor_data(t);
    for (size_t i = 0; i < t->numel; i++) p[i] = frand() * scale;
  } else if (dt == GE_F64) {
    double *p = ge_tensor_data(t);
    for (size_t i = 0; i < t->numel; i++) p[i] = frand() * scale;
  }
  return t;
}

static void constant(ge_graph *g, const char *name, ge_tensor *t) {
  assert_int_equal(ge_graph_add_constant(g, name, t), GE_OK);
  ge_tensor_free(t);
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

static const ge_node *find_node(const ge_graph *g, const char *name) {
  for (size_t i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].name, name)) return &g->nodes[i];
  return NULL;
}

/* The mark of a node: NULL when none. */
static const char *mark_of(const ge_node *n) {
  assert_non_null(n);
  return ge_node_attr_string(n, GE_PRECISION_ATTR, NULL);
}

static void assert_mark(const ge_graph *g, const char *name, const char *want) {
  const ge_node *n = find_node(g, name);
  if (!n) {
    fprintf(stderr, "no node %s\n", name);
    fail();
  }
  const char *m = mark_of(n);
  if (want ? !m || strcmp(m, want) : m != NULL) {
    fprintf(stderr, "node %s (%s): mark %s, expected %s\n", name, n->op_type, m ? m : "(none)",
            want ? want : "(none)");
    fail();
  }
}

/* A graph with one of each kind of op:
 *   x[2,4,8,8] -Conv-> c -Relu-> r -BatchNormalization-> b -MaxPool-> p -GlobalAveragePool-> q
 *   -Flatten-> f[2,8] -Gemm-> gm[2,6] -MatMul-> mm[2,6] -Softmax-> sm -LayerNormalization-> ln
 *   -ReduceSum-> out[2,1];  a float64 MatMul on the side (never marked). */
static ge_graph *build_mixed(void) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("t", &g), GE_OK);
  assert_int_equal(ge_graph_set_opset(g, "", 17), GE_OK);
  int64_t xd[4] = {2, 4, 8, 8};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  int64_t wd[4] = {8, 4, 3, 3}, bd[1] = {8}, gwd[2] = {8, 6}, gbd[1] = {6}, mwd[2] = {6, 6};
  constant(g, "w", rand_tensor(GE_F32, wd, 4, 0.3f));
  constant(g, "bias", rand_tensor(GE_F32, bd, 1, 0.1f));
  ge_tensor *var = rand_tensor(GE_F32, bd, 1, 0.1f);
  for (size_t i = 0; i < 8; i++) ((float *)var->data)[i] = 1.0f + 0.5f * ((float *)var->data)[i];
  constant(g, "bn_s", rand_tensor(GE_F32, bd, 1, 1.0f));
  constant(g, "bn_b", rand_tensor(GE_F32, bd, 1, 0.1f));
  constant(g, "bn_m", rand_tensor(GE_F32, bd, 1, 0.1f));
  constant(g, "bn_v", var);
  constant(g, "gw", rand_tensor(GE_F32, gwd, 2, 0.3f));
  constant(g, "gb", rand_tensor(GE_F32, gbd, 1, 0.1f));
  constant(g, "mw", rand_tensor(GE_F32, mwd, 2, 0.3f));
  constant(g, "ln_s", rand_tensor(GE_F32, gbd, 1, 1.0f));
  constant(g, "ln_b", rand_tensor(GE_F32, gbd, 1, 0.1f));
  int64_t dd[2] = {3, 3};
  constant(g, "da", rand_tensor(GE_F64, dd, 2, 1.0f));
  constant(g, "db", rand_tensor(GE_F64, dd, 2, 1.0f));
  int64_t pads[4] = {1, 1, 1, 1}, ks[2] = {2, 2}, st2[2] = {2, 2};
  ge_attr conv_a[] = {GE_ATTR_INTS("pads", pads, 4)};
  node(g, "Conv", "conv", "x,w,bias", "c", conv_a, 1);
  node(g, "Relu", "relu", "c", "r", NULL, 0);
  node(g, "BatchNormalization", "bn", "r,bn_s,bn_b,bn_m,bn_v", "b", NULL, 0);
  ge_attr pool_a[] = {GE_ATTR_INTS("kernel_shape", ks, 2), GE_ATTR_INTS("strides", st2, 2)};
  node(g, "MaxPool", "pool", "b", "p", pool_a, 2);
  node(g, "GlobalAveragePool", "gap", "p", "q", NULL, 0);
  node(g, "Flatten", "flat", "q", "f", NULL, 0);
  node(g, "Gemm", "gemm", "f,gw,gb", "gm", NULL, 0);
  node(g, "MatMul", "matmul", "gm,mw", "mm", NULL, 0);
  node(g, "Softmax", "softmax", "mm", "sm", NULL, 0);
  node(g, "LayerNormalization", "ln", "sm,ln_s,ln_b", "ln_out", NULL, 0);
  node(g, "ReduceSum", "rsum", "ln_out", "out", NULL, 0);
  node(g, "MatMul", "matmul_f64", "da,db", "dout", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "out"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "dout"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  return g;
}

/* Runs the precision pass alone (level 0: no other pass) under `mode`. */
static ge_graph *rewrite(int mode, bool *changed_out) {
  ge_graph *g = build_mixed();
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 0);
  cfg.precision = mode;
  ge_pass_report rep;
  memset(&rep, 0, sizeof rep);
  ge_status st = ge_passes_run(g, &cfg, &rep);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  bool changed = false;
  for (size_t i = 0; i < rep.n_stats; i++)
    if (!strcmp(rep.stats[i].name, "precision")) changed = rep.stats[i].changed;
  if (changed_out) *changed_out = changed;
  assert_int_equal(rep.nodes_before, rep.nodes_after); /* no Casts: only marks */
  ge_pass_report_clear(&rep);
  ge_pass_config_clear(&cfg);
  return g;
}

static const char *const compute_ops[] = {"conv", "gemm", "matmul"};
static const char *const sensitive_ops[] = {"bn", "pool", "gap", "softmax", "ln"};
static const char *const never_ops[] = {"relu", "flat", "rsum", "matmul_f64"};

static void check_modes(int mode, const char *lowp, bool mix) {
  bool changed = false;
  ge_graph *g = rewrite(mode, &changed);
  assert_true(changed == (lowp != NULL));
  for (size_t i = 0; i < sizeof compute_ops / sizeof *compute_ops; i++) assert_mark(g, compute_ops[i], lowp);
  for (size_t i = 0; i < sizeof sensitive_ops / sizeof *sensitive_ops; i++)
    assert_mark(g, sensitive_ops[i], mix ? NULL : lowp);
  for (size_t i = 0; i < sizeof never_ops / sizeof *never_ops; i++) assert_mark(g, never_ops[i], NULL);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ tests */

static void test_marks_per_mode(void **state) {
  (void)state;
  check_modes(GE_PRECISION_KEEP, NULL, false);
  check_modes(GE_PRECISION_FORCE_FP32, NULL, false);
  check_modes(GE_PRECISION_FP32_TO_BF16, "bf16", false);
  check_modes(GE_PRECISION_FP32_TO_FP16, "fp16", false);
  check_modes(GE_PRECISION_MIX_BF16, "bf16", true);
  check_modes(GE_PRECISION_MIX_FP16, "fp16", true);
}

/* A second run changes nothing; switching modes re-marks; force_fp32 and mix clear marks a
   model carried on ops outside their set. */
static void test_idempotent_and_remark(void **state) {
  (void)state;
  ge_graph *g = rewrite(GE_PRECISION_FP32_TO_BF16, NULL);
  ge_passes_infer_types(g);
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 0);
  ge_pass_ctx ctx = {.cfg = &cfg, .level = 0};
  bool changed = true;
  cfg.precision = GE_PRECISION_FP32_TO_BF16;
  assert_int_equal(ge_pass_precision(g, &ctx, &changed), GE_OK);
  assert_false(changed);
  cfg.precision = GE_PRECISION_MIX_FP16; /* sensitive marks go, compute marks become fp16 */
  assert_int_equal(ge_pass_precision(g, &ctx, &changed), GE_OK);
  assert_true(changed);
  assert_mark(g, "conv", "fp16");
  assert_mark(g, "softmax", NULL);
  assert_mark(g, "ln", NULL);
  cfg.precision = GE_PRECISION_FORCE_FP32;
  assert_int_equal(ge_pass_precision(g, &ctx, &changed), GE_OK);
  assert_true(changed);
  for (size_t i = 0; i < g->n_nodes; i++) assert_null(mark_of(&g->nodes[i]));
  cfg.precision = 99;
  assert_int_equal(ge_pass_precision(g, &ctx, &changed), GE_ERR_INVALID_ARGUMENT);
  ge_pass_config_clear(&cfg);
  ge_graph_free(g);
}

/* At level 3 the fusions run first; the fused ops are marked (compute), the level-0 pipeline
   does not run the precision pass unless a mode asks for it. */
static void test_with_fusions(void **state) {
  (void)state;
  ge_graph *g = build_mixed();
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 3);
  cfg.precision = GE_PRECISION_MIX_BF16;
  ge_status st = ge_passes_run(g, &cfg, NULL);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
  size_t marked = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    const char *m = mark_of(n);
    bool compute = !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "FusedConv") ||
                   !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "FusedGemm") ||
                   !strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "FusedMatMul");
    bool f32 = n->n_outputs && n->outputs[0] >= 0 && g->values[n->outputs[0]].type.dtype == GE_F32;
    if (compute && f32) {
      assert_non_null(m);
      assert_string_equal(m, "bf16");
      marked++;
    } else {
      assert_null(m);
    }
  }
  assert_true(marked >= 3);
  ge_pass_config_clear(&cfg);
  ge_graph_free(g);

  /* default mode: nothing marked at any level */
  g = build_mixed();
  ge_pass_config_init(&cfg, 3);
  assert_int_equal(ge_passes_run(g, &cfg, NULL), GE_OK);
  for (size_t i = 0; i < g->n_nodes; i++) assert_null(mark_of(&g->nodes[i]));
  ge_pass_config_clear(&cfg);
  ge_graph_free(g);
  assert_non_null(ge_pass_find("precision"));
}

static void test_options(void **state) {
  (void)state;
  static const char *const ok[] = {"must_keep_origin_dtype", "force_fp32", "allow_fp32_to_bf16",
                                   "allow_fp32_to_fp16", "allow_mix_precision_bf16",
                                   "allow_mix_precision_fp16"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    ge_option o[] = {{"ge.exec.precision_mode", ok[i]}};
    ge_session *s = NULL;
    ge_status st = ge_session_create(o, 1, &s);
    if (st != GE_OK) fprintf(stderr, "%s: %s\n", ok[i], ge_last_error());
    assert_int_equal(st, GE_OK);
    ge_session_free(s);
  }
  ge_option bad[] = {{"ge.exec.precision_mode", "allow_fp32_to_fp8"}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(bad, 1, &s), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "allow_fp32_to_fp8"));
}

/* y = act(Conv) -> Gemm through a session in each mode; lower precision agrees with float32 to
   bf16 accuracy (relative to the output's scale). */
static ge_graph *build_net(void) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("net", &g), GE_OK);
  assert_int_equal(ge_graph_set_opset(g, "", 17), GE_OK);
  int64_t xd[4] = {2, 16, 12, 12}, wd[4] = {32, 16, 3, 3}, bd[1] = {32}, gwd[2] = {32 * 36, 10};
  int64_t gbd[1] = {10}, mwd[2] = {10, 10};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 4), GE_OK);
  constant(g, "w", rand_tensor(GE_F32, wd, 4, 0.2f));
  constant(g, "b", rand_tensor(GE_F32, bd, 1, 0.1f));
  constant(g, "gw", rand_tensor(GE_F32, gwd, 2, 0.05f));
  constant(g, "gb", rand_tensor(GE_F32, gbd, 1, 0.1f));
  constant(g, "mw", rand_tensor(GE_F32, mwd, 2, 0.3f));
  int64_t pads[4] = {1, 1, 1, 1}, ks[2] = {2, 2}, st2[2] = {2, 2};
  ge_attr conv_a[] = {GE_ATTR_INTS("pads", pads, 4)};
  node(g, "Conv", "conv", "x,w,b", "c", conv_a, 1);
  node(g, "Relu", "relu", "c", "r", NULL, 0);
  ge_attr pool_a[] = {GE_ATTR_INTS("kernel_shape", ks, 2), GE_ATTR_INTS("strides", st2, 2)};
  node(g, "MaxPool", "pool", "r", "p", pool_a, 2);
  node(g, "Flatten", "flat", "p", "f", NULL, 0);
  node(g, "Gemm", "gemm", "f,gw,gb", "gm", NULL, 0);
  node(g, "MatMul", "matmul", "gm,mw", "mm0", NULL, 0);
  ge_attr tb[] = {GE_ATTR_INT("transB", 1), GE_ATTR_FLOAT("alpha", 0.5f)};
  node(g, "Gemm", "gemm_tb", "mm0,mw", "mm", tb, 2);
  node(g, "Softmax", "softmax", "mm", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "mm"), GE_OK);
  return g;
}

static void run_mode(const ge_graph *g, const char *mode, const char *level, ge_tensor *x, ge_tensor **outs) {
  ge_option o[] = {{"ge.exec.precision_mode", mode}, {"ge.graphOptimizationLevel", level},
                   {"ge.intraOpThreads", "2"}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(o, 3, &s), GE_OK);
  ge_status st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, &x, 1, outs, 2);
  if (st != GE_OK) fprintf(stderr, "%s: %s\n", mode, ge_last_error());
  assert_int_equal(st, GE_OK);
  ge_session_free(s);
}

static void assert_near_scaled(const ge_tensor *a, const ge_tensor *ref, double rel) {
  assert_int_equal(a->numel, ref->numel);
  const float *x = a->data, *y = ref->data;
  double scale = 0;
  for (size_t i = 0; i < ref->numel; i++) scale = fmax(scale, fabs(y[i]));
  for (size_t i = 0; i < ref->numel; i++) {
    if (!(fabs((double)x[i] - y[i]) <= rel * (scale + 1e-6))) {
      fprintf(stderr, "element %zu: %g vs %g (scale %g)\n", i, x[i], y[i], scale);
      fail();
    }
  }
}

static double max_diff(const ge_tensor *a, const ge_tensor *b) {
  double d = 0;
  for (size_t i = 0; i < a->numel; i++) d = fmax(d, fabs((double)((const float *)a->data)[i] - ((const float *)b->data)[i]));
  return d;
}

static void test_session_numerics(void **state) {
  (void)state;
  /* oneDNN's view of the processor: bf16 compute needs AVX512-BF16 (AMX included) */
  unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
  bool has_bf16 = (isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) == (unsigned)dnnl_cpu_isa_avx512_core_bf16;
  ge_graph *g = build_net();
  int64_t xd[4] = {2, 16, 12, 12};
  ge_tensor *x = rand_tensor(GE_F32, xd, 4, 1.0f);
  static const char *const levels[] = {"0", "3"};
  for (size_t l = 0; l < 2; l++) {
    ge_tensor *ref[2] = {0};
    run_mode(g, "force_fp32", levels[l], x, ref);
    static const char *const modes[] = {"allow_fp32_to_bf16", "allow_mix_precision_bf16", "allow_fp32_to_fp16",
                                        "allow_mix_precision_fp16"};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
      ge_tensor *out[2] = {0};
      run_mode(g, modes[m], levels[l], x, out);
      assert_int_equal(out[0]->dtype, GE_F32); /* the interface stays float32 */
      assert_near_scaled(out[0], ref[0], 3e-2);
      assert_near_scaled(out[1], ref[1], 3e-2);
      /* bf16 really computes in bf16 where the processor has it (the result differs) */
      if (has_bf16 && strstr(modes[m], "bf16")) assert_true(max_diff(out[1], ref[1]) > 0);
      /* without an fp16 kernel an fp16 mode is the float32 mode: the same kernels (ge's own
         included, not oneDNN's float32 fallback alone), the same bits */
      if (strstr(modes[m], "fp16") && !ge_dn_f16_usable()) {
        assert_true(max_diff(out[0], ref[0]) == 0);
        assert_true(max_diff(out[1], ref[1]) == 0);
      }
      ge_tensor_free(out[0]);
      ge_tensor_free(out[1]);
    }
    ge_tensor_free(ref[0]);
    ge_tensor_free(ref[1]);
  }
  ge_tensor_free(x);
  ge_graph_free(g);
}

/* Without an fp16 kernel the fp16 modes run as the float32 mode, kernel for kernel: a MatMul that
   ge's packed GEMM takes in float32 (fast/pgemm.c) gives the same bits in both modes (before,
   the fp16 mark sent it to oneDNN's float32 fallback, another summation order). */
static void test_fp16_unavailable_is_fp32(void **state) {
  (void)state;
  if (ge_dn_f16_usable()) skip();
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("mm", &g), GE_OK);
  assert_int_equal(ge_graph_set_opset(g, "", 17), GE_OK);
  int64_t xd[2] = {64, 384}, wd[2] = {384, 384};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  constant(g, "w", rand_tensor(GE_F32, wd, 2, 0.05f));
  node(g, "MatMul", "mm", "x,w", "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  ge_tensor *x = rand_tensor(GE_F32, xd, 2, 1.0f);
  ge_tensor *y[3] = {0};
  static const char *const modes[] = {"force_fp32", "allow_fp32_to_fp16", "allow_mix_precision_fp16"};
  char path[64];
  snprintf(path, sizeof path, "/tmp/ge_test_fp16_%d.json", (int)getpid());
  for (size_t m = 0; m < 3; m++) {
    ge_option o[] = {{"ge.exec.precision_mode", modes[m]}, {"ge.intraOpThreads", "2"},
                     {"ge.exec.profilingMode", "1"}, {"ge.exec.profilingPath", path}};
    ge_session *s = NULL;
    assert_int_equal(ge_session_create(o, 4, &s), GE_OK);
    assert_int_equal(ge_session_add_graph(s, 1, g), GE_OK);
    assert_int_equal(ge_session_run_graph(s, 1, &x, 1, &y[m], 1), GE_OK);
    ge_session_free(s);
    /* the step's kernel, from the profile: the float32 mode's */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (ge_cpu_avx512_fma()) assert_non_null(strstr(buf, "\"kernel\":\"pgemm\""));
  }
  remove(path);
  assert_true(max_diff(y[1], y[0]) == 0);
  assert_true(max_diff(y[2], y[0]) == 0);
  for (size_t m = 0; m < 3; m++) ge_tensor_free(y[m]);
  ge_tensor_free(x);
  ge_graph_free(g);
}

static int setup(void **state) {
  (void)state;
  return ge_initialize(NULL, 0) == GE_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return ge_finalize() == GE_OK ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_marks_per_mode),
      cmocka_unit_test(test_idempotent_and_remark),
      cmocka_unit_test(test_with_fusions),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_session_numerics),
      cmocka_unit_test(test_fp16_unavailable_is_fp32),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
