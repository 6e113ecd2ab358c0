/* Reverse-mode automatic differentiation: expansion of Gradient nodes
 * (ai.onnx.preview.training::Gradient) into the backward subgraph. */
#ifndef GE_COMPILER_AUTODIFF_H
#define GE_COMPILER_AUTODIFF_H

#include "ir/ir.h"

/* Replaces every Gradient node of the top-level graph g by nodes computing d(sum y)/d(x) for
   each x of its `xs` attribute, through the forward nodes between xs and y.  Toposorts g.
   GE_ERR_UNSUPPORTED names a forward node whose op has no derivative rule here.  A graph
   without Gradient nodes is left as it is (apart from the sort). */
ge_status ge_graph_expand_gradients(ge_graph *g);

#endif
