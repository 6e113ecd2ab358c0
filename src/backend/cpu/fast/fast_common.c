/* Shared helpers of the fast element-wise, mover and reduction kernels (fast_ops.h). */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/fast/fast_ops.h"

ge_status ge_fo_ref_prepare(const ge_prepare_ctx *p, ge_fo_ref *r) {
  r->k = ge_cpu_find_kernel(p->node->domain, p->node->op_type, p->opset);
  r->state = NULL;
  if (!r->k)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: no reference kernel to fall back on",
                           p->node->op_type);
  if (r->k->prepare) {
    ge_status st = r->k->prepare(p, &r->state);
    if (st != GE_OK) {
      r->k = NULL;
      r->state = NULL;
      return st;
    }
  }
  return GE_OK;
}

void ge_fo_ref_release(ge_fo_ref *r) {
  if (r->k && r->k->release && r->state) r->k->release(r->state);
  r->k = NULL;
  r->state = NULL;
}

ge_status ge_fo_prepare_finish(const ge_prepare_ctx *p, void *s, void **state) {
  ge_status st = ge_fo_ref_prepare(p, (ge_fo_ref *)s);
  if (st != GE_OK) {
    free(s);
    return st;
  }
  *state = s;
  return GE_OK;
}

void ge_fo_state_release(void *state) {
  if (!state) return;
  ge_fo_ref_release((ge_fo_ref *)state);
  free(state);
}

ge_status ge_fo_prepare_ref_only(const ge_prepare_ctx *p, void **state) {
  ge_fo_ref *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  return ge_fo_prepare_finish(p, s, state);
}

void ge_fo_gather_strided(void *dst, const void *src, ptrdiff_t ss, size_t n, size_t es) {
  switch (es) {
#define GS(T)                                                            \
  {                                                                      \
    const T *s = src;                                                    \
    T *d = dst;                                                          \
    for (size_t i = 0; i < n; i++) d[i] = s[(ptrdiff_t)i * ss];          \
    return;                                                              \
  }
    case 1: GS(uint8_t)
    case 2: GS(uint16_t)
    case 4: GS(uint32_t)
    case 8: GS(uint64_t)
#undef GS
    default: {
      const char *s = src;
      char *d = dst;
      for (size_t i = 0; i < n; i++) memcpy(d + i * es, s + (ptrdiff_t)i * ss * (ptrdiff_t)es, es);
    }
  }
}
