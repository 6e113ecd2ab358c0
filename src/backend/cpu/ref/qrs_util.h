/* Helpers shared by the quant, rnn and signal reference kernels: dtype conversions of whole
 * arrays (one switch per call, plain loops inside) and checked allocation. */
#ifndef GE_BACKEND_CPU_REF_QRS_UTIL_H
#define GE_BACKEND_CPU_REF_QRS_UTIL_H

#include "backend/kernel.h"

/* Any numeric dtype (or bool) to float / double / int32 (ints beyond int32 saturate). */
void ge_qrs_to_f32(ge_dtype dt, const void *src, float *dst, size_t n);
void ge_qrs_to_f64(ge_dtype dt, const void *src, double *dst, size_t n);
void ge_qrs_to_i32(ge_dtype dt, const void *src, int32_t *dst, size_t n);
/* Float results into a float dtype (f32/f16/bf16/f64). */
void ge_qrs_from_f32(ge_dtype dt, const float *src, void *dst, size_t n);
void ge_qrs_from_f64(ge_dtype dt, const double *src, void *dst, size_t n);
/* Already-rounded values into an integer dtype, saturating (NaN -> 0). */
void ge_qrs_store_sat(ge_dtype dt, const double *src, void *dst, size_t n);
/* Value range of an integer dtype. */
void ge_qrs_int_range(ge_dtype dt, double *lo, double *hi);
/* malloc(a * b) with overflow check (+1 so that 0 bytes is a valid pointer); NULL with a
   message naming the node on failure. */
void *ge_qrs_alloc(const ge_kctx *c, size_t a, size_t b);
/* Product of dims[lo..hi). */
size_t ge_qrs_prod(const int64_t *dims, int32_t lo, int32_t hi);

#endif
