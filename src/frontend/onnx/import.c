/* ONNX import: ModelProto (parsed by protobuf-c) -> ge_graph.  Import is structural: ops are
 * not validated here (the compiler reports unknown ops naming the node), but every name,
 * tensor and type is checked, and no input may crash it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx/onnx.h"
#include "ir/dtype_lowp.h"
#include "ge_onnx.pb-c.h"

/* Where a main-graph initializer's raw_data sits in the model file (scan_raw_locs). */
typedef struct raw_loc {
  uint64_t off; /* in the file */
  size_t len;
  bool ok;
} raw_loc;

typedef struct imp {
  const char *label;    /* file name for messages */
  const char *base_dir; /* external data directory, may be NULL */
  bool steal_raw;       /* the message was unpacked with raw_alloc: large raw_data buffers are
                           64-byte aligned and become the tensors' storage (no copy) */
  ge_file_ref *backing; /* the model file (may be NULL) */
  raw_loc *locs;        /* per main-graph initializer, in order; NULL: no backing */
  size_t n_locs;
} imp;

/* ------------------------------------------------------------------ raw_data locations */

/* Weights smaller than this keep no file backing (not worth reclaiming). */
#define BACKING_MIN ((size_t)256 * 1024)

static bool scan_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int s = 0; s < 64 && *p < end; s += 7) {
    uint8_t c = *(*p)++;
    r |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* Next field of [*p, end): its number and wire type; for length-delimited fields [*lo, *hi).
   false at the end or on malformed input. */
static bool scan_field(const uint8_t **p, const uint8_t *end, uint64_t *num,
                       const uint8_t **lo, const uint8_t **hi) {
  uint64_t key, v;
  if (*p >= end || !scan_varint(p, end, &key)) return false;
  *num = key >> 3;
  *lo = *hi = NULL;
  switch (key & 7) {
  case 0: return scan_varint(p, end, &v);
  case 1: if (end - *p < 8) return false; *p += 8; return true;
  case 5: if (end - *p < 4) return false; *p += 4; return true;
  case 2:
    if (!scan_varint(p, end, &v) || v > (uint64_t)(end - *p)) return false;
    *lo = *p;
    *p += v;
    *hi = *p;
    return true;
  default: return false;
  }
}

/* The file offsets of the raw_data of every initializer of ModelProto.graph (field 7;
   GraphProto.initializer = 5; TensorProto.raw_data = 9), in order.  Leaves *out NULL when the
   layout is anything but plain (several graph fields, malformed bytes). */
static void scan_raw_locs(const uint8_t *data, size_t size, uint64_t base, raw_loc **out,
                          size_t *n_out) {
  *out = NULL;
  *n_out = 0;
  const uint8_t *p = data, *end = data + size, *lo, *hi, *glo = NULL, *ghi = NULL;
  uint64_t num;
  int graphs = 0;
  while (p < end) {
    if (!scan_field(&p, end, &num, &lo, &hi)) return;
    if (num == 7 && lo) {
      graphs++;
      glo = lo;
      ghi = hi;
    }
  }
  if (graphs != 1) return;
  raw_loc *locs = NULL;
  size_t n = 0, cap = 0;
  p = glo;
  while (p < ghi) {
    if (!scan_field(&p, ghi, &num, &lo, &hi)) goto bad;
    if (num != 5 || !lo) continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      raw_loc *nl = realloc(locs, nc * sizeof *nl);
      if (!nl) goto bad;
      locs = nl;
      cap = nc;
    }
    raw_loc r = {0, 0, false};
    const uint8_t *tp = lo, *tlo, *thi;
    while (tp < hi) {
      if (!scan_field(&tp, hi, &num, &tlo, &thi)) goto bad;
      if (num == 9 && tlo) {
        r.off = base + (uint64_t)(tlo - data);
        r.len = (size_t)(thi - tlo);
        r.ok = true;
      }
    }
    locs[n++] = r;
  }
  *out = locs;
  *n_out = n;
  return;
bad:
  free(locs);
}

/* Gives initializer i of the main graph its file backing when its bytes are the file's. */
static ge_status set_backing(const imp *im, size_t i, const GeOnnx__TensorProto *tp, ge_tensor *t) {
  if (!im->backing || i >= im->n_locs || !im->locs[i].ok || !ge_tensor_is_shared(t)) return GE_OK;
  const raw_loc *r = &im->locs[i];
  if (t->dtype == GE_STRING || t->dtype == GE_BOOL || ge_dtype_lowp_bits(t->dtype) < 8 ||
      t->nbytes != r->len || t->nbytes < BACKING_MIN || tp->n_external_data)
    return GE_OK;
  /* the same bytes: compare both ends with the file (the scan and the parse agree on order) */
  uint8_t a[64], b[64];
  size_t k = sizeof a;
  int fd = ge_file_ref_fd(im->backing);
  if (pread(fd, a, k, (off_t)r->off) != (ssize_t)k || memcmp(a, t->data, k) != 0) return GE_OK;
  if (pread(fd, b, k, (off_t)(r->off + r->len - k)) != (ssize_t)k ||
      memcmp(b, (const uint8_t *)t->data + t->nbytes - k, k) != 0)
    return GE_OK;
  return ge_tensor_set_backing(t, im->backing, r->off);
}

/* ------------------------------------------------------------------ protobuf-c allocator */

/* Blocks of at least RAW_STEAL_MIN bytes are allocated 64-byte aligned (as ge_aligned_alloc),
   so that a tensor can take a TensorProto's raw_data buffer over instead of copying it: the
   weights of a model are then held once, not twice, while it is imported.  Every block is
   freed with free(). */
#define RAW_STEAL_MIN 4096

typedef struct raw_alloc_ctx {
  void (*trim)(void *ctx); /* may be NULL */
  void *trim_ctx;
} raw_alloc_ctx;

static void *raw_alloc(void *ctx, size_t size) {
  if (size < RAW_STEAL_MIN) return malloc(size ? size : 1);
  /* A large block is a raw_data (or a repeated field) about to be copied out of the input:
     let the caller drop the input pages read so far (a file mapping re-reads them on demand),
     so that the file and its unpacked copy are not both resident. */
  const raw_alloc_ctx *rc = ctx;
  if (rc && rc->trim) rc->trim(rc->trim_ctx);
  void *p = NULL;
  return posix_memalign(&p, 64, size) == 0 ? p : NULL;
}

static void raw_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

static void raw_release(void *data, void *ctx) {
  (void)ctx;
  free(data);
}

/* ------------------------------------------------------------------ small helpers */

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* A NUL-terminated copy of the n bytes at data; NULL when out of memory. */
static char *dup_bytes(const void *data, size_t n) {
  char *r = n == SIZE_MAX ? NULL : malloc(n + 1);
  if (!r) return NULL;
  if (n) memcpy(r, data, n);
  r[n] = 0;
  return r;
}

static char *dup_str(const char *s) {
  s = str_or_empty(s);
  return dup_bytes(s, strlen(s));
}

/* A copy of n elements of es bytes (at least one byte allocated); NULL when out of memory. */
static void *dup_array(const void *src, size_t n, size_t es) {
  void *r = malloc(n ? n * es : 1);
  if (r && n) memcpy(r, src, n * es);
  return r;
}

static ge_status oom(const imp *im) {
  return ge_error(GE_ERR_OUT_OF_MEMORY, "%s: out of memory while importing the ONNX model",
                  im->label);
}

/* The spec's name for an ONNX TensorProto.DataType code, for messages. */
static const char *onnx_dtype_name(int32_t t) {
  static const char *const names[] = {
      "undefined", "float",       "uint8",          "int8",       "uint16",
      "int16",     "int32",       "int64",          "string",     "bool",
      "float16",   "double",      "uint32",         "uint64",     "complex64",
      "complex128", "bfloat16",   "float8e4m3fn",   "float8e4m3fnuz", "float8e5m2",
      "float8e5m2fnuz", "uint4",  "int4",           "float4e2m1", "float8e8m0",
      "uint2",     "int2",        "float6e2m3",     "float6e3m2"};
  if (t >= 0 && (size_t)t < sizeof names / sizeof names[0]) return names[t];
  return "unknown";
}

static ge_status imp_dtype(const imp *im, int32_t t, const char *what, const char *name,
                           ge_dtype *out) {
  if (t == 0)
    return ge_error(GE_ERR_PARSE, "%s: %s '%s' has no data type", im->label, what, name);
  if (!ge_dtype_from_onnx(t, out))
    return ge_error(GE_ERR_UNSUPPORTED, "%s: %s '%s' has data type %s (%d), which ge does not support",
                    im->label, what, name, onnx_dtype_name(t), (int)t);
  return GE_OK;
}

/* ------------------------------------------------------------------ a set of names */

typedef struct name_set {
  const char **slots;
  size_t cap;
} name_set;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static bool name_set_init(name_set *s, size_t n) {
  size_t cap = 16;
  while (cap < n * 2 + 1) {
    if (cap > SIZE_MAX / 4) return false;
    cap *= 2;
  }
  s->slots = calloc(cap, sizeof *s->slots);
  s->cap = cap;
  return s->slots != NULL;
}

static void name_set_free(name_set *s) { free(s->slots); }

/* Adds name; returns false if it was already there. */
static bool name_set_add(name_set *s, const char *name) {
  size_t i = (size_t)hash_str(name) & (s->cap - 1);
  while (s->slots[i]) {
    if (strcmp(s->slots[i], name) == 0) return false;
    i = (i + 1) & (s->cap - 1);
  }
  s->slots[i] = name;
  return true;
}

static bool name_set_has(const name_set *s, const char *name) {
  size_t i = (size_t)hash_str(name) & (s->cap - 1);
  while (s->slots[i]) {
    if (strcmp(s->slots[i], name) == 0) return true;
    i = (i + 1) & (s->cap - 1);
  }
  return false;
}

/* ------------------------------------------------------------------ tensors */

static bool elem_count(const int64_t *dims, size_t rank, size_t *out) {
  size_t n = 1;
  for (size_t i = 0; i < rank; i++) {
    if (dims[i] < 0) return false;
    if ((uint64_t)dims[i] > SIZE_MAX) return false;
    if (ge_mul_overflow_size(n, (size_t)dims[i], &n)) return false;
  }
  *out = n;
  return true;
}

/* Reads external data into dst (nbytes); with dst NULL only checks that it can. */
static ge_status read_external(const imp *im, const GeOnnx__TensorProto *tp, const char *name,
                               void *dst, size_t nbytes) {
  const char *location = NULL, *offset_s = NULL, *length_s = NULL;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const GeOnnx__StringStringEntryProto *e = tp->external_data[i];
    const char *k = str_or_empty(e->key);
    if (strcmp(k, "location") == 0) location = e->value;
    else if (strcmp(k, "offset") == 0) offset_s = e->value;
    else if (strcmp(k, "length") == 0) length_s = e->value;
  }
  if (!location || !*location)
    return ge_error(GE_ERR_PARSE, "%s: tensor '%s' has external data without a 'location'",
                    im->label, name);
  if (location[0] == '/' || location[0] == '\\' || strchr(location, ':'))
    return ge_error(GE_ERR_IO,
                    "%s: tensor '%s': external data location '%s' is an absolute path (only paths "
                    "relative to the model's folder are allowed)",
                    im->label, name, location);
  /* reject any ".." path component */
  for (const char *p = location; *p;) {
    size_t n = strcspn(p, "/\\");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return ge_error(GE_ERR_IO,
                      "%s: tensor '%s': external data location '%s' escapes the model's folder",
                      im->label, name, location);
    p += n;
    if (*p) p++;
  }
  if (!im->base_dir)
    return ge_error(GE_ERR_IO,
                    "%s: tensor '%s' has external data in '%s' but the model was loaded from "
                    "memory without a base directory",
                    im->label, name, location);
  int64_t offset = 0, length = -1;
  if (offset_s && *offset_s) {
    char *endp;
    errno = 0;
    long long v = strtoll(offset_s, &endp, 10);
    if (errno || *endp || v < 0)
      return ge_error(GE_ERR_PARSE, "%s: tensor '%s': bad external data offset '%s'", im->label,
                      name, offset_s);
    offset = v;
  }
  if (length_s && *length_s) {
    char *endp;
    errno = 0;
    long long v = strtoll(length_s, &endp, 10);
    if (errno || *endp || v < 0)
      return ge_error(GE_ERR_PARSE, "%s: tensor '%s': bad external data length '%s'", im->label,
                      name, length_s);
    length = v;
  }
  size_t blen = strlen(im->base_dir), llen = strlen(location);
  if (blen > SIZE_MAX - llen - 2) return oom(im);
  char *path = malloc(blen + llen + 2);
  if (!path) return oom(im);
  if (blen) {
    memcpy(path, im->base_dir, blen);
    path[blen] = '/';
    memcpy(path + blen + 1, location, llen + 1);
  } else {
    memcpy(path, location, llen + 1);
  }
  ge_status st = GE_OK;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0) {
    st = ge_error(GE_ERR_IO, "%s: tensor '%s': cannot open external data file '%s': %s",
                  im->label, name, path, strerror(errno));
    goto done;
  }
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = ge_error(GE_ERR_IO, "%s: tensor '%s': external data '%s' is not a regular file",
                  im->label, name, path);
    goto done;
  }
  if (offset > (int64_t)sb.st_size) {
    st = ge_error(GE_ERR_IO,
                  "%s: tensor '%s': external data offset %" PRId64 " is past the end of '%s' (%lld bytes)",
                  im->label, name, offset, path, (long long)sb.st_size);
    goto done;
  }
  if (length < 0) length = (int64_t)sb.st_size - offset;
  if (length > (int64_t)sb.st_size - offset) {
    st = ge_error(GE_ERR_IO,
                  "%s: tensor '%s': external data [%" PRId64 ", +%" PRId64 ") runs past the end of '%s' (%lld bytes)",
                  im->label, name, offset, length, path, (long long)sb.st_size);
    goto done;
  }
  if ((uint64_t)length != (uint64_t)nbytes) {
    st = ge_error(GE_ERR_PARSE,
                  "%s: tensor '%s': external data holds %" PRId64 " bytes but its shape and dtype need %zu",
                  im->label, name, length, nbytes);
    goto done;
  }
  size_t done_n = 0;
  while (dst && done_n < nbytes) {
    ssize_t r = pread(fd, (char *)dst + done_n, nbytes - done_n, (off_t)(offset + (int64_t)done_n));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      st = ge_error(GE_ERR_IO, "%s: tensor '%s': reading external data '%s' failed: %s",
                    im->label, name, path, r < 0 ? strerror(errno) : "unexpected end of file");
      goto done;
    }
    done_n += (size_t)r;
  }
done:
  if (fd >= 0) close(fd);
  free(path);
  return st;
}

static ge_status imp_tensor(const imp *im, const GeOnnx__TensorProto *tp, const char *ctx_name,
                            ge_tensor **out) {
  *out = NULL;
  const char *name = (tp->name && *tp->name) ? tp->name : str_or_empty(ctx_name);
  if (tp->segment)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: tensor '%s' is segmented, which ge does not support",
                    im->label, name);
  ge_dtype dt;
  GE_CHECK(imp_dtype(im, tp->has_data_type ? tp->data_type : 0, "tensor", name, &dt));
  if (tp->n_dims > GE_MAX_RANK)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %zu; ge supports at most %d",
                    im->label, name, tp->n_dims, GE_MAX_RANK);
  size_t numel;
  if (!elem_count(tp->dims, tp->n_dims, &numel))
    return ge_error(GE_ERR_PARSE, "%s: tensor '%s' has negative or overflowing dims", im->label,
                    name);
  size_t esz = ge_dtype_size(dt), nbytes;
  if (dt == GE_STRING) esz = 1; /* not meaningful for strings; checked by count below */
  if (ge_mul_overflow_size(numel, esz, &nbytes))
    return ge_error(GE_ERR_PARSE, "%s: tensor '%s' is too large", im->label, name);
  /* 4-bit and 2-bit dtypes: ONNX packs them (fbytes in the file), ge keeps a byte each */
  bool packed = ge_dtype_lowp_bits(dt) < 8;
  size_t fbytes = nbytes;
  if (packed) ge_dtype_packed_nbytes(dt, numel, &fbytes);
  bool external = tp->has_data_location &&
                  tp->data_location == GE_ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (tp->has_data_location && !external &&
      tp->data_location != GE_ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
    return ge_error(GE_ERR_PARSE, "%s: tensor '%s' has an unknown data_location %d", im->label,
                    name, (int)tp->data_location);

  /* Check the data's size against the dims before allocating anything. */
  size_t have = 0;
  enum { SRC_NONE, SRC_RAW, SRC_EXT, SRC_F32, SRC_F64, SRC_I32, SRC_I64, SRC_U64, SRC_STR } src =
      SRC_NONE;
  if (dt == GE_STRING) {
    if (external)
      return ge_error(GE_ERR_UNSUPPORTED, "%s: string tensor '%s' with external data is not supported",
                      im->label, name);
    src = SRC_STR;
    have = tp->n_string_data;
  } else if (external) {
    src = SRC_EXT;
    have = numel;
    /* location, file and sizes are checked before the tensor is allocated */
    GE_CHECK(read_external(im, tp, name, NULL, fbytes));
  } else if (tp->has_raw_data) {
    src = SRC_RAW;
    if (tp->raw_data.len != fbytes)
      return ge_error(GE_ERR_PARSE,
                      "%s: tensor '%s' (%s) has %zu bytes of raw_data but its dims need %zu",
                      im->label, name, ge_dtype_name(dt), tp->raw_data.len, fbytes);
    have = numel;
  } else if (packed) { /* int32_data holds the packed bytes, one per entry */
    src = SRC_I32;
    if (tp->n_int32_data != fbytes)
      return ge_error(GE_ERR_PARSE,
                      "%s: tensor '%s' (%s) has %zu int32_data entries but its %zu elements "
                      "pack into %zu bytes",
                      im->label, name, ge_dtype_name(dt), tp->n_int32_data, numel, fbytes);
    have = numel;
  } else {
    switch (dt) {
      case GE_F32: src = SRC_F32; have = tp->n_float_data; break;
      case GE_F64: src = SRC_F64; have = tp->n_double_data; break;
      case GE_I64: src = SRC_I64; have = tp->n_int64_data; break;
      case GE_U32:
      case GE_U64: src = SRC_U64; have = tp->n_uint64_data; break;
      default: src = SRC_I32; have = tp->n_int32_data; break;
    }
  }
  if (have != numel)
    return ge_error(GE_ERR_PARSE, "%s: tensor '%s' (%s) holds %zu elements but its dims need %zu",
                    im->label, name, ge_dtype_name(dt), have, numel);

  ge_tensor *t;
  ge_status st;
  if (src == SRC_RAW && !packed && im->steal_raw && nbytes >= RAW_STEAL_MIN && tp->raw_data.data &&
      ((uintptr_t)tp->raw_data.data & 63u) == 0) {
    /* take the unpacked raw_data buffer over (the message is ours and freed after import) */
    st = ge_tensor_wrap(dt, tp->dims, tp->n_dims, tp->raw_data.data, nbytes, raw_release, NULL,
                        &t);
    if (st != GE_OK) return ge_error_prefix(st, "%s: tensor '%s': ", im->label, name);
    GeOnnx__TensorProto *mtp = (GeOnnx__TensorProto *)tp;
    mtp->raw_data.data = NULL;
    mtp->raw_data.len = 0;
    mtp->has_raw_data = false;
    if (dt == GE_BOOL) {
      uint8_t *o = t->data;
      for (size_t i = 0; i < numel; i++) o[i] = o[i] != 0;
    }
    *out = t;
    return GE_OK;
  }
  st = ge_tensor_create(dt, tp->dims, tp->n_dims, &t);
  if (st != GE_OK) return ge_error_prefix(st, "%s: tensor '%s': ", im->label, name);
  void *d = t->data;
  switch (src) {
    case SRC_NONE: break;
    case SRC_RAW:
      if (packed)
        ge_lowp_unpack(dt, tp->raw_data.data, numel, d);
      else if (nbytes)
        memcpy(d, tp->raw_data.data, nbytes);
      break;
    case SRC_EXT:
      if (packed) { /* read the packed bytes, then spread them */
        uint8_t *tmp = malloc(fbytes ? fbytes : 1);
        if (!tmp) { st = oom(im); break; }
        st = read_external(im, tp, name, tmp, fbytes);
        if (st == GE_OK) ge_lowp_unpack(dt, tmp, numel, d);
        free(tmp);
      } else {
        st = read_external(im, tp, name, d, nbytes);
      }
      break;
    case SRC_F32:
      if (nbytes) memcpy(d, tp->float_data, nbytes);
      break;
    case SRC_F64:
      if (nbytes) memcpy(d, tp->double_data, nbytes);
      break;
    case SRC_I64:
      if (nbytes) memcpy(d, tp->int64_data, nbytes);
      break;
    case SRC_U64:
      if (dt == GE_U64) {
        if (nbytes) memcpy(d, tp->uint64_data, nbytes);
      } else {
        uint32_t *o = d;
        for (size_t i = 0; i < numel; i++) o[i] = (uint32_t)tp->uint64_data[i];
      }
      break;
    case SRC_I32: {
      const int32_t *s = tp->int32_data;
      switch (dt) {
        case GE_I32: if (nbytes) memcpy(d, s, nbytes); break;
        case GE_I16: { int16_t *o = d; for (size_t i = 0; i < numel; i++) o[i] = (int16_t)s[i]; } break;
        case GE_I8: { int8_t *o = d; for (size_t i = 0; i < numel; i++) o[i] = (int8_t)s[i]; } break;
        case GE_U8: { uint8_t *o = d; for (size_t i = 0; i < numel; i++) o[i] = (uint8_t)s[i]; } break;
        case GE_BOOL: { uint8_t *o = d; for (size_t i = 0; i < numel; i++) o[i] = s[i] != 0; } break;
        case GE_F8E4M3FN: case GE_F8E4M3FNUZ: case GE_F8E5M2: case GE_F8E5M2FNUZ: case GE_F8E8M0:
        case GE_U4: case GE_I4: case GE_F4E2M1: case GE_U2: case GE_I2: {
          uint8_t *o = d;
          unsigned bits = ge_dtype_lowp_bits(dt), per = 8 / bits, mask = (1u << bits) - 1u;
          for (size_t i = 0; i < numel; i++)
            o[i] = (uint8_t)(((uint32_t)s[i / per] >> (bits * (i % per))) & mask);
          break;
        }
        case GE_U16:
        case GE_F16:
        case GE_BF16: { uint16_t *o = d; for (size_t i = 0; i < numel; i++) o[i] = (uint16_t)((uint32_t)s[i] & 0xffffu); } break;
        default:
          st = ge_error(GE_ERR_INTERNAL, "%s: tensor '%s': no typed field for %s", im->label,
                        name, ge_dtype_name(dt));
      }
      break;
    }
    case SRC_STR:
      for (size_t i = 0; i < numel && st == GE_OK; i++) {
        const ProtobufCBinaryData *b = &tp->string_data[i];
        char *tmp = dup_bytes(b->data, b->len);
        if (!tmp) { st = oom(im); break; }
        st = ge_tensor_set_string(t, i, tmp);
        free(tmp);
      }
      break;
  }
  if (st == GE_OK && dt == GE_BOOL && src == SRC_RAW) {
    uint8_t *o = d;
    for (size_t i = 0; i < numel; i++) o[i] = o[i] != 0;
  }
  if (st != GE_OK) {
    ge_tensor_free(t);
    return st;
  }
  *out = t;
  return GE_OK;
}

/* A SparseTensorProto as a dense tensor. */
static ge_status imp_sparse(const imp *im, const GeOnnx__SparseTensorProto *sp,
                            const char *ctx_name, ge_tensor **out) {
  *out = NULL;
  const char *name = (sp->values && sp->values->name && *sp->values->name) ? sp->values->name
                                                                          : str_or_empty(ctx_name);
  if (!sp->values || !sp->indices)
    return ge_error(GE_ERR_PARSE, "%s: sparse tensor '%s' lacks values or indices", im->label,
                    name);
  if (sp->n_dims > GE_MAX_RANK)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: sparse tensor '%s' has rank %zu; ge supports at most %d",
                    im->label, name, sp->n_dims, GE_MAX_RANK);
  size_t numel;
  if (!elem_count(sp->dims, sp->n_dims, &numel))
    return ge_error(GE_ERR_PARSE, "%s: sparse tensor '%s' has negative or overflowing dims",
                    im->label, name);
  ge_tensor *vals = NULL, *idx = NULL, *t = NULL;
  ge_status st = imp_tensor(im, sp->values, name, &vals);
  if (st == GE_OK) st = imp_tensor(im, sp->indices, name, &idx);
  if (st != GE_OK) goto fail;
  size_t nnz = vals->numel;
  size_t rank = sp->n_dims;
  bool linear;
  if (vals->rank != 1) {
    st = ge_error(GE_ERR_PARSE, "%s: sparse tensor '%s': values must be 1-D", im->label, name);
    goto fail;
  }
  if (idx->dtype != GE_I64) {
    st = ge_error(GE_ERR_PARSE, "%s: sparse tensor '%s': indices must be int64", im->label, name);
    goto fail;
  }
  if (idx->rank == 1 && (size_t)idx->dims[0] == nnz) {
    linear = true;
  } else if (idx->rank == 2 && (size_t)idx->dims[0] == nnz && (size_t)idx->dims[1] == rank) {
    linear = false;
  } else {
    st = ge_error(GE_ERR_PARSE, "%s: sparse tensor '%s': indices shape does not match %zu values of rank %zu",
                  im->label, name, nnz, rank);
    goto fail;
  }
  /* Allocation is bounded by the dense shape, which the protobuf does not back with data:
     refuse absurd dense sizes before allocating. */
  size_t dense_bytes;
  if (ge_mul_overflow_size(numel, ge_dtype_size(vals->dtype), &dense_bytes) ||
      dense_bytes > ((size_t)1 << 31)) {
    st = ge_error(GE_ERR_UNSUPPORTED, "%s: sparse tensor '%s' is too large to densify", im->label,
                  name);
    goto fail;
  }
  st = ge_tensor_create(vals->dtype, sp->dims, rank, &t);
  if (st != GE_OK) goto fail;
  const int64_t *ix = idx->data;
  size_t esz = ge_dtype_size(vals->dtype);
  for (size_t k = 0; k < nnz; k++) {
    uint64_t lin = 0;
    bool ok = true;
    if (linear) {
      ok = ix[k] >= 0 && (uint64_t)ix[k] < numel;
      lin = (uint64_t)ix[k];
    } else {
      for (size_t r = 0; r < rank; r++) {
        int64_t v = ix[k * rank + r];
        if (v < 0 || v >= sp->dims[r]) { ok = false; break; }
        lin = lin * (uint64_t)sp->dims[r] + (uint64_t)v;
      }
    }
    if (!ok) {
      st = ge_error(GE_ERR_PARSE, "%s: sparse tensor '%s': index %zu is out of range", im->label,
                    name, k);
      goto fail;
    }
    if (vals->dtype == GE_STRING) {
      const char *s = ((char *const *)vals->data)[k];
      st = ge_tensor_set_string(t, (size_t)lin, s ? s : "");
      if (st != GE_OK) goto fail;
    } else {
      memcpy((char *)t->data + lin * esz, (const char *)vals->data + k * esz, esz);
    }
  }
  ge_tensor_free(vals);
  ge_tensor_free(idx);
  *out = t;
  return GE_OK;
fail:
  ge_tensor_free(vals);
  ge_tensor_free(idx);
  ge_tensor_free(t);
  return st;
}

/* ------------------------------------------------------------------ types */

static ge_status imp_shape(const imp *im, ge_graph *g, const GeOnnx__TensorShapeProto *sp,
                           const char *vname, ge_shape *out) {
  if (!sp) {
    out->rank = GE_RANK_UNKNOWN;
    return GE_OK;
  }
  if (sp->n_dim > GE_MAX_RANK)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: value '%s' has rank %zu; ge supports at most %d",
                    im->label, vname, sp->n_dim, GE_MAX_RANK);
  out->rank = (int32_t)sp->n_dim;
  for (size_t i = 0; i < sp->n_dim; i++) {
    const GeOnnx__TensorShapeProto__Dimension *d = sp->dim[i];
    if (d->value_case == GE_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0)
        return ge_error(GE_ERR_PARSE, "%s: value '%s' has negative dimension %" PRId64 " at axis %zu",
                        im->label, vname, d->dim_value, i);
      out->dims[i] = d->dim_value;
    } else if (d->value_case == GE_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               d->dim_param && *d->dim_param) {
      out->dims[i] = GE_DIM_SYM(ge_graph_sym(g, d->dim_param));
    } else {
      out->dims[i] = GE_DIM_UNKNOWN;
    }
  }
  return GE_OK;
}

static ge_status imp_tensor_type(const imp *im, ge_graph *g, const GeOnnx__TypeProto *tp,
                                 const char *vname, ge_type *out) {
  if (!tp || tp->value_case != GE_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: value '%s': only tensors may be elements of a sequence or optional",
                    im->label, vname);
  const GeOnnx__TypeProto__Tensor *tt = tp->tensor_type;
  out->dtype = GE_DTYPE_COUNT;
  if (tt->has_elem_type && tt->elem_type != 0)
    GE_CHECK(imp_dtype(im, tt->elem_type, "value", vname, &out->dtype));
  return imp_shape(im, g, tt->shape, vname, &out->shape);
}

static ge_status imp_type(const imp *im, ge_graph *g, const GeOnnx__TypeProto *tp,
                          const char *vname, ge_type *out) {
  memset(out, 0, sizeof *out);
  out->kind = GE_TYPE_TENSOR;
  out->dtype = GE_DTYPE_COUNT;
  out->shape.rank = GE_RANK_UNKNOWN;
  if (!tp) return GE_OK;
  switch (tp->value_case) {
    case GE_ONNX__TYPE_PROTO__VALUE__NOT_SET:
      out->kind = GE_TYPE_UNKNOWN;
      return GE_OK;
    case GE_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
      return imp_tensor_type(im, g, tp, vname, out);
    case GE_ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      out->kind = GE_TYPE_SEQUENCE;
      return imp_tensor_type(im, g, tp->sequence_type->elem_type, vname, out);
    case GE_ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: {
      const GeOnnx__TypeProto *e = tp->optional_type->elem_type;
      out->kind = GE_TYPE_OPTIONAL;
      if (e && e->value_case == GE_ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
        out->elem_is_seq = true;
        return imp_tensor_type(im, g, e->sequence_type->elem_type, vname, out);
      }
      return imp_tensor_type(im, g, e, vname, out);
    }
    case GE_ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
      return ge_error(GE_ERR_UNSUPPORTED, "%s: value '%s' is a map, which ge does not support",
                      im->label, vname);
    case GE_ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
      return ge_error(GE_ERR_UNSUPPORTED, "%s: value '%s' is a sparse tensor, which ge does not support",
                      im->label, vname);
    default:
      return ge_error(GE_ERR_UNSUPPORTED, "%s: value '%s' has an unknown type", im->label, vname);
  }
}

/* ------------------------------------------------------------------ graphs */

static ge_status imp_graph(const imp *im, const GeOnnx__GraphProto *gp, ge_graph *parent,
                           int depth, GeOnnx__OperatorSetIdProto *const *opsets, size_t n_opsets,
                           ge_graph **out);

static const char *norm_domain(const char *d) {
  d = str_or_empty(d);
  return strcmp(d, "ai.onnx") == 0 ? "" : d;
}

static void node_label(const GeOnnx__NodeProto *np, size_t idx, char *buf, size_t cap) {
  if (np->name && *np->name)
    snprintf(buf, cap, "node '%s' (%s)", np->name, str_or_empty(np->op_type));
  else
    snprintf(buf, cap, "node #%zu (%s)", idx, str_or_empty(np->op_type));
}

static ge_status imp_attr(const imp *im, ge_graph *g, const GeOnnx__AttributeProto *ap,
                          const char *nl, int depth, ge_attr_value *a) {
  memset(a, 0, sizeof *a);
  if (!ap->name || !*ap->name)
    return ge_error(GE_ERR_PARSE, "%s: %s has an attribute without a name", im->label, nl);
  const char *an = ap->name;
  int type = ap->has_type ? (int)ap->type : 0;
  if (type == 0) { /* old files: infer the kind from the field that is set */
    if (ap->has_f) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    else if (ap->has_i) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    else if (ap->has_s) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    else if (ap->t) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    else if (ap->g) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    else if (ap->sparse_tensor) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    else if (ap->n_floats) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    else if (ap->n_ints) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    else if (ap->n_strings) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    else if (ap->n_tensors) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    else if (ap->n_graphs) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    else if (ap->n_sparse_tensors) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
    else if (ap->tp) type = GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    else if (!ap->ref_attr_name)
      return ge_error(GE_ERR_PARSE, "%s: %s attribute '%s' has no type and no value", im->label,
                      nl, an);
  }
  ge_status st = GE_OK;
  a->name = dup_str(an);
  if (!a->name) return oom(im);
  if (ap->ref_attr_name && !(a->ref_attr_name = dup_str(ap->ref_attr_name))) goto nomem;
  if (ap->doc_string && *ap->doc_string && !(a->doc = dup_str(ap->doc_string))) goto nomem;
  char what[512];
  snprintf(what, sizeof what, "%s attribute '%s'", nl, an);
  switch (type) {
    case 0:
      a->kind = GE_ATTR_KIND_UNDEFINED;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      a->kind = GE_ATTR_KIND_FLOAT;
      a->f = ap->f;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      a->kind = GE_ATTR_KIND_INT;
      a->i = ap->i;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
      a->kind = GE_ATTR_KIND_STRING;
      size_t n = ap->has_s ? ap->s.len : 0;
      if (!(a->s = dup_bytes(ap->s.data, n))) goto nomem;
      a->s_len = n;
      break;
    }
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: {
      bool sparse = type == GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
      a->kind = GE_ATTR_KIND_TENSOR;
      if (sparse ? !ap->sparse_tensor : !ap->t) {
        st = ge_error(GE_ERR_PARSE, "%s: %s is a %s without a tensor", im->label, what,
                      sparse ? "SPARSE_TENSOR" : "TENSOR");
        goto fail;
      }
      st = sparse ? imp_sparse(im, ap->sparse_tensor, an, &a->t) : imp_tensor(im, ap->t, an, &a->t);
      if (st != GE_OK) goto fail;
      break;
    }
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
      a->kind = GE_ATTR_KIND_GRAPH;
      if (!ap->g) {
        st = ge_error(GE_ERR_PARSE, "%s: %s is a GRAPH without a graph", im->label, what);
        goto fail;
      }
      st = imp_graph(im, ap->g, g, depth + 1, NULL, 0, &a->g);
      if (st != GE_OK) goto fail_ctx;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
      a->kind = GE_ATTR_KIND_FLOATS;
      a->n = ap->n_floats;
      if (!(a->floats = dup_array(ap->floats, a->n, sizeof(float)))) goto nomem;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      a->kind = GE_ATTR_KIND_INTS;
      a->n = ap->n_ints;
      if (!(a->ints = dup_array(ap->ints, a->n, sizeof(int64_t)))) goto nomem;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
      a->kind = GE_ATTR_KIND_STRINGS;
      if (!(a->strings = calloc(ap->n_strings ? ap->n_strings : 1, sizeof(char *)))) goto nomem;
      for (size_t i = 0; i < ap->n_strings; i++) {
        if (!(a->strings[i] = dup_bytes(ap->strings[i].data, ap->strings[i].len))) goto nomem;
        a->n = i + 1;
      }
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: {
      bool sparse = type == GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
      size_t n = sparse ? ap->n_sparse_tensors : ap->n_tensors;
      a->kind = GE_ATTR_KIND_TENSORS;
      if (!(a->tensors = calloc(n ? n : 1, sizeof(ge_tensor *)))) goto nomem;
      for (size_t i = 0; i < n; i++) {
        st = sparse ? imp_sparse(im, ap->sparse_tensors[i], an, &a->tensors[i])
                    : imp_tensor(im, ap->tensors[i], an, &a->tensors[i]);
        if (st != GE_OK) goto fail;
        a->n = i + 1;
      }
      break;
    }
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
      a->kind = GE_ATTR_KIND_GRAPHS;
      if (!(a->graphs = calloc(ap->n_graphs ? ap->n_graphs : 1, sizeof(ge_graph *)))) goto nomem;
      for (size_t i = 0; i < ap->n_graphs; i++) {
        st = imp_graph(im, ap->graphs[i], g, depth + 1, NULL, 0, &a->graphs[i]);
        if (st != GE_OK) goto fail_ctx;
        a->n = i + 1;
      }
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
      /* kept as a ge_type beside an UNDEFINED kind (Optional's `type`) */
      a->kind = GE_ATTR_KIND_UNDEFINED;
      if (!ap->tp) {
        st = ge_error(GE_ERR_PARSE, "%s: %s is a TYPE_PROTO without a type", im->label, what);
        goto fail;
      }
      if (!(a->type_attr = malloc(sizeof *a->type_attr))) goto nomem;
      st = imp_type(im, g, ap->tp, what, a->type_attr);
      if (st != GE_OK) goto fail;
      break;
    case GE_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
      st = ge_error(GE_ERR_UNSUPPORTED, "%s: %s holds a TypeProto, which ge does not support",
                    im->label, what);
      goto fail;
    default:
      st = ge_error(GE_ERR_PARSE, "%s: %s has unknown attribute type %d", im->label, what, type);
      goto fail;
  }
  return GE_OK;
nomem:
  st = oom(im);
  goto fail;
fail_ctx:
  /* the subgraph's message already names the file; add where it sits */
  if (st != GE_ERR_OUT_OF_MEMORY) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ge_last_error());
    const char *rest = msg;
    size_t ll = strlen(im->label);
    if (strncmp(msg, im->label, ll) == 0 && msg[ll] == ':') rest = msg + ll + 2;
    st = ge_error(st, "%s: in the subgraph of %s: %s", im->label, what, rest);
  }
fail:
  ge_attr_value_clear(a);
  memset(a, 0, sizeof *a);
  return st;
}

static ge_status push_id(int32_t **arr, size_t *n, int32_t id) {
  if (*n >= (size_t)INT32_MAX) return GE_ERR_OUT_OF_MEMORY;
  int32_t *p = realloc(*arr, (*n + 1) * sizeof **arr);
  if (!p) return GE_ERR_OUT_OF_MEMORY;
  p[(*n)++] = id;
  *arr = p;
  return GE_OK;
}

/* Imports nodes (and their attributes) into g, whose inputs and initializers are already
   there.  Names not produced in g, and not already values of g, must resolve in an enclosing
   graph (ge_graph_resolve_input). */
static ge_status imp_nodes(const imp *im, ge_graph *g, GeOnnx__NodeProto *const *nodes,
                           size_t n_nodes, int depth) {
  name_set produced;
  size_t n_out_total = 0;
  for (size_t i = 0; i < n_nodes; i++) {
    if (n_out_total > SIZE_MAX / 4 - nodes[i]->n_output) return oom(im);
    n_out_total += nodes[i]->n_output;
  }
  if (!name_set_init(&produced, n_out_total)) return oom(im);
  ge_status st = GE_OK;
  char nl[600];
  /* pass 1: outputs are defined once, and not as an input or initializer */
  for (size_t i = 0; i < n_nodes && st == GE_OK; i++) {
    const GeOnnx__NodeProto *np = nodes[i];
    node_label(np, i, nl, sizeof nl);
    if (!np->op_type || !*np->op_type) {
      st = ge_error(GE_ERR_PARSE, "%s: %s has no op_type", im->label, nl);
      break;
    }
    for (size_t k = 0; k < np->n_output; k++) {
      const char *o = np->output[k];
      if (!o || !*o) continue;
      if (ge_graph_find_value(g, o) >= 0 || !name_set_add(&produced, o)) {
        st = ge_error(GE_ERR_PARSE, "%s: %s output %zu '%s' is already defined in the graph",
                      im->label, nl, k, o);
        break;
      }
    }
  }
  /* pass 2: inputs resolve; append nodes in file order */
  const char **names = NULL;
  size_t names_cap = 0;
  for (size_t i = 0; i < n_nodes && st == GE_OK; i++) {
    const GeOnnx__NodeProto *np = nodes[i];
    node_label(np, i, nl, sizeof nl);
    for (size_t k = 0; k < np->n_input; k++) {
      const char *in = np->input[k];
      if (!in || !*in) continue;
      if (ge_graph_find_value(g, in) >= 0 || name_set_has(&produced, in)) continue;
      int32_t id;
      ge_status r = g->parent ? ge_graph_resolve_input(g, in, &id) : GE_ERR_NOT_FOUND;
      if (r == GE_ERR_NOT_FOUND) {
        st = ge_error(GE_ERR_PARSE,
                      "%s: %s input %zu '%s' is not defined (no node, graph input or "
                      "initializer produces it)",
                      im->label, nl, k, in);
        break;
      }
      if (r != GE_OK) {
        st = ge_error_prefix(r, "%s: %s input %zu '%s': ", im->label, nl, k, in);
        break;
      }
    }
    if (st != GE_OK) break;
    size_t need = np->n_input + np->n_output;
    if (need > names_cap || !names) {
      if (need == 0) need = 1;
      const char **p = realloc(names, need * sizeof *names);
      if (!p) { st = oom(im); break; }
      names = p;
      names_cap = need;
    }
    for (size_t k = 0; k < np->n_input; k++) names[k] = str_or_empty(np->input[k]);
    for (size_t k = 0; k < np->n_output; k++) names[np->n_input + k] = str_or_empty(np->output[k]);
    int32_t nid;
    const char *dom = norm_domain(np->domain);
    st = ge_graph_append_node(g, np->op_type, dom, str_or_empty(np->name), names, np->n_input,
                              names + np->n_input, np->n_output, &nid);
    if (st != GE_OK) {
      st = ge_error_prefix(st, "%s: %s: ", im->label, nl);
      break;
    }
    ge_node *node = &g->nodes[nid];
    node->opset = ge_graph_opset(g, dom);
    if (np->doc_string && *np->doc_string && !node->doc) {
      node->doc = dup_str(np->doc_string);
      if (!node->doc) { st = oom(im); break; }
    }
  }
  free(names);
  name_set_free(&produced);
  if (st != GE_OK) return st;
  /* pass 3: attributes (subgraphs see every value of g, whatever the file order) */
  size_t base = g->n_nodes - n_nodes;
  for (size_t i = 0; i < n_nodes; i++) {
    const GeOnnx__NodeProto *np = nodes[i];
    node_label(np, i, nl, sizeof nl);
    for (size_t k = 0; k < np->n_attribute; k++) {
      const GeOnnx__AttributeProto *ap = np->attribute[k];
      for (size_t j = 0; j < k; j++)
        if (ap->name && np->attribute[j]->name && strcmp(ap->name, np->attribute[j]->name) == 0)
          return ge_error(GE_ERR_PARSE, "%s: %s has attribute '%s' twice", im->label, nl,
                          ap->name);
      ge_attr_value a;
      GE_CHECK(imp_attr(im, g, ap, nl, depth, &a));
      st = ge_node_add_attr(&g->nodes[base + i], &a);
      if (st != GE_OK) {
        ge_attr_value_clear(&a);
        return ge_error_prefix(st, "%s: %s: ", im->label, nl);
      }
    }
  }
  return GE_OK;
}

static ge_status set_opsets(const imp *im, ge_graph *g, GeOnnx__OperatorSetIdProto *const *ops,
                            size_t n, bool check_range) {
  for (size_t i = 0; i < n; i++) {
    const char *dom = norm_domain(ops[i]->domain);
    int64_t v = ops[i]->has_version ? ops[i]->version : 0;
    for (size_t j = 0; j < i; j++)
      if (strcmp(dom, norm_domain(ops[j]->domain)) == 0)
        return ge_error(GE_ERR_PARSE, "%s: opset_import lists domain '%s' twice", im->label,
                        *dom ? dom : "ai.onnx");
    if (!*dom && check_range && (v < GE_ONNX_OPSET_MIN || v > GE_ONNX_OPSET_MAX))
      return ge_error(GE_ERR_UNSUPPORTED,
                      "%s: ai.onnx opset version %" PRId64 " is not supported (ge supports %d to %d)",
                      im->label, v, GE_ONNX_OPSET_MIN, GE_ONNX_OPSET_MAX);
    if (v < 0)
      return ge_error(GE_ERR_PARSE, "%s: opset_import of domain '%s' has negative version %" PRId64,
                      im->label, dom, v);
    ge_status st = ge_graph_set_opset_version(g, dom, v);
    if (st != GE_OK) return ge_error_prefix(st, "%s: ", im->label);
  }
  return GE_OK;
}

static ge_status imp_graph(const imp *im, const GeOnnx__GraphProto *gp, ge_graph *parent,
                           int depth, GeOnnx__OperatorSetIdProto *const *opsets, size_t n_opsets,
                           ge_graph **out) {
  *out = NULL;
  const char *gname = str_or_empty(gp->name);
  if (depth > GE_ONNX_MAX_SUBGRAPH_DEPTH)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: subgraphs are nested deeper than %d levels",
                    im->label, GE_ONNX_MAX_SUBGRAPH_DEPTH);
  ge_graph *g = ge_graph_new(gname, parent);
  if (!g) return oom(im);
  ge_status st = GE_OK;
  if (opsets && (st = set_opsets(im, g, opsets, n_opsets, true)) != GE_OK) goto fail;
  if (gp->doc_string && *gp->doc_string && !(g->doc = dup_str(gp->doc_string))) goto nomem;

  /* initializers */
  for (size_t i = 0; i < gp->n_initializer + gp->n_sparse_initializer; i++) {
    bool sparse = i >= gp->n_initializer;
    const GeOnnx__TensorProto *tp =
        sparse ? gp->sparse_initializer[i - gp->n_initializer]->values : gp->initializer[i];
    const char *name = tp ? str_or_empty(tp->name) : "";
    if (!*name) {
      st = ge_error(GE_ERR_PARSE, "%s: graph '%s' has an initializer without a name", im->label,
                    gname);
      goto fail;
    }
    if (ge_graph_find_value(g, name) >= 0) {
      st = ge_error(GE_ERR_PARSE, "%s: initializer '%s' is defined twice", im->label, name);
      goto fail;
    }
    ge_tensor *t;
    st = sparse ? imp_sparse(im, gp->sparse_initializer[i - gp->n_initializer], name, &t)
                : imp_tensor(im, tp, name, &t);
    if (st != GE_OK) goto fail;
    /* weights are read-only: copies of the graph (a session's) share them */
    if ((st = ge_tensor_make_shared(t)) != GE_OK ||
        (!parent && !sparse && (st = set_backing(im, i, tp, t)) != GE_OK)) {
      ge_tensor_free(t);
      goto fail;
    }
    int32_t id;
    st = ge_graph_value(g, name, &id);
    if (st != GE_OK) {
      ge_tensor_free(t);
      st = ge_error_prefix(st, "%s: initializer '%s': ", im->label, name);
      goto fail;
    }
    ge_value *v = &g->values[id];
    v->kind = GE_VALUE_CONSTANT;
    v->constant = t;
    v->type.kind = GE_TYPE_TENSOR;
    v->type.dtype = t->dtype;
    ge_tensor_shape(t, &v->type.shape);
    if (!sparse && tp->doc_string && *tp->doc_string && !(v->doc = dup_str(tp->doc_string)))
      goto nomem;
  }

  /* inputs (an input with an initializer stays a constant, listed among the inputs) */
  if (gp->n_input > (size_t)INT32_MAX) goto nomem;
  for (size_t i = 0; i < gp->n_input; i++) {
    const GeOnnx__ValueInfoProto *vi = gp->input[i];
    const char *name = str_or_empty(vi->name);
    if (!*name) {
      st = ge_error(GE_ERR_PARSE, "%s: graph '%s' input %zu has no name", im->label, gname, i);
      goto fail;
    }
    int32_t id = ge_graph_find_value(g, name);
    if (id >= 0) {
      for (size_t k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == id) {
          st = ge_error(GE_ERR_PARSE, "%s: graph '%s' lists input '%s' twice", im->label, gname,
                        name);
          goto fail;
        }
    } else {
      ge_type ty;
      st = imp_type(im, g, vi->type, name, &ty);
      if (st != GE_OK) goto fail;
      st = ge_graph_value(g, name, &id);
      if (st != GE_OK) {
        st = ge_error_prefix(st, "%s: input '%s': ", im->label, name);
        goto fail;
      }
      g->values[id].kind = GE_VALUE_INPUT;
      g->values[id].type = ty;
    }
    if (vi->doc_string && *vi->doc_string && !g->values[id].doc &&
        !(g->values[id].doc = dup_str(vi->doc_string)))
      goto nomem;
    if (push_id(&g->inputs, &g->n_inputs, id) != GE_OK) goto nomem;
  }

  /* nodes */
  st = imp_nodes(im, g, gp->node, gp->n_node, depth);
  if (st != GE_OK) goto fail;

  /* outputs */
  for (size_t i = 0; i < gp->n_output; i++) {
    const GeOnnx__ValueInfoProto *vi = gp->output[i];
    const char *name = str_or_empty(vi->name);
    if (!*name) {
      st = ge_error(GE_ERR_PARSE, "%s: graph '%s' output %zu has no name", im->label, gname, i);
      goto fail;
    }
    int32_t id = ge_graph_find_value(g, name);
    if (id < 0) {
      ge_status r = g->parent ? ge_graph_resolve_input(g, name, &id) : GE_ERR_NOT_FOUND;
      if (r == GE_ERR_NOT_FOUND) {
        st = ge_error(GE_ERR_PARSE,
                      "%s: graph '%s' output '%s' is not produced by any node, input or initializer",
                      im->label, gname, name);
        goto fail;
      }
      if (r != GE_OK) {
        st = ge_error_prefix(r, "%s: graph '%s' output '%s': ", im->label, gname, name);
        goto fail;
      }
    }
    ge_value *v = &g->values[id];
    if (vi->type && v->kind == GE_VALUE_INTERMEDIATE) {
      ge_type ty;
      st = imp_type(im, g, vi->type, name, &ty);
      if (st != GE_OK) goto fail;
      g->values[id].type = ty;
    }
    if (vi->doc_string && *vi->doc_string && !g->values[id].doc &&
        !(g->values[id].doc = dup_str(vi->doc_string)))
      goto nomem;
    if (push_id(&g->outputs, &g->n_outputs, id) != GE_OK) goto nomem;
  }

  /* value_info: types of intermediates */
  for (size_t i = 0; i < gp->n_value_info; i++) {
    const GeOnnx__ValueInfoProto *vi = gp->value_info[i];
    const char *name = str_or_empty(vi->name);
    int32_t id = *name ? ge_graph_find_value(g, name) : -1;
    if (id < 0 || g->values[id].kind != GE_VALUE_INTERMEDIATE || !vi->type) continue;
    ge_type ty;
    st = imp_type(im, g, vi->type, name, &ty);
    if (st != GE_OK) goto fail;
    g->values[id].type = ty;
  }

  st = ge_graph_toposort(g);
  if (st != GE_OK) {
    st = ge_error_prefix(st, "%s: graph '%s': ", im->label, gname);
    goto fail;
  }
  *out = g;
  return GE_OK;
nomem:
  st = oom(im);
fail:
  ge_graph_free(g);
  return st;
}

/* ------------------------------------------------------------------ functions */

static ge_status imp_function(const imp *im, const GeOnnx__FunctionProto *fp,
                              const GeOnnx__ModelProto *mp, ge_function *f) {
  memset(f, 0, sizeof *f);
  const char *fname = str_or_empty(fp->name);
  if (!*fname)
    return ge_error(GE_ERR_PARSE, "%s: a function has no name", im->label);
  ge_status st = GE_OK;
  if (!(f->name = dup_str(fname)) || !(f->domain = dup_str(fp->domain)) ||
      (fp->overload && !(f->overload = dup_str(fp->overload))))
    return oom(im);
  f->inputs = calloc(fp->n_input ? fp->n_input : 1, sizeof(char *));
  f->outputs = calloc(fp->n_output ? fp->n_output : 1, sizeof(char *));
  f->attr_names = calloc(fp->n_attribute ? fp->n_attribute : 1, sizeof(char *));
  if (!f->inputs || !f->outputs || !f->attr_names) return oom(im);
  for (size_t i = 0; i < fp->n_input; i++) {
    if (!(f->inputs[i] = dup_str(fp->input[i]))) return oom(im);
    f->n_inputs = i + 1;
  }
  for (size_t i = 0; i < fp->n_output; i++) {
    if (!(f->outputs[i] = dup_str(fp->output[i]))) return oom(im);
    f->n_outputs = i + 1;
  }
  for (size_t i = 0; i < fp->n_attribute; i++) {
    if (!(f->attr_names[i] = dup_str(fp->attribute[i]))) return oom(im);
    f->n_attr_names = i + 1;
  }
  GeOnnx__OperatorSetIdProto *const *ops = fp->opset_import;
  size_t n_ops = fp->n_opset_import;
  if (n_ops == 0) { /* inherit the model's */
    ops = mp->opset_import;
    n_ops = mp->n_opset_import;
  }
  f->opsets = calloc(n_ops ? n_ops : 1, sizeof(ge_opset));
  if (!f->opsets) return oom(im);
  for (size_t i = 0; i < n_ops; i++) {
    if (!(f->opsets[i].domain = dup_str(norm_domain(ops[i]->domain)))) return oom(im);
    f->opsets[i].version = ops[i]->has_version ? ops[i]->version : 0;
    f->n_opsets = i + 1;
  }
  f->body = ge_graph_new(fname, NULL);
  if (!f->body) return oom(im);
  ge_graph *b = f->body;
  GE_CHECK(set_opsets(im, b, ops, n_ops, false));
  for (size_t i = 0; i < fp->n_input; i++) {
    const char *in = str_or_empty(fp->input[i]);
    if (!*in) continue;
    if (ge_graph_find_value(b, in) >= 0)
      return ge_error(GE_ERR_PARSE, "%s: function '%s' lists input '%s' twice", im->label,
                      fname, in);
    int32_t id;
    st = ge_graph_value(b, in, &id);
    if (st != GE_OK) return ge_error_prefix(st, "%s: function '%s': ", im->label, fname);
    b->values[id].kind = GE_VALUE_INPUT;
    b->values[id].type.kind = GE_TYPE_TENSOR;
    b->values[id].type.dtype = GE_DTYPE_COUNT;
    b->values[id].type.shape.rank = GE_RANK_UNKNOWN;
    if (push_id(&b->inputs, &b->n_inputs, id) != GE_OK) return oom(im);
  }
  st = imp_nodes(im, b, fp->node, fp->n_node, 0);
  if (st != GE_OK) return ge_error_prefix(st, "in function '%s': ", fname);
  for (size_t i = 0; i < fp->n_output; i++) {
    const char *o = str_or_empty(fp->output[i]);
    int32_t id = *o ? ge_graph_find_value(b, o) : -1;
    if (id < 0)
      return ge_error(GE_ERR_PARSE, "%s: function '%s' output '%s' is not produced by its body",
                      im->label, fname, o);
    if (push_id(&b->outputs, &b->n_outputs, id) != GE_OK) return oom(im);
  }
  f->attr_defaults = calloc(fp->n_attribute_proto ? fp->n_attribute_proto : 1, sizeof(ge_attr_value));
  if (!f->attr_defaults) return oom(im);
  char nl[300];
  snprintf(nl, sizeof nl, "function '%s'", fname);
  for (size_t i = 0; i < fp->n_attribute_proto; i++) {
    GE_CHECK(imp_attr(im, b, fp->attribute_proto[i], nl, 0, &f->attr_defaults[i]));
    f->n_attr_defaults = i + 1;
  }
  st = ge_graph_toposort(b);
  if (st != GE_OK) return ge_error_prefix(st, "%s: function '%s': ", im->label, fname);
  return GE_OK;
}

/* ------------------------------------------------------------------ model */

static ge_status imp_model(const imp *im, const GeOnnx__ModelProto *mp, ge_graph **out) {
  if (!mp->graph) return ge_error(GE_ERR_PARSE, "%s: the ONNX model has no graph", im->label);
  if (mp->n_opset_import == 0)
    return ge_error(GE_ERR_PARSE, "%s: the ONNX model declares no opset_import", im->label);
  ge_graph *g;
  GE_CHECK(imp_graph(im, mp->graph, NULL, 0, mp->opset_import, mp->n_opset_import, &g));
  ge_status st = GE_OK;
  g->ir_version = mp->has_ir_version ? mp->ir_version : 0;
  g->model_version = mp->has_model_version ? mp->model_version : 0;
  if ((mp->producer_name && !(g->producer_name = dup_str(mp->producer_name))) ||
      (mp->producer_version && !(g->producer_version = dup_str(mp->producer_version))) ||
      (mp->domain && !(g->model_domain = dup_str(mp->domain))))
    goto nomem;
  if (mp->doc_string && *mp->doc_string) {
    free(g->doc); /* the model's doc wins over the graph's */
    if (!(g->doc = dup_str(mp->doc_string))) goto nomem;
  }
  if (mp->n_metadata_props) {
    g->meta_keys = calloc(mp->n_metadata_props, sizeof(char *));
    g->meta_values = calloc(mp->n_metadata_props, sizeof(char *));
    if (!g->meta_keys || !g->meta_values) goto nomem;
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
      g->meta_keys[i] = dup_str(mp->metadata_props[i]->key);
      g->meta_values[i] = dup_str(mp->metadata_props[i]->value);
      g->n_meta = i + 1;
      if (!g->meta_keys[i] || !g->meta_values[i]) goto nomem;
    }
  }
  if (mp->n_functions) {
    g->functions = calloc(mp->n_functions, sizeof(ge_function));
    if (!g->functions) goto nomem;
    for (size_t i = 0; i < mp->n_functions; i++) {
      g->n_functions = i + 1;
      st = imp_function(im, mp->functions[i], mp, &g->functions[i]);
      if (st != GE_OK) goto fail;
    }
  }
  *out = g;
  return GE_OK;
nomem:
  st = oom(im);
fail:
  ge_graph_free(g);
  return st;
}

ge_status ge_onnx_import_ex(const void *data, size_t size, const char *label,
                            const char *base_dir, void (*trim)(void *ctx),
                            void (*drop)(void *ctx), void *drop_ctx, ge_file_ref *backing,
                            uint64_t backing_off, ge_graph **out) {
  *out = NULL;
  imp im = {label ? label : "<memory>", base_dir, true, NULL, NULL, 0};
  ge_status st = ge_onnx_check_wire(data, size, im.label);
  if (st != GE_OK) {
    if (drop) drop(drop_ctx);
    return st;
  }
  if (backing) {
    scan_raw_locs(data, size, backing_off, &im.locs, &im.n_locs);
    if (im.locs) im.backing = backing;
  }
  raw_alloc_ctx rc = {trim, drop_ctx};
  ProtobufCAllocator alloc = {raw_alloc, raw_free, &rc};
  GeOnnx__ModelProto *mp = ge_onnx__model_proto__unpack(&alloc, size, data);
  /* the message holds copies of everything it needs: the input bytes can go now, before the
     tensors are made */
  if (drop) drop(drop_ctx);
  if (!mp) {
    free(im.locs);
    return ge_error(GE_ERR_PARSE, "%s: not a valid ONNX model (protobuf parse failed)", im.label);
  }
  if (im.locs && im.n_locs != (mp->graph ? mp->graph->n_initializer : 0)) im.backing = NULL;
  st = imp_model(&im, mp, out);
  ge_onnx__model_proto__free_unpacked(mp, &alloc);
  free(im.locs);
  return st;
}

ge_status ge_onnx_import(const void *data, size_t size, const char *label, const char *base_dir,
                         ge_graph **out) {
  return ge_onnx_import_ex(data, size, label, base_dir, NULL, NULL, NULL, NULL, 0, out);
}
