/* The pass fuzzer: random subsets and orders of the optimisation passes over ONNX node
 * conformance models, each compared with the unoptimised graph.
 *
 * The corpus (tests/unit/data/pass_fuzz/<case>.onnx + <case>.in, written by
 * tests/unit/data/gen_pass_fuzz_corpus.py) holds node conformance cases that ge passes today.
 * For every case the graph is run at ge.graphOptimizationLevel=0 for the reference outputs; then,
 * for ROUNDS seeded rounds, a copy gets a random sequence of passes through ge_pass_run_one
 * (round 0: every pass once in a random order; later rounds: 1..2N passes drawn with repeats),
 * and must keep its output names and compute the same outputs (again at level 0, so nothing
 * but the chosen sequence rewrote it): integers and booleans exactly, floats to rtol 1e-3 /
 * atol 1e-4, NaN where the reference has NaN.  A failure prints the case and the sequence.
 * The number of cases and rounds is fixed, so the test takes a bounded time (seconds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ge/ge.h"
#include "ir/ir.h"
#include "passes/pass.h"

#define CORPUS GE_SOURCE_DIR "/tests/unit/data/pass_fuzz"
#define ROUNDS 10
#define MAX_IO 16
#define MAX_SEQ 32

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* ------------------------------------------------------------------ corpus files */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted case names (without .onnx); caller frees. */
static char **list_cases(size_t *n) {
  *n = 0;
  DIR *d = opendir(CORPUS);
  if (!d) return NULL;
  char **names = NULL;
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || strcmp(e->d_name + len - 5, ".onnx")) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      assert_non_null(nn);
      names = nn;
    }
    names[*n] = strndup(e->d_name, len - 5);
    assert_non_null(names[*n]);
    (*n)++;
  }
  closedir(d);
  if (*n) qsort(names, *n, sizeof *names, cmp_str);
  return names;
}

static bool read_exact(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

/* Reads <case>.in; returns the input count, -1 on a malformed file. */
static int read_inputs(const char *name, ge_tensor **in) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.in", CORPUS, name);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char magic[4];
  uint32_t n = 0;
  int count = -1;
  if (!read_exact(f, magic, 4) || memcmp(magic, "GEPF", 4) || !read_exact(f, &n, 4) || n > MAX_IO)
    goto done;
  for (uint32_t i = 0; i < n; i++) {
    int32_t code;
    uint32_t rank;
    int64_t dims[GE_MAX_RANK];
    uint64_t nbytes;
    ge_dtype dt;
    if (!read_exact(f, &code, 4) || !read_exact(f, &rank, 4) || rank > GE_MAX_RANK ||
        !read_exact(f, dims, rank * sizeof(int64_t)) || !read_exact(f, &nbytes, 8) ||
        !ge_dtype_from_onnx(code, &dt)) {
      for (uint32_t k = 0; k < i; k++) ge_tensor_free(in[k]);
      goto done;
    }
    if (ge_tensor_create(dt, dims, rank, &in[i]) != GE_OK || ge_tensor_nbytes(in[i]) != nbytes ||
        !read_exact(f, ge_tensor_data(in[i]), (size_t)nbytes)) {
      for (uint32_t k = 0; k <= i; k++) ge_tensor_free(in[k]);
      goto done;
    }
  }
  count = (int)n;
done:
  fclose(f);
  return count;
}

/* ------------------------------------------------------------------ running and comparing */

static ge_status run_level0(const ge_graph *g, ge_tensor **in, size_t n_in, ge_tensor **out,
                            size_t n_out) {
  ge_option o[] = {{"ge.graphOptimizationLevel", "0"}, {"ge.intraOpThreads", "1"}};
  ge_session *s = NULL;
  ge_status st = ge_session_create(o, 2, &s);
  if (st == GE_OK) st = ge_session_add_graph(s, 1, g);
  if (st == GE_OK) st = ge_session_run_graph(s, 1, in, n_in, out, n_out);
  ge_session_free(s);
  return st;
}

/* "" when equal, else what differs (in buf). */
static const char *compare(const ge_tensor *a, const ge_tensor *ref, char *buf, size_t cap) {
  buf[0] = 0;
  if (a->dtype != ref->dtype) {
    snprintf(buf, cap, "dtype %s vs %s", ge_dtype_name(a->dtype), ge_dtype_name(ref->dtype));
    return buf;
  }
  bool same_shape = a->rank == ref->rank && a->numel == ref->numel;
  for (int32_t d = 0; same_shape && d < a->rank; d++) same_shape = a->dims[d] == ref->dims[d];
  if (!same_shape) {
    snprintf(buf, cap, "shape differs (rank %d/%d, %zu/%zu elements)", a->rank, ref->rank,
             a->numel, ref->numel);
    return buf;
  }
  if (a->dtype == GE_STRING) {
    for (size_t i = 0; i < a->numel; i++) {
      const char *x = ((char *const *)a->data)[i], *y = ((char *const *)ref->data)[i];
      if (strcmp(x ? x : "", y ? y : "")) {
        snprintf(buf, cap, "string element %zu differs", i);
        return buf;
      }
    }
    return buf;
  }
  bool is_float = ge_dtype_is_float(a->dtype);
  if (!is_float) {
    if (a->nbytes && memcmp(a->data, ref->data, a->nbytes))
      snprintf(buf, cap, "%s values differ", ge_dtype_name(a->dtype));
    return buf;
  }
  for (size_t i = 0; i < a->numel; i++) {
    double x = ge_tensor_get_f64(a, i), y = ge_tensor_get_f64(ref, i);
    if (isnan(y) ? isnan(x) : (x == y || fabs(x - y) <= 1e-4 + 1e-3 * fabs(y))) continue;
    snprintf(buf, cap, "element %zu: %.9g vs %.9g", i, x, y);
    return buf;
  }
  return buf;
}

/* ------------------------------------------------------------------ the fuzzer */

typedef struct fuzz_stats {
  size_t cases, skipped, rounds, passes_run, changed, failures;
} fuzz_stats;

static void seq_str(const size_t *seq, size_t n, char *buf, size_t cap) {
  size_t pos = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && pos < cap; i++) {
    int w = snprintf(buf + pos, cap - pos, "%s%s", i ? "," : "", ge_pass_at(seq[i])->name);
    if (w < 0) break;
    pos += (size_t)w;
  }
}

static void fuzz_case(const char *name, fuzz_stats *fs) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.onnx", CORPUS, name);
  ge_graph *g = NULL;
  ge_tensor *in[MAX_IO] = {0}, *ref[MAX_IO] = {0};
  int n_in = read_inputs(name, in);
  if (n_in < 0 || ge_graph_load(path, NULL, 0, &g) != GE_OK || g->n_outputs > MAX_IO) {
    fprintf(stderr, "pass fuzz: %s: cannot load the case: %s\n", name, ge_last_error());
    fs->failures++;
    goto out;
  }
  size_t n_out = g->n_outputs;
  if (run_level0(g, in, (size_t)n_in, ref, n_out) != GE_OK) {
    /* not runnable today (the conformance ratchet reports it): nothing to compare against */
    fprintf(stderr, "pass fuzz: %s: skipped, level 0 fails: %s\n", name, ge_last_error());
    fs->skipped++;
    goto out;
  }
  fs->cases++;
  uint64_t seed = hash_str(name);
  size_t n_pass = ge_pass_count();
  for (int r = 0; r < ROUNDS; r++) {
    size_t seq[MAX_SEQ], n_seq;
    if (r == 0) {
      n_seq = n_pass < MAX_SEQ ? n_pass : MAX_SEQ;
      for (size_t i = 0; i < n_seq; i++) seq[i] = i;
      for (size_t i = n_seq; i > 1; i--) {
        size_t j = (size_t)(rng_next(&seed) % i), t = seq[i - 1];
        seq[i - 1] = seq[j];
        seq[j] = t;
      }
    } else {
      n_seq = 1 + (size_t)(rng_next(&seed) % (2 * n_pass < MAX_SEQ ? 2 * n_pass : MAX_SEQ));
      for (size_t i = 0; i < n_seq; i++) seq[i] = (size_t)(rng_next(&seed) % n_pass);
    }
    char seq_text[512];
    seq_str(seq, n_seq, seq_text, sizeof seq_text);
    fs->rounds++;
    ge_graph *opt = NULL;
    ge_status st = ge_graph_clone(g, NULL, &opt);
    if (st == GE_OK) st = ge_graph_toposort(opt);
    bool any = false;
    for (size_t i = 0; i < n_seq && st == GE_OK; i++) {
      bool changed = false;
      st = ge_pass_run_one(opt, ge_pass_at(seq[i])->name, &changed);
      fs->passes_run++;
      any |= changed;
    }
    if (any) fs->changed++;
    ge_tensor *got[MAX_IO] = {0};
    char why[256] = "";
    if (st != GE_OK) {
      snprintf(why, sizeof why, "a pass failed: %s", ge_last_error());
    } else if (opt->n_outputs != n_out) {
      snprintf(why, sizeof why, "%zu outputs instead of %zu", opt->n_outputs, n_out);
    } else {
      for (size_t i = 0; i < n_out && !why[0]; i++)
        if (strcmp(opt->values[opt->outputs[i]].name, g->values[g->outputs[i]].name))
          snprintf(why, sizeof why, "output %zu renamed to '%s'", i,
                   opt->values[opt->outputs[i]].name);
      if (!why[0] && (st = run_level0(opt, in, (size_t)n_in, got, n_out)) != GE_OK)
        snprintf(why, sizeof why, "the optimised graph does not run: %s", ge_last_error());
      for (size_t i = 0; i < n_out && !why[0]; i++) {
        char d[200];
        if (compare(got[i], ref[i], d, sizeof d)[0])
          snprintf(why, sizeof why, "output %zu ('%s'): %s", i, g->values[g->outputs[i]].name, d);
      }
    }
    if (why[0]) {
      fprintf(stderr, "pass fuzz: %s round %d, passes [%s]: %s\n", name, r, seq_text, why);
      fs->failures++;
    }
    for (size_t i = 0; i < n_out; i++) ge_tensor_free(got[i]);
    ge_graph_free(opt);
  }
out:
  for (size_t i = 0; i < MAX_IO; i++) {
    ge_tensor_free(in[i]);
    ge_tensor_free(ref[i]);
  }
  ge_graph_free(g);
}

static void test_pass_fuzz_corpus(void **state) {
  (void)state;
  size_t n = 0;
  char **names = list_cases(&n);
  if (!n) {
    fprintf(stderr, "pass fuzz: no corpus in %s (run tests/unit/data/gen_pass_fuzz_corpus.py)\n",
            CORPUS);
    fail();
  }
  fuzz_stats fs = {0};
  for (size_t i = 0; i < n; i++) {
    fuzz_case(names[i], &fs);
    free(names[i]);
  }
  free(names);
  fprintf(stderr,
          "pass fuzz: %zu cases (%zu not runnable at level 0), %zu rounds, %zu pass runs, %zu "
          "rounds rewrote the graph, %zu failures\n",
          fs.cases, fs.skipped, fs.rounds, fs.passes_run, fs.changed, fs.failures);
  assert_int_equal(fs.failures, 0);
  /* the corpus is of cases ge runs: most must be runnable */
  assert_true(fs.cases >= 3 * (fs.cases + fs.skipped) / 4);
  assert_true(fs.changed > 0);
}

int main(void) {
  if (ge_initialize(NULL, 0) != GE_OK) {
    fprintf(stderr, "ge_initialize: %s\n", ge_last_error());
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pass_fuzz_corpus)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ge_finalize();
  return rc;
}
