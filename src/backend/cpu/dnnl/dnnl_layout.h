/* Channels-last activations between oneDNN kernels (family-private).
 *
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
 * Tensors dumped by ge.exec.enableDump for such intermediate values are in NHWC order. */
#ifndef GE_BACKEND_CPU_DNNL_LAYOUT_H
#define GE_BACKEND_CPU_DNNL_LAYOUT_H

#include "backend/cpu/dnnl/dnnl_prim.h"

/* True when value v (of concrete type t, as the plan has it) is stored channels-last. */
bool ge_dn_value_nhwc(const ge_graph *g, int32_t v, const ge_type *t);
/* Whether input i / output o of the node being prepared is channels-last. */
bool ge_dn_in_nhwc(const ge_prepare_ctx *p, size_t i);
bool ge_dn_out_nhwc(const ge_prepare_ctx *p, size_t o);

/* A float32 descriptor of dims [N, C, spatial...], channels-last when nhwc, else plain. */
ge_status ge_dn_md_layout(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                          bool nhwc, dnnl_data_type_t dt);

/* Call with the status of a oneDNN prepare: when it declined (GE_ERR_UNSUPPORTED) but one of
   the node's inputs or outputs is channels-last, prepares the reference kernel wrapped with
   per-run layout conversions instead (*state a ge_dn_state with a fallback).  Otherwise
   returns st unchanged. */
ge_status ge_dn_layout_guard(const ge_prepare_ctx *p, void **state, ge_status st);

/* Run / release of a fallback state (called by ge_dn_run / ge_dn_release). */
ge_status ge_dn_fallback_run(const ge_dn_state *s, ge_kctx *ctx);
void ge_dn_fallback_release(ge_dn_fallback *fb);

/* Prepare of the oneDNN Concat kernel (channel axis; channels-last inputs / output). */
ge_status ge_dn_concat_prepare(const ge_prepare_ctx *p, void **state);

/* dst[n][s][c] = src[n][c][s] (to_nhwc) or the inverse, for [n, c, sp] float32 data. */
void ge_dn_nchw_nhwc(float *dst, const float *src, size_t n, size_t c, size_t sp, bool to_nhwc);

#endif
