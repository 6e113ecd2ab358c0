/* Schemas of the ai.ge side-effect ops: Summary, Save, Callback (data for the session's
 * callbacks) and Assign, AssignAdd, AssignSub (variable writes).  None of them may be folded
 * or removed by dead-code elimination: their effect is not in their outputs. */
#include <string.h>

#include "ops/op.h"

static const char *const summary_types[] = {"scalar", "histogram", "tensor", "image", NULL};

/* Input i must be a graph variable. */
static ge_status check_variable(const ge_infer_ctx *c, size_t i) {
  int32_t v = c->node->inputs[i];
  if (v < 0 || (size_t)v >= c->graph->n_values || c->graph->values[v].kind != GE_VALUE_VARIABLE)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu ('%s') is not a variable", i,
                         v >= 0 && (size_t)v < c->graph->n_values ? c->graph->values[v].name : "");
  return GE_OK;
}

static ge_status check_string_attr(const ge_infer_ctx *c, const char *name, bool required) {
  const ge_attr_value *a = ge_node_attr(c->node, name);
  if (!a) {
    if (required) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute '%s' is required", name);
    return GE_OK;
  }
  if (a->kind != GE_ATTR_KIND_STRING)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute '%s' must be a string, not %s",
                         name, ge_attr_kind_name(a->kind));
  if (!a->s || !a->s[0])
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute '%s' is empty", name);
  return GE_OK;
}

static ge_status no_strings(const ge_infer_ctx *c) {
  for (size_t i = 0; i < c->n_in; i++)
    if (ge_infer_has_input(c, i) && c->in[i].type->dtype == GE_STRING)
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input %zu is a string tensor, which %s cannot take",
                           i, c->node->op_type);
  return GE_OK;
}

static ge_status infer_summary(ge_infer_ctx *c) {
  GE_CHECK(check_string_attr(c, "tag", false));
  GE_CHECK(check_string_attr(c, "type", false));
  GE_CHECK(no_strings(c));
  const char *type = ge_node_attr_string(c->node, "type", "tensor");
  size_t k = 0;
  while (summary_types[k] && strcmp(summary_types[k], type)) k++;
  if (!summary_types[k])
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "attribute type='%s' is not scalar, histogram, tensor or image", type);
  if (c->in[0].present && c->in[0].type) {
    const ge_shape *s = &c->in[0].type->shape;
    size_t n = 0;
    if (!strcmp(type, "scalar") && ge_shape_is_static(s) && ge_shape_numel(s, &n) && n != 1)
      return ge_infer_fail(c, GE_ERR_SHAPE, "a scalar summary needs one element, input 0 has %zu", n);
    if (!strcmp(type, "image") && s->rank != GE_RANK_UNKNOWN && s->rank != 3 && s->rank != 4)
      return ge_infer_fail(c, GE_ERR_SHAPE,
                           "an image summary needs [H,W,C] or [N,H,W,C], input 0 has rank %d", s->rank);
  }
  if (c->n_out) ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_save(ge_infer_ctx *c) {
  for (size_t i = 0; i < c->n_in; i++) GE_CHECK(check_variable(c, i));
  return GE_OK;
}

static ge_status infer_callback(ge_infer_ctx *c) {
  GE_CHECK(check_string_attr(c, "key", true));
  GE_CHECK(no_strings(c));
  for (size_t i = 0; i < c->n_in; i++)
    if (!c->in[i].present)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu is omitted", i);
  return GE_OK;
}

static ge_status infer_assign(ge_infer_ctx *c) {
  GE_CHECK(check_variable(c, 0));
  if (!c->in[1].present) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 1 (the value) is omitted");
  if (ge_infer_has_input(c, 0) && ge_infer_has_input(c, 1)) {
    const ge_type *v = c->in[0].type, *x = c->in[1].type;
    if (v->dtype != x->dtype)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "the variable is %s but the value is %s",
                           ge_dtype_name(v->dtype), ge_dtype_name(x->dtype));
    if (strcmp(c->node->op_type, "Assign") &&
        (v->dtype == GE_BOOL || v->dtype == GE_STRING))
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input 0 has dtype %s, which %s cannot add to",
                           ge_dtype_name(v->dtype), c->node->op_type);
    if (ge_shape_is_static(&v->shape) && ge_shape_is_static(&x->shape) &&
        !ge_shape_equal(&v->shape, &x->shape)) {
      char a[160], b[160];
      return ge_infer_fail(c, GE_ERR_SHAPE, "the variable has shape %s but the value has shape %s",
                           ge_shape_str(&v->shape, c->graph, a, sizeof a),
                           ge_shape_str(&x->shape, c->graph, b, sizeof b));
    }
  }
  if (c->n_out) ge_infer_copy(c, 0, 0);
  return GE_OK;
}

const ge_op_schema ge_schemas_ge[] = {
    {"ai.ge", "Summary", 1, 0, 1, 1, 0, 1, infer_summary},
    {"ai.ge", "Save", 1, 0, 1, GE_VARIADIC, 0, 0, infer_save},
    {"ai.ge", "Callback", 1, 0, 1, GE_VARIADIC, 0, 0, infer_callback},
    {"ai.ge", "Assign", 1, 0, 2, 2, 0, 1, infer_assign},
    {"ai.ge", "AssignAdd", 1, 0, 2, 2, 0, 1, infer_assign},
    {"ai.ge", "AssignSub", 1, 0, 2, 2, 0, 1, infer_assign},
    {0},
};
