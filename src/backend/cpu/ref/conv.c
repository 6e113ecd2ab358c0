/* Conv and ConvTranspose on the CPU: im2col (skipped for 1x1, stride 1, no padding) plus
 * ge_sgemm per group, and GEMM plus col2im for the transpose.  Any spatial rank. */
/* GCC -O2 only vectorises loops whose trip count is known; these loops are not. */
#pragma GCC optimize("vect-cost-model=dynamic", "fp-contract=fast")

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/ref/nn_kernels.h"
#include "backend/cpu/ref/nn_util.h"
#include "backend/cpu/threadpool.h"
#include "ops/nn_geom.h"

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_DTYPE_COUNT};

typedef struct conv_state {
  ge_nn_win_attrs a;
  bool transpose;
} conv_state;

static ge_status prepare_common(const ge_prepare_ctx *p, void **state, bool transpose) {
  for (size_t i = 0; i < 3 && i < p->n_in; i++) GE_CHECK(ge_prepare_check_dtype(p, i, k_float));
  conv_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  ge_status st = ge_nn_win_parse(p->node, false, &s->a);
  if (st != GE_OK) {
    free(s);
    return st;
  }
  s->transpose = transpose;
  *state = s;
  return GE_OK;
}

ge_status ge_nn_conv_prepare(const ge_prepare_ctx *p, void **state) { return prepare_common(p, state, false); }
ge_status ge_nn_convt_prepare(const ge_prepare_ctx *p, void **state) { return prepare_common(p, state, true); }
void ge_nn_conv_release(void *state) { free(state); }

/* Geometry of one call. */
typedef struct geo {
  size_t nsp;
  int64_t in[GE_NN_MAX_SP], out[GE_NN_MAX_SP], k[GE_NN_MAX_SP], s[GE_NN_MAX_SP], d[GE_NN_MAX_SP],
      pb[GE_NN_MAX_SP];
  size_t S_in, S_out, ksz;
} geo;

#define GE_NN_TEMPLATE "backend/cpu/ref/conv_impl.inc"
#include "backend/cpu/ref/nn_real.inc"

static ge_status run_common(const conv_state *s, ge_kctx *ctx) {
  if (ctx->in[0]->dtype == GE_F64) return run_common_f64(s, ctx);
  return run_common_f32(s, ctx);
}

ge_status ge_nn_conv_run(const void *state, ge_kctx *ctx) { return run_common(state, ctx); }
ge_status ge_nn_convt_run(const void *state, ge_kctx *ctx) { return run_common(state, ctx); }
