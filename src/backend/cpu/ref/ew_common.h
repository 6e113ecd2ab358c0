/* Private helpers of the elementwise reference kernels (ref/elementwise.c, ref/ew_cast.c). */
#ifndef GE_BACKEND_CPU_REF_EW_COMMON_H
#define GE_BACKEND_CPU_REF_EW_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "backend/kernel.h"

/* elements converted per block when f16/bf16 compute in f32 */
#define GE_EW_BLOCK 256

/* dtype lists: X(TAG, ctype, unsigned ctype) with GE_##TAG the ge_dtype */
#define GE_EW_FLOATS(X) X(F32, float, float) X(F64, double, double)
#define GE_EW_SINTS(X) \
  X(I8, int8_t, uint8_t) X(I16, int16_t, uint16_t) X(I32, int32_t, uint32_t) X(I64, int64_t, uint64_t)
#define GE_EW_UINTS(X) \
  X(U8, uint8_t, uint8_t) X(U16, uint16_t, uint16_t) X(U32, uint32_t, uint32_t) X(U64, uint64_t, uint64_t)

static inline bool ge_ew_is_half(ge_dtype dt) { return dt == GE_F16 || dt == GE_BF16; }

/* n halves (f16/bf16, element stride `stride`) -> f32 */
void ge_ew_half_to_f32(ge_dtype dt, const uint16_t *src, ptrdiff_t stride, size_t n, float *dst);
/* n f32 -> contiguous halves */
void ge_ew_f32_to_half(ge_dtype dt, const float *src, size_t n, uint16_t *dst);

/* Cast / CastLike / Where kernels (ref/ew_cast.c) */
ge_status ge_ew_cast_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ew_cast_run(const void *state, ge_kctx *ctx);
ge_status ge_ew_where_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ew_where_run(const void *state, ge_kctx *ctx);
/* Converts n contiguous elements of dtype sdt at src to dtype ddt at dst (strings included:
   dst strings are newly allocated).  Float -> int truncates toward zero (NaN -> 0, out of range
   saturates to int64 first). */
ge_status ge_ew_convert(ge_dtype sdt, const void *src, ge_dtype ddt, void *dst, size_t n);

#endif
