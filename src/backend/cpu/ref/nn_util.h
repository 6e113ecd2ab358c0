/* Helpers shared by the nn-family CPU kernels (nn.c, conv.c, pool.c): float32 staging of
 * f16/bf16/f64/int8 tensors, small shape products. */
#ifndef GE_BACKEND_CPU_REF_NN_UTIL_H
#define GE_BACKEND_CPU_REF_NN_UTIL_H

#include "backend/kernel.h"

/* Hot loops of these kernels: compiled for AVX-512, AVX2+FMA and baseline x86-64, picked at
   run time (the build may not use -march=native). */
#include "backend/cpu/cpu_dispatch.h"
#define GE_NN_CLONES GE_CPU_CLONES

/* A float32 view of a tensor: p points at the tensor's own data (f32) or at `owned`, a
   converted copy. */
typedef struct ge_fbuf {
  float *p;
  float *owned;
} ge_fbuf;

/* Input tensor t as float32 (converting f16/bf16/f64/ints). */
ge_status ge_nn_load_f32(const ge_kctx *c, const ge_tensor *t, ge_fbuf *b);
/* Float32 storage for output t: its own data when f32, else a scratch buffer. */
ge_status ge_nn_out_f32(const ge_kctx *c, ge_tensor *t, ge_fbuf *b);
/* Writes b back into t (converting) and frees the scratch. */
void ge_nn_store_f32(ge_tensor *t, ge_fbuf *b);
void ge_fbuf_free(ge_fbuf *b);
/* Converts n floats into dst of dtype dt (rounding to nearest for ints, saturating). */
void ge_nn_f32_to(ge_dtype dt, const float *src, void *dst, size_t n);
void ge_nn_to_f32(ge_dtype dt, const void *src, float *dst, size_t n);

/* The same in float64 (for float64 tensors, so that they keep their precision). */
typedef struct ge_dbuf {
  double *p;
  double *owned;
} ge_dbuf;
ge_status ge_nn_load_f64(const ge_kctx *c, const ge_tensor *t, ge_dbuf *b);
ge_status ge_nn_out_f64(const ge_kctx *c, ge_tensor *t, ge_dbuf *b);
void ge_nn_store_f64(ge_tensor *t, ge_dbuf *b);
void ge_dbuf_free(ge_dbuf *b);

/* Product of dims[lo..hi) (no overflow: dims come from an allocated tensor). */
size_t ge_nn_prod(const int64_t *dims, int32_t lo, int32_t hi);
/* malloc of n floats with overflow check; NULL on failure (message set naming the node). */
float *ge_nn_falloc(const ge_kctx *c, size_t n);

#endif
