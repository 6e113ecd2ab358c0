/* ai.ge::Attention in bf16 (the precision pass marked it; see dnnl_lowp.h):
 *
 *   S = scale * Q x KT          oneDNN batched matmul, bf16 x bf16 -> float32 (AMX / AVX512-BF16)
 *   P = softmax(S + Mask)       float32, rows in parallel, then converted to bf16
 *   Y = P x V                   oneDNN batched matmul, bf16 x bf16 -> float32
 *
 * Q, KT and V are converted to bf16 per run (ge_dn_to_bf16); the mask and the softmax stay
 * float32 (mixed-precision policy: reductions and softmax in float32).  Both primitives are
 * created at prepare for the static shapes; Q, KT, V and Y must share their batch dims (no
 * broadcast), the mask may broadcast as the op allows.  Anything else, an unmarked node, or a
 * processor without fast bf16, declines (GE_ERR_UNSUPPORTED) and the float32 fast kernel runs.
 * mask_mode 1 (select: a bool Mask, masked scores replaced by mask_fill) is applied in the
 * float32 softmax pass, like the additive mask.
 * The per-run buffers (bf16 operands, scores) are kept in the state for one run at a time
 * (try-lock); a concurrent run allocates its own.  Same semantics as the float32 kernels: a
 * fully masked row gives NaN. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/attention_geom.h"
#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "backend/cpu/threadpool.h"
#include "ops/fused.h"

typedef struct attn16 {
  ge_dn_state *qk, *pv;          /* S = scale Q KT;  Y = P V */
  size_t B, M, N, D, Dv;
  size_t nq, nk, nv, ns;         /* elements of Q, KT, V, S (= P) */
  bool kt_t;                     /* KT stored as K [B, N, H, D] (layout): converted to [B, N, D] */
  float scale;
  size_t bytes;                  /* per-run buffer: bf16 Q, KT, V, P (64-byte aligned parts) + float32 S */
  pthread_mutex_t mu;
  void *buf;                     /* the cached per-run buffer (under mu) */
} attn16;

static size_t a16_round(size_t n) { return (n + 63) / 64 * 64; }

const char *ge_dn_attn16_describe(const void *state) {
  const attn16 *a = state;
  return a ? ge_dn_describe(a->qk) : NULL;
}

void ge_dn_attn16_release(void *state) {
  attn16 *a = state;
  if (!a) return;
  if (a->qk) ge_dn_release(a->qk);
  if (a->pv) ge_dn_release(a->pv);
  ge_aligned_free(a->buf);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

/* One batched matmul [B,M,K] x [B,K,N] -> [B,M,N] (B: bat[0] x bat[1], H = bat[1]): bf16
   operands (inputs 0 and 1 of the run's context, dense), float32 destination (output 0), scaled
   by `scale`.  b_t: B is stored as [B, N, K] (transposed strides); c_bshd: the destination is
   stored as [bat[0], M, bat[1], N]. */
static ge_status a16_matmul(const ge_prepare_ctx *p, const char *what, const int64_t bat[2], int64_t M,
                            int64_t K, int64_t N, bool b_t, bool c_bshd, float scale, ge_dn_state **out) {
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, what, &s, &saved));
  const int64_t B0 = bat[0], H = bat[1];
  int64_t ad[4] = {B0, H, M, K}, bd[4] = {B0, H, K, N}, cd[4] = {B0, H, M, N};
  int64_t bst[4] = {H * K * N, K * N, 1, K}, cst[4] = {M * H * N, N, H * N, 1};
  dnnl_memory_desc_t a_md, b_md, c_md;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  ge_status st = ge_dn_md_dt(p, &a_md, 4, ad, NULL, dnnl_bf16);
  if (st == GE_OK) st = ge_dn_md_dt(p, &b_md, 4, bd, b_t ? bst : NULL, dnnl_bf16);
  if (st == GE_OK) st = ge_dn_md(p, &c_md, 4, cd, c_bshd ? cst : NULL);
  if (st == GE_OK && dnnl_primitive_attr_create(&attr) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "oneDNN: out of memory");
  if (st == GE_OK && scale != 1.f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: scale");
  if (st == GE_OK) st = ge_dn_matmul_pd(p, s, &a_md, &b_md, NULL, &c_md, attr, "attention", dnnl_bf16, NULL, &pd);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &a_md, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_WEIGHTS, GE_DN_IN, 1, &b_md, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &c_md, NULL, -1);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  ge_dn_prepare_end(s, saved);
  if (st == GE_OK) {
    /* both operands must be taken as they are (plain bf16): no reorder inside the state */
    for (size_t i = 0; i < s->n_args; i++)
      if (!s->args[i].same) st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: operand layouts");
  }
  if (st != GE_OK) {
    ge_dn_release(s);
    return st;
  }
  *out = s;
  return GE_OK;
}

/* static shapes, float32 operands and output; the Mask float32 (mask_mode 0) or bool (1) */
static bool a16_static_f32(const ge_prepare_ctx *p) {
  bool select = ge_node_attr_int(p->node, "mask_mode", GE_ATTN_MASK_ADD) == GE_ATTN_MASK_SELECT;
  for (size_t i = 0; i < p->n_in; i++) {
    if (!p->in[i].present) continue;
    ge_dtype want = i == 3 && select ? GE_BOOL : GE_F32;
    if (!p->in[i].type || p->in[i].type->dtype != want || !ge_shape_is_static(&p->in[i].type->shape))
      return false;
  }
  for (size_t o = 0; o < p->n_out; o++)
    if (p->node->outputs[o] >= 0 && (p->out[o].dtype != GE_F32 || !ge_shape_is_static(&p->out[o].shape)))
      return false;
  return true;
}

ge_status ge_dn_attn16_prepare(const ge_prepare_ctx *p, void **state) {
  if (ge_dn_lowp_dt(p) != dnnl_bf16)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: only for nodes computing in bf16");
  if (p->n_in < 3 || p->n_out < 1 || !a16_static_f32(p))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: needs static float32 shapes");
  for (size_t i = 0; i < 3; i++)
    if (!p->in[i].present || !p->in[i].type)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: input %zu missing", i);
  /* the logical shapes (the layout attribute: rank-4 operands stored [B, S, H, D]) */
  int64_t lay = ge_node_attr_int(p->node, "layout", 0);
  if (lay < 0 || lay > (int64_t)GE_ATTN_LAYOUT_ALL)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: layout %lld", (long long)lay);
  static const int32_t p_q[4] = {0, 2, 1, 3}, p_k[4] = {0, 2, 3, 1};
  ge_shape ls[4] = {p->in[0].type->shape, p->in[1].type->shape, p->in[2].type->shape, p->out[0].shape};
  static const unsigned bits[4] = {GE_ATTN_LAYOUT_Q, GE_ATTN_LAYOUT_KT, GE_ATTN_LAYOUT_V, GE_ATTN_LAYOUT_Y};
  for (int o = 0; o < 4; o++) {
    if (!((unsigned)lay & bits[o])) continue;
    if (ls[o].rank != 4) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: layout needs rank 4");
    ge_shape t = ls[o];
    for (int d = 0; d < 4; d++) ls[o].dims[d] = t.dims[o == 1 ? p_k[d] : p_q[d]];
  }
  const ge_shape *q = &ls[0], *k = &ls[1], *v = &ls[2], *y = &ls[3];
  int32_t r = q->rank;
  if (r < 3 || k->rank != r || v->rank != r || y->rank != r)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: Q, KT, V, Y of one rank >= 3");
  size_t B = 1;
  for (int32_t d = 0; d < r; d++)
    if (q->dims[d] < 1 || k->dims[d] < 1 || v->dims[d] < 1 || y->dims[d] < 1)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: static non-empty shapes");
  for (int32_t d = 0; d < r - 2; d++) {
    if (k->dims[d] != q->dims[d] || v->dims[d] != q->dims[d] || y->dims[d] != q->dims[d])
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: broadcast batch dims");
    if (ge_mul_overflow_size(B, (size_t)q->dims[d], &B))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: too large");
  }
  size_t M = (size_t)q->dims[r - 2], D = (size_t)q->dims[r - 1], N = (size_t)k->dims[r - 1],
         Dv = (size_t)v->dims[r - 1];
  if ((size_t)k->dims[r - 2] != D || (size_t)v->dims[r - 2] != N || (size_t)y->dims[r - 2] != M ||
      (size_t)y->dims[r - 1] != Dv)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: inner dims");
  attn16 *a = calloc(1, sizeof *a);
  if (!a) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  if (pthread_mutex_init(&a->mu, NULL) != 0) {
    free(a);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  a->B = B, a->M = M, a->N = N, a->D = D, a->Dv = Dv;
  a->kt_t = ((unsigned)lay & GE_ATTN_LAYOUT_KT) != 0;
  size_t t = 0, sz[4];
  size_t bm = 0, bn = 0, bd = 0;
  bool bad = ge_mul_overflow_size(B, M, &bm) || ge_mul_overflow_size(B, N, &bn) || ge_mul_overflow_size(B, D, &bd);
  bad = bad || ge_mul_overflow_size(bm, D, &a->nq) || ge_mul_overflow_size(bd, N, &a->nk) ||
             ge_mul_overflow_size(bn, Dv, &a->nv) || ge_mul_overflow_size(bm, N, &a->ns) ||
             a->ns > SIZE_MAX / 16;
  if (!bad) {
    sz[0] = a16_round(a->nq * 2), sz[1] = a16_round(a->nk * 2), sz[2] = a16_round(a->nv * 2);
    sz[3] = a16_round(a->ns * 2);
    for (size_t i = 0; i < 4 && !bad; i++) {
      bad = sz[i] > SIZE_MAX / 8 - t;
      t += sz[i];
    }
    bad = bad || a16_round(a->ns * 4) > SIZE_MAX / 4 - t;
  }
  if (bad) {
    ge_dn_attn16_release(a);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN attention: too large");
  }
  a->bytes = t + a16_round(a->ns * 4);
  float scale = ge_node_attr_float(p->node, "scale", 1.0f);
  /* the scale is applied by the softmax pass (an output scale slows the AMX kernel down) */
  a->scale = scale;
  /* batch [B] as [1, B]; [B0, H] when Y is stored [B0, M, H, Dv] */
  bool y_bshd = ((unsigned)lay & GE_ATTN_LAYOUT_Y) != 0;
  int64_t bat[2] = {y_bshd ? y->dims[0] : 1, y_bshd ? y->dims[1] : (int64_t)B};
  ge_status st = a16_matmul(p, "attention QK", bat, (int64_t)M, (int64_t)D, (int64_t)N, a->kt_t, false, 1.f, &a->qk);
  if (st == GE_OK)
    st = a16_matmul(p, "attention PV", bat, (int64_t)M, (int64_t)N, (int64_t)Dv, false, y_bshd, 1.f, &a->pv);
  if (st != GE_OK) {
    ge_dn_attn16_release(a);
    return st;
  }
  *state = a;
  return GE_OK;
}

/* softmax rows of S in place (scaled, the mask added first), then converted to bf16 into p */
typedef struct a16_sm {
  float *s;
  uint16_t *p; /* the probabilities in bf16, written row by row while the row is in cache */
  float scale;
  const void *mk;  /* float32, or bool bytes when select */
  bool select;
  float fill;
  size_t M, N, m_row, m_col;
  int32_t rb;
  const int64_t *ob;
  const size_t *ms;
  bool avx512bf16; /* a16_cvt_row can run (checked once per run) */
} a16_sm;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define A16_AVX512BF16 1
/* y[0..n) = bf16(x[0..n) * inv), round to nearest even (NaN stays NaN) */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void a16_cvt_row(const float *x, float inv,
                                                                                      uint16_t *y, size_t n) {
  const __m512 vi = _mm512_set1_ps(inv);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512bh v = _mm512_cvtne2ps_pbh(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16), vi),
                                     _mm512_mul_ps(_mm512_loadu_ps(x + i), vi));
    _mm512_storeu_si512((void *)(y + i), (__m512i)v);
  }
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
    __m256bh v = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vi));
    _mm256_mask_storeu_epi16((void *)(y + i), m, (__m256i)v);
  }
}
#endif

static void a16_softmax_rows(void *arg, size_t begin, size_t end) {
  const a16_sm *j = arg;
  const size_t N = j->N;
  for (size_t row = begin; row < end;) {
    float *x[GE_FAST_ATTN_GROUP];
    const void *m[GE_FAST_ATTN_GROUP];
    size_t g = end - row < GE_FAST_ATTN_GROUP ? end - row : GE_FAST_ATTN_GROUP;
    for (size_t r = 0; r < g; r++) {
      x[r] = j->s + (row + r) * N;
      m[r] = NULL;
      if (j->mk) {
        size_t b = (row + r) / j->M, i = (row + r) % j->M, mo = 0, rem = b;
        for (int32_t d = j->rb - 1; d >= 0; d--) {
          mo += (rem % (size_t)j->ob[d]) * j->ms[d];
          rem /= (size_t)j->ob[d];
        }
        size_t off = mo + i * j->m_row;
        m[r] = j->select ? (const void *)((const uint8_t *)j->mk + off) : (const void *)((const float *)j->mk + off);
      }
    }
    float inv[GE_FAST_ATTN_GROUP];
    g = ge_fast_attn_softmax_rows(x, m, g, j->m_col, N, j->scale, j->select, j->fill, inv);
    for (size_t r = 0; r < g; r++) {
      uint16_t *y = j->p + (row + r) * N;
#ifdef A16_AVX512BF16
      if (j->avx512bf16) {
        a16_cvt_row(x[r], inv[r], y, N);
        continue;
      }
#endif
      for (size_t c = 0; c < N; c++) x[r][c] *= inv[r];
      ge_dn_to_bf16(x[r], y, N, 1);
    }
    row += g;
  }
}

/* Q, KT (or K), V to dense bf16, row by row (a row: a contiguous run of the float32 operand,
   found through the geometry's strides) */
typedef struct a16_cv {
  const float *src[3];
  uint16_t *dst[3];
  size_t rows[3], rpb[3], rs[3], len[3]; /* rows in all; rows per batch; row stride; row length */
  const size_t *bs[3];                   /* batch strides */
  int32_t rb;
  const int64_t *ob;
  bool avx512bf16;
} a16_cv;

static void a16_convert_rows(void *arg, size_t begin, size_t end) {
  const a16_cv *j = arg;
  for (size_t t = begin; t < end; t++) {
    size_t o = 0, u = t;
    while (o < 2 && u >= j->rows[o]) u -= j->rows[o++];
    size_t b = u / j->rpb[o], i = u % j->rpb[o], off = i * j->rs[o], rem = b;
    for (int32_t d = j->rb - 1; d >= 0; d--) {
      off += (rem % (size_t)j->ob[d]) * j->bs[o][d];
      rem /= (size_t)j->ob[d];
    }
    const float *x = j->src[o] + off;
    uint16_t *y = j->dst[o] + u * j->len[o];
#ifdef A16_AVX512BF16
    if (j->avx512bf16) {
      a16_cvt_row(x, 1.f, y, j->len[o]);
      continue;
    }
#endif
    ge_dn_to_bf16(x, y, j->len[o], 1);
  }
}

/* a flat tensor of dtype dt over `data` (bf16 operands, float32 scores) */
static ge_tensor a16_view(void *data, size_t nbytes, ge_dtype dt) {
  ge_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = 1;
  t.numel = nbytes / ge_dtype_size(dt);
  t.dims[0] = (int64_t)t.numel;
  t.nbytes = nbytes;
  t.data = data;
  return t;
}

ge_status ge_dn_attn16_run(const void *state, ge_kctx *ctx) {
  attn16 *a = (attn16 *)state; /* only buf (under mu) changes */
  ge_attn_geom geo;
  GE_CHECK(ge_attn_geom_init(ctx, &geo));
  const ge_tensor *Q = ctx->in[0], *K = ctx->in[1], *V = ctx->in[2];
  const ge_tensor *Mk = ctx->n_in > 3 ? ctx->in[3] : NULL;
  ge_tensor *Y = ctx->out[0];
  if (Q->dtype != GE_F32 || K->dtype != GE_F32 || V->dtype != GE_F32 || Y->dtype != GE_F32 ||
      Q->numel != a->nq || K->numel != a->nk || V->numel != a->nv ||
      geo.M != a->M || geo.N != a->N || geo.batch != a->B)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "oneDNN attention: operands differ from the plan ([%zu x %zu] scores, %zu batch)",
                        a->M, a->N, a->B);
  char *buf = NULL;
  bool locked = pthread_mutex_trylock(&a->mu) == 0;
  if (locked) {
    if (!a->buf) a->buf = ge_aligned_alloc(a->bytes);
    buf = a->buf;
  }
  bool own = !buf;
  if (own) buf = ge_aligned_alloc(a->bytes);
  if (!buf) {
    if (locked) pthread_mutex_unlock(&a->mu);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "oneDNN attention: out of memory (%zu bytes)", a->bytes);
  }
  int threads = ctx->threads > 0 ? ctx->threads : 1;
  uint16_t *qb = (uint16_t *)buf, *kb = (uint16_t *)(buf + a16_round(a->nq * 2));
  uint16_t *vb = (uint16_t *)((char *)kb + a16_round(a->nk * 2));
  uint16_t *pb = (uint16_t *)((char *)vb + a16_round(a->nv * 2));
  float *sc = (float *)((char *)pb + a16_round(a->ns * 2));
  bool avx512bf16 = false;
#ifdef A16_AVX512BF16
  avx512bf16 = ge_cpu_avx512_bf16();
#endif
  {
    /* KT plain: rows of N (over D); stored as K: rows of D (over N), dense [B, N, D] */
    a16_cv cv = {.src = {Q->data, K->data, V->data}, .dst = {qb, kb, vb},
                 .rows = {a->B * a->M, a->B * (a->kt_t ? a->N : a->D), a->B * a->N},
                 .rpb = {a->M, a->kt_t ? a->N : a->D, a->N},
                 .rs = {geo.q_rs, a->kt_t ? geo.k_cs : geo.k_rs, geo.v_rs},
                 .len = {a->D, a->kt_t ? a->D : a->N, a->Dv},
                 .bs = {geo.qs, geo.ks, geo.vs}, .rb = geo.rb, .ob = geo.ob, .avx512bf16 = avx512bf16};
    size_t rows = cv.rows[0] + cv.rows[1] + cv.rows[2];
    ge_parallel_for(a->nq + a->nk + a->nv >= 65536 ? threads : 1, rows, a16_convert_rows, &cv);
  }
  ge_tensor tq = a16_view(qb, a->nq * 2, GE_BF16), tk = a16_view(kb, a->nk * 2, GE_BF16),
            ts = a16_view(sc, a->ns * 4, GE_F32);
  ge_tensor *in1[2] = {&tq, &tk}, *out1[1] = {&ts};
  ge_kctx c1 = *ctx;
  c1.in = in1;
  c1.n_in = 2;
  c1.out = out1;
  c1.n_out = 1;
  ge_status st = ge_dn_run(a->qk, &c1);
  if (st == GE_OK) {
    a16_sm j = {.s = sc, .p = pb, .scale = a->scale, .mk = Mk ? Mk->data : NULL, .select = geo.select,
                .fill = geo.fill, .M = a->M, .N = a->N, .m_row = geo.m_row, .m_col = geo.m_col, .rb = geo.rb,
                .ob = geo.ob, .ms = geo.ms};
    j.avx512bf16 = avx512bf16;
    size_t rows = a->B * a->M;
    ge_parallel_for(rows >= 64 ? threads : 1, rows, a16_softmax_rows, &j);
    ge_tensor tp = a16_view(pb, a->ns * 2, GE_BF16), tv = a16_view(vb, a->nv * 2, GE_BF16);
    ge_tensor *in2[2] = {&tp, &tv};
    ge_tensor *out2[1] = {Y};
    ge_kctx c2 = *ctx;
    c2.in = in2;
    c2.n_in = 2;
    c2.out = out2;
    c2.n_out = 1;
    st = ge_dn_run(a->pv, &c2);
  }
  if (own) ge_aligned_free(buf);
  if (locked) pthread_mutex_unlock(&a->mu);
  return st;
}
