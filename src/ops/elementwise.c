/* Schemas of the elementwise family: unary math, activations, binary/variadic ops with numpy
 * broadcasting, Where, Clip, Cast, CastLike. */
#include <math.h>
#include <string.h>

#include "ops/op.h"

#define M(dt) (1u << (dt))
#define M_FLOAT (M(GE_F32) | M(GE_F16) | M(GE_BF16) | M(GE_F64))
#define M_SINT (M(GE_I8) | M(GE_I16) | M(GE_I32) | M(GE_I64))
#define M_UINT (M(GE_U8) | M(GE_U16) | M(GE_U32) | M(GE_U64))
#define M_INT (M_SINT | M_UINT)
#define M_NUM (M_FLOAT | M_INT)
#define M_BOOL M(GE_BOOL)
#define M_ALL (M_NUM | M_BOOL | M(GE_STRING))

/* Per-op facts inference needs: which dtypes input 0 may have, and the output dtype kind. */
enum { OUT_SAME, OUT_BOOL };
typedef struct op_info {
  const char *name;
  unsigned mask;
  int out;
} op_info;

static const op_info infos[] = {
    /* unary */
    {"Abs", M_NUM, OUT_SAME}, {"Neg", M_FLOAT | M_SINT, OUT_SAME},
    {"Reciprocal", M_FLOAT, OUT_SAME}, {"Sqrt", M_FLOAT, OUT_SAME}, {"Exp", M_FLOAT, OUT_SAME},
    {"Log", M_FLOAT, OUT_SAME}, {"Floor", M_FLOAT, OUT_SAME}, {"Ceil", M_FLOAT, OUT_SAME},
    {"Round", M_FLOAT, OUT_SAME}, {"Sign", M_NUM, OUT_SAME}, {"Erf", M_NUM, OUT_SAME},
    {"Sin", M_FLOAT, OUT_SAME}, {"Cos", M_FLOAT, OUT_SAME}, {"Tan", M_FLOAT, OUT_SAME},
    {"Asin", M_FLOAT, OUT_SAME}, {"Acos", M_FLOAT, OUT_SAME}, {"Atan", M_FLOAT, OUT_SAME},
    {"Sinh", M_FLOAT, OUT_SAME}, {"Cosh", M_FLOAT, OUT_SAME}, {"Asinh", M_FLOAT, OUT_SAME},
    {"Acosh", M_FLOAT, OUT_SAME}, {"Atanh", M_FLOAT, OUT_SAME}, {"IsNaN", M_FLOAT, OUT_BOOL},
    {"IsInf", M_FLOAT, OUT_BOOL}, {"Not", M_BOOL, OUT_SAME}, {"BitwiseNot", M_INT, OUT_SAME},
    /* activations */
    {"Relu", M_FLOAT | M_SINT, OUT_SAME}, {"LeakyRelu", M_FLOAT, OUT_SAME},
    {"Sigmoid", M_FLOAT, OUT_SAME}, {"HardSigmoid", M_FLOAT, OUT_SAME},
    {"HardSwish", M_FLOAT, OUT_SAME}, {"Tanh", M_FLOAT, OUT_SAME}, {"Elu", M_FLOAT, OUT_SAME},
    {"Selu", M_FLOAT, OUT_SAME}, {"Celu", M_FLOAT, OUT_SAME}, {"Softplus", M_FLOAT, OUT_SAME},
    {"Softsign", M_FLOAT, OUT_SAME}, {"ThresholdedRelu", M_FLOAT, OUT_SAME},
    {"Gelu", M_FLOAT, OUT_SAME}, {"Mish", M_FLOAT, OUT_SAME}, {"Swish", M_FLOAT, OUT_SAME},
    /* binary */
    {"PRelu", M_FLOAT | M(GE_I32) | M(GE_I64) | M(GE_U32) | M(GE_U64), OUT_SAME},
    {"Add", M_NUM, OUT_SAME}, {"Sub", M_NUM, OUT_SAME}, {"Mul", M_NUM, OUT_SAME},
    {"Div", M_NUM, OUT_SAME}, {"Pow", M_FLOAT | M_INT, OUT_SAME}, {"Mod", M_NUM, OUT_SAME},
    {"BitShift", M_INT, OUT_SAME}, {"BitwiseAnd", M_INT, OUT_SAME},
    {"BitwiseOr", M_INT, OUT_SAME}, {"BitwiseXor", M_INT, OUT_SAME}, {"And", M_BOOL, OUT_BOOL},
    {"Or", M_BOOL, OUT_BOOL}, {"Xor", M_BOOL, OUT_BOOL},
    {"Equal", M_NUM | M_BOOL | M(GE_STRING), OUT_BOOL}, {"Less", M_NUM, OUT_BOOL},
    {"LessOrEqual", M_NUM, OUT_BOOL}, {"Greater", M_NUM, OUT_BOOL},
    {"GreaterOrEqual", M_NUM, OUT_BOOL},
    /* variadic */
    {"Sum", M_NUM, OUT_SAME}, {"Mean", M_FLOAT, OUT_SAME}, {"Max", M_NUM, OUT_SAME},
    {"Min", M_NUM, OUT_SAME},
    /* others */
    {"Clip", M_NUM, OUT_SAME}, {"Where", M_ALL, OUT_SAME}, {"Cast", M_ALL, OUT_SAME},
    {"CastLike", M_ALL, OUT_SAME},
};

static const op_info *find_info(const char *name) {
  for (size_t i = 0; i < sizeof infos / sizeof infos[0]; i++)
    if (!strcmp(infos[i].name, name)) return &infos[i];
  return NULL;
}

static bool known(const ge_infer_ctx *c, size_t i) { return ge_infer_has_input(c, i); }

static ge_status check_mask(const ge_infer_ctx *c, size_t i, unsigned mask) {
  if (!known(c, i)) return GE_OK;
  ge_dtype dt = c->in[i].type->dtype;
  if (dt < GE_DTYPE_COUNT && (mask & M(dt))) return GE_OK;
  return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "input %zu has dtype %s, which %s does not take",
                       i, ge_dtype_name(dt), c->node->op_type);
}

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  return known(c, i) ? c->in[i].type->dtype : GE_DTYPE_COUNT;
}

static const ge_shape *in_shape(const ge_infer_ctx *c, size_t i) {
  static const ge_shape unknown_shape = {.rank = GE_RANK_UNKNOWN};
  if (i < c->n_in && c->in[i].present && c->in[i].type) return &c->in[i].type->shape;
  return &unknown_shape;
}

/* numpy broadcast of the shapes of inputs [first, first+n) that are present. */
static ge_status bcast_inputs(const ge_infer_ctx *c, size_t first, size_t n, ge_shape *out) {
  bool have = false;
  for (size_t i = first; i < first + n && i < c->n_in; i++) {
    if (!c->in[i].present) continue;
    const ge_shape *s = in_shape(c, i);
    if (s->rank == GE_RANK_UNKNOWN) {
      ge_shape_set_unknown(out);
      /* keep checking the others for definite contradictions? unknown wins */
      return GE_OK;
    }
    if (!have) {
      *out = *s;
      have = true;
      continue;
    }
    ge_shape r;
    if (ge_shape_broadcast(out, s, &r) != GE_OK) {
      char a[256], b[256];
      return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu of shape %s does not broadcast with %s",
                           i, ge_shape_str(s, c->graph, a, sizeof a),
                           ge_shape_str(out, c->graph, b, sizeof b));
    }
    *out = r;
  }
  if (!have) ge_shape_set_unknown(out);
  return GE_OK;
}

/* dtypes of inputs [first, first+n) must agree where known; returns the common one. */
static ge_status same_dtype(const ge_infer_ctx *c, size_t first, size_t n, ge_dtype *dt) {
  *dt = GE_DTYPE_COUNT;
  for (size_t i = first; i < first + n && i < c->n_in; i++) {
    ge_dtype d = in_dtype(c, i);
    if (d == GE_DTYPE_COUNT) continue;
    if (*dt == GE_DTYPE_COUNT) {
      *dt = d;
    } else if (d != *dt) {
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                           "input %zu has dtype %s but input %zu has dtype %s", i,
                           ge_dtype_name(d), first, ge_dtype_name(*dt));
    }
  }
  return GE_OK;
}

static ge_status infer_unary(ge_infer_ctx *c) {
  const op_info *in = find_info(c->node->op_type);
  GE_CHECK(check_mask(c, 0, in ? in->mask : M_ALL));
  ge_dtype dt = in_dtype(c, 0);
  if (in && in->out == OUT_BOOL) dt = GE_BOOL;
  if (!strcmp(c->node->op_type, "Gelu")) {
    const char *a = ge_node_attr_string(c->node, "approximate", "none");
    if (strcmp(a, "none") && strcmp(a, "tanh"))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                           "attribute approximate is '%s'; expected 'none' or 'tanh'", a);
  }
  ge_infer_set(c, 0, dt, in_shape(c, 0));
  return GE_OK;
}

/* Binary ops: same dtype for both inputs (Pow: any exponent dtype), numpy broadcasting. */
static ge_status infer_binary(ge_infer_ctx *c) {
  const char *op = c->node->op_type;
  const op_info *in = find_info(op);
  unsigned mask = in ? in->mask : M_ALL;
  ge_dtype dt;
  GE_CHECK(check_mask(c, 0, mask));
  if (!strcmp(op, "Pow")) {
    GE_CHECK(check_mask(c, 1, M_NUM));
    dt = in_dtype(c, 0);
  } else {
    GE_CHECK(check_mask(c, 1, mask));
    GE_CHECK(same_dtype(c, 0, 2, &dt));
  }
  /* Mod with fmod=0 on floats: numpy.mod semantics (the onnx tests since opset 28 use it) */
  if (!strcmp(op, "BitShift")) {
    const char *d = ge_node_attr_string(c->node, "direction", "");
    if (strcmp(d, "LEFT") && strcmp(d, "RIGHT"))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                           "attribute direction is '%s'; expected 'LEFT' or 'RIGHT'", d);
  }
  /* Before opset 7 broadcasting was opt-in (broadcast=1) and input 1 was aligned at `axis` of
     input 0; numpy (trailing) alignment agrees only when axis == rank(A) - rank(B). */
  if (c->opset < 7 && ge_node_attr_int(c->node, "broadcast", 0) && ge_node_attr(c->node, "axis")) {
    int64_t axis = ge_node_attr_int(c->node, "axis", 0);
    int32_t ra = ge_infer_has_input(c, 0) ? c->in[0].type->shape.rank : GE_RANK_UNKNOWN;
    int32_t rb = ge_infer_has_input(c, 1) ? c->in[1].type->shape.rank : GE_RANK_UNKNOWN;
    if (ra != GE_RANK_UNKNOWN && axis < 0) axis += ra;
    if (ra == GE_RANK_UNKNOWN || rb == GE_RANK_UNKNOWN || axis != (int64_t)ra - rb)
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED,
                           "opset %lld broadcast of input 1 (rank %d) at axis %lld of input 0 "
                           "(rank %d) is not numpy broadcasting and is not supported",
                           (long long)c->opset, (int)rb, (long long)axis, (int)ra);
  }
  /* PRelu before opset 7: a slope of shape [C] is per channel (axis 1), as the kernel does */
  if (c->opset < 7 && !strcmp(op, "PRelu") && ge_infer_has_input(c, 0) && ge_infer_has_input(c, 1)) {
    const ge_shape *xs = &c->in[0].type->shape, *ss = &c->in[1].type->shape;
    if (xs->rank > 2 && ss->rank == 1 && ss->dims[0] >= 0 && ss->dims[0] != 1 &&
        ss->dims[0] == xs->dims[1]) {
      ge_infer_set(c, 0, dt, xs);
      return GE_OK;
    }
  }
  ge_shape s;
  GE_CHECK(bcast_inputs(c, 0, 2, &s));
  if (in && in->out == OUT_BOOL) dt = GE_BOOL;
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_variadic(ge_infer_ctx *c) {
  const op_info *in = find_info(c->node->op_type);
  for (size_t i = 0; i < c->n_in; i++) {
    if (!c->in[i].present)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu is omitted", i);
    GE_CHECK(check_mask(c, i, in ? in->mask : M_NUM));
  }
  ge_dtype dt;
  GE_CHECK(same_dtype(c, 0, c->n_in, &dt));
  ge_shape s;
  GE_CHECK(bcast_inputs(c, 0, c->n_in, &s));
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_where(ge_infer_ctx *c) {
  if (known(c, 0) && in_dtype(c, 0) != GE_BOOL)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "condition (input 0) has dtype %s, not bool",
                         ge_dtype_name(in_dtype(c, 0)));
  ge_dtype dt;
  GE_CHECK(same_dtype(c, 1, 2, &dt));
  ge_shape s;
  GE_CHECK(bcast_inputs(c, 0, 3, &s));
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_clip(ge_infer_ctx *c) {
  if (c->opset < 11) {
    GE_CHECK(check_mask(c, 0, M_FLOAT));
    if (c->n_in > 1)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                           "takes min/max as attributes before opset 11, got %zu inputs", c->n_in);
  } else {
    GE_CHECK(check_mask(c, 0, c->opset < 12 ? M_FLOAT : M_NUM));
    ge_dtype dt = in_dtype(c, 0);
    for (size_t i = 1; i < c->n_in; i++) {
      if (!c->in[i].present) continue;
      const ge_shape *s = in_shape(c, i);
      size_t n = 1;
      if (s->rank > 1 || (ge_shape_is_static(s) && ge_shape_numel(s, &n) && n != 1))
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu (%s) must be a scalar", i,
                             i == 1 ? "min" : "max");
      ge_dtype d = in_dtype(c, i);
      if (d != GE_DTYPE_COUNT && dt != GE_DTYPE_COUNT && d != dt)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                             "input %zu (%s) has dtype %s but input 0 has dtype %s", i,
                             i == 1 ? "min" : "max", ge_dtype_name(d), ge_dtype_name(dt));
    }
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_cast(ge_infer_ctx *c) {
  ge_dtype to;
  if (!strcmp(c->node->op_type, "CastLike")) {
    to = in_dtype(c, 1);
  } else {
    const ge_attr_value *a = ge_node_attr(c->node, "to");
    if (!a || a->kind != GE_ATTR_KIND_INT)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'to' (an int) is required");
    if (!ge_dtype_from_onnx((int32_t)a->i, &to))
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "cast to ONNX data type %lld is not supported",
                           (long long)a->i);
  }
  ge_infer_set(c, 0, to, in_shape(c, 0));
  return GE_OK;
}

#define UN(name, since) {"", name, since, 0, 1, 1, 1, 1, infer_unary}
#define BIN(name, since) {"", name, since, 0, 2, 2, 1, 1, infer_binary}
#define VAR(name, since) {"", name, since, 0, 1, GE_VARIADIC, 1, 1, infer_variadic}

const ge_op_schema ge_schemas_elementwise[] = {
    UN("Abs", 1), UN("Neg", 1), UN("Reciprocal", 1), UN("Sqrt", 1), UN("Exp", 1), UN("Log", 1),
    UN("Floor", 1), UN("Ceil", 1), UN("Round", 11), UN("Sign", 9), UN("Erf", 9), UN("Sin", 7),
    UN("Cos", 7), UN("Tan", 7), UN("Asin", 7), UN("Acos", 7), UN("Atan", 7), UN("Sinh", 9),
    UN("Cosh", 9), UN("Asinh", 9), UN("Acosh", 9), UN("Atanh", 9), UN("IsNaN", 9),
    UN("IsInf", 10), UN("Not", 1), UN("BitwiseNot", 18),
    UN("Relu", 1), UN("LeakyRelu", 1), UN("Sigmoid", 1), UN("HardSigmoid", 1),
    UN("HardSwish", 14), UN("Tanh", 1), UN("Elu", 1), UN("Selu", 1), UN("Celu", 12),
    UN("Softplus", 1), UN("Softsign", 1), UN("ThresholdedRelu", 10), UN("Gelu", 20),
    UN("Mish", 18), UN("Swish", 24),
    BIN("PRelu", 1), BIN("Add", 1), BIN("Sub", 1), BIN("Mul", 1), BIN("Div", 1), BIN("Pow", 1),
    BIN("Mod", 10), BIN("BitShift", 11), BIN("BitwiseAnd", 18), BIN("BitwiseOr", 18),
    BIN("BitwiseXor", 18), BIN("And", 1), BIN("Or", 1), BIN("Xor", 1), BIN("Equal", 1),
    BIN("Less", 1), BIN("LessOrEqual", 12), BIN("Greater", 1), BIN("GreaterOrEqual", 12),
    VAR("Sum", 1), VAR("Mean", 1), VAR("Max", 1), VAR("Min", 1),
    {"", "Where", 9, 0, 3, 3, 1, 1, infer_where},
    {"", "Clip", 1, 0, 1, 3, 1, 1, infer_clip},
    {"", "Cast", 1, 0, 1, 1, 1, 1, infer_cast},
    {"", "CastLike", 15, 0, 2, 2, 1, 1, infer_cast},
    {0},
};
