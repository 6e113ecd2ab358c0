/* Checkpoints in the safetensors format: an 8-byte little-endian header length, a JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...} padded with
 * spaces to 8 bytes, then the raw little-endian tensor bytes.  Also the ready-made "Save"
 * callback that writes one file per call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static const struct {
  ge_dtype dt;
  const char *name;
} st_dtypes[] = {
    {GE_F32, "F32"}, {GE_F16, "F16"}, {GE_BF16, "BF16"}, {GE_F64, "F64"}, {GE_I8, "I8"},
    {GE_I16, "I16"}, {GE_I32, "I32"}, {GE_I64, "I64"},   {GE_U8, "U8"},   {GE_U16, "U16"},
    {GE_U32, "U32"}, {GE_U64, "U64"}, {GE_BOOL, "BOOL"},
};

static const char *dtype_to_st(ge_dtype dt) {
  for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
    if (st_dtypes[i].dt == dt) return st_dtypes[i].name;
  return NULL;
}

/* ------------------------------------------------------------------ a growable buffer */

typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (n > SIZE_MAX - b->n - 1) {
    b->oom = true;
    return;
  }
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) {
      if (cap > SIZE_MAX / 2) {
        b->oom = true;
        return;
      }
      cap *= 2;
    }
    char *q = realloc(b->p, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt_u64(sbuf *b, unsigned long long v) {
  char t[32];
  int k = snprintf(t, sizeof t, "%llu", v);
  sb_put(b, t, (size_t)k);
}

static void sb_json_string(sbuf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      char e[2] = {'\\', (char)ch};
      sb_put(b, e, 2);
    } else if (ch < 0x20) {
      char e[8];
      snprintf(e, sizeof e, "\\u%04x", ch);
      sb_put(b, e, 6);
    } else {
      sb_put(b, (const char *)&ch, 1);
    }
  }
  sb_put(b, "\"", 1);
}

/* ------------------------------------------------------------------ writing */

ge_status ge_checkpoint_save(const ge_tensor_map *m, const char *path) {
  if (!m || !path) return ge_error(GE_ERR_INVALID_ARGUMENT, "checkpoint_save: NULL map or path");
  size_t n = ge_tensor_map_size(m);
  sbuf h = {0};
  sb_str(&h, "{\"__metadata__\":{\"format\":\"pt\",\"producer\":\"ge\"}");
  uint64_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const ge_tensor *t = ge_tensor_map_value(m, i);
    const char *dn = t ? dtype_to_st(t->dtype) : NULL;
    if (!dn) {
      free(h.p);
      return ge_error(GE_ERR_UNSUPPORTED, "checkpoint '%s': tensor '%s' has dtype %s, which "
                      "safetensors cannot hold", path, ge_tensor_map_key(m, i),
                      t ? ge_dtype_name(t->dtype) : "(null)");
    }
    sb_str(&h, ",");
    sb_json_string(&h, ge_tensor_map_key(m, i));
    sb_str(&h, ":{\"dtype\":\"");
    sb_str(&h, dn);
    sb_str(&h, "\",\"shape\":[");
    for (int32_t d = 0; d < t->rank; d++) {
      if (d) sb_str(&h, ",");
      sb_fmt_u64(&h, (unsigned long long)t->dims[d]);
    }
    sb_str(&h, "],\"data_offsets\":[");
    sb_fmt_u64(&h, off);
    sb_str(&h, ",");
    off += t->nbytes;
    sb_fmt_u64(&h, off);
    sb_str(&h, "]}");
  }
  sb_str(&h, "}");
  while (!h.oom && h.n % 8) sb_str(&h, " ");
  if (h.oom) {
    free(h.p);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "checkpoint '%s': out of memory", path);
  }
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 8);
  if (!tmp) {
    free(h.p);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "checkpoint '%s': out of memory", path);
  }
  snprintf(tmp, plen + 8, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    ge_status st = ge_error(GE_ERR_IO, "checkpoint '%s': cannot create '%s': %s", path, tmp,
                            strerror(errno));
    free(tmp);
    free(h.p);
    return st;
  }
  unsigned char len[8];
  uint64_t hl = h.n;
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)(hl >> (8 * i));
  bool ok = fwrite(len, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
  for (size_t i = 0; ok && i < n; i++) {
    const ge_tensor *t = ge_tensor_map_value(m, i);
    if (t->nbytes && fwrite(t->data, 1, t->nbytes, f) != t->nbytes) ok = false;
  }
  if (fclose(f) != 0) ok = false;
  free(h.p);
  ge_status st = GE_OK;
  if (!ok || rename(tmp, path) != 0) {
    st = ge_error(GE_ERR_IO, "checkpoint '%s': write failed: %s", path, strerror(errno));
    remove(tmp);
  }
  free(tmp);
  return st;
}

/* ------------------------------------------------------------------ reading */

typedef struct jp {
  const char *s, *end;
  const char *path;
} jp;

static void skip_ws(jp *p) {
  while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

static ge_status jfail(jp *p, const char *what) {
  return ge_error(GE_ERR_PARSE, "checkpoint '%s': bad header: %s", p->path, what);
}

static ge_status expect(jp *p, char ch) {
  skip_ws(p);
  if (p->s >= p->end || *p->s != ch) {
    char m[32];
    snprintf(m, sizeof m, "expected '%c'", ch);
    return jfail(p, m);
  }
  p->s++;
  return GE_OK;
}

/* A JSON string into a new buffer (escapes \" \\ \/ \n \t \uXXXX below 0x80). */
static ge_status parse_string(jp *p, char **out) {
  GE_CHECK(expect(p, '"'));
  sbuf b = {0};
  sb_put(&b, "", 0);
  while (p->s < p->end && *p->s != '"') {
    char ch = *p->s++;
    if (ch == '\\') {
      if (p->s >= p->end) break;
      char e = *p->s++;
      if (e == 'n') ch = '\n';
      else if (e == 't') ch = '\t';
      else if (e == 'r') ch = '\r';
      else if (e == 'b') ch = '\b';
      else if (e == 'f') ch = '\f';
      else if (e == 'u') {
        if (p->end - p->s < 4) break;
        char hex[5] = {p->s[0], p->s[1], p->s[2], p->s[3], 0};
        p->s += 4;
        long v = strtol(hex, NULL, 16);
        if (v <= 0 || v >= 0x80) {
          free(b.p);
          return jfail(p, "non-ASCII \\u escape in a name");
        }
        ch = (char)v;
      } else ch = e;
    }
    sb_put(&b, &ch, 1);
  }
  if (p->s >= p->end || b.oom) {
    free(b.p);
    return jfail(p, "unterminated string");
  }
  p->s++;
  *out = b.p;
  return GE_OK;
}

static ge_status parse_u64(jp *p, uint64_t *out) {
  skip_ws(p);
  uint64_t v = 0;
  const char *start = p->s;
  while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
    unsigned d = (unsigned)(*p->s - '0');
    if (v > (UINT64_MAX - d) / 10) return jfail(p, "number too large");
    v = v * 10 + d;
    p->s++;
  }
  if (p->s == start) return jfail(p, "expected a number");
  *out = v;
  return GE_OK;
}

/* Skips any JSON value (used for __metadata__ and unknown fields). */
static ge_status skip_value(jp *p, int depth) {
  if (depth > 32) return jfail(p, "nested too deeply");
  skip_ws(p);
  if (p->s >= p->end) return jfail(p, "unexpected end");
  char ch = *p->s;
  if (ch == '"') {
    char *s = NULL;
    GE_CHECK(parse_string(p, &s));
    free(s);
    return GE_OK;
  }
  if (ch == '{' || ch == '[') {
    char close = ch == '{' ? '}' : ']';
    p->s++;
    skip_ws(p);
    if (p->s < p->end && *p->s == close) {
      p->s++;
      return GE_OK;
    }
    for (;;) {
      if (ch == '{') {
        char *k = NULL;
        GE_CHECK(parse_string(p, &k));
        free(k);
        GE_CHECK(expect(p, ':'));
      }
      GE_CHECK(skip_value(p, depth + 1));
      skip_ws(p);
      if (p->s < p->end && *p->s == ',') {
        p->s++;
        continue;
      }
      return expect(p, close);
    }
  }
  while (p->s < p->end && *p->s != ',' && *p->s != '}' && *p->s != ']') p->s++;
  return GE_OK;
}

typedef struct st_entry {
  char *dtype;
  int64_t dims[GE_MAX_RANK];
  size_t rank;
  uint64_t begin, end;
  bool has_shape, has_off;
} st_entry;

static ge_status parse_entry(jp *p, st_entry *e) {
  GE_CHECK(expect(p, '{'));
  skip_ws(p);
  if (p->s < p->end && *p->s == '}') {
    p->s++;
    return GE_OK;
  }
  for (;;) {
    char *k = NULL;
    GE_CHECK(parse_string(p, &k));
    ge_status st = expect(p, ':');
    if (st == GE_OK && !strcmp(k, "dtype")) {
      free(e->dtype);
      e->dtype = NULL;
      st = parse_string(p, &e->dtype);
    } else if (st == GE_OK && (!strcmp(k, "shape") || !strcmp(k, "data_offsets"))) {
      bool shape = !strcmp(k, "shape");
      uint64_t vals[GE_MAX_RANK];
      size_t nv = 0;
      st = expect(p, '[');
      skip_ws(p);
      if (st == GE_OK && p->s < p->end && *p->s == ']') {
        p->s++;
      } else {
        while (st == GE_OK) {
          if (nv == GE_MAX_RANK) {
            st = jfail(p, "too many dimensions");
            break;
          }
          st = parse_u64(p, &vals[nv++]);
          skip_ws(p);
          if (st == GE_OK && p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
          }
          if (st == GE_OK) st = expect(p, ']');
          break;
        }
      }
      if (st == GE_OK && shape) {
        for (size_t i = 0; i < nv; i++) {
          if (vals[i] > (uint64_t)INT64_MAX) st = jfail(p, "dimension too large");
          e->dims[i] = (int64_t)vals[i];
        }
        e->rank = nv;
        e->has_shape = true;
      } else if (st == GE_OK) {
        if (nv != 2 || vals[0] > vals[1]) st = jfail(p, "data_offsets must be [begin, end]");
        e->begin = vals[0];
        e->end = nv == 2 ? vals[1] : 0;
        e->has_off = true;
      }
    } else if (st == GE_OK) {
      st = skip_value(p, 1);
    }
    free(k);
    GE_CHECK(st);
    skip_ws(p);
    if (p->s < p->end && *p->s == ',') {
      p->s++;
      continue;
    }
    return expect(p, '}');
  }
}

ge_status ge_checkpoint_load(const char *path, ge_tensor_map **out) {
  if (!path || !out) return ge_error(GE_ERR_INVALID_ARGUMENT, "checkpoint_load: NULL path or out");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return ge_error(GE_ERR_IO, "checkpoint '%s': cannot open: %s", path, strerror(errno));
  unsigned char len[8];
  char *buf = NULL;
  ge_status st = GE_OK;
  uint64_t hl = 0, file_size = 0;
  if (fread(len, 1, 8, f) != 8) st = ge_error(GE_ERR_PARSE, "checkpoint '%s': shorter than 8 bytes", path);
  if (st == GE_OK) {
    for (int i = 0; i < 8; i++) hl |= (uint64_t)len[i] << (8 * i);
    if (fseek(f, 0, SEEK_END) != 0) st = ge_error(GE_ERR_IO, "checkpoint '%s': cannot seek", path);
    long fs = ftell(f);
    if (st == GE_OK && fs < 8) st = ge_error(GE_ERR_IO, "checkpoint '%s': cannot size", path);
    file_size = (uint64_t)(fs < 0 ? 0 : fs);
    if (st == GE_OK && hl > file_size - 8)
      st = ge_error(GE_ERR_PARSE, "checkpoint '%s': header length %llu exceeds the file", path,
                    (unsigned long long)hl);
  }
  if (st == GE_OK && (size_t)hl != hl) st = ge_error(GE_ERR_PARSE, "checkpoint '%s': header too large", path);
  if (st == GE_OK && !(buf = malloc((size_t)hl + 1)))
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "checkpoint '%s': out of memory", path);
  if (st == GE_OK && (fseek(f, 8, SEEK_SET) != 0 || fread(buf, 1, (size_t)hl, f) != hl))
    st = ge_error(GE_ERR_IO, "checkpoint '%s': cannot read the header", path);
  ge_tensor_map *m = NULL;
  if (st == GE_OK) st = ge_tensor_map_create(&m);
  uint64_t data_size = file_size - 8 - hl;
  jp p = {.s = buf, .end = buf ? buf + hl : NULL, .path = path};
  if (st == GE_OK) st = expect(&p, '{');
  skip_ws(&p);
  bool empty = st == GE_OK && p.s < p.end && *p.s == '}';
  if (empty) p.s++;
  while (st == GE_OK && !empty) {
    char *name = NULL;
    st = parse_string(&p, &name);
    if (st == GE_OK) st = expect(&p, ':');
    if (st == GE_OK && !strcmp(name, "__metadata__")) {
      st = skip_value(&p, 1);
    } else if (st == GE_OK) {
      st_entry e = {0};
      st = parse_entry(&p, &e);
      ge_dtype dt = GE_DTYPE_COUNT;
      for (size_t i = 0; st == GE_OK && e.dtype && i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (!strcmp(st_dtypes[i].name, e.dtype)) dt = st_dtypes[i].dt;
      if (st == GE_OK && (dt == GE_DTYPE_COUNT || !e.has_shape || !e.has_off))
        st = ge_error(GE_ERR_UNSUPPORTED, "checkpoint '%s': tensor '%s': missing fields or "
                      "unsupported dtype %s", path, name, e.dtype ? e.dtype : "(none)");
      ge_tensor *t = NULL;
      if (st == GE_OK) st = ge_tensor_create(dt, e.dims, e.rank, &t);
      if (st == GE_OK && (e.end > data_size || e.end - e.begin != t->nbytes))
        st = ge_error(GE_ERR_PARSE, "checkpoint '%s': tensor '%s': data_offsets [%llu, %llu] do "
                      "not fit %zu bytes in a data section of %llu", path, name,
                      (unsigned long long)e.begin, (unsigned long long)e.end, t->nbytes,
                      (unsigned long long)data_size);
      if (st == GE_OK && t->nbytes &&
          (fseek(f, (long)(8 + hl + e.begin), SEEK_SET) != 0 ||
           fread(t->data, 1, t->nbytes, f) != t->nbytes))
        st = ge_error(GE_ERR_IO, "checkpoint '%s': cannot read tensor '%s'", path, name);
      if (st == GE_OK) {
        st = ge_tensor_map_put(m, name, t);
        t = NULL;
      }
      ge_tensor_free(t);
      free(e.dtype);
    }
    free(name);
    if (st != GE_OK) break;
    skip_ws(&p);
    if (p.s < p.end && *p.s == ',') {
      p.s++;
      continue;
    }
    st = expect(&p, '}');
    break;
  }
  fclose(f);
  free(buf);
  if (st != GE_OK) {
    ge_tensor_map_free(m);
    return st;
  }
  *out = m;
  return GE_OK;
}

/* ------------------------------------------------------------------ the Save consumer */

struct ge_checkpoint_writer {
  char *prefix;
  uint64_t count; /* a key's callbacks never run concurrently: no lock needed */
};

ge_status ge_checkpoint_writer_create(const char *prefix, ge_checkpoint_writer **out) {
  if (!prefix || !prefix[0] || !out)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "checkpoint_writer_create: empty prefix or NULL out");
  ge_checkpoint_writer *w = calloc(1, sizeof *w);
  if (w) w->prefix = strdup(prefix);
  if (!w || !w->prefix) {
    free(w);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "checkpoint_writer_create: out of memory");
  }
  *out = w;
  return GE_OK;
}

void ge_checkpoint_writer_free(ge_checkpoint_writer *w) {
  if (!w) return;
  free(w->prefix);
  free(w);
}

uint64_t ge_checkpoint_writer_count(const ge_checkpoint_writer *w) { return w ? w->count : 0; }

uint32_t ge_checkpoint_writer_callback(uint32_t graph_id, const ge_tensor_map *params,
                                       void *writer) {
  ge_checkpoint_writer *w = writer;
  if (!w) return 1;
  size_t cap = strlen(w->prefix) + 64;
  char *path = malloc(cap);
  if (!path) return 2;
  snprintf(path, cap, "%s-%u-%llu.safetensors", w->prefix, graph_id, (unsigned long long)w->count);
  ge_status st = ge_checkpoint_save(params, path);
  if (st == GE_OK) {
    snprintf(path, cap, "%s-latest.safetensors", w->prefix);
    st = ge_checkpoint_save(params, path);
  }
  free(path);
  if (st != GE_OK) {
    ge_warn("checkpoint writer: %s", ge_last_error());
    return 3;
  }
  w->count++;
  return 0;
}
