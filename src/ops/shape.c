/* Schemas of the shape family: tensor manipulation ops whose results are moves of elements
 * (Reshape, Transpose, Concat, Slice, Gather, Pad, ...) and their shape/type inference.
 *
 * Inference works with partial information: an unknown dtype or shape gives an unknown result,
 * symbolic dims are carried through where the op preserves them, and constant inputs
 * (c->in[i].value) are used to compute shapes that depend on values (Reshape's shape,
 * Slice's starts, Expand's shape, Range's bounds, ...). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/slice_axis.h"

/* ------------------------------------------------------------------ helpers */

static const ge_shape unknown_shape = {GE_RANK_UNKNOWN, {0}};

static ge_dtype in_dtype(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type) return GE_DTYPE_COUNT;
  return c->in[i].type->dtype;
}

static const ge_shape *in_shape(const ge_infer_ctx *c, size_t i) {
  if (i >= c->n_in || !c->in[i].present || !c->in[i].type) return &unknown_shape;
  return &c->in[i].type->shape;
}

static bool in_present(const ge_infer_ctx *c, size_t i) { return i < c->n_in && c->in[i].present; }

static const ge_tensor *in_value(const ge_infer_ctx *c, size_t i) {
  return in_present(c, i) ? c->in[i].value : NULL;
}

/* dim arithmetic: unknown (< 0) in gives unknown out; 0 absorbs. */
static int64_t dim_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a == 1) return b;
  if (b == 1) return a;
  if (a < 0 || b < 0) return GE_DIM_UNKNOWN;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return GE_DIM_UNKNOWN;
  return r;
}

static int64_t dim_add(int64_t a, int64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  if (a < 0 || b < 0) return GE_DIM_UNKNOWN;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return GE_DIM_UNKNOWN;
  return r;
}

/* Integer dtypes allowed for index / shape inputs. */
static const ge_dtype dt_i64[] = {GE_I64, GE_DTYPE_COUNT};
static const ge_dtype dt_ind[] = {GE_I32, GE_I64, GE_DTYPE_COUNT};

/* Reads a 1-D (or scalar) constant int input into a malloc'd array; *ok false when the value
   is not known.  Errors when the value has the wrong dtype or rank. */
static ge_status const_ints(const ge_infer_ctx *c, size_t i, const char *what, int64_t **out,
                            size_t *n, bool *ok) {
  *ok = false;
  *out = NULL;
  *n = 0;
  const ge_tensor *t = in_value(c, i);
  if (!t) return GE_OK;
  if (!ge_dtype_is_int(t->dtype))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu (%s) must be an integer tensor, got %s",
                         i, what, ge_dtype_name(t->dtype));
  if (t->rank > 1)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu (%s) must be 1-D, got rank %d", i,
                         what, (int)t->rank);
  int64_t *v = malloc((t->numel ? t->numel : 1) * sizeof *v);
  if (!v) return ge_infer_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory reading input %zu", i);
  for (size_t k = 0; k < t->numel; k++) v[k] = ge_tensor_get_i64(t, k);
  *out = v;
  *n = t->numel;
  *ok = true;
  return GE_OK;
}

/* The length of a 1-D input when its shape says so (value unknown); -1 otherwise. */
static int64_t input_len(const ge_infer_ctx *c, size_t i) {
  const ge_shape *s = in_shape(c, i);
  if (s->rank == 1 && s->dims[0] >= 0) return s->dims[0];
  if (s->rank == 0) return 1;
  return -1;
}

/* Normalises axes against rank, checking range and duplicates. */
static ge_status norm_axes(const ge_infer_ctx *c, const int64_t *axes, size_t n, int64_t rank,
                           int64_t *out) {
  for (size_t k = 0; k < n; k++) {
    GE_CHECK(ge_infer_axis(c, axes[k], rank, &out[k]));
    for (size_t j = 0; j < k; j++)
      if (out[j] == out[k])
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axis %lld is repeated",
                             (long long)axes[k]);
  }
  return GE_OK;
}

/* Marks the dims of out at axes[0..na) (of a rank `rank` shape) unknown. */
static ge_status unknown_at_axes(const ge_infer_ctx *c, const int64_t *axes, size_t na, int32_t rank,
                                 ge_shape *out) {
  int64_t nx[GE_MAX_RANK];
  if (na > GE_MAX_RANK) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "too many axes");
  GE_CHECK(norm_axes(c, axes, na, rank, nx));
  for (size_t k = 0; k < na; k++) out->dims[nx[k]] = GE_DIM_UNKNOWN;
  return GE_OK;
}

static void set_unknown_dims(ge_shape *s, int32_t rank) {
  s->rank = rank;
  for (int32_t i = 0; i < rank; i++) s->dims[i] = GE_DIM_UNKNOWN;
}

static ge_status check_rank(const ge_infer_ctx *c, int64_t rank) {
  if (rank > GE_MAX_RANK)
    return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "output rank %lld exceeds the maximum of %d",
                         (long long)rank, GE_MAX_RANK);
  return GE_OK;
}

/* ------------------------------------------------------------------ Identity, Size, Shape */

static ge_status infer_identity(ge_infer_ctx *c) {
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_size(ge_infer_ctx *c) {
  ge_shape s = {0};
  ge_infer_set(c, 0, GE_I64, &s);
  return GE_OK;
}

static ge_status infer_shape_op(ge_infer_ctx *c) {
  const ge_shape *x = in_shape(c, 0);
  ge_shape s = {0};
  s.rank = 1;
  s.dims[0] = GE_DIM_UNKNOWN;
  if (x->rank != GE_RANK_UNKNOWN) {
    int64_t r = x->rank, start = 0, end = r;
    if (c->opset >= 15) {
      start = ge_node_attr_int(c->node, "start", 0);
      end = ge_node_attr_int(c->node, "end", r);
    }
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    s.dims[0] = end > start ? end - start : 0;
  }
  ge_infer_set(c, 0, GE_I64, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ Reshape */

static ge_status infer_reshape(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  bool allowzero = c->opset >= 14 && ge_node_attr_int(c->node, "allowzero", 0) != 0;
  int64_t *sh;
  size_t n;
  bool ok;
  GE_CHECK(const_ints(c, 1, "shape", &sh, &n, &ok));
  ge_shape out = {0};
  if (!ok) {
    int64_t len = input_len(c, 1);
    if (len < 0 || in_shape(c, 1)->rank != 1) {
      ge_infer_set(c, 0, dt, NULL);
      return GE_OK;
    }
    GE_CHECK(check_rank(c, len));
    set_unknown_dims(&out, (int32_t)len);
    ge_infer_set(c, 0, dt, &out);
    return GE_OK;
  }
  ge_status st = check_rank(c, (int64_t)n);
  if (st) goto done;
  out.rank = (int32_t)n;
  int64_t neg = -1;
  bool has_zero = false;
  for (size_t i = 0; i < n; i++) {
    int64_t v = sh[i];
    if (v == -1) {
      if (neg >= 0) {
        st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "shape has more than one -1 (at %lld and %zu)",
                           (long long)neg, i);
        goto done;
      }
      neg = (int64_t)i;
      out.dims[i] = GE_DIM_UNKNOWN;
    } else if (v < -1) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "shape[%zu] = %lld is invalid", i, (long long)v);
      goto done;
    } else if (v == 0 && !allowzero) {
      if (x->rank == GE_RANK_UNKNOWN) {
        out.dims[i] = GE_DIM_UNKNOWN;
      } else if ((int64_t)i >= x->rank) {
        st = ge_infer_fail(c, GE_ERR_SHAPE,
                           "shape[%zu] = 0 copies a dimension the input of rank %d lacks", i,
                           (int)x->rank);
        goto done;
      } else {
        out.dims[i] = x->dims[i];
      }
    } else {
      if (v == 0) has_zero = true;
      out.dims[i] = v;
    }
  }
  if (allowzero && has_zero && neg >= 0) {
    st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "shape has both 0 and -1 while allowzero=1");
    goto done;
  }
  if (x->rank != GE_RANK_UNKNOWN) {
    /* cancel equal dims (symbols by identity) between input and output, multiply the rest */
    bool used[GE_MAX_RANK] = {false};
    bool unresolved = false;
    int64_t prod_out = 1, prod_in = 1;
    for (int32_t j = 0; j < out.rank; j++) {
      if (j == neg) continue;
      int64_t d = out.dims[j];
      if (d >= 0) {
        prod_out = dim_mul(prod_out, d);
        continue;
      }
      bool found = false;
      if (d <= -2)
        for (int32_t k = 0; k < x->rank && !found; k++)
          if (!used[k] && x->dims[k] == d) used[k] = found = true;
      if (!found) unresolved = true;
    }
    int nsym = 0;
    int64_t sym = 0;
    for (int32_t k = 0; k < x->rank; k++) {
      if (used[k]) continue;
      int64_t d = x->dims[k];
      if (d >= 0) {
        prod_in = dim_mul(prod_in, d);
      } else if (d <= -2) {
        nsym++;
        sym = d;
      } else {
        unresolved = true;
      }
    }
    if (!unresolved && prod_in >= 0 && prod_out >= 0) {
      if (neg >= 0) {
        if (nsym == 0) {
          if (prod_out == 0) {
            if (prod_in != 0) {
              st = ge_infer_fail(c, GE_ERR_SHAPE, "cannot infer the -1 of shape: other dims have 0 elements");
              goto done;
            }
          } else if (prod_in % prod_out) {
            char b1[160];
            st = ge_infer_fail(c, GE_ERR_SHAPE, "cannot reshape input %s: %lld elements do not divide by %lld",
                               ge_shape_str(x, c->graph, b1, sizeof b1), (long long)prod_in,
                               (long long)prod_out);
            goto done;
          } else {
            out.dims[neg] = prod_in / prod_out;
          }
        } else if (nsym == 1 && prod_in == prod_out) {
          out.dims[neg] = sym;
        }
      } else if (nsym == 0 && prod_in != prod_out) {
        char b1[160], b2[160];
        st = ge_infer_fail(c, GE_ERR_SHAPE, "cannot reshape input %s (%lld elements) to %s (%lld elements)",
                           ge_shape_str(x, c->graph, b1, sizeof b1), (long long)prod_in,
                           ge_shape_str(&out, c->graph, b2, sizeof b2), (long long)prod_out);
        goto done;
      }
    }
  }
  ge_infer_set(c, 0, dt, &out);
done:
  free(sh);
  return st;
}

/* ------------------------------------------------------------------ Transpose */

static ge_status infer_transpose(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  const int64_t *perm;
  size_t n;
  bool has = ge_node_attr_ints(c->node, "perm", &perm, &n);
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_shape s = unknown_shape;
    if (has) {
      GE_CHECK(check_rank(c, (int64_t)n));
      set_unknown_dims(&s, (int32_t)n);
    }
    ge_infer_set(c, 0, dt, &s);
    return GE_OK;
  }
  ge_shape s = {0};
  s.rank = x->rank;
  if (!has) {
    for (int32_t i = 0; i < x->rank; i++) s.dims[i] = x->dims[x->rank - 1 - i];
  } else {
    if ((int64_t)n != x->rank)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "perm has %zu entries for an input of rank %d",
                           n, (int)x->rank);
    bool seen[GE_MAX_RANK] = {false};
    for (size_t i = 0; i < n; i++) {
      int64_t p = perm[i];
      if (p < 0) p += x->rank; /* tolerated like onnxruntime */
      if (p < 0 || p >= x->rank || seen[p])
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "perm is not a permutation of 0..%d (entry %zu = %lld)",
                             (int)x->rank - 1, i, (long long)perm[i]);
      seen[p] = true;
      s.dims[i] = x->dims[p];
    }
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ Concat */

static ge_status infer_concat(ge_infer_ctx *c) {
  int64_t axis = ge_node_attr_int(c->node, "axis", c->opset < 4 ? 1 : INT64_MIN);
  if (axis == INT64_MIN) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'axis' is required");
  ge_dtype dt = GE_DTYPE_COUNT;
  int32_t rank = GE_RANK_UNKNOWN;
  for (size_t i = 0; i < c->n_in; i++) {
    ge_dtype d = in_dtype(c, i);
    if (d != GE_DTYPE_COUNT) {
      if (dt == GE_DTYPE_COUNT) dt = d;
      else if (d != dt)
        return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu has dtype %s, input 0 has %s", i,
                             ge_dtype_name(d), ge_dtype_name(dt));
    }
    const ge_shape *s = in_shape(c, i);
    if (s->rank != GE_RANK_UNKNOWN) {
      if (rank == GE_RANK_UNKNOWN) rank = s->rank;
      else if (s->rank != rank)
        return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu has rank %d, others have rank %d", i,
                             (int)s->rank, (int)rank);
    }
  }
  if (rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  if (rank == 0) return ge_infer_fail(c, GE_ERR_SHAPE, "cannot concatenate scalars");
  int64_t ax = 0;
  GE_CHECK(ge_infer_axis(c, axis, rank, &ax));
  ge_shape out = {0};
  out.rank = rank;
  for (int32_t d = 0; d < rank; d++) out.dims[d] = GE_DIM_UNKNOWN;
  int64_t sum = 0;
  bool sum_known = true;
  for (size_t i = 0; i < c->n_in; i++) {
    const ge_shape *s = in_shape(c, i);
    if (s->rank == GE_RANK_UNKNOWN) {
      sum_known = false;
      continue;
    }
    for (int32_t d = 0; d < rank; d++) {
      int64_t v = s->dims[d];
      if (d == ax) {
        if (v < 0) sum_known = false;
        else sum = dim_add(sum, v);
        continue;
      }
      int64_t o = out.dims[d];
      if (v >= 0 && o >= 0 && v != o)
        return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu has dim %d = %lld, an earlier input has %lld",
                             i, (int)d, (long long)v, (long long)o);
      if (o == GE_DIM_UNKNOWN || (o <= -2 && v >= 0)) out.dims[d] = v;
    }
  }
  /* one present input with a symbolic axis dim keeps it */
  if (!sum_known) {
    size_t n_present = 0, last = 0;
    for (size_t i = 0; i < c->n_in; i++)
      if (in_present(c, i)) n_present++, last = i;
    out.dims[ax] = (n_present == 1 && in_shape(c, last)->rank == rank) ? in_shape(c, last)->dims[ax]
                                                                       : GE_DIM_UNKNOWN;
  } else {
    out.dims[ax] = sum;
  }
  ge_infer_set(c, 0, dt, &out);
  return GE_OK;
}

/* ------------------------------------------------------------------ Split */

static ge_status infer_split(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t axis = ge_node_attr_int(c->node, "axis", 0);
  size_t n_out = c->n_out;
  int64_t *split = NULL;
  size_t n_split = 0;
  bool have_split = false;
  ge_status st = GE_OK;
  if (c->opset >= 13 || (c->opset < 2 && in_present(c, 1))) {
    if (in_present(c, 1)) {
      GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
      GE_CHECK(const_ints(c, 1, "split", &split, &n_split, &have_split));
      if (!have_split) {
        for (size_t i = 0; i < n_out; i++) {
          ge_shape s = unknown_shape;
          if (x->rank != GE_RANK_UNKNOWN) {
            int64_t ax = 0;
            GE_CHECK(ge_infer_axis(c, axis, x->rank, &ax));
            s = *x;
            s.dims[ax] = GE_DIM_UNKNOWN;
          }
          ge_infer_set(c, i, dt, &s);
        }
        return GE_OK;
      }
    }
  } else {
    const int64_t *a;
    size_t na;
    if (ge_node_attr_ints(c->node, "split", &a, &na)) {
      split = malloc((na ? na : 1) * sizeof *split);
      if (!split) return ge_infer_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
      memcpy(split, a, na * sizeof *split);
      n_split = na;
      have_split = true;
    }
  }
  int64_t num_outputs = c->opset >= 18 ? ge_node_attr_int(c->node, "num_outputs", 0) : 0;
  if (have_split) {
    if (n_split != n_out) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "split has %zu entries for %zu outputs", n_split, n_out);
      goto done;
    }
    for (size_t i = 0; i < n_split; i++)
      if (split[i] < 0) {
        st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "split[%zu] = %lld is negative", i, (long long)split[i]);
        goto done;
      }
  } else if (num_outputs != 0 && (size_t)num_outputs != n_out) {
    st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "num_outputs = %lld but the node has %zu outputs",
                       (long long)num_outputs, n_out);
    goto done;
  }
  if (x->rank == GE_RANK_UNKNOWN) {
    for (size_t i = 0; i < n_out; i++) ge_infer_set(c, i, dt, NULL);
    goto done;
  }
  int64_t ax = 0;
  st = ge_infer_axis(c, axis, x->rank, &ax);
  if (st) goto done;
  int64_t dim = x->dims[ax];
  if (have_split && dim >= 0) {
    int64_t sum = 0;
    for (size_t i = 0; i < n_split; i++) sum = dim_add(sum, split[i]);
    if (sum != dim) {
      st = ge_infer_fail(c, GE_ERR_SHAPE, "split sizes sum to %lld, but dim %lld of the input is %lld",
                         (long long)sum, (long long)ax, (long long)dim);
      goto done;
    }
  }
  for (size_t i = 0; i < n_out; i++) {
    ge_shape s = *x;
    if (have_split) {
      s.dims[ax] = split[i];
    } else if (dim < 0) {
      s.dims[ax] = n_out == 1 ? dim : GE_DIM_UNKNOWN;
    } else if (c->opset >= 18 && num_outputs > 0) {
      int64_t chunk = (dim + (int64_t)n_out - 1) / (int64_t)n_out;
      int64_t begin = chunk * (int64_t)i;
      int64_t len = dim - begin;
      s.dims[ax] = len < 0 ? 0 : len > chunk ? chunk : len;
    } else {
      if (dim % (int64_t)n_out) {
        st = ge_infer_fail(c, GE_ERR_SHAPE, "dim %lld of size %lld does not split evenly into %zu outputs",
                           (long long)ax, (long long)dim, n_out);
        goto done;
      }
      s.dims[ax] = dim / (int64_t)n_out;
    }
    ge_infer_set(c, i, dt, &s);
  }
done:
  free(split);
  return st;
}

/* ------------------------------------------------------------------ Slice */

static ge_status infer_slice(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  size_t ns = 0, ne = 0, na = 0, nst = 0;
  bool ks = false, ke = false, ka = false, kst = false;
  ge_status st = GE_OK;
  if (c->opset < 10) {
    const int64_t *p;
    size_t n;
    if (!ge_node_attr_ints(c->node, "starts", &p, &n))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'starts' is required");
    ks = true;
    if (!(starts = malloc((n + 1) * sizeof(int64_t)))) goto oom;
    memcpy(starts, p, n * sizeof(int64_t));
    ns = n;
    if (!ge_node_attr_ints(c->node, "ends", &p, &n)) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'ends' is required");
      goto done;
    }
    ke = true;
    if (!(ends = malloc((n + 1) * sizeof(int64_t)))) goto oom;
    memcpy(ends, p, n * sizeof(int64_t));
    ne = n;
    if (ge_node_attr_ints(c->node, "axes", &p, &n)) {
      if (!(axes = malloc((n + 1) * sizeof(int64_t)))) goto oom;
      memcpy(axes, p, n * sizeof(int64_t));
      na = n;
      ka = true;
    }
  } else {
    for (size_t i = 1; i < 5; i++) GE_CHECK(ge_infer_check_dtype(c, i, dt_ind));
    if ((st = const_ints(c, 1, "starts", &starts, &ns, &ks))) goto done;
    if ((st = const_ints(c, 2, "ends", &ends, &ne, &ke))) goto done;
    if (in_present(c, 3) && (st = const_ints(c, 3, "axes", &axes, &na, &ka))) goto done;
    if (in_present(c, 4) && (st = const_ints(c, 4, "steps", &steps, &nst, &kst))) goto done;
  }
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    goto done;
  }
  ge_shape out = *x;
  bool axes_known = ka || !in_present(c, 3) || c->opset < 10;
  if (!(ks && ke && (kst || !in_present(c, 4)) && axes_known)) {
    /* value unknown: the sliced axes get unknown dims; the others keep theirs */
    if (ka) {
      if ((st = unknown_at_axes(c, axes, na, x->rank, &out))) goto done;
    } else {
      int64_t len = ks ? (int64_t)ns : ke ? (int64_t)ne : input_len(c, 1);
      for (int32_t d = 0; d < x->rank; d++)
        if (len < 0 || (!in_present(c, 3) && d < len) || in_present(c, 3)) out.dims[d] = GE_DIM_UNKNOWN;
    }
    ge_infer_set(c, 0, dt, &out);
    goto done;
  }
  if (ns != ne || (ka && na != ns) || (kst && nst != ns)) {
    st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "starts (%zu), ends (%zu), axes (%zu) and steps (%zu) differ in length",
                       ns, ne, ka ? na : ns, kst ? nst : ns);
    goto done;
  }
  if (ns > (size_t)x->rank) {
    st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "%zu starts for an input of rank %d", ns, (int)x->rank);
    goto done;
  }
  int64_t nx[GE_MAX_RANK];
  for (size_t k = 0; k < ns; k++) nx[k] = (int64_t)k;
  if (ka && (st = norm_axes(c, axes, na, x->rank, nx))) goto done;
  for (size_t k = 0; k < ns; k++) {
    int64_t step = kst ? steps[k] : 1;
    if (step == 0) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "steps[%zu] is 0", k);
      goto done;
    }
    int64_t dim = x->dims[nx[k]];
    if (dim < 0) {
      /* a full slice keeps the symbol */
      bool full = step == 1 && (starts[k] == 0 || starts[k] <= INT64_MIN / 2) && ends[k] >= INT32_MAX;
      out.dims[nx[k]] = full ? dim : GE_DIM_UNKNOWN;
      continue;
    }
    int64_t s0;
    out.dims[nx[k]] = ge_slice_axis(dim, starts[k], ends[k], step, &s0);
  }
  ge_infer_set(c, 0, dt, &out);
  goto done;
oom:
  st = ge_infer_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
done:
  free(starts);
  free(ends);
  free(axes);
  free(steps);
  return st;
}

/* ------------------------------------------------------------------ Gather family */

static ge_status infer_gather(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_ind));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0), *ind = in_shape(c, 1);
  if (x->rank == GE_RANK_UNKNOWN || ind->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  if (x->rank == 0) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (data) must have rank >= 1");
  int64_t ax = 0;
  GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", 0), x->rank, &ax));
  int64_t r = (int64_t)x->rank + ind->rank - 1;
  GE_CHECK(check_rank(c, r));
  ge_shape out = {0};
  out.rank = (int32_t)r;
  int32_t k = 0;
  for (int32_t d = 0; d < ax; d++) out.dims[k++] = x->dims[d];
  for (int32_t d = 0; d < ind->rank; d++) out.dims[k++] = ind->dims[d];
  for (int32_t d = (int32_t)ax + 1; d < x->rank; d++) out.dims[k++] = x->dims[d];
  ge_infer_set(c, 0, dt, &out);
  return GE_OK;
}

static ge_status infer_gather_elements(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_ind));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0), *ind = in_shape(c, 1);
  if (x->rank != GE_RANK_UNKNOWN) {
    if (x->rank == 0) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (data) must have rank >= 1");
    int64_t ax = 0;
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", 0), x->rank, &ax));
    if (ind->rank != GE_RANK_UNKNOWN && ind->rank != x->rank)
      return ge_infer_fail(c, GE_ERR_SHAPE, "indices have rank %d, data has rank %d", (int)ind->rank,
                           (int)x->rank);
  }
  ge_infer_set(c, 0, dt, ind->rank == GE_RANK_UNKNOWN ? NULL : ind);
  return GE_OK;
}

static ge_status infer_gather_nd(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0), *ind = in_shape(c, 1);
  int64_t b = c->opset >= 12 ? ge_node_attr_int(c->node, "batch_dims", 0) : 0;
  if (x->rank == GE_RANK_UNKNOWN || ind->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  if (x->rank < 1 || ind->rank < 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "data and indices must have rank >= 1");
  if (b < 0 || b >= ind->rank || b >= x->rank)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "batch_dims = %lld out of range for ranks %d and %d",
                         (long long)b, (int)x->rank, (int)ind->rank);
  for (int64_t d = 0; d < b; d++)
    if (x->dims[d] >= 0 && ind->dims[d] >= 0 && x->dims[d] != ind->dims[d])
      return ge_infer_fail(c, GE_ERR_SHAPE, "batch dim %lld differs: data %lld, indices %lld",
                           (long long)d, (long long)x->dims[d], (long long)ind->dims[d]);
  int64_t k = ind->dims[ind->rank - 1];
  if (k < 0) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  if (k < 1 || k > x->rank - b)
    return ge_infer_fail(c, GE_ERR_SHAPE, "indices last dim %lld out of range for data rank %d and batch_dims %lld",
                         (long long)k, (int)x->rank, (long long)b);
  int64_t r = (int64_t)ind->rank - 1 + x->rank - b - k;
  GE_CHECK(check_rank(c, r));
  ge_shape out = {0};
  out.rank = (int32_t)r;
  int32_t o = 0;
  for (int32_t d = 0; d < ind->rank - 1; d++) out.dims[o++] = ind->dims[d];
  for (int64_t d = b + k; d < x->rank; d++) out.dims[o++] = x->dims[d];
  ge_infer_set(c, 0, dt, &out);
  return GE_OK;
}

static ge_status check_reduction(const ge_infer_ctx *c) {
  if (c->opset < 16) return GE_OK;
  const char *r = ge_node_attr_string(c->node, "reduction", "none");
  if (!strcmp(r, "none") || !strcmp(r, "add") || !strcmp(r, "mul")) return GE_OK;
  if (c->opset >= 18 && (!strcmp(r, "max") || !strcmp(r, "min"))) return GE_OK;
  return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "reduction '%s' is not valid at opset %lld", r,
                       (long long)c->opset);
}

static ge_status infer_scatter_elements(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_ind));
  GE_CHECK(check_reduction(c));
  const ge_shape *x = in_shape(c, 0), *ind = in_shape(c, 1), *upd = in_shape(c, 2);
  if (x->rank != GE_RANK_UNKNOWN) {
    int64_t ax = 0;
    if (x->rank == 0) return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 (data) must have rank >= 1");
    GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", 0), x->rank, &ax));
    if (ind->rank != GE_RANK_UNKNOWN && ind->rank != x->rank)
      return ge_infer_fail(c, GE_ERR_SHAPE, "indices have rank %d, data has rank %d", (int)ind->rank,
                           (int)x->rank);
  }
  if (ind->rank != GE_RANK_UNKNOWN && upd->rank != GE_RANK_UNKNOWN) {
    if (ind->rank != upd->rank)
      return ge_infer_fail(c, GE_ERR_SHAPE, "updates have rank %d, indices have rank %d", (int)upd->rank,
                           (int)ind->rank);
    for (int32_t d = 0; d < ind->rank; d++)
      if (ind->dims[d] >= 0 && upd->dims[d] >= 0 && ind->dims[d] != upd->dims[d])
        return ge_infer_fail(c, GE_ERR_SHAPE, "updates dim %d = %lld, indices dim %d = %lld", (int)d,
                             (long long)upd->dims[d], (int)d, (long long)ind->dims[d]);
  }
  ge_dtype du = in_dtype(c, 2), dx = in_dtype(c, 0);
  if (du != GE_DTYPE_COUNT && dx != GE_DTYPE_COUNT && du != dx)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "updates have dtype %s, data has %s", ge_dtype_name(du),
                         ge_dtype_name(dx));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_scatter_nd(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  GE_CHECK(check_reduction(c));
  const ge_shape *x = in_shape(c, 0), *ind = in_shape(c, 1), *upd = in_shape(c, 2);
  if (x->rank != GE_RANK_UNKNOWN && ind->rank != GE_RANK_UNKNOWN && upd->rank != GE_RANK_UNKNOWN) {
    if (x->rank < 1 || ind->rank < 1)
      return ge_infer_fail(c, GE_ERR_SHAPE, "data and indices must have rank >= 1");
    int64_t k = ind->dims[ind->rank - 1];
    if (k >= 0) {
      if (k > x->rank)
        return ge_infer_fail(c, GE_ERR_SHAPE, "indices last dim %lld exceeds data rank %d", (long long)k,
                             (int)x->rank);
      int64_t want = (int64_t)ind->rank - 1 + x->rank - k;
      if (upd->rank != want)
        return ge_infer_fail(c, GE_ERR_SHAPE, "updates have rank %d, expected %lld", (int)upd->rank,
                             (long long)want);
    }
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ Squeeze, Unsqueeze */

static ge_status get_axes(const ge_infer_ctx *c, size_t input, int64_t switch_opset, int64_t **axes,
                          size_t *n, bool *known, bool *given) {
  *axes = NULL;
  *n = 0;
  *known = false;
  *given = false;
  if (c->opset < switch_opset) {
    const int64_t *p;
    size_t k;
    if (ge_node_attr_ints(c->node, "axes", &p, &k)) {
      *axes = malloc((k + 1) * sizeof(int64_t));
      if (!*axes) return ge_infer_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
      memcpy(*axes, p, k * sizeof(int64_t));
      *n = k;
      *known = *given = true;
    }
    return GE_OK;
  }
  if (!in_present(c, input)) return GE_OK;
  *given = true;
  GE_CHECK(ge_infer_check_dtype(c, input, dt_i64));
  return const_ints(c, input, "axes", axes, n, known);
}

static ge_status infer_unsqueeze(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t *axes;
  size_t n;
  bool known, given;
  GE_CHECK(get_axes(c, 1, 13, &axes, &n, &known, &given));
  ge_status st = GE_OK;
  if (!given) {
    st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "axes are required");
    goto done;
  }
  if (x->rank == GE_RANK_UNKNOWN || !known) {
    ge_shape s = unknown_shape;
    int64_t len = known ? (int64_t)n : input_len(c, 1);
    if (x->rank != GE_RANK_UNKNOWN && len >= 0) {
      if ((st = check_rank(c, x->rank + len))) goto done;
      set_unknown_dims(&s, (int32_t)(x->rank + len));
    }
    ge_infer_set(c, 0, dt, &s);
    goto done;
  }
  int64_t r = x->rank + (int64_t)n;
  if ((st = check_rank(c, r))) goto done;
  int64_t nx[GE_MAX_RANK];
  if ((st = norm_axes(c, axes, n, r, nx))) goto done;
  bool ins[GE_MAX_RANK] = {false};
  for (size_t k = 0; k < n; k++) ins[nx[k]] = true;
  ge_shape out = {0};
  out.rank = (int32_t)r;
  for (int32_t d = 0, j = 0; d < r; d++) out.dims[d] = ins[d] ? 1 : x->dims[j++];
  ge_infer_set(c, 0, dt, &out);
done:
  free(axes);
  return st;
}

static ge_status infer_squeeze(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t *axes;
  size_t n;
  bool known, given;
  GE_CHECK(get_axes(c, 1, 13, &axes, &n, &known, &given));
  ge_status st = GE_OK;
  if (x->rank == GE_RANK_UNKNOWN || (given && !known)) {
    ge_shape s = unknown_shape;
    int64_t len = input_len(c, 1);
    if (x->rank != GE_RANK_UNKNOWN && given && len >= 0 && len <= x->rank)
      set_unknown_dims(&s, (int32_t)(x->rank - len));
    ge_infer_set(c, 0, dt, &s);
    goto done;
  }
  bool rm[GE_MAX_RANK] = {false};
  if (given) {
    int64_t nx[GE_MAX_RANK];
    if (n > GE_MAX_RANK) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "too many axes");
      goto done;
    }
    if ((st = norm_axes(c, axes, n, x->rank, nx))) goto done;
    for (size_t k = 0; k < n; k++) {
      int64_t d = x->dims[nx[k]];
      if (d >= 0 && d != 1) {
        st = ge_infer_fail(c, GE_ERR_SHAPE, "cannot squeeze axis %lld of size %lld", (long long)axes[k],
                           (long long)d);
        goto done;
      }
      rm[nx[k]] = true;
    }
  } else {
    for (int32_t d = 0; d < x->rank; d++) {
      if (x->dims[d] < 0) { /* might be 1 */
        ge_infer_set(c, 0, dt, NULL);
        goto done;
      }
      rm[d] = x->dims[d] == 1;
    }
  }
  ge_shape out = {0};
  for (int32_t d = 0; d < x->rank; d++)
    if (!rm[d]) out.dims[out.rank++] = x->dims[d];
  ge_infer_set(c, 0, dt, &out);
done:
  free(axes);
  return st;
}

/* ------------------------------------------------------------------ Expand, Tile */

static ge_status infer_expand(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t *sh;
  size_t n;
  bool ok;
  GE_CHECK(const_ints(c, 1, "shape", &sh, &n, &ok));
  ge_status st = GE_OK;
  if (!ok) {
    int64_t len = input_len(c, 1);
    ge_shape s = unknown_shape;
    if (x->rank != GE_RANK_UNKNOWN && len >= 0) {
      int64_t r = len > x->rank ? len : x->rank;
      GE_CHECK(check_rank(c, r));
      set_unknown_dims(&s, (int32_t)r);
      /* input dims that are not 1 survive broadcasting */
      for (int32_t d = 0; d < x->rank; d++)
        if (x->dims[d] != 1 && x->dims[d] != GE_DIM_UNKNOWN) s.dims[r - x->rank + d] = x->dims[d];
    }
    ge_infer_set(c, 0, dt, &s);
    return GE_OK;
  }
  if ((st = check_rank(c, (int64_t)n))) goto done;
  ge_shape t = {0};
  t.rank = (int32_t)n;
  for (size_t i = 0; i < n; i++) {
    if (sh[i] < 0) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "shape[%zu] = %lld is negative", i, (long long)sh[i]);
      goto done;
    }
    t.dims[i] = sh[i];
  }
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    goto done;
  }
  ge_shape out;
  if (ge_shape_broadcast(x, &t, &out) != GE_OK) {
    char b1[160], b2[160];
    st = ge_infer_fail(c, GE_ERR_SHAPE, "cannot expand input %s to shape %s",
                       ge_shape_str(x, c->graph, b1, sizeof b1), ge_shape_str(&t, c->graph, b2, sizeof b2));
    goto done;
  }
  ge_infer_set(c, 0, dt, &out);
done:
  free(sh);
  return st;
}

static ge_status infer_tile(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t *rep;
  size_t n;
  bool ok;
  GE_CHECK(const_ints(c, 1, "repeats", &rep, &n, &ok));
  ge_status st = GE_OK;
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    goto done;
  }
  ge_shape out = *x;
  if (!ok) {
    for (int32_t d = 0; d < x->rank; d++) out.dims[d] = GE_DIM_UNKNOWN;
  } else {
    if ((int64_t)n != x->rank) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "repeats has %zu entries for an input of rank %d", n,
                         (int)x->rank);
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      if (rep[i] < 0) {
        st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "repeats[%zu] = %lld is negative", i, (long long)rep[i]);
        goto done;
      }
      out.dims[i] = dim_mul(x->dims[i], rep[i]);
    }
  }
  ge_infer_set(c, 0, dt, &out);
done:
  free(rep);
  return st;
}

/* ------------------------------------------------------------------ Constant, ConstantOfShape, Range, EyeLike */

static ge_status infer_constant(ge_infer_ctx *c) {
  const ge_node *n = c->node;
  ge_shape s = {0};
  int found = 0;
  ge_dtype dt = GE_DTYPE_COUNT;
  for (size_t i = 0; i < n->n_attrs; i++) {
    const ge_attr_value *a = &n->attrs[i];
    if (!strcmp(a->name, "value") && a->kind == GE_ATTR_KIND_TENSOR && a->t) {
      dt = a->t->dtype;
      ge_tensor_shape(a->t, &s);
    } else if (!strcmp(a->name, "value_float")) {
      dt = GE_F32, s.rank = 0;
    } else if (!strcmp(a->name, "value_int")) {
      dt = GE_I64, s.rank = 0;
    } else if (!strcmp(a->name, "value_string")) {
      dt = GE_STRING, s.rank = 0;
    } else if (!strcmp(a->name, "value_floats")) {
      dt = GE_F32, s.rank = 1, s.dims[0] = (int64_t)a->n;
    } else if (!strcmp(a->name, "value_ints")) {
      dt = GE_I64, s.rank = 1, s.dims[0] = (int64_t)a->n;
    } else if (!strcmp(a->name, "value_strings")) {
      dt = GE_STRING, s.rank = 1, s.dims[0] = (int64_t)a->n;
    } else if (!strcmp(a->name, "sparse_value")) {
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "attribute 'sparse_value' is not supported");
    } else {
      continue;
    }
    found++;
  }
  if (found != 1)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "needs exactly one value attribute, has %d", found);
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_constant_of_shape(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, dt_i64));
  const ge_attr_value *a = ge_node_attr(c->node, "value");
  ge_dtype dt = GE_F32;
  if (a) {
    if (a->kind != GE_ATTR_KIND_TENSOR || !a->t)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'value' must be a tensor");
    if (a->t->numel != 1)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'value' must have one element, has %zu",
                           a->t->numel);
    dt = a->t->dtype;
  }
  int64_t *sh;
  size_t n;
  bool ok;
  GE_CHECK(const_ints(c, 0, "shape", &sh, &n, &ok));
  ge_shape s = unknown_shape;
  ge_status st = GE_OK;
  if (ok) {
    if ((st = check_rank(c, (int64_t)n))) goto done;
    s.rank = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
      if (sh[i] < 0) {
        st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "shape[%zu] = %lld is negative", i, (long long)sh[i]);
        goto done;
      }
      s.dims[i] = sh[i];
    }
  } else {
    int64_t len = input_len(c, 0);
    if (len >= 0) {
      if ((st = check_rank(c, len))) goto done;
      set_unknown_dims(&s, (int32_t)len);
    }
  }
  ge_infer_set(c, 0, dt, &s);
done:
  free(sh);
  return st;
}

static ge_status infer_range(ge_infer_ctx *c) {
  static const ge_dtype ok_dt[] = {GE_F32, GE_F64, GE_F16, GE_BF16, GE_I16, GE_I32, GE_I64, GE_DTYPE_COUNT};
  ge_dtype dt = GE_DTYPE_COUNT;
  for (size_t i = 0; i < 3; i++) {
    GE_CHECK(ge_infer_check_dtype(c, i, ok_dt));
    ge_dtype d = in_dtype(c, i);
    if (d == GE_DTYPE_COUNT) continue;
    if (dt != GE_DTYPE_COUNT && d != dt)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "input %zu has dtype %s, input 0 has %s", i,
                           ge_dtype_name(d), ge_dtype_name(dt));
    dt = d;
    const ge_shape *s = in_shape(c, i);
    if (s->rank > 1 || (s->rank == 1 && s->dims[0] >= 0 && s->dims[0] != 1))
      return ge_infer_fail(c, GE_ERR_SHAPE, "input %zu must be a scalar", i);
  }
  ge_shape s = {0};
  s.rank = 1;
  s.dims[0] = GE_DIM_UNKNOWN;
  const ge_tensor *a = in_value(c, 0), *b = in_value(c, 1), *d = in_value(c, 2);
  if (a && b && d && a->numel == 1 && b->numel == 1 && d->numel == 1) {
    if (ge_dtype_is_int(dt)) {
      int64_t s0 = ge_tensor_get_i64(a, 0), l = ge_tensor_get_i64(b, 0), dl = ge_tensor_get_i64(d, 0);
      if (dl == 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "delta is 0");
      /* ceil((l - s0) / dl) without overflow in the common ranges */
      double n = ceil(((double)l - (double)s0) / (double)dl);
      s.dims[0] = n > 0 ? (int64_t)n : 0;
    } else {
      double s0 = ge_tensor_get_f64(a, 0), l = ge_tensor_get_f64(b, 0), dl = ge_tensor_get_f64(d, 0);
      if (dl == 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "delta is 0");
      double n = ceil((l - s0) / dl);
      if (!(n < 9.0e15)) {
        if (n > 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "range of %g elements is too long", n);
        n = 0;
      }
      s.dims[0] = n > 0 ? (int64_t)n : 0;
    }
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_eye_like(ge_infer_ctx *c) {
  const ge_shape *x = in_shape(c, 0);
  ge_dtype dt = in_dtype(c, 0);
  const ge_attr_value *a = ge_node_attr(c->node, "dtype");
  if (a) {
    if (!ge_dtype_from_onnx((int32_t)a->i, &dt) || dt == GE_STRING)
      return ge_infer_fail(c, GE_ERR_UNSUPPORTED, "dtype %lld is not supported", (long long)a->i);
  }
  if (x->rank != GE_RANK_UNKNOWN && x->rank != 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input must be 2-D, has rank %d", (int)x->rank);
  ge_infer_set(c, 0, dt, x->rank == GE_RANK_UNKNOWN ? NULL : x);
  return GE_OK;
}

/* ------------------------------------------------------------------ Pad */

static ge_status infer_pad(ge_infer_ctx *c) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  const char *mode = ge_node_attr_string(c->node, "mode", "constant");
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
      !(c->opset >= 19 && !strcmp(mode, "wrap")))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "mode '%s' is not valid at opset %lld", mode,
                         (long long)c->opset);
  int64_t *pads = NULL, *axes = NULL;
  size_t np = 0, na = 0;
  bool kp = false, ka = false;
  ge_status st = GE_OK;
  if (c->opset < 11) {
    const int64_t *p;
    if (!ge_node_attr_ints(c->node, "pads", &p, &np))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'pads' is required");
    if (!(pads = malloc((np + 1) * sizeof *pads))) return ge_infer_fail(c, GE_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(pads, p, np * sizeof *pads);
    kp = true;
  } else {
    GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
    GE_CHECK(ge_infer_check_dtype(c, 3, dt_ind));
    ge_dtype dv = in_dtype(c, 2);
    if (in_present(c, 2) && dv != GE_DTYPE_COUNT && dt != GE_DTYPE_COUNT && dv != dt)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "constant_value has dtype %s, data has %s",
                           ge_dtype_name(dv), ge_dtype_name(dt));
    GE_CHECK(const_ints(c, 1, "pads", &pads, &np, &kp));
    if (in_present(c, 3) && (st = const_ints(c, 3, "axes", &axes, &na, &ka))) goto done;
  }
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    goto done;
  }
  ge_shape out = *x;
  bool has_axes = in_present(c, 3) && c->opset >= 18;
  if (!kp || (has_axes && !ka)) {
    if (ka) {
      if ((st = unknown_at_axes(c, axes, na, x->rank, &out))) goto done;
    } else {
      for (int32_t d = 0; d < x->rank; d++) out.dims[d] = GE_DIM_UNKNOWN;
    }
    ge_infer_set(c, 0, dt, &out);
    goto done;
  }
  int64_t nx[GE_MAX_RANK];
  size_t n_ax = has_axes ? na : (size_t)x->rank;
  if (has_axes) {
    if (na > GE_MAX_RANK) {
      st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "too many axes");
      goto done;
    }
    if ((st = norm_axes(c, axes, na, x->rank, nx))) goto done;
  } else {
    for (size_t k = 0; k < n_ax; k++) nx[k] = (int64_t)k;
  }
  if (np != 2 * n_ax) {
    st = ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "pads has %zu entries, expected %zu", np, 2 * n_ax);
    goto done;
  }
  for (size_t k = 0; k < n_ax; k++) {
    int64_t d = x->dims[nx[k]], pb = pads[k], pe = pads[k + n_ax];
    if (pb == 0 && pe == 0) continue;
    if (d < 0) {
      out.dims[nx[k]] = GE_DIM_UNKNOWN;
      continue;
    }
    int64_t v = d + pb + pe;
    if (v < 0) {
      st = ge_infer_fail(c, GE_ERR_SHAPE, "pads %lld,%lld make axis %lld of size %lld negative", (long long)pb,
                         (long long)pe, (long long)nx[k], (long long)d);
      goto done;
    }
    out.dims[nx[k]] = v;
  }
  ge_infer_set(c, 0, dt, &out);
done:
  free(pads);
  free(axes);
  return st;
}

/* ------------------------------------------------------------------ Trilu, DepthToSpace, SpaceToDepth */

static ge_status infer_trilu(ge_infer_ctx *c) {
  const ge_shape *x = in_shape(c, 0);
  if (x->rank != GE_RANK_UNKNOWN && x->rank < 2)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input must have rank >= 2, has %d", (int)x->rank);
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

static ge_status infer_depth_space(ge_infer_ctx *c, bool to_space) {
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0);
  int64_t b = ge_node_attr_int(c->node, "blocksize", -1);
  if (b <= 0) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'blocksize' must be positive");
  if (c->opset >= (to_space ? 11 : 28)) {
    const char *m = ge_node_attr_string(c->node, "mode", "DCR");
    if (strcmp(m, "DCR") && strcmp(m, "CRD"))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "mode '%s' must be DCR or CRD", m);
  }
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_shape s;
    set_unknown_dims(&s, 4);
    ge_infer_set(c, 0, dt, &s);
    return GE_OK;
  }
  if (x->rank != 4) return ge_infer_fail(c, GE_ERR_SHAPE, "input must be 4-D, has rank %d", (int)x->rank);
  int64_t bb = b * b;
  ge_shape s = *x;
  if (to_space) {
    if (x->dims[1] >= 0 && x->dims[1] % bb)
      return ge_infer_fail(c, GE_ERR_SHAPE, "channels %lld are not divisible by blocksize^2 = %lld",
                           (long long)x->dims[1], (long long)bb);
    s.dims[1] = x->dims[1] >= 0 ? x->dims[1] / bb : GE_DIM_UNKNOWN;
    s.dims[2] = dim_mul(x->dims[2], b);
    s.dims[3] = dim_mul(x->dims[3], b);
  } else {
    for (int d = 2; d < 4; d++) {
      if (x->dims[d] >= 0 && x->dims[d] % b)
        return ge_infer_fail(c, GE_ERR_SHAPE, "dim %d = %lld is not divisible by blocksize %lld", d,
                             (long long)x->dims[d], (long long)b);
      s.dims[d] = x->dims[d] >= 0 ? x->dims[d] / b : GE_DIM_UNKNOWN;
    }
    s.dims[1] = dim_mul(x->dims[1], bb);
  }
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_depth_to_space(ge_infer_ctx *c) { return infer_depth_space(c, true); }
static ge_status infer_space_to_depth(ge_infer_ctx *c) { return infer_depth_space(c, false); }

/* ------------------------------------------------------------------ OneHot, NonZero, Compress, ReverseSequence */

static ge_status infer_one_hot(ge_infer_ctx *c) {
  const ge_shape *ind = in_shape(c, 0), *vals = in_shape(c, 2);
  ge_dtype dt = in_dtype(c, 2);
  if (vals->rank != GE_RANK_UNKNOWN &&
      (vals->rank != 1 || (vals->dims[0] >= 0 && vals->dims[0] != 2)))
    return ge_infer_fail(c, GE_ERR_SHAPE, "values must be a 1-D tensor of 2 elements");
  const ge_shape *dsh = in_shape(c, 1);
  if (dsh->rank > 1 || (dsh->rank == 1 && dsh->dims[0] >= 0 && dsh->dims[0] != 1))
    return ge_infer_fail(c, GE_ERR_SHAPE, "depth must be a scalar or a 1-element tensor");
  if (ind->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  int64_t r = ind->rank + 1;
  GE_CHECK(check_rank(c, r));
  int64_t ax = 0;
  GE_CHECK(ge_infer_axis(c, ge_node_attr_int(c->node, "axis", -1), r, &ax));
  int64_t depth = GE_DIM_UNKNOWN;
  const ge_tensor *dv = in_value(c, 1);
  if (dv && dv->numel == 1) {
    double d = ge_tensor_get_f64(dv, 0);
    if (!(d >= 1.0) || d > 9.0e15)
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "depth %g must be positive", d);
    depth = (int64_t)d;
  }
  ge_shape s = {0};
  s.rank = (int32_t)r;
  for (int64_t d = 0, j = 0; d < r; d++) s.dims[d] = d == ax ? depth : ind->dims[j++];
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_non_zero(ge_infer_ctx *c) {
  const ge_shape *x = in_shape(c, 0);
  ge_shape s = {0};
  s.rank = 2;
  s.dims[0] = x->rank == GE_RANK_UNKNOWN ? GE_DIM_UNKNOWN : x->rank;
  s.dims[1] = GE_DIM_UNKNOWN;
  ge_infer_set(c, 0, GE_I64, &s);
  return GE_OK;
}

static ge_status infer_compress(ge_infer_ctx *c) {
  static const ge_dtype dt_bool[] = {GE_BOOL, GE_DTYPE_COUNT};
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_bool));
  ge_dtype dt = in_dtype(c, 0);
  const ge_shape *x = in_shape(c, 0), *cs = in_shape(c, 1);
  if (cs->rank != GE_RANK_UNKNOWN && cs->rank != 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "condition must be 1-D, has rank %d", (int)cs->rank);
  int64_t count = GE_DIM_UNKNOWN;
  const ge_tensor *cv = in_value(c, 1);
  const ge_attr_value *a = ge_node_attr(c->node, "axis");
  int64_t ax = -1;
  if (a && x->rank != GE_RANK_UNKNOWN) GE_CHECK(ge_infer_axis(c, a->i, x->rank, &ax));
  if (cv && cv->dtype == GE_BOOL) {
    int64_t limit = -1;
    if (x->rank != GE_RANK_UNKNOWN) {
      if (a) {
        limit = x->dims[ax];
      } else {
        size_t ne;
        if (ge_shape_numel(x, &ne)) limit = (int64_t)ne;
      }
    }
    if (limit >= 0 && (int64_t)cv->numel > limit)
      return ge_infer_fail(c, GE_ERR_SHAPE, "condition has %zu entries, more than the %lld it selects from",
                           cv->numel, (long long)limit);
    const uint8_t *p = cv->data;
    count = 0;
    for (size_t i = 0; i < cv->numel; i++) count += p[i] != 0;
  }
  if (!a) {
    ge_shape s = {0};
    s.rank = 1;
    s.dims[0] = count;
    ge_infer_set(c, 0, dt, &s);
    return GE_OK;
  }
  if (x->rank == GE_RANK_UNKNOWN) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  ge_shape s = *x;
  s.dims[ax] = count;
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_reverse_sequence(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 1, dt_i64));
  const ge_shape *x = in_shape(c, 0), *l = in_shape(c, 1);
  int64_t ba = ge_node_attr_int(c->node, "batch_axis", 1), ta = ge_node_attr_int(c->node, "time_axis", 0);
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "batch_axis %lld and time_axis %lld must be 0 and 1",
                         (long long)ba, (long long)ta);
  if (x->rank != GE_RANK_UNKNOWN) {
    if (x->rank < 2) return ge_infer_fail(c, GE_ERR_SHAPE, "input must have rank >= 2, has %d", (int)x->rank);
    if (l->rank != GE_RANK_UNKNOWN) {
      if (l->rank != 1) return ge_infer_fail(c, GE_ERR_SHAPE, "sequence_lens must be 1-D");
      if (l->dims[0] >= 0 && x->dims[ba] >= 0 && l->dims[0] != x->dims[ba])
        return ge_infer_fail(c, GE_ERR_SHAPE, "sequence_lens has %lld entries, batch is %lld",
                             (long long)l->dims[0], (long long)x->dims[ba]);
    }
  }
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ the table */

const ge_op_schema ge_schemas_shape[] = {
    {"", "Identity", 1, 0, 1, 1, 1, 1, infer_identity},
    {"", "Size", 1, 0, 1, 1, 1, 1, infer_size},
    {"", "Shape", 1, 0, 1, 1, 1, 1, infer_shape_op},
    {"", "Reshape", 5, 0, 2, 2, 1, 1, infer_reshape},
    {"", "Transpose", 1, 0, 1, 1, 1, 1, infer_transpose},
    {"", "Concat", 1, 0, 1, GE_VARIADIC, 1, 1, infer_concat},
    {"", "Split", 1, 12, 1, 2, 1, GE_VARIADIC, infer_split},
    {"", "Split", 13, 0, 1, 2, 1, GE_VARIADIC, infer_split},
    {"", "Slice", 1, 9, 1, 1, 1, 1, infer_slice},
    {"", "Slice", 10, 0, 3, 5, 1, 1, infer_slice},
    {"", "Gather", 1, 0, 2, 2, 1, 1, infer_gather},
    {"", "GatherElements", 11, 0, 2, 2, 1, 1, infer_gather_elements},
    {"", "GatherND", 11, 0, 2, 2, 1, 1, infer_gather_nd},
    {"", "Scatter", 9, 0, 3, 3, 1, 1, infer_scatter_elements},
    {"", "ScatterElements", 11, 0, 3, 3, 1, 1, infer_scatter_elements},
    {"", "ScatterND", 11, 0, 3, 3, 1, 1, infer_scatter_nd},
    {"", "Unsqueeze", 1, 12, 1, 1, 1, 1, infer_unsqueeze},
    {"", "Unsqueeze", 13, 0, 2, 2, 1, 1, infer_unsqueeze},
    {"", "Squeeze", 1, 12, 1, 1, 1, 1, infer_squeeze},
    {"", "Squeeze", 13, 0, 1, 2, 1, 1, infer_squeeze},
    {"", "Expand", 8, 0, 2, 2, 1, 1, infer_expand},
    {"", "Tile", 6, 0, 2, 2, 1, 1, infer_tile},
    {"", "Constant", 1, 0, 0, 0, 1, 1, infer_constant},
    {"", "ConstantOfShape", 9, 0, 1, 1, 1, 1, infer_constant_of_shape},
    {"", "Range", 11, 0, 3, 3, 1, 1, infer_range},
    {"", "EyeLike", 9, 0, 1, 1, 1, 1, infer_eye_like},
    {"", "Pad", 2, 10, 1, 1, 1, 1, infer_pad},
    {"", "Pad", 11, 17, 2, 3, 1, 1, infer_pad},
    {"", "Pad", 18, 0, 2, 4, 1, 1, infer_pad},
    {"", "Trilu", 14, 0, 1, 2, 1, 1, infer_trilu},
    {"", "DepthToSpace", 1, 0, 1, 1, 1, 1, infer_depth_to_space},
    {"", "SpaceToDepth", 1, 0, 1, 1, 1, 1, infer_space_to_depth},
    {"", "OneHot", 9, 0, 3, 3, 1, 1, infer_one_hot},
    {"", "NonZero", 9, 0, 1, 1, 1, 1, infer_non_zero},
    {"", "Compress", 9, 0, 2, 2, 1, 1, infer_compress},
    {"", "ReverseSequence", 10, 0, 2, 2, 1, 1, infer_reverse_sequence},
    {0},
};
