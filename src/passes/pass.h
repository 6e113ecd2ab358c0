/* The graph optimisation pass framework.
 *
 * A pass rewrites a topologically sorted ge_graph in place and leaves it sorted.  pipeline.c
 * holds the ordered table of passes with the lowest optimisation level that runs each
 * (ge.graphOptimizationLevel: 0 = no passes, 1 = cleanups, 2 = + folding and fusions into
 * ai.ge ops, 3 = + attention fusion).  Passes can be forced off or on by name
 * (ge.passes.disable=a,b / ge.passes.enable=c).
 *
 * Integration (session/compiler): after ge_graph_toposort of the session's copy,
 *     ge_pass_config cfg; ge_pass_config_init(&cfg, opts->opt_level);
 *     ge_pass_config_add_list(&cfg, false, "<ge.passes.disable>");   (optional)
 *     ge_pass_config_add_list(&cfg, true, "<ge.passes.enable>");     (optional)
 *     ge_pass_report rep = {0};
 *     st = ge_passes_run(g, &cfg, &rep);   (rep may be NULL)
 *     ge_pass_report_print(stderr, &rep); ge_pass_report_clear(&rep); ge_pass_config_clear(&cfg);
 * The graph's value names of inputs and outputs survive every pass. */
#ifndef GE_PASSES_PASS_H
#define GE_PASSES_PASS_H

#include <stdio.h>

#include "ir/ir.h"

typedef struct ge_pass_config {
  int level;         /* 0..3 */
  char **disable;    /* owned pass names forced off */
  size_t n_disable;
  char **enable;     /* owned pass names forced on (whatever the level; not at level 0 unless listed) */
  size_t n_enable;
  bool training;     /* ge.graphRunMode=1: Dropout is not an identity, and passes of level >= 2
                        (folding/fusions) run only when listed in `enable` */
  int max_rounds;    /* sweeps of the whole table until nothing changes; 0 = default (4) */
  int precision;     /* ge_precision_mode (ge.exec.precision_mode); the precision pass runs at
                        every level when it is one of the allow_* modes */
  int threads;       /* ge.intraOpThreads the graph will run with; 0 = unknown (conv_dw: 1) */
} ge_pass_config;

/* ge.exec.precision_mode, in the order of docs/options.md. */
typedef enum ge_precision_mode {
  GE_PRECISION_KEEP = 0,      /* must_keep_origin_dtype (default) */
  GE_PRECISION_FORCE_FP32,    /* force_fp32 */
  GE_PRECISION_FP32_TO_BF16,  /* allow_fp32_to_bf16 */
  GE_PRECISION_FP32_TO_FP16,  /* allow_fp32_to_fp16 */
  GE_PRECISION_MIX_BF16,      /* allow_mix_precision_bf16 */
  GE_PRECISION_MIX_FP16,      /* allow_mix_precision_fp16 */
} ge_precision_mode;

/* The node attribute the precision pass sets (a string, "bf16" or "fp16") on a float32 node
   whose kernel may compute internally in that precision, with float32 inputs and outputs. */
#define GE_PRECISION_ATTR "ge_compute_precision"

typedef struct ge_pass_ctx {
  const ge_pass_config *cfg;
  int level;
} ge_pass_ctx;

typedef struct ge_pass {
  const char *name;
  int min_level;
  ge_status (*run)(ge_graph *g, ge_pass_ctx *c, bool *changed);
} ge_pass;

typedef struct ge_pass_stat {
  const char *name;       /* static */
  size_t nodes_before;    /* before its first run */
  size_t nodes_after;     /* after its last run */
  uint64_t usec;          /* summed over runs */
  unsigned runs;
  bool changed;           /* in any run */
  int64_t removed;        /* nodes this pass itself removed, summed over its runs (negative:
                             it added nodes) */
} ge_pass_stat;

typedef struct ge_pass_report {
  ge_pass_stat *stats;    /* one per pass that ran, in table order */
  size_t n_stats;
  size_t nodes_before, nodes_after;
  uint64_t usec;          /* total, type inference included */
  unsigned rounds;
} ge_pass_report;

void ge_pass_config_init(ge_pass_config *cfg, int level);
/* Adds a comma-separated list of pass names (spaces ignored, empty list allowed) to the
   disabled (enable false) or enabled list.  GE_ERR_INVALID_ARGUMENT naming an unknown pass. */
ge_status ge_pass_config_add_list(ge_pass_config *cfg, bool enable, const char *csv);
void ge_pass_config_clear(ge_pass_config *cfg);
/* Whether ge.passes.enable lists the pass `name` (it then runs at every level, and passes that
   weigh a gain, such as conv_dw, take every case they can). */
bool ge_pass_config_enables(const ge_pass_config *cfg, const char *name);

/* The pass table. */
size_t ge_pass_count(void);
const ge_pass *ge_pass_at(size_t i);
const ge_pass *ge_pass_find(const char *name);

/* Runs the enabled passes in table order, repeatedly, until a round changes nothing.  Types
   are inferred before the first pass and after every change.  report may be NULL. */
ge_status ge_passes_run(ge_graph *g, const ge_pass_config *cfg, ge_pass_report *report);
/* Runs one named pass (tests); infers types first. */
ge_status ge_pass_run_one(ge_graph *g, const char *name, bool *changed);
void ge_pass_report_print(FILE *f, const ge_pass_report *r);
void ge_pass_report_clear(ge_pass_report *r);

/* Type inference over the whole graph (infer_types.c): annotates every value's ge_type using
   the op schemas, with initializers as known values, sweeping in node order until nothing
   changes.  A node inference rejects leaves its outputs unknown (the compiler reports it
   later): this never fails except for out-of-memory. */
ge_status ge_passes_infer_types(ge_graph *g);

/* The passes (one file each). */
ge_status ge_pass_const_to_init(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_dce(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_cse(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_identity_elim(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_chains(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_fold_bn(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_matmul_add(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_gelu(ge_graph *g, ge_pass_ctx *c, bool *changed);
/* f16_compute.c: float16 / bfloat16 regions on float32 values (Casts where they end) */
ge_status ge_pass_f16_compute(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_layernorm(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_attention(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_conv_sum(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_act_fusion(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_conv_dw(ge_graph *g, ge_pass_ctx *c, bool *changed);
ge_status ge_pass_precision(ge_graph *g, ge_pass_ctx *c, bool *changed);

#endif
