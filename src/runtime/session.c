/* Sessions: graphs by id, compiled plans cached per input signature, sync and async runs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "runtime/session.h"

#define GE_PLAN_CACHE_MAX 32

typedef struct graph_entry {
  uint32_t id;
  ge_graph *g;           /* the session's own copy, topologically sorted */
  ge_plan *declared;     /* compiled for the declared input types (build_graph) */
  ge_plan *plans[GE_PLAN_CACHE_MAX]; /* compiled for concrete input shapes */
  size_t n_plans;
  int refs;              /* runs in flight */
  bool removed;
  struct graph_entry *next;
} graph_entry;

struct ge_session {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ge_options opts;
  graph_entry *graphs;
  int pending_async;
  bool shut_down;
};

static void entry_free(graph_entry *e) {
  ge_plan_free(e->declared);
  for (size_t i = 0; i < e->n_plans; i++) ge_plan_free(e->plans[i]);
  ge_graph_free(e->g);
  free(e);
}

static ge_status check_alive(ge_session *s) {
  if (!s) return ge_error(GE_ERR_INVALID_ARGUMENT, "session is NULL");
  if (s->shut_down)
    return ge_error(GE_ERR_STATE, "the session was shut down by ge_finalize; create a new one");
  return GE_OK;
}

ge_status ge_session_create(const ge_option *opts, size_t n_opts, ge_session **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_session_create: out is NULL");
  *out = NULL;
  ge_session *s = calloc(1, sizeof *s);
  if (!s) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory creating a session");
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  ge_status st = ge_process_attach(s, &s->opts);
  if (st == GE_OK) {
    st = ge_options_apply(&s->opts, opts, n_opts);
    if (st != GE_OK) ge_process_detach(s);
  }
  if (st != GE_OK) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return st;
  }
  *out = s;
  return GE_OK;
}

static void drain(ge_session *s) {
  pthread_mutex_lock(&s->mu);
  while (s->pending_async > 0) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

void ge_session_shutdown(ge_session *s) {
  drain(s);
  pthread_mutex_lock(&s->mu);
  s->shut_down = true;
  pthread_mutex_unlock(&s->mu);
}

void ge_session_free(ge_session *s) {
  if (!s) return;
  drain(s);
  ge_process_detach(s);
  pthread_mutex_lock(&s->mu);
  /* synchronous runs in flight on other threads finish before the graphs go */
  for (;;) {
    bool busy = false;
    for (graph_entry *e = s->graphs; e; e = e->next)
      if (e->refs) busy = true;
    if (!busy) break;
    pthread_cond_wait(&s->cv, &s->mu);
  }
  graph_entry *e = s->graphs;
  s->graphs = NULL;
  pthread_mutex_unlock(&s->mu);
  while (e) {
    graph_entry *next = e->next;
    entry_free(e);
    e = next;
  }
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

static graph_entry *find_entry(ge_session *s, uint32_t id) {
  for (graph_entry *e = s->graphs; e; e = e->next)
    if (e->id == id && !e->removed) return e;
  return NULL;
}

ge_status ge_session_add_graph(ge_session *s, uint32_t graph_id, const ge_graph *g) {
  GE_CHECK(check_alive(s));
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_session_add_graph: graph is NULL");
  graph_entry *e = calloc(1, sizeof *e);
  if (!e) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory adding graph %u", graph_id);
  e->id = graph_id;
  ge_status st = ge_graph_clone(g, NULL, &e->g);
  if (st == GE_OK) st = ge_graph_toposort(e->g);
  if (st != GE_OK) {
    if (e->g) ge_graph_free(e->g);
    free(e);
    return ge_error_prefix(st, "adding graph %u: ", graph_id);
  }
  pthread_mutex_lock(&s->mu);
  if (find_entry(s, graph_id)) {
    pthread_mutex_unlock(&s->mu);
    entry_free(e);
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph id %u is already in this session", graph_id);
  }
  e->next = s->graphs;
  s->graphs = e;
  pthread_mutex_unlock(&s->mu);
  return GE_OK;
}

/* Takes a reference on a graph entry (released by release_entry). */
static ge_status acquire_entry(ge_session *s, uint32_t graph_id, graph_entry **out) {
  GE_CHECK(check_alive(s));
  pthread_mutex_lock(&s->mu);
  graph_entry *e = find_entry(s, graph_id);
  if (!e) {
    pthread_mutex_unlock(&s->mu);
    return ge_error(GE_ERR_NOT_FOUND, "graph id %u is not in this session", graph_id);
  }
  e->refs++;
  pthread_mutex_unlock(&s->mu);
  *out = e;
  return GE_OK;
}

static void release_entry(ge_session *s, graph_entry *e) {
  pthread_mutex_lock(&s->mu);
  bool gone = --e->refs == 0 && e->removed;
  if (gone)
    for (graph_entry **pp = &s->graphs; *pp; pp = &(*pp)->next)
      if (*pp == e) {
        *pp = e->next;
        break;
      }
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  if (gone) entry_free(e);
}

ge_status ge_session_remove_graph(ge_session *s, uint32_t graph_id) {
  GE_CHECK(check_alive(s));
  pthread_mutex_lock(&s->mu);
  graph_entry *e = find_entry(s, graph_id);
  if (!e) {
    pthread_mutex_unlock(&s->mu);
    return ge_error(GE_ERR_NOT_FOUND, "graph id %u is not in this session", graph_id);
  }
  e->removed = true;
  bool gone = e->refs == 0;
  if (gone)
    for (graph_entry **pp = &s->graphs; *pp; pp = &(*pp)->next)
      if (*pp == e) {
        *pp = e->next;
        break;
      }
  pthread_mutex_unlock(&s->mu);
  if (gone) entry_free(e); /* else the last run in flight frees it */
  return GE_OK;
}

static ge_status build_declared(ge_session *s, graph_entry *e, ge_plan **out) {
  pthread_mutex_lock(&s->mu);
  ge_plan *p = e->declared;
  pthread_mutex_unlock(&s->mu);
  if (!p) {
    ge_status st = ge_plan_compile(e->g, NULL, &s->opts, &p);
    if (st != GE_OK) return ge_error_prefix(st, "graph %u: ", e->id);
    pthread_mutex_lock(&s->mu);
    if (e->declared) { /* another thread won the race */
      ge_plan_free(p);
      p = e->declared;
    } else {
      e->declared = p;
    }
    pthread_mutex_unlock(&s->mu);
  }
  *out = p;
  return GE_OK;
}

ge_status ge_session_build_graph(ge_session *s, uint32_t graph_id) {
  graph_entry *e = NULL;
  GE_CHECK(acquire_entry(s, graph_id, &e));
  ge_plan *p = NULL;
  ge_status st = build_declared(s, e, &p);
  release_entry(s, e);
  return st;
}

ge_status ge_session_graph_num_outputs(ge_session *s, uint32_t graph_id, size_t *n) {
  graph_entry *e = NULL;
  if (!n) return ge_error(GE_ERR_INVALID_ARGUMENT, "n is NULL");
  GE_CHECK(acquire_entry(s, graph_id, &e));
  *n = e->g->n_outputs;
  release_entry(s, e);
  return GE_OK;
}

/* The plan for these inputs: the declared plan when it fits, else one compiled for the
   concrete shapes (cached).  *tmp is set when the plan must be freed after the run. */
static ge_status plan_for(ge_session *s, graph_entry *e, ge_tensor *const *inputs, size_t n_in,
                          ge_plan **out, bool *tmp) {
  *tmp = false;
  ge_plan *decl = NULL;
  GE_CHECK(build_declared(s, e, &decl));
  if (n_in != decl->n_inputs)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph %u takes %zu inputs, got %zu", e->id,
                    decl->n_inputs, n_in);
  for (size_t i = 0; i < n_in; i++)
    if (!inputs || !inputs[i])
      return ge_error(GE_ERR_INVALID_ARGUMENT, "graph %u: input %zu is NULL", e->id, i);
  if (ge_plan_matches(decl, inputs, n_in)) {
    *out = decl;
    return GE_OK;
  }
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < e->n_plans; i++)
    if (ge_plan_matches(e->plans[i], inputs, n_in)) {
      *out = e->plans[i];
      pthread_mutex_unlock(&s->mu);
      return GE_OK;
    }
  pthread_mutex_unlock(&s->mu);

  ge_type *types = calloc(n_in + 1, sizeof *types);
  if (!types) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph %u", e->id);
  for (size_t i = 0; i < n_in; i++) {
    types[i].kind = GE_TYPE_TENSOR;
    types[i].dtype = inputs[i]->dtype;
    ge_tensor_shape(inputs[i], &types[i].shape);
  }
  /* Validate against the declared types first, so that the error names the input. */
  ge_plan *p = NULL;
  ge_status st = ge_plan_run_check_inputs(decl, inputs, n_in);
  if (st == GE_OK) st = ge_plan_compile(e->g, types, &s->opts, &p);
  free(types);
  if (st != GE_OK) return ge_error_prefix(st, "graph %u: ", e->id);
  pthread_mutex_lock(&s->mu);
  if (e->n_plans < GE_PLAN_CACHE_MAX) {
    e->plans[e->n_plans++] = p;
  } else {
    *tmp = true;
  }
  pthread_mutex_unlock(&s->mu);
  *out = p;
  return GE_OK;
}

ge_status ge_session_run_graph(ge_session *s, uint32_t graph_id, ge_tensor *const *inputs,
                               size_t n_in, ge_tensor **outputs, size_t n_out) {
  graph_entry *e = NULL;
  GE_CHECK(acquire_entry(s, graph_id, &e));
  ge_plan *p = NULL;
  bool tmp = false;
  ge_status st = plan_for(s, e, inputs, n_in, &p, &tmp);
  if (st == GE_OK) {
    st = ge_plan_run(p, inputs, n_in, outputs, n_out);
    if (st != GE_OK) st = ge_error_prefix(st, "graph %u: ", graph_id);
  }
  if (tmp) ge_plan_free(p);
  release_entry(s, e);
  return st;
}

typedef struct async_run {
  ge_session *s;
  uint32_t graph_id;
  ge_tensor **inputs;
  size_t n_in;
  ge_run_done_fn done;
  void *user;
} async_run;

static void *async_main(void *arg) {
  async_run *r = arg;
  ge_session *s = r->s;
  size_t n_out = 0;
  ge_tensor **outs = NULL;
  ge_status st = ge_session_graph_num_outputs(s, r->graph_id, &n_out);
  if (st == GE_OK) {
    outs = calloc(n_out + 1, sizeof *outs);
    if (!outs) st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in an async run");
  }
  if (st == GE_OK) st = ge_session_run_graph(s, r->graph_id, r->inputs, r->n_in, outs, n_out);
  /* the error message is thread-local: `done` can read it with ge_last_error() */
  r->done(st, st == GE_OK ? outs : NULL, st == GE_OK ? n_out : 0, r->user);
  free(outs);
  free(r->inputs);
  free(r);
  pthread_mutex_lock(&s->mu);
  s->pending_async--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

ge_status ge_session_run_graph_async(ge_session *s, uint32_t graph_id, ge_tensor *const *inputs,
                                     size_t n_in, ge_run_done_fn done, void *user) {
  GE_CHECK(check_alive(s));
  if (!done) return ge_error(GE_ERR_INVALID_ARGUMENT, "run_graph_async: done callback is NULL");
  if (n_in && !inputs) return ge_error(GE_ERR_INVALID_ARGUMENT, "run_graph_async: inputs is NULL");
  graph_entry *e = NULL;
  GE_CHECK(acquire_entry(s, graph_id, &e)); /* fail early on an unknown id */
  release_entry(s, e);
  async_run *r = calloc(1, sizeof *r);
  if (r) r->inputs = calloc(n_in + 1, sizeof *r->inputs);
  if (!r || !r->inputs) {
    if (r) free(r);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory starting an async run");
  }
  r->s = s;
  r->graph_id = graph_id;
  r->n_in = n_in;
  if (n_in) memcpy(r->inputs, inputs, n_in * sizeof *inputs);
  r->done = done;
  r->user = user;
  pthread_mutex_lock(&s->mu);
  s->pending_async++;
  pthread_mutex_unlock(&s->mu);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &attr, async_main, r);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    pthread_mutex_lock(&s->mu);
    s->pending_async--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(r->inputs);
    free(r);
    return ge_error(GE_ERR_INTERNAL, "run_graph_async: could not start a thread");
  }
  return GE_OK;
}
