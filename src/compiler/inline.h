/* Expansion of model-local functions (FunctionProto) into the graphs that call them. */
#ifndef GE_COMPILER_INLINE_H
#define GE_COMPILER_INLINE_H

#include "ir/ir.h"

/* Replaces every call of a function of g->functions (in g and its subgraphs) by the body. */
ge_status ge_graph_inline_functions(ge_graph *g);

#endif
