/* ONNX Slice arithmetic for one axis, shared by shape inference (ops/shape.c) and the Slice
 * kernels (backend/cpu/ref/shape.c, backend/cpu/fast/move.c). */
#ifndef GE_OPS_SLICE_AXIS_H
#define GE_OPS_SLICE_AXIS_H

#include <stdint.h>

/* An axis of size dim >= 0 sliced from start to end (negative: counted from the end) by
 * step != 0: start and end are clamped to the axis (to [0, dim] for a positive step, to
 * [0, dim - 1] / [-1, dim - 1] for a negative one).  Returns the number of elements taken and
 * sets *first to the first index read (0 when none is). */
static inline int64_t ge_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first) {
  int64_t len;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (dim == 0) {
    len = 0;
  } else if (step > 0) {
    start = start < 0 ? 0 : start > dim ? dim : start;
    end = end < 0 ? 0 : end > dim ? dim : end;
    len = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
    end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
    len = start > end ? (start - end - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1 : 0;
  }
  *first = len > 0 ? start : 0;
  return len;
}

#endif
