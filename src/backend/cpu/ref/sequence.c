/* Sequence and optional kernels.  Values are ge_seqval slots (backend/kernel.h); every
 * kernel builds a new value (inputs are never modified) and hands it to its output. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/control_util.h"

static ge_status new_value(ge_kctx *c, ge_type_kind kind, ge_dtype elem, bool elem_is_seq,
                           ge_tensor **t, ge_seqval **s) {
  *t = calloc(1, sizeof **t);
  if (!*t) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = ge_value_init_seq(*t, kind, elem, elem_is_seq, s);
  if (st != GE_OK) {
    free(*t);
    *t = NULL;
  }
  return st;
}

static ge_status get_seq(ge_kctx *c, size_t i, const ge_seqval **out) {
  const ge_seqval *s = i < c->n_in ? ge_value_seq(c->in[i]) : NULL;
  if (!s || s->kind != GE_TYPE_SEQUENCE)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu must be a sequence", i);
  *out = s;
  return GE_OK;
}

static ge_status get_tensor(ge_kctx *c, size_t i, const ge_tensor **out) {
  const ge_tensor *t = i < c->n_in ? c->in[i] : NULL;
  if (!t || ge_value_seq(t)) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu must be a tensor", i);
  *out = t;
  return GE_OK;
}

/* A position input (scalar int) normalised into [0, n] (allow_end) or [0, n). */
static ge_status get_pos(ge_kctx *c, size_t i, size_t n, bool allow_end, size_t *pos) {
  const ge_tensor *t = c->in[i];
  if (ge_value_seq(t) || t->numel != 1 || (t->dtype != GE_I32 && t->dtype != GE_I64))
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "position must be an int32/int64 scalar");
  int64_t p = ge_tensor_get_i64(t, 0), len = (int64_t)n;
  if (p < 0) p += len;
  if (p < 0 || p > len || (p == len && !allow_end))
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "position %lld is out of range for a sequence of %zu",
                        (long long)ge_tensor_get_i64(t, 0), n);
  *pos = (size_t)p;
  return GE_OK;
}

/* A copy of s: tensor items share their (read-only) storage, no data is copied. */
static ge_status copy_seq(ge_kctx *c, const ge_seqval *s, ge_tensor **t, ge_seqval **d) {
  GE_CHECK(new_value(c, s->kind, s->elem, s->elem_is_seq, t, d));
  ge_status st = GE_OK;
  for (size_t i = 0; i < s->n && st == GE_OK; i++) {
    ge_tensor *it = NULL;
    st = ge_value_seq(s->items[i]) ? ge_value_clone(s->items[i], &it) : ge_tensor_share(s->items[i], &it);
    if (st == GE_OK) st = ge_seqval_insert(*d, (*d)->n, it);
  }
  if (st != GE_OK) {
    ge_tensor_free(*t);
    *t = NULL;
  }
  return st;
}

static ge_status finish(ge_kctx *c, size_t o, ge_tensor *t, ge_status st) {
  if (st != GE_OK) {
    ge_tensor_free(t);
    return st;
  }
  return ge_kctx_set_output(c, o, t);
}

static ge_status run_seq_empty(const void *state, ge_kctx *c) {
  (void)state;
  ge_dtype dt = GE_F32;
  const ge_attr_value *a = ge_node_attr(c->node, "dtype");
  if (a && a->kind == GE_ATTR_KIND_INT && !ge_dtype_from_onnx((int32_t)a->i, &dt))
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "dtype %lld is not supported", (long long)a->i);
  ge_tensor *t = NULL;
  GE_CHECK(new_value(c, GE_TYPE_SEQUENCE, dt, false, &t, NULL));
  return ge_kctx_set_output(c, 0, t);
}

static ge_status run_seq_construct(const void *state, ge_kctx *c) {
  (void)state;
  const ge_tensor *x = NULL;
  GE_CHECK(get_tensor(c, 0, &x));
  ge_tensor *t = NULL;
  ge_seqval *s = NULL;
  GE_CHECK(new_value(c, GE_TYPE_SEQUENCE, x->dtype, false, &t, &s));
  ge_status st = GE_OK;
  for (size_t i = 0; i < c->node->n_inputs && st == GE_OK; i++) {
    st = get_tensor(c, i, &x);
    if (st == GE_OK && x->dtype != s->elem)
      st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu has dtype %s, input 0 %s", i,
                        ge_dtype_name(x->dtype), ge_dtype_name(s->elem));
    ge_tensor *it = NULL;
    if (st == GE_OK) st = ge_tensor_clone(x, &it);
    if (st == GE_OK) st = ge_seqval_insert(s, s->n, it);
  }
  return finish(c, 0, t, st);
}

static ge_status run_seq_at(const void *state, ge_kctx *c) {
  (void)state;
  const ge_seqval *s = NULL;
  size_t pos = 0;
  GE_CHECK(get_seq(c, 0, &s));
  if (!c->in[1]) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "position is missing");
  GE_CHECK(get_pos(c, 1, s->n, false, &pos));
  ge_tensor *t = NULL;
  GE_CHECK(ge_value_clone(s->items[pos], &t));
  return ge_kctx_set_output(c, 0, t);
}

static ge_status run_seq_insert(const void *state, ge_kctx *c) {
  (void)state;
  const ge_seqval *s = NULL;
  const ge_tensor *x = NULL;
  GE_CHECK(get_seq(c, 0, &s));
  GE_CHECK(get_tensor(c, 1, &x));
  if (s->elem != GE_DTYPE_COUNT && s->n && x->dtype != s->elem)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "inserting a %s tensor into a sequence of %s",
                        ge_dtype_name(x->dtype), ge_dtype_name(s->elem));
  size_t pos = s->n;
  if (c->n_in > 2 && c->node->n_inputs > 2 && c->in[2]) GE_CHECK(get_pos(c, 2, s->n, true, &pos));
  ge_tensor *t = NULL, *it = NULL;
  ge_seqval *d = NULL;
  GE_CHECK(copy_seq(c, s, &t, &d));
  d->elem = x->dtype;
  ge_status st = ge_tensor_clone(x, &it);
  if (st == GE_OK) st = ge_seqval_insert(d, pos, it);
  return finish(c, 0, t, st);
}

static ge_status run_seq_erase(const void *state, ge_kctx *c) {
  (void)state;
  const ge_seqval *s = NULL;
  GE_CHECK(get_seq(c, 0, &s));
  if (!s->n) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "erasing from an empty sequence");
  size_t pos = s->n - 1;
  if (c->node->n_inputs > 1 && c->in[1]) GE_CHECK(get_pos(c, 1, s->n, false, &pos));
  ge_tensor *t = NULL;
  ge_seqval *d = NULL;
  GE_CHECK(copy_seq(c, s, &t, &d));
  ge_tensor_free(d->items[pos]);
  memmove(&d->items[pos], &d->items[pos + 1], (d->n - pos - 1) * sizeof *d->items);
  d->n--;
  return ge_kctx_set_output(c, 0, t);
}

static ge_status run_seq_length(const void *state, ge_kctx *c) {
  (void)state;
  const ge_seqval *s = NULL;
  GE_CHECK(get_seq(c, 0, &s));
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(GE_I64, NULL, 0, &t));
  *(int64_t *)t->data = (int64_t)s->n;
  return ge_kctx_set_output(c, 0, t);
}

/* A copy of src's slice [start, start + len) along axis (kept, or dropped when squeeze). */
static ge_status take_range(const ge_tensor *src, int32_t axis, int64_t start, int64_t len, bool squeeze,
                            ge_tensor **out) {
  int64_t dims[GE_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d < src->rank; d++) {
    if (d == axis && squeeze) continue;
    dims[r++] = d == axis ? len : src->dims[d];
  }
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(src->dtype, dims, (size_t)r, &t));
  size_t outer = 1, inner = 1, D = (size_t)src->dims[axis];
  for (int32_t d = 0; d < axis; d++) outer *= (size_t)src->dims[d];
  for (int32_t d = axis + 1; d < src->rank; d++) inner *= (size_t)src->dims[d];
  size_t row = (size_t)len * inner, es = ge_dtype_size(src->dtype);
  for (size_t o = 0; o < outer; o++) {
    size_t si = (o * D + (size_t)start) * inner, di = o * row;
    if (src->dtype == GE_STRING) {
      char **dd = (char **)t->data;
      char *const *ss = (char *const *)src->data;
      for (size_t k = 0; k < row; k++)
        if (ss[si + k] && !(dd[di + k] = strdup(ss[si + k]))) {
          ge_tensor_free(t);
          return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory splitting strings");
        }
    } else if (row) {
      memcpy((char *)t->data + di * es, (const char *)src->data + si * es, row * es);
    }
  }
  *out = t;
  return GE_OK;
}

static ge_status run_split_to_seq(const void *state, ge_kctx *c) {
  (void)state;
  const ge_tensor *x = NULL;
  GE_CHECK(get_tensor(c, 0, &x));
  int64_t ax = ge_node_attr_int(c->node, "axis", 0);
  if (ax < 0) ax += x->rank;
  if (ax < 0 || ax >= x->rank)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                        (long long)ge_node_attr_int(c->node, "axis", 0), (int)x->rank);
  int64_t D = x->dims[ax];
  const ge_tensor *sp = c->node->n_inputs > 1 ? c->in[1] : NULL;
  bool keep = ge_node_attr_int(c->node, "keepdims", 1) != 0;
  ge_tensor *t = NULL;
  ge_seqval *s = NULL;
  GE_CHECK(new_value(c, GE_TYPE_SEQUENCE, x->dtype, false, &t, &s));
  ge_status st = GE_OK;
  if (!sp) {
    for (int64_t i = 0; i < D && st == GE_OK; i++) {
      ge_tensor *it = NULL;
      st = take_range(x, (int32_t)ax, i, 1, !keep, &it);
      if (st == GE_OK) st = ge_seqval_insert(s, s->n, it);
    }
  } else if (sp->rank == 0) {
    int64_t chunk = ge_tensor_get_i64(sp, 0);
    if (chunk <= 0) st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "split %lld must be positive", (long long)chunk);
    for (int64_t i = 0; st == GE_OK && i < D; i += chunk) {
      ge_tensor *it = NULL;
      st = take_range(x, (int32_t)ax, i, D - i < chunk ? D - i : chunk, false, &it);
      if (st == GE_OK) st = ge_seqval_insert(s, s->n, it);
    }
  } else {
    int64_t at = 0;
    for (size_t k = 0; k < sp->numel && st == GE_OK; k++) {
      int64_t len = ge_tensor_get_i64(sp, k);
      if (len < 0 || len > D - at) {
        st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "split sizes do not sum to %lld", (long long)D);
        break;
      }
      ge_tensor *it = NULL;
      st = take_range(x, (int32_t)ax, at, len, false, &it);
      if (st == GE_OK) st = ge_seqval_insert(s, s->n, it);
      at += len;
    }
    if (st == GE_OK && at != D)
      st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "split sizes sum to %lld, the axis has %lld",
                        (long long)at, (long long)D);
  }
  return finish(c, 0, t, st);
}

static ge_status run_concat_from_seq(const void *state, ge_kctx *c) {
  (void)state;
  const ge_seqval *s = NULL;
  GE_CHECK(get_seq(c, 0, &s));
  if (!s->n) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "the sequence is empty");
  bool new_axis = ge_node_attr_int(c->node, "new_axis", 0) != 0;
  const ge_tensor *x0 = s->items[0];
  int64_t ax = ge_node_attr_int(c->node, "axis", 0);
  int32_t r = x0->rank + (new_axis ? 1 : 0);
  if (ax < 0) ax += r;
  if (ax < 0 || ax >= r || (r == 0))
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range",
                        (long long)ge_node_attr_int(c->node, "axis", 0));
  ge_tensor *t = NULL;
  if (new_axis) {
    GE_CHECK(ge_cf_stack(s->items, s->n, (int32_t)ax, false, c, &t));
    return ge_kctx_set_output(c, 0, t);
  }
  int64_t total = 0;
  for (size_t i = 0; i < s->n; i++) {
    const ge_tensor *x = s->items[i];
    bool ok = x->rank == x0->rank && x->dtype == x0->dtype;
    for (int32_t d = 0; ok && d < x0->rank; d++) ok = d == ax || x->dims[d] == x0->dims[d];
    if (!ok) return ge_kctx_fail(c, GE_ERR_SHAPE, "sequence item %zu does not match item 0 off axis %lld", i, (long long)ax);
    total += x->dims[ax];
  }
  int64_t dims[GE_MAX_RANK];
  memcpy(dims, x0->dims, sizeof dims);
  dims[ax] = total;
  GE_CHECK(ge_tensor_create(x0->dtype, dims, (size_t)x0->rank, &t));
  size_t outer = 1, inner = 1, es = ge_dtype_size(x0->dtype);
  for (int32_t d = 0; d < ax; d++) outer *= (size_t)x0->dims[d];
  for (int32_t d = (int32_t)ax + 1; d < x0->rank; d++) inner *= (size_t)x0->dims[d];
  size_t row = (size_t)total * inner, at = 0;
  for (size_t i = 0; i < s->n; i++) {
    const ge_tensor *x = s->items[i];
    size_t w = (size_t)x->dims[ax] * inner;
    for (size_t o = 0; o < outer; o++) {
      if (x0->dtype == GE_STRING) {
        char **dd = (char **)t->data;
        char *const *ss = (char *const *)x->data;
        for (size_t k = 0; k < w; k++)
          if (ss[o * w + k] && !(dd[o * row + at + k] = strdup(ss[o * w + k]))) {
            ge_tensor_free(t);
            return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
          }
      } else if (w) {
        memcpy((char *)t->data + (o * row + at) * es, (const char *)x->data + o * w * es, w * es);
      }
    }
    at += w;
  }
  return ge_kctx_set_output(c, 0, t);
}

/* ------------------------------------------------------------------ SequenceMap */

typedef struct map_state {
  ge_subgraph *body;
} map_state;

static void release_map(void *state) {
  map_state *m = state;
  if (!m) return;
  ge_subgraph_free(m->body);
  free(m);
}

static ge_status prepare_map(const ge_prepare_ctx *p, void **state) {
  const ge_attr_value *a = ge_node_attr(p->node, "body");
  map_state *m = calloc(1, sizeof *m);
  if (!m) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = ge_subgraph_create(p, a && a->kind == GE_ATTR_KIND_GRAPH ? a->g : NULL, &m->body);
  if (st != GE_OK) {
    free(m);
    return st;
  }
  *state = m;
  return GE_OK;
}

static ge_status run_seq_map(const void *state, ge_kctx *c) {
  const map_state *m = state;
  const ge_seqval *s0 = NULL;
  GE_CHECK(get_seq(c, 0, &s0));
  size_t n_in = c->node->n_inputs, n_out = c->n_out;
  for (size_t j = 1; j < n_in; j++) {
    const ge_seqval *sj = ge_value_seq(c->in[j]);
    if (!c->in[j]) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu is missing", j);
    if (sj && (sj->kind != GE_TYPE_SEQUENCE || sj->n != s0->n))
      return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu is a sequence of another length", j);
  }
  ge_tensor **res = calloc(n_out + 1, sizeof *res);
  ge_seqval **rs = calloc(n_out + 1, sizeof *rs);
  ge_tensor **bin = calloc(n_in + 1, sizeof *bin);
  ge_tensor **bout = calloc(n_out + 1, sizeof *bout);
  ge_status st = res && rs && bin && bout ? GE_OK : ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t o = 0; o < n_out && st == GE_OK; o++) {
    ge_dtype dt = c->out[o] ? GE_DTYPE_COUNT : GE_F32;
    st = new_value(c, GE_TYPE_SEQUENCE, dt, false, &res[o], &rs[o]);
  }
  for (size_t i = 0; i < s0->n && st == GE_OK; i++) {
    for (size_t j = 0; j < n_in; j++) {
      const ge_seqval *sj = ge_value_seq(c->in[j]);
      bin[j] = sj ? sj->items[i] : c->in[j];
    }
    st = ge_kctx_run_subgraph(c, m->body, bin, n_in, bout, n_out);
    for (size_t o = 0; o < n_out && st == GE_OK; o++) {
      if (ge_value_seq(bout[o])) {
        st = ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "body output %zu is not a tensor", o);
        break;
      }
      rs[o]->elem = bout[o]->dtype;
      st = ge_seqval_insert(rs[o], rs[o]->n, bout[o]);
      bout[o] = NULL;
    }
    for (size_t o = 0; o < n_out; o++) {
      ge_tensor_free(bout[o]);
      bout[o] = NULL;
    }
  }
  for (size_t o = 0; o < n_out && st == GE_OK; o++) {
    st = ge_kctx_set_output(c, o, res[o]);
    res[o] = NULL;
  }
  for (size_t o = 0; res && o < n_out; o++) ge_tensor_free(res[o]);
  free(res);
  free(rs);
  free(bin);
  free(bout);
  return st;
}

/* ------------------------------------------------------------------ optionals */

/* The element type of an empty optional, from the `type` attribute (TYPE_PROTO). */
typedef struct optional_state {
  ge_dtype dtype;
  bool is_seq;
} optional_state;

static ge_status prepare_optional(const ge_prepare_ctx *p, void **state) {
  optional_state *o = calloc(1, sizeof *o);
  if (!o) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  o->dtype = GE_F32;
  const ge_attr_value *a = ge_node_attr(p->node, "type");
  if (a && a->type_attr) {
    const ge_type *ty = a->type_attr;
    if ((ty->kind != GE_TYPE_TENSOR && ty->kind != GE_TYPE_SEQUENCE) || ty->dtype >= GE_DTYPE_COUNT) {
      free(o);
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED,
                             "attribute 'type' must be a tensor or sequence type with a known element type");
    }
    o->dtype = ty->dtype;
    o->is_seq = ty->kind == GE_TYPE_SEQUENCE;
  }
  *state = o;
  return GE_OK;
}

static void release_optional(void *state) { free(state); }

static ge_status run_optional(const void *state, ge_kctx *c) {
  const optional_state *o = state;
  const ge_tensor *x = c->node->n_inputs ? c->in[0] : NULL;
  const ge_seqval *xs = ge_value_seq(x);
  if (xs && xs->kind == GE_TYPE_OPTIONAL)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 is already an optional");
  ge_tensor *t = NULL, *it = NULL;
  ge_seqval *s = NULL;
  ge_dtype edt = x ? (xs ? xs->elem : x->dtype) : (o ? o->dtype : GE_F32);
  bool eseq = x ? xs != NULL : (o && o->is_seq);
  GE_CHECK(new_value(c, GE_TYPE_OPTIONAL, edt, eseq, &t, &s));
  ge_status st = GE_OK;
  if (x) {
    st = ge_value_clone(x, &it);
    if (st == GE_OK) st = ge_seqval_insert(s, 0, it);
  }
  return finish(c, 0, t, st);
}

static ge_status run_opt_has(const void *state, ge_kctx *c) {
  (void)state;
  const ge_tensor *x = c->node->n_inputs ? c->in[0] : NULL;
  const ge_seqval *s = ge_value_seq(x);
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(GE_BOOL, NULL, 0, &t));
  *(bool *)t->data = x && (!s || s->kind != GE_TYPE_OPTIONAL || s->n > 0);
  return ge_kctx_set_output(c, 0, t);
}

static ge_status run_opt_get(const void *state, ge_kctx *c) {
  (void)state;
  const ge_tensor *x = c->in[0];
  const ge_seqval *s = ge_value_seq(x);
  if (!x) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 is missing");
  if (s && s->kind == GE_TYPE_OPTIONAL) {
    if (!s->n) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "the optional is empty");
    x = s->items[0];
  }
  ge_tensor *t = NULL;
  GE_CHECK(ge_value_clone(x, &t));
  return ge_kctx_set_output(c, 0, t);
}

#define K(p, r, rel) {(p), (r), (rel), true}

const ge_kernel_def ge_ref_kernels_sequence[] = {
    {"", "SequenceEmpty", 11, 0, K(NULL, run_seq_empty, NULL)},
    {"", "SequenceConstruct", 11, 0, K(NULL, run_seq_construct, NULL)},
    {"", "SequenceAt", 11, 0, K(NULL, run_seq_at, NULL)},
    {"", "SequenceInsert", 11, 0, K(NULL, run_seq_insert, NULL)},
    {"", "SequenceErase", 11, 0, K(NULL, run_seq_erase, NULL)},
    {"", "SequenceLength", 11, 0, K(NULL, run_seq_length, NULL)},
    {"", "SplitToSequence", 11, 0, K(NULL, run_split_to_seq, NULL)},
    {"", "ConcatFromSequence", 11, 0, K(NULL, run_concat_from_seq, NULL)},
    {"", "SequenceMap", 17, 0, K(prepare_map, run_seq_map, release_map)},
    {"", "Optional", 15, 0, K(prepare_optional, run_optional, release_optional)},
    {"", "OptionalHasElement", 15, 0, K(NULL, run_opt_has, NULL)},
    {"", "OptionalGetElement", 15, 0, K(NULL, run_opt_get, NULL)},
    {NULL, NULL, 0, 0, {NULL, NULL, NULL, false}},
};
