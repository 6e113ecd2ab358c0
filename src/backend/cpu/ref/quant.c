/* Reference CPU kernels of the quant family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_quant[] = {
    {0},
};
