/* Graph -> plan: infer types, fold constants, pick and prepare kernels, compute lifetimes. */
#include <stdlib.h>
#include <string.h>

#include "compiler/layout.h"
#include "compiler/memplan.h"
#include "compiler/program.h"

/* Folded values are kept when small, or when they are no bigger than what they replace. */
#define GE_FOLD_MAX_BYTES ((size_t)64 << 20)
#define GE_FOLD_SMALL_BYTES ((size_t)1 << 20)

static bool domain_is_onnx(const char *d) { return !d[0] || !strcmp(d, "ai.onnx"); }

/* Ops whose result must not be computed once at compile time. */
static bool op_is_foldable(const ge_node *n) {
  if (!domain_is_onnx(n->domain) || ge_op_is_random(n)) return false;
  static const char *const never[] = {"If", "Loop", "Scan", "SequenceMap", NULL};
  for (const char *const *x = never; *x; x++)
    if (!strcmp(n->op_type, *x)) return false;
  for (size_t i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].kind == GE_ATTR_KIND_GRAPH || n->attrs[i].kind == GE_ATTR_KIND_GRAPHS)
      return false;
  return true;
}

/* Shape and Size need only their input's shape, not its data. */
static bool op_reads_shape_only(const ge_node *n) {
  return domain_is_onnx(n->domain) && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
}

static bool type_is_static_tensor(const ge_type *t) {
  return t->kind == GE_TYPE_TENSOR && t->dtype != GE_DTYPE_COUNT && ge_shape_is_static(&t->shape);
}

static size_t type_bytes(const ge_type *t) {
  size_t n = 0, b = 0;
  if (!ge_shape_numel(&t->shape, &n) || ge_mul_overflow_size(n, ge_dtype_size(t->dtype), &b))
    return SIZE_MAX;
  return b;
}

void ge_plan_free(ge_plan *p) {
  if (!p) return;
  ge_plan_pool_free(p);
  for (size_t i = 0; i < p->n_steps; i++) {
    ge_step *s = &p->steps[i];
    if (s->k && s->k->release && s->state) s->k->release(s->state);
    free(s->in);
    free(s->out);
    free(s->dead);
  }
  for (size_t i = 0; i < p->n_slots; i++)
    if (p->slots[i].folded) ge_tensor_free((ge_tensor *)p->slots[i].constant);
  free(p->steps);
  free(p->slots);
  free(p->inputs);
  free(p->outputs);
  free(p->arena_offset);
  free(p->alias_of);
  free(p->layout);
  free(p);
}

#define GE_MAX_KERNEL_CANDIDATES 8

/* Picks and prepares a kernel: the fast candidates first; one whose prepare answers
   GE_ERR_UNSUPPORTED declines, and the next is tried.  *k is NULL when no kernel exists. */
static ge_status pick_kernel(const ge_prepare_ctx *pc, const ge_kernel **k, void **state) {
  const ge_node *n = pc->node;
  const ge_kernel *cand[GE_MAX_KERNEL_CANDIDATES];
  size_t nc = ge_cpu_find_kernels(n->domain, n->op_type, n->opset, cand, GE_MAX_KERNEL_CANDIDATES);
  *k = NULL;
  *state = NULL;
  for (size_t i = 0; i < nc; i++) {
    ge_status st = cand[i]->prepare ? cand[i]->prepare(pc, state) : GE_OK;
    if (st == GE_OK) {
      *k = cand[i];
      return GE_OK;
    }
    *state = NULL;
    if (st != GE_ERR_UNSUPPORTED || i + 1 == nc) return st;
  }
  return GE_OK;
}

/* Runs one node on constant inputs at compile time.  *done is false when the node cannot be
   folded (no kernel, too big): that is not an error here. */
static ge_status fold_node(ge_plan *p, const ge_node *n, const ge_infer_input *in, const ge_type *out_t,
                           bool *done) {
  *done = false;
  size_t out_bytes = 0, in_bytes = 0;
  for (size_t o = 0; o < n->n_outputs; o++) {
    if (n->outputs[o] < 0) continue;
    if (!type_is_static_tensor(&out_t[o])) return GE_OK;
    size_t b = type_bytes(&out_t[o]);
    if (b == SIZE_MAX || b > GE_FOLD_MAX_BYTES - out_bytes) return GE_OK;
    out_bytes += b;
  }
  for (size_t i = 0; i < n->n_inputs; i++)
    if (in[i].present && in[i].value) in_bytes += in[i].value->nbytes;
  if (out_bytes > GE_FOLD_SMALL_BYTES && out_bytes > 2 * in_bytes) return GE_OK;

  ge_prepare_ctx pc = ge_plan_prepare_ctx(p, n, in, out_t);
  const ge_kernel *k = NULL;
  void *state = NULL;
  GE_CHECK(pick_kernel(&pc, &k, &state));
  if (!k) return GE_OK;
  if (k->dynamic_output) { /* shapes unknown until it runs: leave it to the executor */
    if (k->release && state) k->release(state);
    return GE_OK;
  }
  ge_status st = GE_OK;
  ge_tensor **ins = calloc(n->n_inputs + 1, sizeof *ins);
  ge_tensor *in_views = calloc(n->n_inputs + 1, sizeof *in_views);
  ge_tensor **outs = calloc(n->n_outputs + 1, sizeof *outs);
  if (!ins || !outs || !in_views) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory folding a node");
    goto done;
  }
  for (size_t i = 0; i < n->n_inputs; i++) {
    if (!in[i].present) continue;
    if (in[i].value) {
      ge_tensor_view(&in_views[i], in[i].value);
    } else { /* shape-only input: dims without data */
      memset(&in_views[i], 0, sizeof in_views[i]);
      in_views[i].dtype = in[i].type->dtype;
      in_views[i].rank = in[i].type->shape.rank;
      memcpy(in_views[i].dims, in[i].type->shape.dims, sizeof in_views[i].dims);
      ge_shape_numel(&in[i].type->shape, &in_views[i].numel);
    }
    ins[i] = &in_views[i];
  }
  for (size_t o = 0; o < n->n_outputs; o++) {
    if (n->outputs[o] < 0) continue;
    st = ge_tensor_create_shape(out_t[o].dtype, &out_t[o].shape, &outs[o]);
    if (st != GE_OK) goto done;
  }
  ge_kctx kc = {.node = n, .n_in = n->n_inputs, .n_out = n->n_outputs, .in = ins, .out = outs,
                .threads = p->opts.intra_threads, .exec = NULL};
  st = k->run(state, &kc);
  if (st != GE_OK) goto done;
  for (size_t o = 0; o < n->n_outputs; o++) {
    if (n->outputs[o] < 0) continue;
    ge_slot *s = &p->slots[n->outputs[o]];
    s->constant = outs[o];
    s->folded = true;
    outs[o] = NULL;
  }
  *done = true;
done:
  if (outs)
    for (size_t o = 0; o < n->n_outputs; o++) ge_tensor_free(outs[o]);
  free(outs);
  free(ins);
  free(in_views);
  if (k->release && state) k->release(state);
  return st;
}

/* ------------------------------------------------------------------ implicit inputs */

static ge_status add_outer_names(const ge_graph *g, const ge_graph *sub, int32_t **ids, size_t *n,
                                 size_t *cap) {
  for (size_t v = 0; v < sub->n_values; v++) {
    if (sub->values[v].kind != GE_VALUE_OUTER) continue;
    int32_t id = ge_graph_find_value(g, sub->values[v].name);
    if (id < 0)
      return ge_error(GE_ERR_INVALID_ARGUMENT,
                      "graph '%s': a subgraph reads '%s', which this graph does not define",
                      g->name ? g->name : "", sub->values[v].name);
    bool dup = false;
    for (size_t k = 0; k < *n && !dup; k++) dup = (*ids)[k] == id;
    if (dup) continue;
    if (*n == *cap) {
      size_t c = *cap ? *cap * 2 : 8;
      int32_t *p = realloc(*ids, c * sizeof *p);
      if (!p) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory listing implicit inputs");
      *ids = p;
      *cap = c;
    }
    (*ids)[(*n)++] = id;
  }
  return GE_OK;
}

ge_status ge_node_implicit_inputs(const ge_graph *g, const ge_node *n, int32_t **ids, size_t *count) {
  *ids = NULL;
  *count = 0;
  size_t cap = 0;
  ge_status st = GE_OK;
  for (size_t a = 0; a < n->n_attrs && st == GE_OK; a++) {
    const ge_attr_value *at = &n->attrs[a];
    if (at->kind == GE_ATTR_KIND_GRAPH && at->g) st = add_outer_names(g, at->g, ids, count, &cap);
    if (at->kind == GE_ATTR_KIND_GRAPHS)
      for (size_t k = 0; k < at->n && st == GE_OK; k++)
        if (at->graphs[k]) st = add_outer_names(g, at->graphs[k], ids, count, &cap);
  }
  if (st != GE_OK) {
    char where[256];
    free(*ids);
    *ids = NULL;
    *count = 0;
    return ge_error_prefix(st, "%s: ", ge_node_desc(n, where, sizeof where));
  }
  return GE_OK;
}

/* Identity of a sequence or an optional: a deep copy. */
static ge_status run_value_identity(const void *state, ge_kctx *c) {
  (void)state;
  if (!c->in[0]) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "input 0 is missing");
  ge_tensor *t = NULL;
  GE_CHECK(ge_value_clone(c->in[0], &t));
  return ge_kctx_set_output(c, 0, t);
}
static const ge_kernel value_identity_kernel = {NULL, run_value_identity, NULL, true};

static ge_status add_step(ge_plan *p, const ge_node *n, const ge_infer_input *in, const ge_type *out_t,
                          const uint8_t *in_layout, const uint8_t *out_layout) {
  char where[256];
  ge_prepare_ctx pc = ge_plan_prepare_ctx(p, n, in, out_t);
  pc.in_layout = in_layout;
  pc.out_layout = out_layout;
  const ge_kernel *k = NULL;
  void *state = NULL;
  if (domain_is_onnx(n->domain) && !strcmp(n->op_type, "Identity") && n->n_inputs == 1 && in[0].present &&
      in[0].type->kind != GE_TYPE_TENSOR)
    k = &value_identity_kernel;
  else
    GE_CHECK(pick_kernel(&pc, &k, &state));
  if (!k)
    return ge_error(GE_ERR_UNSUPPORTED, "%s: no CPU kernel for op %s%s%s at opset %lld",
                    ge_node_desc(n, where, sizeof where), n->domain[0] ? n->domain : "",
                    n->domain[0] ? "::" : "", n->op_type, (long long)n->opset);
  int32_t *imp = NULL;
  size_t n_imp = 0;
  ge_status ist = ge_node_implicit_inputs(p->graph, n, &imp, &n_imp);
  if (ist != GE_OK) {
    if (k->release && state) k->release(state);
    return ist;
  }
  ge_step *s = &p->steps[p->n_steps];
  memset(s, 0, sizeof *s);
  s->k = k;
  s->state = state;
  s->node = n;
  s->n_in = (uint32_t)(n->n_inputs + n_imp);
  s->n_out = (uint32_t)n->n_outputs;
  s->in = malloc((n->n_inputs + n_imp + 1) * sizeof *s->in);
  s->out = malloc((n->n_outputs + 1) * sizeof *s->out);
  if (!s->in || !s->out) {
    free(s->in);
    free(s->out);
    free(imp);
    if (k->release && state) k->release(state);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling %s", ge_node_desc(n, where, sizeof where));
  }
  for (size_t i = 0; i < n_imp; i++) s->in[n->n_inputs + i] = (uint32_t)imp[i];
  free(imp);
  s->static_out = true;
  for (size_t i = 0; i < n->n_inputs; i++) s->in[i] = n->inputs[i] < 0 ? GE_SLOT_NONE : (uint32_t)n->inputs[i];
  for (size_t o = 0; o < n->n_outputs; o++) {
    s->out[o] = n->outputs[o] < 0 ? GE_SLOT_NONE : (uint32_t)n->outputs[o];
    if (n->outputs[o] >= 0 && !type_is_static_tensor(&out_t[o])) s->static_out = false;
  }
  p->n_steps++;
  return GE_OK;
}

/* Ops whose output is their input's bytes under another shape. */
static bool op_is_view(const ge_node *n) {
  static const char *const ops[] = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", NULL};
  if (!domain_is_onnx(n->domain)) return false;
  for (const char *const *o = ops; *o; o++)
    if (!strcmp(n->op_type, *o)) return true;
  return false;
}

/* Steps whose output can be a view of input 0 (same dtype and element count, static, not a
   graph output, a plain tensor): they run no kernel, and their output aliases the input's
   buffer, whose lifetime grows to cover every reader of the view. */
static ge_status mark_views(ge_plan *p) {
  p->alias_of = malloc((p->n_slots + 1) * sizeof *p->alias_of);
  if (!p->alias_of) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning views");
  for (size_t v = 0; v < p->n_slots; v++) p->alias_of[v] = -1;
  if (p->opts.opt_level < 1) return GE_OK;
  for (size_t si = 0; si < p->n_steps; si++) {
    ge_step *s = &p->steps[si];
    if (!op_is_view(s->node) || !s->static_out || s->n_in < 1 || s->n_out != 1 ||
        s->in[0] == GE_SLOT_NONE || s->out[0] == GE_SLOT_NONE)
      continue;
    uint32_t in = s->in[0], out = s->out[0];
    const ge_type *ti = &p->slots[in].type, *to = &p->slots[out].type;
    size_t ni = 0, no = 0;
    if (ti->kind != GE_TYPE_TENSOR || to->kind != GE_TYPE_TENSOR || ti->dtype != to->dtype ||
        ti->dtype == GE_STRING || !ge_shape_numel(&ti->shape, &ni) ||
        !ge_shape_numel(&to->shape, &no) || ni != no)
      continue;
    bool is_output = false;
    for (size_t i = 0; i < p->n_outputs; i++)
      if (p->outputs[i] == out) is_output = true;
    if (is_output) continue;
    s->view = true;
    p->alias_of[out] = p->alias_of[in] >= 0 ? p->alias_of[in] : (int32_t)in;
  }
  return GE_OK;
}

/* For each step, the intermediate slots whose last reader it is (or that nobody reads). */
static ge_status compute_lifetimes(ge_plan *p) {
  size_t ns = p->n_slots;
  int64_t *last = malloc((ns + 1) * sizeof *last);
  bool *keep = calloc(ns + 1, sizeof *keep);
  if (!last || !keep) {
    free(last);
    free(keep);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning lifetimes");
  }
  for (size_t i = 0; i < ns; i++) last[i] = -1;
  for (size_t i = 0; i < p->n_outputs; i++) keep[p->outputs[i]] = true;
  for (size_t si = 0; si < p->n_steps; si++) {
    const ge_step *s = &p->steps[si];
    for (uint32_t i = 0; i < s->n_in; i++)
      if (s->in[i] != GE_SLOT_NONE) last[s->in[i]] = (int64_t)si;
    for (uint32_t o = 0; o < s->n_out; o++)
      if (s->out[o] != GE_SLOT_NONE && last[s->out[o]] < (int64_t)si) last[s->out[o]] = (int64_t)si;
  }
  /* a buffer lives as long as its last view is read; views themselves own nothing */
  for (size_t v = 0; v < ns; v++) {
    int32_t r = p->alias_of ? p->alias_of[v] : -1;
    if (r >= 0 && last[v] > last[r]) last[r] = last[v];
    if (r >= 0 && keep[v]) keep[r] = true;
  }
  for (size_t v = 0; v < ns; v++)
    if (p->alias_of && p->alias_of[v] >= 0) last[v] = -1;
  uint32_t *count = calloc(p->n_steps + 1, sizeof *count);
  if (!count) {
    free(last);
    free(keep);
    return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning lifetimes");
  }
  for (size_t v = 0; v < ns; v++) {
    const ge_slot *sl = &p->slots[v];
    if (keep[v] || sl->constant || sl->input_index >= 0 || last[v] < 0) continue;
    count[last[v]]++;
  }
  ge_status st = GE_OK;
  for (size_t si = 0; si < p->n_steps && st == GE_OK; si++) {
    if (!count[si]) continue;
    p->steps[si].dead = malloc(count[si] * sizeof(uint32_t));
    if (!p->steps[si].dead) st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning lifetimes");
  }
  for (size_t v = 0; v < ns && st == GE_OK; v++) {
    const ge_slot *sl = &p->slots[v];
    if (keep[v] || sl->constant || sl->input_index >= 0 || last[v] < 0) continue;
    ge_step *s = &p->steps[last[v]];
    s->dead[s->n_dead++] = (uint32_t)v;
  }
  free(count);
  free(last);
  free(keep);
  return st;
}

/* The two slots are stored in the same memory layout (ge_plan.layout: compiler/layout.h). */
static bool slot_layout_same(const ge_plan *p, uint32_t a, uint32_t b) {
  return !p->layout || p->layout[a] == p->layout[b];
}

static bool types_same(const ge_type *a, const ge_type *b) {
  return a->kind == GE_TYPE_TENSOR && b->kind == GE_TYPE_TENSOR && a->dtype == b->dtype &&
         ge_shape_equal(&a->shape, &b->shape);
}

/* In-place hints: output 0 of a step whose kernel allows it (ge_kernel.inplace_inputs) may take
   the buffer of an input of the same dtype, shape and layout whose buffer dies at that step
   (a view's buffer dies with its last view).  The planner then puts both at one offset when
   nothing else is in the way. */
static ge_status set_inplace_hints(const ge_plan *p, ge_mem_request *req, const uint32_t *slots, size_t n) {
  int32_t *req_of = malloc((p->n_slots + 1) * sizeof *req_of);
  if (!req_of) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning memory");
  for (size_t v = 0; v < p->n_slots; v++) req_of[v] = -1;
  for (size_t i = 0; i < n; i++) req_of[slots[i]] = (int32_t)i;
  for (size_t i = 0; i < n; i++) {
    const ge_step *s = &p->steps[req[i].first];
    if (!s->k->inplace_inputs || s->n_out < 1 || s->out[0] != slots[i]) continue;
    const ge_type *to = &p->slots[slots[i]].type;
    for (uint32_t j = 0; j < s->n_in && j < 32 && req[i].inplace_of == GE_MEMPLAN_NONE; j++) {
      if (!(s->k->inplace_inputs & (1u << j)) || s->in[j] == GE_SLOT_NONE) continue;
      uint32_t u = s->in[j];
      int32_t root = p->alias_of && p->alias_of[u] >= 0 ? p->alias_of[u] : (int32_t)u;
      int32_t r = req_of[root];
      if (r < 0 || (size_t)r == i || req[r].last != req[i].first || req[r].size != req[i].size) continue;
      if (!types_same(&p->slots[u].type, to) || !slot_layout_same(p, u, slots[i])) continue;
      /* the same buffer read through an input that may not share it (FusedConv(a, w, b, a):
         the convolution reads a's neighbourhoods while it writes) */
      bool other_reader = false;
      for (uint32_t k = 0; k < s->n_in && !other_reader; k++) {
        if (k == j || s->in[k] == GE_SLOT_NONE) continue;
        uint32_t w = s->in[k];
        int32_t rk = p->alias_of && p->alias_of[w] >= 0 ? p->alias_of[w] : (int32_t)w;
        if (rk == root && (k >= 32 || !(s->k->inplace_inputs & (1u << k)))) other_reader = true;
      }
      if (other_reader) continue;
      req[i].inplace_of = r;
    }
  }
  free(req_of);
  return GE_OK;
}

/* Offsets in one arena for the intermediates of static steps (compiler/memplan.h); every
   plan is checked: no two buffers whose lifetimes overlap share a byte. */
static ge_status plan_memory(ge_plan *p) {
  p->arena_offset = malloc((p->n_slots + 1) * sizeof *p->arena_offset);
  if (!p->arena_offset) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory planning memory");
  for (size_t v = 0; v < p->n_slots; v++) p->arena_offset[v] = -1;
  ge_mem_request *req = NULL;
  uint32_t *slots = NULL;
  size_t n = 0;
  GE_CHECK(ge_memplan_plan_requests(p, &req, &slots, &n));
  /* only outputs of steps whose shapes are static and that the executor allocates */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const ge_step *s = &p->steps[req[i].first];
    if (!s->static_out || s->k->dynamic_output) continue;
    req[k] = req[i];
    slots[k++] = slots[i];
  }
  n = k;
  /* in place is reuse too: ge.exec.disableReuseMemory turns it off */
  ge_status st = n && !p->opts.disable_reuse ? set_inplace_hints(p, req, slots, n) : GE_OK;
  if (st != GE_OK) {
    free(req);
    free(slots);
    return st;
  }
  ge_memplan_opts mo = {.no_reuse = p->opts.disable_reuse};
  ge_mem_plan mp = {0};
  st = ge_memplan_compute(req, n, &mo, &mp);
  if (st == GE_OK) st = ge_memplan_check(req, n, &mo, &mp);
  if (st == GE_OK) {
    for (size_t i = 0; i < n; i++) {
      p->arena_offset[slots[i]] = (int64_t)mp.offsets[i];
      p->arena_no_reuse += (req[i].size + GE_MEMPLAN_ALIGN - 1) / GE_MEMPLAN_ALIGN * GE_MEMPLAN_ALIGN;
    }
    p->arena_bytes = mp.arena;
    p->arena_lower_bound = mp.lower_bound;
    p->arena_strategy = mp.strategy;
  }
  ge_memplan_free(&mp);
  free(req);
  free(slots);
  return st;
}

ge_status ge_plan_compile(const ge_graph *g, const ge_type *input_types, const ge_options *opts,
                          ge_plan **out) {
  *out = NULL;
  ge_plan *p = calloc(1, sizeof *p);
  if (!p) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph");
  p->graph = g;
  p->opts = *opts;
  p->n_slots = g->n_values;
  p->slots = calloc(g->n_values + 1, sizeof *p->slots);
  p->steps = calloc(g->n_nodes + 1, sizeof *p->steps);
  p->inputs = calloc(g->n_inputs + 1, sizeof *p->inputs);
  p->outputs = calloc(g->n_outputs + 1, sizeof *p->outputs);
  ge_infer_input *in = NULL;
  ge_type *out_t = NULL;
  bool *stepped = NULL; /* per node: runs as a step (not folded) */
  uint8_t *lay = NULL;  /* a step's input then output layouts */
  ge_status st = GE_OK;
  if (!p->slots || !p->steps || !p->inputs || !p->outputs) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph");
    goto fail;
  }
  size_t max_in = 1, max_out = 1;
  for (size_t i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].n_inputs > max_in) max_in = g->nodes[i].n_inputs;
    if (g->nodes[i].n_outputs > max_out) max_out = g->nodes[i].n_outputs;
  }
  in = calloc(max_in, sizeof *in);
  out_t = calloc(max_out, sizeof *out_t);
  stepped = calloc(g->n_nodes + 1, sizeof *stepped);
  lay = calloc(max_in + max_out, 1);
  if (!in || !out_t || !stepped || !lay) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph");
    goto fail;
  }

  for (size_t v = 0; v < g->n_values; v++) {
    const ge_value *val = &g->values[v];
    ge_slot *s = &p->slots[v];
    s->input_index = -1;
    s->type = val->type;
    if (val->kind == GE_VALUE_CONSTANT && val->constant) {
      s->constant = val->constant;
      s->type.kind = GE_TYPE_TENSOR;
      s->type.dtype = val->constant->dtype;
      ge_tensor_shape(val->constant, &s->type.shape);
    } else if (val->kind == GE_VALUE_OUTER && !g->parent) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': value '%s' refers to an enclosing graph, "
                    "but this graph is compiled at top level", g->name ? g->name : "", val->name);
      goto fail;
    }
  }
  for (size_t i = 0; i < g->n_inputs; i++) {
    int32_t v = g->inputs[i];
    if (g->values[v].kind == GE_VALUE_CONSTANT) continue;
    ge_slot *s = &p->slots[v];
    s->input_index = (int32_t)p->n_inputs;
    if (input_types) {
      const ge_type *given = &input_types[p->n_inputs];
      bool opt = s->type.kind == GE_TYPE_OPTIONAL && given->kind != GE_TYPE_OPTIONAL;
      s->type = *given;
      if (opt) { /* a tensor or sequence fed to an optional input: the run wraps it */
        s->type.elem_is_seq = given->kind == GE_TYPE_SEQUENCE;
        s->type.kind = GE_TYPE_OPTIONAL;
      }
    }
    if (s->type.kind == GE_TYPE_TENSOR && s->type.dtype == GE_DTYPE_COUNT) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph input '%s' has no element type", g->values[v].name);
      goto fail;
    }
    p->inputs[p->n_inputs++] = (uint32_t)v;
  }
  p->n_formal = p->n_inputs;
  if (g->parent) { /* a subgraph: its OUTER values are inputs after its own */
    size_t n_outer = 0;
    for (size_t v = 0; v < g->n_values; v++) n_outer += g->values[v].kind == GE_VALUE_OUTER;
    if (n_outer) {
      uint32_t *np = realloc(p->inputs, (p->n_inputs + n_outer + 1) * sizeof *np);
      if (!np) {
        st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory compiling graph");
        goto fail;
      }
      p->inputs = np;
    }
    for (size_t v = 0; v < g->n_values; v++) {
      if (g->values[v].kind != GE_VALUE_OUTER) continue;
      ge_slot *s = &p->slots[v];
      s->input_index = (int32_t)p->n_inputs;
      if (input_types) s->type = input_types[p->n_inputs];
      p->inputs[p->n_inputs++] = (uint32_t)v;
    }
  }
  for (size_t i = 0; i < g->n_outputs; i++) p->outputs[p->n_outputs++] = (uint32_t)g->outputs[i];

  for (size_t ni = 0; ni < g->n_nodes; ni++) {
    const ge_node *n = &g->nodes[ni];
    bool all_const = true;
    for (size_t i = 0; i < n->n_inputs; i++) {
      int32_t v = n->inputs[i];
      in[i].present = v >= 0;
      in[i].type = v >= 0 ? &p->slots[v].type : NULL;
      in[i].value = v >= 0 ? p->slots[v].constant : NULL;
      if (v >= 0 && !in[i].value) all_const = false;
    }
    ge_infer_ctx ic = {.graph = g, .node = n, .opset = n->opset, .n_in = n->n_inputs,
                       .n_out = n->n_outputs, .in = in, .out = out_t};
    st = ge_op_infer(&ic);
    if (st != GE_OK) goto fail;
    for (size_t o = 0; o < n->n_outputs; o++)
      if (n->outputs[o] >= 0) p->slots[n->outputs[o]].type = out_t[o];

    bool shape_only = op_reads_shape_only(n) && n->n_inputs >= 1 && in[0].present &&
                      type_is_static_tensor(in[0].type);
    if (opts->opt_level >= 1 && op_is_foldable(n) && (all_const || shape_only)) {
      bool done = false;
      st = fold_node(p, n, in, out_t, &done);
      if (st != GE_OK) goto fail;
      if (done) {
        p->n_folded++;
        continue;
      }
    }
    stepped[ni] = true;
  }
  /* memory layouts, decided before any kernel is prepared (compiler/layout.h) */
  st = ge_plan_assign_layouts(p, stepped);
  for (size_t ni = 0; st == GE_OK && ni < g->n_nodes; ni++) {
    if (!stepped[ni]) continue;
    const ge_node *n = &g->nodes[ni];
    for (size_t i = 0; i < n->n_inputs; i++) {
      int32_t v = n->inputs[i];
      in[i].present = v >= 0;
      in[i].type = v >= 0 ? &p->slots[v].type : NULL;
      in[i].value = v >= 0 ? p->slots[v].constant : NULL;
      lay[i] = v >= 0 ? p->layout[v] : 0;
    }
    for (size_t o = 0; o < n->n_outputs; o++) lay[max_in + o] = n->outputs[o] >= 0 ? p->layout[n->outputs[o]] : 0;
    ge_infer_ctx ic = {.graph = g, .node = n, .opset = n->opset, .n_in = n->n_inputs,
                       .n_out = n->n_outputs, .in = in, .out = out_t};
    st = ge_op_infer(&ic); /* the types of omitted outputs; the others are the slots' */
    for (size_t o = 0; st == GE_OK && o < n->n_outputs; o++)
      if (n->outputs[o] >= 0) out_t[o] = p->slots[n->outputs[o]].type;
    if (st == GE_OK) st = add_step(p, n, in, out_t, lay, lay + max_in);
  }
  if (st != GE_OK) goto fail;
  st = mark_views(p);
  if (st == GE_OK) st = compute_lifetimes(p);
  if (st == GE_OK) st = plan_memory(p);
  if (st == GE_OK) st = ge_plan_pool_init(p);
  if (st != GE_OK) goto fail;
  free(in);
  free(out_t);
  free(stepped);
  free(lay);
  *out = p;
  return GE_OK;
fail:
  free(in);
  free(out_t);
  free(stepped);
  free(lay);
  ge_plan_free(p);
  return st;
}
