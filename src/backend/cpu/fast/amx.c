/* The bf16 GEMM on AMX (fast_amx.h; issue 6).
 *
 * Why ge has its own: oneDNN's bf16 primitives split their work over the threads statically.
 * On a shared host the AMX unit of one core is often slow for a while (another tenant; see
 * docs/performance.md "bf16 on a shared host"), and a 2-thread bf16 run then goes at that
 * core's pace.  Here the threads claim blocks of C dynamically (ge_parallel_steal), so the fast
 * core takes over the slow one's share.  The kernel itself is as fast as oneDNN's brgemm on
 * one core (scratch benchmark, 1 thread, 12 distinct weights streamed from memory, min of 20
 * rounds, oneDNN 2.6 with "any" weights: [128x768]x[768x768] 0.153 against 0.156 ms,
 * [128x768]x[768x3072] 0.81 against 0.89, [128x3072]x[3072x768] 0.73 against 1.15).
 *
 * Blocking: C in blocks of 32 x 32, four float32 accumulator tiles (tmm0-3) over 2 A tiles
 * (tmm4-5: 16 rows x 32 K each) and 2 B tiles (tmm6-7: 16 pairs of K rows x 16 columns, the
 * "VNNI" pairs TDPBF16PS takes), K in steps of 32.  B is packed at prepare into panels of 32
 * columns (ge_amx_pack), zero-padded to K and N multiples of 32, so that a panel's K step is
 * 2 KiB contiguous.  A is read in place when it is bf16 with K a multiple of 32 (the rows of a
 * last partial block are copied once per run into a zero-padded block); otherwise it is
 * converted (float32) or copied into a zero-padded [M32 x K32] buffer first.  A block's
 * accumulators go through a 4 KiB float32 buffer, where the bias, the residual and the
 * activation are applied and the result stored (masked at the edges of C).
 *
 * Order of the blocks: where B is large (a transformer's weights, read from memory every run)
 * panel by panel, each thread prefetching the panel it multiplies next while it does the
 * current one (as pgemm.c does); where B is small and A large (a 1x1 convolution of many
 * pixels) row block by row block, so that a block of A is read once and B stays in cache.
 *
 * Convolutions (fast_amx.h ge_amx_conv): K runs tap by tap, 32 channels at a time.  With
 * dilation 1, X is copied once per run into a zero-bordered buffer split by stride phase, and
 * tap t's A tile for C's row r is the row r + offset(t) of one phase: C's rows are the pixels
 * of the phase grid, the ones past the output dropped in the epilogue (at 56 x 56 with a 3x3
 * window, 7% more rows).  Dilated ones gather each output pixel's field.  ResNet-50 in bf16
 * gives the same outputs bit for bit as with oneDNN's AMX convolutions (same products, same
 * order, same rounding); per-node minima at 1 thread, against oneDNN: its 14x14 and 7x7
 * stages 0.82-0.94, the 56x56 and 28x28 3x3 layers 1.12-1.24, the whole network 0.93-0.96. */
#include "backend/cpu/fast/fast_amx.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/fast/fast_ops.h"
#include "backend/cpu/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AMX_X86 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/fast/fast_avx512.h"
#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,fma")))
#else
#define AMX_X86 0
#endif

#define AMX_B 32 /* rows and columns of a block of C; K step */

static size_t round32(size_t x) { return (x + AMX_B - 1) / AMX_B * AMX_B; }

size_t ge_amx_packed_elems(size_t K, size_t N) { return round32(N) * round32(K); }

void ge_amx_pack(const float *B, size_t K, size_t N, bool trans, float alpha, uint16_t *bp) {
  size_t Kp = round32(K), np = round32(N) / AMX_B;
  memset(bp, 0, np * Kp * AMX_B * sizeof(uint16_t));
  for (size_t p = 0; p < np; p++) {
    uint16_t *panel = bp + p * Kp * AMX_B;
    for (size_t k = 0; k < K; k++) {
      /* K block k / 32, tile pair row (k % 32) / 2, element k % 2 of each pair */
      uint16_t *row = panel + (k / AMX_B) * AMX_B * AMX_B + (k % AMX_B) / 2 * AMX_B + (k & 1);
      for (size_t j = 0; j < AMX_B && p * AMX_B + j < N; j++) {
        size_t n = p * AMX_B + j;
        float v = (trans ? B[n * K + k] : B[k * N + n]) * alpha;
        /* column j: tile j / 16 (512 elements on), pair j % 16 */
        row[(j / 16) * 512 + (j % 16) * 2] = ge_f32_to_bf16_inline(v);
      }
    }
  }
}

size_t ge_amx_conv_k(const ge_amx_conv *cv) { return cv->kh * cv->kw * round32(cv->c); }

bool ge_amx_pack_conv(const float *w, size_t N, const ge_amx_conv *cv, uint16_t *bp) {
  size_t cp = round32(cv->c), taps = cv->kh * cv->kw, K = taps * cp;
  float *b = calloc(K * N, sizeof(float));
  if (!b) return false;
  for (size_t co = 0; co < N; co++)
    for (size_t ci = 0; ci < cv->c; ci++)
      for (size_t t = 0; t < taps; t++) b[(t * cp + ci) * N + co] = w[(co * cv->c + ci) * taps + t];
  ge_amx_pack(b, K, N, false, 1.f, bp);
  free(b);
  return true;
}

#if AMX_X86
/* ------------------------------------------------------------------ availability */

#define AMX_ARCH_REQ_XCOMP_PERM 0x1023 /* arch_prctl: ask for an XSAVE feature (Linux 5.16+) */
#define AMX_XFEATURE_XTILEDATA 18

static bool g_amx_ok;
static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;

static void amx_probe(void) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
  if (!(d & (1u << 22)) || !(d & (1u << 24))) return; /* AMX-BF16, AMX-TILE */
  if (!ge_cpu_avx512_bf16()) return;
  /* oneDNN's ceiling: with ONEDNN_MAX_CPU_ISA below AMX, no AMX here either */
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  if (((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) != (unsigned)dnnl_cpu_isa_avx512_core_amx) return;
  /* the tile data state is off until the process asks for it (oneDNN asks the same) */
  if (syscall(SYS_arch_prctl, AMX_ARCH_REQ_XCOMP_PERM, AMX_XFEATURE_XTILEDATA) != 0) return;
  g_amx_ok = true;
}

bool ge_amx_usable(void) {
  pthread_once(&g_amx_once, amx_probe);
  return g_amx_ok;
}

/* ------------------------------------------------------------------ the blocks */

typedef struct amx_cfg {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} amx_cfg;

typedef struct amx_job {
  const ge_amx_gemm *g;
  const uint16_t *a; /* bf16 A, row stride lda */
  size_t lda;
  const uint16_t *tail; /* the last block's rows when it is partial and A is read in place */
  size_t Kp, np, nmb;
  /* K as taps x kpt steps of 32: for C's row r, tap t reads the A row at a + toff[t] + r lda
     (a GEMM, a gathered convolution: one tap at 0) */
  size_t taps, kpt;
  size_t toff[GE_AMX_MAX_TAPS];
  /* a direct convolution's rows of C are pixels of a grid of images of gh x gw, of which the
     first oh x ow of each are outputs (gw 0: C's row r is A's row r) */
  size_t gh, gw;
  bool mmajor; /* items row block by row block (else panel by panel) */
} amx_job;

/* C's rows of the block at A row r0: out[i], or SIZE_MAX for none (past M, or a padding pixel) */
static void block_rows(const amx_job *j, size_t r0, size_t *out) {
  const ge_amx_gemm *g = j->g;
  if (!j->gw) {
    for (size_t i = 0; i < AMX_B; i++) out[i] = r0 + i < g->M ? r0 + i : SIZE_MAX;
    return;
  }
  const ge_amx_conv *cv = g->conv;
  size_t img = r0 / (j->gh * j->gw), rem = r0 % (j->gh * j->gw), y = rem / j->gw, x = rem % j->gw;
  for (size_t i = 0; i < AMX_B; i++) {
    out[i] = img < cv->n && y < cv->oh && x < cv->ow ? (img * cv->oh + y) * cv->ow + x : SIZE_MAX;
    if (++x == j->gw) {
      x = 0;
      if (++y == j->gh) {
        y = 0;
        img++;
      }
    }
  }
}

static void item_pos(const amx_job *j, size_t w, size_t *q, size_t *mb) {
  if (j->mmajor) {
    *mb = w / j->np;
    *q = w % j->np;
  } else {
    *q = w / j->nmb;
    *mb = w % j->nmb;
  }
}

AMX_TARGET static inline __m512 load_bf16(const uint16_t *p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

/* The accumulators cb [32 x 32] of the block at (r0, n0) to C: + bias + sum, activation.  The
   residual's and C's lines of the block this thread does next, at (nr0, nn0), are prefetched
   (a 1x1 convolution of few channels streams them: its arithmetic is short). */
AMX_TARGET static void epilogue(const ge_amx_gemm *g, float *cb, const size_t *orow, size_t n0, const size_t *nrow,
                                size_t nn0) {
  const size_t N = g->N;
  const size_t cols = N - n0 < AMX_B ? N - n0 : AMX_B;
  const __mmask16 m0 = ge_fast_cols_mask(cols, 0), m1 = ge_fast_cols_mask(cols, 16);
  const ge_fused_act act = g->act;
  const bool inreg = act == GE_ACT_NONE || act == GE_ACT_RELU || act == GE_ACT_GELU || act == GE_ACT_GELU_TANH;
  const bool c16 = g->c16, sum16 = g->sum16;
  const float *sum32 = sum16 ? NULL : (const float *)g->sum;
  const uint16_t *sum_h = sum16 ? (const uint16_t *)g->sum : NULL;
  const size_t esz = c16 ? 2 : 4;
  __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
  if (g->bias) {
    b0 = _mm512_maskz_loadu_ps(m0, g->bias + n0);
    b1 = _mm512_maskz_loadu_ps(m1, g->bias + n0 + 16);
  }
  for (size_t i = 0; i < AMX_B; i++) {
    if (nrow && nrow[i] != SIZE_MAX) {
      size_t noff = nrow[i] * N + nn0;
      if (g->sum) _mm_prefetch((const char *)g->sum + noff * esz, _MM_HINT_T0);
      _mm_prefetch((const char *)g->c + noff * esz, _MM_HINT_T0);
    }
    if (orow[i] == SIZE_MAX) continue;
    float *cr = cb + i * AMX_B;
    const size_t off = orow[i] * N + n0;
    __m512 v0 = _mm512_add_ps(_mm512_load_ps(cr), b0), v1 = _mm512_add_ps(_mm512_load_ps(cr + 16), b1);
    if (sum_h) {
      v0 = _mm512_add_ps(v0, load_bf16(sum_h + off, m0));
      v1 = _mm512_add_ps(v1, load_bf16(sum_h + off + 16, m1));
    } else if (sum32) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, sum32 + off));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, sum32 + off + 16));
    }
    if (act == GE_ACT_RELU) {
      v0 = _mm512_max_ps(v0, _mm512_setzero_ps());
      v1 = _mm512_max_ps(v1, _mm512_setzero_ps());
    } else if (act == GE_ACT_GELU) {
      v0 = ge_fast_gelu16(v0);
      v1 = ge_fast_gelu16(v1);
    } else if (act == GE_ACT_GELU_TANH) {
      v0 = ge_fast_gelu_tanh16(v0);
      v1 = ge_fast_gelu_tanh16(v1);
    } else if (!inreg) {
      _mm512_store_ps(cr, v0);
      _mm512_store_ps(cr + 16, v1);
      ge_fo_act_inplace(act, g->p0, g->p1, cr, AMX_B);
      v0 = _mm512_load_ps(cr);
      v1 = _mm512_load_ps(cr + 16);
    }
    if (c16) {
      uint16_t *c = (uint16_t *)g->c + off;
      if (cols == AMX_B) {
        _mm512_storeu_si512((void *)c, (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
      } else {
        _mm256_mask_storeu_epi16(c, m0, (__m256i)_mm512_cvtneps_pbh(v0));
        _mm256_mask_storeu_epi16(c + 16, m1, (__m256i)_mm512_cvtneps_pbh(v1));
      }
    } else {
      float *c = (float *)g->c + off;
      _mm512_mask_storeu_ps(c, m0, v0);
      _mm512_mask_storeu_ps(c + 16, m1, v1);
    }
  }
}

/* Block (panel q, row block mb); `pf` (or NULL): lines [pf0, pf1) of 64 bytes of the panel to
   prefetch into L2, spread over the K steps. */
AMX_TARGET static void amx_block(const amx_job *j, size_t q, size_t mb, const char *pf, size_t pf0, size_t pf1,
                                 size_t nq, size_t nmb) {
  const ge_amx_gemm *g = j->g;
  const size_t nk = j->Kp / AMX_B, lda = j->lda, kpt = j->kpt, r0 = mb * AMX_B;
  /* A's row r0 (a partial last block of an A read in place: its copy) */
  const uint16_t *a = j->tail && r0 + AMX_B > g->M ? j->tail : j->a + r0 * lda;
  const uint16_t *b = g->bp + q * j->Kp * AMX_B;
  const size_t stride = lda * sizeof(uint16_t);
  size_t per = pf ? (pf1 - pf0 + nk - 1) / nk : 0, l = pf0;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (size_t t = 0; t < j->taps; t++) {
    const uint16_t *a0 = a + j->toff[t], *a1 = a0 + 16 * lda;
    for (size_t k = 0; k < kpt; k++, b += AMX_B * AMX_B) {
      _tile_loadd(4, a0 + k * AMX_B, stride);
      _tile_loadd(6, b, 64);
      _tile_loadd(5, a1 + k * AMX_B, stride);
      _tile_loadd(7, b + 512, 64);
      _tile_dpbf16ps(0, 4, 6);
      for (size_t e = l + per < pf1 ? l + per : pf1; l < e; l++) _mm_prefetch(pf + l * 64, _MM_HINT_T1);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  float cb[AMX_B * AMX_B] __attribute__((aligned(64)));
  _tile_stored(0, cb, AMX_B * sizeof(float));
  _tile_stored(1, cb + 16, AMX_B * sizeof(float));
  _tile_stored(2, cb + 16 * AMX_B, AMX_B * sizeof(float));
  _tile_stored(3, cb + 16 * AMX_B + 16, AMX_B * sizeof(float));
  size_t orow[AMX_B], nrow[AMX_B];
  block_rows(j, r0, orow);
  if (nmb != SIZE_MAX) block_rows(j, nmb * AMX_B, nrow);
  epilogue(g, cb, orow, q * AMX_B, nmb != SIZE_MAX ? nrow : NULL, nq * AMX_B);
}

/* Items [w, w1) of one claim (ge_parallel_steal).  Panel by panel: while a panel's blocks of
   this claim run, the panel this thread multiplies after them (the claim's next item, else
   `next`'s) is prefetched, a share of it per block. */
AMX_TARGET static void amx_claim(void *arg, size_t w, size_t w1, size_t next) {
  const amx_job *j = arg;
  amx_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  const size_t lines = j->Kp * AMX_B * sizeof(uint16_t) / 64; /* of a panel */
  while (w < w1) {
    size_t q, mb;
    item_pos(j, w, &q, &mb);
    if (j->mmajor) {
      size_t nq = SIZE_MAX, nmb = SIZE_MAX;
      if (w + 1 < w1) item_pos(j, w + 1, &nq, &nmb);
      amx_block(j, q, mb, NULL, 0, 0, nq, nmb);
      w++;
      continue;
    }
    /* this claim's blocks of panel q: [w, we) */
    size_t we = (q + 1) * j->nmb < w1 ? (q + 1) * j->nmb : w1;
    size_t wn = we < w1 ? we : next;
    const char *pf = NULL;
    if (wn != SIZE_MAX && wn / j->nmb != q) pf = (const char *)(j->g->bp + wn / j->nmb * j->Kp * AMX_B);
    for (size_t i = w; i < we; i++)
      amx_block(j, q, i - q * j->nmb, pf, lines * (i - w) / (we - w), lines * (i - w + 1) / (we - w), q,
                i + 1 < we ? i + 1 - q * j->nmb : SIZE_MAX);
    w = we;
  }
  /* the tiles stay configured (no TILERELEASE): oneDNN's AMX kernels that follow on this thread
     configure them again anyway, and with a release after each call the oneDNN convolutions
     between these ran slower (ResNet-50 bf16 at 2 threads, per-node minima, one binary with and
     without the release, alternating: 0.949 and 0.958 of the total without it) */
}

/* ------------------------------------------------------------------ A to bf16 */

typedef struct amx_fill {
  const ge_amx_gemm *g;
  uint16_t *dst;      /* rows of Kp */
  size_t Kp, r_base;  /* copy_rows: the source row of dst's row 0 */
} amx_fill;

static void copy_rows(void *arg, size_t r0, size_t r1) {
  const amx_fill *c = arg;
  const ge_amx_gemm *g = c->g;
  for (size_t r = r0; r < r1; r++) {
    uint16_t *d = c->dst + r * c->Kp;
    size_t src = c->r_base + r;
    if (src < g->M) {
      if (g->a16) memcpy(d, (const uint16_t *)g->a + src * g->K, g->K * sizeof(uint16_t));
      else ge_dn_to_bf16((const float *)g->a + src * g->K, d, g->K, 1);
      memset(d + g->K, 0, (c->Kp - g->K) * sizeof(uint16_t));
    } else {
      memset(d, 0, c->Kp * sizeof(uint16_t));
    }
  }
}

/* One pixel's c channels of X (bf16 or float32) as bf16 at d, zero up to cp; NULL src: zeros. */
AMX_TARGET static void pixel16(const ge_amx_gemm *g, const void *src, uint16_t *d, size_t c, size_t cp) {
  if (!src) {
    for (size_t i = 0; i < cp; i += AMX_B) _mm512_storeu_si512((void *)(d + i), _mm512_setzero_si512());
    return;
  }
  if (g->a16 && c == cp) { /* whole channel blocks: 64-byte moves, no call */
    for (size_t i = 0; i < cp; i += AMX_B) _mm512_storeu_si512((void *)(d + i), _mm512_loadu_si512((const uint16_t *)src + i));
    return;
  }
  if (g->a16) memcpy(d, src, c * sizeof(uint16_t));
  else ge_dn_to_bf16(src, d, c, 1);
  memset(d + c, 0, (cp - c) * sizeof(uint16_t));
}

static const void *x_pixel(const ge_amx_gemm *g, size_t img, int64_t iy, int64_t ix) {
  const ge_amx_conv *cv = g->conv;
  if (iy < 0 || ix < 0 || (size_t)iy >= cv->h || (size_t)ix >= cv->w) return NULL;
  size_t off = ((img * cv->h + (size_t)iy) * cv->w + (size_t)ix) * cv->c;
  return g->a16 ? (const void *)((const uint16_t *)g->a + off) : (const void *)((const float *)g->a + off);
}

/* A direct convolution's A: the zero-padded X split by phase (the pixels whose padded row and
   column are py and px modulo the strides, q = py sw + px), each phase that a tap reads a batch
   of images of gh x gw pixels, the i-th of them at a + i prow lda.  Rows [r0, r1) of those
   images (a row: gw pixels). */
typedef struct amx_pad {
  const amx_job *j;
  uint16_t *buf;
  size_t cp, prow, nq;
  size_t q[GE_AMX_MAX_TAPS]; /* the phases the taps read, in the buffer's order */
} amx_pad;

AMX_TARGET static void pad_rows(void *arg, size_t r0, size_t r1) {
  const amx_pad *c = arg;
  const amx_job *j = c->j;
  const ge_amx_conv *cv = j->g->conv;
  const size_t per_q = cv->n * j->gh;
  for (size_t r = r0; r < r1; r++) {
    size_t i = r / per_q, q = c->q[i], rr = r % per_q, img = rr / j->gh, py = q / cv->sw, px = q % cv->sw;
    int64_t iy = (int64_t)(rr % j->gh * cv->sh + py) - (int64_t)cv->pt;
    uint16_t *d = c->buf + (i * c->prow + rr * j->gw) * c->cp;
    size_t x = 0;
    if (cv->sw == 1 && j->g->a16 && cv->c == c->cp && iy >= 0 && (size_t)iy < cv->h) {
      /* bf16 pixels of whole channel blocks, stride 1: the row's interior is one run of X */
      size_t x0 = cv->pl < j->gw ? cv->pl : j->gw, x1 = cv->pl + cv->w < j->gw ? cv->pl + cv->w : j->gw;
      memset(d, 0, x0 * c->cp * sizeof(uint16_t));
      memcpy(d + x0 * c->cp, x_pixel(j->g, img, iy, 0), (x1 - x0) * c->cp * sizeof(uint16_t));
      x = x1;
    }
    for (; x < j->gw; x++)
      pixel16(j->g, x_pixel(j->g, img, iy, (int64_t)(x * cv->sw + px) - (int64_t)cv->pl), d + x * c->cp, cv->c, c->cp);
  }
}

/* A gathered convolution's A: the receptive fields of output pixels [m0, m1), tap by tap. */
AMX_TARGET static void gather_rows(void *arg, size_t m0, size_t m1) {
  const amx_fill *c = arg;
  const ge_amx_conv *cv = c->g->conv;
  size_t cp = round32(cv->c), px = cv->oh * cv->ow;
  for (size_t m = m0; m < m1; m++) {
    uint16_t *d = c->dst + m * c->Kp;
    size_t img = m / px, oy = m % px / cv->ow, ox = m % px % cv->ow;
    for (size_t ky = 0; ky < cv->kh; ky++)
      for (size_t kx = 0; kx < cv->kw; kx++, d += cp) {
        int64_t iy = (int64_t)(oy * cv->sh + ky * cv->dh) - (int64_t)cv->pt;
        int64_t ix = (int64_t)(ox * cv->sw + kx * cv->dw) - (int64_t)cv->pl;
        pixel16(c->g, m < c->g->M ? x_pixel(c->g, img, iy, ix) : NULL, d, cv->c, cp);
      }
  }
}

/* A's bf16 rows for the blocks: in place, converted or copied (a GEMM), padded images (a direct
   convolution) or gathered fields (any other).  False when out of memory. */
static bool prepare_a(amx_job *j, int threads) {
  const ge_amx_gemm *g = j->g;
  const ge_amx_conv *cv = g->conv;
  j->taps = 1;
  j->kpt = j->Kp / AMX_B;
  if (cv && cv->dh == 1 && cv->dw == 1) {
    amx_pad c = {.j = j, .cp = round32(cv->c)};
    /* the padded extent that the outputs read, split into sh x sw phases of gh x gw */
    size_t hp = (cv->oh - 1) * cv->sh + cv->kh, wp = (cv->ow - 1) * cv->sw + cv->kw;
    j->gh = (hp + cv->sh - 1) / cv->sh;
    j->gw = (wp + cv->sw - 1) / cv->sw;
    size_t img_rows = cv->n * j->gh * j->gw;
    j->nmb = round32(img_rows) / AMX_B;
    j->taps = cv->kh * cv->kw;
    j->kpt = c.cp / AMX_B;
    j->lda = c.cp;
    /* a phase's rows: the images, then zeros as far as the last block's farthest tap reads */
    c.prow = j->nmb * AMX_B + (cv->kh - 1) / cv->sh * j->gw + (cv->kw - 1) / cv->sw;
    /* the phases the taps read, each once, in the buffer (a strided 1x1 reads one of sh sw) */
    for (size_t t = 0; t < j->taps; t++) {
      size_t ky = t / cv->kw, kx = t % cv->kw, q = ky % cv->sh * cv->sw + kx % cv->sw, i = 0;
      while (i < c.nq && c.q[i] != q) i++;
      if (i == c.nq) c.q[c.nq++] = q; /* at most taps <= GE_AMX_MAX_TAPS of them */
      j->toff[t] = (i * c.prow + ky / cv->sh * j->gw + kx / cv->sw) * c.cp;
    }
    c.buf = ge_cpu_thread_scratch(c.nq * c.prow * c.cp * sizeof(uint16_t));
    if (!c.buf) return false;
    ge_parallel_for(ge_fo_threads(threads, c.nq * img_rows * c.cp, (size_t)64 << 10), c.nq * cv->n * j->gh, pad_rows,
                    &c);
    for (size_t i = 0; i < c.nq; i++)
      memset(c.buf + (i * c.prow + img_rows) * c.cp, 0, (c.prow - img_rows) * c.cp * sizeof(uint16_t));
    j->a = c.buf;
    return true;
  }
  size_t Mp = j->nmb * AMX_B;
  if (!cv && g->a16 && g->K == j->Kp) { /* in place; a partial last block from a copy */
    j->a = g->a;
    j->lda = g->K;
    if (Mp != g->M) {
      uint16_t *tail = ge_cpu_thread_scratch(AMX_B * j->Kp * sizeof(uint16_t));
      if (!tail) return false;
      amx_fill c = {.g = g, .dst = tail, .Kp = j->Kp, .r_base = Mp - AMX_B};
      copy_rows(&c, 0, AMX_B);
      j->tail = tail;
    }
    return true;
  }
  /* gathered fields (a convolution), or A converted or copied: zero-padded to Mp x Kp */
  uint16_t *buf = ge_cpu_thread_scratch(Mp * j->Kp * sizeof(uint16_t));
  if (!buf) return false;
  amx_fill c = {.g = g, .dst = buf, .Kp = j->Kp};
  ge_parallel_for(ge_fo_threads(threads, Mp * j->Kp, (size_t)64 << 10), Mp, cv ? gather_rows : copy_rows, &c);
  j->a = buf;
  j->lda = j->Kp;
  return true;
}

bool ge_amx_run(const ge_amx_gemm *g, int threads) {
  if (!g->M || !g->N) return true;
  amx_job j = {.g = g, .Kp = round32(g->K), .np = round32(g->N) / AMX_B, .nmb = round32(g->M) / AMX_B};
  if (!prepare_a(&j, threads)) return false;
  /* B that stays in L2 with A large: row blocks outermost.  With several threads, also where
     B is at most twice the activations' bytes (A's elements, an image's before any gathering,
     and C's, at 2 bytes each): each thread then takes whole row blocks, reads all of B and only
     its own rows of A, C and the residual, which the layers before and after split the same
     way, instead of every row of A and some columns of every row of C, half of them in the
     other core's cache.  ResNet-50 bf16 at 2 threads, per-node minima: its 14x14 1x1
     convolutions 0.72-0.85x, the rest 0.9-1.0x, total 0.91-0.98 (noisy host); its 14x14 3x3
     ones (1.2 MB of B against 0.2 MB) were 1.1-1.15x slower split by rows, and stay split by
     panels. */
  /* at least about 4 MFLOP a thread (a block of K = 32 is 64 KFLOP) */
  int t = ge_fo_threads(threads, 2 * j.nmb * AMX_B * round32(g->N) * j.Kp, (size_t)4 << 20);
  size_t b_bytes = j.np * j.Kp * AMX_B * sizeof(uint16_t);
  const ge_amx_conv *cv = g->conv;
  size_t act = 2 * ((cv ? cv->n * cv->h * cv->w * cv->c : g->M * g->K) + g->M * g->N);
  j.mmajor = (b_bytes <= ((size_t)512 << 10) && j.nmb > j.np) ||
             (t > 1 && j.nmb >= 2 * (size_t)t && b_bytes <= 2 * act);
  /* claims of whole panels (row blocks), the last of a share in quarters (ge_steal_blocks) */
  size_t items = j.np * j.nmb, per_outer = j.mmajor ? j.np : j.nmb, tail = 0;
  size_t unit = ge_steal_blocks(t, items / per_outer, per_outer, &tail);
  ge_parallel_steal(t, items, unit, tail, amx_claim, &j);
  return true;
}

#else /* !AMX_X86 */

bool ge_amx_usable(void) { return false; }
bool ge_amx_run(const ge_amx_gemm *g, int threads) {
  (void)g;
  (void)threads;
  return false;
}

#endif
