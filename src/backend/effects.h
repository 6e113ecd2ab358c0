/* Side effects a kernel can ask of the run that executes it (the ai.ge ops Summary, Save,
 * Callback, Assign, AssignAdd, AssignSub).  The executor passes its per-run record list as
 * ge_kctx.exec; the runtime implements these functions (src/runtime/callbacks.c).  A kernel
 * run without a run context (compile-time folding, ge_plan_run) records nothing. */
#ifndef GE_BACKEND_EFFECTS_H
#define GE_BACKEND_EFFECTS_H

#include "backend/kernel.h"

typedef enum ge_effect_kind {
  GE_EFFECT_SUMMARY,    /* key "Summary", name = tag, sub = type; t copied */
  GE_EFFECT_SAVE,       /* key "Save", name = variable; t unused (read after the run) */
  GE_EFFECT_CALLBACK,   /* key = the op's key, name = input value name; t copied */
  GE_EFFECT_ASSIGN,     /* name = variable; t copied; committed when the run ends */
  GE_EFFECT_ASSIGN_ADD,
  GE_EFFECT_ASSIGN_SUB,
} ge_effect_kind;

ge_status ge_kctx_record(ge_kctx *c, ge_effect_kind kind, const char *key, const char *name,
                         const char *sub, const ge_tensor *t);

#endif
