/* Schemas of the shape family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_shape[] = {
    {0},
};
