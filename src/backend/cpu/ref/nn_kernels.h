/* Kernel entry points of the nn family defined outside nn.c (conv.c, pool.c). */
#ifndef GE_BACKEND_CPU_REF_NN_KERNELS_H
#define GE_BACKEND_CPU_REF_NN_KERNELS_H

#include "backend/kernel.h"

ge_status ge_nn_conv_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn_conv_run(const void *state, ge_kctx *ctx);
ge_status ge_nn_convt_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn_convt_run(const void *state, ge_kctx *ctx);
void ge_nn_conv_release(void *state);

ge_status ge_nn_pool_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn_pool_run(const void *state, ge_kctx *ctx);
ge_status ge_nn_gpool_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_nn_gpool_run(const void *state, ge_kctx *ctx);
void ge_nn_pool_release(void *state);

#endif
