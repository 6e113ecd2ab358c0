/* ai.onnx.ml TreeEnsemble (opset 5) for the text family's kernel table (ref/text.c).
 *
 * prepare flattens the attribute arrays into one node table (mode, feature, split, children
 * with leaf flags) plus sorted member sets, and checks every index, so a run only walks
 * trees.  A walk is bounded by the node count, so a cyclic model cannot hang a run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/ml_tree.h"

enum { M_LEQ, M_LT, M_GTE, M_GT, M_EQ, M_NEQ, M_MEMBER };
enum { AGG_AVERAGE, AGG_SUM, AGG_MIN, AGG_MAX };
enum { PT_NONE, PT_SOFTMAX, PT_LOGISTIC, PT_SOFTMAX_ZERO, PT_PROBIT };

typedef struct tnode {
  int mode;
  bool missing_true;
  int64_t feature;
  double split;
  int64_t child[2];     /* [false, true]: node or leaf index */
  bool is_leaf[2];
  size_t set_beg, set_len; /* MEMBER: range in sets (sorted) */
} tnode;

typedef struct tree_state {
  tnode *nodes;
  size_t n_nodes;
  double *leaf_w;
  int64_t *leaf_t;
  size_t n_leaves;
  int64_t *roots;
  size_t n_roots;
  double *sets;
  size_t n_sets;
  int64_t n_targets;
  int agg, post;
} tree_state;

void ge_ml_tree_release(void *state) {
  tree_state *s = state;
  if (!s) return;
  free(s->nodes);
  free(s->leaf_w);
  free(s->leaf_t);
  free(s->roots);
  free(s->sets);
  free(s);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static bool ints_attr(const ge_node *n, const char *name, const int64_t **v, size_t *c) {
  return ge_node_attr_ints(n, name, v, c);
}

static const ge_tensor *tensor_attr(const ge_node *n, const char *name) {
  const ge_attr_value *a = ge_node_attr(n, name);
  return a && a->kind == GE_ATTR_KIND_TENSOR ? a->t : NULL;
}

ge_status ge_ml_tree_prepare(const ge_prepare_ctx *p, void **state) {
  const ge_node *n = p->node;
  GE_CHECK(ge_prepare_check_dtype(p, 0, (const ge_dtype[]){GE_F32, GE_F64, GE_F16, GE_DTYPE_COUNT}));
  const int64_t *feat, *tid, *fid, *tleaf, *fleaf, *ltarget, *roots, *miss = NULL;
  size_t nf, nt, nfa, ntl, nfl, nlt, nr, nmiss = 0;
  const ge_tensor *splits = tensor_attr(n, "nodes_splits"), *modes = tensor_attr(n, "nodes_modes");
  const ge_tensor *lw = tensor_attr(n, "leaf_weights"), *members = tensor_attr(n, "membership_values");
  if (!ints_attr(n, "nodes_featureids", &feat, &nf) || !ints_attr(n, "nodes_truenodeids", &tid, &nt) ||
      !ints_attr(n, "nodes_falsenodeids", &fid, &nfa) || !ints_attr(n, "nodes_trueleafs", &tleaf, &ntl) ||
      !ints_attr(n, "nodes_falseleafs", &fleaf, &nfl) || !ints_attr(n, "leaf_targetids", &ltarget, &nlt) ||
      !ints_attr(n, "tree_roots", &roots, &nr) || !splits || !modes || !lw)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "a required attribute (nodes_*, leaf_*, tree_roots) is missing");
  ints_attr(n, "nodes_missing_value_tracks_true", &miss, &nmiss);
  if (nt != nf || nfa != nf || ntl != nf || nfl != nf || splits->numel != nf || modes->numel != nf ||
      (nmiss && nmiss != nf) || lw->numel != nlt)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                           "node attributes disagree in length (%zu nodes) or leaf_weights (%zu) "
                           "and leaf_targetids (%zu) do", nf, lw->numel, nlt);
  int64_t n_targets = ge_node_attr_int(n, "n_targets", 0);
  int agg = (int)ge_node_attr_int(n, "aggregate_function", AGG_SUM);
  int post = (int)ge_node_attr_int(n, "post_transform", PT_NONE);
  if (n_targets < 1 || n_targets > ((int64_t)1 << 30))
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "n_targets %lld is invalid", (long long)n_targets);
  if (agg < AGG_AVERAGE || agg > AGG_MAX)
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "aggregate_function %d is invalid", agg);
  if (post < PT_NONE || post > PT_SOFTMAX_ZERO)
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "post_transform %d is not supported", post);
  tree_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  s->n_nodes = nf;
  s->n_leaves = nlt;
  s->n_roots = nr;
  s->n_targets = n_targets;
  s->agg = agg;
  s->post = post;
  s->nodes = calloc(nf ? nf : 1, sizeof *s->nodes);
  s->leaf_w = malloc((nlt ? nlt : 1) * sizeof *s->leaf_w);
  s->leaf_t = malloc((nlt ? nlt : 1) * sizeof *s->leaf_t);
  s->roots = malloc((nr ? nr : 1) * sizeof *s->roots);
  s->n_sets = members ? members->numel : 0;
  s->sets = malloc((s->n_sets ? s->n_sets : 1) * sizeof *s->sets);
  ge_status st = GE_OK;
  if (!s->nodes || !s->leaf_w || !s->leaf_t || !s->roots || !s->sets) {
    st = ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < nlt; i++) {
    s->leaf_w[i] = ge_tensor_get_f64(lw, i);
    s->leaf_t[i] = ltarget[i];
    if (ltarget[i] < 0 || ltarget[i] >= n_targets) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "leaf_targetids[%zu] = %lld is out of range",
                           i, (long long)ltarget[i]);
      goto fail;
    }
  }
  for (size_t i = 0; i < s->n_sets; i++) {
    s->sets[i] = ge_tensor_get_f64(members, i);
    if (p->in[0].type->dtype != GE_F64 && !isnan(s->sets[i])) s->sets[i] = (float)s->sets[i];
  }
  size_t set_pos = 0;
  for (size_t i = 0; i < nf; i++) {
    tnode *t = &s->nodes[i];
    t->mode = (int)ge_tensor_get_i64(modes, i);
    t->feature = feat[i];
    t->split = ge_tensor_get_f64(splits, i);
    /* compare in the input's precision (a float input against float thresholds) */
    if (p->in[0].type->dtype == GE_F32) t->split = (float)t->split;
    else if (p->in[0].type->dtype == GE_F16) t->split = ge_f16_to_f32(ge_f32_to_f16((float)t->split));
    t->missing_true = nmiss && miss[i];
    t->child[0] = fid[i], t->is_leaf[0] = fleaf[i] != 0;
    t->child[1] = tid[i], t->is_leaf[1] = tleaf[i] != 0;
    if (t->mode < M_LEQ || t->mode > M_MEMBER || t->feature < 0) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "node %zu: mode %d or feature %lld is invalid",
                           i, t->mode, (long long)t->feature);
      goto fail;
    }
    for (int b = 0; b < 2; b++)
      if (t->child[b] < 0 || (size_t)t->child[b] >= (t->is_leaf[b] ? nlt : nf)) {
        st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "node %zu: %s child %lld is out of range",
                             i, b ? "true" : "false", (long long)t->child[b]);
        goto fail;
      }
    if (t->mode == M_MEMBER) {
      /* members of the set nodes in node order, each set ended by NaN */
      t->set_beg = set_pos;
      while (set_pos < s->n_sets && !isnan(s->sets[set_pos])) set_pos++;
      t->set_len = set_pos - t->set_beg;
      if (set_pos < s->n_sets) set_pos++;
      qsort(s->sets + t->set_beg, t->set_len, sizeof *s->sets, cmp_double);
    }
  }
  for (size_t i = 0; i < nr; i++) {
    s->roots[i] = roots[i];
    if (roots[i] < 0 || (size_t)roots[i] >= nf) {
      st = ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "tree_roots[%zu] = %lld is out of range", i,
                           (long long)roots[i]);
      goto fail;
    }
  }
  *state = s;
  return GE_OK;
fail:
  ge_ml_tree_release(s);
  return st;
}

static bool in_set(const tree_state *s, const tnode *t, double v) {
  size_t lo = t->set_beg, hi = t->set_beg + t->set_len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->sets[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo < t->set_beg + t->set_len && s->sets[lo] == v;
}

/* Leaf index reached by row x from root, or -1 (a cycle). */
static int64_t walk(const tree_state *s, const ge_tensor *x, size_t row, size_t nfeat, int64_t root) {
  const tnode *r = &s->nodes[root];
  if (r->is_leaf[0] && r->is_leaf[1] && r->child[0] == r->child[1]) return r->child[0];
  int64_t idx = root;
  for (size_t step = 0; step <= s->n_nodes; step++) {
    const tnode *t = &s->nodes[idx];
    double v = (size_t)t->feature < nfeat ? ge_tensor_get_f64(x, row * nfeat + (size_t)t->feature) : NAN;
    bool c;
    switch (t->mode) {
    case M_LEQ: c = v <= t->split; break;
    case M_LT: c = v < t->split; break;
    case M_GTE: c = v >= t->split; break;
    case M_GT: c = v > t->split; break;
    case M_EQ: c = v == t->split; break;
    case M_NEQ: c = v != t->split; break;
    default: c = in_set(s, t, v); break;
    }
    if (t->missing_true && isnan(v)) c = true;
    if (t->is_leaf[c]) return t->child[c];
    idx = t->child[c];
  }
  return -1;
}

ge_status ge_ml_tree_run(const void *state, ge_kctx *ctx) {
  const tree_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  size_t rows = x->rank >= 1 ? (size_t)x->dims[0] : 1;
  size_t nfeat = rows ? x->numel / rows : 0;
  size_t nt = (size_t)s->n_targets;
  if (y->numel != rows * nt)
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output has %zu elements, expected %zu x %zu", y->numel,
                        rows, nt);
  double *acc = malloc(nt * sizeof *acc);
  if (!acc) return ge_kctx_fail(ctx, GE_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t r = 0; r < rows; r++) {
    double init = s->agg == AGG_MIN ? INFINITY : s->agg == AGG_MAX ? -INFINITY : 0.0;
    for (size_t k = 0; k < nt; k++) acc[k] = init;
    for (size_t t = 0; t < s->n_roots; t++) {
      int64_t leaf = walk(s, x, r, nfeat, s->roots[t]);
      if (leaf < 0) {
        free(acc);
        return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "tree %zu has a cycle", t);
      }
      double w = s->leaf_w[leaf];
      double *a = &acc[s->leaf_t[leaf]];
      if (s->agg == AGG_MIN) *a = w < *a ? w : *a;
      else if (s->agg == AGG_MAX) *a = w > *a ? w : *a;
      else *a += w;
    }
    for (size_t k = 0; k < nt; k++) {
      if (s->agg == AGG_AVERAGE && s->n_roots) acc[k] /= (double)s->n_roots;
      if ((s->agg == AGG_MIN || s->agg == AGG_MAX) && isinf(acc[k])) {
        /* no tree reached this target: numpy reference leaves finfo(max/min) */
        double big = x->dtype == GE_F64 ? 1.7976931348623157e308 : x->dtype == GE_F16 ? 65504.0 : 3.4028234663852886e38;
        acc[k] = s->agg == AGG_MIN ? big : -big;
      }
    }
    if (s->post == PT_LOGISTIC) {
      for (size_t k = 0; k < nt; k++) acc[k] = 1.0 / (1.0 + exp(-acc[k]));
    } else if (s->post == PT_SOFTMAX || s->post == PT_SOFTMAX_ZERO) {
      double mx = -INFINITY, sum = 0;
      for (size_t k = 0; k < nt; k++)
        if (acc[k] > mx) mx = acc[k];
      for (size_t k = 0; k < nt; k++) {
        bool zero = s->post == PT_SOFTMAX_ZERO && acc[k] == 0.0;
        acc[k] = zero ? 0.0 : exp(acc[k] - mx);
        sum += acc[k];
      }
      for (size_t k = 0; k < nt; k++) acc[k] = sum > 0 ? acc[k] / sum : 0.0;
    }
    for (size_t k = 0; k < nt; k++) {
      size_t i = r * nt + k;
      if (y->dtype == GE_F32) ((float *)y->data)[i] = (float)acc[k];
      else if (y->dtype == GE_F64) ((double *)y->data)[i] = acc[k];
      else ((uint16_t *)y->data)[i] = ge_f32_to_f16((float)acc[k]);
    }
  }
  free(acc);
  return GE_OK;
}
