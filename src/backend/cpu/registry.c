/* The CPU kernel registry: every family's table, looked up by (domain, name, opset). */
#include <string.h>

#include "backend/kernel.h"

extern const ge_kernel_def ge_ref_kernels_elementwise[];
extern const ge_kernel_def ge_ref_kernels_nn[];
extern const ge_kernel_def ge_ref_kernels_shape[];
extern const ge_kernel_def ge_ref_kernels_reduce[];
extern const ge_kernel_def ge_ref_kernels_fused[];

static const ge_kernel_def *const families[] = {
    ge_ref_kernels_elementwise,
    ge_ref_kernels_nn,
    ge_ref_kernels_shape,
    ge_ref_kernels_reduce,
    ge_ref_kernels_fused,
};

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
