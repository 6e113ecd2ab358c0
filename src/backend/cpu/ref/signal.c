/* Reference CPU kernels of the signal family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_signal[] = {
    {0},
};
