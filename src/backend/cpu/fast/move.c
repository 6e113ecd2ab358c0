/* Fast data movers (issue 6) for every fixed-size dtype (the element size is all they look at;
 * strings run the reference kernel):
 *   - Transpose: size-1 dims dropped and dims that stay adjacent merged first; then one memcpy,
 *     or runs of the unchanged innermost dims, or a 2-D transpose in 16 x 16 tiles between the
 *     input's innermost dim and the output's innermost dim for every other index.
 *   - Slice (opset 10+: starts/ends/axes/steps inputs, negative steps): rows of the innermost
 *     dim, memcpy when its step is 1.
 *   - Gather (any axis; indices int32/int64, negative allowed): every index checked first (the
 *     error names the node, the position and the bad index), then one memcpy per index and
 *     outer index (a plain load for single 4-byte elements).
 *   - Concat (any axis): one memcpy per input block.
 * Work is split over threads in rows / tiles when a call moves enough elements; anything it
 * does not handle at run time goes to the reference kernel, prepared alongside (fast_ops.h). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno") /* see fast_ops.h */
#endif
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_math.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/threadpool.h"
#include "ops/slice_axis.h"

#define MV_TILE 32

typedef struct mvk_state {
  ge_fo_ref ref;
  int64_t axis;
  size_t n_perm;
  int64_t perm[GE_MAX_RANK];
} mvk_state;
GE_FO_REF_FIRST(mvk_state);

static ge_status mvk_prepare(const ge_prepare_ctx *p, void **state) {
  ge_dtype dt = ge_fo_in_dtype(p, 0);
  if (!ge_fo_movable(dt) || p->n_out != 1)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast %s: fixed-size dtypes only", p->node->op_type);
  if (!strcmp(p->node->op_type, "Slice") && p->opset < 10)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "fast Slice: opset 10 and later only");
  mvk_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->axis = ge_node_attr_int(p->node, "axis", 0);
  const int64_t *perm = NULL;
  size_t n = 0;
  if (ge_node_attr_ints(p->node, "perm", &perm, &n) && n <= GE_MAX_RANK) {
    s->n_perm = n;
    memcpy(s->perm, perm, n * sizeof *perm);
  }
  return ge_fo_prepare_finish(p, s, state);
}

/* ------------------------------------------------------------------ Transpose */

typedef struct tr_job {
  const char *x;
  char *y;
  size_t es;
  int m;                       /* merged rank */
  int q;                       /* output position of the input's innermost dim */
  size_t od[GE_MAX_RANK];      /* output dims */
  size_t ss[GE_MAX_RANK];      /* source stride of each output position (elements) */
  size_t os[GE_MAX_RANK];      /* output strides */
  size_t run;                  /* case A: contiguous run length; 0: tiled case */
  size_t itiles;               /* tiled case: tiles along od[q] */
  bool avx;                    /* the processor has AVX (8 x 8 float blocks) */
} tr_job;

/* An odometer over the output positions other than skip1 / skip2 (outer index u), with the
   source and output offsets of the current index. */
typedef struct tr_odo {
  size_t idx[GE_MAX_RANK];
  size_t so, d;
} tr_odo;

static void tr_odo_seek(const tr_job *j, tr_odo *o, size_t u, int skip1, int skip2) {
  o->so = o->d = 0;
  for (int k = j->m - 1; k >= 0; k--) {
    o->idx[k] = 0;
    if (k == skip1 || k == skip2) continue;
    o->idx[k] = u % j->od[k];
    u /= j->od[k];
    o->so += o->idx[k] * j->ss[k];
    o->d += o->idx[k] * j->os[k];
  }
}

static inline void tr_odo_next(const tr_job *j, tr_odo *o, int skip1, int skip2) {
  for (int k = j->m - 1; k >= 0; k--) {
    if (k == skip1 || k == skip2) continue;
    o->so += j->ss[k];
    o->d += j->os[k];
    if (++o->idx[k] < j->od[k]) return;
    o->so -= j->ss[k] * j->od[k];
    o->d -= j->os[k] * j->od[k];
    o->idx[k] = 0;
  }
}

static void tr_runs(void *arg, size_t begin, size_t end) {
  const tr_job *j = arg;
  size_t bytes = j->run * j->es;
  tr_odo o;
  tr_odo_seek(j, &o, begin, j->m - 1, -1);
  for (size_t u = begin; u < end; u++) {
    memcpy(j->y + o.d * j->es, j->x + o.so * j->es, bytes);
    tr_odo_next(j, &o, j->m - 1, -1);
  }
}

/* The tiles [begin, end) of the tiled case in order: each step moves the odometer over the
   other output positions when a new row of tiles starts, and gives the tile's span [i0, ie)
   along od[q]. */
typedef struct tr_tile_it {
  tr_odo o;
  size_t u, begin, end, i0, ie;
} tr_tile_it;

__attribute__((always_inline)) static inline void tr_tile_first(const tr_job *j, tr_tile_it *t, size_t begin,
                                                               size_t end) {
  tr_odo_seek(j, &t->o, begin / j->itiles, j->m - 1, j->q);
  t->u = t->begin = begin;
  t->end = end;
}

__attribute__((always_inline)) static inline bool tr_tile_next(const tr_job *j, tr_tile_it *t) {
  if (t->u >= t->end) return false;
  size_t it = t->u % j->itiles;
  if (it == 0 && t->u != t->begin) tr_odo_next(j, &t->o, j->m - 1, j->q);
  t->i0 = it * MV_TILE;
  t->ie = t->i0 + MV_TILE < j->od[j->q] ? t->i0 + MV_TILE : j->od[j->q];
  t->u++;
  return true;
}

#define TR_TILE(T)                                                                      \
  do {                                                                                  \
    const T *src = (const T *)(const void *)j->x + so;                                  \
    T *dst = (T *)(void *)j->y + d;                                                     \
    for (size_t j0 = 0; j0 < nj; j0 += MV_TILE) {                                       \
      size_t je = j0 + MV_TILE < nj ? j0 + MV_TILE : nj;                                \
      for (size_t i = i0; i < ie; i++) {                                                \
        T *dr = dst + i * osq;                                                          \
        const T *sr = src + i;                                                          \
        for (size_t jj = j0; jj < je; jj++) dr[jj] = sr[jj * sj];                       \
      }                                                                                 \
    }                                                                                   \
  } while (0)

/* scalar on purpose (1- and 2-byte elements; 4- and 8-byte ones take tr_tiles_avx_es where AVX
   is there): vectorised, the strided reads become gathers, slower than plain loads */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void tr_tiles_impl(const tr_job *j, size_t begin, size_t end) {
  size_t nj = j->od[j->m - 1], sj = j->ss[j->m - 1], osq = j->os[j->q];
  tr_tile_it t;
  for (tr_tile_first(j, &t, begin, end); tr_tile_next(j, &t);) {
    size_t so = t.o.so, d = t.o.d, i0 = t.i0, ie = t.ie;
    switch (j->es) {
      case 1: TR_TILE(uint8_t); break;
      case 2: TR_TILE(uint16_t); break;
      case 4: TR_TILE(uint32_t); break;
      default: TR_TILE(uint64_t); break;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TR_AVX 1

/* One 8 x 8 float block: src rows (stride sj) become dst rows (stride osq), in registers. */
__attribute__((target("avx"))) static inline void tr_block8(const float *src, size_t sj, float *dst, size_t osq) {
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + sj), r2 = _mm256_loadu_ps(src + 2 * sj),
         r3 = _mm256_loadu_ps(src + 3 * sj), r4 = _mm256_loadu_ps(src + 4 * sj), r5 = _mm256_loadu_ps(src + 5 * sj),
         r6 = _mm256_loadu_ps(src + 6 * sj), r7 = _mm256_loadu_ps(src + 7 * sj);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + osq, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * osq, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * osq, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * osq, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * osq, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * osq, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * osq, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* One 4 x 4 block of 8-byte elements (moved as bit patterns: shuffles do not touch them). */
__attribute__((target("avx"))) static inline void tr_block4(const double *src, size_t sj, double *dst, size_t osq) {
  __m256d r0 = _mm256_loadu_pd(src), r1 = _mm256_loadu_pd(src + sj), r2 = _mm256_loadu_pd(src + 2 * sj),
          r3 = _mm256_loadu_pd(src + 3 * sj);
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1), t2 = _mm256_unpacklo_pd(r2, r3),
          t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(dst + osq, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(dst + 2 * osq, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(dst + 3 * osq, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* Rows [i0, i1) x columns [k0, nj) of a tile one element at a time (es 4 or 8, as bits). */
static inline void tr_edge(const char *src, char *dst, size_t es, size_t i0, size_t i1, size_t k0, size_t nj,
                           size_t sj, size_t osq) {
  if (es == 4) {
    const uint32_t *s32 = (const uint32_t *)(const void *)src;
    uint32_t *d32 = (uint32_t *)(void *)dst;
    for (size_t i = i0; i < i1; i++)
      for (size_t k = k0; k < nj; k++) d32[i * osq + k] = s32[k * sj + i];
  } else {
    const uint64_t *s64 = (const uint64_t *)(const void *)src;
    uint64_t *d64 = (uint64_t *)(void *)dst;
    for (size_t i = i0; i < i1; i++)
      for (size_t k = k0; k < nj; k++) d64[i * osq + k] = s64[k * sj + i];
  }
}

/* The tiled case for 4- and 8-byte elements (es, a constant where it is inlined) with AVX:
   8 x 8 float / 4 x 4 double blocks in registers, scalar edges. */
__attribute__((target("avx"), always_inline)) static inline void tr_tiles_avx_es(const tr_job *j, size_t begin,
                                                                                size_t end, size_t es) {
  size_t nj = j->od[j->m - 1], sj = j->ss[j->m - 1], osq = j->os[j->q], b = es == 4 ? 8 : 4;
  tr_tile_it t;
  for (tr_tile_first(j, &t, begin, end); tr_tile_next(j, &t);) {
    const char *src = j->x + t.o.so * es;
    char *dst = j->y + t.o.d * es;
    size_t i = t.i0;
    for (; i + b <= t.ie; i += b) {
      size_t jj = 0;
      if (es == 4)
        for (; jj + 8 <= nj; jj += 8)
          tr_block8((const float *)(const void *)src + jj * sj + i, sj, (float *)(void *)dst + i * osq + jj, osq);
      else
        for (; jj + 4 <= nj; jj += 4)
          tr_block4((const double *)(const void *)src + jj * sj + i, sj, (double *)(void *)dst + i * osq + jj, osq);
      tr_edge(src, dst, es, i, i + b, jj, nj, sj, osq);
    }
    tr_edge(src, dst, es, i, t.ie, 0, nj, sj, osq);
  }
}

__attribute__((target("avx"))) static void tr_tiles_avx4(const tr_job *j, size_t begin, size_t end) {
  tr_tiles_avx_es(j, begin, end, 4);
}

__attribute__((target("avx"))) static void tr_tiles_avx8(const tr_job *j, size_t begin, size_t end) {
  tr_tiles_avx_es(j, begin, end, 8);
}
#endif

static void tr_tiles(void *arg, size_t begin, size_t end) {
#ifdef TR_AVX
  const tr_job *j = arg;
  if (j->es == 4 && j->avx) {
    tr_tiles_avx4(j, begin, end);
    return;
  }
  if (j->es == 8 && j->avx) {
    tr_tiles_avx8(j, begin, end);
    return;
  }
#endif
  tr_tiles_impl(arg, begin, end);
}

static ge_status transpose_run(const void *state, ge_kctx *ctx) {
  const mvk_state *s = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (!X || !Y || X->dtype != Y->dtype || !ge_fo_movable(X->dtype) || X->numel != Y->numel)
    return ge_fo_ref_run(&s->ref, ctx);
  size_t es = ge_dtype_size(X->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8) return ge_fo_ref_run(&s->ref, ctx);
  int r = X->rank;
  int perm[GE_MAX_RANK];
  if (s->n_perm == 0) {
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
  } else {
    if ((int)s->n_perm != r) return ge_fo_ref_run(&s->ref, ctx); /* it reports the error */
    unsigned seen = 0;
    for (int i = 0; i < r; i++) {
      int64_t q = s->perm[i] < 0 ? s->perm[i] + r : s->perm[i];
      if (q < 0 || q >= r || (seen >> q & 1u)) return ge_fo_ref_run(&s->ref, ctx);
      seen |= 1u << q;
      perm[i] = (int)q;
    }
  }
  if (!X->numel) return GE_OK;
  /* input axes without the size-1 ones, renumbered */
  int newax[GE_MAX_RANK], nr = 0;
  for (int a = 0; a < r; a++) newax[a] = X->dims[a] == 1 ? -1 : nr++;
  int q[GE_MAX_RANK], nq = 0;
  for (int i = 0; i < r; i++)
    if (newax[perm[i]] >= 0) q[nq++] = newax[perm[i]];
  /* groups of consecutive input axes in output order */
  int gstart[GE_MAX_RANK], glen[GE_MAX_RANK], ng = 0;
  for (int k = 0; k < nq; k++) {
    if (ng && q[k] == gstart[ng - 1] + glen[ng - 1]) {
      glen[ng - 1]++;
    } else {
      gstart[ng] = q[k];
      glen[ng] = 1;
      ng++;
    }
  }
  if (ng <= 1) {
    memcpy(Y->data, X->data, X->nbytes);
    return GE_OK;
  }
  /* sizes of the renumbered input axes */
  size_t isz[GE_MAX_RANK];
  for (int a = 0; a < r; a++)
    if (newax[a] >= 0) isz[newax[a]] = (size_t)X->dims[a];
  /* merged input axis of each group: its rank among the groups by gstart */
  tr_job j = {.x = X->data, .y = Y->data, .es = es, .m = ng};
  size_t gsize[GE_MAX_RANK], gstride[GE_MAX_RANK];
  for (int g = 0; g < ng; g++) {
    gsize[g] = 1;
    for (int k = 0; k < glen[g]; k++) gsize[g] *= isz[gstart[g] + k];
    gstride[g] = 1;
    for (int a = gstart[g] + glen[g]; a < nr; a++) gstride[g] *= isz[a];
  }
  int q_in = -1;
  for (int g = 0; g < ng; g++) {
    j.od[g] = gsize[g];
    j.ss[g] = gstride[g];
    if (gstride[g] == 1) q_in = g;
  }
  j.os[ng - 1] = 1;
  for (int g = ng - 2; g >= 0; g--) j.os[g] = j.os[g + 1] * j.od[g + 1];
  if (q_in < 0) return ge_fo_ref_run(&s->ref, ctx);
  size_t total = X->numel;
  if (q_in == ng - 1) { /* innermost dim unchanged: contiguous runs */
    j.run = j.od[ng - 1];
    size_t runs = total / j.run;
    ge_parallel_for(ge_fo_threads(ctx->threads, total, GE_FO_MIN_MOVE), runs, tr_runs, &j);
    return GE_OK;
  }
  j.q = q_in;
#ifdef TR_AVX
  __builtin_cpu_init();
  j.avx = __builtin_cpu_supports("avx");
#endif
  j.itiles = (j.od[q_in] + MV_TILE - 1) / MV_TILE;
  size_t outer = total / (j.od[q_in] * j.od[ng - 1]);
  ge_parallel_for(ge_fo_threads(ctx->threads, total, GE_FO_MIN_MOVE), outer * j.itiles, tr_tiles, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ Slice */

typedef struct sl_job {
  const char *x;
  char *y;
  size_t es;
  int r;
  int64_t dims[GE_MAX_RANK]; /* output dims */
  int64_t sstr[GE_MAX_RANK]; /* source strides (elements, signed) */
  int64_t off;               /* source offset of the first element */
} sl_job;

/* rows [begin, end) of the output; the row loop is typed so that a strided row is a plain
   loop, not a call */
#define SL_ROWS(T)                                                                   \
  do {                                                                               \
    const T *xs = (const T *)(const void *)j->x;                                     \
    T *ys = (T *)(void *)j->y + begin * inner;                                       \
    for (size_t row = begin; row < end; row++, ys += inner) {                        \
      const T *src = xs + so;                                                        \
      if (s1 == 1) memcpy(ys, src, inner * sizeof(T));                               \
      else for (size_t i = 0; i < inner; i++) ys[i] = src[(ptrdiff_t)i * s1];        \
      for (int d = last - 1; d >= 0; d--) {                                          \
        so += j->sstr[d];                                                            \
        if (++idx[d] < j->dims[d]) break;                                            \
        so -= j->sstr[d] * j->dims[d];                                               \
        idx[d] = 0;                                                                  \
      }                                                                              \
    }                                                                                \
  } while (0)

/* scalar on purpose: vectorised, a strided row becomes gathers, slower than plain loads */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void sl_rows_impl(const sl_job *j, size_t begin, size_t end) {
  int last = j->r - 1;
  size_t inner = (size_t)j->dims[last];
  ptrdiff_t s1 = (ptrdiff_t)j->sstr[last];
  int64_t idx[GE_MAX_RANK] = {0}, so = j->off;
  size_t u = begin;
  for (int d = last - 1; d >= 0; d--) {
    idx[d] = (int64_t)(u % (size_t)j->dims[d]);
    u /= (size_t)j->dims[d];
    so += idx[d] * j->sstr[d];
  }
  switch (j->es) {
    case 1: SL_ROWS(uint8_t); break;
    case 2: SL_ROWS(uint16_t); break;
    case 4: SL_ROWS(uint32_t); break;
    case 8: SL_ROWS(uint64_t); break;
    default:
      for (size_t row = begin; row < end; row++) {
        char *dst = j->y + row * inner * j->es;
        ge_fo_gather_strided(dst, j->x + so * (int64_t)j->es, s1, inner, j->es);
        for (int d = last - 1; d >= 0; d--) {
          so += j->sstr[d];
          if (++idx[d] < j->dims[d]) break;
          so -= j->sstr[d] * j->dims[d];
          idx[d] = 0;
        }
      }
  }
}

static void sl_rows(void *arg, size_t begin, size_t end) { sl_rows_impl(arg, begin, end); }

static ge_status slice_run(const void *state, ge_kctx *ctx) {
  const mvk_state *s = state;
  const ge_tensor *X = ctx->in[0];
  ge_tensor *Y = ctx->out[0];
  if (ctx->n_in < 3 || !X || !Y || X->dtype != Y->dtype || !ge_fo_movable(X->dtype) || X->rank < 1)
    return ge_fo_ref_run(&s->ref, ctx);
  const ge_tensor *ts = ctx->in[1], *te = ctx->in[2];
  const ge_tensor *ta = ctx->n_in > 3 ? ctx->in[3] : NULL, *tp = ctx->n_in > 4 ? ctx->in[4] : NULL;
  if (!ts || !te) return ge_fo_ref_run(&s->ref, ctx);
  size_t n = ts->numel;
  int r = X->rank;
  if (te->numel != n || (ta && ta->numel != n) || (tp && tp->numel != n) || n > (size_t)r)
    return ge_fo_ref_run(&s->ref, ctx);
  int64_t start[GE_MAX_RANK], step[GE_MAX_RANK], dims[GE_MAX_RANK];
  for (int d = 0; d < r; d++) start[d] = 0, step[d] = 1, dims[d] = X->dims[d];
  unsigned seen = 0;
  for (size_t k = 0; k < n; k++) {
    int64_t s0 = ge_tensor_get_i64(ts, k), e0 = ge_tensor_get_i64(te, k);
    int64_t a0 = ta ? ge_tensor_get_i64(ta, k) : (int64_t)k, p0 = tp ? ge_tensor_get_i64(tp, k) : 1;
    if (a0 < -r || a0 >= r || p0 == 0) return ge_fo_ref_run(&s->ref, ctx);
    int64_t ax = a0 < 0 ? a0 + r : a0;
    if (seen >> ax & 1u) return ge_fo_ref_run(&s->ref, ctx);
    seen |= 1u << ax;
    dims[ax] = ge_slice_axis(X->dims[ax], s0, e0, p0, &start[ax]);
    step[ax] = p0;
  }
  size_t numel = 1;
  for (int d = 0; d < r; d++) numel *= (size_t)dims[d];
  if (numel != Y->numel) return ge_fo_ref_run(&s->ref, ctx);
  if (!numel) return GE_OK;
  sl_job j = {.x = X->data, .y = Y->data, .es = ge_dtype_size(X->dtype), .r = r, .off = 0};
  int64_t istr = 1;
  for (int d = r - 1; d >= 0; d--) {
    j.dims[d] = dims[d];
    j.sstr[d] = istr * step[d];
    j.off += start[d] * istr;
    istr *= X->dims[d];
  }
  size_t rows = numel / (size_t)dims[r - 1];
  ge_parallel_for(ge_fo_threads(ctx->threads, numel, GE_FO_MIN_MOVE), rows, sl_rows, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ Gather */

typedef struct ga_job {
  const char *x;
  char *y;
  const void *ind;
  bool i32;
  size_t n, inner_bytes, dim;
} ga_job;

static inline int64_t ga_index(const ga_job *j, size_t i) {
  int64_t v = j->i32 ? (int64_t)((const int32_t *)j->ind)[i] : ((const int64_t *)j->ind)[i];
  return v < 0 ? v + (int64_t)j->dim : v;
}

/* unit u = (outer o, index i) */
static void ga_units(void *arg, size_t begin, size_t end) {
  const ga_job *j = arg;
  size_t ib = j->inner_bytes;
  for (size_t u = begin; u < end; u++) {
    size_t o = u / j->n, i = u % j->n;
    const char *src = j->x + (o * j->dim + (size_t)ga_index(j, i)) * ib;
    char *dst = j->y + u * ib;
    if (ib == 4) memcpy(dst, src, 4);
    else memcpy(dst, src, ib);
  }
}

static ge_status gather_run(const void *state, ge_kctx *ctx) {
  const mvk_state *s = state;
  const ge_tensor *X = ctx->in[0], *I = ctx->in[1];
  ge_tensor *Y = ctx->out[0];
  if (!X || !I || !Y || X->dtype != Y->dtype || !ge_fo_movable(X->dtype) || X->rank < 1 ||
      (I->dtype != GE_I32 && I->dtype != GE_I64) || s->axis < -(int64_t)X->rank || s->axis >= X->rank)
    return ge_fo_ref_run(&s->ref, ctx);
  int ax = (int)(s->axis < 0 ? s->axis + X->rank : s->axis);
  size_t outer = 1, inner = 1;
  for (int d = 0; d < ax; d++) outer *= (size_t)X->dims[d];
  for (int d = ax + 1; d < X->rank; d++) inner *= (size_t)X->dims[d];
  int64_t dim = X->dims[ax];
  size_t n = I->numel;
  size_t want = 0;
  if (ge_mul_overflow_size(outer, n, &want) || ge_mul_overflow_size(want, inner, &want) || want != Y->numel)
    return ge_fo_ref_run(&s->ref, ctx);
  for (size_t i = 0; i < n; i++) {
    int64_t v = I->dtype == GE_I32 ? (int64_t)((const int32_t *)I->data)[i] : ((const int64_t *)I->data)[i];
    if (v < -dim || v >= dim)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT,
                          "input 1 (indices): index %lld at position %zu is out of range [-%lld, %lld) for axis %d "
                          "of input 0 (data, dtype %s)",
                          (long long)v, i, (long long)dim, (long long)dim, ax, ge_dtype_name(X->dtype));
  }
  if (!Y->numel) return GE_OK;
  ga_job j = {.x = X->data, .y = Y->data, .ind = I->data, .i32 = I->dtype == GE_I32, .n = n,
              .inner_bytes = inner * ge_dtype_size(X->dtype), .dim = (size_t)dim};
  ge_parallel_for(ge_fo_threads(ctx->threads, Y->numel, GE_FO_MIN_MOVE), outer * n, ga_units, &j);
  return GE_OK;
}

/* ------------------------------------------------------------------ Concat */

typedef struct cc_job {
  ge_tensor *const *in;
  size_t n_in;
  char *y;
  size_t blk[64];   /* bytes per outer index of input k */
  size_t at[64];    /* byte offset of input k's block in an output row */
  size_t row_bytes; /* bytes per outer index of the output */
} cc_job;

static void cc_units(void *arg, size_t begin, size_t end) {
  const cc_job *j = arg;
  for (size_t u = begin; u < end; u++) {
    size_t o = u / j->n_in, k = u % j->n_in;
    if (j->blk[k])
      memcpy(j->y + o * j->row_bytes + j->at[k], (const char *)j->in[k]->data + o * j->blk[k], j->blk[k]);
  }
}

static ge_status concat_run(const void *state, ge_kctx *ctx) {
  const mvk_state *s = state;
  ge_tensor *Y = ctx->out[0];
  size_t n = ctx->n_in;
  if (!Y || !n || n > 64 || !ge_fo_movable(Y->dtype)) return ge_fo_ref_run(&s->ref, ctx);
  int r = Y->rank;
  if (s->axis < -(int64_t)r || s->axis >= r) return ge_fo_ref_run(&s->ref, ctx);
  int ax = (int)(s->axis < 0 ? s->axis + r : s->axis);
  size_t es = ge_dtype_size(Y->dtype), outer = 1, inner = 1;
  for (int d = 0; d < ax; d++) outer *= (size_t)Y->dims[d];
  for (int d = ax + 1; d < r; d++) inner *= (size_t)Y->dims[d];
  cc_job j = {.in = ctx->in, .n_in = n, .y = Y->data};
  int64_t sum = 0;
  for (size_t k = 0; k < n; k++) {
    const ge_tensor *t = ctx->in[k];
    if (!t || t->dtype != Y->dtype || t->rank != r) return ge_fo_ref_run(&s->ref, ctx);
    for (int d = 0; d < r; d++)
      if (d != ax && t->dims[d] != Y->dims[d]) return ge_fo_ref_run(&s->ref, ctx);
    j.at[k] = (size_t)sum * inner * es;
    j.blk[k] = (size_t)t->dims[ax] * inner * es;
    sum += t->dims[ax];
  }
  if (sum != Y->dims[ax]) return ge_fo_ref_run(&s->ref, ctx);
  j.row_bytes = (size_t)sum * inner * es;
  if (!Y->numel) return GE_OK;
  ge_parallel_for(ge_fo_threads(ctx->threads, Y->numel, GE_FO_MIN_MOVE), outer * n, cc_units, &j);
  return GE_OK;
}

const ge_kernel_def ge_fast_kernels_move[] = {
    {"", "Transpose", 1, 0, {mvk_prepare, transpose_run, ge_fo_state_release, false, true}},
    {"", "Slice", 10, 0, {mvk_prepare, slice_run, ge_fo_state_release, false, true}},
    {"", "Gather", 1, 0, {mvk_prepare, gather_run, ge_fo_state_release, false, true}},
    {"", "Concat", 4, 0, {mvk_prepare, concat_run, ge_fo_state_release, false, true}},
    {0},
};

/* ------------------------------------------------------------------ planar 3-channel images */

bool ge_fast_nchw3_usable(bool bf16) {
#if defined(__x86_64__) && defined(__GNUC__)
  /* the kernel is compiled for all four (its bf16 instructions run only for bf16 output) */
  return bf16 ? ge_cpu_avx512_bf16() : ge_cpu_avx512_bw_vl();
#else
  (void)bf16;
  return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
typedef struct n3_job {
  const float *x;
  void *y;
  size_t hw, chunks; /* chunks per image */
  bool bf16;
} n3_job;

#define N3_CHUNK 2048 /* pixels per claim (a multiple of 16) */

/* Pixels [p0, p1) of image b: 16 at a time, element e of the 48 the block stores (pixel e / 3,
   channel e % 3) is picked from the three channel vectors by two permutes. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void n3_pixels(const n3_job *j, size_t b,
                                                                                     size_t p0, size_t p1) {
  const float *x0 = j->x + b * 3 * j->hw, *x1 = x0 + j->hw, *x2 = x1 + j->hw;
  int32_t i01[3][16], i2[3][16];
  __mmask16 m2[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++)
    for (int l = 0; l < 16; l++) {
      int e = 16 * k + l, pix = e / 3, ch = e % 3;
      i01[k][l] = ch == 1 ? 16 + pix : pix; /* channel 0 from x0, 1 from x1 */
      i2[k][l] = pix;
      if (ch == 2) m2[k] |= (__mmask16)(1u << l);
    }
  __m512i v01[3], v2[3];
  for (int k = 0; k < 3; k++) {
    v01[k] = _mm512_loadu_si512(i01[k]);
    v2[k] = _mm512_loadu_si512(i2[k]);
  }
  size_t p = p0;
  for (; p + 16 <= p1; p += 16) {
    __m512 a = _mm512_loadu_ps(x0 + p), c1 = _mm512_loadu_ps(x1 + p), c2 = _mm512_loadu_ps(x2 + p), o[3];
    for (int k = 0; k < 3; k++)
      o[k] = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(a, v01[k], c1), m2[k], v2[k], c2);
    if (j->bf16) {
      uint16_t *y = (uint16_t *)j->y + (b * j->hw + p) * 3;
      _mm512_storeu_si512((void *)y, (__m512i)_mm512_cvtne2ps_pbh(o[1], o[0]));
      _mm256_storeu_si256((__m256i *)(y + 32), (__m256i)_mm512_cvtneps_pbh(o[2]));
    } else {
      float *y = (float *)j->y + (b * j->hw + p) * 3;
      _mm512_storeu_ps(y, o[0]);
      _mm512_storeu_ps(y + 16, o[1]);
      _mm512_storeu_ps(y + 32, o[2]);
    }
  }
  for (; p < p1; p++) /* the tail: one pixel at a time, the same rounding */
    for (int c = 0; c < 3; c++) {
      float v = (c == 0 ? x0 : c == 1 ? x1 : x2)[p];
      if (j->bf16)
        ((uint16_t *)j->y)[(b * j->hw + p) * 3 + (size_t)c] =
            (uint16_t)_mm_extract_epi16((__m128i)_mm_cvtneps_pbh(_mm_set1_ps(v)), 0);
      else
        ((float *)j->y)[(b * j->hw + p) * 3 + (size_t)c] = v;
    }
}

static void n3_chunks(void *arg, size_t begin, size_t end) {
  const n3_job *j = arg;
  for (size_t u = begin; u < end; u++) {
    size_t b = u / j->chunks, p0 = u % j->chunks * N3_CHUNK, p1 = p0 + N3_CHUNK;
    n3_pixels(j, b, p0, p1 < j->hw ? p1 : j->hw);
  }
}

void ge_fast_nchw3_to_nhwc(const float *x, void *y, size_t n, size_t hw, bool bf16, int threads) {
  n3_job j = {x, y, hw, (hw + N3_CHUNK - 1) / N3_CHUNK, bf16};
  size_t units = n * j.chunks;
  ge_parallel_for(units >= 8 ? threads : 1, units, n3_chunks, &j);
}
#else
void ge_fast_nchw3_to_nhwc(const float *x, void *y, size_t n, size_t hw, bool bf16, int threads) {
  (void)x, (void)y, (void)n, (void)hw, (void)bf16, (void)threads; /* never called: not usable */
}
#endif
