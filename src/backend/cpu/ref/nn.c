/* Reference CPU kernels of the nn family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_nn[] = {
    {0},
};
