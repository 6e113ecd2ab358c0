/* oneDNN glue shared by the oneDNN kernels (family-private; see dnnl.c for the design notes).
 *
 * A kernel state wraps one oneDNN primitive created at prepare time, the memory layout each of
 * its arguments wants, the reorders between ge's plain row-major tensors and those layouts, and
 * the constant arguments (weights, bias) already reordered ("packed") into the primitive's
 * layout.  A run points memory objects at the tensors it is handed (cached in the state when no
 * other run holds the cache, else created for the run) and executes the reorders and the
 * primitive. */
#ifndef GE_BACKEND_CPU_DNNL_PRIM_H
#define GE_BACKEND_CPU_DNNL_PRIM_H

#include <oneapi/dnnl/dnnl.h>

#include "backend/kernel.h"

#define GE_DN_MAX_ARGS 16

typedef enum ge_dn_kind {
  GE_DN_IN = 0, /* a kernel input (reordered to the primitive's layout per run if needed) */
  GE_DN_OUT,    /* a kernel output (reordered back from the primitive's layout if needed) */
  GE_DN_CONST,  /* packed at prepare time, owned by the state */
  GE_DN_TEMP,   /* per-run buffer without user data (statistics the primitive writes) */
} ge_dn_kind;

typedef struct ge_dn_arg {
  int arg;                        /* DNNL_ARG_* */
  ge_dn_kind kind;
  int index;                      /* kernel input / output index */
  int sum_input;                  /* GE_DN_OUT: input copied into dst before (sum post-op); -1 */
  dnnl_memory_desc_t user_md;     /* how ge stores it (plain) */
  dnnl_memory_desc_t prim_md;     /* what the primitive wants */
  size_t user_bytes, prim_bytes;
  bool same;                      /* prim_md == user_md: no reorder */
  dnnl_primitive_t to_prim;       /* user -> prim (inputs; outputs with a sum input) */
  dnnl_primitive_t from_prim;     /* prim -> user (outputs) */
  void *packed;                   /* GE_DN_CONST */
  dnnl_memory_desc_t sum_md;      /* GE_DN_OUT with a sum input: how that input is stored */
  bool sum_same;                  /* sum_md == prim_md: copied, no reorder */
  /* the ge tensor is a float32 value stored as bf16 (GE_LAYOUT_NHWC_BF16 or GE_LAYOUT_BF16,
     compiler/layout.h):
     user_md is bf16, the tensor float32-typed with twice user_bytes */
  bool stored16, sum_stored16;
  /* GE_DN_IN: the user tensor is a planar float32 image [N, 3, H, W] (a CNN's graph input) and
     the primitive reads it channels-last, float32 (1) or bf16 (2): converted by
     ge_fast_nchw3_to_nhwc (fast_kernels.h) instead of to_prim, which is then NULL; 0 otherwise */
  uint8_t planar3;
} ge_dn_arg;

/* A reference kernel run with layout conversions (see dnnl_layout.h). */
typedef struct ge_dn_fallback ge_dn_fallback;

/* Per-run buffer kept between runs (scratchpad and reordered activations): one run at a time
   uses it (try-lock); a concurrent run of the same plan allocates its own. */
typedef struct ge_dn_cache ge_dn_cache;

/* omp_set_num_threads / omp_get_max_threads of the OpenMP runtime oneDNN is built with,
   looked up at prepare time (NULL when oneDNN uses another runtime). */
typedef struct ge_dn_omp {
  void (*set)(int);
  int (*get)(void);
} ge_dn_omp;

typedef struct ge_dn_state {
  dnnl_engine_t eng;
  dnnl_primitive_t prim;
  ge_dn_omp omp;
  int threads;                    /* intra-op threads the primitive was created for */
  size_t n_args;
  ge_dn_arg args[GE_DN_MAX_ARGS];
  size_t scratch_bytes;           /* max over the primitive and its reorders */
  const char *what;               /* "convolution", ... for messages */
  ge_dn_fallback *fb;             /* non-NULL: a wrapped reference kernel (no primitive) */
  struct ge_dn_maxpool *maxpool;  /* non-NULL: dnnl_pool.c's channels-last max pool (no primitive) */
  ge_dn_cache *cache;             /* owned; NULL when it could not be allocated */
} ge_dn_state;

/* Creates a state with its engine; sets the calling thread's OpenMP thread count to
   p->intra_threads until ge_dn_prepare_end (the primitive is sized for it). */
ge_status ge_dn_prepare_begin(const ge_prepare_ctx *p, const char *what, ge_dn_state **out,
                              int *saved_threads);
void ge_dn_prepare_end(ge_dn_state *s, int saved_threads);

/* Creates the primitive descriptor of op_desc with `attr` (scratchpad mode is set to user
   here) and the primitive.  Returns GE_ERR_UNSUPPORTED (declines) when oneDNN cannot do it. */
ge_status ge_dn_create(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_op_desc_t op_desc,
                       dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd_out);

/* Like ge_dn_create with the first implementation oneDNN lists whose name contains `impl`
   (e.g. "wino_4x3"); impl NULL: oneDNN's first choice.  GE_ERR_UNSUPPORTED when none. */
ge_status ge_dn_create_impl(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_op_desc_t op_desc,
                            dnnl_primitive_attr_t attr, const char *impl, dnnl_primitive_desc_t *pd_out);

/* Adds argument `arg` of the primitive: user_md is ge's layout; the primitive's layout is
   queried from pd.  GE_DN_CONST packs `value` now. */
ge_status ge_dn_add_arg(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_primitive_desc_t pd,
                        int arg, ge_dn_kind kind, int index, const dnnl_memory_desc_t *user_md,
                        const ge_tensor *value, int sum_input);

/* Like ge_dn_add_arg(.., GE_DN_OUT, index, user_md, NULL, sum_input) where the sum input is
   stored as sum_md (it may differ from the output's user_md: channels-last vs plain). */
ge_status ge_dn_add_out_sum(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_primitive_desc_t pd,
                            int arg, int index, const dnnl_memory_desc_t *user_md, int sum_input,
                            const dnnl_memory_desc_t *sum_md);

ge_status ge_dn_run(const void *state, ge_kctx *ctx);
void ge_dn_release(void *state);
/* ge_kernel.packed_inputs of the oneDNN kernels: the constant inputs packed at prepare (none
   for a state that runs a fallback kernel). */
uint32_t ge_dn_packed_inputs(const void *state);
/* ge_kernel.describe of the oneDNN kernels: the primitive's implementation name
   ("brgconv_1x1:avx512_core"), "ge max pool" (dnnl_pool.c), or "reference, wrapped" (a node
   oneDNN did not take, run by the reference kernel between layout conversions). */
const char *ge_dn_describe(const void *state);
/* Called once a prepare has succeeded: a packed constant input whose only reader in the
   graph is this node (and that no one else pins) has its original bytes dropped from memory
   (ge_tensor_evict_packed; a reclaimable weight is read back from its file when pinned). */
void ge_dn_drop_packed_originals(const ge_prepare_ctx *p, const ge_dn_state *s);

/* A plain row-major f32 descriptor of dims; strides may be NULL (dense). */
ge_status ge_dn_md(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                   const int64_t *strides);
/* A descriptor with format_kind any. */
ge_status ge_dn_md_any(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims,
                       const int64_t *dims);

/* Appends the fused activation of an ai.ge Fused* node (attributes activation,
   activation_params) as eltwise post-ops; declines unknown ones. */
ge_status ge_dn_append_act(const ge_prepare_ctx *p, dnnl_post_ops_t po);

/* A float32 Conv / FusedConv primitive for p as it is (dnnl.c); a ge_dn_state. */
ge_status ge_dn_conv_prepare(const ge_prepare_ctx *p, void **state);
/* ai.ge::FusedConvDw by bands of rows (dnnl_convdw.c): the kernel's hooks. */
ge_status ge_dn_convdw_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_dn_convdw_run(const void *state, ge_kctx *ctx);
void ge_dn_convdw_release(void *state);
void ge_dn_convdw_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out);
uint32_t ge_dn_convdw_packed_inputs(const void *state);
const char *ge_dn_convdw_describe(const void *state);

/* True when every present input and output is float32 and input 0 has a static shape. */
bool ge_dn_static_f32(const ge_prepare_ctx *p);

#endif
