/* Option parsing: every key of API.md's table, validated by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/threadpool.h"
#include "ir/error.h"
#include "passes/pass.h"
#include "runtime/options.h"

void ge_options_default(ge_options *o) {
  memset(o, 0, sizeof *o);
  o->opt_level = 3;
  int n = ge_cpu_count();
  o->intra_threads = n > 64 ? 64 : n;
  o->stream_max_parallel = 1;
  o->adaptive_threads = -1;
  o->iterations_per_loop = 1;
  strcpy(o->profiling_path, "ge_trace.json");
  strcpy(o->dump_path, "ge_dump");
}

bool ge_options_adaptive_threads(const ge_options *o) {
  return o->adaptive_threads >= 0 ? o->adaptive_threads == 1 : o->run_mode == 0;
}

static ge_status bad_value(const char *key, const char *value, const char *expected) {
  return ge_error(GE_ERR_INVALID_ARGUMENT, "option %s: bad value '%s' (expected %s)", key,
                  value ? value : "(null)", expected);
}

static ge_status parse_int(const char *key, const char *value, long lo, long hi, int *out) {
  if (!value || !*value) return bad_value(key, value, "an integer");
  errno = 0;
  char *end = NULL;
  long v = strtol(value, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi) {
    char buf[96];
    snprintf(buf, sizeof buf, "an integer in %ld..%ld", lo, hi);
    return bad_value(key, value, buf);
  }
  *out = (int)v;
  return GE_OK;
}

static ge_status parse_bool(const char *key, const char *value, bool *out) {
  if (!value) return bad_value(key, value, "true/false or 1/0");
  if (!strcmp(value, "1") || !strcmp(value, "true")) *out = true;
  else if (!strcmp(value, "0") || !strcmp(value, "false")) *out = false;
  else return bad_value(key, value, "true/false or 1/0");
  return GE_OK;
}

static ge_status not_yet(const char *key, const char *value) {
  return ge_error(GE_ERR_UNSUPPORTED, "option %s=%s is not implemented in this build yet", key,
                  value);
}

static ge_status apply_one(ge_options *o, const char *key, const char *value) {
  if (!key) return ge_error(GE_ERR_INVALID_ARGUMENT, "option with a NULL key");
  if (!value) return ge_error(GE_ERR_INVALID_ARGUMENT, "option %s has a NULL value", key);
  int iv = 0;
  bool bv = false;
  if (!strcmp(key, "ge.exec.deviceId")) {
    GE_CHECK(parse_int(key, value, 0, 1 << 20, &iv));
    if (iv != 0) return ge_error(GE_ERR_INVALID_ARGUMENT, "option ge.exec.deviceId=%s: the CPU backend has only device 0", value);
    o->device_id = iv;
  } else if (!strcmp(key, "ge.exec.device")) {
    if (!strcmp(value, "cpu")) return GE_OK;
    if (!strcmp(value, "cuda")) return not_yet(key, value);
    return bad_value(key, value, "cpu or cuda");
  } else if (!strcmp(key, "ge.graphRunMode")) {
    GE_CHECK(parse_int(key, value, 0, 1, &iv));
    o->run_mode = iv; /* 1: training (variables writable); 0: inference (read-only) */
  } else if (!strcmp(key, "ge.exec.precision_mode")) {
    static const char *const known[] = {"must_keep_origin_dtype", "force_fp32",
                                        "allow_fp32_to_bf16", "allow_fp32_to_fp16",
                                        "allow_mix_precision_bf16", "allow_mix_precision_fp16"};
    size_t i = 0;
    while (i < sizeof known / sizeof known[0] && strcmp(known[i], value)) i++;
    if (i == sizeof known / sizeof known[0])
      return bad_value(key, value,
                       "must_keep_origin_dtype, force_fp32, allow_fp32_to_bf16, allow_fp32_to_fp16, "
                       "allow_mix_precision_bf16 or allow_mix_precision_fp16");
    /* The index is the ge_precision_mode (passes/pass.h).  force_fp32: kernels compute
       float16/bfloat16 in float32 internally.  The allow_* modes run the precision pass, which
       marks the nodes whose kernels compute in bf16/fp16 (docs/precision.md). */
    o->precision_mode = (int)i;
  } else if (!strcmp(key, "ge.exec.layout")) {
    /* hidden, for experiments: the index is the ge_layout_policy (compiler/layout.h) */
    static const char *const known[] = {"auto", "nhwc", "blocked", "plain"};
    size_t i = 0;
    while (i < sizeof known / sizeof known[0] && strcmp(known[i], value)) i++;
    if (i == sizeof known / sizeof known[0]) return bad_value(key, value, "auto, nhwc, blocked or plain");
    o->layout_policy = (int)i;
  } else if (!strcmp(key, "ge.exec.disableReuseMemory")) {
    GE_CHECK(parse_bool(key, value, &bv));
    o->disable_reuse = bv;
  } else if (!strcmp(key, "ge.exec.disableWinograd")) {
    GE_CHECK(parse_bool(key, value, &bv));
    o->disable_winograd = bv;
  } else if (!strcmp(key, "ge.enableSingleStream")) {
    GE_CHECK(parse_bool(key, value, &bv));
    o->single_stream = bv;
  } else if (!strcmp(key, "ge.streamMaxParallelNum")) {
    GE_CHECK(parse_int(key, value, 1, 1024, &iv));
    o->stream_max_parallel = iv;
  } else if (!strcmp(key, "ge.exec.iterationsPerLoop")) {
    GE_CHECK(parse_int(key, value, 1, 1 << 30, &iv));
    if (iv != 1) return not_yet(key, value);
    o->iterations_per_loop = iv;
  } else if (!strcmp(key, "ge.graphOptimizationLevel")) {
    GE_CHECK(parse_int(key, value, 0, 3, &iv));
    o->opt_level = iv;
  } else if (!strcmp(key, "ge.intraOpThreads")) {
    GE_CHECK(parse_int(key, value, 1, 1024, &iv));
    o->intra_threads = iv;
  } else if (!strcmp(key, "ge.exec.adaptiveThreads")) {
    GE_CHECK(parse_bool(key, value, &bv));
    o->adaptive_threads = bv;
  } else if (!strcmp(key, "ge.exec.forceOneThread")) {
    /* hidden, for tests: every run of a plan compiled for N threads takes one */
    GE_CHECK(parse_bool(key, value, &bv));
    o->force_one_thread = bv;
  } else if (!strcmp(key, "ge.exec.profilingMode")) {
    GE_CHECK(parse_bool(key, value, &bv));
    o->profiling = bv;
  } else if (!strcmp(key, "ge.exec.enableDump")) {
    GE_CHECK(parse_bool(key, value, &bv));
    o->dump = bv;
  } else if (!strcmp(key, "ge.exec.profilingPath") || !strcmp(key, "ge.exec.dumpPath")) {
    char *dst = key[8] == 'p' ? o->profiling_path : o->dump_path;
    if (!*value) return bad_value(key, value, "a path");
    if (strlen(value) >= sizeof o->profiling_path) return bad_value(key, value, "a path shorter than 1024 bytes");
    strcpy(dst, value);
  } else if (!strcmp(key, "ge.callbackMode")) {
    if (!strcmp(value, "sync")) o->callback_async = false;
    else if (!strcmp(value, "async")) o->callback_async = true;
    else return bad_value(key, value, "sync or async");
  } else if (!strcmp(key, "ge.passes.disable") || !strcmp(key, "ge.passes.enable")) {
    bool enable = !strcmp(key, "ge.passes.enable");
    char *dst = enable ? o->passes_enable : o->passes_disable;
    if (strlen(value) >= sizeof o->passes_enable) return bad_value(key, value, "a shorter list");
    ge_pass_config cfg;
    ge_pass_config_init(&cfg, 0);
    ge_status st = ge_pass_config_add_list(&cfg, enable, value);
    ge_pass_config_clear(&cfg);
    if (st != GE_OK) return ge_error_prefix(st, "option %s: ", key);
    strcpy(dst, value);
  } else {
    return ge_error(GE_ERR_INVALID_ARGUMENT, "unknown option key '%s'", key);
  }
  return GE_OK;
}

ge_status ge_options_apply(ge_options *o, const ge_option *opts, size_t n) {
  if (n && !opts) return ge_error(GE_ERR_INVALID_ARGUMENT, "options: NULL array with %zu entries", n);
  ge_options tmp = *o;
  for (size_t i = 0; i < n; i++) GE_CHECK(apply_one(&tmp, opts[i].key, opts[i].value));
  *o = tmp;
  return GE_OK;
}

ge_status ge_options_run_passes(const ge_options *o, ge_graph *g, ge_pass_report *rep) {
  ge_pass_config cfg;
  ge_pass_config_init(&cfg, o->opt_level);
  cfg.training = o->run_mode == 1;
  cfg.precision = o->precision_mode;
  cfg.threads = o->intra_threads;
  ge_status st = ge_pass_config_add_list(&cfg, false, o->passes_disable);
  if (st == GE_OK) st = ge_pass_config_add_list(&cfg, true, o->passes_enable);
  if (st == GE_OK) st = ge_passes_run(g, &cfg, rep);
  ge_pass_config_clear(&cfg);
  return st;
}
