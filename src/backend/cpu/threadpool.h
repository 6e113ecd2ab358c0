/* A minimal fork-join helper: splits [0,n) over up to `threads` threads of the OpenMP
 * runtime oneDNN uses (pthreads where there is none).  See threadpool.c. */
#ifndef GE_BACKEND_CPU_THREADPOOL_H
#define GE_BACKEND_CPU_THREADPOOL_H

#include <stddef.h>

/* Calls fn(arg, begin, end) on disjoint chunks covering [0,n); the calling thread runs one
   chunk itself.  Falls back to running everything on the caller when threads <= 1, n <= 1,
   or a thread cannot be created.  Returns when every chunk is done. */
void ge_parallel_for(int threads, size_t n, void (*fn)(void *arg, size_t begin, size_t end),
                     void *arg);

/* The calling thread's scratch buffer: at least `bytes`, 64-byte aligned, its contents
   undefined; NULL when out of memory.  It is kept for the thread's next calls (grown when a
   call asks for more) and freed when the thread exits, so kernels that need a large buffer
   for the duration of one run (pgemm's gathered pixels and Winograd tiles) share one per
   thread instead of holding one each.  A kernel must not hold it across a call that may run
   another kernel on the same thread. */
void *ge_cpu_thread_scratch(size_t bytes);

/* Number of online CPUs (>= 1). */
int ge_cpu_count(void);

#endif
