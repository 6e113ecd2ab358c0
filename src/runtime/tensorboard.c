/* A TensorBoard event-file writer for Summary data: scalars, histograms and images.
 *
 * The file is a sequence of TFRecords (u64 length, masked CRC32C of the length, the bytes, the
 * masked CRC32C of the bytes), each an Event (tb_event.proto).  The first says
 * "brain.Event:2"; each callback call appends one Event holding one value per tag:
 *   scalar            simple_value (the first element, as float)
 *   histogram, tensor  a histogram of 30 equal-width buckets over the finite elements
 *                      (a one-element "tensor" is written as a scalar)
 *   image             a PNG ([H,W,C] or the first of [N,H,W,C]; C 1, 3 or 4; uint8 as is,
 *                      floats scaled from [0, 1])
 * The step is the writer's call count (0, 1, 2...). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "ir/ir.h"
#include "tb_event.pb-c.h"

#define TB_BUCKETS 30

struct ge_summary_writer {
  FILE *f;
  char *path;
  int64_t step;        /* a key's callbacks never run concurrently: no lock needed */
  uint32_t crc32c[256];
  uint32_t crc32[256];
};

static void make_table(uint32_t *t, uint32_t poly) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ poly : c >> 1;
    t[i] = c;
  }
}

static uint32_t crc_update(const uint32_t *t, uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

static uint32_t masked_crc32c(const ge_summary_writer *w, const uint8_t *p, size_t n) {
  uint32_t c = crc_update(w->crc32c, 0, p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static double wall_time(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static ge_status write_event(ge_summary_writer *w, const Ge__Tb__Event *ev) {
  size_t n = ge__tb__event__get_packed_size(ev);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) return ge_error(GE_ERR_OUT_OF_MEMORY, "summary writer: out of memory");
  ge__tb__event__pack(ev, buf);
  uint8_t hdr[12];
  uint64_t len = n;
  for (int i = 0; i < 8; i++) hdr[i] = (uint8_t)(len >> (8 * i));
  uint32_t hc = masked_crc32c(w, hdr, 8), dc = masked_crc32c(w, buf, n);
  for (int i = 0; i < 4; i++) hdr[8 + i] = (uint8_t)(hc >> (8 * i));
  uint8_t foot[4];
  for (int i = 0; i < 4; i++) foot[i] = (uint8_t)(dc >> (8 * i));
  bool ok = fwrite(hdr, 1, 12, w->f) == 12 && fwrite(buf, 1, n, w->f) == n &&
            fwrite(foot, 1, 4, w->f) == 4 && fflush(w->f) == 0;
  free(buf);
  if (!ok) return ge_error(GE_ERR_IO, "summary writer: cannot write '%s': %s", w->path, strerror(errno));
  return GE_OK;
}

ge_status ge_summary_writer_create(const char *logdir, ge_summary_writer **out) {
  if (!logdir || !logdir[0] || !out)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "summary_writer_create: empty logdir or NULL out");
  *out = NULL;
  ge_summary_writer *w = calloc(1, sizeof *w);
  if (!w) return ge_error(GE_ERR_OUT_OF_MEMORY, "summary writer: out of memory");
  make_table(w->crc32c, 0x82f63b78u);
  make_table(w->crc32, 0xedb88320u);
  char host[128] = "localhost";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  size_t cap = strlen(logdir) + sizeof host + 96;
  w->path = malloc(cap);
  if (!w->path) {
    free(w);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "summary writer: out of memory");
  }
  snprintf(w->path, cap, "%s/events.out.tfevents.%lld.%s.%d.ge", logdir, (long long)wall_time(),
           host, (int)getpid());
  w->f = fopen(w->path, "wb");
  if (!w->f) {
    ge_status st = ge_error(GE_ERR_IO, "summary writer: cannot create '%s': %s", w->path,
                            strerror(errno));
    free(w->path);
    free(w);
    return st;
  }
  Ge__Tb__Event ev = GE__TB__EVENT__INIT;
  ev.wall_time = wall_time();
  ev.what_case = GE__TB__EVENT__WHAT_FILE_VERSION;
  ev.file_version = "brain.Event:2";
  ge_status st = write_event(w, &ev);
  if (st != GE_OK) {
    fclose(w->f);
    free(w->path);
    free(w);
    return st;
  }
  *out = w;
  return GE_OK;
}

void ge_summary_writer_free(ge_summary_writer *w) {
  if (!w) return;
  if (w->f) fclose(w->f);
  free(w->path);
  free(w);
}

const char *ge_summary_writer_path(const ge_summary_writer *w) { return w ? w->path : NULL; }

/* ------------------------------------------------------------------ values */

static void histogram(const ge_tensor *t, Ge__Tb__HistogramProto *h, double *limits,
                      double *counts) {
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0, num = 0;
  for (size_t i = 0; i < t->numel; i++) {
    double x = ge_tensor_get_f64(t, i);
    if (!isfinite(x)) continue;
    if (x < mn) mn = x;
    if (x > mx) mx = x;
    sum += x;
    sq += x * x;
    num++;
  }
  if (num == 0) mn = mx = 0;
  size_t nb = mx > mn ? TB_BUCKETS : 1;
  double width = mx > mn ? (mx - mn) / (double)nb : 1;
  for (size_t b = 0; b < nb; b++) {
    limits[b] = b + 1 == nb ? mx : mn + width * (double)(b + 1);
    counts[b] = 0;
  }
  for (size_t i = 0; i < t->numel && num > 0; i++) {
    double x = ge_tensor_get_f64(t, i);
    if (!isfinite(x)) continue;
    size_t b = nb == 1 ? 0 : (size_t)((x - mn) / width);
    if (b >= nb) b = nb - 1;
    counts[b]++;
  }
  h->min = mn;
  h->max = mx;
  h->num = num;
  h->sum = sum;
  h->sum_squares = sq;
  h->n_bucket_limit = h->n_bucket = nb;
  h->bucket_limit = limits;
  h->bucket = counts;
}

typedef struct obuf {
  uint8_t *p;
  size_t n, cap;
} obuf;

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void png_chunk(const ge_summary_writer *w, obuf *o, const char *type, const uint8_t *d,
                      size_t n) {
  uint8_t *p = o->p + o->n;
  put_be32(p, (uint32_t)n);
  memcpy(p + 4, type, 4);
  if (n) memcpy(p + 8, d, n);
  uint32_t crc = crc_update(w->crc32, 0, p + 4, n + 4);
  put_be32(p + 8 + n, crc);
  o->n += n + 12;
}

/* A PNG of an 8-bit image (rows of w*c bytes), with stored (uncompressed) deflate blocks. */
static ge_status encode_png(const ge_summary_writer *w, const uint8_t *px, size_t h, size_t wd,
                            size_t c, obuf *out) {
  size_t row = 0, raw = 0, blocks = 0, idat = 0, total = 0;
  if (ge_mul_overflow_size(wd, c, &row) || row + 1 < row || ge_mul_overflow_size(h, row + 1, &raw) ||
      h > 0x7fffffff || wd > 0x7fffffff)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "image summary: image too large");
  blocks = raw / 65535 + 1;
  if (ge_mul_overflow_size(blocks, 5, &idat) || (idat += raw + 6) < raw ||
      (total = idat + 8 + 25 + 12 + 12) < idat)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "image summary: image too large");
  uint8_t *z = malloc(idat);
  out->p = malloc(total);
  if (!z || !out->p) {
    free(z);
    free(out->p);
    out->p = NULL;
    return ge_error(GE_ERR_OUT_OF_MEMORY, "image summary: out of memory");
  }
  /* zlib stream: header, stored blocks of the filtered rows, adler32 */
  size_t zn = 0;
  z[zn++] = 0x78;
  z[zn++] = 0x01;
  uint32_t a = 1, b = 0;
  size_t left = raw, y = 0, x = 0; /* position in the filtered stream: row y, byte x (0 = filter) */
  do {
    size_t len = left > 65535 ? 65535 : left;
    z[zn++] = left <= 65535 ? 1 : 0;
    z[zn++] = (uint8_t)len;
    z[zn++] = (uint8_t)(len >> 8);
    z[zn++] = (uint8_t)~len;
    z[zn++] = (uint8_t)(~len >> 8);
    for (size_t i = 0; i < len; i++) {
      uint8_t v = x == 0 ? 0 : px[y * row + x - 1];
      if (++x == row + 1) {
        x = 0;
        y++;
      }
      z[zn++] = v;
      a = (a + v) % 65521;
      b = (b + a) % 65521;
    }
    left -= len;
  } while (left > 0);
  put_be32(z + zn, (b << 16) | a);
  zn += 4;
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  memcpy(out->p, sig, 8);
  out->n = 8;
  uint8_t ihdr[13];
  put_be32(ihdr, (uint32_t)wd);
  put_be32(ihdr + 4, (uint32_t)h);
  ihdr[8] = 8;
  ihdr[9] = c == 1 ? 0 : c == 3 ? 2 : 6;
  ihdr[10] = ihdr[11] = ihdr[12] = 0;
  png_chunk(w, out, "IHDR", ihdr, 13);
  png_chunk(w, out, "IDAT", z, zn);
  png_chunk(w, out, "IEND", NULL, 0);
  free(z);
  return GE_OK;
}

static ge_status image(const ge_summary_writer *w, const char *tag, const ge_tensor *t,
                       Ge__Tb__SummaryImage *im, obuf *png) {
  if (t->rank != 3 && t->rank != 4)
    return ge_error(GE_ERR_SHAPE, "image summary '%s': rank %d (expected [H,W,C] or [N,H,W,C])",
                    tag, t->rank);
  const int64_t *d = t->dims + (t->rank - 3);
  size_t h = (size_t)d[0], wd = (size_t)d[1], c = (size_t)d[2], n = 0, hw = 0;
  if (c != 1 && c != 3 && c != 4)
    return ge_error(GE_ERR_SHAPE, "image summary '%s': %zu channels (expected 1, 3 or 4)", tag, c);
  if (ge_mul_overflow_size(h, wd, &hw) || ge_mul_overflow_size(hw, c, &n) || n > t->numel || !n)
    return ge_error(GE_ERR_SHAPE, "image summary '%s': empty or inconsistent image", tag);
  uint8_t *px = malloc(n);
  if (!px) return ge_error(GE_ERR_OUT_OF_MEMORY, "image summary '%s': out of memory", tag);
  if (t->dtype == GE_U8) {
    memcpy(px, t->data, n);
  } else {
    bool fl = ge_dtype_is_float(t->dtype);
    for (size_t i = 0; i < n; i++) {
      double v = ge_tensor_get_f64(t, i);
      if (fl) v = v * 255.0 + 0.5;
      px[i] = !(v > 0) ? 0 : v >= 255 ? 255 : (uint8_t)v;
    }
  }
  ge_status st = encode_png(w, px, h, wd, c, png);
  free(px);
  GE_CHECK(st);
  im->height = (int32_t)h;
  im->width = (int32_t)wd;
  im->colorspace = (int32_t)c;
  im->encoded_image_string.data = png->p;
  im->encoded_image_string.len = png->n;
  return GE_OK;
}

ge_status ge_summary_writer_write(ge_summary_writer *w, int64_t step, const ge_tensor_map *m) {
  if (!w || !m) return ge_error(GE_ERR_INVALID_ARGUMENT, "summary writer: NULL writer or map");
  size_t n = ge_tensor_map_size(m);
  Ge__Tb__SummaryValue *vals = calloc(n + 1, sizeof *vals);
  Ge__Tb__SummaryValue **vp = calloc(n + 1, sizeof *vp);
  Ge__Tb__HistogramProto *hs = calloc(n + 1, sizeof *hs);
  Ge__Tb__SummaryImage *ims = calloc(n + 1, sizeof *ims);
  obuf *pngs = calloc(n + 1, sizeof *pngs);
  double *hbuf = calloc((n + 1) * 2 * TB_BUCKETS, sizeof *hbuf);
  ge_status st = GE_OK;
  if (!vals || !vp || !hs || !ims || !pngs || !hbuf)
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "summary writer: out of memory");
  size_t nv = 0;
  for (size_t i = 0; i < n && st == GE_OK; i++) {
    const char *tag = ge_tensor_map_key(m, i);
    const ge_tensor *t = ge_tensor_map_value(m, i);
    const char *type = ge_tensor_map_info(m, i);
    if (!type) type = t->numel == 1 ? "scalar" : "histogram";
    if (t->dtype == GE_STRING) continue;
    Ge__Tb__SummaryValue *v = &vals[nv];
    ge__tb__summary_value__init(v);
    v->tag = (char *)tag;
    if (!strcmp(type, "image")) {
      ge__tb__summary_image__init(&ims[i]);
      ge_status s2 = image(w, tag, t, &ims[i], &pngs[i]);
      if (s2 != GE_OK) {
        ge_warn("summary writer: %s (skipped)", ge_last_error());
        continue;
      }
      v->value_case = GE__TB__SUMMARY_VALUE__VALUE_IMAGE;
      v->image = &ims[i];
    } else if (!strcmp(type, "scalar") || t->numel == 1) {
      if (!t->numel) continue;
      v->value_case = GE__TB__SUMMARY_VALUE__VALUE_SIMPLE_VALUE;
      v->simple_value = (float)ge_tensor_get_f64(t, 0);
    } else {
      ge__tb__histogram_proto__init(&hs[i]);
      histogram(t, &hs[i], hbuf + i * 2 * TB_BUCKETS, hbuf + i * 2 * TB_BUCKETS + TB_BUCKETS);
      v->value_case = GE__TB__SUMMARY_VALUE__VALUE_HISTO;
      v->histo = &hs[i];
    }
    vp[nv++] = v;
  }
  if (st == GE_OK) {
    Ge__Tb__Summary sum = GE__TB__SUMMARY__INIT;
    sum.n_value = nv;
    sum.value = vp;
    Ge__Tb__Event ev = GE__TB__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.step = step;
    ev.what_case = GE__TB__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    st = write_event(w, &ev);
  }
  for (size_t i = 0; pngs && i < n; i++) free(pngs[i].p);
  free(vals);
  free(vp);
  free(hs);
  free(ims);
  free(pngs);
  free(hbuf);
  return st;
}

uint32_t ge_summary_writer_callback(uint32_t graph_id, const ge_tensor_map *params, void *writer) {
  ge_summary_writer *w = writer;
  if (!w) return 1;
  ge_status st = ge_summary_writer_write(w, w->step, params);
  if (st != GE_OK) {
    ge_warn("summary writer (graph %u): %s", graph_id, ge_last_error());
    return 2;
  }
  w->step++;
  return 0;
}
