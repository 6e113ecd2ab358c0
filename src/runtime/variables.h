/* A session's variables: named tensors with copy-on-write values.  A run takes a snapshot
 * (references to the current buffers) when it starts and commits its writes when it ends, so
 * concurrent runs never see a half-written value; AssignAdd/AssignSub apply their delta to the
 * value current at commit time, so concurrent increments are never lost. */
#ifndef GE_RUNTIME_VARIABLES_H
#define GE_RUNTIME_VARIABLES_H

#include <pthread.h>

#include "backend/effects.h"
#include "ir/ir.h"
#include <stdio.h>

typedef struct ge_var_buf ge_var_buf; /* an immutable, reference-counted value */

typedef struct ge_var {
  char *name;
  ge_var_buf *cur;
} ge_var;

typedef struct ge_var_store {
  pthread_mutex_t mu;
  ge_var **vars; /* pointers stay valid while the store lives */
  size_t n, cap;
} ge_var_store;

void ge_var_store_init(ge_var_store *vs);
void ge_var_store_destroy(ge_var_store *vs);
/* Declares a variable (creating it from `initial` when new); *index receives its index.
   GE_ERR_INVALID_ARGUMENT when it exists with another dtype or shape. */
ge_status ge_var_store_declare(ge_var_store *vs, const char *name, const ge_tensor *initial,
                               size_t *index);
/* References to the current buffers of variables idx[0..n) into bufs; views into views. */
void ge_var_store_snapshot(ge_var_store *vs, const size_t *idx, size_t n, ge_var_buf **bufs,
                           ge_tensor *views);
void ge_var_store_release(ge_var_store *vs, ge_var_buf **bufs, size_t n);
/* Applies one write (ASSIGN / ASSIGN_ADD / ASSIGN_SUB) to variable `name`. */
ge_status ge_var_store_apply(ge_var_store *vs, ge_effect_kind kind, const char *name,
                             const ge_tensor *value);
struct ge_run_fx;
/* Applies every Assign-kind effect of a run, atomically with respect to other runs. */
ge_status ge_var_store_commit(ge_var_store *vs, const struct ge_run_fx *fx);
/* Deep copy of the current value. */
ge_status ge_var_store_get(ge_var_store *vs, const char *name, ge_tensor **out);
ge_status ge_var_store_set(ge_var_store *vs, const ge_tensor_map *values);

#endif
