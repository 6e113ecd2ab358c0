/* Collapses chains: Reshape->Reshape, Transpose->Transpose (perms composed), Cast->Cast (only
 * when the first cast loses nothing).  The outer node is made to read the chain's start; the
 * inner node dies in DCE once nothing reads it. */
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

/* Every value of dtype a is exactly representable in dtype b. */
static bool lossless(ge_dtype a, ge_dtype b) {
  if (a == b) return true;
  switch (a) {
  case GE_BOOL: return b != GE_STRING;
  case GE_F16: return b == GE_F32 || b == GE_F64;
  case GE_BF16: return b == GE_F32 || b == GE_F64;
  case GE_F32: return b == GE_F64;
  case GE_I8: return b == GE_I16 || b == GE_I32 || b == GE_I64 || b == GE_F16 || b == GE_F32 || b == GE_F64 || b == GE_BF16;
  case GE_U8: return b == GE_I16 || b == GE_I32 || b == GE_I64 || b == GE_U16 || b == GE_U32 || b == GE_U64 ||
                     b == GE_F16 || b == GE_F32 || b == GE_F64 || b == GE_BF16;
  case GE_I16: return b == GE_I32 || b == GE_I64 || b == GE_F32 || b == GE_F64;
  case GE_U16: return b == GE_I32 || b == GE_I64 || b == GE_U32 || b == GE_U64 || b == GE_F32 || b == GE_F64;
  case GE_I32: return b == GE_I64 || b == GE_F64;
  case GE_U32: return b == GE_I64 || b == GE_U64 || b == GE_F64;
  default: return false;
  }
}

static bool reshape_shape_simple(const ge_edit *e, const ge_node *n) {
  /* a target shape without 0 entries does not depend on the input's dims */
  if (n->n_inputs < 2 || n->inputs[1] < 0) return false;
  const ge_tensor *t = ge_edit_const(e, n->inputs[1]);
  if (!t) return false;
  for (size_t i = 0; i < t->numel; i++)
    if (ge_tensor_get_i64(t, i) == 0) return false;
  return true;
}

ge_status ge_pass_chains(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  for (size_t ni = 0; ni < g->n_nodes && st == GE_OK; ni++) {
    if (e.dead[ni]) continue;
    ge_node *n = &g->nodes[ni];
    if (n->n_inputs < 1 || n->inputs[0] < 0) continue;
    int32_t p = ge_edit_producer(&e, n->inputs[0]);
    if (p < 0) continue;
    const ge_node *pn = &g->nodes[p];
    if (pn->n_inputs < 1 || pn->inputs[0] < 0) continue;
    if (ge_edit_is_op(&e, (int32_t)ni, "Reshape") && ge_edit_is_op(&e, p, "Reshape")) {
      if (!reshape_shape_simple(&e, n)) continue;
      ge_edit_set_input(&e, (int32_t)ni, 0, pn->inputs[0]);
      *changed = true;
    } else if (ge_edit_is_op(&e, (int32_t)ni, "Transpose") && ge_edit_is_op(&e, p, "Transpose")) {
      const int64_t *p1, *p2;
      size_t n1, n2;
      int32_t r = ge_edit_type(&e, pn->inputs[0])->shape.rank;
      int64_t d1[GE_MAX_RANK], d2[GE_MAX_RANK], comp[GE_MAX_RANK];
      if (!ge_node_attr_ints(pn, "perm", &p1, &n1)) {
        if (r < 0) continue;
        n1 = (size_t)r;
        for (int32_t i = 0; i < r; i++) d1[i] = r - 1 - i;
        p1 = d1;
      }
      if (!ge_node_attr_ints(n, "perm", &p2, &n2)) {
        n2 = n1;
        for (size_t i = 0; i < n1; i++) d2[i] = (int64_t)(n1 - 1 - i);
        p2 = d2;
      }
      if (n1 != n2 || n1 > GE_MAX_RANK) continue;
      bool ok = true;
      for (size_t i = 0; i < n2 && ok; i++) {
        if (p2[i] < 0 || (size_t)p2[i] >= n1 || p1[p2[i]] < 0 || (size_t)p1[p2[i]] >= n1) ok = false;
        else comp[i] = p1[p2[i]];
      }
      if (!ok) continue;
      st = ge_edit_set_attr_ints(n, "perm", comp, n2);
      if (st != GE_OK) break;
      ge_edit_set_input(&e, (int32_t)ni, 0, pn->inputs[0]);
      *changed = true;
    } else if (ge_edit_is_op(&e, (int32_t)ni, "Cast") && ge_edit_is_op(&e, p, "Cast")) {
      ge_dtype src = ge_edit_type(&e, pn->inputs[0])->dtype, mid;
      if (src == GE_DTYPE_COUNT || !ge_dtype_from_onnx((int32_t)ge_node_attr_int(pn, "to", 0), &mid))
        continue;
      if (!lossless(src, mid)) continue;
      ge_edit_set_input(&e, (int32_t)ni, 0, pn->inputs[0]);
      *changed = true;
    }
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
