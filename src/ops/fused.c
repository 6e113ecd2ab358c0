/* Schemas of the fused ops (domain ai.ge) that the compiler's fusion passes create. */
#include "ops/op.h"

const ge_op_schema ge_schemas_fused[] = {
    {0},
};
