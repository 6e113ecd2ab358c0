/* ge_initialize / ge_finalize: the only process-wide state, and the list of live sessions. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ir/error.h"
#include "runtime/session.h"

typedef struct live_session {
  ge_session *s;
  struct live_session *next;
} live_session;

static struct {
  pthread_mutex_t mu;
  bool initialized;
  ge_options opts;
  ge_option *given; /* copies of the options initialize was called with */
  size_t n_given;
  live_session *live;
} proc = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void free_given(void) {
  for (size_t i = 0; i < proc.n_given; i++) {
    free((char *)proc.given[i].key);
    free((char *)proc.given[i].value);
  }
  free(proc.given);
  proc.given = NULL;
  proc.n_given = 0;
}

static bool same_options(const ge_option *opts, size_t n) {
  if (n != proc.n_given) return false;
  for (size_t i = 0; i < n; i++)
    if (!opts[i].key || !opts[i].value || strcmp(opts[i].key, proc.given[i].key) ||
        strcmp(opts[i].value, proc.given[i].value))
      return false;
  return true;
}

ge_status ge_initialize(const ge_option *opts, size_t n_opts) {
  ge_options o;
  ge_options_default(&o);
  GE_CHECK(ge_options_apply(&o, opts, n_opts));
  pthread_mutex_lock(&proc.mu);
  ge_status st = GE_OK;
  if (proc.initialized) {
    /* No options: "make sure ge is initialized".  The same options again: harmless. */
    if (n_opts && !same_options(opts, n_opts))
      st = ge_error(GE_ERR_STATE, "ge_initialize: already initialized with other options; "
                                  "call ge_finalize first");
    pthread_mutex_unlock(&proc.mu);
    return st;
  }
  proc.given = calloc(n_opts + 1, sizeof *proc.given);
  if (!proc.given) st = ge_error(GE_ERR_OUT_OF_MEMORY, "ge_initialize: out of memory");
  for (size_t i = 0; i < n_opts && st == GE_OK; i++) {
    proc.given[i].key = strdup(opts[i].key);
    proc.given[i].value = strdup(opts[i].value);
    proc.n_given++;
    if (!proc.given[i].key || !proc.given[i].value)
      st = ge_error(GE_ERR_OUT_OF_MEMORY, "ge_initialize: out of memory");
  }
  if (st == GE_OK) {
    proc.opts = o;
    proc.initialized = true;
  } else {
    free_given();
  }
  pthread_mutex_unlock(&proc.mu);
  return st;
}

ge_status ge_finalize(void) {
  pthread_mutex_lock(&proc.mu);
  if (!proc.initialized) {
    pthread_mutex_unlock(&proc.mu);
    return GE_OK;
  }
  live_session *l = proc.live;
  proc.live = NULL;
  proc.initialized = false;
  free_given();
  /* The lock stays held while sessions drain so that a concurrent ge_session_free waits in
     ge_process_detach instead of freeing a session being shut down. */
  while (l) {
    live_session *next = l->next;
    ge_session_shutdown(l->s);
    free(l);
    l = next;
  }
  pthread_mutex_unlock(&proc.mu);
  return GE_OK;
}

ge_status ge_process_attach(ge_session *s, ge_options *defaults) {
  live_session *l = malloc(sizeof *l);
  if (!l) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory creating a session");
  pthread_mutex_lock(&proc.mu);
  if (!proc.initialized) {
    pthread_mutex_unlock(&proc.mu);
    free(l);
    return ge_error(GE_ERR_STATE, "ge is not initialized: call ge_initialize before creating a session");
  }
  *defaults = proc.opts;
  l->s = s;
  l->next = proc.live;
  proc.live = l;
  pthread_mutex_unlock(&proc.mu);
  return GE_OK;
}

void ge_process_detach(ge_session *s) {
  pthread_mutex_lock(&proc.mu);
  for (live_session **pp = &proc.live; *pp; pp = &(*pp)->next)
    if ((*pp)->s == s) {
      live_session *dead = *pp;
      *pp = dead->next;
      free(dead);
      break;
    }
  pthread_mutex_unlock(&proc.mu);
}

bool ge_process_initialized(void) {
  pthread_mutex_lock(&proc.mu);
  bool r = proc.initialized;
  pthread_mutex_unlock(&proc.mu);
  return r;
}
