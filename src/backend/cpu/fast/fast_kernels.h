/* The vectorised, threaded fast CPU kernels (src/backend/cpu/fast/): tried after the oneDNN
 * kernels and before the reference kernels (src/backend/cpu/registry.c, fast_families).  Each
 * declines (GE_ERR_UNSUPPORTED from prepare) what it does not handle. */
#ifndef GE_BACKEND_CPU_FAST_KERNELS_H
#define GE_BACKEND_CPU_FAST_KERNELS_H

#include "backend/kernel.h"

extern const ge_kernel_def ge_fast_kernels_fast[];
/* transformer.c: LayerNormalization, Add/Sub/Mul/Div */
extern const ge_kernel_def ge_fast_kernels_tf[];
/* ew.c: Add/Sub/Mul/Div broadcasts transformer.c does not fast-path (tried before it) */
extern const ge_kernel_def ge_fast_kernels_ew_bcast[];
/* ew.c: unary float32 ops, Cast, Max/Min/Pow, Where, Expand; move.c: Transpose, Slice, Gather,
   Concat; reduce.c: ReduceSum/Mean/Max/Min/L1/L2/SumSquare */
extern const ge_kernel_def ge_fast_kernels_ew[];
extern const ge_kernel_def ge_fast_kernels_move[];
extern const ge_kernel_def ge_fast_kernels_reduce[];

/* attention.c: one row of attention scores in place, row = softmax(row * scale + mask), the mask
   read with stride mcol (0: one value for the row, 1: dense; NULL: none), vectorised (AVX-512
   where the processor has it); false for a fully masked row, left for the caller (NaN). */
bool ge_fast_attn_softmax_row(float *row, const float *mask, size_t mcol, size_t n, float scale);

#endif
