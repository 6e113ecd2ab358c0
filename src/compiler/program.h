/* The compiled program: a flat, immutable list of steps over value slots.
 *
 * A plan is compiled for one graph and one signature of input types (the declared shapes, or
 * the concrete shapes of a run).  Compilation infers every value's type, folds what is
 * constant, picks and prepares a kernel per remaining node, and records when each
 * intermediate buffer dies.  Running a plan walks its steps. */
#ifndef GE_COMPILER_PROGRAM_H
#define GE_COMPILER_PROGRAM_H

#include "backend/kernel.h"
#include "runtime/options.h"

#define GE_SLOT_NONE UINT32_MAX

typedef struct ge_step {
  const ge_kernel *k;
  void *state;
  const ge_node *node;   /* in the plan's graph */
  uint32_t *in, *out;    /* slot ids; GE_SLOT_NONE = omitted */
  uint32_t n_in, n_out;
  bool static_out;       /* every output shape is known at compile time */
  uint32_t *dead;        /* slots whose last reader is this step */
  uint32_t n_dead;
  bool view;             /* Reshape/Squeeze/Unsqueeze/Flatten/Identity: output 0 is a view of
                            input 0's buffer; no kernel runs */
} ge_step;

typedef struct ge_slot {
  ge_type type;          /* inferred */
  const ge_tensor *constant; /* initializer (graph-owned) or folded value (plan-owned) */
  bool folded;           /* constant owned by the plan */
  int32_t input_index;   /* index into the plan's inputs, -1 if not an input */
} ge_slot;

typedef struct ge_plan {
  const ge_graph *graph;
  ge_options opts;
  ge_slot *slots;        /* one per graph value */
  size_t n_slots;
  ge_step *steps;
  size_t n_steps;
  uint32_t *inputs;      /* slots of the non-constant graph inputs, in order, then (subgraphs)
                            the slots of its OUTER values, in value order */
  size_t n_inputs;       /* n_formal + the OUTER values */
  size_t n_formal;       /* the graph's own non-constant inputs */
  uint32_t *outputs;     /* slots of the graph outputs */
  size_t n_outputs;
  size_t n_folded;       /* nodes folded at compile time */
  uint8_t *layout;       /* per slot: its memory layout, a ge_layout (compiler/layout.h);
                            0 = plain */
  /* the memory plan: intermediates of static steps live at offsets of one arena per run */
  int32_t *alias_of;     /* per slot: the slot whose buffer it views (a view step's output),
                            -1 for a slot with its own buffer.  That buffer lives until the
                            last reader of every view of it. */
  int64_t *arena_offset; /* per slot; -1 = allocated on its own (outputs, dynamic shapes) */
  size_t arena_bytes;
  size_t arena_lower_bound; /* most bytes alive at once: no placement can do better */
  size_t arena_no_reuse;    /* what the same buffers take without reuse */
  const char *arena_strategy;
  /* run workspaces (slot tensors, arena, operand arrays) kept between runs so that a run of
     a static-shape plan allocates nothing (runtime/executor.c); mutable behind a lock */
  struct ge_ws_pool *ws_pool;
  /* the adaptive thread count of its top-level runs (runtime/thread_adapt.h); NULL: every
     run takes opts.intra_threads */
  struct ge_thread_adapt *adapt;
} ge_plan;

typedef struct ge_ws_pool ge_ws_pool;
/* Called by ge_plan_compile / ge_plan_free (defined with the executor). */
ge_status ge_plan_pool_init(ge_plan *p);
void ge_plan_pool_free(ge_plan *p);

/* Compile `g` (topologically sorted) for the given input types (one per non-constant graph
   input, in order; NULL = the declared types).  Errors name the node, op and shapes.
   A subgraph (g->parent set) takes its OUTER values as extra inputs after its own (types
   after those of the inputs); a top-level graph may not have OUTER values. */
ge_status ge_plan_compile(const ge_graph *g, const ge_type *input_types, const ge_options *o,
                          ge_plan **out);
void ge_plan_free(ge_plan *p);

/* Run: inputs are the caller's tensors (borrowed); outputs receive new tensors. */
ge_status ge_plan_run(const ge_plan *p, ge_tensor *const *inputs, size_t n_in, ge_tensor **outputs,
                      size_t n_out);

/* Checks count, dtypes and known dims of the inputs against the plan's input types; errors
   name the input. */
ge_status ge_plan_run_check_inputs(const ge_plan *p, ge_tensor *const *inputs, size_t n_in);

/* True when the input types match this plan's input types exactly. */
bool ge_plan_matches(const ge_plan *p, ge_tensor *const *inputs, size_t n_in);

/* Node n's prepare context in plan p: its types and constants, and the options every kernel
   reads from the session (threads, Winograd); layouts unset (all plain). */
static inline ge_prepare_ctx ge_plan_prepare_ctx(const ge_plan *p, const ge_node *n, const ge_infer_input *in,
                                                 const ge_type *out_t) {
  return (ge_prepare_ctx){.graph = p->graph, .node = n, .opset = n->opset, .n_in = n->n_inputs,
                          .n_out = n->n_outputs, .in = in, .out = out_t,
                          .intra_threads = p->opts.intra_threads, .no_winograd = p->opts.disable_winograd};
}

/* The implicit inputs of node n of g: values of g (by name) that its graph attributes read
   from enclosing graphs (their OUTER values, attribute order, duplicates removed).  *ids is
   malloc'd (NULL when none). */
ge_status ge_node_implicit_inputs(const ge_graph *g, const ge_node *n, int32_t **ids, size_t *count);

#endif
