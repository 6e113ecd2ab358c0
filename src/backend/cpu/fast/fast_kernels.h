/* The vectorised, threaded fast CPU kernels (src/backend/cpu/fast/): tried after the oneDNN
 * kernels and before the reference kernels (src/backend/cpu/registry.c, fast_families).  Each
 * declines (GE_ERR_UNSUPPORTED from prepare) what it does not handle. */
#ifndef GE_BACKEND_CPU_FAST_KERNELS_H
#define GE_BACKEND_CPU_FAST_KERNELS_H

#include "backend/kernel.h"

extern const ge_kernel_def ge_fast_kernels_fast[];
/* transformer.c: LayerNormalization, Add/Sub/Mul/Div */
extern const ge_kernel_def ge_fast_kernels_tf[];

#endif
