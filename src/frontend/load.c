/* ge_graph_load / ge_graph_load_buffer: recognise a model file by its content and hand it to
 * the frontend that reads it.  ONNX ModelProto and .gem offline models (frontend/gem.c) are
 * imported; a TensorFlow GraphDef is recognised and reported as not loadable here yet. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/gem.h"
#include "frontend/onnx/onnx.h"
#include "ir/ir.h"

#define BIT(n) ((uint64_t)1 << (n))

typedef enum model_format { FMT_UNKNOWN, FMT_ONNX, FMT_TF_GRAPHDEF, FMT_GEM } model_format;

static model_format detect_format(const uint8_t *p, size_t size) {
  if (size >= 3 && memcmp(p, "GEM", 3) == 0) return FMT_GEM;
  uint64_t vf, lf;
  if (ge_onnx_wire_fields(p, size, &vf, &lf)) {
    /* GraphDef: node = 1 (message), library = 2, version = 3 (varint), versions = 4.
       ModelProto: ir_version = 1 (varint), graph = 7, opset_import = 8. */
    if ((lf & BIT(1)) || ((vf & BIT(3)) && !(vf & BIT(1)))) return FMT_TF_GRAPHDEF;
    return FMT_ONNX;
  }
  /* Malformed protobuf: ONNX when it starts like a ModelProto (a truncated model). */
  switch (p[0]) {
    case 0x08: case 0x12: case 0x1a: case 0x22: case 0x28: case 0x32: case 0x3a: case 0x42:
    case 0x72: case 0xa2: case 0xca:
      return FMT_ONNX;
    default:
      return FMT_UNKNOWN;
  }
}

/* `drop(drop_ctx)` (may be NULL) is called by the ONNX importer as soon as the bytes are
   unpacked; the caller releases them afterwards when it was not called. */
static ge_status load_any(const void *data, size_t size, const char *label, const char *base_dir,
                          void (*trim)(void *ctx), void (*drop)(void *ctx), void *drop_ctx,
                          ge_file_ref *backing, ge_graph **out) {
  if (size == 0) return ge_error(GE_ERR_PARSE, "%s: empty file, not a model", label);
  switch (detect_format(data, size)) {
    case FMT_ONNX:
      return ge_onnx_import_ex(data, size, label, base_dir, trim, drop, drop_ctx, backing, 0, out);
    case FMT_TF_GRAPHDEF:
      return ge_error(GE_ERR_UNSUPPORTED,
                      "%s: looks like a TensorFlow GraphDef; TensorFlow GraphDef import is not "
                      "implemented yet",
                      label);
    case FMT_GEM:
      return ge_gem_import(data, size, label, base_dir, trim, drop, drop_ctx, backing, 0, out);
    default:
      return ge_error(GE_ERR_PARSE,
                      "%s: not a recognised model (expected ONNX, TensorFlow GraphDef or .gem)",
                      label);
  }
}

ge_status ge_graph_load_buffer(const void *data, size_t size, const char *base_dir,
                               ge_graph **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_load_buffer: out is NULL");
  *out = NULL;
  if (!data && size)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_load_buffer: data is NULL");
  static const uint8_t empty[1] = {0};
  return load_any(data ? data : empty, size, "<memory>", base_dir, NULL, NULL, NULL, NULL, out);
}

/* The model file's bytes: mapped read-only (pages come from the page cache and are not copied),
   or read into memory when it cannot be mapped. */
typedef struct file_bytes {
  uint8_t *data;
  size_t size;
  bool mapped;   /* munmap, else free */
  bool released;
  int fd;        /* open while mapped (-1 otherwise): the weights' backing */
} file_bytes;

static void file_bytes_release(void *ctx) {
  file_bytes *f = ctx;
  if (f->released) return;
  f->released = true;
  if (f->mapped)
    munmap(f->data, f->size);
  else
    free(f->data);
  f->data = NULL;
}

/* Discards the resident pages of a mapping (still readable: they come back from the file). */
static void file_bytes_trim(void *ctx) {
  file_bytes *f = ctx;
  if (f->mapped && !f->released) (void)madvise(f->data, f->size, MADV_DONTNEED);
}

static ge_status read_file(const char *path, file_bytes *f) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ge_error(GE_ERR_IO, "%s: cannot open model: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return ge_error(GE_ERR_IO, "%s: not a regular file", path);
  }
  if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX - 1) {
    close(fd);
    return ge_error(GE_ERR_IO, "%s: file too large", path);
  }
  size_t n = (size_t)sb.st_size;
  if (n > 0) {
    void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      (void)madvise(m, n, MADV_SEQUENTIAL);
      f->fd = fd;
      f->data = m;
      f->size = n;
      f->mapped = true;
      return GE_OK;
    }
  }
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    close(fd);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes to read it", path, n);
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ge_status st = ge_error(GE_ERR_IO, "%s: read failed: %s", path, strerror(errno));
      free(buf);
      close(fd);
      return st;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  close(fd);
  f->data = buf;
  f->size = got;
  return GE_OK;
}

ge_status ge_graph_load(const char *path, const ge_option *opts, size_t n_opts, ge_graph **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_load: out is NULL");
  *out = NULL;
  if (!path || !*path) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_load: no path given");
  if (n_opts && !opts)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_load: options array is NULL");
  const char *ext_dir = NULL;
  for (size_t i = 0; i < n_opts; i++) {
    const char *k = opts[i].key ? opts[i].key : "(null)";
    if (strcmp(k, "ge.onnx.externalDataDir") == 0) {
      if (!opts[i].value || !*opts[i].value)
        return ge_error(GE_ERR_INVALID_ARGUMENT,
                        "ge_graph_load: option 'ge.onnx.externalDataDir' needs a folder");
      ext_dir = opts[i].value;
    } else {
      return ge_error(GE_ERR_INVALID_ARGUMENT,
                      "ge_graph_load: unknown option '%s' (known: ge.onnx.externalDataDir)", k);
    }
  }
  char *dir = NULL;
  if (!ext_dir) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
      dir = strdup(".");
    } else {
      size_t n = (size_t)(slash - path);
      dir = malloc(n + 2);
      if (dir) {
        if (n == 0) {
          dir[0] = '/';
          dir[1] = 0;
        } else {
          memcpy(dir, path, n);
          dir[n] = 0;
        }
      }
    }
    if (!dir) return ge_error(GE_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    ext_dir = dir;
  }
  file_bytes fb;
  ge_status st = read_file(path, &fb);
  if (st == GE_OK) {
    /* the weights keep the file open (a descriptor, not the mapping) as their backing, so that
       their memory can be given back once packed and read again if needed */
    ge_file_ref *backing = NULL;
    if (fb.fd >= 0 && ge_file_ref_new(fb.fd, path, &backing) != GE_OK) backing = NULL;
    st = load_any(fb.data, fb.size, path, ext_dir, file_bytes_trim, file_bytes_release, &fb,
                  backing, out);
    file_bytes_release(&fb);
    ge_file_ref_unref(backing);
  }
  free(dir);
  return st;
}
