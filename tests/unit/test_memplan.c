/* The memory planner: random lifetimes pass the checker and respect the lower bound; simple
 * chains reach it; in-place hints share offsets; the checker catches overlaps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/memplan.h"
#include "compiler/program.h"
#include "ir/ir.h"

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

static ge_mem_request req(size_t size, uint32_t first, uint32_t last) {
  return (ge_mem_request){.size = size, .first = first, .last = last, .align = 64,
                          .inplace_of = GE_MEMPLAN_NONE};
}

static void test_random(void **state) {
  for (int iter = 0; iter < 200; iter++) {
    size_t n = 1 + rnd(60);
    ge_mem_request *r = calloc(n, sizeof *r);
    uint32_t steps = 1 + rnd(40);
    for (size_t i = 0; i < n; i++) {
      uint32_t a = rnd(steps), len = rnd(8);
      r[i] = req(rnd(5) == 0 ? 0 : 1 + rnd(5000), a, a + len);
      if (rnd(4) == 0) r[i].align = 128;
    }
    ge_mem_plan p;
    assert_int_equal(ge_memplan_compute(r, n, NULL, &p), GE_OK);
    assert_int_equal(ge_memplan_check(r, n, NULL, &p), GE_OK);
    assert_true(p.arena >= p.lower_bound);
    assert_int_equal(p.lower_bound, ge_memplan_lower_bound(r, n));
    assert_non_null(p.strategy);
    /* no reuse: every buffer its own range, still valid */
    ge_memplan_opts o = {.no_reuse = true};
    ge_mem_plan q;
    assert_int_equal(ge_memplan_compute(r, n, &o, &q), GE_OK);
    assert_int_equal(ge_memplan_check(r, n, &o, &q), GE_OK);
    assert_true(q.arena >= p.arena);
    ge_memplan_free(&p);
    ge_memplan_free(&q);
    free(r);
  }
}

static void test_chain_reaches_bound(void **state) {
  for (int iter = 0; iter < 100; iter++) {
    size_t n = 2 + rnd(30);
    ge_mem_request *r = calloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++) r[i] = req(64 * (1 + rnd(100)), (uint32_t)i, (uint32_t)i + 1);
    ge_mem_plan p;
    assert_int_equal(ge_memplan_compute(r, n, NULL, &p), GE_OK);
    assert_int_equal(ge_memplan_check(r, n, NULL, &p), GE_OK);
    assert_int_equal(p.arena, p.lower_bound);
    ge_memplan_free(&p);
    free(r);
  }
  /* a fixed chain: 1000, 3000, 1000, 3000 bytes -> bound 4000 (aligned to 64: 1024 + 3008) */
  ge_mem_request r[4] = {req(1000, 0, 1), req(3000, 1, 2), req(1000, 2, 3), req(3000, 3, 4)};
  ge_mem_plan p;
  assert_int_equal(ge_memplan_compute(r, 4, NULL, &p), GE_OK);
  assert_int_equal(p.lower_bound, 1024 + 3008);
  assert_int_equal(p.arena, p.lower_bound);
  ge_memplan_free(&p);
}

static void test_inplace(void **state) {
  /* a -> b (in place of a) -> c (in place of b): all at one offset, arena = one buffer */
  ge_mem_request r[3] = {req(4096, 0, 1), req(4096, 1, 2), req(4096, 2, 3)};
  r[1].inplace_of = 0;
  r[2].inplace_of = 1;
  ge_mem_plan p;
  assert_int_equal(ge_memplan_compute(r, 3, NULL, &p), GE_OK);
  assert_int_equal(ge_memplan_check(r, 3, NULL, &p), GE_OK);
  assert_int_equal(p.offsets[0], p.offsets[1]);
  assert_int_equal(p.offsets[1], p.offsets[2]);
  assert_int_equal(p.arena, 4096);
  ge_memplan_free(&p);
  /* a bad hint is an error */
  r[1].inplace_of = 7;
  assert_int_equal(ge_memplan_compute(r, 3, NULL, &p), GE_ERR_INVALID_ARGUMENT);
}

static void test_checker_catches_overlap(void **state) {
  ge_mem_request r[2] = {req(100, 0, 2), req(100, 1, 3)};
  size_t off[2] = {0, 64};
  ge_mem_plan p = {.offsets = off, .n = 2, .arena = 256};
  assert_int_equal(ge_memplan_check(r, 2, NULL, &p), GE_ERR_INTERNAL);
  off[1] = 128;
  assert_int_equal(ge_memplan_check(r, 2, NULL, &p), GE_OK);
  off[1] = 130; /* misaligned */
  assert_int_equal(ge_memplan_check(r, 2, NULL, &p), GE_ERR_INTERNAL);
  /* disjoint lifetimes may share */
  ge_mem_request s[2] = {req(100, 0, 1), req(100, 2, 3)};
  off[1] = 0;
  assert_int_equal(ge_memplan_check(s, 2, NULL, &p), GE_OK);
  /* bad lifetime */
  ge_mem_request bad = req(10, 3, 1);
  ge_mem_plan q;
  assert_int_equal(ge_memplan_compute(&bad, 1, NULL, &q), GE_ERR_INVALID_ARGUMENT);
  /* empty */
  assert_int_equal(ge_memplan_compute(NULL, 0, NULL, &q), GE_OK);
  assert_int_equal(q.arena, 0);
  ge_memplan_free(&q);
}

/* two streams: steps 0..9 on stream 0, 10..19 on stream 1, no events: nothing on one stream
   happens before anything on the other, so buffers of different streams never share. */
static bool hb_two_streams(void *ctx, uint32_t a, uint32_t b) {
  (void)ctx;
  return (a < 10) == (b < 10) && a < b;
}

static void test_happens_before(void **state) {
  ge_mem_request r[4] = {req(256, 0, 1), req(256, 12, 13), req(256, 5, 6), req(256, 15, 16)};
  ge_memplan_opts o = {.happens_before = hb_two_streams};
  ge_mem_plan p;
  assert_int_equal(ge_memplan_compute(r, 4, &o, &p), GE_OK);
  assert_int_equal(ge_memplan_check(r, 4, &o, &p), GE_OK);
  assert_int_equal(p.arena, 512); /* 0 and 2 share, 1 and 3 share, the streams do not */
  ge_memplan_free(&p);
}

/* Requests from a compiled plan: x -> Relu -> Sigmoid -> Neg -> Abs -> y: three intermediates
   of 4 KiB in a chain (the output y keeps its own allocation). */
static void test_plan_requests(void **state) {
  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("chain", &g), GE_OK);
  int64_t d[] = {32, 32};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, d, 2), GE_OK);
  const char *ops[] = {"Relu", "Sigmoid", "Neg", "Abs"}, *names[] = {"x", "a", "b", "c", "y"};
  for (int i = 0; i < 4; i++)
    assert_int_equal(ge_graph_add_node(g, ops[i], ops[i], &names[i], 1, &names[i + 1], 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  ge_options o;
  ge_options_default(&o);
  ge_plan *p = NULL;
  assert_int_equal(ge_plan_compile(g, NULL, &o, &p), GE_OK);
  ge_mem_request *r = NULL;
  uint32_t *slots = NULL;
  size_t n = 0;
  assert_int_equal(ge_memplan_plan_requests(p, &r, &slots, &n), GE_OK);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(r[i].size, 32 * 32 * 4);
    assert_int_equal(r[i].last, r[i].first + 1);
  }
  ge_mem_plan mp;
  assert_int_equal(ge_memplan_compute(r, n, NULL, &mp), GE_OK);
  assert_int_equal(ge_memplan_check(r, n, NULL, &mp), GE_OK);
  assert_int_equal(mp.arena, 2 * 4096);
  assert_int_equal(mp.arena, mp.lower_bound);
  ge_memplan_free(&mp);
  free(r);
  free(slots);
  ge_plan_free(p);
  ge_graph_free(g);
  ge_finalize();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_chain_reaches_bound),
      cmocka_unit_test(test_inplace),
      cmocka_unit_test(test_checker_catches_overlap),
      cmocka_unit_test(test_happens_before),
      cmocka_unit_test(test_plan_requests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
