/* Kernels of the nn2 family, split over nn2.c (table, CumProd, BitCast, Col2Im,
 * CenterCropPad), nn2_flex.c (FlexAttention), nn2_attn.c (Attention, RMSNormalization, RotaryEmbedding, LinearAttention,
 * CausalConvWithState) and nn2_loss.c (losses, optimizers, DeformConv). */
#ifndef GE_BACKEND_CPU_REF_NN2_KERNELS_H
#define GE_BACKEND_CPU_REF_NN2_KERNELS_H

#include "backend/kernel.h"

/* float64 scratch of n elements (overflow-checked); NULL with a message naming the node */
double *ge_nn2_dalloc(const ge_kctx *c, size_t n);

ge_status ge_nn2_attention_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_attention_run(const void *state, ge_kctx *c);
ge_status ge_nn2_flex_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_flex_run(const void *state, ge_kctx *c);
void ge_nn2_flex_release(void *state);
ge_status ge_nn2_rmsnorm_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_rmsnorm_run(const void *state, ge_kctx *c);
ge_status ge_nn2_rotary_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_rotary_run(const void *state, ge_kctx *c);
ge_status ge_nn2_linattn_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_linattn_run(const void *state, ge_kctx *c);
ge_status ge_nn2_causalconv_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_causalconv_run(const void *state, ge_kctx *c);

ge_status ge_nn2_nll_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_nll_run(const void *state, ge_kctx *c);
ge_status ge_nn2_sce_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_sce_run(const void *state, ge_kctx *c);
ge_status ge_nn2_optim_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_optim_run(const void *state, ge_kctx *c);
ge_status ge_nn2_deform_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn2_deform_run(const void *state, ge_kctx *c);

#endif
