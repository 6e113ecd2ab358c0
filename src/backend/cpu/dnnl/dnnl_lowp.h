/* Lower-precision compute mode of the oneDNN kernels (bf16 / fp16 with float32 in and out).
 *
 * The precision pass (src/passes/precision.c) marks a float32 node with the string attribute
 * "ge_compute_precision" = "bf16" | "fp16".  A oneDNN kernel that honours it builds its
 * primitive with source and weights in that data type and a float32 destination (one
 * primitive on AMX / AVX512-BF16); ge_dn_add_arg's reorders then convert the float32 inputs
 * per run and the constant weights once, at prepare.  Where the processor or oneDNN cannot do
 * it fast (bf16 needs AVX512-BF16 or AMX-BF16; a reference implementation is refused), the
 * kernel prepares in float32 instead and a one-time note goes to stderr. */
#ifndef GE_BACKEND_CPU_DNNL_LOWP_H
#define GE_BACKEND_CPU_DNNL_LOWP_H

#include "backend/cpu/dnnl/dnnl_prim.h"

/* Same string as GE_PRECISION_ATTR in passes/pass.h (backends do not include passes/). */
#define GE_DN_PRECISION_ATTR "ge_compute_precision"

/* The data type node p should compute in: dnnl_bf16 / dnnl_f16 when marked and the processor
   can (bf16: AVX512-BF16 or AMX as oneDNN sees it, DNNL_MAX_CPU_ISA included; fp16:
   ge_dn_f16_usable), else dnnl_f32, with a one-time note on stderr where a mark cannot be
   honoured.  A node marked fp16 or bf16 that gets dnnl_f32 is a float32 node to every kernel,
   so the mode then runs as the float32 mode does. */
dnnl_data_type_t ge_dn_lowp_dt(const ge_prepare_ctx *p);

/* oneDNN has a non-reference fp16 convolution or matmul kernel here (probed once per process;
   none in oneDNN 2.6 on CPU). */
bool ge_dn_f16_usable(void);

/* Like ge_dn_md / ge_dn_md_any with data type dt. */
ge_status ge_dn_md_dt(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                      const int64_t *strides, dnnl_data_type_t dt);
ge_status ge_dn_md_any_dt(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims,
                          const int64_t *dims, dnnl_data_type_t dt);

/* After ge_dn_create in a lower-precision mode: GE_ERR_UNSUPPORTED when oneDNN picked a
   reference (slow) implementation. */
ge_status ge_dn_lowp_check(const ge_prepare_ctx *p, const_dnnl_primitive_desc_t pd, dnnl_data_type_t dt);

/* A matmul primitive for source a, weights b, optional bias and destination c (compute type cdt,
   checked by ge_dn_lowp_check): the implementation named `prefer` when oneDNN offers it (NULL: its
   first choice); what names the op in errors. */
ge_status ge_dn_matmul_pd(const ge_prepare_ctx *p, ge_dn_state *s, const dnnl_memory_desc_t *a,
                         const dnnl_memory_desc_t *b, const dnnl_memory_desc_t *bias,
                         const dnnl_memory_desc_t *c, dnnl_primitive_attr_t attr, const char *what,
                         dnnl_data_type_t cdt, const char *prefer, dnnl_primitive_desc_t *pd);

/* Runs impl(p, state, flags, dt) with the node's lower-precision data type, and again in
   float32 when that declines (GE_ERR_UNSUPPORTED); notes the fallback once per process. */
typedef ge_status (*ge_dn_impl_fn)(const ge_prepare_ctx *p, void **state, int flags, dnnl_data_type_t dt);
ge_status ge_dn_lowp_prepare(const ge_prepare_ctx *p, void **state, ge_dn_impl_fn impl, int flags);

/* x (float32) -> y (bf16 bits), round to nearest even, NaN kept a (quiet) NaN: AVX512-BF16 where
   the processor has it, else plain C; split over `threads` for large n. */
void ge_dn_to_bf16(const float *x, uint16_t *y, size_t n, int threads);

/* MatMul / FusedMatMul whose primitive takes a bf16 activation (input 0) given as plain bf16
 * (ge_dn_add_arg's user layout == the primitive's: no oneDNN reorder): the run converts the
 * float32 input with ge_dn_to_bf16 into a buffer of the state (one run at a time, try-lock; a
 * concurrent run allocates its own) and runs the oneDNN state on that.  A state whose input 0 is
 * float32 (float32 compute, or a constant A) or already stored bf16 (GE_LAYOUT_BF16: the plan
 * keeps the value bf16 between bf16 MatMuls, compiler/layout.h) runs ge_dn_run unchanged. */
typedef struct ge_dn_mm16 ge_dn_mm16;
/* Wraps dn (taken over, released on failure too) into *state. */
ge_status ge_dn_mm16_wrap(const ge_prepare_ctx *p, ge_dn_state *dn, void **state);
ge_status ge_dn_mm16_run(const void *state, ge_kctx *ctx);
void ge_dn_mm16_release(void *state);
uint32_t ge_dn_mm16_packed_inputs(const void *state);
const char *ge_dn_mm16_describe(const void *state); /* the wrapped oneDNN state's */

/* ai.ge::Attention computing in bf16 (dnnl_attn.c): declines unless the node is marked bf16
   and the processor has fast bf16. */
ge_status ge_dn_attn16_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_dn_attn16_run(const void *state, ge_kctx *ctx);
void ge_dn_attn16_release(void *state);
const char *ge_dn_attn16_describe(const void *state); /* its QK^T matmul's oneDNN implementation */

#endif
