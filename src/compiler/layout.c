/* Compile-time layout assignment; see layout.h. */
#include <stdlib.h>
#include <string.h>

#include "compiler/layout.h"
#include "compiler/program.h"
#include "passes/pass.h"

const char *ge_layout_name(int layout) {
  switch (layout) {
  case GE_LAYOUT_PLAIN: return "plain";
  case GE_LAYOUT_NHWC: return "nhwc";
  case GE_LAYOUT_NC8C: return "nChw8c";
  case GE_LAYOUT_NC16C: return "nChw16c";
  case GE_LAYOUT_NHWC_BF16: return "nhwc_bf16";
  case GE_LAYOUT_BF16: return "bf16";
  case GE_LAYOUT_ANY: return "any";
  case GE_LAYOUT_ANY_BF16: return "any_bf16";
  case GE_LAYOUT_ANY_ROWS: return "any_rows";
  default: return "?";
  }
}

static int64_t block_of(int layout) {
  return layout == GE_LAYOUT_NC8C ? 8 : layout == GE_LAYOUT_NC16C ? 16 : 1;
}

/* bf16 storage (elements are 2 bytes of a float32-typed value) */
static bool is16(int layout) { return layout == GE_LAYOUT_NHWC_BF16 || layout == GE_LAYOUT_BF16; }

/* The element order of a layout (bf16 storage: that of its float32 counterpart). */
static int order_of(int layout) {
  return layout == GE_LAYOUT_BF16 ? GE_LAYOUT_PLAIN : layout == GE_LAYOUT_NHWC_BF16 ? GE_LAYOUT_NHWC : layout;
}

static bool dims_fit(int layout, const int64_t *dims, int rank) {
  if (layout == GE_LAYOUT_PLAIN) return true;
  if (layout == GE_LAYOUT_BF16) {
    if (rank < 1 || rank > GE_MAX_RANK) return false;
    for (int i = 0; i < rank; i++)
      if (dims[i] < 0) return false;
    return true;
  }
  if (layout != GE_LAYOUT_NHWC && layout != GE_LAYOUT_NC8C && layout != GE_LAYOUT_NC16C &&
      layout != GE_LAYOUT_NHWC_BF16)
    return false;
  if (rank < 3 || rank > 5) return false;
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0) return false;
  return dims[1] % block_of(layout) == 0;
}

bool ge_layout_fits(int layout, const ge_type *t) {
  if (layout == GE_LAYOUT_PLAIN) return true;
  if (!t || t->kind != GE_TYPE_TENSOR || !ge_shape_is_static(&t->shape)) return false;
  return dims_fit(layout, t->shape.dims, t->shape.rank);
}

/* Element offset of (n, c, s) in layout l, for [N, C, SP]. */
static size_t offset_of(int l, size_t n, size_t c, size_t s, size_t C, size_t SP) {
  switch (l) {
  case GE_LAYOUT_NHWC:
  case GE_LAYOUT_NHWC_BF16: return (n * SP + s) * C + c;
  case GE_LAYOUT_NC8C:
  case GE_LAYOUT_NC16C: {
    size_t k = (size_t)block_of(l);
    return ((n * (C / k) + c / k) * SP + s) * k + c % k;
  }
  default: return (n * C + c) * SP + s;
  }
}

/* One element from sp[si] to dp[di] (f16 / t16: that side stores bf16). */
static void convert_one(unsigned char *dp, size_t di, const unsigned char *sp, size_t si, size_t elem, bool f16,
                        bool t16) {
  if (f16 && t16) {
    memcpy(dp + di * 2, sp + si * 2, 2);
  } else if (f16) {
    uint16_t h;
    memcpy(&h, sp + si * 2, 2);
    uint32_t u = (uint32_t)h << 16;
    memcpy(dp + di * 4, &u, 4);
  } else if (t16) {
    float f;
    memcpy(&f, sp + si * 4, 4);
    uint16_t h = ge_f32_to_bf16_inline(f);
    memcpy(dp + di * 2, &h, 2);
  } else if (elem == 4) {
    memcpy(dp + di * 4, sp + si * 4, 4);
  } else {
    memcpy(dp + di * elem, sp + si * elem, elem);
  }
}

ge_status ge_layout_convert(void *dst, const void *src, const int64_t *dims, int rank, size_t elem,
                            int from, int to) {
  int fo = order_of(from), to_o = order_of(to);
  bool linear = fo == GE_LAYOUT_PLAIN && to_o == GE_LAYOUT_PLAIN;
  /* between plain and row-major bf16 any rank fits; otherwise the image layouts' rules */
  bool fits = linear ? (rank >= 0 && rank <= GE_MAX_RANK && (from == GE_LAYOUT_PLAIN || dims_fit(from, dims, rank)) &&
                        (to == GE_LAYOUT_PLAIN || dims_fit(to, dims, rank)))
                     : dims_fit(fo, dims, rank) && dims_fit(to_o, dims, rank) && dims_fit(from, dims, rank) &&
                           dims_fit(to, dims, rank);
  if (!fits || elem == 0)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "layout conversion %s -> %s: does not fit a rank-%d tensor",
                    ge_layout_name(from), ge_layout_name(to), rank);
  size_t numel = 1, SP = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || ge_mul_overflow_size(numel, (size_t)dims[i], &numel))
      return ge_error(GE_ERR_INVALID_ARGUMENT, "layout conversion: tensor too large");
    if (i >= 2) SP *= (size_t)dims[i];
  }
  size_t bytes = 0;
  if (ge_mul_overflow_size(numel, elem, &bytes))
    return ge_error(GE_ERR_INVALID_ARGUMENT, "layout conversion: tensor too large");
  bool f16 = is16(from), t16 = is16(to);
  if ((f16 || t16) && elem != 4)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "layout conversion %s -> %s: %zu-byte elements (bf16 storage needs float32)",
                    ge_layout_name(from), ge_layout_name(to), elem);
  const unsigned char *sp = src;
  unsigned char *dp = dst;
  if (f16 == t16 && (fo == to_o || rank < 3)) {
    if (bytes) memcpy(dst, src, f16 && t16 ? bytes / 2 : bytes);
    return GE_OK;
  }
  if (fo == to_o || rank < 3) { /* same order: only the element type changes */
    for (size_t i = 0; i < numel; i++) convert_one(dp, i, sp, i, elem, f16, t16);
    return GE_OK;
  }
  size_t N = (size_t)dims[0], C = (size_t)dims[1];
  for (size_t n = 0; n < N; n++)
    for (size_t c = 0; c < C; c++)
      for (size_t s = 0; s < SP; s++)
        convert_one(dp, offset_of(to_o, n, c, s, C, SP), sp, offset_of(fo, n, c, s, C, SP), elem, f16, t16);
  return GE_OK;
}

/* ------------------------------------------------------------------ the assignment */

static bool graph_has_subgraphs(const ge_graph *g) {
  for (size_t i = 0; i < g->n_nodes; i++)
    for (size_t a = 0; a < g->nodes[i].n_attrs; a++)
      if (g->nodes[i].attrs[a].kind == GE_ATTR_KIND_GRAPH || g->nodes[i].attrs[a].kind == GE_ATTR_KIND_GRAPHS)
        return true;
  return false;
}

/* A value that may be stored non-plain at all: an image layout (rank 3..5), or with
   rows = true row-major bf16 (rank 1..GE_MAX_RANK). */
static bool value_candidate(const ge_plan *p, uint32_t v, bool rows) {
  const ge_graph *g = p->graph;
  const ge_slot *s = &p->slots[v];
  if (g->values[v].kind != GE_VALUE_INTERMEDIATE || s->constant || s->input_index >= 0) return false;
  const ge_type *t = &s->type;
  if (t->kind != GE_TYPE_TENSOR || t->dtype != GE_F32 || !ge_shape_is_static(&t->shape)) return false;
  if (rows ? t->shape.rank < 1 || t->shape.rank > GE_MAX_RANK : t->shape.rank < 3 || t->shape.rank > 5) return false;
  for (size_t i = 0; i < p->n_outputs; i++)
    if (p->outputs[i] == v) return false;
  return true;
}

/* The preferences of node n's first kernel candidate with a layout_pref hook. */
static void node_prefs(const ge_plan *p, const ge_node *n, ge_infer_input *in, ge_type *out_t, uint8_t *ip,
                       uint8_t *op) {
  for (size_t i = 0; i < n->n_inputs; i++) ip[i] = GE_LAYOUT_PLAIN;
  for (size_t o = 0; o < n->n_outputs; o++) op[o] = GE_LAYOUT_PLAIN;
  const ge_kernel *cand[8];
  size_t nc = ge_cpu_find_kernels(n->domain, n->op_type, n->opset, cand, 8);
  const ge_kernel *k = NULL;
  for (size_t i = 0; i < nc && !k; i++)
    if (cand[i]->layout_pref) k = cand[i];
  if (!k) return;
  for (size_t i = 0; i < n->n_inputs; i++) {
    int32_t v = n->inputs[i];
    in[i].present = v >= 0;
    in[i].type = v >= 0 ? &p->slots[v].type : NULL;
    in[i].value = v >= 0 ? p->slots[v].constant : NULL;
  }
  for (size_t o = 0; o < n->n_outputs; o++) {
    if (n->outputs[o] >= 0) out_t[o] = p->slots[n->outputs[o]].type;
    else memset(&out_t[o], 0, sizeof out_t[o]);
  }
  ge_prepare_ctx pc = ge_plan_prepare_ctx(p, n, in, out_t);
  k->layout_pref(&pc, ip, op);
}

/* Narrows a wanted layout to one that fits value type t: a blocked layout whose block does not
   divide C becomes channels-last (not the narrower block: oneDNN has no fast convolution
   between nChw8c and nChw16c). */
static uint8_t fit(int want, const ge_type *t) {
  if ((want == GE_LAYOUT_NC16C || want == GE_LAYOUT_NC8C) && !ge_layout_fits(want, t)) want = GE_LAYOUT_NHWC;
  if (!ge_layout_fits(want, t)) want = GE_LAYOUT_PLAIN;
  return (uint8_t)want;
}

ge_status ge_plan_assign_layouts(ge_plan *p, const bool *stepped) {
  const ge_graph *g = p->graph;
  free(p->layout);
  p->layout = calloc(p->n_slots + 1, 1);
  if (!p->layout) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory assigning layouts");
  int policy = p->opts.layout_policy;
  if (policy == GE_LAYOUT_POLICY_PLAIN || p->opts.opt_level < 1 || graph_has_subgraphs(g)) return GE_OK;

  /* per node: offsets into one array of input preferences and one of output preferences */
  size_t *ioff = calloc(g->n_nodes + 1, sizeof *ioff), *ooff = calloc(g->n_nodes + 1, sizeof *ooff);
  size_t max_in = 1, max_out = 1, tin = 0, tout = 0;
  uint8_t *ipref = NULL, *opref = NULL, *readers_ok = NULL, *n_readers = NULL, *consumer_want = NULL;
  uint8_t *readers_bf16 = NULL, *readers_rows = NULL, *wants_rows = NULL;
  /* bf16 storage only where every bf16-marked op may compute in bf16 (not the mix modes) */
  bool bf16_ok = p->opts.precision_mode == GE_PRECISION_FP32_TO_BF16;
  ge_infer_input *in = NULL;
  ge_type *out_t = NULL;
  int32_t *prod = NULL;
  ge_status st = GE_OK;
  if (!ioff || !ooff) goto oom;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    ioff[i] = tin;
    ooff[i] = tout;
    tin += n->n_inputs;
    tout += n->n_outputs;
    if (n->n_inputs > max_in) max_in = n->n_inputs;
    if (n->n_outputs > max_out) max_out = n->n_outputs;
  }
  ipref = calloc(tin + 1, 1);
  opref = calloc(tout + 1, 1);
  in = calloc(max_in, sizeof *in);
  out_t = calloc(max_out, sizeof *out_t);
  /* per value: its producer (node, output) and whether every reader accepts a layout */
  prod = malloc((p->n_slots + 1) * sizeof *prod);
  readers_ok = malloc(p->n_slots + 1);
  n_readers = calloc(p->n_slots + 1, 1);
  consumer_want = calloc(p->n_slots + 1, 1);
  readers_bf16 = malloc(p->n_slots + 1);
  readers_rows = malloc(p->n_slots + 1);
  wants_rows = calloc(p->n_slots + 1, 1);
  if (!ipref || !opref || !in || !out_t || !prod || !readers_ok || !n_readers || !consumer_want || !readers_bf16 ||
      !readers_rows || !wants_rows)
    goto oom;
  for (size_t v = 0; v < p->n_slots; v++) {
    prod[v] = -1;
    readers_ok[v] = 1;
    readers_bf16[v] = 1;
    readers_rows[v] = 1;
  }
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    if (!stepped[i]) continue;
    node_prefs(p, n, in, out_t, ipref + ioff[i], opref + ooff[i]);
    for (size_t o = 0; o < n->n_outputs; o++)
      if (n->outputs[o] >= 0 && (size_t)n->outputs[o] < p->n_slots) prod[n->outputs[o]] = (int32_t)i;
    for (size_t k = 0; k < n->n_inputs; k++) {
      int32_t v = n->inputs[k];
      if (v < 0 || (size_t)v >= p->n_slots) continue;
      uint8_t pr = ipref[ioff[i] + k];
      /* a row-major bf16 reader (GE_LAYOUT_BF16) takes no image layout: plain for those */
      bool rows = pr == GE_LAYOUT_BF16 || pr == GE_LAYOUT_ANY_ROWS;
      if (pr == GE_LAYOUT_PLAIN || rows) readers_ok[v] = 0;
      if (pr != GE_LAYOUT_NHWC_BF16 && pr != GE_LAYOUT_ANY_BF16) readers_bf16[v] = 0;
      if (!rows) readers_rows[v] = 0;
      if (pr == GE_LAYOUT_BF16) wants_rows[v] = 1;
      if (n_readers[v] < 255) n_readers[v]++;
      if (pr != GE_LAYOUT_PLAIN && pr != GE_LAYOUT_ANY && pr != GE_LAYOUT_ANY_BF16 && !rows && !consumer_want[v])
        consumer_want[v] = pr;
    }
  }
  /* node order is topological: a producer's inputs are decided before its outputs */
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    if (!stepped[i]) continue;
    for (size_t o = 0; o < n->n_outputs; o++) {
      int32_t v = n->outputs[o];
      if (v < 0 || (size_t)v >= p->n_slots || prod[v] != (int32_t)i) continue;
      uint8_t pr = opref[ooff[i] + o];
      if (pr == GE_LAYOUT_BF16) {
        /* row-major bf16: the producer writes it, a reader asks for it and every reader takes it */
        if (bf16_ok && policy == GE_LAYOUT_POLICY_AUTO && readers_rows[v] && wants_rows[v] && n_readers[v] &&
            value_candidate(p, (uint32_t)v, true) && ge_layout_fits(GE_LAYOUT_BF16, &p->slots[v].type))
          p->layout[v] = GE_LAYOUT_BF16;
        continue;
      }
      if (pr == GE_LAYOUT_PLAIN || !readers_ok[v] || !n_readers[v] || !value_candidate(p, (uint32_t)v, false))
        continue;
      const ge_type *t = &p->slots[v].type;
      int want = GE_LAYOUT_PLAIN;
      if (policy == GE_LAYOUT_POLICY_NHWC) {
        want = GE_LAYOUT_NHWC;
      } else if (policy == GE_LAYOUT_POLICY_BLOCKED) {
        want = GE_LAYOUT_NC16C;
      } else if (pr != GE_LAYOUT_ANY && pr != GE_LAYOUT_ANY_BF16) {
        want = pr; /* the producer's preference */
      } else {
        /* a producer that writes what it is given: its inputs' layout, else its readers' */
        for (size_t k = 0; k < n->n_inputs && want == GE_LAYOUT_PLAIN; k++) {
          int32_t u = n->inputs[k];
          uint8_t ik = ipref[ioff[i] + k];
          if (u >= 0 && (ik == GE_LAYOUT_ANY || ik == GE_LAYOUT_ANY_BF16) && p->layout[u] != GE_LAYOUT_BF16)
            want = p->layout[u];
        }
        if (want == GE_LAYOUT_PLAIN) want = consumer_want[v];
      }
      /* bf16 storage: only when the producer writes it (not a float32-only "any") and every
         reader takes it; else the same, float32 */
      if (want == GE_LAYOUT_NHWC_BF16 && (!bf16_ok || !readers_bf16[v] || pr == GE_LAYOUT_ANY)) want = GE_LAYOUT_NHWC;
      p->layout[v] = fit(want, t);
    }
  }
  goto done;
oom:
  st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory assigning layouts");
done:
  free(ipref);
  free(opref);
  free(in);
  free(out_t);
  free(prod);
  free(readers_ok);
  free(n_readers);
  free(consumer_want);
  free(readers_bf16);
  free(readers_rows);
  free(wants_rows);
  free(ioff);
  free(ooff);
  return st;
}
