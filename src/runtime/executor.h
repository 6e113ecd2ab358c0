/* Running a plan inside a session: variables bound to the session's values and side effects
 * recorded for the session to commit and deliver after the run. */
#ifndef GE_RUNTIME_EXECUTOR_H
#define GE_RUNTIME_EXECUTOR_H

#include "compiler/program.h"
#include "runtime/profiler.h"
#include "runtime/run_fx.h"

typedef struct ge_run_env {
  size_t n_vars;
  const uint32_t *var_slots;   /* value ids of the plan's graph (kind GE_VALUE_VARIABLE) */
  const ge_tensor *var_values; /* views of the values this run reads */
  ge_run_fx *fx;               /* where kernels record side effects; NULL: dropped */
  ge_observe *obs;             /* profiling / dumping around each step; NULL: off */
  ge_tensor *const *into;      /* the caller's output tensors, written in place (outputs
                                  unused); NULL: outputs receive new tensors */
  int threads;                 /* > 0: the run's thread count (a subgraph's: its caller's);
                                  0: the plan's, adapted where it has a controller */
  int *ran_threads;            /* non-NULL: receives the thread count the run took */
} ge_run_env;

/* ge_plan_run with an environment (NULL: variables read their initial values and side
   effects are dropped, which is what ge_plan_run does). */
ge_status ge_plan_run_env(const ge_plan *p, ge_tensor *const *inputs, size_t n_in,
                          ge_tensor **outputs, size_t n_out, const ge_run_env *env);

#endif
