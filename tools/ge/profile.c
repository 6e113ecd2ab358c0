/* `ge profile`: run with ge.exec.profilingMode=1, write the Chrome trace, print the top ops. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define GE_PROFILE_TOP 15

typedef struct op_total {
  const char *op, *kernel; /* point into the parsed trace */
  double us;
  size_t calls;
} op_total;

static int cmp_total(const void *a, const void *b) {
  const op_total *x = a, *y = b;
  int c = strcmp(x->op, y->op);
  return x->us < y->us ? 1 : x->us > y->us ? -1 : c ? c : strcmp(x->kernel, y->kernel);
}

static char *read_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(fp, 0, SEEK_END) == 0) n = ftell(fp);
  if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
    if (fread(buf, 1, (size_t)n, fp) != (size_t)n) {
      free(buf);
      buf = NULL;
    } else {
      buf[n] = '\0';
    }
  }
  fclose(fp);
  return buf;
}

/* Sums the trace's "X" events by op and kernel; prints those that took longest. */
static int summarize(const char *path, int iters) {
  char *text = read_file(path);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  const cJSON *ev = root ? cJSON_GetObjectItemCaseSensitive(root, "traceEvents") : NULL;
  if (!cJSON_IsArray(ev)) {
    fprintf(stderr, "ge: %s: cannot read back the trace\n", path);
    cJSON_Delete(root);
    return 1;
  }
  size_t cap = (size_t)cJSON_GetArraySize(ev) + 1, n = 0, events = 0;
  op_total *t = calloc(cap, sizeof *t);
  if (!t) {
    cJSON_Delete(root);
    return 1;
  }
  double all = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev) {
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    const cJSON *op = args ? cJSON_GetObjectItemCaseSensitive(args, "op") : NULL;
    const cJSON *kn = args ? cJSON_GetObjectItemCaseSensitive(args, "kernel") : NULL;
    if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") || !cJSON_IsNumber(dur) || !cJSON_IsString(op))
      continue;
    const char *kernel = cJSON_IsString(kn) ? kn->valuestring : "";
    size_t i = 0; /* distinct (op, kernel) pairs are few: a short linear search */
    while (i < n && (strcmp(t[i].op, op->valuestring) || strcmp(t[i].kernel, kernel))) i++;
    if (i == n) {
      t[n].op = op->valuestring;
      t[n++].kernel = kernel;
    }
    t[i].us += dur->valuedouble;
    t[i].calls++;
    all += dur->valuedouble;
    events++;
  }
  qsort(t, n, sizeof *t, cmp_total);
  printf("trace: %s (%zu events, %d run%s)\n", path, events, iters, iters == 1 ? "" : "s");
  printf("%-20s %-36s %7s %11s %10s %7s\n", "op", "kernel", "calls", "total ms", "mean us", "share");
  for (size_t i = 0; i < n && i < GE_PROFILE_TOP; i++)
    printf("%-20s %-36s %7zu %11.3f %10.3f %6.1f%%\n", t[i].op, t[i].kernel, t[i].calls, t[i].us / 1e3,
           t[i].us / (double)t[i].calls, all > 0 ? 100.0 * t[i].us / all : 0.0);
  if (n > GE_PROFILE_TOP) printf("(%zu more op and kernel pairs)\n", n - GE_PROFILE_TOP);
  printf("total in kernels: %.3f ms\n", all / 1e3);
  free(t);
  cJSON_Delete(root);
  return 0;
}

int ge_cli_profile(const ge_cli_args *a) {
  const char *trace = a->output_dir ? a->output_dir : "ge_trace.json";
  int iters = a->iters_given ? a->iters : 1;
  int rc = 1;
  ge_session *s = NULL;
  ge_tensor **ins = NULL, **outs = NULL;
  size_t n_in = 0, n_out = 0;
  ge_option *opts = calloc(a->n_options + 2, sizeof *opts);
  ge_graph *g = opts ? ge_cli_load(a) : NULL;
  if (!g) {
    free(opts);
    return 1;
  }
  for (size_t i = 0; i < a->n_options; i++) opts[i] = a->options[i];
  opts[a->n_options] = (ge_option){"ge.exec.profilingMode", "1"};
  opts[a->n_options + 1] = (ge_option){"ge.exec.profilingPath", trace};
  n_out = ge_graph_num_outputs(g);
  ins = ge_cli_make_inputs(g, a, false, &n_in);
  outs = calloc(n_out + 1, sizeof *outs);
  if (!ins || !outs) goto done;
  ge_status st = ge_initialize(NULL, 0);
  if (st == GE_OK) st = ge_session_create(opts, a->n_options + 2, &s);
  if (st == GE_OK) st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_build_graph(s, 1);
  for (int r = 0; st == GE_OK && r < iters; r++) {
    st = ge_session_run_graph(s, 1, ins, n_in, outs, n_out);
    for (size_t o = 0; o < n_out; o++) {
      ge_tensor_free(outs[o]);
      outs[o] = NULL;
    }
  }
  if (st != GE_OK) {
    ge_cli_error(a->model, st);
    goto done;
  }
  ge_session_free(s); /* closes the trace */
  s = NULL;
  rc = summarize(trace, iters);
done:
  free(outs);
  if (ins)
    for (size_t i = 0; i < n_in; i++) ge_tensor_free(ins[i]);
  free(ins);
  ge_session_free(s);
  ge_graph_free(g);
  free(opts);
  return rc;
}
