/* Dead-code elimination: nodes none of whose outputs is read (directly or through other live
 * nodes) by a graph output are removed.  Nodes with side effects stay. */
#include <string.h>

#include "ops/op.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"

static bool has_side_effects(const ge_node *n) {
  return n->n_outputs == 0 || ge_op_has_side_effects(n);
}

ge_status ge_pass_dce(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  /* Reverse topological order: a node's readers are decided before it. */
  for (size_t k = g->n_nodes; k-- > 0;) {
    const ge_node *n = &g->nodes[k];
    if (has_side_effects(n)) continue;
    bool used = false;
    for (size_t o = 0; o < n->n_outputs && !used; o++)
      if (n->outputs[o] >= 0 && e.uses[n->outputs[o]] > 0) used = true;
    if (used) continue;
    ge_edit_kill(&e, (int32_t)k);
    *changed = true;
  }
  return ge_edit_commit(&e);
}
