/* Max pooling of a float32 image stored channels-last (NHWC), 2-D windows without dilation:
 * the plan's layout between oneDNN convolutions (compiler/layout.h).  oneDNN 2.6's jit pooling
 * is slow on channels-last (per output pixel it walks the channels in 16-wide blocks with a
 * stride), e.g. 512x14x14 3x3 stride 1: 116 us against 30 us on nChw16c; this loop reads each
 * window's channel vectors contiguously (vectorised, AVX-512/AVX2 clones).  Padding is skipped
 * (not -inf), as ONNX MaxPool defines it. */
#ifndef GE_BACKEND_CPU_DNNL_POOL_H
#define GE_BACKEND_CPU_DNNL_POOL_H

#include "backend/kernel.h"

typedef struct ge_dn_maxpool ge_dn_maxpool;

/* x, y: [N, C, H, W] logical dims; k, s, pl: kernel, strides and leading pads (H, W).  The
   trailing pads follow from the output size (ceil mode included). */
ge_status ge_dn_maxpool_new(const ge_prepare_ctx *p, const int64_t *x, const int64_t *y, const int64_t *k,
                            const int64_t *s, const int64_t *pl, ge_dn_maxpool **out);
void ge_dn_maxpool_free(ge_dn_maxpool *m);
ge_status ge_dn_maxpool_run(const ge_dn_maxpool *m, ge_kctx *ctx);

#endif
