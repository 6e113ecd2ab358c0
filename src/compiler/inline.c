/* Model-local functions (FunctionProto): every node calling one is replaced by the function's
 * body, with its inputs, outputs and attributes bound (attribute references resolved against
 * the call's attributes, then the function's defaults).  Calls inside function bodies are
 * expanded in later rounds; subgraphs of the graph are expanded too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/inline.h"
#include "passes/graph_edit.h"

#define GE_INLINE_MAX_ROUNDS 16

static bool domain_eq(const char *a, const char *b) {
  if (!a || !strcmp(a, "ai.onnx")) a = "";
  if (!b || !strcmp(b, "ai.onnx")) b = "";
  return !strcmp(a, b);
}

static const ge_function *find_function(const ge_graph *top, const ge_node *n) {
  for (size_t i = 0; i < top->n_functions; i++) {
    const ge_function *f = &top->functions[i];
    if (!strcmp(f->name, n->op_type) && domain_eq(f->domain, n->domain)) return f;
  }
  return NULL;
}

static int64_t function_opset(const ge_function *f, const char *domain, const ge_graph *g) {
  for (size_t i = 0; i < f->n_opsets; i++)
    if (domain_eq(f->opsets[i].domain, domain)) return f->opsets[i].version;
  return ge_graph_opset(g, domain);
}

/* Attribute values of body node bn, bound for the call node `call`. */
static ge_status bind_attrs(ge_graph *g, ge_node *dst, const ge_node *bn, const ge_node *call,
                            const ge_function *f) {
  for (size_t a = 0; a < bn->n_attrs; a++) {
    const ge_attr_value *src = &bn->attrs[a];
    if (src->ref_attr_name) {
      src = ge_node_attr(call, src->ref_attr_name);
      for (size_t k = 0; !src && k < f->n_attr_defaults; k++)
        if (f->attr_defaults[k].name && !strcmp(f->attr_defaults[k].name, bn->attrs[a].ref_attr_name))
          src = &f->attr_defaults[k];
      if (!src) continue; /* unset optional attribute */
    }
    ge_attr_value v;
    memset(&v, 0, sizeof v);
    GE_CHECK(ge_attr_value_copy(&v, src, g));
    free(v.name);
    free(v.ref_attr_name);
    v.ref_attr_name = NULL;
    v.name = strdup(bn->attrs[a].name);
    if (!v.name) {
      ge_attr_value_clear(&v);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory inlining a function");
    }
    ge_status st = ge_node_add_attr(dst, &v);
    if (st != GE_OK) {
      ge_attr_value_clear(&v);
      return st;
    }
  }
  return GE_OK;
}

/* Value id in g for body value bv of function f called by node `call`: the call's inputs and
   outputs for the function's formals, fresh values for the rest (map caches them). */
static ge_status map_value(ge_edit *e, const ge_function *f, const ge_node *call, const char *prefix,
                           const ge_graph *body, int32_t bv, int32_t *map, int32_t *out) {
  if (bv < 0) {
    *out = -1;
    return GE_OK;
  }
  if (map[bv] != INT32_MIN) {
    *out = map[bv];
    return GE_OK;
  }
  const char *name = body->values[bv].name;
  int32_t id = INT32_MIN;
  for (size_t i = 0; i < f->n_inputs && id == INT32_MIN; i++)
    if (!strcmp(f->inputs[i], name)) id = i < call->n_inputs ? call->inputs[i] : -1;
  for (size_t i = 0; i < f->n_outputs && id == INT32_MIN; i++)
    if (!strcmp(f->outputs[i], name)) id = i < call->n_outputs ? call->outputs[i] : -1;
  if (id == INT32_MIN) {
    if (body->values[bv].kind == GE_VALUE_CONSTANT && body->values[bv].constant) {
      ge_tensor *c = NULL;
      GE_CHECK(ge_tensor_clone(body->values[bv].constant, &c));
      GE_CHECK(ge_edit_add_constant(e, name, c, &id));
    } else {
      char buf[512];
      snprintf(buf, sizeof buf, "%s/%s", prefix, name);
      GE_CHECK(ge_edit_new_value(e, buf, &id));
    }
  }
  map[bv] = id;
  *out = id;
  return GE_OK;
}

static ge_status expand_call(ge_edit *e, int32_t ni, const ge_function *f) {
  ge_graph *g = e->g;
  const ge_graph *body = f->body;
  /* copy what we need of the call: g->nodes moves as nodes are added */
  ge_node call = g->nodes[ni];
  char prefix[300];
  snprintf(prefix, sizeof prefix, "%s#%d", call.name && call.name[0] ? call.name : f->name, (int)ni);
  int32_t *map = malloc((body->n_values + 1) * sizeof *map);
  int32_t *ins = NULL, *outs = NULL;
  size_t max_io = 1;
  for (size_t k = 0; k < body->n_nodes; k++) {
    if (body->nodes[k].n_inputs > max_io) max_io = body->nodes[k].n_inputs;
    if (body->nodes[k].n_outputs > max_io) max_io = body->nodes[k].n_outputs;
  }
  ins = malloc(max_io * sizeof *ins);
  outs = malloc(max_io * sizeof *outs);
  /* the call's ids and attributes, kept while g->nodes may move */
  int32_t *c_in = malloc((call.n_inputs + 1) * sizeof *c_in), *c_out = malloc((call.n_outputs + 1) * sizeof *c_out);
  ge_status st = map && ins && outs && c_in && c_out ? GE_OK
                                                      : ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory inlining '%s'", f->name);
  if (st == GE_OK) {
    memcpy(c_in, call.inputs, call.n_inputs * sizeof *c_in);
    memcpy(c_out, call.outputs, call.n_outputs * sizeof *c_out);
    call.inputs = c_in;
    call.outputs = c_out;
    for (size_t v = 0; v < body->n_values; v++) map[v] = INT32_MIN;
  }
  /* the call node stays in g->nodes (dead) until commit, so its attributes stay valid */
  ge_edit_kill(e, ni);
  for (size_t k = 0; st == GE_OK && k < body->n_nodes; k++) {
    const ge_node *bn = &body->nodes[k];
    for (size_t i = 0; i < bn->n_inputs && st == GE_OK; i++)
      st = map_value(e, f, &call, prefix, body, bn->inputs[i], map, &ins[i]);
    for (size_t o = 0; o < bn->n_outputs && st == GE_OK; o++)
      st = map_value(e, f, &call, prefix, body, bn->outputs[o], map, &outs[o]);
    if (st != GE_OK) break;
    char nm[600];
    snprintf(nm, sizeof nm, "%s/%s", prefix, bn->name ? bn->name : "");
    int32_t id = -1;
    st = ge_edit_add_node(e, bn->op_type, bn->domain, nm, ins, bn->n_inputs, outs, bn->n_outputs, &id);
    if (st != GE_OK) break;
    g->nodes[id].opset = function_opset(f, bn->domain, g);
    st = bind_attrs(g, &g->nodes[id], bn, &g->nodes[ni], f);
  }
  /* outputs that are inputs of the function (no body node produces them): an Identity */
  for (size_t o = 0; st == GE_OK && o < f->n_outputs && o < call.n_outputs; o++) {
    int32_t bo = ge_graph_find_value(body, f->outputs[o]);
    if (bo < 0 || body->values[bo].producer >= 0 || call.outputs[o] < 0) continue;
    int32_t src = -1, id = -1;
    map[bo] = INT32_MIN;
    for (size_t i = 0; i < f->n_inputs && src < 0; i++)
      if (!strcmp(f->inputs[i], f->outputs[o]) && i < call.n_inputs) src = call.inputs[i];
    if (src < 0) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "function '%s': output '%s' is not computed", f->name,
                    f->outputs[o]);
      break;
    }
    char nm[600];
    snprintf(nm, sizeof nm, "%s/out%zu", prefix, o);
    st = ge_edit_add_node(e, "Identity", "", nm, &src, 1, &call.outputs[o], 1, &id);
  }
  free(map);
  free(ins);
  free(outs);
  free(c_in);
  free(c_out);
  return st;
}

static ge_status inline_graph(ge_graph *g, const ge_graph *top);

static ge_status inline_subgraphs(ge_graph *g, const ge_graph *top) {
  for (size_t i = 0; i < g->n_nodes; i++)
    for (size_t a = 0; a < g->nodes[i].n_attrs; a++) {
      ge_attr_value *at = &g->nodes[i].attrs[a];
      if (at->kind == GE_ATTR_KIND_GRAPH && at->g) GE_CHECK(inline_graph(at->g, top));
      if (at->kind == GE_ATTR_KIND_GRAPHS)
        for (size_t k = 0; k < at->n; k++)
          if (at->graphs[k]) GE_CHECK(inline_graph(at->graphs[k], top));
    }
  return GE_OK;
}

static ge_status inline_graph(ge_graph *g, const ge_graph *top) {
  for (int round = 0; round < GE_INLINE_MAX_ROUNDS; round++) {
    bool any = false;
    for (size_t i = 0; i < g->n_nodes && !any; i++) any = find_function(top, &g->nodes[i]) != NULL;
    if (!any) return inline_subgraphs(g, top);
    ge_edit e;
    GE_CHECK(ge_edit_begin(g, &e));
    size_t nn = g->n_nodes;
    ge_status st = GE_OK;
    for (size_t i = 0; i < nn && st == GE_OK; i++) {
      const ge_function *f = find_function(top, &g->nodes[i]);
      if (f) st = expand_call(&e, (int32_t)i, f);
    }
    if (st != GE_OK) {
      ge_edit_abort(&e);
      return st;
    }
    GE_CHECK(ge_edit_commit(&e));
  }
  return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': model-local functions nest deeper than %d "
                  "levels (a recursive function?)", g->name ? g->name : "", GE_INLINE_MAX_ROUNDS);
}

ge_status ge_graph_inline_functions(ge_graph *g) {
  if (!g || !g->n_functions) return GE_OK;
  return inline_graph(g, g);
}
