/* The adaptive thread count (runtime/thread_adapt.h): its decisions on made-up run times,
 * and runs of a plan compiled for 2 threads taken on one thread through a session. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stdatomic.h>

#include "backend/cpu/threadpool.h"
#include "ge/ge.h"
#include "helpers/test_common.h"
#include "runtime/thread_adapt.h"

/* ------------------------------------------------------------------ decisions */

#define MS 1000000ull

/* Run times of N threads and of one: what the cores give at the moment. */
typedef struct host {
  uint64_t full, one;
  uint64_t rng;
  double jitter; /* each run's time times 1 + jitter * u, u in [-1, 1) */
} host;

static uint64_t host_time(host *h, int threads) {
  double base = (double)(threads == 1 ? h->one : h->full);
  double u = ge_test_rand_unit(&h->rng); /* [-1, 1) */
  return (uint64_t)(base * (1.0 + h->jitter * u));
}

typedef struct tally {
  unsigned runs, on_one, probes, first_one, first_full_after;
} tally;

/* n runs; first_one: the index (1-based) of the first run on one thread (0: none);
   first_full_after: of the first non-probe run on N threads after a run on one. */
static tally drive(ge_adapt_state *s, host *h, unsigned n) {
  tally t = {0};
  bool was_one = false;
  for (unsigned i = 0; i < n; i++) {
    bool probe = false;
    int th = ge_adapt_decide(s, &probe);
    t.runs++;
    if (th == 1) {
      t.on_one++;
      if (!t.first_one) t.first_one = i + 1;
      was_one = true;
    } else if (!probe && was_one && !t.first_full_after) {
      t.first_full_after = i + 1;
    }
    t.probes += probe;
    ge_adapt_observe(s, th, probe, host_time(h, th));
  }
  return t;
}

/* A quiet machine: N threads almost twice as fast as one, 10% jitter: one probe of one thread
   once the window is full (run 9), and no other run on one thread. */
static void test_quiet_probes_once(void **state) {
  (void)state;
  ge_adapt_state s;
  ge_adapt_init(&s, 2);
  host h = {.full = 5 * MS, .one = 9 * MS, .rng = 1, .jitter = 0.1};
  tally t = drive(&s, &h, 5000);
  assert_int_equal(t.on_one, 1);
  assert_int_equal(t.first_one, GE_ADAPT_WINDOW + 1);
  assert_int_equal(t.probes, 1);
  assert_int_equal(s.stats.switches, 0);
}

/* A core held from the start: every N-thread run stalled (18 ms), one thread 9.5.  The first
   probe, after 8 runs, switches. */
static void test_core_held_from_start(void **state) {
  (void)state;
  ge_adapt_state s;
  ge_adapt_init(&s, 2);
  host h = {.full = 18 * MS, .one = 9500000, .rng = 5, .jitter = 0.05};
  tally t = drive(&s, &h, 1000);
  assert_int_equal(t.first_one, GE_ADAPT_WINDOW + 1);
  assert_true(s.one);
  assert_int_equal(s.stats.switches, 1);
  assert_true(t.on_one >= 950);
}

/* One core taken by another process after a quiet start: N-thread runs take 18 ms, one-thread
   runs 9.5.  Runs go to one thread soon after the window of 8 fills with stalled runs, stay
   there (a probe of N threads now and then), and come back to N threads soon after the core
   is free again. */
static void test_stall_switches_and_back(void **state) {
  (void)state;
  ge_adapt_state s;
  ge_adapt_init(&s, 2);
  host h = {.full = 5 * MS, .one = 9 * MS, .rng = 2, .jitter = 0.05};
  tally t = drive(&s, &h, 50);
  assert_int_equal(t.on_one, 1); /* the first probe */

  h.full = 18 * MS;
  h.one = 9500000;
  t = drive(&s, &h, 1000);
  assert_true(t.first_one > 0 && t.first_one <= GE_ADAPT_WINDOW / 2 + 2);
  assert_true(t.on_one >= 950); /* probes of N threads: after 4, 8, .. 64 runs */
  assert_true(s.one);
  assert_int_equal(s.stats.switches, 1);

  h.full = 5 * MS;
  h.one = 9 * MS;
  t = drive(&s, &h, 1000);
  assert_false(s.one);
  assert_int_equal(s.stats.switches, 2);
  assert_true(t.first_full_after > 0 && t.first_full_after <= 64 + 2);
  assert_true(t.on_one <= 64 + 1);
  /* and no probe once the N-thread runs are fast again */
  uint64_t probes = s.stats.probes;
  t = drive(&s, &h, 2000);
  assert_int_equal(t.on_one, 0);
  assert_int_equal(s.stats.probes, probes);
}

/* Both cores slower (N threads 9 ms, one 16): the N-thread runs look stalled against the
   fastest one, but one thread does not pay: runs stay on N threads, and the probes of one
   thread thin out to one in 64 runs. */
static void test_slow_host_keeps_threads(void **state) {
  (void)state;
  ge_adapt_state s;
  ge_adapt_init(&s, 2);
  host h = {.full = 5 * MS, .one = 9 * MS, .rng = 3, .jitter = 0.05};
  drive(&s, &h, 50);
  h.full = 9 * MS;
  h.one = 16 * MS;
  tally t = drive(&s, &h, 3000);
  assert_false(s.one);
  assert_int_equal(s.stats.switches, 0);
  assert_true(t.probes >= 3000 / 65 - 2 && t.probes <= 3000 / 64 + 8);
  assert_int_equal(t.on_one, t.probes);
}

/* A plan of one thread: nothing to decide. */
static void test_one_thread_plan(void **state) {
  (void)state;
  ge_adapt_state s;
  ge_adapt_init(&s, 1);
  host h = {.full = 18 * MS, .one = 7 * MS, .rng = 4, .jitter = 0.05};
  tally t = drive(&s, &h, 100);
  assert_int_equal(t.on_one, 100);
  assert_int_equal(t.probes, 0);
  ge_thread_adapt *a = NULL;
  assert_int_equal(ge_thread_adapt_create(1, false, &a), GE_OK);
  assert_null(a);
}

/* ------------------------------------------------------------------ one-thread regions */

static void count_chunk(void *arg, size_t begin, size_t end) {
  (void)begin;
  (void)end;
  atomic_fetch_add((_Atomic int *)arg, 1);
}

/* Between ge_threads_one_enter and _leave, a parallel region of the OpenMP runtime (the one
   oneDNN's primitives open too) runs as one chunk on the calling thread; before and after,
   as two. */
static void test_one_thread_regions(void **state) {
  (void)state;
  _Atomic int chunks = 0;
  ge_parallel_for(2, 64, count_chunk, (void *)&chunks);
  int before = atomic_load(&chunks);
  int prev = ge_threads_one_enter();
  if (prev < 0 || before != 2) {
    ge_threads_one_leave(prev);
    skip(); /* no OpenMP runtime loaded (pthreads stand in) */
  }
  atomic_store(&chunks, 0);
  ge_parallel_for(2, 64, count_chunk, (void *)&chunks);
  ge_threads_one_leave(prev);
  assert_int_equal(atomic_load(&chunks), 1);
  atomic_store(&chunks, 0);
  ge_parallel_for(2, 64, count_chunk, (void *)&chunks);
  assert_int_equal(atomic_load(&chunks), 2);
}

/* ------------------------------------------------------------------ members on one CPU */

static int staged_cpu;            /* the CPU every member is told it is on */
static pid_t staged_caller;       /* the thread that opens the region */
static _Atomic int caller_asked;  /* the caller's calls of staged_getcpu */

/* The caller asks first (when it opens the region, then as a member); a team member waits
   for both, so that it is the one that finds its CPU taken. */
static int staged_getcpu(void) {
  if (gettid() == staged_caller) {
    atomic_fetch_add(&caller_asked, 1);
  } else {
    for (int i = 0; i < 1000000 && atomic_load(&caller_asked) < 2; i++) sched_yield();
  }
  return staged_cpu;
}

typedef struct member_seen {
  _Atomic int cpu[2];
  _Atomic pid_t tid[2];
} member_seen;

static void see_member(void *arg, size_t begin, size_t end) {
  member_seen *m = arg;
  for (size_t i = begin; i < end && i < 2; i++) {
    atomic_store(&m->cpu[i], sched_getcpu());
    atomic_store(&m->tid[i], gettid());
  }
}

/* Another thread's run, in progress until other_state is 2. */
static pthread_mutex_t other_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t other_cv = PTHREAD_COND_INITIALIZER;
static int other_state; /* under other_mu: 1 its run has begun, 2 it may end */

static void *other_run(void *arg) {
  (void)arg;
  ge_threads_run_begin(1);
  pthread_mutex_lock(&other_mu);
  other_state = 1;
  pthread_cond_broadcast(&other_cv);
  while (other_state != 2) pthread_cond_wait(&other_cv, &other_mu);
  pthread_mutex_unlock(&other_mu);
  ge_threads_run_end();
  return NULL;
}

/* A team member that starts on the CPU of the thread that opened the region pins itself to
   another allowed CPU, and pins the caller to its own; at the end of the run the caller gets
   its own affinity back, the member keeps its CPU a while.  Nothing moves while another thread
   has a run in progress, nor outside a run. */
static void test_members_on_one_cpu_move_apart(void **state) {
  (void)state;
  cpu_set_t orig, now;
  assert_int_equal(sched_getaffinity(0, sizeof orig, &orig), 0);
  int c0 = -1, c1 = -1;
  for (int c = 0; c < CPU_SETSIZE && c1 < 0; c++)
    if (CPU_ISSET(c, &orig)) *(c0 < 0 ? &c0 : &c1) = c;
  int prev = ge_threads_one_enter();
  ge_threads_one_leave(prev);
  if (c1 < 0 || c1 >= 64 || prev < 0) skip(); /* one CPU, or no OpenMP runtime (pthreads) */
  if (sched_setaffinity(0, sizeof orig, &orig) != 0) skip(); /* affinity calls not allowed here */
  member_seen m = {0};
  ge_parallel_for(2, 2, see_member, &m); /* the team exists; outside a run nothing moves */
  staged_cpu = c0;
  staged_caller = gettid();
  atomic_store(&caller_asked, 0);
  ge_threads_spread_getcpu_for_tests(staged_getcpu);
  ge_threads_run_begin(2); /* its empty region: the member is told it starts on c0 too */
  ge_threads_spread_getcpu_for_tests(NULL);
  ge_parallel_for(2, 2, see_member, &m);
  pid_t member = atomic_load(&m.tid[1]);
  assert_true(member != 0 && member != gettid());
  assert_int_equal(atomic_load(&m.cpu[1]), c1); /* it runs on the other CPU */
  assert_int_equal(sched_getaffinity(member, sizeof now, &now), 0);
  assert_int_equal(CPU_COUNT(&now), 1);
  assert_true(CPU_ISSET(c1, &now));
  assert_int_equal(sched_getaffinity(0, sizeof now, &now), 0);
  assert_int_equal(CPU_COUNT(&now), 1);
  assert_true(CPU_ISSET(c0, &now));
  assert_int_equal(atomic_load(&m.cpu[0]), c0);
  ge_threads_run_end();
  assert_int_equal(sched_getaffinity(0, sizeof now, &now), 0);
  assert_true(CPU_EQUAL(&now, &orig)); /* the caller's own affinity again */
  assert_int_equal(sched_getaffinity(member, sizeof now, &now), 0);
  assert_int_equal(CPU_COUNT(&now), 1); /* the member keeps its CPU a while */
  sched_setaffinity(member, sizeof orig, &orig);
  /* while another thread has a run in progress, members on one CPU stay there */
  pthread_t other;
  assert_int_equal(pthread_create(&other, NULL, other_run, NULL), 0);
  pthread_mutex_lock(&other_mu);
  while (other_state != 1) pthread_cond_wait(&other_cv, &other_mu);
  pthread_mutex_unlock(&other_mu);
  atomic_store(&caller_asked, 0);
  ge_threads_spread_getcpu_for_tests(staged_getcpu);
  ge_threads_run_begin(2);
  ge_threads_spread_getcpu_for_tests(NULL);
  ge_parallel_for(2, 2, see_member, &m);
  assert_int_equal(sched_getaffinity(0, sizeof now, &now), 0);
  assert_true(CPU_EQUAL(&now, &orig));
  assert_int_equal(sched_getaffinity(member, sizeof now, &now), 0);
  assert_true(CPU_EQUAL(&now, &orig));
  ge_threads_run_end();
  pthread_mutex_lock(&other_mu);
  other_state = 2;
  pthread_cond_broadcast(&other_cv);
  pthread_mutex_unlock(&other_mu);
  pthread_join(other, NULL);
  /* outside a run, members on one CPU stay there */
  atomic_store(&caller_asked, 0);
  ge_threads_spread_getcpu_for_tests(staged_getcpu);
  ge_parallel_for(2, 2, see_member, &m);
  ge_threads_spread_getcpu_for_tests(NULL);
  assert_int_equal(sched_getaffinity(0, sizeof now, &now), 0);
  assert_true(CPU_EQUAL(&now, &orig));
  sched_setaffinity(member, sizeof orig, &orig);
}

/* ------------------------------------------------------------------ through a session */

/* x [1, 32, 28, 28] -> Conv3x3+Relu -> Conv1x1 -> MaxPool -> Flatten -> Gemm -> Softmax:
   oneDNN's convolutions and inner product and ge's own kernels. */
static void build_net(ge_test_net *n, uint64_t *rng) {
  ge_test_net_init(n, "adapt", rng);
  int64_t xd[] = {1, 32, 28, 28};
  assert_int_equal(ge_graph_add_input(n->g, "x", GE_F32, xd, 4), GE_OK);
  int64_t w1[] = {48, 32, 3, 3}, b1[] = {48}, w2[] = {64, 48, 1, 1}, wg[] = {64 * 14 * 14, 100};
  ge_test_net_const(n, "w1", w1, 4, 0.1f);
  ge_test_net_const(n, "b1", b1, 1, 0.1f);
  ge_test_net_const(n, "w2", w2, 4, 0.2f);
  ge_test_net_const(n, "wg", wg, 2, 0.02f);
  int64_t pads[] = {1, 1, 1, 1}, k2[] = {2, 2};
  ge_attr pad_attr[] = {GE_ATTR_INTS("pads", pads, 4)};
  ge_attr mp_attr[] = {GE_ATTR_INTS("kernel_shape", k2, 2), GE_ATTR_INTS("strides", k2, 2)};
  ge_test_net_node(n, "Conv", "c1", (const char *[]){"x", "w1", "b1"}, 3, "c1", pad_attr, 1);
  ge_test_net_node(n, "Relu", "r1", (const char *[]){"c1"}, 1, "r1", NULL, 0);
  ge_test_net_node(n, "Conv", "c2", (const char *[]){"r1", "w2"}, 2, "c2", NULL, 0);
  ge_test_net_node(n, "MaxPool", "mp", (const char *[]){"c2"}, 1, "mp", mp_attr, 2);
  ge_test_net_node(n, "Flatten", "fl", (const char *[]){"mp"}, 1, "fl", NULL, 0);
  ge_test_net_node(n, "Gemm", "fc", (const char *[]){"fl", "wg"}, 2, "fc", NULL, 0);
  ge_test_net_node(n, "Softmax", "sm", (const char *[]){"fc"}, 1, "y", NULL, 0);
  assert_int_equal(ge_graph_add_output(n->g, "y"), GE_OK);
}

/* Runs the net `runs` times in a session with these options; returns the last output. */
static ge_tensor *run_net(ge_graph *g, ge_tensor *x, const ge_option *opts, size_t n_opts, int runs,
                          ge_run_stats *stats) {
  ge_session *s = NULL;
  GE_TEST_OK(ge_session_create(opts, n_opts, &s));
  GE_TEST_OK(ge_session_add_graph(s, 1, g));
  ge_tensor *y = NULL;
  for (int r = 0; r < runs; r++) {
    ge_tensor_free(y);
    y = NULL;
    GE_TEST_OK(ge_session_run_graph(s, 1, &x, 1, &y, 1));
  }
  GE_TEST_OK(ge_session_graph_run_stats(s, 1, stats));
  ge_session_free(s);
  return y;
}

/* A plan compiled for 2 threads, every run taken on one (ge.exec.forceOneThread): the same
   output as on 2 threads and as a plan compiled for one, and the stats say so. */
static void test_one_thread_runs_of_a_two_thread_plan(void **state) {
  (void)state;
  uint64_t rng = 0x5851f42d4c957f2dull;
  ge_test_net n;
  build_net(&n, &rng);
  int64_t xd[] = {1, 32, 28, 28};
  ge_tensor *x = ge_test_rand_f32(&rng, xd, 4, 1.0f);

  ge_run_stats st2, st1, stf;
  ge_option two[] = {{"ge.intraOpThreads", "2"}, {"ge.exec.adaptiveThreads", "0"}};
  ge_option one[] = {{"ge.intraOpThreads", "1"}};
  ge_option forced[] = {{"ge.intraOpThreads", "2"}, {"ge.exec.forceOneThread", "1"}};
  ge_tensor *y2 = run_net(n.g, x, two, 2, 3, &st2);
  ge_tensor *y1 = run_net(n.g, x, one, 1, 3, &st1);
  ge_tensor *yf = run_net(n.g, x, forced, 2, 3, &stf);

  assert_int_equal(ge_tensor_numel(y2), ge_tensor_numel(yf));
  const float *a = ge_tensor_data(y2), *b = ge_tensor_data(yf), *c = ge_tensor_data(y1);
  for (size_t i = 0; i < ge_tensor_numel(y2); i++) {
    assert_true(fabsf(a[i] - b[i]) <= 1e-6f);
    assert_true(fabsf(c[i] - b[i]) <= 1e-6f);
  }
  assert_true(st2.runs == 3 && st2.runs_one_thread == 0 && st2.threads == 2 && !st2.adaptive);
  assert_true(st1.runs == 3 && st1.runs_one_thread == 0 && st1.threads == 1 && !st1.adaptive);
  assert_true(stf.runs == 3 && stf.runs_one_thread == 3 && stf.threads == 2);

  ge_tensor_free(y2);
  ge_tensor_free(y1);
  ge_tensor_free(yf);
  ge_tensor_free(x);
  ge_test_net_free(&n);
}

/* On by default for inference with more than one thread, off for training; a bad value is
   an error naming the option; stats of an unknown graph are an error. */
static void test_option_defaults(void **state) {
  (void)state;
  uint64_t rng = 7;
  ge_test_net n;
  build_net(&n, &rng);
  int64_t xd[] = {1, 32, 28, 28};
  ge_tensor *x = ge_test_rand_f32(&rng, xd, 4, 1.0f);
  ge_run_stats st;
  ge_option inf[] = {{"ge.intraOpThreads", "2"}};
  ge_tensor_free(run_net(n.g, x, inf, 1, 2, &st));
  assert_true(st.adaptive && st.runs == 2 && st.threads == 2);
  ge_option train[] = {{"ge.intraOpThreads", "2"}, {"ge.graphRunMode", "1"}};
  ge_tensor_free(run_net(n.g, x, train, 2, 1, &st));
  assert_true(!st.adaptive && st.runs == 1 && st.runs_one_thread == 0);
  ge_option train_on[] = {{"ge.intraOpThreads", "2"}, {"ge.graphRunMode", "1"}, {"ge.exec.adaptiveThreads", "1"}};
  ge_tensor_free(run_net(n.g, x, train_on, 3, 1, &st));
  assert_true(st.adaptive);

  ge_session *s = NULL;
  ge_option bad[] = {{"ge.exec.adaptiveThreads", "maybe"}};
  assert_int_equal(ge_session_create(bad, 1, &s), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "ge.exec.adaptiveThreads"));
  GE_TEST_OK(ge_session_create(inf, 1, &s));
  assert_int_equal(ge_session_graph_run_stats(s, 9, &st), GE_ERR_NOT_FOUND);
  assert_int_equal(ge_session_graph_run_stats(s, 9, NULL), GE_ERR_INVALID_ARGUMENT);
  ge_session_free(s);
  ge_tensor_free(x);
  ge_test_net_free(&n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quiet_probes_once),
      cmocka_unit_test(test_core_held_from_start),
      cmocka_unit_test(test_stall_switches_and_back),
      cmocka_unit_test(test_slow_host_keeps_threads),
      cmocka_unit_test(test_one_thread_plan),
      cmocka_unit_test(test_one_thread_regions),
      cmocka_unit_test(test_members_on_one_cpu_move_apart),
      cmocka_unit_test(test_one_thread_runs_of_a_two_thread_plan),
      cmocka_unit_test(test_option_defaults),
  };
  return cmocka_run_group_tests(tests, ge_test_setup_engine, ge_test_teardown_engine);
}
