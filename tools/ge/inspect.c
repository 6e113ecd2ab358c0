/* `ge inspect` and `ge dot`: what a model holds, and what its compiled program does. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compiler/layout.h"
#include "passes/pass.h"

typedef struct op_count {
  const char *domain, *op;
  size_t n;
} op_count;

static int cmp_count(const void *a, const void *b) {
  const op_count *x = a, *y = b;
  if (x->n != y->n) return x->n < y->n ? 1 : -1;
  return strcmp(x->op, y->op);
}

static size_t histogram(const ge_graph *g, op_count *out) {
  size_t n = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *nd = &g->nodes[i];
    size_t k = 0;
    while (k < n && (strcmp(out[k].op, nd->op_type) || strcmp(out[k].domain, nd->domain))) k++;
    if (k == n) out[n++] = (op_count){nd->domain, nd->op_type, 0};
    out[k].n++;
  }
  qsort(out, n, sizeof *out, cmp_count);
  return n;
}

static size_t type_bytes(const ge_type *t) {
  size_t n = 0;
  if (t->kind != GE_TYPE_TENSOR || t->dtype == GE_DTYPE_COUNT || !ge_shape_numel(&t->shape, &n)) return 0;
  return n * ge_dtype_size(t->dtype);
}

static size_t type_numel(const ge_type *t) {
  size_t n = 0;
  return ge_shape_numel(&t->shape, &n) ? n : 0;
}

/* Multiply-adds x2 of the compute-heavy ops, from the inferred shapes. */
static double step_flops(const ge_plan *p, const ge_step *s) {
  const ge_node *n = s->node;
  const char *op = n->op_type;
  if (!strcmp(n->domain, "ai.ge") && !strncmp(op, "Fused", 5)) op += 5; /* FusedConv -> Conv */
  else if (n->domain[0]) return 0;
  if (s->n_out < 1 || s->out[0] == GE_SLOT_NONE || s->n_in < 2 ||
      s->in[0] == GE_SLOT_NONE || s->in[1] == GE_SLOT_NONE)
    return 0;
  const ge_type *a = &p->slots[s->in[0]].type, *w = &p->slots[s->in[1]].type;
  const ge_type *y = &p->slots[s->out[0]].type;
  if (!ge_shape_is_static(&a->shape) || !ge_shape_is_static(&w->shape) || !ge_shape_is_static(&y->shape))
    return 0;
  double out = (double)type_numel(y);
  if (!strcmp(op, "Conv") && w->shape.rank >= 1 && w->shape.dims[0] > 0)
    return 2.0 * out * (double)type_numel(w) / (double)w->shape.dims[0];
  if (!strcmp(op, "ConvTranspose") && w->shape.dims[0] > 0)
    return 2.0 * (double)type_numel(a) * (double)type_numel(w) / (double)w->shape.dims[0];
  if (!strcmp(op, "MatMul") && a->shape.rank >= 1)
    return 2.0 * out * (double)a->shape.dims[a->shape.rank - 1];
  if (!strcmp(op, "Gemm") && a->shape.rank == 2) {
    bool ta = ge_node_attr_int(n, "transA", 0) != 0;
    return 2.0 * out * (double)a->shape.dims[ta ? 0 : 1];
  }
  return 0;
}

typedef struct plan_stats {
  double flops;
  size_t intermediate_bytes; /* every step output, as if nothing were reused */
  size_t peak_live_bytes;    /* most bytes alive at once when buffers die after their last reader */
  size_t folded_bytes;
  bool dynamic;
} plan_stats;

static void stats_of(const ge_plan *p, plan_stats *st) {
  memset(st, 0, sizeof *st);
  size_t live = 0;
  for (size_t i = 0; i < p->n_steps; i++) {
    const ge_step *s = &p->steps[i];
    st->flops += step_flops(p, s);
    if (!s->static_out) st->dynamic = true;
    for (uint32_t o = 0; o < s->n_out && !s->view; o++) {
      if (s->out[o] == GE_SLOT_NONE) continue;
      size_t b = type_bytes(&p->slots[s->out[o]].type);
      st->intermediate_bytes += b;
      live += b;
    }
    if (live > st->peak_live_bytes) st->peak_live_bytes = live;
    for (uint32_t d = 0; d < s->n_dead; d++) live -= type_bytes(&p->slots[s->dead[d]].type);
  }
  for (size_t v = 0; v < p->n_slots; v++)
    if (p->slots[v].folded) st->folded_bytes += p->slots[v].constant->nbytes;
}

static void shape_json(cJSON *parent, const char *key, const ge_type *t, const ge_graph *g) {
  cJSON *arr = cJSON_AddArrayToObject(parent, key);
  if (t->shape.rank < 0) return;
  for (int32_t d = 0; d < t->shape.rank; d++) {
    int64_t x = t->shape.dims[d];
    if (x >= 0) cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)x));
    else if (x <= -2 && GE_DIM_SYM_ID(x) < g->n_syms) cJSON_AddItemToArray(arr, cJSON_CreateString(g->syms[GE_DIM_SYM_ID(x)]));
    else cJSON_AddItemToArray(arr, cJSON_CreateNull());
  }
}

static const char *dtype_str(const ge_type *t) {
  if (t->kind == GE_TYPE_SEQUENCE) return "sequence";
  if (t->kind == GE_TYPE_OPTIONAL) return "optional";
  return t->dtype == GE_DTYPE_COUNT ? "unknown" : ge_dtype_name(t->dtype);
}

int ge_cli_inspect(const ge_cli_args *a) {
  ge_graph *g = ge_cli_load(a);
  if (!g) return 1;
  int rc = 0;
  ge_status st = ge_graph_toposort(g);
  ge_options o;
  ge_options_default(&o);
  if (st == GE_OK) st = ge_options_apply(&o, a->options, a->n_options);
  ge_pass_report rep = {0};
  size_t nodes_loaded = g->n_nodes;
  if (st == GE_OK && a->passes) st = ge_options_run_passes(&o, g, &rep);
  ge_type *types = st == GE_OK ? ge_cli_input_types(g, a, false) : NULL;
  ge_plan *p = NULL;
  if (st == GE_OK && types) st = ge_plan_compile(g, types, &o, &p);
  if (st != GE_OK) rc = 1;
  if (!types) rc = 1;

  op_count *ops = calloc(g->n_nodes + 1, sizeof *ops);
  size_t n_ops = ops ? histogram(g, ops) : 0;
  size_t n_params = 0, param_elems = 0, param_bytes = 0;
  for (size_t v = 0; v < g->n_values; v++)
    if (g->values[v].kind == GE_VALUE_CONSTANT && g->values[v].constant) {
      n_params++;
      param_elems += g->values[v].constant->numel;
      param_bytes += g->values[v].constant->nbytes;
    }
  plan_stats ps = {0};
  if (p) stats_of(p, &ps);

  if (a->json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", a->model);
    cJSON_AddStringToObject(root, "graph", g->name ? g->name : "");
    cJSON *opsets = cJSON_AddObjectToObject(root, "opsets");
    for (size_t i = 0; i < g->n_opsets; i++)
      cJSON_AddNumberToObject(opsets, g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx",
                              (double)g->opsets[i].version);
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (size_t i = 0, k = 0; i < g->n_inputs; i++) {
      const ge_value *v = &g->values[g->inputs[i]];
      if (v->kind == GE_VALUE_CONSTANT) continue;
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "name", v->name);
      cJSON_AddStringToObject(e, "dtype", dtype_str(&v->type));
      shape_json(e, "shape", types ? &types[k] : &v->type, g);
      cJSON_AddItemToArray(ins, e);
      k++;
    }
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (size_t i = 0; i < g->n_outputs; i++) {
      const ge_value *v = &g->values[g->outputs[i]];
      const ge_type *t = p ? &p->slots[g->outputs[i]].type : &v->type;
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "name", v->name);
      cJSON_AddStringToObject(e, "dtype", dtype_str(t));
      shape_json(e, "shape", t, g);
      cJSON_AddItemToArray(outs, e);
    }
    cJSON_AddNumberToObject(root, "nodes", (double)g->n_nodes);
    if (a->passes) {
      cJSON *pr = cJSON_AddObjectToObject(root, "passes");
      cJSON_AddNumberToObject(pr, "nodes_before", (double)nodes_loaded);
      cJSON_AddNumberToObject(pr, "nodes_after", (double)g->n_nodes);
      cJSON_AddNumberToObject(pr, "usec", (double)rep.usec);
      cJSON *arr = cJSON_AddArrayToObject(pr, "per_pass");
      for (size_t i = 0; i < rep.n_stats; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", rep.stats[i].name);
        cJSON_AddNumberToObject(e, "nodes_before", (double)rep.stats[i].nodes_before);
        cJSON_AddNumberToObject(e, "nodes_after", (double)rep.stats[i].nodes_after);
        cJSON_AddNumberToObject(e, "removed", (double)rep.stats[i].removed);
        cJSON_AddNumberToObject(e, "usec", (double)rep.stats[i].usec);
        cJSON_AddBoolToObject(e, "changed", rep.stats[i].changed);
        cJSON_AddItemToArray(arr, e);
      }
    }
    cJSON *hist = cJSON_AddObjectToObject(root, "ops");
    for (size_t i = 0; i < n_ops; i++) {
      char key[256];
      snprintf(key, sizeof key, "%s%s%s", ops[i].domain, ops[i].domain[0] ? "::" : "", ops[i].op);
      cJSON_AddNumberToObject(hist, key, (double)ops[i].n);
    }
    cJSON *par = cJSON_AddObjectToObject(root, "parameters");
    cJSON_AddNumberToObject(par, "tensors", (double)n_params);
    cJSON_AddNumberToObject(par, "elements", (double)param_elems);
    cJSON_AddNumberToObject(par, "bytes", (double)param_bytes);
    if (p) {
      cJSON *c = cJSON_AddObjectToObject(root, "compiled");
      cJSON_AddNumberToObject(c, "steps", (double)p->n_steps);
      cJSON_AddNumberToObject(c, "folded_nodes", (double)p->n_folded);
      cJSON_AddBoolToObject(c, "dynamic", ps.dynamic);
      cJSON_AddNumberToObject(c, "flops", ps.flops);
      /* memory layouts the compiler chose (compiler/layout.h): a count per layout, and each
         value that is not plain */
      cJSON *lc = cJSON_AddObjectToObject(c, "layouts");
      cJSON *lv = cJSON_AddObjectToObject(c, "value_layouts");
      size_t per[GE_LAYOUT_COUNT] = {0};
      for (size_t v = 0; p->layout && v < p->n_slots; v++) {
        if (p->layout[v] >= GE_LAYOUT_COUNT) continue;
        per[p->layout[v]]++;
        if (p->layout[v] != GE_LAYOUT_PLAIN && g->values[v].name)
          cJSON_AddStringToObject(lv, g->values[v].name, ge_layout_name(p->layout[v]));
      }
      for (int l = 0; l < GE_LAYOUT_COUNT; l++) cJSON_AddNumberToObject(lc, ge_layout_name(l), (double)per[l]);
      cJSON *m = cJSON_AddObjectToObject(root, "memory");
      cJSON_AddNumberToObject(m, "intermediate_bytes", (double)ps.intermediate_bytes);
      cJSON_AddNumberToObject(m, "peak_live_bytes", (double)ps.peak_live_bytes);
      cJSON_AddNumberToObject(m, "folded_constant_bytes", (double)ps.folded_bytes);
      cJSON_AddNumberToObject(m, "arena_bytes", (double)p->arena_bytes);
      cJSON_AddNumberToObject(m, "lower_bound_bytes", (double)p->arena_lower_bound);
      cJSON_AddNumberToObject(m, "no_reuse_bytes", (double)p->arena_no_reuse);
      cJSON_AddStringToObject(m, "strategy", p->arena_strategy ? p->arena_strategy : "");
    } else {
      cJSON_AddStringToObject(root, "error", st != GE_OK ? ge_last_error() : "bad --input-shape");
    }
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    free(text);
    cJSON_Delete(root);
  } else {
    char buf[512];
    printf("model: %s\n", a->model);
    if (a->passes) {
      printf("passes: %zu nodes loaded, %zu after the passes\n", nodes_loaded, g->n_nodes);
      ge_pass_report_print(stdout, &rep);
    }
    printf("graph: %s, %zu nodes, opsets:", g->name ? g->name : "", g->n_nodes);
    for (size_t i = 0; i < g->n_opsets; i++)
      printf(" %s=%lld", g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx", (long long)g->opsets[i].version);
    printf("\ninputs:\n");
    for (size_t i = 0; i < g->n_inputs; i++) {
      const ge_value *v = &g->values[g->inputs[i]];
      if (v->kind == GE_VALUE_CONSTANT) continue;
      printf("  %-24s %-9s %s\n", v->name, dtype_str(&v->type), ge_shape_str(&v->type.shape, g, buf, sizeof buf));
    }
    printf("outputs:\n");
    for (size_t i = 0; i < g->n_outputs; i++) {
      const ge_value *v = &g->values[g->outputs[i]];
      const ge_type *t = p ? &p->slots[g->outputs[i]].type : &v->type;
      printf("  %-24s %-9s %s\n", v->name, dtype_str(t), ge_shape_str(&t->shape, g, buf, sizeof buf));
    }
    printf("ops:\n");
    for (size_t i = 0; i < n_ops; i++)
      printf("  %6zu  %s%s%s\n", ops[i].n, ops[i].domain, ops[i].domain[0] ? "::" : "", ops[i].op);
    printf("parameters: %zu tensors, %zu elements, %.2f MiB\n", n_params, param_elems,
           (double)param_bytes / (1 << 20));
    if (p) {
      printf("compiled: %zu steps (%zu nodes folded to constants)%s\n", p->n_steps, p->n_folded,
             ps.dynamic ? ", some shapes known only at run time" : "");
      if (ps.dynamic)
        printf("FLOPs and memory: shapes are known only at run time; give them with --input-shape\n");
      else
        printf("FLOPs (Conv, ConvTranspose, MatMul, Gemm, and their fused forms): %.3f G\n", ps.flops / 1e9);
      printf("memory: intermediates %.2f MiB in all, %.2f MiB live at most (buffers freed after "
             "their last reader), folded constants %.2f MiB\n",
             (double)ps.intermediate_bytes / (1 << 20), (double)ps.peak_live_bytes / (1 << 20),
             (double)ps.folded_bytes / (1 << 20));
      printf("memory plan: arena %.2f MiB (%s), lower bound %.2f MiB (%.3fx), without reuse %.2f MiB\n",
             (double)p->arena_bytes / (1 << 20), p->arena_strategy ? p->arena_strategy : "-",
             (double)p->arena_lower_bound / (1 << 20),
             p->arena_lower_bound ? (double)p->arena_bytes / (double)p->arena_lower_bound : 1.0,
             (double)p->arena_no_reuse / (1 << 20));
      size_t per[GE_LAYOUT_COUNT] = {0};
      for (size_t v = 0; p->layout && v < p->n_slots; v++)
        if (p->layout[v] < GE_LAYOUT_COUNT) per[p->layout[v]]++;
      printf("layouts (values):");
      for (int l = 0; l < GE_LAYOUT_COUNT; l++) printf(" %s %zu", ge_layout_name(l), per[l]);
      printf("\n");
    }
  }
  if (st != GE_OK) ge_cli_error("compile", st);
  ge_pass_report_clear(&rep);
  free(ops);
  free(types);
  ge_plan_free(p);
  ge_graph_free(g);
  return rc;
}

static void dot_escape(const char *s, char *out, size_t cap) {
  size_t k = 0;
  for (; *s && k + 2 < cap; s++) {
    if (*s == '"' || *s == '\\') out[k++] = '\\';
    out[k++] = *s;
  }
  out[k] = '\0';
}

int ge_cli_dot(const ge_cli_args *a) {
  ge_graph *g = ge_cli_load(a);
  if (!g) return 1;
  ge_status st = ge_graph_toposort(g);
  ge_options o;
  ge_options_default(&o);
  if (st == GE_OK) st = ge_options_apply(&o, a->options, a->n_options);
  ge_type *types = st == GE_OK ? ge_cli_input_types(g, a, false) : NULL;
  ge_plan *p = NULL;
  if (st == GE_OK && types) st = ge_plan_compile(g, types, &o, &p);
  if (!p) {
    if (st != GE_OK) ge_cli_error("compile", st);
    free(types);
    ge_graph_free(g);
    return 1;
  }
  char e1[512], e2[512], sh[256];
  printf("digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n",
         g->name ? g->name : "ge");
  for (size_t i = 0; i < p->n_inputs; i++) {
    dot_escape(g->values[p->inputs[i]].name, e1, sizeof e1);
    printf("  \"v%u\" [shape=ellipse, label=\"%s\\n%s\"];\n", p->inputs[i], e1,
           ge_shape_str(&p->slots[p->inputs[i]].type.shape, g, sh, sizeof sh));
  }
  for (size_t i = 0; i < p->n_steps; i++) {
    const ge_step *s = &p->steps[i];
    dot_escape(s->node->name ? s->node->name : "", e1, sizeof e1);
    dot_escape(s->node->op_type, e2, sizeof e2);
    printf("  \"s%zu\" [label=\"%s\\n%s\"];\n", i, e2, e1);
  }
  /* producer of each slot: an input ellipse, a step, or nothing (constant) */
  int64_t *prod = malloc((p->n_slots + 1) * sizeof *prod);
  if (prod) {
    for (size_t v = 0; v < p->n_slots; v++) prod[v] = -1;
    for (size_t i = 0; i < p->n_steps; i++)
      for (uint32_t o2 = 0; o2 < p->steps[i].n_out; o2++)
        if (p->steps[i].out[o2] != GE_SLOT_NONE) prod[p->steps[i].out[o2]] = (int64_t)i;
    for (size_t i = 0; i < p->n_steps; i++) {
      const ge_step *s = &p->steps[i];
      for (uint32_t k = 0; k < s->n_in; k++) {
        uint32_t v = s->in[k];
        if (v == GE_SLOT_NONE) continue;
        const char *lbl = ge_shape_str(&p->slots[v].type.shape, g, sh, sizeof sh);
        if (prod[v] >= 0) printf("  \"s%lld\" -> \"s%zu\" [label=\"%s\"];\n", (long long)prod[v], i, lbl);
        else if (p->slots[v].input_index >= 0) printf("  \"v%u\" -> \"s%zu\";\n", v, i);
      }
    }
    for (size_t i = 0; i < p->n_outputs; i++) {
      uint32_t v = p->outputs[i];
      dot_escape(g->values[v].name, e1, sizeof e1);
      printf("  \"out%zu\" [shape=ellipse, label=\"%s\\n%s\"];\n", i, e1,
             ge_shape_str(&p->slots[v].type.shape, g, sh, sizeof sh));
      if (prod[v] >= 0) printf("  \"s%lld\" -> \"out%zu\";\n", (long long)prod[v], i);
      else if (p->slots[v].input_index >= 0) printf("  \"v%u\" -> \"out%zu\";\n", v, i);
    }
  }
  printf("}\n");
  free(prod);
  free(types);
  ge_plan_free(p);
  ge_graph_free(g);
  return 0;
}
