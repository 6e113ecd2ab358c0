/* Helpers shared by the control-flow and sequence kernels. */
#ifndef GE_BACKEND_CPU_REF_CONTROL_UTIL_H
#define GE_BACKEND_CPU_REF_CONTROL_UTIL_H

#include "backend/kernel.h"

/* src with axis removed at index idx (a new tensor). */
ge_status ge_cf_slice(const ge_tensor *src, int32_t axis, int64_t idx, ge_tensor **out);
/* pieces (same dtype and shape) stacked on a new axis (reverse: last piece first). */
ge_status ge_cf_stack(ge_tensor *const *pieces, size_t n, int32_t axis, bool reverse,
                      const ge_kctx *c, ge_tensor **out);

#endif
