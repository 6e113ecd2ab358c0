/* The .gem offline model: header encode/parse, save and import (layout in gem.h). */
#include "frontend/gem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx.h"

static const char *const k_prec_long[] = {"must_keep_origin_dtype",   "force_fp32",
                                          "allow_fp32_to_bf16",       "allow_fp32_to_fp16",
                                          "allow_mix_precision_bf16", "allow_mix_precision_fp16"};
static const char *const k_prec_short[] = {"keep", "fp32", "bf16", "fp16", "mixed_bf16",
                                           "mixed_fp16"};
#define N_PREC (sizeof k_prec_long / sizeof k_prec_long[0])

int ge_gem_precision_parse(const char *s) {
  if (!s) return -1;
  for (size_t i = 0; i < N_PREC; i++)
    if (!strcmp(s, k_prec_long[i]) || !strcmp(s, k_prec_short[i])) return (int)i;
  return -1;
}

const char *ge_gem_precision_name(int mode) {
  return mode >= 0 && (size_t)mode < N_PREC ? k_prec_long[mode] : "unknown";
}

void ge_gem_header_init(ge_gem_header *h, int precision_mode, int opt_level) {
  memset(h, 0, sizeof *h);
  h->format_version = GE_GEM_FORMAT_VERSION;
  snprintf(h->ge_version, sizeof h->ge_version, "%s", ge_version());
  h->precision_mode = precision_mode;
  h->opt_level = opt_level;
}

void ge_gem_header_clear(ge_gem_header *h) {
  if (!h) return;
  for (size_t i = 0; i < h->n_input_shapes; i++) free(h->input_shapes[i]);
  free(h->input_shapes);
  h->input_shapes = NULL;
  h->n_input_shapes = 0;
}

static ge_status push_shape(ge_gem_header *h, char *s) {
  if (h->n_input_shapes >= SIZE_MAX / sizeof(char *) - 1) {
    free(s);
    return ge_error(GE_ERR_OUT_OF_MEMORY, ".gem header: too many input shapes");
  }
  char **na = realloc(h->input_shapes, (h->n_input_shapes + 1) * sizeof *na);
  if (!na) {
    free(s);
    return ge_error(GE_ERR_OUT_OF_MEMORY, ".gem header: out of memory");
  }
  h->input_shapes = na;
  na[h->n_input_shapes++] = s;
  return GE_OK;
}

ge_status ge_gem_header_add_shape(ge_gem_header *h, const char *name, const char *dims) {
  if (!h || !name || !dims)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_gem_header_add_shape: NULL argument");
  if (strchr(name, '\n') || strchr(dims, '\n'))
    return ge_error(GE_ERR_INVALID_ARGUMENT, ".gem header: input shape '%s' has a newline", name);
  size_t a = strlen(name), b = strlen(dims);
  if (a > SIZE_MAX - b - 2) return ge_error(GE_ERR_OUT_OF_MEMORY, ".gem header: shape too long");
  char *s = malloc(a + b + 2);
  if (!s) return ge_error(GE_ERR_OUT_OF_MEMORY, ".gem header: out of memory");
  memcpy(s, name, a);
  s[a] = ':';
  memcpy(s + a + 1, dims, b + 1);
  return push_shape(h, s);
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

ge_status ge_gem_header_encode(const ge_gem_header *h, uint64_t payload_size,
                               uint64_t payload_checksum, uint8_t **out, size_t *out_size) {
  if (!h || !out || !out_size)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_gem_header_encode: NULL argument");
  *out = NULL;
  *out_size = 0;
  if (strchr(h->ge_version, '\n'))
    return ge_error(GE_ERR_INVALID_ARGUMENT, ".gem header: bad ge version string");
  char fixed[160];
  int nf = snprintf(fixed, sizeof fixed, "ge_version=%s\nprecision=%s\nopt_level=%d\n",
                    h->ge_version, ge_gem_precision_name(h->precision_mode), h->opt_level);
  if (nf < 0 || (size_t)nf >= sizeof fixed)
    return ge_error(GE_ERR_INTERNAL, ".gem header: fixed fields too long");
  size_t text = (size_t)nf;
  for (size_t i = 0; i < h->n_input_shapes; i++) {
    size_t n = strlen(h->input_shapes[i]);
    if (strchr(h->input_shapes[i], '\n'))
      return ge_error(GE_ERR_INVALID_ARGUMENT, ".gem header: input shape '%s' has a newline",
                      h->input_shapes[i]);
    if (n > GE_GEM_MAX_HEADER || text > GE_GEM_MAX_HEADER - n - 13)
      return ge_error(GE_ERR_INVALID_ARGUMENT, ".gem header: more than %u bytes of input shapes",
                      GE_GEM_MAX_HEADER);
    text += n + 13; /* "input_shape=" + "\n" */
  }
  size_t total = GE_GEM_FIXED_BYTES + text;
  uint8_t *buf = malloc(total);
  if (!buf) return ge_error(GE_ERR_OUT_OF_MEMORY, ".gem header: out of memory");
  memcpy(buf, GE_GEM_MAGIC, 4);
  put_u32(buf + 4, h->format_version);
  put_u32(buf + 8, (uint32_t)text);
  uint8_t *q = buf + 12;
  memcpy(q, fixed, (size_t)nf);
  q += nf;
  for (size_t i = 0; i < h->n_input_shapes; i++) {
    size_t n = strlen(h->input_shapes[i]);
    memcpy(q, "input_shape=", 12);
    memcpy(q + 12, h->input_shapes[i], n);
    q[12 + n] = '\n';
    q += n + 13;
  }
  put_u64(q, payload_size);
  put_u64(q + 8, payload_checksum);
  *out = buf;
  *out_size = total;
  return GE_OK;
}

static ge_status parse_text(const char *t, size_t n, const char *label, ge_gem_header *h) {
  bool have_ver = false, have_prec = false, have_level = false;
  size_t i = 0;
  while (i < n) {
    const char *nl = memchr(t + i, '\n', n - i);
    if (!nl) return ge_error(GE_ERR_PARSE, "%s: corrupt .gem header (unterminated line)", label);
    size_t len = (size_t)(nl - (t + i));
    const char *line = t + i;
    const char *eq = memchr(line, '=', len);
    if (!eq) return ge_error(GE_ERR_PARSE, "%s: corrupt .gem header (line without '=')", label);
    size_t klen = (size_t)(eq - line), vlen = len - klen - 1;
    const char *v = eq + 1;
    if (klen == 10 && !memcmp(line, "ge_version", 10)) {
      if (vlen >= sizeof h->ge_version)
        return ge_error(GE_ERR_PARSE, "%s: corrupt .gem header (ge version too long)", label);
      memcpy(h->ge_version, v, vlen);
      h->ge_version[vlen] = 0;
      have_ver = true;
    } else if (klen == 9 && !memcmp(line, "precision", 9)) {
      char buf[64];
      if (vlen >= sizeof buf)
        return ge_error(GE_ERR_PARSE, "%s: corrupt .gem header (bad precision)", label);
      memcpy(buf, v, vlen);
      buf[vlen] = 0;
      int m = ge_gem_precision_parse(buf);
      if (m < 0)
        return ge_error(GE_ERR_PARSE, "%s: .gem header has an unknown precision mode '%s'",
                        label, buf);
      h->precision_mode = m;
      have_prec = true;
    } else if (klen == 9 && !memcmp(line, "opt_level", 9)) {
      if (vlen != 1 || v[0] < '0' || v[0] > '3')
        return ge_error(GE_ERR_PARSE, "%s: corrupt .gem header (bad opt_level)", label);
      h->opt_level = v[0] - '0';
      have_level = true;
    } else if (klen == 11 && !memcmp(line, "input_shape", 11)) {
      char *s = strndup(v, vlen);
      if (!s) return ge_error(GE_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
      GE_CHECK(push_shape(h, s));
    } /* unknown keys of the same format version are ignored (additive fields) */
    i += len + 1;
  }
  if (!have_ver || !have_prec || !have_level)
    return ge_error(GE_ERR_PARSE, "%s: corrupt .gem header (missing %s)", label,
                    !have_ver ? "ge_version" : !have_prec ? "precision" : "opt_level");
  return GE_OK;
}

ge_status ge_gem_parse(const void *data, size_t size, const char *label, ge_gem_header *h,
                       const uint8_t **payload, size_t *payload_size) {
  if (!label) label = "<memory>";
  if (!h || !payload || !payload_size || (!data && size))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_gem_parse: NULL argument");
  memset(h, 0, sizeof *h);
  *payload = NULL;
  *payload_size = 0;
  const uint8_t *p = data;
  if (size < 12 || memcmp(p, "GEM", 3) != 0)
    return ge_error(GE_ERR_PARSE, "%s: truncated .gem file (%zu bytes, no complete header)",
                    label, size);
  if (p[3] != '1')
    return ge_error(GE_ERR_PARSE,
                    "%s: .gem magic 'GEM%c' is from another format generation; this ge reads "
                    "'GEM1' (recompile the model with this ge)",
                    label, p[3] >= 32 && p[3] < 127 ? p[3] : '?');
  h->format_version = get_u32(p + 4);
  if (h->format_version != GE_GEM_FORMAT_VERSION)
    return ge_error(GE_ERR_PARSE,
                    "%s: .gem format version %u, this ge reads version %u (recompile the model "
                    "with `ge compile`)",
                    label, h->format_version, GE_GEM_FORMAT_VERSION);
  uint32_t text = get_u32(p + 8);
  if (text > GE_GEM_MAX_HEADER || size - 12 < (size_t)text + 16)
    return ge_error(GE_ERR_PARSE, "%s: truncated or corrupt .gem file (header of %u bytes, file "
                    "of %zu)", label, text, size);
  ge_status st = parse_text((const char *)p + 12, text, label, h);
  if (st != GE_OK) {
    ge_gem_header_clear(h);
    return st;
  }
  if (strcmp(h->ge_version, ge_version()) != 0) {
    st = ge_error(GE_ERR_PARSE,
                  "%s: compiled by ge %s, this is ge %s (recompile the model with `ge compile`)",
                  label, h->ge_version, ge_version());
    ge_gem_header_clear(h);
    return st;
  }
  size_t off = 12 + (size_t)text;
  uint64_t n = get_u64(p + off), sum = get_u64(p + off + 8);
  off += 16;
  if (n != (uint64_t)(size - off)) {
    st = ge_error(GE_ERR_PARSE, "%s: %s .gem file (payload of %llu bytes, %zu present)", label,
                  n > (uint64_t)(size - off) ? "truncated" : "corrupt", (unsigned long long)n,
                  size - off);
    ge_gem_header_clear(h);
    return st;
  }
  if (ge_hash64(p + off, (size_t)n) != sum) {
    st = ge_error(GE_ERR_PARSE, "%s: corrupt .gem file (payload checksum mismatch)", label);
    ge_gem_header_clear(h);
    return st;
  }
  *payload = p + off;
  *payload_size = (size_t)n;
  return GE_OK;
}

ge_status ge_gem_save(const ge_graph *g, const ge_gem_header *h, const char *path) {
  if (!g || !h || !path || !*path)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_gem_save: NULL graph, header or path");
  void *data = NULL;
  size_t size = 0;
  ge_status st = ge_onnx_export(g, &data, &size);
  if (st != GE_OK) return ge_error_prefix(st, "%s: ", path);
  uint8_t *head = NULL;
  size_t head_n = 0;
  st = ge_gem_header_encode(h, size, ge_hash64(data, size), &head, &head_n);
  if (st != GE_OK) {
    free(data);
    return ge_error_prefix(st, "%s: ", path);
  }
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = ge_error(GE_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    free(head);
    free(data);
    return st;
  }
  size_t w1 = fwrite(head, 1, head_n, f);
  size_t w2 = fwrite(data, 1, size, f);
  int err = ferror(f);
  int cl = fclose(f);
  free(head);
  free(data);
  if (w1 != head_n || w2 != size || err || cl != 0)
    return ge_error(GE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  return GE_OK;
}

ge_status ge_gem_import(const void *data, size_t size, const char *label, const char *base_dir,
                        void (*trim)(void *ctx), void (*drop)(void *ctx), void *drop_ctx,
                        ge_file_ref *backing, uint64_t backing_off, ge_graph **out) {
  *out = NULL;
  ge_gem_header h;
  const uint8_t *payload;
  size_t n;
  GE_CHECK(ge_gem_parse(data, size, label, &h, &payload, &n));
  ge_status st = ge_onnx_import_ex(payload, n, label, base_dir, trim, drop, drop_ctx, backing,
                                   backing_off + (uint64_t)(payload - (const uint8_t *)data), out);
  if (st == GE_OK) {
    (*out)->optimized = true;
    (*out)->precision_mode = h.precision_mode;
    (*out)->opt_level = h.opt_level;
  } else if (st != GE_ERR_OUT_OF_MEMORY) {
    st = ge_error_prefix(GE_ERR_PARSE, "%s: corrupt .gem payload: ", label);
  }
  ge_gem_header_clear(&h);
  return st;
}
