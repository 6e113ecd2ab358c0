/* Shared pieces of the `ge` command-line tool. */
#ifndef GE_TOOLS_CLI_H
#define GE_TOOLS_CLI_H

#include <stdbool.h>

#include "compiler/program.h"
#include "ge/ge.h"

typedef struct ge_cli_kv {
  char *key, *value;
} ge_cli_kv;

typedef struct ge_cli_args {
  const char *model;
  const char *output_dir;
  int iters;
  bool iters_given; /* --iters was given (bench and profile have their own default) */
  bool json, quiet;
  bool passes; /* inspect: run the optimisation passes and report what each changed */
  bool stats; /* run: print per-key callback metrics */
  bool verbose; /* compile: print what each pass changed and the memory plan */
  ge_cli_kv *inputs; /* NAME=FILE */
  size_t n_inputs;
  ge_cli_kv *shapes; /* NAME:D,D */
  size_t n_shapes;
  ge_option *options;
  size_t n_options;
} ge_cli_args;

int ge_cli_parse(int argc, char **argv, ge_cli_args *a);
void ge_cli_args_free(ge_cli_args *a);

/* Loads the model; prints the error and returns NULL on failure. */
ge_graph *ge_cli_load(const ge_cli_args *a);
/* Input types for compilation: declared, with --input-shape overrides.  Returns a malloc'd
   array (one per non-constant input) or NULL after printing an error. */
ge_type *ge_cli_input_types(const ge_graph *g, const ge_cli_args *a, bool dynamic_as_one);
/* Milliseconds on CLOCK_MONOTONIC (ge_now_ns). */
double ge_cli_now_ms(void);
/* Prints "ge: <what>: <status>: <message>" to stderr. */
void ge_cli_error(const char *what, ge_status st);

int ge_cli_run(const ge_cli_args *a);
int ge_cli_inspect(const ge_cli_args *a);
int ge_cli_dot(const ge_cli_args *a);
int ge_cli_profile(const ge_cli_args *a); /* profile.c: MODEL -o TRACE.json */
int ge_cli_bench(const ge_cli_args *a);   /* bench.c: latency percentiles, throughput, peak RSS */
/* bench.c: the model's inputs from --input files, others seeded random (ge_cli_fill_random
   with seed input index + 1; note_random: say so on stderr for each).  Returns a malloc'd
   array of n ge_tensor* (caller frees), or NULL after printing an error. */
ge_tensor **ge_cli_make_inputs(const ge_graph *g, const ge_cli_args *a, bool note_random, size_t *n);
/* run.c: seeded values: floats uniform in [-1, 1), integers in [0, 10), booleans alternating. */
void ge_cli_fill_random(ge_tensor *t, uint64_t seed);
int ge_cli_compile(const ge_cli_args *a); /* compile.c: MODEL -o OUT.gem */

#endif
