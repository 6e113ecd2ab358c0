/* A session's callbacks (see callbacks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/callbacks.h"

typedef struct cb_entry {
  ge_callback_fn fn;
  void *user;
  int priority;
  uint64_t seq;
} cb_entry;

struct ge_cb_key {
  char *key;
  cb_entry *entries;      /* sorted by (priority, seq); guarded by ge_callbacks.mu */
  size_t n, cap;
  uint64_t next_seq;
  pthread_mutex_t run_mu; /* held while this key's callbacks run: one at a time */
  pthread_t runner;       /* the thread holding run_mu, when `running` (under ge_callbacks.mu) */
  bool running;
  ge_callback_stats st;   /* guarded by ge_callbacks.mu */
  ge_cb_key *next;
};

struct ge_cb_job {
  uint32_t graph_id;
  ge_cb_key *key;
  cb_entry *entries;      /* snapshot taken when the run ended */
  size_t n;
  ge_tensor_map *map;
  ge_cb_job *next;
};

void ge_callbacks_init(ge_callbacks *cb, bool async) {
  memset(cb, 0, sizeof *cb);
  pthread_mutex_init(&cb->mu, NULL);
  pthread_cond_init(&cb->cv, NULL);
  cb->async = async;
}

/* Under cb->mu.  NULL on out of memory. */
static ge_cb_key *key_get_locked(ge_callbacks *cb, const char *key, bool create) {
  ge_cb_key **pp = &cb->keys;
  for (; *pp; pp = &(*pp)->next)
    if (!strcmp((*pp)->key, key)) return *pp;
  if (!create) return NULL;
  ge_cb_key *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  k->key = strdup(key);
  if (!k->key) {
    free(k);
    return NULL;
  }
  pthread_mutex_init(&k->run_mu, NULL);
  *pp = k; /* appended: keys keep their order of first appearance */
  cb->n_keys++;
  return k;
}

ge_status ge_callbacks_add(ge_callbacks *cb, const char *key, ge_callback_fn fn, void *user,
                           int priority, bool replace) {
  pthread_mutex_lock(&cb->mu);
  ge_cb_key *k = key_get_locked(cb, key, true);
  if (!k) {
    pthread_mutex_unlock(&cb->mu);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory registering a callback for '%s'", key);
  }
  if (replace) k->n = 0;
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 4;
    cb_entry *p = cap > SIZE_MAX / sizeof *p ? NULL : realloc(k->entries, cap * sizeof *p);
    if (!p) {
      pthread_mutex_unlock(&cb->mu);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory registering a callback for '%s'", key);
    }
    k->entries = p;
    k->cap = cap;
  }
  /* insertion keeps (priority, seq) order: after every entry of lower or equal priority */
  size_t pos = k->n;
  while (pos > 0 && k->entries[pos - 1].priority > priority) pos--;
  memmove(&k->entries[pos + 1], &k->entries[pos], (k->n - pos) * sizeof *k->entries);
  k->entries[pos] = (cb_entry){.fn = fn, .user = user, .priority = priority, .seq = k->next_seq++};
  k->n++;
  pthread_mutex_unlock(&cb->mu);
  return GE_OK;
}

bool ge_callbacks_has(ge_callbacks *cb, const char *key) {
  pthread_mutex_lock(&cb->mu);
  ge_cb_key *k = key_get_locked(cb, key, false);
  bool has = k && k->n > 0;
  pthread_mutex_unlock(&cb->mu);
  return has;
}

ge_status ge_callbacks_stats(ge_callbacks *cb, const char *key, ge_callback_stats *out) {
  pthread_mutex_lock(&cb->mu);
  ge_cb_key *k = key_get_locked(cb, key, false);
  if (k) {
    *out = k->st;
    out->mean_ms = out->calls ? out->total_ms / (double)out->calls : 0;
  }
  pthread_mutex_unlock(&cb->mu);
  if (!k) return ge_error(GE_ERR_NOT_FOUND, "callback_stats: no callback and no data for key '%s'", key);
  return GE_OK;
}

ge_status ge_callbacks_key(ge_callbacks *cb, size_t i, const char **key) {
  pthread_mutex_lock(&cb->mu);
  ge_cb_key *k = cb->keys;
  for (size_t j = 0; k && j < i; j++) k = k->next;
  if (k) *key = k->key;
  pthread_mutex_unlock(&cb->mu);
  if (!k) return ge_error(GE_ERR_NOT_FOUND, "callback key index %zu is past the end", i);
  return GE_OK;
}

static double now_ms(void) { return (double)ge_now_ns() / 1e6; }

static uint64_t map_bytes(const ge_tensor_map *m) {
  uint64_t b = 0;
  for (size_t i = 0; i < ge_tensor_map_size(m); i++) {
    const ge_tensor *t = ge_tensor_map_value(m, i);
    if (t) b += t->nbytes;
  }
  return b;
}

/* Calls a key's callbacks (a snapshot) one after the other, holding the key's run lock. */
static void run_key(ge_callbacks *cb, ge_cb_key *k, const cb_entry *es, size_t n,
                    uint32_t graph_id, const ge_tensor_map *map) {
  uint64_t bytes = map_bytes(map);
  pthread_mutex_lock(&cb->mu);
  bool nested = k->running && pthread_equal(k->runner, pthread_self());
  if (nested) k->st.failures++;
  pthread_mutex_unlock(&cb->mu);
  if (nested) { /* a callback ran a graph that fires its own key: deliver nothing, no deadlock */
    ge_warn("graph %u: data for key '%s' produced inside a '%s' callback is dropped (a key's "
            "callbacks do not nest)", graph_id, k->key, k->key);
    return;
  }
  pthread_mutex_lock(&k->run_mu);
  pthread_mutex_lock(&cb->mu);
  k->runner = pthread_self();
  k->running = true;
  pthread_mutex_unlock(&cb->mu);
  for (size_t i = 0; i < n; i++) {
    double t0 = now_ms();
    uint32_t rc = es[i].fn(graph_id, map, es[i].user);
    double dt = now_ms() - t0;
    pthread_mutex_lock(&cb->mu);
    k->st.calls++;
    k->st.total_ms += dt;
    if (dt > k->st.max_ms) k->st.max_ms = dt;
    k->st.bytes += bytes;
    if (rc) k->st.failures++;
    uint64_t failures = k->st.failures;
    pthread_mutex_unlock(&cb->mu);
    if (rc)
      ge_warn("callback %zu of key '%s' failed for graph %u with code %u (%llu failures so far); "
              "the graph goes on", i, k->key, graph_id, rc, (unsigned long long)failures);
  }
  pthread_mutex_lock(&cb->mu);
  k->running = false;
  pthread_mutex_unlock(&cb->mu);
  pthread_mutex_unlock(&k->run_mu);
}

/* A copy of a key's entries, under cb->mu.  *n = 0 when there are none (or no memory). */
static cb_entry *snapshot_locked(ge_cb_key *k, size_t *n) {
  *n = 0;
  if (!k || !k->n) return NULL;
  cb_entry *es = malloc(k->n * sizeof *es);
  if (!es) {
    ge_warn("out of memory delivering data to the callbacks of key '%s'", k->key);
    return NULL;
  }
  memcpy(es, k->entries, k->n * sizeof *es);
  *n = k->n;
  return es;
}

static void *callback_thread(void *arg) {
  ge_callbacks *cb = arg;
  pthread_mutex_lock(&cb->mu);
  for (;;) {
    while (!cb->head && !cb->stop) pthread_cond_wait(&cb->cv, &cb->mu);
    if (!cb->head) break;
    ge_cb_job *j = cb->head;
    cb->head = j->next;
    if (!cb->head) cb->tail = NULL;
    cb->queued--;
    cb->busy = true;
    pthread_cond_broadcast(&cb->cv); /* room in the queue */
    pthread_mutex_unlock(&cb->mu);
    run_key(cb, j->key, j->entries, j->n, j->graph_id, j->map);
    ge_tensor_map_free(j->map);
    free(j->entries);
    free(j);
    pthread_mutex_lock(&cb->mu);
    cb->busy = false;
    pthread_cond_broadcast(&cb->cv);
  }
  pthread_mutex_unlock(&cb->mu);
  return NULL;
}

/* Queues one job (blocking while the queue is full).  Under no lock.  Takes the map. */
static void enqueue(ge_callbacks *cb, ge_cb_key *k, uint32_t graph_id, ge_tensor_map *map) {
  ge_cb_job *j = calloc(1, sizeof *j);
  pthread_mutex_lock(&cb->mu);
  if (j) j->entries = snapshot_locked(k, &j->n);
  if (!j || !j->n || cb->stop) {
    pthread_mutex_unlock(&cb->mu);
    if (!j) ge_warn("out of memory queueing data for the callbacks of key '%s'", k->key);
    if (j) free(j->entries);
    free(j);
    ge_tensor_map_free(map);
    return;
  }
  if (!cb->thread_started) {
    if (pthread_create(&cb->thread, NULL, callback_thread, cb) != 0) {
      pthread_mutex_unlock(&cb->mu);
      ge_warn("could not start the callback thread; calling the callbacks of '%s' here", k->key);
      run_key(cb, k, j->entries, j->n, graph_id, map);
      ge_tensor_map_free(map);
      free(j->entries);
      free(j);
      return;
    }
    cb->thread_started = true;
  }
  while (cb->queued >= GE_CB_QUEUE_MAX) pthread_cond_wait(&cb->cv, &cb->mu);
  j->graph_id = graph_id;
  j->key = k;
  j->map = map;
  if (cb->tail) cb->tail->next = j;
  else cb->head = j;
  cb->tail = j;
  cb->queued++;
  pthread_cond_broadcast(&cb->cv);
  pthread_mutex_unlock(&cb->mu);
}

void ge_callbacks_deliver(ge_callbacks *cb, uint32_t graph_id, size_t n, char **keys,
                          ge_tensor_map **maps) {
  for (size_t i = 0; i < n; i++) {
    pthread_mutex_lock(&cb->mu);
    ge_cb_key *k = key_get_locked(cb, keys[i], true);
    size_t ne = 0;
    cb_entry *es = NULL;
    if (k && !cb->async) es = snapshot_locked(k, &ne);
    pthread_mutex_unlock(&cb->mu);
    if (!k) {
      ge_warn("out of memory delivering data to the callbacks of key '%s'", keys[i]);
    } else if (cb->async) {
      enqueue(cb, k, graph_id, maps[i]);
      maps[i] = NULL;
    } else if (ne) {
      run_key(cb, k, es, ne, graph_id, maps[i]);
    }
    free(es);
    ge_tensor_map_free(maps[i]);
    maps[i] = NULL;
  }
}

void ge_callbacks_drain(ge_callbacks *cb) {
  pthread_mutex_lock(&cb->mu);
  while (cb->head || cb->busy) pthread_cond_wait(&cb->cv, &cb->mu);
  pthread_mutex_unlock(&cb->mu);
}

void ge_callbacks_destroy(ge_callbacks *cb) {
  ge_callbacks_drain(cb);
  pthread_mutex_lock(&cb->mu);
  cb->stop = true;
  bool started = cb->thread_started;
  pthread_cond_broadcast(&cb->cv);
  pthread_mutex_unlock(&cb->mu);
  if (started) pthread_join(cb->thread, NULL);
  ge_cb_key *k = cb->keys;
  while (k) {
    ge_cb_key *next = k->next;
    pthread_mutex_destroy(&k->run_mu);
    free(k->entries);
    free(k->key);
    free(k);
    k = next;
  }
  pthread_mutex_destroy(&cb->mu);
  pthread_cond_destroy(&cb->cv);
}
