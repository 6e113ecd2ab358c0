/* Schemas of the random family: RandomNormal, RandomUniform, RandomNormalLike,
 * RandomUniformLike, Bernoulli, Multinomial. */
#include <string.h>

#include "ops/op.h"

static const ge_dtype real_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};

/* The dtype attribute (ONNX code) or dflt when absent; error when not one of allowed. */
static ge_status attr_dtype(ge_infer_ctx *c, ge_dtype dflt, const ge_dtype *allowed,
                            ge_dtype *out) {
  const ge_attr_value *a = ge_node_attr(c->node, "dtype");
  *out = dflt;
  if (a) {
    if (!ge_dtype_from_onnx((int32_t)a->i, out))
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "dtype %lld is not supported", (long long)a->i);
  }
  if (*out == GE_DTYPE_COUNT) return GE_OK;
  for (const ge_dtype *d = allowed; *d != GE_DTYPE_COUNT; d++)
    if (*d == *out) return GE_OK;
  return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "output dtype %s is not supported",
                       ge_dtype_name(*out));
}

static ge_status infer_random(ge_infer_ctx *c) {
  ge_dtype dt;
  GE_CHECK(attr_dtype(c, GE_F32, real_types, &dt));
  const int64_t *shape;
  size_t rank;
  if (!ge_node_attr_ints(c->node, "shape", &shape, &rank))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'shape' is required");
  if (rank > GE_MAX_RANK)
    return ge_infer_fail(c, GE_ERR_SHAPE, "shape has rank %zu (max %d)", rank, GE_MAX_RANK);
  ge_shape s;
  s.rank = (int32_t)rank;
  for (size_t i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return ge_infer_fail(c, GE_ERR_SHAPE, "shape[%zu] = %lld is negative", i, (long long)shape[i]);
    s.dims[i] = shape[i];
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_random_like(ge_infer_ctx *c) {
  ge_dtype in = ge_infer_has_input(c, 0) ? c->in[0].type->dtype : GE_DTYPE_COUNT;
  ge_dtype dt;
  GE_CHECK(attr_dtype(c, in, real_types, &dt));
  if (!ge_infer_has_input(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  ge_infer_set(c, 0, dt, &c->in[0].type->shape);
  return GE_OK;
}

static ge_status infer_bernoulli(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, real_types));
  ge_dtype in = ge_infer_has_input(c, 0) ? c->in[0].type->dtype : GE_DTYPE_COUNT;
  static const ge_dtype out_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8, GE_I16, GE_I32,
                                       GE_I64, GE_U8,  GE_U16, GE_U32,  GE_U64, GE_BOOL,
                                       GE_DTYPE_COUNT};
  ge_dtype dt;
  GE_CHECK(attr_dtype(c, in, out_types, &dt));
  if (!ge_infer_has_input(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  ge_infer_set(c, 0, dt, &c->in[0].type->shape);
  return GE_OK;
}

static ge_status infer_multinomial(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, real_types));
  ge_dtype dt;
  GE_CHECK(attr_dtype(c, GE_I32, (const ge_dtype[]){GE_I32, GE_I64, GE_DTYPE_COUNT}, &dt));
  int64_t k = ge_node_attr_int(c->node, "sample_size", 1);
  if (k < 1) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "sample_size must be >= 1");
  ge_shape s;
  s.rank = 2;
  s.dims[0] = GE_DIM_UNKNOWN;
  s.dims[1] = k;
  if (ge_infer_has_input(c, 0) && c->in[0].type->shape.rank != GE_RANK_UNKNOWN) {
    if (c->in[0].type->shape.rank != 2)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must be [batch, classes] (rank %d given)",
                           (int)c->in[0].type->shape.rank);
    s.dims[0] = c->in[0].type->shape.dims[0];
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

const ge_op_schema ge_schemas_random[] = {
    {"", "RandomNormal", 1, 0, 0, 0, 1, 1, infer_random},
    {"", "RandomUniform", 1, 0, 0, 0, 1, 1, infer_random},
    {"", "RandomNormalLike", 1, 0, 1, 1, 1, 1, infer_random_like},
    {"", "RandomUniformLike", 1, 0, 1, 1, 1, 1, infer_random_like},
    {"", "Bernoulli", 15, 0, 1, 1, 1, 1, infer_bernoulli},
    {"", "Multinomial", 7, 0, 1, 1, 1, 1, infer_multinomial},
    {0},
};
