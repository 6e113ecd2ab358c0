/* Memory layouts of intermediate values, chosen at compile time.
 *
 * ge tensors are plain row-major.  Between kernels that prefer another activation layout
 * (oneDNN convolutions: channels-last or channel-blocked), a float32 image value may be stored
 * in that layout instead, so that neither its producer nor its consumers reorder it per run.
 * ge_plan_assign_layouts decides one layout per slot (ge_plan.layout) after type inference and
 * folding and before any kernel is prepared; each kernel then reads the layouts of its operands
 * from ge_prepare_ctx.in_layout / out_layout and must honour them.
 *
 * The decision asks each node's first kernel candidate that has a layout_pref hook what it
 * prefers for every operand: a layout (a convolution: what oneDNN picks with format "any"),
 * GE_LAYOUT_ANY (it reads / writes whatever it is given: pooling, channel Concat, a residual
 * input) or GE_LAYOUT_PLAIN (default; every kernel without the hook).  A value is non-plain only
 * when it is a static float32 tensor of rank 3..5, not a graph input, output or constant, in a
 * graph without subgraph-bearing nodes, its producer prefers a non-plain layout for it and
 * every consumer accepts one.  Its layout is the producer's preference (policy auto), or, for a
 * producer that takes any (pooling, Concat), the layout of its inputs, else what its consumers
 * prefer.  Blocked layouts need C to be a multiple of the block (no padded buffers); otherwise
 * the value is channels-last instead.
 *
 * bf16 storage (GE_LAYOUT_NHWC_BF16): under allow_fp32_to_bf16, a value whose producer prefers
 * it (a convolution computing in bf16) becomes bf16 channels-last when every reader accepts it
 * (its preference is GE_LAYOUT_NHWC_BF16 or GE_LAYOUT_ANY_BF16: bf16 convolutions, oneDNN
 * pooling, a bf16 FusedConv's residual); otherwise it is float32 channels-last.  A producer that
 * takes any layout (pooling) passes bf16 storage on under the same condition.
 *
 * Row-major bf16 storage (GE_LAYOUT_BF16): under allow_fp32_to_bf16, a static float32 value of
 * any rank (1..GE_MAX_RANK; same exclusions as above) whose producer prefers GE_LAYOUT_BF16 for
 * it (a MatMul computing in bf16, which writes a bf16 destination) and EVERY reader prefers
 * GE_LAYOUT_BF16 too (a bf16 MatMul's activation input) is stored as plain-order bf16.  A reader
 * preferring GE_LAYOUT_BF16 does not accept the image layouts above (for those it counts as
 * plain), and readers preferring those do not accept GE_LAYOUT_BF16.  A reader that takes either
 * (GE_LAYOUT_ANY_ROWS: a residual Add) accepts it without asking for it: a value is bf16 only
 * when at least one reader prefers GE_LAYOUT_BF16 and every other takes it.  Policy auto only.
 *
 * Policies (ge.exec.layout, for experiments): auto (above), nhwc (every non-plain value
 * channels-last), blocked (nChw16c, else NHWC), plain (everything plain). */
#ifndef GE_COMPILER_LAYOUT_H
#define GE_COMPILER_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

typedef enum ge_layout {
  GE_LAYOUT_PLAIN = 0, /* row-major, as the shape reads: N, C, spatial... */
  GE_LAYOUT_NHWC,      /* channels last: N, spatial..., C */
  GE_LAYOUT_NC8C,      /* oneDNN nC[d][h]w8c: N, C/8, spatial..., 8   (C % 8 == 0) */
  GE_LAYOUT_NC16C,     /* oneDNN nC[d][h]w16c: N, C/16, spatial..., 16 (C % 16 == 0) */
  /* channels last with the elements stored as bfloat16 (round to nearest even): the value's
     logical type stays float32 (its buffer float32-sized, half of it used).  Only between
     kernels that read / write bf16 anyway (bf16 convolutions, pooling), under
     ge.exec.precision_mode=allow_fp32_to_bf16, and only when every reader accepts it. */
  GE_LAYOUT_NHWC_BF16,
  /* plain (row-major) order with the elements stored as bfloat16 (round to nearest even), any
     rank: between bf16 MatMuls under allow_fp32_to_bf16 (see above).  Logical type float32,
     buffer float32-sized (half of it used), like GE_LAYOUT_NHWC_BF16. */
  GE_LAYOUT_BF16,
  GE_LAYOUT_COUNT,
  /* preferences only (never a slot's layout): the operand may have any layout */
  GE_LAYOUT_ANY_ROWS = 0xfc, /* plain or GE_LAYOUT_BF16 (no image layout); does not ask for bf16 */
  GE_LAYOUT_ANY_BF16 = 0xfd, /* any layout, bf16 storage (GE_LAYOUT_NHWC_BF16) included */
  GE_LAYOUT_ANY = 0xfe,      /* any float32 layout (not GE_LAYOUT_NHWC_BF16) */
} ge_layout;

typedef enum ge_layout_policy {
  GE_LAYOUT_POLICY_AUTO = 0,
  GE_LAYOUT_POLICY_NHWC,
  GE_LAYOUT_POLICY_BLOCKED,
  GE_LAYOUT_POLICY_PLAIN,
} ge_layout_policy;

/* "plain", "nhwc", "nChw8c", "nChw16c", "nhwc_bf16", "bf16" ("any" / "any_bf16" / "any_rows" for the preferences,
   "?" otherwise). */
const char *ge_layout_name(int layout);

/* True when a tensor of type t can be stored in layout l: plain always; GE_LAYOUT_BF16 a static
   tensor of rank 1..GE_MAX_RANK; the others a static tensor of rank 3..5 (blocked: C a multiple
   of the block). */
bool ge_layout_fits(int layout, const ge_type *t);

/* Converts a dense tensor of dims (rank 3..5: N, C, spatial...; any rank between plain and
   GE_LAYOUT_BF16) and element size elem between layout `from` and layout `to` (src and dst must
   not overlap).  GE_ERR_INVALID_ARGUMENT when a layout does not fit the dims.
   GE_LAYOUT_NHWC_BF16 / GE_LAYOUT_BF16 on either side: elem must be 4 (float32), that side holds
   bf16 elements and the others are converted (to bf16: round to nearest even). */
ge_status ge_layout_convert(void *dst, const void *src, const int64_t *dims, int rank, size_t elem,
                            int from, int to);

struct ge_plan;
/* Fills p->layout (one ge_layout per slot) for the plan's graph, whose slot types and folded
   constants are final; `stepped[n]` is true for the nodes that will run as steps. */
ge_status ge_plan_assign_layouts(struct ge_plan *p, const bool *stepped);

#endif
