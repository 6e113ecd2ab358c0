/* Reference CPU kernels of the rnn family. */
#include "backend/kernel.h"

const ge_kernel_def ge_ref_kernels_rnn[] = {
    {0},
};
