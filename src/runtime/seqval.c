/* Sequence and optional values: a ge_tensor slot of dtype GE_DTYPE_SEQVAL whose data is a
 * ge_seqval (backend/kernel.h). */
#include <stdlib.h>
#include <string.h>

#include "backend/kernel.h"

static void seqval_free(ge_seqval *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) ge_tensor_free(s->items[i]);
  free(s->items);
  free(s);
}

static void seqval_release(void *data, void *ctx) {
  (void)ctx;
  seqval_free(data);
}

ge_seqval *ge_value_seq(const ge_tensor *t) {
  return t && t->dtype == GE_DTYPE_SEQVAL ? (ge_seqval *)t->data : NULL;
}

ge_status ge_value_init_seq(ge_tensor *slot, ge_type_kind kind, ge_dtype elem, bool elem_is_seq,
                            ge_seqval **out) {
  if (out) *out = NULL;
  if (kind != GE_TYPE_SEQUENCE && kind != GE_TYPE_OPTIONAL)
    return ge_error(GE_ERR_INTERNAL, "a sequence/optional value of kind %d", (int)kind);
  ge_seqval *s = calloc(1, sizeof *s);
  if (!s) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory creating a sequence");
  s->kind = kind;
  s->elem = elem;
  s->elem_is_seq = kind == GE_TYPE_OPTIONAL && elem_is_seq;
  ge_tensor_release_storage(slot);
  memset(slot, 0, sizeof *slot);
  slot->dtype = GE_DTYPE_SEQVAL;
  slot->data = s;
  slot->release = seqval_release;
  if (out) *out = s;
  return GE_OK;
}

ge_status ge_seqval_insert(ge_seqval *s, size_t pos, ge_tensor *item) {
  /* items are never written once in a sequence: their storage is shared (reference counted)
     so that copies of a sequence (SequenceInsert, SequenceErase, ...) copy no data */
  if (item && !ge_value_seq(item) && item->owns && item->dtype != GE_STRING) {
    ge_status st = ge_tensor_make_shared(item);
    if (st != GE_OK) {
      ge_tensor_free(item);
      return st;
    }
  }
  if (pos > s->n) {
    ge_tensor_free(item);
    return ge_error(GE_ERR_INVALID_ARGUMENT, "sequence position %zu is out of range (length %zu)",
                    pos, s->n);
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4;
    ge_tensor **p = cap > SIZE_MAX / sizeof *p ? NULL : realloc(s->items, cap * sizeof *p);
    if (!p) {
      ge_tensor_free(item);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory growing a sequence");
    }
    s->items = p;
    s->cap = cap;
  }
  memmove(&s->items[pos + 1], &s->items[pos], (s->n - pos) * sizeof *s->items);
  s->items[pos] = item;
  s->n++;
  return GE_OK;
}

ge_status ge_value_clone(const ge_tensor *t, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_value_clone: out is NULL");
  *out = NULL;
  const ge_seqval *s = ge_value_seq(t);
  if (!s) return ge_tensor_clone(t, out);
  ge_tensor *c = calloc(1, sizeof *c);
  if (!c) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory copying a sequence");
  ge_seqval *d = NULL;
  ge_status st = ge_value_init_seq(c, s->kind, s->elem, s->elem_is_seq, &d);
  for (size_t i = 0; st == GE_OK && i < s->n; i++) {
    ge_tensor *it = NULL;
    st = ge_value_clone(s->items[i], &it);
    if (st == GE_OK) st = ge_seqval_insert(d, d->n, it);
  }
  if (st != GE_OK) {
    ge_tensor_free(c);
    return st;
  }
  *out = c;
  return GE_OK;
}

void ge_value_type(const ge_tensor *t, ge_type *ty) {
  memset(ty, 0, sizeof *ty);
  const ge_seqval *s = ge_value_seq(t);
  if (!s) {
    ty->kind = GE_TYPE_TENSOR;
    ty->dtype = t ? t->dtype : GE_DTYPE_COUNT;
    if (t) ge_tensor_shape(t, &ty->shape);
    else ge_shape_set_unknown(&ty->shape);
    return;
  }
  ty->kind = s->kind;
  ty->dtype = s->elem;
  ty->elem_is_seq = s->elem_is_seq;
  ge_shape_set_unknown(&ty->shape);
  if (s->kind == GE_TYPE_OPTIONAL) {
    if (s->n && !ge_value_seq(s->items[0])) ge_tensor_shape(s->items[0], &ty->shape);
    return;
  }
  for (size_t i = 0; i < s->n; i++) {
    ge_shape sh;
    ge_tensor_shape(s->items[i], &sh);
    if (i == 0) {
      ty->shape = sh;
    } else if (ty->shape.rank != sh.rank) {
      ge_shape_set_unknown(&ty->shape);
      break;
    } else {
      for (int32_t d = 0; d < sh.rank; d++)
        if (ty->shape.dims[d] != sh.dims[d]) ty->shape.dims[d] = GE_DIM_UNKNOWN;
    }
  }
}

ge_status ge_kctx_set_output(ge_kctx *c, size_t i, ge_tensor *t) {
  if (i >= c->n_out || !c->out[i]) {
    ge_tensor_free(t);
    return GE_OK; /* an omitted output: dropped */
  }
  ge_tensor_release_storage(c->out[i]);
  *c->out[i] = *t;
  free(t);
  return GE_OK;
}

/* ------------------------------------------------------------------ public API */

int ge_tensor_kind(const ge_tensor *t) {
  const ge_seqval *s = ge_value_seq(t);
  if (!s) return GE_KIND_TENSOR;
  return s->kind == GE_TYPE_SEQUENCE ? GE_KIND_SEQUENCE : GE_KIND_OPTIONAL;
}

ge_status ge_sequence_create(ge_dtype elem, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_sequence_create: out is NULL");
  *out = NULL;
  if (ge_dtype_size(elem) == 0)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_sequence_create: invalid element dtype %d", (int)elem);
  ge_tensor *t = calloc(1, sizeof *t);
  if (!t) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_sequence_create: out of memory");
  ge_status st = ge_value_init_seq(t, GE_TYPE_SEQUENCE, elem, false, NULL);
  if (st != GE_OK) {
    free(t);
    return st;
  }
  *out = t;
  return GE_OK;
}

ge_status ge_sequence_append(ge_tensor *seq, const ge_tensor *item) {
  ge_seqval *s = ge_value_seq(seq);
  if (!s || s->kind != GE_TYPE_SEQUENCE)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_sequence_append: not a sequence");
  if (!item || ge_value_seq(item))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_sequence_append: the item must be a tensor");
  if (item->dtype != s->elem)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_sequence_append: item dtype %s, the sequence holds %s",
                    ge_dtype_name(item->dtype), ge_dtype_name(s->elem));
  ge_tensor *c = NULL;
  GE_CHECK(ge_tensor_clone(item, &c));
  return ge_seqval_insert(s, s->n, c);
}

size_t ge_sequence_length(const ge_tensor *seq) {
  const ge_seqval *s = ge_value_seq(seq);
  return s && s->kind == GE_TYPE_SEQUENCE ? s->n : 0;
}

const ge_tensor *ge_sequence_at(const ge_tensor *seq, size_t i) {
  const ge_seqval *s = ge_value_seq(seq);
  return s && s->kind == GE_TYPE_SEQUENCE && i < s->n ? s->items[i] : NULL;
}

ge_status ge_optional_create(ge_dtype elem, const ge_tensor *value, ge_tensor **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_optional_create: out is NULL");
  *out = NULL;
  const ge_seqval *vs = ge_value_seq(value);
  if (vs && vs->kind != GE_TYPE_SEQUENCE)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_optional_create: an optional cannot hold an optional");
  ge_tensor *t = calloc(1, sizeof *t);
  if (!t) return ge_error(GE_ERR_OUT_OF_MEMORY, "ge_optional_create: out of memory");
  ge_seqval *s = NULL;
  ge_dtype dt = value ? (vs ? vs->elem : value->dtype) : elem;
  ge_status st = ge_value_init_seq(t, GE_TYPE_OPTIONAL, dt, vs != NULL, &s);
  if (st == GE_OK && value) {
    ge_tensor *c = NULL;
    st = ge_value_clone(value, &c);
    if (st == GE_OK) st = ge_seqval_insert(s, 0, c);
  }
  if (st != GE_OK) {
    ge_tensor_free(t);
    return st;
  }
  *out = t;
  return GE_OK;
}

const ge_tensor *ge_optional_value(const ge_tensor *opt) {
  const ge_seqval *s = ge_value_seq(opt);
  return s && s->kind == GE_TYPE_OPTIONAL && s->n ? s->items[0] : NULL;
}

ge_dtype ge_value_elem_dtype(const ge_tensor *t) {
  const ge_seqval *s = ge_value_seq(t);
  return s ? s->elem : ge_tensor_dtype(t);
}

static int kind_of_type(const ge_type *t) {
  return t->kind == GE_TYPE_SEQUENCE ? GE_KIND_SEQUENCE : t->kind == GE_TYPE_OPTIONAL ? GE_KIND_OPTIONAL : GE_KIND_TENSOR;
}

int ge_graph_input_kind(const ge_graph *g, size_t i) {
  if (!g) return -1;
  for (size_t k = 0; k < g->n_inputs; k++) {
    int32_t id = g->inputs[k];
    if (id < 0 || (size_t)id >= g->n_values || g->values[id].kind == GE_VALUE_CONSTANT) continue;
    if (i-- == 0) return kind_of_type(&g->values[id].type);
  }
  return -1;
}

int ge_graph_output_kind(const ge_graph *g, size_t i) {
  if (!g || i >= g->n_outputs || g->outputs[i] < 0 || (size_t)g->outputs[i] >= g->n_values) return -1;
  return kind_of_type(&g->values[g->outputs[i]].type);
}
