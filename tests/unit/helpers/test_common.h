/* Helpers shared by the unit tests beyond the op harness (tests/unit/helpers/ops_harness.h):
 * cmocka group setup/teardown that start and stop the engine, the xorshift64 random source
 * the tests draw their data from, random float32 tensors, and graph building / one-shot
 * session runs.  Linked into every unit test (tests/unit/helpers/).
 *
 *   static uint64_t rng = 0x9e3779b97f4a7c15ull;
 *   ge_tensor *x = ge_test_rand_f32(&rng, (int64_t[]){2, 3}, 2, 1.f);
 *   ...
 *   return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
 */
#ifndef GE_TESTS_TEST_COMMON_H
#define GE_TESTS_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "ge/ge.h"

/* cmocka group setup: ge_initialize(NULL, 0) (non-zero = setup failed). */
int ge_test_setup_engine(void **state);
/* cmocka group teardown: ge_finalize(); always succeeds. */
int ge_test_teardown_engine(void **state);

/* The next value of the xorshift64 generator whose state is *rng (must not be 0). */
static inline uint64_t ge_test_rand_u64(uint64_t *rng) {
  uint64_t x = *rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *rng = x;
  return x;
}

/* Uniform float in [-1, 1) from the top 24 bits of the next value. */
static inline float ge_test_rand_unit(uint64_t *rng) {
  return (float)((ge_test_rand_u64(rng) >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

/* A new float32 tensor of shape d[0..r) with values ge_test_rand_unit(rng) * scale, drawn in
 * row-major order.  Aborts the test on failure. */
ge_tensor *ge_test_rand_f32(uint64_t *rng, const int64_t *d, size_t r, float scale);

/* Number of elements of dims d[0..r). */
static inline size_t ge_test_numel(const int64_t *d, size_t r) {
  size_t n = 1;
  for (size_t i = 0; i < r; i++) n *= (size_t)d[i];
  return n;
}

/* A graph being built with random float32 constants that it owns (drawn from *rng). */
#define GE_TEST_NET_CONSTS 16
typedef struct ge_test_net {
  ge_graph *g;
  uint64_t *rng;
  ge_tensor *consts[GE_TEST_NET_CONSTS];
  size_t n_consts;
} ge_test_net;

/* Creates the graph `name`; constants will draw from *rng. */
void ge_test_net_init(ge_test_net *n, const char *name, uint64_t *rng);
/* A constant `name` of shape d[0..r): ge_test_rand_f32(n->rng, d, r, scale). */
void ge_test_net_const(ge_test_net *n, const char *name, const int64_t *d, size_t r, float scale);
/* A node with the single output `out`. */
void ge_test_net_node(ge_test_net *n, const char *op, const char *name, const char *const *in, size_t n_in,
                      const char *out, const ge_attr *attrs, size_t n_attrs);
/* Frees the graph and the constants. */
void ge_test_net_free(ge_test_net *n);

/* Fails the test with the expression and ge_last_error() unless x returns GE_OK. */
#define GE_TEST_OK(x)                                                 \
  do {                                                                \
    ge_status st_ = (x);                                              \
    if (st_ != GE_OK) fail_msg("%s: %s", #x, ge_last_error());        \
  } while (0)

/* ge_graph_add_node, failing the test on error. */
void ge_test_add_node(ge_graph *g, const char *op, const char *name, const char *const *in,
                      size_t n_in, const char *const *out, size_t n_out, const ge_attr *attrs,
                      size_t n_attrs);

/* Runs g once in a new default session (g is freed in every case); outputs receive new
 * tensors.  Returns the status of adding or running the graph. */
ge_status ge_test_run_graph(ge_graph *g, ge_tensor *const *in, size_t n_in, ge_tensor **out,
                            size_t n_out);

#endif
