/* Reference CPU kernels of the random family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_random[] = {
    {0},
};
