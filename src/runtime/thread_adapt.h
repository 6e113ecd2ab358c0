/* Adaptive thread count: a plan compiled for N > 1 threads runs on one thread while its
 * N-thread runs are stalled.
 *
 * Why: every parallel region of a run (each oneDNN primitive, each of ge's own kernels) ends
 * in a join that waits for all its threads.  When another process holds one of the cores, the
 * thread on it is descheduled for milliseconds at a time, and each join waits for it: on a
 * 2-core machine with one core busy, MobileNetV2 at 2 threads takes 2.5x longer than on one
 * thread.  Only the outcome is visible from here, so the controller compares run times:
 *
 * - It runs the plan on N threads and keeps the last 8 of those runs' times and the fastest.
 *   Once there are 8, one run takes one thread (a probe), which gives the fastest one-thread
 *   time so far.
 * - From then on, while the N-thread median stays within 1.25x of the fastest N-thread run
 *   and 15% below the fastest one-thread run, nothing else happens: on a quiet machine every
 *   run but that one takes N threads.
 * - Otherwise a run in between takes one thread (a probe).  If it beats the N-thread median
 *   by 15%, runs take one thread from then on; if not, the next probe waits 16, 32, 64 runs.
 * - While on one thread, a run now and then (after 4, 8, .. 64 runs) takes N threads again; if
 *   it beats the median of the one-thread runs by 10%, runs go back to N threads.
 *
 * Only runs that had the process to themselves count (no other plan run started or was in
 * flight in the process meanwhile): two concurrent runs slow each other down, which says
 * nothing about the cores.  A run that fails does not count either.
 *
 * ge.exec.adaptiveThreads turns it on or off; it is on by default for inference and off for
 * training, whose gradient reductions may sum in another order on one thread than on N. */
#ifndef GE_RUNTIME_THREAD_ADAPT_H
#define GE_RUNTIME_THREAD_ADAPT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ge/ge.h"

#define GE_ADAPT_WINDOW 8

/* The decisions, without clock or locks (unit-tested with made-up run times). */
typedef struct ge_adapt_state {
  int threads;                          /* N */
  bool one;                             /* runs take one thread */
  uint64_t ring[2][GE_ADAPT_WINDOW];    /* [0]: N-thread run times (ns), [1]: one-thread */
  unsigned n[2], pos[2];
  uint64_t best;                        /* the fastest N-thread run (0: none yet) */
  uint64_t best_one;                    /* the fastest one-thread run (0: none yet) */
  unsigned wait, gap;                   /* runs before the next probe may be; the last wait */
  ge_run_stats stats;
} ge_adapt_state;

void ge_adapt_init(ge_adapt_state *s, int threads);
/* The next run's thread count (1 or N); *probe: it is a probe of the other mode. */
int ge_adapt_decide(ge_adapt_state *s, bool *probe);
/* That run took ns nanoseconds on `threads` threads. */
void ge_adapt_observe(ge_adapt_state *s, int threads, bool probe, uint64_t ns);

/* The controller of one plan: the state behind a lock that one run at a time holds. */
typedef struct ge_thread_adapt {
  pthread_mutex_t mu;
  ge_adapt_state s;
  bool force_one; /* ge.exec.forceOneThread (tests): every run on one thread */
  _Atomic int one_now; /* s.one, for the runs that do not hold the lock */
  _Atomic uint64_t switches, probes; /* s.stats', readable without the lock */
} ge_thread_adapt;

/* One run's part: begin gives its thread count, end records its time. */
typedef struct ge_adapt_ticket {
  int threads;
  bool held, probe;
  uint64_t t0, gen;
} ge_adapt_ticket;

/* NULL where threads <= 1 (nothing to adapt); *out NULL then. */
ge_status ge_thread_adapt_create(int threads, bool force_one, ge_thread_adapt **out);
void ge_thread_adapt_free(ge_thread_adapt *a);
int ge_thread_adapt_begin(ge_thread_adapt *a, ge_adapt_ticket *t);
void ge_thread_adapt_end(ge_thread_adapt *a, ge_adapt_ticket *t, bool ok);
/* Adds this controller's switches and probes to *out (the session counts the runs). */
void ge_thread_adapt_stats(ge_thread_adapt *a, ge_run_stats *out);

#endif
