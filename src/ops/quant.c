/* Schemas of the quant family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * QLinearConv, QLinearMatMul, ConvInteger.  (MatMulInteger lives in the nn family.) */
#include <string.h>

#include "ops/nn_geom.h"
#include "ops/op.h"

#define END GE_DTYPE_COUNT

/* QuantizeLinear / DequantizeLinear also take the low-precision dtypes (opset 19+: float8,
   21+: int4/uint4, 23+: float4e2m1, 25+: int2/uint2) */
static const ge_dtype qx_types[] = {GE_I8,         GE_U8,      GE_I16,         GE_U16,
                                    GE_I32,        GE_F8E4M3FN, GE_F8E4M3FNUZ, GE_F8E5M2,
                                    GE_F8E5M2FNUZ, GE_U4,      GE_I4,          GE_F4E2M1,
                                    GE_U2,         GE_I2,      END};
static const ge_dtype q8_types[] = {GE_I8, GE_U8, END};
static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) ? c->in[i].type->dtype : END;
}

static const ge_shape *in_shape(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type ||
      c->in[i].type->kind != GE_TYPE_TENSOR || c->in[i].type->shape.rank == GE_RANK_UNKNOWN)
    return NULL;
  return &c->in[i].type->shape;
}

static bool dim_known(int64_t d) { return d >= 0; }

/* Checks the scale / zero point shapes against x: a scalar (per tensor), a 1-D tensor of
   x.shape[axis] (per axis), or x's rank with ceil(x.shape[axis] / block_size) (blocked). */
static ge_status check_qparam(const ge_infer_ctx *c, size_t i, int64_t axis, int64_t block) {
  const ge_shape *xs = in_shape(c, 0), *ps = in_shape(c, i);
  if (!xs || !ps) return GE_OK;
  size_t numel;
  bool scalar = ps->rank == 0 || (ge_shape_numel(ps, &numel) && numel == 1 && block <= 0);
  if (scalar) return GE_OK;
  int64_t ax;
  GE_CHECK(ge_infer_axis(c, axis, xs->rank, &ax));
  if (block > 0) {
    if (ps->rank != xs->rank)
      return ge_infer_fail(c, GE_ERR_SHAPE,
                           "input %zu must have the rank %d of x for blocked quantization, has %d",
                           i, (int)xs->rank, (int)ps->rank);
    for (int32_t d = 0; d < xs->rank; d++) {
      if (!dim_known(xs->dims[d]) || !dim_known(ps->dims[d])) continue;
      int64_t want = d == ax ? (xs->dims[d] + block - 1) / block : xs->dims[d];
      if (ps->dims[d] != want)
        return ge_infer_fail(c, GE_ERR_SHAPE,
                             "input %zu dim %d is %lld, expected %lld (block_size %lld, axis %lld)",
                             i, (int)d, (long long)ps->dims[d], (long long)want, (long long)block,
                             (long long)ax);
    }
    return GE_OK;
  }
  if (ps->rank != 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu must be a scalar or 1-D (per axis), has rank %d",
                         i, (int)ps->rank);
  if (dim_known(ps->dims[0]) && dim_known(xs->dims[ax]) && ps->dims[0] != xs->dims[ax])
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu has %lld elements but x dim %lld (axis) is %lld",
                         i, (long long)ps->dims[0], (long long)ax, (long long)xs->dims[ax]);
  return GE_OK;
}

static ge_status dtype_attr(const ge_infer_ctx *c, const char *name, ge_dtype *out) {
  int64_t code = ge_node_attr_int(c->node, name, 0);
  if (code == 0) {
    *out = END;
    return GE_OK;
  }
  if (code < 0 || code > INT32_MAX || !ge_dtype_from_onnx((int32_t)code, out))
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "attribute '%s' = %lld is a data type ge does not support",
                         name, (long long)code);
  return GE_OK;
}

static ge_status infer_quantize(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_F32, GE_F16, GE_BF16, GE_I32, END}));
  GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_F32, GE_F16, GE_BF16, END}));
  GE_CHECK(ge_infer_check_dtype(c, 2, qx_types));
  int64_t axis = c->opset >= 13 ? ge_node_attr_int(c->node, "axis", 1) : 1;
  int64_t block = c->opset >= 21 ? ge_node_attr_int(c->node, "block_size", 0) : 0;
  if (block < 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "block_size must be >= 0");
  ge_dtype odt;
  GE_CHECK(dtype_attr(c, "output_dtype", &odt));
  ge_dtype zdt = in_dtype(c, 2);
  bool has_zp = c->n_in > 2 && c->in[2].present;
  if (odt != END) {
    bool ok = false;
    for (const ge_dtype *q = qx_types; *q != END; q++) ok |= *q == odt;
    if (!ok)
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "output_dtype %s is not a quantized type ge supports",
                           ge_dtype_name(odt));
    if (zdt != END && zdt != odt)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                           "output_dtype %s differs from the zero point's dtype %s", ge_dtype_name(odt),
                           ge_dtype_name(zdt));
  }
  GE_CHECK(check_qparam(c, 1, axis, block));
  GE_CHECK(check_qparam(c, 2, axis, block));
  ge_dtype dt = zdt != END ? zdt : odt != END ? odt : has_zp ? END : GE_U8;
  const ge_shape *xs = in_shape(c, 0);
  ge_infer_set(c, 0, dt, xs);
  return GE_OK;
}

static ge_status infer_dequantize(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, qx_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 2, qx_types));
  ge_dtype x = in_dtype(c, 0), z = in_dtype(c, 2);
  if (x != END && z != END && x != z)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "x has dtype %s but x_zero_point has %s",
                         ge_dtype_name(x), ge_dtype_name(z));
  int64_t axis = c->opset >= 13 ? ge_node_attr_int(c->node, "axis", 1) : 1;
  int64_t block = c->opset >= 21 ? ge_node_attr_int(c->node, "block_size", 0) : 0;
  if (block < 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "block_size must be >= 0");
  ge_dtype odt;
  GE_CHECK(dtype_attr(c, "output_dtype", &odt));
  if (odt != END) {
    bool ok = false;
    for (const ge_dtype *q = float_types; *q != END; q++) ok |= *q == odt;
    if (!ok)
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "output_dtype %s is not a float type",
                           ge_dtype_name(odt));
  }
  GE_CHECK(check_qparam(c, 1, axis, block));
  GE_CHECK(check_qparam(c, 2, axis, block));
  ge_dtype dt = odt != END ? odt : c->opset >= 19 ? in_dtype(c, 1) : GE_F32;
  ge_infer_set(c, 0, dt, in_shape(c, 0));
  return GE_OK;
}

static ge_status infer_dynquant(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_F32, END}));
  ge_infer_set(c, 0, GE_U8, in_shape(c, 0));
  ge_shape sc = {.rank = 0};
  ge_infer_set(c, 1, GE_F32, &sc);
  ge_infer_set(c, 2, GE_U8, &sc);
  return GE_OK;
}

/* Output shape of a Conv-like op: x input xi, w input wi. */
static ge_status conv_shape(ge_infer_ctx *c, size_t xi, size_t wi, ge_shape *o) {
  ge_nn_win_attrs a;
  GE_CHECK(ge_nn_win_parse(c->node, false, &a));
  const ge_shape *xs = in_shape(c, xi), *ws = in_shape(c, wi);
  if (!xs || !ws) {
    ge_shape_set_unknown(o);
    return GE_OK;
  }
  if (xs->rank < 3 || ws->rank != xs->rank)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu (x) has rank %d and input %zu (w) rank %d; "
                         "need equal ranks >= 3", xi, (int)xs->rank, wi, (int)ws->rank);
  size_t nsp = (size_t)xs->rank - 2;
  int64_t wk[GE_NN_MAX_SP];
  for (size_t i = 0; i < nsp; i++) wk[i] = dim_known(ws->dims[2 + i]) ? ws->dims[2 + i] : -1;
  GE_CHECK(ge_nn_win_resolve(c->node, &a, nsp, wk));
  if (dim_known(xs->dims[1]) && dim_known(ws->dims[1]) && xs->dims[1] != ws->dims[1] * a.group)
    return ge_infer_fail(c, GE_ERR_SHAPE, "x has %lld channels but w expects %lld x group %lld",
                         (long long)xs->dims[1], (long long)ws->dims[1], (long long)a.group);
  if (dim_known(ws->dims[0]) && ws->dims[0] % a.group)
    return ge_infer_fail(c, GE_ERR_SHAPE, "w has %lld output channels, not divisible by group %lld",
                         (long long)ws->dims[0], (long long)a.group);
  o->rank = xs->rank;
  o->dims[0] = xs->dims[0];
  o->dims[1] = ws->dims[0];
  for (size_t i = 0; i < nsp; i++) {
    o->dims[2 + i] = GE_DIM_UNKNOWN;
    if (dim_known(xs->dims[2 + i]) && a.kernel[i] >= 1)
      GE_CHECK(ge_nn_win_out(c->node, &a, i, xs->dims[2 + i], false, &o->dims[2 + i], NULL, NULL));
  }
  return GE_OK;
}

static ge_status infer_qlinearconv(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 2, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 3, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 5, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 7, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 8, (const ge_dtype[]){GE_I32, END}));
  GE_CHECK(ge_infer_check_dtype(c, 1, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 4, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 6, float_types));
  ge_shape o;
  GE_CHECK(conv_shape(c, 0, 3, &o));
  ge_dtype dt = in_dtype(c, 7);
  ge_infer_set(c, 0, dt != END ? dt : in_dtype(c, 0), &o);
  return GE_OK;
}

static ge_status infer_convinteger(ge_infer_ctx *c) {
  for (size_t i = 0; i < 4; i++) GE_CHECK(ge_infer_check_dtype(c, i, q8_types));
  ge_shape o;
  GE_CHECK(conv_shape(c, 0, 1, &o));
  ge_infer_set(c, 0, GE_I32, &o);
  return GE_OK;
}

static ge_status infer_qlinearmatmul(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 2, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 3, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 5, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 7, q8_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 4, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 6, float_types));
  ge_dtype dt = in_dtype(c, 7);
  if (dt == END) dt = in_dtype(c, 0);
  const ge_shape *sa = in_shape(c, 0), *sb = in_shape(c, 3);
  if (!sa || !sb) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  int32_t ra = sa->rank, rb = sb->rank;
  if (ra < 1 || rb < 1) return ge_infer_fail(c, GE_ERR_SHAPE, "inputs a and b must have rank >= 1");
  int64_t ka = sa->dims[ra - 1], kb = rb >= 2 ? sb->dims[rb - 2] : sb->dims[0];
  if (dim_known(ka) && dim_known(kb) && ka != kb)
    return ge_infer_fail(c, GE_ERR_SHAPE, "inner dimensions differ: a has %lld, b has %lld",
                         (long long)ka, (long long)kb);
  ge_shape ba = {.rank = ra > 2 ? ra - 2 : 0}, bb = {.rank = rb > 2 ? rb - 2 : 0}, o;
  for (int32_t i = 0; i < ba.rank; i++) ba.dims[i] = sa->dims[i];
  for (int32_t i = 0; i < bb.rank; i++) bb.dims[i] = sb->dims[i];
  if (ge_shape_broadcast(&ba, &bb, &o) != GE_OK)
    return ge_infer_fail(c, GE_ERR_SHAPE, "batch dimensions of a and b do not broadcast");
  if (ra >= 2) o.dims[o.rank++] = sa->dims[ra - 2];
  if (rb >= 2) o.dims[o.rank++] = sb->dims[rb - 1];
  ge_infer_set(c, 0, dt, &o);
  return GE_OK;
}

const ge_op_schema ge_schemas_quant[] = {
    {"", "QuantizeLinear", 10, 0, 2, 3, 1, 1, infer_quantize},
    {"", "DequantizeLinear", 10, 0, 2, 3, 1, 1, infer_dequantize},
    {"", "DynamicQuantizeLinear", 11, 0, 1, 1, 3, 3, infer_dynquant},
    {"", "QLinearConv", 10, 0, 8, 9, 1, 1, infer_qlinearconv},
    {"", "QLinearMatMul", 10, 0, 8, 8, 1, 1, infer_qlinearmatmul},
    {"", "ConvInteger", 10, 0, 2, 4, 1, 1, infer_convinteger},
    {0},
};
