/* ge_tensor_map: an insertion-ordered name -> tensor map that owns keys and tensors. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

struct ge_tensor_map {
  char **keys;
  ge_tensor **values;
  char **infos;   /* per entry: NULL or a short annotation (a Summary's type) */
  size_t n, cap;
  int32_t *index; /* open addressing: entry ids or -1; index_cap is a power of two */
  size_t index_cap;
};

static uint64_t hash_key(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

static void index_put(int32_t *idx, size_t cap, const char *key, int32_t id) {
  size_t mask = cap - 1, i = (size_t)hash_key(key) & mask;
  while (idx[i] >= 0) i = (i + 1) & mask;
  idx[i] = id;
}

static bool index_rebuild(ge_tensor_map *m, size_t min_entries) {
  size_t cap = 16;
  while (cap < min_entries * 2 + 2) {
    if (cap > SIZE_MAX / (4 * sizeof(int32_t))) return false;
    cap *= 2;
  }
  int32_t *idx = malloc(cap * sizeof *idx);
  if (!idx) return false;
  for (size_t i = 0; i < cap; i++) idx[i] = -1;
  for (size_t k = 0; k < m->n; k++) index_put(idx, cap, m->keys[k], (int32_t)k);
  free(m->index);
  m->index = idx;
  m->index_cap = cap;
  return true;
}

static int32_t find_entry(const ge_tensor_map *m, const char *key) {
  if (!m || !key || !m->index) return -1;
  size_t mask = m->index_cap - 1, i = (size_t)hash_key(key) & mask;
  while (m->index[i] >= 0) {
    int32_t id = m->index[i];
    if (strcmp(m->keys[id], key) == 0) return id;
    i = (i + 1) & mask;
  }
  return -1;
}

ge_status ge_tensor_map_create(ge_tensor_map **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_map_create: out is NULL");
  ge_tensor_map *m = calloc(1, sizeof *m);
  if (!m) return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor map: out of memory");
  *out = m;
  return GE_OK;
}

/* Takes ownership of value in every case: on failure the tensor is freed. */
ge_status ge_tensor_map_put(ge_tensor_map *m, const char *key, ge_tensor *value) {
  if (!m || !key || !value) {
    ge_tensor_free(value);
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_tensor_map_put: NULL %s",
                    !m ? "map" : !key ? "key" : "value");
  }
  int32_t id = find_entry(m, key);
  if (id >= 0) {
    if (m->values[id] != value) ge_tensor_free(m->values[id]);
    m->values[id] = value;
    return GE_OK;
  }
  if (m->n >= (size_t)INT32_MAX - 1) {
    ge_tensor_free(value);
    return ge_error(GE_ERR_INVALID_ARGUMENT, "tensor map: too many entries");
  }
  if (m->n == m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 8;
    char **k = realloc(m->keys, nc * sizeof *k);
    if (k) m->keys = k;
    ge_tensor **v = k ? realloc(m->values, nc * sizeof *v) : NULL;
    if (v) m->values = v;
    char **inf = v ? realloc(m->infos, nc * sizeof *inf) : NULL;
    if (inf) m->infos = inf;
    if (!k || !v || !inf) {
      ge_tensor_free(value);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor map: out of memory");
    }
    m->cap = nc;
  }
  char *kc = strdup(key);
  if (!kc) {
    ge_tensor_free(value);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor map: out of memory");
  }
  m->keys[m->n] = kc;
  m->values[m->n] = value;
  m->infos[m->n] = NULL;
  m->n++;
  if (m->n * 2 + 2 > m->index_cap) {
    if (!index_rebuild(m, m->n)) {
      m->n--;
      free(kc);
      ge_tensor_free(value);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor map: out of memory");
    }
  } else {
    index_put(m->index, m->index_cap, kc, (int32_t)(m->n - 1));
  }
  return GE_OK;
}

void ge_tensor_map_free(ge_tensor_map *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n; i++) {
    free(m->keys[i]);
    free(m->infos[i]);
    ge_tensor_free(m->values[i]);
  }
  free(m->infos);
  free(m->keys);
  free(m->values);
  free(m->index);
  free(m);
}

size_t ge_tensor_map_size(const ge_tensor_map *m) { return m ? m->n : 0; }

const char *ge_tensor_map_key(const ge_tensor_map *m, size_t i) {
  return m && i < m->n ? m->keys[i] : NULL;
}

const ge_tensor *ge_tensor_map_value(const ge_tensor_map *m, size_t i) {
  return m && i < m->n ? m->values[i] : NULL;
}

const ge_tensor *ge_tensor_map_find(const ge_tensor_map *m, const char *key) {
  int32_t id = find_entry(m, key);
  return id >= 0 ? m->values[id] : NULL;
}

const char *ge_tensor_map_info(const ge_tensor_map *m, size_t i) {
  return m && i < m->n ? m->infos[i] : NULL;
}

ge_status ge_tensor_map_set_info(ge_tensor_map *m, const char *key, const char *info) {
  int32_t id = find_entry(m, key);
  if (id < 0)
    return ge_error(GE_ERR_NOT_FOUND, "tensor map: no key '%s'", key ? key : "(null)");
  char *c = NULL;
  if (info && !(c = strdup(info))) return ge_error(GE_ERR_OUT_OF_MEMORY, "tensor map: out of memory");
  free(m->infos[id]);
  m->infos[id] = c;
  return GE_OK;
}
