/* Adaptive thread count (thread_adapt.h). */
#include "runtime/thread_adapt.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ir/error.h"
#include "ir/ir.h"

/* A probe of one thread switches when it beats the N-thread median by 15%; a probe of N
   threads switches back when it beats the one-thread median by 10%.  Probes of one thread
   wait for the N-thread median to exceed the fastest N-thread run by 25%, or to come within
   15% of the fastest one-thread run (stalled). */
#define STALL_NUM 5 /* median * 4 > best * 5 */
#define ONE_WINS(ns, med) ((ns) * 20 < (med) * 17)
#define FULL_WINS(ns, med) ((ns) * 10 < (med) * 9)
#define GAP_FULL_FIRST 16u
#define GAP_FULL_MAX 64u
#define GAP_ONE_FIRST 4u
#define GAP_ONE_MAX 64u

void ge_adapt_init(ge_adapt_state *s, int threads) {
  memset(s, 0, sizeof *s);
  s->threads = threads;
}

static void ring_push(ge_adapt_state *s, int k, uint64_t ns) {
  s->ring[k][s->pos[k]] = ns;
  s->pos[k] = (s->pos[k] + 1) % GE_ADAPT_WINDOW;
  if (s->n[k] < GE_ADAPT_WINDOW) s->n[k]++;
}

static void ring_clear(ge_adapt_state *s, int k) { s->n[k] = s->pos[k] = 0; }

/* The median of ring k (the lower of the middle two); 0 when empty. */
static uint64_t ring_median(const ge_adapt_state *s, int k) {
  unsigned n = s->n[k];
  if (!n) return 0;
  uint64_t v[GE_ADAPT_WINDOW];
  memcpy(v, s->ring[k], n * sizeof v[0]);
  for (unsigned i = 1; i < n; i++) /* insertion sort: at most 8 */
    for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
      uint64_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[(n - 1) / 2];
}

/* Whether the N-thread runs may be stalled: their median is well above the fastest of them,
   or not clearly below the fastest one-thread run; or no one-thread run has been timed yet
   (a core held from the start leaves no fast N-thread run to compare with).  Only once the
   window is full. */
static bool stalled(const ge_adapt_state *s) {
  if (s->n[0] < GE_ADAPT_WINDOW) return false;
  if (!s->best_one) return true;
  uint64_t m = ring_median(s, 0);
  return m * 4 > s->best * STALL_NUM || ONE_WINS(s->best_one, m);
}

int ge_adapt_decide(ge_adapt_state *s, bool *probe) {
  *probe = false;
  if (s->threads <= 1) return 1;
  if (s->wait) {
    s->wait--;
  } else if (s->one || stalled(s)) {
    *probe = true;
    s->stats.probes++;
    return s->one ? s->threads : 1;
  }
  return s->one ? 1 : s->threads;
}

void ge_adapt_observe(ge_adapt_state *s, int threads, bool probe, uint64_t ns) {
  if (s->threads <= 1) return;
  bool on_one = threads == 1;
  if (on_one && (!s->best_one || ns < s->best_one)) s->best_one = ns;
  if (!probe) {
    ring_push(s, on_one, ns);
    if (!on_one && (!s->best || ns < s->best)) s->best = ns;
    return;
  }
  if (on_one) { /* probed one thread while on N */
    if (ONE_WINS(ns, ring_median(s, 0))) {
      s->one = true;
      s->stats.switches++;
      ring_clear(s, 1);
      ring_push(s, 1, ns);
      s->gap = s->wait = GAP_ONE_FIRST;
    } else {
      s->gap = s->gap < GAP_FULL_FIRST ? GAP_FULL_FIRST : s->gap * 2;
      if (s->gap > GAP_FULL_MAX) s->gap = GAP_FULL_MAX;
      s->wait = s->gap;
    }
    return;
  }
  /* probed N threads while on one */
  if (FULL_WINS(ns, ring_median(s, 1))) {
    s->one = false;
    s->stats.switches++;
    ring_clear(s, 0); /* the N-thread runs before the switch were the stalled ones */
    ring_push(s, 0, ns);
    if (ns < s->best) s->best = ns;
    s->gap = s->wait = 0;
  } else {
    s->gap = s->gap * 2 > GAP_ONE_MAX ? GAP_ONE_MAX : s->gap * 2;
    if (s->gap < GAP_ONE_FIRST) s->gap = GAP_ONE_FIRST;
    s->wait = s->gap;
  }
}

/* ------------------------------------------------------------------ the plan's controller */

/* Plan runs in flight in the process, and runs started: a run counts only if it was alone
   from start to end. */
static _Atomic uint64_t g_inflight, g_started;

ge_status ge_thread_adapt_create(int threads, bool force_one, ge_thread_adapt **out) {
  *out = NULL;
  if (threads <= 1) return GE_OK;
  ge_thread_adapt *a = calloc(1, sizeof *a);
  if (!a) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph");
  pthread_mutex_init(&a->mu, NULL);
  ge_adapt_init(&a->s, threads);
  a->force_one = force_one;
  *out = a;
  return GE_OK;
}

void ge_thread_adapt_free(ge_thread_adapt *a) {
  if (!a) return;
  pthread_mutex_destroy(&a->mu);
  free(a);
}

int ge_thread_adapt_begin(ge_thread_adapt *a, ge_adapt_ticket *t) {
  memset(t, 0, sizeof *t);
  t->gen = atomic_fetch_add(&g_started, 1) + 1;
  uint64_t alone = atomic_fetch_add(&g_inflight, 1) == 0;
  if (a->force_one) {
    t->threads = 1;
  } else if (alone && pthread_mutex_trylock(&a->mu) == 0) {
    t->held = true;
    t->threads = ge_adapt_decide(&a->s, &t->probe);
  } else {
    t->threads = atomic_load_explicit(&a->one_now, memory_order_relaxed) ? 1 : a->s.threads;
  }
  t->t0 = ge_now_ns();
  return t->threads;
}

void ge_thread_adapt_end(ge_thread_adapt *a, ge_adapt_ticket *t, bool ok) {
  uint64_t ns = ge_now_ns() - t->t0;
  atomic_fetch_sub(&g_inflight, 1);
  if (!t->held) return;
  /* alone throughout: no run started after this one */
  if (ok && atomic_load(&g_started) == t->gen) {
    ge_adapt_observe(&a->s, t->threads, t->probe, ns);
    atomic_store_explicit(&a->one_now, a->s.one, memory_order_relaxed);
    atomic_store_explicit(&a->switches, a->s.stats.switches, memory_order_relaxed);
    atomic_store_explicit(&a->probes, a->s.stats.probes, memory_order_relaxed);
  }
  pthread_mutex_unlock(&a->mu);
}

void ge_thread_adapt_stats(ge_thread_adapt *a, ge_run_stats *out) {
  if (!a) return;
  out->switches += atomic_load_explicit(&a->switches, memory_order_relaxed);
  out->probes += atomic_load_explicit(&a->probes, memory_order_relaxed);
}
