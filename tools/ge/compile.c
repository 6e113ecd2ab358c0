/* `ge compile MODEL -o OUT.gem`: run the optimisation passes once and save the optimized graph
 * as a .gem offline model (frontend/gem.h) that `ge run`/`ge inspect` and sessions load without
 * running the passes again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compiler/autodiff.h"
#include "compiler/inline.h"
#include "frontend/gem.h"
#include "passes/pass.h"
#include "runtime/options.h"

/* Static shapes given with --input-shape become the graph's declared input types. */
static int bake_input_shapes(ge_graph *g, const ge_cli_args *a) {
  if (a->n_shapes == 0) return 0;
  ge_type *types = ge_cli_input_types(g, a, false);
  if (!types) return -1;
  for (size_t i = 0, k = 0; i < g->n_inputs; i++) {
    ge_value *v = &g->values[g->inputs[i]];
    if (v->kind == GE_VALUE_CONSTANT) continue;
    v->type = types[k++];
  }
  free(types);
  return 0;
}

int ge_cli_compile(const ge_cli_args *a) {
  const char *out = a->output_dir;
  if (!out || !*out) {
    fprintf(stderr, "ge: compile needs -o OUT.gem\n");
    return 2;
  }
  ge_options o;
  ge_options_default(&o);
  ge_status st = ge_options_apply(&o, a->options, a->n_options);
  if (st != GE_OK) {
    ge_cli_error("options", st);
    return 2;
  }
  double t0 = ge_cli_now_ms();
  ge_graph *g = ge_cli_load(a);
  if (!g) return 1;
  double t_load = ge_cli_now_ms() - t0;
  int rc = 0;
  ge_pass_report rep = {0};
  ge_gem_header h;
  ge_gem_header_init(&h, o.precision_mode, o.opt_level);
  ge_type *types = NULL;
  ge_plan *p = NULL;
  size_t nodes_loaded = g->n_nodes;
  if (bake_input_shapes(g, a) != 0) {
    rc = 2;
    goto done;
  }
  for (size_t i = 0; i < a->n_shapes && st == GE_OK; i++)
    st = ge_gem_header_add_shape(&h, a->shapes[i].key, a->shapes[i].value);
  if (st == GE_OK) st = ge_graph_inline_functions(g);
  if (st == GE_OK) st = ge_graph_expand_gradients(g);
  if (st == GE_OK) st = ge_graph_toposort(g);
  if (st == GE_OK) st = ge_options_run_passes(&o, g, &rep);
  if (st != GE_OK) {
    ge_cli_error("optimize", st);
    rc = 1;
    goto done;
  }
  /* Compile a plan as a check that the optimized graph builds (and for the memory summary). */
  types = ge_cli_input_types(g, a, false);
  if (!types) {
    rc = 2;
    goto done;
  }
  st = ge_plan_compile(g, types, &o, &p);
  if (st != GE_OK) {
    ge_cli_error("compile", st);
    rc = 1;
    goto done;
  }
  g->optimized = true;
  g->precision_mode = o.precision_mode;
  g->opt_level = o.opt_level;
  double t1 = ge_cli_now_ms();
  st = ge_gem_save(g, &h, out);
  double t_save = ge_cli_now_ms() - t1;
  if (st != GE_OK) {
    ge_cli_error("save", st);
    rc = 1;
    goto done;
  }
  if (a->verbose) {
    printf("model: %s (loaded in %.1f ms)\n", a->model, t_load);
    printf("options: precision %s, opt level %d\n", ge_gem_precision_name(o.precision_mode),
           o.opt_level);
    for (size_t i = 0; i < h.n_input_shapes; i++) printf("input shape: %s\n", h.input_shapes[i]);
    printf("passes: %zu nodes loaded, %zu after the passes\n", nodes_loaded, g->n_nodes);
    ge_pass_report_print(stdout, &rep);
    printf("compiled: %zu steps (%zu nodes folded to constants)\n", p->n_steps, p->n_folded);
    printf("memory plan: arena %.2f MiB (%s), lower bound %.2f MiB, without reuse %.2f MiB\n",
           (double)p->arena_bytes / (1 << 20), p->arena_strategy ? p->arena_strategy : "-",
           (double)p->arena_lower_bound / (1 << 20), (double)p->arena_no_reuse / (1 << 20));
    printf("wrote %s in %.1f ms\n", out, t_save);
  } else if (!a->quiet) {
    printf("%s: %zu nodes -> %zu after the passes; wrote %s\n", a->model, nodes_loaded,
           g->n_nodes, out);
  }
done:
  ge_plan_free(p);
  free(types);
  ge_gem_header_clear(&h);
  ge_pass_report_clear(&rep);
  ge_graph_free(g);
  return rc;
}
