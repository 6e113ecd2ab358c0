/* Channels-last activations between oneDNN kernels: the agreement and the fallback.  See
 * dnnl_layout.h. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_layout.h"
#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "compiler/layout.h"
#include "ops/fused.h"

static bool dom_onnx(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

static bool is_conv(const ge_node *n) {
  return (dom_onnx(n->domain) && !strcmp(n->op_type, "Conv")) ||
         (n->domain && !strcmp(n->domain, GE_FUSED_DOMAIN) &&
          (!strcmp(n->op_type, "FusedConv") || !strcmp(n->op_type, "FusedConvDw")));
}

static bool is_fused_conv(const ge_node *n) {
  return n->domain && !strcmp(n->domain, GE_FUSED_DOMAIN) && !strcmp(n->op_type, "FusedConv");
}

static bool is_pool(const ge_node *n, bool global_ok) {
  if (!dom_onnx(n->domain)) return false;
  if (!strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "AveragePool")) return true;
  return global_ok && (!strcmp(n->op_type, "GlobalAveragePool") || !strcmp(n->op_type, "GlobalMaxPool"));
}

/* Concat along the channel axis of a rank-`rank` tensor. */
static bool is_channel_concat(const ge_node *n, int rank) {
  if (!dom_onnx(n->domain) || strcmp(n->op_type, "Concat") || n->opset < 4) return false;
  const ge_attr_value *a = ge_node_attr(n, "axis");
  if (!a || a->kind != GE_ATTR_KIND_INT) return false;
  return a->i == 1 || a->i == 1 - (int64_t)rank;
}

static bool has_subgraphs(const ge_graph *g) {
  for (size_t i = 0; i < g->n_nodes; i++)
    for (size_t a = 0; a < g->nodes[i].n_attrs; a++)
      if (g->nodes[i].attrs[a].kind == GE_ATTR_KIND_GRAPH || g->nodes[i].attrs[a].kind == GE_ATTR_KIND_GRAPHS)
        return true;
  return false;
}

/* Outputs other than output 0 that are present (MaxPool Indices): not handled. */
static bool single_output(const ge_node *n) {
  for (size_t o = 1; o < n->n_outputs; o++)
    if (n->outputs[o] >= 0) return false;
  return n->n_outputs >= 1;
}

bool ge_dn_value_nhwc(const ge_graph *g, int32_t v, const ge_type *t) {
  if (!g || !t || v < 0 || (size_t)v >= g->n_values) return false;
  if (t->kind != GE_TYPE_TENSOR || t->dtype != GE_F32 || !ge_shape_is_static(&t->shape)) return false;
  if (t->shape.rank < 3 || t->shape.rank > 5) return false;
  const ge_value *val = &g->values[v];
  if (val->kind != GE_VALUE_INTERMEDIATE) return false;
  for (size_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return false;
  /* the producer */
  const ge_node *prod = NULL;
  if (val->producer >= 0 && (size_t)val->producer < g->n_nodes) {
    const ge_node *n = &g->nodes[val->producer];
    if (n->n_outputs > 0 && n->outputs[0] == v) prod = n;
  }
  if (!prod)
    for (size_t i = 0; i < g->n_nodes && !prod; i++)
      for (size_t o = 0; o < g->nodes[i].n_outputs; o++)
        if (g->nodes[i].outputs[o] == v) {
          if (o != 0) return false;
          prod = &g->nodes[i];
          break;
        }
  if (!prod || prod->n_outputs < 1 || prod->outputs[0] != v || !single_output(prod)) return false;
  int rank = t->shape.rank;
  if (!is_conv(prod) && !is_pool(prod, false) && !is_channel_concat(prod, rank)) return false;
  /* a producer on constants may be folded at compile time: keep such values plain */
  bool all_const = true;
  for (size_t k = 0; k < prod->n_inputs && all_const; k++) {
    int32_t in = prod->inputs[k];
    if (in >= 0 && (size_t)in < g->n_values && g->values[in].kind != GE_VALUE_CONSTANT) all_const = false;
  }
  if (all_const) return false;
  /* every use */
  size_t uses = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    const ge_node *n = &g->nodes[i];
    for (size_t k = 0; k < n->n_inputs; k++) {
      if (n->inputs[k] != v) continue;
      uses++;
      bool ok = false;
      if (is_channel_concat(n, rank)) ok = single_output(n);
      else if (k == 0) ok = (is_conv(n) || is_pool(n, true)) && single_output(n);
      else if (k == 3) ok = is_fused_conv(n);
      if (!ok) return false;
    }
  }
  if (uses == 0) return false;
  return !has_subgraphs(g);
}

int ge_dn_in_layout(const ge_prepare_ctx *p, size_t i) {
  if (!p->in_layout || i >= p->n_in || i >= p->node->n_inputs || !p->in[i].present) return GE_LAYOUT_PLAIN;
  return p->in_layout[i] < GE_LAYOUT_COUNT ? p->in_layout[i] : GE_LAYOUT_PLAIN;
}

int ge_dn_out_layout(const ge_prepare_ctx *p, size_t o) {
  if (!p->out_layout || o >= p->n_out || o >= p->node->n_outputs || p->node->outputs[o] < 0) return GE_LAYOUT_PLAIN;
  return p->out_layout[o] < GE_LAYOUT_COUNT ? p->out_layout[o] : GE_LAYOUT_PLAIN;
}

/* The oneDNN tag of a layout for rank ndims (3..5); dnnl_format_tag_undef when none. */
static dnnl_format_tag_t layout_tag(int layout, int ndims) {
  static const dnnl_format_tag_t tags[GE_LAYOUT_COUNT][3] = {
      {dnnl_ncw, dnnl_nchw, dnnl_ncdhw},
      {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc},
      {dnnl_nCw8c, dnnl_nChw8c, dnnl_nCdhw8c},
      {dnnl_nCw16c, dnnl_nChw16c, dnnl_nCdhw16c},
      {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc}, /* GE_LAYOUT_NHWC_BF16 */
      {dnnl_ncw, dnnl_nchw, dnnl_ncdhw}, /* GE_LAYOUT_BF16 (any rank: ge_dn_md_layout) */
  };
  if (ndims < 3 || ndims > 5 || layout < 0 || layout >= GE_LAYOUT_COUNT) return dnnl_format_tag_undef;
  return tags[layout][ndims - 3];
}

ge_status ge_dn_md_layout(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                          int layout, dnnl_data_type_t dt) {
  if (ndims < 1 || ndims > DNNL_MAX_NDIMS)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: rank %d is out of range", ndims);
  /* row-major bf16 storage: a plain bf16 descriptor, any rank */
  if (layout == GE_LAYOUT_BF16) return ge_dn_md_dt(p, md, ndims, dims, NULL, dnnl_bf16);
  if (layout == GE_LAYOUT_PLAIN || ndims < 3) return ge_dn_md_dt(p, md, ndims, dims, NULL, dt);
  dnnl_format_tag_t tag = layout_tag(layout, ndims);
  if (tag == dnnl_format_tag_undef)
    return ge_prepare_fail(p, GE_ERR_INTERNAL, "oneDNN: layout %s of a rank-%d tensor", ge_layout_name(layout), ndims);
  dnnl_dims_t d;
  for (int i = 0; i < ndims; i++) d[i] = dims[i];
  if (layout == GE_LAYOUT_NHWC_BF16) dt = dnnl_bf16; /* how the value is stored, whatever the compute */
  if (dnnl_memory_desc_init_by_tag(md, ndims, d, dt, tag) != dnnl_success)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %s memory descriptor rejected", ge_layout_name(layout));
  return GE_OK;
}

int ge_dn_md_to_layout(const dnnl_memory_desc_t *md) {
  if (!md || md->ndims < 3 || md->ndims > 5 || md->format_kind != dnnl_blocked) return GE_LAYOUT_PLAIN;
  for (int l = GE_LAYOUT_NHWC; l < GE_LAYOUT_COUNT; l++) {
    if (l == GE_LAYOUT_NHWC_BF16 || l == GE_LAYOUT_BF16) continue; /* storage types, not formats */
    dnnl_memory_desc_t t;
    if (dnnl_memory_desc_init_by_tag(&t, md->ndims, md->dims, md->data_type, layout_tag(l, md->ndims)) ==
            dnnl_success &&
        dnnl_memory_desc_equal(&t, md))
      return l;
  }
  return GE_LAYOUT_PLAIN;
}

/* ------------------------------------------------------------------ the fallback */

#define FB_MAX 16

struct ge_dn_fallback {
  const ge_kernel *k;
  void *kstate;
  size_t n_in, n_out;
  uint8_t in_l[FB_MAX], out_l[FB_MAX]; /* ge_layout of each operand */
};

void ge_dn_nchw_nhwc(float *dst, const float *src, size_t n, size_t c, size_t sp, bool to_nhwc) {
  for (size_t b = 0; b < n; b++) {
    const float *sb = src + b * c * sp;
    float *db = dst + b * c * sp;
    if (to_nhwc) {
      for (size_t ch = 0; ch < c; ch++)
        for (size_t s = 0; s < sp; s++) db[s * c + ch] = sb[ch * sp + s];
    } else {
      for (size_t s = 0; s < sp; s++)
        for (size_t ch = 0; ch < c; ch++) db[ch * sp + s] = sb[s * c + ch];
    }
  }
}

ge_status ge_dn_layout_guard(const ge_prepare_ctx *p, void **state, ge_status st) {
  if (st != GE_ERR_UNSUPPORTED) return st;
  bool any = false;
  ge_dn_fallback fb;
  memset(&fb, 0, sizeof fb);
  if (p->n_in > FB_MAX || p->n_out > FB_MAX) return st;
  fb.n_in = p->n_in;
  fb.n_out = p->n_out;
  for (size_t i = 0; i < p->n_in; i++) any |= (fb.in_l[i] = (uint8_t)ge_dn_in_layout(p, i)) != GE_LAYOUT_PLAIN;
  for (size_t o = 0; o < p->n_out; o++) any |= (fb.out_l[o] = (uint8_t)ge_dn_out_layout(p, o)) != GE_LAYOUT_PLAIN;
  if (!any) return st; /* plain layouts: the next candidate runs it as usual */
  const ge_node *n = p->node;
  fb.k = ge_cpu_find_kernel(n->domain, n->op_type, n->opset);
  if (!fb.k || !fb.k->run || fb.k->dynamic_output)
    return ge_prepare_fail(p, GE_ERR_INTERNAL, "oneDNN declined a node whose tensors are not plain, and "
                                               "no reference kernel can stand in");
  /* the reference kernel sees plain tensors */
  ge_prepare_ctx plain = *p;
  plain.in_layout = plain.out_layout = NULL;
  if (fb.k->prepare) GE_CHECK(fb.k->prepare(&plain, &fb.kstate));
  ge_dn_state *s = calloc(1, sizeof *s);
  ge_dn_fallback *f = malloc(sizeof *f);
  if (!s || !f) {
    free(s);
    free(f);
    if (fb.k->release && fb.kstate) fb.k->release(fb.kstate);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  *f = fb;
  s->fb = f;
  s->what = "reference kernel (layouts converted per run)";
  *state = s;
  return GE_OK;
}

void ge_dn_fallback_release(ge_dn_fallback *fb) {
  if (!fb) return;
  if (fb->k && fb->k->release && fb->kstate) fb->k->release(fb->kstate);
  free(fb);
}

/* A float32 tensor that layout l (not plain) fits: rank 3..5, any rank for row-major bf16. */
static bool is_image(const ge_tensor *t, int l) {
  return t && t->dtype == GE_F32 && (l == GE_LAYOUT_BF16 ? t->rank >= 1 : t->rank >= 3 && t->rank <= 5) && t->data;
}

ge_status ge_dn_fallback_run(const ge_dn_state *s, ge_kctx *ctx) {
  const ge_dn_fallback *fb = s->fb;
  if (ctx->n_in > FB_MAX || ctx->n_out > FB_MAX)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "channels-last fallback: too many operands");
  ge_tensor tin[FB_MAX], tout[FB_MAX];
  ge_tensor *pin[FB_MAX], *pout[FB_MAX];
  void *bufs[2 * FB_MAX];
  size_t nbufs = 0;
  ge_status st = GE_OK;
  for (size_t i = 0; i < ctx->n_in; i++) pin[i] = ctx->in[i];
  for (size_t o = 0; o < ctx->n_out; o++) pout[o] = ctx->out[o];
  for (size_t i = 0; i < ctx->n_in && st == GE_OK; i++) {
    if (i >= fb->n_in || fb->in_l[i] == GE_LAYOUT_PLAIN || !ctx->in[i]) continue;
    if (!is_image(ctx->in[i], fb->in_l[i])) {
      st = ge_kctx_fail(ctx, GE_ERR_INTERNAL, "layout fallback: input %zu is not a float32 image", i);
      break;
    }
    ge_tensor_view(&tin[i], ctx->in[i]);
    tin[i].data = bufs[nbufs] = ge_aligned_alloc(ctx->in[i]->nbytes ? ctx->in[i]->nbytes : 1);
    if (!bufs[nbufs]) {
      st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    nbufs++;
    st = ge_layout_convert(tin[i].data, ctx->in[i]->data, ctx->in[i]->dims, ctx->in[i]->rank, 4, fb->in_l[i],
                           GE_LAYOUT_PLAIN);
    if (st != GE_OK) {
      st = ge_kctx_fail(ctx, st, "layout fallback: input %zu: %s", i, ge_last_error());
      break;
    }
    pin[i] = &tin[i];
  }
  for (size_t o = 0; o < ctx->n_out && st == GE_OK; o++) {
    if (o >= fb->n_out || fb->out_l[o] == GE_LAYOUT_PLAIN || !ctx->out[o]) continue;
    ge_tensor_view(&tout[o], ctx->out[o]);
    tout[o].data = bufs[nbufs] = ge_aligned_alloc(ctx->out[o]->nbytes ? ctx->out[o]->nbytes : 1);
    if (!bufs[nbufs]) {
      st = ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
      break;
    }
    nbufs++;
    pout[o] = &tout[o];
  }
  if (st == GE_OK) {
    ge_kctx c2 = *ctx;
    c2.in = pin;
    c2.out = pout;
    st = fb->k->run(fb->kstate, &c2);
  }
  for (size_t o = 0; st == GE_OK && o < ctx->n_out; o++) {
    if (pout[o] == ctx->out[o]) continue;
    if (!is_image(pout[o], fb->out_l[o]) || pout[o]->nbytes != ctx->out[o]->nbytes) {
      st = ge_kctx_fail(ctx, GE_ERR_INTERNAL, "layout fallback: output %zu is not a float32 image", o);
      break;
    }
    st = ge_layout_convert(ctx->out[o]->data, pout[o]->data, pout[o]->dims, pout[o]->rank, 4, GE_LAYOUT_PLAIN,
                           fb->out_l[o]);
    if (st != GE_OK) st = ge_kctx_fail(ctx, st, "layout fallback: output %zu: %s", o, ge_last_error());
  }
  for (size_t b = 0; b < nbufs; b++) ge_aligned_free(bufs[b]);
  return st;
}

/* ------------------------------------------------------------------ Concat over channels */

/* Concat of float32 images along the channel axis: its inputs and output may be channels-last
   (an inception block's branches), which the oneDNN concat reads and writes directly. */
static ge_status concat_impl(const ge_prepare_ctx *p, void **state) {
  if (!ge_dn_static_f32(p) || p->n_in < 1 || p->n_in + 1 > GE_DN_MAX_ARGS || p->n_out != 1)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: needs 1..%d static float32 inputs",
                           GE_DN_MAX_ARGS - 1);
  const ge_shape *y = &p->out[0].shape;
  if (y->rank < 3 || y->rank > 5) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: rank %d", y->rank);
  int64_t axis = ge_node_attr_int(p->node, "axis", 1);
  if (axis < 0) axis += y->rank;
  if (axis != 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: axis %lld", (long long)axis);
  dnnl_memory_desc_t src[GE_DN_MAX_ARGS], dst;
  for (size_t i = 0; i < p->n_in; i++) {
    if (!p->in[i].present || p->in[i].type->shape.rank != y->rank)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: input %zu", i);
    const ge_shape *x = &p->in[i].type->shape;
    for (int d = 0; d < y->rank; d++)
      if (d != 1 && x->dims[d] != y->dims[d])
        return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: input %zu shape", i);
    if (x->dims[1] == 0) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: empty input %zu", i);
    GE_CHECK(ge_dn_md_layout(p, &src[i], x->rank, x->dims, ge_dn_in_layout(p, i), dnnl_f32));
  }
  GE_CHECK(ge_dn_md_layout(p, &dst, y->rank, y->dims, ge_dn_out_layout(p, 0), dnnl_f32));
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, "concat", &s, &saved));
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  ge_status st = GE_OK;
  dnnl_status_t ds = dnnl_primitive_attr_create(&attr);
  if (ds == dnnl_success) ds = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (ds == dnnl_success)
    ds = dnnl_concat_primitive_desc_create(&pd, &dst, (int)p->n_in, 1, src, attr, s->eng);
  if (ds == dnnl_success) {
    const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sb = sm ? dnnl_memory_desc_get_size(sm) : 0;
    if (sb > s->scratch_bytes) s->scratch_bytes = sb;
    ds = dnnl_primitive_create(&s->prim, pd);
  }
  if (ds != dnnl_success) st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN concat: not supported");
  for (size_t i = 0; st == GE_OK && i < p->n_in; i++)
    st = ge_dn_add_arg(p, s, pd, DNNL_ARG_MULTIPLE_SRC + (int)i, GE_DN_IN, (int)i, &src[i], NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &dst, NULL, -1);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  ge_dn_prepare_end(s, saved);
  if (st != GE_OK) {
    ge_dn_release(s);
    return st;
  }
  *state = s;
  return GE_OK;
}

ge_status ge_dn_concat_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, concat_impl(p, state));
}

void ge_dn_concat_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) {
  if (!ge_dn_static_f32(p) || p->n_out != 1 || !ge_shape_is_static(&p->out[0].shape)) return;
  int rank = p->out[0].shape.rank;
  if (rank < 3 || rank > 5 || !is_channel_concat(p->node, rank)) return;
  for (size_t i = 0; i < p->n_in; i++)
    if (!p->in[i].present || p->in[i].value || p->in[i].type->shape.rank != rank) return;
  for (size_t i = 0; i < p->n_in; i++) in[i] = GE_LAYOUT_ANY;
  out[0] = GE_LAYOUT_ANY;
}
