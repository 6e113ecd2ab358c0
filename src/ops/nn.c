/* Schemas of the nn family: Gemm, MatMul, Conv, ConvTranspose, pooling, normalisations,
 * softmax-like ops, Dropout, Flatten, Einsum. */
#include <stdio.h>
#include <string.h>

#include "ops/nn_geom.h"
#include "ops/op.h"

#define END GE_DTYPE_COUNT

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};
static const ge_dtype k_matmul[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I32, GE_I64,
                                    GE_U32, GE_U64, GE_I8,  GE_U8,  GE_I16, GE_U16, END};
static const ge_dtype k_maxpool[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8, GE_U8, END};

static bool dim_known(int64_t d) { return d >= 0; }

/* rank of input i, or -1 */
static int32_t in_rank(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type) return GE_RANK_UNKNOWN;
  return c->in[i].type->shape.rank;
}

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) ? c->in[i].type->dtype : GE_DTYPE_COUNT;
}

static const ge_shape *in_shape(const ge_infer_ctx *c, size_t i) { return &c->in[i].type->shape; }

/* Two dims that must agree: unify, or fail naming what. */
static ge_status unify_dim(const ge_infer_ctx *c, int64_t a, int64_t b, int64_t *out, const char *what) {
  if (dim_known(a) && dim_known(b) && a != b)
    return ge_infer_fail(c, GE_ERR_SHAPE, "%s: %lld vs %lld", what, (long long)a, (long long)b);
  *out = dim_known(a) ? a : dim_known(b) ? b : (a <= -2 ? a : b);
  return GE_OK;
}

static ge_status same_dtype(const ge_infer_ctx *c, size_t i, size_t j) {
  ge_dtype a = in_dtype(c, i), b = in_dtype(c, j);
  if (a != END && b != END && a != b)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu has dtype %s but input %zu has %s",
                         j, ge_dtype_name(b), i, ge_dtype_name(a));
  return GE_OK;
}

/* ------------------------------------------------------------------ Gemm / MatMul */

static ge_status infer_gemm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_matmul));
  GE_CHECK(same_dtype(c, 0, 1));
  if (c->n_in > 2 && c->in[2].present) GE_CHECK(same_dtype(c, 0, 2));
  bool ta = ge_node_attr_int(c->node, "transA", 0) != 0;
  bool tb = ge_node_attr_int(c->node, "transB", 0) != 0;
  ge_dtype dt = in_dtype(c, 0);
  if (dt == END) dt = in_dtype(c, 1);
  ge_shape s = {.rank = 2, .dims = {GE_DIM_UNKNOWN, GE_DIM_UNKNOWN}};
  int32_t ra = in_rank(c, 0), rb = in_rank(c, 1);
  if (ra != GE_RANK_UNKNOWN && ra != 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (A) must be 2-D, got rank %d", ra);
  if (rb != GE_RANK_UNKNOWN && rb != 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (B) must be 2-D, got rank %d", rb);
  int64_t ka = GE_DIM_UNKNOWN, kb = GE_DIM_UNKNOWN, k;
  if (ra == 2) {
    s.dims[0] = in_shape(c, 0)->dims[ta ? 1 : 0];
    ka = in_shape(c, 0)->dims[ta ? 0 : 1];
  }
  if (rb == 2) {
    s.dims[1] = in_shape(c, 1)->dims[tb ? 0 : 1];
    kb = in_shape(c, 1)->dims[tb ? 1 : 0];
  }
  GE_CHECK(unify_dim(c, ka, kb, &k, "inner dimensions of A and B differ"));
  if (c->n_in > 2 && c->in[2].present && c->in[2].type) {
    const ge_shape *cs = &c->in[2].type->shape;
    if (cs->rank > 2)
      return ge_infer_fail(c, GE_ERR_SHAPE, "input 2 (C) must have rank <= 2, got %d", cs->rank);
    for (int32_t i = 0; cs->rank != GE_RANK_UNKNOWN && i < cs->rank; i++) {
      int64_t cd = cs->dims[cs->rank - 1 - i], od = s.dims[1 - i];
      if (dim_known(cd) && cd != 1 && dim_known(od) && cd != od)
        return ge_infer_fail(c, GE_ERR_SHAPE,
                             "input 2 (C) dim %d is %lld, not broadcastable to output dim %lld",
                             cs->rank - 1 - i, (long long)cd, (long long)od);
    }
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_matmul(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_matmul));
  GE_CHECK(same_dtype(c, 0, 1));
  ge_dtype dt = in_dtype(c, 0);
  if (dt == END) dt = in_dtype(c, 1);
  int32_t ra = in_rank(c, 0), rb = in_rank(c, 1);
  if (ra == 0 || rb == 0)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %d is a scalar; MatMul needs rank >= 1", ra == 0 ? 0 : 1);
  if (ra == GE_RANK_UNKNOWN || rb == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  const ge_shape *sa = in_shape(c, 0), *sb = in_shape(c, 1);
  int64_t m = ra >= 2 ? sa->dims[ra - 2] : 1, ka = sa->dims[ra - 1];
  int64_t kb = rb >= 2 ? sb->dims[rb - 2] : sb->dims[0], n = rb >= 2 ? sb->dims[rb - 1] : 1, k;
  char what[160];
  snprintf(what, sizeof what, "inner dimensions differ (input 0 dim %d, input 1 dim %d)", ra - 1,
           rb >= 2 ? rb - 2 : 0);
  GE_CHECK(unify_dim(c, ka, kb, &k, what));
  ge_shape ba = {.rank = ra > 2 ? ra - 2 : 0}, bb = {.rank = rb > 2 ? rb - 2 : 0}, bo;
  for (int32_t i = 0; i < ba.rank; i++) ba.dims[i] = sa->dims[i];
  for (int32_t i = 0; i < bb.rank; i++) bb.dims[i] = sb->dims[i];
  if (ge_shape_broadcast(&ba, &bb, &bo) != GE_OK)
    return ge_infer_fail(c, GE_ERR_SHAPE, "batch dimensions of the inputs do not broadcast");
  ge_shape o = bo;
  if (ra >= 2) o.dims[o.rank++] = m;
  if (rb >= 2) o.dims[o.rank++] = n;
  if (o.rank > GE_MAX_RANK) return ge_infer_fail(c, GE_ERR_SHAPE, "result rank too large");
  ge_infer_set(c, 0, dt, &o);
  return GE_OK;
}

static ge_status infer_matmul_integer(ge_infer_ctx *c) {
  static const ge_dtype q8[] = {GE_U8, GE_I8, END};
  for (size_t i = 0; i < c->n_in; i++) GE_CHECK(ge_infer_check_dtype(c, i, q8));
  /* same shape rule as MatMul; the dtypes of A and B may differ */
  ge_type ta, tb;
  ge_infer_input ins[2] = {c->in[0], c->in[1]};
  if (ins[0].type) { ta = *ins[0].type; ta.dtype = GE_F32; ins[0].type = &ta; }
  if (ins[1].type) { tb = *ins[1].type; tb.dtype = GE_F32; ins[1].type = &tb; }
  ge_infer_ctx sub = *c;
  sub.in = ins;
  sub.n_in = 2;
  GE_CHECK(infer_matmul(&sub));
  c->out[0].dtype = GE_I32;
  return GE_OK;
}

/* ------------------------------------------------------------------ Conv / pooling */

/* Spatial output shape for Conv-like and Pool-like ops.
   w_kernel: spatial kernel dims from W (Conv) or NULL. */
static ge_status infer_window(ge_infer_ctx *c, bool is_pool, bool transpose, ge_shape *o) {
  ge_nn_win_attrs a;
  GE_CHECK(ge_nn_win_parse(c->node, is_pool, &a));
  int32_t rx = in_rank(c, 0);
  int32_t rw = is_pool ? GE_RANK_UNKNOWN : in_rank(c, 1);
  if (rx == GE_RANK_UNKNOWN && rw != GE_RANK_UNKNOWN) rx = rw;
  if (rx == GE_RANK_UNKNOWN && a.nsp) rx = (int32_t)a.nsp + 2;
  if (rx == GE_RANK_UNKNOWN) {
    ge_shape_set_unknown(o);
    return GE_OK;
  }
  if (rx < 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (X) must have rank >= 3 (N, C, spatial...), got %d", rx);
  if (rw != GE_RANK_UNKNOWN && rw != rx)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 1 (W) has rank %d but X has rank %d", rw, rx);
  size_t nsp = (size_t)rx - 2;
  int64_t wk[GE_NN_MAX_SP];
  for (size_t i = 0; i < nsp; i++) wk[i] = rw != GE_RANK_UNKNOWN ? in_shape(c, 1)->dims[2 + i] : -1;
  for (size_t i = 0; i < nsp; i++) if (!dim_known(wk[i])) wk[i] = -1;
  GE_CHECK(ge_nn_win_resolve(c->node, &a, nsp, wk));
  if (a.has_kernel && rw != GE_RANK_UNKNOWN)
    for (size_t i = 0; i < nsp; i++)
      if (dim_known(wk[i]) && wk[i] != a.kernel[i])
        return ge_infer_fail(c, GE_ERR_SHAPE, "kernel_shape[%zu] = %lld but W has %lld", i,
                             (long long)a.kernel[i], (long long)wk[i]);
  o->rank = rx;
  const ge_shape *xs = in_rank(c, 0) != GE_RANK_UNKNOWN ? in_shape(c, 0) : NULL;
  o->dims[0] = xs ? xs->dims[0] : GE_DIM_UNKNOWN;
  o->dims[1] = GE_DIM_UNKNOWN;
  if (is_pool) {
    o->dims[1] = xs ? xs->dims[1] : GE_DIM_UNKNOWN;
  } else if (rw != GE_RANK_UNKNOWN) {
    const ge_shape *ws = in_shape(c, 1);
    if (!transpose) {
      o->dims[1] = ws->dims[0];
      if (xs && dim_known(xs->dims[1]) && dim_known(ws->dims[1]) && xs->dims[1] != ws->dims[1] * a.group)
        return ge_infer_fail(c, GE_ERR_SHAPE, "X has %lld channels but W expects %lld (W dim 1 %lld x group %lld)",
                             (long long)xs->dims[1], (long long)(ws->dims[1] * a.group),
                             (long long)ws->dims[1], (long long)a.group);
      if (dim_known(ws->dims[0]) && ws->dims[0] % a.group)
        return ge_infer_fail(c, GE_ERR_SHAPE, "W has %lld output channels, not divisible by group %lld",
                             (long long)ws->dims[0], (long long)a.group);
    } else {
      o->dims[1] = dim_known(ws->dims[1]) ? ws->dims[1] * a.group : GE_DIM_UNKNOWN;
      if (xs && dim_known(xs->dims[1]) && dim_known(ws->dims[0]) && xs->dims[1] != ws->dims[0])
        return ge_infer_fail(c, GE_ERR_SHAPE, "X has %lld channels but W has %lld (dim 0)",
                             (long long)xs->dims[1], (long long)ws->dims[0]);
    }
  }
  for (size_t i = 0; i < nsp; i++) {
    int64_t in = xs ? xs->dims[2 + i] : GE_DIM_UNKNOWN;
    o->dims[2 + i] = GE_DIM_UNKNOWN;
    if (transpose && a.has_output_shape) {
      size_t off = a.n_output_shape == nsp + 2 ? 2 : 0;
      if (a.n_output_shape == nsp || a.n_output_shape == nsp + 2) o->dims[2 + i] = a.output_shape[off + i];
      continue;
    }
    if (!dim_known(in) || a.kernel[i] < 1) continue;
    if (transpose)
      GE_CHECK(ge_nn_convt_out(c->node, &a, i, in, &o->dims[2 + i], NULL, NULL));
    else
      GE_CHECK(ge_nn_win_out(c->node, &a, i, in, is_pool && a.ceil_mode, &o->dims[2 + i], NULL, NULL));
  }
  return GE_OK;
}

static ge_status infer_conv(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(same_dtype(c, 0, 1));
  ge_shape o;
  GE_CHECK(infer_window(c, false, false, &o));
  ge_dtype dt = in_dtype(c, 0);
  ge_infer_set(c, 0, dt == END ? in_dtype(c, 1) : dt, &o);
  return GE_OK;
}

static ge_status infer_convt(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  GE_CHECK(same_dtype(c, 0, 1));
  ge_shape o;
  GE_CHECK(infer_window(c, false, true, &o));
  ge_dtype dt = in_dtype(c, 0);
  ge_infer_set(c, 0, dt == END ? in_dtype(c, 1) : dt, &o);
  return GE_OK;
}

static ge_status infer_pool(ge_infer_ctx *c) {
  bool is_max = !strcmp(c->node->op_type, "MaxPool");
  GE_CHECK(ge_infer_check_dtype(c, 0, is_max ? k_maxpool : k_float));
  ge_shape o;
  GE_CHECK(infer_window(c, true, false, &o));
  ge_infer_set(c, 0, in_dtype(c, 0), &o);
  if (c->n_out > 1) ge_infer_set(c, 1, GE_I64, &o);
  return GE_OK;
}

static ge_status infer_global_pool(ge_infer_ctx *c) {
  bool is_max = !strcmp(c->node->op_type, "GlobalMaxPool");
  GE_CHECK(ge_infer_check_dtype(c, 0, is_max ? k_maxpool : k_float));
  int32_t r = in_rank(c, 0);
  if (r == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, in_dtype(c, 0), NULL);
    return GE_OK;
  }
  if (r < 2) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 2 (N, C, ...), got %d", r);
  ge_shape o = *in_shape(c, 0);
  for (int32_t i = 2; i < r; i++) o.dims[i] = 1;
  ge_infer_set(c, 0, in_dtype(c, 0), &o);
  return GE_OK;
}

/* ------------------------------------------------------------------ normalisations */

/* input i must be 1-D of length equal to dim (when both known) */
static ge_status check_vec(const ge_infer_ctx *c, size_t i, int64_t dim, const char *what) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type) return GE_OK;
  const ge_shape *s = &c->in[i].type->shape;
  if (s->rank == GE_RANK_UNKNOWN) return GE_OK;
  if (s->rank != 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu (%s) must be 1-D, got rank %d", i, what, s->rank);
  if (dim_known(dim) && dim_known(s->dims[0]) && s->dims[0] != dim)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu (%s) has %lld entries, expected %lld", i, what,
                         (long long)s->dims[0], (long long)dim);
  return GE_OK;
}

static int64_t channels(const ge_infer_ctx *c) {
  int32_t r = in_rank(c, 0);
  return r >= 2 ? in_shape(c, 0)->dims[1] : GE_DIM_UNKNOWN;
}

static ge_status infer_batchnorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  int32_t r = in_rank(c, 0);
  if (r != GE_RANK_UNKNOWN && r < 1) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (X) must have rank >= 1");
  int64_t ch = r >= 2 ? in_shape(c, 0)->dims[1] : GE_DIM_UNKNOWN;
  static const char *names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; i++) GE_CHECK(check_vec(c, i, ch, names[i]));
  ge_infer_copy(c, 0, 0);
  ge_shape vs = {.rank = 1, .dims = {ch}};
  for (size_t o = 1; o < c->n_out; o++) {
    size_t src = o <= 2 ? o + 2 : 3;
    ge_dtype dt = in_dtype(c, src);
    ge_infer_set(c, o, dt == END ? in_dtype(c, 0) : dt, &vs);
  }
  return GE_OK;
}

static ge_status infer_instnorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  int32_t r = in_rank(c, 0);
  if (r != GE_RANK_UNKNOWN && r < 3)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 3 (N, C, D1...), got %d", r);
  GE_CHECK(check_vec(c, 1, channels(c), "scale"));
  GE_CHECK(check_vec(c, 2, channels(c), "B"));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_layernorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  ge_infer_copy(c, 0, 0);
  int32_t r = in_rank(c, 0);
  int64_t stash = ge_node_attr_int(c->node, "stash_type", 1);
  ge_dtype sdt = stash == 11 ? GE_F64 : GE_F32;
  if (r == GE_RANK_UNKNOWN) {
    for (size_t o = 1; o < c->n_out; o++) ge_infer_set(c, o, sdt, NULL);
    return GE_OK;
  }
  int64_t axis;
  GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", -1), r, &axis));
  ge_shape s = *in_shape(c, 0);
  for (int32_t i = (int32_t)axis; i < r; i++) s.dims[i] = 1;
  for (size_t o = 1; o < c->n_out; o++) ge_infer_set(c, o, sdt, &s);
  return GE_OK;
}

static ge_status infer_groupnorm(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  int32_t r = in_rank(c, 0);
  if (r != GE_RANK_UNKNOWN && r < 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 2 (N, C, ...), got %d", r);
  const ge_attr_value *ng = ge_node_attr(c->node, "num_groups");
  if (!ng) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute num_groups is required");
  if (ng->i < 1) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "num_groups must be >= 1, got %lld", (long long)ng->i);
  int64_t ch = channels(c);
  if (dim_known(ch) && ch % ng->i)
    return ge_infer_fail(c, GE_ERR_SHAPE, "%lld channels are not divisible by num_groups %lld",
                         (long long)ch, (long long)ng->i);
  int64_t vlen = c->opset >= 21 ? ch : ng->i;
  GE_CHECK(check_vec(c, 1, vlen, "scale"));
  GE_CHECK(check_vec(c, 2, vlen, "bias"));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_float_same(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_lrn(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  const ge_attr_value *sz = ge_node_attr(c->node, "size");
  if (!sz) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute size is required");
  if (sz->i < 1) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute size must be >= 1, got %lld", (long long)sz->i);
  int32_t r = in_rank(c, 0);
  if (r != GE_RANK_UNKNOWN && r < 2) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 2, got %d", r);
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_softmax(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  int32_t r = in_rank(c, 0);
  if (r != GE_RANK_UNKNOWN && r > 0) {
    int64_t axis;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", c->opset >= 13 ? -1 : 1), r, &axis));
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_dropout(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, k_float));
  ge_infer_copy(c, 0, 0);
  if (c->n_out > 1) {
    ge_dtype mdt = c->opset >= 10 ? GE_BOOL : in_dtype(c, 0);
    ge_infer_set(c, 1, mdt, in_rank(c, 0) != GE_RANK_UNKNOWN ? in_shape(c, 0) : NULL);
  }
  return GE_OK;
}

static ge_status infer_flatten(ge_infer_ctx *c) {
  int32_t r = in_rank(c, 0);
  ge_dtype dt = in_dtype(c, 0);
  ge_shape o = {.rank = 2, .dims = {GE_DIM_UNKNOWN, GE_DIM_UNKNOWN}};
  if (r == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, &o);
    return GE_OK;
  }
  int64_t axis = ge_node_attr_int(c->node, "axis", 1);
  if (axis < -r || axis > r)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  const ge_shape *s = in_shape(c, 0);
  int64_t p[2] = {1, 1};
  bool known[2] = {true, true};
  for (int32_t i = 0; i < r; i++) {
    int side = i < axis ? 0 : 1;
    if (!dim_known(s->dims[i])) {
      known[side] = false;
    } else if (__builtin_mul_overflow(p[side], s->dims[i], &p[side])) {
      return ge_infer_fail(c, GE_ERR_SHAPE, "flattened size overflows");
    }
  }
  for (int k = 0; k < 2; k++) {
    o.dims[k] = known[k] ? p[k] : GE_DIM_UNKNOWN;
    if (!known[k] && p[k] == 0) o.dims[k] = 0;
  }
  /* a single symbolic dim on one side carries over */
  for (int side = 0; side < 2; side++) {
    int32_t lo = side ? (int32_t)axis : 0, hi = side ? r : (int32_t)axis, nsym = 0;
    int64_t sym = 0;
    bool others_one = true;
    for (int32_t i = lo; i < hi; i++) {
      if (s->dims[i] <= -2) { nsym++; sym = s->dims[i]; }
      else if (s->dims[i] != 1) others_one = false;
    }
    if (nsym == 1 && others_one) o.dims[side] = sym;
  }
  ge_infer_set(c, 0, dt, &o);
  return GE_OK;
}

/* ------------------------------------------------------------------ Einsum */

#include "ops/nn_einsum.h"

static ge_status infer_einsum(ge_infer_ctx *c) {
  const char *eq = ge_node_attr_string(c->node, "equation", NULL);
  if (!eq) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute equation is required");
  GE_CHECK(ge_infer_check_dtype(c, 0, k_matmul));
  for (size_t i = 1; i < c->n_in; i++) GE_CHECK(same_dtype(c, 0, i));
  int32_t ranks[GE_EINSUM_MAX_OPS];
  if (c->n_in > GE_EINSUM_MAX_OPS) return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "too many operands (%zu)", c->n_in);
  for (size_t i = 0; i < c->n_in; i++) {
    ranks[i] = in_rank(c, i);
    if (ranks[i] == GE_RANK_UNKNOWN) {
      ge_infer_set(c, 0, in_dtype(c, 0), NULL);
      return GE_OK;
    }
  }
  ge_einsum_plan plan;
  char err[256];
  if (ge_einsum_parse(eq, c->n_in, ranks, &plan, err, sizeof err) != GE_OK)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "equation '%s': %s", eq, err);
  int64_t size[GE_EINSUM_MAX_LABELS];
  for (size_t l = 0; l < plan.n_labels; l++) size[l] = GE_DIM_UNKNOWN;
  for (size_t i = 0; i < c->n_in; i++) {
    const ge_shape *s = in_shape(c, i);
    for (int32_t d = 0; d < ranks[i]; d++) {
      int l = plan.op_labels[i][d];
      int64_t v = s->dims[d];
      if (dim_known(v) && v == 1 && plan.label_is_ell[l]) continue; /* broadcast */
      if (dim_known(size[l]) && size[l] == 1 && plan.label_is_ell[l]) { size[l] = v; continue; }
      char what[96];
      snprintf(what, sizeof what, "operand %zu dim %d disagrees on a label's size", i, d);
      GE_CHECK(unify_dim(c, size[l], v, &size[l], what));
    }
  }
  ge_shape o = {.rank = (int32_t)plan.n_out};
  for (size_t d = 0; d < plan.n_out; d++) o.dims[d] = size[plan.out_labels[d]];
  ge_infer_set(c, 0, in_dtype(c, 0), &o);
  return GE_OK;
}

/* ------------------------------------------------------------------ table */

const ge_op_schema ge_schemas_nn[] = {
    {"", "Gemm", 1, 10, 3, 3, 1, 1, infer_gemm},
    {"", "Gemm", 11, 0, 2, 3, 1, 1, infer_gemm},
    {"", "MatMul", 1, 0, 2, 2, 1, 1, infer_matmul},
    {"", "MatMulInteger", 10, 0, 2, 4, 1, 1, infer_matmul_integer},
    {"", "Conv", 1, 0, 2, 3, 1, 1, infer_conv},
    {"", "ConvTranspose", 1, 0, 2, 3, 1, 1, infer_convt},
    {"", "MaxPool", 1, 7, 1, 1, 1, 1, infer_pool},
    {"", "MaxPool", 8, 0, 1, 1, 1, 2, infer_pool},
    {"", "AveragePool", 1, 0, 1, 1, 1, 1, infer_pool},
    {"", "LpPool", 1, 0, 1, 1, 1, 1, infer_pool},
    {"", "GlobalAveragePool", 1, 0, 1, 1, 1, 1, infer_global_pool},
    {"", "GlobalMaxPool", 1, 0, 1, 1, 1, 1, infer_global_pool},
    {"", "GlobalLpPool", 2, 0, 1, 1, 1, 1, infer_global_pool},
    {"", "BatchNormalization", 6, 0, 5, 5, 1, 5, infer_batchnorm}, /* 6: is_test (kernel) */
    {"", "InstanceNormalization", 6, 0, 3, 3, 1, 1, infer_instnorm},
    {"", "LayerNormalization", 17, 0, 2, 3, 1, 3, infer_layernorm},
    {"", "GroupNormalization", 18, 0, 3, 3, 1, 1, infer_groupnorm},
    {"", "LRN", 1, 0, 1, 1, 1, 1, infer_lrn},
    {"", "MeanVarianceNormalization", 9, 0, 1, 1, 1, 1, infer_float_same},
    {"", "Softmax", 1, 0, 1, 1, 1, 1, infer_softmax},
    {"", "LogSoftmax", 1, 0, 1, 1, 1, 1, infer_softmax},
    {"", "Hardmax", 1, 0, 1, 1, 1, 1, infer_softmax},
    {"", "Dropout", 7, 11, 1, 1, 1, 2, infer_dropout},
    {"", "Dropout", 12, 0, 1, 3, 1, 2, infer_dropout},
    {"", "Flatten", 1, 0, 1, 1, 1, 1, infer_flatten},
    {"", "Einsum", 12, 0, 1, GE_VARIADIC, 1, 1, infer_einsum},
    {0},
};
