/* N-d numpy broadcasting for kernels: an output shape walked row by row, with per-input
 * element strides (0 along broadcast dims).  Adjacent dims that every input walks the same
 * way are merged first, so same-shape inputs become one contiguous row and a scalar becomes
 * one row with stride 0.
 *
 *   ge_bcast b;
 *   GE_CHECK(ge_bcast_init(&b, out->dims, out->rank, ins, n));   // ins: tensors, n <= 4
 *   ge_bcast_iter it;
 *   ge_bcast_begin(&b, &it);
 *   for (size_t r = 0; r < b.rows; r++, ge_bcast_next(&b, &it)) {
 *     // row of b.inner elements: input k starts at element it.off[k] and steps by
 *     // b.step[k] (0 or 1 in the common cases); the output row starts at r * b.inner
 *   }
 */
#ifndef GE_BACKEND_CPU_REF_BROADCAST_H
#define GE_BACKEND_CPU_REF_BROADCAST_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

#define GE_BCAST_MAX_IN 4

typedef struct ge_bcast {
  int rank;                                         /* merged rank, >= 1 */
  size_t n_in;
  int64_t dims[GE_MAX_RANK];                        /* merged output dims */
  ptrdiff_t strides[GE_BCAST_MAX_IN][GE_MAX_RANK];  /* in elements; 0 = broadcast */
  size_t numel;                                     /* output elements */
  size_t inner;                                     /* elements per row: dims[rank-1] */
  size_t rows;                                      /* numel / inner (0 when numel is 0) */
  ptrdiff_t step[GE_BCAST_MAX_IN];                  /* strides[k][rank-1] */
} ge_bcast;

typedef struct ge_bcast_iter {
  int64_t idx[GE_MAX_RANK];
  ptrdiff_t off[GE_BCAST_MAX_IN];  /* element offset of the current row in input k */
} ge_bcast_iter;

/* Sets b up to walk out_dims over the given input shapes (numpy rules: each input's rank
 * <= out_rank and each dim equal to the output's or 1).  GE_ERR_SHAPE (message naming the
 * input and the shapes) when an input does not broadcast to out_dims. */
ge_status ge_bcast_init_dims(ge_bcast *b, const int64_t *out_dims, int out_rank,
                             const int64_t *const *in_dims, const int *in_ranks, size_t n_in);
/* The same from tensors (NULL entries are not allowed). */
ge_status ge_bcast_init(ge_bcast *b, const int64_t *out_dims, int out_rank,
                        const ge_tensor *const *ins, size_t n_in);
/* numpy broadcast of the shapes of n tensors into out_dims/out_rank; GE_ERR_SHAPE naming
 * the shapes when they are incompatible. */
ge_status ge_bcast_shape(const ge_tensor *const *ins, size_t n_in, int64_t *out_dims,
                         int *out_rank);

static inline void ge_bcast_begin(const ge_bcast *b, ge_bcast_iter *it) {
  for (int d = 0; d < b->rank; d++) it->idx[d] = 0;
  for (size_t k = 0; k < b->n_in; k++) it->off[k] = 0;
}

/* Advances to the next row (dims 0..rank-2, innermost first). */
static inline void ge_bcast_next(const ge_bcast *b, ge_bcast_iter *it) {
  for (int d = b->rank - 2; d >= 0; d--) {
    if (++it->idx[d] < b->dims[d]) {
      for (size_t k = 0; k < b->n_in; k++) it->off[k] += b->strides[k][d];
      return;
    }
    for (size_t k = 0; k < b->n_in; k++) it->off[k] -= b->strides[k][d] * (b->dims[d] - 1);
    it->idx[d] = 0;
  }
}

#endif
