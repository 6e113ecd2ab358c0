/* ai.ge::FusedConvDw on oneDNN, a band of rows at a time (see ops/fused.h and
 * passes/conv_dw.c for when the compiler creates the op).
 *
 * The depthwise convolution's output rows, image by image, are cut into bands of B rows.  For
 * a band, the 1x1 convolution computes just the input rows the band's window reads (its
 * activation fused) into a per-thread buffer of at most a third of one core's L2 cache, and
 * the depthwise convolution reads that buffer at once, while it is still in the cache.  Bands
 * next to each other share (kh - 1) * dh + 1 - sh input rows, which each computes (one row of
 * every 2 B for a 3x3 stride-2 window).  The threads split the bands evenly, each taking a run
 * of adjacent bands.
 *
 * Both steps are oneDNN convolutions of dnnl.c (ge_dn_conv_prepare) on channels-last views of
 * the band, created at prepare time for one thread each: the 1x1 on [1, C, 1, rows * W] -> [1,
 * E, 1, rows * W], the depthwise one on [1, E, rows, W] -> [1, E, B', OW] with the band's own
 * top and bottom padding.  Bands of the same shape and padding share them, so an image has at
 * most a few distinct (the first, the middle ones, the last); each thread slot has its own set,
 * and so its own cached buffers.  The activations must be channels-last (the layout
 * preference asks for it); otherwise, or for a window a band cannot hold, prepare declines and
 * the reference kernel runs the node. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl/dnnl_layout.h"
#include "backend/cpu/dnnl/dnnl_prim.h"
#include "backend/cpu/threadpool.h"
#include "compiler/layout.h"
#include "ops/fused.h"
#include "ops/nn_geom.h"

#define CDW_MAX_VARIANTS 8
#define CDW_MAX_SLOTS 64

typedef struct cdw_variant {
  int64_t in_rows, out_rows, pt, pb;
} cdw_variant;

typedef struct cdw_band {
  int64_t n, o0, i0; /* image, first output row, first input row */
  int v;             /* its variant */
} cdw_band;

typedef struct cdw_state {
  int64_t C, H, W, E, OH, OW;
  size_t nb;
  cdw_band *bands;
  int nv, slots;
  cdw_variant var[CDW_MAX_VARIANTS];
  void **pw, **dw;  /* [slot * nv + v]: ge_dn_state of the 1x1 / depthwise step */
  size_t buf_floats; /* one slot's band buffer */
  pthread_mutex_t mu; /* guards buf (a concurrent run of the plan allocates its own) */
  float *buf;        /* slots * buf_floats */
  void *fb;          /* non-NULL: ge_dn_layout_guard's wrapped reference kernel runs the node */
} cdw_state;

void ge_dn_convdw_release(void *st) {
  cdw_state *s = st;
  if (!s) return;
  if (s->fb) ge_dn_release(s->fb);
  for (int i = 0; i < s->slots * s->nv; i++) {
    if (s->pw && s->pw[i]) ge_dn_release(s->pw[i]);
    if (s->dw && s->dw[i]) ge_dn_release(s->dw[i]);
  }
  free(s->pw);
  free(s->dw);
  free(s->bands);
  ge_aligned_free(s->buf);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static void set_type(ge_type *t, int64_t n, int64_t c, int64_t h, int64_t w) {
  memset(t, 0, sizeof *t);
  t->kind = GE_TYPE_TENSOR;
  t->dtype = GE_F32;
  t->shape.rank = 4;
  t->shape.dims[0] = n;
  t->shape.dims[1] = c;
  t->shape.dims[2] = h;
  t->shape.dims[3] = w;
}

/* The two one-thread primitives of variant v. */
static ge_status prepare_variant(const ge_prepare_ctx *p, const cdw_state *s, const cdw_variant *v, const int64_t *pads,
                                 void **pw, void **dw) {
  static const uint8_t nhwc[3] = {GE_LAYOUT_NHWC, GE_LAYOUT_PLAIN, GE_LAYOUT_PLAIN};
  ge_type xt, mt, mt2, yt;
  set_type(&xt, 1, s->C, 1, v->in_rows * s->W);
  set_type(&mt, 1, s->E, 1, v->in_rows * s->W);
  set_type(&mt2, 1, s->E, v->in_rows, s->W);
  set_type(&yt, 1, s->E, v->out_rows, s->OW);
  ge_infer_input none = {false, NULL, NULL};
  /* the 1x1: no Conv attributes; its activation under the names FusedConv reads */
  ge_attr_value pa[2];
  size_t npa = 0;
  const ge_attr_value *a = ge_node_attr(p->node, "pw_activation");
  if (a) {
    pa[npa] = *a;
    pa[npa++].name = "activation";
  }
  if ((a = ge_node_attr(p->node, "pw_activation_params"))) {
    pa[npa] = *a;
    pa[npa++].name = "activation_params";
  }
  ge_node pn = *p->node;
  pn.attrs = pa;
  pn.n_attrs = npa;
  ge_infer_input pin[3] = {{true, &xt, NULL}, p->in[1], p->n_in > 2 ? p->in[2] : none};
  ge_prepare_ctx pp = *p;
  pp.graph = NULL; /* no original dropped here: every variant packs the weights (the kernel's
                      prepare drops them once all are packed) */
  pp.node = &pn;
  pp.opset = 11;
  pp.in = pin;
  pp.n_in = 3;
  pp.out = &mt;
  pp.n_out = 1;
  pp.intra_threads = 1;
  pp.in_layout = pp.out_layout = nhwc;
  GE_CHECK(ge_dn_conv_prepare(&pp, pw));
  /* the depthwise step: the node's attributes with the band's pads */
  ge_attr_value da[32];
  size_t nda = 0;
  int64_t bp[4] = {v->pt, pads[1], v->pb, pads[3]};
  for (size_t i = 0; i < p->node->n_attrs && nda < 31; i++) {
    const char *nm = p->node->attrs[i].name;
    if (!strcmp(nm, "pads") || !strncmp(nm, "pw_", 3)) continue;
    da[nda++] = p->node->attrs[i];
  }
  memset(&da[nda], 0, sizeof da[nda]);
  da[nda].name = "pads";
  da[nda].kind = GE_ATTR_KIND_INTS;
  da[nda].ints = bp;
  da[nda++].n = 4;
  ge_node dn = *p->node;
  dn.attrs = da;
  dn.n_attrs = nda;
  ge_infer_input din[3] = {{true, &mt2, NULL}, p->in[3], p->n_in > 4 ? p->in[4] : none};
  ge_prepare_ctx pd = pp;
  pd.node = &dn;
  pd.in = din;
  pd.out = &yt;
  return ge_dn_conv_prepare(&pd, dw);
}

static ge_status cdw_prepare(const ge_prepare_ctx *p, void **state) {
  if (!ge_dn_static_f32(p) || p->n_in < 4 || !p->in[1].present || !p->in[1].value || !p->in[3].present ||
      !p->in[3].value)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: needs static float32 shapes and constant weights");
  if (ge_dn_in_layout(p, 0) != GE_LAYOUT_NHWC || ge_dn_out_layout(p, 0) != GE_LAYOUT_NHWC)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: channels-last activations only");
  const ge_shape *x = &p->in[0].type->shape, *w = &p->in[1].type->shape, *wd = &p->in[3].type->shape,
                 *y = &p->out[0].shape;
  if (x->rank != 4 || y->rank != 4 || w->rank != 4 || wd->rank != 4 || w->dims[0] != y->dims[1] || wd->dims[1] != 1)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: shapes");
  ge_nn_win_attrs at;
  if (ge_nn_win_parse(p->node, false, &at) != GE_OK || ge_nn_win_resolve(p->node, &at, 2, &wd->dims[2]) != GE_OK ||
      at.auto_pad != GE_PAD_NOTSET)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: attributes");
  /* pads: top, left, bottom, right */
  int64_t sh = at.strides[0], dh = at.dilations[0], pads[4] = {at.pads[0], at.pads[1], at.pads[2], at.pads[3]};
  int64_t kh = (wd->dims[2] - 1) * dh + 1;
  if (sh < 1 || dh < 1 || kh < 1 || pads[0] < 0 || pads[2] < 0)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: geometry");
  cdw_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_init(&s->mu, NULL);
  int64_t N = x->dims[0];
  s->C = x->dims[1];
  s->H = x->dims[2];
  s->W = x->dims[3];
  s->E = y->dims[1];
  s->OH = y->dims[2];
  s->OW = y->dims[3];
  /* band rows: the input rows of a band in a third of one core's L2 */
  size_t row_bytes = (size_t)(s->W * s->E) * sizeof(float);
  int64_t max_in = (int64_t)(ge_l2_cache_bytes() / 3 / (row_bytes ? row_bytes : 1));
  int64_t B = max_in > kh ? (max_in - kh) / sh + 1 : 1;
  if (B > s->OH) B = s->OH;
  size_t per = (size_t)((s->OH + B - 1) / B);
  s->nb = (size_t)N * per;
  s->bands = calloc(s->nb ? s->nb : 1, sizeof *s->bands);
  ge_status rc = s->bands ? GE_OK : ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t max_rows = 0;
  for (size_t b = 0; rc == GE_OK && b < s->nb; b++) {
    int64_t n = (int64_t)(b / per), o0 = (int64_t)(b % per) * B, rows = s->OH - o0 < B ? s->OH - o0 : B;
    int64_t lo = o0 * sh - pads[0], hi = (o0 + rows - 1) * sh - pads[0] + kh - 1;
    cdw_variant v = {.out_rows = rows, .pt = lo < 0 ? -lo : 0, .pb = hi > s->H - 1 ? hi - (s->H - 1) : 0};
    int64_t i0 = lo < 0 ? 0 : lo, i1 = hi > s->H - 1 ? s->H - 1 : hi;
    v.in_rows = i1 - i0 + 1;
    if (v.in_rows < 1) {
      rc = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: a band reads only padding");
      break;
    }
    int k = 0;
    while (k < s->nv && memcmp(&s->var[k], &v, sizeof v)) k++;
    if (k == s->nv) {
      if (s->nv == CDW_MAX_VARIANTS) {
        rc = ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "oneDNN FusedConvDw: too many band shapes");
        break;
      }
      s->var[s->nv++] = v;
    }
    if (v.in_rows > max_rows) max_rows = v.in_rows;
    s->bands[b] = (cdw_band){.n = n, .o0 = o0, .i0 = i0, .v = k};
  }
  int threads = p->intra_threads > 0 ? p->intra_threads : 1;
  s->slots = threads < CDW_MAX_SLOTS ? threads : CDW_MAX_SLOTS;
  if ((size_t)s->slots > s->nb) s->slots = (int)(s->nb ? s->nb : 1);
  s->buf_floats = ((size_t)(max_rows * s->W * s->E) + 15) / 16 * 16;
  if (rc == GE_OK) {
    s->pw = calloc((size_t)(s->slots * s->nv), sizeof *s->pw);
    s->dw = calloc((size_t)(s->slots * s->nv), sizeof *s->dw);
    s->buf = ge_aligned_alloc((size_t)s->slots * s->buf_floats * sizeof(float));
    if (!s->pw || !s->dw || !s->buf) rc = ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; rc == GE_OK && i < s->slots * s->nv; i++)
    rc = prepare_variant(p, s, &s->var[i % s->nv], pads, &s->pw[i], &s->dw[i]);
  if (rc != GE_OK) {
    ge_dn_convdw_release(s);
    return rc;
  }
  ge_prepare_drop_packed(p, ge_dn_convdw_packed_inputs(s));
  *state = s;
  return GE_OK;
}

/* The weights and biases every band primitive packed (inputs 1, 2 of the 1x1 step; 3, 4 of the
   depthwise one). */
uint32_t ge_dn_convdw_packed_inputs(const void *state) {
  const cdw_state *s = state;
  if (!s || s->fb || !s->pw || !s->dw || s->slots * s->nv == 0) return 0;
  uint32_t m = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4);
  for (int i = 0; i < s->slots * s->nv; i++)
    m &= (ge_dn_packed_inputs(s->pw[i]) & 6u) | ((ge_dn_packed_inputs(s->dw[i]) & 6u) << 2);
  return m;
}

const char *ge_dn_convdw_describe(const void *state) {
  const cdw_state *s = state;
  if (!s) return NULL;
  return s->fb ? ge_dn_describe(s->fb) : "by bands";
}

typedef struct cdw_job {
  const cdw_state *s;
  const ge_kctx *ctx;
  float *buf;
  int slots;
  ge_status st[CDW_MAX_SLOTS];
} cdw_job;

static void view(ge_tensor *t, float *data, int64_t c, int64_t h, int64_t w) {
  memset(t, 0, sizeof *t);
  t->dtype = GE_F32;
  t->rank = 4;
  t->dims[0] = 1;
  t->dims[1] = c;
  t->dims[2] = h;
  t->dims[3] = w;
  t->numel = (size_t)(c * h * w);
  t->nbytes = t->numel * sizeof(float);
  t->data = data;
}

static void cdw_slot(void *arg, size_t begin, size_t end) {
  cdw_job *j = arg;
  const cdw_state *s = j->s;
  for (size_t slot = begin; slot < end; slot++) {
    float *buf = j->buf + slot * s->buf_floats;
    const float *X = j->ctx->in[0]->data;
    float *Y = j->ctx->out[0]->data;
    size_t b0 = s->nb * slot / (size_t)j->slots, b1 = s->nb * (slot + 1) / (size_t)j->slots;
    ge_status st = GE_OK;
    for (size_t b = b0; b < b1 && st == GE_OK; b++) {
      const cdw_band *bd = &s->bands[b];
      const cdw_variant *v = &s->var[bd->v];
      ge_tensor xv, mv, mv2, yv;
      view(&xv, (float *)X + (size_t)((bd->n * s->H + bd->i0) * s->W * s->C), s->C, 1, v->in_rows * s->W);
      view(&mv, buf, s->E, 1, v->in_rows * s->W);
      view(&mv2, buf, s->E, v->in_rows, s->W);
      view(&yv, Y + (size_t)((bd->n * s->OH + bd->o0) * s->OW * s->E), s->E, v->out_rows, s->OW);
      ge_tensor *in1[3] = {&xv, j->ctx->in[1], j->ctx->n_in > 2 ? j->ctx->in[2] : NULL};
      ge_tensor *in2[3] = {&mv2, j->ctx->in[3], j->ctx->n_in > 4 ? j->ctx->in[4] : NULL};
      ge_tensor *o1[1] = {&mv}, *o2[1] = {&yv};
      ge_kctx c = *j->ctx;
      c.threads = 1;
      c.n_in = 3;
      c.n_out = 1;
      c.in = in1;
      c.out = o1;
      size_t k = slot * (size_t)s->nv + (size_t)bd->v;
      st = ge_dn_run(s->pw[k], &c);
      c.in = in2;
      c.out = o2;
      if (st == GE_OK) st = ge_dn_run(s->dw[k], &c);
    }
    j->st[slot] = st;
  }
}

ge_status ge_dn_convdw_run(const void *state, ge_kctx *ctx) {
  const cdw_state *s = state;
  cdw_state *ms = (cdw_state *)state; /* only its mutex and buffer */
  if (s->fb) return ge_dn_run(s->fb, ctx);
  if (!ctx->out[0]) return GE_OK;
  float *buf = NULL, *own = NULL;
  bool locked = pthread_mutex_trylock(&ms->mu) == 0;
  if (locked) buf = ms->buf;
  else if (!(buf = own = ge_aligned_alloc((size_t)s->slots * s->buf_floats * sizeof(float))))
    return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  int slots = ctx->threads > 0 && ctx->threads < s->slots ? ctx->threads : s->slots;
  cdw_job j = {.s = s, .ctx = ctx, .buf = buf, .slots = slots};
  ge_parallel_for(slots, (size_t)slots, cdw_slot, &j);
  if (locked) pthread_mutex_unlock(&ms->mu);
  ge_aligned_free(own);
  for (int i = 0; i < slots; i++)
    if (j.st[i] != GE_OK) return j.st[i];
  return GE_OK;
}

/* channels-last activations, when the node is one this kernel takes */
void ge_dn_convdw_layout_pref(const ge_prepare_ctx *p, uint8_t *in, uint8_t *out) {
  if (!ge_dn_static_f32(p) || p->in[0].type->shape.rank != 4 || p->out[0].shape.rank != 4 ||
      !ge_shape_is_static(&p->out[0].shape))
    return;
  in[0] = GE_LAYOUT_NHWC;
  out[0] = GE_LAYOUT_NHWC;
}

ge_status ge_dn_convdw_prepare(const ge_prepare_ctx *p, void **state) {
  ge_status st = cdw_prepare(p, state);
  if (st != GE_ERR_UNSUPPORTED) return st;
  void *fb = NULL;
  GE_CHECK(ge_dn_layout_guard(p, &fb, st));
  cdw_state *s = calloc(1, sizeof *s);
  if (!s) {
    ge_dn_release(fb);
    return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  }
  pthread_mutex_init(&s->mu, NULL);
  s->fb = fb;
  *state = s;
  return GE_OK;
}
