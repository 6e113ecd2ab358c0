/* Scaled-dot-product attention fusion:
 *   s = MatMul(Q, KT)  [Div(s, c) | Mul(s, c)]  [Add(., Mask) | Where(Cond, ., Fill)]
 *   p = Softmax(., axis=-1)  y = MatMul(p, V)
 * -> ai.ge::Attention(Q, KT, V, [Mask]) with scale = 1/c (Div) or c (Mul).  Q, KT, V float32
 * (batch dims broadcast as MatMul's); Softmax over the last axis; every intermediate has one
 * reader and is not a graph output.
 * The causal mask of GPT-style exports, Where(Cond, s, Fill) with a bool Cond (which must not
 * enlarge the scores) and a constant float32 scalar Fill (any value: GPT-2 exports use -1e9,
 * where an additive mask would not be exact), becomes the select mode of the Attention:
 * Mask = Cond, mask_mode = 1, mask_fill = Fill (ops/fused.h). */
#include <stdio.h>
#include <string.h>

#include "ops/fused.h"
#include "passes/pass.h"
#include "passes/pass_util.h"

static int32_t out0(const ge_edit *e, int32_t ni) { return e->g->nodes[ni].outputs[0]; }

/* node ni is a live Transpose with perm `want` (4 entries) */
static bool is_perm(const ge_edit *e, int32_t ni, const int64_t *want) {
  if (ni < 0 || !ge_edit_is_op(e, ni, "Transpose") || e->g->nodes[ni].n_inputs < 1) return false;
  const int64_t *perm = NULL;
  size_t n = 0;
  if (!ge_node_attr_ints(&e->g->nodes[ni], "perm", &perm, &n) || n != 4) return false;
  for (size_t i = 0; i < 4; i++)
    if (perm[i] != want[i]) return false;
  return true;
}

/* rank unknown or >= 2 (MatMul's batch broadcasting is the kernel's, as in MatMul) */
static bool rank_ok(const ge_edit *e, int32_t a) {
  int32_t r = ge_edit_type(e, a)->shape.rank;
  return r == GE_RANK_UNKNOWN || r >= 2;
}

ge_status ge_pass_attention(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    int32_t sm = (int32_t)ni;
    if (!ge_edit_is_op(&e, sm, "Softmax")) continue;
    const ge_node *smn = &g->nodes[sm];
    int32_t t_v = smn->inputs[0];
    int32_t r = ge_edit_type(&e, t_v)->shape.rank;
    int64_t axis = ge_node_attr_int(smn, "axis", smn->opset >= 13 ? -1 : 1);
    if (r == GE_RANK_UNKNOWN) {
      if (axis != -1) continue; /* only the last axis, whatever the rank */
    } else {
      if (r < 2) continue;
      if (axis < 0) axis += r;
      if (axis != r - 1) continue;
    }
    size_t slot;
    int32_t mm2 = ge_edit_single_reader(&e, out0(&e, sm), &slot);
    if (mm2 < 0 || !ge_edit_is_op(&e, mm2, "MatMul") || slot != 0) continue;
    int32_t nodes[12] = {sm, mm2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    size_t nn = 2;
    int32_t mask = -1, where_cond = -1;
    float where_fill = 0.f;
    float scale = 1.f;
    int32_t cur = t_v, p;
    bool ok = true;
    /* walk up: [Add mask] [Div/Mul scale] MatMul */
    for (int step = 0; step < 3 && ok; step++) {
      if (!ge_edit_single_use(&e, cur)) { ok = false; break; }
      p = ge_edit_producer(&e, cur);
      if (p < 0) { ok = false; break; }
      const ge_node *pn = &g->nodes[p];
      if (ge_edit_is_op(&e, p, "MatMul")) break;
      double k;
      if (ge_edit_is_op(&e, p, "Add") && mask < 0 && step == 0) {
        /* the mask is the input that is not the scores chain: prefer a non-MatMul side */
        int32_t s0 = pn->inputs[0], s1 = pn->inputs[1];
        int32_t p0 = ge_edit_producer(&e, s0);
        bool s0_chain = p0 >= 0 && (ge_edit_is_op(&e, p0, "MatMul") || ge_edit_is_op(&e, p0, "Div") ||
                                    ge_edit_is_op(&e, p0, "Mul"));
        mask = s0_chain ? s1 : s0;
        cur = s0_chain ? s0 : s1;
        nodes[nn++] = p;
        continue;
      }
      if (ge_edit_is_op(&e, p, "Where") && mask < 0 && step == 0 && pn->n_inputs == 3 && pn->inputs[1] >= 0 &&
          pn->inputs[0] >= 0 && pn->inputs[2] >= 0 && ge_pu_is_f32(&e, pn->inputs[2]) &&
          ge_edit_const_scalar(&e, pn->inputs[2], &k)) {
        const ge_type *ct = ge_edit_type(&e, pn->inputs[0]);
        if (ct->kind != GE_TYPE_TENSOR || ct->dtype != GE_BOOL) { ok = false; break; }
        /* the Fill must not enlarge the scores' rank either */
        int32_t fr = ge_edit_type(&e, pn->inputs[2])->shape.rank, sr = ge_edit_type(&e, pn->inputs[1])->shape.rank;
        if (fr != 0 && (fr < 0 || sr < 0 || fr > sr)) { ok = false; break; }
        where_cond = pn->inputs[0];
        where_fill = (float)k;
        mask = where_cond; /* its shape is the mask's (checked below) */
        cur = pn->inputs[1];
        nodes[nn++] = p;
        continue;
      }
      if ((ge_edit_is_op(&e, p, "Div") || ge_edit_is_op(&e, p, "Mul")) && pn->inputs[0] == cur) {
        ok = false;
        break;
      }
      if (ge_edit_is_op(&e, p, "Div") && ge_edit_const_scalar(&e, pn->inputs[1], &k) && k != 0) {
        scale *= (float)(1.0 / k);
        cur = pn->inputs[0];
        nodes[nn++] = p;
        continue;
      }
      if (ge_edit_is_op(&e, p, "Mul")) {
        int32_t side = ge_edit_const_scalar(&e, pn->inputs[1], &k) ? 0
                       : ge_edit_const_scalar(&e, pn->inputs[0], &k) ? 1 : -1;
        if (side < 0) { ok = false; break; }
        scale *= (float)k;
        cur = pn->inputs[side];
        nodes[nn++] = p;
        continue;
      }
      ok = false;
    }
    if (!ok || !ge_edit_single_use(&e, cur)) continue;
    int32_t mm1 = ge_edit_producer(&e, cur);
    if (mm1 < 0 || !ge_edit_is_op(&e, mm1, "MatMul")) continue;
    int32_t q = g->nodes[mm1].inputs[0], kt = g->nodes[mm1].inputs[1], v = g->nodes[mm2].inputs[1];
    if (!ge_pu_is_f32(&e, q) || !ge_pu_is_f32(&e, kt) || !ge_pu_is_f32(&e, v)) continue;
    if (!rank_ok(&e, q) || !rank_ok(&e, kt) || !rank_ok(&e, v)) continue;
    if (mask >= 0) {
      const ge_type *mt = ge_edit_type(&e, mask);
      if (mt->kind != GE_TYPE_TENSOR || mt->dtype != (where_cond >= 0 ? GE_BOOL : GE_F32)) continue;
      /* the Add must not broadcast the scores up (checked here when shapes are known, else
         by the kernel, which then fails naming the mask) */
      const ge_shape *ss = &ge_edit_type(&e, cur)->shape;
      if (mt->shape.rank >= 0 && ss->rank >= 0) {
        if (mt->shape.rank > ss->rank) continue;
        bool bad = false;
        for (int32_t d = 0; d < mt->shape.rank; d++) {
          int64_t md = mt->shape.dims[d], sd = ss->dims[d + (ss->rank - mt->shape.rank)];
          if (md >= 0 && md != 1 && sd >= 0 && md != sd) bad = true;
          if (md != 1 && sd == 1) bad = true;
        }
        if (bad) continue;
      }
    }
    nodes[nn++] = mm1;
    int32_t in[4] = {q, kt, v, mask}, out[1] = {out0(&e, mm2)}, id;
    /* the Transposes of the [B, S, H, D] operands (ops/fused.h, layout): Q and V by (0,2,1,3),
       KT by (0,2,3,1), Y back by (0,2,1,3), when the Attention is their only reader / writer */
    static const int64_t p_q[4] = {0, 2, 1, 3}, p_k[4] = {0, 2, 3, 1};
    int32_t tr[4] = {-1, -1, -1, -1};
    int64_t layout = 0;
    for (int o = 0; o < 3; o++) {
      if (!ge_edit_single_use(&e, in[o])) continue;
      int32_t t = ge_edit_producer(&e, in[o]);
      if (!is_perm(&e, t, o == 1 ? p_k : p_q) || !ge_pu_is_f32(&e, g->nodes[t].inputs[0])) continue;
      tr[o] = t;
      in[o] = g->nodes[t].inputs[0];
      layout |= (int64_t)1 << o;
    }
    {
      size_t ys = 0;
      int32_t t = ge_edit_single_use(&e, out[0]) ? ge_edit_single_reader(&e, out[0], &ys) : -1;
      if (t >= 0 && ys == 0 && is_perm(&e, t, p_q)) {
        tr[3] = t;
        out[0] = out0(&e, t);
        layout |= GE_ATTN_LAYOUT_Y;
      }
    }
    for (int o = 0; o < 4; o++)
      if (tr[o] >= 0) nodes[nn++] = tr[o];
    char nm[256];
    snprintf(nm, sizeof nm, "%s_attention", g->nodes[sm].name);
    for (size_t k = 0; k < nn; k++) ge_edit_kill(&e, nodes[k]);
    st = ge_edit_add_node(&e, "Attention", "ai.ge", nm, in, mask >= 0 ? 4 : 3, out, 1, &id);
    if (st == GE_OK) st = ge_edit_set_attr_float(&g->nodes[id], "scale", scale);
    if (st == GE_OK && layout) st = ge_edit_set_attr_int(&g->nodes[id], "layout", layout);
    if (st == GE_OK && where_cond >= 0) {
      st = ge_edit_set_attr_int(&g->nodes[id], "mask_mode", GE_ATTN_MASK_SELECT);
      if (st == GE_OK) st = ge_edit_set_attr_float(&g->nodes[id], "mask_fill", where_fill);
    }
    *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
