/* Argument parsing and the helpers every command shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "frontend/gem.h"
#include "ir/ir.h"

double ge_cli_now_ms(void) { return (double)ge_now_ns() / 1e6; }

static int push_kv(ge_cli_kv **arr, size_t *n, const char *arg, char sep, const char *flag) {
  const char *p = strchr(arg, sep);
  if (!p || p == arg) {
    fprintf(stderr, "ge: %s expects NAME%cVALUE, got '%s'\n", flag, sep, arg);
    return -1;
  }
  ge_cli_kv *na = realloc(*arr, (*n + 1) * sizeof **arr);
  if (!na) return -1;
  *arr = na;
  na[*n].key = strndup(arg, (size_t)(p - arg));
  na[*n].value = strdup(p + 1);
  (*n)++;
  return 0;
}

static int push_option(ge_cli_args *a, const char *key, const char *value) {
  ge_option *no = realloc(a->options, (a->n_options + 1) * sizeof *no);
  if (!no) return -1;
  a->options = no;
  no[a->n_options].key = strdup(key);
  no[a->n_options].value = strdup(value);
  a->n_options++;
  return 0;
}

int ge_cli_parse(int argc, char **argv, ge_cli_args *a) {
  memset(a, 0, sizeof *a);
  a->iters = 1;
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_ARG()                                             \
  do {                                                         \
    if (!next) {                                               \
      fprintf(stderr, "ge: %s needs a value\n", s);            \
      return -1;                                               \
    }                                                          \
    i++;                                                       \
  } while (0)
    if (!strcmp(s, "--input") || !strcmp(s, "-i")) {
      NEED_ARG();
      if (push_kv(&a->inputs, &a->n_inputs, next, '=', "--input")) return -1;
    } else if (!strcmp(s, "--input-shape")) {
      NEED_ARG();
      if (push_kv(&a->shapes, &a->n_shapes, next, ':', "--input-shape")) return -1;
    } else if (!strcmp(s, "--output-dir") || !strcmp(s, "-o")) {
      NEED_ARG();
      a->output_dir = next;
    } else if (!strcmp(s, "--iters")) {
      NEED_ARG();
      a->iters = atoi(next);
      a->iters_given = true;
      if (a->iters < 1) {
        fprintf(stderr, "ge: --iters needs a positive integer, got '%s'\n", next);
        return -1;
      }
    } else if (!strcmp(s, "--threads")) {
      NEED_ARG();
      if (push_option(a, "ge.intraOpThreads", next)) return -1;
    } else if (!strcmp(s, "--opt-level")) {
      NEED_ARG();
      if (push_option(a, "ge.graphOptimizationLevel", next)) return -1;
    } else if (!strcmp(s, "--option")) {
      NEED_ARG();
      const char *eq = strchr(next, '=');
      if (!eq) {
        fprintf(stderr, "ge: --option expects KEY=VALUE, got '%s'\n", next);
        return -1;
      }
      char *key = strndup(next, (size_t)(eq - next));
      int rc = push_option(a, key, eq + 1);
      free(key);
      if (rc) return -1;
    } else if (!strcmp(s, "--precision")) { /* every command: ge.exec.precision_mode, long or short */
      NEED_ARG();
      int m = ge_gem_precision_parse(next);
      if (m < 0) {
        fprintf(stderr,
                "ge: --precision: unknown value '%s' (must_keep_origin_dtype/keep, force_fp32/fp32, "
                "allow_fp32_to_bf16/bf16, allow_fp32_to_fp16/fp16, "
                "allow_mix_precision_bf16/mixed_bf16, allow_mix_precision_fp16/mixed_fp16)\n",
                next);
        return -1;
      }
      if (push_option(a, "ge.exec.precision_mode", ge_gem_precision_name(m))) return -1;
    } else if (!strcmp(s, "--verbose") || !strcmp(s, "-v")) {
      a->verbose = true;
    } else if (!strcmp(s, "--passes")) {
      a->passes = true;
    } else if (!strcmp(s, "--json")) {
      a->json = true;
    } else if (!strcmp(s, "--stats")) {
      a->stats = true;
    } else if (!strcmp(s, "--quiet") || !strcmp(s, "-q")) {
      a->quiet = true;
    } else if (s[0] == '-' && s[1]) {
      fprintf(stderr, "ge: unknown flag '%s'\n", s);
      return -1;
    } else if (!a->model) {
      a->model = s;
    } else {
      fprintf(stderr, "ge: unexpected argument '%s'\n", s);
      return -1;
    }
#undef NEED_ARG
  }
  if (!a->model) {
    fprintf(stderr, "ge: no MODEL given\n");
    return -1;
  }
  return 0;
}

void ge_cli_args_free(ge_cli_args *a) {
  for (size_t i = 0; i < a->n_inputs; i++) {
    free(a->inputs[i].key);
    free(a->inputs[i].value);
  }
  for (size_t i = 0; i < a->n_shapes; i++) {
    free(a->shapes[i].key);
    free(a->shapes[i].value);
  }
  for (size_t i = 0; i < a->n_options; i++) {
    free((char *)a->options[i].key);
    free((char *)a->options[i].value);
  }
  free(a->inputs);
  free(a->shapes);
  free(a->options);
  memset(a, 0, sizeof *a);
}

void ge_cli_error(const char *what, ge_status st) {
  fprintf(stderr, "ge: %s: %s: %s\n", what, ge_status_str(st), ge_last_error());
}

ge_graph *ge_cli_load(const ge_cli_args *a) {
  ge_graph *g = NULL;
  ge_status st = ge_graph_load(a->model, NULL, 0, &g);
  if (st != GE_OK) {
    ge_cli_error("load", st);
    return NULL;
  }
  return g;
}

ge_type *ge_cli_input_types(const ge_graph *g, const ge_cli_args *a, bool dynamic_as_one) {
  ge_type *types = calloc(g->n_inputs + 1, sizeof *types);
  if (!types) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < g->n_inputs; i++) {
    const ge_value *v = &g->values[g->inputs[i]];
    if (v->kind == GE_VALUE_CONSTANT) continue;
    ge_type *t = &types[k++];
    *t = v->type;
    for (size_t s = 0; s < a->n_shapes; s++) {
      if (strcmp(a->shapes[s].key, v->name)) continue;
      t->shape.rank = 0;
      const char *p = a->shapes[s].value;
      while (*p) {
        char *end = NULL;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || t->shape.rank >= GE_MAX_RANK) {
          fprintf(stderr, "ge: --input-shape %s: bad shape '%s'\n", v->name, a->shapes[s].value);
          free(types);
          return NULL;
        }
        t->shape.dims[t->shape.rank++] = d;
        p = *end == ',' ? end + 1 : end;
      }
    }
    if (dynamic_as_one && t->shape.rank >= 0)
      for (int32_t d = 0; d < t->shape.rank; d++)
        if (t->shape.dims[d] < 0) t->shape.dims[d] = 1;
  }
  for (size_t s = 0; s < a->n_shapes; s++) {
    bool found = false;
    for (size_t i = 0; i < g->n_inputs; i++)
      if (!strcmp(g->values[g->inputs[i]].name, a->shapes[s].key)) found = true;
    if (!found) {
      fprintf(stderr, "ge: --input-shape names '%s', which is not an input of the model\n", a->shapes[s].key);
      free(types);
      return NULL;
    }
  }
  return types;
}
