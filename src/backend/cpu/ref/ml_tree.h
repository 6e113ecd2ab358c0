/* ai.onnx.ml TreeEnsemble kernel halves, registered in the text family's table. */
#ifndef GE_BACKEND_CPU_REF_ML_TREE_H
#define GE_BACKEND_CPU_REF_ML_TREE_H

#include "backend/kernel.h"

ge_status ge_ml_tree_prepare(const ge_prepare_ctx *p, void **state);
ge_status ge_ml_tree_run(const void *state, ge_kctx *ctx);
void ge_ml_tree_release(void *state);

#endif
