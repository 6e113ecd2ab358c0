/* GELU fusion -> ai.ge::Gelu:
 *   erf form:  x * 0.5 * (1 + erf(x / sqrt(2)))           (x/sqrt2 also as x * 0.70710678)
 *   tanh form: x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 * with the 0.5 applied to x, to (1 + ...), or to the product, as exporters write it.  Every
 * intermediate must have no other reader and not be a graph output. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "passes/pass.h"
#include "passes/pass_util.h"

#define MAXN 12

typedef struct match {
  int32_t nodes[MAXN];
  size_t n;
} match;

static bool near(double a, double b) { return fabs(a - b) <= 1e-4 * fabs(b) + 1e-7; }

/* Node is a binary op `op` with one input `v` and the other a scalar constant near k;
   returns the node's other slot's value via *other when k < 0 means "any non-constant". */
static bool bin_const(const ge_edit *e, int32_t ni, const char *op, int32_t v, double k) {
  if (!ge_edit_is_op(e, ni, op)) return false;
  const ge_node *n = &e->g->nodes[ni];
  if (n->n_inputs != 2) return false;
  for (size_t s = 0; s < 2; s++) {
    if (n->inputs[s] != v) continue;
    if (!strcmp(op, "Div") || !strcmp(op, "Sub") || !strcmp(op, "Pow")) {
      if (s != 0) continue;
    }
    double c;
    if (ge_edit_const_scalar(e, n->inputs[1 - s], &c) && near(c, k)) return true;
  }
  return false;
}

/* the single reader node of v (v not a graph output), else -1 */
static int32_t next(const ge_edit *e, int32_t v) { return ge_edit_single_reader(e, v, NULL); }

static int32_t out0(const ge_edit *e, int32_t ni) { return e->g->nodes[ni].outputs[0]; }

static void add(match *m, int32_t ni) {
  if (m->n < MAXN) m->nodes[m->n++] = ni;
}

/* The tail shared by both forms, from t = erf(..) or tanh(..): 1 + t, then the x and 0.5
   multiplications.  Returns the final value or -1. */
static int32_t match_tail(const ge_edit *e, int32_t t_v, int32_t x, match *m) {
  int32_t a = next(e, t_v);
  if (a < 0 || !bin_const(e, a, "Add", t_v, 1.0)) return -1;
  add(m, a);
  int32_t a_v = out0(e, a);
  int32_t m1 = next(e, a_v);
  if (m1 < 0 || !ge_edit_is_op(e, m1, "Mul")) return -1;
  add(m, m1);
  const ge_node *n1 = &e->g->nodes[m1];
  int32_t other = n1->inputs[0] == a_v ? n1->inputs[1] : n1->inputs[0];
  if (other == x) { /* (x * (1+t)) * 0.5 */
    int32_t m2 = next(e, out0(e, m1));
    if (m2 < 0 || !bin_const(e, m2, "Mul", out0(e, m1), 0.5)) return -1;
    add(m, m2);
    return out0(e, m2);
  }
  double c;
  if (ge_edit_const_scalar(e, other, &c) && near(c, 0.5)) { /* x * ((1+t) * 0.5) */
    int32_t m2 = next(e, out0(e, m1));
    if (m2 < 0 || !ge_edit_is_op(e, m2, "Mul")) return -1;
    const ge_node *n2 = &e->g->nodes[m2];
    int32_t o2 = n2->inputs[0] == out0(e, m1) ? n2->inputs[1] : n2->inputs[0];
    if (o2 != x) return -1;
    add(m, m2);
    return out0(e, m2);
  }
  /* (x * 0.5) * (1+t) */
  int32_t h = ge_edit_producer(e, other);
  if (h < 0 || !ge_edit_single_use(e, other) || !bin_const(e, h, "Mul", x, 0.5)) return -1;
  add(m, h);
  return out0(e, m1);
}

/* erf anchored at an Erf node */
static int32_t match_erf(const ge_edit *e, int32_t ni, int32_t *x_out, match *m) {
  const ge_node *n = &e->g->nodes[ni];
  int32_t d_v = n->inputs[0];
  int32_t d = ge_edit_producer(e, d_v);
  if (d < 0 || !ge_edit_single_use(e, d_v)) return -1;
  const ge_node *dn = &e->g->nodes[d];
  if (dn->n_inputs != 2) return -1;
  int32_t x = -1;
  for (size_t s = 0; s < 2 && x < 0; s++) {
    int32_t cand = dn->inputs[s];
    if (bin_const(e, d, "Div", cand, sqrt(2.0)) || bin_const(e, d, "Mul", cand, sqrt(0.5))) x = cand;
  }
  if (x < 0) return -1;
  add(m, d);
  add(m, ni);
  *x_out = x;
  return match_tail(e, out0(e, ni), x, m);
}

/* tanh anchored at a Tanh node */
static int32_t match_tanh(const ge_edit *e, int32_t ni, int32_t *x_out, match *m) {
  const ge_node *n = &e->g->nodes[ni];
  int32_t s_v = n->inputs[0];
  int32_t s = ge_edit_producer(e, s_v);
  if (s < 0 || !ge_edit_single_use(e, s_v) || !ge_edit_is_op(e, s, "Mul")) return -1;
  const ge_node *sn = &e->g->nodes[s];
  int32_t a_v = -1;
  for (size_t k = 0; k < 2; k++)
    if (bin_const(e, s, "Mul", sn->inputs[k], sqrt(2.0 / M_PI))) a_v = sn->inputs[k];
  if (a_v < 0 || !ge_edit_single_use(e, a_v)) return -1;
  int32_t a = ge_edit_producer(e, a_v);
  if (a < 0 || !ge_edit_is_op(e, a, "Add")) return -1;
  const ge_node *an = &e->g->nodes[a];
  for (size_t k = 0; k < 2; k++) {
    int32_t x = an->inputs[k], c_v = an->inputs[1 - k];
    int32_t cm = ge_edit_producer(e, c_v);
    if (cm < 0 || !ge_edit_single_use(e, c_v) || !ge_edit_is_op(e, cm, "Mul")) continue;
    const ge_node *cn = &e->g->nodes[cm];
    int32_t p_v = -1;
    for (size_t j = 0; j < 2; j++)
      if (bin_const(e, cm, "Mul", cn->inputs[j], 0.044715)) p_v = cn->inputs[j];
    if (p_v < 0 || !ge_edit_single_use(e, p_v)) continue;
    int32_t p = ge_edit_producer(e, p_v);
    if (p < 0 || !bin_const(e, p, "Pow", x, 3.0)) continue;
    add(m, p);
    add(m, cm);
    add(m, a);
    add(m, s);
    add(m, ni);
    *x_out = x;
    return match_tail(e, out0(e, ni), x, m);
  }
  return -1;
}

ge_status ge_pass_gelu(ge_graph *g, ge_pass_ctx *c, bool *changed) {
  ge_edit e;
  GE_CHECK(ge_edit_begin(g, &e));
  ge_status st = GE_OK;
  size_t n0 = g->n_nodes;
  for (size_t ni = 0; ni < n0 && st == GE_OK; ni++) {
    bool is_erf = ge_edit_is_op(&e, (int32_t)ni, "Erf"), is_tanh = ge_edit_is_op(&e, (int32_t)ni, "Tanh");
    if (!is_erf && !is_tanh) continue;
    match m = {.n = 0};
    int32_t x = -1;
    int32_t y = is_erf ? match_erf(&e, (int32_t)ni, &x, &m) : match_tanh(&e, (int32_t)ni, &x, &m);
    if (y < 0 || x < 0 || !ge_pu_is_f32(&e, x) || m.n >= MAXN) continue;
    /* every intermediate: single reader, not a graph output (the final y may be one) */
    bool ok = true;
    for (size_t i = 0; i < m.n && ok; i++) {
      int32_t v = out0(&e, m.nodes[i]);
      if (v != y && !ge_edit_single_use(&e, v)) ok = false;
    }
    if (!ok) continue;
    char nm[256];
    snprintf(nm, sizeof nm, "%s_gelu", g->nodes[ni].name);
    for (size_t i = 0; i < m.n; i++) ge_edit_kill(&e, m.nodes[i]);
    int32_t in[1] = {x}, out[1] = {y}, id;
    st = ge_edit_add_node(&e, "Gelu", "ai.ge", nm, in, 1, out, 1, &id);
    if (st == GE_OK) st = ge_edit_set_attr_string(&g->nodes[id], "approximate", is_erf ? "none" : "tanh");
    *changed = true;
  }
  if (st != GE_OK) {
    ge_edit_abort(&e);
    return st;
  }
  return ge_edit_commit(&e);
}
