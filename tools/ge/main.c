/* The `ge` command-line tool: run, inspect and dot. */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define GE_DEFAULT_SPINCOUNT "20000" /* python/ge/__init__.py sets the same */

static void usage(FILE *f) {
  fprintf(f,
          "usage: ge COMMAND MODEL [options]\n"
          "\n"
          "commands:\n"
          "  run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--iters N] [--quiet] [--stats]\n"
          "            [--input-shape NAME:D,D,..]... [options]\n"
          "        run the model; inputs not given are filled with seeded random values\n"
          "  inspect MODEL [--json] [--passes] [--input-shape NAME:D,D,..]...\n"
          "        inputs, outputs, op histogram, parameters, FLOPs, memory;\n"
          "        --passes: run the optimisation passes first and report each one\n"
          "  dot MODEL [--input-shape NAME:D,D,..]...\n"
          "        Graphviz of the compiled graph (constant-folded nodes removed)\n"
          "  compile MODEL -o OUT.gem [--input-shape NAME:D,D,..]... [--verbose] [options]\n"
          "        optimize once and save an offline model (.gem) that run/inspect load directly;\n"
          "        --verbose: what each pass changed, and the memory plan\n"
          "  profile MODEL -o TRACE.json [--iters N] [--input NAME=FILE.npy]... [options]\n"
          "        run with profiling on (ge.exec.profilingMode): Chrome trace, top ops by time\n"
          "  bench MODEL [--iters N] [--threads N] [--input NAME=FILE.npy]... [options]\n"
          "        latency percentiles (p50/p90/p99), throughput, peak RSS\n"
          "\n"
          "options:\n"
          "  --threads N          ge.intraOpThreads\n"
          "  --opt-level N        ge.graphOptimizationLevel (0..3)\n"
          "  --precision P        ge.exec.precision_mode: keep, fp32, bf16, fp16, mixed_bf16,\n"
          "                       mixed_fp16 or the long names (see docs/options.md)\n"
          "  --option KEY=VALUE   any session option (see docs/options.md)\n"
          "  --version            print the version\n");
}

/* With OMP_PROC_BIND (or OMP_PLACES, GOMP_CPU_AFFINITY) set, the OpenMP runtime bound this
   initial thread to its first place when it loaded, and the image execv starts inherits that
   mask: its runtime would then see one CPU and put every thread of the run on it (MobileNetV2
   at 2 threads: 4.9 ms, both threads on CPU 0, against 2.6).  Give the thread back the CPUs of
   all the places the runtime found (the mask it started with, or the user's OMP_PLACES) first. */
static void unbind_for_exec(void) {
  int (*num_places)(void), (*place_num_procs)(int);
  void (*place_proc_ids)(int, int *);
  void *a = dlsym(RTLD_DEFAULT, "omp_get_num_places"), *b = dlsym(RTLD_DEFAULT, "omp_get_place_num_procs"),
       *c = dlsym(RTLD_DEFAULT, "omp_get_place_proc_ids");
  if (!a || !b || !c) return;
  memcpy(&num_places, &a, sizeof a);
  memcpy(&place_num_procs, &b, sizeof b);
  memcpy(&place_proc_ids, &c, sizeof c);
  cpu_set_t set;
  CPU_ZERO(&set);
  int places = num_places();
  for (int p = 0; p < places; p++) {
    int n = place_num_procs(p);
    if (n <= 0) continue;
    int *ids = calloc((size_t)n, sizeof *ids);
    if (!ids) return;
    place_proc_ids(p, ids);
    for (int i = 0; i < n; i++)
      if (ids[i] >= 0 && ids[i] < CPU_SETSIZE) CPU_SET(ids[i], &set);
    free(ids);
  }
  if (CPU_COUNT(&set) > 0) sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv) {
  /* oneDNN's OpenMP threads spin after each kernel, by default for milliseconds; the bound is
     read when the OpenMP runtime loads (before main).  Unless the user chose a policy, run
     again with a short spin (GOMP_SPINCOUNT: idle threads stay ready 0.2-0.3 ms here,
     docs/options.md) after which they sleep. */
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
    setenv("GOMP_SPINCOUNT", GE_DEFAULT_SPINCOUNT, 1);
    unbind_for_exec();
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the runtime's default */
  }
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("ge %s\n", ge_version());
    return 0;
  }
  ge_cli_args a;
  if (ge_cli_parse(argc - 2, argv + 2, &a) != 0) {
    usage(stderr);
    ge_cli_args_free(&a);
    return 2;
  }
  int rc;
  if (!strcmp(cmd, "run")) rc = ge_cli_run(&a);
  else if (!strcmp(cmd, "inspect")) rc = ge_cli_inspect(&a);
  else if (!strcmp(cmd, "dot")) rc = ge_cli_dot(&a);
  else if (!strcmp(cmd, "profile")) rc = ge_cli_profile(&a);
  else if (!strcmp(cmd, "bench")) rc = ge_cli_bench(&a);
  else if (!strcmp(cmd, "compile")) rc = ge_cli_compile(&a);
  else {
    fprintf(stderr, "ge: unknown command '%s'\n", cmd);
    usage(stderr);
    rc = 2;
  }
  ge_cli_args_free(&a);
  return rc;
}
