/* Fork-join.  Where oneDNN's OpenMP runtime is loaded (libgomp, or a runtime with its ABI),
 * ge_parallel_for runs on that runtime's thread team: no thread is created per call, the
 * threads are the ones oneDNN's kernels use (so `threads` bounds the busy cores for every
 * kernel alike), and idle threads follow the runtime's wait policy (GOMP_SPINCOUNT /
 * OMP_WAIT_POLICY: a short spin, then sleep).  Elsewhere, and in ThreadSanitizer builds (the
 * OpenMP runtime is not instrumented), a fresh set of pthreads per call, joined before return.
 * ge_parallel_steal runs on either: even shares, claimed front to back by their owners and
 * back to front by threads whose own share is done. */
#include "backend/cpu/threadpool.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"

#define GE_PF_MAX_THREADS 256

typedef struct pf_job {
  void (*fn)(void *arg, size_t begin, size_t end);
  void *arg;
  size_t begin, end;
} pf_job;

static void *pf_trampoline(void *p) {
  pf_job *j = p;
  j->fn(j->arg, j->begin, j->end);
  return NULL;
}

/* ---------------------------------------------------------------- the OpenMP runtime's team */

typedef void (*gomp_parallel_fn)(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
typedef int (*omp_int_fn)(void);

typedef struct omp_rt {
  gomp_parallel_fn parallel;
  omp_int_fn thread_num, num_threads;
} omp_rt;

static pthread_once_t omp_once = PTHREAD_ONCE_INIT;
static omp_rt omp_found; /* written once, under omp_once; read-only afterwards */

static void omp_lookup(void) {
#if !defined(__SANITIZE_THREAD__)
  void *p = dlsym(RTLD_DEFAULT, "GOMP_parallel");
  void *t = dlsym(RTLD_DEFAULT, "omp_get_thread_num");
  void *n = dlsym(RTLD_DEFAULT, "omp_get_num_threads");
  if (p && t && n) {
    memcpy(&omp_found.parallel, &p, sizeof p);
    memcpy(&omp_found.thread_num, &t, sizeof t);
    memcpy(&omp_found.num_threads, &n, sizeof n);
  }
#endif
}

typedef struct omp_job {
  void (*fn)(void *arg, size_t begin, size_t end);
  void *arg;
  size_t n;
  const omp_rt *rt;
  _Atomic uint64_t cpus; /* the CPUs (below 64) the team's members have started on */
  pid_t caller;          /* the thread that opened the region, and its CPU then */
  int caller_cpu;
} omp_job;

/* ---------------------------------------------------------------- members on one CPU
 *
 * An idle team member sleeps after the runtime's short spin, and a sleeping thread that is
 * woken may be placed on its waker's CPU even where another CPU is idle (seen on a 2-vCPU VM).
 * Once two threads of a run share a CPU they stay together: they take turns (each spins
 * briefly at a barrier, then sleeps), so that CPU never holds two runnable threads for long
 * and the load balancer sees nothing to move, and every wake-up places the wakee on its
 * waker's CPU again.  Measured: MobileNetV2 at 2 threads, after the process idled 0.1 s, ran
 * 4-5x slower (11-14 ms, ~110 voluntary context switches a run, against 2.5 ms and 1) for
 * ~40 ms at a time.  So, inside a run (ge_threads_run_begin/_end), a member that starts on
 * the CPU of another member of the same region pins itself to an allowed CPU none of them is
 * on, and pins the region's caller to the CPU it opened the region on.  Every run opens an
 * empty region first, so that members start apart before the first kernel.  At the run's
 * end the caller gets its own affinity back; a team member (a thread of the OpenMP runtime,
 * not the user's) keeps its CPU for a second, so that the next runs start apart (a member's
 * first wake-up of a run would often put it on the caller's CPU again), and gets its own
 * affinity back at the end of a run after that.  Outside a run (compiling, packing weights)
 * nothing moves, nor while another thread of the process has a run in progress (more threads
 * than one run's to place: the scheduler's job), nor where no allowed CPU is free (the user's
 * pinning included).
 * Process-wide switch: GE_SPREAD_THREADS=0. */

#define PIN_MAX 64

typedef struct pin_entry {
  pid_t owner, tid; /* the run's calling thread, the thread pinned */
  uint64_t at_ns;   /* when it was pinned (CLOCK_MONOTONIC) */
  cpu_set_t orig;
} pin_entry;

#define PIN_MEMBER_NS 1000000000u /* how long a team member stays pinned */

static pthread_once_t spread_once = PTHREAD_ONCE_INIT;
static bool spread_on; /* written once, under spread_once */
static int (*_Atomic spread_getcpu)(void) = sched_getcpu; /* a test may fake it */
static _Thread_local int in_run; /* the calling thread's runs in progress (nested: subgraphs) */
static _Atomic int runs_inflight; /* the process's threads with a run in progress */

void ge_threads_spread_getcpu_for_tests(int (*getcpu)(void)) {
  atomic_store(&spread_getcpu, getcpu ? getcpu : sched_getcpu);
}
static pthread_mutex_t pin_mu = PTHREAD_MUTEX_INITIALIZER;
static pin_entry pins[PIN_MAX]; /* under pin_mu */
static _Atomic int pin_count;   /* entries in pins */

static void spread_init(void) {
  const char *e = getenv("GE_SPREAD_THREADS");
  spread_on = !(e && e[0] == '0');
}

static pid_t my_tid(void) {
  static _Thread_local pid_t tid;
  if (!tid) tid = gettid();
  return tid;
}

/* Pins `tid` to `cpu` for the rest of owner's run; false where it could not.  Under pin_mu. */
static bool pin_locked(pid_t owner, pid_t tid, int cpu) {
  int n = atomic_load_explicit(&pin_count, memory_order_relaxed);
  int at = -1;
  for (int i = 0; i < n; i++)
    if (pins[i].tid == tid) at = i;
  if (at < 0) {
    if (n >= PIN_MAX || sched_getaffinity(tid, sizeof pins[n].orig, &pins[n].orig) != 0) return false;
    pins[n].owner = owner;
    pins[n].tid = tid;
    at = n;
    atomic_store_explicit(&pin_count, n + 1, memory_order_release);
  }
  if (!CPU_ISSET(cpu, &pins[at].orig)) return false;
  pins[at].owner = owner;
  pins[at].at_ns = ge_now_ns();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(tid, sizeof one, &one) == 0;
}

/* Marks the member's CPU in the region's set; where another member started there, pins this
   member to a free allowed CPU and the region's caller to its own. */
static void spread_member(omp_job *j) {
  if (j->caller_cpu < 0) return; /* not in a run of its own */
  int cpu = atomic_load_explicit(&spread_getcpu, memory_order_relaxed)();
  if (cpu < 0 || cpu >= 64) return;
  uint64_t bit = (uint64_t)1 << cpu;
  uint64_t had = atomic_fetch_or_explicit(&j->cpus, bit, memory_order_relaxed);
  if (!(had & bit)) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  int to = -1;
  for (int c = 0; c < 64 && to < 0; c++)
    if (CPU_ISSET(c, &allowed) && !(had >> c & 1)) to = c;
  if (to < 0) return;
  pid_t self = my_tid();
  pthread_mutex_lock(&pin_mu);
  bool ok = self == j->caller || pin_locked(j->caller, j->caller, j->caller_cpu);
  if (ok && pin_locked(j->caller, self, to))
    atomic_fetch_or_explicit(&j->cpus, (uint64_t)1 << to, memory_order_relaxed);
  pthread_mutex_unlock(&pin_mu);
}

static void spread_nothing(void *arg, size_t begin, size_t end) {
  (void)arg;
  (void)begin;
  (void)end;
}

void ge_threads_run_begin(int threads) {
  if (in_run++ == 0) atomic_fetch_add_explicit(&runs_inflight, 1, memory_order_relaxed);
  if (threads < 2) return;
  pthread_once(&spread_once, spread_init);
  if (spread_on) ge_parallel_for(threads, (size_t)threads, spread_nothing, NULL);
}

void ge_threads_run_end(void) {
  if (in_run > 0 && --in_run == 0) atomic_fetch_sub_explicit(&runs_inflight, 1, memory_order_relaxed);
  if (in_run > 0 || atomic_load_explicit(&pin_count, memory_order_acquire) == 0) return;
  pid_t self = my_tid();
  uint64_t now = ge_now_ns();
  pthread_mutex_lock(&pin_mu);
  int n = atomic_load_explicit(&pin_count, memory_order_relaxed), k = 0;
  for (int i = 0; i < n; i++) {
    bool caller = pins[i].tid == pins[i].owner;
    if ((caller && pins[i].owner == self) || (!caller && now - pins[i].at_ns >= PIN_MEMBER_NS))
      sched_setaffinity(pins[i].tid, sizeof pins[i].orig, &pins[i].orig); /* ESRCH: it exited */
    else
      pins[k++] = pins[i];
  }
  atomic_store_explicit(&pin_count, k, memory_order_release);
  pthread_mutex_unlock(&pin_mu);
}

/* One team member: its share of [0, n) by the team's actual size (smaller than asked when
   nested in another parallel region). */
static void omp_member(void *p) {
  omp_job *j = p;
  size_t t = (size_t)j->rt->num_threads(), i = (size_t)j->rt->thread_num();
  if (t < 1) t = 1;
  if (i >= t) return;
  if (t > 1 && spread_on) spread_member(j);
  size_t base = j->n / t, rem = j->n % t;
  size_t begin = i * base + (i < rem ? i : rem), len = base + (i < rem ? 1 : 0);
  if (len) j->fn(j->arg, begin, begin + len);
}

void ge_parallel_for(int threads, size_t n, void (*fn)(void *arg, size_t begin, size_t end),
                     void *arg) {
  if (n == 0) return;
  size_t t = threads > 1 ? (size_t)threads : 1;
  if (t > GE_PF_MAX_THREADS) t = GE_PF_MAX_THREADS;
  if (t > n) t = n;
  if (t <= 1) {
    fn(arg, 0, n);
    return;
  }
  pthread_once(&omp_once, omp_lookup);
  if (omp_found.parallel) {
    pthread_once(&spread_once, spread_init);
    omp_job j = {.fn = fn, .arg = arg, .n = n, .rt = &omp_found, .caller_cpu = -1};
    atomic_init(&j.cpus, 0);
    /* outside a run (compiling, packing weights) nothing moves, nor while other threads run
       too (more threads than the run's: the scheduler's to place) */
    if (spread_on && in_run && atomic_load_explicit(&runs_inflight, memory_order_relaxed) == 1) {
      j.caller = my_tid();
      j.caller_cpu = atomic_load_explicit(&spread_getcpu, memory_order_relaxed)();
    }
    omp_found.parallel(omp_member, &j, (unsigned)t, 0);
    return;
  }
  pf_job jobs[GE_PF_MAX_THREADS];
  pthread_t tids[GE_PF_MAX_THREADS];
  int started[GE_PF_MAX_THREADS];
  size_t base = n / t, rem = n % t, pos = 0;
  for (size_t i = 0; i < t; i++) {
    size_t len = base + (i < rem ? 1 : 0);
    jobs[i].fn = fn;
    jobs[i].arg = arg;
    jobs[i].begin = pos;
    jobs[i].end = pos + len;
    pos += len;
  }
  /* chunks 1..t-1 on new threads; chunk 0 on the caller */
  for (size_t i = 1; i < t; i++)
    started[i] = pthread_create(&tids[i], NULL, pf_trampoline, &jobs[i]) == 0;
  fn(arg, jobs[0].begin, jobs[0].end);
  for (size_t i = 1; i < t; i++) {
    if (started[i])
      pthread_join(tids[i], NULL);
    else
      fn(arg, jobs[i].begin, jobs[i].end); /* could not start: run it here */
  }
}

/* ---------------------------------------------------------------- one-thread runs */

typedef void (*omp_set_int_fn)(int);

static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static omp_set_int_fn cap_set;
static omp_int_fn cap_get;

static void cap_lookup(void) {
  void *s = dlsym(RTLD_DEFAULT, "omp_set_max_active_levels");
  void *g = dlsym(RTLD_DEFAULT, "omp_get_max_active_levels");
  if (s && g) {
    memcpy(&cap_set, &s, sizeof s);
    memcpy(&cap_get, &g, sizeof g);
  }
}

int ge_threads_one_enter(void) {
  pthread_once(&cap_once, cap_lookup);
  if (!cap_set) return -1;
  int prev = cap_get();
  cap_set(0);
  return prev;
}

void ge_threads_one_ready(void) {
  static _Thread_local bool done;
  if (done) return;
  done = true;
  pthread_once(&cap_once, cap_lookup);
  if (cap_set) cap_set(cap_get()); /* libgomp makes the thread's own settings now (a malloc) */
}

void ge_threads_one_leave(int prev) {
  if (prev >= 0 && cap_set) cap_set(prev);
}

/* ---------------------------------------------------------------- work stealing */

/* One share's unclaimed items [front, back), packed as back << 32 | front so that one
   compare-and-swap claims from either end; a cache line each, so that the owner's claims do
   not contend with the other shares'. */
typedef struct steal_share {
  _Atomic uint64_t fb;
  char pad[64 - sizeof(uint64_t)];
} steal_share;

typedef struct steal_job {
  void (*fn)(void *arg, size_t begin, size_t end, size_t next);
  void *arg;
  size_t unit, tail, t;
  steal_share *sh;
} steal_job;

static uint64_t fb_pack(size_t f, size_t b) { return (uint64_t)b << 32 | (uint64_t)f; }

/* Claims from share i: from the front (its owner) up to the next multiple of unit, or from the
   back (a thief) down to the previous one; of tail where no more than unit items are left.
   False when the share is empty. */
static bool steal_claim(const steal_job *j, size_t i, bool back, size_t *begin, size_t *end, size_t *next) {
  uint64_t v = atomic_load_explicit(&j->sh[i].fb, memory_order_relaxed);
  for (;;) {
    size_t f = (size_t)(v & 0xffffffffu), b = (size_t)(v >> 32);
    if (f >= b) return false;
    size_t lo, hi, u = b - f <= j->unit ? j->tail : j->unit;
    if (!back) {
      lo = f;
      hi = (f / u + 1) * u;
      if (hi > b) hi = b;
    } else {
      hi = b;
      lo = (b - 1) / u * u;
      if (lo < f) lo = f;
    }
    uint64_t nv = back ? fb_pack(f, lo) : fb_pack(hi, b);
    if (atomic_compare_exchange_weak_explicit(&j->sh[i].fb, &v, nv, memory_order_acq_rel, memory_order_relaxed)) {
      *begin = lo;
      *end = hi;
      *next = back ? (lo > f ? lo - 1 : SIZE_MAX) : (hi < b ? hi : SIZE_MAX);
      return true;
    }
  }
}

static void steal_member(void *arg, size_t s0, size_t s1) {
  const steal_job *j = arg;
  size_t b, e, nx;
  for (size_t i = s0; i < s1; i++) /* this thread's own shares (one, unless the team is smaller) */
    while (steal_claim(j, i, false, &b, &e, &nx)) j->fn(j->arg, b, e, nx);
  for (;;) { /* then the back of the share with the most left */
    size_t best = SIZE_MAX, most = 0;
    for (size_t i = 0; i < j->t; i++) {
      uint64_t v = atomic_load_explicit(&j->sh[i].fb, memory_order_relaxed);
      size_t f = (size_t)(v & 0xffffffffu), bk = (size_t)(v >> 32);
      if (bk > f && bk - f > most) {
        most = bk - f;
        best = i;
      }
    }
    if (best == SIZE_MAX) return;
    if (steal_claim(j, best, true, &b, &e, &nx)) j->fn(j->arg, b, e, nx);
  }
}

size_t ge_steal_tail(size_t unit, size_t parts) {
  if (parts < 1) parts = 1;
  size_t d = unit / parts;
  while (d > 1 && unit % d) d--;
  return d ? d : 1;
}

size_t ge_steal_blocks(int threads, size_t outer, size_t inner, size_t *tail) {
  size_t t = threads > 1 ? (size_t)threads : 1, items = outer * inner;
  bool whole = t > 1 && outer >= 4 * t;
  *tail = whole ? ge_steal_tail(inner, 4) : 0;
  return t <= 1 ? items : whole ? inner : items / (4 * t);
}

void ge_parallel_steal(int threads, size_t n, size_t unit, size_t tail,
                       void (*fn)(void *arg, size_t begin, size_t end, size_t next), void *arg) {
  if (n == 0) return;
  if (unit == 0) unit = 1;
  if (tail == 0 || tail > unit || unit % tail) tail = unit;
  size_t t = threads > 1 ? (size_t)threads : 1;
  if (t > GE_PF_MAX_THREADS) t = GE_PF_MAX_THREADS;
  if (t > n) t = n;
  if (t <= 1 || n > 0xffffffffu) { /* one thread, or more items than a share's halves count: in order */
    for (size_t b = 0; b < n;) {
      size_t e = (b / unit + 1) * unit;
      if (e > n) e = n;
      fn(arg, b, e, e < n ? e : SIZE_MAX);
      b = e;
    }
    return;
  }
  steal_share sh[GE_PF_MAX_THREADS] __attribute__((aligned(64)));
  for (size_t i = 0; i < t; i++) atomic_init(&sh[i].fb, fb_pack(n * i / t, n * (i + 1) / t));
  steal_job j = {.fn = fn, .arg = arg, .unit = unit, .tail = tail, .t = t, .sh = sh};
  ge_parallel_for((int)t, t, steal_member, &j);
}

int ge_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* ---------------------------------------------------------------- per-thread scratch */

typedef struct thread_scratch {
  void *p;
  size_t bytes;
} thread_scratch;

static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static pthread_key_t scratch_key;
static int scratch_key_ok; /* written once, under scratch_once */

static void scratch_free(void *v) {
  thread_scratch *t = v;
  ge_aligned_free(t->p);
  free(t);
}

#define SCRATCH_HUGE ((size_t)2 << 20)

static void scratch_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

void *ge_cpu_thread_scratch(size_t bytes) {
  pthread_once(&scratch_once, scratch_init);
  if (!scratch_key_ok) return NULL;
  thread_scratch *t = pthread_getspecific(scratch_key);
  if (!t) {
    t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (pthread_setspecific(scratch_key, t) != 0) {
      free(t);
      return NULL;
    }
  }
  if (t->bytes < bytes) {
    /* from 1 MiB on, whole 2 MiB pages: ge_aligned_alloc gives huge pages to whole ones only, and
       a Winograd convolution's V and M (pgemm.c) of 2.5 MiB had their last 0.5 MiB on small pages
       (ResNet-50's layer3.0.conv2: its transforms 1.2x slower than in a 4 MiB buffer) */
    if (bytes >= SCRATCH_HUGE / 2 && bytes <= SIZE_MAX - SCRATCH_HUGE)
      bytes = (bytes + SCRATCH_HUGE - 1) / SCRATCH_HUGE * SCRATCH_HUGE;
    ge_aligned_free(t->p);
    t->p = ge_aligned_alloc(bytes);
    t->bytes = t->p ? bytes : 0;
  }
  return t->p;
}
