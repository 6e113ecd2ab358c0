/* The operand geometry of ai.ge::Attention (Y = softmax(Q x KT * scale + Mask) x V, batch dims
 * broadcast like MatMul), checked and turned into strides once for every kernel of the op.
 * The layout attribute (ops/fused.h) is honoured here: an operand stored in the [B, S, H, D]
 * order is read through strides as the logical [B, H, S, D] (KT: [B, H, D, S]) operand. */
#ifndef GE_BACKEND_CPU_ATTENTION_GEOM_H
#define GE_BACKEND_CPU_ATTENTION_GEOM_H

#include "backend/kernel.h"

typedef struct ge_attn_geom {
  size_t M, N, D, Dv;   /* Q [.., M, D], KT [.., D, N], V [.., N, Dv], Y [.., M, Dv] (logical) */
  size_t batch;         /* product of the output's batch dims */
  int32_t rb;           /* rank of the output's batch dims */
  const int64_t *ob;    /* the output's logical batch dims (points to obd) */
  int64_t obd[GE_MAX_RANK];
  size_t qs[GE_MAX_RANK], ks[GE_MAX_RANK], vs[GE_MAX_RANK], ys[GE_MAX_RANK], ms[GE_MAX_RANK];
                        /* batch strides, 0 where the operand broadcasts */
  size_t q_rs, v_rs, y_rs; /* row strides of Q, V, Y (their columns are contiguous) */
  size_t k_rs, k_cs;    /* KT's strides over D (rows) and N (columns): N, 1 plain; 1, H*D when
                           KT is stored as [B, N, H, D] */
  size_t m_row, m_col;  /* the mask's strides over M and N (0: broadcast) */
  unsigned layout;      /* the node's layout attribute (GE_ATTN_LAYOUT_* bits) */
  bool select;          /* mask_mode 1: the Mask (bool, checked) selects, masked scores become
                           fill; else it is added (float32, checked).  False without a Mask. */
  float fill;           /* mask_fill (select mode) */
  bool plain;           /* every operand dense in the logical order (layout 0) */
} ge_attn_geom;

/* Reads Q, KT, V, the optional Mask (inputs 0..3), Y (output 0) and the node's layout, mask_mode
   and mask_fill attributes; GE_ERR_SHAPE naming the node and the operand that does not fit,
   GE_ERR_INVALID_ARGUMENT for a bad attribute or a Mask dtype that does not fit the mode. */
ge_status ge_attn_geom_init(const ge_kctx *ctx, ge_attn_geom *g);

#endif
