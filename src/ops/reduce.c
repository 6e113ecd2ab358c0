/* Schemas of the reduce family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_reduce[] = {
    {0},
};
