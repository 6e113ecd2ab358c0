/* `ge run`: load, compile and run a model; write outputs as .npy; report latency and memory. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cli.h"
#include "npy.h"

/* --stats: consumes Summary and Save data so that their metrics show. */
static uint32_t stats_sink(uint32_t graph_id, const ge_tensor_map *m, void *user) { return 0; }

static void print_callback_stats(ge_session *s) {
  const char *key = NULL;
  size_t i = 0;
  for (; ge_session_callback_key(s, i, &key) == GE_OK; i++) {
    ge_callback_stats st;
    if (ge_session_callback_stats(s, key, &st) != GE_OK) continue;
    printf("callback %s: calls %llu, failures %llu, total %.3f ms, mean %.3f ms, max %.3f ms, "
           "bytes %llu\n", key, (unsigned long long)st.calls, (unsigned long long)st.failures,
           st.total_ms, st.mean_ms, st.max_ms, (unsigned long long)st.bytes);
  }
  if (!i) printf("callbacks: none\n");
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Seeded values (cli.h). */
void ge_cli_fill_random(ge_tensor *t, uint64_t seed) {
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  size_t n = ge_tensor_numel(t);
  void *d = ge_tensor_data(t);
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t r = (uint32_t)(s >> 33);
    double u = (double)r / 2147483648.0 * 2.0 - 1.0;
    switch (ge_tensor_dtype(t)) {
      case GE_F32: ((float *)d)[i] = (float)u; break;
      case GE_F64: ((double *)d)[i] = u; break;
      case GE_F16: ((uint16_t *)d)[i] = ge_f32_to_f16((float)u); break;
      case GE_BF16: ((uint16_t *)d)[i] = ge_f32_to_bf16((float)u); break;
      case GE_I8: ((int8_t *)d)[i] = (int8_t)(r % 10); break;
      case GE_U8: ((uint8_t *)d)[i] = (uint8_t)(r % 10); break;
      case GE_I16: ((int16_t *)d)[i] = (int16_t)(r % 10); break;
      case GE_U16: ((uint16_t *)d)[i] = (uint16_t)(r % 10); break;
      case GE_I32: ((int32_t *)d)[i] = (int32_t)(r % 10); break;
      case GE_U32: ((uint32_t *)d)[i] = r % 10; break;
      case GE_I64: ((int64_t *)d)[i] = (int64_t)(r % 10); break;
      case GE_U64: ((uint64_t *)d)[i] = r % 10; break;
      case GE_BOOL: ((uint8_t *)d)[i] = (uint8_t)(i & 1); break;
      default: break;
    }
  }
}

static void print_output(const char *name, const ge_tensor *t) {
  printf("output %s: %s [", name, ge_dtype_name(ge_tensor_dtype(t)));
  for (size_t d = 0; d < ge_tensor_rank(t); d++)
    printf("%s%lld", d ? "," : "", (long long)ge_tensor_dims(t)[d]);
  printf("]");
  size_t n = ge_tensor_numel(t);
  ge_dtype dt = ge_tensor_dtype(t);
  if (n && dt != GE_STRING) {
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++) {
      double v = ge_tensor_get_f64(t, i);
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
      sum += v;
    }
    printf(" min %.6g max %.6g mean %.6g", mn, mx, sum / (double)n);
  }
  printf("\n");
}

static int mkdir_p(const char *dir) {
  char buf[4096];
  if (strlen(dir) >= sizeof buf) return -1;
  strcpy(buf, dir);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0777) && errno != EEXIST) return -1;
      *p = '/';
    }
  if (mkdir(buf, 0777) && errno != EEXIST) return -1;
  return 0;
}

/* Output names may contain characters a file name cannot. */
static void file_name_of(const char *name, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = name; *p && k + 1 < cap; p++)
    out[k++] = (*p == '/' || *p == '\\' || *p == ':') ? '_' : *p;
  out[k] = '\0';
}

int ge_cli_run(const ge_cli_args *a) {
  int rc = 1;
  ge_session *s = NULL;
  ge_tensor **ins = NULL, **outs = NULL;
  double *times = NULL;
  size_t n_in = 0, n_out = 0;
  ge_graph *g = ge_cli_load(a);
  if (!g) return 1;
  n_out = ge_graph_num_outputs(g);
  ins = ge_cli_make_inputs(g, a, !a->quiet, &n_in);
  outs = calloc(n_out + 1, sizeof *outs);
  times = calloc((size_t)a->iters + 1, sizeof *times);
  if (!ins || !outs || !times) goto done;

  ge_status st = ge_initialize(NULL, 0);
  if (st == GE_OK) st = ge_session_create(a->options, a->n_options, &s);
  if (st == GE_OK && a->stats) st = ge_session_register_callback(s, "Summary", stats_sink, NULL);
  if (st == GE_OK && a->stats) st = ge_session_register_callback(s, "Save", stats_sink, NULL);
  if (st == GE_OK) st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_build_graph(s, 1);
  if (st != GE_OK) {
    ge_cli_error(a->model, st);
    goto done;
  }
  int runs = a->iters > 1 ? a->iters + 1 : 1; /* one warm-up run when timing */
  for (int r = 0; r < runs; r++) {
    for (size_t o = 0; o < n_out; o++) {
      ge_tensor_free(outs[o]);
      outs[o] = NULL;
    }
    double t0 = ge_cli_now_ms();
    st = ge_session_run_graph(s, 1, ins, n_in, outs, n_out);
    double t1 = ge_cli_now_ms();
    if (st != GE_OK) {
      ge_cli_error(a->model, st);
      goto done;
    }
    if (runs == 1 || r > 0) times[runs == 1 ? 0 : r - 1] = t1 - t0;
  }
  for (size_t o = 0; o < n_out; o++) {
    const char *name;
    ge_dtype dt;
    const int64_t *dims;
    size_t rank;
    ge_graph_output_info(g, o, &name, &dt, &dims, &rank);
    if (!a->quiet) print_output(name, outs[o]);
    if (a->output_dir) {
      if (mkdir_p(a->output_dir)) {
        fprintf(stderr, "ge: cannot create output directory %s\n", a->output_dir);
        goto done;
      }
      char fname[1024], path[4096];
      file_name_of(name, fname, sizeof fname);
      snprintf(path, sizeof path, "%s/%s.npy", a->output_dir, fname);
      st = ge_npy_write(path, outs[o]);
      if (st != GE_OK) {
        ge_cli_error("output", st);
        goto done;
      }
    }
  }
  int nt = a->iters > 1 ? a->iters : 1;
  qsort(times, (size_t)nt, sizeof *times, cmp_double);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (nt > 1)
    printf("latency: median %.3f ms, p90 %.3f ms, min %.3f ms over %d runs\n", times[nt / 2],
           times[(nt * 9) / 10 < nt ? (nt * 9) / 10 : nt - 1], times[0], nt);
  else
    printf("latency: %.3f ms (one run)\n", times[0]);
  printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
  if (a->stats) print_callback_stats(s);
  rc = 0;
done:
  if (outs)
    for (size_t o = 0; o < n_out; o++) ge_tensor_free(outs[o]);
  if (ins)
    for (size_t i = 0; i < n_in; i++) ge_tensor_free(ins[i]);
  free(outs);
  free(ins);
  free(times);
  ge_session_free(s);
  ge_graph_free(g);
  return rc;
}
