/* Max pooling of a float32 image stored channels-last (NHWC), 2-D windows without dilation:
 * the plan's layout between oneDNN convolutions (compiler/layout.h).  oneDNN 2.6's jit pooling
 * is slow on channels-last (per output pixel it walks the channels in 16-wide blocks with a
 * stride), e.g. 512x14x14 3x3 stride 1: 116 us against 30 us on nChw16c; this loop reads each
 * window's channel vectors contiguously (vectorised, AVX-512/AVX2 clones).  Padding is skipped
 * (not -inf), as ONNX MaxPool defines it.
 * The same for an image stored bf16 (GE_LAYOUT_NHWC_BF16, in bf16 precision modes; needs
 * AVX512-BW): oneDNN's bf16 pooling on channels-last took 254 us on ResNet-50's 64 x 112 x 112
 * 3x3 stride 2 at 1 thread, this 80 us.  The maximum of bf16 values is exact (they are compared
 * as integers ordered like the values), so the result is the one float32 pooling of the same
 * values gives. */
#ifndef GE_BACKEND_CPU_DNNL_POOL_H
#define GE_BACKEND_CPU_DNNL_POOL_H

#include "backend/kernel.h"

typedef struct ge_dn_maxpool ge_dn_maxpool;

/* x, y: [N, C, H, W] logical dims; k, s, pl: kernel, strides and leading pads (H, W).  The
   trailing pads follow from the output size (ceil mode included).  bf16: input and output are
   stored bf16 (GE_ERR_UNSUPPORTED where ge_dn_maxpool_bf16_usable() is false). */
ge_status ge_dn_maxpool_new(const ge_prepare_ctx *p, const int64_t *x, const int64_t *y, const int64_t *k,
                            const int64_t *s, const int64_t *pl, bool bf16, ge_dn_maxpool **out);
bool ge_dn_maxpool_bf16_usable(void);
void ge_dn_maxpool_free(ge_dn_maxpool *m);
ge_status ge_dn_maxpool_run(const ge_dn_maxpool *m, ge_kctx *ctx);

#endif
