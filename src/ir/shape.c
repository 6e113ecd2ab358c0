/* Shapes: static checks, element counts, printing and numpy broadcasting with symbols. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

bool ge_mul_overflow_size(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return true;
  if (out) *out = r;
  return false;
}

bool ge_shape_is_static(const ge_shape *s) {
  if (!s || s->rank < 0 || s->rank > GE_MAX_RANK) return false;
  for (int32_t i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) return false;
  return true;
}

bool ge_shape_equal(const ge_shape *a, const ge_shape *b) {
  if (!a || !b) return false;
  if (a->rank != b->rank) return false;
  if (a->rank < 0) return true;
  for (int32_t i = 0; i < a->rank && i < GE_MAX_RANK; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool ge_shape_numel(const ge_shape *s, size_t *out) {
  if (!ge_shape_is_static(s)) return false;
  size_t n = 1;
  for (int32_t i = 0; i < s->rank; i++) {
    if ((uint64_t)s->dims[i] > (uint64_t)SIZE_MAX) return false;
    if (ge_mul_overflow_size(n, (size_t)s->dims[i], &n)) return false;
  }
  if (out) *out = n;
  return true;
}

static const ge_graph *root_graph(const ge_graph *g) {
  while (g && g->parent) g = g->parent;
  return g;
}

const char *ge_shape_str(const ge_shape *s, const ge_graph *g, char *buf, size_t cap) {
  if (!buf || cap == 0) return buf;
  buf[0] = '\0';
  if (!s) {
    snprintf(buf, cap, "(null)");
    return buf;
  }
  if (s->rank < 0 || s->rank > GE_MAX_RANK) {
    snprintf(buf, cap, "[*]");
    return buf;
  }
  const ge_graph *r = root_graph(g);
  size_t pos = 0;
  int w = snprintf(buf, cap, "[");
  pos = w > 0 ? (size_t)w : 0;
  for (int32_t i = 0; i < s->rank && pos < cap; i++) {
    const char *sep = i ? "," : "";
    int64_t d = s->dims[i];
    if (d >= 0) {
      w = snprintf(buf + pos, cap - pos, "%s%lld", sep, (long long)d);
    } else if (d == GE_DIM_UNKNOWN) {
      w = snprintf(buf + pos, cap - pos, "%s?", sep);
    } else {
      size_t id = GE_DIM_SYM_ID(d);
      if (r && id < r->n_syms && r->syms[id])
        w = snprintf(buf + pos, cap - pos, "%s%s", sep, r->syms[id]);
      else
        w = snprintf(buf + pos, cap - pos, "%ss%zu", sep, id);
    }
    if (w < 0) break;
    pos += (size_t)w;
  }
  if (pos < cap) snprintf(buf + pos, cap - pos, "]");
  return buf;
}

static int64_t broadcast_dim(int64_t a, int64_t b, bool *ok) {
  *ok = true;
  if (a == b) return a;
  if (a == 1) return b;
  if (b == 1) return a;
  if (a >= 0 && b >= 0) {
    *ok = false;
    return 0;
  }
  if (a >= 0) return a; /* known n (!= 1) vs symbolic/unknown: n */
  if (b >= 0) return b;
  return GE_DIM_UNKNOWN; /* different symbols, or a symbol vs unknown */
}

ge_status ge_shape_broadcast(const ge_shape *a, const ge_shape *b, ge_shape *out) {
  if (!a || !b || !out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_shape_broadcast: NULL shape");
  if (a->rank < 0 || b->rank < 0) {
    ge_shape r;
    memset(&r, 0, sizeof r);
    r.rank = GE_RANK_UNKNOWN;
    *out = r;
    return GE_OK;
  }
  if (a->rank > GE_MAX_RANK || b->rank > GE_MAX_RANK)
    return ge_error(GE_ERR_SHAPE, "broadcast: rank %d/%d exceeds %d", (int)a->rank, (int)b->rank,
                    GE_MAX_RANK);
  ge_shape r;
  memset(&r, 0, sizeof r);
  r.rank = a->rank > b->rank ? a->rank : b->rank;
  for (int32_t i = 0; i < r.rank; i++) {
    int32_t ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1;
    int64_t db = ib >= 0 ? b->dims[ib] : 1;
    bool ok;
    r.dims[i] = broadcast_dim(da, db, &ok);
    if (!ok) {
      char sa[256], sb[256];
      return ge_error(GE_ERR_SHAPE, "shapes %s and %s cannot be broadcast (dim %d: %lld vs %lld)",
                      ge_shape_str(a, NULL, sa, sizeof sa), ge_shape_str(b, NULL, sb, sizeof sb),
                      (int)i, (long long)da, (long long)db);
    }
  }
  *out = r;
  return GE_OK;
}
