/* Private helpers shared by the kernels of the reduce family (ref/reduce.c, ref/reduce_misc.c,
 * ref/reduce_extra.c, ref/resize.c).  Not part of any public or shared interface. */
#ifndef GE_BACKEND_CPU_REF_REDUCE_FAMILY_H
#define GE_BACKEND_CPU_REF_REDUCE_FAMILY_H

#include "backend/kernel.h"

/* Block conversions between a tensor's storage and a computation domain.  `off` and `n` are in
   elements.  f64: every numeric dtype and bool; i64: integer dtypes and bool (uint64 keeps its bit
   pattern).  Stores to integer dtypes truncate toward zero and saturate (NaN -> 0). */
void ge_rd_load_f64(ge_dtype dt, const void *base, size_t off, size_t n, double *dst);
void ge_rd_store_f64(ge_dtype dt, void *base, size_t off, size_t n, const double *src);
void ge_rd_load_i64(ge_dtype dt, const void *base, size_t off, size_t n, int64_t *dst);
void ge_rd_store_i64(ge_dtype dt, void *base, size_t off, size_t n, const int64_t *src);
/* Order keys: like ge_rd_load_i64, but uint64 values are mapped so that signed order of the key
   is the unsigned order of the value. */
void ge_rd_load_key_i64(ge_dtype dt, const void *base, size_t off, size_t n, int64_t *dst);

/* Axis split of a tensor: outer * len * inner == numel (false on overflow). */
bool ge_rd_split_axis(const ge_tensor *t, int32_t axis, size_t *outer, size_t *len, size_t *inner);

/* Kernels living in other files of the family. */
ge_status ge_rd_topk_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_topk_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_det_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_det_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_unique_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_unique_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_shrink_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_shrink_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_lpnorm_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_lpnorm_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_resize_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_resize_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_nms_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_nms_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_roialign_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_roialign_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_maxroipool_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_maxroipool_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_gridsample_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_gridsample_run(const void *state, ge_kctx *ctx);
ge_status ge_rd_maxunpool_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_rd_maxunpool_run(const void *state, ge_kctx *ctx);

#endif
