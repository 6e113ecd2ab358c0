/* LayerNorm fusion, the pattern torch exports at opset < 17:
 *   m = ReduceMean(x, axes)   d = Sub(x, m)   p = Pow(d, 2) | Mul(d, d)   v = ReduceMean(p, axes)
 *   a = Add(v, eps)           s = Sqrt(a)     n = Div(d, s)   [y = Mul(n, gamma)]  [z = Add(y, beta)]
 * with axes the trailing axes of x -> ONNX LayerNormalization when the model imports ai.onnx
 * opset >= 17, else ai.ge::LayerNormalization (same inputs and attributes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

/* The normalised axes of a ReduceMean as the first axis of a trailing run; -1 when they are
   not the trailing axes of a rank-r input (or not known, or keepdims=0). */
static int64_t trailing_axis(const ge_edit *e, int32_t ni, int32_t r) {
  const ge_node *n = &e->g->nodes[ni];
  if (ge_node_attr_int(n, "keepdims", 1) != 1 || r <= 0) return -1;
  int64_t ax[GE_MAX_RANK];
  size_t na = 0;
  const int64_t *a;
  if (ge_node_attr_ints(n, "axes", &a, &na)) {
    if (na > GE_MAX_RANK) return -1;
    memcpy(ax, a, na * sizeof *a);
  } else if (n->n_inputs > 1 && n->inputs[1] >= 0) {
    const ge_tensor *t = ge_edit_const(e, n->inputs[1]);
    if (!t || t->numel > GE_MAX_RANK) return -1;
    na = t->numel;
    for (size_t i = 0; i < na; i++) ax[i] = ge_tensor_get_i64(t, i);
  } else {
    return -1;
  }
  if (na == 0) return -1;
  bool seen[GE_MAX_RANK] = {false};
  int64_t lo = r;
  for (size_t i = 0; i < na; i++) {
    int64_t x = ax[i] < 0 ? ax[i] + r : ax[i];
    if (x < 0 || x >= r || seen[x]) return -1;
    seen[x] = true;
    if (x < lo) lo = x;
  }
  if ((int64_t)na != r - lo) return -1;
  return lo;
}

static int32_t out0(const ge_edit *e, int32_t ni) { return e->g->nodes[ni].outputs[0]; }

/* other input of binary node ni than v (-1 if v is not an input) */
static int32_t other_in(const ge_edit *e, int32_t ni, int32_t v) {
  const ge_node *n = &e->g->nodes[ni];
  if (n->n_inputs != 2) return -1;
  if (n->inputs[0] == v) return n->inputs[1];
  if (n->inputs[1] == v) return n->inputs[0];
  return -1;
}

/* A float32 constant of `numel` elements whose dims are the trailing dims of `norm`
   (leading 1s allowed); copied into a tensor of exactly the normalised shape. */
static ge_status param_tensor(const ge_edit *e, int32_t v, const ge_shape *norm, ge_tensor **out) {
  *out = NULL;
  const ge_tensor *t = ge_edit_const(e, v);
  if (!t || t->dtype != GE_F32) return GE_OK;
  size_t numel = 1;
  for (int32_t d = 0; d < norm->rank; d++) numel *= (size_t)norm->dims[d];
  if (t->numel != numel) return GE_OK;
  for (int32_t d = 0; d < t->rank; d++) {
    int32_t nd = d - (t->rank - norm->rank);
    if (nd < 0 ? t->dims[d] != 1 : t->dims[d] != norm->dims[nd]) return GE_OK;
  }
  GE_CHECK(ge_tensor_create_shape(GE_F32, norm, out));
  if (numel) memcpy((*out)->data, t->data, numel * sizeof(float));
  return GE_OK;
}

ge_status ge_pass_layernorm(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  bool onnx_ln = ge_graph_opset(g, "") >= 17;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    int32_t rm1 = (int32_t)ni;
    if (!ge_edit_is_op(&e, rm1, "ReduceMean")) continue;
    int32_t x = g->nodes[rm1].inputs[0];
    if (x < 0 || !ge_pu_is_f32(&e, x)) continue;
    ge_shape xs = ge_edit_type(&e, x)->shape;
    int32_t r = xs.rank;
    int64_t axis = trailing_axis(&e, rm1, r);
    if (axis < 0) continue;
    ge_shape norm = {.rank = r - (int32_t)axis};
    bool static_norm = true;
    for (int32_t d = (int32_t)axis; d < r; d++) {
      norm.dims[d - axis] = xs.dims[d];
      if (xs.dims[d] < 0) static_norm = false;
    }
    int32_t m_v = out0(&e, rm1);
    int32_t sub = ge_edit_single_reader(&e, m_v, NULL);
    if (sub < 0 || !ge_edit_is_op(&e, sub, "Sub") || g->nodes[sub].inputs[0] != x ||
        g->nodes[sub].inputs[1] != m_v)
      continue;
    int32_t d_v = out0(&e, sub);
    if (e.is_out[d_v]) continue;
    int32_t rd[3];
    size_t rs[3];
    size_t nr = ge_edit_readers(&e, d_v, rd, rs, 3);
    int32_t pw = -1, dv = -1;
    if (nr == 2) {
      for (size_t k = 0; k < 2; k++) {
        double ex;
        if (ge_edit_is_op(&e, rd[k], "Pow") && rs[k] == 0 && ge_edit_const_scalar(&e, g->nodes[rd[k]].inputs[1], &ex) && ex == 2.0)
          pw = rd[k];
        else if (ge_edit_is_op(&e, rd[k], "Div") && rs[k] == 0) dv = rd[k];
      }
    } else if (nr == 3) { /* Mul(d, d) reads d twice */
      for (size_t k = 0; k < 3; k++) {
        if (ge_edit_is_op(&e, rd[k], "Mul") && g->nodes[rd[k]].inputs[0] == d_v && g->nodes[rd[k]].inputs[1] == d_v)
          pw = rd[k];
        else if (ge_edit_is_op(&e, rd[k], "Div") && rs[k] == 0) dv = rd[k];
      }
    }
    if (pw < 0 || dv < 0) continue;
    int32_t rm2 = ge_edit_single_reader(&e, out0(&e, pw), NULL);
    if (rm2 < 0 || !ge_edit_is_op(&e, rm2, "ReduceMean") || trailing_axis(&e, rm2, r) != axis) continue;
    int32_t ad = ge_edit_single_reader(&e, out0(&e, rm2), NULL);
    double eps;
    if (ad < 0 || !ge_edit_is_op(&e, ad, "Add") ||
        !ge_edit_const_scalar(&e, other_in(&e, ad, out0(&e, rm2)), &eps))
      continue;
    int32_t sq = ge_edit_single_reader(&e, out0(&e, ad), NULL);
    if (sq < 0 || !ge_edit_is_op(&e, sq, "Sqrt")) continue;
    if (ge_edit_single_reader(&e, out0(&e, sq), NULL) != dv || g->nodes[dv].inputs[1] != out0(&e, sq)) continue;
    int32_t nodes[9] = {rm1, sub, pw, rm2, ad, sq, dv, -1, -1};
    size_t nn = 7;
    int32_t y = out0(&e, dv);
    ge_tensor *gamma = NULL, *beta = NULL;
    if (static_norm) {
      int32_t mul = ge_edit_single_reader(&e, y, NULL);
      if (mul >= 0 && ge_edit_is_op(&e, mul, "Mul")) {
        st = param_tensor(&e, other_in(&e, mul, y), &norm, &gamma);
        if (st != GE_OK) break;
        if (gamma) {
          nodes[nn++] = mul;
          y = out0(&e, mul);
          int32_t ba = ge_edit_single_reader(&e, y, NULL);
          if (ba >= 0 && ge_edit_is_op(&e, ba, "Add")) {
            st = param_tensor(&e, other_in(&e, ba, y), &norm, &beta);
            if (st != GE_OK) {
              ge_tensor_free(gamma);
              break;
            }
            if (beta) {
              nodes[nn++] = ba;
              y = out0(&e, ba);
            }
          }
        }
      }
    }
    if (onnx_ln && !gamma) { /* ONNX LayerNormalization needs a scale */
      if (!static_norm) continue;
      st = ge_tensor_create_shape(GE_F32, &norm, &gamma);
      if (st != GE_OK) break;
      float *gd = gamma->data;
      for (size_t i = 0; i < gamma->numel; i++) gd[i] = 1.f;
    }
    int32_t in[3] = {x, -1, -1};
    char base[256];
    snprintf(base, sizeof base, "%s_ln_scale", g->values[x].name);
    if (gamma) {
      st = ge_edit_add_constant(&e, base, gamma, &in[1]);
      gamma = NULL;
      if (st != GE_OK) {
        ge_tensor_free(beta);
        break;
      }
    }
    if (beta) {
      snprintf(base, sizeof base, "%s_ln_bias", g->values[x].name);
      st = ge_edit_add_constant(&e, base, beta, &in[2]);
      if (st != GE_OK) break;
    }
    size_t n_in = in[2] >= 0 ? 3 : in[1] >= 0 ? 2 : 1;
    char nm[256];
    snprintf(nm, sizeof nm, "%s_layernorm", g->nodes[rm1].name);
    for (size_t k = 0; k < nn; k++) ge_edit_kill(&e, nodes[k]);
    int32_t out[1] = {y}, id;
    st = ge_edit_add_node(&e, "LayerNormalization", onnx_ln ? "" : "ai.ge", nm, in, n_in, out, 1, &id);
    if (st == GE_OK) st = ge_edit_set_attr_int(&g->nodes[id], "axis", axis);
    if (st == GE_OK) st = ge_edit_set_attr_float(&g->nodes[id], "epsilon", (float)eps);
    *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
