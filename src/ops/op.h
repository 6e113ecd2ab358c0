/* Op schemas: arity, attribute checks, and shape/type inference.  One file per family
 * (src/ops/<family>.c) exports a table `const ge_op_schema ge_schemas_<family>[]` ended by
 * an entry whose name is NULL; src/ops/registry.c lists the families.  No backend here. */
#ifndef GE_OPS_OP_H
#define GE_OPS_OP_H

#include "ir/ir.h"

#define GE_VARIADIC 0xffff

/* What inference knows about one input. */
typedef struct ge_infer_input {
  bool present;              /* false for an omitted optional input */
  const ge_type *type;       /* dtype GE_DTYPE_COUNT = unknown */
  const ge_tensor *value;    /* the value when known at compile time (constant), else NULL */
} ge_infer_input;

typedef struct ge_infer_ctx {
  const ge_graph *graph;
  const ge_node *node;
  int64_t opset;             /* node->opset */
  size_t n_in, n_out;
  const ge_infer_input *in;
  ge_type *out;              /* to fill: kind, dtype, shape (dims may be unknown/symbolic) */
} ge_infer_ctx;

typedef ge_status (*ge_infer_fn)(ge_infer_ctx *c);

typedef struct ge_op_schema {
  const char *domain;        /* "" = ai.onnx, "ai.ge", "com.microsoft", ... */
  const char *name;
  int since;                 /* first opset version covered */
  int until;                 /* last opset version covered; 0 = open */
  uint16_t min_in, max_in;   /* GE_VARIADIC for unbounded */
  uint16_t min_out, max_out;
  ge_infer_fn infer;
} ge_op_schema;

/* Looks the schema up by (domain, name, opset). NULL if none. */
const ge_op_schema *ge_op_find_schema(const char *domain, const char *name, int64_t opset);
/* Iterate all schemas (for docs and `ge inspect`). */
size_t ge_op_schema_count(void);
const ge_op_schema *ge_op_schema_at(size_t i);

/* Ops whose effect is more than their outputs (ai.ge Summary, Save, Callback, Assign,
   AssignAdd, AssignSub): never removed, merged or folded. */
bool ge_op_has_side_effects(const ge_node *n);
/* Ops whose outputs differ from run to run (RandomNormal, Bernoulli, ...): never merged or
   folded. */
bool ge_op_is_random(const ge_node *n);

/* Run inference on one node: checks arity, then calls infer.  Errors name the node and op.
   The node's domain "" and "ai.onnx" are the same. */
ge_status ge_op_infer(ge_infer_ctx *c);

/* --- helpers for infer functions (all set a message naming the node on failure) --- */
ge_status ge_infer_fail(const ge_infer_ctx *c, ge_status st, const char *fmt, ...) GE_PRINTF(3, 4);
/* out[i] = type of in[j] */
void ge_infer_copy(ge_infer_ctx *c, size_t out_i, size_t in_j);
void ge_infer_set(ge_infer_ctx *c, size_t out_i, ge_dtype dt, const ge_shape *s);
/* rank-unknown shape */
void ge_shape_set_unknown(ge_shape *s);
/* true when input i is present and its dtype is known */
bool ge_infer_has_input(const ge_infer_ctx *c, size_t i);
/* Read a small constant int tensor input (any int dtype) into dst (cap entries).
   Returns false when the input is absent or not constant. */
bool ge_infer_const_ints(const ge_infer_ctx *c, size_t i, int64_t *dst, size_t cap, size_t *n);
/* Normalise an axis in [-rank, rank-1]; error naming the node when out of range. */
ge_status ge_infer_axis(const ge_infer_ctx *c, int64_t axis, int64_t rank, int64_t *out);
/* Check dtype of input i is in a list ending with GE_DTYPE_COUNT. */
ge_status ge_infer_check_dtype(const ge_infer_ctx *c, size_t i, const ge_dtype *allowed);

#endif
