/* In-place editing of a ge_graph for the optimisation passes.
 *
 * A pass opens an edit session (ge_edit_begin), looks at use counts, marks nodes dead,
 * appends nodes and rewires readers, then calls ge_edit_commit, which drops the dead nodes
 * and toposorts the graph again.  Values are never deleted (their ids stay stable): a value
 * whose producer was removed and that nobody reads is simply an orphan that the compiler
 * ignores.
 *
 * Some of these helpers would belong in src/ir (removing nodes, adding a node by value ids);
 * they live here because src/ir is owned elsewhere. */
#ifndef GE_PASSES_GRAPH_EDIT_H
#define GE_PASSES_GRAPH_EDIT_H

#include "ir/ir.h"

typedef struct ge_edit {
  ge_graph *g;
  int32_t *uses;   /* per value: node inputs of live nodes + graph outputs reading it */
  int32_t *head;   /* per value: first entry of its reader list in `rd` (-1: none) */
  struct ge_edit_reader { int32_t node, slot, next; } *rd; /* may hold stale entries */
  size_t n_rd, cap_rd;
  bool *is_out;    /* per value: a graph output */
  bool *is_in;     /* per value: a graph input */
  bool *dead;      /* per node */
  size_t cap_values, cap_nodes;
  size_t n_dead;
  size_t n_added;
  bool changed;
} ge_edit;

ge_status ge_edit_begin(ge_graph *g, ge_edit *e);
/* Drops dead nodes, fixes producers and node indices, toposorts.  Frees the session (also on
   failure). */
ge_status ge_edit_commit(ge_edit *e);
/* Frees the session without committing (the graph may hold dead nodes: only after errors). */
void ge_edit_abort(ge_edit *e);

/* Marks node ni dead; its input uses are released. */
void ge_edit_kill(ge_edit *e, int32_t ni);
/* Every live reader (node input) of value `from` reads `to` instead.  Graph outputs are not
   touched. */
void ge_edit_replace_reads(ge_edit *e, int32_t from, int32_t to);
/* Makes `from` disappear in favour of `to` (an identity): readers of from read to.  When
   `from` is a graph output, its name must survive: then `to` must be an intermediate that is
   not a graph output, and its producer is made to produce `from` instead (readers of `to`
   read `from`).  can_forward is false when that is not possible.  forward kills the producer
   of `from`. */
bool ge_edit_can_forward(const ge_edit *e, int32_t from, int32_t to);
void ge_edit_forward(ge_edit *e, int32_t from, int32_t to);
/* Sets input slot k of node ni to value v (-1 = omitted), keeping use counts. */
void ge_edit_set_input(ge_edit *e, int32_t ni, size_t k, int32_t v);

/* A fresh intermediate value named after `base` (made unique). */
ge_status ge_edit_new_value(ge_edit *e, const char *base, int32_t *id);
/* A new initializer named after `base`; takes ownership of t (freed on failure too). */
ge_status ge_edit_add_constant(ge_edit *e, const char *base, ge_tensor *t, int32_t *id);
/* Appends a node reading and writing value ids (-1 = omitted).  The outputs must not be
   produced by a live node.  opset 0 means the graph's opset for the domain (for "ai.ge" the
   graph's import is created at version 1 when missing).  Pointers into g->nodes are invalid
   afterwards. */
ge_status ge_edit_add_node(ge_edit *e, const char *op_type, const char *domain, const char *name,
                           const int32_t *in, size_t n_in, const int32_t *out, size_t n_out,
                           int32_t *node_id);
/* Copies attribute `name` of node src onto node dst (no-op when absent). */
ge_status ge_edit_copy_attr(ge_node *dst, const ge_node *src, const char *name);
/* Copies every attribute of src onto dst. */
ge_status ge_edit_copy_attrs(ge_node *dst, const ge_node *src);
ge_status ge_edit_set_attr_string(ge_node *n, const char *name, const char *s);
ge_status ge_edit_set_attr_float(ge_node *n, const char *name, float f);
ge_status ge_edit_set_attr_int(ge_node *n, const char *name, int64_t v);
ge_status ge_edit_set_attr_floats(ge_node *n, const char *name, const float *f, size_t n_f);
ge_status ge_edit_set_attr_ints(ge_node *n, const char *name, const int64_t *v, size_t n_v);
/* Removes attribute `name` from n (no-op when absent). */
void ge_edit_del_attr(ge_node *n, const char *name);

/* --- queries --- */
/* The live producer node of v, or -1. */
int32_t ge_edit_producer(const ge_edit *e, int32_t v);
/* The initializer of v when v is a constant that is not a graph input (so it cannot be
   overridden at run time); NULL otherwise. */
const ge_tensor *ge_edit_const(const ge_edit *e, int32_t v);
/* v is read exactly once (by one node input) and is not a graph output. */
bool ge_edit_single_use(const ge_edit *e, int32_t v);
/* The only live node reading v (with slot) when ge_edit_single_use; -1 otherwise. */
int32_t ge_edit_single_reader(const ge_edit *e, int32_t v, size_t *slot);
/* The live reads of v: up to cap (node, slot) pairs; returns the number of reads (may exceed
   cap).  Graph outputs are not reads. */
size_t ge_edit_readers(const ge_edit *e, int32_t v, int32_t *nodes, size_t *slots, size_t cap);
/* Node ni is live, its op type is `op` and its domain is ONNX. */
bool ge_edit_is_op(const ge_edit *e, int32_t ni, const char *op);
/* The scalar value of a constant with one element (any numeric dtype). */
bool ge_edit_const_scalar(const ge_edit *e, int32_t v, double *out);
/* The type of v (dtype GE_DTYPE_COUNT when unknown). */
const ge_type *ge_edit_type(const ge_edit *e, int32_t v);

#endif
