/* Reference kernels of the ai.ge side-effect ops (schemas in src/ops/ge_ops.c).  They record
 * what the run's session commits (variable writes) and delivers (callback data) after the
 * run; their outputs, when present, are plain copies. */
#include <stdlib.h>
#include <string.h>

#include "backend/effects.h"

typedef struct ge_fx_state {
  const char *key;      /* Summary: "Summary"; Callback: its key */
  const char *name;     /* Summary: tag; Assign*: the variable */
  const char *type;     /* Summary type */
  const char **names;   /* Save / Callback: input value names (point into the plan's graph) */
  size_t n;
} ge_fx_state;

static void fx_release(void *state) {
  ge_fx_state *s = state;
  if (!s) return;
  free(s->names);
  free(s);
}

static ge_status fx_prepare(const ge_prepare_ctx *p, void **state) {
  ge_fx_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  const ge_node *n = p->node;
  const char *op = n->op_type;
  s->names = calloc(p->n_in + 1, sizeof *s->names);
  if (!s->names) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  s->n = p->n_in;
  for (size_t i = 0; i < p->n_in; i++) {
    int32_t v = n->inputs[i];
    s->names[i] = v >= 0 && (size_t)v < p->graph->n_values ? p->graph->values[v].name : "";
  }
  if (!strcmp(op, "Summary")) {
    s->key = "Summary";
    s->name = ge_node_attr_string(n, "tag", n->name && n->name[0] ? n->name : s->names[0]);
    s->type = ge_node_attr_string(n, "type", "tensor");
  } else if (!strcmp(op, "Callback")) {
    s->key = ge_node_attr_string(n, "key", "");
  } else if (!strcmp(op, "Save")) {
    s->key = "Save";
  } else {
    s->name = s->names[0];
  }
  *state = s;
  return GE_OK;
}

static ge_status copy_out(ge_kctx *c, const ge_tensor *src) {
  if (c->n_out < 1 || !c->out[0]) return GE_OK;
  ge_tensor *o = c->out[0];
  if (o->nbytes != src->nbytes)
    return ge_kctx_fail(c, GE_ERR_INTERNAL, "output 0 has %zu bytes, input has %zu", o->nbytes,
                        src->nbytes);
  if (o->nbytes) memcpy(o->data, src->data, o->nbytes);
  return GE_OK;
}

static ge_status summary_run(const void *state, ge_kctx *c) {
  const ge_fx_state *s = state;
  const ge_tensor *x = c->in[0];
  if (!strcmp(s->type, "scalar") && x->numel != 1)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "a scalar summary needs one element, input 0 has %zu",
                        x->numel);
  GE_CHECK(ge_kctx_record(c, GE_EFFECT_SUMMARY, s->key, s->name, s->type, x));
  return copy_out(c, x);
}

static ge_status save_run(const void *state, ge_kctx *c) {
  const ge_fx_state *s = state;
  for (size_t i = 0; i < s->n; i++)
    GE_CHECK(ge_kctx_record(c, GE_EFFECT_SAVE, s->key, s->names[i], NULL, NULL));
  return GE_OK;
}

static ge_status callback_run(const void *state, ge_kctx *c) {
  const ge_fx_state *s = state;
  for (size_t i = 0; i < s->n; i++)
    GE_CHECK(ge_kctx_record(c, GE_EFFECT_CALLBACK, s->key, s->names[i], NULL, c->in[i]));
  return GE_OK;
}

static ge_status assign_common(const ge_fx_state *s, ge_kctx *c, ge_effect_kind kind) {
  const ge_tensor *v = c->in[0], *x = c->in[1];
  bool same = v->dtype == x->dtype && v->rank == x->rank;
  for (int32_t d = 0; same && d < v->rank; d++) same = v->dims[d] == x->dims[d];
  if (!same)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "variable '%s' and the value (input 1) differ in dtype "
                        "or shape", s->name);
  GE_CHECK(ge_kctx_record(c, kind, NULL, s->name, NULL, x));
  if (c->n_out < 1 || !c->out[0]) return GE_OK;
  if (kind == GE_EFFECT_ASSIGN) return copy_out(c, x);
  ge_tensor *o = c->out[0];
  size_t n = v->numel;
  bool sub = kind == GE_EFFECT_ASSIGN_SUB;
  if (o->numel != n) return ge_kctx_fail(c, GE_ERR_INTERNAL, "output 0 has %zu elements, expected %zu", o->numel, n);
  if (!ge_tensor_add_sub(o, v, x, sub))
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "no CPU kernel for input 0 of dtype %s",
                        ge_dtype_name(v->dtype));
  return GE_OK;
}

static ge_status assign_run(const void *state, ge_kctx *c) {
  return assign_common(state, c, GE_EFFECT_ASSIGN);
}
static ge_status assign_add_run(const void *state, ge_kctx *c) {
  return assign_common(state, c, GE_EFFECT_ASSIGN_ADD);
}
static ge_status assign_sub_run(const void *state, ge_kctx *c) {
  return assign_common(state, c, GE_EFFECT_ASSIGN_SUB);
}

const ge_kernel_def ge_ref_kernels_ge[] = {
    {"ai.ge", "Summary", 1, 0, {fx_prepare, summary_run, fx_release, false}},
    {"ai.ge", "Save", 1, 0, {fx_prepare, save_run, fx_release, false}},
    {"ai.ge", "Callback", 1, 0, {fx_prepare, callback_run, fx_release, false}},
    {"ai.ge", "Assign", 1, 0, {fx_prepare, assign_run, fx_release, false}},
    {"ai.ge", "AssignAdd", 1, 0, {fx_prepare, assign_add_run, fx_release, false}},
    {"ai.ge", "AssignSub", 1, 0, {fx_prepare, assign_sub_run, fx_release, false}},
    {0},
};
