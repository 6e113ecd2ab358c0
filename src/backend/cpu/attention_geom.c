/* Operand geometry of ai.ge::Attention, shared by its reference, fast and oneDNN kernels. */
#include "backend/cpu/attention_geom.h"

#include <math.h>
#include <string.h>

#include "ops/fused.h"

/* The logical dims and element strides of operand t: dense row-major, or for a layout bit
   (rank 4, stored [B, S, H, D]) the permutation perm of the stored dims. */
static bool logical_view(const ge_tensor *t, const int32_t *perm, int64_t *dims, size_t *str) {
  size_t st[GE_MAX_RANK], s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= (size_t)t->dims[d];
  }
  if (!perm) {
    memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
    memcpy(str, st, (size_t)t->rank * sizeof *str);
    return true;
  }
  if (t->rank != 4) return false;
  for (int32_t d = 0; d < 4; d++) {
    dims[d] = t->dims[perm[d]];
    str[d] = st[perm[d]];
  }
  return true;
}

/* Strides of an operand's logical batch dims (rank tb = rank - 2, strides lstr) right-aligned
   to an output batch shape of rank rb (0 where it broadcasts); false when its dims do not
   broadcast to it. */
static bool batch_strides(const int64_t *dims, const size_t *lstr, int32_t tb, const int64_t *ob, int32_t rb,
                          size_t *str) {
  for (int32_t d = 0; d < rb; d++) str[d] = 0;
  for (int32_t d = tb - 1; d >= 0; d--) {
    int32_t od = d + (rb - tb);
    if (od < 0) return false;
    if (dims[d] != 1 && dims[d] != ob[od]) return false;
    str[od] = dims[d] == 1 ? 0 : lstr[d];
  }
  return true;
}

ge_status ge_attn_geom_init(const ge_kctx *ctx, ge_attn_geom *geo) {
  static const int32_t p_q[4] = {0, 2, 1, 3}, p_k[4] = {0, 2, 3, 1};
  const ge_tensor *Q = ctx->in[0], *K = ctx->in[1], *V = ctx->in[2];
  const ge_tensor *Mk = ctx->n_in > 3 ? ctx->in[3] : NULL;
  const ge_tensor *Y = ctx->n_out ? ctx->out[0] : NULL;
  memset(geo, 0, sizeof *geo);
  if (!Q || !K || !V || !Y) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "Q, KT and V are required");
  if (Q->rank < 2 || K->rank < 2 || V->rank < 2)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "Q, KT and V must have rank >= 2 (got %d, %d, %d)", Q->rank,
                        K->rank, V->rank);
  int64_t lay = ctx->node ? ge_node_attr_int(ctx->node, "layout", 0) : 0;
  if (lay < 0 || lay > (int64_t)GE_ATTN_LAYOUT_ALL)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "layout %lld is not a combination of 1, 2, 4, 8",
                        (long long)lay);
  unsigned L = (unsigned)lay;
  int64_t qd[GE_MAX_RANK], kd[GE_MAX_RANK], vd[GE_MAX_RANK], yd[GE_MAX_RANK];
  size_t qst[GE_MAX_RANK], kst[GE_MAX_RANK], vst[GE_MAX_RANK], yst[GE_MAX_RANK];
  if (!logical_view(Q, L & GE_ATTN_LAYOUT_Q ? p_q : NULL, qd, qst) ||
      !logical_view(K, L & GE_ATTN_LAYOUT_KT ? p_k : NULL, kd, kst) ||
      !logical_view(V, L & GE_ATTN_LAYOUT_V ? p_q : NULL, vd, vst) ||
      !logical_view(Y, L & GE_ATTN_LAYOUT_Y ? p_q : NULL, yd, yst))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "layout %u needs rank-4 operands (Q %d, KT %d, V %d, Y %d)", L,
                        Q->rank, K->rank, V->rank, Y->rank);
  size_t M = (size_t)qd[Q->rank - 2], D = (size_t)qd[Q->rank - 1];
  size_t N = (size_t)kd[K->rank - 1], Dv = (size_t)vd[V->rank - 1];
  if ((size_t)kd[K->rank - 2] != D || (size_t)vd[V->rank - 2] != N)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "inner dimensions of Q [.., %zu, %zu], KT [.., %lld, %zu] and V [.., %lld, %zu] do not agree",
                        M, D, (long long)kd[K->rank - 2], N, (long long)vd[V->rank - 2], Dv);
  /* the output's batch dims: the broadcast of Q's, KT's and V's (Y was allocated so) */
  int32_t rb = Y->rank - 2;
  if (rb < 0 || (size_t)yd[Y->rank - 2] != M || (size_t)yd[Y->rank - 1] != Dv)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output shape does not match Q and V");
  memcpy(geo->obd, yd, (size_t)rb * sizeof *yd);
  const int64_t *ob = geo->obd;
  if (!batch_strides(qd, qst, Q->rank - 2, ob, rb, geo->qs) || !batch_strides(kd, kst, K->rank - 2, ob, rb, geo->ks) ||
      !batch_strides(vd, vst, V->rank - 2, ob, rb, geo->vs) || !batch_strides(yd, yst, rb, ob, rb, geo->ys))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "batch dims of Q, KT and V do not broadcast to the output's");
  geo->q_rs = qst[Q->rank - 2], geo->k_rs = kst[K->rank - 2], geo->k_cs = kst[K->rank - 1];
  geo->v_rs = vst[V->rank - 2], geo->y_rs = yst[Y->rank - 2];
  size_t m_row = 0, m_col = 0;
  int64_t mode = ctx->node ? ge_node_attr_int(ctx->node, "mask_mode", GE_ATTN_MASK_ADD) : GE_ATTN_MASK_ADD;
  if (mode != GE_ATTN_MASK_ADD && mode != GE_ATTN_MASK_SELECT)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "mask_mode %lld is not 0 (additive) or 1 (select)",
                        (long long)mode);
  if (Mk) {
    ge_dtype want = mode == GE_ATTN_MASK_SELECT ? GE_BOOL : GE_F32;
    if (Mk->dtype != want)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input 3 (Mask) is %s, mask_mode %lld needs %s",
                          ge_dtype_name(Mk->dtype), (long long)mode, ge_dtype_name(want));
    geo->select = mode == GE_ATTN_MASK_SELECT;
    geo->fill = ctx->node ? ge_node_attr_float(ctx->node, "mask_fill", -INFINITY) : -INFINITY;
  }
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
      else geo->ms[sd] = v;
      st *= (size_t)Mk->dims[d];
    }
  }
  size_t batch = 1;
  for (int32_t d = 0; d < rb; d++) batch *= (size_t)ob[d];
  geo->M = M, geo->N = N, geo->D = D, geo->Dv = Dv, geo->batch = batch;
  geo->rb = rb, geo->ob = ob, geo->m_row = m_row, geo->m_col = m_col;
  geo->layout = L;
  geo->plain = L == 0;
  return GE_OK;
}
