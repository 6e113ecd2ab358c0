/* Schemas of the rnn family: RNN, GRU, LSTM. */
#include <string.h>

#include "ops/op.h"

static const ge_dtype float_types[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};

static const ge_shape *in_shape(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type ||
      c->in[i].type->kind != GE_TYPE_TENSOR || c->in[i].type->shape.rank == GE_RANK_UNKNOWN)
    return NULL;
  return &c->in[i].type->shape;
}

static ge_status infer_rnn(ge_infer_ctx *c) {
  const ge_node *n = c->node;
  int64_t gates = !strcmp(n->op_type, "LSTM") ? 4 : !strcmp(n->op_type, "GRU") ? 3 : 1;
  for (size_t i = 0; i < c->n_in && i < 8; i++)
    if (i != 4) GE_CHECK(ge_infer_check_dtype(c, i, float_types));
  GE_CHECK(ge_infer_check_dtype(c, 4, (const ge_dtype[]){GE_I32, GE_DTYPE_COUNT}));
  ge_dtype dt = ge_infer_has_input(c, 0) ? c->in[0].type->dtype : GE_DTYPE_COUNT;
  const char *dir = ge_node_attr_string(n, "direction", "forward");
  int64_t nd;
  if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
    nd = 1;
  else if (!strcmp(dir, "bidirectional"))
    nd = 2;
  else
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "direction '%s' is not forward, reverse or bidirectional", dir);
  int64_t layout = c->opset >= 14 ? ge_node_attr_int(n, "layout", 0) : 0;
  if (layout != 0 && layout != 1)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "layout must be 0 or 1, got %lld", (long long)layout);
  int64_t hidden = ge_node_attr_int(n, "hidden_size", -1);
  const ge_shape *xs = in_shape(c, 0), *ws = in_shape(c, 1), *rs = in_shape(c, 2);
  if (xs && xs->rank != 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (X) must have rank 3, has %d", (int)xs->rank);
  if (ws && ws->rank != 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (W) must have rank 3, has %d", (int)ws->rank);
  if (rs && rs->rank != 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 2 (R) must have rank 3, has %d", (int)rs->rank);
  if (ws && ws->dims[0] >= 0 && ws->dims[0] != nd)
    return ge_infer_fail(c, GE_ERR_SHAPE, "W dim 0 is %lld but direction '%s' needs %lld",
                         (long long)ws->dims[0], dir, (long long)nd);
  if (hidden < 0 && ws && ws->dims[1] >= 0) hidden = ws->dims[1] / gates;
  if (hidden < 0 && rs && rs->dims[2] >= 0) hidden = rs->dims[2];
  if (hidden >= 0 && ws && ws->dims[1] >= 0 && ws->dims[1] != gates * hidden)
    return ge_infer_fail(c, GE_ERR_SHAPE, "W dim 1 is %lld, expected %lld x hidden_size %lld",
                         (long long)ws->dims[1], (long long)gates, (long long)hidden);
  if (hidden >= 0 && xs && ws && xs->dims[2] >= 0 && ws->dims[2] >= 0 && xs->dims[2] != ws->dims[2])
    return ge_infer_fail(c, GE_ERR_SHAPE, "X has input size %lld but W has %lld",
                         (long long)xs->dims[2], (long long)ws->dims[2]);
  int64_t seq = GE_DIM_UNKNOWN, batch = GE_DIM_UNKNOWN;
  if (xs) {
    seq = xs->dims[layout ? 1 : 0];
    batch = xs->dims[layout ? 0 : 1];
  }
  int64_t h = hidden >= 0 ? hidden : GE_DIM_UNKNOWN;
  ge_shape y = {.rank = 4}, yh = {.rank = 3};
  if (layout == 0) {
    y.dims[0] = seq; y.dims[1] = nd; y.dims[2] = batch; y.dims[3] = h;
    yh.dims[0] = nd; yh.dims[1] = batch; yh.dims[2] = h;
  } else {
    y.dims[0] = batch; y.dims[1] = seq; y.dims[2] = nd; y.dims[3] = h;
    yh.dims[0] = batch; yh.dims[1] = nd; yh.dims[2] = h;
  }
  ge_infer_set(c, 0, dt, &y);
  ge_infer_set(c, 1, dt, &yh);
  ge_infer_set(c, 2, dt, &yh);
  return GE_OK;
}

const ge_op_schema ge_schemas_rnn[] = {
    {"", "RNN", 7, 0, 3, 6, 0, 2, infer_rnn},
    {"", "GRU", 7, 0, 3, 6, 0, 2, infer_rnn},
    {"", "LSTM", 7, 0, 3, 8, 0, 3, infer_rnn},
    {0},
};
