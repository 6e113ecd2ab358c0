/* Schemas of the nn family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_nn[] = {
    {0},
};
