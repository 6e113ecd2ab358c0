/* Reference CPU kernels of the misc family: SwiGLU, TensorScatter, AffineGrid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernel.h"

static void store_real(void *data, ge_dtype dt, size_t i, double v) {
  switch (dt) {
  case GE_F32: ((float *)data)[i] = (float)v; break;
  case GE_F64: ((double *)data)[i] = v; break;
  case GE_F16: ((uint16_t *)data)[i] = ge_f32_to_f16((float)v); break;
  case GE_BF16: ((uint16_t *)data)[i] = ge_f32_to_bf16((float)v); break;
  default: break;
  }
}

/* ------------------------------------------------------------------ SwiGLU */

static ge_status swiglu_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *a = ctx->in[0], *b = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  if (a->numel != b->numel || a->rank != b->rank || a->dtype != b->dtype || y->numel != a->numel)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inputs must have the same shape and dtype");
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inputs differ in dim %d (%lld vs %lld)", (int)d,
                          (long long)a->dims[d], (long long)b->dims[d]);
  double alpha = ge_node_attr_float(ctx->node, "alpha", 1.0f);
  size_t n = a->numel;
  if (a->dtype == GE_F32) {
    const float *pa = a->data, *pb = b->data;
    float *o = y->data, al = (float)alpha;
    for (size_t i = 0; i < n; i++) o[i] = pa[i] / (1.0f + expf(-al * pa[i])) * pb[i];
  } else if (a->dtype == GE_F64) {
    const double *pa = a->data, *pb = b->data;
    double *o = y->data;
    for (size_t i = 0; i < n; i++) o[i] = pa[i] / (1.0 + exp(-alpha * pa[i])) * pb[i];
  } else {
    for (size_t i = 0; i < n; i++) {
      double x = ge_tensor_get_f64(a, i);
      store_real(y->data, y->dtype, i, x / (1.0 + exp(-alpha * x)) * ge_tensor_get_f64(b, i));
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ TensorScatter */

static ge_status tscatter_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *cache = ctx->in[0], *upd = ctx->in[1];
  const ge_tensor *wi = ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *y = ctx->out[0];
  int32_t r = cache->rank;
  int64_t axis = ge_node_attr_int(ctx->node, "axis", -2);
  bool circular = !strcmp(ge_node_attr_string(ctx->node, "mode", "linear"), "circular");
  if (axis < 0) axis += r;
  if (r < 2 || axis <= 0 || axis >= r || upd->rank != r || upd->dtype != cache->dtype ||
      cache->dtype == GE_STRING)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "past_cache (rank %d, %s) and update (rank %d, %s) do "
                        "not fit axis %lld", (int)r, ge_dtype_name(cache->dtype), (int)upd->rank,
                        ge_dtype_name(upd->dtype), (long long)axis);
  for (int32_t d = 0; d < r; d++)
    if (d == axis ? upd->dims[d] > cache->dims[d] : upd->dims[d] != cache->dims[d])
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "update dim %d (%lld) does not fit past_cache (%lld)",
                          (int)d, (long long)upd->dims[d], (long long)cache->dims[d]);
  if (wi && (wi->numel != (size_t)cache->dims[0] || wi->dtype != GE_I64))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "write_indices must be int64 of the batch size %lld",
                        (long long)cache->dims[0]);
  if (y->data != cache->data && cache->nbytes) memcpy(y->data, cache->data, cache->nbytes);
  size_t es = ge_dtype_size(cache->dtype);
  size_t inner = es, outer = 1;
  for (int32_t d = (int32_t)axis + 1; d < r; d++) inner *= (size_t)cache->dims[d];
  for (int32_t d = 0; d < axis; d++) outer *= (size_t)cache->dims[d];
  size_t per_batch = outer / (cache->dims[0] ? (size_t)cache->dims[0] : 1);
  int64_t max_len = cache->dims[axis], seq = upd->dims[axis];
  for (size_t o = 0; o < outer; o++) {
    size_t b = per_batch ? o / per_batch : 0;
    int64_t start = wi ? ((const int64_t *)wi->data)[b] : 0;
    for (int64_t s = 0; s < seq; s++) {
      int64_t at = start + s;
      if (circular) at = max_len ? ((at % max_len) + max_len) % max_len : 0;
      if (at < 0 || at >= max_len)
        return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT,
                            "write index %lld of batch %zu is outside the cache (%lld entries)",
                            (long long)at, b, (long long)max_len);
      memcpy((char *)y->data + ((o * (size_t)max_len) + (size_t)at) * inner,
             (const char *)upd->data + ((o * (size_t)seq) + (size_t)s) * inner, inner);
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ AffineGrid */

static double grid_coord(int64_t i, int64_t n, bool align) {
  if (align) return n > 1 ? -1.0 + 2.0 * (double)i / (double)(n - 1) : 0.0;
  return -1.0 + (2.0 * (double)i + 1.0) / (double)n;
}

static ge_status affine_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *theta = ctx->in[0], *size = ctx->in[1];
  bool align = ge_node_attr_int(ctx->node, "align_corners", 0) != 0;
  if (size->numel != 4 && size->numel != 5)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "size must hold 4 or 5 values, not %zu", size->numel);
  const int64_t *sz = size->data;
  int nd = (int)size->numel - 2; /* 2 or 3 spatial dims */
  if (theta->rank != 3 || theta->dims[0] != sz[0] || theta->dims[1] != nd || theta->dims[2] != nd + 1)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "theta must be [N, %d, %d] for size N = %lld", nd, nd + 1,
                        (long long)sz[0]);
  int64_t dims[5];
  dims[0] = sz[0];
  for (int i = 0; i < nd; i++) dims[1 + i] = sz[2 + i];
  dims[nd + 1] = nd;
  for (int i = 0; i <= nd; i++)
    if (dims[i] < 0 || dims[i] > ((int64_t)1 << 31))
      return ge_kctx_fail(ctx, GE_ERR_SHAPE, "size value %lld is out of range", (long long)dims[i]);
  GE_CHECK(ge_kctx_alloc_output(ctx, 0, theta->dtype, dims, nd + 2));
  ge_tensor *y = ctx->out[0];
  int64_t D = nd == 3 ? dims[1] : 1, H = dims[nd - 1], W = dims[nd];
  size_t k = 0;
  for (int64_t n = 0; n < dims[0]; n++) {
    double t[12];
    for (int i = 0; i < nd * (nd + 1); i++) t[i] = ge_tensor_get_f64(theta, (size_t)n * (size_t)(nd * (nd + 1)) + (size_t)i);
    for (int64_t z = 0; z < D; z++) {
      double cz = nd == 3 ? grid_coord(z, D, align) : 0.0;
      for (int64_t yy = 0; yy < H; yy++) {
        double cy = grid_coord(yy, H, align);
        for (int64_t x = 0; x < W; x++) {
          double cx = grid_coord(x, W, align);
          for (int r = 0; r < nd; r++) {
            const double *row = t + r * (nd + 1);
            double v = nd == 2 ? row[0] * cx + row[1] * cy + row[2]
                               : row[0] * cx + row[1] * cy + row[2] * cz + row[3];
            store_real(y->data, y->dtype, k++, v);
          }
        }
      }
    }
  }
  return GE_OK;
}

const ge_kernel_def ge_ref_kernels_misc[] = {
    {"", "SwiGLU", 1, 0, {NULL, swiglu_run, NULL, false}},
    {"", "TensorScatter", 24, 0, {NULL, tscatter_run, NULL, false}},
    {"", "AffineGrid", 20, 0, {NULL, affine_run, NULL, true}},
    {0},
};
