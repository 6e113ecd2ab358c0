/* The CPU kernel registry: every family's table, looked up by (domain, name, opset). */
#include <stdio.h>
#include <string.h>

#include "backend/kernel.h"

extern const ge_kernel_def ge_ref_kernels_elementwise[];
extern const ge_kernel_def ge_ref_kernels_nn[];
extern const ge_kernel_def ge_ref_kernels_shape[];
extern const ge_kernel_def ge_ref_kernels_reduce[];
extern const ge_kernel_def ge_ref_kernels_fused[];
extern const ge_kernel_def ge_ref_kernels_nn2[];
extern const ge_kernel_def ge_ref_kernels_quant[];
extern const ge_kernel_def ge_ref_kernels_rnn[];
extern const ge_kernel_def ge_ref_kernels_signal[];
extern const ge_kernel_def ge_ref_kernels_text[];
extern const ge_kernel_def ge_ref_kernels_random[];
extern const ge_kernel_def ge_ref_kernels_misc[];
extern const ge_kernel_def ge_ref_kernels_ge[];
extern const ge_kernel_def ge_ref_kernels_control[];
extern const ge_kernel_def ge_ref_kernels_sequence[];

static const ge_kernel_def *const families[] = {
    ge_ref_kernels_elementwise,
    ge_ref_kernels_nn,
    ge_ref_kernels_shape,
    ge_ref_kernels_reduce,
    ge_ref_kernels_fused,
    ge_ref_kernels_nn2,
    ge_ref_kernels_quant,
    ge_ref_kernels_rnn,
    ge_ref_kernels_signal,
    ge_ref_kernels_text,
    ge_ref_kernels_random,
    ge_ref_kernels_misc,
    ge_ref_kernels_ge,
    ge_ref_kernels_control,
    ge_ref_kernels_sequence,
};

extern const ge_kernel_def ge_fast_kernels_dnnl[];
extern const ge_kernel_def ge_fast_kernels_pgemm[];
extern const ge_kernel_def ge_fast_kernels_stem[];
extern const ge_kernel_def ge_fast_kernels_fast[];
extern const ge_kernel_def ge_fast_kernels_tf[];
extern const ge_kernel_def ge_fast_kernels_ew_bcast[], ge_fast_kernels_ew[], ge_fast_kernels_move[],
    ge_fast_kernels_reduce[];

/* Tried before the reference kernels, in this order; name: the family in profiles
   (ge_cpu_kernel_name). */
static const struct {
  const ge_kernel_def *table;
  const char *name;
} fast_families[] = {
    {ge_fast_kernels_ew_bcast, "fast"}, /* fast/ew.c: only the broadcasts transformer.c does not fast-path */
    {ge_fast_kernels_tf, "fast"},       /* before oneDNN: small Softmax/LayerNorm rows need no OpenMP team */
    {ge_fast_kernels_pgemm, "pgemm"},   /* fast/pgemm.c: float32 MatMul with a weight, on AVX-512 */
    {ge_fast_kernels_stem, "stem"},     /* fast/stem.c: a CNN's first convolution on its planar input */
    {ge_fast_kernels_dnnl, "onednn"},
    {ge_fast_kernels_fast, "fast"},
    {ge_fast_kernels_ew, "fast"}, /* fast/ew.c, move.c, reduce.c */
    {ge_fast_kernels_move, "fast"},
    {ge_fast_kernels_reduce, "fast"},
};

static bool in_table(const ge_kernel_def *t, const ge_kernel *k) {
  for (; t->name; t++)
    if (&t->kernel == k) return true;
  return false;
}

void ge_cpu_kernel_name(const ge_kernel *k, const void *state, char *buf, size_t cap) {
  if (!buf || !cap) return;
  const char *family = "reference";
  for (size_t f = 0; k && f < sizeof fast_families / sizeof fast_families[0]; f++)
    if (in_table(fast_families[f].table, k)) {
      family = fast_families[f].name;
      break;
    }
  const char *what = k && k->describe ? k->describe(state) : NULL;
  if (what && *what) snprintf(buf, cap, "%s %s", family, what);
  else snprintf(buf, cap, "%s", family);
}

static bool domain_eq(const char *a, const char *b) {
  if (!a || !strcmp(a, "ai.onnx")) a = "";
  if (!b || !strcmp(b, "ai.onnx")) b = "";
  return strcmp(a, b) == 0;
}

const ge_kernel *ge_cpu_find_kernel(const char *domain, const char *name, int64_t opset) {
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const ge_kernel_def *k = families[f]; k->name; k++)
      if (!strcmp(k->name, name) && domain_eq(k->domain, domain) && opset >= k->since &&
          (k->until == 0 || opset <= k->until))
        return &k->kernel;
  return NULL;
}

static bool def_matches(const ge_kernel_def *k, const char *domain, const char *name, int64_t opset) {
  return !strcmp(k->name, name) && domain_eq(k->domain, domain) && opset >= k->since &&
         (k->until == 0 || opset <= k->until);
}

size_t ge_cpu_find_kernels(const char *domain, const char *name, int64_t opset,
                           const ge_kernel **out, size_t cap) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof fast_families / sizeof fast_families[0]; f++)
    for (const ge_kernel_def *k = fast_families[f].table; k->name; k++)
      if (n < cap && def_matches(k, domain, name, opset)) out[n++] = &k->kernel;
  const ge_kernel *ref = ge_cpu_find_kernel(domain, name, opset);
  if (ref && n < cap) out[n++] = ref;
  return n;
}
