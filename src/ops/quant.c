/* Schemas of the quant family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_quant[] = {
    {0},
};
