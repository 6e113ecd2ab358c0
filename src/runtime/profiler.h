/* Profiling (Chrome trace) and node dumps: the executor's hooks around each step's `run`.
 *
 * A session with ge.exec.profilingMode=1 or ge.exec.enableDump=1 owns one ge_observe.  Each run
 * of one of its plans starts a ge_obs_run (one allocation, sized by the plan's step count: no
 * allocation per step), records every step, and at the end appends its events to the trace under
 * the observer's mutex, so concurrent runs are safe.
 *
 * The trace file (ge.exec.profilingPath) is created (truncated) when the session is created and
 * is a complete JSON document after every run: each run's events are written before a closing
 * footer that the next run overwrites.  It is closed when the session is freed. */
#ifndef GE_RUNTIME_PROFILER_H
#define GE_RUNTIME_PROFILER_H

#include <stdint.h>

#include "compiler/program.h"
#include "runtime/options.h"

typedef struct ge_observe ge_observe;

/* *out is NULL (and GE_OK) when neither profiling nor dumping is on.  pid is the trace's process
   id for this session.  GE_ERR_IO when the trace file cannot be created. */
ge_status ge_observe_create(const ge_options *o, uint32_t pid, ge_observe **out);
void ge_observe_free(ge_observe *obs);

/* One run's record. */
typedef struct ge_obs_step {
  uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
  size_t step;               /* index into the plan's steps */
  char shapes[120];          /* output shapes as JSON text, "[[2,3],[4]]", cut short if long */
} ge_obs_step;

typedef struct ge_obs_run {
  ge_observe *obs;
  const ge_plan *plan;
  ge_obs_step *steps; /* plan->n_steps, when profiling */
  size_t n_done;      /* steps recorded */
  char dump_dir[1100]; /* dumpPath/<run>, when dumping */
} ge_obs_run;

/* Starts a run's record (obs may be NULL: a no-op record).  Creates dumpPath/<run>/ where
   <run> is the session's run counter (0, 1, ...). */
ge_status ge_obs_run_begin(ge_observe *obs, const ge_plan *p, ge_obs_run *r);
/* After step si ran (outputs in out[0..n_out), entries NULL for omitted outputs): records
   its time and shapes and writes its outputs when dumping. */
ge_status ge_obs_step_done(ge_obs_run *r, size_t si, uint64_t start_ns, uint64_t end_ns,
                           ge_tensor *const *out);
/* Appends the recorded steps to the trace (also after a failed run: the steps that ran) and
   frees the record. */
ge_status ge_obs_run_end(ge_obs_run *r);

#endif
