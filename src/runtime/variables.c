/* A session's variables (see variables.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/run_fx.h"
#include "runtime/variables.h"

struct ge_var_buf {
  ge_tensor *t;
  size_t refs; /* guarded by the store's mutex */
};

static ge_var_buf *buf_new(ge_tensor *t) {
  ge_var_buf *b = malloc(sizeof *b);
  if (!b) return NULL;
  b->t = t;
  b->refs = 1;
  return b;
}

static void buf_unref_locked(ge_var_buf *b) {
  if (b && --b->refs == 0) {
    ge_tensor_free(b->t);
    free(b);
  }
}

void ge_var_store_init(ge_var_store *vs) {
  memset(vs, 0, sizeof *vs);
  pthread_mutex_init(&vs->mu, NULL);
}

void ge_var_store_destroy(ge_var_store *vs) {
  for (size_t i = 0; i < vs->n; i++) {
    buf_unref_locked(vs->vars[i]->cur);
    free(vs->vars[i]->name);
    free(vs->vars[i]);
  }
  free(vs->vars);
  pthread_mutex_destroy(&vs->mu);
  memset(vs, 0, sizeof *vs);
}

static ge_var *find_locked(ge_var_store *vs, const char *name, size_t *index) {
  for (size_t i = 0; i < vs->n; i++)
    if (!strcmp(vs->vars[i]->name, name)) {
      if (index) *index = i;
      return vs->vars[i];
    }
  return NULL;
}

static bool same_layout(const ge_tensor *a, const ge_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static const char *layout_str(const ge_tensor *t, char *buf, size_t cap) {
  ge_shape s;
  ge_tensor_shape(t, &s);
  char sh[160];
  snprintf(buf, cap, "%s %s", ge_dtype_name(t->dtype), ge_shape_str(&s, NULL, sh, sizeof sh));
  return buf;
}

ge_status ge_var_store_declare(ge_var_store *vs, const char *name, const ge_tensor *initial,
                               size_t *index) {
  char a[200], b[200];
  pthread_mutex_lock(&vs->mu);
  ge_var *v = find_locked(vs, name, index);
  if (v) {
    ge_status st = GE_OK;
    if (!same_layout(v->cur->t, initial))
      st = ge_error(GE_ERR_INVALID_ARGUMENT,
                    "variable '%s' is already in the session as %s; this graph declares it as %s",
                    name, layout_str(v->cur->t, a, sizeof a), layout_str(initial, b, sizeof b));
    pthread_mutex_unlock(&vs->mu);
    return st;
  }
  pthread_mutex_unlock(&vs->mu);
  ge_tensor *copy = NULL;
  GE_CHECK(ge_tensor_clone(initial, &copy));
  ge_var *nv = calloc(1, sizeof *nv);
  if (nv) nv->name = strdup(name);
  if (nv && nv->name) nv->cur = buf_new(copy);
  if (!nv || !nv->name || !nv->cur) {
    if (nv) free(nv->name);
    free(nv);
    ge_tensor_free(copy);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory declaring variable '%s'", name);
  }
  pthread_mutex_lock(&vs->mu);
  ge_status st = GE_OK;
  if ((v = find_locked(vs, name, index)) != NULL) { /* declared concurrently */
    if (!same_layout(v->cur->t, initial))
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "variable '%s' is already in the session as %s", name,
                    layout_str(v->cur->t, a, sizeof a));
  } else {
    if (vs->n == vs->cap) {
      size_t cap = vs->cap ? vs->cap * 2 : 8;
      ge_var **p = cap > SIZE_MAX / sizeof *p ? NULL : realloc(vs->vars, cap * sizeof *p);
      if (!p) {
        st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory declaring variable '%s'", name);
      } else {
        vs->vars = p;
        vs->cap = cap;
      }
    }
    if (st == GE_OK) {
      *index = vs->n;
      vs->vars[vs->n++] = nv;
      nv = NULL;
    }
  }
  pthread_mutex_unlock(&vs->mu);
  if (nv) {
    ge_tensor_free(copy);
    free(nv->cur);
    free(nv->name);
    free(nv);
  }
  return st;
}

void ge_var_store_snapshot(ge_var_store *vs, const size_t *idx, size_t n, ge_var_buf **bufs,
                           ge_tensor *views) {
  pthread_mutex_lock(&vs->mu);
  for (size_t i = 0; i < n; i++) {
    bufs[i] = vs->vars[idx[i]]->cur;
    bufs[i]->refs++;
    ge_tensor_view(&views[i], bufs[i]->t);
  }
  pthread_mutex_unlock(&vs->mu);
}

void ge_var_store_release(ge_var_store *vs, ge_var_buf **bufs, size_t n) {
  pthread_mutex_lock(&vs->mu);
  for (size_t i = 0; i < n; i++) buf_unref_locked(bufs[i]);
  pthread_mutex_unlock(&vs->mu);
}

/* dst = cur +/- val (same dtype and shape). */
static ge_status add_sub(ge_tensor *dst, const ge_tensor *cur, const ge_tensor *val, bool sub,
                         const char *name) {
  if (!ge_tensor_add_sub(dst, cur, val, sub))
    return ge_error(GE_ERR_UNSUPPORTED, "variable '%s': cannot add to or subtract from dtype %s",
                    name, ge_dtype_name(cur->dtype));
  return GE_OK;
}

static ge_status apply_locked(ge_var_store *vs, ge_effect_kind kind, const char *name,
                              const ge_tensor *value) {
  char a[200], b[200];
  ge_var *v = find_locked(vs, name, NULL);
  if (!v) return ge_error(GE_ERR_NOT_FOUND, "variable '%s' is not in this session", name);
  const ge_tensor *cur = v->cur->t;
  if (!same_layout(cur, value))
    return ge_error(GE_ERR_SHAPE, "writing variable '%s' (%s) with a value of %s", name,
                    layout_str(cur, a, sizeof a), layout_str(value, b, sizeof b));
  ge_tensor *nt = NULL;
  if (kind == GE_EFFECT_ASSIGN) {
    GE_CHECK(ge_tensor_clone(value, &nt));
  } else {
    GE_CHECK(ge_tensor_create(cur->dtype, cur->dims, (size_t)cur->rank, &nt));
    ge_status st = add_sub(nt, cur, value, kind == GE_EFFECT_ASSIGN_SUB, name);
    if (st != GE_OK) {
      ge_tensor_free(nt);
      return st;
    }
  }
  ge_var_buf *nb = buf_new(nt);
  if (!nb) {
    ge_tensor_free(nt);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory writing variable '%s'", name);
  }
  buf_unref_locked(v->cur);
  v->cur = nb;
  return GE_OK;
}

ge_status ge_var_store_apply(ge_var_store *vs, ge_effect_kind kind, const char *name,
                             const ge_tensor *value) {
  pthread_mutex_lock(&vs->mu);
  ge_status st = apply_locked(vs, kind, name, value);
  pthread_mutex_unlock(&vs->mu);
  return st;
}

ge_status ge_var_store_commit(ge_var_store *vs, const ge_run_fx *fx) {
  if (!fx->has_assign) return GE_OK;
  ge_status st = GE_OK;
  pthread_mutex_lock(&vs->mu);
  for (size_t i = 0; i < fx->n && st == GE_OK; i++) {
    const ge_effect *e = &fx->e[i];
    if (e->kind == GE_EFFECT_ASSIGN || e->kind == GE_EFFECT_ASSIGN_ADD ||
        e->kind == GE_EFFECT_ASSIGN_SUB)
      st = apply_locked(vs, e->kind, e->name, e->t);
  }
  pthread_mutex_unlock(&vs->mu);
  return st;
}

ge_status ge_var_store_get(ge_var_store *vs, const char *name, ge_tensor **out) {
  pthread_mutex_lock(&vs->mu);
  ge_var *v = find_locked(vs, name, NULL);
  ge_var_buf *b = v ? v->cur : NULL;
  if (b) b->refs++;
  pthread_mutex_unlock(&vs->mu);
  if (!b) return ge_error(GE_ERR_NOT_FOUND, "variable '%s' is not in this session", name);
  ge_status st = ge_tensor_clone(b->t, out);
  pthread_mutex_lock(&vs->mu);
  buf_unref_locked(b);
  pthread_mutex_unlock(&vs->mu);
  return st;
}

ge_status ge_var_store_set(ge_var_store *vs, const ge_tensor_map *values) {
  char a[200], b[200];
  size_t n = ge_tensor_map_size(values);
  ge_status st = GE_OK;
  pthread_mutex_lock(&vs->mu);
  for (size_t i = 0; i < n && st == GE_OK; i++) { /* check everything first */
    const char *k = ge_tensor_map_key(values, i);
    const ge_tensor *t = ge_tensor_map_value(values, i);
    ge_var *v = find_locked(vs, k, NULL);
    if (!v)
      st = ge_error(GE_ERR_NOT_FOUND, "set_variables: '%s' is not a variable of this session", k);
    else if (!t || !same_layout(v->cur->t, t))
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "set_variables: variable '%s' is %s, the value is %s",
                    k, layout_str(v->cur->t, a, sizeof a),
                    t ? layout_str(t, b, sizeof b) : "NULL");
  }
  for (size_t i = 0; i < n && st == GE_OK; i++)
    st = apply_locked(vs, GE_EFFECT_ASSIGN, ge_tensor_map_key(values, i),
                      ge_tensor_map_value(values, i));
  pthread_mutex_unlock(&vs->mu);
  return st;
}
