/* Reference CPU kernels of the random family: RandomNormal, RandomUniform, RandomNormalLike,
 * RandomUniformLike, Bernoulli, Multinomial.
 *
 * Generator: MT19937 as numpy's legacy RandomState draws it (random.h).  With a `seed`
 * attribute the first run of a kernel uses that seed, so it reproduces
 * numpy.random.RandomState(seed); later runs mix in a per-kernel run counter (the generator
 * advances from run to run, as a stateful one would).  Without a seed the kernel's base is
 * taken from the clock and its address at prepare time.  No global state: the counter lives
 * in the kernel state and is atomic, so concurrent runs get distinct streams. */
#include "backend/cpu/ref/random.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/kernel.h"

/* ------------------------------------------------------------------ MT19937 */

void ge_mt_seed(ge_mt19937 *m, uint32_t seed) {
  uint32_t s = seed;
  for (int i = 0; i < 624; i++) {
    m->key[i] = s;
    s = 1812433253u * (s ^ (s >> 30)) + (uint32_t)i + 1u;
  }
  m->pos = 624;
  m->has_gauss = false;
  m->gauss = 0;
}

static void mt_refill(ge_mt19937 *m) {
  static const uint32_t mag[2] = {0u, 0x9908b0dfu};
  int i;
  uint32_t y;
  for (i = 0; i < 624 - 397; i++) {
    y = (m->key[i] & 0x80000000u) | (m->key[i + 1] & 0x7fffffffu);
    m->key[i] = m->key[i + 397] ^ (y >> 1) ^ mag[y & 1u];
  }
  for (; i < 623; i++) {
    y = (m->key[i] & 0x80000000u) | (m->key[i + 1] & 0x7fffffffu);
    m->key[i] = m->key[i + 397 - 624] ^ (y >> 1) ^ mag[y & 1u];
  }
  y = (m->key[623] & 0x80000000u) | (m->key[0] & 0x7fffffffu);
  m->key[623] = m->key[396] ^ (y >> 1) ^ mag[y & 1u];
  m->pos = 0;
}

uint32_t ge_mt_u32(ge_mt19937 *m) {
  if (m->pos >= 624) mt_refill(m);
  uint32_t y = m->key[m->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

double ge_mt_double(ge_mt19937 *m) {
  uint32_t a = ge_mt_u32(m) >> 5, b = ge_mt_u32(m) >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double ge_mt_gauss(ge_mt19937 *m) {
  if (m->has_gauss) {
    m->has_gauss = false;
    return m->gauss;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * ge_mt_double(m) - 1.0;
    x2 = 2.0 * ge_mt_double(m) - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = sqrt(-2.0 * log(r2) / r2);
  m->gauss = f * x1;
  m->has_gauss = true;
  return f * x2;
}

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint32_t ge_random_run_seed(bool has_seed, float seed, uint64_t base, uint64_t run) {
  if (has_seed) {
    int64_t s = isfinite(seed) ? (int64_t)seed : 0;
    if (run == 0) return (uint32_t)s;
    return (uint32_t)mix64((uint64_t)s ^ mix64(run));
  }
  return (uint32_t)mix64(base ^ mix64(run));
}

void ge_random_stream_init(ge_random_stream *r, const ge_node *node) {
  const ge_attr_value *sd = ge_node_attr(node, "seed");
  r->has_seed = sd != NULL;
  r->seed = sd ? (sd->kind == GE_ATTR_KIND_INT ? (float)sd->i : sd->f) : 0.0f;
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  r->base = mix64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
            mix64((uint64_t)(uintptr_t)r);
  atomic_init(&r->runs, 0);
}

void ge_random_stream_next(const ge_random_stream *cr, ge_mt19937 *m) {
  ge_random_stream *r = (ge_random_stream *)cr; /* allocated mutable; only the atomic moves */
  uint64_t run = atomic_fetch_add(&r->runs, 1);
  ge_mt_seed(m, ge_random_run_seed(r->has_seed, r->seed, r->base, run));
}

/* ------------------------------------------------------------------ kernel state */

enum { K_NORMAL, K_UNIFORM, K_BERNOULLI, K_MULTINOMIAL };

typedef struct rnd_state {
  int kind;
  ge_random_stream rs;
  double a, b;             /* normal: mean, scale; uniform: low, high */
  int64_t sample_size;     /* Multinomial */
  ge_dtype out_dt;
} rnd_state;

static ge_status rnd_prepare_kind(const ge_prepare_ctx *p, void **state, int kind) {
  const ge_node *n = p->node;
  rnd_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->kind = kind;
  ge_random_stream_init(&s->rs, n);
  s->out_dt = p->out[0].dtype;
  if (kind == K_NORMAL) {
    s->a = ge_node_attr_float(n, "mean", 0.0f);
    s->b = ge_node_attr_float(n, "scale", 1.0f);
  } else if (kind == K_UNIFORM) {
    s->a = ge_node_attr_float(n, "low", 0.0f);
    s->b = ge_node_attr_float(n, "high", 1.0f);
  } else if (kind == K_MULTINOMIAL) {
    s->sample_size = ge_node_attr_int(n, "sample_size", 1);
    if (s->sample_size < 1) {
      free(s);
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "sample_size must be >= 1");
    }
  }
  if (kind == K_BERNOULLI || kind == K_MULTINOMIAL) {
    ge_status st = ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_F32, GE_F16, GE_BF16, GE_F64,
                                                                   GE_DTYPE_COUNT});
    if (st != GE_OK) {
      free(s);
      return st;
    }
  }
  *state = s;
  return GE_OK;
}

static ge_status normal_prepare(const ge_prepare_ctx *p, void **state) {
  return rnd_prepare_kind(p, state, K_NORMAL);
}
static ge_status uniform_prepare(const ge_prepare_ctx *p, void **state) {
  return rnd_prepare_kind(p, state, K_UNIFORM);
}
static ge_status bernoulli_prepare(const ge_prepare_ctx *p, void **state) {
  return rnd_prepare_kind(p, state, K_BERNOULLI);
}
static ge_status multinomial_prepare(const ge_prepare_ctx *p, void **state) {
  return rnd_prepare_kind(p, state, K_MULTINOMIAL);
}

static void rnd_seed_run(const rnd_state *s, ge_mt19937 *m) { ge_random_stream_next(&s->rs, m); }

/* Stores v as element i of a real or integer tensor of dtype dt. */
static void store(void *data, ge_dtype dt, size_t i, double v) {
  switch (dt) {
  case GE_F32: ((float *)data)[i] = (float)v; break;
  case GE_F64: ((double *)data)[i] = v; break;
  case GE_F16: ((uint16_t *)data)[i] = ge_f32_to_f16((float)v); break;
  case GE_BF16: ((uint16_t *)data)[i] = ge_f32_to_bf16((float)v); break;
  case GE_I8: ((int8_t *)data)[i] = (int8_t)v; break;
  case GE_I16: ((int16_t *)data)[i] = (int16_t)v; break;
  case GE_I32: ((int32_t *)data)[i] = (int32_t)v; break;
  case GE_I64: ((int64_t *)data)[i] = (int64_t)v; break;
  case GE_U8: ((uint8_t *)data)[i] = (uint8_t)v; break;
  case GE_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
  case GE_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
  case GE_U64: ((uint64_t *)data)[i] = (uint64_t)v; break;
  case GE_BOOL: ((bool *)data)[i] = v != 0; break;
  default: break;
  }
}

static ge_status fill_run(const void *state, ge_kctx *ctx) {
  const rnd_state *s = state;
  ge_tensor *y = ctx->out[0];
  if (y->dtype != GE_F32 && y->dtype != GE_F64 && y->dtype != GE_F16 && y->dtype != GE_BF16)
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "output dtype %s is not supported",
                        ge_dtype_name(y->dtype));
  ge_mt19937 m;
  rnd_seed_run(s, &m);
  size_t n = y->numel;
  if (s->kind == K_NORMAL) {
    if (y->dtype == GE_F32) {
      float *o = y->data;
      for (size_t i = 0; i < n; i++) o[i] = (float)(ge_mt_gauss(&m) * s->b + s->a);
    } else {
      for (size_t i = 0; i < n; i++) store(y->data, y->dtype, i, ge_mt_gauss(&m) * s->b + s->a);
    }
  } else {
    double w = s->b - s->a;
    if (y->dtype == GE_F32) {
      float *o = y->data;
      for (size_t i = 0; i < n; i++) o[i] = (float)(ge_mt_double(&m) * w + s->a);
    } else {
      for (size_t i = 0; i < n; i++) store(y->data, y->dtype, i, ge_mt_double(&m) * w + s->a);
    }
  }
  return GE_OK;
}

static ge_status bernoulli_run(const void *state, ge_kctx *ctx) {
  const rnd_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  ge_mt19937 m;
  rnd_seed_run(s, &m);
  for (size_t i = 0; i < x->numel; i++) {
    double p = ge_tensor_get_f64(x, i);
    if (!(p >= 0.0 && p <= 1.0))
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT,
                          "input 0 element %zu = %g is not a probability in [0, 1]", i, p);
    store(y->data, y->dtype, i, ge_mt_double(&m) < p ? 1.0 : 0.0);
  }
  return GE_OK;
}

static ge_status multinomial_run(const void *state, ge_kctx *ctx) {
  const rnd_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  if (x->rank != 2)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 must be [batch, classes] (rank %d)",
                        (int)x->rank);
  size_t batch = (size_t)x->dims[0], classes = (size_t)x->dims[1], k = (size_t)s->sample_size;
  if (y->numel != batch * k)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu x %zu",
                        y->numel, batch, k);
  if (batch && !classes)
    return ge_kctx_fail(ctx, GE_ERR_SHAPE, "input 0 has no classes to sample from");
  double *cdf = malloc((classes ? classes : 1) * sizeof *cdf);
  if (!cdf) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_mt19937 m;
  rnd_seed_run(s, &m);
  for (size_t b = 0; b < batch; b++) {
    double mx = -INFINITY;
    for (size_t c = 0; c < classes; c++) {
      double v = ge_tensor_get_f64(x, b * classes + c);
      if (v > mx) mx = v;
    }
    double acc = 0;
    for (size_t c = 0; c < classes; c++) {
      double v = ge_tensor_get_f64(x, b * classes + c);
      acc += isinf(mx) && mx < 0 ? 1.0 : exp(v - mx);
      cdf[c] = acc;
    }
    for (size_t j = 0; j < k; j++) {
      double u = ge_mt_double(&m) * acc;
      size_t lo = 0, hi = classes - 1; /* first c with cdf[c] > u */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > u) hi = mid;
        else lo = mid + 1;
      }
      if (y->dtype == GE_I32) ((int32_t *)y->data)[b * k + j] = (int32_t)lo;
      else ((int64_t *)y->data)[b * k + j] = (int64_t)lo;
    }
  }
  free(cdf);
  return GE_OK;
}

const ge_kernel_def ge_ref_kernels_random[] = {
    {"", "RandomNormal", 1, 0, {normal_prepare, fill_run, free, false}},
    {"", "RandomUniform", 1, 0, {uniform_prepare, fill_run, free, false}},
    {"", "RandomNormalLike", 1, 0, {normal_prepare, fill_run, free, false}},
    {"", "RandomUniformLike", 1, 0, {uniform_prepare, fill_run, free, false}},
    {"", "Bernoulli", 15, 0, {bernoulli_prepare, bernoulli_run, free, false}},
    {"", "Multinomial", 7, 0, {multinomial_prepare, multinomial_run, free, false}},
    {0},
};
