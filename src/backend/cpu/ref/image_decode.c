/* Image decoders for ImageDecoder.  BMP, binary PNM, PNG and uncompressed baseline TIFF are
 * decoded here (every read bounds-checked against the input, sizes checked for overflow);
 * JPEG, JPEG 2000 and WebP through libjpeg(-turbo), libopenjp2 and libwebp with PIL's default
 * settings.  Library errors never exit: libjpeg's error_exit longjmps back to the decoder. */
#include "backend/cpu/ref/image_decode.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <openjpeg.h>
#include <webp/decode.h>

#define MAX_SIDE 65536
/* at most 2^28 pixels (768 MiB of RGB output) */
#define MAX_PIXELS ((int64_t)1 << 28)

static uint32_t rd16le(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32le(const uint8_t *p) { return rd16le(p) | rd16le(p + 2) << 16; }
static uint32_t rd16be(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t rd32be(const uint8_t *p) { return rd16be(p) << 16 | rd16be(p + 2); }

static uint8_t *alloc_rgb(int64_t h, int64_t w, const char **why) {
  if (h <= 0 || w <= 0 || h > MAX_SIDE || w > MAX_SIDE || h * w > MAX_PIXELS) {
    *why = "image dimensions are invalid or too large";
    return NULL;
  }
  uint8_t *o = malloc((size_t)h * (size_t)w * 3);
  if (!o) *why = "out of memory";
  return o;
}

/* ------------------------------------------------------------------ BMP */

static uint8_t *decode_bmp(const uint8_t *d, size_t n, int64_t *h, int64_t *w, const char **why) {
  if (n < 54) {
    *why = "truncated BMP header";
    return NULL;
  }
  uint32_t off = rd32le(d + 10), dib = rd32le(d + 14);
  int32_t bw = (int32_t)rd32le(d + 18), bh = (int32_t)rd32le(d + 22);
  uint32_t bpp = rd16le(d + 28), comp = rd32le(d + 30);
  if (dib < 40 || (comp != 0 && !(comp == 3 && bpp == 32)) ||
      (bpp != 8 && bpp != 24 && bpp != 32)) {
    *why = "unsupported BMP variant (only uncompressed 8, 24 and 32-bit)";
    return NULL;
  }
  bool top_down = bh < 0;
  int64_t H = top_down ? -(int64_t)bh : bh, W = bw;
  uint8_t *o = alloc_rgb(H, W, why);
  if (!o) return NULL;
  size_t stride = (((size_t)W * bpp + 31) / 32) * 4;
  if (off > n || stride * (size_t)H > n - off) {
    free(o);
    *why = "truncated BMP pixel data";
    return NULL;
  }
  const uint8_t *pal = d + 14 + dib;
  size_t n_pal = bpp == 8 ? (rd32le(d + 46) ? rd32le(d + 46) : 256) : 0;
  if (bpp == 8 && (n_pal > 256 || 14 + (size_t)dib + n_pal * 4 > off)) {
    free(o);
    *why = "bad BMP palette";
    return NULL;
  }
  for (int64_t y = 0; y < H; y++) {
    const uint8_t *row = d + off + stride * (size_t)(top_down ? y : H - 1 - y);
    uint8_t *dst = o + (size_t)y * (size_t)W * 3;
    for (int64_t x = 0; x < W; x++, dst += 3) {
      if (bpp == 8) {
        size_t k = row[x];
        if (k >= n_pal) k = 0;
        dst[0] = pal[k * 4 + 2], dst[1] = pal[k * 4 + 1], dst[2] = pal[k * 4];
      } else {
        const uint8_t *p = row + (size_t)x * (bpp / 8);
        dst[0] = p[2], dst[1] = p[1], dst[2] = p[0];
      }
    }
  }
  *h = H;
  *w = W;
  return o;
}

/* ------------------------------------------------------------------ PNM (P5, P6) */

static bool pnm_int(const uint8_t *d, size_t n, size_t *pos, long *out) {
  size_t i = *pos;
  for (;;) {
    while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r')) i++;
    if (i < n && d[i] == '#') {
      while (i < n && d[i] != '\n') i++;
      continue;
    }
    break;
  }
  if (i >= n || d[i] < '0' || d[i] > '9') return false;
  long v = 0;
  while (i < n && d[i] >= '0' && d[i] <= '9') {
    v = v * 10 + (d[i++] - '0');
    if (v > 1000000) return false;
  }
  *out = v;
  *pos = i;
  return true;
}

static uint8_t *decode_pnm(const uint8_t *d, size_t n, int64_t *h, int64_t *w, const char **why) {
  bool color = d[1] == '6';
  size_t pos = 2;
  long W, H, maxv;
  if (!pnm_int(d, n, &pos, &W) || !pnm_int(d, n, &pos, &H) || !pnm_int(d, n, &pos, &maxv) ||
      maxv < 1 || maxv > 255 || pos >= n) {
    *why = "bad PNM header (ge decodes 8-bit binary P5/P6)";
    return NULL;
  }
  pos++; /* one whitespace byte after maxval */
  uint8_t *o = alloc_rgb(H, W, why);
  if (!o) return NULL;
  size_t px = (size_t)W * (size_t)H, need = px * (color ? 3 : 1);
  if (pos > n || need > n - pos) {
    free(o);
    *why = "truncated PNM pixel data";
    return NULL;
  }
  const uint8_t *p = d + pos;
  for (size_t i = 0; i < px; i++)
    for (int c = 0; c < 3; c++) {
      unsigned v = color ? p[i * 3 + (size_t)c] : p[i];
      o[i * 3 + (size_t)c] = (uint8_t)(maxv == 255 ? v : (v * 255 + (unsigned)maxv / 2) / (unsigned)maxv);
    }
  *h = H;
  *w = W;
  return o;
}

/* ------------------------------------------------------------------ TIFF (uncompressed) */

typedef struct tiff {
  const uint8_t *d;
  size_t n;
  bool be;
} tiff;

static uint32_t t16(const tiff *t, size_t off) { return t->be ? rd16be(t->d + off) : rd16le(t->d + off); }
static uint32_t t32(const tiff *t, size_t off) { return t->be ? rd32be(t->d + off) : rd32le(t->d + off); }

/* Value k of an IFD entry at e (SHORT or LONG); false when out of bounds. */
static bool tiff_val(const tiff *t, size_t e, uint32_t k, uint32_t *out) {
  uint32_t type = t16(t, e + 2), count = t32(t, e + 4);
  size_t sz = type == 3 ? 2 : type == 4 ? 4 : 0;
  if (!sz || k >= count) return false;
  size_t base = (size_t)count * sz <= 4 ? e + 8 : t32(t, e + 8);
  size_t at = base + (size_t)k * sz;
  if (at > t->n || sz > t->n - at) return false;
  *out = sz == 2 ? t16(t, at) : t32(t, at);
  return true;
}

static uint8_t *decode_tiff(const uint8_t *d, size_t n, int64_t *h, int64_t *w, const char **why) {
  tiff t = {d, n, d[0] == 'M'};
  *why = "unsupported TIFF (only uncompressed 8-bit chunky RGB, RGBA or grayscale)";
  if (n < 8) return NULL;
  size_t ifd = t32(&t, 4);
  if (ifd > n || n - ifd < 2) return NULL;
  uint32_t ne = t16(&t, ifd);
  if ((size_t)ne * 12 > n - ifd - 2) return NULL;
  uint32_t W = 0, H = 0, bits = 8, comp = 1, photo = 2, spp = 1, rps = 0xffffffffu, planar = 1;
  size_t e_off = 0, e_cnt = 0;
  for (uint32_t i = 0; i < ne; i++) {
    size_t e = ifd + 2 + (size_t)i * 12;
    uint32_t tag = t16(&t, e), v = 0;
    switch (tag) {
    case 256: if (!tiff_val(&t, e, 0, &W)) return NULL; break;
    case 257: if (!tiff_val(&t, e, 0, &H)) return NULL; break;
    case 258: if (!tiff_val(&t, e, 0, &bits)) return NULL; break;
    case 259: if (!tiff_val(&t, e, 0, &comp)) return NULL; break;
    case 262: if (!tiff_val(&t, e, 0, &photo)) return NULL; break;
    case 273: e_off = e; break;
    case 277: if (!tiff_val(&t, e, 0, &spp)) return NULL; break;
    case 278: if (!tiff_val(&t, e, 0, &rps)) return NULL; break;
    case 279: e_cnt = e; break;
    case 284: if (!tiff_val(&t, e, 0, &planar)) return NULL; break;
    default: (void)v; break;
    }
  }
  bool gray = photo == 0 || photo == 1;
  if (!e_off || bits != 8 || comp != 1 || planar != 1 || !(gray ? spp == 1 : photo == 2 && (spp == 3 || spp == 4)))
    return NULL;
  uint8_t *o = alloc_rgb(H, W, why);
  if (!o) return NULL;
  size_t row_bytes = (size_t)W * spp, rows_done = 0;
  if (rps == 0 || rps > H) rps = H;
  for (uint32_t s = 0; rows_done < H; s++) {
    uint32_t so;
    if (!tiff_val(&t, e_off, s, &so)) break;
    size_t rows = H - rows_done < rps ? H - rows_done : rps;
    if (so > n || rows * row_bytes > n - so) break;
    for (size_t r = 0; r < rows; r++) {
      const uint8_t *p = d + so + r * row_bytes;
      uint8_t *dst = o + (rows_done + r) * (size_t)W * 3;
      for (uint32_t x = 0; x < W; x++, dst += 3) {
        if (gray) {
          uint8_t v = photo == 0 ? (uint8_t)(255 - p[x]) : p[x];
          dst[0] = dst[1] = dst[2] = v;
        } else {
          dst[0] = p[(size_t)x * spp], dst[1] = p[(size_t)x * spp + 1], dst[2] = p[(size_t)x * spp + 2];
        }
      }
    }
    rows_done += rows;
  }
  (void)e_cnt;
  if (rows_done < H) {
    free(o);
    *why = "truncated TIFF strips";
    return NULL;
  }
  *h = H;
  *w = W;
  *why = NULL;
  return o;
}

/* ------------------------------------------------------------------ inflate (RFC 1951) */

typedef struct bits {
  const uint8_t *d;
  size_t n, pos; /* pos in bits */
} bits;

static int getbit(bits *b) {
  if (b->pos >= b->n * 8) return -1;
  int v = (b->d[b->pos >> 3] >> (b->pos & 7)) & 1;
  b->pos++;
  return v;
}

static long getbits(bits *b, int k) {
  long v = 0;
  for (int i = 0; i < k; i++) {
    int x = getbit(b);
    if (x < 0) return -1;
    v |= (long)x << i;
  }
  return v;
}

/* Canonical Huffman table: counts per length, symbols sorted by code. */
typedef struct huff {
  uint16_t count[16];
  uint16_t sym[288];
} huff;

static bool huff_build(huff *h, const uint8_t *lens, int n) {
  uint16_t offs[16];
  memset(h->count, 0, sizeof h->count);
  for (int i = 0; i < n; i++) h->count[lens[i]]++;
  h->count[0] = 0;
  int left = 1;
  for (int l = 1; l < 16; l++) {
    left <<= 1;
    left -= h->count[l];
    if (left < 0) return false; /* over-subscribed */
  }
  offs[1] = 0;
  for (int l = 1; l < 15; l++) offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
  for (int i = 0; i < n; i++)
    if (lens[i]) h->sym[offs[lens[i]]++] = (uint16_t)i;
  return true;
}

static int huff_decode(bits *b, const huff *h) {
  int code = 0, first = 0, index = 0;
  for (int l = 1; l < 16; l++) {
    int x = getbit(b);
    if (x < 0) return -1;
    code |= x;
    int count = h->count[l];
    if (code - count < first) return h->sym[index + (code - first)];
    index += count;
    first += count;
    first <<= 1;
    code <<= 1;
  }
  return -1;
}

typedef struct obuf {
  uint8_t *p;
  size_t n, cap;
} obuf;

static bool out_byte(obuf *o, uint8_t v) {
  if (o->n == o->cap) return false; /* the caller sized the buffer exactly */
  o->p[o->n++] = v;
  return true;
}

static const uint16_t len_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                      35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
                                       193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
                                       6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static bool inflate_codes(bits *b, obuf *o, const huff *lh, const huff *dh) {
  for (;;) {
    int sym = huff_decode(b, lh);
    if (sym < 0) return false;
    if (sym < 256) {
      if (!out_byte(o, (uint8_t)sym)) return false;
    } else if (sym == 256) {
      return true;
    } else {
      sym -= 257;
      if (sym >= 29) return false;
      long e = getbits(b, len_extra[sym]);
      int ds = huff_decode(b, dh);
      if (e < 0 || ds < 0 || ds >= 30) return false;
      size_t len = len_base[sym] + (size_t)e;
      long de = getbits(b, dist_extra[ds]);
      if (de < 0) return false;
      size_t dist = dist_base[ds] + (size_t)de;
      if (dist > o->n) return false;
      for (size_t i = 0; i < len; i++)
        if (!out_byte(o, o->p[o->n - dist])) return false;
    }
  }
}

/* Inflates a zlib stream into exactly o->cap bytes. */
static bool zlib_inflate(const uint8_t *d, size_t n, obuf *o) {
  if (n < 2 || (d[0] & 0x0f) != 8 || ((d[0] << 8) | d[1]) % 31 || (d[1] & 0x20)) return false;
  bits b = {d + 2, n - 2, 0};
  huff lh, dh;
  int last;
  do {
    last = getbit(&b);
    long type = getbits(&b, 2);
    if (last < 0 || type < 0) return false;
    if (type == 0) {
      b.pos = (b.pos + 7) & ~(size_t)7;
      size_t at = b.pos / 8;
      if (at + 4 > b.n) return false;
      size_t len = b.d[at] | (size_t)b.d[at + 1] << 8;
      if ((len ^ (b.d[at + 2] | (size_t)b.d[at + 3] << 8)) != 0xffff || at + 4 + len > b.n) return false;
      for (size_t i = 0; i < len; i++)
        if (!out_byte(o, b.d[at + 4 + i])) return false;
      b.pos = (at + 4 + len) * 8;
    } else if (type == 1 || type == 2) {
      uint8_t lens[320];
      int nlen = 288, ndist = 30;
      if (type == 1) {
        for (int i = 0; i < 144; i++) lens[i] = 8;
        for (int i = 144; i < 256; i++) lens[i] = 9;
        for (int i = 256; i < 280; i++) lens[i] = 7;
        for (int i = 280; i < 288; i++) lens[i] = 8;
        for (int i = 0; i < 30; i++) lens[288 + i] = 5;
      } else {
        long hl = getbits(&b, 5), hd = getbits(&b, 5), hc = getbits(&b, 4);
        if (hl < 0 || hd < 0 || hc < 0) return false;
        nlen = (int)hl + 257;
        ndist = (int)hd + 1;
        if (nlen > 286 || ndist > 30) return false;
        static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
        uint8_t cl[19] = {0};
        for (int i = 0; i < hc + 4; i++) {
          long v = getbits(&b, 3);
          if (v < 0) return false;
          cl[order[i]] = (uint8_t)v;
        }
        huff ch;
        if (!huff_build(&ch, cl, 19)) return false;
        int i = 0;
        while (i < nlen + ndist) {
          int sym = huff_decode(&b, &ch);
          if (sym < 0) return false;
          if (sym < 16) {
            lens[i++] = (uint8_t)sym;
            continue;
          }
          int rep;
          uint8_t val = 0;
          if (sym == 16) {
            if (i == 0) return false;
            val = lens[i - 1];
            long r = getbits(&b, 2);
            if (r < 0) return false;
            rep = 3 + (int)r;
          } else {
            long r = getbits(&b, sym == 17 ? 3 : 7);
            if (r < 0) return false;
            rep = (sym == 17 ? 3 : 11) + (int)r;
          }
          if (i + rep > nlen + ndist) return false;
          while (rep--) lens[i++] = val;
        }
        /* move the distance lengths after the 288 literal/length slots */
        memmove(lens + 288, lens + nlen, (size_t)ndist);
        for (int k = nlen; k < 288; k++) lens[k] = 0;
      }
      if (!huff_build(&lh, lens, 288) || !huff_build(&dh, lens + 288, ndist)) return false;
      if (!inflate_codes(&b, o, &lh, &dh)) return false;
    } else {
      return false;
    }
  } while (!last);
  if (o->n != o->cap) return false;
  /* Adler-32 of the output, big-endian after the last block */
  size_t at = (b.pos + 7) / 8;
  if (at + 4 > b.n) return false;
  uint32_t s1 = 1, s2 = 0;
  for (size_t i = 0; i < o->n; i++) {
    s1 = (s1 + o->p[i]) % 65521u;
    s2 = (s2 + s1) % 65521u;
  }
  return rd32be(b.d + at) == (s2 << 16 | s1);
}

/* ------------------------------------------------------------------ PNG (8-bit, not interlaced) */

static uint8_t paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

static uint8_t *decode_png(const uint8_t *d, size_t n, int64_t *h, int64_t *w, const char **why) {
  *why = "unsupported PNG (only 8-bit, non-interlaced gray, RGB, RGBA, gray+alpha or palette)";
  if (n < 33 || memcmp(d + 12, "IHDR", 4)) return NULL;
  uint32_t W = rd32be(d + 16), H = rd32be(d + 20);
  int depth = d[24], ctype = d[25], interlace = d[28];
  int ch = ctype == 0 ? 1 : ctype == 2 ? 3 : ctype == 3 ? 1 : ctype == 4 ? 2 : ctype == 6 ? 4 : 0;
  if (depth != 8 || !ch || interlace) return NULL;
  /* gather IDAT */
  uint8_t *z = NULL, pal[768] = {0};
  size_t zn = 0, npal = 0;
  for (size_t at = 8; at + 12 <= n;) {
    uint32_t len = rd32be(d + at);
    if (len > n - at - 12) break;
    const uint8_t *type = d + at + 4, *body = d + at + 8;
    if (!memcmp(type, "IDAT", 4)) {
      uint8_t *nz = realloc(z, zn + len + 1);
      if (!nz) {
        free(z);
        *why = "out of memory";
        return NULL;
      }
      z = nz;
      memcpy(z + zn, body, len);
      zn += len;
    } else if (!memcmp(type, "PLTE", 4) && len <= 768) {
      memcpy(pal, body, len);
      npal = len / 3;
    } else if (!memcmp(type, "IEND", 4)) {
      break;
    }
    at += 12 + (size_t)len;
  }
  uint8_t *o = alloc_rgb(H, W, why);
  size_t stride = (size_t)W * (size_t)ch, raw_n = (stride + 1) * (size_t)H;
  uint8_t *raw = o ? malloc(raw_n) : NULL;
  if (!o || !raw || !z) {
    if (!z) *why = "PNG without image data";
    else if (o) *why = "out of memory";
    free(o);
    free(raw);
    free(z);
    return NULL;
  }
  obuf ob = {raw, 0, raw_n};
  bool ok = zlib_inflate(z, zn, &ob);
  free(z);
  if (!ok) {
    free(o);
    free(raw);
    *why = "corrupt PNG image data";
    return NULL;
  }
  for (uint32_t y = 0; y < H && ok; y++) {
    uint8_t *row = raw + (size_t)y * (stride + 1), f = row[0], *cur = row + 1;
    const uint8_t *prev = y ? raw + (size_t)(y - 1) * (stride + 1) + 1 : NULL;
    for (size_t i = 0; i < stride; i++) {
      int a = i >= (size_t)ch ? cur[i - (size_t)ch] : 0, b = prev ? prev[i] : 0;
      int c = prev && i >= (size_t)ch ? prev[i - (size_t)ch] : 0;
      switch (f) {
      case 0: break;
      case 1: cur[i] = (uint8_t)(cur[i] + a); break;
      case 2: cur[i] = (uint8_t)(cur[i] + b); break;
      case 3: cur[i] = (uint8_t)(cur[i] + ((a + b) >> 1)); break;
      case 4: cur[i] = (uint8_t)(cur[i] + paeth(a, b, c)); break;
      default: ok = false; break;
      }
    }
    uint8_t *dst = o + (size_t)y * (size_t)W * 3;
    for (uint32_t x = 0; x < W && ok; x++, dst += 3) {
      const uint8_t *px = cur + (size_t)x * (size_t)ch;
      if (ctype == 3) {
        if (px[0] >= npal) {
          ok = false;
          break;
        }
        memcpy(dst, pal + px[0] * 3, 3);
      } else if (ch <= 2) {
        dst[0] = dst[1] = dst[2] = px[0];
      } else {
        dst[0] = px[0], dst[1] = px[1], dst[2] = px[2];
      }
    }
  }
  free(raw);
  if (!ok) {
    free(o);
    *why = "corrupt PNG (bad filter or palette index)";
    return NULL;
  }
  *h = H;
  *w = W;
  *why = NULL;
  return o;
}

/* ------------------------------------------------------------------ errors */

static void set_err(ge_image_error *e, ge_image_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(ge_image_error *e, ge_image_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->status = st;
}

/* The built-in decoders report a static string: "out of memory", "unsupported ..." for a
 * variant they do not decode, anything else for malformed data. */
static void set_err_why(ge_image_error *e, const char *why) {
  if (!why) why = "decoding failed";
  ge_image_status st = !strcmp(why, "out of memory")        ? GE_IMAGE_NO_MEMORY
                       : !strncmp(why, "unsupported", 11) ? GE_IMAGE_UNSUPPORTED
                                                          : GE_IMAGE_INVALID;
  set_err(e, st, "%s", why);
}

/* Allocates an H x W x 3 buffer, or fills *e. */
static uint8_t *alloc_rgb_e(int64_t h, int64_t w, ge_image_error *e) {
  const char *why = NULL;
  uint8_t *o = alloc_rgb(h, w, &why);
  if (!o) {
    if (why && !strcmp(why, "out of memory"))
      set_err(e, GE_IMAGE_NO_MEMORY, "out of memory for a %lld x %lld image", (long long)h,
              (long long)w);
    else
      set_err(e, GE_IMAGE_INVALID, "image size %lld x %lld is invalid or too large (limits: %d per side, %lld pixels)",
              (long long)h, (long long)w, MAX_SIDE, (long long)MAX_PIXELS);
  }
  return o;
}

/* ------------------------------------------------------------------ JPEG (libjpeg) */

typedef struct jpeg_err {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  bool finishing; /* a missing EOI after the last scanline is harmless */
  char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpeg_fail_exit(j_common_ptr ci) {
  jpeg_err *m = (jpeg_err *)ci->err;
  (*ci->err->format_message)(ci, m->msg);
  longjmp(m->jb, 1);
}

/* Warnings (corrupt-data recoveries) are ignored as PIL ignores them, except running out of
 * data before the image is complete: libjpeg would pad it with gray, PIL refuses it. */
static void jpeg_emit(j_common_ptr ci, int level) {
  jpeg_err *m = (jpeg_err *)ci->err;
  if (level < 0) {
    ci->err->num_warnings++;
    if (ci->err->msg_code == JWRN_JPEG_EOF && !m->finishing) {
      (*ci->err->format_message)(ci, m->msg);
      longjmp(m->jb, 1);
    }
  }
}

static void jpeg_quiet(j_common_ptr ci) { (void)ci; }

static uint8_t mul_div255(int a, int b) {
  int t = a * b + 128;
  return (uint8_t)(((t >> 8) + t) >> 8);
}

static uint8_t *decode_jpeg(const uint8_t *d, size_t n, int64_t *h, int64_t *w, ge_image_error *e) {
  struct jpeg_decompress_struct ci;
  jpeg_err jm;
  uint8_t *volatile out = NULL, *volatile row = NULL;
  memset(&ci, 0, sizeof ci);
  memset(&jm, 0, sizeof jm);
  ci.err = jpeg_std_error(&jm.pub);
  jm.pub.error_exit = jpeg_fail_exit;
  jm.pub.emit_message = jpeg_emit;
  jm.pub.output_message = jpeg_quiet;
  if (n > ULONG_MAX) {
    set_err(e, GE_IMAGE_INVALID, "%zu bytes is too large", n);
    return NULL;
  }
  if (setjmp(jm.jb)) {
    jpeg_destroy_decompress(&ci);
    free(out);
    free(row);
    set_err(e, GE_IMAGE_INVALID, "corrupt or truncated data: %s", jm.msg);
    return NULL;
  }
  jpeg_create_decompress(&ci);
  ci.mem->max_memory_to_use = 1L << 30;
  jpeg_mem_src(&ci, d, (unsigned long)n);
  jpeg_read_header(&ci, TRUE);
  J_COLOR_SPACE cs = ci.jpeg_color_space;
  bool cmyk = cs == JCS_CMYK || cs == JCS_YCCK;
  if (cs == JCS_GRAYSCALE)
    ci.out_color_space = JCS_GRAYSCALE;
  else if (cs == JCS_YCbCr || cs == JCS_RGB)
    ci.out_color_space = JCS_RGB;
  else if (cmyk)
    ci.out_color_space = JCS_CMYK;
  else {
    int ncomp = ci.num_components;
    jpeg_destroy_decompress(&ci);
    set_err(e, GE_IMAGE_UNSUPPORTED, "unsupported color space (%d components)", ncomp);
    return NULL;
  }
  int64_t H = ci.image_height, W = ci.image_width;
  /* PIL's defaults: accurate integer IDCT, fancy (triangle) upsampling, no scaling */
  ci.dct_method = JDCT_ISLOW;
  ci.do_fancy_upsampling = TRUE;
  ci.scale_num = ci.scale_denom = 1;
  out = alloc_rgb_e(H, W, e);
  if (!out) {
    jpeg_destroy_decompress(&ci);
    return NULL;
  }
  jpeg_start_decompress(&ci);
  int nc = ci.output_components;
  if ((int64_t)ci.output_height != H || (int64_t)ci.output_width != W ||
      nc != (ci.out_color_space == JCS_GRAYSCALE ? 1 : ci.out_color_space == JCS_RGB ? 3 : 4)) {
    jpeg_destroy_decompress(&ci);
    free(out);
    set_err(e, GE_IMAGE_INVALID, "unexpected output geometry %u x %u x %d", ci.output_height,
            ci.output_width, nc);
    return NULL;
  }
  if (nc != 3) {
    row = malloc((size_t)W * (size_t)nc);
    if (!row) {
      jpeg_destroy_decompress(&ci);
      free(out);
      set_err(e, GE_IMAGE_NO_MEMORY, "out of memory for a JPEG row of %lld pixels", (long long)W);
      return NULL;
    }
  }
  bool inverted = ci.saw_Adobe_marker; /* Adobe CMYK is stored inverted (PIL's "CMYK;I") */
  while (ci.output_scanline < ci.output_height) {
    uint8_t *dst = out + (size_t)ci.output_scanline * (size_t)W * 3;
    JSAMPROW rp = nc == 3 ? dst : row;
    if (jpeg_read_scanlines(&ci, &rp, 1) != 1) { /* no suspension with a memory source */
      long long at = ci.output_scanline;
      jpeg_destroy_decompress(&ci);
      free(out);
      free(row);
      set_err(e, GE_IMAGE_INVALID, "decoding stopped at row %lld of %lld", at, (long long)H);
      return NULL;
    }
    if (nc == 1) {
      for (int64_t x = 0; x < W; x++) dst[x * 3] = dst[x * 3 + 1] = dst[x * 3 + 2] = row[x];
    } else if (nc == 4) {
      for (int64_t x = 0; x < W; x++) {
        const uint8_t *p = row + x * 4;
        int k = inverted ? p[3] : 255 - p[3]; /* 255 - K */
        for (int c = 0; c < 3; c++) {
          int v = inverted ? 255 - p[c] : p[c];
          int r = k - mul_div255(v, k);
          dst[x * 3 + c] = (uint8_t)(r < 0 ? 0 : r);
        }
      }
    }
  }
  jm.finishing = true;
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  free(row);
  *h = H;
  *w = W;
  return out;
}

/* ------------------------------------------------------------------ JPEG 2000 (libopenjp2) */

typedef struct j2k_mem {
  const uint8_t *d;
  size_t n, pos;
} j2k_mem;

static OPJ_SIZE_T j2k_read(void *buf, OPJ_SIZE_T nb, void *user) {
  j2k_mem *m = user;
  if (m->pos >= m->n) return (OPJ_SIZE_T)-1;
  size_t k = m->n - m->pos < nb ? m->n - m->pos : nb;
  memcpy(buf, m->d + m->pos, k);
  m->pos += k;
  return k;
}

static OPJ_OFF_T j2k_skip(OPJ_OFF_T nb, void *user) {
  j2k_mem *m = user;
  if (nb < 0) {
    if ((uint64_t)-nb > m->pos) return -1;
    m->pos -= (size_t)-nb;
    return nb;
  }
  size_t k = m->n - m->pos < (uint64_t)nb ? m->n - m->pos : (size_t)nb;
  m->pos += k;
  return (OPJ_OFF_T)k;
}

static OPJ_BOOL j2k_seek(OPJ_OFF_T off, void *user) {
  j2k_mem *m = user;
  if (off < 0 || (uint64_t)off > m->n) return OPJ_FALSE;
  m->pos = (size_t)off;
  return OPJ_TRUE;
}

typedef struct j2k_msg {
  char text[200];
} j2k_msg;

static void j2k_on_error(const char *msg, void *user) {
  j2k_msg *m = user;
  if (m->text[0]) return; /* keep the first, most specific message */
  snprintf(m->text, sizeof m->text, "%s", msg);
  size_t l = strlen(m->text);
  while (l && (m->text[l - 1] == '\n' || m->text[l - 1] == '\r')) m->text[--l] = 0;
}

static void j2k_on_other(const char *msg, void *user) { (void)msg, (void)user; }

/* Component value -> 8 bits as PIL does: add the signed offset, shift by 8 - precision. */
static uint8_t j2k_to8(int32_t v, int offset, int shift) {
  int64_t x = (int64_t)v + offset;
  x = shift >= 0 ? x << shift : x >> -shift;
  return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
}

static uint8_t *decode_jp2(const uint8_t *d, size_t n, bool jp2_box, int64_t *h, int64_t *w,
                           ge_image_error *e) {
  j2k_mem mem = {d, n, 0};
  j2k_msg msg = {{0}};
  uint8_t *o = NULL;
  opj_image_t *img = NULL;
  opj_codec_t *codec = opj_create_decompress(jp2_box ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_stream_t *st = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  if (!codec || !st) {
    set_err(e, GE_IMAGE_NO_MEMORY, "out of memory creating the decoder");
    goto done;
  }
  opj_stream_set_user_data(st, &mem, NULL);
  opj_stream_set_user_data_length(st, (OPJ_UINT64)n);
  opj_stream_set_read_function(st, j2k_read);
  opj_stream_set_skip_function(st, j2k_skip);
  opj_stream_set_seek_function(st, j2k_seek);
  opj_set_error_handler(codec, j2k_on_error, &msg);
  opj_set_warning_handler(codec, j2k_on_other, NULL);
  opj_set_info_handler(codec, j2k_on_other, NULL);
  opj_dparameters_t par;
  opj_set_default_decoder_parameters(&par);
  if (!opj_setup_decoder(codec, &par) || !opj_decoder_set_strict_mode(codec, OPJ_TRUE) ||
      !opj_read_header(st, codec, &img) || !img) {
    set_err(e, GE_IMAGE_INVALID, "bad header: %s", msg.text[0] ? msg.text : "unreadable");
    goto done;
  }
  int64_t W = (int64_t)img->x1 - img->x0, H = (int64_t)img->y1 - img->y0;
  uint32_t nc = img->numcomps;
  if (W <= 0 || H <= 0 || W > MAX_SIDE || H > MAX_SIDE || W * H > MAX_PIXELS) {
    set_err(e, GE_IMAGE_INVALID, "image size %lld x %lld is invalid or too large", (long long)H,
            (long long)W);
    goto done;
  }
  if (nc < 1 || nc > 4 || img->color_space == OPJ_CLRSPC_SYCC ||
      img->color_space == OPJ_CLRSPC_EYCC || img->color_space == OPJ_CLRSPC_CMYK) {
    set_err(e, GE_IMAGE_UNSUPPORTED,
            "unsupported JPEG 2000 image (%u components, color space %d); ge decodes gray, gray+alpha, RGB and RGBA",
            nc, (int)img->color_space);
    goto done;
  }
  if (!opj_decode(codec, st, img) || !opj_end_decompress(codec, st)) {
    set_err(e, GE_IMAGE_INVALID, "corrupt or truncated data: %s",
            msg.text[0] ? msg.text : "decoding failed");
    goto done;
  }
  uint32_t ncol = nc >= 3 ? 3 : 1;
  int shift[3], off[3];
  for (uint32_t c = 0; c < ncol; c++) {
    const opj_image_comp_t *cp = &img->comps[c];
    if (!cp->data || cp->dx != 1 || cp->dy != 1 || cp->w != (uint32_t)W || cp->h != (uint32_t)H ||
        cp->prec < 1 || cp->prec > 31) {
      set_err(e, GE_IMAGE_UNSUPPORTED,
              "unsupported JPEG 2000 component %u (%u x %u, subsampling %u x %u, %u bits)", c,
              cp->h, cp->w, cp->dy, cp->dx, cp->prec);
      goto done;
    }
    shift[c] = 8 - (int)cp->prec;
    off[c] = cp->sgnd ? (int)(1u << (cp->prec - 1)) : 0;
  }
  o = alloc_rgb_e(H, W, e);
  if (!o) goto done;
  size_t px = (size_t)H * (size_t)W;
  if (ncol == 1) {
    const OPJ_INT32 *g = img->comps[0].data;
    for (size_t i = 0; i < px; i++) o[i * 3] = o[i * 3 + 1] = o[i * 3 + 2] = j2k_to8(g[i], off[0], shift[0]);
  } else {
    const OPJ_INT32 *r = img->comps[0].data, *g = img->comps[1].data, *b = img->comps[2].data;
    for (size_t i = 0; i < px; i++) {
      o[i * 3] = j2k_to8(r[i], off[0], shift[0]);
      o[i * 3 + 1] = j2k_to8(g[i], off[1], shift[1]);
      o[i * 3 + 2] = j2k_to8(b[i], off[2], shift[2]);
    }
  }
  *h = H;
  *w = W;
done:
  if (img) opj_image_destroy(img);
  if (st) opj_stream_destroy(st);
  if (codec) opj_destroy_codec(codec);
  return o;
}

/* ------------------------------------------------------------------ WebP (libwebp) */

static uint8_t *decode_webp(const uint8_t *d, size_t n, int64_t *h, int64_t *w, ge_image_error *e) {
  WebPBitstreamFeatures f;
  VP8StatusCode vs = WebPGetFeatures(d, n, &f);
  if (vs != VP8_STATUS_OK) {
    set_err(e, vs == VP8_STATUS_UNSUPPORTED_FEATURE ? GE_IMAGE_UNSUPPORTED : GE_IMAGE_INVALID,
            "%s (libwebp status %d)",
            vs == VP8_STATUS_NOT_ENOUGH_DATA       ? "truncated header"
            : vs == VP8_STATUS_UNSUPPORTED_FEATURE ? "unsupported WebP feature"
                                                   : "bad header",
            (int)vs);
    return NULL;
  }
  if (f.has_animation) {
    set_err(e, GE_IMAGE_UNSUPPORTED, "unsupported: animated WebP");
    return NULL;
  }
  int64_t H = f.height, W = f.width;
  uint8_t *o = alloc_rgb_e(H, W, e);
  if (!o) return NULL;
  /* default options, as PIL: fancy upsampling, no dithering; alpha dropped (not premultiplied) */
  size_t size = (size_t)H * (size_t)W * 3;
  if (!WebPDecodeRGBInto(d, n, o, size, (int)W * 3)) {
    free(o);
    set_err(e, GE_IMAGE_INVALID, "corrupt or truncated data (%lld x %lld image)", (long long)H,
            (long long)W);
    return NULL;
  }
  *h = H;
  *w = W;
  return o;
}

/* ------------------------------------------------------------------ dispatch */

uint8_t *ge_image_decode_rgb(const uint8_t *data, size_t n, int64_t *h, int64_t *w,
                             ge_image_error *err) {
  err->status = GE_IMAGE_OK;
  err->msg[0] = 0;
  err->format = "unknown";
  if (!data && n) {
    set_err(err, GE_IMAGE_INVALID, "no data");
    return NULL;
  }
  const char *why = NULL;
  uint8_t *o = NULL;
  bool builtin = true;
  if (n >= 2 && data[0] == 'B' && data[1] == 'M') {
    err->format = "BMP";
    o = decode_bmp(data, n, h, w, &why);
  } else if (n >= 3 && data[0] == 'P' && (data[1] == '5' || data[1] == '6')) {
    err->format = "PNM";
    o = decode_pnm(data, n, h, w, &why);
  } else if (n >= 4 && ((data[0] == 'I' && data[1] == 'I' && data[2] == 42 && data[3] == 0) ||
                        (data[0] == 'M' && data[1] == 'M' && data[2] == 0 && data[3] == 42))) {
    err->format = "TIFF";
    o = decode_tiff(data, n, h, w, &why);
  } else if (n >= 8 && !memcmp(data, "\x89PNG\r\n\x1a\n", 8)) {
    err->format = "PNG";
    o = decode_png(data, n, h, w, &why);
  } else {
    builtin = false;
    if (n >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
      err->format = "JPEG";
      o = decode_jpeg(data, n, h, w, err);
    } else if (n >= 12 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4)) {
      err->format = "WebP";
      o = decode_webp(data, n, h, w, err);
    } else if (n >= 12 && !memcmp(data, "\0\0\0\x0cjP  \r\n\x87\n", 12)) {
      err->format = "JPEG 2000";
      o = decode_jp2(data, n, true, h, w, err);
    } else if (n >= 4 && !memcmp(data, "\xff\x4f\xff\x51", 4)) {
      err->format = "JPEG 2000 codestream";
      o = decode_jp2(data, n, false, h, w, err);
    } else {
      set_err(err, GE_IMAGE_INVALID,
              "the data is not an image format ge recognises (BMP, PNM, PNG, TIFF, JPEG, JPEG 2000, WebP)");
    }
  }
  if (!o && builtin) set_err_why(err, why);
  if (!o && err->status == GE_IMAGE_OK) set_err(err, GE_IMAGE_INVALID, "decoding failed");
  return o;
}
