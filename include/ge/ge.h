/* ge — a graph compiler and executor for deep-learning models.
 *
 * The one public C header.  Every function returns a ge_status (0 is success); on failure
 * ge_last_error() returns a message, owned by the library and local to the calling thread,
 * naming what went wrong (file, node, op, shape, option).  Out-parameters come last.
 *
 * Handles are opaque.  Tensors are dense and row-major.  Unless documented otherwise, the
 * library never keeps a pointer that a caller passes in beyond the call.
 */
#ifndef GE_GE_H
#define GE_GE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GE_API __attribute__((visibility("default")))
#else
#define GE_API
#endif

#define GE_VERSION_MAJOR 0
#define GE_VERSION_MINOR 1
#define GE_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

typedef enum ge_status {
  GE_OK = 0,
  GE_ERR_INVALID_ARGUMENT,
  GE_ERR_NOT_FOUND,
  GE_ERR_UNSUPPORTED,
  GE_ERR_PARSE,
  GE_ERR_SHAPE,
  GE_ERR_OUT_OF_MEMORY,
  GE_ERR_STATE,
  GE_ERR_IO,
  GE_ERR_CALLBACK,
  GE_ERR_INTERNAL
} ge_status;

/* A static string naming the status ("GE_ERR_SHAPE"...). */
GE_API const char *ge_status_str(ge_status s);
/* What failed last on this thread, with context.  Never NULL; "" when nothing failed yet.
   Valid until the next failing call on the same thread. */
GE_API const char *ge_last_error(void);
/* "0.1.0" */
GE_API const char *ge_version(void);

/* ---------------------------------------------------------------- dtypes */

typedef enum ge_dtype {
  GE_F32, GE_F16, GE_BF16, GE_F64,
  GE_I8, GE_I16, GE_I32, GE_I64,
  GE_U8, GE_U16, GE_U32, GE_U64,
  GE_BOOL, GE_STRING,
  /* Low-precision dtypes (ONNX FLOAT8E4M3FN.. INT2).  ge stores every one of them unpacked,
     ONE BYTE PER ELEMENT, exactly as numpy's ml_dtypes does: a float8 element is its 8-bit
     code; a 4-bit or 2-bit element is its code in the low bits of the byte with the high bits
     zero (int4 -1 is 0x0f, int2 -2 is 0x02, float4e2m1 -0.5 is 0x09).  ge_dtype_size() is 1,
     ge_tensor_nbytes() is the element count.  Only ONNX files pack the 4-bit types (two per
     byte, the first element in the low nibble) and the 2-bit types (four per byte, the first
     element in the lowest two bits); the ONNX importer and exporter convert. */
  GE_F8E4M3FN,   /* "float8e4m3fn":   bias 7, max 448, NaN 0x7f/0xff, no inf */
  GE_F8E4M3FNUZ, /* "float8e4m3fnuz": bias 8, max 240, NaN 0x80 only, no -0, no inf */
  GE_F8E5M2,     /* "float8e5m2":     IEEE-like, bias 15, max 57344, inf and NaN */
  GE_F8E5M2FNUZ, /* "float8e5m2fnuz": bias 16, max 57344, NaN 0x80 only, no -0, no inf */
  GE_F8E8M0,     /* "float8e8m0":     2^(code-127), code 0xff NaN; no sign, no zero */
  GE_U4,         /* "uint4":  0..15 */
  GE_I4,         /* "int4":   -8..7 (two's complement nibble) */
  GE_F4E2M1,     /* "float4e2m1": bias 1, max 6, no inf, no NaN */
  GE_U2,         /* "uint2":  0..3 */
  GE_I2,         /* "int2":   -2..1 */
  GE_DTYPE_COUNT
} ge_dtype;

/* Bytes per element (GE_STRING: sizeof(char *)); 0 for an invalid dtype. */
GE_API size_t ge_dtype_size(ge_dtype dt);
/* "float32", "float16", "bfloat16", "float64", "int8", ..., "bool", "string". */
GE_API const char *ge_dtype_name(ge_dtype dt);

/* ---------------------------------------------------------------- options */

typedef struct ge_option {
  const char *key;
  const char *value;
} ge_option;

/* ---------------------------------------------------------------- process */

/* Must be called before a session is created.  Calling it again with the same options is
   harmless; with different options it returns GE_ERR_STATE.  Options are those of the table
   in docs/options.md (the same keys sessions take); they become the defaults of every session. */
GE_API ge_status ge_initialize(const ge_option *opts, size_t n_opts);
/* Drains pending work of live sessions; later calls on them return GE_ERR_STATE. */
GE_API ge_status ge_finalize(void);

/* ---------------------------------------------------------------- tensors */

typedef struct ge_tensor ge_tensor;

#define GE_MAX_RANK 16

/* A new zero-filled tensor owning its memory (64-byte aligned).  GE_STRING tensors hold
   `char *` elements, each NULL or a NUL-terminated string owned by the tensor (set them with
   ge_tensor_set_string). */
GE_API ge_status ge_tensor_create(ge_dtype dt, const int64_t *dims, size_t rank, ge_tensor **out);
/* A tensor viewing `data` without copying.  `nbytes` must equal the element count times the
   dtype size.  `release(data, ctx)`, if not NULL, is called once when the tensor is freed.
   GE_STRING tensors cannot wrap memory. */
GE_API ge_status ge_tensor_wrap(ge_dtype dt, const int64_t *dims, size_t rank, void *data,
                                size_t nbytes, void (*release)(void *data, void *ctx), void *ctx,
                                ge_tensor **out);
GE_API void ge_tensor_free(ge_tensor *t);
GE_API ge_dtype ge_tensor_dtype(const ge_tensor *t);
GE_API size_t ge_tensor_rank(const ge_tensor *t);
GE_API const int64_t *ge_tensor_dims(const ge_tensor *t);
GE_API size_t ge_tensor_numel(const ge_tensor *t);
GE_API size_t ge_tensor_nbytes(const ge_tensor *t);
GE_API void *ge_tensor_data(const ge_tensor *t);
/* Copies `s` into element i of a GE_STRING tensor. */
GE_API ge_status ge_tensor_set_string(ge_tensor *t, size_t i, const char *s);
/* A deep copy. */
GE_API ge_status ge_tensor_clone(const ge_tensor *t, ge_tensor **out);

/* Sequences and optionals (ONNX sequence(tensor) and optional(...) values) travel as
   ge_tensor handles of another kind: graph inputs and outputs of those types take and return
   them; ge_tensor_free frees them with what they hold; ge_tensor_clone does not copy them
   (use ge_value_clone).  An optional input may also be fed a plain tensor or a sequence
   (then it holds that value). */
#define GE_KIND_TENSOR 0
#define GE_KIND_SEQUENCE 1
#define GE_KIND_OPTIONAL 2
/* GE_KIND_TENSOR, GE_KIND_SEQUENCE or GE_KIND_OPTIONAL. */
GE_API int ge_tensor_kind(const ge_tensor *t);
/* An empty sequence of tensors of dtype `elem`. */
GE_API ge_status ge_sequence_create(ge_dtype elem, ge_tensor **out);
/* Appends a copy of tensor `item` (its dtype must be the sequence's). */
GE_API ge_status ge_sequence_append(ge_tensor *seq, const ge_tensor *item);
GE_API size_t ge_sequence_length(const ge_tensor *seq);
/* Element i (owned by the sequence), NULL past the end. */
GE_API const ge_tensor *ge_sequence_at(const ge_tensor *seq, size_t i);
/* An optional holding a copy of `value` (a tensor or a sequence), or empty when value is
   NULL (`elem`: the element dtype of the type it stands for). */
GE_API ge_status ge_optional_create(ge_dtype elem, const ge_tensor *value, ge_tensor **out);
/* What an optional holds (owned by it); NULL when empty. */
GE_API const ge_tensor *ge_optional_value(const ge_tensor *opt);
/* Element dtype of a sequence or optional; the dtype of a tensor. */
GE_API ge_dtype ge_value_elem_dtype(const ge_tensor *t);
/* A deep copy of a tensor, sequence or optional. */
GE_API ge_status ge_value_clone(const ge_tensor *t, ge_tensor **out);

/* ---------------------------------------------------------------- attributes */

typedef struct ge_graph ge_graph;

typedef enum ge_attr_kind {
  GE_ATTR_KIND_UNDEFINED = 0,
  GE_ATTR_KIND_FLOAT, GE_ATTR_KIND_INT, GE_ATTR_KIND_STRING, GE_ATTR_KIND_TENSOR,
  GE_ATTR_KIND_GRAPH, GE_ATTR_KIND_FLOATS, GE_ATTR_KIND_INTS, GE_ATTR_KIND_STRINGS,
  GE_ATTR_KIND_TENSORS, GE_ATTR_KIND_GRAPHS
} ge_attr_kind;

/* A tagged attribute value, named as in ONNX.  The library copies what it points to. */
typedef struct ge_attr {
  const char *name;
  ge_attr_kind kind;
  union {
    float f;
    int64_t i;
    const char *s;
    const ge_tensor *t;
    const ge_graph *g;
    struct { const float *data; size_t n; } floats;
    struct { const int64_t *data; size_t n; } ints;
    struct { const char *const *data; size_t n; } strings;
    struct { const ge_tensor *const *data; size_t n; } tensors;
    struct { const ge_graph *const *data; size_t n; } graphs;
  } v;
} ge_attr;

#define GE_ATTR_FLOAT(n, x) ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_FLOAT, .v.f = (x)})
#define GE_ATTR_INT(n, x) ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_INT, .v.i = (x)})
#define GE_ATTR_STRING(n, x) ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_STRING, .v.s = (x)})
#define GE_ATTR_TENSOR(n, x) ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_TENSOR, .v.t = (x)})
#define GE_ATTR_GRAPH(n, x) ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_GRAPH, .v.g = (x)})
#define GE_ATTR_FLOATS(n, p, c) \
  ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_FLOATS, .v.floats = {(p), (c)}})
#define GE_ATTR_INTS(n, p, c) \
  ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_INTS, .v.ints = {(p), (c)}})
#define GE_ATTR_STRINGS(n, p, c) \
  ((ge_attr){.name = (n), .kind = GE_ATTR_KIND_STRINGS, .v.strings = {(p), (c)}})

/* ---------------------------------------------------------------- graphs */

/* Loads a model recognised by content, not by name: ONNX (ModelProto), TensorFlow GraphDef,
   or a .gem offline model.  Options: "ge.onnx.externalDataDir" (where external tensor data
   lives; default: the model's folder).  Errors name the file and what is wrong. */
GE_API ge_status ge_graph_load(const char *path, const ge_option *opts, size_t n_opts,
                               ge_graph **out);
/* The same from memory; `base_dir` resolves external data (may be NULL). */
GE_API ge_status ge_graph_load_buffer(const void *data, size_t size, const char *base_dir,
                                      ge_graph **out);
GE_API ge_status ge_graph_create(const char *name, ge_graph **out);
/* dims[i] == -1: a dynamic dimension. */
GE_API ge_status ge_graph_add_input(ge_graph *g, const char *name, ge_dtype dt,
                                    const int64_t *dims, size_t rank);
/* The value is copied. */
GE_API ge_status ge_graph_add_constant(ge_graph *g, const char *name, const ge_tensor *value);
/* A variable: a named, mutable tensor kept by each session that runs the graph.  Its value
   starts as a copy of `initial` (copied now) when the graph is added to a session, unless the
   session already has a variable of that name (graphs of one session share variables by
   name; dtype and shape must agree).  Variables persist across runs of a session and are
   isolated between sessions.  Ops "ai.ge::Assign", "ai.ge::AssignAdd" and
   "ai.ge::AssignSub" (inputs: the variable, the value) write them; see docs/callbacks.md. */
GE_API ge_status ge_graph_add_variable(ge_graph *g, const char *name, const ge_tensor *initial);
/* op_type may carry a domain as "domain::Op" (e.g. "ai.ge::Summary"); plain names are
   ai.onnx.  An empty input name ("") is an omitted optional input. */
GE_API ge_status ge_graph_add_node(ge_graph *g, const char *op_type, const char *name,
                                   const char *const *inputs, size_t n_in,
                                   const char *const *outputs, size_t n_out,
                                   const ge_attr *attrs, size_t n_attrs);
GE_API ge_status ge_graph_add_output(ge_graph *g, const char *value_name);
/* Declares the opset a graph built with the builder targets (default: the newest known). */
GE_API ge_status ge_graph_set_opset(ge_graph *g, const char *domain, int64_t version);
/* Writes ONNX. */
GE_API ge_status ge_graph_save(const ge_graph *g, const char *path);
GE_API void ge_graph_free(ge_graph *g);

/* Introspection (also used by the Python package).  The inputs listed are those a caller
   feeds: an ONNX input that also has an initializer (a default) is not listed.  Before the
   graph is compiled, a value whose dtype is not known yet reports GE_DTYPE_COUNT, and one
   whose rank is not known reports rank 0. */
GE_API size_t ge_graph_num_inputs(const ge_graph *g);
GE_API size_t ge_graph_num_outputs(const ge_graph *g);
GE_API size_t ge_graph_num_nodes(const ge_graph *g);
/* Name, dtype and dims of input/output i; dims of -1 are dynamic.  *dims points into the
   graph and is valid until it changes.  Returns GE_ERR_NOT_FOUND for a bad index. */
GE_API ge_status ge_graph_input_info(const ge_graph *g, size_t i, const char **name,
                                     ge_dtype *dt, const int64_t **dims, size_t *rank);
GE_API ge_status ge_graph_output_info(const ge_graph *g, size_t i, const char **name,
                                      ge_dtype *dt, const int64_t **dims, size_t *rank);
/* Symbolic name of input/output dimension d, or NULL when it has none. */
GE_API const char *ge_graph_input_dim_name(const ge_graph *g, size_t i, size_t d);
/* GE_KIND_TENSOR, GE_KIND_SEQUENCE or GE_KIND_OPTIONAL: the kind of graph input i (indexed as
   ge_graph_input_info) / output i; -1 for a bad index. */
GE_API int ge_graph_input_kind(const ge_graph *g, size_t i);
GE_API int ge_graph_output_kind(const ge_graph *g, size_t i);

/* ---------------------------------------------------------------- sessions */

typedef struct ge_session ge_session;
typedef struct ge_tensor_map ge_tensor_map; /* name -> tensor; used by callbacks and variables */

GE_API ge_status ge_session_create(const ge_option *opts, size_t n_opts, ge_session **out);
/* Drains pending async work first. */
GE_API void ge_session_free(ge_session *s);
/* The session keeps its own copy of g; the caller may free g afterwards. */
GE_API ge_status ge_session_add_graph(ge_session *s, uint32_t graph_id, const ge_graph *g);
GE_API ge_status ge_session_remove_graph(ge_session *s, uint32_t graph_id);
/* Checks and compiles now rather than at the first run: every op, dtype and shape problem is
   reported here, naming the node. */
GE_API ge_status ge_session_build_graph(ge_session *s, uint32_t graph_id);
/* inputs in the order of the graph's inputs; outputs[i] receive new tensors the caller frees
   (n_out must equal the number of graph outputs).  Thread-safe. */
GE_API ge_status ge_session_run_graph(ge_session *s, uint32_t graph_id,
                                      ge_tensor *const *inputs, size_t n_in,
                                      ge_tensor **outputs, size_t n_out);
/* `done` is called once, on a library thread, with the status and the outputs (which `done`
   owns and must free).  The input tensors must stay alive until `done` is called. */
typedef void (*ge_run_done_fn)(ge_status st, ge_tensor **outputs, size_t n_out, void *user);
GE_API ge_status ge_session_run_graph_async(ge_session *s, uint32_t graph_id,
                                            ge_tensor *const *inputs, size_t n_in,
                                            ge_run_done_fn done, void *user);
/* Like ge_session_run_graph, but the outputs go into the caller's tensors: outputs[i] (from
   ge_tensor_create, or ge_tensor_wrap over the caller's memory) must have output i's dtype
   and shape (ge_session_graph_output_info).  The steps that produce an output write straight
   into it; an output that is an input, a constant or a value of data-dependent shape is
   copied in.  A tensor overlapping an input is allowed (it is then written after the run).
   For a static-shape graph without variables or callback ops, runs after the first allocate
   no memory in ge's executor.  On error the outputs' contents are unspecified.  Thread-safe
   (concurrent runs need distinct output tensors). */
GE_API ge_status ge_session_run_graph_into(ge_session *s, uint32_t graph_id,
                                           ge_tensor *const *inputs, size_t n_in,
                                           ge_tensor *const *outputs, size_t n_out);
/* How a graph's runs used their threads.  With ge.exec.adaptiveThreads on (the default for
   inference), a run whose ge.intraOpThreads > 1 threads keep waiting for one another (another
   process holds one of the cores) takes one thread instead until N threads pay again
   (docs/performance.md, "Adaptive thread count"). */
typedef struct ge_run_stats {
  uint64_t runs;            /* runs of the graph so far (failed ones included) */
  uint64_t runs_one_thread; /* of these, runs the adaptive thread count put on one thread */
  uint64_t switches;        /* times it went from N threads to one or back */
  uint64_t probes;          /* runs that tried the other thread count */
  int threads;              /* ge.intraOpThreads */
  int adaptive;             /* 1 where ge.exec.adaptiveThreads is on */
} ge_run_stats;
GE_API ge_status ge_session_graph_run_stats(ge_session *s, uint32_t graph_id, ge_run_stats *out);
/* Number of outputs of a graph added to the session. */
GE_API ge_status ge_session_graph_num_outputs(ge_session *s, uint32_t graph_id, size_t *n);
/* The dtype and shape of output i as compiled for the graph's declared input shapes
   (compiling it if needed); a dim only a run knows is -1.  dims has room for max_rank dims;
   *rank receives the rank. */
GE_API ge_status ge_session_graph_output_info(ge_session *s, uint32_t graph_id, size_t i,
                                              ge_dtype *dtype, int64_t *dims, size_t max_rank,
                                              size_t *rank);

/* ---------------------------------------------------------------- variables */

/* Copies of the current values of variables `names[0..n)` into out[i] (the caller frees
   them).  GE_ERR_NOT_FOUND names a variable no graph of the session declares.  A run's writes
   become visible atomically when the run ends. */
GE_API ge_status ge_session_get_variables(ge_session *s, const char *const *names, size_t n,
                                          ge_tensor **out);
/* Sets variables from a name -> tensor map (values are copied).  Every name must be a
   variable of the session with the same dtype and shape; nothing is changed when one is not.
   Works in both run modes (this is how a checkpoint is restored). */
GE_API ge_status ge_session_set_variables(ge_session *s, const ge_tensor_map *values);

/* ---------------------------------------------------------------- callbacks */

/* Called after a run of a graph that holds Summary / Save / Callback ops, with the data of
   that run under one key: "Summary" (tag -> tensor), "Save" (variable name -> its value after
   the run), or the `key` of a Callback op (input name -> tensor).  The map and its tensors
   are read-only and valid only for the duration of the call.  Return 0 for success; any other
   value is logged (key, graph id, code) and counted as a failure: it never stops the graph
   and the run still returns GE_OK.  Callbacks of one key never run concurrently with each
   other (stateful callbacks need no lock); different keys may.  In sync mode (default)
   callbacks run on the thread of ge_session_run_graph before it returns; with option
   ge.callbackMode=async they run on the session's callback thread, on copies, in the order
   of the runs for each key. */
typedef uint32_t (*ge_callback_fn)(uint32_t graph_id, const ge_tensor_map *params, void *user);
/* Sets `fn` as the only callback of `key` (replacing any earlier ones).  Safe while runs are
   in flight; takes effect from the next run.  GE_ERR_STATE before ge_initialize or after
   ge_finalize; GE_ERR_INVALID_ARGUMENT for a NULL fn or an empty key. */
GE_API ge_status ge_session_register_callback(ge_session *s, const char *key, ge_callback_fn fn,
                                              void *user);
/* Adds one more callback to `key`.  Callbacks of a key run in ascending `priority`; equal
   priorities run in the order they were added (register_callback uses priority 0). */
GE_API ge_status ge_session_add_callback(ge_session *s, const char *key, ge_callback_fn fn,
                                         void *user, int priority);

/* Metrics of one key, since the session was created. */
typedef struct ge_callback_stats {
  uint64_t calls;      /* callback invocations */
  uint64_t failures;   /* invocations that returned non-zero */
  double total_ms;     /* wall time spent in the callbacks */
  double mean_ms;      /* total_ms / calls (0 when no calls) */
  double max_ms;       /* the longest invocation */
  uint64_t bytes;      /* tensor bytes delivered (summed over invocations) */
} ge_callback_stats;
/* GE_ERR_NOT_FOUND for a key that has neither a callback nor data yet. */
GE_API ge_status ge_session_callback_stats(ge_session *s, const char *key, ge_callback_stats *out);
/* The i-th key the session knows (registration or data order); GE_ERR_NOT_FOUND past the
   end.  *key is valid while the session lives. */
GE_API ge_status ge_session_callback_key(ge_session *s, size_t i, const char **key);

/* ---------------------------------------------------------------- checkpoints */

/* Writes a tensor map as a safetensors file (tensors in map order; GE_STRING unsupported). */
GE_API ge_status ge_checkpoint_save(const ge_tensor_map *m, const char *path);
/* Reads a safetensors file written by ge or by the `safetensors` package. */
GE_API ge_status ge_checkpoint_load(const char *path, ge_tensor_map **out);
/* Reads a checkpoint into the session's variables (ge_session_set_variables). */
GE_API ge_status ge_session_restore_variables(ge_session *s, const char *path);
/* A ready-made "Save" consumer.  Register ge_checkpoint_writer_callback with the writer as
   `user`: each call writes "<prefix>-<graph_id>-<n>.safetensors" (n = 0, 1, 2... per writer)
   and overwrites "<prefix>-latest.safetensors".  One writer serves one key of one session
   (callbacks of a key never run concurrently); free it after the session. */
typedef struct ge_checkpoint_writer ge_checkpoint_writer;
GE_API ge_status ge_checkpoint_writer_create(const char *prefix, ge_checkpoint_writer **out);
GE_API void ge_checkpoint_writer_free(ge_checkpoint_writer *w);
/* Files written so far. */
GE_API uint64_t ge_checkpoint_writer_count(const ge_checkpoint_writer *w);
GE_API uint32_t ge_checkpoint_writer_callback(uint32_t graph_id, const ge_tensor_map *params,
                                              void *writer);

/* ---------------------------------------------------------------- TensorBoard */

/* A ready-made "Summary" consumer writing a TensorBoard event file
   "<logdir>/events.out.tfevents.<time>.<host>.<pid>.ge" (the folder must exist).  Register
   ge_summary_writer_callback with the writer as `user`.  Scalars become scalars, "histogram"
   and "tensor" summaries histograms, "image" summaries PNG images; the step is the writer's
   call count.  One writer serves one key of one session; free it after the session. */
typedef struct ge_summary_writer ge_summary_writer;
GE_API ge_status ge_summary_writer_create(const char *logdir, ge_summary_writer **out);
GE_API void ge_summary_writer_free(ge_summary_writer *w);
GE_API const char *ge_summary_writer_path(const ge_summary_writer *w);
/* Appends one event with a value per entry of `m` (types from ge_tensor_map_info). */
GE_API ge_status ge_summary_writer_write(ge_summary_writer *w, int64_t step, const ge_tensor_map *m);
GE_API uint32_t ge_summary_writer_callback(uint32_t graph_id, const ge_tensor_map *params,
                                           void *writer);

/* ---------------------------------------------------------------- tensor maps */

GE_API ge_status ge_tensor_map_create(ge_tensor_map **out);
/* Takes ownership of `value`; replaces an existing key. */
GE_API ge_status ge_tensor_map_put(ge_tensor_map *m, const char *key, ge_tensor *value);
GE_API void ge_tensor_map_free(ge_tensor_map *m);
GE_API size_t ge_tensor_map_size(const ge_tensor_map *m);
GE_API const char *ge_tensor_map_key(const ge_tensor_map *m, size_t i);
GE_API const ge_tensor *ge_tensor_map_value(const ge_tensor_map *m, size_t i);
GE_API const ge_tensor *ge_tensor_map_find(const ge_tensor_map *m, const char *key);
/* An optional annotation of entry i: in "Summary" maps, the Summary op's type ("scalar",
   "histogram", "tensor" or "image"); NULL when none. */
GE_API const char *ge_tensor_map_info(const ge_tensor_map *m, size_t i);
/* Sets (info NULL: clears) the annotation of an existing key; GE_ERR_NOT_FOUND otherwise. */
GE_API ge_status ge_tensor_map_set_info(ge_tensor_map *m, const char *key, const char *info);

#ifdef __cplusplus
}
#endif
#endif /* GE_GE_H */
