/* Operand geometry of ai.ge::Attention, shared by its reference and fast kernels. */
#include "backend/cpu/attention_geom.h"

#include <string.h>

/* Strides (in elements) of tensor t's batch dims right-aligned to an output batch shape of
   rank rb (0 where t broadcasts); false when t's dims do not broadcast to it. */
static bool batch_strides(const ge_tensor *t, int32_t tail, const int64_t *ob, int32_t rb,
                          size_t *str) {
  size_t st = 1;
  for (int32_t d = t->rank - 1; d >= t->rank - tail; d--) st *= (size_t)t->dims[d];
  for (int32_t d = 0; d < rb; d++) str[d] = 0;
  int32_t tb = t->rank - tail;
  for (int32_t d = tb - 1; d >= 0; d--) {
    int32_t od = d + (rb - tb);
    if (od < 0) return false;
    if (t->dims[d] != 1 && t->dims[d] != ob[od]) return false;
    str[od] = t->dims[d] == 1 ? 0 : st;
    st *= (size_t)t->dims[d];
  }
  return true;
}

ge_status ge_attn_geom_init(const ge_kctx *ctx, ge_attn_geom *geo) {
  const ge_tensor *Q = ctx->in[0], *K = ctx->in[1], *V = ctx->in[2];
  const ge_tensor *Mk = ctx->n_in > 3 ? ctx->in[3] : NULL;
  const ge_tensor *Y = ctx->n_out ? ctx->out[0] : NULL;
  if (!Q || !K || !V || !Y) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "Q, KT and V are required");
  if (Q->rank < 2 || K->rank < 2 || V->rank < 2)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "Q, KT and V must have rank >= 2 (got %d, %d, %d)", Q->rank,
                        K->rank, V->rank);
  size_t M = (size_t)Q->dims[Q->rank - 2], D = (size_t)Q->dims[Q->rank - 1];
  size_t N = (size_t)K->dims[K->rank - 1], Dv = (size_t)V->dims[V->rank - 1];
  if ((size_t)K->dims[K->rank - 2] != D || (size_t)V->dims[V->rank - 2] != N)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inner dimensions of Q [.., %zu, %zu], KT [.., %lld, %zu] and V [.., %lld, %zu] do not agree",
                        M, D, (long long)K->dims[K->rank - 2], N, (long long)V->dims[V->rank - 2], Dv);
  /* the output's batch dims: the broadcast of Q's, KT's and V's (Y was allocated so) */
  int32_t rb = Y->rank - 2;
  if (rb < 0 || (size_t)Y->dims[Y->rank - 2] != M || (size_t)Y->dims[Y->rank - 1] != Dv)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output shape does not match Q and V");
  const int64_t *ob = Y->dims;
  size_t *qs = geo->qs, *ks = geo->ks, *vs = geo->vs, *ms = geo->ms;
  memset(geo, 0, sizeof *geo);
  if (!batch_strides(Q, 2, ob, rb, qs) || !batch_strides(K, 2, ob, rb, ks) || !batch_strides(V, 2, ob, rb, vs))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "batch dims of Q, KT and V do not broadcast to the output's");
  size_t m_row = 0, m_col = 0;
  if (Mk) {
    /* right-aligned to [batch.., M, N]; it must not enlarge the scores */
    int32_t mr = Mk->rank;
    if (mr > rb + 2) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 3 (Mask) has rank %d > %d", mr, rb + 2);
    size_t st = 1;
    for (int32_t d = mr - 1; d >= 0; d--) {
      int32_t sd = d + (rb + 2 - mr);
      int64_t want = sd == rb + 1 ? (int64_t)N : sd == rb ? (int64_t)M : ob[sd];
      if (Mk->dims[d] != 1 && Mk->dims[d] != want)
        return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 3 (Mask) dim %d is %lld, not broadcastable to %lld",
                            d, (long long)Mk->dims[d], (long long)want);
      size_t v = Mk->dims[d] == 1 ? 0 : st;
      if (sd == rb + 1) m_col = v;
      else if (sd == rb) m_row = v;
      else ms[sd] = v;
      st *= (size_t)Mk->dims[d];
    }
  }
  size_t batch = 1;
  for (int32_t d = 0; d < rb; d++) batch *= (size_t)ob[d];
  geo->M = M, geo->N = N, geo->D = D, geo->Dv = Dv, geo->batch = batch;
  geo->rb = rb, geo->ob = ob, geo->m_row = m_row, geo->m_col = m_col;
  return GE_OK;
}
