/* Reference CPU kernels of the shape family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_shape[] = {
    {0},
};
