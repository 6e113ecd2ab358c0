/* NumPy .npy reading and writing: used by the node dump (ge.exec.enableDump) and the `ge` tool. */
#include "runtime/npy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/error.h"
#include "ir/ir.h"

static const struct {
  const char *descr; /* without the byte-order character */
  ge_dtype dt;
} npy_types[] = {
    {"f4", GE_F32}, {"f2", GE_F16}, {"f8", GE_F64}, {"i1", GE_I8},  {"i2", GE_I16},
    {"i4", GE_I32}, {"i8", GE_I64}, {"u1", GE_U8},  {"u2", GE_U16}, {"u4", GE_U32},
    {"u8", GE_U64}, {"b1", GE_BOOL},
};

static ge_status parse_header(const char *path, const char *h, ge_dtype *dt, int64_t *dims,
                              size_t *rank) {
  const char *d = strstr(h, "'descr'");
  const char *f = strstr(h, "'fortran_order'");
  const char *s = strstr(h, "'shape'");
  if (!d || !f || !s) return ge_error(GE_ERR_PARSE, "%s: malformed .npy header", path);
  d = strchr(d + 7, '\'');
  if (!d) return ge_error(GE_ERR_PARSE, "%s: malformed .npy descr", path);
  d++;
  char order = d[0];
  if (order != '<' && order != '|' && order != '=')
    return ge_error(GE_ERR_UNSUPPORTED, "%s: only little-endian .npy files are supported", path);
  bool found = false;
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (!strncmp(d + 1, npy_types[i].descr, 2) && d[3] == '\'') {
      *dt = npy_types[i].dt;
      found = true;
    }
  if (!found) {
    char descr[16] = {0};
    for (size_t i = 0; i < sizeof descr - 1 && d[i] && d[i] != '\''; i++) descr[i] = d[i];
    return ge_error(GE_ERR_UNSUPPORTED, "%s: unsupported .npy dtype '%s'", path, descr);
  }
  f += strlen("'fortran_order'");
  while (*f == ' ' || *f == ':') f++;
  if (!strncmp(f, "True", 4))
    return ge_error(GE_ERR_UNSUPPORTED, "%s: Fortran-order .npy files are not supported", path);
  const char *p = strchr(s, '(');
  if (!p) return ge_error(GE_ERR_PARSE, "%s: malformed .npy shape", path);
  p++;
  *rank = 0;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    char *end = NULL;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0) return ge_error(GE_ERR_PARSE, "%s: malformed .npy shape", path);
    if (*rank >= GE_MAX_RANK) return ge_error(GE_ERR_UNSUPPORTED, "%s: rank above %d", path, GE_MAX_RANK);
    dims[(*rank)++] = v;
    p = end;
  }
  return GE_OK;
}

ge_status ge_npy_read(const char *path, ge_tensor **out) {
  *out = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return ge_error(GE_ERR_IO, "%s: cannot open", path);
  unsigned char pre[10];
  ge_status st = GE_OK;
  char *hdr = NULL;
  if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
    st = ge_error(GE_ERR_PARSE, "%s: not a .npy file", path);
    goto done;
  }
  size_t hlen;
  if (pre[6] == 1) {
    hlen = pre[8] | (size_t)pre[9] << 8;
  } else {
    unsigned char more[2];
    if (fread(more, 1, 2, fp) != 2) {
      st = ge_error(GE_ERR_PARSE, "%s: truncated .npy header", path);
      goto done;
    }
    hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  if (hlen > (1u << 20)) {
    st = ge_error(GE_ERR_PARSE, "%s: .npy header too large", path);
    goto done;
  }
  hdr = calloc(hlen + 1, 1);
  if (!hdr || fread(hdr, 1, hlen, fp) != hlen) {
    st = ge_error(GE_ERR_PARSE, "%s: truncated .npy header", path);
    goto done;
  }
  ge_dtype dt = GE_F32;
  int64_t dims[GE_MAX_RANK];
  size_t rank = 0;
  st = parse_header(path, hdr, &dt, dims, &rank);
  if (st != GE_OK) goto done;
  st = ge_tensor_create(dt, dims, rank, out);
  if (st != GE_OK) goto done;
  size_t nb = ge_tensor_nbytes(*out);
  if (fread(ge_tensor_data(*out), 1, nb, fp) != nb) {
    ge_tensor_free(*out);
    *out = NULL;
    st = ge_error(GE_ERR_PARSE, "%s: truncated .npy data (expected %zu bytes)", path, nb);
  }
done:
  free(hdr);
  fclose(fp);
  return st;
}

ge_status ge_npy_write(const char *path, const ge_tensor *t) {
  const char *descr = NULL;
  ge_dtype dt = ge_tensor_dtype(t);
  for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
    if (npy_types[i].dt == dt) descr = npy_types[i].descr;
  bool widen = dt == GE_BF16; /* NumPy has no bfloat16: written as float32 */
  if (widen) descr = "f4";
  if (!descr)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: cannot write dtype %s as .npy", path, ge_dtype_name(dt));
  char shape[512] = "";
  size_t rank = ge_tensor_rank(t);
  const int64_t *dims = ge_tensor_dims(t);
  size_t len = 0;
  for (size_t i = 0; i < rank; i++)
    len += (size_t)snprintf(shape + len, sizeof shape - len, "%lld,%s", (long long)dims[i],
                            (i + 1 < rank) ? " " : "");
  if (rank > 1) shape[len - 1] = '\0'; /* "(2, 3)" rather than "(2, 3,)" */
  char hdr[700];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }",
                   descr[0] == 'b' || descr[1] == '1' ? '|' : '<', descr, shape);
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  FILE *fp = fopen(path, "wb");
  if (!fp) return ge_error(GE_ERR_IO, "%s: cannot create", path);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  size_t hl = (size_t)n + pad + 1;
  pre[8] = (unsigned char)(hl & 0xff);
  pre[9] = (unsigned char)(hl >> 8);
  bool ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(hdr, 1, (size_t)n, fp) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', fp) != EOF;
  ok = ok && fputc('\n', fp) != EOF;
  size_t nb = ge_tensor_nbytes(t);
  if (!widen) {
    ok = ok && fwrite(ge_tensor_data(t), 1, nb, fp) == nb;
  } else {
    const uint16_t *src = ge_tensor_data(t);
    size_t count = nb / sizeof *src;
    float buf[1024];
    for (size_t i = 0; ok && i < count; i += 1024) {
      size_t m = count - i < 1024 ? count - i : 1024;
      for (size_t j = 0; j < m; j++) buf[j] = ge_bf16_to_f32(src[i + j]);
      ok = fwrite(buf, sizeof *buf, m, fp) == m;
    }
  }
  ok = (fclose(fp) == 0) && ok;
  if (!ok) return ge_error(GE_ERR_IO, "%s: write failed", path);
  return GE_OK;
}
