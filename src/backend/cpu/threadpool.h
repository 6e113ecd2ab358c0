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

/* Number of online CPUs (>= 1). */
int ge_cpu_count(void);

#endif
