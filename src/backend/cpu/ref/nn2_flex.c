/* ai.onnx.preview::FlexAttention: Scores = Q K^T * scale, score_mod(Scores), softmax,
 * prob_mod(Probs), Y = Probs V, with GQA.  The modifier subgraphs run on the whole score
 * tensor through the executor's subgraph hook (ge_subgraph: compiled once per score shape,
 * cached; outer-scope values bound). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/nn2_kernels.h"
#include "backend/cpu/ref/nn_util.h"

#define END GE_DTYPE_COUNT

static const ge_dtype k_float[] = {GE_F32, GE_F16, GE_BF16, GE_F64, END};

typedef struct flex_mod {
  ge_subgraph *sub; /* NULL when the attribute is absent */
} flex_mod;

typedef struct flex_state {
  bool has_scale;
  double scale;
  ge_dtype sm;  /* softmax precision: the element type the modifiers see */
  flex_mod mod[2]; /* score_mod, prob_mod */
} flex_state;

void ge_nn2_flex_release(void *state) {
  flex_state *s = state;
  if (!s) return;
  for (int i = 0; i < 2; i++) ge_subgraph_free(s->mod[i].sub);
  free(s);
}

static ge_status mod_load(const ge_prepare_ctx *p, flex_state *s, int i, const char *name) {
  const ge_attr_value *a = ge_node_attr(p->node, name);
  if (!a) return GE_OK;
  if (a->kind != GE_ATTR_KIND_GRAPH || !a->g)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute %s must be a graph", name);
  if (a->g->n_inputs != 1 || a->g->n_outputs != 1)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "%s must have 1 input and 1 output, has %zu and %zu",
                           name, a->g->n_inputs, a->g->n_outputs);
  ge_status st = ge_subgraph_create(p, a->g, &s->mod[i].sub);
  if (st != GE_OK) return ge_error_prefix(st, "FlexAttention %s: ", name);
  return GE_OK;
}

ge_status ge_nn2_flex_prepare(const ge_prepare_ctx *p, void **state) {
  GE_CHECK(ge_prepare_check_dtype(p, 0, k_float));
  flex_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "cannot allocate kernel state");
  *state = s;
  s->has_scale = ge_node_attr(p->node, "scale") != NULL;
  s->scale = ge_node_attr_float(p->node, "scale", 1.0f);
  ge_dtype qdt = p->in[0].type ? p->in[0].type->dtype : GE_F32;
  s->sm = qdt == GE_F64 ? GE_F64 : GE_F32;
  if (ge_node_attr(p->node, "softmax_precision")) {
    ge_dtype d;
    if (!ge_dtype_from_onnx((int32_t)ge_node_attr_int(p->node, "softmax_precision", 1), &d) ||
        !(d == GE_F32 || d == GE_F64 || d == GE_F16 || d == GE_BF16))
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "softmax_precision is not a float type");
    s->sm = d;
  }
  GE_CHECK(mod_load(p, s, 0, "score_mod"));
  GE_CHECK(mod_load(p, s, 1, "prob_mod"));
  return GE_OK;
}

/* buf (n doubles, shape dims) <- mod(buf) */
static ge_status mod_apply(ge_kctx *c, const flex_state *s, int i, const int64_t dims[4], double *buf,
                           size_t n) {
  const flex_mod *m = &s->mod[i];
  ge_tensor *in = NULL, *out = NULL;
  ge_status st = ge_tensor_create(s->sm, dims, 4, &in);
  if (st == GE_OK) {
    if (s->sm == GE_F64) memcpy(in->data, buf, n * sizeof(double));
    else {
      float *tmp = ge_nn_falloc(c, n);
      if (!tmp) st = GE_ERR_OUT_OF_MEMORY;
      else {
        for (size_t k = 0; k < n; k++) tmp[k] = (float)buf[k];
        ge_nn_f32_to(s->sm, tmp, in->data, n);
        free(tmp);
      }
    }
  }
  if (st == GE_OK) st = ge_kctx_run_subgraph(c, m->sub, &in, 1, &out, 1);
  if (st == GE_OK && (out->numel != n || out->rank != 4))
    st = ge_kctx_fail(c, GE_ERR_SHAPE, "%s changed the shape of its input", i ? "prob_mod" : "score_mod");
  if (st == GE_OK)
    for (size_t k = 0; k < n; k++) buf[k] = ge_tensor_get_f64(out, k);
  else
    st = ge_error_prefix(st, "FlexAttention %s: ", i ? "prob_mod" : "score_mod");
  ge_tensor_free(in);
  ge_tensor_free(out);
  return st;
}

/* value rounded to the softmax precision (what the reference computes in) */
static double round_to(ge_dtype dt, double v) {
  if (dt == GE_F64) return v;
  float f = (float)v;
  if (dt == GE_F16) return ge_f16_to_f32(ge_f32_to_f16(f));
  if (dt == GE_BF16) return ge_bf16_to_f32(ge_f32_to_bf16(f));
  return f;
}

ge_status ge_nn2_flex_run(const void *state, ge_kctx *c) {
  const flex_state *s = state;
  const ge_tensor *Q = c->in[0], *K = c->in[1], *V = c->in[2];
  ge_tensor *Y = c->out[0];
  if (Q->rank != 4 || K->rank != 4 || V->rank != 4)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "Q, K and V must be rank 4 (ranks %d, %d, %d)", Q->rank, K->rank, V->rank);
  int64_t B = Q->dims[0], Hq = Q->dims[1], L = Q->dims[2], D = Q->dims[3];
  int64_t Hkv = K->dims[1], S = K->dims[2], Dv = V->dims[3];
  if (K->dims[0] != B || V->dims[0] != B || K->dims[3] != D || V->dims[1] != Hkv || V->dims[2] != S ||
      Hkv <= 0 || Hq % Hkv)
    return ge_kctx_fail(c, GE_ERR_SHAPE, "inconsistent Q/K/V shapes (heads %lld/%lld, head size %lld/%lld)",
                        (long long)Hq, (long long)Hkv, (long long)D, (long long)K->dims[3]);
  int64_t G = Hq / Hkv, dims[4] = {B, Hq, L, S};
  size_t n = (size_t)B * (size_t)Hq * (size_t)L * (size_t)S;
  double scale = s->has_scale ? s->scale : 1.0 / sqrt((double)D);
  ge_dbuf q = {0}, k = {0}, v = {0}, y = {0};
  double *sc = NULL;
  ge_status st;
  if ((st = ge_nn_load_f64(c, Q, &q)) || (st = ge_nn_load_f64(c, K, &k)) || (st = ge_nn_load_f64(c, V, &v)) ||
      (st = ge_nn_out_f64(c, Y, &y)))
    goto done;
  sc = ge_nn2_dalloc(c, n);
  if (!sc) {
    st = GE_ERR_OUT_OF_MEMORY;
    goto done;
  }
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < Hq; h++) {
      const double *kb = k.p + (size_t)(b * Hkv + h / G) * (size_t)(S * D);
      for (int64_t i = 0; i < L; i++) {
        const double *qi = q.p + ((size_t)(b * Hq + h) * (size_t)L + (size_t)i) * (size_t)D;
        double *row = sc + ((size_t)(b * Hq + h) * (size_t)L + (size_t)i) * (size_t)S;
        for (int64_t j = 0; j < S; j++) {
          double acc = 0;
          for (int64_t d = 0; d < D; d++) acc += qi[d] * kb[j * D + d];
          row[j] = round_to(s->sm, acc * scale);
        }
      }
    }
  if (s->mod[0].sub && (st = mod_apply(c, s, 0, dims, sc, n))) goto done;
  for (size_t r = 0; r < n / (size_t)(S ? S : 1) && S; r++) {
    double *row = sc + r * (size_t)S, mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < S; j++)
      if (row[j] > mx) mx = row[j];
    if (mx == -INFINITY) {
      for (int64_t j = 0; j < S; j++) row[j] = 0;
      continue;
    }
    for (int64_t j = 0; j < S; j++) sum += (row[j] = exp(row[j] - mx));
    for (int64_t j = 0; j < S; j++) row[j] /= sum;
  }
  if (s->mod[1].sub && (st = mod_apply(c, s, 1, dims, sc, n))) goto done;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < Hq; h++) {
      const double *vb = v.p + (size_t)(b * Hkv + h / G) * (size_t)(S * Dv);
      for (int64_t i = 0; i < L; i++) {
        const double *row = sc + ((size_t)(b * Hq + h) * (size_t)L + (size_t)i) * (size_t)S;
        double *yo = y.p + ((size_t)(b * Hq + h) * (size_t)L + (size_t)i) * (size_t)Dv;
        for (int64_t d = 0; d < Dv; d++) yo[d] = 0;
        for (int64_t j = 0; j < S; j++)
          for (int64_t d = 0; d < Dv; d++) yo[d] += row[j] * vb[j * Dv + d];
      }
    }
  ge_nn_store_f64(Y, &y);
done:
  ge_dbuf_free(&q);
  ge_dbuf_free(&k);
  ge_dbuf_free(&v);
  ge_dbuf_free(&y);
  free(sc);
  return st;
}
