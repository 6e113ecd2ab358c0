/* oneDNN kernels: tried before the reference kernels for the ops they cover.
 *
 * Design notes
 * - Prepare creates the oneDNN primitive once, for the static shapes of the plan (a node whose
 *   input 0 shape is not static, or any non-float32 tensor, is declined: GE_ERR_UNSUPPORTED, and
 *   the reference kernel runs it).  Constant weights and biases are reordered ("packed") into the
 *   layout the primitive picked (format_tag any) at prepare time and owned by the state.
 * - Layout: ge tensors are plain row-major (NCHW), except float32 images that flow only between
 *   oneDNN convolutions, poolings and channel Concats: the compiler stores those in the layout
 *   the producing convolution's primitive picks with format "any" (its layout_pref hook;
 *   channels-last for the brgemm convolutions, or nChw16c / nChw8c), decided before prepare and
 *   read from ge_prepare_ctx.in_layout / out_layout (compiler/layout.h; dnnl_layout.h for the
 *   wrapped reference kernel of a participant oneDNN declines).  A convolution is created for
 *   its decided non-plain layouts as they are (no reorder), and with "any" plus per-run
 *   reorders when oneDNN has only a reference kernel for them or the activation is plain; the
 *   other primitives work on the plain layout directly.
 * - MatMul with a B that has no batch dims (a weight) folds A's batch dims into M, so that B is
 *   a 2-D operand packed once at prepare time.
 * - Threads: the primitive is created with the calling thread's OpenMP team size set to
 *   ge.intraOpThreads (p->intra_threads) and each run sets it to ctx->threads for the duration
 *   of the call (omp_set_num_threads in the calling thread, restored afterwards), so with N
 *   threads requested at most N cores are busy.  OpenMP's wait policy is the runtime's: GOMP
 *   spins for a bounded time (GOMP_SPINCOUNT, OMP_WAIT_POLICY=passive to disable) after a
 *   parallel region; ge does not change process-wide environment.
 * - Precision: a node the precision pass marked (attribute ge_compute_precision = bf16/fp16)
 *   prepares its primitive with bf16/fp16 source and weights and a float32 destination
 *   (pooling/norms/softmax: bf16 -> bf16); the reorders of ge_dn_add_arg convert.  Each *_impl
 *   takes that data type; ge_dn_lowp_prepare (dnnl_lowp.c) falls back to float32 where the
 *   processor or oneDNN cannot do it fast.
 * - Concurrency: a state is read-only after prepare, except its run cache (scratchpad and
 *   reordered activations, and the stream and memory objects around them, created by the first
 *   run and re-pointed at each run's tensors), which one run at a time holds (try-lock); a
 *   concurrent run of the same plan creates its own buffer, stream and memory objects, so
 *   concurrent runs of one plan share nothing else mutable.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_lowp.h"
#include "backend/cpu/dnnl/dnnl_layout.h"
#include "backend/cpu/dnnl/dnnl_pool.h"
#include "backend/cpu/dnnl/dnnl_prim.h"
#include "backend/kernel.h"
#include "compiler/layout.h"
#include "ops/fused.h"

/* ------------------------------------------------------------------ helpers */

static bool is_const(const ge_prepare_ctx *p, size_t i) {
  return i < p->n_in && p->in[i].present && p->in[i].value && p->in[i].value->data;
}
static bool has_in(const ge_prepare_ctx *p, size_t i) { return i < p->n_in && p->in[i].present; }
static bool has_out(const ge_prepare_ctx *p, size_t o) {
  return o < p->n_out && p->node->outputs[o] >= 0;
}
static const ge_shape *in_shape(const ge_prepare_ctx *p, size_t i) { return &p->in[i].type->shape; }

static ge_status plain_md(const ge_prepare_ctx *p, dnnl_memory_desc_t *md, const ge_shape *s) {
  if (s->rank == 0) {
    int64_t one = 1;
    return ge_dn_md(p, md, 1, &one, NULL);
  }
  return ge_dn_md(p, md, s->rank, s->dims, NULL);
}

/* Adds input i as GE_DN_CONST when constant, else GE_DN_IN. */
static ge_status add_in(const ge_prepare_ctx *p, ge_dn_state *s, dnnl_primitive_desc_t pd, int arg,
                        size_t i, const dnnl_memory_desc_t *user_md) {
  if (is_const(p, i)) return ge_dn_add_arg(p, s, pd, arg, GE_DN_CONST, (int)i, user_md, p->in[i].value, -1);
  return ge_dn_add_arg(p, s, pd, arg, GE_DN_IN, (int)i, user_md, NULL, -1);
}

static ge_status finish(const ge_prepare_ctx *p, ge_dn_state *s, int saved, dnnl_primitive_desc_t pd,
                        ge_status st, void **state) {
  (void)p;
  if (pd) dnnl_primitive_desc_destroy(pd);
  ge_dn_prepare_end(s, saved);
  if (st != GE_OK) {
    ge_dn_release(s);
    return st;
  }
  ge_dn_drop_packed_originals(p, s);
  *state = s;
  return GE_OK;
}

/* Spatial geometry of a windowed op (conv / pool): pads resolved from auto_pad / pads and the
   inferred output, checked against oneDNN's output formula. */
typedef struct geom {
  int nsp;
  int64_t k[3], s[3], d[3], pl[3], pr[3];
} geom;

static ge_status resolve_geom(const ge_prepare_ctx *p, const ge_shape *x, const ge_shape *y, const int64_t *kern,
                              geom *g, bool ceil_ok) {
  int nsp = x->rank - 2;
  if (nsp < 1 || nsp > 3) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: %d spatial dims", nsp);
  g->nsp = nsp;
  const int64_t *st = NULL, *dl = NULL, *pads = NULL;
  size_t nst = 0, ndl = 0, npads = 0;
  ge_node_attr_ints(p->node, "strides", &st, &nst);
  ge_node_attr_ints(p->node, "dilations", &dl, &ndl);
  ge_node_attr_ints(p->node, "pads", &pads, &npads);
  if ((nst && nst != (size_t)nsp) || (ndl && ndl != (size_t)nsp) || (npads && npads != 2 * (size_t)nsp))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: attribute lengths do not match %d spatial dims", nsp);
  const char *ap = ge_node_attr_string(p->node, "auto_pad", "NOTSET");
  for (int i = 0; i < nsp; i++) {
    g->k[i] = kern[i];
    g->s[i] = nst ? st[i] : 1;
    g->d[i] = ndl ? dl[i] : 1;
    if (g->k[i] < 1 || g->s[i] < 1 || g->d[i] < 1)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: kernel/stride/dilation must be >= 1");
    int64_t in = x->dims[2 + i], out = y->dims[2 + i], kr = (g->k[i] - 1) * g->d[i] + 1;
    if (!strcmp(ap, "NOTSET")) {
      g->pl[i] = npads ? pads[i] : 0;
      g->pr[i] = npads ? pads[nsp + i] : 0;
    } else if (!strcmp(ap, "VALID")) {
      g->pl[i] = g->pr[i] = 0;
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
      int64_t total = (out - 1) * g->s[i] + kr - in;
      if (total < 0) total = 0;
      bool upper = !strcmp(ap, "SAME_UPPER");
      g->pl[i] = upper ? total / 2 : total - total / 2;
      g->pr[i] = total - g->pl[i];
    } else {
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: auto_pad '%s'", ap);
    }
    if (g->pl[i] < 0 || g->pr[i] < 0) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: negative pads");
    int64_t span = in + g->pl[i] + g->pr[i] - kr;
    if (span < 0 || span / g->s[i] + 1 != out) {
      if (!ceil_ok) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: output size does not match pads");
      /* ceil mode: extend the right padding to cover the last window */
      g->pr[i] = (out - 1) * g->s[i] + kr - in - g->pl[i];
      if (g->pr[i] < 0) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN: ceil-mode padding");
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ Conv / FusedConv / ConvTranspose */

/* oneDNN's reference (slow) implementation was picked. */
static bool is_ref_impl(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return false;
  return !strncmp(impl, "ref", 3) || strstr(impl, ":ref") != NULL;
}

/* A float32 3x3 stride-1 convolution where oneDNN's Winograd F(4x4,3x3) kernel (jit_wino_4x3,
   avx512_core; picked by name: with dnnl_convolution_winograd oneDNN lists the F(2x2,3x3) one
   first, which is slower) beats its direct brgemm one.  Measured inside ResNet-50 at 1 thread
   on a 4th-gen Xeon (min of 20 runs, reorders included): 56x56x64 1.39 -> 0.94 ms, 28x28x128
   1.35 -> 1.10 ms, but 14x14x256 1.50 -> 1.76 ms (its transformed weights, 4x the direct ones,
   no longer stay in cache) and 7x7 slower still: so at least 28x28 output pixels per thread.
   Its activations are nChw16c (neither brgemm nor the plan's channels-last): they are
   reordered per run (~30-60 us a layer).  Winograd rounds differently: ResNet-50's largest
   deviation from onnxruntime grows from 3.6e-5 to 6.6e-5 (outputs up to 2.4), inside the model
   tests' 1e-4 + 1e-3 relative tolerance. */
static bool conv_wino_ok(const ge_shape *x, const ge_shape *w, const ge_shape *y, const geom *gm, int64_t g,
                         int threads) {
  if (x->rank != 4 || g != 1 || w->dims[2] != 3 || w->dims[3] != 3) return false;
  for (int i = 0; i < 2; i++)
    if (gm->s[i] != 1 || gm->d[i] != 1) return false;
  if (x->dims[1] < 32 || y->dims[1] < 32) return false;
  int64_t px = y->dims[0] * y->dims[2] * y->dims[3]; /* output pixels, <= numel of y */
  return px >= 784 * (int64_t)(threads > 1 ? threads : 1);
}

/* A layout query (conv_layout_pref): the primitive oneDNN picks with source and destination
   "any", and its layouts; nothing is packed. */
typedef struct conv_query {
  uint8_t src, dst;
  bool bf16; /* the primitive computes in bf16 (source and weights) */
} conv_query;

/* cdt: the compute data type of source and weights (dnnl_f32, or bf16/f16: dnnl_lowp.h).
   q: a layout query (non-NULL): fills *q and returns GE_ERR_STATE (no state) on success. */
static ge_status conv_prepare_impl(const ge_prepare_ctx *p, void **state, bool fused, bool transposed,
                                   dnnl_data_type_t cdt, conv_query *q) {
  if (!ge_dn_static_f32(p) || !has_in(p, 1) || !is_const(p, 1))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: needs static float32 shapes and constant weights");
  const ge_shape *x = in_shape(p, 0), *w = in_shape(p, 1), *y = &p->out[0].shape;
  if (x->rank < 3 || x->rank > 5 || w->rank != x->rank || y->rank != x->rank)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: rank %d", x->rank);
  int64_t g = ge_node_attr_int(p->node, "group", 1);
  int64_t n = x->dims[0], ic = x->dims[1], oc = y->dims[1];
  if (g < 1 || ic % g || oc % g || n < 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: groups");
  int nsp = x->rank - 2;
  geom gm;
  if (transposed) {
    /* ConvTranspose: only explicit pads; the right padding absorbs output_padding. */
    const ge_attr_value *os = ge_node_attr(p->node, "output_shape");
    const char *ap = ge_node_attr_string(p->node, "auto_pad", "NOTSET");
    if (os || strcmp(ap, "NOTSET"))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN deconv: output_shape / auto_pad");
    if (w->dims[0] != ic || w->dims[1] * g != oc)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN deconv: weight shape");
    const int64_t *st = NULL, *dl = NULL, *pads = NULL;
    size_t nst = 0, ndl = 0, npads = 0;
    ge_node_attr_ints(p->node, "strides", &st, &nst);
    ge_node_attr_ints(p->node, "dilations", &dl, &ndl);
    ge_node_attr_ints(p->node, "pads", &pads, &npads);
    if ((nst && nst != (size_t)nsp) || (ndl && ndl != (size_t)nsp) || (npads && npads != 2 * (size_t)nsp))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN deconv: attribute lengths");
    gm.nsp = nsp;
    for (int i = 0; i < nsp; i++) {
      gm.k[i] = w->dims[2 + i];
      gm.s[i] = nst ? st[i] : 1;
      gm.d[i] = ndl ? dl[i] : 1;
      gm.pl[i] = npads ? pads[i] : 0;
      int64_t kr = (gm.k[i] - 1) * gm.d[i] + 1;
      gm.pr[i] = (x->dims[2 + i] - 1) * gm.s[i] + kr - gm.pl[i] - y->dims[2 + i];
      if (gm.s[i] < 1 || gm.d[i] < 1 || gm.pl[i] < 0 || gm.pr[i] < 0)
        return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN deconv: geometry");
    }
  } else {
    if (w->dims[0] != oc || w->dims[1] * g != ic)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: weight shape");
    GE_CHECK(resolve_geom(p, x, y, w->dims + 2, &gm, false));
  }
  bool bias = has_in(p, 2);
  int sum_in = fused && has_in(p, 3) ? 3 : -1;
  if (bias && (in_shape(p, 2)->rank != 1 || in_shape(p, 2)->dims[0] != oc))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: bias shape");

  /* descriptors: src/dst any (blocked), weights any (packed), bias plain */
  dnnl_memory_desc_t src_u, dst_u, w_u, b_u, src_a, dst_a, w_a;
  int64_t wd[6], ws[6];
  int wr = 0;
  /* user weight layout: conv [g*oc/g, ic/g, k..] = [g, oc/g, ic/g, k..]; deconv [g*ic/g, oc/g, k..]
     = [g, ic/g, oc/g, k..] seen as logical [g, oc/g, ic/g, k..] with swapped strides */
  int64_t ksz = 1;
  for (int i = 0; i < nsp; i++) ksz *= w->dims[2 + i];
  int64_t ocg = oc / g, icg = ic / g;
  if (g > 1) wd[wr++] = g;
  wd[wr++] = ocg;
  wd[wr++] = icg;
  for (int i = 0; i < nsp; i++) wd[wr++] = w->dims[2 + i];
  {
    int64_t acc = 1;
    for (int i = wr - 1; i >= 0; i--) {
      ws[i] = acc;
      acc *= wd[i];
    }
    if (transposed) {
      int o = g > 1 ? 1 : 0; /* logical o at o, i at o+1 */
      ws[o + 1] = ksz * ocg;
      ws[o] = ksz;
      if (g > 1) ws[0] = ksz * ocg * icg;
    }
  }
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, transposed ? "deconvolution" : "convolution", &s, &saved));
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  /* the layouts the plan decided (compiler/layout.h); a non-plain activation is handed to the
     primitive as is (no reorder), unless oneDNN has no implementation for it */
  int xl = transposed ? GE_LAYOUT_PLAIN : ge_dn_in_layout(p, 0);
  int yl = transposed ? GE_LAYOUT_PLAIN : ge_dn_out_layout(p, 0);
  int suml = sum_in >= 0 ? ge_dn_in_layout(p, (size_t)sum_in) : GE_LAYOUT_PLAIN;
  dnnl_memory_desc_t sum_u, src_f, dst_f;
  ge_status st = ge_dn_md_layout(p, &src_u, x->rank, x->dims, xl, dnnl_f32);
  if (st == GE_OK) st = ge_dn_md_layout(p, &dst_u, y->rank, y->dims, yl, dnnl_f32);
  if (st == GE_OK) st = ge_dn_md_layout(p, &sum_u, y->rank, y->dims, suml, dnnl_f32);
  if (st == GE_OK) st = ge_dn_md_layout(p, &src_f, x->rank, x->dims, xl, cdt);
  if (st == GE_OK) st = ge_dn_md_layout(p, &dst_f, y->rank, y->dims, yl, dnnl_f32);
  if (st == GE_OK) st = ge_dn_md(p, &w_u, wr, wd, ws);
  if (st == GE_OK && bias) st = ge_dn_md(p, &b_u, 1, &oc, NULL);
  if (st == GE_OK) st = ge_dn_md_any_dt(p, &src_a, x->rank, x->dims, cdt);
  if (st == GE_OK) st = ge_dn_md_any(p, &dst_a, y->rank, y->dims);
  if (st == GE_OK) st = ge_dn_md_any_dt(p, &w_a, wr, wd, cdt);
  if (st == GE_OK) {
    if (dnnl_primitive_attr_create(&attr) != dnnl_success || dnnl_post_ops_create(&po) != dnnl_success)
      st = ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "oneDNN: out of memory");
  }
  if (st == GE_OK && sum_in >= 0 && dnnl_post_ops_append_sum(po, 1.f) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: sum post-op");
  if (st == GE_OK && fused) st = ge_dn_append_act(p, po);
  if (st == GE_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: post-ops");
  if (st == GE_OK) {
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < nsp; i++) {
      strides[i] = gm.s[i];
      dil[i] = gm.d[i] - 1;
      pl[i] = gm.pl[i];
      pr[i] = gm.pr[i];
    }
    dnnl_status_t ds;
    /* attempt -1: Winograd (conv_wino_ok) with "any" activations, reordered per run; attempt 0:
       the decided non-plain layouts as they are; attempt 1: "any" (reorders) */
    bool fixed = !q && (xl != GE_LAYOUT_PLAIN || yl != GE_LAYOUT_PLAIN);
    bool wino = !q && !transposed && !p->no_winograd && cdt == dnnl_f32 && sum_in < 0 &&
                conv_wino_ok(x, w, y, &gm, g, s->threads);
    for (int attempt = wino ? -1 : fixed ? 0 : 1; attempt < 2; attempt++) {
      if (attempt == 0 && !fixed) continue;
      const dnnl_memory_desc_t *sa = attempt == 0 && xl != GE_LAYOUT_PLAIN ? &src_f : &src_a;
      const dnnl_memory_desc_t *da = attempt == 0 && yl != GE_LAYOUT_PLAIN ? &dst_f : &dst_a;
      if (attempt == -1) {
        dnnl_convolution_desc_t d;
        ds = dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_winograd,
                                                        sa, &w_a, bias ? &b_u : NULL, da, strides, dil, pl, pr);
        if (ds == dnnl_success) st = ge_dn_create_impl(p, s, &d, attr, "wino_4x3", &pd);
      } else if (transposed) {
        dnnl_deconvolution_desc_t d;
        ds = dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                          sa, &w_a, bias ? &b_u : NULL, da, strides, dil, pl, pr);
        if (ds == dnnl_success) st = ge_dn_create(p, s, &d, attr, &pd);
      } else {
        dnnl_convolution_desc_t d;
        ds = dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct,
                                                        sa, &w_a, bias ? &b_u : NULL, da, strides, dil, pl, pr);
        if (ds == dnnl_success) st = ge_dn_create(p, s, &d, attr, &pd);
      }
      if (ds != dnnl_success) st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: descriptor rejected");
      if (st == GE_OK) st = ge_dn_lowp_check(p, pd, cdt);
      if (st == GE_OK && attempt == 0 && is_ref_impl(pd)) /* no fast kernel for these layouts */
        st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN conv: only a reference implementation for %s -> %s",
                             ge_layout_name(xl), ge_layout_name(yl));
      if (attempt == -1 && ds != dnnl_success) st = GE_ERR_UNSUPPORTED; /* try direct */
      if (st != GE_ERR_UNSUPPORTED || attempt == 1) break;
      if (pd) dnnl_primitive_desc_destroy(pd);
      pd = NULL;
      if (s->prim) dnnl_primitive_destroy(s->prim);
      s->prim = NULL;
      st = GE_OK;
    }
  }
  if (st == GE_OK && q) {
    q->src = (uint8_t)ge_dn_md_to_layout(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0));
    q->dst = (uint8_t)ge_dn_md_to_layout(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    q->bf16 = cdt == dnnl_bf16;
    st = GE_ERR_STATE; /* the query ends here: nothing to pack */
  }
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &src_u, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_WEIGHTS, GE_DN_CONST, 1, &w_u, p->in[1].value, -1);
  if (st == GE_OK && bias) st = add_in(p, s, pd, DNNL_ARG_BIAS, 2, &b_u);
  if (st == GE_OK) st = ge_dn_add_out_sum(p, s, pd, DNNL_ARG_DST, 0, &dst_u, sum_in, &sum_u);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return finish(p, s, saved, pd, st, state);
}

/* flags: 1 fused, 2 transposed */
/* flags: 1 fused, 2 transposed, 4 layout query (*state is the conv_query to fill) */
static ge_status conv_impl_dt(const ge_prepare_ctx *p, void **state, int flags, dnnl_data_type_t cdt) {
  conv_query *q = (flags & 4) ? (conv_query *)*state : NULL;
  return conv_prepare_impl(p, state, (flags & 1) != 0, (flags & 2) != 0, cdt, q);
}
/* What the convolution's primitive picks for its activations with format "any" (bf16 source
   when the precision pass marked the node and the processor can).  A convolution that really
   computes in bf16 with channels-last activations prefers them stored bf16 (GE_LAYOUT_NHWC_BF16:
   its source is converted anyway; its destination, and a residual summed into it, are then
   bf16 too), and takes a bf16-stored residual. */
static void conv_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out, int flags) {
  conv_query q = {GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN, false};
  void *st = &q;
  if (ge_dn_lowp_prepare(p, &st, conv_impl_dt, flags | 4) != GE_ERR_STATE) return;
  in[0] = q.bf16 && q.src == GE_LAYOUT_NHWC ? GE_LAYOUT_NHWC_BF16 : q.src;
  out[0] = q.bf16 && q.dst == GE_LAYOUT_NHWC ? GE_LAYOUT_NHWC_BF16 : q.dst;
  /* the residual: reordered if it differs */
  if ((flags & 1) && p->n_in > 3) in[3] = q.bf16 ? GE_LAYOUT_ANY_BF16 : GE_LAYOUT_ANY;
}
static void conv_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) { conv_pref(p, in, out, 0); }
static void fconv_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) { conv_pref(p, in, out, 1); }
static ge_status conv_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, conv_impl_dt, 0));
}
static ge_status fconv_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, conv_impl_dt, 1));
}
ge_status ge_dn_conv_prepare(const ge_prepare_ctx *p, void **state) {
  return conv_prepare_impl(p, state, true, false, dnnl_f32, NULL);
}
static ge_status deconv_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_lowp_prepare(p, state, conv_impl_dt, 2);
}

/* ------------------------------------------------------------------ MatMul / FusedMatMul */

/* The matmul primitive (MatMul, Gemm and their fused forms) for src a, weights b, an optional
   bias and dst c under attr, checked against the compute dtype. */

/* A float32 matmul or Gemm [M,K] x [K,N] with a constant B at most 1024 columns wide (a transformer's
   projections back to the hidden size) runs oneDNN's jit sgemm ("gemm:jit", B kept plain and
   packed per run) rather than its first choice, the brgemm kernel on B packed at prepare: with
   the weights streamed from memory once per run, as in a transformer, sgemm was 10-25% faster
   at 1 and 2 threads for M = 64..512 and K = 768 or 3072 (a chain of distinct matrices,
   alternating the two kernels, 4th-gen Xeon); for N = 3072 or the 50257-wide LM head, and for
   M = 1, brgemm was as fast or faster.  Where the processor has AVX-512, fast/pgemm.c (tried
   first) takes float32 MatMul / FusedMatMul with such a B itself; this choice then serves Gemm,
   the processors without AVX-512 and what pgemm declines. */
static const char *matmul_prefer(dnnl_data_type_t cdt, int r, bool pack_b, int64_t M, int64_t N) {
  return cdt == dnnl_f32 && pack_b && r == 2 && M >= 16 && N <= 1024 ? "gemm:jit" : NULL;
}

/* The matmul geometry of node p (MatMul / FusedMatMul): rank *r and dims of A, B and C as
   oneDNN sees them (a B without batch dims folds A's batch dims into M).  NULL when the
   oneDNN matmul takes the node, else why not. */
static const char *matmul_geom(const ge_prepare_ctx *p, bool fused, int *r_out, int64_t *ad, int64_t *bd,
                               int64_t *cd) {
  if (!ge_dn_static_f32(p) || !has_in(p, 1)) return "needs static float32 shapes";
  const ge_shape *a = in_shape(p, 0), *b = in_shape(p, 1);
  if (a->rank < 1 || b->rank < 1) return "scalars";
  int r = a->rank > b->rank ? a->rank : b->rank;
  if (r < 2) r = 2;
  if (r > DNNL_MAX_NDIMS) return "rank";
  /* 1-D A is [1,K]; 1-D B is [K,1]; batch dims left-padded with 1 */
  for (int i = 0; i < r; i++) ad[i] = bd[i] = 1;
  if (a->rank == 1) ad[r - 1] = a->dims[0];
  else
    for (int i = 0; i < a->rank; i++) ad[r - a->rank + i] = a->dims[i];
  if (b->rank == 1) bd[r - 2] = b->dims[0];
  else
    for (int i = 0; i < b->rank; i++) bd[r - b->rank + i] = b->dims[i];
  if (ad[r - 1] != bd[r - 2]) return "K differs";
  for (int i = 0; i < r - 2; i++) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) return "batch dims";
    cd[i] = ad[i] > bd[i] ? ad[i] : bd[i];
  }
  cd[r - 2] = ad[r - 2];
  cd[r - 1] = bd[r - 1];
  /* B without batch dims (a weight): A's batch dims fold into M, so that B is a 2-D operand
     oneDNN packs (with batch dims it keeps a constant B plain and copies it every run) */
  bool b_batched = false;
  for (int i = 0; i < r - 2; i++) b_batched |= bd[i] != 1;
  if (!b_batched && r > 2) {
    int64_t m = 1;
    for (int i = 0; i < r - 1; i++) m *= ad[i]; /* <= numel of A: no overflow */
    int64_t kk = ad[r - 1], nn = bd[r - 1];
    ad[0] = m;
    ad[1] = kk;
    bd[0] = kk;
    bd[1] = nn;
    cd[0] = m;
    cd[1] = nn;
    r = 2;
  }
  size_t cn = 1;
  for (int i = 0; i < r; i++) cn *= (size_t)cd[i];
  size_t yn = 0;
  if (p->n_out < 1 || !ge_shape_numel(&p->out[0].shape, &yn) || yn != cn || cn == 0) return "output size";
  if (fused && has_in(p, 2)) {
    size_t bn = 0;
    if (!ge_shape_numel(in_shape(p, 2), &bn) || bn != (size_t)cd[r - 1]) return "bias shape";
  }
  if (fused && has_in(p, 3)) {
    size_t sn = 0;
    if (!ge_shape_numel(in_shape(p, 3), &sn) || sn != cn) return "sum shape";
  }
  *r_out = r;
  return NULL;
}

/* A matmul's input 0 and output 0 are plain or row-major bf16 (GE_LAYOUT_BF16); which of them
   are bf16.  Any other layout: declined. */
static ge_status rows_layouts(const ge_prepare_ctx *p, const char *what, bool *in16, bool *out16) {
  int xl = ge_dn_in_layout(p, 0), yl = ge_dn_out_layout(p, 0);
  if ((xl != GE_LAYOUT_PLAIN && xl != GE_LAYOUT_BF16) || (yl != GE_LAYOUT_PLAIN && yl != GE_LAYOUT_BF16))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN %s: layouts %s -> %s", what, ge_layout_name(xl),
                           ge_layout_name(yl));
  *in16 = xl == GE_LAYOUT_BF16;
  *out16 = yl == GE_LAYOUT_BF16;
  return GE_OK;
}

/* A MatMul computing in bf16 reads its activation A and writes its output as row-major bf16
   (GE_LAYOUT_BF16, compiler/layout.h) when the plan stores them so: no conversion per run.
   Any other layout of those operands: declined (ge_dn_layout_guard converts). */
static ge_status matmul_prepare_impl(const ge_prepare_ctx *p, void **state, bool fused, dnnl_data_type_t cdt) {
  int r = 0;
  int64_t ad[DNNL_MAX_NDIMS], bd[DNNL_MAX_NDIMS], cd[DNNL_MAX_NDIMS];
  const char *why = matmul_geom(p, fused, &r, ad, bd, cd);
  if (why) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN matmul: %s", why);
  bool in16 = false, out16 = false;
  GE_CHECK(rows_layouts(p, "matmul", &in16, &out16));
  bool bias = fused && has_in(p, 2);
  int sum_in = fused && has_in(p, 3) ? 3 : -1; /* the residual: a sum post-op */
  int64_t N = cd[r - 1];
  /* constant B that is not broadcast over batch: packed in the layout oneDNN wants */
  bool pack_b = is_const(p, 1);

  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, "matmul", &s, &saved));
  dnnl_memory_desc_t a_u, a_p, b_u, b_a, c_u, c_p, bias_u, sum_u;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  int64_t biasd[DNNL_MAX_NDIMS];
  for (int i = 0; i < r; i++) biasd[i] = 1;
  biasd[r - 1] = N;
  /* user descriptors: how the plan stores A and C (float32, or bf16 storage) */
  ge_status st = ge_dn_md_dt(p, &a_u, r, ad, NULL, in16 ? dnnl_bf16 : dnnl_f32);
  if (st == GE_OK) st = ge_dn_md_dt(p, &a_p, r, ad, NULL, cdt);
  if (st == GE_OK) st = ge_dn_md(p, &b_u, r, bd, NULL);
  if (st == GE_OK) st = pack_b ? ge_dn_md_any_dt(p, &b_a, r, bd, cdt) : ge_dn_md_dt(p, &b_a, r, bd, NULL, cdt);
  if (st == GE_OK) st = ge_dn_md_dt(p, &c_u, r, cd, NULL, out16 ? dnnl_bf16 : dnnl_f32);
  /* a bf16 primitive writes a bf16-stored C directly (bias and activation stay post-ops) */
  if (st == GE_OK) st = ge_dn_md_dt(p, &c_p, r, cd, NULL, out16 && cdt == dnnl_bf16 ? dnnl_bf16 : dnnl_f32);
  if (st == GE_OK && bias) st = ge_dn_md(p, &bias_u, r, biasd, NULL);
  if (st == GE_OK && sum_in >= 0)
    st = ge_dn_md_dt(p, &sum_u, r, cd, NULL, ge_dn_in_layout(p, 3) == GE_LAYOUT_BF16 ? dnnl_bf16 : dnnl_f32);
  if (st == GE_OK && (dnnl_primitive_attr_create(&attr) != dnnl_success || dnnl_post_ops_create(&po) != dnnl_success))
    st = ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "oneDNN: out of memory");
  if (st == GE_OK && sum_in >= 0 && dnnl_post_ops_append_sum(po, 1.f) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN matmul: sum post-op");
  if (st == GE_OK && fused) st = ge_dn_append_act(p, po);
  if (st == GE_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN matmul: post-ops");
  if (st == GE_OK)
    st = ge_dn_matmul_pd(p, s, &a_p, &b_a, bias ? &bias_u : NULL, &c_p, attr, "matmul", cdt,
                   matmul_prefer(cdt, r, pack_b, ad[r - 2], N), &pd);
  /* bf16: a float32 activation is handed over as plain bf16, converted by the run
     (ge_dn_mm16_run, dnnl_lowp.c) rather than by a oneDNN reorder; a bf16-stored one as it is */
  if (st == GE_OK)
    st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, cdt == dnnl_bf16 && !in16 ? &a_p : &a_u, NULL, -1);
  if (st == GE_OK) st = add_in(p, s, pd, DNNL_ARG_WEIGHTS, 1, &b_u);
  if (st == GE_OK && bias) st = add_in(p, s, pd, DNNL_ARG_BIAS, 2, &bias_u);
  if (st == GE_OK) st = ge_dn_add_out_sum(p, s, pd, DNNL_ARG_DST, 0, &c_u, sum_in, &sum_u);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return finish(p, s, saved, pd, st, state);
}

static ge_status matmul_impl_dt(const ge_prepare_ctx *p, void **state, int fused, dnnl_data_type_t cdt) {
  return matmul_prepare_impl(p, state, fused != 0, cdt);
}
/* the state is a ge_dn_mm16 around the oneDNN state (run: ge_dn_mm16_run); a node with
   bf16-stored operands that oneDNN declines runs the reference kernel with conversions */
static ge_status mm16_prepare(const ge_prepare_ctx *p, void **state, int fused) {
  void *dn = NULL;
  GE_CHECK(ge_dn_layout_guard(p, &dn, ge_dn_lowp_prepare(p, &dn, matmul_impl_dt, fused)));
  return ge_dn_mm16_wrap(p, dn, state);
}
/* A MatMul that will compute in bf16 prefers its activation A (a non-constant input 0) and its
   output stored as row-major bf16 (GE_LAYOUT_BF16); the compiler does so only where the other
   side of each value agrees. */
static void mm_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out, bool fused) {
  int r = 0;
  int64_t ad[DNNL_MAX_NDIMS], bd[DNNL_MAX_NDIMS], cd[DNNL_MAX_NDIMS];
  if (p->n_out < 1 || matmul_geom(p, fused, &r, ad, bd, cd) || ge_dn_lowp_dt(p) != dnnl_bf16) return;
  if (!is_const(p, 0)) in[0] = GE_LAYOUT_BF16;
  out[0] = GE_LAYOUT_BF16;
}
static void matmul_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) { mm_pref(p, in, out, false); }
static void fmatmul_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) { mm_pref(p, in, out, true); }
static ge_status matmul_prepare(const ge_prepare_ctx *p, void **state) { return mm16_prepare(p, state, 0); }
static ge_status fmatmul_prepare(const ge_prepare_ctx *p, void **state) { return mm16_prepare(p, state, 1); }

/* ------------------------------------------------------------------ Gemm / FusedGemm */

/* The Gemm geometry of node p: g[] = {M, K, N, C rows, C columns, has C}.  NULL when the
   oneDNN matmul takes the node, else why not. */
static const char *gemm_geom(const ge_prepare_ctx *p, int64_t *g) {
  if (!ge_dn_static_f32(p) || !has_in(p, 1) || p->n_out < 1) return "needs static float32 shapes";
  const ge_shape *a = in_shape(p, 0), *b = in_shape(p, 1);
  if (a->rank != 2 || b->rank != 2) return "rank";
  bool ta = ge_node_attr_int(p->node, "transA", 0) != 0, tb = ge_node_attr_int(p->node, "transB", 0) != 0;
  float beta = ge_node_attr_float(p->node, "beta", 1.f);
  int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
  int64_t K2 = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
  if (K != K2 || M < 1 || N < 1 || K < 1) return "shapes";
  bool has_c = has_in(p, 2) && beta != 0.f;
  int64_t cm = 1, cn = 1;
  if (has_c) {
    const ge_shape *c = in_shape(p, 2);
    if (beta != 1.f) return "beta != 1";
    if (c->rank > 2) return "C rank";
    if (c->rank == 2) {
      cm = c->dims[0];
      cn = c->dims[1];
    } else if (c->rank == 1) {
      cn = c->dims[0];
    }
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N)) return "C shape";
  }
  g[0] = M;
  g[1] = K;
  g[2] = N;
  g[3] = cm;
  g[4] = cn;
  g[5] = has_c;
  return NULL;
}

/* Like MatMul: A and Y may be stored row-major bf16 (GE_LAYOUT_BF16), read / written as they are
   by a bf16 primitive (a float32 one reorders them). */
static ge_status gemm_prepare_impl(const ge_prepare_ctx *p, void **state, bool fused, dnnl_data_type_t cdt) {
  int64_t g[6];
  const char *why = gemm_geom(p, g);
  if (why) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN gemm: %s", why);
  bool in16 = false, out16 = false;
  GE_CHECK(rows_layouts(p, "gemm", &in16, &out16));
  bool ta = ge_node_attr_int(p->node, "transA", 0) != 0, tb = ge_node_attr_int(p->node, "transB", 0) != 0;
  float alpha = ge_node_attr_float(p->node, "alpha", 1.f);
  int64_t M = g[0], K = g[1], N = g[2], cm = g[3], cn = g[4];
  bool has_c = g[5] != 0;
  /* C of shape [N] with alpha 1 is the bias; anything else is a binary-add post-op */
  bool c_bias = has_c && cm == 1 && cn == N && alpha == 1.f;
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, "gemm", &s, &saved));
  int64_t ad[2] = {M, K}, as[2] = {ta ? 1 : K, ta ? M : 1};
  int64_t bd[2] = {K, N}, bs[2] = {tb ? 1 : N, tb ? K : 1};
  int64_t cd[2] = {M, N}, cud[2] = {cm, cn};
  dnnl_memory_desc_t a_u, a_p, b_u, b_a, y_u, y_p, c_u;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  ge_status st = ge_dn_md_dt(p, &a_u, 2, ad, as, in16 ? dnnl_bf16 : dnnl_f32);
  /* float32 keeps ge's strides (transA); a lower precision converts into a dense copy (none
     for a bf16-stored A that is not transposed) */
  if (st == GE_OK) st = cdt == dnnl_f32 ? ge_dn_md(p, &a_p, 2, ad, as) : ge_dn_md_dt(p, &a_p, 2, ad, NULL, cdt);
  if (st == GE_OK) st = ge_dn_md(p, &b_u, 2, bd, bs);
  if (st == GE_OK)
    st = is_const(p, 1) ? ge_dn_md_any_dt(p, &b_a, 2, bd, cdt)
                        : (cdt == dnnl_f32 ? ge_dn_md(p, &b_a, 2, bd, bs) : ge_dn_md_dt(p, &b_a, 2, bd, NULL, cdt));
  if (st == GE_OK) st = ge_dn_md_dt(p, &y_u, 2, cd, NULL, out16 ? dnnl_bf16 : dnnl_f32);
  if (st == GE_OK) st = ge_dn_md_dt(p, &y_p, 2, cd, NULL, out16 && cdt == dnnl_bf16 ? dnnl_bf16 : dnnl_f32);
  if (st == GE_OK && has_c) st = ge_dn_md(p, &c_u, 2, cud, NULL);
  if (st == GE_OK && (dnnl_primitive_attr_create(&attr) != dnnl_success || dnnl_post_ops_create(&po) != dnnl_success))
    st = ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "oneDNN: out of memory");
  if (st == GE_OK && alpha != 1.f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN gemm: alpha");
  if (st == GE_OK && has_c && !c_bias && dnnl_post_ops_append_binary(po, dnnl_binary_add, &c_u) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN gemm: C post-op");
  if (st == GE_OK && fused) st = ge_dn_append_act(p, po);
  if (st == GE_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
    st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN gemm: post-ops");
  if (st == GE_OK)
    st = ge_dn_matmul_pd(p, s, &a_p, &b_a, c_bias ? &c_u : NULL, &y_p, attr, "gemm", cdt,
                   matmul_prefer(cdt, 2, is_const(p, 1), M, N), &pd);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &a_u, NULL, -1);
  if (st == GE_OK) st = add_in(p, s, pd, DNNL_ARG_WEIGHTS, 1, &b_u);
  if (st == GE_OK && has_c)
    st = add_in(p, s, pd, c_bias ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1), 2, &c_u);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &y_u, NULL, -1);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return finish(p, s, saved, pd, st, state);
}

static ge_status gemm_impl_dt(const ge_prepare_ctx *p, void **state, int fused, dnnl_data_type_t cdt) {
  return gemm_prepare_impl(p, state, fused != 0, cdt);
}
static ge_status gemm_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, gemm_impl_dt, 0));
}
static ge_status fgemm_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, gemm_impl_dt, 1));
}
/* A Gemm computing in bf16 prefers a row-major bf16 A (non-constant) and Y, like MatMul. */
static void gemm_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) {
  int64_t g[6];
  if (gemm_geom(p, g) || ge_dn_lowp_dt(p) != dnnl_bf16) return;
  if (!is_const(p, 0)) in[0] = GE_LAYOUT_BF16;
  out[0] = GE_LAYOUT_BF16;
}

/* ------------------------------------------------------------------ pooling */

static ge_status pool_prepare_impl(const ge_prepare_ctx *p, void **state, bool max, bool global,
                                   dnnl_data_type_t cdt) {
  if (!ge_dn_static_f32(p)) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: needs static float32 shapes");
  if (has_out(p, 1)) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: Indices output");
  const ge_shape *x = in_shape(p, 0), *y = &p->out[0].shape;
  if (x->rank < 3 || x->rank > 5 || y->rank != x->rank)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: rank %d", x->rank);
  int nsp = x->rank - 2;
  geom gm;
  dnnl_alg_kind_t alg = dnnl_pooling_max;
  if (global) {
    gm.nsp = nsp;
    for (int i = 0; i < nsp; i++) {
      gm.k[i] = x->dims[2 + i];
      gm.s[i] = gm.d[i] = 1;
      gm.pl[i] = gm.pr[i] = 0;
      if (y->dims[2 + i] != 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: global output");
    }
    if (!max) alg = dnnl_pooling_avg_include_padding;
  } else {
    const int64_t *ks = NULL;
    size_t nk = 0;
    if (!ge_node_attr_ints(p->node, "kernel_shape", &ks, &nk) || nk != (size_t)nsp)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: kernel_shape");
    bool ceil_mode = ge_node_attr_int(p->node, "ceil_mode", 0) != 0;
    bool include_pad = !max && ge_node_attr_int(p->node, "count_include_pad", 0) != 0;
    GE_CHECK(resolve_geom(p, x, y, ks, &gm, ceil_mode && !include_pad));
    if (!max) {
      alg = include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
      const char *ap = ge_node_attr_string(p->node, "auto_pad", "NOTSET");
      if (include_pad && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: count_include_pad with SAME padding");
    }
    for (int i = 0; i < nsp; i++)
      if (gm.pl[i] >= gm.k[i] || gm.pr[i] >= (gm.k[i] - 1) * gm.d[i] + 1)
        return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: padding as large as the kernel");
  }
  int own = cdt == dnnl_f32 ? GE_LAYOUT_NHWC : cdt == dnnl_bf16 && ge_dn_maxpool_bf16_usable() ? GE_LAYOUT_NHWC_BF16 : -1;
  if (max && !global && nsp == 2 && own >= 0 && gm.d[0] == 1 && gm.d[1] == 1 && ge_dn_in_layout(p, 0) == own &&
      ge_dn_out_layout(p, 0) == own) {
    /* channels-last: our own loop (dnnl_pool.h says why) */
    ge_dn_maxpool *mp = NULL;
    GE_CHECK(ge_dn_maxpool_new(p, x->dims, y->dims, gm.k, gm.s, gm.pl, cdt == dnnl_bf16, &mp));
    ge_dn_state *ms = calloc(1, sizeof *ms);
    if (!ms) {
      ge_dn_maxpool_free(mp);
      return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ms->maxpool = mp;
    ms->what = cdt == dnnl_bf16 ? "max pooling (channels-last, bf16)" : "max pooling (channels-last)";
    *state = ms;
    return GE_OK;
  }
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, "pooling", &s, &saved));
  dnnl_memory_desc_t x_u, y_u, x_p, y_p;
  dnnl_primitive_desc_t pd = NULL;
  /* the primitive works in its input's layout (the plan's: compiler/layout.h) */
  int xl = ge_dn_in_layout(p, 0), yl = ge_dn_out_layout(p, 0);
  ge_status st = ge_dn_md_layout(p, &x_u, x->rank, x->dims, xl, dnnl_f32);
  if (st == GE_OK) st = ge_dn_md_layout(p, &y_u, y->rank, y->dims, yl, dnnl_f32);
  x_p = x_u;
  y_p = y_u;
  if (st == GE_OK && (cdt != dnnl_f32 || xl != yl))
    st = ge_dn_md_layout(p, &x_p, x->rank, x->dims, xl, cdt);
  if (st == GE_OK && (cdt != dnnl_f32 || xl != yl))
    st = ge_dn_md_layout(p, &y_p, y->rank, y->dims, xl, cdt);
  if (st == GE_OK) {
    dnnl_dims_t str, ker, dil, pl, pr;
    for (int i = 0; i < nsp; i++) {
      str[i] = gm.s[i];
      ker[i] = gm.k[i];
      dil[i] = gm.d[i] - 1;
      pl[i] = gm.pl[i];
      pr[i] = gm.pr[i];
    }
    dnnl_pooling_v2_desc_t d;
    if (dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &x_p, &y_p, str, ker, dil, pl, pr) !=
        dnnl_success)
      st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: descriptor rejected");
    else
      st = ge_dn_create(p, s, &d, NULL, &pd);
    if (st == GE_OK) st = ge_dn_lowp_check(p, pd, cdt);
  }
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &x_u, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &y_u, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_WORKSPACE, GE_DN_TEMP, 0, NULL, NULL, -1);
  return finish(p, s, saved, pd, st, state);
}

/* flags: 1 max, 2 global */
static ge_status pool_impl_dt(const ge_prepare_ctx *p, void **state, int flags, dnnl_data_type_t cdt) {
  return pool_prepare_impl(p, state, (flags & 1) != 0, (flags & 2) != 0, cdt);
}
/* Pooling reads its input in any layout, bf16 storage included, and writes its output in the
   same (global pooling: a plain output). */
static void pool_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) {
  if (!ge_dn_static_f32(p) || has_out(p, 1) || p->n_out < 1) return;
  int r = in_shape(p, 0)->rank;
  if (r < 3 || r > 5 || is_const(p, 0)) return;
  bool global = strncmp(p->node->op_type, "Global", 6) == 0;
  in[0] = GE_LAYOUT_ANY_BF16;
  if (!global) out[0] = GE_LAYOUT_ANY_BF16;
}
static ge_status maxpool_prepare(const ge_prepare_ctx *p, void **state) {
  if (ge_node_attr_int(p->node, "storage_order", 0) != 0 && has_out(p, 1))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN pool: storage_order");
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, pool_impl_dt, 1));
}
static ge_status avgpool_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, pool_impl_dt, 0));
}
static ge_status gavgpool_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, pool_impl_dt, 2));
}
static ge_status gmaxpool_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_layout_guard(p, state, ge_dn_lowp_prepare(p, state, pool_impl_dt, 3));
}

/* ------------------------------------------------------------------ BatchNormalization (inference) */

static ge_status bn_prepare_impl(const ge_prepare_ctx *p, void **state, int flags, dnnl_data_type_t cdt) {
  (void)flags;
  if (!ge_dn_static_f32(p) || p->n_in < 5) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN bn: static float32 only");
  if (ge_node_attr_int(p->node, "training_mode", 0) != 0 || has_out(p, 1) || has_out(p, 2))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN bn: training mode");
  if (p->opset < 9 && ge_node_attr(p->node, "spatial") && ge_node_attr_int(p->node, "spatial", 1) == 0)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN bn: spatial=0");
  const ge_shape *x = in_shape(p, 0);
  if (x->rank < 2 || x->rank > 5) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN bn: rank");
  int64_t c = x->dims[1];
  for (size_t i = 1; i < 5; i++) {
    size_t n = 0;
    if (!has_in(p, i) || !ge_shape_numel(in_shape(p, i), &n) || n != (size_t)c)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN bn: input %zu shape", i);
  }
  float eps = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, "batch normalization", &s, &saved));
  dnnl_memory_desc_t x_u, x_p, c_u;
  dnnl_primitive_desc_t pd = NULL;
  ge_status st = plain_md(p, &x_u, x);
  x_p = x_u;
  if (st == GE_OK && cdt != dnnl_f32) st = ge_dn_md_dt(p, &x_p, x->rank, x->dims, NULL, cdt);
  if (st == GE_OK) st = ge_dn_md(p, &c_u, 1, &c, NULL);
  if (st == GE_OK) {
    dnnl_batch_normalization_desc_t d;
    if (dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, &x_p, eps,
                                                   dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift) != dnnl_success)
      st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN bn: descriptor rejected");
    else
      st = ge_dn_create(p, s, &d, NULL, &pd);
    if (st == GE_OK) st = ge_dn_lowp_check(p, pd, cdt);
  }
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &x_u, NULL, -1);
  if (st == GE_OK) st = add_in(p, s, pd, DNNL_ARG_SCALE, 1, &c_u);
  if (st == GE_OK) st = add_in(p, s, pd, DNNL_ARG_SHIFT, 2, &c_u);
  if (st == GE_OK) st = add_in(p, s, pd, DNNL_ARG_MEAN, 3, &c_u);
  if (st == GE_OK) st = add_in(p, s, pd, DNNL_ARG_VARIANCE, 4, &c_u);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &x_u, NULL, -1);
  return finish(p, s, saved, pd, st, state);
}

static ge_status bn_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_lowp_prepare(p, state, bn_prepare_impl, 0);
}

/* ------------------------------------------------------------------ LayerNormalization */

static ge_status ln_prepare_impl(const ge_prepare_ctx *p, void **state, int flags_unused, dnnl_data_type_t cdt) {
  (void)flags_unused;
  if (!ge_dn_static_f32(p)) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: static float32 only");
  if (has_out(p, 1) || has_out(p, 2)) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: Mean/InvStdDev outputs");
  const ge_shape *x = in_shape(p, 0);
  if (x->rank < 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: rank");
  int64_t axis = ge_node_attr_int(p->node, "axis", -1);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: axis");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < x->rank; i++) {
    if (i < axis) outer *= x->dims[i];
    else inner *= x->dims[i];
  }
  if (outer < 1 || inner < 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: empty");
  bool sc = has_in(p, 1), sh = has_in(p, 2);
  for (size_t i = 1; i < 3; i++) {
    size_t n = 0;
    if (has_in(p, i) && (!ge_shape_numel(in_shape(p, i), &n) || n != (size_t)inner))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: input %zu is broadcast", i);
  }
  float eps = ge_node_attr_float(p->node, "epsilon", 1e-5f);
  unsigned flags = (sc ? dnnl_use_scale : 0u) | (sh ? dnnl_use_shift : 0u);
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, "layer normalization", &s, &saved));
  int64_t xd[2] = {outer, inner};
  dnnl_memory_desc_t x_u, x_p, c_u;
  dnnl_primitive_desc_t pd = NULL;
  ge_status st = ge_dn_md(p, &x_u, 2, xd, NULL);
  x_p = x_u;
  if (st == GE_OK && cdt != dnnl_f32) st = ge_dn_md_dt(p, &x_p, 2, xd, NULL, cdt);
  if (st == GE_OK) st = ge_dn_md(p, &c_u, 1, &inner, NULL);
  if (st == GE_OK) {
    dnnl_layer_normalization_desc_t d;
    if (dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &x_p, NULL, eps, flags) != dnnl_success)
      st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN layernorm: descriptor rejected");
    else
      st = ge_dn_create(p, s, &d, NULL, &pd);
    if (st == GE_OK) st = ge_dn_lowp_check(p, pd, cdt);
  }
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &x_u, NULL, -1);
  if (st == GE_OK && sc) st = add_in(p, s, pd, DNNL_ARG_SCALE, 1, &c_u);
  if (st == GE_OK && sh) st = add_in(p, s, pd, DNNL_ARG_SHIFT, 2, &c_u);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_MEAN, GE_DN_TEMP, 0, NULL, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_VARIANCE, GE_DN_TEMP, 0, NULL, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &x_u, NULL, -1);
  return finish(p, s, saved, pd, st, state);
}

static ge_status ln_prepare(const ge_prepare_ctx *p, void **state) {
  return ge_dn_lowp_prepare(p, state, ln_prepare_impl, 0);
}

/* ------------------------------------------------------------------ Softmax / LogSoftmax */

static ge_status softmax_prepare_impl(const ge_prepare_ctx *p, void **state, bool logsm, dnnl_data_type_t cdt) {
  if (!ge_dn_static_f32(p)) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN softmax: static float32 only");
  const ge_shape *x = in_shape(p, 0);
  if (x->rank < 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN softmax: rank");
  int64_t axis = ge_node_attr_int(p->node, "axis", p->opset >= 13 ? -1 : 1);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN softmax: axis");
  int64_t d3[3] = {1, 1, 1};
  for (int i = 0; i < x->rank; i++) {
    if (i < axis) d3[0] *= x->dims[i];
    else if (i == axis) d3[1] *= x->dims[i];
    else d3[p->opset >= 13 ? 2 : 1] *= x->dims[i];
  }
  if (d3[0] < 1 || d3[1] < 1 || d3[2] < 1) return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN softmax: empty");
  ge_dn_state *s = NULL;
  int saved = 0;
  GE_CHECK(ge_dn_prepare_begin(p, logsm ? "logsoftmax" : "softmax", &s, &saved));
  dnnl_memory_desc_t x_u, x_p;
  dnnl_primitive_desc_t pd = NULL;
  /* [outer, axis] when the softmax is over the innermost elements */
  int nd = d3[2] == 1 ? 2 : 3;
  ge_status st = ge_dn_md(p, &x_u, nd, d3, NULL);
  x_p = x_u;
  if (st == GE_OK && cdt != dnnl_f32) st = ge_dn_md_dt(p, &x_p, nd, d3, NULL, cdt);
  if (st == GE_OK) {
    dnnl_softmax_desc_t d;
    dnnl_logsoftmax_desc_t ld;
    dnnl_status_t ds = logsm ? dnnl_logsoftmax_forward_desc_init(&ld, dnnl_forward_inference, &x_p, 1)
                             : dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &x_p, 1);
    if (ds != dnnl_success)
      st = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN softmax: descriptor rejected");
    else
      st = ge_dn_create(p, s, logsm ? (const_dnnl_op_desc_t)&ld : (const_dnnl_op_desc_t)&d, NULL, &pd);
    if (st == GE_OK) st = ge_dn_lowp_check(p, pd, cdt);
  }
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_SRC, GE_DN_IN, 0, &x_u, NULL, -1);
  if (st == GE_OK) st = ge_dn_add_arg(p, s, pd, DNNL_ARG_DST, GE_DN_OUT, 0, &x_u, NULL, -1);
  return finish(p, s, saved, pd, st, state);
}

static ge_status softmax_impl_dt(const ge_prepare_ctx *p, void **state, int logsm, dnnl_data_type_t cdt) {
  return softmax_prepare_impl(p, state, logsm != 0, cdt);
}
static ge_status softmax_prepare(const ge_prepare_ctx *p, void **state) { return ge_dn_lowp_prepare(p, state, softmax_impl_dt, 0); }
static ge_status logsoftmax_prepare(const ge_prepare_ctx *p, void **state) { return ge_dn_lowp_prepare(p, state, softmax_impl_dt, 1); }

/* ------------------------------------------------------------------ table */

/* oneDNN primitives write their whole destination (a residual input is copied in first) */
#define DN_K(prep)                                                                          \
  {.prepare = prep, .run = ge_dn_run, .release = ge_dn_release, .overwrites_outputs = true,      \
   .packed_inputs = ge_dn_packed_inputs, .describe = ge_dn_describe}
/* with a layout preference (compiler/layout.h) */
#define DN_KL(prep, pref) \
  {.prepare = prep, .run = ge_dn_run, .release = ge_dn_release, .overwrites_outputs = true, .layout_pref = pref, \
   .packed_inputs = ge_dn_packed_inputs, .describe = ge_dn_describe}

/* MatMul / FusedMatMul: a ge_dn_mm16 state (dnnl_lowp.h); FusedMatMul's Sum (input 3) may be
   the output's buffer, as FusedConv's below */
#define DN_K16(prep, pref, inplace)                                                                 \
  {.prepare = prep, .run = ge_dn_mm16_run, .release = ge_dn_mm16_release, .overwrites_outputs = true, \
   .inplace_inputs = (inplace), .layout_pref = pref, .packed_inputs = ge_dn_mm16_packed_inputs,     \
   .describe = ge_dn_mm16_describe}

const ge_kernel_def ge_fast_kernels_dnnl[] = {
    {"", "Conv", 1, 0, DN_KL(conv_prepare, conv_layout_pref)},
    {"", "ConvTranspose", 1, 0, DN_K(deconv_prepare)},
    {"", "MatMul", 1, 0, DN_K16(matmul_prepare, matmul_layout_pref, 0)},
    {"", "Gemm", 1, 0, DN_KL(gemm_prepare, gemm_layout_pref)},
    {"", "MaxPool", 1, 0, DN_KL(maxpool_prepare, pool_layout_pref)},
    {"", "AveragePool", 1, 0, DN_KL(avgpool_prepare, pool_layout_pref)},
    {"", "GlobalAveragePool", 1, 0, DN_KL(gavgpool_prepare, pool_layout_pref)},
    {"", "GlobalMaxPool", 1, 0, DN_KL(gmaxpool_prepare, pool_layout_pref)},
    {"", "BatchNormalization", 1, 0, DN_K(bn_prepare)},
    {"", "LayerNormalization", 17, 0, DN_K(ln_prepare)},
    {"", "Softmax", 1, 0, DN_K(softmax_prepare)},
    {"", "LogSoftmax", 1, 0, DN_K(logsoftmax_prepare)},
    {"", "Concat", 4, 0, DN_KL(ge_dn_concat_prepare, ge_dn_concat_layout_pref)},
    /* the Sum input (3) may be the output's buffer: it is read (copied or reordered into the
       destination) before the primitive writes */
    {GE_FUSED_DOMAIN, "FusedConv", 1, 0, {.prepare = fconv_prepare, .run = ge_dn_run, .release = ge_dn_release, .overwrites_outputs = true,
                                    .inplace_inputs = 1u << 3, .layout_pref = fconv_layout_pref,
                                    .packed_inputs = ge_dn_packed_inputs, .describe = ge_dn_describe}},
    {GE_FUSED_DOMAIN, "FusedConvDw", 1, 0,
     {.prepare = ge_dn_convdw_prepare, .run = ge_dn_convdw_run, .release = ge_dn_convdw_release,
      .overwrites_outputs = true, .layout_pref = ge_dn_convdw_layout_pref,
      .packed_inputs = ge_dn_convdw_packed_inputs, .describe = ge_dn_convdw_describe}},
    {GE_FUSED_DOMAIN, "FusedGemm", 1, 0, DN_KL(fgemm_prepare, gemm_layout_pref)},
    {GE_FUSED_DOMAIN, "FusedMatMul", 1, 0, DN_K16(fmatmul_prepare, fmatmul_layout_pref, 1u << 3)},
    /* bf16 only (dnnl_attn.c); float32 Attention declines to the fast kernel */
    {GE_FUSED_DOMAIN, "Attention", 1, 0,
     {.prepare = ge_dn_attn16_prepare, .run = ge_dn_attn16_run, .release = ge_dn_attn16_release,
      .overwrites_outputs = true, .describe = ge_dn_attn16_describe}},
    {GE_FUSED_DOMAIN, "LayerNormalization", 1, 0, DN_K(ln_prepare)},
    {0},
};
