/* Owned attribute values: clear, deep copy (tensors, subgraphs), conversion from ge_attr. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

const char *ge_attr_kind_name(ge_attr_kind k) {
  switch (k) {
  case GE_ATTR_KIND_UNDEFINED: return "undefined";
  case GE_ATTR_KIND_FLOAT: return "float";
  case GE_ATTR_KIND_INT: return "int";
  case GE_ATTR_KIND_STRING: return "string";
  case GE_ATTR_KIND_TENSOR: return "tensor";
  case GE_ATTR_KIND_GRAPH: return "graph";
  case GE_ATTR_KIND_FLOATS: return "floats";
  case GE_ATTR_KIND_INTS: return "ints";
  case GE_ATTR_KIND_STRINGS: return "strings";
  case GE_ATTR_KIND_TENSORS: return "tensors";
  case GE_ATTR_KIND_GRAPHS: return "graphs";
  }
  return "unknown";
}

void ge_attr_value_clear(ge_attr_value *a) {
  if (!a) return;
  free(a->name);
  free(a->s);
  ge_tensor_free(a->t);
  ge_graph_free(a->g);
  free(a->floats);
  free(a->ints);
  if (a->strings)
    for (size_t i = 0; i < a->n; i++) free(a->strings[i]);
  free(a->strings);
  if (a->tensors)
    for (size_t i = 0; i < a->n; i++) ge_tensor_free(a->tensors[i]);
  free(a->tensors);
  if (a->graphs)
    for (size_t i = 0; i < a->n; i++) ge_graph_free(a->graphs[i]);
  free(a->graphs);
  free(a->ref_attr_name);
  free(a->doc);
  free(a->type_attr);
  memset(a, 0, sizeof *a);
}

static ge_status oom(const char *name) {
  return ge_error(GE_ERR_OUT_OF_MEMORY, "attribute '%s': out of memory", name ? name : "");
}

static char *dup_or_null(const char *s, bool *fail) {
  if (!s) return NULL;
  char *c = strdup(s);
  if (!c) *fail = true;
  return c;
}

/* Copies a byte string of length len (kept NUL-terminated). */
static char *dup_bytes(const char *s, size_t len, bool *fail) {
  if (!s) return NULL;
  char *c = malloc(len + 1);
  if (!c) {
    *fail = true;
    return NULL;
  }
  memcpy(c, s, len);
  c[len] = '\0';
  return c;
}

static void *dup_array(const void *src, size_t n, size_t elem, bool *fail) {
  if (!src || n == 0) return NULL;
  size_t bytes;
  if (ge_mul_overflow_size(n, elem, &bytes)) {
    *fail = true;
    return NULL;
  }
  void *p = malloc(bytes);
  if (!p) {
    *fail = true;
    return NULL;
  }
  memcpy(p, src, bytes);
  return p;
}

static void *zalloc_array(size_t n, size_t elem, bool *fail) {
  if (n == 0) return NULL;
  void *p = calloc(n, elem);
  if (!p) *fail = true;
  return p;
}

ge_status ge_attr_value_copy(ge_attr_value *dst, const ge_attr_value *src, ge_graph *parent) {
  if (!dst || !src) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_attr_value_copy: NULL argument");
  ge_attr_value a;
  memset(&a, 0, sizeof a);
  bool fail = false;
  ge_status st = GE_OK;
  a.kind = src->kind;
  a.f = src->f;
  a.i = src->i;
  a.n = src->n;
  a.s_len = src->s_len;
  a.name = dup_or_null(src->name, &fail);
  a.s = src->s ? dup_bytes(src->s, src->s_len ? src->s_len : strlen(src->s), &fail) : NULL;
  if (src->s && !src->s_len) a.s_len = strlen(src->s);
  a.ref_attr_name = dup_or_null(src->ref_attr_name, &fail);
  a.doc = dup_or_null(src->doc, &fail);
  a.type_attr = dup_array(src->type_attr, src->type_attr ? 1 : 0, sizeof *src->type_attr, &fail);
  if (src->t && !fail) st = ge_tensor_clone(src->t, &a.t);
  if (src->g && !fail && st == GE_OK) st = ge_graph_clone(src->g, parent, &a.g);
  if (!fail && st == GE_OK) {
    a.floats = dup_array(src->floats, src->n, sizeof(float), &fail);
    a.ints = dup_array(src->ints, src->n, sizeof(int64_t), &fail);
  }
  if (!fail && st == GE_OK && src->strings) {
    a.strings = zalloc_array(src->n, sizeof(char *), &fail);
    for (size_t i = 0; !fail && i < src->n; i++) a.strings[i] = dup_or_null(src->strings[i], &fail);
  }
  if (!fail && st == GE_OK && src->tensors) {
    a.tensors = zalloc_array(src->n, sizeof(ge_tensor *), &fail);
    for (size_t i = 0; !fail && st == GE_OK && i < src->n; i++)
      if (src->tensors[i]) st = ge_tensor_clone(src->tensors[i], &a.tensors[i]);
  }
  if (!fail && st == GE_OK && src->graphs) {
    a.graphs = zalloc_array(src->n, sizeof(ge_graph *), &fail);
    for (size_t i = 0; !fail && st == GE_OK && i < src->n; i++)
      if (src->graphs[i]) st = ge_graph_clone(src->graphs[i], parent, &a.graphs[i]);
  }
  if (fail || st != GE_OK) {
    if (st == GE_OK) st = oom(src->name);
    else ge_error_prefix(st, "copying attribute '%s': ", src->name ? src->name : "");
    ge_attr_value_clear(&a);
    return st;
  }
  *dst = a;
  return GE_OK;
}

ge_status ge_attr_value_from_public(ge_attr_value *dst, const ge_attr *src, ge_graph *parent) {
  if (!dst || !src) return ge_error(GE_ERR_INVALID_ARGUMENT, "attribute: NULL argument");
  if (!src->name || !src->name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "attribute of kind %s has no name",
                    ge_attr_kind_name(src->kind));
  const char *nm = src->name;
  ge_attr_value a;
  memset(&a, 0, sizeof a);
  bool fail = false;
  ge_status st = GE_OK;
  a.kind = src->kind;
  a.name = dup_or_null(nm, &fail);
  switch (src->kind) {
  case GE_ATTR_KIND_FLOAT: a.f = src->v.f; break;
  case GE_ATTR_KIND_INT: a.i = src->v.i; break;
  case GE_ATTR_KIND_STRING:
    if (!src->v.s) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': string is NULL", nm);
      break;
    }
    a.s_len = strlen(src->v.s);
    a.s = dup_bytes(src->v.s, a.s_len, &fail);
    break;
  case GE_ATTR_KIND_TENSOR:
    if (!src->v.t) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': tensor is NULL", nm);
      break;
    }
    st = ge_tensor_clone(src->v.t, &a.t);
    break;
  case GE_ATTR_KIND_GRAPH:
    if (!src->v.g) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': graph is NULL", nm);
      break;
    }
    st = ge_graph_clone(src->v.g, parent, &a.g);
    break;
  case GE_ATTR_KIND_FLOATS:
    if (!src->v.floats.data && src->v.floats.n) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': floats data is NULL for %zu elements",
                    nm, src->v.floats.n);
      break;
    }
    a.n = src->v.floats.n;
    a.floats = dup_array(src->v.floats.data, a.n, sizeof(float), &fail);
    break;
  case GE_ATTR_KIND_INTS:
    if (!src->v.ints.data && src->v.ints.n) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': ints data is NULL for %zu elements",
                    nm, src->v.ints.n);
      break;
    }
    a.n = src->v.ints.n;
    a.ints = dup_array(src->v.ints.data, a.n, sizeof(int64_t), &fail);
    break;
  case GE_ATTR_KIND_STRINGS:
    if (!src->v.strings.data && src->v.strings.n) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': strings data is NULL for %zu elements",
                    nm, src->v.strings.n);
      break;
    }
    a.n = src->v.strings.n;
    a.strings = zalloc_array(a.n, sizeof(char *), &fail);
    for (size_t i = 0; !fail && st == GE_OK && i < a.n; i++) {
      if (!src->v.strings.data[i])
        st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': string %zu is NULL", nm, i);
      else
        a.strings[i] = dup_or_null(src->v.strings.data[i], &fail);
    }
    break;
  case GE_ATTR_KIND_TENSORS:
    if (!src->v.tensors.data && src->v.tensors.n) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': tensors data is NULL for %zu elements",
                    nm, src->v.tensors.n);
      break;
    }
    a.n = src->v.tensors.n;
    a.tensors = zalloc_array(a.n, sizeof(ge_tensor *), &fail);
    for (size_t i = 0; !fail && st == GE_OK && i < a.n; i++) {
      if (!src->v.tensors.data[i])
        st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': tensor %zu is NULL", nm, i);
      else
        st = ge_tensor_clone(src->v.tensors.data[i], &a.tensors[i]);
    }
    break;
  case GE_ATTR_KIND_GRAPHS:
    if (!src->v.graphs.data && src->v.graphs.n) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': graphs data is NULL for %zu elements",
                    nm, src->v.graphs.n);
      break;
    }
    a.n = src->v.graphs.n;
    a.graphs = zalloc_array(a.n, sizeof(ge_graph *), &fail);
    for (size_t i = 0; !fail && st == GE_OK && i < a.n; i++) {
      if (!src->v.graphs.data[i])
        st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': graph %zu is NULL", nm, i);
      else
        st = ge_graph_clone(src->v.graphs.data[i], parent, &a.graphs[i]);
    }
    break;
  case GE_ATTR_KIND_UNDEFINED:
  default:
    st = ge_error(GE_ERR_INVALID_ARGUMENT, "attribute '%s': invalid kind %d", nm, (int)src->kind);
    break;
  }
  if (fail || st != GE_OK) {
    if (st == GE_OK) st = oom(nm);
    ge_attr_value_clear(&a);
    return st;
  }
  *dst = a;
  return GE_OK;
}
