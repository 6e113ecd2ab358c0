/* Ahead-of-time memory planning: every intermediate buffer gets an offset into one arena.
 *
 * Input: one request per buffer: its size, its lifetime (the step that produces it and the
 * last step that reads it, inclusive), its alignment and, optionally, a buffer it may share
 * in place (the kernel of its producer reads that buffer and writes this one element by
 * element at the same positions: e.g. Relu/Add when that input dies at this step).
 * Output: an offset per buffer and the arena size.  Several placement strategies run (best
 * fit into the smallest gap among lifetime-overlapping buffers, as XNNPACK does, in order of
 * size, of first use, of lifetime length, and of size x lifetime; and a "ping-pong" placement
 * against the lower bound, optimal on chains) and the smallest arena wins.
 *
 * Lifetimes and streams ("happens-before"): two buffers conflict unless the last use of one
 * happens before the first use of the other.  With one stream, step order is the
 * happens-before order and a lifetime is the interval [first, last].  With several streams,
 * pass `happens_before` in ge_memplan_opts: hb(a, b) is true when step a is ordered before
 * step b (same stream and a < b, or through an event chain; a vector clock per step answers
 * it in O(streams)).  Planner and checker test conflicts only through that predicate, so they
 * carry over unchanged; the lower bound then becomes a bound on each stream's order only. */
/* Executor contract (integration): after ge_plan_compile, call ge_memplan_plan_requests and
 * ge_memplan_compute (opts.no_reuse = ge.exec.disableReuseMemory) once per plan and keep the
 * offsets with the plan (check with ge_memplan_check in test builds).  At run time allocate
 * one 64-byte-aligned arena of plan.arena bytes (per run, or once per plan when its runs are
 * serialised), and instead of ge_tensor_init_alloc for slot slots[k] make a non-owning tensor
 * over arena + offsets[k] (dtype/shape from the slot type; owns = false, release = NULL) and
 * skip its release in the step's dead list.  Graph outputs and values whose shapes are only
 * known at run time keep their own allocation, as now. */
#ifndef GE_COMPILER_MEMPLAN_H
#define GE_COMPILER_MEMPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ge/ge.h"

#define GE_MEMPLAN_ALIGN 64
#define GE_MEMPLAN_NONE (-1)

typedef struct ge_mem_request {
  size_t size;        /* bytes (0 is allowed: offset 0, no space) */
  uint32_t first;     /* producing step */
  uint32_t last;      /* last reading step (>= first; = first when nothing reads it) */
  size_t align;       /* power of two; 0 = GE_MEMPLAN_ALIGN */
  int32_t inplace_of; /* GE_MEMPLAN_NONE or a buffer whose last == this first and size >= this */
  uint32_t stream;    /* reserved for multi-stream plans (0) */
} ge_mem_request;

typedef struct ge_memplan_opts {
  /* NULL: one stream, step order.  Else: is step a ordered before step b? */
  bool (*happens_before)(void *ctx, uint32_t a, uint32_t b);
  void *hb_ctx;
  bool no_reuse;      /* ge.exec.disableReuseMemory: every buffer its own range */
} ge_memplan_opts;

typedef struct ge_mem_plan {
  size_t *offsets;        /* one per request */
  size_t n;
  size_t arena;           /* bytes */
  size_t lower_bound;     /* most live bytes at any step (aligned sizes; an in-place pair
                             counts once at the step where one dies and the other is made) */
  const char *strategy;   /* the placement that won */
} ge_mem_plan;

/* opts may be NULL.  Errors: GE_ERR_INVALID_ARGUMENT naming a bad request (last < first, bad
   alignment, bad in-place hint); GE_ERR_OUT_OF_MEMORY when the arena size overflows. */
ge_status ge_memplan_compute(const ge_mem_request *req, size_t n, const ge_memplan_opts *opts,
                             ge_mem_plan *out);
/* GE_OK when every buffer lies in the arena, is aligned, and no two buffers whose lifetimes
   conflict share a byte (an in-place pair must sit at the same offset).  Else
   GE_ERR_INTERNAL naming the pair. */
ge_status ge_memplan_check(const ge_mem_request *req, size_t n, const ge_memplan_opts *opts,
                           const ge_mem_plan *plan);
size_t ge_memplan_lower_bound(const ge_mem_request *req, size_t n);

/* Requests for a compiled plan (compiler/program.h): one per intermediate slot that a step
   produces with a static type and that is not a graph output (outputs are handed to the
   caller, so they keep their own allocation; dynamic shapes are allocated per run).  first =
   the producing step, last = the last step reading it.  slots[k] is the slot of request k.
   The caller frees *req and *slots. */
struct ge_plan;
ge_status ge_memplan_plan_requests(const struct ge_plan *p, ge_mem_request **req, uint32_t **slots,
                                   size_t *n);
void ge_memplan_free(ge_mem_plan *p);

#endif
