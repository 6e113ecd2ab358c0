/* The operand geometry of ai.ge::Attention (Y = softmax(Q x KT * scale + Mask) x V, batch dims
 * broadcast like MatMul), checked and turned into strides once for every kernel of the op. */
#ifndef GE_BACKEND_CPU_ATTENTION_GEOM_H
#define GE_BACKEND_CPU_ATTENTION_GEOM_H

#include "backend/kernel.h"

typedef struct ge_attn_geom {
  size_t M, N, D, Dv;   /* Q [.., M, D], KT [.., D, N], V [.., N, Dv], Y [.., M, Dv] */
  size_t batch;         /* product of the output's batch dims */
  int32_t rb;           /* rank of the output's batch dims */
  const int64_t *ob;    /* the output's batch dims (Y->dims) */
  size_t qs[GE_MAX_RANK], ks[GE_MAX_RANK], vs[GE_MAX_RANK], ms[GE_MAX_RANK]; /* batch strides,
                           0 where the operand broadcasts */
  size_t m_row, m_col;  /* the mask's strides over M and N (0: broadcast) */
} ge_attn_geom;

/* Reads Q, KT, V, the optional Mask (inputs 0..3) and Y (output 0) of ctx; GE_ERR_SHAPE naming
   the node and the operand that does not fit. */
ge_status ge_attn_geom_init(const ge_kctx *ctx, ge_attn_geom *g);

#endif
