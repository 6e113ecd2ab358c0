/* The kernel interface shared by every backend.
 *
 * prepare runs once, at compile time: it checks attributes and dtypes, precomputes what it
 * can and sizes its scratch.  run runs per step and only computes: it reads shapes from the
 * input tensors it is handed and writes into outputs the executor allocated (from the
 * inferred output shapes).  A kernel whose output shape depends on the input *data* in a way
 * inference cannot know (NonZero, Unique, ...) sets `dynamic_output`: the executor then
 * hands it outputs with data == NULL and the kernel calls ge_kctx_alloc_output. */
#ifndef GE_BACKEND_KERNEL_H
#define GE_BACKEND_KERNEL_H

#include "ir/ir.h"
#include "ops/op.h"

typedef struct ge_prepare_ctx {
  const ge_graph *graph;
  const ge_node *node;
  int64_t opset;
  size_t n_in, n_out;
  const ge_infer_input *in;  /* types (shapes concrete when the plan is static) and constants */
  const ge_type *out;        /* inferred output types */
  int intra_threads;         /* ge.intraOpThreads */
  /* ge.exec.disableWinograd: convolutions compute directly (no Winograd transforms, whose
     float32 rounding differs from the direct sum's) */
  bool no_winograd;
  /* The memory layout (a ge_layout, compiler/layout.h) of each input / output the plan
     decided; NULL = all plain.  A kernel must read and write its operands in these layouts. */
  const uint8_t *in_layout, *out_layout;
} ge_prepare_ctx;

typedef struct ge_kctx ge_kctx;

typedef struct ge_kernel {
  /* May be NULL (no state).  *state may stay NULL. */
  ge_status (*prepare)(const ge_prepare_ctx *p, void **state);
  ge_status (*run)(const void *state, ge_kctx *ctx);
  void (*release)(void *state);
  bool dynamic_output;
  /* run writes every element of every output it is handed, so the executor need not zero
     them first (by default outputs arrive zeroed) */
  bool overwrites_outputs;
  /* In place: bit i set = output 0 may share input i's buffer when both have the same dtype,
     shape and layout and input i dies at this step (the memory planner decides).  run must
     then be correct with out[0]->data == in[i]->data: each output element depends only on
     the same element of that input, read before it is written.  The executor never zeroes an
     output that shares an input's buffer. */
  uint32_t inplace_inputs;
  /* Layout preference (may be NULL: plain operands only), asked at compile time before any
     kernel is prepared (p->in_layout / out_layout are NULL then): writes for each input i /
     output o the ge_layout (compiler/layout.h) it would like, GE_LAYOUT_ANY where it takes
     whichever it is given, GE_LAYOUT_PLAIN (the value already there) where it needs plain. */
  void (*layout_pref)(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out);
  /* May be NULL.  Bit i set: the prepared state holds its own (packed) copy of constant input
     i and run never reads that input, so the constant's bytes need not stay resident for this
     step (a reclaimable weight, ir.h ge_tensor_evict). */
  uint32_t (*packed_inputs)(const void *state);
  /* May be NULL.  Which implementation the prepared state runs, in a few words (a oneDNN
     primitive's implementation name, "winograd F(4x4,3x3)", "reference, wrapped"), for
     profiles (ge_cpu_kernel_name); NULL or "" when the family's name says it all.  The string
     lives as long as the state. */
  const char *(*describe)(const void *state);
} ge_kernel;

/* What a kernel sees at run time. */
struct ge_kctx {
  const ge_node *node;       /* for error messages */
  size_t n_in, n_out;
  ge_tensor *const *in;      /* NULL entry: omitted optional input */
  ge_tensor **out;           /* NULL entry: omitted optional output (do not write) */
  int threads;
  void *exec;                /* executor private (subgraph runs, allocation) */
};

/* Allocate output i with the given dtype and shape (dynamic_output kernels). */
ge_status ge_kctx_alloc_output(ge_kctx *c, size_t i, ge_dtype dt, const int64_t *dims,
                               int32_t rank);
/* Run-time error naming the node. */
ge_status ge_kctx_fail(const ge_kctx *c, ge_status st, const char *fmt, ...) GE_PRINTF(3, 4);
ge_status ge_prepare_fail(const ge_prepare_ctx *p, ge_status st, const char *fmt, ...)
    GE_PRINTF(3, 4);
/* A prepare that packed constant inputs (bit i of mask: input i) into its state: drops each
   original whose only reader is this node (no other node, subgraph or graph output), so that
   a compilation never holds a weight twice (the session pins constants while it compiles). */
void ge_prepare_drop_packed(const ge_prepare_ctx *p, uint32_t mask);
/* GE_ERR_UNSUPPORTED naming the node, op, input and dtype, if input i's dtype is not in the
   list (ended by GE_DTYPE_COUNT). */
ge_status ge_prepare_check_dtype(const ge_prepare_ctx *p, size_t i, const ge_dtype *allowed);

/* Registration: one table per family, `const ge_kernel_def ge_ref_kernels_<family>[]`,
   ended by an entry whose name is NULL. */
typedef struct ge_kernel_def {
  const char *domain;        /* "" = ai.onnx */
  const char *name;
  int since, until;          /* opset range (until 0 = open) */
  ge_kernel kernel;
} ge_kernel_def;

/* The reference CPU kernel for (domain, op, opset); NULL if none. */
const ge_kernel *ge_cpu_find_kernel(const char *domain, const char *name, int64_t opset);
/* Every CPU kernel for (domain, op, opset) in the order the compiler tries them: the fast
   kernels (oneDNN, vectorised) first, the reference kernel last.  A fast kernel whose prepare
   returns GE_ERR_UNSUPPORTED declines the node (a configuration it does not handle) and the
   next candidate is tried.  Fast tables are `const ge_kernel_def ge_fast_kernels_<name>[]`. */
size_t ge_cpu_find_kernels(const char *domain, const char *name, int64_t opset,
                           const ge_kernel **out, size_t cap);
/* The name of the kernel k with prepared state `state`, for profiles: its family ("pgemm",
   "stem", "onednn", "fast", "reference"), then what its describe hook says, if anything
   ("onednn brgconv_1x1:avx512_core").  Written to buf (cut at cap). */
void ge_cpu_kernel_name(const ge_kernel *k, const void *state, char *buf, size_t cap);

/* ---------------------------------------------------------------- sequences and optionals
 * A run-time value that is not a tensor (a sequence of tensors, or an optional holding a
 * tensor or a sequence, or nothing) travels in the same ge_tensor slot as a tensor: its dtype
 * is GE_DTYPE_SEQVAL, rank 0, numel and nbytes 0, and data points to a ge_seqval.  An owned
 * one frees the ge_seqval through its release function; views (ge_tensor_view) share it.
 * Kernels of plain tensors never see these (schemas check the kinds). */
#define GE_DTYPE_SEQVAL ((ge_dtype)0x5e0)

typedef struct ge_seqval {
  ge_type_kind kind;    /* GE_TYPE_SEQUENCE or GE_TYPE_OPTIONAL */
  ge_dtype elem;        /* element dtype; GE_DTYPE_COUNT when unknown (an empty value) */
  bool elem_is_seq;     /* OPTIONAL of a sequence */
  size_t n, cap;
  ge_tensor **items;    /* owned; SEQUENCE: the tensors; OPTIONAL: n == 0 (empty) or 1 */
} ge_seqval;

/* The ge_seqval of a sequence/optional value; NULL for a tensor (or NULL). */
ge_seqval *ge_value_seq(const ge_tensor *t);
/* Makes *slot (its old storage released) an owned, empty sequence or optional. */
ge_status ge_value_init_seq(ge_tensor *slot, ge_type_kind kind, ge_dtype elem, bool elem_is_seq,
                            ge_seqval **out);
/* Inserts item (taken, even on failure) at position pos (0..n). */
ge_status ge_seqval_insert(ge_seqval *s, size_t pos, ge_tensor *item);
/* Deep copy of a tensor or a sequence/optional value: ge_value_clone (ge/ge.h). */
/* The type of a run-time value (sequence element shapes: the common shape, dims that
   differ unknown). */
void ge_value_type(const ge_tensor *t, ge_type *out);
/* Output i of a dynamic_output kernel becomes *t (moved: t is freed, its storage taken). */
ge_status ge_kctx_set_output(ge_kctx *c, size_t i, ge_tensor *t);

/* ---------------------------------------------------------------- subgraphs
 * Control-flow kernels (If, Loop, Scan, SequenceMap...) run graph attributes.  The executor
 * appends a node's implicit inputs (values of enclosing graphs its subgraphs read) after its
 * explicit ones: kctx->n_in may exceed node->n_inputs.  A ge_subgraph compiles its body once
 * per signature of input types (cached, thread-safe) and binds the outer values. */
typedef struct ge_subgraph ge_subgraph;
/* At prepare: a handle for `body`, a graph attribute of p->node. */
ge_status ge_subgraph_create(const ge_prepare_ctx *p, const ge_graph *body, ge_subgraph **out);
void ge_subgraph_free(ge_subgraph *s);
/* Runs the body: inputs are its formal inputs (borrowed, may be sequence/optional values);
   outputs receive new values the caller frees. */
ge_status ge_kctx_run_subgraph(ge_kctx *c, ge_subgraph *s, ge_tensor *const *inputs, size_t n_in,
                               ge_tensor **outputs, size_t n_out);

#endif
