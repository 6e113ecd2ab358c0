/* Reference CPU kernels of the text family: StringNormalizer, StringConcat, StringSplit,
 * RegexFullMatch (RE2 patterns translated to POSIX extended regular expressions),
 * TfIdfVectorizer and ai.onnx.ml LabelEncoder.
 *
 * String tensors hold `char *[numel]`, each element owned by the tensor (NULL reads as "").
 * Lookups (stopwords, n-gram pools, label keys) use open-addressing hash tables built once
 * in prepare, so a run is linear in its input. */
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/broadcast.h"
#include "backend/cpu/ref/image_decode.h"
#include "backend/cpu/ref/ml_tree.h"
#include "backend/kernel.h"

/* ------------------------------------------------------------------ helpers */

static ge_status oom_p(const ge_prepare_ctx *p) {
  return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
}
static ge_status oom_k(const ge_kctx *c) {
  return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
}

static const char *str_at(const ge_tensor *t, size_t i) {
  const char *s = ((char *const *)t->data)[i];
  return s ? s : "";
}

/* Replaces the owned string in *slot with a copy of s[0..len). */
static bool set_str(char **slot, const char *s, size_t len) {
  char *c = malloc(len + 1);
  if (!c) return false;
  if (len) memcpy(c, s, len);
  c[len] = '\0';
  free(*slot);
  *slot = c;
  return true;
}

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* Power-of-two capacity >= 2n (at least 8); 0 on overflow. */
static size_t table_cap(size_t n) {
  size_t cap = 8;
  while (cap < n * 2) {
    if (cap > SIZE_MAX / 4) return 0;
    cap *= 2;
  }
  return cap;
}

/* A set of strings -> ids: slots hold an entry index or -1. */
typedef struct str_table {
  size_t cap, n;
  int64_t *slot;
  const char **key; /* not owned: points into attributes that outlive the kernel state */
  size_t *len;
  int64_t *id;
} str_table;

static void str_table_free(str_table *t) {
  free(t->slot);
  free(t->key);
  free(t->len);
  free(t->id);
  memset(t, 0, sizeof *t);
}

static bool str_table_init(str_table *t, size_t n) {
  memset(t, 0, sizeof *t);
  t->cap = table_cap(n);
  if (!t->cap) return false;
  t->slot = malloc(t->cap * sizeof *t->slot);
  t->key = calloc(n ? n : 1, sizeof *t->key);
  t->len = calloc(n ? n : 1, sizeof *t->len);
  t->id = calloc(n ? n : 1, sizeof *t->id);
  if (!t->slot || !t->key || !t->len || !t->id) {
    str_table_free(t);
    return false;
  }
  for (size_t i = 0; i < t->cap; i++) t->slot[i] = -1;
  return true;
}

/* Id of s, or -1. */
static int64_t str_table_find(const str_table *t, const char *s, size_t len) {
  size_t m = t->cap - 1, h = (size_t)hash_bytes(s, len) & m;
  for (;; h = (h + 1) & m) {
    int64_t e = t->slot[h];
    if (e < 0) return -1;
    if (t->len[e] == len && !memcmp(t->key[e], s, len)) return t->id[e];
  }
}

/* Adds s with id when absent (capacity: the n given to init); returns the id it has. */
static int64_t str_table_add(str_table *t, const char *s, size_t len, int64_t id) {
  size_t m = t->cap - 1, h = (size_t)hash_bytes(s, len) & m;
  for (;; h = (h + 1) & m) {
    int64_t e = t->slot[h];
    if (e < 0) break;
    if (t->len[e] == len && !memcmp(t->key[e], s, len)) return t->id[e];
  }
  t->slot[h] = (int64_t)t->n;
  t->key[t->n] = s;
  t->len[t->n] = len;
  t->id[t->n] = id;
  t->n++;
  return id;
}

/* Simple case mapping of UTF-8 text, in place of the same length: ASCII, Latin-1
 * (U+00C0..U+00DE <-> U+00E0..U+00FE), Greek (U+0391..U+03A9 <-> U+03B1..U+03C9) and
 * Cyrillic (U+0400..U+042F <-> U+0430..U+045F).  Other bytes are copied. */
static void utf8_case(char *s, size_t n, bool upper) {
  unsigned char *u = (unsigned char *)s;
  for (size_t i = 0; i < n; i++) {
    unsigned c = u[i];
    if (c < 0x80) {
      if (upper && c >= 'a' && c <= 'z') u[i] = (unsigned char)(c - 32);
      if (!upper && c >= 'A' && c <= 'Z') u[i] = (unsigned char)(c + 32);
      continue;
    }
    if ((c & 0xe0) != 0xc0 || i + 1 >= n || (u[i + 1] & 0xc0) != 0x80) continue;
    unsigned cp = ((c & 0x1f) << 6) | (u[i + 1] & 0x3f), out = cp;
    if (upper) {
      if (cp >= 0xe0 && cp <= 0xfe && cp != 0xf7) out = cp - 0x20;
      else if (cp >= 0x3b1 && cp <= 0x3c9 && cp != 0x3c2) out = cp - 0x20;
      else if (cp >= 0x430 && cp <= 0x44f) out = cp - 0x20;
      else if (cp >= 0x450 && cp <= 0x45f) out = cp - 0x50;
    } else {
      if (cp >= 0xc0 && cp <= 0xde && cp != 0xd7) out = cp + 0x20;
      else if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2) out = cp + 0x20;
      else if (cp >= 0x410 && cp <= 0x42f) out = cp + 0x20;
      else if (cp >= 0x400 && cp <= 0x40f) out = cp + 0x50;
    }
    u[i] = (unsigned char)(0xc0 | (out >> 6));
    u[i + 1] = (unsigned char)(0x80 | (out & 0x3f));
    i++;
  }
}

/* ------------------------------------------------------------------ StringNormalizer */

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

typedef struct norm_state {
  int action;
  bool case_sensitive;
  str_table stops;  /* lower-cased when !case_sensitive */
  char **folded;    /* owned folded copies of the stopwords */
  size_t n_folded;
} norm_state;

static void norm_release(void *state) {
  norm_state *s = state;
  if (!s) return;
  str_table_free(&s->stops);
  for (size_t i = 0; i < s->n_folded; i++) free(s->folded[i]);
  free(s->folded);
  free(s);
}

static ge_status norm_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_STRING, GE_DTYPE_COUNT}));
  const char *act = ge_node_attr_string(p->node, "case_change_action", "NONE");
  norm_state *s = calloc(1, sizeof *s);
  if (!s) return oom_p(p);
  s->action = !strcmp(act, "LOWER") ? CASE_LOWER : !strcmp(act, "UPPER") ? CASE_UPPER : CASE_NONE;
  if (s->action == CASE_NONE && strcmp(act, "NONE")) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "case_change_action '%s' is not one of NONE, LOWER, UPPER", act);
  }
  s->case_sensitive = ge_node_attr_int(p->node, "is_case_sensitive", 0) != 0;
  const ge_attr_value *sw = ge_node_attr(p->node, "stopwords");
  size_t n = sw && sw->kind == GE_ATTR_KIND_STRINGS ? sw->n : 0;
  if (!str_table_init(&s->stops, n) || !(s->folded = calloc(n ? n : 1, sizeof *s->folded))) {
    norm_release(s);
    return oom_p(p);
  }
  for (size_t i = 0; i < n; i++) {
    const char *w = sw->strings[i] ? sw->strings[i] : "";
    size_t len = strlen(w);
    if (!s->case_sensitive) {
      char *f = NULL;
      if (!set_str(&f, w, len)) {
        norm_release(s);
        return oom_p(p);
      }
      utf8_case(f, len, false);
      s->folded[s->n_folded++] = f;
      w = f;
    }
    str_table_add(&s->stops, w, len, (int64_t)i);
  }
  *state = s;
  return GE_OK;
}

static ge_status norm_run(const void *state, ge_kctx *ctx) {
  const norm_state *s = state;
  const ge_tensor *x = ctx->in[0];
  if (x->rank != 1 && !(x->rank == 2 && x->dims[0] == 1))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 must have shape [C] or [1, C] (rank %d)",
                        (int)x->rank);
  size_t n = x->numel;
  size_t *keep = malloc((n ? n : 1) * sizeof *keep);
  char *buf = NULL;
  size_t buf_cap = 0;
  if (!keep) return oom_k(ctx);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    const char *w = str_at(x, i);
    size_t len = strlen(w);
    if (s->stops.n) {
      const char *key = w;
      if (!s->case_sensitive) {
        if (len + 1 > buf_cap) {
          char *nb = realloc(buf, len + 1);
          if (!nb) {
            free(buf);
            free(keep);
            return oom_k(ctx);
          }
          buf = nb;
          buf_cap = len + 1;
        }
        memcpy(buf, w, len);
        utf8_case(buf, len, false);
        key = buf;
      }
      if (str_table_find(&s->stops, key, len) >= 0) continue;
    }
    keep[kept++] = i;
  }
  free(buf);
  int64_t dims[2];
  int32_t rank = x->rank;
  int64_t cols = kept ? (int64_t)kept : 1; /* all dropped: one empty string */
  if (rank == 1) {
    dims[0] = cols;
  } else {
    dims[0] = 1;
    dims[1] = cols;
  }
  ge_status st = ge_kctx_alloc_output(ctx, 0, GE_STRING, dims, rank);
  if (st != GE_OK) {
    free(keep);
    return st;
  }
  char **y = ctx->out[0]->data;
  if (!kept) {
    free(keep);
    return set_str(&y[0], "", 0) ? GE_OK : oom_k(ctx);
  }
  for (size_t k = 0; k < kept; k++) {
    const char *w = str_at(x, keep[k]);
    size_t len = strlen(w);
    if (!set_str(&y[k], w, len)) {
      free(keep);
      return oom_k(ctx);
    }
    if (s->action != CASE_NONE) utf8_case(y[k], len, s->action == CASE_UPPER);
  }
  free(keep);
  return GE_OK;
}

/* ------------------------------------------------------------------ StringConcat */

static ge_status concat_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *a = ctx->in[0], *b = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  if (a->dtype != GE_STRING || b->dtype != GE_STRING)
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "inputs must be strings (got %s and %s)",
                        ge_dtype_name(a->dtype), ge_dtype_name(b->dtype));
  if (y->numel == 0) return GE_OK;
  const ge_tensor *ins[2] = {a, b};
  ge_bcast bc;
  GE_CHECK(ge_bcast_init(&bc, y->dims, y->rank, ins, 2));
  ge_bcast_iter it;
  ge_bcast_begin(&bc, &it);
  char **yo = y->data;
  for (size_t r = 0; r < bc.rows; r++, ge_bcast_next(&bc, &it)) {
    for (size_t j = 0; j < bc.inner; j++) {
      const char *sa = str_at(a, (size_t)(it.off[0] + (ptrdiff_t)j * bc.step[0]));
      const char *sb = str_at(b, (size_t)(it.off[1] + (ptrdiff_t)j * bc.step[1]));
      size_t la = strlen(sa), lb = strlen(sb);
      if (la > SIZE_MAX / 2 - lb) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "string too long");
      char *c = malloc(la + lb + 1);
      if (!c) return oom_k(ctx);
      memcpy(c, sa, la);
      memcpy(c + la, sb, lb + 1);
      char **slot = &yo[r * bc.inner + j];
      free(*slot);
      *slot = c;
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ StringSplit */

typedef struct split_state {
  const char *delim; /* NULL: split on runs of whitespace */
  size_t delim_len;
  int64_t maxsplit;  /* < 0: unlimited */
} split_state;

static bool is_space(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Calls out the pieces of s (python str.split semantics).  When pieces is NULL only counts. */
static size_t split_one(const split_state *s, const char *str, const char **pieces, size_t *lens) {
  size_t n = 0, len = strlen(str);
  int64_t splits = 0;
  if (s->delim) {
    const char *p = str, *end = str + len;
    for (;;) {
      const char *q = NULL;
      if (s->maxsplit < 0 || splits < s->maxsplit) {
        for (const char *t = p; t + s->delim_len <= end; t++)
          if (!memcmp(t, s->delim, s->delim_len)) {
            q = t;
            break;
          }
      }
      if (!q) {
        if (pieces) pieces[n] = p, lens[n] = (size_t)(end - p);
        return n + 1;
      }
      if (pieces) pieces[n] = p, lens[n] = (size_t)(q - p);
      n++;
      splits++;
      p = q + s->delim_len;
    }
  }
  size_t i = 0;
  for (;;) {
    while (i < len && is_space(str[i])) i++;
    if (i >= len) return n;
    if (s->maxsplit >= 0 && splits >= s->maxsplit) {
      if (pieces) pieces[n] = str + i, lens[n] = len - i; /* the rest, trailing space kept */
      return n + 1;
    }
    size_t j = i;
    while (j < len && !is_space(str[j])) j++;
    if (pieces) pieces[n] = str + i, lens[n] = j - i;
    n++;
    splits++;
    i = j;
  }
}

static ge_status split_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_STRING, GE_DTYPE_COUNT}));
  split_state *s = calloc(1, sizeof *s);
  if (!s) return oom_p(p);
  const ge_attr_value *d = ge_node_attr(p->node, "delimiter");
  if (d && d->kind == GE_ATTR_KIND_STRING && d->s && d->s[0]) {
    s->delim = d->s;
    s->delim_len = strlen(d->s);
  }
  const ge_attr_value *m = ge_node_attr(p->node, "maxsplit");
  s->maxsplit = m ? m->i : -1;
  if (m && m->i < 0) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "maxsplit must be >= 0 (got %lld)",
                           (long long)m->i);
  }
  *state = s;
  return GE_OK;
}

static ge_status split_run(const void *state, ge_kctx *ctx) {
  const split_state *s = state;
  const ge_tensor *x = ctx->in[0];
  size_t n = x->numel, width = 0;
  if (x->rank >= GE_MAX_RANK)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input rank %d leaves no room for the split axis",
                        (int)x->rank);
  for (size_t i = 0; i < n; i++) {
    size_t k = split_one(s, str_at(x, i), NULL, NULL);
    if (k > width) width = k;
  }
  int64_t dims[GE_MAX_RANK];
  for (int32_t d = 0; d < x->rank; d++) dims[d] = x->dims[d];
  dims[x->rank] = (int64_t)width;
  GE_CHECK(ge_kctx_alloc_output(ctx, 0, GE_STRING, dims, x->rank + 1));
  if (ctx->n_out > 1 && ctx->out[1]) GE_CHECK(ge_kctx_alloc_output(ctx, 1, GE_I64, dims, x->rank));
  if (n == 0) return GE_OK;
  size_t total;
  if (ge_mul_overflow_size(n, width, &total))
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "output too large");
  const char **pieces = malloc((width ? width : 1) * sizeof *pieces);
  size_t *lens = malloc((width ? width : 1) * sizeof *lens);
  if (!pieces || !lens) {
    free(pieces);
    free(lens);
    return oom_k(ctx);
  }
  char **y = ctx->out[0]->data;
  int64_t *z = ctx->n_out > 1 && ctx->out[1] ? ctx->out[1]->data : NULL;
  ge_status st = GE_OK;
  for (size_t i = 0; i < n && st == GE_OK; i++) {
    size_t k = split_one(s, str_at(x, i), pieces, lens);
    if (z) z[i] = (int64_t)k;
    for (size_t j = 0; j < width; j++)
      if (!set_str(&y[i * width + j], j < k ? pieces[j] : "", j < k ? lens[j] : 0)) st = oom_k(ctx);
  }
  free(pieces);
  free(lens);
  return st;
}

/* ------------------------------------------------------------------ RegexFullMatch */

typedef struct regex_state {
  regex_t re;
} regex_state;

typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->n + n + 1) * 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}
static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }
static void sb_putc(sbuf *b, char ch) { sb_putn(b, &ch, 1); }

static bool ere_special(char ch) { return ch && strchr(".[]{}()\\*+?^$|", ch) != NULL; }

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* A literal byte outside a bracket expression. */
static void sb_literal(sbuf *b, char ch) {
  if (ere_special(ch)) sb_putc(b, '\\');
  sb_putc(b, ch);
}

/* Translates an RE2 pattern into a POSIX ERE (glibc: \b \B are kept as GNU extensions).
 * Returns NULL with *why set on a construct it declines. *icase for a leading (?i). */
static char *re2_to_ere(const char *pat, bool *icase, const char **why) {
  sbuf b = {0};
  const char *p = pat;
  *icase = false;
  if (!strncmp(p, "(?i)", 4)) {
    *icase = true;
    p += 4;
  }
  sb_puts(&b, "^(");
  while (*p && !*why) {
    char ch = *p++;
    if (ch == '\\') {
      char e = *p;
      if (e) p++;
      switch (e) {
      case '\0': *why = "trailing backslash"; break;
      case 'd': sb_puts(&b, "[0-9]"); break;
      case 'D': sb_puts(&b, "[^0-9]"); break;
      case 's': sb_puts(&b, "[[:space:]]"); break;
      case 'S': sb_puts(&b, "[^[:space:]]"); break;
      case 'w': sb_puts(&b, "[[:alnum:]_]"); break;
      case 'W': sb_puts(&b, "[^[:alnum:]_]"); break;
      case 'b': sb_puts(&b, "\\b"); break;
      case 'B': sb_puts(&b, "\\B"); break;
      case 'A': sb_putc(&b, '^'); break;
      case 'z': sb_putc(&b, '$'); break;
      case 'n': sb_putc(&b, '\n'); break;
      case 't': sb_putc(&b, '\t'); break;
      case 'r': sb_putc(&b, '\r'); break;
      case 'f': sb_putc(&b, '\f'); break;
      case 'v': sb_putc(&b, '\v'); break;
      case 'x': {
        int h1 = hexval(p[0]), h2 = h1 >= 0 ? hexval(p[1]) : -1;
        if (h1 < 0 || h2 < 0 || (h1 == 0 && h2 == 0)) {
          *why = "\\x escapes other than \\xHH (non-zero) are not supported";
          break;
        }
        sb_literal(&b, (char)(h1 * 16 + h2));
        p += 2;
        break;
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
          *why = "this escape (Unicode classes \\p, \\Q..\\E, backreferences, ...) has no POSIX equivalent";
        else
          sb_literal(&b, e);
      }
      continue;
    }
    if (ch == '(' && *p == '?') {
      if (p[1] == ':') {
        sb_putc(&b, '(');
        p += 2;
        continue;
      }
      *why = "group flags and named groups '(?...)' are not supported (only (?:...) and a leading (?i))";
      break;
    }
    if ((ch == '*' || ch == '+' || ch == '?' || ch == '}') && *p == '?') {
      /* lazy quantifier: irrelevant to whether a full match exists */
      sb_putc(&b, ch);
      p++;
      continue;
    }
    if (ch == '[') {
      bool neg = false, rbr = false, dash = false, caret = false;
      sbuf items = {0};
      if (*p == '^') {
        neg = true;
        p++;
      }
      if (*p == ']') {
        rbr = true;
        p++;
      }
      while (*p && *p != ']' && !*why) {
        char c = *p++;
        if (c == '[' && *p == ':') {
          const char *end = strstr(p, ":]");
          if (!end) {
            *why = "unterminated character class";
            break;
          }
          sb_putc(&items, '[');
          sb_putn(&items, p, (size_t)(end - p) + 2);
          p = end + 2;
          continue;
        }
        if (c == '\\') {
          char e = *p;
          if (e) p++;
          switch (e) {
          case '\0': *why = "trailing backslash"; break;
          case 'd': sb_puts(&items, "0-9"); break;
          case 's': sb_puts(&items, "[:space:]"); break;
          case 'w': sb_puts(&items, "[:alnum:]_"); break;
          case 'n': sb_putc(&items, '\n'); break;
          case 't': sb_putc(&items, '\t'); break;
          case 'r': sb_putc(&items, '\r'); break;
          case ']': rbr = true; break;
          case '-': dash = true; break;
          case '^': caret = true; break;
          default:
            if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
              *why = "this escape inside [...] (\\D, \\W, \\S, \\p, ...) has no POSIX equivalent";
            else
              sb_putc(&items, e);
          }
          continue;
        }
        if (c == '^') {
          caret = true;
          continue;
        }
        sb_putc(&items, c);
      }
      if (!*why && *p != ']') *why = "unterminated [...]";
      if (*p == ']') p++;
      if (!*why) {
        if (!items.n && !rbr && !dash && caret && !neg) {
          sb_puts(&b, "\\^");
        } else {
          sb_putc(&b, '[');
          if (neg) sb_putc(&b, '^');
          if (rbr) sb_putc(&b, ']');
          if (items.n) sb_putn(&b, items.p, items.n);
          if (caret) sb_putc(&b, '^');
          if (dash) sb_putc(&b, '-');
          sb_putc(&b, ']');
        }
      }
      b.oom |= items.oom;
      free(items.p);
      continue;
    }
    sb_putc(&b, ch);
  }
  sb_puts(&b, ")$");
  if (*why || b.oom) {
    if (b.oom && !*why) *why = "out of memory";
    free(b.p);
    return NULL;
  }
  return b.p;
}

static void regex_release(void *state) {
  regex_state *s = state;
  if (!s) return;
  regfree(&s->re);
  free(s);
}

static ge_status regex_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_STRING, GE_DTYPE_COUNT}));
  const char *pat = ge_node_attr_string(p->node, "pattern", NULL);
  if (!pat) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute 'pattern' is required");
  bool icase;
  const char *why = NULL;
  char *ere = re2_to_ere(pat, &icase, &why);
  if (!ere)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "pattern '%s': %s", pat, why);
  regex_state *s = calloc(1, sizeof *s);
  if (!s) {
    free(ere);
    return oom_p(p);
  }
  int rc = regcomp(&s->re, ere, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0));
  if (rc != 0) {
    char msg[256];
    regerror(rc, &s->re, msg, sizeof msg);
    free(s);
    ge_status st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                                   "pattern '%s' (as POSIX '%s') does not compile: %s", pat, ere,
                                   msg);
    free(ere);
    return st;
  }
  free(ere);
  *state = s;
  return GE_OK;
}

static ge_status regex_run(const void *state, ge_kctx *ctx) {
  const regex_state *s = state;
  const ge_tensor *x = ctx->in[0];
  bool *y = ctx->out[0]->data;
  for (size_t i = 0; i < x->numel; i++) y[i] = regexec(&s->re, str_at(x, i), 0, NULL, 0) == 0;
  return GE_OK;
}

/* ------------------------------------------------------------------ TfIdfVectorizer */

enum { TFIDF_TF, TFIDF_IDF, TFIDF_TFIDF };

typedef struct tfidf_state {
  int mode;
  int64_t min_n, max_n, max_skip;
  size_t width;          /* output columns */
  int64_t *pool;         /* pool ids (int values, or string ids) */
  size_t n_pool;
  size_t *gram_start;    /* per n-gram ordinal: its offset in pool */
  int64_t *gram_len;
  int64_t *gram_col;     /* output column */
  size_t n_grams;
  size_t cap;            /* hash table over all n-grams, keyed by (n, ids) */
  int64_t *slot;         /* n-gram ordinal or -1 */
  float *weights;        /* per output column, or NULL */
  bool strings;
  str_table pool_strings;
} tfidf_state;

static void tfidf_release(void *state) {
  tfidf_state *s = state;
  if (!s) return;
  free(s->pool);
  free(s->gram_start);
  free(s->gram_len);
  free(s->gram_col);
  free(s->slot);
  free(s->weights);
  str_table_free(&s->pool_strings);
  free(s);
}

static uint64_t gram_hash(const int64_t *ids, size_t stride, int64_t n) {
  uint64_t h = hash_u64((uint64_t)n);
  for (int64_t j = 0; j < n; j++) h = hash_u64(h ^ (uint64_t)ids[(size_t)j * stride]);
  return h;
}

static ge_status tfidf_prepare(const ge_prepare_ctx *p, void **state) {
  const ge_node *n = p->node;
  GE_CHECK(ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_STRING, GE_I32, GE_I64,
                                                           GE_DTYPE_COUNT}));
  tfidf_state *s = calloc(1, sizeof *s);
  if (!s) return oom_p(p);
  ge_status st = GE_OK;
  const char *mode = ge_node_attr_string(n, "mode", "TF");
  s->mode = !strcmp(mode, "TF") ? TFIDF_TF : !strcmp(mode, "IDF") ? TFIDF_IDF
          : !strcmp(mode, "TFIDF") ? TFIDF_TFIDF : -1;
  s->min_n = ge_node_attr_int(n, "min_gram_length", 1);
  s->max_n = ge_node_attr_int(n, "max_gram_length", 1);
  s->max_skip = ge_node_attr_int(n, "max_skip_count", 0);
  const int64_t *counts = NULL, *idx = NULL;
  size_t n_counts = 0, n_idx = 0;
  ge_node_attr_ints(n, "ngram_counts", &counts, &n_counts);
  ge_node_attr_ints(n, "ngram_indexes", &idx, &n_idx);
  const ge_attr_value *pi = ge_node_attr(n, "pool_int64s"), *ps = ge_node_attr(n, "pool_strings");
  s->strings = p->in[0].type->dtype == GE_STRING;
  if (s->mode < 0) {
    st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "mode '%s' is not TF, IDF or TFIDF", mode);
    goto fail;
  }
  if (s->min_n < 1 || s->max_n < s->min_n || s->max_n > 64 || s->max_skip < 0 ||
      s->max_skip > (1 << 20)) {
    st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                         "bad gram lengths (min %lld, max %lld) or max_skip_count %lld",
                         (long long)s->min_n, (long long)s->max_n, (long long)s->max_skip);
    goto fail;
  }
  if (s->strings ? !ps || ps->kind != GE_ATTR_KIND_STRINGS : !pi || pi->kind != GE_ATTR_KIND_INTS) {
    st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "input 0 is %s but attribute %s is missing",
                         ge_dtype_name(p->in[0].type->dtype),
                         s->strings ? "pool_strings" : "pool_int64s");
    goto fail;
  }
  s->n_pool = s->strings ? ps->n : pi->n;
  s->pool = malloc((s->n_pool ? s->n_pool : 1) * sizeof *s->pool);
  if (!s->pool) goto oom;
  if (s->strings) {
    if (!str_table_init(&s->pool_strings, s->n_pool)) goto oom;
    for (size_t i = 0; i < s->n_pool; i++) {
      const char *w = ps->strings[i] ? ps->strings[i] : "";
      s->pool[i] = str_table_add(&s->pool_strings, w, strlen(w), (int64_t)s->pool_strings.n);
    }
  } else {
    memcpy(s->pool, pi->ints, s->n_pool * sizeof *s->pool);
  }
  /* n-grams: ngram_counts[k] is where the (k+1)-grams start in the pool */
  s->gram_start = malloc((n_idx ? n_idx : 1) * sizeof *s->gram_start);
  s->gram_len = malloc((n_idx ? n_idx : 1) * sizeof *s->gram_len);
  s->gram_col = malloc((n_idx ? n_idx : 1) * sizeof *s->gram_col);
  if (!s->gram_start || !s->gram_len || !s->gram_col) goto oom;
  for (size_t k = 0; k < n_counts; k++) {
    int64_t beg = counts[k], end = k + 1 < n_counts ? counts[k + 1] : (int64_t)s->n_pool;
    int64_t len = (int64_t)k + 1;
    if (beg < 0 || end < beg || end > (int64_t)s->n_pool || (end - beg) % len) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "ngram_counts[%zu] = %lld does not split a pool of %zu into %lld-grams",
                           k, (long long)beg, s->n_pool, (long long)len);
      goto fail;
    }
    for (int64_t off = beg; off < end; off += len) {
      if (s->n_grams >= n_idx) {
        st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                             "the pool holds more n-grams than ngram_indexes (%zu)", n_idx);
        goto fail;
      }
      s->gram_start[s->n_grams] = (size_t)off;
      s->gram_len[s->n_grams] = len;
      s->gram_col[s->n_grams] = idx[s->n_grams];
      s->n_grams++;
    }
  }
  for (size_t k = 0; k < n_idx; k++) {
    if (idx[k] < 0 || idx[k] > ((int64_t)1 << 40)) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "ngram_indexes[%zu] = %lld is out of range",
                           k, (long long)idx[k]);
      goto fail;
    }
    if ((size_t)idx[k] + 1 > s->width) s->width = (size_t)idx[k] + 1;
  }
  const float *w;
  size_t n_w;
  if (ge_node_attr_floats(n, "weights", &w, &n_w) && n_w) {
    if (n_w < s->width) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "weights has %zu entries, fewer than the %zu output columns", n_w,
                           s->width);
      goto fail;
    }
    if (!(s->weights = malloc(n_w * sizeof *s->weights))) goto oom;
    memcpy(s->weights, w, n_w * sizeof *w);
  }
  s->cap = table_cap(s->n_grams);
  if (!s->cap || !(s->slot = malloc(s->cap * sizeof *s->slot))) goto oom;
  for (size_t i = 0; i < s->cap; i++) s->slot[i] = -1;
  for (size_t g = 0; g < s->n_grams; g++) {
    const int64_t *ids = s->pool + s->gram_start[g];
    size_t h = (size_t)gram_hash(ids, 1, s->gram_len[g]) & (s->cap - 1);
    while (s->slot[h] >= 0) h = (h + 1) & (s->cap - 1);
    s->slot[h] = (int64_t)g;
  }
  *state = s;
  return GE_OK;
oom:
  st = oom_p(p);
fail:
  tfidf_release(s);
  return st;
}

/* Ordinal of the n-gram ids[0], ids[stride], ..., or -1. */
static int64_t tfidf_find(const tfidf_state *s, const int64_t *ids, size_t stride, int64_t n) {
  size_t m = s->cap - 1, h = (size_t)gram_hash(ids, stride, n) & m;
  for (;; h = (h + 1) & m) {
    int64_t g = s->slot[h];
    if (g < 0) return -1;
    if (s->gram_len[g] != n) continue;
    const int64_t *q = s->pool + s->gram_start[g];
    int64_t j = 0;
    while (j < n && q[j] == ids[(size_t)j * stride]) j++;
    if (j == n) return g;
  }
}

static ge_status tfidf_run(const void *state, ge_kctx *ctx) {
  const tfidf_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  size_t rows = x->rank == 2 ? (size_t)x->dims[0] : 1;
  size_t cols = x->rank == 2 ? (size_t)x->dims[1] : x->numel;
  float *out = y->data;
  if (y->numel != rows * s->width)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu x %zu",
                        y->numel, rows, s->width);
  memset(out, 0, y->nbytes);
  if (!cols || !s->n_grams) return GE_OK;
  int64_t *ids = malloc(cols * sizeof *ids);
  if (!ids) return oom_k(ctx);
  for (size_t r = 0; r < rows; r++) {
    for (size_t c = 0; c < cols; c++) {
      size_t i = r * cols + c;
      if (x->dtype == GE_I32) {
        ids[c] = ((const int32_t *)x->data)[i];
      } else if (x->dtype == GE_I64) {
        ids[c] = ((const int64_t *)x->data)[i];
      } else {
        const char *w = str_at(x, i);
        ids[c] = str_table_find(&s->pool_strings, w, strlen(w)); /* -1: in no n-gram */
      }
    }
    float *row = out + r * s->width;
    for (size_t c = 0; c < cols; c++) {
      for (int64_t n = s->min_n; n <= s->max_n; n++) {
        int64_t skips = n == 1 ? 0 : s->max_skip;
        for (int64_t k = 0; k <= skips; k++) {
          size_t stride = (size_t)k + 1;
          if (c + (size_t)(n - 1) * stride >= cols) break;
          int64_t g = tfidf_find(s, ids + c, stride, n);
          if (g >= 0) row[s->gram_col[g]] += 1.0f;
        }
      }
    }
    for (size_t j = 0; j < s->width; j++) {
      float wt = s->weights ? s->weights[j] : 1.0f;
      if (s->mode == TFIDF_IDF) row[j] = row[j] > 0 ? wt : 0.0f;
      else if (s->mode == TFIDF_TFIDF) row[j] *= wt;
    }
  }
  free(ids);
  return GE_OK;
}

/* ------------------------------------------------------------------ LabelEncoder */

typedef struct label_state {
  bool string_keys, float_keys;
  size_t n_keys;
  str_table skeys;        /* string keys -> index */
  uint64_t *nkeys;        /* numeric keys, canonical bits */
  size_t cap;
  int64_t *slot;          /* numeric hash: index or -1 */
  ge_tensor values;       /* owned copy */
  ge_tensor dflt;         /* one element, owned */
  char **key_strs;        /* owned copies of string keys */
} label_state;

static void label_release(void *state) {
  label_state *s = state;
  if (!s) return;
  str_table_free(&s->skeys);
  free(s->nkeys);
  free(s->slot);
  ge_tensor_release_storage(&s->values);
  ge_tensor_release_storage(&s->dflt);
  if (s->key_strs)
    for (size_t i = 0; i < s->n_keys; i++) free(s->key_strs[i]);
  free(s->key_strs);
  free(s);
}

/* Canonical 64-bit key of a number: floats as double bits (one NaN, +0 for -0). */
static uint64_t num_key(double d) {
  uint64_t u;
  if (d != d) return 0x7ff8000000000000ull;
  if (d == 0) d = 0;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* Fills t (owned) from the list/tensor attribute a of a label family; false on OOM. */
static ge_status label_tensor_from_attr(const ge_prepare_ctx *p, const ge_attr_value *a,
                                        ge_tensor *t) {
  int64_t n;
  switch (a->kind) {
  case GE_ATTR_KIND_TENSOR:
    if (!a->t) break;
    n = (int64_t)a->t->numel;
    GE_CHECK(ge_tensor_init_alloc(t, a->t->dtype, &n, 1));
    if (a->t->dtype == GE_STRING) {
      for (size_t i = 0; i < a->t->numel; i++) {
        const char *v = str_at(a->t, i);
        if (!set_str(&((char **)t->data)[i], v, strlen(v))) return oom_p(p);
      }
    } else if (t->nbytes) {
      memcpy(t->data, a->t->data, t->nbytes);
    }
    return GE_OK;
  case GE_ATTR_KIND_STRINGS:
    n = (int64_t)a->n;
    GE_CHECK(ge_tensor_init_alloc(t, GE_STRING, &n, 1));
    for (size_t i = 0; i < a->n; i++) {
      const char *v = a->strings[i] ? a->strings[i] : "";
      if (!set_str(&((char **)t->data)[i], v, strlen(v))) return oom_p(p);
    }
    return GE_OK;
  case GE_ATTR_KIND_INTS:
    n = (int64_t)a->n;
    GE_CHECK(ge_tensor_init_alloc(t, GE_I64, &n, 1));
    if (a->n) memcpy(t->data, a->ints, a->n * sizeof *a->ints);
    return GE_OK;
  case GE_ATTR_KIND_FLOATS:
    n = (int64_t)a->n;
    GE_CHECK(ge_tensor_init_alloc(t, GE_F32, &n, 1));
    if (a->n) memcpy(t->data, a->floats, a->n * sizeof *a->floats);
    return GE_OK;
  default:
    break;
  }
  return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute '%s' has kind %s", a->name,
                         ge_attr_kind_name(a->kind));
}

static const ge_attr_value *first_attr(const ge_node *n, const char *const *names) {
  for (; *names; names++) {
    const ge_attr_value *a = ge_node_attr(n, *names);
    if (a) return a;
  }
  return NULL;
}

static ge_status label_prepare(const ge_prepare_ctx *p, void **state) {
  const ge_node *n = p->node;
  if (!p->in[0].type || p->in[0].type->dtype == GE_DTYPE_COUNT)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "input 0 has an unknown dtype");
  ge_dtype xt = p->in[0].type->dtype;
  const ge_attr_value *ka = first_attr(n, (const char *const[]){"keys_tensor", "keys_strings",
                                                                "keys_int64s", "keys_floats", NULL});
  const ge_attr_value *va = first_attr(
      n, (const char *const[]){"values_tensor", "values_strings", "values_int64s", "values_floats",
                               NULL});
  if (!ka || !va)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "keys_* and values_* attributes are required");
  label_state *s = calloc(1, sizeof *s);
  if (!s) return oom_p(p);
  ge_tensor keys = {0};
  ge_status st = label_tensor_from_attr(p, ka, &keys);
  if (st == GE_OK) st = label_tensor_from_attr(p, va, &s->values);
  if (st != GE_OK) goto done;
  if (keys.numel != s->values.numel) {
    st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "%zu keys but %zu values", keys.numel,
                         s->values.numel);
    goto done;
  }
  s->string_keys = keys.dtype == GE_STRING;
  s->float_keys = ge_dtype_is_float(keys.dtype);
  bool x_str = xt == GE_STRING, x_float = ge_dtype_is_float(xt);
  if (x_str != s->string_keys || (!x_str && x_float != s->float_keys)) {
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "input 0 is %s but the keys are %s",
                         ge_dtype_name(xt), ge_dtype_name(keys.dtype));
    goto done;
  }
  if (p->out[0].dtype != s->values.dtype) {
    st = ge_prepare_fail(p, GE_ERR_INTERNAL, "output dtype %s does not match the values (%s)",
                         ge_dtype_name(p->out[0].dtype), ge_dtype_name(s->values.dtype));
    goto done;
  }
  /* default value, of the values' dtype */
  int64_t one = 1;
  if ((st = ge_tensor_init_alloc(&s->dflt, s->values.dtype, &one, 1)) != GE_OK) goto done;
  const ge_attr_value *dt = ge_node_attr(n, "default_tensor");
  if (dt && dt->t) {
    if (dt->t->dtype != s->values.dtype || dt->t->numel != 1) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "default_tensor must be one %s element", ge_dtype_name(s->values.dtype));
      goto done;
    }
    if (dt->t->dtype == GE_STRING) {
      const char *v = str_at(dt->t, 0);
      if (!set_str((char **)s->dflt.data, v, strlen(v))) goto oom;
    } else {
      memcpy(s->dflt.data, dt->t->data, s->dflt.nbytes);
    }
  } else {
    switch (s->values.dtype) {
    case GE_STRING: {
      const char *v = ge_node_attr_string(n, "default_string", "_Unused");
      if (!set_str((char **)s->dflt.data, v, strlen(v))) goto oom;
      break;
    }
    case GE_I64: *(int64_t *)s->dflt.data = ge_node_attr_int(n, "default_int64", -1); break;
    case GE_F32: *(float *)s->dflt.data = ge_node_attr_float(n, "default_float", -0.0f); break;
    default: break; /* values_tensor without default_tensor: zero */
    }
  }
  s->n_keys = keys.numel;
  if (s->string_keys) {
    if (!(s->key_strs = calloc(s->n_keys ? s->n_keys : 1, sizeof *s->key_strs))) goto oom;
    if (!str_table_init(&s->skeys, s->n_keys)) goto oom;
    for (size_t i = 0; i < s->n_keys; i++) {
      const char *v = str_at(&keys, i);
      if (!set_str(&s->key_strs[i], v, strlen(v))) goto oom;
      str_table_add(&s->skeys, s->key_strs[i], strlen(v), (int64_t)i);
    }
  } else {
    s->cap = table_cap(s->n_keys);
    if (!s->cap || !(s->slot = malloc(s->cap * sizeof *s->slot)) ||
        !(s->nkeys = malloc((s->n_keys ? s->n_keys : 1) * sizeof *s->nkeys)))
      goto oom;
    for (size_t i = 0; i < s->cap; i++) s->slot[i] = -1;
    for (size_t i = 0; i < s->n_keys; i++) {
      uint64_t k = s->float_keys ? num_key(ge_tensor_get_f64(&keys, i))
                                 : (uint64_t)ge_tensor_get_i64(&keys, i);
      s->nkeys[i] = k;
      size_t h = (size_t)hash_u64(k) & (s->cap - 1);
      bool dup = false;
      while (s->slot[h] >= 0 && !(dup = s->nkeys[s->slot[h]] == k)) h = (h + 1) & (s->cap - 1);
      if (!dup) s->slot[h] = (int64_t)i;
    }
  }
  goto done;
oom:
  st = oom_p(p);
done:
  ge_tensor_release_storage(&keys);
  if (st != GE_OK) {
    label_release(s);
    return st;
  }
  *state = s;
  return GE_OK;
}

static ge_status label_run(const void *state, ge_kctx *ctx) {
  const label_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  size_t esz = s->values.dtype == GE_STRING ? 0 : ge_dtype_size(s->values.dtype);
  for (size_t i = 0; i < x->numel; i++) {
    int64_t e = -1;
    if (s->string_keys) {
      const char *w = str_at(x, i);
      e = str_table_find(&s->skeys, w, strlen(w));
    } else {
      uint64_t k = s->float_keys ? num_key(ge_tensor_get_f64(x, i)) : (uint64_t)ge_tensor_get_i64(x, i);
      for (size_t h = (size_t)hash_u64(k) & (s->cap - 1);; h = (h + 1) & (s->cap - 1)) {
        int64_t q = s->slot[h];
        if (q < 0) break;
        if (s->nkeys[q] == k) {
          e = q;
          break;
        }
      }
    }
    const ge_tensor *src = e >= 0 ? &s->values : &s->dflt;
    size_t j = e >= 0 ? (size_t)e : 0;
    if (!esz) {
      const char *v = str_at(src, j);
      if (!set_str(&((char **)y->data)[i], v, strlen(v))) return oom_k(ctx);
    } else {
      memcpy((char *)y->data + i * esz, (const char *)src->data + j * esz, esz);
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ ArrayFeatureExtractor */

static ge_status afe_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *x = ctx->in[0], *idx = ctx->in[1];
  ge_tensor *y = ctx->out[0];
  if (x->rank < 1) return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 must have rank >= 1");
  size_t c = (size_t)x->dims[x->rank - 1], k = idx->numel;
  size_t rows = c ? x->numel / c : 0;
  if (x->rank == 1) rows = 1;
  if (y->numel != rows * k)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu x %zu",
                        y->numel, rows, k);
  const int64_t *ix = idx->data;
  for (size_t j = 0; j < k; j++)
    if (ix[j] < 0 || (size_t)ix[j] >= c)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT,
                          "input 1 index %lld (element %zu) is out of range for %zu features",
                          (long long)ix[j], j, c);
  size_t esz = x->dtype == GE_STRING ? 0 : ge_dtype_size(x->dtype);
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < k; j++) {
      size_t src = r * c + (size_t)ix[j], dst = r * k + j;
      if (!esz) {
        const char *v = str_at(x, src);
        if (!set_str(&((char **)y->data)[dst], v, strlen(v))) return oom_k(ctx);
      } else {
        memcpy((char *)y->data + dst * esz, (const char *)x->data + src * esz, esz);
      }
    }
  return GE_OK;
}

/* ------------------------------------------------------------------ Binarizer */

static ge_status binarizer_run(const void *state, ge_kctx *ctx) {
  (void)state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  double t = ge_node_attr_float(ctx->node, "threshold", 0.0f);
  size_t n = x->numel;
  switch (x->dtype) {
  case GE_F32: {
    const float *a = x->data;
    float *o = y->data, tf = (float)t;
    for (size_t i = 0; i < n; i++) o[i] = a[i] > tf ? 1.0f : (a[i] != a[i] ? a[i] : 0.0f);
    break;
  }
  case GE_F64: {
    const double *a = x->data;
    double *o = y->data;
    for (size_t i = 0; i < n; i++) o[i] = a[i] > t ? 1.0 : (a[i] != a[i] ? a[i] : 0.0);
    break;
  }
  case GE_I64: {
    const int64_t *a = x->data;
    int64_t *o = y->data;
    for (size_t i = 0; i < n; i++) o[i] = (double)a[i] > t;
    break;
  }
  case GE_I32: {
    const int32_t *a = x->data;
    int32_t *o = y->data;
    for (size_t i = 0; i < n; i++) o[i] = (double)a[i] > t;
    break;
  }
  default:
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "input 0 dtype %s is not supported",
                        ge_dtype_name(x->dtype));
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ ImageDecoder */

enum { PIX_RGB, PIX_BGR, PIX_GRAY };

static ge_status image_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_U8, GE_DTYPE_COUNT}));
  const char *fmt = ge_node_attr_string(p->node, "pixel_format", "RGB");
  int *s = malloc(sizeof *s);
  if (!s) return oom_p(p);
  *s = !strcmp(fmt, "BGR") ? PIX_BGR : !strcmp(fmt, "Grayscale") ? PIX_GRAY : PIX_RGB;
  *state = s;
  return GE_OK;
}

static ge_status image_run(const void *state, ge_kctx *ctx) {
  int fmt = *(const int *)state;
  const ge_tensor *x = ctx->in[0];
  int64_t dims[3];
  ge_image_error err;
  uint8_t *rgb = ge_image_decode_rgb(x->data, x->numel, &dims[0], &dims[1], &err);
  if (!rgb)
    return ge_kctx_fail(ctx,
                        err.status == GE_IMAGE_NO_MEMORY     ? GE_ERR_OUT_OF_MEMORY
                        : err.status == GE_IMAGE_UNSUPPORTED ? GE_ERR_UNSUPPORTED
                                                             : GE_ERR_INVALID_ARGUMENT,
                        "cannot decode input 0 (%zu bytes) as %s: %s", x->numel, err.format,
                        err.msg);
  dims[2] = fmt == PIX_GRAY ? 1 : 3;
  ge_status st = ge_kctx_alloc_output(ctx, 0, GE_U8, dims, 3);
  if (st != GE_OK) {
    free(rgb);
    return st;
  }
  uint8_t *o = ctx->out[0]->data;
  size_t px = (size_t)dims[0] * (size_t)dims[1];
  for (size_t i = 0; i < px; i++) {
    const uint8_t *q = rgb + i * 3;
    if (fmt == PIX_GRAY) {
      o[i] = (uint8_t)((q[0] * 19595u + q[1] * 38470u + q[2] * 7471u + 0x8000u) >> 16);
    } else if (fmt == PIX_BGR) {
      o[i * 3] = q[2], o[i * 3 + 1] = q[1], o[i * 3 + 2] = q[0];
    } else {
      o[i * 3] = q[0], o[i * 3 + 1] = q[1], o[i * 3 + 2] = q[2];
    }
  }
  free(rgb);
  return GE_OK;
}

const ge_kernel_def ge_ref_kernels_text[] = {
    {"", "StringNormalizer", 10, 0, {norm_prepare, norm_run, norm_release, true}},
    {"", "StringConcat", 20, 0, {NULL, concat_run, NULL, false}},
    {"", "StringSplit", 20, 0, {split_prepare, split_run, free, true}},
    {"", "RegexFullMatch", 20, 0, {regex_prepare, regex_run, regex_release, false}},
    {"", "TfIdfVectorizer", 9, 0, {tfidf_prepare, tfidf_run, tfidf_release, false}},
    {"ai.onnx.ml", "LabelEncoder", 1, 0, {label_prepare, label_run, label_release, false}},
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, 0, {NULL, afe_run, NULL, false}},
    {"ai.onnx.ml", "Binarizer", 1, 0, {NULL, binarizer_run, NULL, false}},
    {"", "ImageDecoder", 20, 0, {image_prepare, image_run, free, true}},
    {"ai.onnx.ml", "TreeEnsemble", 5, 0, {ge_ml_tree_prepare, ge_ml_tree_run, ge_ml_tree_release, false}},
    {0},
};
