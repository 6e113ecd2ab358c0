/* Fast kernels for the non-GEMM ops of transformer graphs (BERT, GPT-2) that the reference
 * kernels run on one thread:
 *   - ai.ge::LayerNormalization (float32): rows split over ge.intraOpThreads threads, each row
 *     two passes (mean, then variance of the centred values) in 16 float lanes so that they
 *     vectorise, then one fused normalise/scale/bias pass.
 *   - Softmax (float32, opset 13+, last axis): rows as for LayerNormalization, exp by
 *     ge_fast_expf; a row of -inf gives NaN like the reference.
 *   - Add / Sub / Mul / Div (float32): same shapes, or one side broadcasting as a trailing
 *     block (a bias [..., C] against [N, ..., C], a scalar) split over threads in chunks.
 *     Other broadcasts (known only at run time) run the reference kernel, prepared alongside.
 * Threads are only started when a call has enough work (GE_TF_MIN_PAR elements) to pay for
 * the thread start.
 *
 * Row-major bf16 storage (GE_LAYOUT_BF16, compiler/layout.h): LayerNormalization may write its
 * output as bf16 (it prefers to; the plan does so when bf16 MatMuls read it), and Add of two
 * same-shape tensors takes either input stored so (GE_LAYOUT_ANY_ROWS: a residual Add reading
 * a LayerNormalization output that bf16 MatMuls read too). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/threadpool.h"
#include "compiler/layout.h"
#include "ops/fused.h"

/* Below this many elements per call a second thread costs more than it saves. */
#define GE_TF_MIN_PAR ((size_t)32768)

/* The plan's layout of input i / output o is row-major bf16 (GE_LAYOUT_BF16). */
static bool tf_in16(const ge_prepare_ctx *p, size_t i) {
  return p->in_layout && i < p->n_in && p->in[i].present && p->in_layout[i] == GE_LAYOUT_BF16;
}
static bool tf_out16(const ge_prepare_ctx *p, size_t o) {
  return p->out_layout && o < p->n_out && p->node->outputs[o] >= 0 && p->out_layout[o] == GE_LAYOUT_BF16;
}

static int tf_threads(int requested, size_t work) {
  if (requested <= 1 || work < GE_TF_MIN_PAR) return 1;
  size_t most = work / (GE_TF_MIN_PAR / 2);
  return most < (size_t)requested ? (int)most : requested;
}

/* ------------------------------------------------------------------ LayerNormalization */

typedef struct ln_state {
  int64_t axis;
  float eps;
  bool y16; /* the output is stored row-major bf16 */
} ln_state;

/* Why the fast kernel declines node p (NULL: it takes it). */
static const char *ln_declines(const ge_prepare_ctx *p) {
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present && (!p->in[i].type || p->in[i].type->dtype != GE_F32)) return "an input is not float32";
  if (p->n_out != 1 || p->out[0].dtype != GE_F32) return "one float32 output only";
  return NULL;
}

static ge_status ln_prepare(const ge_prepare_ctx *p, void **state) {
  const char *why = ln_declines(p);
  if (why) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast LayerNormalization: %s", why);
  for (size_t i = 0; i < p->n_in; i++)
    if (tf_in16(p, i))
      return ge_prepare_fail(p, GE_ERR_INTERNAL, "fast LayerNormalization: input %zu is stored bf16", i);
  ln_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", -1);
  s->eps = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  s->y16 = tf_out16(p, 0);
  *state = s;
  return GE_OK;
}

/* It writes its (static float32) output row-major bf16 where the readers want that. */
static void ln_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) {
  (void)in;
  if (ln_declines(p) || !ge_shape_is_static(&p->out[0].shape)) return;
  out[0] = GE_LAYOUT_BF16;
}

typedef struct ln_job {
  const float *x, *sc, *bi;
  float *y;
  uint16_t *y16; /* non-NULL: write bf16 here instead of y */
  size_t inner;
  float eps;
} ln_job;

GE_FAST_CLONES
static void ln_rows(void *arg, size_t begin, size_t end) {
  const ln_job *j = arg;
  size_t n = j->inner;
  const float *restrict sc = j->sc, *restrict bi = j->bi;
  for (size_t o = begin; o < end; o++) {
    const float *restrict xr = j->x + o * n;
    float *restrict yr = j->y + o * n;
    float mean = ge_fast_row_sum(xr, n) / (float)n;
    float lv[GE_FAST_LANES] = {0};
    size_t i = 0;
    for (; i + GE_FAST_LANES <= n; i += GE_FAST_LANES)
      for (size_t l = 0; l < GE_FAST_LANES; l++) {
        float d = xr[i + l] - mean;
        lv[l] += d * d;
      }
    float var = 0.f;
    for (; i < n; i++) {
      float d = xr[i] - mean;
      var += d * d;
    }
    for (size_t l = 0; l < GE_FAST_LANES; l++) var += lv[l];
    var /= (float)n;
    float rs = (float)(1.0 / sqrt((double)var + (double)j->eps));
    if (j->y16) {
      uint16_t *restrict hr = j->y16 + o * n;
      if (sc && bi)
        for (i = 0; i < n; i++) hr[i] = ge_f32_to_bf16_inline((xr[i] - mean) * rs * sc[i] + bi[i]);
      else
        for (i = 0; i < n; i++) hr[i] = ge_f32_to_bf16_inline((xr[i] - mean) * rs * (sc ? sc[i] : 1.f) + (bi ? bi[i] : 0.f));
    } else if (sc && bi) {
      for (i = 0; i < n; i++) yr[i] = (xr[i] - mean) * rs * sc[i] + bi[i];
    } else if (sc) {
      for (i = 0; i < n; i++) yr[i] = (xr[i] - mean) * rs * sc[i];
    } else if (bi) {
      for (i = 0; i < n; i++) yr[i] = (xr[i] - mean) * rs + bi[i];
    } else {
      for (i = 0; i < n; i++) yr[i] = (xr[i] - mean) * rs;
    }
  }
}

static void ln_chunk(void *arg, size_t begin, size_t end) { ln_rows(arg, begin, end); }

static ge_status ln_run(const void *state, ge_kctx *ctx) {
  const ln_state *s = state;
  const ge_tensor *X = ctx->in[0];
  const ge_tensor *Sc = ctx->n_in > 1 ? ctx->in[1] : NULL, *Bi = ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast LayerNormalization: X and Y are required");
  if (X->dtype != GE_F32 || Y->dtype != GE_F32 || (Sc && Sc->dtype != GE_F32) || (Bi && Bi->dtype != GE_F32))
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast LayerNormalization: every tensor must be float32");
  int64_t axis = s->axis < 0 ? s->axis + X->rank : s->axis;
  if (axis < 0 || axis >= X->rank)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d", (long long)s->axis,
                        X->rank);
  size_t inner = 1;
  for (int32_t d = (int32_t)axis; d < X->rank; d++) inner *= (size_t)X->dims[d];
  if (Sc && Sc->numel != inner)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 1 (Scale) has %zu elements, the normalized size is %zu",
                        Sc->numel, inner);
  if (Bi && Bi->numel != inner)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 2 (Bias) has %zu elements, the normalized size is %zu",
                        Bi->numel, inner);
  if (Y->numel != X->numel)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "output has %zu elements, input 0 has %zu", Y->numel, X->numel);
  if (!inner || !X->numel) return GE_OK;
  size_t outer = X->numel / inner;
  ln_job j = {.x = X->data, .sc = Sc ? Sc->data : NULL, .bi = Bi ? Bi->data : NULL, .y = Y->data,
              .y16 = s->y16 ? (uint16_t *)Y->data : NULL, .inner = inner, .eps = s->eps};
  ge_parallel_for(tf_threads(ctx->threads, X->numel), outer, ln_chunk, &j);
  return GE_OK;
}


/* ------------------------------------------------------------------ Softmax (opset 13+) */

typedef struct sm_state {
  int64_t axis;
} sm_state;

static ge_status sm_prepare(const ge_prepare_ctx *p, void **state) {
  if (p->n_in != 1 || !p->in[0].present || !p->in[0].type || p->in[0].type->dtype != GE_F32 || p->n_out != 1 ||
      p->out[0].dtype != GE_F32)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Softmax: one float32 input and output only");
  int32_t r = p->in[0].type->shape.rank;
  int64_t axis = ge_node_attr_int(p->node, "axis", -1);
  if (r < 1 || (axis != -1 && axis != r - 1))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Softmax: the last axis of a known rank only");
  sm_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = axis;
  *state = s;
  return GE_OK;
}

typedef struct sm_job {
  const float *x;
  float *y;
  size_t n;
} sm_job;

GE_FAST_CLONES
static void sm_rows(const sm_job *j, size_t begin, size_t end) {
  size_t n = j->n;
  for (size_t o = begin; o < end; o++) {
    const float *restrict xr = j->x + o * n;
    float *restrict yr = j->y + o * n;
    /* a row of -inf (or holding +inf / NaN) gives NaN like the reference: x - mx is NaN */
    ge_fast_softmax_from_max(xr, yr, n, ge_fast_row_max(xr, n));
  }
}

static void sm_chunk(void *arg, size_t begin, size_t end) { sm_rows(arg, begin, end); }

static ge_status sm_run(const void *state, ge_kctx *ctx) {
  const sm_state *s = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || X->dtype != GE_F32 || Y->dtype != GE_F32 || X->numel != Y->numel)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast Softmax: float32 X and Y of the same size required");
  if (X->rank < 1 || (s->axis != -1 && s->axis != X->rank - 1))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "fast Softmax: axis %lld is not the last axis of rank %d",
                        (long long)s->axis, X->rank);
  size_t n = (size_t)X->dims[X->rank - 1];
  if (!n || !X->numel) return GE_OK;
  sm_job j = {.x = X->data, .y = Y->data, .n = n};
  ge_parallel_for(tf_threads(ctx->threads, X->numel), X->numel / n, sm_chunk, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ binary arithmetic */

typedef enum { TF_ADD, TF_SUB, TF_MUL, TF_DIV } tf_binop;

typedef struct bin_state {
  tf_binop op;
  const ge_kernel *ref; /* the reference kernel, for broadcasts handled here */
  void *ref_state;
  bool a16, b16; /* input stored row-major bf16 (same shapes only) */
} bin_state;

static void bin_release(void *state) {
  bin_state *s = state;
  if (!s) return;
  if (s->ref && s->ref->release && s->ref_state) s->ref->release(s->ref_state);
  free(s);
}

static ge_status bin_prepare_op(const ge_prepare_ctx *p, void **state, tf_binop op) {
  if (p->n_in != 2 || p->n_out != 1)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast binary op: two inputs and one output only");
  for (size_t i = 0; i < 2; i++)
    if (!p->in[i].present || !p->in[i].type || p->in[i].type->dtype != GE_F32)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast binary op: input %zu is not float32", i);
  if (p->out[0].dtype != GE_F32) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast binary op: float32 only");
  const ge_kernel *ref = ge_cpu_find_kernel(p->node->domain, p->node->op_type, p->opset);
  if (!ref) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast binary op: no reference kernel to fall back on");
  bin_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->op = op;
  s->ref = ref;
  s->a16 = tf_in16(p, 0);
  s->b16 = tf_in16(p, 1);
  if (tf_out16(p, 0)) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INTERNAL, "fast binary op: the output is stored bf16");
  }
  if (ref->prepare) {
    ge_status st = ref->prepare(p, &s->ref_state);
    if (st != GE_OK) {
      free(s);
      return st;
    }
  }
  *state = s;
  return GE_OK;
}

static ge_status add_prepare(const ge_prepare_ctx *p, void **state) { return bin_prepare_op(p, state, TF_ADD); }
/* Add of two static float32 tensors of one shape (a residual) reads either input as it is
   stored, float32 or row-major bf16, without asking for bf16 (GE_LAYOUT_ANY_ROWS). */
static void add_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) {
  (void)out;
  if (p->n_in != 2 || p->n_out != 1 || p->out[0].dtype != GE_F32 || !ge_shape_is_static(&p->out[0].shape)) return;
  for (size_t i = 0; i < 2; i++) {
    const ge_type *t = p->in[i].present ? p->in[i].type : NULL;
    if (!t || t->dtype != GE_F32 || !ge_shape_is_static(&t->shape) || t->shape.rank != p->out[0].shape.rank) return;
    for (int32_t d = 0; d < t->shape.rank; d++)
      if (t->shape.dims[d] != p->out[0].shape.dims[d]) return;
  }
  in[0] = in[1] = GE_LAYOUT_ANY_ROWS;
}
static ge_status sub_prepare(const ge_prepare_ctx *p, void **state) { return bin_prepare_op(p, state, TF_SUB); }
static ge_status mul_prepare(const ge_prepare_ctx *p, void **state) { return bin_prepare_op(p, state, TF_MUL); }
static ge_status div_prepare(const ge_prepare_ctx *p, void **state) { return bin_prepare_op(p, state, TF_DIV); }

typedef struct bin_job {
  const float *a, *b;
  float *y;
  size_t na, nb; /* elements of a / b: equal, or one is the repeating block of the other */
  tf_binop op;
  const uint16_t *a16, *b16; /* same shapes only: that input stored bf16 (a / b unused) */
} bin_job;

/* Same shapes with an input stored bf16: y[i] = a[i] op b[i], [begin, end); one loop per op
   and storage so that each vectorises. */
#define BIN16_LOOP(EXPR)                                                                      \
  do {                                                                                         \
    if (a16 && b16) GE_IVDEP for (size_t i = begin; i < end; i++) {                           \
        float x = ge_bf16_to_f32_inline(a16[i]), v = ge_bf16_to_f32_inline(b16[i]);                             \
        y[i] = EXPR;                                                                           \
      }                                                                                        \
    else if (a16) GE_IVDEP for (size_t i = begin; i < end; i++) {                             \
        float x = ge_bf16_to_f32_inline(a16[i]), v = b[i];                                              \
        y[i] = EXPR;                                                                           \
      }                                                                                        \
    else GE_IVDEP for (size_t i = begin; i < end; i++) {                                      \
        float x = a[i], v = ge_bf16_to_f32_inline(b16[i]);                                              \
        y[i] = EXPR;                                                                           \
      }                                                                                        \
  } while (0)
GE_FAST_CLONES
static void bin16_range(const bin_job *j, size_t begin, size_t end) {
  /* no restrict: y may be the float32 input (in place, same positions) */
  const float *a = j->a, *b = j->b;
  const uint16_t *a16 = j->a16, *b16 = j->b16;
  float *y = j->y;
  switch (j->op) {
    case TF_ADD: BIN16_LOOP(x + v); break;
    case TF_SUB: BIN16_LOOP(x - v); break;
    case TF_MUL: BIN16_LOOP(x * v); break;
    case TF_DIV: BIN16_LOOP(x / v); break;
  }
}
#undef BIN16_LOOP


/* y[i] = a[i % na] op b[i % nb] for i in [begin, end), where the shorter side repeats. */
GE_FAST_CLONES
static void bin_range(const bin_job *j, size_t begin, size_t end) {
  /* no restrict: y may be a or b (in place, same positions); ivdep: no loop-carried
     dependence even then */
  const float *a = j->a, *b = j->b;
  float *y = j->y;
  size_t blk = j->na < j->nb ? j->na : j->nb;
  bool a_rep = j->na < j->nb; /* a is the repeating block */
  size_t i = begin;
  while (i < end) {
    size_t off = i % blk, len = blk - off;
    if (len > end - i) len = end - i;
    const float *pa = a_rep ? a + off : a + i, *pb = a_rep ? b + i : b + off;
    float *py = y + i;
    if (blk == 1) { /* a scalar side: one pass over the rest */
      len = end - i;
      float sv = a_rep ? a[0] : b[0];
      const float *v = a_rep ? b + i : a + i;
      switch (j->op) {
        case TF_ADD: GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = v[k] + sv; break;
        case TF_MUL: GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = v[k] * sv; break;
        case TF_SUB:
          if (a_rep) GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = sv - v[k];
          else GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = v[k] - sv;
          break;
        case TF_DIV:
          if (a_rep) GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = sv / v[k];
          else GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = v[k] / sv;
          break;
      }
    } else {
      switch (j->op) {
        case TF_ADD: GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = pa[k] + pb[k]; break;
        case TF_SUB: GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = pa[k] - pb[k]; break;
        case TF_MUL: GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = pa[k] * pb[k]; break;
        case TF_DIV: GE_IVDEP for (size_t k = 0; k < len; k++) py[k] = pa[k] / pb[k]; break;
      }
    }
    i += len;
  }
}

static void bin_chunk(void *arg, size_t begin, size_t end) {
  const bin_job *j = arg;
  size_t n = j->na > j->nb ? j->na : j->nb;
  /* chunks are in units of 1024 elements */
  size_t lo = begin * 1024, hi = end * 1024 < n ? end * 1024 : n;
  if (lo < hi && (j->a16 || j->b16)) bin16_range(j, lo, hi);
  else if (lo < hi) bin_range(j, lo, hi);
}

/* True when `small` broadcasts to `big` as a trailing block: after dropping small's leading
   1s, its dims equal big's last dims (small may also be a scalar / all ones). */
static bool tf_trailing_block(const ge_tensor *big, const ge_tensor *small) {
  int32_t r = small->rank, lead = 0;
  while (lead < r && small->dims[lead] == 1) lead++;
  int32_t k = r - lead;
  if (k > big->rank) return false;
  for (int32_t d = 0; d < k; d++)
    if (small->dims[lead + d] != big->dims[big->rank - k + d]) return false;
  return true;
}

static ge_status bin_run(const void *state, ge_kctx *ctx) {
  const bin_state *s = state;
  const ge_tensor *A = ctx->in[0], *B = ctx->in[1];
  ge_tensor *Y = ctx->out[0];
  if (!A || !B || !Y) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast binary op: A, B and C are required");
  if (A->dtype != GE_F32 || B->dtype != GE_F32 || Y->dtype != GE_F32)
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "fast binary op: every tensor must be float32");
  bool ok = false;
  if (A->numel == Y->numel && B->numel == Y->numel) {
    ok = A->rank == B->rank;
    for (int32_t d = 0; ok && d < A->rank; d++) ok = A->dims[d] == B->dims[d];
  } else if (A->numel == Y->numel && B->numel && B->numel <= A->numel) {
    ok = tf_trailing_block(A, B) && A->rank == Y->rank;
  } else if (B->numel == Y->numel && A->numel && A->numel <= B->numel) {
    ok = tf_trailing_block(B, A) && B->rank == Y->rank;
  }
  if (ok) /* the output must have the shape of the bigger input */
    for (int32_t d = 0; d < Y->rank; d++) {
      const ge_tensor *big = A->numel >= B->numel ? A : B;
      if (big->rank != Y->rank || big->dims[d] != Y->dims[d]) ok = false;
    }
  if ((s->a16 || s->b16) && (!ok || A->numel != B->numel))
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "fast binary op: an input stored bf16 needs two inputs of one shape");
  if (!ok) return s->ref->run(s->ref_state, ctx);
  if (!Y->numel) return GE_OK;
  bin_job j = {.a = A->data, .b = B->data, .y = Y->data, .na = A->numel, .nb = B->numel, .op = s->op,
               .a16 = s->a16 ? A->data : NULL, .b16 = s->b16 ? B->data : NULL};
  size_t chunks = (Y->numel + 1023) / 1024;
  ge_parallel_for(tf_threads(ctx->threads, Y->numel), chunks, bin_chunk, &j);
  return GE_OK;
}

const ge_kernel_def ge_fast_kernels_tf[] = {
    {GE_FUSED_DOMAIN, "LayerNormalization", 1, 0,
     {.prepare = ln_prepare, .run = ln_run, .release = free, .overwrites_outputs = true, .layout_pref = ln_layout_pref}},
    {"", "Softmax", 13, 0, {sm_prepare, sm_run, free, false, true}},
    {"", "Add", 7, 0,
     {.prepare = add_prepare, .run = bin_run, .release = bin_release, .overwrites_outputs = true, .inplace_inputs = 3,
      .layout_pref = add_layout_pref}},
    {"", "Sub", 7, 0, {sub_prepare, bin_run, bin_release, false, true, 3}},
    {"", "Mul", 7, 0, {mul_prepare, bin_run, bin_release, false, true, 3}},
    {"", "Div", 7, 0, {div_prepare, bin_run, bin_release, false, true, 3}},
    {0},
};
