/* Schemas of the signal family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_signal[] = {
    {0},
};
