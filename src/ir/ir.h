/* The intermediate representation: tensors, shapes, attributes, values, nodes, graphs.
 * Nothing here knows about a backend or a file format. */
#ifndef GE_IR_IR_H
#define GE_IR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ge/ge.h"
#include "ir/error.h"

/* ------------------------------------------------------------------ dtypes */

/* Maps an ONNX TensorProto.DataType code to ge_dtype; false when ge has no such dtype. */
bool ge_dtype_from_onnx(int32_t onnx_type, ge_dtype *out);
int32_t ge_dtype_to_onnx(ge_dtype dt);
bool ge_dtype_is_float(ge_dtype dt);   /* f16 bf16 f32 f64 */
bool ge_dtype_is_int(ge_dtype dt);     /* signed and unsigned ints (not bool) */
bool ge_dtype_is_signed(ge_dtype dt);

/* half-precision conversions (round to nearest even) */
float ge_f16_to_f32(uint16_t h);
uint16_t ge_f32_to_f16(float f);
float ge_bf16_to_f32(uint16_t h);
uint16_t ge_f32_to_bf16(float f);
/* The same two bf16 conversions inline, for loops that should vectorise. */
static inline uint16_t ge_f32_to_bf16_inline(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint16_t r = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40u) : r; /* NaN stays quiet */
}
static inline float ge_bf16_to_f32_inline(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ------------------------------------------------------------------ shapes */

/* A dimension is >= 0 when known.  GE_DIM_UNKNOWN is an anonymous unknown; a value <= -2
   is the symbol with id -(d + 2) in the graph's symbol table (same id = same size). */
#define GE_DIM_UNKNOWN (-1)
#define GE_DIM_SYM(id) (-(int64_t)(id)-2)
#define GE_DIM_SYM_ID(d) ((size_t)(-(d)-2))
#define GE_RANK_UNKNOWN (-1)

typedef struct ge_shape {
  int32_t rank; /* GE_RANK_UNKNOWN or 0..GE_MAX_RANK */
  int64_t dims[GE_MAX_RANK];
} ge_shape;

bool ge_shape_is_static(const ge_shape *s);      /* rank known and every dim >= 0 */
bool ge_shape_equal(const ge_shape *a, const ge_shape *b);
/* Element count of a static shape; false on overflow or a dynamic shape. */
bool ge_shape_numel(const ge_shape *s, size_t *out);
/* "[1,3,224,224]" / "[N,?,768]" / "[*]" into buf; returns buf. syms may be NULL. */
const char *ge_shape_str(const ge_shape *s, const ge_graph *g, char *buf, size_t cap);
/* numpy broadcasting of two shapes (symbolic dims allowed). GE_ERR_SHAPE if incompatible. */
ge_status ge_shape_broadcast(const ge_shape *a, const ge_shape *b, ge_shape *out);
/* Checked size arithmetic. */
bool ge_mul_overflow_size(size_t a, size_t b, size_t *out);

/* ------------------------------------------------------------------ tensors */

/* The public ge_tensor.  Kernels see these as plain structs: dims/rank/data. */
struct ge_tensor {
  ge_dtype dtype;
  int32_t rank;
  int64_t dims[GE_MAX_RANK];
  size_t numel;
  size_t nbytes;  /* numel * dtype size */
  void *data;     /* for GE_STRING: char *[numel], each owned */
  void (*release)(void *data, void *ctx); /* NULL: memory not owned */
  void *release_ctx;
  bool owns;      /* data allocated by ge (freed with ge_aligned_free) */
};

/* Allocate with 64-byte alignment (2 MiB and advised for huge pages from 2 MiB on, tensor.c);
   NULL on failure. size 0 returns a valid pointer. */
void *ge_aligned_alloc(size_t size);
/* One core's L2 cache in bytes, as the OS reports it (sysconf); 1 MiB when it does not. */
size_t ge_l2_cache_bytes(void);
/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t ge_now_ns(void);
/* A 64-bit hash of size bytes (multiply-xorshift over 8-byte words, then the tail bytes): the
   offline model's payload checksum (frontend/gem.h) and the key under which packed weights are
   shared (fast/pgemm.c).  Its value is part of the .gem format: do not change it. */
uint64_t ge_hash64(const void *data, size_t size);
void ge_aligned_free(void *p);
/* A packed constant (weights in a kernel's layout, kept for a plan's life): as ge_aligned_alloc,
   but blocks under 2 MiB share huge-page slabs (tensor.c) where GE_CONST_SLABS is 1.  Free with
   ge_const_free only. */
#if defined(__SANITIZE_ADDRESS__)
#define GE_CONST_SLABS 0 /* under AddressSanitizer each block is its own allocation */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GE_CONST_SLABS 0
#endif
#endif
#ifndef GE_CONST_SLABS
#define GE_CONST_SLABS 1
#endif
void *ge_const_alloc(size_t size);
void ge_const_free(void *p);

/* A tensor struct on the stack/in an array: init fields and allocate owned zeroed storage. */
ge_status ge_tensor_init_alloc(ge_tensor *t, ge_dtype dt, const int64_t *dims, int32_t rank);
/* The same with the contents undefined (a string tensor's are still NULL pointers): for a
   buffer its writer fills whole, e.g. the output of a kernel that overwrites its outputs. */
ge_status ge_tensor_init_alloc_uninit(ge_tensor *t, ge_dtype dt, const int64_t *dims, int32_t rank);
/* Release the storage of a tensor struct that was not malloc'd itself (does not free t). */
void ge_tensor_release_storage(ge_tensor *t);
/* Non-owning view: same dtype/shape/data, release NULL, owns false. */
void ge_tensor_view(ge_tensor *dst, const ge_tensor *src);
/* Create from a ge_shape (must be static). */
ge_status ge_tensor_create_shape(ge_dtype dt, const ge_shape *s, ge_tensor **out);
void ge_tensor_shape(const ge_tensor *t, ge_shape *out);
/* Shared constant storage (weights read by several graph copies).  ge_tensor_make_shared turns
   t's storage (owned or released by a callback) into a reference-counted block, in place; string
   tensors are left as they are.  ge_tensor_share returns a new tensor struct on the same storage
   when t is shared (one more reference; the storage goes when the last struct is freed), else a
   deep copy as ge_tensor_clone.  Shared storage must be treated as read-only: a pass or kernel
   that changes a constant's values works on a ge_tensor_clone. */
ge_status ge_tensor_make_shared(ge_tensor *t);
ge_status ge_tensor_share(const ge_tensor *t, ge_tensor **out);
bool ge_tensor_is_shared(const ge_tensor *t);
/* Reclaimable weights.  A shared constant whose bytes are also in a model file can be given
   that file as its backing; its resident pages can then be dropped (ge_tensor_evict) while no
   one holds a pin, and are read back from the file when it is pinned again.  Whoever reads a
   constant's bytes (passes, compilation, kernels at run time, export) must hold a pin on it for
   as long as it reads them; a tensor without a backing is never evicted and pins cost nothing. */
typedef struct ge_file_ref ge_file_ref;
/* Takes over fd (closed on failure too); path is for messages. */
ge_status ge_file_ref_new(int fd, const char *path, ge_file_ref **out);
void ge_file_ref_unref(ge_file_ref *f);
int ge_file_ref_fd(const ge_file_ref *f);
/* t must be shared; its nbytes bytes equal the file's at offset off.  Adds a file reference. */
ge_status ge_tensor_set_backing(ge_tensor *t, ge_file_ref *f, uint64_t off);
bool ge_tensor_has_backing(const ge_tensor *t);
/* Whether its bytes are dropped from memory right now (for tests and diagnostics). */
bool ge_tensor_is_evicted(const ge_tensor *t);
/* Pin: reads evicted pages back first (fails if the file changed since it was loaded).  A soft
   pin is a compilation's: it lets ge_tensor_evict_packed drop the bytes when that compilation
   holds the only pin (its one reader has packed them). */
ge_status ge_tensor_pin(const ge_tensor *t);
void ge_tensor_unpin(const ge_tensor *t);
ge_status ge_tensor_pin_soft(const ge_tensor *t);
void ge_tensor_unpin_soft(const ge_tensor *t);
/* Drops the resident pages of a backed constant no one pins (no-op otherwise). */
void ge_tensor_evict(const ge_tensor *t);
/* The same while the caller's compilation holds the only (soft) pin. */
void ge_tensor_evict_packed(const ge_tensor *t);
/* Pins / unpins every constant value of g (only top-level initializers get a backing); unpin
   only after a successful pin. */
ge_status ge_graph_pin_constants(const ge_graph *g, bool soft);
void ge_graph_unpin_constants(const ge_graph *g, bool soft);
/* A scalar read of element i as double / int64 (any numeric dtype, bool). */
double ge_tensor_get_f64(const ge_tensor *t, size_t i);
int64_t ge_tensor_get_i64(const ge_tensor *t, size_t i);

/* dst = a + b, or a - b when sub, element by element (same dtype and element count; wrapping
   integers, float16/bfloat16 through float32).  false for a dtype without arithmetic. */
bool ge_tensor_add_sub(ge_tensor *dst, const ge_tensor *a, const ge_tensor *b, bool sub);

/* ------------------------------------------------------------------ attributes */

/* An owned attribute (copied from ge_attr or parsed from a file). */
typedef struct ge_attr_value {
  char *name;
  ge_attr_kind kind;
  float f;
  int64_t i;
  char *s;            /* STRING: NUL-terminated (bytes with embedded NUL are cut) */
  size_t s_len;
  ge_tensor *t;       /* TENSOR */
  ge_graph *g;        /* GRAPH: a subgraph whose parent is the node's graph */
  size_t n;           /* element count of the list kinds */
  float *floats;
  int64_t *ints;
  char **strings;
  ge_tensor **tensors;
  ge_graph **graphs;
  char *ref_attr_name; /* inside function bodies: refers to the caller's attribute */
  char *doc;
  struct ge_type *type_attr; /* ONNX TYPE_PROTO attribute (kind UNDEFINED): owned, malloc'd */
} ge_attr_value;

void ge_attr_value_clear(ge_attr_value *a);
ge_status ge_attr_value_copy(ge_attr_value *dst, const ge_attr_value *src, ge_graph *parent);
ge_status ge_attr_value_from_public(ge_attr_value *dst, const ge_attr *src, ge_graph *parent);
const char *ge_attr_kind_name(ge_attr_kind k);

/* ------------------------------------------------------------------ values and nodes */

typedef enum ge_value_kind {
  GE_VALUE_INTERMEDIATE = 0, /* produced by a node */
  GE_VALUE_INPUT,            /* a graph input */
  GE_VALUE_CONSTANT,         /* an initializer (may also be an input: a default) */
  GE_VALUE_OUTER,            /* a subgraph's reference to a value of an enclosing graph */
  GE_VALUE_VARIABLE,         /* a session variable; `constant` holds its initial value */
} ge_value_kind;

typedef enum ge_type_kind {
  GE_TYPE_TENSOR = 0,
  GE_TYPE_SEQUENCE,  /* a sequence of tensors of elem dtype */
  GE_TYPE_OPTIONAL,  /* an optional of a tensor (or of a sequence when elem_is_seq) */
  GE_TYPE_UNKNOWN,
} ge_type_kind;

typedef struct ge_type {
  ge_type_kind kind;
  ge_dtype dtype;    /* GE_DTYPE_COUNT when not yet known */
  ge_shape shape;    /* tensor (or sequence element) shape */
  bool elem_is_seq;  /* OPTIONAL only */
} ge_type;

typedef struct ge_value {
  char *name;
  ge_value_kind kind;
  ge_type type;
  ge_tensor *constant;   /* CONSTANT: owned initializer */
  int32_t producer;      /* node index, -1 if none */
  int32_t producer_slot; /* output slot in the producer */
  char *doc;
} ge_value;

typedef struct ge_node {
  char *name;
  char *op_type;
  char *domain;          /* "" for ai.onnx */
  int64_t opset;         /* the graph's opset for domain (resolved at import) */
  int32_t *inputs;       /* value ids; -1 for an omitted optional input */
  size_t n_inputs;
  int32_t *outputs;      /* value ids; -1 for an omitted optional output */
  size_t n_outputs;
  ge_attr_value *attrs;
  size_t n_attrs;
  char *doc;
  int32_t index;         /* position in g->nodes (set by append/toposort; for messages) */
} ge_node;

typedef struct ge_opset {
  char *domain;
  int64_t version;
} ge_opset;

typedef struct ge_function ge_function;

/* ------------------------------------------------------------------ graphs */

struct ge_graph {
  char *name;
  ge_value *values;
  size_t n_values, cap_values;
  ge_node *nodes;          /* in insertion order (a topological order after ge_graph_toposort) */
  size_t n_nodes, cap_nodes;
  int32_t *inputs;         /* value ids */
  size_t n_inputs;
  int32_t *outputs;        /* value ids */
  size_t n_outputs;
  ge_opset *opsets;
  size_t n_opsets;
  char **syms;             /* symbolic dimension names; id = index */
  size_t n_syms;
  ge_graph *parent;        /* enclosing graph of a subgraph; NULL at top level */
  ge_function *functions;  /* model-local functions (top level only) */
  size_t n_functions;
  /* model metadata kept for a faithful round trip */
  int64_t ir_version;
  char *producer_name, *producer_version, *model_domain, *doc;
  int64_t model_version;
  char **meta_keys, **meta_values;
  size_t n_meta;
  /* a .gem offline model: the passes already ran (session skips them) with these settings */
  bool optimized;
  int precision_mode;      /* ge_precision_mode it was compiled with */
  int opt_level;           /* ge.graphOptimizationLevel it was compiled with */
  /* value name -> id hash index */
  int32_t *index;
  size_t index_cap;
  /* scratch for ge_graph_input_info/output_info dims (GE_MAX_RANK per entry) */
  int64_t *info_dims;
  size_t info_dims_cap;
};

/* A model-local function (FunctionProto). */
struct ge_function {
  char *name, *domain, *overload;
  char **inputs, **outputs, **attr_names;
  size_t n_inputs, n_outputs, n_attr_names;
  ge_attr_value *attr_defaults; /* attribute_proto */
  size_t n_attr_defaults;
  ge_graph *body;              /* nodes only; inputs/outputs are the names above */
  ge_opset *opsets;
  size_t n_opsets;
};

ge_graph *ge_graph_new(const char *name, ge_graph *parent);
/* Deep copy; parent pointer of the copy is `parent`. */
ge_status ge_graph_clone(const ge_graph *g, ge_graph *parent, ge_graph **out);

/* Value lookup in this graph only: id or -1. */
int32_t ge_graph_find_value(const ge_graph *g, const char *name);
/* Get or create a value by name (kind INTERMEDIATE, type unknown). */
ge_status ge_graph_value(ge_graph *g, const char *name, int32_t *id);
/* Makes v a value of `kind` (CONSTANT or VARIABLE) holding t, which it takes; its type
   becomes t's tensor type. */
void ge_value_set_tensor(ge_value *v, ge_value_kind kind, ge_tensor *t);
/* Resolve a name as a node input: this graph, else an enclosing graph (creating an OUTER
   value here).  GE_ERR_NOT_FOUND if no graph defines it (used by validation). */
ge_status ge_graph_resolve_input(ge_graph *g, const char *name, int32_t *id);
/* Append a node; inputs/outputs by name ("" = omitted).  Does not validate the op. */
ge_status ge_graph_append_node(ge_graph *g, const char *op_type, const char *domain,
                               const char *name, const char *const *inputs, size_t n_in,
                               const char *const *outputs, size_t n_out, int32_t *node_id);
/* Opset version the graph imports for a domain ("" and "ai.onnx" are the same); walks up to
   parents; 0 when not imported. */
int64_t ge_graph_opset(const ge_graph *g, const char *domain);
ge_status ge_graph_set_opset_version(ge_graph *g, const char *domain, int64_t version);
/* Symbol id for a dim name (added when new). */
size_t ge_graph_sym(ge_graph *g, const char *name);
/* Sort nodes topologically (stable); GE_ERR_INVALID_ARGUMENT naming a node on a cycle. */
ge_status ge_graph_toposort(ge_graph *g);
/* Consumers: for each value the number of node inputs (and graph outputs) that read it. */
ge_status ge_graph_use_counts(const ge_graph *g, int32_t **counts_out);

/* Attribute lookup on a node; NULL when absent. */
const ge_attr_value *ge_node_attr(const ge_node *n, const char *name);
int64_t ge_node_attr_int(const ge_node *n, const char *name, int64_t dflt);
float ge_node_attr_float(const ge_node *n, const char *name, float dflt);
const char *ge_node_attr_string(const ge_node *n, const char *name, const char *dflt);
/* ints attribute: sets data and count; false when absent (data NULL, count 0) */
bool ge_node_attr_ints(const ge_node *n, const char *name, const int64_t **data, size_t *count);
bool ge_node_attr_floats(const ge_node *n, const char *name, const float **data, size_t *count);
/* Add an owned attribute to a node (takes the contents of *a; a is zeroed). */
ge_status ge_node_add_attr(ge_node *n, ge_attr_value *a);

/* "node 'conv1' (Conv)" */
const char *ge_node_desc(const ge_node *n, char *buf, size_t cap);

/* Known newest opset of ai.onnx that ge implements. */
#define GE_ONNX_OPSET_MAX 28
/* Oldest ai.onnx opset accepted.  Schemas cover the older versions where semantics match or
   refuse them loudly (legacy broadcast with an axis, ops whose schemas start later). */
#define GE_ONNX_OPSET_MIN 1

#endif /* GE_IR_IR_H */
