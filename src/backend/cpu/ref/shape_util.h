/* Helpers private to the shape-family reference kernels (ref/shape.c, ref/gather.c,
 * ref/pad.c): element moves that dispatch on element size, never per element through a
 * function pointer.  GE_STRING elements are `char *` and are copied with strdup. */
#ifndef GE_BACKEND_CPU_REF_SHAPE_UTIL_H
#define GE_BACKEND_CPU_REF_SHAPE_UTIL_H

#include "backend/kernel.h"

/* Most dims a strided copy takes (Tile views rank r as 2r dims). */
#define GE_REF_MAX_DIMS (2 * GE_MAX_RANK + 8)

/* Row-major element strides of dims. */
void ge_ref_strides(const int64_t *dims, int rank, int64_t *strides);
/* dst[0..n) = src[0..n); strings are duplicated (old dst strings freed). */
ge_status ge_ref_copy(void *dst, const void *src, size_t n, ge_dtype dt);
/* dst (contiguous, shape dims[rank]) = src element at off + sum(idx[d] * sstr[d]).  Strides are
   in elements and may be 0 (broadcast) or negative (reversed). */
ge_status ge_ref_strided_copy(void *dst, const void *src, ge_dtype dt, int rank, const int64_t *dims,
                              const int64_t *sstr, int64_t off);
/* Fills n elements with the element at *val (strings duplicated). */
ge_status ge_ref_fill(void *dst, const void *val, size_t n, ge_dtype dt);
/* Encodes a double as one element of dt into out (8 bytes at least); false for GE_STRING. */
bool ge_ref_scalar_from_f64(ge_dtype dt, double v, void *out);
/* Product of dims[from, to) (all >= 0, fits because the tensor exists). */
size_t ge_ref_prod(const int64_t *dims, int from, int to);

/* Kernels defined outside ref/shape.c and listed in its table. */
ge_status ge_ref_gather_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ref_gather_run(const void *state, ge_kctx *ctx);
ge_status ge_ref_gather_elements_run(const void *state, ge_kctx *ctx);
ge_status ge_ref_gather_nd_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ref_gather_nd_run(const void *state, ge_kctx *ctx);
ge_status ge_ref_scatter_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ref_scatter_elements_run(const void *state, ge_kctx *ctx);
ge_status ge_ref_scatter_nd_run(const void *state, ge_kctx *ctx);
ge_status ge_ref_pad_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ref_pad_run(const void *state, ge_kctx *ctx);
void ge_ref_free_state(void *state);

#endif
