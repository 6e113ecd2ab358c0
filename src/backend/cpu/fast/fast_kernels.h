/* The vectorised, threaded fast CPU kernels (src/backend/cpu/fast/): tried after the oneDNN
 * kernels and before the reference kernels (src/backend/cpu/registry.c, fast_families).  Each
 * declines (GE_ERR_UNSUPPORTED from prepare) what it does not handle. */
#ifndef GE_BACKEND_CPU_FAST_KERNELS_H
#define GE_BACKEND_CPU_FAST_KERNELS_H

#include "backend/kernel.h"
#include "ops/fused.h"

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
/* pgemm.c: float32 MatMul / FusedMatMul with a constant 2-D B, packed, on AVX-512 (tried
   before oneDNN) */
extern const ge_kernel_def ge_fast_kernels_pgemm[];
/* stem.c: a float32 Conv / FusedConv of a planar image of 1-4 channels with a window of at most
   9 taps into channels-last output of at most 64 channels (a CNN's first layer; before oneDNN) */
extern const ge_kernel_def ge_fast_kernels_stem[];

/* ew.c: a FusedMatMul / FusedConv activation (ops/fused.h) applied to y[0..n) in place, with
   the parameters as the fused node's activation_params give them (p0: LeakyRelu alpha, Clip min,
   HardSigmoid alpha; p1: Clip max, HardSigmoid beta).  ge_fo_act_supported: false for those it
   does not do (SiLU). */
bool ge_fo_act_supported(ge_fused_act act);
void ge_fo_act_inplace(ge_fused_act act, float p0, float p1, float *y, size_t n);

/* attention.c: up to GE_FAST_ATTN_GROUP rows of attention scores in place: row[r] = e^(row[r] *
   scale + mask[r] - max), inv[r] = 1 / its sum, so that inv[r] * row[r] is the softmax (rows may
   come back already normalised with inv[r] = 1).  mask[r] is read with stride mcol (0: one value
   for the row, 1: dense; NULL: none): float32 added to the scaled scores, or with `select` bool
   bytes (ai.ge::Attention mask_mode 1): a scaled score whose byte is 0 becomes `fill`.  A row
   whose scores are all -inf comes back NaN with inv[r] NaN.  Vectorised over the rows together
   (AVX-512 where the processor has it).  Returns the number of rows done
   (min(g, GE_FAST_ATTN_GROUP)). */
#define GE_FAST_ATTN_GROUP 6
size_t ge_fast_attn_softmax_rows(float *const *row, const void *const *mask, size_t g, size_t mcol,
                                 size_t n, float scale, bool select, float fill, float *inv);

/* move.c: n planar float32 images [3, H, W] (hw = H * W pixels each) stored channels-last
   [H, W, 3], as float32 or as bf16 (rounded to nearest even, as oneDNN's reorder rounds): a CNN's
   graph input before its first convolution.  oneDNN 2.6's reorder of a 224 x 224 image takes about
   100 us at 1 thread; this about a fifth of that.  Threaded in 2048-pixel chunks.  Only where
   ge_fast_nchw3_usable(bf16) (AVX-512 F, BW and VL; for bf16 also AVX512-BF16). */
bool ge_fast_nchw3_usable(bool bf16);
void ge_fast_nchw3_to_nhwc(const float *x, void *y, size_t n, size_t hw, bool bf16, int threads);

/* Bytes of packed weights that fast/pgemm.c's node states hold now (a block shared by several
   nodes counted once). */
size_t ge_pgemm_packed_bytes(void);

#endif
