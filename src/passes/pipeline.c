/* The ordered pass table, levels, forced enables/disables and the per-pass report. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

/* Order matters: cleanups first; fusions that produce bias/sum before the activation fusion
   (which then folds the activation into FusedConv/FusedGemm/FusedMatMul). */
static const ge_pass k_passes[] = {
    {"const_to_init", 1, ge_pass_const_to_init},
    {"identity_elim", 1, ge_pass_identity_elim},
    {"chains", 1, ge_pass_chains},
    {"cse", 1, ge_pass_cse},
    {"dce", 1, ge_pass_dce},
    {"f16_compute", 2, ge_pass_f16_compute},
    {"fold_bn", 2, ge_pass_fold_bn},
    {"matmul_add", 2, ge_pass_matmul_add},
    {"gelu", 2, ge_pass_gelu},
    {"layernorm", 2, ge_pass_layernorm},
    {"attention", 3, ge_pass_attention},
    {"conv_sum", 2, ge_pass_conv_sum},
    {"act_fusion", 2, ge_pass_act_fusion},
    /* after act_fusion: the two convolutions it pairs carry their activations */
    {"conv_dw", 2, ge_pass_conv_dw},
    /* level 0: runs at every level, when ge.exec.precision_mode asks for it (see precision.c) */
    {"precision", 0, ge_pass_precision},
};
#define N_PASSES (sizeof k_passes / sizeof k_passes[0])

size_t ge_pass_count(void) { return N_PASSES; }
const ge_pass *ge_pass_at(size_t i) { return i < N_PASSES ? &k_passes[i] : NULL; }
const ge_pass *ge_pass_find(const char *name) {
  for (size_t i = 0; i < N_PASSES; i++)
    if (!strcmp(k_passes[i].name, name)) return &k_passes[i];
  return NULL;
}

void ge_pass_config_init(ge_pass_config *cfg, int level) {
  memset(cfg, 0, sizeof *cfg);
  cfg->level = level;
}

void ge_pass_config_clear(ge_pass_config *cfg) {
  for (size_t i = 0; i < cfg->n_disable; i++) free(cfg->disable[i]);
  for (size_t i = 0; i < cfg->n_enable; i++) free(cfg->enable[i]);
  free(cfg->disable);
  free(cfg->enable);
  cfg->disable = cfg->enable = NULL;
  cfg->n_disable = cfg->n_enable = 0;
}

ge_status ge_pass_config_add_list(ge_pass_config *cfg, bool enable, const char *csv) {
  if (!csv) return GE_OK;
  const char *p = csv;
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    const char *q = p;
    while (*q && *q != ',') q++;
    size_t len = (size_t)(q - p);
    while (len && p[len - 1] == ' ') len--;
    char name[64];
    if (len >= sizeof name)
      return ge_error(GE_ERR_INVALID_ARGUMENT, "ge.passes.%s: pass name '%.*s...' is too long",
                      enable ? "enable" : "disable", 32, p);
    memcpy(name, p, len);
    name[len] = 0;
    if (!ge_pass_find(name)) {
      char known[512] = "";
      for (size_t i = 0; i < N_PASSES; i++) {
        strncat(known, k_passes[i].name, sizeof known - strlen(known) - 1);
        if (i + 1 < N_PASSES) strncat(known, ",", sizeof known - strlen(known) - 1);
      }
      return ge_error(GE_ERR_INVALID_ARGUMENT, "ge.passes.%s: unknown pass '%s' (known: %s)",
                      enable ? "enable" : "disable", name, known);
    }
    char ***arr = enable ? &cfg->enable : &cfg->disable;
    size_t *n = enable ? &cfg->n_enable : &cfg->n_disable;
    char **na = realloc(*arr, (*n + 1) * sizeof **arr);
    if (!na) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory parsing a pass list");
    *arr = na;
    if (!(na[*n] = strdup(name))) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory parsing a pass list");
    (*n)++;
    p = q;
  }
  return GE_OK;
}

static bool listed(char *const *arr, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(arr[i], name)) return true;
  return false;
}

bool ge_pass_config_enables(const ge_pass_config *cfg, const char *name) {
  return listed(cfg->enable, cfg->n_enable, name);
}

static bool pass_enabled(const ge_pass_config *cfg, const ge_pass *p) {
  if (listed(cfg->disable, cfg->n_disable, p->name)) return false;
  if (ge_pass_config_enables(cfg, p->name)) return true;
  if (p->min_level == 0) return cfg->precision >= GE_PRECISION_FP32_TO_BF16; /* the precision pass */
  /* training graphs keep their structure: only the level-1 cleanups run unless forced */
  if (cfg->training && p->min_level >= 2) return false;
  return cfg->level >= 1 && cfg->level >= p->min_level;
}

static uint64_t now_usec(void) { return ge_now_ns() / 1000u; }

ge_status ge_passes_run(ge_graph *g, const ge_pass_config *cfg, ge_pass_report *report) {
  if (!g || !cfg) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_passes_run: NULL argument");
  uint64_t t_start = now_usec();
  ge_pass_stat stats[N_PASSES];
  memset(stats, 0, sizeof stats);
  bool any_enabled = false;
  for (size_t i = 0; i < N_PASSES; i++) {
    stats[i].name = k_passes[i].name;
    if (pass_enabled(cfg, &k_passes[i])) any_enabled = true;
  }
  size_t nodes_before = g->n_nodes;
  unsigned rounds = 0;
  ge_status st = GE_OK;
  if (any_enabled) {
    st = ge_passes_infer_types(g);
    int max_rounds = cfg->max_rounds > 0 ? cfg->max_rounds : 4;
    ge_pass_ctx ctx = {.cfg = cfg, .level = cfg->level};
    for (int r = 0; r < max_rounds && st == GE_OK; r++) {
      bool round_changed = false;
      rounds++;
      for (size_t i = 0; i < N_PASSES && st == GE_OK; i++) {
        const ge_pass *p = &k_passes[i];
        if (!pass_enabled(cfg, p)) continue;
        ge_pass_stat *s = &stats[i];
        if (!s->runs) s->nodes_before = g->n_nodes;
        uint64_t t0 = now_usec();
        size_t before = g->n_nodes;
        bool changed = false;
        st = p->run(g, &ctx, &changed);
        s->removed += (int64_t)before - (int64_t)g->n_nodes;
        if (st == GE_OK && changed) st = ge_passes_infer_types(g);
        s->usec += now_usec() - t0;
        s->runs++;
        s->nodes_after = g->n_nodes;
        if (changed) s->changed = round_changed = true;
        if (st != GE_OK) st = ge_error_prefix(st, "pass '%s': ", p->name);
      }
      if (!round_changed) break;
    }
  }
  if (report) {
    memset(report, 0, sizeof *report);
    size_t n = 0;
    for (size_t i = 0; i < N_PASSES; i++) n += stats[i].runs ? 1 : 0;
    report->stats = calloc(n + 1, sizeof *report->stats);
    if (report->stats) {
      for (size_t i = 0; i < N_PASSES; i++)
        if (stats[i].runs) report->stats[report->n_stats++] = stats[i];
    } else if (st == GE_OK) {
      st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory writing the pass report");
    }
    report->nodes_before = nodes_before;
    report->nodes_after = g->n_nodes;
    report->usec = now_usec() - t_start;
    report->rounds = rounds;
  }
  return st;
}

ge_status ge_pass_run_one(ge_graph *g, const char *name, bool *changed) {
  const ge_pass *p = ge_pass_find(name);
  if (!p) return ge_error(GE_ERR_NOT_FOUND, "no pass named '%s'", name);
  GE_CHECK(ge_passes_infer_types(g));
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, 3);
  ge_pass_ctx ctx = {.cfg = &cfg, .level = 3};
  bool ch = false;
  GE_CHECK(p->run(g, &ctx, &ch));
  if (ch) GE_CHECK(ge_passes_infer_types(g));
  if (changed) *changed = ch;
  return GE_OK;
}

void ge_pass_report_print(FILE *f, const ge_pass_report *r) {
  if (!f || !r) return;
  fprintf(f, "%-16s %6s %8s %8s %8s %10s %s\n", "pass", "runs", "before", "after", "removed", "usec",
          "changed");
  for (size_t i = 0; i < r->n_stats; i++) {
    const ge_pass_stat *s = &r->stats[i];
    fprintf(f, "%-16s %6u %8zu %8zu %8lld %10llu %s\n", s->name, s->runs, s->nodes_before,
            s->nodes_after, (long long)s->removed, (unsigned long long)s->usec,
            s->changed ? "yes" : "no");
  }
  fprintf(f, "%-16s %6u %8zu %8zu %8lld %10llu\n", "total", r->rounds, r->nodes_before, r->nodes_after,
          (long long)r->nodes_before - (long long)r->nodes_after,
          (unsigned long long)r->usec);
}

void ge_pass_report_clear(ge_pass_report *r) {
  if (!r) return;
  free(r->stats);
  memset(r, 0, sizeof *r);
}
