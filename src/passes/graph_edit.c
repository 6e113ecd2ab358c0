/* In-place graph editing for the passes: use counts, reader lists, node removal.  Values that
 * subgraphs (If/Loop/Scan bodies) read by name count as graph outputs, so no pass renames or
 * removes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"

static ge_status oom(const char *what) {
  return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory editing the graph (%s)", what);
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) {
    if (nc > SIZE_MAX / 2 / elem) return false;
    nc *= 2;
  }
  void *p = realloc(*arr, nc * elem);
  if (!p) return false;
  memset((char *)p + *cap * elem, 0, (nc - *cap) * elem);
  *arr = p;
  *cap = nc;
  return true;
}

/* Makes the per-value arrays cover g->n_values. */
static bool ensure_values(ge_edit *e) {
  size_t need = e->g->n_values + 1, old = e->cap_values;
  if (need <= old) return true;
  size_t c1 = old, c2 = old, c3 = old, c4 = old;
  if (!grow((void **)&e->uses, &c1, need, sizeof *e->uses)) return false;
  if (!grow((void **)&e->is_out, &c2, need, sizeof *e->is_out)) return false;
  if (!grow((void **)&e->is_in, &c3, need, sizeof *e->is_in)) return false;
  if (!grow((void **)&e->head, &c4, need, sizeof *e->head)) return false;
  for (size_t v = old; v < c4; v++) e->head[v] = -1;
  e->cap_values = c1 < c2 ? c1 : c2;
  if (c3 < e->cap_values) e->cap_values = c3;
  if (c4 < e->cap_values) e->cap_values = c4;
  return true;
}

static bool add_reader(ge_edit *e, int32_t v, int32_t node, size_t slot) {
  if (!grow((void **)&e->rd, &e->cap_rd, e->n_rd + 1, sizeof *e->rd)) return false;
  e->rd[e->n_rd] = (struct ge_edit_reader){node, (int32_t)slot, e->head[v]};
  e->head[v] = (int32_t)e->n_rd++;
  return true;
}

/* Values of g that a subgraph (at any depth) reads by name are pinned like graph outputs:
   they keep their name and their producer. */
static void pin_outer(ge_edit *e, const ge_graph *sub, int depth) {
  if (!sub || depth > 64) return;
  for (size_t v = 0; v < sub->n_values; v++) {
    /* OUTER, or a name nothing in the subgraph defines (not yet resolved) */
    const ge_value *sv = &sub->values[v];
    if (sv->kind != GE_VALUE_OUTER && !(sv->kind == GE_VALUE_INTERMEDIATE && sv->producer < 0)) continue;
    int32_t id = ge_graph_find_value(e->g, sub->values[v].name);
    if (id < 0 || e->is_out[id]) continue;
    e->is_out[id] = true;
    e->uses[id]++;
  }
  for (size_t ni = 0; ni < sub->n_nodes; ni++)
    for (size_t a = 0; a < sub->nodes[ni].n_attrs; a++) {
      const ge_attr_value *at = &sub->nodes[ni].attrs[a];
      if (at->kind == GE_ATTR_KIND_GRAPH) pin_outer(e, at->g, depth + 1);
      if (at->kind == GE_ATTR_KIND_GRAPHS)
        for (size_t k = 0; k < at->n; k++) pin_outer(e, at->graphs[k], depth + 1);
    }
}

ge_status ge_edit_begin(ge_graph *g, ge_edit *e) {
  memset(e, 0, sizeof *e);
  e->g = g;
  if (!ensure_values(e)) goto fail;
  size_t dn = 0;
  if (!grow((void **)&e->dead, &dn, g->n_nodes + 1, sizeof *e->dead)) goto fail;
  e->cap_nodes = dn;
  for (size_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] >= 0) {
      e->is_out[g->outputs[i]] = true;
      e->uses[g->outputs[i]]++;
    }
  for (size_t i = 0; i < g->n_inputs; i++)
    if (g->inputs[i] >= 0) e->is_in[g->inputs[i]] = true;
  for (size_t ni = 0; ni < g->n_nodes; ni++)
    for (size_t a = 0; a < g->nodes[ni].n_attrs; a++) {
      const ge_attr_value *at = &g->nodes[ni].attrs[a];
      if (at->kind == GE_ATTR_KIND_GRAPH) pin_outer(e, at->g, 0);
      if (at->kind == GE_ATTR_KIND_GRAPHS)
        for (size_t k = 0; k < at->n; k++) pin_outer(e, at->graphs[k], 0);
    }
  for (size_t ni = 0; ni < g->n_nodes; ni++) {
    const ge_node *n = &g->nodes[ni];
    for (size_t k = 0; k < n->n_inputs; k++) {
      int32_t v = n->inputs[k];
      if (v < 0 || (size_t)v >= g->n_values) continue;
      e->uses[v]++;
      if (!add_reader(e, v, (int32_t)ni, k)) goto fail;
    }
  }
  return GE_OK;
fail:
  ge_edit_abort(e);
  return oom("edit session");
}

void ge_edit_abort(ge_edit *e) {
  free(e->uses);
  free(e->is_out);
  free(e->is_in);
  free(e->head);
  free(e->rd);
  free(e->dead);
  memset(e, 0, sizeof *e);
}

static void node_free(ge_node *n) {
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

ge_status ge_edit_commit(ge_edit *e) {
  ge_graph *g = e->g;
  if (e->n_dead) {
    size_t w = 0;
    for (size_t ni = 0; ni < g->n_nodes; ni++) {
      if (e->dead[ni]) {
        for (size_t o = 0; o < g->nodes[ni].n_outputs; o++) {
          int32_t v = g->nodes[ni].outputs[o];
          if (v >= 0 && g->values[v].producer == (int32_t)ni) {
            g->values[v].producer = -1;
            g->values[v].producer_slot = -1;
          }
        }
        node_free(&g->nodes[ni]);
        continue;
      }
      if (w != ni) g->nodes[w] = g->nodes[ni];
      g->nodes[w].index = (int32_t)w;
      w++;
    }
    g->n_nodes = w;
    for (size_t ni = 0; ni < g->n_nodes; ni++) {
      const ge_node *n = &g->nodes[ni];
      for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) {
          g->values[n->outputs[o]].producer = (int32_t)ni;
          g->values[n->outputs[o]].producer_slot = (int32_t)o;
        }
    }
  }
  ge_status st = GE_OK;
  if (e->n_dead || e->n_added || e->changed) st = ge_graph_toposort(g);
  ge_edit_abort(e);
  return st;
}

void ge_edit_kill(ge_edit *e, int32_t ni) {
  if (ni < 0 || (size_t)ni >= e->g->n_nodes || e->dead[ni]) return;
  e->dead[ni] = true;
  e->n_dead++;
  const ge_node *n = &e->g->nodes[ni];
  for (size_t k = 0; k < n->n_inputs; k++)
    if (n->inputs[k] >= 0) e->uses[n->inputs[k]]--;
}

void ge_edit_set_input(ge_edit *e, int32_t ni, size_t k, int32_t v) {
  ge_node *n = &e->g->nodes[ni];
  int32_t old = n->inputs[k];
  if (old == v) return;
  if (!e->dead[ni]) {
    if (old >= 0) e->uses[old]--;
    if (v >= 0) e->uses[v]++;
  }
  n->inputs[k] = v;
  if (v >= 0 && !add_reader(e, v, ni, k)) {
    /* Reader list out of memory: the slot is still correct; single_reader falls back to a
       scan, replace_reads scans (see below). */
  }
  e->changed = true;
}

void ge_edit_replace_reads(ge_edit *e, int32_t from, int32_t to) {
  if (from == to) return;
  ge_graph *g = e->g;
  /* Collect first: set_input pushes onto the lists. */
  for (int32_t r = e->head[from]; r >= 0;) {
    struct ge_edit_reader x = e->rd[r];
    r = x.next;
    if ((size_t)x.node < g->n_nodes && !e->dead[x.node] &&
        (size_t)x.slot < g->nodes[x.node].n_inputs && g->nodes[x.node].inputs[x.slot] == from)
      ge_edit_set_input(e, x.node, (size_t)x.slot, to);
  }
  /* Paranoia for the out-of-memory case of add_reader: a full scan only when uses remain. */
  int32_t left = e->uses[from] - (e->is_out[from] ? 1 : 0);
  for (size_t ni = 0; left > 0 && ni < g->n_nodes; ni++) {
    if (e->dead[ni]) continue;
    for (size_t k = 0; k < g->nodes[ni].n_inputs; k++)
      if (g->nodes[ni].inputs[k] == from) ge_edit_set_input(e, (int32_t)ni, k, to);
  }
}

bool ge_edit_can_forward(const ge_edit *e, int32_t from, int32_t to) {
  if (from == to) return false;
  if (!e->is_out[from]) return true;
  const ge_value *tv = &e->g->values[to];
  if (e->is_out[to] || e->is_in[to] || tv->kind != GE_VALUE_INTERMEDIATE) return false;
  return ge_edit_producer(e, to) >= 0;
}

void ge_edit_forward(ge_edit *e, int32_t from, int32_t to) {
  ge_graph *g = e->g;
  ge_edit_kill(e, ge_edit_producer(e, from));
  if (!e->is_out[from]) {
    ge_edit_replace_reads(e, from, to);
    return;
  }
  /* `from` keeps its name: the producer of `to` writes `from`. */
  int32_t p = ge_edit_producer(e, to);
  int32_t slot = g->values[to].producer_slot;
  ge_edit_replace_reads(e, from, to); /* readers of from (other than outputs) -> to ... */
  ge_edit_replace_reads(e, to, from); /* ... and all readers of to -> from */
  int32_t old_p = g->values[from].producer;
  if (old_p >= 0 && (size_t)old_p < g->n_nodes)
    for (size_t o = 0; o < g->nodes[old_p].n_outputs; o++)
      if (g->nodes[old_p].outputs[o] == from) g->nodes[old_p].outputs[o] = -1;
  g->nodes[p].outputs[slot] = from;
  g->values[from].producer = p;
  g->values[from].producer_slot = slot;
  g->values[from].type = g->values[to].type;
  g->values[to].producer = -1;
  g->values[to].producer_slot = -1;
  e->changed = true;
}

static ge_status unique_name(const ge_graph *g, const char *base, char **out) {
  size_t len = strlen(base) + 32;
  char *buf = malloc(len);
  if (!buf) return oom("value name");
  snprintf(buf, len, "%s", base);
  for (unsigned k = 1; ge_graph_find_value(g, buf) >= 0; k++) snprintf(buf, len, "%s_%u", base, k);
  *out = buf;
  return GE_OK;
}

ge_status ge_edit_new_value(ge_edit *e, const char *base, int32_t *id) {
  char *nm = NULL;
  GE_CHECK(unique_name(e->g, base && base[0] ? base : "ge_v", &nm));
  ge_status st = ge_graph_value(e->g, nm, id);
  free(nm);
  GE_CHECK(st);
  if (!ensure_values(e)) return oom("value arrays");
  return GE_OK;
}

ge_status ge_edit_add_constant(ge_edit *e, const char *base, ge_tensor *t, int32_t *id) {
  ge_status st = ge_edit_new_value(e, base, id);
  if (st != GE_OK) {
    ge_tensor_free(t);
    return st;
  }
  ge_value_set_tensor(&e->g->values[*id], GE_VALUE_CONSTANT, t);
  return GE_OK;
}

ge_status ge_edit_add_node(ge_edit *e, const char *op_type, const char *domain, const char *name,
                           const int32_t *in, size_t n_in, const int32_t *out, size_t n_out,
                           int32_t *node_id) {
  ge_graph *g = e->g;
  if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
  if (g->n_nodes >= (size_t)INT32_MAX - 1) return ge_error(GE_ERR_INVALID_ARGUMENT, "too many nodes");
  for (size_t o = 0; o < n_out; o++) {
    int32_t p = out[o] >= 0 ? g->values[out[o]].producer : -1;
    if (p >= 0 && !e->dead[p])
      return ge_error(GE_ERR_INTERNAL, "pass: value '%s' is already produced by a live node",
                      g->values[out[o]].name);
  }
  if (!strcmp(domain, "ai.ge") && ge_graph_opset(g, "ai.ge") == 0)
    GE_CHECK(ge_graph_set_opset_version(g, "ai.ge", 1));
  char *nm = NULL;
  {
    char base[256];
    snprintf(base, sizeof base, "%s", name && name[0] ? name : op_type);
    /* node names need not be unique in ONNX; keep them readable */
    nm = strdup(base);
  }
  ge_node n;
  memset(&n, 0, sizeof n);
  n.name = nm;
  n.op_type = strdup(op_type);
  n.domain = strdup(domain);
  n.inputs = calloc(n_in + 1, sizeof *n.inputs);
  n.outputs = calloc(n_out + 1, sizeof *n.outputs);
  n.n_inputs = n_in;
  n.n_outputs = n_out;
  n.opset = ge_graph_opset(g, domain);
  if (!n.name || !n.op_type || !n.domain || !n.inputs || !n.outputs) {
    node_free(&n);
    return oom("node");
  }
  if (n_in) memcpy(n.inputs, in, n_in * sizeof *in);
  if (n_out) memcpy(n.outputs, out, n_out * sizeof *out);
  size_t cap = g->cap_nodes;
  if (!grow((void **)&g->nodes, &cap, g->n_nodes + 1, sizeof *g->nodes)) {
    node_free(&n);
    return oom("nodes");
  }
  g->cap_nodes = cap;
  size_t dcap = e->cap_nodes;
  if (!grow((void **)&e->dead, &dcap, g->n_nodes + 2, sizeof *e->dead)) {
    node_free(&n);
    return oom("nodes");
  }
  e->cap_nodes = dcap;
  int32_t ni = (int32_t)g->n_nodes;
  n.index = ni;
  g->nodes[ni] = n;
  g->n_nodes++;
  e->dead[ni] = false;
  for (size_t k = 0; k < n_in; k++)
    if (in[k] >= 0) {
      e->uses[in[k]]++;
      add_reader(e, in[k], ni, k);
    }
  for (size_t o = 0; o < n_out; o++)
    if (out[o] >= 0) {
      /* a dead producer gives the value up */
      int32_t p = g->values[out[o]].producer;
      if (p >= 0 && (size_t)p < g->n_nodes)
        for (size_t q = 0; q < g->nodes[p].n_outputs; q++)
          if (g->nodes[p].outputs[q] == out[o] && p != ni) g->nodes[p].outputs[q] = -1;
      g->values[out[o]].producer = ni;
      g->values[out[o]].producer_slot = (int32_t)o;
    }
  e->n_added++;
  if (node_id) *node_id = ni;
  return GE_OK;
}

static ge_status put_attr(ge_node *n, ge_attr_value *a) {
  ge_edit_del_attr(n, a->name);
  ge_status st = ge_node_add_attr(n, a);
  if (st != GE_OK) ge_attr_value_clear(a);
  return st;
}

ge_status ge_edit_copy_attr(ge_node *dst, const ge_node *src, const char *name) {
  const ge_attr_value *a = ge_node_attr(src, name);
  if (!a) return GE_OK;
  ge_attr_value c;
  memset(&c, 0, sizeof c);
  GE_CHECK(ge_attr_value_copy(&c, a, NULL));
  return put_attr(dst, &c);
}

ge_status ge_edit_copy_attrs(ge_node *dst, const ge_node *src) {
  for (size_t i = 0; i < src->n_attrs; i++) GE_CHECK(ge_edit_copy_attr(dst, src, src->attrs[i].name));
  return GE_OK;
}

static ge_status from_public(ge_node *n, const ge_attr *pa) {
  ge_attr_value a;
  memset(&a, 0, sizeof a);
  GE_CHECK(ge_attr_value_from_public(&a, pa, NULL));
  return put_attr(n, &a);
}

ge_status ge_edit_set_attr_string(ge_node *n, const char *name, const char *s) {
  ge_attr a = GE_ATTR_STRING(name, s);
  return from_public(n, &a);
}

ge_status ge_edit_set_attr_float(ge_node *n, const char *name, float f) {
  ge_attr a = GE_ATTR_FLOAT(name, f);
  return from_public(n, &a);
}

ge_status ge_edit_set_attr_int(ge_node *n, const char *name, int64_t v) {
  ge_attr a = GE_ATTR_INT(name, v);
  return from_public(n, &a);
}

ge_status ge_edit_set_attr_floats(ge_node *n, const char *name, const float *f, size_t n_f) {
  ge_attr a = GE_ATTR_FLOATS(name, f, n_f);
  return from_public(n, &a);
}

ge_status ge_edit_set_attr_ints(ge_node *n, const char *name, const int64_t *v, size_t n_v) {
  ge_attr a = GE_ATTR_INTS(name, v, n_v);
  return from_public(n, &a);
}

void ge_edit_del_attr(ge_node *n, const char *name) {
  for (size_t i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].name && !strcmp(n->attrs[i].name, name)) {
      ge_attr_value_clear(&n->attrs[i]);
      memmove(&n->attrs[i], &n->attrs[i + 1], (n->n_attrs - i - 1) * sizeof *n->attrs);
      n->n_attrs--;
      return;
    }
}

int32_t ge_edit_producer(const ge_edit *e, int32_t v) {
  if (v < 0 || (size_t)v >= e->g->n_values) return -1;
  int32_t p = e->g->values[v].producer;
  if (p < 0 || (size_t)p >= e->g->n_nodes || e->dead[p]) return -1;
  return p;
}

const ge_tensor *ge_edit_const(const ge_edit *e, int32_t v) {
  if (v < 0 || (size_t)v >= e->g->n_values) return NULL;
  const ge_value *val = &e->g->values[v];
  if (val->kind != GE_VALUE_CONSTANT || !val->constant || e->is_in[v]) return NULL;
  return val->constant;
}

bool ge_edit_single_use(const ge_edit *e, int32_t v) {
  return v >= 0 && (size_t)v < e->g->n_values && !e->is_out[v] && e->uses[v] == 1;
}

int32_t ge_edit_single_reader(const ge_edit *e, int32_t v, size_t *slot) {
  if (!ge_edit_single_use(e, v)) return -1;
  const ge_graph *g = e->g;
  for (int32_t r = e->head[v]; r >= 0; r = e->rd[r].next) {
    struct ge_edit_reader x = e->rd[r];
    if ((size_t)x.node < g->n_nodes && !e->dead[x.node] &&
        (size_t)x.slot < g->nodes[x.node].n_inputs && g->nodes[x.node].inputs[x.slot] == v) {
      if (slot) *slot = (size_t)x.slot;
      return x.node;
    }
  }
  for (size_t ni = 0; ni < g->n_nodes; ni++) {
    if (e->dead[ni]) continue;
    for (size_t k = 0; k < g->nodes[ni].n_inputs; k++)
      if (g->nodes[ni].inputs[k] == v) {
        if (slot) *slot = k;
        return (int32_t)ni;
      }
  }
  return -1;
}

bool ge_edit_is_op(const ge_edit *e, int32_t ni, const char *op) {
  if (ni < 0 || (size_t)ni >= e->g->n_nodes || e->dead[ni]) return false;
  const ge_node *n = &e->g->nodes[ni];
  return (!n->domain[0] || !strcmp(n->domain, "ai.onnx")) && !strcmp(n->op_type, op);
}

bool ge_edit_const_scalar(const ge_edit *e, int32_t v, double *out) {
  const ge_tensor *t = ge_edit_const(e, v);
  if (!t || t->numel != 1 || t->dtype == GE_STRING) return false;
  *out = ge_tensor_get_f64(t, 0);
  return true;
}

const ge_type *ge_edit_type(const ge_edit *e, int32_t v) { return &e->g->values[v].type; }

size_t ge_edit_readers(const ge_edit *e, int32_t v, int32_t *nodes, size_t *slots, size_t cap) {
  const ge_graph *g = e->g;
  size_t n = 0;
  int32_t want = e->uses[v] - (e->is_out[v] ? 1 : 0);
  for (int32_t r = e->head[v]; r >= 0 && (int32_t)n < want; r = e->rd[r].next) {
    struct ge_edit_reader x = e->rd[r];
    if ((size_t)x.node >= g->n_nodes || e->dead[x.node] || (size_t)x.slot >= g->nodes[x.node].n_inputs ||
        g->nodes[x.node].inputs[x.slot] != v)
      continue;
    bool dup = false; /* a stale duplicate entry of the same (node, slot) */
    for (size_t i = 0; i < n && i < cap; i++)
      if (nodes[i] == x.node && slots[i] == (size_t)x.slot) dup = true;
    if (dup) continue;
    if (n < cap) {
      nodes[n] = x.node;
      slots[n] = (size_t)x.slot;
    }
    n++;
  }
  return n;
}
