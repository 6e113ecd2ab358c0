/* Gradient (ai.onnx.preview.training) as a compile-time transformation: reverse-mode autodiff.
 *
 * For a Gradient node with attributes xs (names of the independent values) and y, the seed
 * dy = ones_like(y) is propagated backwards through every forward node that both depends on
 * some x and contributes to y, in reverse topological order.  Contributions to a value read by
 * several nodes are summed.  Inputs that numpy broadcasting expanded get their gradient summed
 * over the broadcast axes and reshaped back (statically skipped when the shapes are equal).
 * The Gradient node is then replaced by Identity nodes writing its outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/autodiff.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"

#define AD_DOMAIN "ai.onnx.preview.training"

typedef struct ad_ctx {
  ge_edit *e;
  ge_graph *g;
  int32_t gnode;       /* the Gradient node */
  int32_t fnode;       /* the forward node being differentiated (-1: none) */
  int32_t *grad;       /* per value: its gradient value id, -1 when none yet */
  size_t n_grad;
} ad_ctx;

static bool is_gradient(const ge_node *n) {
  return !strcmp(n->op_type, "Gradient") && n->domain && !strcmp(n->domain, AD_DOMAIN);
}

static ge_status ad_fail(const ad_ctx *a, ge_status st, const char *what) {
  char b1[256], b2[256];
  const char *fd = a->fnode >= 0 ? ge_node_desc(&a->g->nodes[a->fnode], b2, sizeof b2) : "";
  return ge_error(st, "%s: %s%s%s", ge_node_desc(&a->g->nodes[a->gnode], b1, sizeof b1), what,
                  a->fnode >= 0 ? " at forward " : "", fd);
}

static ge_dtype vdtype(const ad_ctx *a, int32_t v) { return a->g->values[v].type.dtype; }

/* A new node with one fresh output; returns the node index in *ni (may be NULL). */
static ge_status mk(ad_ctx *a, const char *op, const int32_t *in, size_t n_in, int32_t *out,
                    int32_t *ni) {
  char base[64];
  snprintf(base, sizeof base, "grad_%s", op);
  GE_CHECK(ge_edit_new_value(a->e, base, out));
  /* ge_edit_new_value may grow the values array: grad[] is indexed by id, grow it too */
  if ((size_t)*out >= a->n_grad) {
    size_t n = a->g->n_values + 64;
    int32_t *gr = realloc(a->grad, n * sizeof *gr);
    if (!gr) return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in autodiff");
    for (size_t i = a->n_grad; i < n; i++) gr[i] = -1;
    a->grad = gr;
    a->n_grad = n;
  }
  int32_t id;
  GE_CHECK(ge_edit_add_node(a->e, op, "", base, in, n_in, out, 1, &id));
  if (ni) *ni = id;
  return GE_OK;
}

static ge_status mk1(ad_ctx *a, const char *op, int32_t x, int32_t *out) {
  return mk(a, op, &x, 1, out, NULL);
}

static ge_status mk2(ad_ctx *a, const char *op, int32_t x, int32_t y, int32_t *out) {
  int32_t in[2] = {x, y};
  return mk(a, op, in, 2, out, NULL);
}

/* A scalar constant of dtype dt. */
static ge_status cst(ad_ctx *a, ge_dtype dt, double v, int32_t *out) {
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(dt, NULL, 0, &t));
  switch (dt) {
  case GE_F32: *(float *)t->data = (float)v; break;
  case GE_F64: *(double *)t->data = v; break;
  case GE_F16: *(uint16_t *)t->data = ge_f32_to_f16((float)v); break;
  case GE_BF16: *(uint16_t *)t->data = ge_f32_to_bf16((float)v); break;
  case GE_I64: *(int64_t *)t->data = (int64_t)v; break;
  default:
    ge_tensor_free(t);
    return ad_fail(a, GE_ERR_UNSUPPORTED, "only float tensors (f32, f64, f16, bf16) can be differentiated");
  }
  return ge_edit_add_constant(a->e, "grad_const", t, out);
}

static ge_status i64_vec(ad_ctx *a, const int64_t *v, size_t n, int32_t *out) {
  int64_t d = (int64_t)n;
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(GE_I64, &d, 1, &t));
  if (n) memcpy(t->data, v, n * sizeof *v);
  return ge_edit_add_constant(a->e, "grad_const", t, out);
}

static ge_status float_dtype(const ad_ctx *a, int32_t v, ge_dtype *dt) {
  *dt = vdtype(a, v);
  if (*dt != GE_F32 && *dt != GE_F64 && *dt != GE_F16 && *dt != GE_BF16) {
    char msg[256];
    snprintf(msg, sizeof msg, "value '%s' has %s dtype; only float tensors of known dtype can be differentiated",
             a->g->values[v].name, *dt == GE_DTYPE_COUNT ? "an unknown" : "a non-float");
    return ad_fail(a, GE_ERR_UNSUPPORTED, msg);
  }
  return GE_OK;
}

/* Expand(scalar c, Shape(like)). */
static ge_status fill_like(ad_ctx *a, int32_t like, double c, int32_t *out) {
  ge_dtype dt;
  GE_CHECK(float_dtype(a, like, &dt));
  int32_t k, s;
  GE_CHECK(cst(a, dt, c, &k));
  GE_CHECK(mk1(a, "Shape", like, &s));
  return mk2(a, "Expand", k, s, out);
}

static void set_opset_min(ad_ctx *a, int32_t ni, int64_t v) {
  if (a->g->nodes[ni].opset < v) a->g->nodes[ni].opset = v;
}

/* gd has the shape of value `full` (a broadcast result); sums it back to the shape of x. */
static ge_status reduce_to(ad_ctx *a, int32_t gd, int32_t full, int32_t x, int32_t *out) {
  const ge_shape *sf = &a->g->values[full].type.shape, *sx = &a->g->values[x].type.shape;
  if (sf->rank >= 0 && ge_shape_equal(sf, sx)) {
    bool sym_ok = true; /* anonymous unknown dims could differ */
    for (int32_t d = 0; d < sx->rank; d++)
      if (sx->dims[d] == GE_DIM_UNKNOWN) sym_ok = false;
    if (sym_ok) {
      *out = gd;
      return GE_OK;
    }
  }
  int32_t sg, shx, rg, rx, d, pad, sp, one, m, nz, minus1, axes, r, ni;
  GE_CHECK(mk1(a, "Shape", gd, &sg));
  GE_CHECK(mk1(a, "Shape", x, &shx));
  GE_CHECK(mk1(a, "Shape", sg, &rg));
  GE_CHECK(mk1(a, "Shape", shx, &rx));
  GE_CHECK(mk2(a, "Sub", rg, rx, &d));
  GE_CHECK(mk(a, "ConstantOfShape", &d, 1, &pad, &ni));
  {
    int64_t d1 = 1;
    ge_tensor *t = NULL;
    GE_CHECK(ge_tensor_create(GE_I64, &d1, 1, &t));
    *(int64_t *)t->data = 1;
    ge_attr_value v;
    memset(&v, 0, sizeof v);
    v.name = strdup("value");
    v.kind = GE_ATTR_KIND_TENSOR;
    v.t = t;
    if (!v.name) {
      ge_attr_value_clear(&v);
      return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in autodiff");
    }
    ge_status st = ge_node_add_attr(&a->g->nodes[ni], &v);
    if (st != GE_OK) {
      ge_attr_value_clear(&v);
      return st;
    }
    set_opset_min(a, ni, 9);
  }
  {
    int32_t cin[2] = {pad, shx};
    GE_CHECK(mk(a, "Concat", cin, 2, &sp, &ni));
    GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "axis", 0));
  }
  GE_CHECK(cst(a, GE_I64, 1, &one));
  GE_CHECK(mk2(a, "Equal", sp, one, &m));
  GE_CHECK(mk1(a, "NonZero", m, &nz));
  set_opset_min(a, a->g->values[nz].producer, 9);
  {
    int64_t mv = -1;
    GE_CHECK(i64_vec(a, &mv, 1, &minus1));
  }
  GE_CHECK(mk2(a, "Reshape", nz, minus1, &axes));
  GE_CHECK(mk2(a, "ReduceSum", gd, axes, &r));
  ni = a->g->values[r].producer;
  set_opset_min(a, ni, 13);
  GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "keepdims", 1));
  GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "noop_with_empty_axes", 1));
  return mk2(a, "Reshape", r, shx, out);
}

/* grad[v] += c */
static ge_status accumulate(ad_ctx *a, int32_t v, int32_t c) {
  if (a->grad[v] < 0) {
    a->grad[v] = c;
    return GE_OK;
  }
  int32_t s;
  GE_CHECK(mk2(a, "Add", a->grad[v], c, &s));
  a->grad[v] = s;
  return GE_OK;
}

/* Transpose of the last two axes of v (rank from its type). */
static ge_status swap_last2(ad_ctx *a, int32_t v, int32_t *out) {
  int32_t r = a->g->values[v].type.shape.rank;
  if (r < 2)
    return ad_fail(a, GE_ERR_UNSUPPORTED, "MatMul gradient needs operands of known rank >= 2");
  int64_t perm[GE_MAX_RANK];
  for (int32_t i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  int32_t ni;
  GE_CHECK(mk(a, "Transpose", &v, 1, out, &ni));
  return ge_edit_set_attr_ints(&a->g->nodes[ni], "perm", perm, (size_t)r);
}

static ge_status gemm(ad_ctx *a, int32_t x, int32_t y, float alpha, int64_t ta, int64_t tb,
                      int32_t *out) {
  int32_t ni;
  int32_t in[2] = {x, y};
  GE_CHECK(mk(a, "Gemm", in, 2, out, &ni));
  GE_CHECK(ge_edit_set_attr_float(&a->g->nodes[ni], "alpha", alpha));
  GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "transA", ta));
  return ge_edit_set_attr_int(&a->g->nodes[ni], "transB", tb);
}

/* Backward of forward node fi; dep[v] says whether value v depends on some x. */
static ge_status backward_node(ad_ctx *a, int32_t fi, const bool *dep) {
  a->fnode = fi;
  const ge_node *n = &a->g->nodes[fi];
  const char *op = n->op_type;
  if (n->domain[0] != '\0' || n->n_outputs < 1 || n->outputs[0] < 0)
    return ad_fail(a, GE_ERR_UNSUPPORTED, "no derivative rule for this op");
  int32_t Y = n->outputs[0];
  int32_t G = a->grad[Y];
  if (G < 0) return GE_OK; /* y does not depend on this output */
  int32_t in[16];
  size_t n_in = n->n_inputs < 16 ? n->n_inputs : 16;
  for (size_t i = 0; i < n_in; i++) in[i] = n->inputs[i];
  for (size_t i = n_in; i < 16; i++) in[i] = -1;
  bool d0 = in[0] >= 0 && dep[in[0]], d1 = n_in > 1 && in[1] >= 0 && dep[in[1]];
  int32_t c, t, t2;
  ge_dtype dt;
  GE_CHECK(float_dtype(a, Y, &dt));

  if (!strcmp(op, "Identity")) {
    if (d0) GE_CHECK(accumulate(a, in[0], G));
  } else if (!strcmp(op, "Add") || !strcmp(op, "Sub")) {
    if (d0) {
      GE_CHECK(reduce_to(a, G, Y, in[0], &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
    if (d1) {
      t = G;
      if (!strcmp(op, "Sub")) GE_CHECK(mk1(a, "Neg", G, &t));
      GE_CHECK(reduce_to(a, t, Y, in[1], &c));
      GE_CHECK(accumulate(a, in[1], c));
    }
  } else if (!strcmp(op, "Sum")) {
    for (size_t i = 0; i < n_in; i++)
      if (in[i] >= 0 && dep[in[i]]) {
        GE_CHECK(reduce_to(a, G, Y, in[i], &c));
        GE_CHECK(accumulate(a, in[i], c));
      }
  } else if (!strcmp(op, "Mul")) {
    if (d0) {
      GE_CHECK(mk2(a, "Mul", G, in[1], &t));
      GE_CHECK(reduce_to(a, t, Y, in[0], &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
    if (d1) {
      GE_CHECK(mk2(a, "Mul", G, in[0], &t));
      GE_CHECK(reduce_to(a, t, Y, in[1], &c));
      GE_CHECK(accumulate(a, in[1], c));
    }
  } else if (!strcmp(op, "Div")) {
    int32_t gb;
    GE_CHECK(mk2(a, "Div", G, in[1], &gb)); /* G / B */
    if (d0) {
      GE_CHECK(reduce_to(a, gb, Y, in[0], &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
    if (d1) { /* d(A/B)/dB = -Y/B */
      GE_CHECK(mk2(a, "Mul", gb, Y, &t));
      GE_CHECK(mk1(a, "Neg", t, &t2));
      GE_CHECK(reduce_to(a, t2, Y, in[1], &c));
      GE_CHECK(accumulate(a, in[1], c));
    }
  } else if (!strcmp(op, "Neg")) {
    if (d0) {
      GE_CHECK(mk1(a, "Neg", G, &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "Relu")) {
    if (d0) {
      int32_t z, m, mc, ni;
      GE_CHECK(cst(a, dt, 0, &z));
      GE_CHECK(mk2(a, "Greater", in[0], z, &m));
      GE_CHECK(mk(a, "Cast", &m, 1, &mc, &ni));
      GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "to", ge_dtype_to_onnx(dt)));
      GE_CHECK(mk2(a, "Mul", G, mc, &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "Sigmoid") || !strcmp(op, "Tanh")) {
    if (d0) {
      int32_t one, s;
      GE_CHECK(cst(a, dt, 1, &one));
      if (!strcmp(op, "Sigmoid")) { /* y (1 - y) */
        GE_CHECK(mk2(a, "Sub", one, Y, &t));
        GE_CHECK(mk2(a, "Mul", Y, t, &s));
      } else { /* 1 - y^2 */
        GE_CHECK(mk2(a, "Mul", Y, Y, &t));
        GE_CHECK(mk2(a, "Sub", one, t, &s));
      }
      GE_CHECK(mk2(a, "Mul", G, s, &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "Exp")) {
    if (d0) {
      GE_CHECK(mk2(a, "Mul", G, Y, &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "Log")) {
    if (d0) {
      GE_CHECK(mk2(a, "Div", G, in[0], &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "MatMul")) {
    if (d0) { /* G @ B^T */
      GE_CHECK(swap_last2(a, in[1], &t));
      GE_CHECK(mk2(a, "MatMul", G, t, &t2));
      GE_CHECK(reduce_to(a, t2, t2, in[0], &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
    if (d1) { /* A^T @ G */
      GE_CHECK(swap_last2(a, in[0], &t));
      GE_CHECK(mk2(a, "MatMul", t, G, &t2));
      GE_CHECK(reduce_to(a, t2, t2, in[1], &c));
      GE_CHECK(accumulate(a, in[1], c));
    }
  } else if (!strcmp(op, "Gemm")) {
    float alpha = ge_node_attr_float(n, "alpha", 1.0f), beta = ge_node_attr_float(n, "beta", 1.0f);
    int64_t ta = ge_node_attr_int(n, "transA", 0) != 0, tb = ge_node_attr_int(n, "transB", 0) != 0;
    bool d2 = n_in > 2 && in[2] >= 0 && dep[in[2]];
    if (d0) {
      if (!ta) GE_CHECK(gemm(a, G, in[1], alpha, 0, !tb, &c));
      else GE_CHECK(gemm(a, in[1], G, alpha, tb, 1, &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
    if (d1) {
      if (!tb) GE_CHECK(gemm(a, in[0], G, alpha, !ta, 0, &c));
      else GE_CHECK(gemm(a, G, in[0], alpha, 1, ta, &c));
      GE_CHECK(accumulate(a, in[1], c));
    }
    if (d2) {
      t = G;
      if (beta != 1.0f) {
        int32_t b;
        GE_CHECK(cst(a, dt, beta, &b));
        GE_CHECK(mk2(a, "Mul", G, b, &t));
      }
      GE_CHECK(reduce_to(a, t, Y, in[2], &c));
      GE_CHECK(accumulate(a, in[2], c));
    }
  } else if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") ||
             !strcmp(op, "Unsqueeze")) {
    if (d0) {
      int32_t s;
      GE_CHECK(mk1(a, "Shape", in[0], &s));
      GE_CHECK(mk2(a, "Reshape", G, s, &c));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "Transpose")) {
    if (d0) {
      const int64_t *perm = NULL;
      size_t np = 0;
      int64_t p[GE_MAX_RANK], inv[GE_MAX_RANK];
      if (!ge_node_attr_ints(n, "perm", &perm, &np)) {
        int32_t r = a->g->values[in[0]].type.shape.rank;
        if (r < 0) return ad_fail(a, GE_ERR_UNSUPPORTED, "Transpose without perm needs an input of known rank");
        np = (size_t)r;
        for (size_t i = 0; i < np; i++) p[i] = (int64_t)(np - 1 - i);
        perm = p;
      }
      if (np > GE_MAX_RANK) return ad_fail(a, GE_ERR_INVALID_ARGUMENT, "Transpose perm is too long");
      for (size_t i = 0; i < np; i++) inv[i] = -1;
      for (size_t i = 0; i < np; i++) {
        if (perm[i] < 0 || (size_t)perm[i] >= np || inv[perm[i]] >= 0)
          return ad_fail(a, GE_ERR_INVALID_ARGUMENT, "Transpose perm is not a permutation");
        inv[perm[i]] = (int64_t)i;
      }
      int32_t ni;
      GE_CHECK(mk(a, "Transpose", &G, 1, &c, &ni));
      GE_CHECK(ge_edit_set_attr_ints(&a->g->nodes[ni], "perm", inv, np));
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else if (!strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMean")) {
    if (d0) {
      /* the same reduction with keepdims=1 gives the shape G is broadcast back from */
      int32_t k, ni, sk, gk, sx, ex;
      GE_CHECK(mk(a, op, in, n_in, &k, &ni));
      n = &a->g->nodes[fi];
      a->g->nodes[ni].opset = n->opset;
      GE_CHECK(ge_edit_copy_attrs(&a->g->nodes[ni], &a->g->nodes[fi]));
      GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "keepdims", 1));
      GE_CHECK(mk1(a, "Shape", k, &sk));
      GE_CHECK(mk2(a, "Reshape", G, sk, &gk));
      GE_CHECK(mk1(a, "Shape", in[0], &sx));
      GE_CHECK(mk2(a, "Expand", gk, sx, &ex));
      c = ex;
      if (!strcmp(op, "ReduceMean")) {
        int32_t nx, nk, q, qc;
        GE_CHECK(mk1(a, "Size", in[0], &nx));
        GE_CHECK(mk1(a, "Size", k, &nk));
        GE_CHECK(mk2(a, "Div", nx, nk, &q));
        GE_CHECK(mk(a, "Cast", &q, 1, &qc, &ni));
        GE_CHECK(ge_edit_set_attr_int(&a->g->nodes[ni], "to", ge_dtype_to_onnx(dt)));
        GE_CHECK(mk2(a, "Div", ex, qc, &c));
      }
      GE_CHECK(accumulate(a, in[0], c));
    }
  } else {
    return ad_fail(a, GE_ERR_UNSUPPORTED, "no derivative rule for this op");
  }
  a->fnode = -1;
  return GE_OK;
}

/* Expands Gradient node gi of g (g toposorted, types inferred). */
static ge_status expand_one(ge_graph *g, int32_t gi) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ad_ctx a = {.e = &e, .g = g, .gnode = gi, .fnode = -1};
  size_t nv = g->n_values, nn = g->n_nodes;
  bool *dep = calloc(nv + 1, sizeof *dep), *need = calloc(nv + 1, sizeof *need);
  a.n_grad = nv + 64;
  a.grad = malloc(a.n_grad * sizeof *a.grad);
  ge_status st = GE_OK;
  if (!dep || !need || !a.grad) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in autodiff");
    goto done;
  }
  for (size_t i = 0; i < a.n_grad; i++) a.grad[i] = -1;
  const ge_node *gn = &g->nodes[gi];
  const char *yname = ge_node_attr_string(gn, "y", NULL);
  const ge_attr_value *xs = ge_node_attr(gn, "xs");
  if (!yname || !xs || xs->kind != GE_ATTR_KIND_STRINGS) {
    st = ad_fail(&a, GE_ERR_INVALID_ARGUMENT, "needs attributes xs (strings) and y (string)");
    goto done;
  }
  if (xs->n != gn->n_outputs) {
    char msg[128];
    snprintf(msg, sizeof msg, "xs names %zu values but the node has %zu outputs", xs->n, gn->n_outputs);
    st = ad_fail(&a, GE_ERR_INVALID_ARGUMENT, msg);
    goto done;
  }
  int32_t y = ge_graph_find_value(g, yname);
  if (y < 0) {
    st = ad_fail(&a, GE_ERR_INVALID_ARGUMENT, "y names no value of the graph");
    goto done;
  }
  int32_t *xid = calloc(xs->n + 1, sizeof *xid);
  if (!xid) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in autodiff");
    goto done;
  }
  for (size_t k = 0; k < xs->n; k++) {
    xid[k] = ge_graph_find_value(g, xs->strings[k]);
    if (xid[k] < 0) {
      char msg[300];
      snprintf(msg, sizeof msg, "xs[%zu] '%s' names no value of the graph", k, xs->strings[k]);
      st = ad_fail(&a, GE_ERR_INVALID_ARGUMENT, msg);
      goto done_x;
    }
    dep[xid[k]] = true;
  }
  /* forward: which values depend on some x */
  for (size_t i = 0; i < nn; i++) {
    const ge_node *n = &g->nodes[i];
    if ((int32_t)i == gi || is_gradient(n)) continue;
    bool d = false;
    for (size_t k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0 && dep[n->inputs[k]]) d = true;
    if (d)
      for (size_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) dep[n->outputs[k]] = true;
  }
  /* backward: which values y depends on */
  need[y] = true;
  for (size_t i = nn; i-- > 0;) {
    const ge_node *n = &g->nodes[i];
    if ((int32_t)i == gi) continue;
    bool u = false;
    for (size_t k = 0; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0 && need[n->outputs[k]]) u = true;
    if (u)
      for (size_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0) need[n->inputs[k]] = true;
  }
  if (dep[y]) {
    st = fill_like(&a, y, 1.0, &a.grad[y]);
    for (size_t i = nn; st == GE_OK && i-- > 0;) {
      const ge_node *n = &g->nodes[i];
      if ((int32_t)i == gi) continue;
      bool u = false, d = false;
      for (size_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && need[n->outputs[k]] && dep[n->outputs[k]]) u = true;
      for (size_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && dep[n->inputs[k]]) d = true;
      if (!u || !d) continue;
      /* an x that some node produces (an intermediate x) stops the propagation there */
      bool stop = false;
      for (size_t k = 0; k < n->n_outputs; k++)
        for (size_t j = 0; j < xs->n; j++)
          if (n->outputs[k] == xid[j]) stop = true;
      if (stop) continue;
      if (is_gradient(n)) {
        a.fnode = (int32_t)i;
        st = ad_fail(&a, GE_ERR_UNSUPPORTED, "no derivative rule for a nested Gradient");
        break;
      }
      st = backward_node(&a, (int32_t)i, dep);
    }
  }
  a.fnode = -1;
  if (st != GE_OK) goto done_x;
  /* outputs: Identity(grad[x]) (zeros when y does not depend on x) */
  gn = &g->nodes[gi];
  size_t n_out = gn->n_outputs;
  int32_t *outs = calloc(n_out + 1, sizeof *outs);
  if (!outs) {
    st = ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory in autodiff");
    goto done_x;
  }
  memcpy(outs, gn->outputs, n_out * sizeof *outs);
  ge_edit_kill(&e, gi);
  for (size_t k = 0; st == GE_OK && k < n_out; k++) {
    if (outs[k] < 0) continue;
    int32_t gv = a.grad[xid[k]];
    if (gv < 0) st = fill_like(&a, xid[k], 0.0, &gv);
    int32_t ni;
    if (st == GE_OK) st = ge_edit_add_node(&e, "Identity", "", "grad_out", &gv, 1, &outs[k], 1, &ni);
    if (st == GE_OK) g->values[outs[k]].type = g->values[xid[k]].type;
  }
  free(outs);
done_x:
  free(xid);
done:
  free(dep);
  free(need);
  free(a.grad);
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}

ge_status ge_graph_expand_gradients(ge_graph *g) {
  if (!g) return ge_error(GE_ERR_INVALID_ARGUMENT, "ge_graph_expand_gradients: NULL graph");
  bool any = false;
  for (size_t i = 0; i < g->n_nodes && !any; i++) any = is_gradient(&g->nodes[i]);
  if (!any) return GE_OK;
  GE_CHECK(ge_graph_toposort(g));
  for (unsigned round = 0; round < 1024; round++) {
    int32_t gi = -1;
    for (size_t i = 0; i < g->n_nodes && gi < 0; i++)
      if (is_gradient(&g->nodes[i])) gi = (int32_t)i;
    if (gi < 0) return GE_OK;
    GE_CHECK(ge_passes_infer_types(g));
    GE_CHECK(expand_one(g, gi));
  }
  return ge_error(GE_ERR_UNSUPPORTED, "too many Gradient nodes");
}
