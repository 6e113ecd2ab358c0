/* Common-subexpression elimination: two nodes with the same op, domain, inputs and
 * attributes compute the same outputs; the later one's readers read the earlier one's
 * outputs.  Random and stateful ops and nodes with subgraphs are left alone. */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "passes/pass.h"
#include "passes/pass_util.h"

static bool eligible(const ge_node *n) {
  static const char *const never[] = {"Dropout", "If", "Loop", "Scan", NULL};
  if (n->n_outputs == 0 || ge_op_has_side_effects(n) || ge_op_is_random(n)) return false;
  if (n->domain[0] && strcmp(n->domain, "ai.onnx") && strcmp(n->domain, "ai.ge")) return false;
  for (const char *const *o = never; *o; o++)
    if (!strcmp(n->op_type, *o)) return false;
  for (size_t i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].kind == GE_ATTR_KIND_GRAPH || n->attrs[i].kind == GE_ATTR_KIND_GRAPHS) return false;
  return true;
}

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return mix(h, 0xff);
}

static uint64_t node_hash(const ge_node *n) {
  uint64_t h = hash_str(1469598103934665603ull, n->op_type);
  h = hash_str(h, n->domain);
  h = mix(h, n->n_inputs);
  for (size_t i = 0; i < n->n_inputs; i++) h = mix(h, (uint64_t)(int64_t)n->inputs[i]);
  h = mix(h, n->n_outputs);
  h = mix(h, n->n_attrs);
  for (size_t i = 0; i < n->n_attrs; i++) {
    h = hash_str(h, n->attrs[i].name);
    h = mix(h, (uint64_t)n->attrs[i].i);
  }
  return h;
}

static bool tensor_eq(const ge_tensor *a, const ge_tensor *b) {
  if (!a || !b) return a == b;
  if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes) return false;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  if (a->dtype == GE_STRING) {
    char **x = a->data, **y = b->data;
    for (size_t i = 0; i < a->numel; i++)
      if (strcmp(x[i] ? x[i] : "", y[i] ? y[i] : "")) return false;
    return true;
  }
  return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

static bool attr_eq(const ge_attr_value *a, const ge_attr_value *b) {
  if (strcmp(a->name, b->name) || a->kind != b->kind || a->n != b->n) return false;
  switch (a->kind) {
  case GE_ATTR_KIND_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
  case GE_ATTR_KIND_INT: return a->i == b->i;
  case GE_ATTR_KIND_STRING: return a->s_len == b->s_len && !strcmp(a->s ? a->s : "", b->s ? b->s : "");
  case GE_ATTR_KIND_TENSOR: return tensor_eq(a->t, b->t);
  case GE_ATTR_KIND_FLOATS: return !a->n || memcmp(a->floats, b->floats, a->n * sizeof(float)) == 0;
  case GE_ATTR_KIND_INTS: return !a->n || memcmp(a->ints, b->ints, a->n * sizeof(int64_t)) == 0;
  case GE_ATTR_KIND_STRINGS:
    for (size_t i = 0; i < a->n; i++)
      if (strcmp(a->strings[i], b->strings[i])) return false;
    return true;
  case GE_ATTR_KIND_TENSORS:
    for (size_t i = 0; i < a->n; i++)
      if (!tensor_eq(a->tensors[i], b->tensors[i])) return false;
    return true;
  default: return false;
  }
}

static bool nodes_eq(const ge_node *a, const ge_node *b) {
  if (strcmp(a->op_type, b->op_type) || strcmp(a->domain, b->domain) || a->opset != b->opset ||
      a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs || a->n_attrs != b->n_attrs)
    return false;
  for (size_t i = 0; i < a->n_inputs; i++)
    if (a->inputs[i] != b->inputs[i]) return false;
  for (size_t o = 0; o < a->n_outputs; o++)
    if ((a->outputs[o] < 0) != (b->outputs[o] < 0)) return false;
  for (size_t i = 0; i < a->n_attrs; i++) {
    const ge_attr_value *x = &a->attrs[i];
    const ge_attr_value *y = ge_node_attr(b, x->name);
    if (!y || !attr_eq(x, y)) return false;
  }
  return true;
}

ge_status ge_pass_cse(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  size_t cap = 16;
  while (cap < 2 * g->n_nodes + 2) cap *= 2;
  int32_t *table = malloc(cap * sizeof *table);
  if (!table) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in CSE");
  for (size_t i = 0; i < cap; i++) table[i] = -1;
  ge_edit e;
  ge_status st = ge_edit_begin(g, &e);
  if (st != GE_OK) {
    free(table);
    return st;
  }
  /* Topological order: when a node is visited, its inputs are already canonical. */
  for (size_t ni = 0; ni < g->n_nodes; ni++) {
    const ge_node *n = &g->nodes[ni];
    if (e.dead[ni] || !eligible(n)) continue;
    size_t slot = (size_t)node_hash(n) & (cap - 1);
    int32_t match = -1;
    for (; table[slot] >= 0; slot = (slot + 1) & (cap - 1))
      if (nodes_eq(&g->nodes[table[slot]], n)) {
        match = table[slot];
        break;
      }
    if (match < 0) {
      table[slot] = (int32_t)ni;
      continue;
    }
    const ge_node *m = &g->nodes[match];
    bool ok = true;
    for (size_t o = 0; o < n->n_outputs && ok; o++)
      if (n->outputs[o] >= 0 && !ge_edit_can_forward(&e, n->outputs[o], m->outputs[o])) ok = false;
    /* two graph outputs both reading the same value keep their names: not possible */
    if (!ok) continue;
    for (size_t o = 0; o < n->n_outputs; o++)
      if (n->outputs[o] >= 0) ge_edit_forward(&e, n->outputs[o], m->outputs[o]);
    ge_edit_kill(&e, (int32_t)ni);
    *changed = true;
  }
  free(table);
  return ge_edit_commit(&e);
}
