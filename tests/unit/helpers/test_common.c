/* See test_common.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"
#include "helpers/test_common.h"

int ge_test_setup_engine(void **state) {
  (void)state;
  return ge_initialize(NULL, 0) == GE_OK ? 0 : -1;
}

int ge_test_teardown_engine(void **state) {
  (void)state;
  ge_finalize();
  return 0;
}

ge_tensor *ge_test_rand_f32(uint64_t *rng, const int64_t *d, size_t r, float scale) {
  size_t n = 1;
  for (size_t i = 0; i < r; i++) n *= (size_t)d[i];
  float *v = malloc((n + 1) * sizeof(float));
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) v[i] = ge_test_rand_unit(rng) * scale;
  ge_tensor *t = ge_test_tensor_f32(d, r, v);
  free(v);
  return t;
}

void ge_test_net_init(ge_test_net *n, const char *name, uint64_t *rng) {
  memset(n, 0, sizeof *n);
  n->rng = rng;
  assert_int_equal(ge_graph_create(name, &n->g), GE_OK);
}

void ge_test_net_const(ge_test_net *n, const char *name, const int64_t *d, size_t r, float scale) {
  assert_true(n->n_consts < GE_TEST_NET_CONSTS);
  ge_tensor *t = ge_test_rand_f32(n->rng, d, r, scale);
  assert_int_equal(ge_graph_add_constant(n->g, name, t), GE_OK);
  n->consts[n->n_consts++] = t;
}

void ge_test_net_node(ge_test_net *n, const char *op, const char *name, const char *const *in, size_t n_in,
                      const char *out, const ge_attr *attrs, size_t n_attrs) {
  const char *outs[] = {out};
  assert_int_equal(ge_graph_add_node(n->g, op, name, in, n_in, outs, 1, attrs, n_attrs), GE_OK);
}

void ge_test_net_free(ge_test_net *n) {
  ge_graph_free(n->g);
  for (size_t i = 0; i < n->n_consts; i++) ge_tensor_free(n->consts[i]);
  n->g = NULL;
  n->n_consts = 0;
}

void ge_test_add_node(ge_graph *g, const char *op, const char *name, const char *const *in,
                      size_t n_in, const char *const *out, size_t n_out, const ge_attr *attrs,
                      size_t n_attrs) {
  GE_TEST_OK(ge_graph_add_node(g, op, name, in, n_in, out, n_out, attrs, n_attrs));
}

ge_status ge_test_run_graph(ge_graph *g, ge_tensor *const *in, size_t n_in, ge_tensor **out,
                            size_t n_out) {
  ge_session *s = NULL;
  GE_TEST_OK(ge_session_create(NULL, 0, &s));
  ge_status st = ge_session_add_graph(s, 1, g);
  ge_graph_free(g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, in, n_in, out, n_out);
  ge_session_free(s);
  return st;
}
