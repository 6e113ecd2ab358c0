/* Run-time and prepare-time helpers of the kernel interface. */
#include <stdarg.h>
#include <stdio.h>

#include "backend/kernel.h"

static ge_status node_fail(const ge_node *n, ge_status st, const char *fmt, va_list ap) {
  char msg[768], where[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!n) return ge_error(st, "%s", msg);
  return ge_error(st, "%s: %s", ge_node_desc(n, where, sizeof where), msg);
}

ge_status ge_kctx_fail(const ge_kctx *c, ge_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ge_status r = node_fail(c ? c->node : NULL, st, fmt, ap);
  va_end(ap);
  return r;
}

ge_status ge_prepare_fail(const ge_prepare_ctx *p, ge_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ge_status r = node_fail(p ? p->node : NULL, st, fmt, ap);
  va_end(ap);
  return r;
}

ge_status ge_prepare_check_dtype(const ge_prepare_ctx *p, size_t i, const ge_dtype *allowed) {
  if (i >= p->n_in || !p->in[i].present || !p->in[i].type) return GE_OK;
  ge_dtype dt = p->in[i].type->dtype;
  if (dt == GE_DTYPE_COUNT) return GE_OK;
  for (const ge_dtype *a = allowed; *a != GE_DTYPE_COUNT; a++)
    if (*a == dt) return GE_OK;
  return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for input %zu of dtype %s", i,
                         ge_dtype_name(dt));
}

/* The output slot belongs to the executor, which releases its storage after the last
   consumer ran (ge_tensor_release_storage). */
ge_status ge_kctx_alloc_output(ge_kctx *c, size_t i, ge_dtype dt, const int64_t *dims,
                               int32_t rank) {
  if (i >= c->n_out || !c->out[i]) return ge_kctx_fail(c, GE_ERR_INTERNAL, "no output slot %zu", i);
  ge_tensor_release_storage(c->out[i]);
  return ge_tensor_init_alloc(c->out[i], dt, dims, rank);
}
