/* Reference CPU kernels of the reduce family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_reduce[] = {
    {0},
};
