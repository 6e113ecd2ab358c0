/* The .gem offline model (ge compile): a small header recording how the model was compiled,
 * followed by the optimized graph serialized as an ONNX ModelProto.
 *
 * Layout (integers little-endian):
 *   0       "GEM1"                      magic
 *   4       u32 format version          GE_GEM_FORMAT_VERSION
 *   8       u32 H                       bytes of the text header that follows
 *   12      H bytes                     "key=value\n" lines: ge_version, precision, opt_level,
 *                                       input_shape (one line per --input-shape NAME:D,D,..)
 *   12+H    u64 P                       payload bytes
 *   20+H    u64 checksum                of the payload (ge_hash64, ir.h)
 *   28+H    P bytes                     ONNX ModelProto of the optimized graph
 * The file ends exactly after the payload.  Anything else (truncation, a bad checksum, an
 * unknown format version, a different ge version) is GE_ERR_PARSE naming the file. */
#ifndef GE_FRONTEND_GEM_H
#define GE_FRONTEND_GEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

#define GE_GEM_MAGIC "GEM1"
#define GE_GEM_FORMAT_VERSION 1u
#define GE_GEM_FIXED_BYTES 28u /* magic, version, H, P, checksum */
#define GE_GEM_MAX_HEADER (1u << 20)

typedef struct ge_gem_header {
  uint32_t format_version;
  char ge_version[32];
  int precision_mode;    /* ge_precision_mode */
  int opt_level;         /* 0..3 */
  char **input_shapes;   /* "NAME:D,D,.." as given to ge compile; owned */
  size_t n_input_shapes;
} ge_gem_header;

/* A header for this build: current format and ge version, no input shapes. */
void ge_gem_header_init(ge_gem_header *h, int precision_mode, int opt_level);
/* Appends a copy of "NAME:D,D,..". */
ge_status ge_gem_header_add_shape(ge_gem_header *h, const char *name, const char *dims);
void ge_gem_header_clear(ge_gem_header *h);

/* Serializes everything before the payload into a malloc'd buffer. */
ge_status ge_gem_header_encode(const ge_gem_header *h, uint64_t payload_size,
                               uint64_t payload_checksum, uint8_t **out, size_t *out_size);
/* Parses and checks a whole .gem file's bytes; *payload points into data.  `label` names the
   file in messages.  On failure h is cleared. */
ge_status ge_gem_parse(const void *data, size_t size, const char *label, ge_gem_header *h,
                       const uint8_t **payload, size_t *payload_size);

/* Writes g (already optimized) with header h to path. */
ge_status ge_gem_save(const ge_graph *g, const ge_gem_header *h, const char *path);
/* Loads a .gem file's bytes (see ge_onnx_import_ex for trim/drop): the graph comes back marked
   optimized, with the precision mode and opt level it was compiled with. */
ge_status ge_gem_import(const void *data, size_t size, const char *label, const char *base_dir,
                        void (*trim)(void *ctx), void (*drop)(void *ctx), void *drop_ctx,
                        ge_file_ref *backing, uint64_t backing_off, ge_graph **out);

/* ge.exec.precision_mode values, long ("allow_fp32_to_bf16") or short ("bf16") form: the
   ge_precision_mode, or -1 when unknown. */
int ge_gem_precision_parse(const char *s);
const char *ge_gem_precision_name(int mode);

#endif
