/* Control-flow schemas: If, Loop, Scan.  Output types come from the subgraphs' declared
 * outputs (merged where branches or iterations may differ); the kernels produce the values
 * at run time. */
#include <string.h>

#include "ops/op.h"

static const ge_graph *graph_attr(const ge_node *n, const char *name) {
  const ge_attr_value *a = ge_node_attr(n, name);
  return a && a->kind == GE_ATTR_KIND_GRAPH ? a->g : NULL;
}

/* A subgraph's type seen from the enclosing graph: its symbols mean nothing there. */
static ge_type outer_view(const ge_type *t) {
  ge_type r = *t;
  for (int32_t d = 0; r.shape.rank > 0 && d < r.shape.rank; d++)
    if (r.shape.dims[d] < 0) r.shape.dims[d] = GE_DIM_UNKNOWN;
  return r;
}

/* The type both a and b fit: dims that differ become unknown. */
static ge_type merge_types(const ge_type *a, const ge_type *b) {
  ge_type r = *a;
  if (r.kind == GE_TYPE_UNKNOWN) return *b;
  if (b->kind != r.kind) return r;
  if (r.dtype == GE_DTYPE_COUNT) r.dtype = b->dtype;
  if (r.shape.rank != b->shape.rank) {
    ge_shape_set_unknown(&r.shape);
  } else {
    for (int32_t d = 0; d < r.shape.rank; d++)
      if (r.shape.dims[d] != b->shape.dims[d]) r.shape.dims[d] = GE_DIM_UNKNOWN;
  }
  return r;
}

static ge_type value_type(const ge_graph *g, int32_t v) {
  ge_type t;
  if (v < 0 || (size_t)v >= g->n_values) {
    memset(&t, 0, sizeof t);
    t.kind = GE_TYPE_UNKNOWN;
    t.dtype = GE_DTYPE_COUNT;
    ge_shape_set_unknown(&t.shape);
    return t;
  }
  return outer_view(&g->values[v].type);
}

static ge_status infer_if(ge_infer_ctx *c) {
  const ge_graph *tb = graph_attr(c->node, "then_branch"), *eb = graph_attr(c->node, "else_branch");
  if (!tb || !eb) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "needs graph attributes then_branch and else_branch");
  if (tb->n_outputs != c->n_out || eb->n_outputs != c->n_out)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "has %zu outputs, but then_branch returns %zu and else_branch %zu",
                         c->n_out, tb->n_outputs, eb->n_outputs);
  for (size_t o = 0; o < c->n_out; o++) {
    ge_type a = value_type(tb, tb->outputs[o]), b = value_type(eb, eb->outputs[o]);
    c->out[o] = merge_types(&a, &b);
    if (c->out[o].kind == GE_TYPE_UNKNOWN) c->out[o].kind = GE_TYPE_TENSOR;
  }
  return GE_OK;
}

static ge_status infer_loop(ge_infer_ctx *c) {
  const ge_graph *body = graph_attr(c->node, "body");
  if (!body) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "needs a graph attribute body");
  size_t n_carried = c->n_in - 2;
  if (body->n_outputs < 1 + n_carried || c->n_out != body->n_outputs - 1)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "has %zu loop-carried inputs and %zu outputs, but its body returns %zu values",
                         n_carried, c->n_out, body->n_outputs);
  for (size_t o = 0; o < c->n_out; o++) {
    ge_type b = value_type(body, body->outputs[o + 1]);
    if (o < n_carried) {
      if (c->in[o + 2].present && c->in[o + 2].type) {
        ge_type a = outer_view(c->in[o + 2].type);
        c->out[o] = b.dtype == GE_DTYPE_COUNT && b.kind == GE_TYPE_TENSOR ? a : merge_types(&a, &b);
      } else {
        c->out[o] = b;
      }
    } else { /* scan output: the iterations stacked on a new first axis */
      ge_type r = b;
      r.kind = GE_TYPE_TENSOR;
      if (b.shape.rank >= 0 && b.shape.rank < GE_MAX_RANK) {
        r.shape.rank = b.shape.rank + 1;
        r.shape.dims[0] = GE_DIM_UNKNOWN;
        for (int32_t d = 0; d < b.shape.rank; d++) r.shape.dims[d + 1] = b.shape.dims[d];
      } else {
        ge_shape_set_unknown(&r.shape);
      }
      c->out[o] = r;
    }
    if (c->out[o].kind == GE_TYPE_UNKNOWN) c->out[o].kind = GE_TYPE_TENSOR;
  }
  return GE_OK;
}

static ge_status infer_scan(ge_infer_ctx *c) {
  const ge_graph *body = graph_attr(c->node, "body");
  if (!body) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "needs a graph attribute body");
  int64_t m = ge_node_attr_int(c->node, "num_scan_inputs", -1);
  bool v8 = c->opset < 9;
  size_t first = v8 ? 1 : 0;
  if (m < 1 || (size_t)m > c->n_in - first)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "num_scan_inputs %lld does not fit %zu inputs",
                         (long long)m, c->n_in);
  size_t n_state = c->n_in - first - (size_t)m;
  if (body->n_outputs != c->n_out || c->n_out < n_state)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "has %zu outputs, its body returns %zu",
                         c->n_out, body->n_outputs);
  const int64_t *oax = NULL;
  size_t n_oax = 0;
  ge_node_attr_ints(c->node, "scan_output_axes", &oax, &n_oax);
  for (size_t o = 0; o < c->n_out; o++) {
    ge_type b = value_type(body, body->outputs[o]);
    if (o < n_state) {
      const ge_infer_input *in = &c->in[first + o];
      c->out[o] = in->present && in->type ? *in->type : b;
      if (c->out[o].kind == GE_TYPE_UNKNOWN) c->out[o].kind = GE_TYPE_TENSOR;
      continue;
    }
    ge_type r = b;
    r.kind = GE_TYPE_TENSOR;
    int32_t add = v8 ? 2 : 1;
    if (b.shape.rank >= 0 && b.shape.rank + add <= GE_MAX_RANK) {
      int64_t ax = 0;
      if (!v8 && o - n_state < n_oax) ax = oax[o - n_state];
      if (ax < 0) ax += b.shape.rank + 1;
      if (ax < 0 || ax > b.shape.rank)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "scan_output_axes[%zu] = %lld is out of range",
                             o - n_state, (long long)ax);
      r.shape.rank = b.shape.rank + add;
      int32_t k = 0;
      if (v8) r.shape.dims[k++] = GE_DIM_UNKNOWN; /* batch */
      for (int32_t d = 0; d <= b.shape.rank; d++) {
        if (d == ax) r.shape.dims[k++] = GE_DIM_UNKNOWN;
        if (d < b.shape.rank) r.shape.dims[k++] = b.shape.dims[d];
      }
    } else {
      ge_shape_set_unknown(&r.shape);
    }
    c->out[o] = r;
  }
  return GE_OK;
}

const ge_op_schema ge_schemas_control[] = {
    {"", "If", 1, 0, 1, 1, 1, GE_VARIADIC, infer_if},
    {"", "Loop", 1, 0, 2, GE_VARIADIC, 0, GE_VARIADIC, infer_loop},
    {"", "Scan", 8, 0, 1, GE_VARIADIC, 1, GE_VARIADIC, infer_scan},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL},
};
