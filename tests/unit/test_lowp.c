/* The bf16 compute of the transformer kernels (dnnl_lowp.c, dnnl_attn.c):
 *   - ge_dn_to_bf16 (the matmuls convert their activation with it instead of a oneDNN reorder)
 *     against a plain round-to-nearest-even reference, bit for bit, on vector tails, chunk
 *     tails, the threaded split and the special values (NaN stays NaN, infinities, ties,
 *     overflow to infinity);
 *   - scaled-dot-product attention through a session in allow_fp32_to_bf16: the fusion gives an
 *     ai.ge Attention marked bf16 (oneDNN bf16 GEMMs, float32 mask and softmax) that agrees
 *     with float32 to bf16 accuracy, with -inf mask entries, at 1 and 2 threads, run twice
 *     (the cached buffers); the same for GPT-2's Where(cond, scores, -1e9) mask (mask_mode 1,
 *     a bool condition broadcast over batch and heads or over heads and rows, a fully masked
 *     row). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "ge/ge.h"
#include "ir/ir.h"
#include "passes/pass.h"

static uint16_t ref_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0; /* NaN: checked separately */
  uint32_t lsb = (u >> 16) & 1u;
  return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

static bool is_nan_bf16(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

static uint32_t rng = 12345;
static uint32_t next_u32(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng;
}

static void check_n(size_t n, int threads) {
  float *x = malloc((n ? n : 1) * sizeof(float));
  uint16_t *y = malloc((n + 1) * sizeof(uint16_t));
  assert_non_null(x);
  assert_non_null(y);
  static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                      0xffc00001u, 0x7f800001u, 0x00000001u, 0x807fffffu, 0x3f808000u,
                                      0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0xff7fffffu, 0x3f7fffffu};
  for (size_t i = 0; i < n; i++) {
    uint32_t u = i % 7 == 3 ? specials[(i / 7) % (sizeof specials / sizeof *specials)] : next_u32();
    if (i % 5 == 1) u = (u & 0xffff0000u) | 0x8000u; /* exact ties */
    memcpy(&x[i], &u, sizeof u);
  }
  y[n] = 0xbeef; /* nothing past n is written */
  ge_dn_to_bf16(x, y, n, threads);
  for (size_t i = 0; i < n; i++) {
    if (isnan(x[i])) {
      if (!is_nan_bf16(y[i])) fail_msg("n=%zu threads=%d: x[%zu] NaN -> 0x%04x", n, threads, i, y[i]);
      continue;
    }
    uint16_t want = ref_bf16(x[i]);
    uint32_t xu;
    memcpy(&xu, &x[i], sizeof xu);
    /* subnormal inputs may be flushed to zero by the instruction (same sign) */
    bool sub = (xu & 0x7f800000u) == 0 && (xu & 0x7fffffu) != 0;
    if (y[i] != want && !(sub && (y[i] & 0x7fffu) == 0 && (y[i] & 0x8000u) == (want & 0x8000u)))
      fail_msg("n=%zu threads=%d: x[%zu]=0x%08x -> 0x%04x, expected 0x%04x", n, threads, i, xu, y[i], want);
  }
  assert_int_equal(y[n], 0xbeef);
  free(x);
  free(y);
}

static void test_to_bf16(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 100, 4095, 4096, 4097, 65536, 65536 + 4096 * 3 + 29,
                                 128 * 768, 128 * 3072 + 7};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (int t = 1; t <= 3; t++) check_n(sizes[s], t);
}

static float frand(void) { return (float)((next_u32() >> 8) & 0xffff) / 32768.0f - 1.0f; }

static ge_tensor *rand_t(const int64_t *dims, size_t rank, float scale) {
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, dims, rank, &t), GE_OK);
  float *p = ge_tensor_data(t);
  for (size_t i = 0; i < ge_tensor_numel(t); i++) p[i] = frand() * scale;
  return t;
}

static void add_node(ge_graph *g, const char *op, const char *name, const char *const *ins, size_t ni,
                     const char *out, const ge_attr *at, size_t na) {
  const char *outs[1] = {out};
  ge_status st = ge_graph_add_node(g, op, name, ins, ni, outs, 1, at, na);
  if (st != GE_OK) fprintf(stderr, "%s\n", ge_last_error());
  assert_int_equal(st, GE_OK);
}

/* y = Softmax(q x kt * 0.2 + mask) x v, q [2,3,M,D], kt [2,3,D,N], v [2,3,N,Dv], mask [2,1,1,N];
   where 1: Where(cond, q x kt * 0.2, -1e9) with a bool cond [1,1,M,N]; 2: cond [2,1,1,N] */
static void attn_mask_dims(int64_t M, int64_t N, int where, int64_t *md) {
  md[0] = where == 1 ? 1 : 2, md[1] = 1, md[2] = where == 1 ? M : 1, md[3] = N;
}

/* bf16 kernels run (the bf16 Attention kernel among them): the processor has AVX512-BF16 and oneDNN's ISA ceiling
   (ONEDNN_MAX_CPU_ISA) allows it, as ge_dn_lowp_dt decides */
static bool cpu_bf16(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  unsigned isa = (unsigned)dnnl_get_effective_cpu_isa(), need = (unsigned)dnnl_cpu_isa_avx512_core_bf16;
  return __builtin_cpu_supports("avx512bf16") && (isa & need) == need;
#else
  return false;
#endif
}

static ge_graph *attn_graph(int64_t M, int64_t D, int64_t N, int64_t Dv, int where) {
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("attn", &g), GE_OK);
  assert_int_equal(ge_graph_set_opset(g, "", 17), GE_OK);
  int64_t qd[4] = {2, 3, M, D}, kd[4] = {2, 3, D, N}, vd[4] = {2, 3, N, Dv}, md[4];
  attn_mask_dims(M, N, where, md);
  assert_int_equal(ge_graph_add_input(g, "q", GE_F32, qd, 4), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "kt", GE_F32, kd, 4), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "v", GE_F32, vd, 4), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "mask", where ? GE_BOOL : GE_F32, md, 4), GE_OK);
  if (where) {
    ge_tensor *f = NULL;
    assert_int_equal(ge_tensor_create(GE_F32, NULL, 0, &f), GE_OK);
    *(float *)ge_tensor_data(f) = -1e9f;
    assert_int_equal(ge_graph_add_constant(g, "fill", f), GE_OK);
    ge_tensor_free(f);
  }
  ge_tensor *c = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, NULL, 0, &c), GE_OK);
  *(float *)ge_tensor_data(c) = 0.2f;
  assert_int_equal(ge_graph_add_constant(g, "c", c), GE_OK);
  ge_tensor_free(c);
  add_node(g, "MatMul", "qk", (const char *[]){"q", "kt"}, 2, "s", NULL, 0);
  add_node(g, "Mul", "scale", (const char *[]){"s", "c"}, 2, "ss", NULL, 0);
  if (where)
    add_node(g, "Where", "masked", (const char *[]){"mask", "ss", "fill"}, 3, "sm", NULL, 0);
  else
    add_node(g, "Add", "masked", (const char *[]){"ss", "mask"}, 2, "sm", NULL, 0);
  ge_attr ax[] = {GE_ATTR_INT("axis", -1)};
  add_node(g, "Softmax", "softmax", (const char *[]){"sm"}, 1, "p", ax, 1);
  add_node(g, "MatMul", "pv", (const char *[]){"p", "v"}, 2, "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  return g;
}

static ge_tensor *run_attn(const ge_graph *g, const char *mode, const char *threads, ge_tensor **in) {
  ge_option o[] = {{"ge.exec.precision_mode", mode}, {"ge.graphOptimizationLevel", "3"},
                   {"ge.intraOpThreads", threads}};
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(o, 3, &s), GE_OK);
  ge_tensor *out[1] = {NULL}, *again[1] = {NULL};
  ge_status st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, in, 4, out, 1);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, in, 4, again, 1);
  if (st != GE_OK) fprintf(stderr, "%s: %s\n", mode, ge_last_error());
  assert_int_equal(st, GE_OK);
  assert_int_equal(ge_tensor_numel(out[0]), ge_tensor_numel(again[0]));
  assert_memory_equal(ge_tensor_data(out[0]), ge_tensor_data(again[0]), ge_tensor_nbytes(out[0]));
  ge_tensor_free(again[0]);
  ge_session_free(s);
  return out[0];
}

static void attn_case(int64_t M, int64_t D, int64_t N, int64_t Dv, int where) {
  ge_graph *g = attn_graph(M, D, N, Dv, where);
  /* the fusion and the mark */
  ge_graph *h = NULL;
  assert_int_equal(ge_graph_clone(g, NULL, &h), GE_OK);
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 3);
  cfg.precision = GE_PRECISION_FP32_TO_BF16;
  assert_int_equal(ge_passes_run(h, &cfg, NULL), GE_OK);
  size_t n_attn = 0;
  for (size_t i = 0; i < h->n_nodes; i++)
    if (!strcmp(h->nodes[i].op_type, "Attention")) {
      n_attn++;
      const char *m = ge_node_attr_string(&h->nodes[i], GE_PRECISION_ATTR, NULL);
      assert_non_null(m);
      assert_string_equal(m, "bf16");
      assert_int_equal(ge_node_attr_int(&h->nodes[i], "mask_mode", 0), where ? 1 : 0);
    }
  assert_int_equal(n_attn, 1);
  ge_pass_config_clear(&cfg);
  ge_graph_free(h);

  int64_t qd[4] = {2, 3, M, D}, kd[4] = {2, 3, D, N}, vd[4] = {2, 3, N, Dv}, md[4];
  attn_mask_dims(M, N, where, md);
  ge_tensor *in[4] = {rand_t(qd, 4, 2.f), rand_t(kd, 4, 2.f), rand_t(vd, 4, 1.f), NULL};
  if (where) {
    assert_int_equal(ge_tensor_create(GE_BOOL, md, 4, &in[3]), GE_OK);
    uint8_t *c = ge_tensor_data(in[3]);
    for (size_t i = 0; i < ge_tensor_numel(in[3]); i++) {
      size_t col = i % (size_t)N, row = i / (size_t)N;
      /* causal with row 0 fully masked (uniform), or every third key masked */
      c[i] = where == 1 ? row > 0 && col <= row : col % 3 != 0;
    }
  } else {
    in[3] = rand_t(md, 4, 1.f);
    float *mk = ge_tensor_data(in[3]);
    for (int64_t j = 0; j < 2 * N; j += 3) mk[j] = -INFINITY; /* never a whole row */
  }
  ge_tensor *ref = run_attn(g, "force_fp32", "1", in);
  const float *r = ge_tensor_data(ref);
  double scale = 0;
  for (size_t i = 0; i < ge_tensor_numel(ref); i++) scale = fmax(scale, fabs(r[i]));
  for (int t = 1; t <= 2; t++) {
    ge_tensor *y = run_attn(g, "allow_fp32_to_bf16", t == 1 ? "1" : "2", in);
    const float *x = ge_tensor_data(y);
    double dmax = 0;
    for (size_t i = 0; i < ge_tensor_numel(ref); i++) {
      if (!(fabs((double)x[i] - r[i]) <= 3e-2 * scale))
        fail_msg("M=%lld N=%lld where %d threads %d: y[%zu] = %g, float32 %g", (long long)M, (long long)N, where, t, i,
                 x[i], r[i]);
      dmax = fmax(dmax, fabs((double)x[i] - r[i]));
    }
    if (where && cpu_bf16()) assert_true(dmax > 0); /* bf16 did run (not the float32 fallback) */
    ge_tensor_free(y);
  }
  ge_tensor_free(ref);
  for (size_t i = 0; i < 4; i++) ge_tensor_free(in[i]);
  ge_graph_free(g);
}

static void test_attention_bf16(void **state) {
  (void)state;
  attn_case(17, 24, 37, 20, 0);
  attn_case(64, 64, 64, 64, 0);
  attn_case(5, 7, 131, 3, 0);
  attn_case(17, 24, 37, 20, 1);
  attn_case(64, 64, 64, 64, 1);
  attn_case(5, 7, 131, 3, 2);
  attn_case(13, 16, 29, 8, 2);
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
      cmocka_unit_test(test_to_bf16),
      cmocka_unit_test(test_attention_bf16),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
