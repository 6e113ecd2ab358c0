/* Inference driver and the helpers infer functions share. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/op.h"

ge_status ge_infer_fail(const ge_infer_ctx *c, ge_status st, const char *fmt, ...) {
  char msg[768], where[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ge_error(st, "%s: %s", ge_node_desc(c->node, where, sizeof where), msg);
}

void ge_shape_set_unknown(ge_shape *s) {
  memset(s, 0, sizeof *s);
  s->rank = GE_RANK_UNKNOWN;
}

void ge_infer_copy(ge_infer_ctx *c, size_t out_i, size_t in_j) {
  if (out_i >= c->n_out) return;
  if (in_j < c->n_in && c->in[in_j].present && c->in[in_j].type) {
    c->out[out_i] = *c->in[in_j].type;
  } else {
    c->out[out_i].kind = GE_TYPE_TENSOR;
    c->out[out_i].dtype = GE_DTYPE_COUNT;
    ge_shape_set_unknown(&c->out[out_i].shape);
  }
}

void ge_infer_set(ge_infer_ctx *c, size_t out_i, ge_dtype dt, const ge_shape *s) {
  if (out_i >= c->n_out) return;
  c->out[out_i].kind = GE_TYPE_TENSOR;
  c->out[out_i].dtype = dt;
  c->out[out_i].elem_is_seq = false;
  if (s)
    c->out[out_i].shape = *s;
  else
    ge_shape_set_unknown(&c->out[out_i].shape);
}

bool ge_infer_has_input(const ge_infer_ctx *c, size_t i) {
  return i < c->n_in && c->in[i].present && c->in[i].type && c->in[i].type->dtype != GE_DTYPE_COUNT;
}

bool ge_infer_const_ints(const ge_infer_ctx *c, size_t i, int64_t *dst, size_t cap, size_t *n) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].value) return false;
  const ge_tensor *t = c->in[i].value;
  if (!ge_dtype_is_int(t->dtype) || t->numel > cap) return false;
  for (size_t k = 0; k < t->numel; k++) dst[k] = ge_tensor_get_i64(t, k);
  *n = t->numel;
  return true;
}

ge_status ge_infer_axis(const ge_infer_ctx *c, int64_t axis, int64_t rank, int64_t *out) {
  if (axis < -rank || axis >= rank)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %lld",
                         (long long)axis, (long long)rank);
  *out = axis < 0 ? axis + rank : axis;
  return GE_OK;
}

ge_status ge_infer_check_dtype(const ge_infer_ctx *c, size_t i, const ge_dtype *allowed) {
  if (!ge_infer_has_input(c, i)) return GE_OK;
  ge_dtype dt = c->in[i].type->dtype;
  for (const ge_dtype *a = allowed; *a != GE_DTYPE_COUNT; a++)
    if (*a == dt) return GE_OK;
  return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input %zu has dtype %s, which this op does not take",
                       i, ge_dtype_name(dt));
}

ge_status ge_op_infer(ge_infer_ctx *c) {
  const ge_node *n = c->node;
  const ge_op_schema *s = ge_op_find_schema(n->domain, n->op_type, c->opset);
  if (!s) {
    const ge_op_schema *any = NULL;
    for (size_t i = 0, cnt = ge_op_schema_count(); i < cnt && !any; i++) {
      const ge_op_schema *x = ge_op_schema_at(i);
      if (!strcmp(x->name, n->op_type)) any = x;
    }
    if (any)
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED,
                           "op %s%s%s is not supported at opset %lld", n->domain[0] ? n->domain : "",
                           n->domain[0] ? "::" : "", n->op_type, (long long)c->opset);
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "unknown op %s%s%s (domain '%s')",
                         n->domain[0] ? n->domain : "", n->domain[0] ? "::" : "", n->op_type,
                         n->domain[0] ? n->domain : "ai.onnx");
  }
  size_t n_in = c->n_in;
  while (n_in > 0 && !c->in[n_in - 1].present) n_in--; /* trailing omitted inputs */
  if (n_in < s->min_in || (s->max_in != GE_VARIADIC && n_in > s->max_in)) {
    if (s->max_in == GE_VARIADIC)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "takes at least %u inputs, got %zu",
                           s->min_in, n_in);
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "takes %u to %u inputs, got %zu",
                         s->min_in, s->max_in, n_in);
  }
  if (c->n_out < s->min_out || (s->max_out != GE_VARIADIC && c->n_out > s->max_out))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "takes %u to %u outputs, got %zu",
                         s->min_out, s->max_out, c->n_out);
  for (size_t i = 0; i < c->n_out; i++) {
    c->out[i].kind = GE_TYPE_TENSOR;
    c->out[i].dtype = GE_DTYPE_COUNT;
    ge_shape_set_unknown(&c->out[i].shape);
  }
  return s->infer ? s->infer(c) : GE_OK;
}
