/* Max pooling of channels-last float32 or bf16-stored images (see dnnl_pool.h). */
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno") /* vectorise the channel loops */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_pool.h"
#include "backend/cpu/threadpool.h"

struct ge_dn_maxpool {
  int64_t n, c, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw;
  size_t in_bytes, out_bytes; /* as float32 tensors (a bf16-stored one uses the first half) */
  bool bf16;
};

bool ge_dn_maxpool_bf16_usable(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

ge_status ge_dn_maxpool_new(const ge_prepare_ctx *p, const int64_t *x, const int64_t *y, const int64_t *k,
                            const int64_t *s, const int64_t *pl, bool bf16, ge_dn_maxpool **out) {
  *out = NULL;
  if (bf16 && !ge_dn_maxpool_bf16_usable())
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "channels-last max pool: bf16 needs AVX512-BW");
  size_t in_n = 1, out_n = 1;
  for (int i = 0; i < 4; i++) {
    if (x[i] < 1 || y[i] < 1 || ge_mul_overflow_size(in_n, (size_t)x[i], &in_n) ||
        ge_mul_overflow_size(out_n, (size_t)y[i], &out_n))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "channels-last max pool: empty or too large");
  }
  if (x[0] != y[0] || x[1] != y[1] || in_n > SIZE_MAX / 4 || out_n > SIZE_MAX / 4)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "channels-last max pool: shapes");
  for (int i = 0; i < 2; i++)
    if (k[i] < 1 || s[i] < 1 || pl[i] < 0 || pl[i] >= k[i])
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "channels-last max pool: window");
  ge_dn_maxpool *m = calloc(1, sizeof *m);
  if (!m) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  *m = (ge_dn_maxpool){.n = x[0], .c = x[1], .ih = x[2], .iw = x[3], .oh = y[2], .ow = y[3], .kh = k[0],
                       .kw = k[1], .sh = s[0], .sw = s[1], .ph = pl[0], .pw = pl[1],
                       .in_bytes = in_n * 4, .out_bytes = out_n * 4, .bf16 = bf16};
  /* every window must hold at least one input pixel */
  if ((m->oh - 1) * m->sh - m->ph >= m->ih || (m->ow - 1) * m->sw - m->pw >= m->iw) {
    free(m);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "channels-last max pool: a window lies in the padding");
  }
  *out = m;
  return GE_OK;
}

void ge_dn_maxpool_free(ge_dn_maxpool *m) { free(m); }

typedef struct pool_job {
  const ge_dn_maxpool *m;
  const void *x;
  void *y;
} pool_job;

/* The input positions [*lo, *hi) of output position o's window along one axis (stride st, leading
   pad p, kernel k, n input positions), the padding left out. */
static inline void pool_span(int64_t o, int64_t st, int64_t p, int64_t k, int64_t n, int64_t *lo, int64_t *hi) {
  *lo = o * st - p;
  *hi = *lo + k;
  if (*lo < 0) *lo = 0;
  if (*hi > n) *hi = n;
}

/* y[c] = max(y[c], x[c]) over one channel vector */
static inline void vmax(float *restrict y, const float *restrict x, size_t c) {
  for (size_t i = 0; i < c; i++) y[i] = x[i] > y[i] ? x[i] : y[i];
}

GE_CPU_CLONES static void pool_rows(void *arg, size_t begin, size_t end) {
  const pool_job *j = arg;
  const ge_dn_maxpool *m = j->m;
  size_t c = (size_t)m->c;
  for (size_t r = begin; r < end; r++) { /* r = image * oh + output row */
    int64_t b = (int64_t)r / m->oh, y0, y1;
    pool_span((int64_t)r % m->oh, m->sh, m->ph, m->kh, m->ih, &y0, &y1);
    const float *img = (const float *)j->x + (size_t)b * (size_t)(m->ih * m->iw) * c;
    float *out = (float *)j->y + r * (size_t)m->ow * c;
    for (int64_t ox = 0; ox < m->ow; ox++, out += c) {
      int64_t x0, x1;
      pool_span(ox, m->sw, m->pw, m->kw, m->iw, &x0, &x1);
      bool first = true;
      for (int64_t iy = y0; iy < y1; iy++)
        for (int64_t ix = x0; ix < x1; ix++) {
          const float *src = img + (size_t)(iy * m->iw + ix) * c;
          if (first) {
            memcpy(out, src, c * sizeof *out);
            first = false;
          } else {
            vmax(out, src, c);
          }
        }
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* bf16 bits as int16 ordered like the values they encode: a negative value has its magnitude
   bits flipped (its own inverse) */
__attribute__((target("avx512f,avx512bw"))) static inline __m512i bf16_ord(__m512i v) {
  return _mm512_xor_si512(v, _mm512_srli_epi16(_mm512_srai_epi16(v, 15), 1));
}

/* Output rows [begin, end) of the bf16 pooling, 32 channels (one vector) at a time, the last
   ones masked. */
__attribute__((target("avx512f,avx512bw"))) static void pool_rows16(void *arg, size_t begin, size_t end) {
  const pool_job *j = arg;
  const ge_dn_maxpool *m = j->m;
  size_t c = (size_t)m->c;
  for (size_t r = begin; r < end; r++) {
    int64_t b = (int64_t)r / m->oh, y0, y1;
    pool_span((int64_t)r % m->oh, m->sh, m->ph, m->kh, m->ih, &y0, &y1);
    const uint16_t *img = (const uint16_t *)j->x + (size_t)b * (size_t)(m->ih * m->iw) * c;
    uint16_t *out = (uint16_t *)j->y + r * (size_t)m->ow * c;
    for (int64_t ox = 0; ox < m->ow; ox++, out += c) {
      int64_t x0, x1;
      pool_span(ox, m->sw, m->pw, m->kw, m->iw, &x0, &x1);
      for (size_t c0 = 0; c0 < c; c0 += 32) {
        __mmask32 k = c - c0 >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << (c - c0)) - 1u);
        __m512i acc = _mm512_set1_epi16(INT16_MIN);
        for (int64_t iy = y0; iy < y1; iy++)
          for (int64_t ix = x0; ix < x1; ix++)
            acc = _mm512_max_epi16(acc, bf16_ord(_mm512_maskz_loadu_epi16(k, img + (size_t)(iy * m->iw + ix) * c + c0)));
        _mm512_mask_storeu_epi16(out + c0, k, bf16_ord(acc));
      }
    }
  }
}
#else
static void pool_rows16(void *arg, size_t begin, size_t end) { (void)arg, (void)begin, (void)end; } /* not usable */
#endif

ge_status ge_dn_maxpool_run(const ge_dn_maxpool *m, ge_kctx *ctx) {
  const ge_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  ge_tensor *y = ctx->n_out > 0 ? ctx->out[0] : NULL;
  if (!x || !y || !x->data || !y->data || x->dtype != GE_F32 || y->dtype != GE_F32 || x->nbytes != m->in_bytes ||
      y->nbytes != m->out_bytes)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "channels-last max pool: input has %zu bytes, output %zu; the plan expects %zu and %zu float32 bytes",
                        x ? x->nbytes : 0, y ? y->nbytes : 0, m->in_bytes, m->out_bytes);
  pool_job j = {m, x->data, y->data};
  size_t rows = (size_t)(m->n * m->oh);
  /* a thread is worth starting for ~256K window elements (input pixels x channels read) */
  size_t work = m->out_bytes / 4 * (size_t)(m->kh * m->kw);
  int threads = ctx->threads > 1 && work >= ((size_t)1 << 18) ? ctx->threads : 1;
  ge_parallel_for(threads, rows, m->bf16 ? pool_rows16 : pool_rows, &j);
  return GE_OK;
}
