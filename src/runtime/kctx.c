/* Run-time and prepare-time helpers of the kernel interface. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernel.h"
#include "runtime/run_fx.h"

static ge_status node_fail(const ge_node *n, ge_status st, const char *fmt, va_list ap) {
  char msg[768], where[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!n) return ge_error(st, "%s", msg);
  return ge_error(st, "%s: %s", ge_node_desc(n, where, sizeof where), msg);
}

ge_status ge_kctx_fail(const ge_kctx *c, ge_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ge_status r = node_fail(c ? c->node : NULL, st, fmt, ap);
  va_end(ap);
  return r;
}

ge_status ge_prepare_fail(const ge_prepare_ctx *p, ge_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ge_status r = node_fail(p ? p->node : NULL, st, fmt, ap);
  va_end(ap);
  return r;
}

ge_status ge_prepare_check_dtype(const ge_prepare_ctx *p, size_t i, const ge_dtype *allowed) {
  if (i >= p->n_in || !p->in[i].present || !p->in[i].type) return GE_OK;
  ge_dtype dt = p->in[i].type->dtype;
  if (dt == GE_DTYPE_COUNT) return GE_OK;
  for (const ge_dtype *a = allowed; *a != GE_DTYPE_COUNT; a++)
    if (*a == dt) return GE_OK;
  return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for input %zu of dtype %s", i,
                         ge_dtype_name(dt));
}

/* The output slot belongs to the executor, which releases its storage after the last
   consumer ran (ge_tensor_release_storage). */
ge_status ge_kctx_alloc_output(ge_kctx *c, size_t i, ge_dtype dt, const int64_t *dims,
                               int32_t rank) {
  if (i >= c->n_out || !c->out[i]) return ge_kctx_fail(c, GE_ERR_INTERNAL, "no output slot %zu", i);
  ge_tensor_release_storage(c->out[i]);
  return ge_tensor_init_alloc(c->out[i], dt, dims, rank);
}

/* ------------------------------------------------------------------ run side effects */

void ge_run_fx_clear(ge_run_fx *fx) {
  for (size_t i = 0; i < fx->n; i++) {
    free(fx->e[i].key);
    free(fx->e[i].name);
    free(fx->e[i].sub);
    ge_tensor_free(fx->e[i].t);
  }
  free(fx->e);
  memset(fx, 0, sizeof *fx);
}

static char *dup_or_null(const char *s, bool *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = true;
  return d;
}

ge_status ge_kctx_record(ge_kctx *c, ge_effect_kind kind, const char *key, const char *name,
                         const char *sub, const ge_tensor *t) {
  ge_run_fx *fx = c ? c->exec : NULL;
  if (!fx) return GE_OK; /* no run context: nothing to record */
  if (fx->n == fx->cap) {
    size_t cap = fx->cap ? fx->cap * 2 : 8;
    ge_effect *p = cap > SIZE_MAX / sizeof *p ? NULL : realloc(fx->e, cap * sizeof *p);
    if (!p) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory recording '%s'", name);
    fx->e = p;
    fx->cap = cap;
  }
  ge_effect e = {.kind = kind};
  bool oom = false;
  e.key = dup_or_null(key, &oom);
  e.name = dup_or_null(name, &oom);
  e.sub = dup_or_null(sub, &oom);
  ge_status st = GE_OK;
  if (!oom && t && kind != GE_EFFECT_SAVE) st = ge_tensor_clone(t, &e.t);
  if (oom || st != GE_OK) {
    free(e.key);
    free(e.name);
    free(e.sub);
    return ge_kctx_fail(c, oom ? GE_ERR_OUT_OF_MEMORY : st, "recording '%s': %s", name,
                        oom ? "out of memory" : ge_last_error());
  }
  if (kind == GE_EFFECT_ASSIGN || kind == GE_EFFECT_ASSIGN_ADD || kind == GE_EFFECT_ASSIGN_SUB)
    fx->has_assign = true;
  fx->e[fx->n++] = e;
  return GE_OK;
}

/* value (input `index` of p->node) is a constant of p->graph read by no other node, no
   subgraph and no graph output. */
static bool sole_reader(const ge_prepare_ctx *p, int index, const ge_tensor *value) {
  const ge_graph *g = p->graph;
  const ge_node *me = p->node;
  if (!g || !me || index < 0 || (size_t)index >= me->n_inputs) return false;
  int32_t vid = me->inputs[index];
  if (vid < 0 || (size_t)vid >= g->n_values || g->values[vid].constant != value) return false;
  for (size_t k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] == vid) return false;
  for (size_t n = 0; n < g->n_nodes; n++) {
    const ge_node *nd = &g->nodes[n];
    for (size_t a = 0; a < nd->n_attrs; a++)
      if (nd->attrs[a].kind == GE_ATTR_KIND_GRAPH || nd->attrs[a].kind == GE_ATTR_KIND_GRAPHS)
        return false; /* a subgraph may read it by name */
    for (size_t j = 0; j < nd->n_inputs; j++)
      if (nd->inputs[j] == vid && (nd != me || j != (size_t)index)) return false;
  }
  return true;
}

void ge_prepare_drop_packed(const ge_prepare_ctx *p, uint32_t mask) {
  for (size_t i = 0; mask && i < p->n_in && i < 32; i++) {
    if (!(mask >> i & 1u) || !p->in[i].present) continue;
    const ge_tensor *v = p->in[i].value;
    if (v && ge_tensor_has_backing(v) && sole_reader(p, (int)i, v)) ge_tensor_evict_packed(v);
  }
}
