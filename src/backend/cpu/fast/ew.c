/* Fast element-wise kernels (issue 6): vectorised through GE_FO_CLONES (AVX-512 / AVX2 /
 * baseline chosen at load time) and split over ge.intraOpThreads threads when a call has
 * enough work.
 *   - unary float32: Relu, LeakyRelu, Sigmoid, Tanh, Exp, Erf, Gelu (none / tanh), Sqrt, Neg,
 *     Abs, Clip, HardSigmoid, HardSwish; exp, tanh and erf by branch-free approximations
 *     (a few float32 ulp; see fo_tanhf / fo_erff) so that the loops vectorise.
 *   - Cast / CastLike between float32, float16 and bfloat16 (round to nearest even, NaN kept
 *     quiet, bit-exact with ge_f32_to_f16 / ge_f32_to_bf16).
 *   - general broadcast binary float32 Add/Sub/Mul/Div (only the broadcasts transformer.c does
 *     not fast-path: a middle axis such as [N,C,H,W] op [1,C,1,1]; it keeps the rest), Max/Min
 *     (two inputs) and Pow; numpy broadcasting walked as rows (ref/broadcast.h).
 *   - Where (bool condition, any fixed-size dtype) and Expand (any fixed-size dtype).
 * Every kernel prepares the reference kernel too and runs it for what it meets at run time but
 * does not handle (fast_ops.h). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno") /* see fast_ops.h */
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/ref/broadcast.h"
#include "backend/cpu/threadpool.h"

/* elements per parallel work unit */
#define EW_BLOCK ((size_t)4096)

/* ------------------------------------------------------------------ vector math */

/* tanh: |x| < 0.3 by its odd Taylor series to x^13 (relative error < 1e-9 there), else
   (1 - e) / (1 + e) with e = exp(-2|x|); sign restored. */
static inline float fo_tanhf(float x) {
  float ax = fabsf(x);
  float e = ge_fast_expf(-2.f * ax);
  float big = (1.f - e) / (1.f + e);
  float x2 = x * x;
  float small =
      ax * (1.f + x2 * (-1.f / 3 + x2 * (2.f / 15 + x2 * (-17.f / 315 + x2 * (62.f / 2835 +
                                                                             x2 * (-1382.f / 155925 +
                                                                                   x2 * (21844.f / 6081075)))))));
  float r = ax < 0.3f ? small : big;
  return copysignf(r, x);
}

/* erf for |x| < 0.5: 2/sqrt(pi) x (1 - x^2/3 + x^4/10 - ...) to x^15 */
static inline float fo_erf_small(float ax) {
  float x2 = ax * ax;
  return ax * 1.1283791670955126f *
         (1.f + x2 * (-1.f / 3 + x2 * (1.f / 10 + x2 * (-1.f / 42 + x2 * (1.f / 216 + x2 * (-1.f / 1320 +
                                                                                      x2 * (1.f / 9360 +
                                                                                            x2 * (-1.f / 75600))))))));
}

/* erfc(ax) for ax >= 0: t exp(-ax^2 + P(t)), t = 1 / (1 + ax/2), the Chebyshev fit of
   Numerical Recipes (fractional error below 1.2e-7). */
static inline float fo_erfc_pos(float ax) {
  float t = 1.f / (1.f + 0.5f * ax);
  float p = -1.26551223f +
            t * (1.00002368f +
                 t * (0.37409196f +
                      t * (0.09678418f +
                           t * (-0.18628806f +
                                t * (0.27886807f +
                                     t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  return t * ge_fast_expf(p - ax * ax);
}

static inline float fo_erff(float x) {
  float ax = fabsf(x);
  float r = ax < 0.5f ? fo_erf_small(ax) : 1.f - fo_erfc_pos(ax);
  return copysignf(r, x);
}

/* e^x like expf: ge_fast_expf with its upper clamp moved past the float range (x > 88 is
   computed as e^(x/2) squared, so that e^88.7 is finite and e^89 is inf). */
static inline float fo_expf(float x) {
  float h = ge_fast_expf(x > 88.f ? 0.5f * x : x);
  return x > 88.f ? h * h : h;
}

/* ------------------------------------------------------------------ unary float32 */

typedef enum {
  UN_RELU, UN_LEAKY, UN_SIGMOID, UN_TANH, UN_EXP, UN_ERF, UN_GELU, UN_GELU_TANH, UN_SQRT, UN_NEG, UN_ABS,
  UN_CLIP, UN_HSIG, UN_HSWISH
} un_kind;

typedef struct un_state {
  ge_fo_ref ref;
  un_kind op;
  float alpha, beta;
  bool clip_attr_lo, clip_attr_hi; /* Clip before opset 11 */
  float lo, hi;
} un_state;
GE_FO_REF_FIRST(un_state);

static const struct {
  const char *name;
  un_kind op;
} un_names[] = {
    {"Relu", UN_RELU}, {"LeakyRelu", UN_LEAKY}, {"Sigmoid", UN_SIGMOID}, {"Tanh", UN_TANH},
    {"Exp", UN_EXP},   {"Erf", UN_ERF},         {"Gelu", UN_GELU},       {"Sqrt", UN_SQRT},
    {"Neg", UN_NEG},   {"Abs", UN_ABS},         {"Clip", UN_CLIP},       {"HardSigmoid", UN_HSIG},
    {"HardSwish", UN_HSWISH},
};

static ge_status un_prepare(const ge_prepare_ctx *p, void **state) {
  if (p->n_out != 1 || p->out[0].dtype != GE_F32 || ge_fo_in_dtype(p, 0) != GE_F32)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: float32 only", p->node->op_type);
  for (size_t i = 1; i < p->n_in; i++)
    if (p->in[i].present && ge_fo_in_dtype(p, i) != GE_F32)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: input %zu is not float32", p->node->op_type, i);
  un_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  bool found = false;
  for (size_t i = 0; i < sizeof un_names / sizeof un_names[0]; i++)
    if (!strcmp(un_names[i].name, p->node->op_type)) {
      s->op = un_names[i].op;
      found = true;
    }
  if (!found) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast element-wise: no kernel for this op");
  }
  const ge_node *n = p->node;
  s->alpha = ge_node_attr_float(n, "alpha", s->op == UN_LEAKY ? 0.01f : 0.2f);
  s->beta = ge_node_attr_float(n, "beta", 0.5f);
  if (s->op == UN_GELU && !strcmp(ge_node_attr_string(n, "approximate", "none"), "tanh")) s->op = UN_GELU_TANH;
  if (s->op == UN_CLIP && p->opset < 11) {
    s->clip_attr_lo = ge_node_attr(n, "min") != NULL;
    s->clip_attr_hi = ge_node_attr(n, "max") != NULL;
    s->lo = ge_node_attr_float(n, "min", -INFINITY);
    s->hi = ge_node_attr_float(n, "max", INFINITY);
  }
  return ge_fo_prepare_finish(p, s, state); /* the reference also validates the attributes */
}

typedef struct un_job {
  const un_state *s;
  const float *x;
  float *y; /* may be x */
  size_t n;
  float lo, hi;
} un_job;

/* y may alias x (in place): every loop reads x[i] before it writes y[i]. */
GE_FO_CLONES
static void un_rows(const un_job *j, size_t b, size_t e) {
  const float *x = j->x + b;
  float *y = j->y + b;
  size_t n = e - b;
  const float al = j->s->alpha, be = j->s->beta;
  switch (j->s->op) {
    case UN_RELU: for (size_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.f; break;
    case UN_LEAKY: for (size_t i = 0; i < n; i++) y[i] = x[i] < 0 ? al * x[i] : x[i]; break;
    case UN_SIGMOID:
      for (size_t i = 0; i < n; i++) {
        float v = x[i], ex = ge_fast_expf(-fabsf(v)), r = 1.f / (1.f + ex);
        y[i] = v >= 0 ? r : ex * r;
      }
      break;
    case UN_TANH: for (size_t i = 0; i < n; i++) y[i] = fo_tanhf(x[i]); break;
    case UN_EXP: for (size_t i = 0; i < n; i++) y[i] = fo_expf(x[i]); break;
    case UN_ERF: for (size_t i = 0; i < n; i++) y[i] = fo_erff(x[i]); break;
    case UN_GELU:
      for (size_t i = 0; i < n; i++) {
        float v = x[i], az = fabsf(v * 0.7071067811865476f);
        float sm = fo_erf_small(az), ec = fo_erfc_pos(az);
        /* 1 + erf(z): for z < 0 erfc(|z|) directly (no cancellation) */
        float one_p = v >= 0 ? (az < 0.5f ? 1.f + sm : 2.f - ec) : (az < 0.5f ? 1.f - sm : ec);
        y[i] = 0.5f * v * one_p;
      }
      break;
    case UN_GELU_TANH:
      for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.f + fo_tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
      }
      break;
    case UN_SQRT: break; /* sqrt_rows */
    case UN_NEG: for (size_t i = 0; i < n; i++) y[i] = -x[i]; break;
    case UN_ABS: for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]); break;
    case UN_CLIP: {
      const float lo = j->lo, hi = j->hi;
      for (size_t i = 0; i < n; i++) {
        float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
    } break;
    case UN_HSIG:
      for (size_t i = 0; i < n; i++) {
        float v = al * x[i] + be;
        v = v < 1.f ? v : 1.f; /* NaN -> 1 like fmin(1, NaN) */
        y[i] = v > 0.f ? v : 0.f;
      }
      break;
    case UN_HSWISH:
      for (size_t i = 0; i < n; i++) {
        float v = x[i] / 6.f + 0.5f;
        v = v < 1.f ? v : 1.f;
        v = v > 0.f ? v : 0.f;
        y[i] = x[i] * v;
      }
      break;
  }
}

/* sqrt without errno (GE_FO_CLONES), so that it becomes vsqrtps */
GE_FO_CLONES
static void sqrt_rows(const un_job *j, size_t b, size_t e) {
  const float *x = j->x + b;
  float *y = j->y + b;
  for (size_t i = 0; i < e - b; i++) y[i] = sqrtf(x[i]);
}

static void un_chunk(void *arg, size_t begin, size_t end) {
  const un_job *j = arg;
  size_t b = begin * EW_BLOCK, e = end * EW_BLOCK < j->n ? end * EW_BLOCK : j->n;
  if (b >= e) return;
  if (j->s->op == UN_SQRT) sqrt_rows(j, b, e);
  else un_rows(j, b, e);
}

bool ge_fo_act_supported(ge_fused_act act) { return act < GE_ACT_COUNT && act != GE_ACT_SILU; }

void ge_fo_act_inplace(ge_fused_act act, float p0, float p1, float *y, size_t n) {
  un_state s = {.alpha = p0, .beta = p1};
  un_job j = {.s = &s, .x = y, .y = y, .n = n, .lo = -INFINITY, .hi = INFINITY};
  switch (act) {
    case GE_ACT_RELU: s.op = UN_RELU; break;
    case GE_ACT_LEAKY_RELU: s.op = UN_LEAKY; break;
    case GE_ACT_CLIP:
      s.op = UN_CLIP;
      j.lo = p0;
      j.hi = p1;
      break;
    case GE_ACT_SIGMOID: s.op = UN_SIGMOID; break;
    case GE_ACT_TANH: s.op = UN_TANH; break;
    case GE_ACT_GELU: s.op = UN_GELU; break;
    case GE_ACT_GELU_TANH: s.op = UN_GELU_TANH; break;
    case GE_ACT_HARD_SWISH: s.op = UN_HSWISH; break;
    case GE_ACT_HARD_SIGMOID: s.op = UN_HSIG; break;
    default: return; /* none; SiLU is declined by ge_fo_act_supported */
  }
  un_rows(&j, 0, n);
}

static ge_status un_run(const void *state, ge_kctx *ctx) {
  const un_state *s = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || X->dtype != GE_F32 || Y->dtype != GE_F32 || X->numel != Y->numel || (X->numel && !Y->data))
    return ge_fo_ref_run(&s->ref, ctx);
  un_job j = {.s = s, .x = X->data, .y = Y->data, .n = X->numel, .lo = -INFINITY, .hi = INFINITY};
  if (s->op == UN_CLIP) {
    const ge_tensor *tl = ctx->n_in > 1 ? ctx->in[1] : NULL, *th = ctx->n_in > 2 ? ctx->in[2] : NULL;
    if ((tl && (tl->dtype != GE_F32 || tl->numel != 1)) || (th && (th->dtype != GE_F32 || th->numel != 1)))
      return ge_fo_ref_run(&s->ref, ctx); /* the reference kernel reports it */
    j.lo = tl ? *(const float *)tl->data : (s->clip_attr_lo ? s->lo : -INFINITY);
    j.hi = th ? *(const float *)th->data : (s->clip_attr_hi ? s->hi : INFINITY);
  }
  if (!j.n) return GE_OK;
  bool cheap = s->op == UN_RELU || s->op == UN_NEG || s->op == UN_ABS || s->op == UN_CLIP || s->op == UN_LEAKY;
  int th = ge_fo_threads(ctx->threads, j.n, cheap ? GE_FO_MIN_MOVE : GE_FO_MIN_MATH);
  ge_parallel_for(th, (j.n + EW_BLOCK - 1) / EW_BLOCK, un_chunk, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ Cast f32 <-> f16 / bf16 */

static inline uint32_t fo_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float fo_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* float16 -> float32, branch-free (subnormals through an exact float multiply) */
static inline float fo_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
  uint32_t normal = (em << 13) + (112u << 23);
  uint32_t infnan = 0x7f800000u | ((em & 0x3ffu) << 13);
  uint32_t sub = fo_bits((float)em * 5.9604644775390625e-8f); /* em * 2^-24, exact */
  uint32_t r = em >= 0x7c00u ? infnan : (em >= 0x400u ? normal : sub);
  return fo_float(sign | r);
}

/* float32 -> float16, round to nearest even, as ge_f32_to_f16 */
static inline uint16_t fo_f2h(float f) {
  uint32_t x = fo_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  uint32_t nan = 0x7e00u | ((x >> 13) & 0x3ffu);
  /* below 2^-14: adding 0.5 puts the value, rounded to 2^-24 by the FPU, in the low bits */
  uint32_t sub = fo_bits(fo_float(x) + 0.5f) - 0x3f000000u;
  uint32_t norm = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13; /* rebias -112 << 23, round */
  uint32_t r = x > 0x7f800000u ? nan : (x >= 0x47800000u ? 0x7c00u : (x < 0x38800000u ? sub : norm));
  return (uint16_t)(sign | r);
}

typedef enum { CV_F2H, CV_H2F, CV_F2BF, CV_BF2F, CV_H2BF, CV_BF2H, CV_COPY } cv_kind;

typedef struct cast_job {
  cv_kind k;
  const void *x;
  void *y;
  size_t n, es;
} cast_job;

GE_FO_CLONES
static void cast_rows(const cast_job *j, size_t b, size_t e) {
  size_t n = e - b;
  const float *xf = (const float *)j->x + b;
  const uint16_t *xh = (const uint16_t *)j->x + b;
  float *restrict yf = (float *)j->y + b;
  uint16_t *restrict yh = (uint16_t *)j->y + b;
  switch (j->k) {
    case CV_F2H: for (size_t i = 0; i < n; i++) yh[i] = fo_f2h(xf[i]); break;
    case CV_H2F: for (size_t i = 0; i < n; i++) yf[i] = fo_h2f(xh[i]); break;
    case CV_F2BF: for (size_t i = 0; i < n; i++) yh[i] = ge_f32_to_bf16_inline(xf[i]); break;
    case CV_BF2F: for (size_t i = 0; i < n; i++) yf[i] = fo_float((uint32_t)xh[i] << 16); break;
    case CV_H2BF: for (size_t i = 0; i < n; i++) yh[i] = ge_f32_to_bf16_inline(fo_h2f(xh[i])); break;
    case CV_BF2H: for (size_t i = 0; i < n; i++) yh[i] = fo_f2h(fo_float((uint32_t)xh[i] << 16)); break;
    case CV_COPY: memcpy((char *)j->y + b * j->es, (const char *)j->x + b * j->es, n * j->es); break;
  }
}

static void cast_chunk(void *arg, size_t begin, size_t end) {
  const cast_job *j = arg;
  size_t b = begin * EW_BLOCK, e = end * EW_BLOCK < j->n ? end * EW_BLOCK : j->n;
  if (b < e) cast_rows(j, b, e);
}

static bool cast_dt(ge_dtype d) { return d == GE_F32 || d == GE_F16 || d == GE_BF16; }

static ge_status cast_prepare(const ge_prepare_ctx *p, void **state) {
  if (p->n_out != 1 || !cast_dt(p->out[0].dtype) || !cast_dt(ge_fo_in_dtype(p, 0)))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Cast: float32, float16 and bfloat16 only");
  return ge_fo_prepare_ref_only(p, state);
}

static ge_status cast_run(const void *state, ge_kctx *ctx) {
  const ge_fo_ref *ref = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || !cast_dt(X->dtype) || !cast_dt(Y->dtype) || X->numel != Y->numel)
    return ge_fo_ref_run(ref, ctx);
  cast_job j = {.x = X->data, .y = Y->data, .n = X->numel, .es = ge_dtype_size(X->dtype)};
  ge_dtype a = X->dtype, b = Y->dtype;
  if (a == b) j.k = CV_COPY;
  else if (a == GE_F32) j.k = b == GE_F16 ? CV_F2H : CV_F2BF;
  else if (a == GE_F16) j.k = b == GE_F32 ? CV_H2F : CV_H2BF;
  else j.k = b == GE_F32 ? CV_BF2F : CV_BF2H;
  if (!j.n) return GE_OK;
  ge_parallel_for(ge_fo_threads(ctx->threads, j.n, GE_FO_MIN_MOVE), (j.n + EW_BLOCK - 1) / EW_BLOCK, cast_chunk,
                  &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ broadcast walking */

/* A broadcast walk split over threads: rows of b.inner elements, each row cut into `pieces`
   pieces (1 when there are enough rows to share out). */
typedef struct bc_walk {
  const ge_bcast *b;
  size_t pieces, piece_len;
  /* called per piece: output elements [o, o + n), inputs at offsets off[k] with b->step[k] */
  void (*row)(void *arg, size_t o, const ptrdiff_t *off, size_t n);
  void *arg;
} bc_walk;

static void bc_seek(const ge_bcast *b, size_t row, ge_bcast_iter *it) {
  for (size_t k = 0; k < b->n_in; k++) it->off[k] = 0;
  for (int d = b->rank - 2; d >= 0; d--) {
    size_t dim = (size_t)b->dims[d];
    it->idx[d] = (int64_t)(row % dim);
    row /= dim;
    for (size_t k = 0; k < b->n_in; k++) it->off[k] += b->strides[k][d] * it->idx[d];
  }
}

static void bc_chunk(void *arg, size_t begin, size_t end) {
  const bc_walk *w = arg;
  const ge_bcast *b = w->b;
  size_t row = begin / w->pieces;
  ge_bcast_iter it;
  bc_seek(b, row, &it);
  size_t u = begin;
  while (u < end) {
    size_t piece = u % w->pieces;
    size_t lo = piece * w->piece_len, hi = lo + w->piece_len < b->inner ? lo + w->piece_len : b->inner;
    ptrdiff_t off[GE_BCAST_MAX_IN];
    for (size_t k = 0; k < b->n_in; k++) off[k] = it.off[k] + b->step[k] * (ptrdiff_t)lo;
    w->row(w->arg, row * b->inner + lo, off, hi - lo);
    u++;
    if (u % w->pieces == 0) {
      row++;
      if (u < end) ge_bcast_next(b, &it);
    }
  }
}

static void bc_run(const ge_bcast *b, int threads, size_t min_per, void (*row)(void *, size_t, const ptrdiff_t *, size_t),
                   void *arg) {
  if (!b->numel || !b->inner) return;
  int th = ge_fo_threads(threads, b->numel, min_per);
  bc_walk w = {.b = b, .pieces = 1, .piece_len = b->inner, .row = row, .arg = arg};
  if (th > 1 && b->rows < (size_t)th * 4) { /* few long rows: cut them */
    size_t want = (size_t)th * 4 / b->rows + 1;
    w.piece_len = (b->inner + want - 1) / want;
    if (w.piece_len < 1024) w.piece_len = 1024;
    w.pieces = (b->inner + w.piece_len - 1) / w.piece_len;
  }
  ge_parallel_for(th, b->rows * w.pieces, bc_chunk, &w);
}

/* ------------------------------------------------------------------ binary float32 */

typedef enum { BI_ADD, BI_SUB, BI_MUL, BI_DIV, BI_MAX, BI_MIN, BI_POW } bi_kind;

typedef struct bi_state {
  ge_fo_ref ref;
  bi_kind op;
} bi_state;
GE_FO_REF_FIRST(bi_state);

/* True when small broadcasts to big as a trailing block: after dropping small's leading 1s,
   its dims are big's last dims (transformer.c's test). */
static bool trailing_block(const ge_shape *big, const ge_shape *small) {
  int32_t lead = 0;
  while (lead < small->rank && small->dims[lead] == 1) lead++;
  int32_t k = small->rank - lead;
  if (k > big->rank) return false;
  for (int32_t d = 0; d < k; d++)
    if (small->dims[lead + d] != big->dims[big->rank - k + d]) return false;
  return true;
}

/* True when transformer.c fast-paths these static shapes (its bin_run: same shape, or one side
   a trailing block of the other with the other of the output's shape): Add/Sub/Mul/Div leave
   those to it. */
static bool tf_handles(const ge_shape *a, const ge_shape *b, const ge_shape *y) {
  size_t na = 0, nb = 0, ny = 0;
  if (!ge_shape_numel(a, &na) || !ge_shape_numel(b, &nb) || !ge_shape_numel(y, &ny)) return true;
  bool ok = false;
  if (na == ny && nb == ny) ok = ge_shape_equal(a, b);
  else if (na == ny && nb && nb <= na) ok = trailing_block(a, b);
  else if (nb == ny && na && na <= nb) ok = trailing_block(b, a);
  return ok && ge_shape_equal(na >= nb ? a : b, y);
}

static ge_status bi_prepare(const ge_prepare_ctx *p, void **state) {
  static const struct {
    const char *name;
    bi_kind op;
  } names[] = {{"Add", BI_ADD}, {"Sub", BI_SUB}, {"Mul", BI_MUL}, {"Div", BI_DIV},
               {"Max", BI_MAX}, {"Min", BI_MIN}, {"Pow", BI_POW}};
  if (p->n_in != 2 || p->n_out != 1 || ge_fo_in_dtype(p, 0) != GE_F32 || ge_fo_in_dtype(p, 1) != GE_F32 ||
      p->out[0].dtype != GE_F32)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: two float32 inputs only", p->node->op_type);
  bi_kind op = BI_ADD;
  bool found = false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(names[i].name, p->node->op_type)) {
      op = names[i].op;
      found = true;
    }
  if (!found) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast binary: no kernel for this op");
  if (op <= BI_DIV) {
    const ge_shape *a = &p->in[0].type->shape, *b = &p->in[1].type->shape;
    if (!ge_shape_is_static(a) || !ge_shape_is_static(b) || !ge_shape_is_static(&p->out[0].shape) ||
        tf_handles(a, b, &p->out[0].shape))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: left to the transformer kernel", p->node->op_type);
  }
  bi_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->op = op;
  return ge_fo_prepare_finish(p, s, state);
}

typedef struct bi_job {
  bi_kind op;
  const float *a, *b;
  float *y;
  ptrdiff_t sa, sb; /* 0 or 1 */
} bi_job;

#define BI_LOOP(EXPR)                                                              \
  do {                                                                             \
    if (sa && sb)                                                                  \
      for (size_t i = 0; i < n; i++) {                                             \
        float x = a[i], v = b[i];                                                  \
        y[i] = (EXPR);                                                             \
      }                                                                            \
    else if (sa) {                                                                 \
      const float v = b[0];                                                        \
      for (size_t i = 0; i < n; i++) {                                             \
        float x = a[i];                                                            \
        y[i] = (EXPR);                                                             \
      }                                                                            \
    } else if (sb) {                                                               \
      const float x = a[0];                                                        \
      for (size_t i = 0; i < n; i++) {                                             \
        float v = b[i];                                                            \
        y[i] = (EXPR);                                                             \
      }                                                                            \
    } else {                                                                       \
      float x = a[0], v = b[0], r = (EXPR);                                        \
      for (size_t i = 0; i < n; i++) y[i] = r;                                     \
    }                                                                              \
  } while (0)

/* y may alias a or b (in place; then that side has step 1) */
GE_FO_CLONES
static void bi_row_impl(const bi_job *j, size_t o, const ptrdiff_t *off, size_t n) {
  const float *a = j->a + off[0], *b = j->b + off[1];
  float *y = j->y + o;
  ptrdiff_t sa = j->sa, sb = j->sb;
  switch (j->op) {
    case BI_ADD: BI_LOOP(x + v); break;
    case BI_SUB: BI_LOOP(x - v); break;
    case BI_MUL: BI_LOOP(x * v); break;
    case BI_DIV: BI_LOOP(x / v); break;
    /* NaN propagates like numpy.maximum, as the reference */
    case BI_MAX: BI_LOOP(x != x ? x : (v != v ? v : (x > v ? x : v))); break;
    case BI_MIN: BI_LOOP(x != x ? x : (v != v ? v : (x < v ? x : v))); break;
    case BI_POW:
      if (!sb && b[0] == 2.f) {
        for (size_t i = 0; i < n; i++) y[i] = a[i * (size_t)sa] * a[i * (size_t)sa];
      } else {
        BI_LOOP(powf(x, v));
      }
      break;
  }
}

static void bi_row(void *arg, size_t o, const ptrdiff_t *off, size_t n) { bi_row_impl(arg, o, off, n); }

static ge_status bi_run(const void *state, ge_kctx *ctx) {
  const bi_state *s = state;
  const ge_tensor *A = ctx->in[0], *B = ctx->in[1];
  ge_tensor *Y = ctx->out[0];
  if (ctx->n_in != 2 || !A || !B || !Y || A->dtype != GE_F32 || B->dtype != GE_F32 || Y->dtype != GE_F32)
    return ge_fo_ref_run(&s->ref, ctx);
  const ge_tensor *ins[2] = {A, B};
  ge_bcast bc;
  if (ge_bcast_init(&bc, Y->dims, Y->rank, ins, 2) != GE_OK || bc.numel != Y->numel || bc.step[0] < 0 ||
      bc.step[0] > 1 || bc.step[1] < 0 || bc.step[1] > 1)
    return ge_fo_ref_run(&s->ref, ctx);
  bi_job j = {.op = s->op, .a = A->data, .b = B->data, .y = Y->data, .sa = bc.step[0], .sb = bc.step[1]};
  bc_run(&bc, ctx->threads, s->op == BI_POW ? GE_FO_MIN_MATH : GE_FO_MIN_MOVE, bi_row, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ Where */

static ge_status where_prepare(const ge_prepare_ctx *p, void **state) {
  ge_dtype dt = ge_fo_in_dtype(p, 1);
  size_t es = ge_fo_movable(dt) ? ge_dtype_size(dt) : 0;
  if (p->n_in != 3 || ge_fo_in_dtype(p, 0) != GE_BOOL || (es != 1 && es != 2 && es != 4 && es != 8))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Where: a bool condition and fixed-size values only");
  return ge_fo_prepare_ref_only(p, state);
}

typedef struct where_job {
  const uint8_t *c;
  const void *x, *y;
  void *o;
  size_t es;
  ptrdiff_t sc, sx, sy;
} where_job;

#define WHERE_LOOP(T)                                                                         \
  do {                                                                                        \
    const T *xs = (const T *)j->x + off[1], *ys = (const T *)j->y + off[2];                   \
    T *os = (T *)j->o + o;                                                                    \
    if (sc == 1 && sx == 1 && sy == 1)                                                        \
      for (size_t i = 0; i < n; i++) os[i] = c[i] ? xs[i] : ys[i];                            \
    else if (sc == 1 && sx == 1 && sy == 0) {                                                 \
      const T yv = ys[0];                                                                     \
      for (size_t i = 0; i < n; i++) os[i] = c[i] ? xs[i] : yv;                               \
    } else if (sc == 1 && sx == 0 && sy == 1) {                                               \
      const T xv = xs[0];                                                                     \
      for (size_t i = 0; i < n; i++) os[i] = c[i] ? xv : ys[i];                               \
    } else                                                                                    \
      for (size_t i = 0; i < n; i++) os[i] = c[(ptrdiff_t)i * sc] ? xs[(ptrdiff_t)i * sx] : ys[(ptrdiff_t)i * sy]; \
  } while (0)

GE_FO_CLONES
static void where_row_impl(const where_job *j, size_t o, const ptrdiff_t *off, size_t n) {
  const uint8_t *c = j->c + off[0];
  ptrdiff_t sc = j->sc, sx = j->sx, sy = j->sy;
  switch (j->es) {
    case 1: WHERE_LOOP(uint8_t); break;
    case 2: WHERE_LOOP(uint16_t); break;
    case 4: WHERE_LOOP(uint32_t); break;
    default: WHERE_LOOP(uint64_t); break;
  }
}

static void where_row(void *arg, size_t o, const ptrdiff_t *off, size_t n) { where_row_impl(arg, o, off, n); }

static ge_status where_run(const void *state, ge_kctx *ctx) {
  const ge_fo_ref *ref = state;
  const ge_tensor *C = ctx->in[0], *X = ctx->in[1], *Yv = ctx->in[2];
  ge_tensor *O = ctx->out[0];
  if (!C || !X || !Yv || !O || C->dtype != GE_BOOL || X->dtype != Yv->dtype || O->dtype != X->dtype ||
      !ge_fo_movable(X->dtype))
    return ge_fo_ref_run(ref, ctx);
  size_t es = ge_dtype_size(X->dtype);
  const ge_tensor *ins[3] = {C, X, Yv};
  ge_bcast bc;
  if ((es != 1 && es != 2 && es != 4 && es != 8) || ge_bcast_init(&bc, O->dims, O->rank, ins, 3) != GE_OK ||
      bc.numel != O->numel)
    return ge_fo_ref_run(ref, ctx);
  where_job j = {.c = C->data, .x = X->data, .y = Yv->data, .o = O->data, .es = es, .sc = bc.step[0],
                 .sx = bc.step[1], .sy = bc.step[2]};
  bc_run(&bc, ctx->threads, GE_FO_MIN_MOVE, where_row, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ Expand */

static ge_status expand_prepare(const ge_prepare_ctx *p, void **state) {
  if (!ge_fo_movable(ge_fo_in_dtype(p, 0)))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Expand: fixed-size dtypes only");
  return ge_fo_prepare_ref_only(p, state);
}

typedef struct expand_job {
  const char *x;
  char *y;
  size_t es;
  ptrdiff_t sx;
} expand_job;

static void expand_row(void *arg, size_t o, const ptrdiff_t *off, size_t n) {
  const expand_job *j = arg;
  const char *src = j->x + (size_t)off[0] * j->es;
  char *dst = j->y + o * j->es;
  if (j->sx) {
    memcpy(dst, src, n * j->es);
    return;
  }
  switch (j->es) { /* fill with one element */
#define FILL(T)                                  \
  {                                              \
    T v;                                         \
    memcpy(&v, src, sizeof v);                   \
    T *d = (T *)(void *)dst;                     \
    for (size_t i = 0; i < n; i++) d[i] = v;     \
    return;                                      \
  }
    case 1: memset(dst, *(const unsigned char *)src, n); return;
    case 2: FILL(uint16_t)
    case 4: FILL(uint32_t)
    case 8: FILL(uint64_t)
#undef FILL
    default:
      for (size_t i = 0; i < n; i++) memcpy(dst + i * j->es, src, j->es);
  }
}

static ge_status expand_run(const void *state, ge_kctx *ctx) {
  const ge_fo_ref *ref = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || X->dtype != Y->dtype || !ge_fo_movable(X->dtype) || X->rank > Y->rank)
    return ge_fo_ref_run(ref, ctx);
  const ge_tensor *ins[1] = {X};
  ge_bcast bc;
  if (ge_bcast_init(&bc, Y->dims, Y->rank, ins, 1) != GE_OK || bc.numel != Y->numel)
    return ge_fo_ref_run(ref, ctx); /* it reports the bad shape */
  expand_job j = {.x = X->data, .y = Y->data, .es = ge_dtype_size(X->dtype), .sx = bc.step[0]};
  bc_run(&bc, ctx->threads, GE_FO_MIN_MOVE, expand_row, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ tables */

#define UN(name) {"", name, 1, 0, {un_prepare, un_run, ge_fo_state_release, false, true, 1}}

/* Tried before transformer.c's (registry.c): declines what transformer.c fast-paths. */
const ge_kernel_def ge_fast_kernels_ew_bcast[] = {
    {"", "Add", 7, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {"", "Sub", 7, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {"", "Mul", 7, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {"", "Div", 7, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {0},
};

const ge_kernel_def ge_fast_kernels_ew[] = {
    UN("Relu"), UN("LeakyRelu"), UN("Sigmoid"), UN("Tanh"), UN("Exp"), UN("Erf"), UN("Sqrt"), UN("Neg"),
    UN("Abs"), UN("HardSigmoid"), UN("HardSwish"),
    {"", "Gelu", 20, 0, {un_prepare, un_run, ge_fo_state_release, false, true, 1}},
    {"", "Clip", 6, 0, {un_prepare, un_run, ge_fo_state_release, false, true, 1}},
    {"", "Max", 8, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {"", "Min", 8, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {"", "Pow", 7, 0, {bi_prepare, bi_run, ge_fo_state_release, false, true, 3}},
    {"", "Cast", 6, 0, {cast_prepare, cast_run, ge_fo_state_release, false, true}},
    {"", "CastLike", 15, 0, {cast_prepare, cast_run, ge_fo_state_release, false, true}},
    {"", "Where", 9, 0, {where_prepare, where_run, ge_fo_state_release, false, true}},
    {"", "Expand", 8, 0, {expand_prepare, expand_run, ge_fo_state_release, false, true}},
    {0},
};
