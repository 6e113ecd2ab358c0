/* Private helpers of the fast kernels of fast/ew.c, fast/move.c and fast/reduce.c (issue 6:
 * element-wise, broadcast, movers and reductions).
 *
 * Each of these kernels prepares the reference kernel of its node alongside (ge_fo_ref) and
 * hands it any call it does not handle at run time (a dtype or a shape seen only then, an
 * attribute combination it does not cover), so a node it accepts at prepare always runs. */
#ifndef GE_BACKEND_CPU_FAST_OPS_H
#define GE_BACKEND_CPU_FAST_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/kernel.h"

/* Elements per thread below which another thread (a fresh pthread per call, tens of us)
   costs more than it saves: pure data moves (half a MiB of float32), and math of a few ns per
   element. */
#define GE_FO_MIN_MOVE ((size_t)32768)
#define GE_FO_MIN_MATH ((size_t)32768)

/* The loops of these files are compiled at O3 with -fno-trapping-math -fno-math-errno (a
   `#pragma GCC optimize` at the top of each file, before any include: an optimize attribute
   with more than one option loses the O3 on the function, and inlined helpers must share the
   options).  Without -fno-trapping-math GCC if-converts `c ? a * x : x` only with AVX-512
   masks, and the AVX2 and baseline clones stay scalar; without -fno-math-errno sqrtf is a
   call.  No kernel here reads the FP exception flags or errno; NaN and infinity semantics are
   unchanged (no -ffinite-math-only). */
#define GE_FO_CLONES GE_CPU_CLONES

/* Threads for `work` elements with at least `min_per` elements per thread. */
static inline int ge_fo_threads(int requested, size_t work, size_t min_per) {
  if (requested <= 1 || work < 2 * min_per) return 1;
  size_t most = work / min_per;
  return most < (size_t)requested ? (int)most : requested;
}

/* The reference kernel of a node, prepared next to the fast one. */
typedef struct ge_fo_ref {
  const ge_kernel *k;
  void *state;
} ge_fo_ref;

/* Finds and prepares the reference kernel of p->node; its prepare's status on failure. */
ge_status ge_fo_ref_prepare(const ge_prepare_ctx *p, ge_fo_ref *r);
void ge_fo_ref_release(ge_fo_ref *r);

/* The state of each kernel here begins with its ge_fo_ref (a static assert next to each
   struct says so), so one prepare tail and one release serve them all. */
#define GE_FO_REF_FIRST(T) _Static_assert(offsetof(T, ref) == 0, #T ": the ge_fo_ref comes first")
/* The end of a prepare: prepares the reference kernel into the state s (from calloc, a
   ge_fo_ref first) and hands s over as *state; on failure frees s and returns the status. */
ge_status ge_fo_prepare_finish(const ge_prepare_ctx *p, void *s, void **state);
/* The release of such a state (NULL is fine). */
void ge_fo_state_release(void *state);
/* A state that is only the reference kernel (kernels with nothing else to keep). */
ge_status ge_fo_prepare_ref_only(const ge_prepare_ctx *p, void **state);
#ifdef GE_FO_TRACE /* a test build that reports every hand-over */
#include <stdio.h>
#define GE_FO_TRACE_REF(c) fprintf(stderr, "fast: %s handed to the reference kernel\n", (c)->node->op_type)
#else
#define GE_FO_TRACE_REF(c) ((void)0)
#endif
static inline ge_status ge_fo_ref_run(const ge_fo_ref *r, ge_kctx *c) {
  GE_FO_TRACE_REF(c);
  return r->k->run(r->state, c);
}

/* The input's dtype at prepare; GE_DTYPE_COUNT when absent or unknown. */
static inline ge_dtype ge_fo_in_dtype(const ge_prepare_ctx *p, size_t i) {
  if (i >= p->n_in || !p->in[i].present || !p->in[i].type) return GE_DTYPE_COUNT;
  return p->in[i].type->dtype;
}

/* Copies n elements of es bytes with source stride ss (elements) into contiguous dst. */
void ge_fo_gather_strided(void *dst, const void *src, ptrdiff_t ss, size_t n, size_t es);

/* A fixed-size dtype a byte mover handles (not string, not a sequence). */
static inline bool ge_fo_movable(ge_dtype dt) {
  return dt < GE_DTYPE_COUNT && dt != GE_STRING && ge_dtype_size(dt) > 0;
}

/* fast/resize.c: Resize, listed in ge_fast_kernels_reduce (the family of the reference);
   its release is ge_fo_state_release */
ge_status ge_fo_resize_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_fo_resize_run(const void *state, ge_kctx *ctx);

#endif
