/* Type inference over the whole IR for the passes: every value produced by a node gets the
 * type its op schema infers, with initializers as known input values. */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "passes/pass.h"

static bool type_eq(const ge_type *a, const ge_type *b) {
  if (a->kind != b->kind || a->dtype != b->dtype || a->elem_is_seq != b->elem_is_seq) return false;
  if (a->shape.rank != b->shape.rank) return false;
  for (int32_t d = 0; d < a->shape.rank; d++)
    if (a->shape.dims[d] != b->shape.dims[d]) return false;
  return true;
}

static void type_unknown(ge_type *t) {
  memset(t, 0, sizeof *t);
  t->kind = GE_TYPE_UNKNOWN;
  t->dtype = GE_DTYPE_COUNT;
  t->shape.rank = GE_RANK_UNKNOWN;
}

ge_status ge_passes_infer_types(ge_graph *g) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_passes_infer_types: NULL graph");
  size_t max_in = 1, max_out = 1;
  for (size_t i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].n_inputs > max_in) max_in = g->nodes[i].n_inputs;
    if (g->nodes[i].n_outputs > max_out) max_out = g->nodes[i].n_outputs;
  }
  ge_infer_input *in = calloc(max_in, sizeof *in);
  ge_type *out = calloc(max_out, sizeof *out);
  if (!in || !out) {
    free(in);
    free(out);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory inferring types");
  }
  /* initializers carry their own type */
  for (size_t v = 0; v < g->n_values; v++) {
    ge_value *val = &g->values[v];
    if (val->kind == GE_VALUE_CONSTANT && val->constant) {
      val->type.kind = GE_TYPE_TENSOR;
      val->type.dtype = val->constant->dtype;
      ge_tensor_shape(val->constant, &val->type.shape);
    }
  }
  static const ge_type unknown = {.kind = GE_TYPE_UNKNOWN, .dtype = GE_DTYPE_COUNT,
                                  .shape = {.rank = GE_RANK_UNKNOWN}};
  /* A DAG in topological order settles in one sweep; a second confirms (or fixes an
     unsorted graph). */
  for (int sweep = 0; sweep < 4; sweep++) {
    bool changed = false;
    for (size_t ni = 0; ni < g->n_nodes; ni++) {
      const ge_node *n = &g->nodes[ni];
      for (size_t i = 0; i < n->n_inputs; i++) {
        int32_t v = n->inputs[i];
        in[i].present = v >= 0;
        in[i].type = v >= 0 ? &g->values[v].type : &unknown;
        in[i].value = v >= 0 && g->values[v].kind == GE_VALUE_CONSTANT ? g->values[v].constant : NULL;
      }
      for (size_t o = 0; o < n->n_outputs; o++) type_unknown(&out[o]);
      ge_infer_ctx ic = {.graph = g, .node = n, .opset = n->opset, .n_in = n->n_inputs,
                         .n_out = n->n_outputs, .in = in, .out = out};
      if (ge_op_infer(&ic) != GE_OK) {
        /* not ours to report: the compiler names the node when it compiles it */
        ge_error_clear();
        for (size_t o = 0; o < n->n_outputs; o++) type_unknown(&out[o]);
      }
      for (size_t o = 0; o < n->n_outputs; o++) {
        int32_t v = n->outputs[o];
        if (v < 0) continue;
        if (!type_eq(&g->values[v].type, &out[o])) {
          g->values[v].type = out[o];
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  free(in);
  free(out);
  return GE_OK;
}
