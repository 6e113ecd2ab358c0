/* Pooling on the CPU: MaxPool (with Indices), AveragePool, LpPool and the global variants,
 * any spatial rank, computed in float32 (exact for the int8/uint8 MaxPool). */
/* GCC -O2 only vectorises loops whose trip count is known; these loops are not. */
#pragma GCC optimize("vect-cost-model=dynamic")

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/nn_kernels.h"
#include "backend/cpu/ref/nn_util.h"
#include "backend/cpu/threadpool.h"
#include "ops/nn_geom.h"

enum { P_MAX, P_AVG, P_LP };

typedef struct pool_state {
  ge_nn_win_attrs a;
  int kind;
  bool count_include_pad;
  int64_t storage_order;
  float p;
} pool_state;

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};
static const ge_dtype k_maxpool[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8, GE_U8, GE_DTYPE_COUNT};

static int kind_of(const char *op) {
  if (strstr(op, "MaxPool")) return P_MAX;
  if (strstr(op, "AveragePool")) return P_AVG;
  return P_LP;
}

static ge_status pool_state_new(const ge_prepare_ctx *p, void **state, bool global, pool_state **out) {
  pool_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  s->kind = kind_of(p->node->op_type);
  ge_status st = ge_prepare_check_dtype(p, 0, s->kind == P_MAX ? k_maxpool : k_float);
  if (st == GE_OK && !global) st = ge_nn_win_parse(p->node, true, &s->a);
  if (st != GE_OK) {
    free(s);
    return st;
  }
  s->count_include_pad = ge_node_attr_int(p->node, "count_include_pad", 0) != 0;
  s->storage_order = ge_node_attr_int(p->node, "storage_order", 0);
  const ge_attr_value *pa = ge_node_attr(p->node, "p");
  s->p = 2.0f;
  if (pa) s->p = pa->kind == GE_ATTR_KIND_FLOAT ? pa->f : (float)pa->i;
  if (s->kind == P_LP && !(s->p > 0.0f)) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute p must be > 0");
  }
  if (s->storage_order != 0 && s->storage_order != 1) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "storage_order must be 0 or 1");
  }
  *state = s;
  *out = s;
  return GE_OK;
}

ge_status ge_nn_pool_prepare(const ge_prepare_ctx *p, void **state) {
  pool_state *s;
  return pool_state_new(p, state, false, &s);
}
ge_status ge_nn_gpool_prepare(const ge_prepare_ctx *p, void **state) {
  pool_state *s;
  return pool_state_new(p, state, true, &s);
}
void ge_nn_pool_release(void *state) { free(state); }

#define GE_NN_TEMPLATE "backend/cpu/ref/pool_impl.inc"
#include "backend/cpu/ref/nn_real.inc"

ge_status ge_nn_pool_run(const void *state, ge_kctx *ctx) {
  if (ctx->in[0]->dtype == GE_F64) return pool_run_f64(state, ctx);
  return pool_run_f32(state, ctx);
}

ge_status ge_nn_gpool_run(const void *state, ge_kctx *ctx) {
  if (ctx->in[0]->dtype == GE_F64) return gpool_run_f64(state, ctx);
  return gpool_run_f32(state, ctx);
}
