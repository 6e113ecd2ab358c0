/* Lower-precision (bf16 / fp16) compute mode of the oneDNN kernels; see dnnl_lowp.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/threadpool.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#include <immintrin.h>
#define LOWP_AVX512BF16 1
#endif

/* Whether oneDNN has an fp16 kernel other than its reference one for a small convolution or a
   small matmul on this processor (within ONEDNN_MAX_CPU_ISA): asked once per process. */
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;
static bool f16_native; /* written once, under f16_once */

static bool pd_native(dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  bool ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
            strncmp(impl, "ref", 3) && !strstr(impl, ":ref");
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

static void f16_probe(void) {
  dnnl_engine_t eng = NULL;
  if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) return;
  dnnl_memory_desc_t x, w, y, a, b, c;
  dnnl_dims_t xd = {1, 16, 8, 8}, wd = {16, 16, 3, 3}, st = {1, 1}, dl = {0, 0}, pd1 = {1, 1};
  dnnl_dims_t ad = {16, 16};
  dnnl_convolution_desc_t cd;
  dnnl_matmul_desc_t md;
  dnnl_primitive_desc_t pd = NULL;
  if (dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f16, dnnl_format_tag_any) == dnnl_success &&
      dnnl_memory_desc_init_by_tag(&w, 4, wd, dnnl_f16, dnnl_format_tag_any) == dnnl_success &&
      dnnl_memory_desc_init_by_tag(&y, 4, xd, dnnl_f16, dnnl_format_tag_any) == dnnl_success &&
      dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &x, &w, NULL,
                                                 &y, st, dl, pd1, pd1) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) == dnnl_success)
    f16_native = pd_native(pd);
  pd = NULL;
  if (!f16_native && dnnl_memory_desc_init_by_tag(&a, 2, ad, dnnl_f16, dnnl_ab) == dnnl_success &&
      dnnl_memory_desc_init_by_tag(&b, 2, ad, dnnl_f16, dnnl_format_tag_any) == dnnl_success &&
      dnnl_memory_desc_init_by_tag(&c, 2, ad, dnnl_f16, dnnl_ab) == dnnl_success &&
      dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL) == dnnl_success)
    f16_native = pd_native(pd);
  dnnl_engine_destroy(eng);
}

bool ge_dn_f16_usable(void) {
  pthread_once(&f16_once, f16_probe);
  return f16_native;
}

static void note_fallback(const ge_prepare_ctx *p, dnnl_data_type_t dt, const char *why);

dnnl_data_type_t ge_dn_lowp_dt(const ge_prepare_ctx *p) {
  const char *m = ge_node_attr_string(p->node, GE_DN_PRECISION_ATTR, NULL);
  if (!m) return dnnl_f32;
  if (!strcmp(m, "bf16")) {
    /* bf16 without native instructions is emulated (slower than float32): refuse it */
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) != (unsigned)dnnl_cpu_isa_avx512_core_bf16) {
      note_fallback(p, dnnl_bf16,
                    ge_cpu_avx512_bf16() ? "oneDNN's ISA ceiling (ONEDNN_MAX_CPU_ISA) is below AVX512-BF16"
                                         : "the processor has neither AVX512-BF16 nor AMX-BF16");
      return dnnl_f32;
    }
    return dnnl_bf16;
  }
  if (!strcmp(m, "fp16")) {
    /* without any fp16 kernel the node is a float32 one: every float32 kernel may take it (ge's
       own included), as in the float32 mode, instead of oneDNN's float32 fallback alone */
    if (!ge_dn_f16_usable()) {
      note_fallback(p, dnnl_f16, "oneDNN has no fp16 convolution or matmul kernel for this processor");
      return dnnl_f32;
    }
    return dnnl_f16;
  }
  return dnnl_f32;
}

static ge_status md_fail(const ge_prepare_ctx *p, int ndims, dnnl_status_t st) {
  return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %d-d memory descriptor rejected (status %d)", ndims,
                         (int)st);
}

ge_status ge_dn_md_dt(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                      const int64_t *strides, dnnl_data_type_t dt) {
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: rank %d is out of range", ndims);
  dnnl_dims_t d, s;
  int64_t acc = 1;
  for (int i = ndims - 1; i >= 0; i--) {
    d[i] = dims[i];
    s[i] = strides ? strides[i] : acc;
    if (dims[i] > 0 && acc > INT64_MAX / dims[i])
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: tensor too large");
    acc *= dims[i] > 0 ? dims[i] : 1;
  }
  dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, ndims, d, dt, s);
  return st == dnnl_success ? GE_OK : md_fail(p, ndims, st);
}

ge_status ge_dn_md_any_dt(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims,
                          const int64_t *dims, dnnl_data_type_t dt) {
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: rank %d is out of range", ndims);
  dnnl_dims_t d;
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  dnnl_status_t st = dnnl_memory_desc_init_by_tag(md, ndims, d, dt, dnnl_format_tag_any);
  return st == dnnl_success ? GE_OK : md_fail(p, ndims, st);
}

static const char *dt_name(dnnl_data_type_t dt) {
  return dt == dnnl_bf16 ? "bf16" : dt == dnnl_f16 ? "fp16" : "f32";
}

ge_status ge_dn_lowp_check(const ge_prepare_ctx *p, const_dnnl_primitive_desc_t pd, dnnl_data_type_t dt) {
  if (dt == dnnl_f32 || !pd) return GE_OK;
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
    return GE_OK;
  if (!strncmp(impl, "ref", 3) || strstr(impl, ":ref"))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: only a reference %s implementation (%s)",
                           dt_name(dt), impl);
  return GE_OK;
}

/* The one-time note of a fallback (a process-wide latch, written once, never reset: the only
   static state of the oneDNN backend; it carries no per-graph state). */
static atomic_flag g_fallback_noted[2] = {ATOMIC_FLAG_INIT, ATOMIC_FLAG_INIT};

static void note_fallback(const ge_prepare_ctx *p, dnnl_data_type_t dt, const char *why) {
  int k = dt == dnnl_f16 ? 1 : 0;
  if (atomic_flag_test_and_set(&g_fallback_noted[k])) return;
  char buf[160];
  fprintf(stderr,
          "ge: note: %s compute is not available here (%s: %s); nodes marked %s compute in float32 "
          "(shown once)\n",
          dt_name(dt), ge_node_desc(p->node, buf, sizeof buf), why ? why : "declined", dt_name(dt));
}

ge_status ge_dn_lowp_prepare(const ge_prepare_ctx *p, void **state, ge_dn_impl_fn impl, int flags) {
  dnnl_data_type_t dt = ge_dn_lowp_dt(p);
  if (dt != dnnl_f32) {
    ge_status st = impl(p, state, flags, dt);
    if (st != GE_ERR_UNSUPPORTED) return st;
    /* the message names the node already: keep what follows "(Op): " */
    char why[200];
    const char *e = ge_last_error(), *colon = strstr(e, "): ");
    snprintf(why, sizeof why, "%s", colon ? colon + 3 : e);
    st = impl(p, state, flags, dnnl_f32);
    if (st == GE_OK) note_fallback(p, dt, why);
    return st;
  }
  return impl(p, state, flags, dnnl_f32);
}

/* ------------------------------------------------------------------ matmul primitive */

ge_status ge_dn_matmul_pd(const ge_prepare_ctx *p, ge_dn_state *s, const dnnl_memory_desc_t *a,
                         const dnnl_memory_desc_t *b, const dnnl_memory_desc_t *bias,
                         const dnnl_memory_desc_t *c, dnnl_primitive_attr_t attr, const char *what,
                         dnnl_data_type_t cdt, const char *prefer, dnnl_primitive_desc_t *pd) {
  dnnl_matmul_desc_t d;
  if (dnnl_matmul_desc_init(&d, a, b, bias, c) != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN %s: descriptor rejected", what);
  if (!prefer || ge_dn_create_impl(p, s, &d, attr, prefer, pd) != GE_OK) GE_CHECK(ge_dn_create(p, s, &d, attr, pd));
  return ge_dn_lowp_check(p, *pd, cdt);
}

/* ------------------------------------------------------------------ f32 -> bf16 */

#ifdef LOWP_AVX512BF16
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void to_bf16_avx512(const float *x, uint16_t *y, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512((void *)(y + i), (__m512i)v);
  }
  for (; i + 16 <= n; i += 16) {
    __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256((__m256i *)(void *)(y + i), (__m256i)v);
  }
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_mask_storeu_epi16((void *)(y + i), m, (__m256i)v);
  }
}
#endif

typedef struct bf16_job {
  const float *x;
  uint16_t *y;
  bool avx;
} bf16_job;

#define BF16_CHUNK 4096

static void bf16_chunk(void *arg, size_t begin, size_t end) {
  const bf16_job *j = arg;
  size_t b = begin * BF16_CHUNK, e = end * BF16_CHUNK;
#ifdef LOWP_AVX512BF16
  if (j->avx) {
    to_bf16_avx512(j->x + b, j->y + b, e - b);
    return;
  }
#endif
  for (size_t i = b; i < e; i++) j->y[i] = ge_f32_to_bf16_inline(j->x[i]);
}

void ge_dn_to_bf16(const float *x, uint16_t *y, size_t n, int threads) {
  bf16_job j = {.x = x, .y = y, .avx = false};
#ifdef LOWP_AVX512BF16
  j.avx = ge_cpu_avx512_bf16();
#endif
  size_t full = n / BF16_CHUNK;
  if (full) {
    /* below ~64K elements a second thread costs more than it saves */
    int t = threads > 1 && n >= 16 * BF16_CHUNK ? threads : 1;
    if (t > 1) ge_parallel_for(t, full, bf16_chunk, &j);
    else bf16_chunk(&j, 0, full);
  }
  size_t b = full * BF16_CHUNK;
  if (b < n) {
#ifdef LOWP_AVX512BF16
    if (j.avx) {
      to_bf16_avx512(x + b, y + b, n - b);
      return;
    }
#endif
    for (size_t i = b; i < n; i++) y[i] = ge_f32_to_bf16_inline(x[i]);
  }
}

/* ------------------------------------------------------------------ MatMul with a bf16 activation */

struct ge_dn_mm16 {
  ge_dn_state *dn;
  size_t n;             /* elements of input 0 (0: no conversion, ge_dn_run as is) */
  pthread_mutex_t mu;   /* guards buf for one run at a time */
  uint16_t *buf;
};

const char *ge_dn_mm16_describe(const void *state) {
  const ge_dn_mm16 *m = state;
  return m ? ge_dn_describe(m->dn) : NULL;
}

ge_status ge_dn_mm16_wrap(const ge_prepare_ctx *p, ge_dn_state *dn, void **state) {
  ge_dn_mm16 *m = calloc(1, sizeof *m);
  if (!m || pthread_mutex_init(&m->mu, NULL) != 0) {
    free(m);
    ge_dn_release(dn);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  m->dn = dn;
  for (size_t i = 0; !dn->fb && i < dn->n_args; i++) {
    const ge_dn_arg *a = &dn->args[i];
    /* (a bf16-stored input 0, GE_LAYOUT_BF16, is read as it is: no conversion) */
    if (a->arg == DNNL_ARG_SRC && a->kind == GE_DN_IN && a->index == 0 && a->same && !a->stored16 &&
        a->user_md.data_type == dnnl_bf16)
      m->n = a->user_bytes / sizeof(uint16_t);
  }
  *state = m;
  return GE_OK;
}

ge_status ge_dn_mm16_run(const void *state, ge_kctx *ctx) {
  ge_dn_mm16 *m = (ge_dn_mm16 *)state; /* only buf (under mu) changes */
  if (!m->n) return ge_dn_run(m->dn, ctx);
  const ge_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  if (!x || !x->data || x->dtype != GE_F32 || x->numel != m->n)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "oneDNN matmul: input 0 has %zu elements (%s), the plan expects %zu float32",
                        x ? x->numel : 0, x ? ge_dtype_name(x->dtype) : "missing", m->n);
  uint16_t *buf = NULL;
  bool locked = pthread_mutex_trylock(&m->mu) == 0;
  if (locked) {
    if (!m->buf) m->buf = ge_aligned_alloc(m->n * sizeof(uint16_t));
    buf = m->buf;
  }
  bool own = !buf;
  if (own) buf = ge_aligned_alloc(m->n * sizeof(uint16_t));
  if (!buf) {
    if (locked) pthread_mutex_unlock(&m->mu);
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "oneDNN matmul: out of memory (%zu bytes)", m->n * 2);
  }
  ge_dn_to_bf16(x->data, buf, m->n, ctx->threads);
  /* the oneDNN state takes input 0 as plain bf16: a bf16 tensor of the same shape over buf */
  ge_tensor shadow = *x;
  shadow.dtype = GE_BF16;
  shadow.data = buf;
  shadow.nbytes = m->n * sizeof(uint16_t);
  shadow.release = NULL;
  shadow.owns = false;
  ge_tensor *ins[GE_DN_MAX_ARGS];
  size_t nin = ctx->n_in < GE_DN_MAX_ARGS ? ctx->n_in : GE_DN_MAX_ARGS;
  for (size_t i = 0; i < nin; i++) ins[i] = ctx->in[i];
  ins[0] = &shadow;
  ge_kctx sub = *ctx;
  sub.in = ins;
  sub.n_in = nin;
  ge_status st = ge_dn_run(m->dn, &sub);
  if (own) ge_aligned_free(buf);
  if (locked) pthread_mutex_unlock(&m->mu);
  return st;
}

void ge_dn_mm16_release(void *state) {
  ge_dn_mm16 *m = state;
  if (!m) return;
  ge_dn_release(m->dn);
  ge_aligned_free(m->buf);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

uint32_t ge_dn_mm16_packed_inputs(const void *state) {
  const ge_dn_mm16 *m = state;
  return m ? ge_dn_packed_inputs(m->dn) : 0;
}
