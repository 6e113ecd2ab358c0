/* Activation layouts between oneDNN kernels (family-private).
 *
 * The layout of every value is decided by the compiler (compiler/layout.h, ge_plan.layout)
 * from the kernels' preferences (the layout_pref hooks below and in dnnl.c) and handed to
 * prepare in ge_prepare_ctx.in_layout / out_layout: plain, channels-last (NHWC) or oneDNN
 * channel-blocked (nChw8c / nChw16c).  The kernels here read those (ge_dn_in_layout); a
 * participant whose oneDNN primitive cannot be created is wrapped by ge_dn_layout_guard
 * (per-run conversions to and from plain, for any layout).
 *
 * History (ge_dn_value_nhwc, kept for reference and its tests; no kernel calls it now):
 * oneDNN's fast fp32 convolutions (brgconv) work on channels-last (NHWC) activations, while ge
 * tensors are plain row-major (NCHW).  Reordering every convolution's input in and output out
 * per run cost about a fifth of ResNet-50's time.  Instead, a float32 value that flows only
 * between oneDNN convolutions and poolings is stored channels-last: its producer writes it that
 * way and its consumers read it that way, with no reorder.
 *
 * The agreement needs no compiler support: producer and consumers each call
 * ge_dn_value_nhwc(graph, value, type), a pure function of the graph structure and the value's
 * concrete type as the plan sees it, so they always reach the same answer.  A value is
 * channels-last when
 *   - it is a float32 tensor of static shape and rank 3..5, not a graph output, in a graph
 *     without subgraph-bearing nodes;
 *   - its producer is Conv / ai.ge FusedConv / MaxPool / AveragePool, or Concat over the
 *     channel axis (output 0 of one output);
 *   - it has consumers, and every use is input 0 of Conv, FusedConv, MaxPool, AveragePool,
 *     GlobalAveragePool or GlobalMaxPool, input 3 (the residual) of FusedConv, or any input of
 *     a Concat over the channel axis.
 * Since the decision is made before any kernel is tried, a participant whose oneDNN primitive
 * cannot be created must still honour it: ge_dn_layout_guard then wraps the reference kernel,
 * converting its channels-last inputs to plain and its plain outputs to channels-last per run
 * (a slow but correct path; never taken on the models we measure).
 *
 * (Dumps of ge.exec.enableDump convert such values back to plain: runtime/profiler.c.) */
#ifndef GE_BACKEND_CPU_DNNL_LAYOUT_H
#define GE_BACKEND_CPU_DNNL_LAYOUT_H

#include "backend/cpu/dnnl/dnnl_prim.h"

/* True when value v (of concrete type t) would be channels-last under the former rule. */
bool ge_dn_value_nhwc(const ge_graph *g, int32_t v, const ge_type *t);
/* The ge_layout (compiler/layout.h) the plan decided for input i / output o of the node being
   prepared (plain when none was decided). */
int ge_dn_in_layout(const ge_prepare_ctx *p, size_t i);
int ge_dn_out_layout(const ge_prepare_ctx *p, size_t o);

/* A descriptor of data type dt and dims [N, C, spatial...] in layout `layout` (a ge_layout;
   plain for rank < 3).  GE_LAYOUT_NHWC_BF16: channels-last bf16 whatever dt (how it is stored);
   GE_LAYOUT_BF16: plain bf16 of any rank whatever dt. */
ge_status ge_dn_md_layout(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                          int layout, dnnl_data_type_t dt);
/* The ge_layout a oneDNN descriptor is (NULL or another format: GE_LAYOUT_PLAIN). */
int ge_dn_md_to_layout(const dnnl_memory_desc_t *md);

/* Call with the status of a oneDNN prepare: when it declined (GE_ERR_UNSUPPORTED) but one of
   the node's inputs or outputs is channels-last, prepares the reference kernel wrapped with
   per-run layout conversions instead (*state a ge_dn_state with a fallback).  Otherwise
   returns st unchanged. */
ge_status ge_dn_layout_guard(const ge_prepare_ctx *p, void **state, ge_status st);

/* Run / release of a fallback state (called by ge_dn_run / ge_dn_release). */
ge_status ge_dn_fallback_run(const ge_dn_state *s, ge_kctx *ctx);
void ge_dn_fallback_release(ge_dn_fallback *fb);

/* Prepare of the oneDNN Concat kernel (channel axis; inputs / output in any layout), and its
   layout preference (any, for a channel Concat of static float32 images). */
ge_status ge_dn_concat_prepare(const ge_prepare_ctx *p, void **state);
void ge_dn_concat_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out);

/* dst[n][s][c] = src[n][c][s] (to_nhwc) or the inverse, for [n, c, sp] float32 data. */
void ge_dn_nchw_nhwc(float *dst, const float *src, size_t n, size_t c, size_t sp, bool to_nhwc);

#endif
