/* The ONNX frontend (internal): import a serialized ModelProto into a ge_graph, and export a
 * ge_graph back to a ModelProto.  Parsing goes through protobuf-c with ge's own schema
 * (ge_onnx.proto); nothing here knows about the compiler or a backend. */
#ifndef GE_FRONTEND_ONNX_ONNX_H
#define GE_FRONTEND_ONNX_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* Deepest nesting of subgraphs (GRAPH/GRAPHS attributes) the importer accepts. */
#define GE_ONNX_MAX_SUBGRAPH_DEPTH 64
/* Deepest nesting of protobuf messages accepted before protobuf-c sees the bytes (a graph
   level costs three: GraphProto -> NodeProto -> AttributeProto). */
#define GE_ONNX_MAX_MESSAGE_DEPTH (4 * GE_ONNX_MAX_SUBGRAPH_DEPTH + 16)

/* Imports a serialized ONNX ModelProto.  `label` names the model in messages (a file path or
   "<memory>"); `base_dir` is where external tensor data is looked up (NULL: external data is
   an error).  On failure *out is NULL and the message names `label`. */
ge_status ge_onnx_import(const void *data, size_t size, const char *label,
                         const char *base_dir, ge_graph **out);
/* The same for bytes the caller can release early (a mapped file): `trim(drop_ctx)` (may be
   NULL) may be called any number of times while the bytes are unpacked, to discard resident
   pages already read (the bytes must stay readable: a private file mapping re-reads them);
   `drop(drop_ctx)` (may be NULL) is called once they have been unpacked, before the tensors are
   made (whatever the outcome), and the bytes are not read after it.  `backing` (may be NULL):
   the file the bytes are read from, data[0] being at file offset `backing_off`; large raw
   initializers of the main graph then get it as their backing (ge_tensor_set_backing), so that
   their memory can be reclaimed once packed. */
ge_status ge_onnx_import_ex(const void *data, size_t size, const char *label,
                            const char *base_dir, void (*trim)(void *ctx),
                            void (*drop)(void *ctx), void *drop_ctx, ge_file_ref *backing,
                            uint64_t backing_off, ge_graph **out);

/* Serializes g as an ONNX ModelProto into a malloc'd buffer (*out_data, freed by the caller
   with free()). */
ge_status ge_onnx_export(const ge_graph *g, void **out_data, size_t *out_size);

/* Checks that `data` is a well-formed protobuf stream of a ModelProto whose messages nest no
   deeper than GE_ONNX_MAX_MESSAGE_DEPTH (protobuf-c itself recurses without a limit).  Returns
   GE_OK, or GE_ERR_PARSE with a message naming `label`. */
ge_status ge_onnx_check_wire(const void *data, size_t size, const char *label);

/* Walks the top level of a protobuf stream: sets bit n of *varint_fields / *len_fields for
   each field number n < 64 seen with wire type varint / length-delimited.  False when the
   bytes are not a well-formed protobuf stream. */
bool ge_onnx_wire_fields(const void *data, size_t size, uint64_t *varint_fields,
                         uint64_t *len_fields);

#endif /* GE_FRONTEND_ONNX_ONNX_H */
