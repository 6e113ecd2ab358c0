/* Graphs: values with a name index, nodes, opsets, symbols, clone/free, topological sort. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------------ helpers */

static const char *norm_domain(const char *d) {
  if (!d || strcmp(d, "ai.onnx") == 0) return "";
  return d;
}

static ge_graph *root_of(ge_graph *g) {
  while (g && g->parent) g = g->parent;
  return g;
}

static const ge_graph *croot_of(const ge_graph *g) {
  while (g && g->parent) g = g->parent;
  return g;
}

/* Grows *arr (elements of `elem` bytes) so that it holds at least `need`. */
static bool grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : 8;
  while (nc < need) {
    if (nc > SIZE_MAX / 2) return false;
    nc *= 2;
  }
  size_t bytes;
  if (ge_mul_overflow_size(nc, elem, &bytes)) return false;
  void *p = realloc(*arr, bytes);
  if (!p) return false;
  *arr = p;
  *cap = nc;
  return true;
}

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

static ge_status oom(const char *what) {
  return ge_error(GE_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

/* ------------------------------------------------------------------ name index */

/* index has index_cap slots (a power of two) holding value ids or -1, plus one extra slot
   after them that records how many values (0..n-1) the index covers. */
static bool index_insert(int32_t *index, size_t cap, const ge_value *values, int32_t id) {
  size_t mask = cap - 1;
  size_t i = (size_t)hash_str(values[id].name) & mask;
  while (index[i] >= 0) i = (i + 1) & mask;
  index[i] = id;
  return true;
}

static bool index_rebuild(ge_graph *g, size_t min_values) {
  size_t cap = 16;
  while (cap < min_values * 2 + 2) {
    if (cap > SIZE_MAX / 4) return false;
    cap *= 2;
  }
  size_t bytes;
  if (ge_mul_overflow_size(cap + 1, sizeof(int32_t), &bytes)) return false;
  int32_t *idx = malloc(bytes);
  if (!idx) return false;
  for (size_t i = 0; i < cap; i++) idx[i] = -1;
  for (size_t v = 0; v < g->n_values; v++) index_insert(idx, cap, g->values, (int32_t)v);
  idx[cap] = (int32_t)g->n_values;
  free(g->index);
  g->index = idx;
  g->index_cap = cap;
  return true;
}

int32_t ge_graph_find_value(const ge_graph *g, const char *name) {
  if (!g || !name) return -1;
  size_t covered = 0;
  if (g->index && g->index_cap) {
    covered = (size_t)g->index[g->index_cap];
    size_t mask = g->index_cap - 1;
    size_t i = (size_t)hash_str(name) & mask;
    while (g->index[i] >= 0) {
      int32_t id = g->index[i];
      if ((size_t)id < g->n_values && strcmp(g->values[id].name, name) == 0) return id;
      i = (i + 1) & mask;
    }
  }
  /* values appended without the index (should not happen through this API) */
  for (size_t v = covered; v < g->n_values; v++)
    if (g->values[v].name && strcmp(g->values[v].name, name) == 0) return (int32_t)v;
  return -1;
}

/* ------------------------------------------------------------------ graphs */

ge_graph *ge_graph_new(const char *name, ge_graph *parent) {
  ge_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->name = xstrdup(name);
  if (!g->name) {
    free(g);
    return NULL;
  }
  g->parent = parent;
  return g;
}

static void node_clear(ge_node *n) {
  free(n->name);
  free(n->op_type);
  free(n->domain);
  free(n->inputs);
  free(n->outputs);
  for (size_t i = 0; n->attrs && i < n->n_attrs; i++) ge_attr_value_clear(&n->attrs[i]);
  free(n->attrs);
  free(n->doc);
  memset(n, 0, sizeof *n);
}

static void opsets_free(ge_opset *o, size_t n) {
  for (size_t i = 0; o && i < n; i++) free(o[i].domain);
  free(o);
}

static void strs_free(char **s, size_t n) {
  for (size_t i = 0; s && i < n; i++) free(s[i]);
  free(s);
}

static void function_clear(ge_function *f) {
  free(f->name);
  free(f->domain);
  free(f->overload);
  strs_free(f->inputs, f->n_inputs);
  strs_free(f->outputs, f->n_outputs);
  strs_free(f->attr_names, f->n_attr_names);
  for (size_t i = 0; f->attr_defaults && i < f->n_attr_defaults; i++)
    ge_attr_value_clear(&f->attr_defaults[i]);
  free(f->attr_defaults);
  ge_graph_free(f->body);
  opsets_free(f->opsets, f->n_opsets);
  memset(f, 0, sizeof *f);
}

void ge_graph_free(ge_graph *g) {
  if (!g) return;
  for (size_t i = 0; g->values && i < g->n_values; i++) {
    free(g->values[i].name);
    ge_tensor_free(g->values[i].constant);
    free(g->values[i].doc);
  }
  free(g->values);
  for (size_t i = 0; g->nodes && i < g->n_nodes; i++) node_clear(&g->nodes[i]);
  free(g->nodes);
  free(g->inputs);
  free(g->outputs);
  opsets_free(g->opsets, g->n_opsets);
  strs_free(g->syms, g->n_syms);
  for (size_t i = 0; g->functions && i < g->n_functions; i++) function_clear(&g->functions[i]);
  free(g->functions);
  free(g->producer_name);
  free(g->producer_version);
  free(g->model_domain);
  free(g->doc);
  strs_free(g->meta_keys, g->n_meta);
  strs_free(g->meta_values, g->n_meta);
  free(g->index);
  free(g->info_dims);
  free(g->name);
  free(g);
}

/* ------------------------------------------------------------------ values */

static ge_status add_value(ge_graph *g, const char *name, int32_t *id) {
  if (g->n_values >= (size_t)INT32_MAX)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': too many values", g->name);
  if (!grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof(ge_value)))
    return oom("graph values");
  ge_value *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->name = xstrdup(name);
  if (!v->name) return oom("graph values");
  v->kind = GE_VALUE_INTERMEDIATE;
  v->type.kind = GE_TYPE_UNKNOWN;
  v->type.dtype = GE_DTYPE_COUNT;
  v->type.shape.rank = GE_RANK_UNKNOWN;
  v->producer = -1;
  v->producer_slot = -1;
  int32_t nid = (int32_t)g->n_values;
  g->n_values++;
  if ((g->n_values + 1) * 2 > g->index_cap) {
    if (!index_rebuild(g, g->n_values)) {
      g->n_values--;
      free(v->name);
      return oom("graph value index");
    }
  } else {
    index_insert(g->index, g->index_cap, g->values, nid);
    g->index[g->index_cap] = (int32_t)g->n_values;
  }
  *id = nid;
  return GE_OK;
}

ge_status ge_graph_value(ge_graph *g, const char *name, int32_t *id) {
  if (!g || !name || !id) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_value: NULL argument");
  if (!name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': a value cannot have an empty name",
                    g->name);
  int32_t f = ge_graph_find_value(g, name);
  if (f >= 0) {
    *id = f;
    return GE_OK;
  }
  return add_value(g, name, id);
}

/* Finds `name` in an ancestor of g; returns the value or NULL. */
static const ge_value *find_in_ancestors(const ge_graph *g, const char *name) {
  for (const ge_graph *p = g->parent; p; p = p->parent) {
    int32_t id = ge_graph_find_value(p, name);
    if (id >= 0) return &p->values[id];
  }
  return NULL;
}

ge_status ge_graph_resolve_input(ge_graph *g, const char *name, int32_t *id) {
  if (!g || !name || !id)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_resolve_input: NULL argument");
  int32_t f = ge_graph_find_value(g, name);
  if (f >= 0) {
    *id = f;
    return GE_OK;
  }
  const ge_value *outer = find_in_ancestors(g, name);
  if (!outer)
    return ge_error(GE_ERR_NOT_FOUND, "graph '%s': value '%s' is not defined here or in an enclosing graph",
                    g->name, name);
  ge_type t = outer->type;
  GE_CHECK(add_value(g, name, &f));
  g->values[f].kind = GE_VALUE_OUTER;
  g->values[f].type = t;
  *id = f;
  return GE_OK;
}

/* ------------------------------------------------------------------ nodes */

const char *ge_node_desc(const ge_node *n, char *buf, size_t cap) {
  if (!buf || cap == 0) return buf;
  if (!n) {
    snprintf(buf, cap, "node (null)");
  } else if (n->name && n->name[0]) {
    snprintf(buf, cap, "node '%s' (%s)", n->name, n->op_type ? n->op_type : "?");
  } else {
    snprintf(buf, cap, "node #%d (%s)", (int)n->index, n->op_type ? n->op_type : "?");
  }
  return buf;
}

ge_status ge_graph_append_node(ge_graph *g, const char *op_type, const char *domain,
                               const char *name, const char *const *inputs, size_t n_in,
                               const char *const *outputs, size_t n_out, int32_t *node_id) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_append_node: NULL graph");
  if (!op_type || !op_type[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': node '%s' has no op type", g->name,
                    name ? name : "");
  if ((n_in && !inputs) || (n_out && !outputs))
    return ge_error(GE_ERR_INVALID_ARGUMENT,
                    "graph '%s': node '%s' (%s): NULL %s array with %zu entries", g->name,
                    name ? name : "", op_type, n_in && !inputs ? "input" : "output",
                    n_in && !inputs ? n_in : n_out);
  if (g->n_nodes >= (size_t)INT32_MAX)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': too many nodes", g->name);
  domain = norm_domain(domain);
  ge_node n;
  memset(&n, 0, sizeof n);
  n.index = (int32_t)g->n_nodes;
  n.name = xstrdup(name);
  n.op_type = xstrdup(op_type);
  n.domain = xstrdup(domain);
  n.n_inputs = n_in;
  n.n_outputs = n_out;
  n.inputs = n_in ? calloc(n_in, sizeof(int32_t)) : NULL;
  n.outputs = n_out ? calloc(n_out, sizeof(int32_t)) : NULL;
  if (!n.name || !n.op_type || !n.domain || (n_in && !n.inputs) || (n_out && !n.outputs)) {
    node_clear(&n);
    return oom("graph nodes");
  }
  char desc[320];
  ge_node_desc(&n, desc, sizeof desc);
  ge_status st = GE_OK;
  for (size_t i = 0; i < n_in; i++) {
    if (!inputs[i]) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': %s: input %zu name is NULL", g->name,
                    desc, i);
      goto fail;
    }
    if (!inputs[i][0]) {
      n.inputs[i] = -1;
      continue;
    }
    int32_t id = ge_graph_find_value(g, inputs[i]);
    if (id < 0 && g->parent && find_in_ancestors(g, inputs[i])) {
      st = ge_graph_resolve_input(g, inputs[i], &id);
    } else if (id < 0) {
      st = add_value(g, inputs[i], &id);
    }
    if (st != GE_OK) goto fail;
    n.inputs[i] = id;
  }
  for (size_t i = 0; i < n_out; i++) {
    n.outputs[i] = -1;
    if (!outputs[i]) {
      st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': %s: output %zu name is NULL", g->name,
                    desc, i);
      goto fail;
    }
    if (!outputs[i][0]) continue;
    int32_t id;
    st = ge_graph_value(g, outputs[i], &id);
    if (st != GE_OK) goto fail;
    ge_value *v = &g->values[id];
    if (v->kind != GE_VALUE_INTERMEDIATE || v->producer != -1) {
      const char *why = v->kind == GE_VALUE_INPUT      ? "it is a graph input"
                        : v->kind == GE_VALUE_CONSTANT ? "it is an initializer"
                        : v->kind == GE_VALUE_OUTER    ? "it is a value of an enclosing graph"
                        : v->kind == GE_VALUE_VARIABLE ? "it is a variable"
                        : v->producer == -2            ? "the node lists it twice"
                                                       : "another node already produces it";
      if (v->producer >= 0 && (size_t)v->producer < g->n_nodes) {
        char other[320];
        st = ge_error(GE_ERR_INVALID_ARGUMENT,
                      "graph '%s': %s: output %zu '%s' is already produced by %s", g->name, desc,
                      i, outputs[i], ge_node_desc(&g->nodes[v->producer], other, sizeof other));
      } else {
        st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': %s: output %zu '%s' cannot be produced: %s",
                      g->name, desc, i, outputs[i], why);
      }
      goto fail;
    }
    v->producer = -2; /* claimed by this node (detects duplicates) */
    n.outputs[i] = id;
  }
  if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(ge_node))) {
    st = oom("graph nodes");
    goto fail;
  }
  n.opset = ge_graph_opset(g, domain);
  for (size_t i = 0; i < n_out; i++) {
    if (n.outputs[i] < 0) continue;
    g->values[n.outputs[i]].producer = (int32_t)g->n_nodes;
    g->values[n.outputs[i]].producer_slot = (int32_t)i;
  }
  g->nodes[g->n_nodes] = n;
  if (node_id) *node_id = (int32_t)g->n_nodes;
  g->n_nodes++;
  return GE_OK;
fail:
  for (size_t i = 0; i < n_out; i++)
    if (n.outputs && n.outputs[i] >= 0 && g->values[n.outputs[i]].producer == -2)
      g->values[n.outputs[i]].producer = -1;
  node_clear(&n);
  return st;
}

/* ------------------------------------------------------------------ opsets, symbols */

int64_t ge_graph_opset(const ge_graph *g, const char *domain) {
  domain = norm_domain(domain);
  for (const ge_graph *p = g; p; p = p->parent)
    for (size_t i = 0; i < p->n_opsets; i++)
      if (strcmp(norm_domain(p->opsets[i].domain), domain) == 0) return p->opsets[i].version;
  return 0;
}

ge_status ge_graph_set_opset_version(ge_graph *g, const char *domain, int64_t version) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_set_opset_version: NULL graph");
  domain = norm_domain(domain);
  for (size_t i = 0; i < g->n_opsets; i++) {
    if (strcmp(norm_domain(g->opsets[i].domain), domain) == 0) {
      g->opsets[i].version = version;
      return GE_OK;
    }
  }
  ge_opset *o = realloc(g->opsets, (g->n_opsets + 1) * sizeof *o);
  if (!o) return oom("graph opsets");
  g->opsets = o;
  o[g->n_opsets].domain = xstrdup(domain);
  if (!o[g->n_opsets].domain) return oom("graph opsets");
  o[g->n_opsets].version = version;
  g->n_opsets++;
  return GE_OK;
}

size_t ge_graph_sym(ge_graph *g, const char *name) {
  ge_graph *r = root_of(g);
  if (!r || !name) {
    ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_sym: NULL argument");
    return SIZE_MAX;
  }
  for (size_t i = 0; i < r->n_syms; i++)
    if (strcmp(r->syms[i], name) == 0) return i;
  char **s = realloc(r->syms, (r->n_syms + 1) * sizeof *s);
  if (!s) {
    oom("graph symbols");
    return SIZE_MAX;
  }
  r->syms = s;
  s[r->n_syms] = xstrdup(name);
  if (!s[r->n_syms]) {
    oom("graph symbols");
    return SIZE_MAX;
  }
  return r->n_syms++;
}

/* ------------------------------------------------------------------ clone */

static ge_status clone_strs(char **src, size_t n, char ***out) {
  *out = NULL;
  if (!src || n == 0) return GE_OK;
  char **d = calloc(n, sizeof *d);
  if (!d) return oom("graph clone");
  for (size_t i = 0; i < n; i++) {
    if (!src[i]) continue;
    d[i] = strdup(src[i]);
    if (!d[i]) {
      strs_free(d, n);
      return oom("graph clone");
    }
  }
  *out = d;
  return GE_OK;
}

static ge_status clone_opsets(const ge_opset *src, size_t n, ge_opset **out) {
  *out = NULL;
  if (!src || n == 0) return GE_OK;
  ge_opset *d = calloc(n, sizeof *d);
  if (!d) return oom("graph clone");
  for (size_t i = 0; i < n; i++) {
    d[i].version = src[i].version;
    d[i].domain = xstrdup(src[i].domain);
    if (!d[i].domain) {
      opsets_free(d, n);
      return oom("graph clone");
    }
  }
  *out = d;
  return GE_OK;
}

static ge_status clone_i32(const int32_t *src, size_t n, int32_t **out) {
  *out = NULL;
  if (!src || n == 0) return GE_OK;
  int32_t *d = malloc(n * sizeof *d);
  if (!d) return oom("graph clone");
  memcpy(d, src, n * sizeof *d);
  *out = d;
  return GE_OK;
}

static ge_status clone_attrs(const ge_attr_value *src, size_t n, ge_graph *parent,
                             ge_attr_value **out) {
  *out = NULL;
  if (!src || n == 0) return GE_OK;
  ge_attr_value *d = calloc(n, sizeof *d);
  if (!d) return oom("graph clone");
  for (size_t i = 0; i < n; i++) {
    ge_status st = ge_attr_value_copy(&d[i], &src[i], parent);
    if (st != GE_OK) {
      for (size_t j = 0; j < i; j++) ge_attr_value_clear(&d[j]);
      free(d);
      return st;
    }
  }
  *out = d;
  return GE_OK;
}

static char *dup_opt(const char *s, bool *fail) {
  if (!s) return NULL;
  char *c = strdup(s);
  if (!c) *fail = true;
  return c;
}

/* Re-express symbolic dims of a cloned graph's values in its (new) root's symbol table. */
static ge_status remap_syms(const ge_graph *src, ge_graph *dst) {
  const ge_graph *sr = croot_of(src);
  ge_graph *dr = root_of(dst);
  if (sr == dr || !sr || !dr) return GE_OK;
  for (size_t v = 0; v < dst->n_values; v++) {
    ge_shape *s = &dst->values[v].type.shape;
    for (int32_t d = 0; d < s->rank && d < GE_MAX_RANK; d++) {
      if (s->dims[d] > GE_DIM_UNKNOWN) continue;
      if (s->dims[d] == GE_DIM_UNKNOWN) continue;
      size_t id = GE_DIM_SYM_ID(s->dims[d]);
      if (id >= sr->n_syms || !sr->syms[id]) {
        s->dims[d] = GE_DIM_UNKNOWN;
        continue;
      }
      size_t nid = ge_graph_sym(dr, sr->syms[id]);
      if (nid == SIZE_MAX) return GE_ERR_OUT_OF_MEMORY;
      s->dims[d] = GE_DIM_SYM(nid);
    }
  }
  return GE_OK;
}

static ge_status clone_function(const ge_function *s, const ge_graph *src_owner, ge_graph *owner,
                                ge_function *d) {
  memset(d, 0, sizeof *d);
  bool fail = false;
  d->name = dup_opt(s->name, &fail);
  d->domain = dup_opt(s->domain, &fail);
  d->overload = dup_opt(s->overload, &fail);
  if (fail) return oom("graph clone");
  d->n_inputs = s->n_inputs;
  d->n_outputs = s->n_outputs;
  d->n_attr_names = s->n_attr_names;
  d->n_attr_defaults = s->n_attr_defaults;
  d->n_opsets = s->n_opsets;
  GE_CHECK(clone_strs(s->inputs, s->n_inputs, &d->inputs));
  GE_CHECK(clone_strs(s->outputs, s->n_outputs, &d->outputs));
  GE_CHECK(clone_strs(s->attr_names, s->n_attr_names, &d->attr_names));
  GE_CHECK(clone_opsets(s->opsets, s->n_opsets, &d->opsets));
  if (s->body) {
    ge_graph *bp = s->body->parent == src_owner ? owner : NULL;
    GE_CHECK(ge_graph_clone(s->body, bp, &d->body));
  }
  GE_CHECK(clone_attrs(s->attr_defaults, s->n_attr_defaults, d->body, &d->attr_defaults));
  return GE_OK;
}

ge_status ge_graph_clone(const ge_graph *g, ge_graph *parent, ge_graph **out) {
  if (!out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_clone: out is NULL");
  *out = NULL;
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_clone: NULL graph");
  ge_graph *c = ge_graph_new(g->name, parent);
  if (!c) return oom("graph clone");
  ge_status st = GE_OK;
  bool fail = false;
  /* scalars and metadata */
  c->ir_version = g->ir_version;
  c->model_version = g->model_version;
  c->optimized = g->optimized;
  c->precision_mode = g->precision_mode;
  c->opt_level = g->opt_level;
  c->producer_name = dup_opt(g->producer_name, &fail);
  c->producer_version = dup_opt(g->producer_version, &fail);
  c->model_domain = dup_opt(g->model_domain, &fail);
  c->doc = dup_opt(g->doc, &fail);
  if (fail) {
    st = oom("graph clone");
    goto fail;
  }
  c->n_meta = g->n_meta;
  if ((st = clone_strs(g->meta_keys, g->n_meta, &c->meta_keys)) != GE_OK) goto fail;
  if ((st = clone_strs(g->meta_values, g->n_meta, &c->meta_values)) != GE_OK) goto fail;
  c->n_opsets = g->n_opsets;
  if ((st = clone_opsets(g->opsets, g->n_opsets, &c->opsets)) != GE_OK) goto fail;
  /* symbols: a top-level clone takes the source root's table so ids stay valid */
  if (!parent) {
    const ge_graph *sr = croot_of(g);
    c->n_syms = sr->n_syms;
    if ((st = clone_strs(sr->syms, sr->n_syms, &c->syms)) != GE_OK) goto fail;
  }
  /* values */
  if (g->n_values) {
    c->values = calloc(g->n_values, sizeof *c->values);
    if (!c->values) {
      st = oom("graph clone");
      goto fail;
    }
    c->cap_values = g->n_values;
    for (size_t i = 0; i < g->n_values; i++) {
      const ge_value *s = &g->values[i];
      ge_value *d = &c->values[i];
      *d = *s;
      d->name = NULL;
      d->doc = NULL;
      d->constant = NULL;
      c->n_values = i + 1;
      d->name = xstrdup(s->name);
      d->doc = dup_opt(s->doc, &fail);
      if (!d->name || fail) {
        st = oom("graph clone");
        goto fail;
      }
      if (s->constant && (st = ge_tensor_share(s->constant, &d->constant)) != GE_OK) goto fail;
    }
  }
  if ((st = remap_syms(g, c)) != GE_OK) goto fail;
  if (!index_rebuild(c, c->n_values)) {
    st = oom("graph clone");
    goto fail;
  }
  c->n_inputs = g->n_inputs;
  if ((st = clone_i32(g->inputs, g->n_inputs, &c->inputs)) != GE_OK) goto fail;
  c->n_outputs = g->n_outputs;
  if ((st = clone_i32(g->outputs, g->n_outputs, &c->outputs)) != GE_OK) goto fail;
  /* nodes */
  if (g->n_nodes) {
    c->nodes = calloc(g->n_nodes, sizeof *c->nodes);
    if (!c->nodes) {
      st = oom("graph clone");
      goto fail;
    }
    c->cap_nodes = g->n_nodes;
    for (size_t i = 0; i < g->n_nodes; i++) {
      const ge_node *s = &g->nodes[i];
      ge_node *d = &c->nodes[i];
      c->n_nodes = i + 1;
      d->opset = s->opset;
      d->index = s->index;
      d->n_inputs = s->n_inputs;
      d->n_outputs = s->n_outputs;
      d->name = xstrdup(s->name);
      d->op_type = xstrdup(s->op_type);
      d->domain = xstrdup(s->domain);
      d->doc = dup_opt(s->doc, &fail);
      if (!d->name || !d->op_type || !d->domain || fail) {
        st = oom("graph clone");
        goto fail;
      }
      if ((st = clone_i32(s->inputs, s->n_inputs, &d->inputs)) != GE_OK) goto fail;
      if ((st = clone_i32(s->outputs, s->n_outputs, &d->outputs)) != GE_OK) goto fail;
      d->n_attrs = s->n_attrs;
      if ((st = clone_attrs(s->attrs, s->n_attrs, c, &d->attrs)) != GE_OK) {
        d->n_attrs = 0;
        goto fail;
      }
    }
  }
  /* functions */
  if (g->n_functions) {
    c->functions = calloc(g->n_functions, sizeof *c->functions);
    if (!c->functions) {
      st = oom("graph clone");
      goto fail;
    }
    for (size_t i = 0; i < g->n_functions; i++) {
      c->n_functions = i + 1;
      if ((st = clone_function(&g->functions[i], g, c, &c->functions[i])) != GE_OK) goto fail;
    }
  }
  *out = c;
  return GE_OK;
fail:
  ge_graph_free(c);
  return st;
}

/* ------------------------------------------------------------------ toposort */

static void heap_push(int32_t *h, size_t *n, int32_t v) {
  size_t i = (*n)++;
  h[i] = v;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h[p] <= h[i]) break;
    int32_t t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static int32_t heap_pop(int32_t *h, size_t *n) {
  int32_t top = h[0];
  h[0] = h[--(*n)];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && h[l] < h[m]) m = l;
    if (r < *n && h[r] < h[m]) m = r;
    if (m == i) break;
    int32_t t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
  return top;
}

/* Stable Kahn's algorithm: among ready nodes the one first in the current order goes first,
   so an already sorted graph is unchanged.  O((V + E) log V). */
/* The implicit inputs of node i: the values of g that its subgraphs read from enclosing
   scopes (each subgraph is sorted first, which resolves its own nested references).  OUTER
   values are created in g for names g reads from its own ancestors. */
static ge_status implicit_deps(ge_graph *g, size_t i, int32_t **deps, size_t *n_deps) {
  size_t cap = 0;
  *deps = NULL;
  *n_deps = 0;
  for (size_t a = 0; a < g->nodes[i].n_attrs; a++) {
    ge_attr_value *at = &g->nodes[i].attrs[a];
    size_t ng = at->kind == GE_ATTR_KIND_GRAPH ? (at->g ? 1 : 0) : at->kind == GE_ATTR_KIND_GRAPHS ? at->n : 0;
    for (size_t k = 0; k < ng; k++) {
      ge_graph *sub = at->kind == GE_ATTR_KIND_GRAPH ? at->g : at->graphs[k];
      if (!sub) continue;
      GE_CHECK(ge_graph_toposort(sub));
      for (size_t v = 0; v < sub->n_values; v++) {
        if (sub->values[v].kind != GE_VALUE_OUTER) continue;
        int32_t id = -1;
        char desc[320];
        ge_status st = ge_graph_resolve_input(g, sub->values[v].name, &id);
        if (st != GE_OK)
          return ge_error_prefix(st, "graph '%s': %s: ", g->name,
                                 ge_node_desc(&g->nodes[i], desc, sizeof desc));
        if (*n_deps == cap) {
          size_t c = cap ? cap * 2 : 4;
          int32_t *p = realloc(*deps, c * sizeof *p);
          if (!p) return oom("toposort");
          *deps = p;
          cap = c;
        }
        (*deps)[(*n_deps)++] = id;
      }
    }
  }
  return GE_OK;
}

static bool node_has_subgraphs(const ge_node *n) {
  for (size_t a = 0; a < n->n_attrs; a++)
    if (n->attrs[a].kind == GE_ATTR_KIND_GRAPH || n->attrs[a].kind == GE_ATTR_KIND_GRAPHS) return true;
  return false;
}

static ge_status toposort_flat(ge_graph *g, int32_t *const *imp, const size_t *n_imp);

ge_status ge_graph_toposort(ge_graph *g) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_toposort: NULL graph");
  size_t nn = g->n_nodes;
  if (nn == 0) return GE_OK;
  bool any = false;
  for (size_t i = 0; i < nn && !any; i++) any = node_has_subgraphs(&g->nodes[i]);
  if (!any) return toposort_flat(g, NULL, NULL);
  int32_t **imp = calloc(nn, sizeof *imp);
  size_t *n_imp = calloc(nn, sizeof *n_imp);
  ge_status st = imp && n_imp ? GE_OK : oom("toposort");
  for (size_t i = 0; i < nn && st == GE_OK; i++)
    if (node_has_subgraphs(&g->nodes[i])) st = implicit_deps(g, i, &imp[i], &n_imp[i]);
  if (st == GE_OK) st = toposort_flat(g, imp, n_imp);
  for (size_t i = 0; imp && i < nn; i++) free(imp[i]);
  free(imp);
  free(n_imp);
  return st;
}

/* imp/n_imp (may be NULL): extra dependencies of each node (by its current index). */
static ge_status toposort_flat(ge_graph *g, int32_t *const *imp, const size_t *n_imp) {
  size_t nn = g->n_nodes, nv = g->n_values;
  char desc[320];
  /* validate inputs and count edges */
  size_t n_edges = 0;
  for (size_t i = 0; i < nn; i++) {
    const ge_node *n = &g->nodes[i];
    for (size_t k = 0; k < n->n_inputs; k++) {
      int32_t id = n->inputs[k];
      if (id < 0) continue;
      if ((size_t)id >= nv)
        return ge_error(GE_ERR_INTERNAL, "graph '%s': %s: input %zu refers to value %d of %zu",
                        g->name, ge_node_desc(n, desc, sizeof desc), k, (int)id, nv);
      ge_value *v = &g->values[id];
      if (v->producer >= 0) {
        if ((size_t)v->producer >= nn)
          return ge_error(GE_ERR_INTERNAL, "graph '%s': value '%s' has a bad producer %d",
                          g->name, v->name, (int)v->producer);
        n_edges++;
        continue;
      }
      if (v->kind == GE_VALUE_INPUT || v->kind == GE_VALUE_CONSTANT || v->kind == GE_VALUE_OUTER ||
          v->kind == GE_VALUE_VARIABLE)
        continue;
      const ge_value *outer = g->parent ? find_in_ancestors(g, v->name) : NULL;
      if (outer) {
        v->kind = GE_VALUE_OUTER;
        v->type = outer->type;
        continue;
      }
      return ge_error(GE_ERR_INVALID_ARGUMENT,
                      "graph '%s': %s: input %zu '%s' is not produced by any node and is not a "
                      "graph input or initializer",
                      g->name, ge_node_desc(n, desc, sizeof desc), k, v->name);
    }
  }
  for (size_t i = 0; imp && i < nn; i++)
    for (size_t k = 0; k < n_imp[i]; k++)
      if (imp[i][k] >= 0 && (size_t)imp[i][k] < nv && g->values[imp[i][k]].producer >= 0) n_edges++;
  int32_t *indeg = calloc(nn, sizeof *indeg);
  size_t *off = calloc(nv + 1, sizeof *off); /* consumers of value v: cons[off[v]..off[v+1]) */
  int32_t *cons = malloc((n_edges ? n_edges : 1) * sizeof *cons);
  int32_t *heap = malloc(nn * sizeof *heap);
  int32_t *order = malloc(nn * sizeof *order);
  ge_node *sorted = malloc(nn * sizeof *sorted);
  ge_status st = GE_OK;
  if (!indeg || !off || !cons || !heap || !order || !sorted) {
    st = oom("toposort");
    goto done;
  }
  for (size_t i = 0; i < nn; i++) {
    const ge_node *n = &g->nodes[i];
    size_t ni = imp ? n_imp[i] : 0;
    for (size_t k = 0; k < n->n_inputs + ni; k++) {
      int32_t id = k < n->n_inputs ? n->inputs[k] : imp[i][k - n->n_inputs];
      if (id < 0 || g->values[id].producer < 0) continue;
      off[id + 1]++;
      indeg[i]++;
    }
  }
  for (size_t v = 0; v < nv; v++) off[v + 1] += off[v];
  {
    size_t *fill = calloc(nv + 1, sizeof *fill);
    if (!fill) {
      st = oom("toposort");
      goto done;
    }
    for (size_t i = 0; i < nn; i++) {
      const ge_node *n = &g->nodes[i];
      size_t ni = imp ? n_imp[i] : 0;
      for (size_t k = 0; k < n->n_inputs + ni; k++) {
        int32_t id = k < n->n_inputs ? n->inputs[k] : imp[i][k - n->n_inputs];
        if (id < 0 || g->values[id].producer < 0) continue;
        cons[off[id] + fill[id]++] = (int32_t)i;
      }
    }
    free(fill);
  }
  size_t hn = 0, done_n = 0;
  for (size_t i = 0; i < nn; i++)
    if (indeg[i] == 0) heap_push(heap, &hn, (int32_t)i);
  while (hn) {
    int32_t i = heap_pop(heap, &hn);
    order[done_n++] = i;
    const ge_node *n = &g->nodes[i];
    for (size_t k = 0; k < n->n_outputs; k++) {
      int32_t id = n->outputs[k];
      if (id < 0) continue;
      for (size_t e = off[id]; e < off[id + 1]; e++)
        if (--indeg[cons[e]] == 0) heap_push(heap, &hn, cons[e]);
    }
  }
  if (done_n < nn) {
    /* Walk back from an unsorted node along unsorted producers until a node repeats: that
       node is on a cycle.  indeg > 0 marks unsorted nodes; reuse `heap` as visit marks. */
    for (size_t i = 0; i < nn; i++) heap[i] = 0;
    size_t cur = 0;
    while (indeg[cur] == 0) cur++;
    while (!heap[cur]) {
      heap[cur] = 1;
      const ge_node *n = &g->nodes[cur];
      size_t next = cur;
      for (size_t k = 0; k < n->n_inputs; k++) {
        int32_t id = n->inputs[k];
        if (id < 0) continue;
        int32_t p = g->values[id].producer;
        if (p >= 0 && indeg[p] > 0) {
          next = (size_t)p;
          break;
        }
      }
      if (next == cur) break; /* self loop */
      cur = next;
    }
    st = ge_error(GE_ERR_INVALID_ARGUMENT, "graph '%s': the graph has a cycle through %s",
                  g->name, ge_node_desc(&g->nodes[cur], desc, sizeof desc));
    goto done;
  }
  /* permute: order[new] = old */
  for (size_t k = 0; k < nn; k++) {
    sorted[k] = g->nodes[order[k]];
    sorted[k].index = (int32_t)k;
  }
  memcpy(g->nodes, sorted, nn * sizeof *sorted);
  for (size_t k = 0; k < nn; k++) {
    const ge_node *n = &g->nodes[k];
    for (size_t o = 0; o < n->n_outputs; o++)
      if (n->outputs[o] >= 0) g->values[n->outputs[o]].producer = (int32_t)k;
  }
done:
  free(indeg);
  free(off);
  free(cons);
  free(heap);
  free(order);
  free(sorted);
  return st;
}

ge_status ge_graph_use_counts(const ge_graph *g, int32_t **counts_out) {
  if (!counts_out) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_use_counts: out is NULL");
  *counts_out = NULL;
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_use_counts: NULL graph");
  int32_t *c = calloc(g->n_values ? g->n_values : 1, sizeof *c);
  if (!c) return oom("use counts");
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    for (size_t k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0 && (size_t)n->inputs[k] < g->n_values) c[n->inputs[k]]++;
  }
  for (size_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] >= 0 && (size_t)g->outputs[i] < g->n_values) c[g->outputs[i]]++;
  *counts_out = c;
  return GE_OK;
}

/* ------------------------------------------------------------------ node attributes */

const ge_attr_value *ge_node_attr(const ge_node *n, const char *name) {
  if (!n || !name) return NULL;
  for (size_t i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

int64_t ge_node_attr_int(const ge_node *n, const char *name, int64_t dflt) {
  const ge_attr_value *a = ge_node_attr(n, name);
  return a && a->kind == GE_ATTR_KIND_INT ? a->i : dflt;
}

float ge_node_attr_float(const ge_node *n, const char *name, float dflt) {
  const ge_attr_value *a = ge_node_attr(n, name);
  return a && a->kind == GE_ATTR_KIND_FLOAT ? a->f : dflt;
}

const char *ge_node_attr_string(const ge_node *n, const char *name, const char *dflt) {
  const ge_attr_value *a = ge_node_attr(n, name);
  return a && a->kind == GE_ATTR_KIND_STRING && a->s ? a->s : dflt;
}

bool ge_node_attr_ints(const ge_node *n, const char *name, const int64_t **data, size_t *count) {
  const ge_attr_value *a = ge_node_attr(n, name);
  bool ok = a && a->kind == GE_ATTR_KIND_INTS;
  if (data) *data = ok ? a->ints : NULL;
  if (count) *count = ok ? a->n : 0;
  return ok;
}

bool ge_node_attr_floats(const ge_node *n, const char *name, const float **data, size_t *count) {
  const ge_attr_value *a = ge_node_attr(n, name);
  bool ok = a && a->kind == GE_ATTR_KIND_FLOATS;
  if (data) *data = ok ? a->floats : NULL;
  if (count) *count = ok ? a->n : 0;
  return ok;
}

ge_status ge_node_add_attr(ge_node *n, ge_attr_value *a) {
  if (!n || !a) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_node_add_attr: NULL argument");
  char desc[320];
  if (!a->name || !a->name[0])
    return ge_error(GE_ERR_INVALID_ARGUMENT, "%s: attribute without a name",
                    ge_node_desc(n, desc, sizeof desc));
  if (ge_node_attr(n, a->name))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "%s: duplicate attribute '%s'",
                    ge_node_desc(n, desc, sizeof desc), a->name);
  ge_attr_value *p = realloc(n->attrs, (n->n_attrs + 1) * sizeof *p);
  if (!p) return oom("node attributes");
  n->attrs = p;
  p[n->n_attrs++] = *a;
  memset(a, 0, sizeof *a);
  return GE_OK;
}
