/* Ahead-of-time memory planning: offsets into one arena, several greedy placements, the
 * smallest kept; a checker; the live-bytes lower bound. */
#include <stdlib.h>
#include <string.h>

#include "compiler/memplan.h"
#include "compiler/program.h"
#include "ir/error.h"

typedef struct plan_ctx {
  const ge_mem_request *req;
  size_t n;
  const ge_memplan_opts *opts;
  size_t *asz;    /* aligned sizes */
  size_t *al;     /* alignments */
} plan_ctx;

static bool round_up(size_t x, size_t a, size_t *out) {
  if (x > SIZE_MAX - (a - 1)) return false;
  *out = (x + a - 1) & ~(a - 1);
  return true;
}

static bool hb(const ge_memplan_opts *o, uint32_t a, uint32_t b) {
  if (o && o->happens_before) return o->happens_before(o->hb_ctx, a, b);
  return a < b;
}

/* lifetimes of i and j conflict (they are live at a common point) */
static bool conflict(const plan_ctx *c, size_t i, size_t j) {
  if (c->opts && c->opts->no_reuse) return true;
  const ge_mem_request *a = &c->req[i], *b = &c->req[j];
  return !(hb(c->opts, a->last, b->first) || hb(c->opts, b->last, a->first));
}

static bool inplace_pair(const ge_mem_request *req, size_t i, size_t j) {
  return (req[i].inplace_of == (int32_t)j && req[j].last == req[i].first) ||
         (req[j].inplace_of == (int32_t)i && req[i].last == req[j].first);
}

typedef struct range {
  size_t off, end;
  bool partner; /* an in-place partner of the buffer being placed */
} range;

static int cmp_range(const void *a, const void *b) {
  const range *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

/* Places buffers in `order`; returns false on arena overflow. */
static bool place(const plan_ctx *c, const size_t *order, size_t *off, bool *placed, range *tmp,
                  size_t *arena_out) {
  size_t n = c->n, arena = 0;
  memset(placed, 0, n * sizeof *placed);
  for (size_t oi = 0; oi < n; oi++) {
    size_t i = order[oi];
    size_t sz = c->asz[i], al = c->al[i];
    off[i] = 0;
    placed[i] = true;
    if (sz == 0) continue;
    size_t nr = 0;
    for (size_t j = 0; j < n; j++)
      if (placed[j] && j != i && c->asz[j] && conflict(c, i, j))
        tmp[nr++] = (range){off[j], off[j] + c->asz[j], !(c->opts && c->opts->no_reuse) && inplace_pair(c->req, i, j)};
    qsort(tmp, nr, sizeof *tmp, cmp_range);
    /* in place at a partner's offset when nothing else is in the way */
    bool done = false;
    for (size_t q = 0; q < nr && !done; q++) {
      if (!tmp[q].partner || tmp[q].off % al) continue;
      size_t p = tmp[q].off;
      bool free_ = true;
      for (size_t r = 0; r < nr && free_; r++)
        if (!(tmp[r].partner && tmp[r].off == p) && tmp[r].off < p + sz && p < tmp[r].end) free_ = false;
      if (free_) {
        off[i] = p;
        if (p + sz > arena) arena = p + sz;
        done = true;
      }
    }
    if (done) continue;
    size_t cur = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (size_t r = 0; r < nr; r++) {
      size_t a;
      if (tmp[r].off > cur && round_up(cur, al, &a) && a <= tmp[r].off && tmp[r].off - a >= sz) {
        size_t gap = tmp[r].off - cur;
        if (gap < best_gap) {
          best_gap = gap;
          best = a;
        }
      }
      if (tmp[r].end > cur) cur = tmp[r].end;
    }
    if (best == SIZE_MAX) {
      if (!round_up(cur, al, &best)) return false;
    }
    if (best > SIZE_MAX - sz) return false;
    off[i] = best;
    if (best + sz > arena) arena = best + sz;
  }
  *arena_out = arena;
  return true;
}

/* "Ping-pong" placement in order of first use against a target arena `limit` (the lower
   bound): each buffer goes to the side (bottom or top of the target) opposite to the most
   recent buffer it conflicts with.  Optimal on chains (each buffer overlaps its neighbours
   only); falls back to the lowest gap, then to the end. */
static bool place_pingpong(const plan_ctx *c, const size_t *order, size_t *off, bool *placed,
                           bool *top, range *tmp, size_t limit, size_t *arena_out) {
  size_t n = c->n, arena = 0;
  memset(placed, 0, n * sizeof *placed);
  for (size_t oi = 0; oi < n; oi++) {
    size_t i = order[oi];
    size_t sz = c->asz[i], al = c->al[i];
    off[i] = 0;
    top[i] = false;
    placed[i] = true;
    if (sz == 0) continue;
    size_t nr = 0, recent = SIZE_MAX;
    for (size_t j = 0; j < n; j++)
      if (placed[j] && j != i && c->asz[j] && conflict(c, i, j)) {
        tmp[nr++] = (range){off[j], off[j] + c->asz[j], false};
        if (recent == SIZE_MAX || c->req[j].first > c->req[recent].first) recent = j;
      }
    qsort(tmp, nr, sizeof *tmp, cmp_range);
    /* lowest fit */
    size_t cur = 0, low = SIZE_MAX, a;
    for (size_t r = 0; r < nr && low == SIZE_MAX; r++) {
      if (round_up(cur, al, &a) && a <= tmp[r].off && tmp[r].off - a >= sz) low = a;
      if (tmp[r].end > cur) cur = tmp[r].end;
    }
    if (low == SIZE_MAX && round_up(cur, al, &a)) low = a;
    /* highest fit below limit */
    size_t high = SIZE_MAX;
    cur = 0;
    for (size_t r = 0; r <= nr; r++) {
      size_t ge_ = r < nr ? tmp[r].off : limit;
      if (ge_ > limit) ge_ = limit;
      if (ge_ >= cur + sz) {
        size_t p = (ge_ - sz) & ~(al - 1);
        if (p >= cur && (high == SIZE_MAX || p > high)) high = p;
      }
      if (r < nr && tmp[r].end > cur) cur = tmp[r].end;
    }
    bool want_top = recent != SIZE_MAX && !top[recent];
    bool low_ok = low != SIZE_MAX && low <= limit && sz <= limit - low;
    if (want_top && high != SIZE_MAX) {
      off[i] = high;
      top[i] = true;
    } else if (low_ok || high == SIZE_MAX) {
      if (low == SIZE_MAX || low > SIZE_MAX - sz) return false;
      off[i] = low;
    } else {
      off[i] = high;
      top[i] = true;
    }
    if (off[i] + sz > arena) arena = off[i] + sz;
  }
  *arena_out = arena;
  return true;
}

typedef struct sort_ctx_item {
  size_t idx;
  uint64_t k1, k2;
} sort_item;

static int cmp_item(const void *a, const void *b) {
  const sort_item *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1; /* descending */
  if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx ? 1 : 0;
}

size_t ge_memplan_lower_bound(const ge_mem_request *req, size_t n) {
  uint32_t max_step = 0;
  for (size_t i = 0; i < n; i++)
    if (req[i].last > max_step) max_step = req[i].last;
  if (n == 0) return 0;
  size_t ns = (size_t)max_step + 2;
  size_t *delta_add = calloc(ns, sizeof *delta_add), *delta_sub = calloc(ns, sizeof *delta_sub);
  size_t *shared = calloc(ns, sizeof *shared); /* bytes of in-place pairs counted twice at a step */
  size_t best = 0;
  if (delta_add && delta_sub && shared) {
    for (size_t i = 0; i < n; i++) {
      size_t al = req[i].align ? req[i].align : GE_MEMPLAN_ALIGN, sz;
      if (!round_up(req[i].size, al, &sz)) sz = SIZE_MAX / 2;
      delta_add[req[i].first] += sz;
      delta_sub[req[i].last + 1] += sz;
      int32_t j = req[i].inplace_of;
      if (j >= 0 && (size_t)j < n && req[j].last == req[i].first) {
        size_t al2 = req[j].align ? req[j].align : GE_MEMPLAN_ALIGN, sz2;
        if (!round_up(req[j].size, al2, &sz2)) sz2 = SIZE_MAX / 2;
        shared[req[i].first] += sz < sz2 ? sz : sz2;
      }
    }
    size_t live = 0;
    for (size_t s = 0; s < ns; s++) {
      live = live + delta_add[s] - delta_sub[s];
      size_t here = live - (shared[s] < live ? shared[s] : live);
      if (here > best) best = here;
    }
  }
  free(delta_add);
  free(delta_sub);
  free(shared);
  return best;
}

void ge_memplan_free(ge_mem_plan *p) {
  if (!p) return;
  free(p->offsets);
  memset(p, 0, sizeof *p);
}

static ge_status validate(const ge_mem_request *req, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const ge_mem_request *r = &req[i];
    if (r->last < r->first)
      return ge_error(GE_ERR_INVALID_ARGUMENT, "memory plan: buffer %zu dies at step %u before it is made at step %u",
                      i, r->last, r->first);
    if (r->align & (r->align - 1))
      return ge_error(GE_ERR_INVALID_ARGUMENT, "memory plan: buffer %zu: alignment %zu is not a power of two", i, r->align);
    if (r->inplace_of != GE_MEMPLAN_NONE) {
      if (r->inplace_of < 0 || (size_t)r->inplace_of >= n || (size_t)r->inplace_of == i)
        return ge_error(GE_ERR_INVALID_ARGUMENT, "memory plan: buffer %zu: bad in-place partner %d", i, (int)r->inplace_of);
    }
  }
  return GE_OK;
}

ge_status ge_memplan_compute(const ge_mem_request *req, size_t n, const ge_memplan_opts *opts,
                             ge_mem_plan *out) {
  memset(out, 0, sizeof *out);
  GE_CHECK(validate(req, n));
  out->n = n;
  out->lower_bound = ge_memplan_lower_bound(req, n);
  out->offsets = calloc(n + 1, sizeof *out->offsets);
  plan_ctx c = {.req = req, .n = n, .opts = opts};
  c.asz = calloc(n + 1, sizeof *c.asz);
  c.al = calloc(n + 1, sizeof *c.al);
  size_t *off = calloc(n + 1, sizeof *off);
  size_t *order = calloc(n + 1, sizeof *order);
  bool *placed = calloc(n + 1, sizeof *placed);
  bool *top = calloc(n + 1, sizeof *top);
  range *tmp = calloc(n + 1, sizeof *tmp);
  sort_item *items = calloc(n + 1, sizeof *items);
  ge_status st = GE_OK;
  if (!out->offsets || !c.asz || !c.al || !off || !order || !placed || !top || !tmp || !items) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning %zu buffers", n);
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    c.al[i] = req[i].align ? req[i].align : GE_MEMPLAN_ALIGN;
    if (!round_up(req[i].size, c.al[i], &c.asz[i])) {
      st = ge_error(GE_ERR_OUT_OF_MEMORY, "memory plan: buffer %zu: size %zu overflows", i, req[i].size);
      goto done;
    }
  }
  static const char *const names[] = {"size", "first_use", "lifetime", "area", "ping_pong"};
  size_t best = SIZE_MAX;
  for (int s = 0; s < 5; s++) {
    for (size_t i = 0; i < n; i++) {
      uint64_t len = (uint64_t)req[i].last - req[i].first + 1, sz = c.asz[i];
      items[i].idx = i;
      switch (s) {
      case 0: items[i].k1 = sz; items[i].k2 = len; break;
      case 1: case 4: items[i].k1 = UINT64_MAX - req[i].first; items[i].k2 = sz; break;
      case 2: items[i].k1 = len; items[i].k2 = sz; break;
      default: items[i].k1 = sz * len; items[i].k2 = sz; break;
      }
    }
    qsort(items, n, sizeof *items, cmp_item);
    for (size_t i = 0; i < n; i++) order[i] = items[i].idx;
    size_t arena;
    bool ok = s == 4 ? place_pingpong(&c, order, off, placed, top, tmp, out->lower_bound, &arena)
                     : place(&c, order, off, placed, tmp, &arena);
    if (!ok) continue;
    if (arena < best) {
      best = arena;
      memcpy(out->offsets, off, n * sizeof *off);
      out->strategy = names[s];
    }
    if (best == out->lower_bound) break;
  }
  if (best == SIZE_MAX) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "memory plan: the arena size overflows");
    goto done;
  }
  out->arena = best;
done:
  free(c.asz);
  free(c.al);
  free(off);
  free(order);
  free(placed);
  free(top);
  free(tmp);
  free(items);
  if (st != GE_OK) ge_memplan_free(out);
  return st;
}

ge_status ge_memplan_check(const ge_mem_request *req, size_t n, const ge_memplan_opts *opts,
                           const ge_mem_plan *plan) {
  if (!plan || plan->n != n || (n && !plan->offsets))
    return ge_error(GE_ERR_INTERNAL, "memory plan check: the plan does not cover %zu buffers", n);
  plan_ctx c = {.req = req, .n = n, .opts = opts};
  for (size_t i = 0; i < n; i++) {
    size_t al = req[i].align ? req[i].align : GE_MEMPLAN_ALIGN;
    if (plan->offsets[i] % al)
      return ge_error(GE_ERR_INTERNAL, "memory plan check: buffer %zu at offset %zu is not %zu-aligned", i,
                      plan->offsets[i], al);
    if (plan->offsets[i] > plan->arena || req[i].size > plan->arena - plan->offsets[i])
      return ge_error(GE_ERR_INTERNAL, "memory plan check: buffer %zu [%zu, +%zu) exceeds the arena of %zu",
                      i, plan->offsets[i], req[i].size, plan->arena);
  }
  /* Sweep by offset: sort buffers by start, compare each with those whose range is still open. */
  size_t *idx = malloc((n + 1) * sizeof *idx);
  if (!idx) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory checking a memory plan");
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (req[i].size) idx[m++] = i;
  /* insertion-free: simple O(m^2) pair check, m is small in tests; fine for debug builds */
  ge_status st = GE_OK;
  for (size_t a = 0; a < m && st == GE_OK; a++)
    for (size_t b = a + 1; b < m; b++) {
      size_t i = idx[a], j = idx[b];
      size_t oi = plan->offsets[i], oj = plan->offsets[j];
      bool mem = oi < oj + req[j].size && oj < oi + req[i].size;
      if (!mem || !conflict(&c, i, j)) continue;
      if (inplace_pair(req, i, j) && oi == oj) continue;
      st = ge_error(GE_ERR_INTERNAL,
                    "memory plan check: buffers %zu [%zu, +%zu) live %u..%u and %zu [%zu, +%zu) live %u..%u overlap",
                    i, oi, req[i].size, req[i].first, req[i].last, j, oj, req[j].size, req[j].first, req[j].last);
      break;
    }
  free(idx);
  return st;
}

ge_status ge_memplan_plan_requests(const ge_plan *p, ge_mem_request **req_out, uint32_t **slots_out,
                                   size_t *n_out) {
  *req_out = NULL;
  *slots_out = NULL;
  *n_out = 0;
  size_t ns = p->n_slots;
  int64_t *first = malloc((ns + 1) * sizeof *first), *last = malloc((ns + 1) * sizeof *last);
  bool *is_out = calloc(ns + 1, sizeof *is_out);
  ge_mem_request *req = calloc(ns + 1, sizeof *req);
  uint32_t *slots = calloc(ns + 1, sizeof *slots);
  if (!first || !last || !is_out || !req || !slots) {
    free(first);
    free(last);
    free(is_out);
    free(req);
    free(slots);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning memory");
  }
  for (size_t v = 0; v < ns; v++) first[v] = last[v] = -1;
  for (size_t i = 0; i < p->n_outputs; i++) is_out[p->outputs[i]] = true;
  for (size_t si = 0; si < p->n_steps; si++) {
    const ge_step *s = &p->steps[si];
    for (uint32_t o = 0; o < s->n_out; o++)
      if (s->out[o] != GE_SLOT_NONE && first[s->out[o]] < 0) first[s->out[o]] = last[s->out[o]] = (int64_t)si;
    for (uint32_t i = 0; i < s->n_in; i++)
      if (s->in[i] != GE_SLOT_NONE && first[s->in[i]] >= 0) last[s->in[i]] = (int64_t)si;
  }
  /* a viewed buffer lives until the last reader of its views (compiler/program.h) */
  for (size_t v = 0; v < ns; v++) {
    int32_t r = p->alias_of ? p->alias_of[v] : -1;
    if (r >= 0 && first[r] >= 0 && last[v] > last[r]) last[r] = last[v];
    if (r >= 0 && is_out[v]) is_out[r] = true;
  }
  size_t n = 0;
  ge_status st = GE_OK;
  for (size_t v = 0; v < ns; v++) {
    const ge_slot *sl = &p->slots[v];
    if (first[v] < 0 || is_out[v] || sl->constant || sl->input_index >= 0) continue;
    if (p->alias_of && p->alias_of[v] >= 0) continue; /* a view: no buffer of its own */
    const ge_type *t = &sl->type;
    size_t numel, bytes;
    if (t->kind != GE_TYPE_TENSOR || t->dtype == GE_DTYPE_COUNT || t->dtype == GE_STRING ||
        !ge_shape_numel(&t->shape, &numel))
      continue;
    if (ge_mul_overflow_size(numel, ge_dtype_size(t->dtype), &bytes)) {
      st = ge_error(GE_ERR_OUT_OF_MEMORY, "value '%s' is too large to plan", p->graph->values[v].name);
      break;
    }
    req[n] = (ge_mem_request){.size = bytes, .first = (uint32_t)first[v], .last = (uint32_t)last[v],
                              .align = GE_MEMPLAN_ALIGN, .inplace_of = GE_MEMPLAN_NONE};
    slots[n++] = (uint32_t)v;
  }
  free(first);
  free(last);
  free(is_out);
  if (st != GE_OK) {
    free(req);
    free(slots);
    return st;
  }
  *req_out = req;
  *slots_out = slots;
  *n_out = n;
  return GE_OK;
}
