/* Options: the keys of docs/options.md, parsed and validated once. */
#ifndef GE_RUNTIME_OPTIONS_H
#define GE_RUNTIME_OPTIONS_H

#include <stdbool.h>

#include "ge/ge.h"

typedef struct ge_options {
  int device_id;
  int run_mode;            /* 0 inference, 1 training */
  int opt_level;           /* 0..3 */
  int intra_threads;       /* >= 1 */
  int stream_max_parallel; /* >= 1 */
  int iterations_per_loop; /* >= 1 */
  bool single_stream;
  bool disable_reuse;
  bool disable_winograd;    /* ge.exec.disableWinograd: direct 3x3 convolutions only */
  bool callback_async;
  int adaptive_threads;     /* ge.exec.adaptiveThreads: 1 on, 0 off, -1 (default) on for
                               inference, off for training (runtime/thread_adapt.h) */
  bool force_one_thread;    /* ge.exec.forceOneThread (hidden, for tests): every run of a
                               plan compiled for N threads on one thread */
  int precision_mode;       /* ge.exec.precision_mode: a ge_precision_mode (passes/pass.h) */
  int layout_policy;        /* ge.exec.layout (hidden): a ge_layout_policy (compiler/layout.h) */
  char passes_disable[512]; /* ge.passes.disable: comma-separated pass names */
  char passes_enable[512];  /* ge.passes.enable */
  bool profiling;           /* ge.exec.profilingMode=1: Chrome trace (runtime/profiler.h) */
  bool dump;                /* ge.exec.enableDump=1: every step's outputs as .npy */
  char profiling_path[1024]; /* ge.exec.profilingPath (default "ge_trace.json") */
  char dump_path[1024];      /* ge.exec.dumpPath (default "ge_dump") */
} ge_options;

/* Whether runs adapt their thread count (ge.exec.adaptiveThreads, or its default). */
bool ge_options_adaptive_threads(const ge_options *o);

/* Defaults: CPU, inference, level 3, intra threads = online CPUs (at most 64). */
void ge_options_default(ge_options *o);
/* Applies opts on top of *o.  GE_ERR_INVALID_ARGUMENT naming an unknown key or a bad value;
   GE_ERR_UNSUPPORTED naming a value this build does not implement yet. */
ge_status ge_options_apply(ge_options *o, const ge_option *opts, size_t n);

struct ge_graph;
struct ge_pass_report;
/* Runs the optimisation passes on g as these options ask: ge.graphOptimizationLevel,
   ge.runMode (training keeps what gradients need), ge.exec.precision_mode, ge.intraOpThreads
   (passes that decide by cache size per thread) and ge.passes.disable / ge.passes.enable.
   The one place a session, `ge compile` and `ge inspect --passes` build the pass
   configuration, so all three decide alike.  rep may be NULL. */
ge_status ge_options_run_passes(const ge_options *o, struct ge_graph *g,
                                struct ge_pass_report *rep);

#endif
