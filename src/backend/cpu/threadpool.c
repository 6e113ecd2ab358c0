/* Fork-join over pthreads: a fresh set of threads per call, joined before return. */
#include "backend/cpu/threadpool.h"

#include <pthread.h>
#include <unistd.h>

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
