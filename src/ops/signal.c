/* Schemas of the signal family: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
 * MelWeightMatrix. */
#include <string.h>

#include "ops/op.h"

#define END GE_DTYPE_COUNT
static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};
static const ge_dtype int_types[] = {GE_I32, GE_I64, END};

static const ge_shape *in_shape(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type ||
      c->in[i].type->kind != GE_TYPE_TENSOR || c->in[i].type->shape.rank == GE_RANK_UNKNOWN)
    return NULL;
  return &c->in[i].type->shape;
}

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) ? c->in[i].type->dtype : END;
}

/* A scalar integer input known at inference time. */
static bool const_int(const ge_infer_ctx *c, size_t i, int64_t *v) {
  size_t n;
  return ge_infer_const_ints(c, i, v, 1, &n) && n == 1;
}

static ge_status out_dtype_attr(const ge_infer_ctx *c, ge_dtype *dt) {
  int64_t code = ge_node_attr_int(c->node, "output_datatype", 1);
  if (code <= 0 || code > INT32_MAX || !ge_dtype_from_onnx((int32_t)code, dt) || *dt == GE_STRING ||
      *dt == GE_BOOL)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "output_datatype %lld is not a numeric type ge supports",
                         (long long)code);
  return GE_OK;
}

static ge_status infer_window(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, int_types));
  ge_dtype dt;
  GE_CHECK(out_dtype_attr(c, &dt));
  int64_t n;
  ge_shape s = {.rank = 1, .dims = {GE_DIM_UNKNOWN}};
  if (const_int(c, 0, &n)) {
    if (n < 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "size must be >= 0, got %lld", (long long)n);
    s.dims[0] = n;
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_mel(ge_infer_ctx *c) {
  for (size_t i = 0; i < 3; i++) GE_CHECK(ge_infer_check_dtype(c, i, int_types));
  GE_CHECK(ge_infer_check_dtype(c, 3, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 4, float_types));
  ge_dtype dt;
  GE_CHECK(out_dtype_attr(c, &dt));
  int64_t bins, len;
  ge_shape s = {.rank = 2, .dims = {GE_DIM_UNKNOWN, GE_DIM_UNKNOWN}};
  if (const_int(c, 1, &len)) {
    if (len <= 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "dft_length must be > 0, got %lld", (long long)len);
    s.dims[0] = len / 2 + 1;
  }
  if (const_int(c, 0, &bins)) {
    if (bins <= 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "num_mel_bins must be > 0, got %lld", (long long)bins);
    s.dims[1] = bins;
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_dft(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, int_types));
  GE_CHECK(ge_infer_check_dtype(c, 2, (const ge_dtype[]){GE_I64, END}));
  ge_dtype dt = in_dtype(c, 0);
  int64_t inverse = ge_node_attr_int(c->node, "inverse", 0);
  int64_t onesided = ge_node_attr_int(c->node, "onesided", 0);
  const ge_shape *xs = in_shape(c, 0);
  if (!xs) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  int32_t rank = xs->rank;
  if (rank < 2) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 2, has %d", (int)rank);
  if (xs->dims[rank - 1] >= 0 && xs->dims[rank - 1] != 1 && xs->dims[rank - 1] != 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "the last dim of input 0 must be 1 (real) or 2 (complex), is %lld",
                         (long long)xs->dims[rank - 1]);
  int64_t axis;
  bool axis_known = true;
  if (c->opset >= 20) {
    axis = -2;
    if (c->n_in > 2 && c->in[2].present) axis_known = const_int(c, 2, &axis);
  } else {
    axis = ge_node_attr_int(c->node, "axis", 1);
  }
  ge_shape o = *xs;
  o.dims[rank - 1] = inverse && onesided ? 1 : 2;
  if (!axis_known) {
    for (int32_t d = 0; d < rank - 1; d++) o.dims[d] = GE_DIM_UNKNOWN;
    ge_infer_set(c, 0, dt, &o);
    return GE_OK;
  }
  if (axis < -rank || axis >= rank)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, (int)rank);
  if (axis < 0) axis += rank;
  if (axis == rank - 1)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is the real/imaginary dim", (long long)axis);
  int64_t n = GE_DIM_UNKNOWN, dl;
  bool has_len = c->n_in > 1 && c->in[1].present;
  if (has_len) {
    if (const_int(c, 1, &dl)) {
      if (dl <= 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "dft_length must be > 0, got %lld", (long long)dl);
      n = dl;
    }
  } else if (xs->dims[axis] >= 0) {
    n = inverse && onesided ? 2 * (xs->dims[axis] - 1) : xs->dims[axis];
  }
  if (n < 0)
    o.dims[axis] = GE_DIM_UNKNOWN;
  else
    o.dims[axis] = onesided && !inverse ? n / 2 + 1 : n;
  ge_infer_set(c, 0, dt, &o);
  return GE_OK;
}

static ge_status infer_stft(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 1, int_types));
  GE_CHECK(ge_infer_check_dtype(c, 2, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 3, int_types));
  ge_dtype dt = in_dtype(c, 0);
  int64_t onesided = ge_node_attr_int(c->node, "onesided", 1);
  const ge_shape *xs = in_shape(c, 0), *ws = in_shape(c, 2);
  ge_shape o = {.rank = 4, .dims = {GE_DIM_UNKNOWN, GE_DIM_UNKNOWN, GE_DIM_UNKNOWN, 2}};
  if (xs && xs->rank != 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "signal must have rank 3 [batch, length, 1 or 2], has %d", (int)xs->rank);
  if (ws && ws->rank != 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "window must have rank 1, has %d", (int)ws->rank);
  int64_t fl = GE_DIM_UNKNOWN, step;
  bool has_fl = c->n_in > 3 && c->in[3].present;
  if (has_fl) {
    if (!const_int(c, 3, &fl)) fl = GE_DIM_UNKNOWN;
  } else if (ws) {
    fl = ws->dims[0];
  } else if (xs) {
    fl = xs->dims[1];
  }
  if (xs) o.dims[0] = xs->dims[0];
  if (fl >= 0) {
    if (fl == 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "frame_length must be > 0");
    o.dims[2] = onesided ? fl / 2 + 1 : fl;
  }
  if (const_int(c, 1, &step)) {
    if (step <= 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "frame_step must be > 0, got %lld", (long long)step);
    if (fl >= 0 && xs && xs->dims[1] >= 0) {
      if (xs->dims[1] < fl)
        return ge_infer_fail(c, GE_ERR_SHAPE, "signal length %lld is shorter than frame_length %lld",
                             (long long)xs->dims[1], (long long)fl);
      o.dims[1] = 1 + (xs->dims[1] - fl) / step;
    }
  }
  ge_infer_set(c, 0, dt, &o);
  return GE_OK;
}

const ge_op_schema ge_schemas_signal[] = {
    {"", "HannWindow", 17, 0, 1, 1, 1, 1, infer_window},
    {"", "HammingWindow", 17, 0, 1, 1, 1, 1, infer_window},
    {"", "BlackmanWindow", 17, 0, 1, 1, 1, 1, infer_window},
    {"", "MelWeightMatrix", 17, 0, 5, 5, 1, 1, infer_mel},
    {"", "DFT", 17, 19, 1, 2, 1, 1, infer_dft},
    {"", "DFT", 20, 0, 1, 3, 1, 1, infer_dft},
    {"", "STFT", 17, 0, 2, 4, 1, 1, infer_stft},
    {0},
};
