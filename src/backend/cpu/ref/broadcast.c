/* N-d numpy broadcasting for kernels (see broadcast.h). */
#include "backend/cpu/ref/broadcast.h"

#include <stdio.h>
#include <string.h>

static void dims_str(const int64_t *d, int r, char *buf, size_t cap) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, cap - n, "[");
  for (int i = 0; i < r && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)d[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

ge_status ge_bcast_init_dims(ge_bcast *b, const int64_t *out_dims, int out_rank,
                             const int64_t *const *in_dims, const int *in_ranks, size_t n_in) {
  if (n_in > GE_BCAST_MAX_IN || out_rank < 0 || out_rank > GE_MAX_RANK)
    return ge_error(GE_ERR_INTERNAL, "broadcast: %zu inputs, rank %d", n_in, out_rank);
  memset(b, 0, sizeof *b);
  b->n_in = n_in;
  /* full-rank strides per input */
  int64_t od[GE_MAX_RANK];
  ptrdiff_t st[GE_BCAST_MAX_IN][GE_MAX_RANK];
  size_t numel = 1;
  for (int d = 0; d < out_rank; d++) {
    od[d] = out_dims[d];
    if (od[d] < 0 || ge_mul_overflow_size(numel, (size_t)od[d], &numel))
      return ge_error(GE_ERR_SHAPE, "broadcast: bad output dim %lld", (long long)od[d]);
  }
  for (size_t k = 0; k < n_in; k++) {
    int r = in_ranks[k];
    if (r > out_rank || r < 0) goto bad;
    ptrdiff_t s = 1;
    for (int d = out_rank - 1; d >= 0; d--) {
      int id = d - (out_rank - r);
      int64_t dim = id >= 0 ? in_dims[k][id] : 1;
      if (dim == od[d]) {
        st[k][d] = dim == 1 ? 0 : s;
      } else if (dim == 1) {
        st[k][d] = 0;
      } else {
        char a[160], o[160];
      bad:
        dims_str(in_dims[k], in_ranks[k], a, sizeof a);
        dims_str(out_dims, out_rank, o, sizeof o);
        return ge_error(GE_ERR_SHAPE, "input %zu of shape %s does not broadcast to %s", k, a, o);
      }
      s *= (ptrdiff_t)dim;
    }
  }
  /* drop size-1 dims, merge dims that every input walks contiguously */
  int r = 0;
  for (int d = 0; d < out_rank; d++) {
    if (od[d] == 1) continue;
    if (r > 0) {
      bool merge = true;
      for (size_t k = 0; k < n_in && merge; k++)
        merge = st[k][d] * (ptrdiff_t)od[d] == b->strides[k][r - 1] ||
                (st[k][d] == 0 && b->strides[k][r - 1] == 0);
      /* merging (a, b) needs stride(a) == stride(b) * dim(b) for every input */
      if (merge) {
        for (size_t k = 0; k < n_in; k++) b->strides[k][r - 1] = st[k][d];
        b->dims[r - 1] *= od[d];
        continue;
      }
    }
    b->dims[r] = od[d];
    for (size_t k = 0; k < n_in; k++) b->strides[k][r] = st[k][d];
    r++;
  }
  if (r == 0) {
    b->dims[0] = 1;
    for (size_t k = 0; k < n_in; k++) b->strides[k][0] = 0;
    r = 1;
  }
  b->rank = r;
  b->numel = numel;
  b->inner = (size_t)b->dims[r - 1];
  b->rows = numel == 0 ? 0 : numel / b->inner;
  for (size_t k = 0; k < n_in; k++) b->step[k] = b->strides[k][r - 1];
  return GE_OK;
}

ge_status ge_bcast_init(ge_bcast *b, const int64_t *out_dims, int out_rank,
                        const ge_tensor *const *ins, size_t n_in) {
  const int64_t *dims[GE_BCAST_MAX_IN];
  int ranks[GE_BCAST_MAX_IN];
  if (n_in > GE_BCAST_MAX_IN) return ge_error(GE_ERR_INTERNAL, "broadcast: %zu inputs", n_in);
  for (size_t k = 0; k < n_in; k++) {
    dims[k] = ins[k]->dims;
    ranks[k] = ins[k]->rank;
  }
  return ge_bcast_init_dims(b, out_dims, out_rank, dims, ranks, n_in);
}

ge_status ge_bcast_shape(const ge_tensor *const *ins, size_t n_in, int64_t *out_dims,
                         int *out_rank) {
  int r = 0;
  for (size_t k = 0; k < n_in; k++)
    if (ins[k]->rank > r) r = ins[k]->rank;
  for (int d = 0; d < r; d++) out_dims[d] = 1;
  for (size_t k = 0; k < n_in; k++) {
    int off = r - ins[k]->rank;
    for (int d = 0; d < ins[k]->rank; d++) {
      int64_t x = ins[k]->dims[d], *o = &out_dims[d + off];
      if (x == *o || x == 1) continue;
      if (*o == 1) {
        *o = x;
        continue;
      }
      char a[160];
      dims_str(ins[k]->dims, ins[k]->rank, a, sizeof a);
      return ge_error(GE_ERR_SHAPE, "input %zu of shape %s does not broadcast with the others",
                      k, a);
    }
  }
  *out_rank = r;
  return GE_OK;
}
