/* Reference CPU kernels of the nn2 family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_nn2[] = {
    {0},
};
