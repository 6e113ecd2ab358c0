/* Schemas of the elementwise family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_elementwise[] = {
    {0},
};
