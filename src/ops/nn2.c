/* Schemas of the nn2 family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_nn2[] = {
    {0},
};
