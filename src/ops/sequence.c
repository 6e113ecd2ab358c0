/* Sequence and optional schemas: SequenceEmpty/Construct/At/Insert/Erase/Length,
 * SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement,
 * OptionalGetElement. */
#include <string.h>

#include "ops/op.h"

static void set_kind(ge_infer_ctx *c, size_t o, ge_type_kind kind, ge_dtype dt, const ge_shape *s) {
  memset(&c->out[o], 0, sizeof c->out[o]);
  c->out[o].kind = kind;
  c->out[o].dtype = dt;
  if (s) c->out[o].shape = *s;
  else ge_shape_set_unknown(&c->out[o].shape);
}

static const ge_type *in_type(const ge_infer_ctx *c, size_t i) {
  return i < c->n_in && c->in[i].present ? c->in[i].type : NULL;
}

static ge_status need_kind(const ge_infer_ctx *c, size_t i, ge_type_kind kind, const char *what) {
  const ge_type *t = in_type(c, i);
  if (t && t->kind != kind && t->kind != GE_TYPE_UNKNOWN)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu must be a %s", i, what);
  return GE_OK;
}

static ge_status infer_seq_empty(ge_infer_ctx *c) {
  ge_dtype dt = GE_F32;
  const ge_attr_value *a = ge_node_attr(c->node, "dtype");
  if (a && a->kind == GE_ATTR_KIND_INT && !ge_dtype_from_onnx((int32_t)a->i, &dt))
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "dtype %lld is not supported", (long long)a->i);
  set_kind(c, 0, GE_TYPE_SEQUENCE, dt, NULL);
  return GE_OK;
}

static ge_status infer_seq_construct(ge_infer_ctx *c) {
  const ge_type *t0 = in_type(c, 0);
  ge_shape s = t0 ? t0->shape : (ge_shape){.rank = GE_RANK_UNKNOWN};
  for (size_t i = 0; i < c->n_in; i++) {
    const ge_type *t = in_type(c, i);
    if (!t) continue;
    if (t->kind != GE_TYPE_TENSOR) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu must be a tensor", i);
    if (t0 && t->dtype != t0->dtype && t->dtype != GE_DTYPE_COUNT && t0->dtype != GE_DTYPE_COUNT)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu has dtype %s, input 0 %s", i,
                           ge_dtype_name(t->dtype), ge_dtype_name(t0->dtype));
    if (s.rank != t->shape.rank) ge_shape_set_unknown(&s);
    else
      for (int32_t d = 0; d < s.rank; d++)
        if (s.dims[d] != t->shape.dims[d]) s.dims[d] = GE_DIM_UNKNOWN;
  }
  set_kind(c, 0, GE_TYPE_SEQUENCE, t0 ? t0->dtype : GE_DTYPE_COUNT, &s);
  return GE_OK;
}

static ge_status infer_seq_at(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_SEQUENCE, "sequence"));
  const ge_type *t = in_type(c, 0);
  set_kind(c, 0, GE_TYPE_TENSOR, t ? t->dtype : GE_DTYPE_COUNT, t ? &t->shape : NULL);
  return GE_OK;
}

static ge_status infer_seq_insert(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_SEQUENCE, "sequence"));
  GE_CHECK(need_kind(c, 1, GE_TYPE_TENSOR, "tensor"));
  const ge_type *s = in_type(c, 0), *t = in_type(c, 1);
  ge_shape sh = s ? s->shape : (ge_shape){.rank = GE_RANK_UNKNOWN};
  if (t && sh.rank != t->shape.rank) ge_shape_set_unknown(&sh);
  else if (t)
    for (int32_t d = 0; d < sh.rank; d++)
      if (sh.dims[d] != t->shape.dims[d]) sh.dims[d] = GE_DIM_UNKNOWN;
  set_kind(c, 0, GE_TYPE_SEQUENCE, s && s->dtype != GE_DTYPE_COUNT ? s->dtype : t ? t->dtype : GE_DTYPE_COUNT, &sh);
  return GE_OK;
}

static ge_status infer_seq_same(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_SEQUENCE, "sequence"));
  ge_infer_copy(c, 0, 0);
  c->out[0].kind = GE_TYPE_SEQUENCE;
  return GE_OK;
}

static ge_status infer_seq_length(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_SEQUENCE, "sequence"));
  ge_shape s = {.rank = 0};
  set_kind(c, 0, GE_TYPE_TENSOR, GE_I64, &s);
  return GE_OK;
}

static ge_status infer_split_to_seq(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_TENSOR, "tensor"));
  const ge_type *t = in_type(c, 0);
  ge_shape s;
  ge_shape_set_unknown(&s);
  if (t && t->shape.rank >= 0) {
    int64_t ax = 0;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", 0), t->shape.rank, &ax));
    s = t->shape;
    s.dims[ax] = GE_DIM_UNKNOWN;
    if (!in_type(c, 1) && ge_node_attr_int(c->node, "keepdims", 1) == 0) {
      for (int32_t d = (int32_t)ax; d + 1 < s.rank; d++) s.dims[d] = s.dims[d + 1];
      s.rank--;
    }
  }
  set_kind(c, 0, GE_TYPE_SEQUENCE, t ? t->dtype : GE_DTYPE_COUNT, &s);
  return GE_OK;
}

static ge_status infer_concat_from_seq(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_SEQUENCE, "sequence"));
  const ge_type *t = in_type(c, 0);
  ge_shape s;
  ge_shape_set_unknown(&s);
  if (t && t->shape.rank >= 0) {
    int32_t r = t->shape.rank + (ge_node_attr_int(c->node, "new_axis", 0) ? 1 : 0);
    if (r > GE_MAX_RANK) return ge_infer_fail(c, GE_ERR_SHAPE, "too many dims");
    int64_t ax = 0;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", 0), r, &ax));
    s.rank = r;
    for (int32_t d = 0; d < r; d++) s.dims[d] = GE_DIM_UNKNOWN;
  }
  set_kind(c, 0, GE_TYPE_TENSOR, t ? t->dtype : GE_DTYPE_COUNT, &s);
  return GE_OK;
}

static ge_status infer_seq_map(ge_infer_ctx *c) {
  GE_CHECK(need_kind(c, 0, GE_TYPE_SEQUENCE, "sequence"));
  const ge_attr_value *a = ge_node_attr(c->node, "body");
  const ge_graph *body = a && a->kind == GE_ATTR_KIND_GRAPH ? a->g : NULL;
  if (!body || body->n_outputs != c->n_out)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "needs a body graph with %zu outputs", c->n_out);
  for (size_t o = 0; o < c->n_out; o++) {
    const ge_type *bt = &body->values[body->outputs[o]].type;
    ge_shape s = bt->shape;
    for (int32_t d = 0; d < s.rank; d++)
      if (s.dims[d] < 0) s.dims[d] = GE_DIM_UNKNOWN;
    set_kind(c, o, GE_TYPE_SEQUENCE, bt->dtype, &s);
  }
  return GE_OK;
}

static ge_status infer_optional(ge_infer_ctx *c) {
  const ge_type *t = in_type(c, 0);
  if (t) {
    if (t->kind == GE_TYPE_OPTIONAL) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 is already an optional");
    set_kind(c, 0, GE_TYPE_OPTIONAL, t->dtype, &t->shape);
    c->out[0].elem_is_seq = t->kind == GE_TYPE_SEQUENCE;
    return GE_OK;
  }
  /* an empty optional: its element type is the `type` attribute (a TYPE_PROTO) */
  const ge_attr_value *ta = ge_node_attr(c->node, "type");
  if (ta && ta->type_attr) {
    const ge_type *ty = ta->type_attr;
    if (ty->kind == GE_TYPE_OPTIONAL || ty->kind == GE_TYPE_UNKNOWN)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'type' must be a tensor or sequence type");
    set_kind(c, 0, GE_TYPE_OPTIONAL, ty->dtype, &ty->shape);
    c->out[0].elem_is_seq = ty->kind == GE_TYPE_SEQUENCE;
    return GE_OK;
  }
  set_kind(c, 0, GE_TYPE_OPTIONAL, GE_F32, NULL);
  return GE_OK;
}

static ge_status infer_opt_has(ge_infer_ctx *c) {
  ge_shape s = {.rank = 0};
  set_kind(c, 0, GE_TYPE_TENSOR, GE_BOOL, &s);
  return GE_OK;
}

static ge_status infer_opt_get(ge_infer_ctx *c) {
  const ge_type *t = in_type(c, 0);
  if (!t) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 is missing");
  if (t->kind == GE_TYPE_OPTIONAL) {
    set_kind(c, 0, t->elem_is_seq ? GE_TYPE_SEQUENCE : GE_TYPE_TENSOR, t->dtype, &t->shape);
    return GE_OK;
  }
  if (c->opset < 18) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 must be an optional");
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

const ge_op_schema ge_schemas_sequence[] = {
    {"", "SequenceEmpty", 11, 0, 0, 0, 1, 1, infer_seq_empty},
    {"", "SequenceConstruct", 11, 0, 1, GE_VARIADIC, 1, 1, infer_seq_construct},
    {"", "SequenceAt", 11, 0, 2, 2, 1, 1, infer_seq_at},
    {"", "SequenceInsert", 11, 0, 2, 3, 1, 1, infer_seq_insert},
    {"", "SequenceErase", 11, 0, 1, 2, 1, 1, infer_seq_same},
    {"", "SequenceLength", 11, 0, 1, 1, 1, 1, infer_seq_length},
    {"", "SplitToSequence", 11, 0, 1, 2, 1, 1, infer_split_to_seq},
    {"", "ConcatFromSequence", 11, 0, 1, 1, 1, 1, infer_concat_from_seq},
    {"", "SequenceMap", 17, 0, 1, GE_VARIADIC, 1, GE_VARIADIC, infer_seq_map},
    {"", "Optional", 15, 0, 0, 1, 1, 1, infer_optional},
    {"", "OptionalHasElement", 15, 0, 0, 1, 1, 1, infer_opt_has},
    {"", "OptionalGetElement", 15, 0, 1, 1, 1, 1, infer_opt_get},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, NULL},
};
