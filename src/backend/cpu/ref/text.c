/* Reference CPU kernels of the text family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_text[] = {
    {0},
};
