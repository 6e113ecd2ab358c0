/* Schemas of the text family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_text[] = {
    {0},
};
