/* Constant nodes become initializers, so that later passes see their values. */
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"

/* The tensor a Constant node holds, or NULL when it is not a plain tensor constant. */
static ge_status constant_tensor(const ge_node *n, ge_tensor **out) {
  *out = NULL;
  if (n->n_attrs != 1 || n->n_outputs != 1) return GE_OK;
  const ge_attr_value *a = &n->attrs[0];
  int64_t d1[1];
  if (!strcmp(a->name, "value") && a->kind == GE_ATTR_KIND_TENSOR && a->t) return ge_tensor_clone(a->t, out);
  if (!strcmp(a->name, "value_float") && a->kind == GE_ATTR_KIND_FLOAT) {
    GE_CHECK(ge_tensor_create(GE_F32, NULL, 0, out));
    *(float *)(*out)->data = a->f;
  } else if (!strcmp(a->name, "value_int") && a->kind == GE_ATTR_KIND_INT) {
    GE_CHECK(ge_tensor_create(GE_I64, NULL, 0, out));
    *(int64_t *)(*out)->data = a->i;
  } else if (!strcmp(a->name, "value_floats") && a->kind == GE_ATTR_KIND_FLOATS) {
    d1[0] = (int64_t)a->n;
    GE_CHECK(ge_tensor_create(GE_F32, d1, 1, out));
    if (a->n) memcpy((*out)->data, a->floats, a->n * sizeof(float));
  } else if (!strcmp(a->name, "value_ints") && a->kind == GE_ATTR_KIND_INTS) {
    d1[0] = (int64_t)a->n;
    GE_CHECK(ge_tensor_create(GE_I64, d1, 1, out));
    if (a->n) memcpy((*out)->data, a->ints, a->n * sizeof(int64_t));
  }
  return GE_OK;
}

ge_status ge_pass_const_to_init(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  for (size_t ni = 0; ni < g->n_nodes && st == GE_OK; ni++) {
    if (!ge_edit_is_op(&e, (int32_t)ni, "Constant")) continue;
    const ge_node *n = &g->nodes[ni];
    int32_t v = n->outputs[0];
    if (v < 0 || e.is_out[v] || e.is_in[v]) continue;
    ge_tensor *t = NULL;
    st = constant_tensor(n, &t);
    if (st != GE_OK || !t) continue;
    ge_edit_kill(&e, (int32_t)ni);
    ge_value_set_tensor(&g->values[v], GE_VALUE_CONSTANT, t);
    *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
