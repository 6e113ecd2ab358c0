/* The side effects one run recorded (ge_kctx_record), in the order its steps ran. */
#ifndef GE_RUNTIME_RUN_FX_H
#define GE_RUNTIME_RUN_FX_H

#include "backend/effects.h"

typedef struct ge_effect {
  ge_effect_kind kind;
  char *key;     /* "Summary", "Save", a Callback key; NULL for the Assign kinds */
  char *name;    /* tag, variable name or input name */
  char *sub;     /* Summary type; may be NULL */
  ge_tensor *t;  /* owned copy; NULL for SAVE */
} ge_effect;

typedef struct ge_run_fx {
  ge_effect *e;
  size_t n, cap;
  bool has_assign;
} ge_run_fx;

void ge_run_fx_clear(ge_run_fx *fx);

#endif
