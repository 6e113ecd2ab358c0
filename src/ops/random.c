/* Schemas of the random family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_random[] = {
    {0},
};
