/* Fast float32 reductions (issue 6): ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2,
 * ReduceL1, ReduceSumSquare over any axes (attribute, or the axes input of ReduceSum 13+ and
 * the others 18+; keepdims; noop_with_empty_axes).  The reduced and kept dims are compacted
 * first (size-1 dims dropped, neighbours of the same kind merged); two layouts have fast paths:
 *   - [kept, reduced]: rows reduced contiguously, sums in 8 double lanes (vectorised), max/min
 *     in 16 float lanes; rows split over threads.
 *   - [kept, reduced, kept]: for each outer index, a block of up to 1024 inner outputs is
 *     accumulated (double for sums) over the reduced dim, so the loads are contiguous.
 * Sums accumulate in double like the reference.  Other layouts, other dtypes and empty
 * reductions run the reference kernel, prepared alongside. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno") /* see fast_ops.h */
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/threadpool.h"

#define RD_COLS 1024

typedef enum { RD_SUM, RD_MEAN, RD_MAX, RD_MIN, RD_L2, RD_L1, RD_SUMSQ } rd_kind;

typedef struct rd_state {
  ge_fo_ref ref;
  rd_kind op;
  bool noop, axes_input;
  size_t n_axes;
  int64_t axes[GE_MAX_RANK];
} rd_state;
GE_FO_REF_FIRST(rd_state);

static ge_status rd_prepare(const ge_prepare_ctx *p, void **state) {
  static const struct {
    const char *name;
    rd_kind op;
  } names[] = {{"ReduceSum", RD_SUM}, {"ReduceMean", RD_MEAN}, {"ReduceMax", RD_MAX},     {"ReduceMin", RD_MIN},
               {"ReduceL2", RD_L2},   {"ReduceL1", RD_L1},     {"ReduceSumSquare", RD_SUMSQ}};
  if (ge_fo_in_dtype(p, 0) != GE_F32 || p->n_out != 1 || p->out[0].dtype != GE_F32)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: float32 only", p->node->op_type);
  rd_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  bool found = false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(names[i].name, p->node->op_type)) {
      s->op = names[i].op;
      found = true;
    }
  const int64_t *a = NULL;
  size_t na = 0;
  s->axes_input = s->op == RD_SUM ? p->opset >= 13 : p->opset >= 18;
  s->noop = s->axes_input && ge_node_attr_int(p->node, "noop_with_empty_axes", 0) != 0;
  if (!s->axes_input && ge_node_attr_ints(p->node, "axes", &a, &na)) {
    if (na > GE_MAX_RANK) found = false; /* repeated axes: the reference reports them */
    else memcpy(s->axes, a, na * sizeof *a);
    s->n_axes = na;
  }
  if (!found) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast reduce: not handled");
  }
  return ge_fo_prepare_finish(p, s, state);
}

typedef struct rd_job {
  rd_kind op;
  const float *x;
  float *y;
  size_t k1, r, k2; /* [k1, r, k2]; k2 == 1: rows */
  double count;
} rd_job;

static inline float rd_post(rd_kind op, double v, double count) {
  switch (op) {
    case RD_MEAN: return (float)(v / count);
    case RD_L2: return (float)sqrt(v);
    default: return (float)v;
  }
}

/* one contiguous row of n floats */
GE_FO_CLONES
static float rd_row(rd_kind op, const float *x, size_t n, double count) {
  size_t i = 0;
  if (op == RD_MAX || op == RD_MIN) {
    float l[16];
    for (size_t q = 0; q < 16; q++) l[q] = op == RD_MAX ? -INFINITY : INFINITY;
    if (op == RD_MAX) {
      for (; i + 16 <= n; i += 16)
        for (size_t q = 0; q < 16; q++) l[q] = (x[i + q] > l[q] || x[i + q] != x[i + q]) ? x[i + q] : l[q];
    } else {
      for (; i + 16 <= n; i += 16)
        for (size_t q = 0; q < 16; q++) l[q] = (x[i + q] < l[q] || x[i + q] != x[i + q]) ? x[i + q] : l[q];
    }
    float a = l[0];
    for (size_t q = 1; q < 16; q++) {
      if (a != a) break;
      a = (op == RD_MAX ? l[q] > a : l[q] < a) || l[q] != l[q] ? l[q] : a;
    }
    for (; i < n && a == a; i++) a = (op == RD_MAX ? x[i] > a : x[i] < a) || x[i] != x[i] ? x[i] : a;
    return a;
  }
  double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (op == RD_L1) {
    for (; i + 8 <= n; i += 8)
      for (size_t q = 0; q < 8; q++) l[q] += fabs((double)x[i + q]);
    for (; i < n; i++) l[0] += fabs((double)x[i]);
  } else if (op == RD_L2 || op == RD_SUMSQ) {
    for (; i + 8 <= n; i += 8)
      for (size_t q = 0; q < 8; q++) l[q] += (double)x[i + q] * (double)x[i + q];
    for (; i < n; i++) l[0] += (double)x[i] * (double)x[i];
  } else {
    for (; i + 8 <= n; i += 8)
      for (size_t q = 0; q < 8; q++) l[q] += (double)x[i + q];
    for (; i < n; i++) l[0] += (double)x[i];
  }
  return rd_post(op, ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])), count);
}

static void rd_rows(void *arg, size_t begin, size_t end) {
  const rd_job *j = arg;
  for (size_t o = begin; o < end; o++) j->y[o] = rd_row(j->op, j->x + o * j->r, j->r, j->count);
}

/* [k1, r, k2] with k2 > 1: unit = (outer index, block of RD_COLS columns) */
GE_FO_CLONES
static void rd_cols_impl(const rd_job *j, size_t begin, size_t end) {
  size_t blocks = (j->k2 + RD_COLS - 1) / RD_COLS;
  for (size_t u = begin; u < end; u++) {
    size_t o = u / blocks, c0 = (u % blocks) * RD_COLS;
    size_t nc = j->k2 - c0 < RD_COLS ? j->k2 - c0 : RD_COLS;
    const float *x = j->x + o * j->r * j->k2 + c0;
    float *y = j->y + o * j->k2 + c0;
    if (j->op == RD_MAX || j->op == RD_MIN) {
      float acc[RD_COLS];
      for (size_t c = 0; c < nc; c++) acc[c] = j->op == RD_MAX ? -INFINITY : INFINITY;
      for (size_t k = 0; k < j->r; k++) {
        const float *xr = x + k * j->k2;
        if (j->op == RD_MAX)
          for (size_t c = 0; c < nc; c++)
            acc[c] = ((xr[c] > acc[c] || xr[c] != xr[c]) && acc[c] == acc[c]) ? xr[c] : acc[c];
        else
          for (size_t c = 0; c < nc; c++)
            acc[c] = ((xr[c] < acc[c] || xr[c] != xr[c]) && acc[c] == acc[c]) ? xr[c] : acc[c];
      }
      memcpy(y, acc, nc * sizeof *y);
      continue;
    }
    double acc[RD_COLS];
    for (size_t c = 0; c < nc; c++) acc[c] = 0;
    for (size_t k = 0; k < j->r; k++) {
      const float *xr = x + k * j->k2;
      if (j->op == RD_L1)
        for (size_t c = 0; c < nc; c++) acc[c] += fabs((double)xr[c]);
      else if (j->op == RD_L2 || j->op == RD_SUMSQ)
        for (size_t c = 0; c < nc; c++) acc[c] += (double)xr[c] * (double)xr[c];
      else
        for (size_t c = 0; c < nc; c++) acc[c] += (double)xr[c];
    }
    for (size_t c = 0; c < nc; c++) y[c] = rd_post(j->op, acc[c], j->count);
  }
}

static void rd_cols(void *arg, size_t begin, size_t end) { rd_cols_impl(arg, begin, end); }

static ge_status rd_run(const void *state, ge_kctx *ctx) {
  const rd_state *s = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || X->dtype != GE_F32 || Y->dtype != GE_F32 || !X->numel) return ge_fo_ref_run(&s->ref, ctx);
  const int64_t *axes = s->axes;
  size_t n_axes = s->n_axes;
  if (s->axes_input && ctx->n_in > 1 && ctx->in[1]) {
    if (ctx->in[1]->dtype != GE_I64) return ge_fo_ref_run(&s->ref, ctx);
    axes = ctx->in[1]->data;
    n_axes = ctx->in[1]->numel;
  }
  if (n_axes == 0 && s->noop) return ge_fo_ref_run(&s->ref, ctx); /* a copy */
  int r = X->rank;
  bool red[GE_MAX_RANK] = {false};
  if (n_axes == 0)
    for (int d = 0; d < r; d++) red[d] = true;
  for (size_t k = 0; k < n_axes; k++) {
    if (axes[k] < -(int64_t)r || axes[k] >= r) return ge_fo_ref_run(&s->ref, ctx);
    red[axes[k] < 0 ? axes[k] + r : axes[k]] = true;
  }
  /* compact: drop size-1 dims, merge neighbours of the same kind */
  size_t dims[GE_MAX_RANK];
  bool kind[GE_MAX_RANK];
  int m = 0;
  size_t count = 1, kept = 1;
  for (int d = 0; d < r; d++) {
    size_t sz = (size_t)X->dims[d];
    if (red[d]) count *= sz;
    else kept *= sz;
    if (sz == 1) continue;
    if (m && kind[m - 1] == red[d]) {
      dims[m - 1] *= sz;
    } else {
      dims[m] = sz;
      kind[m] = red[d];
      m++;
    }
  }
  if (kept != Y->numel) return ge_fo_ref_run(&s->ref, ctx);
  rd_job j = {.op = s->op, .x = X->data, .y = Y->data, .count = (double)count};
  if (m == 0 || (m == 1 && kind[0])) {
    j.k1 = 1, j.r = X->numel, j.k2 = 1;
  } else if (m == 1) { /* nothing reduced (size-1 axes only): the values themselves */
    j.k1 = X->numel, j.r = 1, j.k2 = 1;
  } else if (m == 2 && !kind[0]) {
    j.k1 = dims[0], j.r = dims[1], j.k2 = 1;
  } else if (m == 2) {
    j.k1 = 1, j.r = dims[0], j.k2 = dims[1];
  } else if (m == 3 && !kind[0]) {
    j.k1 = dims[0], j.r = dims[1], j.k2 = dims[2];
  } else {
    return ge_fo_ref_run(&s->ref, ctx);
  }
  int th = ge_fo_threads(ctx->threads, X->numel, GE_FO_MIN_MOVE);
  if (j.k2 == 1) {
    ge_parallel_for(th, j.k1, rd_rows, &j);
  } else {
    size_t blocks = (j.k2 + RD_COLS - 1) / RD_COLS;
    ge_parallel_for(th, j.k1 * blocks, rd_cols, &j);
  }
  return GE_OK;
}

#define RD(name, since) {"", name, since, 0, {rd_prepare, rd_run, ge_fo_state_release, false, true}}

const ge_kernel_def ge_fast_kernels_reduce[] = {
    RD("ReduceSum", 1), RD("ReduceMean", 1), RD("ReduceMax", 1), RD("ReduceMin", 1),
    RD("ReduceL2", 1),  RD("ReduceL1", 1),   RD("ReduceSumSquare", 1),
    {"", "Resize", 11, 0, {ge_fo_resize_prepare, ge_fo_resize_run, ge_fo_state_release, false, true}},
    {0},
};
