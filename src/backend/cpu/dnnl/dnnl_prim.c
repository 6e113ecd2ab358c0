/* oneDNN glue: primitive creation at prepare time, per-run execution.  See dnnl_prim.h and the
 * design notes at the top of dnnl.c. */
#include <dlfcn.h>
#include <float.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_layout.h"
#include "backend/cpu/dnnl/dnnl_pool.h"
#include "backend/cpu/dnnl/dnnl_prim.h"
#include "backend/cpu/fast/fast_kernels.h"
#include "compiler/layout.h"
#include "ops/fused.h"

#define DN_ALIGN 64

/* The stream and memory objects of one run (see ge_dn_run). */
typedef struct dn_objs {
  dnnl_stream_t stream;
  dnnl_memory_t user_mem[GE_DN_MAX_ARGS]; /* around ge's tensors (IN / OUT) */
  dnnl_memory_t prim_mem[GE_DN_MAX_ARGS]; /* the primitive's layout: packed, or in the run buffer */
  dnnl_memory_t sum_mem[GE_DN_MAX_ARGS];  /* OUT with a sum input stored in another layout */
  dnnl_memory_t scratch;
} dn_objs;

struct ge_dn_cache {
  pthread_mutex_t mu;
  void *buf;
  size_t cap;
  /* created by the first run that holds the cache, around `buf`; later runs that hold it only
     point the user memory objects at their tensors (creating a stream and memory objects per
     run costs tens of microseconds per step) */
  bool have_objs;
  void *objs_buf;
  dn_objs objs;
};

static void dn_objs_free(dn_objs *o) {
  for (size_t i = 0; i < GE_DN_MAX_ARGS; i++) {
    if (o->user_mem[i]) dnnl_memory_destroy(o->user_mem[i]);
    if (o->prim_mem[i]) dnnl_memory_destroy(o->prim_mem[i]);
    if (o->sum_mem[i]) dnnl_memory_destroy(o->sum_mem[i]);
  }
  if (o->scratch) dnnl_memory_destroy(o->scratch);
  if (o->stream) dnnl_stream_destroy(o->stream);
  memset(o, 0, sizeof *o);
}

static ge_dn_cache *dn_cache_new(void) {
  ge_dn_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

static void dn_cache_free(ge_dn_cache *c) {
  if (!c) return;
  if (c->have_objs) dn_objs_free(&c->objs);
  pthread_mutex_destroy(&c->mu);
  ge_aligned_free(c->buf);
  free(c);
}

static const char *dn_status_name(dnnl_status_t st) {
  switch (st) {
  case dnnl_success: return "success";
  case dnnl_out_of_memory: return "out of memory";
  case dnnl_invalid_arguments: return "invalid arguments";
  case dnnl_unimplemented: return "unimplemented";
  case dnnl_iterator_ends: return "iterator ends";
  case dnnl_runtime_error: return "runtime error";
  case dnnl_not_required: return "not required";
  default: return "error";
  }
}

static void dn_omp_lookup(ge_dn_omp *o) {
  /* oneDNN's OpenMP runtime is already loaded (libdnnl depends on it); we look its entry points
     up instead of linking it so that a oneDNN built on another runtime still works. */
  void *set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  void *get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
  if (set && get) {
    memcpy(&o->set, &set, sizeof set);
    memcpy(&o->get, &get, sizeof get);
  } else {
    o->set = NULL;
    o->get = NULL;
  }
}

/* Sets the calling thread's OpenMP team size; returns the previous one (0: none). */
static int dn_threads_enter(const ge_dn_omp *o, int threads) {
  if (!o->set || threads < 1) return 0;
  int prev = o->get();
  if (prev != threads) o->set(threads);
  return prev;
}

static void dn_threads_leave(const ge_dn_omp *o, int prev, int threads) {
  if (o->set && prev > 0 && prev != threads) o->set(prev);
}

bool ge_dn_static_f32(const ge_prepare_ctx *p) {
  if (p->n_in < 1 || !p->in[0].present || !p->in[0].type) return false;
  if (!ge_shape_is_static(&p->in[0].type->shape)) return false;
  for (size_t i = 0; i < p->n_in; i++)
    if (p->in[i].present && (!p->in[i].type || p->in[i].type->dtype != GE_F32 ||
                             !ge_shape_is_static(&p->in[i].type->shape)))
      return false;
  for (size_t o = 0; o < p->n_out; o++)
    if (p->node->outputs[o] >= 0 &&
        (p->out[o].dtype != GE_F32 || !ge_shape_is_static(&p->out[o].shape)))
      return false;
  return true;
}

ge_status ge_dn_md(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                   const int64_t *strides) {
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
  dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, ndims, d, dnnl_f32, s);
  if (st != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: memory descriptor: %s", dn_status_name(st));
  return GE_OK;
}

ge_status ge_dn_md_any(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims,
                       const int64_t *dims) {
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: rank %d is out of range", ndims);
  dnnl_dims_t d;
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  dnnl_status_t st = dnnl_memory_desc_init_by_tag(md, ndims, d, dnnl_f32, dnnl_format_tag_any);
  if (st != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: memory descriptor: %s", dn_status_name(st));
  return GE_OK;
}

ge_status ge_dn_prepare_begin(const ge_prepare_ctx *p, const char *what, ge_dn_state **out,
                              int *saved_threads) {
  *out = NULL;
  ge_dn_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->what = what;
  s->threads = p->intra_threads > 0 ? p->intra_threads : 1;
  dn_omp_lookup(&s->omp);
  s->cache = dn_cache_new(); /* optional: without it every run allocates its buffer */
  dnnl_status_t st = dnnl_engine_create(&s->eng, dnnl_cpu, 0);
  if (st != dnnl_success) {
    dn_cache_free(s->cache);
    free(s);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: no CPU engine: %s", dn_status_name(st));
  }
  *saved_threads = dn_threads_enter(&s->omp, s->threads);
  *out = s;
  return GE_OK;
}

void ge_dn_prepare_end(ge_dn_state *s, int saved_threads) {
  if (s) dn_threads_leave(&s->omp, saved_threads, s->threads);
}

static size_t dn_round(size_t n) { return (n + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN; }

/* Creates a reorder primitive (user scratchpad mode) and grows the scratch size. */
static ge_status dn_reorder(const ge_prepare_ctx *p, ge_dn_state *s, const dnnl_memory_desc_t *from,
                            const dnnl_memory_desc_t *to, dnnl_primitive_t *out) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = dnnl_primitive_attr_create(&attr);
  if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (st == dnnl_success) st = dnnl_reorder_primitive_desc_create(&pd, from, s->eng, to, s->eng, attr);
  if (st == dnnl_success) {
    const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sb = sm ? dnnl_memory_desc_get_size(sm) : 0;
    if (sb > s->scratch_bytes) s->scratch_bytes = sb;
    st = dnnl_primitive_create(out, pd);
  }
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (st != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %s: no reorder: %s", s->what, dn_status_name(st));
  return GE_OK;
}

/* The first implementation oneDNN lists for op_desc whose name contains `impl`. */
static dnnl_status_t dn_pd_by_impl(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t op_desc,
                                   dnnl_primitive_attr_t attr, dnnl_engine_t eng, const char *impl) {
  *pd = NULL;
  dnnl_primitive_desc_iterator_t it = NULL;
  dnnl_status_t st = dnnl_primitive_desc_iterator_create(&it, op_desc, attr, eng, NULL);
  if (st != dnnl_success) return st;
  do {
    dnnl_primitive_desc_t cur = dnnl_primitive_desc_iterator_fetch(it);
    const char *name = NULL;
    if (!cur) break;
    if (dnnl_primitive_desc_query(cur, dnnl_query_impl_info_str, 0, &name) == dnnl_success && name &&
        strstr(name, impl)) {
      *pd = cur;
      break;
    }
    dnnl_primitive_desc_destroy(cur);
  } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
  dnnl_primitive_desc_iterator_destroy(it);
  return *pd ? dnnl_success : dnnl_unimplemented;
}

ge_status ge_dn_create(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_op_desc_t op_desc,
                       dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd_out) {
  return ge_dn_create_impl(p, s, op_desc, attr, NULL, pd_out);
}

ge_status ge_dn_create_impl(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_op_desc_t op_desc,
                            dnnl_primitive_attr_t attr, const char *impl, dnnl_primitive_desc_t *pd_out) {
  *pd_out = NULL;
  dnnl_primitive_attr_t own = NULL;
  dnnl_status_t st = dnnl_success;
  if (!attr) {
    st = dnnl_primitive_attr_create(&own);
    attr = own;
  }
  if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_primitive_desc_t pd = NULL;
  if (st == dnnl_success)
    st = impl ? dn_pd_by_impl(&pd, op_desc, attr, s->eng, impl)
              : dnnl_primitive_desc_create(&pd, op_desc, attr, s->eng, NULL);
  if (own) dnnl_primitive_attr_destroy(own);
  if (st != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %s: %s", s->what, dn_status_name(st));
  const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  size_t sb = sm ? dnnl_memory_desc_get_size(sm) : 0;
  if (sb > s->scratch_bytes) s->scratch_bytes = sb;
  st = dnnl_primitive_create(&s->prim, pd);
  if (st != dnnl_success) {
    dnnl_primitive_desc_destroy(pd);
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %s: %s", s->what, dn_status_name(st));
  }
  *pd_out = pd;
  return GE_OK;
}

/* ge_dn_arg.planar3 of an input that is not `same`. */
static uint8_t dn_planar3(const ge_dn_arg *a) {
  const dnnl_memory_desc_t *u = &a->user_md, *m = &a->prim_md;
  if (a->stored16 || u->ndims != 4 || u->dims[1] != 3 ||
      (m->data_type != dnnl_f32 && m->data_type != dnnl_bf16) || ge_dn_md_to_layout(m) != GE_LAYOUT_NHWC)
    return 0;
  dnnl_memory_desc_t t; /* the user's: float32 [N, 3, H, W] row-major, dense */
  if (dnnl_memory_desc_init_by_tag(&t, 4, u->dims, dnnl_f32, dnnl_nchw) != dnnl_success ||
      !dnnl_memory_desc_equal(&t, u))
    return 0;
  bool bf16 = m->data_type == dnnl_bf16;
  return ge_fast_nchw3_usable(bf16) ? (bf16 ? 2 : 1) : 0;
}

static bool dn_stored16(int layout) { return layout == GE_LAYOUT_NHWC_BF16 || layout == GE_LAYOUT_BF16; }

static ge_status dn_add_arg(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_primitive_desc_t pd,
                            int arg, ge_dn_kind kind, int index, const dnnl_memory_desc_t *user_md,
                            const ge_tensor *value, int sum_input, const dnnl_memory_desc_t *sum_md) {
  if (s->n_args >= GE_DN_MAX_ARGS)
    return ge_prepare_fail(p, GE_ERR_INTERNAL, "oneDNN: %s: too many arguments", s->what);
  ge_dn_arg *a = &s->args[s->n_args];
  memset(a, 0, sizeof *a);
  a->arg = arg;
  a->kind = kind;
  a->index = index;
  a->sum_input = sum_input;
  const dnnl_memory_desc_t *pm = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
  if (!pm || pm->ndims == 0) {
    if (!user_md) return GE_OK; /* not an argument of this primitive (e.g. statistics) */
    pm = user_md;
  }
  a->prim_md = *pm;
  a->user_md = user_md ? *user_md : *pm;
  a->user_bytes = dnnl_memory_desc_get_size(&a->user_md);
  a->prim_bytes = dnnl_memory_desc_get_size(&a->prim_md);
  a->same = dnnl_memory_desc_equal(&a->user_md, &a->prim_md) != 0;
  a->sum_md = sum_md ? *sum_md : a->user_md;
  a->sum_same = dnnl_memory_desc_equal(&a->sum_md, &a->prim_md) != 0;
  /* bf16 storage of a float32 value: channels-last or row-major (compiler/layout.h) */
  if (kind == GE_DN_IN) a->stored16 = dn_stored16(ge_dn_in_layout(p, (size_t)index));
  if (kind == GE_DN_OUT) a->stored16 = dn_stored16(ge_dn_out_layout(p, (size_t)index));
  if (kind == GE_DN_OUT && sum_input >= 0) a->sum_stored16 = dn_stored16(ge_dn_in_layout(p, (size_t)sum_input));
  if ((a->stored16 && a->user_md.data_type != dnnl_bf16) || (a->sum_stored16 && a->sum_md.data_type != dnnl_bf16))
    return ge_prepare_fail(p, GE_ERR_INTERNAL, "oneDNN: %s: operand %d is stored bf16 but described otherwise",
                           s->what, index);
  s->n_args++; /* from here on release() owns what we create */
  if (kind == GE_DN_TEMP) {
    a->same = false;
    return GE_OK;
  }
  if (kind == GE_DN_CONST) {
    if (!value || value->dtype != GE_F32 || value->nbytes != a->user_bytes)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %s: constant input %d has %zu bytes, expected %zu",
                             s->what, index, value ? value->nbytes : 0, a->user_bytes);
    a->packed = ge_const_alloc(a->prim_bytes ? a->prim_bytes : 1);
    if (!a->packed) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory packing input %d", index);
    if (a->same) {
      memcpy(a->packed, value->data, a->prim_bytes);
      return GE_OK;
    }
    dnnl_primitive_t r = NULL;
    GE_CHECK(dn_reorder(p, s, &a->user_md, &a->prim_md, &r));
    dnnl_stream_t stream = NULL;
    dnnl_memory_t from = NULL, to = NULL;
    void *scratch = NULL;
    dnnl_status_t st = dnnl_stream_create(&stream, s->eng, dnnl_stream_default_flags);
    if (st == dnnl_success) st = dnnl_memory_create(&from, &a->user_md, s->eng, value->data);
    if (st == dnnl_success) st = dnnl_memory_create(&to, &a->prim_md, s->eng, a->packed);
    const dnnl_memory_desc_t *sm = NULL;
    dnnl_memory_t sc = NULL;
    if (st == dnnl_success) {
      const_dnnl_primitive_desc_t rpd = NULL;
      /* the reorder's own scratchpad */
      if (dnnl_primitive_get_primitive_desc(r, &rpd) == dnnl_success && rpd)
        sm = dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
      size_t sb = sm ? dnnl_memory_desc_get_size(sm) : 0;
      if (sb) {
        scratch = ge_aligned_alloc(sb);
        st = scratch ? dnnl_memory_create(&sc, sm, s->eng, scratch) : dnnl_out_of_memory;
      }
    }
    if (st == dnnl_success) {
      dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, sc}};
      st = dnnl_primitive_execute(r, stream, sc ? 3 : 2, args);
      if (st == dnnl_success) st = dnnl_stream_wait(stream);
    }
    if (sc) dnnl_memory_destroy(sc);
    if (from) dnnl_memory_destroy(from);
    if (to) dnnl_memory_destroy(to);
    if (stream) dnnl_stream_destroy(stream);
    ge_aligned_free(scratch);
    dnnl_primitive_destroy(r);
    if (st != dnnl_success)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %s: packing input %d: %s", s->what, index,
                             dn_status_name(st));
    return GE_OK;
  }
  if (kind == GE_DN_IN) {
    if (a->same) return GE_OK;
    a->planar3 = dn_planar3(a);
    if (!a->planar3) GE_CHECK(dn_reorder(p, s, &a->user_md, &a->prim_md, &a->to_prim));
    return GE_OK;
  }
  if (sum_input >= 0 && !a->sum_same) GE_CHECK(dn_reorder(p, s, &a->sum_md, &a->prim_md, &a->to_prim));
  if (!a->same) GE_CHECK(dn_reorder(p, s, &a->prim_md, &a->user_md, &a->from_prim));
  return GE_OK;
}

ge_status ge_dn_add_arg(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_primitive_desc_t pd,
                        int arg, ge_dn_kind kind, int index, const dnnl_memory_desc_t *user_md,
                        const ge_tensor *value, int sum_input) {
  return dn_add_arg(p, s, pd, arg, kind, index, user_md, value, sum_input, NULL);
}

ge_status ge_dn_add_out_sum(const ge_prepare_ctx *p, ge_dn_state *s, const_dnnl_primitive_desc_t pd,
                            int arg, int index, const dnnl_memory_desc_t *user_md, int sum_input,
                            const dnnl_memory_desc_t *sum_md) {
  return dn_add_arg(p, s, pd, arg, GE_DN_OUT, index, user_md, NULL, sum_input, sum_input >= 0 ? sum_md : NULL);
}

void ge_dn_release(void *state) {
  ge_dn_state *s = state;
  if (!s) return;
  for (size_t i = 0; i < s->n_args; i++) {
    if (s->args[i].to_prim) dnnl_primitive_destroy(s->args[i].to_prim);
    if (s->args[i].from_prim) dnnl_primitive_destroy(s->args[i].from_prim);
    ge_const_free(s->args[i].packed);
  }
  if (s->prim) dnnl_primitive_destroy(s->prim);
  if (s->eng) dnnl_engine_destroy(s->eng);
  if (s->fb) ge_dn_fallback_release(s->fb);
  ge_dn_maxpool_free(s->maxpool);
  dn_cache_free(s->cache);
  free(s);
}

const char *ge_dn_describe(const void *state) {
  const ge_dn_state *s = state;
  if (!s) return NULL;
  if (s->fb) return "reference, wrapped";
  if (s->maxpool) return "ge max pool";
  const_dnnl_primitive_desc_t pd = NULL;
  const char *impl = NULL;
  if (!s->prim || dnnl_primitive_get_primitive_desc(s->prim, &pd) != dnnl_success ||
      dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
    return NULL;
  return impl;
}

uint32_t ge_dn_packed_inputs(const void *state) {
  const ge_dn_state *s = state;
  if (!s || s->fb) return 0;
  uint32_t m = 0, read = 0;
  for (size_t i = 0; i < s->n_args; i++) {
    const ge_dn_arg *a = &s->args[i];
    if (a->kind == GE_DN_CONST && a->index >= 0 && a->index < 32) m |= 1u << a->index;
    if (a->kind == GE_DN_IN && a->index >= 0 && a->index < 32) read |= 1u << a->index;
    if (a->kind == GE_DN_OUT && a->sum_input >= 0 && a->sum_input < 32) read |= 1u << a->sum_input;
  }
  return m & ~read;
}

void ge_dn_drop_packed_originals(const ge_prepare_ctx *p, const ge_dn_state *s) {
  ge_prepare_drop_packed(p, ge_dn_packed_inputs(s));
}

static dnnl_status_t dn_exec_reorder(dnnl_primitive_t r, dnnl_stream_t stream, dnnl_memory_t from,
                                     dnnl_memory_t to, dnnl_memory_t scratch) {
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch}};
  return dnnl_primitive_execute(r, stream, scratch ? 3 : 2, args);
}

/* The user pointer of argument a in this run (NULL for CONST / TEMP). */
static void *dn_user_ptr(const ge_dn_arg *a, const ge_kctx *ctx) {
  if (a->kind == GE_DN_IN) return ctx->in[a->index]->data;
  if (a->kind == GE_DN_OUT) return ctx->out[a->index]->data;
  return NULL;
}

/* Creates the stream and memory objects of a run around buf (offsets off) and ctx's tensors. */
static dnnl_status_t dn_objs_make(const ge_dn_state *s, char *buf, const size_t *off, const ge_kctx *ctx,
                                  dn_objs *o) {
  memset(o, 0, sizeof *o);
  dnnl_status_t st = dnnl_stream_create(&o->stream, s->eng, dnnl_stream_default_flags);
  if (st == dnnl_success && s->scratch_bytes) {
    dnnl_memory_desc_t smd;
    dnnl_dims_t sd = {(dnnl_dim_t)s->scratch_bytes};
    st = dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a);
    if (st == dnnl_success) st = dnnl_memory_create(&o->scratch, &smd, s->eng, buf);
  }
  for (size_t i = 0; st == dnnl_success && i < s->n_args; i++) {
    const ge_dn_arg *a = &s->args[i];
    if (a->kind == GE_DN_CONST) {
      st = dnnl_memory_create(&o->prim_mem[i], &a->prim_md, s->eng, a->packed);
    } else if (a->kind == GE_DN_TEMP) {
      st = dnnl_memory_create(&o->prim_mem[i], &a->prim_md, s->eng, buf + off[i]);
    } else {
      st = dnnl_memory_create(&o->user_mem[i], &a->user_md, s->eng, dn_user_ptr(a, ctx));
      if (st == dnnl_success && !a->same) st = dnnl_memory_create(&o->prim_mem[i], &a->prim_md, s->eng, buf + off[i]);
      if (st == dnnl_success && a->kind == GE_DN_OUT && a->sum_input >= 0 && !a->sum_same)
        st = dnnl_memory_create(&o->sum_mem[i], &a->sum_md, s->eng, ctx->in[a->sum_input]->data);
    }
  }
  if (st != dnnl_success) dn_objs_free(o);
  return st;
}

/* Points cached objects at this run's tensors. */
static dnnl_status_t dn_objs_rebind(const ge_dn_state *s, const ge_kctx *ctx, dn_objs *o) {
  dnnl_status_t st = dnnl_success;
  for (size_t i = 0; st == dnnl_success && i < s->n_args; i++) {
    const ge_dn_arg *a = &s->args[i];
    if (a->kind != GE_DN_IN && a->kind != GE_DN_OUT) continue;
    st = dnnl_memory_set_data_handle_v2(o->user_mem[i], dn_user_ptr(a, ctx), o->stream);
    if (st == dnnl_success && o->sum_mem[i])
      st = dnnl_memory_set_data_handle_v2(o->sum_mem[i], ctx->in[a->sum_input]->data, o->stream);
  }
  return st;
}

/* Thread safety: the state is read-only here, except its cache, which one run at a time holds
   (try-lock): that run uses the cached buffer and objects; a concurrent run of the same plan
   creates its own stream, memory objects and buffer, so concurrent runs share nothing else
   mutable; oneDNN primitives are safe to execute concurrently. */
ge_status ge_dn_run(const void *state, ge_kctx *ctx) {
  const ge_dn_state *s = state;
  if (s->fb) return ge_dn_fallback_run(s, ctx);
  if (s->maxpool) return ge_dn_maxpool_run(s->maxpool, ctx);
  size_t off[GE_DN_MAX_ARGS];
  size_t total = dn_round(s->scratch_bytes);
  for (size_t i = 0; i < s->n_args; i++) {
    const ge_dn_arg *a = &s->args[i];
    off[i] = SIZE_MAX;
    if (a->kind == GE_DN_CONST) continue;
    if (a->kind == GE_DN_IN || a->kind == GE_DN_OUT) {
      const ge_tensor *t = a->kind == GE_DN_IN ? ((size_t)a->index < ctx->n_in ? ctx->in[a->index] : NULL)
                                               : ((size_t)a->index < ctx->n_out ? ctx->out[a->index] : NULL);
      /* ge's tensors are float32, or bfloat16 where a wrapper converted the input first */
      /* (a float32 value stored bf16: float32-typed, float32-sized, its first half used) */
      ge_dtype want = a->user_md.data_type == dnnl_bf16 && !a->stored16 ? GE_BF16 : GE_F32;
      size_t want_bytes = a->stored16 ? 2 * a->user_bytes : a->user_bytes;
      if (!t || !t->data || t->dtype != want || t->nbytes != want_bytes)
        return ge_kctx_fail(ctx, GE_ERR_SHAPE, "oneDNN %s: %s %d has %zu bytes (%s), the plan expects %zu %s bytes",
                            s->what, a->kind == GE_DN_IN ? "input" : "output", a->index, t ? t->nbytes : 0,
                            t ? ge_dtype_name(t->dtype) : "missing", want_bytes, ge_dtype_name(want));
      if (a->kind == GE_DN_OUT && a->sum_input >= 0) {
        const ge_tensor *sum = (size_t)a->sum_input < ctx->n_in ? ctx->in[a->sum_input] : NULL;
        /* the Sum input is float32-sized whether stored float32 or bf16 */
        size_t sum_bytes = dnnl_memory_desc_get_size(&a->sum_md) * (a->sum_stored16 ? 2 : 1);
        if (!sum || !sum->data || sum->dtype != GE_F32 || sum->nbytes != sum_bytes)
          return ge_kctx_fail(ctx, GE_ERR_SHAPE, "oneDNN %s: input %d (Sum) has %zu bytes, the plan expects %zu",
                              s->what, a->sum_input, sum ? sum->nbytes : 0, sum_bytes);
      }
    }
    if (a->same) continue;
    off[i] = total;
    size_t r = dn_round(a->prim_bytes);
    if (total > SIZE_MAX - r) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "oneDNN %s: buffer size overflows", s->what);
    total += r;
  }
  /* the state's cached buffer and objects when no other run holds them, else our own */
  char *buf = NULL;
  ge_dn_cache *c = NULL;
  if (s->cache && pthread_mutex_trylock(&s->cache->mu) == 0) {
    c = s->cache;
    if (c->cap < total || !c->buf) {
      if (c->have_objs) dn_objs_free(&c->objs);
      c->have_objs = false;
      ge_aligned_free(c->buf);
      c->buf = ge_aligned_alloc(total ? total : 1);
      c->cap = c->buf ? total : 0;
    }
    if (c->buf) {
      buf = c->buf;
    } else {
      pthread_mutex_unlock(&c->mu);
      c = NULL;
    }
  }
  if (!buf) buf = ge_aligned_alloc(total ? total : 1);
  if (!buf) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "oneDNN %s: out of memory (%zu bytes)", s->what, total);

  int threads = ctx->threads > 0 ? ctx->threads : s->threads;
  int prev = dn_threads_enter(&s->omp, threads);
  dn_objs own, *o = &own;
  dnnl_status_t st;
  if (c && c->have_objs && c->objs_buf == (void *)buf) {
    o = &c->objs;
    st = dn_objs_rebind(s, ctx, o);
  } else {
    if (c && c->have_objs) dn_objs_free(&c->objs);
    if (c) c->have_objs = false;
    st = dn_objs_make(s, buf, off, ctx, o);
    if (st == dnnl_success && c) {
      c->objs = own;
      c->objs_buf = buf;
      c->have_objs = true;
      o = &c->objs;
    }
  }
  dnnl_exec_arg_t args[GE_DN_MAX_ARGS + 1];
  int nargs = 0;
  for (size_t i = 0; st == dnnl_success && i < s->n_args; i++) {
    const ge_dn_arg *a = &s->args[i];
    dnnl_memory_t pm = o->prim_mem[i] ? o->prim_mem[i] : o->user_mem[i];
    if (a->kind == GE_DN_IN && a->planar3) {
      const ge_tensor *x = ctx->in[a->index];
      void *to = NULL;
      st = dnnl_memory_get_data_handle(pm, &to);
      if (st == dnnl_success)
        ge_fast_nchw3_to_nhwc(x->data, to, (size_t)a->user_md.dims[0],
                              (size_t)(a->user_md.dims[2] * a->user_md.dims[3]), a->planar3 == 2, threads);
    } else if (a->kind == GE_DN_IN && !a->same) {
      st = dn_exec_reorder(a->to_prim, o->stream, o->user_mem[i], pm, o->scratch);
    }
    if (st == dnnl_success && a->kind == GE_DN_OUT && a->sum_input >= 0) {
      void *sum = ctx->in[a->sum_input]->data;
      if (a->sum_same) {
        void *dst = a->same ? dn_user_ptr(a, ctx) : (void *)(buf + off[i]);
        if (sum != dst) memmove(dst, sum, a->prim_bytes);
      } else {
        st = dn_exec_reorder(a->to_prim, o->stream, o->sum_mem[i], pm, o->scratch);
        if (st == dnnl_success) st = dnnl_stream_wait(o->stream);
      }
    }
    args[nargs].arg = a->arg;
    args[nargs].memory = pm;
    nargs++;
  }
  if (st == dnnl_success && o->scratch) {
    args[nargs].arg = DNNL_ARG_SCRATCHPAD;
    args[nargs].memory = o->scratch;
    nargs++;
  }
  if (st == dnnl_success) st = dnnl_primitive_execute(s->prim, o->stream, nargs, args);
  for (size_t i = 0; st == dnnl_success && i < s->n_args; i++) {
    const ge_dn_arg *a = &s->args[i];
    if (a->kind == GE_DN_OUT && !a->same)
      st = dn_exec_reorder(a->from_prim, o->stream, o->prim_mem[i], o->user_mem[i], o->scratch);
  }
  if (st == dnnl_success) st = dnnl_stream_wait(o->stream);
  dn_threads_leave(&s->omp, prev, threads);
  if (o == &own) dn_objs_free(&own);
  if (c) {
    if (st != dnnl_success && c->have_objs) { /* start afresh next time */
      dn_objs_free(&c->objs);
      c->have_objs = false;
    }
    pthread_mutex_unlock(&c->mu);
  } else {
    ge_aligned_free(buf);
  }
  if (st != dnnl_success)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "oneDNN %s: execution failed: %s", s->what, dn_status_name(st));
  return GE_OK;
}

ge_status ge_dn_append_act(const ge_prepare_ctx *p, dnnl_post_ops_t po) {
  const char *an = ge_node_attr_string(p->node, "activation", "");
  float p0, p1;
  ge_fused_act act = ge_fused_act_of(p->node, "activation", "activation_params", &p0, &p1);
  if (act == GE_ACT_COUNT) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "unknown activation '%s'", an);
  dnnl_status_t st = dnnl_success;
  switch (act) {
  case GE_ACT_NONE: break;
  case GE_ACT_RELU: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0.f, 0.f); break;
  case GE_ACT_LEAKY_RELU: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, p0, 0.f); break;
  case GE_ACT_CLIP: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip_v2, p0, p1); break;
  case GE_ACT_SIGMOID: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_logistic, 0.f, 0.f); break;
  case GE_ACT_TANH: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_tanh, 0.f, 0.f); break;
  case GE_ACT_GELU: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_gelu_erf, 0.f, 0.f); break;
  case GE_ACT_GELU_TANH: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_gelu_tanh, 0.f, 0.f); break;
  case GE_ACT_SILU: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_swish, 1.f, 0.f); break;
  case GE_ACT_HARD_SWISH: st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_hardswish, 0.f, 0.f); break;
  case GE_ACT_HARD_SIGMOID:
    st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_linear, p0, p1);
    if (st == dnnl_success) st = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip_v2, 0.f, 1.f);
    break;
  default: return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: activation '%s'", an);
  }
  if (st != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: activation '%s': %s", an, dn_status_name(st));
  return GE_OK;
}
