/* A session's callbacks: the registry (key -> callbacks in priority order), per-key metrics,
 * and the dispatcher that delivers one run's recorded data, either on the calling thread
 * (sync) or on a callback thread fed by a bounded queue (async). */
#ifndef GE_RUNTIME_CALLBACKS_H
#define GE_RUNTIME_CALLBACKS_H

#include <pthread.h>

#include "runtime/run_fx.h"

#define GE_CB_QUEUE_MAX 64 /* async jobs queued before a run blocks */

typedef struct ge_cb_key ge_cb_key;
typedef struct ge_cb_job ge_cb_job;

typedef struct ge_callbacks {
  pthread_mutex_t mu;      /* registry, stats, queue */
  pthread_cond_t cv;
  ge_cb_key *keys;         /* in order of first appearance; never freed before the session */
  size_t n_keys;
  bool async;
  /* async queue */
  ge_cb_job *head, *tail;
  size_t queued;
  bool busy;               /* the thread is delivering a job */
  bool thread_started, stop;
  pthread_t thread;
} ge_callbacks;

void ge_callbacks_init(ge_callbacks *cb, bool async);
/* Drains the queue, stops the thread, frees everything. */
void ge_callbacks_destroy(ge_callbacks *cb);
/* Waits until every queued job was delivered. */
void ge_callbacks_drain(ge_callbacks *cb);

ge_status ge_callbacks_add(ge_callbacks *cb, const char *key, ge_callback_fn fn, void *user,
                           int priority, bool replace);
bool ge_callbacks_has(ge_callbacks *cb, const char *key);
ge_status ge_callbacks_stats(ge_callbacks *cb, const char *key, ge_callback_stats *out);
ge_status ge_callbacks_key(ge_callbacks *cb, size_t i, const char **key);

/* Delivers `maps[i]` under `keys[i]` for graph `graph_id`, taking ownership of the maps
   (sync: calls now; async: queues, blocking while the queue is full). */
void ge_callbacks_deliver(ge_callbacks *cb, uint32_t graph_id, size_t n, char **keys,
                          ge_tensor_map **maps);

#endif
