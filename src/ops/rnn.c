/* Schemas of the rnn family. */
#include "ops/op.h"

const ge_op_schema ge_schemas_rnn[] = {
    {0},
};
