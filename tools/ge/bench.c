/* `ge bench`: latency percentiles, throughput and peak memory of repeated runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "npy.h"

#define GE_BENCH_DEFAULT_ITERS 100
#define GE_BENCH_WARMUP 3

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double p) {
  size_t k = (size_t)ceil(p / 100.0 * (double)n);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return v[k - 1];
}

static void free_inputs(ge_tensor **ins, size_t n) {
  if (!ins) return;
  for (size_t i = 0; i < n; i++) ge_tensor_free(ins[i]);
  free(ins);
}

ge_tensor **ge_cli_make_inputs(const ge_graph *g, const ge_cli_args *a, bool note_random, size_t *n) {
  *n = ge_graph_num_inputs(g);
  ge_type *types = ge_cli_input_types(g, a, true);
  ge_tensor **ins = calloc(*n + 1, sizeof *ins);
  if (!types || !ins) {
    if (types && !ins) fprintf(stderr, "ge: out of memory\n");
    free(types);
    free(ins);
    return NULL;
  }
  for (size_t k = 0; k < a->n_inputs; k++) {
    bool found = false;
    for (size_t i = 0; i < *n; i++) {
      const char *name;
      ge_dtype dt;
      const int64_t *dims;
      size_t rank;
      ge_graph_input_info(g, i, &name, &dt, &dims, &rank);
      if (!strcmp(name, a->inputs[k].key)) found = true;
    }
    if (!found) {
      fprintf(stderr, "ge: --input names '%s', which is not an input of %s\n", a->inputs[k].key, a->model);
      goto fail;
    }
  }
  for (size_t i = 0; i < *n; i++) {
    const char *name;
    ge_dtype dt;
    const int64_t *dims;
    size_t rank;
    ge_graph_input_info(g, i, &name, &dt, &dims, &rank);
    const char *file = NULL;
    for (size_t k = 0; k < a->n_inputs; k++)
      if (!strcmp(a->inputs[k].key, name)) file = a->inputs[k].value;
    ge_status st;
    if (file) {
      st = ge_npy_read(file, &ins[i]);
    } else {
      if (types[i].shape.rank < 0) {
        fprintf(stderr, "ge: input '%s' has no known rank: give it with --input or --input-shape\n", name);
        goto fail;
      }
      st = ge_tensor_create(types[i].dtype, types[i].shape.dims, (size_t)types[i].shape.rank, &ins[i]);
      if (st == GE_OK) ge_cli_fill_random(ins[i], i + 1);
      if (st == GE_OK && note_random)
        fprintf(stderr, "ge: input '%s' not given: using seeded random values\n", name);
    }
    if (st != GE_OK) {
      ge_cli_error("input", st);
      goto fail;
    }
  }
  free(types);
  return ins;
fail:
  free(types);
  free_inputs(ins, *n);
  return NULL;
}

int ge_cli_bench(const ge_cli_args *a) {
  int rc = 1;
  int iters = a->iters_given ? a->iters : GE_BENCH_DEFAULT_ITERS;
  ge_session *s = NULL;
  ge_tensor **ins = NULL, **outs = NULL;
  double *times = NULL;
  size_t n_in = 0, n_out = 0;
  ge_graph *g = ge_cli_load(a);
  if (!g) return 1;
  n_out = ge_graph_num_outputs(g);
  ins = ge_cli_make_inputs(g, a, false, &n_in);
  outs = calloc(n_out + 1, sizeof *outs);
  times = calloc((size_t)iters, sizeof *times);
  if (!ins || !outs || !times) goto done;

  ge_status st = ge_initialize(NULL, 0);
  if (st == GE_OK) st = ge_session_create(a->options, a->n_options, &s);
  if (st == GE_OK) st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_build_graph(s, 1);
  if (st != GE_OK) {
    ge_cli_error(a->model, st);
    goto done;
  }
  double total = 0;
  for (int r = 0; r < GE_BENCH_WARMUP + iters; r++) {
    double t0 = ge_cli_now_ms();
    st = ge_session_run_graph(s, 1, ins, n_in, outs, n_out);
    double t1 = ge_cli_now_ms();
    for (size_t o = 0; o < n_out; o++) {
      ge_tensor_free(outs[o]);
      outs[o] = NULL;
    }
    if (st != GE_OK) {
      ge_cli_error(a->model, st);
      goto done;
    }
    if (r >= GE_BENCH_WARMUP) {
      times[r - GE_BENCH_WARMUP] = t1 - t0;
      total += t1 - t0;
    }
  }
  qsort(times, (size_t)iters, sizeof *times, cmp_double);
  size_t n = (size_t)iters;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("bench: %s, %d runs after %d warm-up runs\n", a->model, iters, GE_BENCH_WARMUP);
  printf("latency: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, min %.3f ms, max %.3f ms, mean %.3f ms\n",
         percentile(times, n, 50), percentile(times, n, 90), percentile(times, n, 99), times[0], times[n - 1],
         total / (double)n);
  printf("throughput: %.2f runs/s\n", total > 0 ? (double)n * 1e3 / total : 0.0);
  printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
  ge_run_stats rs;
  if (ge_session_graph_run_stats(s, 1, &rs) == GE_OK) {
    if (rs.adaptive)
      printf("threads: %d, adaptive: %llu of %llu runs on one thread (%llu switches, %llu probes)\n",
             rs.threads, (unsigned long long)rs.runs_one_thread, (unsigned long long)rs.runs,
             (unsigned long long)rs.switches, (unsigned long long)rs.probes);
    else
      printf("threads: %d\n", rs.threads);
  }
  rc = 0;
done:
  if (outs)
    for (size_t o = 0; o < n_out; o++) ge_tensor_free(outs[o]);
  free(outs);
  free_inputs(ins, n_in);
  free(times);
  ge_session_free(s);
  ge_graph_free(g);
  return rc;
}
