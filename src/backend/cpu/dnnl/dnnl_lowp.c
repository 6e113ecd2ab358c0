/* Lower-precision (bf16 / fp16) compute mode of the oneDNN kernels; see dnnl_lowp.h. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_lowp.h"

dnnl_data_type_t ge_dn_lowp_dt(const ge_prepare_ctx *p) {
  const char *m = ge_node_attr_string(p->node, GE_DN_PRECISION_ATTR, NULL);
  if (!m) return dnnl_f32;
  if (!strcmp(m, "bf16")) {
    /* bf16 without native instructions is emulated (slower than float32): refuse it */
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) != (unsigned)dnnl_cpu_isa_avx512_core_bf16)
      return dnnl_f32;
    return dnnl_bf16;
  }
  if (!strcmp(m, "fp16")) return dnnl_f16;
  return dnnl_f32;
}

static ge_status md_fail(const ge_prepare_ctx *p, int ndims, dnnl_status_t st) {
  return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %d-d memory descriptor rejected (status %d)", ndims,
                         (int)st);
}

ge_status ge_dn_md_dt(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                      const int64_t *strides, dnnl_data_type_t dt) {
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: rank %d is out of range", ndims);
  dnnl_dims_t d, s;
  int64_t acc = 1;
  for (int i = ndims - 1; i >= 0; i--) {
    d[i] = dims[i];
    s[i] = strides ? strides[i] : acc;
    if (dims[i] > 0 && acc > INT64_MAX / dims[i])
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: tensor too large");
    acc *= dims[i] > 0 ? dims[i] : 1;
  }
  dnnl_status_t st = dnnl_memory_desc_init_by_strides(md, ndims, d, dt, s);
  return st == dnnl_success ? GE_OK : md_fail(p, ndims, st);
}

ge_status ge_dn_md_any_dt(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims,
                          const int64_t *dims, dnnl_data_type_t dt) {
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: rank %d is out of range", ndims);
  dnnl_dims_t d;
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  dnnl_status_t st = dnnl_memory_desc_init_by_tag(md, ndims, d, dt, dnnl_format_tag_any);
  return st == dnnl_success ? GE_OK : md_fail(p, ndims, st);
}

static const char *dt_name(dnnl_data_type_t dt) {
  return dt == dnnl_bf16 ? "bf16" : dt == dnnl_f16 ? "fp16" : "f32";
}

ge_status ge_dn_lowp_check(const ge_prepare_ctx *p, const_dnnl_primitive_desc_t pd, dnnl_data_type_t dt) {
  if (dt == dnnl_f32 || !pd) return GE_OK;
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
    return GE_OK;
  if (!strncmp(impl, "ref", 3) || strstr(impl, ":ref"))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: only a reference %s implementation (%s)",
                           dt_name(dt), impl);
  return GE_OK;
}

/* The one-time note of a fallback (a process-wide latch, written once, never reset: the only
   static state of the oneDNN backend; it carries no per-graph state). */
static atomic_flag g_fallback_noted[2] = {ATOMIC_FLAG_INIT, ATOMIC_FLAG_INIT};

static void note_fallback(const ge_prepare_ctx *p, dnnl_data_type_t dt, const char *why) {
  int k = dt == dnnl_f16 ? 1 : 0;
  if (atomic_flag_test_and_set(&g_fallback_noted[k])) return;
  char buf[160];
  fprintf(stderr,
          "ge: note: %s compute is not available here (%s: %s); nodes marked %s compute in float32 "
          "(shown once)\n",
          dt_name(dt), ge_node_desc(p->node, buf, sizeof buf), why ? why : "declined", dt_name(dt));
}

ge_status ge_dn_lowp_prepare(const ge_prepare_ctx *p, void **state, ge_dn_impl_fn impl, int flags) {
  const char *m = ge_node_attr_string(p->node, GE_DN_PRECISION_ATTR, NULL);
  dnnl_data_type_t dt = ge_dn_lowp_dt(p);
  if (dt != dnnl_f32) {
    ge_status st = impl(p, state, flags, dt);
    if (st != GE_ERR_UNSUPPORTED) return st;
    /* the message names the node already: keep what follows "(Op): " */
    char why[200];
    const char *e = ge_last_error(), *colon = strstr(e, "): ");
    snprintf(why, sizeof why, "%s", colon ? colon + 3 : e);
    st = impl(p, state, flags, dnnl_f32);
    if (st == GE_OK) note_fallback(p, dt, why);
    return st;
  }
  ge_status st = impl(p, state, flags, dnnl_f32);
  if (st == GE_OK && m && !strcmp(m, "bf16"))
    note_fallback(p, dnnl_bf16, "the processor has neither AVX512-BF16 nor AMX-BF16");
  return st;
}
