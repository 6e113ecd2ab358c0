/* Control-flow kernels: If, Loop, Scan.  Each compiles its body once per signature of input
 * types (ge_subgraph, cached) and runs it per branch / iteration. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/control_util.h"

/* ------------------------------------------------------------------ tensor helpers */

/* Copies n elements (strings duplicated). */
static ge_status copy_elems(ge_tensor *dst, size_t di, const ge_tensor *src, size_t si, size_t n) {
  if (!n) return GE_OK;
  if (src->dtype == GE_STRING) {
    char **d = (char **)dst->data;
    char *const *s = (char *const *)src->data;
    for (size_t i = 0; i < n; i++) {
      free(d[di + i]);
      d[di + i] = NULL;
      if (s[si + i] && !(d[di + i] = strdup(s[si + i])))
        return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory copying strings");
    }
    return GE_OK;
  }
  size_t es = ge_dtype_size(src->dtype);
  memcpy((char *)dst->data + di * es, (const char *)src->data + si * es, n * es);
  return GE_OK;
}

static size_t prod(const int64_t *d, int32_t from, int32_t to) {
  size_t p = 1;
  for (int32_t i = from; i < to; i++) p *= (size_t)d[i];
  return p;
}

ge_status ge_cf_slice(const ge_tensor *src, int32_t axis, int64_t idx, ge_tensor **out) {
  int64_t dims[GE_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d < src->rank; d++)
    if (d != axis) dims[r++] = src->dims[d];
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(src->dtype, dims, (size_t)r, &t));
  size_t outer = prod(src->dims, 0, axis), inner = prod(src->dims, axis + 1, src->rank);
  size_t D = (size_t)src->dims[axis];
  for (size_t o = 0; o < outer; o++) {
    ge_status st = copy_elems(t, o * inner, src, (o * D + (size_t)idx) * inner, inner);
    if (st != GE_OK) {
      ge_tensor_free(t);
      return st;
    }
  }
  *out = t;
  return GE_OK;
}

ge_status ge_cf_stack(ge_tensor *const *pieces, size_t n, int32_t axis, bool reverse,
                      const ge_kctx *c, ge_tensor **out) {
  const ge_tensor *p0 = pieces[0];
  if (p0->rank + 1 > GE_MAX_RANK) return ge_kctx_fail(c, GE_ERR_SHAPE, "a scan output has too many dims");
  for (size_t i = 1; i < n; i++) {
    bool same = pieces[i]->dtype == p0->dtype && pieces[i]->rank == p0->rank;
    for (int32_t d = 0; same && d < p0->rank; d++) same = pieces[i]->dims[d] == p0->dims[d];
    if (!same)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "scan output of iteration %zu has another dtype or shape "
                          "than iteration 0", i);
  }
  int64_t dims[GE_MAX_RANK];
  int32_t r = 0;
  for (int32_t d = 0; d <= p0->rank; d++) {
    if (d == axis) dims[r++] = (int64_t)n;
    if (d < p0->rank) dims[r++] = p0->dims[d];
  }
  ge_tensor *t = NULL;
  GE_CHECK(ge_tensor_create(p0->dtype, dims, (size_t)r, &t));
  size_t outer = prod(p0->dims, 0, axis), inner = prod(p0->dims, axis, p0->rank);
  for (size_t i = 0; i < n; i++) {
    const ge_tensor *p = pieces[reverse ? n - 1 - i : i];
    for (size_t o = 0; o < outer; o++) {
      ge_status st = copy_elems(t, (o * n + i) * inner, p, o * inner, inner);
      if (st != GE_OK) {
        ge_tensor_free(t);
        return st;
      }
    }
  }
  *out = t;
  return GE_OK;
}

static void free_all(ge_tensor **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    ge_tensor_free(v[i]);
    v[i] = NULL;
  }
}

/* ------------------------------------------------------------------ If */

typedef struct if_state {
  ge_subgraph *then_g, *else_g;
} if_state;

static void release_if(void *state) {
  if_state *s = state;
  if (!s) return;
  ge_subgraph_free(s->then_g);
  ge_subgraph_free(s->else_g);
  free(s);
}

static const ge_graph *graph_attr(const ge_node *n, const char *name) {
  const ge_attr_value *a = ge_node_attr(n, name);
  return a && a->kind == GE_ATTR_KIND_GRAPH ? a->g : NULL;
}

static ge_status prepare_if(const ge_prepare_ctx *p, void **state) {
  if_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = ge_subgraph_create(p, graph_attr(p->node, "then_branch"), &s->then_g);
  if (st == GE_OK) st = ge_subgraph_create(p, graph_attr(p->node, "else_branch"), &s->else_g);
  if (st != GE_OK) {
    release_if(s);
    return st;
  }
  *state = s;
  return GE_OK;
}

static ge_status run_if(const void *state, ge_kctx *c) {
  const if_state *s = state;
  const ge_tensor *cond = c->in[0];
  if (!cond || ge_value_seq(cond) || cond->numel != 1)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "cond must be a tensor of one element");
  bool b = ge_tensor_get_i64(cond, 0) != 0;
  ge_tensor **outs = calloc(c->n_out + 1, sizeof *outs);
  if (!outs) return ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = ge_kctx_run_subgraph(c, b ? s->then_g : s->else_g, NULL, 0, outs, c->n_out);
  for (size_t o = 0; st == GE_OK && o < c->n_out; o++) {
    st = ge_kctx_set_output(c, o, outs[o]);
    outs[o] = NULL;
  }
  free_all(outs, c->n_out);
  free(outs);
  return st;
}

/* ------------------------------------------------------------------ Loop */

typedef struct body_state {
  ge_subgraph *body;
} body_state;

static void release_body(void *state) {
  body_state *s = state;
  if (!s) return;
  ge_subgraph_free(s->body);
  free(s);
}

static ge_status prepare_body(const ge_prepare_ctx *p, void **state) {
  body_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  ge_status st = ge_subgraph_create(p, graph_attr(p->node, "body"), &s->body);
  if (st != GE_OK) {
    free(s);
    return st;
  }
  *state = s;
  return GE_OK;
}

static ge_status read_bool(const ge_kctx *c, const ge_tensor *t, const char *what, bool *out) {
  if (!t || ge_value_seq(t) || t->numel != 1)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "%s must be a tensor of one element", what);
  *out = ge_tensor_get_i64(t, 0) != 0;
  return GE_OK;
}

static ge_status run_loop(const void *state, ge_kctx *c) {
  const body_state *s = state;
  const ge_node *n = c->node;
  size_t n_car = n->n_inputs - 2, n_scan = c->n_out - n_car;
  int64_t max_trip = INT64_MAX;
  bool cond = true;
  if (c->in[0]) {
    if (ge_value_seq(c->in[0]) || c->in[0]->numel != 1)
      return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "M must be a tensor of one element");
    max_trip = ge_tensor_get_i64(c->in[0], 0);
  }
  if (c->in[1]) GE_CHECK(read_bool(c, c->in[1], "cond", &cond));
  if (!c->in[0] && !c->in[1])
    return ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "neither M nor cond is given: the loop would not end");
  size_t n_body_out = 1 + n_car + n_scan;
  ge_tensor **car = calloc(n_car + 1, sizeof *car);     /* current values (owned after iteration 0) */
  ge_tensor **bin = calloc(n_car + 3, sizeof *bin);     /* body inputs */
  ge_tensor **bout = calloc(n_body_out + 1, sizeof *bout);
  ge_tensor ***scans = calloc(n_scan + 1, sizeof *scans);
  size_t cap = 0, iters = 0;
  bool owned = false;
  ge_tensor *iter_t = NULL, *cond_t = NULL;
  ge_status st = car && bin && bout && scans ? GE_OK : ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  if (st == GE_OK) st = ge_tensor_create(GE_I64, NULL, 0, &iter_t);
  if (st == GE_OK) st = ge_tensor_create(GE_BOOL, NULL, 0, &cond_t);
  for (size_t i = 0; st == GE_OK && i < n_car; i++) {
    car[i] = c->in[2 + i];
    if (!car[i]) st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "loop-carried input %zu is missing", i);
  }
  while (st == GE_OK && (int64_t)iters < max_trip && cond) {
    *(int64_t *)iter_t->data = (int64_t)iters;
    *(bool *)cond_t->data = cond;
    bin[0] = iter_t;
    bin[1] = cond_t;
    for (size_t i = 0; i < n_car; i++) bin[2 + i] = car[i];
    st = ge_kctx_run_subgraph(c, s->body, bin, 2 + n_car, bout, n_body_out);
    if (st != GE_OK) break;
    if (c->in[1]) { /* without a cond input the body's cond output is ignored (ONNX spec) */
      st = read_bool(c, bout[0], "the body's cond output", &cond);
      if (st != GE_OK) break;
    }
    if (owned) free_all(car, n_car);
    for (size_t i = 0; i < n_car; i++) {
      car[i] = bout[1 + i];
      bout[1 + i] = NULL;
    }
    owned = true;
    if (n_scan && iters == cap) {
      size_t nc = cap ? cap * 2 : 16;
      for (size_t k = 0; k < n_scan && st == GE_OK; k++) {
        ge_tensor **np = realloc(scans[k], nc * sizeof *np);
        if (!np) st = ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory collecting scan outputs");
        else scans[k] = np;
      }
      if (st != GE_OK) break;
      cap = nc;
    }
    for (size_t k = 0; k < n_scan; k++) {
      scans[k][iters] = bout[1 + n_car + k];
      bout[1 + n_car + k] = NULL;
    }
    free_all(bout, n_body_out);
    iters++;
  }
  for (size_t i = 0; st == GE_OK && i < n_car; i++) {
    ge_tensor *v = car[i];
    if (!owned) st = ge_value_clone(car[i], &v);
    else car[i] = NULL;
    if (st == GE_OK) st = ge_kctx_set_output(c, i, v);
  }
  for (size_t k = 0; st == GE_OK && k < n_scan; k++) {
    ge_tensor *v = NULL;
    if (iters) {
      if (ge_value_seq(scans[k][0])) {
        st = ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "scan output %zu is not a tensor", k);
        break;
      }
      st = ge_cf_stack(scans[k], iters, 0, false, c, &v);
    } else {
      int64_t zero = 0;
      ge_dtype dt = c->out[n_car + k] ? c->out[n_car + k]->dtype : GE_F32;
      if (ge_dtype_size(dt) == 0) dt = GE_F32;
      st = ge_tensor_create(dt, &zero, 1, &v);
    }
    if (st == GE_OK) st = ge_kctx_set_output(c, n_car + k, v);
  }
  if (owned) free_all(car, n_car);
  for (size_t k = 0; scans && k < n_scan; k++) {
    free_all(scans[k], iters);
    free(scans[k]);
  }
  free_all(bout, n_body_out);
  ge_tensor_free(iter_t);
  ge_tensor_free(cond_t);
  free(car);
  free(bin);
  free(bout);
  free(scans);
  return st;
}

/* ------------------------------------------------------------------ Scan */

static ge_status attr_ints(const ge_kctx *c, const char *name, size_t n, int64_t *dst) {
  const int64_t *v = NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) dst[i] = 0;
  if (!ge_node_attr_ints(c->node, name, &v, &k)) return GE_OK;
  if (k != n)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute %s has %zu entries, expected %zu", name, k, n);
  memcpy(dst, v, n * sizeof *dst);
  return GE_OK;
}

/* One scan (opset 9 semantics) over states st_in[n_state] and scan inputs sc_in[m]; results
   into outs[n_state + k] (new tensors). */
static ge_status scan_core(const body_state *s, ge_kctx *c, ge_tensor *const *st_in, size_t n_state,
                           ge_tensor *const *sc_in, size_t m, size_t k_out, const int64_t *in_ax,
                           const int64_t *in_dir, const int64_t *out_ax, const int64_t *out_dir,
                           ge_tensor **outs) {
  int64_t T = -1;
  for (size_t j = 0; j < m; j++) {
    const ge_tensor *x = sc_in[j];
    if (!x || ge_value_seq(x)) return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "scan input %zu is missing", j);
    int64_t ax = in_ax[j] < 0 ? in_ax[j] + x->rank : in_ax[j];
    if (ax < 0 || ax >= x->rank)
      return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "scan_input_axes[%zu] = %lld is out of range for rank %d",
                          j, (long long)in_ax[j], (int)x->rank);
    if (T >= 0 && x->dims[ax] != T)
      return ge_kctx_fail(c, GE_ERR_SHAPE, "scan input %zu has %lld iterations, input 0 has %lld", j,
                          (long long)x->dims[ax], (long long)T);
    T = x->dims[ax];
  }
  size_t n_body_in = n_state + m, n_body_out = n_state + k_out;
  ge_tensor **cur = calloc(n_state + 1, sizeof *cur);
  ge_tensor **bin = calloc(n_body_in + 1, sizeof *bin);
  ge_tensor **bout = calloc(n_body_out + 1, sizeof *bout);
  ge_tensor **pieces = calloc((size_t)(T > 0 ? T : 1) * (k_out ? k_out : 1), sizeof *pieces);
  bool owned = false;
  ge_status st = cur && bin && bout && pieces ? GE_OK : ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; st == GE_OK && i < n_state; i++) cur[i] = st_in[i];
  for (int64_t t = 0; st == GE_OK && t < T; t++) {
    for (size_t i = 0; i < n_state; i++) bin[i] = cur[i];
    for (size_t j = 0; j < m && st == GE_OK; j++) {
      const ge_tensor *x = sc_in[j];
      int32_t ax = (int32_t)(in_ax[j] < 0 ? in_ax[j] + x->rank : in_ax[j]);
      st = ge_cf_slice(x, ax, in_dir[j] ? T - 1 - t : t, &bin[n_state + j]);
    }
    if (st == GE_OK) st = ge_kctx_run_subgraph(c, s->body, bin, n_body_in, bout, n_body_out);
    free_all(bin + n_state, m);
    if (st != GE_OK) break;
    if (owned) free_all(cur, n_state);
    for (size_t i = 0; i < n_state; i++) {
      cur[i] = bout[i];
      bout[i] = NULL;
    }
    owned = true;
    for (size_t k = 0; k < k_out; k++) {
      pieces[k * (size_t)T + (size_t)t] = bout[n_state + k];
      bout[n_state + k] = NULL;
    }
  }
  for (size_t i = 0; st == GE_OK && i < n_state; i++) {
    if (owned) {
      outs[i] = cur[i];
      cur[i] = NULL;
    } else {
      st = ge_value_clone(cur[i], &outs[i]);
    }
  }
  for (size_t k = 0; st == GE_OK && k < k_out; k++) {
    if (T <= 0) {
      int64_t zero = 0;
      st = ge_tensor_create(GE_F32, &zero, 1, &outs[n_state + k]);
      continue;
    }
    ge_tensor *const *pk = &pieces[k * (size_t)T];
    int64_t ax = out_ax[k] < 0 ? out_ax[k] + pk[0]->rank + 1 : out_ax[k];
    if (ax < 0 || ax > pk[0]->rank) {
      st = ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "scan_output_axes[%zu] is out of range", k);
      break;
    }
    st = ge_cf_stack(pk, (size_t)T, (int32_t)ax, out_dir[k] != 0, c, &outs[n_state + k]);
  }
  if (owned) free_all(cur, n_state);
  if (pieces) free_all(pieces, (size_t)(T > 0 ? T : 0) * k_out);
  free_all(bout, n_body_out);
  free(cur);
  free(bin);
  free(bout);
  free(pieces);
  return st;
}

static ge_status run_scan(const void *state, ge_kctx *c) {
  const body_state *s = state;
  const ge_node *n = c->node;
  bool v8 = n->opset < 9;
  size_t first = v8 ? 1 : 0;
  int64_t m64 = ge_node_attr_int(n, "num_scan_inputs", -1);
  if (m64 < 1 || (size_t)m64 > n->n_inputs - first)
    return ge_kctx_fail(c, GE_ERR_INVALID_ARGUMENT, "bad num_scan_inputs %lld", (long long)m64);
  size_t m = (size_t)m64, n_state = n->n_inputs - first - m, k_out = c->n_out - n_state;
  int64_t *ax = calloc(2 * m + 2 * k_out + 4, sizeof *ax);
  ge_tensor **outs = calloc(c->n_out + 1, sizeof *outs);
  ge_status st = ax && outs ? GE_OK : ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t *in_ax = ax, *in_dir = ax + m, *out_ax = ax + 2 * m, *out_dir = ax + 2 * m + k_out;
  if (st == GE_OK && !v8) {
    st = attr_ints(c, "scan_input_axes", m, in_ax);
    if (st == GE_OK) st = attr_ints(c, "scan_input_directions", m, in_dir);
    if (st == GE_OK) st = attr_ints(c, "scan_output_axes", k_out, out_ax);
    if (st == GE_OK) st = attr_ints(c, "scan_output_directions", k_out, out_dir);
    if (st == GE_OK)
      st = scan_core(s, c, c->in, n_state, c->in + n_state, m, k_out, in_ax, in_dir, out_ax, out_dir, outs);
  } else if (st == GE_OK) {
    /* opset 8: a batch axis 0 on every input and output; the scan axis is 1 of the inputs */
    st = attr_ints(c, "directions", m, in_dir);
    if (c->in[0]) st = ge_kctx_fail(c, GE_ERR_UNSUPPORTED, "sequence_lens is not supported");
    const ge_tensor *x0 = c->in[first + n_state];
    int64_t B = x0 && x0->rank > 0 ? x0->dims[0] : 0;
    size_t nb = (size_t)(B > 0 ? B : 0), n_o = c->n_out;
    ge_tensor **per = calloc(nb * n_o + 1, sizeof *per);
    ge_tensor **bin = calloc(n_state + m + 1, sizeof *bin);
    if (st == GE_OK && (!per || !bin)) st = ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t b = 0; st == GE_OK && b < nb; b++) {
      for (size_t i = 0; st == GE_OK && i < n_state + m; i++) {
        const ge_tensor *x = c->in[first + i];
        if (!x || ge_value_seq(x) || x->rank < 1 || x->dims[0] != B)
          st = ge_kctx_fail(c, GE_ERR_SHAPE, "input %zu lacks the batch axis of size %lld", first + i, (long long)B);
        else
          st = ge_cf_slice(x, 0, (int64_t)b, &bin[i]);
      }
      if (st == GE_OK)
        st = scan_core(s, c, bin, n_state, bin + n_state, m, k_out, in_ax, in_dir, out_ax, out_dir,
                       per + b * n_o);
      free_all(bin, n_state + m);
    }
    ge_tensor **col = calloc(nb + 1, sizeof *col);
    if (st == GE_OK && !col) st = ge_kctx_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t o = 0; st == GE_OK && o < n_o && nb; o++) {
      for (size_t b = 0; b < nb; b++) col[b] = per[b * n_o + o];
      st = ge_cf_stack(col, nb, 0, false, c, &outs[o]);
    }
    free(col);
    if (per) free_all(per, nb * n_o);
    free(per);
    free(bin);
  }
  for (size_t o = 0; st == GE_OK && o < c->n_out; o++) {
    st = ge_kctx_set_output(c, o, outs[o]);
    outs[o] = NULL;
  }
  if (outs) free_all(outs, c->n_out);
  free(outs);
  free(ax);
  return st;
}

#define K(p, r, rel) {(p), (r), (rel), true}

const ge_kernel_def ge_ref_kernels_control[] = {
    {"", "If", 1, 0, K(prepare_if, run_if, release_if)},
    {"", "Loop", 1, 0, K(prepare_body, run_loop, release_body)},
    {"", "Scan", 8, 0, K(prepare_body, run_scan, release_body)},
    {NULL, NULL, 0, 0, {NULL, NULL, NULL, false}},
};
