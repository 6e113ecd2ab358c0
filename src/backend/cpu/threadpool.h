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

/* Work stealing: calls fn(arg, begin, end, next) on claims [begin, end) that together cover
   [0, n) once, on up to `threads` threads, and returns when all are done.  Thread i starts on
   the even share [n i / t, n (i + 1) / t) and claims it front to back, `unit` items at a time
   (claims end at multiples of `unit`, so that a unit can be a natural block of the caller's
   work, such as one weight panel); a thread whose share is done takes claims from the back
   of the share with the most items left, until none is left.  Where the cores run at the same
   speed nothing is taken and the split is the even one; where one runs slower (another tenant
   on its physical core, a lower clock) the others finish its share instead of waiting for it.
   `next` is the item the thread would claim next from the same end (to prefetch; SIZE_MAX
   when there is none), which another thread may still take first.  unit 0 counts as 1.
   The last `unit` items of a share are claimed `tail` items at a time instead (tail divides
   unit; 0 = unit), from either end: when every share is down to the claim its owner is
   running, the first thread done would otherwise wait up to one whole unit for the last. */
void ge_parallel_steal(int threads, size_t n, size_t unit, size_t tail,
                       void (*fn)(void *arg, size_t begin, size_t end, size_t next), void *arg);

/* The largest divisor of unit that is at most unit / parts (at least 1): a `tail` for
   ge_parallel_steal that cuts a share's last unit into about `parts` pieces. */
size_t ge_steal_tail(size_t unit, size_t parts);

/* The claims of ge_parallel_steal over `outer` blocks of `inner` items each (a weight's panels,
   each of its row blocks, or the other way round): one block each where there are 4 or more a
   thread, the last block of a share in quarters (*tail), so that the thread done first takes
   some of the other's instead of waiting for it; else a quarter of a share (*tail 0); one
   thread: one claim, all of them.  Returns the unit. */
size_t ge_steal_blocks(int threads, size_t outer, size_t inner, size_t *tail);

/* The calling thread's scratch buffer: at least `bytes`, 64-byte aligned, its contents
   undefined; NULL when out of memory.  It is kept for the thread's next calls (grown when a
   call asks for more) and freed when the thread exits, so kernels that need a large buffer
   for the duration of one run (pgemm's gathered pixels and Winograd tiles) share one per
   thread instead of holding one each.  A kernel must not hold it across a call that may run
   another kernel on the same thread. */
void *ge_cpu_thread_scratch(size_t bytes);

/* Until ge_threads_one_leave(returned value), every OpenMP parallel region the calling thread
   opens gets a team of one: a run of a plan compiled for N threads on the calling thread
   alone (oneDNN's primitives then run as they do nested in another parallel region, on the
   thread that calls them).  Per thread (the OpenMP max-active-levels setting of the calling
   thread's data environment); -1 where the runtime has no such setting (then nothing
   changes). */
int ge_threads_one_enter(void);
/* Makes the calling thread ready for ge_threads_one_enter without allocating there: the
   runtime's first change of a thread's settings allocates them, which this does (once per
   thread) in a run that may allocate, so that a later one-thread run does not. */
void ge_threads_one_ready(void);
void ge_threads_one_leave(int prev);

/* The calling thread starts a run of `threads` (nested calls: a subgraph's run inside its
   caller's).  Inside a run, a team member that finds itself on the CPU of another member of
   the same parallel region moves to a free allowed CPU (threadpool.c, "members on one CPU");
   this opens an empty region of `threads` first, so that they start apart.  Nothing moves
   where threads < 2, while another thread has a run in progress, or with GE_SPREAD_THREADS=0. */
void ge_threads_run_begin(int threads);
/* The end of the calling thread's run: gives back their own CPU affinity to the threads that
   its regions pinned (the caller now; a team member one second after it was pinned).
   Cheap where nothing is pinned. */
void ge_threads_run_end(void);

/* Tests: the function that tells a member its CPU (NULL: sched_getcpu), to stage members that
   start on one CPU. */
void ge_threads_spread_getcpu_for_tests(int (*getcpu)(void));

/* Number of online CPUs (>= 1). */
int ge_cpu_count(void);

#endif
