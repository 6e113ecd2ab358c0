/* Fork-join.  Where oneDNN's OpenMP runtime is loaded (libgomp, or a runtime with its ABI),
 * ge_parallel_for runs on that runtime's thread team: no thread is created per call, the
 * threads are the ones oneDNN's kernels use (so `threads` bounds the busy cores for every
 * kernel alike), and idle threads follow the runtime's wait policy (GOMP_SPINCOUNT /
 * OMP_WAIT_POLICY: a short spin, then sleep).  Elsewhere, and in ThreadSanitizer builds (the
 * OpenMP runtime is not instrumented), a fresh set of pthreads per call, joined before return. */
#include "backend/cpu/threadpool.h"

#include <dlfcn.h>
#include <pthread.h>
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
} omp_job;

/* One team member: its share of [0, n) by the team's actual size (smaller than asked when
   nested in another parallel region). */
static void omp_member(void *p) {
  const omp_job *j = p;
  size_t t = (size_t)j->rt->num_threads(), i = (size_t)j->rt->thread_num();
  if (t < 1) t = 1;
  if (i >= t) return;
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
    omp_job j = {.fn = fn, .arg = arg, .n = n, .rt = &omp_found};
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
    ge_aligned_free(t->p);
    t->p = ge_aligned_alloc(bytes);
    t->bytes = t->p ? bytes : 0;
  }
  return t->p;
}
