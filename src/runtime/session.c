/* Sessions: graphs by id, compiled plans cached per input signature, sync and async runs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/autodiff.h"
#include "compiler/inline.h"
#include "compiler/program.h"
#include "passes/pass.h"
#include "runtime/callbacks.h"
#include "runtime/executor.h"
#include "runtime/session.h"
#include "runtime/thread_adapt.h"
#include "runtime/variables.h"

#define GE_PLAN_CACHE_MAX 32

typedef struct graph_entry {
  uint32_t id;
  ge_graph *g;           /* the session's own copy, topologically sorted */
  ge_plan *declared;     /* compiled for the declared input types (build_graph) */
  ge_plan *plans[GE_PLAN_CACHE_MAX]; /* compiled for concrete input shapes */
  size_t n_plans;
  int refs;              /* runs in flight */
  bool removed;
  uint32_t *var_slots;   /* value ids of the graph's variables */
  size_t *var_idx;       /* their indices in the session's variable store */
  size_t n_vars;
  bool has_effects;      /* holds ai.ge Summary/Save/Callback/Assign* ops */
  unsigned warned;       /* WARN_* bits: keys without a callback, warned once (under s->mu) */
  /* reclaimable weights (ir.h ge_tensor_pin): per value of g, whether the entry pins its
     constant because a plan reads it at run time; the plans whose readers are pinned (under
     s->mu) */
  bool *pinned;
  const ge_plan *settled[GE_PLAN_CACHE_MAX + 1];
  size_t n_settled;
  _Atomic uint64_t runs, runs_one; /* runs, and those on one thread (ge_run_stats) */
  struct graph_entry *next;
} graph_entry;

struct ge_session {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  ge_options opts;
  graph_entry *graphs;
  int pending_async;
  bool shut_down;
  ge_var_store vars;
  ge_callbacks cb;
  ge_observe *obs; /* profiling / dumping (ge.exec.profilingMode, ge.exec.enableDump); NULL: off */
};

enum { WARN_SUMMARY = 1, WARN_SAVE = 2, WARN_OTHER = 4 };

static void entry_free(graph_entry *e) {
  ge_plan_free(e->declared);
  for (size_t i = 0; i < e->n_plans; i++) ge_plan_free(e->plans[i]);
  for (size_t v = 0; e->pinned && v < e->g->n_values; v++)
    if (e->pinned[v]) ge_tensor_unpin(e->g->values[v].constant);
  free(e->pinned);
  ge_graph_free(e->g);
  free(e->var_slots);
  free(e->var_idx);
  free(e);
}

static ge_status scan_graph(ge_session *s, graph_entry *e);

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
    /* the trace's pid: this session, told apart from others in the same file */
    if (st == GE_OK) st = ge_observe_create(&s->opts, (uint32_t)(((uintptr_t)s >> 4) & 0x7fffffffu), &s->obs);
    if (st != GE_OK) ge_process_detach(s);
  }
  if (st != GE_OK) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return st;
  }
  ge_var_store_init(&s->vars);
  ge_callbacks_init(&s->cb, s->opts.callback_async);
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
  /* after shut_down: a callback calling back into this session gets GE_ERR_STATE at once
     (ge_finalize holds the process lock while it drains) */
  ge_callbacks_drain(&s->cb);
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
  ge_callbacks_destroy(&s->cb); /* drains what is still queued */
  ge_var_store_destroy(&s->vars);
  ge_observe_free(s->obs); /* closes the trace file */
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

static graph_entry *find_entry(ge_session *s, uint32_t id) {
  for (graph_entry *e = s->graphs; e; e = e->next)
    if (e->id == id && !e->removed) return e;
  return NULL;
}

/* The optimisation passes of ge.graphOptimizationLevel, on the session's own copy. */
static ge_status run_passes(ge_session *s, ge_graph *g) {
  return ge_options_run_passes(&s->opts, g, NULL);
}

/* A .gem offline model was optimized by `ge compile`: the passes are not run again.  Only the
   precision rewrite runs, when the session asks for a precision mode other than the default
   and other than the one the model was compiled with; otherwise types are inferred. */
static ge_status run_passes_optimized(ge_session *s, ge_graph *g) {
  int want = s->opts.precision_mode;
  if (want == GE_PRECISION_KEEP || want == g->precision_mode) return ge_passes_infer_types(g);
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 0);
  cfg.training = s->opts.run_mode == 1;
  cfg.precision = want;
  ge_status st = ge_passes_run(g, &cfg, NULL);
  ge_pass_config_clear(&cfg);
  if (st == GE_OK) g->precision_mode = want;
  return st;
}

ge_status ge_session_add_graph(ge_session *s, uint32_t graph_id, const ge_graph *g) {
  GE_CHECK(check_alive(s));
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_session_add_graph: graph is NULL");
  graph_entry *e = calloc(1, sizeof *e);
  if (!e) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory adding graph %u", graph_id);
  e->id = graph_id;
  /* the passes read the weights: evicted ones are read back and none is dropped meanwhile */
  ge_status st = ge_graph_pin_constants(g, false);
  if (st != GE_OK) {
    free(e);
    return ge_error_prefix(st, "adding graph %u: ", graph_id);
  }
  st = ge_graph_clone(g, NULL, &e->g);
  if (st == GE_OK) st = ge_graph_inline_functions(e->g); /* model-local functions */
  if (st == GE_OK) st = ge_graph_expand_gradients(e->g); /* Gradient nodes: autodiff */
  if (st == GE_OK) st = ge_graph_toposort(e->g);
  if (st == GE_OK) st = e->g->optimized ? run_passes_optimized(s, e->g) : run_passes(s, e->g);
  if (st == GE_OK) st = scan_graph(s, e);
  if (st == GE_OK && !(e->pinned = calloc(e->g->n_values + 1, sizeof *e->pinned)))
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_graph_unpin_constants(g, false);
  if (st != GE_OK) {
    entry_free(e);
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

static bool is_ge_domain(const char *d) { return d && !strcmp(d, "ai.ge"); }
static bool is_assign_op(const ge_node *n) {
  return is_ge_domain(n->domain) && (!strcmp(n->op_type, "Assign") ||
                                     !strcmp(n->op_type, "AssignAdd") ||
                                     !strcmp(n->op_type, "AssignSub"));
}
static bool is_effect_op(const ge_node *n) {
  return is_assign_op(n) ||
         (is_ge_domain(n->domain) && (!strcmp(n->op_type, "Summary") ||
                                      !strcmp(n->op_type, "Save") ||
                                      !strcmp(n->op_type, "Callback")));
}

/* Declares the graph's variables in the session and notes its side-effecting ops.  In
   inference mode (ge.graphRunMode=0) variables are read-only: a graph that writes one is
   refused. */
static ge_status scan_graph(ge_session *s, graph_entry *e) {
  const ge_graph *g = e->g;
  char where[256];
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    if (!is_effect_op(n)) continue;
    e->has_effects = true;
    if (is_assign_op(n) && s->opts.run_mode == 0)
      return ge_error(GE_ERR_STATE, "%s writes a variable, but variables are read-only in "
                      "inference mode (ge.graphRunMode=0); use ge.graphRunMode=1 to train",
                      ge_node_desc(n, where, sizeof where));
  }
  size_t nv = 0;
  for (size_t v = 0; v < g->n_values; v++)
    if (g->values[v].kind == GE_VALUE_VARIABLE) nv++;
  if (!nv) return GE_OK;
  e->var_slots = calloc(nv, sizeof *e->var_slots);
  e->var_idx = calloc(nv, sizeof *e->var_idx);
  if (!e->var_slots || !e->var_idx)
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory adding the variables of a graph");
  for (size_t v = 0; v < g->n_values; v++) {
    const ge_value *val = &g->values[v];
    if (val->kind != GE_VALUE_VARIABLE) continue;
    if (!val->constant)
      return ge_error(GE_ERR_INVALID_ARGUMENT, "variable '%s' has no initial value", val->name);
    GE_CHECK(ge_var_store_declare(&s->vars, val->name, val->constant, &e->var_idx[e->n_vars]));
    e->var_slots[e->n_vars++] = (uint32_t)v;
  }
  return GE_OK;
}

/* Reclaimable weights.  A compilation soft-pins every constant (evicted ones are read back), so
   that oneDNN kernels can drop a weight they packed as soon as they are its only reader
   (ge_dn_drop_packed_originals); afterwards every weight the plan packed and no one pins is
   dropped.  Before a plan first runs, the constants it reads at run time are pinned for the
   entry's lifetime (settle_plan). */
static ge_status compile_pinned(ge_session *s, graph_entry *e, const ge_type *types, ge_plan **out) {
  GE_CHECK(ge_graph_pin_constants(e->g, true));
  ge_status st = ge_plan_compile(e->g, types, &s->opts, out);
  ge_graph_unpin_constants(e->g, true);
  if (st != GE_OK) return st;
  const ge_plan *p = *out;
  for (size_t i = 0; i < p->n_steps; i++) {
    const ge_step *stp = &p->steps[i];
    uint32_t m = stp->k && stp->k->packed_inputs && stp->state ? stp->k->packed_inputs(stp->state) : 0;
    for (uint32_t j = 0; m && j < stp->n_in && j < 32; j++) {
      uint32_t v = stp->in[j];
      if ((m >> j & 1u) && v != GE_SLOT_NONE && p->slots[v].constant && !p->slots[v].folded)
        ge_tensor_evict(p->slots[v].constant);
    }
  }
  return GE_OK;
}

/* Pins (once per entry) the graph constants plan p reads at run time: those a step reads
   without having packed them, and constant graph outputs.  remember: p stays cached (a
   temporary plan is settled on each run: its address may come back for another plan). */
static ge_status settle_plan(ge_session *s, graph_entry *e, const ge_plan *p, bool remember) {
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < e->n_settled; i++)
    if (e->settled[i] == p) {
      pthread_mutex_unlock(&s->mu);
      return GE_OK;
    }
  ge_status st = GE_OK;
  const ge_graph *g = e->g;
  for (size_t i = 0; st == GE_OK && i < p->n_steps + 1; i++) {
    const ge_step *stp = i < p->n_steps ? &p->steps[i] : NULL;
    size_t n = stp ? stp->n_in : p->n_outputs;
    uint32_t m = stp && stp->k && stp->k->packed_inputs && stp->state ? stp->k->packed_inputs(stp->state) : 0;
    for (size_t j = 0; st == GE_OK && j < n; j++) {
      uint32_t v = stp ? stp->in[j] : p->outputs[j];
      if (v == GE_SLOT_NONE || v >= g->n_values || !p->slots[v].constant || p->slots[v].folded) continue;
      if (stp && j < 32 && (m >> j & 1u)) continue;
      const ge_tensor *c = g->values[v].constant;
      if (e->pinned[v] || c != p->slots[v].constant || !ge_tensor_has_backing(c)) continue;
      st = ge_tensor_pin(c);
      if (st == GE_OK) e->pinned[v] = true;
    }
  }
  if (st == GE_OK && remember && e->n_settled < GE_PLAN_CACHE_MAX + 1) e->settled[e->n_settled++] = p;
  pthread_mutex_unlock(&s->mu);
  return st;
}

static ge_status build_declared(ge_session *s, graph_entry *e, ge_plan **out) {
  pthread_mutex_lock(&s->mu);
  ge_plan *p = e->declared;
  pthread_mutex_unlock(&s->mu);
  if (!p) {
    ge_status st = compile_pinned(s, e, NULL, &p);
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

ge_status ge_session_graph_run_stats(ge_session *s, uint32_t graph_id, ge_run_stats *out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "run stats: out is NULL");
  graph_entry *e = NULL;
  GE_CHECK(acquire_entry(s, graph_id, &e));
  memset(out, 0, sizeof *out);
  out->runs = atomic_load_explicit(&e->runs, memory_order_relaxed);
  out->threads = s->opts.intra_threads;
  out->adaptive = s->opts.intra_threads > 1 && ge_options_adaptive_threads(&s->opts);
  ge_run_stats plans = {0};
  pthread_mutex_lock(&s->mu);
  if (e->declared) ge_thread_adapt_stats(e->declared->adapt, &plans);
  for (size_t i = 0; i < e->n_plans; i++) ge_thread_adapt_stats(e->plans[i]->adapt, &plans);
  pthread_mutex_unlock(&s->mu);
  out->runs_one_thread = atomic_load_explicit(&e->runs_one, memory_order_relaxed);
  out->switches = plans.switches;
  out->probes = plans.probes;
  release_entry(s, e);
  return GE_OK;
}

/* The plan for these inputs: the declared plan when it fits, else one compiled for the
   concrete shapes (cached).  *tmp is set when the plan must be freed after the run. */
static ge_status plan_pick(ge_session *s, graph_entry *e, ge_tensor *const *inputs, size_t n_in,
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
  for (size_t i = 0; i < n_in; i++) ge_value_type(inputs[i], &types[i]); /* tensor, sequence or optional */
  /* Validate against the declared types first, so that the error names the input. */
  ge_plan *p = NULL;
  ge_status st = ge_plan_run_check_inputs(decl, inputs, n_in);
  if (st == GE_OK) st = compile_pinned(s, e, types, &p);
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

/* plan_pick, then the constants the plan reads at run time pinned (resident) before it runs. */
static ge_status plan_for(ge_session *s, graph_entry *e, ge_tensor *const *inputs, size_t n_in,
                          ge_plan **out, bool *tmp) {
  GE_CHECK(plan_pick(s, e, inputs, n_in, out, tmp));
  ge_status st = settle_plan(s, e, *out, !*tmp);
  if (st != GE_OK) {
    if (*tmp) ge_plan_free(*out);
    *out = NULL;
    *tmp = false;
    return ge_error_prefix(st, "graph %u: ", e->id);
  }
  return GE_OK;
}

/* Groups a run's Summary / Save / Callback records into one map per key (in the order the
   keys first appear) and hands them to the callbacks.  Failures here are logged, never
   returned: the run itself succeeded. */
static void deliver_effects(ge_session *s, graph_entry *e, ge_run_fx *fx) {
  size_t cap = 0;
  for (size_t i = 0; i < fx->n; i++)
    if (fx->e[i].key) cap++;
  if (!cap) return;
  char **keys = calloc(cap, sizeof *keys);
  ge_tensor_map **maps = calloc(cap, sizeof *maps);
  size_t nk = 0;
  if (!keys || !maps) {
    ge_warn("graph %u: out of memory delivering callback data", e->id);
    free(keys);
    free(maps);
    return;
  }
  for (size_t i = 0; i < fx->n; i++) {
    ge_effect *ef = &fx->e[i];
    if (!ef->key) continue;
    size_t k = 0;
    while (k < nk && strcmp(keys[k], ef->key)) k++;
    if (k == nk) {
      if (ge_tensor_map_create(&maps[k]) != GE_OK) break;
      keys[nk++] = ef->key;
    }
    ge_tensor *t = ef->t;
    ef->t = NULL;
    if (ef->kind == GE_EFFECT_SAVE && ge_var_store_get(&s->vars, ef->name, &t) != GE_OK) {
      ge_warn("graph %u: Save: %s", e->id, ge_last_error());
      continue;
    }
    if (t && ge_tensor_map_put(maps[k], ef->name, t) == GE_OK && ef->sub)
      ge_tensor_map_set_info(maps[k], ef->name, ef->sub); /* the Summary type */
  }
  /* keys without any callback: warn once per graph (Summary, Save, others) */
  for (size_t k = 0; k < nk; k++) {
    if (ge_callbacks_has(&s->cb, keys[k])) continue;
    unsigned bit = !strcmp(keys[k], "Summary") ? WARN_SUMMARY
                   : !strcmp(keys[k], "Save")  ? WARN_SAVE
                                               : WARN_OTHER;
    pthread_mutex_lock(&s->mu);
    bool first = !(e->warned & bit);
    e->warned |= bit;
    pthread_mutex_unlock(&s->mu);
    if (first)
      ge_warn("graph %u holds %s ops but the session has no '%s' callback: their data is "
              "dropped (warned once per graph)", e->id,
              bit == WARN_OTHER ? "Callback" : keys[k], keys[k]);
  }
  ge_callbacks_deliver(&s->cb, e->id, nk, keys, maps); /* frees the maps */
  free(keys);
  free(maps);
}

/* One run: snapshot the variables, run, commit the writes, deliver the callback data. */
static ge_status run_with_vars(ge_session *s, graph_entry *e, const ge_plan *p,
                               ge_tensor *const *inputs, size_t n_in, ge_tensor **outputs,
                               ge_tensor *const *into, size_t n_out, int *ran) {
  if (!e->n_vars && !e->has_effects) {
    ge_run_env plain = {.obs = s->obs, .into = into, .ran_threads = ran};
    return ge_plan_run_env(p, inputs, n_in, outputs, n_out, &plain);
  }
  ge_var_buf **bufs = calloc(e->n_vars + 1, sizeof *bufs);
  ge_tensor *views = calloc(e->n_vars + 1, sizeof *views);
  if (!bufs || !views) {
    free(bufs);
    free(views);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory starting a run");
  }
  ge_var_store_snapshot(&s->vars, e->var_idx, e->n_vars, bufs, views);
  ge_run_fx fx = {0};
  ge_run_env env = {.n_vars = e->n_vars, .var_slots = e->var_slots, .var_values = views,
                    .fx = &fx, .obs = s->obs, .into = into, .ran_threads = ran};
  ge_status st = ge_plan_run_env(p, inputs, n_in, outputs, n_out, &env);
  ge_var_store_release(&s->vars, bufs, e->n_vars);
  free(bufs);
  free(views);
  if (st == GE_OK) {
    st = ge_var_store_commit(&s->vars, &fx);
    if (st != GE_OK && !into)
      for (size_t i = 0; i < n_out; i++) {
        ge_tensor_free(outputs[i]);
        outputs[i] = NULL;
      }
  }
  if (st == GE_OK) deliver_effects(s, e, &fx);
  ge_run_fx_clear(&fx);
  return st;
}

/* A run, counted in the graph's ge_run_stats. */
static ge_status run_with_env(ge_session *s, graph_entry *e, const ge_plan *p,
                              ge_tensor *const *inputs, size_t n_in, ge_tensor **outputs,
                              ge_tensor *const *into, size_t n_out) {
  int ran = 0;
  ge_status st = run_with_vars(s, e, p, inputs, n_in, outputs, into, n_out, &ran);
  atomic_fetch_add_explicit(&e->runs, 1, memory_order_relaxed);
  if (ran == 1 && p->opts.intra_threads > 1) atomic_fetch_add_explicit(&e->runs_one, 1, memory_order_relaxed);
  return st;
}

static ge_status run_graph(ge_session *s, uint32_t graph_id, ge_tensor *const *inputs, size_t n_in,
                           ge_tensor **outputs, ge_tensor *const *into, size_t n_out) {
  graph_entry *e = NULL;
  GE_CHECK(acquire_entry(s, graph_id, &e));
  ge_plan *p = NULL;
  bool tmp = false;
  ge_status st = plan_for(s, e, inputs, n_in, &p, &tmp);
  if (st == GE_OK) {
    st = run_with_env(s, e, p, inputs, n_in, outputs, into, n_out);
    if (st != GE_OK) st = ge_error_prefix(st, "graph %u: ", graph_id);
  }
  if (tmp) ge_plan_free(p);
  release_entry(s, e);
  return st;
}

ge_status ge_session_run_graph(ge_session *s, uint32_t graph_id, ge_tensor *const *inputs,
                               size_t n_in, ge_tensor **outputs, size_t n_out) {
  return run_graph(s, graph_id, inputs, n_in, outputs, NULL, n_out);
}

ge_status ge_session_run_graph_into(ge_session *s, uint32_t graph_id, ge_tensor *const *inputs,
                                    size_t n_in, ge_tensor *const *outputs, size_t n_out) {
  if (n_out && !outputs) return ge_error(GE_ERR_INVALID_ARGUMENT, "graph %u: outputs is NULL", graph_id);
  return run_graph(s, graph_id, inputs, n_in, NULL, outputs, n_out);
}

ge_status ge_session_graph_output_info(ge_session *s, uint32_t graph_id, size_t i, ge_dtype *dtype,
                                       int64_t *dims, size_t max_rank, size_t *rank) {
  if (!dtype || !rank || (max_rank && !dims))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "dtype, dims or rank is NULL");
  graph_entry *e = NULL;
  GE_CHECK(acquire_entry(s, graph_id, &e));
  ge_plan *p = NULL;
  ge_status st = build_declared(s, e, &p);
  if (st == GE_OK && i >= p->n_outputs)
    st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph %u has %zu outputs, asked for output %zu", graph_id,
                  p->n_outputs, i);
  if (st == GE_OK) {
    const ge_type *t = &p->slots[p->outputs[i]].type;
    if (t->kind != GE_TYPE_TENSOR || t->shape.rank == GE_RANK_UNKNOWN)
      st = ge_error(GE_ERR_UNSUPPORTED, "graph %u: output %zu ('%s') is not a tensor of known rank", graph_id, i,
                    e->g->values[p->outputs[i]].name);
    else if ((size_t)t->shape.rank > max_rank)
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph %u: output %zu has rank %d, dims has room for %zu", graph_id, i,
                    (int)t->shape.rank, max_rank);
    if (st == GE_OK) {
      *dtype = t->dtype;
      *rank = (size_t)t->shape.rank;
      for (int32_t d = 0; d < t->shape.rank; d++) dims[d] = t->shape.dims[d] >= 0 ? t->shape.dims[d] : -1;
    }
  }
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

/* ------------------------------------------------------------------ variables */

ge_status ge_session_get_variables(ge_session *s, const char *const *names, size_t n,
                                   ge_tensor **out) {
  GE_CHECK(check_alive(s));
  if (n && (!names || !out))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "get_variables: names or out is NULL");
  for (size_t i = 0; i < n; i++) out[i] = NULL;
  for (size_t i = 0; i < n; i++) {
    ge_status st = names[i] ? ge_var_store_get(&s->vars, names[i], &out[i])
                            : ge_error(GE_ERR_INVALID_ARGUMENT, "get_variables: name %zu is NULL", i);
    if (st != GE_OK) {
      for (size_t j = 0; j < i; j++) {
        ge_tensor_free(out[j]);
        out[j] = NULL;
      }
      return st;
    }
  }
  return GE_OK;
}

ge_status ge_session_set_variables(ge_session *s, const ge_tensor_map *values) {
  GE_CHECK(check_alive(s));
  if (!values) return ge_error(GE_ERR_INVALID_ARGUMENT, "set_variables: values is NULL");
  return ge_var_store_set(&s->vars, values);
}

ge_status ge_session_restore_variables(ge_session *s, const char *path) {
  GE_CHECK(check_alive(s));
  ge_tensor_map *m = NULL;
  GE_CHECK(ge_checkpoint_load(path, &m));
  ge_status st = ge_var_store_set(&s->vars, m);
  ge_tensor_map_free(m);
  if (st != GE_OK) return ge_error_prefix(st, "restoring '%s': ", path);
  return GE_OK;
}

/* ------------------------------------------------------------------ callbacks */

static ge_status check_callback_args(ge_session *s, const char *key, ge_callback_fn fn) {
  if (s && s->shut_down)
    return ge_error(GE_ERR_STATE, "registering a callback: the session was shut down by "
                    "ge_finalize");
  if (!ge_process_initialized())
    return ge_error(GE_ERR_STATE, "registering a callback: ge is not initialized "
                    "(call ge_initialize first)");
  GE_CHECK(check_alive(s));
  if (!key || !key[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "registering a callback: the key is %s",
                    key ? "empty" : "NULL");
  if (!fn)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "registering a callback for key '%s': fn is NULL", key);
  return GE_OK;
}

ge_status ge_session_register_callback(ge_session *s, const char *key, ge_callback_fn fn,
                                       void *user) {
  GE_CHECK(check_callback_args(s, key, fn));
  return ge_callbacks_add(&s->cb, key, fn, user, 0, true);
}

ge_status ge_session_add_callback(ge_session *s, const char *key, ge_callback_fn fn, void *user,
                                  int priority) {
  GE_CHECK(check_callback_args(s, key, fn));
  return ge_callbacks_add(&s->cb, key, fn, user, priority, false);
}

ge_status ge_session_callback_stats(ge_session *s, const char *key, ge_callback_stats *out) {
  if (!s || !key || !out)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "callback_stats: NULL session, key or out");
  return ge_callbacks_stats(&s->cb, key, out);
}

ge_status ge_session_callback_key(ge_session *s, size_t i, const char **key) {
  if (!s || !key) return ge_error(GE_ERR_INVALID_ARGUMENT, "callback_key: NULL session or key");
  return ge_callbacks_key(&s->cb, i, key);
}
