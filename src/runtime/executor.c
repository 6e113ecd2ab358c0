/* The sequential executor: walks a plan's steps, allocating each output as its step runs and
 * releasing each intermediate once its last reader ran. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/threadpool.h"
#include "compiler/memplan.h"
#include "runtime/executor.h"
#include "runtime/thread_adapt.h"

static void type_of_tensor(const ge_tensor *t, ge_type *ty) { ge_value_type(t, ty); }

/* A sequence/optional input matches a sequence/optional input type of the same kind (an
   optional input type also takes a plain tensor or a sequence, wrapped at run time). */
static bool value_fits_kind(const ge_type *ty, const ge_tensor *t) {
  const ge_seqval *s = ge_value_seq(t);
  if (ty->kind == GE_TYPE_OPTIONAL) return !s || s->kind == GE_TYPE_OPTIONAL || s->kind == GE_TYPE_SEQUENCE;
  if (ty->kind == GE_TYPE_SEQUENCE) return s && s->kind == GE_TYPE_SEQUENCE;
  return false;
}

bool ge_plan_matches(const ge_plan *p, ge_tensor *const *inputs, size_t n_in) {
  if (n_in != p->n_inputs) return false;
  for (size_t i = 0; i < n_in; i++) {
    const ge_type *ty = &p->slots[p->inputs[i]].type;
    const ge_tensor *t = inputs[i];
    if (t && ty->kind != GE_TYPE_TENSOR) {
      if (!value_fits_kind(ty, t)) return false;
      continue;
    }
    if (!t || ty->kind != GE_TYPE_TENSOR || ge_value_seq(t) || ty->dtype != t->dtype ||
        ty->shape.rank != t->rank)
      return false;
    for (int32_t d = 0; d < t->rank; d++)
      if (ty->shape.dims[d] != t->dims[d]) return false;
  }
  return true;
}

static ge_status check_input(const ge_plan *p, size_t i, const ge_tensor *t) {
  const ge_value *v = &p->graph->values[p->inputs[i]];
  const ge_type *ty = &p->slots[p->inputs[i]].type;
  char want[160], got[160];
  if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "input %zu ('%s') is NULL", i, v->name);
  if (ty->kind == GE_TYPE_SEQUENCE || ty->kind == GE_TYPE_OPTIONAL) {
    if (!value_fits_kind(ty, t))
      return ge_error(GE_ERR_INVALID_ARGUMENT, "input '%s' is a %s, got a %s", v->name,
                      ty->kind == GE_TYPE_SEQUENCE ? "sequence" : "optional",
                      ge_tensor_kind(t) == GE_KIND_TENSOR     ? "tensor"
                      : ge_tensor_kind(t) == GE_KIND_SEQUENCE ? "sequence"
                                                              : "optional");
    return GE_OK;
  }
  if (ty->kind == GE_TYPE_UNKNOWN) return GE_OK;
  if (ge_value_seq(t))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "input '%s' is a tensor, got a sequence or optional", v->name);
  if (ty->dtype != GE_DTYPE_COUNT && ty->dtype != t->dtype)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "input '%s' has dtype %s, the graph expects %s", v->name,
                    ge_dtype_name(t->dtype), ge_dtype_name(ty->dtype));
  if (ty->shape.rank == GE_RANK_UNKNOWN) return GE_OK;
  ge_shape s;
  ge_tensor_shape(t, &s);
  bool ok = ty->shape.rank == t->rank;
  for (int32_t d = 0; ok && d < t->rank; d++)
    if (ty->shape.dims[d] >= 0 && ty->shape.dims[d] != t->dims[d]) ok = false;
  if (!ok)
    return ge_error(GE_ERR_SHAPE, "input '%s' has shape %s, the graph expects %s", v->name,
                    ge_shape_str(&s, p->graph, got, sizeof got),
                    ge_shape_str(&ty->shape, p->graph, want, sizeof want));
  return GE_OK;
}

/* Output shapes of a step whose shapes were not all known at compile time: infer again with
   the actual inputs (values included). */
static ge_status infer_at_run(const ge_plan *p, const ge_step *s, ge_tensor *slots, ge_infer_input *in,
                              ge_type *in_t, ge_type *out_t) {
  const ge_node *n = s->node;
  for (uint32_t i = 0; i < s->n_in; i++) {
    in[i].present = s->in[i] != GE_SLOT_NONE;
    in[i].type = NULL;
    in[i].value = NULL;
    if (!in[i].present) continue;
    type_of_tensor(&slots[s->in[i]], &in_t[i]);
    in[i].type = &in_t[i];
    in[i].value = &slots[s->in[i]];
  }
  /* implicit inputs (after the node's own) are not the schema's business */
  ge_infer_ctx ic = {.graph = p->graph, .node = n, .opset = n->opset, .n_in = n->n_inputs,
                     .n_out = s->n_out, .in = in, .out = out_t};
  return ge_op_infer(&ic);
}

static ge_status move_output(ge_tensor *slot, bool owned, ge_tensor **out) {
  if (owned) {
    ge_tensor *t = malloc(sizeof *t);
    if (!t) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory returning an output");
    *t = *slot;
    memset(slot, 0, sizeof *slot);
    *out = t;
    return GE_OK;
  }
  return ge_value_clone(slot, out);
}

ge_status ge_plan_run_check_inputs(const ge_plan *p, ge_tensor *const *inputs, size_t n_in) {
  if (n_in != p->n_inputs)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "the graph takes %zu inputs, got %zu", p->n_inputs, n_in);
  if (n_in && !inputs) return ge_error(GE_ERR_INVALID_ARGUMENT, "inputs is NULL");
  for (size_t i = 0; i < n_in; i++) GE_CHECK(check_input(p, i, inputs[i]));
  return GE_OK;
}

ge_status ge_plan_run(const ge_plan *p, ge_tensor *const *inputs, size_t n_in, ge_tensor **outputs,
                      size_t n_out) {
  return ge_plan_run_env(p, inputs, n_in, outputs, n_out, NULL);
}

/* ------------------------------------------------------------------ run workspaces
 * Everything a run needs besides its kernels' work: the slot tensors, the arena of planned
 * intermediates and the operand arrays.  A plan keeps the workspaces of finished runs (up to
 * GE_WS_POOL_MAX) and hands one to the next run, so that a run of a static-shape plan
 * allocates nothing once the first run has made its workspace; concurrent runs each take
 * their own. */

#define GE_WS_POOL_MAX 8

typedef struct ge_run_ws {
  ge_tensor *slots;
  bool *owned;
  bool *direct;        /* slot written straight into a caller's output tensor */
  uint8_t *arena;
  ge_tensor **in_ptrs, **out_ptrs;
  ge_infer_input *inf_in;
  ge_type *inf_in_t, *inf_out_t;
  struct ge_run_ws *next;
} ge_run_ws;

struct ge_ws_pool {
  pthread_mutex_t mu;
  ge_run_ws *free;
  size_t n_free;
  size_t max_in, max_out;
};

static void ws_free(ge_run_ws *w) {
  if (!w) return;
  free(w->slots);
  free(w->owned);
  free(w->direct);
  ge_aligned_free(w->arena);
  free(w->in_ptrs);
  free(w->out_ptrs);
  free(w->inf_in);
  free(w->inf_in_t);
  free(w->inf_out_t);
  free(w);
}

ge_status ge_plan_pool_init(ge_plan *p) {
  ge_ws_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph");
  pool->max_in = pool->max_out = 1;
  for (size_t i = 0; i < p->n_steps; i++) {
    if (p->steps[i].n_in > pool->max_in) pool->max_in = p->steps[i].n_in;
    if (p->steps[i].n_out > pool->max_out) pool->max_out = p->steps[i].n_out;
  }
  pthread_mutex_init(&pool->mu, NULL);
  p->ws_pool = pool;
  /* run times say something about the cores only where every run does the same work */
  bool fixed = p->opts.intra_threads > 1;
  for (size_t i = 0; fixed && i < p->n_steps; i++) fixed = p->steps[i].static_out;
  if (fixed && (p->opts.force_one_thread || ge_options_adaptive_threads(&p->opts)))
    return ge_thread_adapt_create(p->opts.intra_threads, p->opts.force_one_thread, &p->adapt);
  return GE_OK;
}

void ge_plan_pool_free(ge_plan *p) {
  ge_ws_pool *pool = p ? p->ws_pool : NULL;
  if (!pool) return;
  while (pool->free) {
    ge_run_ws *w = pool->free;
    pool->free = w->next;
    ws_free(w);
  }
  pthread_mutex_destroy(&pool->mu);
  free(pool);
  p->ws_pool = NULL;
  ge_thread_adapt_free(p->adapt);
  p->adapt = NULL;
}

static ge_run_ws *ws_acquire(const ge_plan *p) {
  ge_ws_pool *pool = p->ws_pool;
  ge_run_ws *w = NULL;
  pthread_mutex_lock(&pool->mu);
  if (pool->free) {
    w = pool->free;
    pool->free = w->next;
    pool->n_free--;
  }
  pthread_mutex_unlock(&pool->mu);
  if (w) return w;
  w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->slots = calloc(p->n_slots + 1, sizeof *w->slots);
  w->owned = calloc(p->n_slots + 1, sizeof *w->owned);
  w->direct = calloc(p->n_slots + 1, sizeof *w->direct);
  /* never NULL, so that a planned empty tensor still gets a valid pointer */
  w->arena = ge_aligned_alloc(p->arena_bytes ? p->arena_bytes : GE_MEMPLAN_ALIGN);
  w->in_ptrs = calloc(pool->max_in, sizeof *w->in_ptrs);
  w->out_ptrs = calloc(pool->max_out, sizeof *w->out_ptrs);
  w->inf_in = calloc(pool->max_in, sizeof *w->inf_in);
  w->inf_in_t = calloc(pool->max_in, sizeof *w->inf_in_t);
  w->inf_out_t = calloc(pool->max_out, sizeof *w->inf_out_t);
  if (!w->slots || !w->owned || !w->direct || !w->arena || !w->in_ptrs || !w->out_ptrs ||
      !w->inf_in || !w->inf_in_t || !w->inf_out_t) {
    ws_free(w);
    return NULL;
  }
  return w;
}

/* Back to the pool, every slot released and cleared (no pointer of this run survives). */
static void ws_release(const ge_plan *p, ge_run_ws *w) {
  for (size_t v = 0; v < p->n_slots; v++)
    if (w->owned[v]) ge_tensor_release_storage(&w->slots[v]);
  memset(w->slots, 0, p->n_slots * sizeof *w->slots);
  memset(w->owned, 0, p->n_slots * sizeof *w->owned);
  memset(w->direct, 0, p->n_slots * sizeof *w->direct);
  ge_ws_pool *pool = p->ws_pool;
  pthread_mutex_lock(&pool->mu);
  if (pool->n_free < GE_WS_POOL_MAX) {
    w->next = pool->free;
    pool->free = w;
    pool->n_free++;
    w = NULL;
  }
  pthread_mutex_unlock(&pool->mu);
  ws_free(w);
}

/* ------------------------------------------------------------------ outputs into the caller's tensors */

static bool type_fits_tensor(const ge_type *ty, const ge_tensor *t) {
  if (ty->kind != GE_TYPE_TENSOR || ty->dtype != t->dtype || ty->shape.rank != t->rank) return false;
  for (int32_t d = 0; d < t->rank; d++)
    if (ty->shape.dims[d] >= 0 && ty->shape.dims[d] != t->dims[d]) return false;
  return true;
}

static bool bytes_overlap(const ge_tensor *a, const ge_tensor *b) {
  const char *pa = a->data, *pb = b->data;
  return a->nbytes && b->nbytes && pa && pb && pa < pb + b->nbytes && pb < pa + a->nbytes;
}

/* The caller's output tensors fit what the plan produces (dtype; every dim the plan knows). */
static ge_status check_into(const ge_plan *p, ge_tensor *const *into, size_t n_out) {
  char want[160], got[160];
  for (size_t i = 0; i < n_out; i++) {
    const char *name = p->graph->values[p->outputs[i]].name;
    const ge_type *ty = &p->slots[p->outputs[i]].type;
    const ge_tensor *t = into[i];
    if (!t) return ge_error(GE_ERR_INVALID_ARGUMENT, "output %zu ('%s'): no tensor given", i, name);
    if (ge_value_seq(t) || ty->kind != GE_TYPE_TENSOR || ty->dtype == GE_STRING)
      return ge_error(GE_ERR_UNSUPPORTED, "output %zu ('%s'): only numeric tensor outputs can be written into "
                      "the caller's tensors; run the graph without output tensors", i, name);
    if (t->nbytes && !t->data)
      return ge_error(GE_ERR_INVALID_ARGUMENT, "output %zu ('%s'): the tensor given has no data", i, name);
    if (!type_fits_tensor(ty, t)) {
      ge_shape sh;
      ge_tensor_shape(t, &sh);
      ge_shape_str(&ty->shape, p->graph, want, sizeof want);
      ge_shape_str(&sh, p->graph, got, sizeof got);
      return ge_error(GE_ERR_SHAPE, "output %zu ('%s') is %s %s, the tensor given is %s %s", i, name,
                      ge_dtype_name(ty->dtype), want, ge_dtype_name(t->dtype), got);
    }
  }
  return GE_OK;
}

/* Which output slots the steps write straight into the caller's tensors: static-shape values
   that a kernel of this plan produces (not inputs, constants or views), first occurrence only,
   in tensors that share no byte with an input. */
static void mark_direct(const ge_plan *p, ge_run_ws *w, ge_tensor *const *into, size_t n_out,
                        ge_tensor *const *inputs, size_t n_in) {
  for (size_t i = 0; i < n_out; i++) {
    uint32_t v = p->outputs[i];
    const ge_slot *sl = &p->slots[v];
    if (w->direct[v] || sl->constant || sl->input_index >= 0 || !ge_shape_is_static(&sl->type.shape) ||
        (p->alias_of && p->alias_of[v] >= 0))
      continue;
    bool ok = true;
    for (size_t j = 0; j < n_in && ok; j++)
      if (inputs[j] && !ge_value_seq(inputs[j]) && bytes_overlap(inputs[j], into[i])) ok = false;
    for (size_t j = 0; j < i && ok; j++)
      if (bytes_overlap(into[j], into[i])) ok = false;
    if (!ok) continue;
    w->direct[v] = true;
    ge_tensor_view(&w->slots[v], into[i]);
  }
}

/* After the run: the outputs not written in place are copied into the caller's tensors. */
static ge_status copy_into(const ge_plan *p, ge_run_ws *w, ge_tensor *const *into, size_t n_out) {
  char want[160], got[160];
  for (size_t i = 0; i < n_out; i++) {
    uint32_t v = p->outputs[i];
    const ge_tensor *src = &w->slots[v];
    if (w->direct[v] && src->data == into[i]->data) continue;
    ge_shape a, b;
    ge_tensor_shape(src, &a);
    ge_tensor_shape(into[i], &b);
    if (ge_value_seq(src) || src->dtype != into[i]->dtype || !ge_shape_equal(&a, &b))
      return ge_error(GE_ERR_SHAPE, "output %zu ('%s') is %s %s at run time, the tensor given is %s %s", i,
                      p->graph->values[v].name, ge_dtype_name(src->dtype), ge_shape_str(&a, p->graph, got, sizeof got),
                      ge_dtype_name(into[i]->dtype), ge_shape_str(&b, p->graph, want, sizeof want));
    if (src->nbytes) memmove(into[i]->data, src->data, src->nbytes);
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ the run */

/* True when output tensor t of step s shares the buffer of one of its in-place inputs. */
static bool shares_input(const ge_step *s, ge_tensor *const *in_ptrs, const ge_tensor *t) {
  uint32_t m = s->k->inplace_inputs;
  for (uint32_t i = 0; m && i < s->n_in && i < 32; i++)
    if ((m & (1u << i)) && in_ptrs[i] && in_ptrs[i]->data == t->data) return true;
  return false;
}

ge_status ge_plan_run_env(const ge_plan *p, ge_tensor *const *inputs, size_t n_in,
                          ge_tensor **outputs, size_t n_out, const ge_run_env *env) {
  GE_CHECK(ge_plan_run_check_inputs(p, inputs, n_in));
  ge_tensor *const *into = env ? env->into : NULL;
  if (n_out != p->n_outputs)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "the graph has %zu outputs, got room for %zu", p->n_outputs, n_out);
  if (into) {
    GE_CHECK(check_into(p, into, n_out));
  } else {
    if (n_out && !outputs) return ge_error(GE_ERR_INVALID_ARGUMENT, "outputs is NULL");
    for (size_t i = 0; i < n_out; i++) outputs[i] = NULL;
  }

  ge_run_ws *w = ws_acquire(p);
  if (!w) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory starting a run");
  /* the thread count: a subgraph's caller's, or the plan's, or one where the controller says
     so; on one thread, oneDNN's primitives (created for intra_threads) run as nested in
     another parallel region do, on the calling thread */
  ge_adapt_ticket ticket = {.threads = 0};
  int run_threads = p->opts.intra_threads, cap = -2;
  if (env && env->threads > 0) run_threads = env->threads;
  else if (p->adapt) {
    ge_threads_one_ready(); /* the first run allocates, not the first one-thread run */
    run_threads = ge_thread_adapt_begin(p->adapt, &ticket);
  }
  if (run_threads == 1 && p->opts.intra_threads > 1) cap = ge_threads_one_enter();
  ge_threads_run_begin(run_threads);
  if (env && env->ran_threads) *env->ran_threads = run_threads;
  ge_tensor *slots = w->slots;
  bool *owned = w->owned;
  uint8_t *arena = w->arena;
  ge_tensor **in_ptrs = w->in_ptrs, **out_ptrs = w->out_ptrs;
  ge_status st = GE_OK;
  char where[256];
  ge_obs_run obs;
  ge_status obs_st = ge_obs_run_begin(env ? env->obs : NULL, p, &obs);
  if (obs_st != GE_OK) st = obs_st;
  if (st != GE_OK) goto done;
  for (size_t v = 0; v < p->n_slots; v++)
    if (p->slots[v].constant) {
      ge_tensor_view(&slots[v], p->slots[v].constant);
    } else if (v < p->graph->n_values && p->graph->values[v].kind == GE_VALUE_VARIABLE &&
               p->graph->values[v].constant) {
      ge_tensor_view(&slots[v], p->graph->values[v].constant); /* the initial value */
    }
  for (size_t i = 0; env && i < env->n_vars; i++)
    if (env->var_slots[i] < p->n_slots) ge_tensor_view(&slots[env->var_slots[i]], &env->var_values[i]);
  for (size_t i = 0; i < n_in; i++) {
    uint32_t v = p->inputs[i];
    const ge_seqval *sv = ge_value_seq(inputs[i]);
    if (p->slots[v].type.kind == GE_TYPE_OPTIONAL && (!sv || sv->kind != GE_TYPE_OPTIONAL)) {
      /* a tensor or a sequence fed to an optional input: an optional holding a view of it */
      ge_seqval *o = NULL;
      ge_tensor *item = malloc(sizeof *item);
      st = item ? ge_value_init_seq(&slots[v], GE_TYPE_OPTIONAL, sv ? sv->elem : inputs[i]->dtype,
                                    sv != NULL, &o)
                : ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory starting a run");
      if (st != GE_OK) {
        free(item);
        goto done;
      }
      owned[v] = true;
      ge_tensor_view(item, inputs[i]);
      st = ge_seqval_insert(o, 0, item);
      if (st != GE_OK) goto done;
      continue;
    }
    ge_tensor_view(&slots[v], inputs[i]);
  }
  if (into) mark_direct(p, w, into, n_out, inputs, n_in);

  for (size_t si = 0; si < p->n_steps; si++) {
    const ge_step *s = &p->steps[si];
    if (s->view) { /* the output is input 0's bytes under the output's (static) shape */
      uint32_t v = s->out[0];
      const ge_type *ty = &p->slots[v].type;
      ge_tensor_view(&slots[v], &slots[s->in[0]]);
      slots[v].rank = ty->shape.rank;
      memcpy(slots[v].dims, ty->shape.dims, sizeof slots[v].dims);
      owned[v] = false;
      for (uint32_t d = 0; d < s->n_dead; d++) {
        uint32_t dv = s->dead[d];
        if (owned[dv]) ge_tensor_release_storage(&slots[dv]);
        owned[dv] = false;
      }
      continue;
    }
    for (uint32_t i = 0; i < s->n_in; i++) in_ptrs[i] = s->in[i] == GE_SLOT_NONE ? NULL : &slots[s->in[i]];
    const ge_type *types = NULL;
    if (!s->static_out) {
      st = infer_at_run(p, s, slots, w->inf_in, w->inf_in_t, w->inf_out_t);
      if (st != GE_OK) goto done;
      types = w->inf_out_t;
    }
    for (uint32_t o = 0; o < s->n_out; o++) {
      out_ptrs[o] = NULL;
      if (s->out[o] == GE_SLOT_NONE) continue;
      uint32_t v = s->out[o];
      const ge_type *ty = types ? &types[o] : &p->slots[v].type;
      out_ptrs[o] = &slots[v];
      owned[v] = true;
      if (w->direct[v] && !s->k->dynamic_output && type_fits_tensor(ty, &slots[v])) {
        /* the caller's output tensor (a view set up by mark_direct) */
        if (slots[v].nbytes && !s->k->overwrites_outputs) memset(slots[v].data, 0, slots[v].nbytes);
        owned[v] = false;
      } else if (!types && p->arena_offset && p->arena_offset[v] >= 0) {
        /* planned: a view into the arena, released with the arena; zeroed unless the kernel
           overwrites it, or it is an in-place input's buffer */
        ge_tensor *t = &slots[v];
        memset(t, 0, sizeof *t);
        t->dtype = ty->dtype;
        t->rank = ty->shape.rank;
        memcpy(t->dims, ty->shape.dims, sizeof t->dims);
        ge_shape_numel(&ty->shape, &t->numel);
        t->nbytes = t->numel * ge_dtype_size(t->dtype);
        t->data = arena + p->arena_offset[v];
        if (t->nbytes && !s->k->overwrites_outputs && !shares_input(s, in_ptrs, t)) memset(t->data, 0, t->nbytes);
        owned[v] = false;
      } else if (ty->kind == GE_TYPE_TENSOR && ty->dtype != GE_DTYPE_COUNT && ge_shape_is_static(&ty->shape)) {
        w->direct[v] = false;
        /* zeroed unless the kernel overwrites it (a graph output of 13 MB, GPT-2's logits, is
           otherwise written twice a run) */
        st = (s->k->overwrites_outputs ? ge_tensor_init_alloc_uninit : ge_tensor_init_alloc)(
            &slots[v], ty->dtype, ty->shape.dims, ty->shape.rank);
        if (st != GE_OK) {
          st = ge_error_prefix(st, "%s, output %u: ", ge_node_desc(s->node, where, sizeof where), o);
          goto done;
        }
      } else if (s->k->dynamic_output) {
        w->direct[v] = false;
        memset(&slots[v], 0, sizeof slots[v]);
        slots[v].dtype = ty->dtype;
      } else {
        char sh[160];
        st = ge_error(GE_ERR_SHAPE, "%s: the shape of output %u is unknown at run time (%s)",
                      ge_node_desc(s->node, where, sizeof where), o,
                      ge_shape_str(&ty->shape, p->graph, sh, sizeof sh));
        goto done;
      }
    }
    ge_kctx kc = {.node = s->node, .n_in = s->n_in, .n_out = s->n_out, .in = in_ptrs,
                  .out = out_ptrs, .threads = run_threads,
                  .exec = env ? env->fx : NULL};
    uint64_t t0 = obs.obs ? ge_now_ns() : 0;
    st = s->k->run(s->state, &kc);
    if (st != GE_OK) goto done;
    if (obs.obs) {
      st = ge_obs_step_done(&obs, si, t0, ge_now_ns(), out_ptrs);
      if (st != GE_OK) goto done;
    }
    for (uint32_t d = 0; d < s->n_dead; d++) {
      uint32_t v = s->dead[d];
      if (owned[v]) ge_tensor_release_storage(&slots[v]);
      owned[v] = false;
    }
  }

  if (into) {
    st = copy_into(p, w, into, n_out);
  } else {
    for (size_t i = 0; i < n_out; i++) {
      uint32_t v = p->outputs[i];
      bool dup = false;
      for (size_t j = 0; j < i; j++)
        if (p->outputs[j] == v) {
          st = ge_tensor_clone(outputs[j], &outputs[i]);
          dup = true;
          break;
        }
      if (!dup) {
        st = move_output(&slots[v], owned[v], &outputs[i]);
        owned[v] = false;
      }
      if (st != GE_OK) break;
    }
    if (st != GE_OK)
      for (size_t i = 0; i < n_out; i++) {
        ge_tensor_free(outputs[i]);
        outputs[i] = NULL;
      }
  }

done:
  obs_st = ge_obs_run_end(&obs);
  if (st == GE_OK && obs_st != GE_OK) {
    st = obs_st;
    for (size_t i = 0; !into && i < n_out; i++) {
      ge_tensor_free(outputs[i]);
      outputs[i] = NULL;
    }
  }
  if (cap != -2) ge_threads_one_leave(cap);
  ge_threads_run_end();
  if (ticket.threads) ge_thread_adapt_end(p->adapt, &ticket, st == GE_OK);
  ws_release(p, w);
  return st;
}

/* ------------------------------------------------------------------ subgraphs */

#define GE_SUBGRAPH_CACHE_MAX 16
/* After this many signatures (a loop whose carried shapes keep changing), bodies are compiled
   once for the dims left unknown (shapes inferred as they run) instead of once per shape. */
#define GE_SUBGRAPH_EXACT_MAX 8

typedef struct sub_entry {
  ge_type *types; /* n_formal + n_outer */
  ge_plan *plan;
} sub_entry;

struct ge_subgraph {
  const ge_graph *body;
  const ge_node *node;
  ge_options opts;
  size_t n_formal;     /* the body's non-constant inputs */
  size_t n_outer;      /* its OUTER values, in value order */
  uint32_t *outer_in;  /* kctx input index of each OUTER value */
  pthread_mutex_t mu;
  sub_entry cache[GE_SUBGRAPH_CACHE_MAX];
  size_t n_cache;
};

ge_status ge_subgraph_create(const ge_prepare_ctx *p, const ge_graph *body, ge_subgraph **out) {
  *out = NULL;
  if (!body) return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "missing subgraph");
  ge_subgraph *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->body = body;
  s->node = p->node;
  ge_options_default(&s->opts);
  if (p->intra_threads > 0) s->opts.intra_threads = p->intra_threads;
  s->opts.adaptive_threads = 0; /* a body runs on its caller's threads */
  for (size_t i = 0; i < body->n_inputs; i++)
    if (body->values[body->inputs[i]].kind != GE_VALUE_CONSTANT) s->n_formal++;
  for (size_t v = 0; v < body->n_values; v++) s->n_outer += body->values[v].kind == GE_VALUE_OUTER;
  s->outer_in = calloc(s->n_outer + 1, sizeof *s->outer_in);
  if (!s->outer_in) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  int32_t *imp = NULL;
  size_t n_imp = 0;
  ge_status st = ge_node_implicit_inputs(p->graph, p->node, &imp, &n_imp);
  size_t k = 0;
  for (size_t v = 0; st == GE_OK && v < body->n_values; v++) {
    if (body->values[v].kind != GE_VALUE_OUTER) continue;
    size_t j = 0;
    while (j < n_imp && strcmp(p->graph->values[imp[j]].name, body->values[v].name)) j++;
    if (j == n_imp)
      st = ge_prepare_fail(p, GE_ERR_INTERNAL, "subgraph value '%s' is not an implicit input",
                           body->values[v].name);
    else
      s->outer_in[k++] = (uint32_t)(p->node->n_inputs + j);
  }
  free(imp);
  if (st != GE_OK) {
    free(s->outer_in);
    free(s);
    return st;
  }
  pthread_mutex_init(&s->mu, NULL);
  *out = s;
  return GE_OK;
}

void ge_subgraph_free(ge_subgraph *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_cache; i++) {
    free(s->cache[i].types);
    ge_plan_free(s->cache[i].plan);
  }
  pthread_mutex_destroy(&s->mu);
  free(s->outer_in);
  free(s);
}

/* The same types with every dim unknown (ranks kept). */
static void generalize(ge_type *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (int32_t d = 0; d < t[i].shape.rank; d++) t[i].shape.dims[d] = GE_DIM_UNKNOWN;
}

static bool types_equal(const ge_type *a, const ge_type *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i].kind != b[i].kind || a[i].dtype != b[i].dtype || a[i].elem_is_seq != b[i].elem_is_seq ||
        !ge_shape_equal(&a[i].shape, &b[i].shape))
      return false;
  return true;
}

ge_status ge_kctx_run_subgraph(ge_kctx *c, ge_subgraph *s, ge_tensor *const *inputs, size_t n_in,
                               ge_tensor **outputs, size_t n_out) {
  if (n_in != s->n_formal)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "its subgraph '%s' takes %zu inputs, got %zu",
                        s->body->name ? s->body->name : "", s->n_formal, n_in);
  size_t n = s->n_formal + s->n_outer;
  ge_tensor **all = calloc(n + 1, sizeof *all);
  ge_type *types = calloc(n + 1, sizeof *types);
  if (!all || !types) {
    free(all);
    free(types);
    return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory running a subgraph");
  }
  ge_status st = GE_OK;
  for (size_t i = 0; i < n_in; i++) all[i] = inputs[i];
  for (size_t k = 0; k < s->n_outer && st == GE_OK; k++) {
    uint32_t j = s->outer_in[k];
    if (j >= c->n_in || !c->in[j])
      st = ge_kctx_fail(c, GE_ERR_INTERNAL, "outer value %zu of its subgraph is not bound", k);
    else
      all[n_in + k] = c->in[j];
  }
  for (size_t i = 0; i < n && st == GE_OK; i++) {
    if (!all[i]) {
      st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "subgraph input %zu is missing", i);
      break;
    }
    ge_value_type(all[i], &types[i]);
  }
  ge_plan *plan = NULL;
  bool tmp = false;
  if (st == GE_OK) {
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_cache && !plan; i++)
      if (types_equal(s->cache[i].types, types, n)) plan = s->cache[i].plan;
    bool general = !plan && s->n_cache >= GE_SUBGRAPH_EXACT_MAX;
    if (general) {
      generalize(types, n);
      for (size_t i = 0; i < s->n_cache && !plan; i++)
        if (types_equal(s->cache[i].types, types, n)) plan = s->cache[i].plan;
    }
    pthread_mutex_unlock(&s->mu);
    if (general && !plan) { /* a body that cannot run with unknown dims: this signature only */
      ge_status gst = ge_plan_compile(s->body, types, &s->opts, &plan);
      if (gst != GE_OK) {
        plan = NULL;
        for (size_t i = 0; i < n; i++) ge_value_type(all[i], &types[i]);
      }
    }
  }
  if (st == GE_OK && !plan) {
    st = ge_plan_compile(s->body, types, &s->opts, &plan);
    if (st != GE_OK) {
      char where[256];
      st = ge_error_prefix(st, "%s: in its subgraph '%s': ", ge_node_desc(c->node, where, sizeof where),
                           s->body->name ? s->body->name : "");
    }
  }
  if (st == GE_OK && plan) {
    bool cached = false;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_cache && !cached; i++) cached = s->cache[i].plan == plan;
    pthread_mutex_unlock(&s->mu);
    if (!cached) {
      pthread_mutex_lock(&s->mu);
      if (s->n_cache < GE_SUBGRAPH_CACHE_MAX) {
        s->cache[s->n_cache].types = types;
        s->cache[s->n_cache].plan = plan;
        s->n_cache++;
        types = NULL;
      } else {
        tmp = true;
      }
      pthread_mutex_unlock(&s->mu);
    }
  }
  if (st == GE_OK) {
    ge_run_env env = {.fx = c->exec, .threads = c->threads > 0 ? c->threads : 1};
    st = ge_plan_run_env(plan, all, n, outputs, n_out, &env);
    if (st != GE_OK && n_out != plan->n_outputs)
      st = ge_kctx_fail(c, GE_ERR_INTERNAL, "subgraph returns %zu values, expected %zu",
                        plan->n_outputs, n_out);
  }
  if (tmp) ge_plan_free(plan);
  free(all);
  free(types);
  return st;
}
