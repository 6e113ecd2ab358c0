/* Element moves shared by the shape-family reference kernels. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/shape_util.h"

void ge_ref_free_state(void *state) { free(state); }

void ge_ref_strides(const int64_t *dims, int rank, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d] > 0 ? dims[d] : 1;
  }
}

size_t ge_ref_prod(const int64_t *dims, int from, int to) {
  size_t p = 1;
  for (int d = from; d < to; d++) p *= (size_t)dims[d];
  return p;
}

static ge_status oom(void) { return ge_error(GE_ERR_OUT_OF_MEMORY, "out of memory copying strings"); }

static ge_status set_str(char **dst, const char *src) {
  char *c = NULL;
  if (src && !(c = strdup(src))) return oom();
  free(*dst);
  *dst = c;
  return GE_OK;
}

ge_status ge_ref_copy(void *dst, const void *src, size_t n, ge_dtype dt) {
  if (n == 0 || dst == src) return GE_OK;
  if (dt == GE_STRING) {
    char **d = dst;
    char *const *s = src;
    for (size_t i = 0; i < n; i++) GE_CHECK(set_str(&d[i], s[i]));
    return GE_OK;
  }
  memmove(dst, src, n * ge_dtype_size(dt));
  return GE_OK;
}

ge_status ge_ref_fill(void *dst, const void *val, size_t n, ge_dtype dt) {
  switch (dt == GE_STRING ? 0 : ge_dtype_size(dt)) {
  case 0: {
    char **d = dst;
    const char *v = *(char *const *)val;
    for (size_t i = 0; i < n; i++) GE_CHECK(set_str(&d[i], v));
    return GE_OK;
  }
#define FILL(T)                        \
  {                                    \
    T v, *d = dst;                     \
    memcpy(&v, val, sizeof v);         \
    for (size_t i = 0; i < n; i++) d[i] = v; \
    return GE_OK;                      \
  }
  case 1: FILL(uint8_t)
  case 2: FILL(uint16_t)
  case 4: FILL(uint32_t)
  case 8: FILL(uint64_t)
#undef FILL
  default: return ge_error(GE_ERR_INTERNAL, "fill: bad dtype %d", (int)dt);
  }
}

bool ge_ref_scalar_from_f64(ge_dtype dt, double v, void *out) {
  switch (dt) {
  case GE_F32: { float x = (float)v; memcpy(out, &x, 4); return true; }
  case GE_F64: memcpy(out, &v, 8); return true;
  case GE_F16: { uint16_t x = ge_f32_to_f16((float)v); memcpy(out, &x, 2); return true; }
  case GE_BF16: { uint16_t x = ge_f32_to_bf16((float)v); memcpy(out, &x, 2); return true; }
#define INT(T) { T x = (T)v; memcpy(out, &x, sizeof x); return true; }
  case GE_I8: INT(int8_t)
  case GE_I16: INT(int16_t)
  case GE_I32: INT(int32_t)
  case GE_I64: INT(int64_t)
  case GE_U8: INT(uint8_t)
  case GE_U16: INT(uint16_t)
  case GE_U32: INT(uint32_t)
  case GE_U64: INT(uint64_t)
#undef INT
  case GE_BOOL: { uint8_t x = v != 0; memcpy(out, &x, 1); return true; }
  default: return false;
  }
}

/* The loop over all but the innermost dim; `n1`/`st1` are the innermost size and stride. */
#define STRIDED_LOOP(T, INNER)                                               \
  do {                                                                       \
    T *d = (T *)dst;                                                         \
    const T *s = (const T *)src;                                             \
    for (size_t o = 0; o < outer; o++) {                                     \
      const T *sp = s + off;                                                 \
      INNER;                                                                 \
      d += n1;                                                               \
      for (int k = r - 2; k >= 0; k--) {                                     \
        off += st[k];                                                        \
        if (++idx[k] < dm[k]) break;                                         \
        off -= st[k] * dm[k];                                                \
        idx[k] = 0;                                                          \
      }                                                                      \
    }                                                                        \
  } while (0)

#define INNER_NUM(T)                                                  \
  if (st1 == 1)                                                       \
    memcpy(d, sp, (size_t)n1 * sizeof(T));                            \
  else if (st1 == 0) {                                                \
    T v = *sp;                                                        \
    for (int64_t j = 0; j < n1; j++) d[j] = v;                        \
  } else                                                              \
    for (int64_t j = 0; j < n1; j++) d[j] = sp[j * st1]

#define INNER_STR                                                     \
  for (int64_t j = 0; j < n1; j++) {                                  \
    if (set_str(&d[j], sp[j * st1]) != GE_OK) return oom();           \
  }

/* Transposes blocks: when the source's contiguous dim is not the innermost, copy 2-D tiles
   so that both reads and writes stay within a few cache lines. */
#define TILE 32
#define TILED_LOOP(T)                                                               \
  do {                                                                              \
    T *d = (T *)dst;                                                                \
    const T *s = (const T *)src;                                                    \
    for (size_t o = 0; o < outer; o++) {                                            \
      const T *sp = s + off;                                                        \
      for (int64_t a0 = 0; a0 < na; a0 += TILE)                                     \
        for (int64_t b0 = 0; b0 < n1; b0 += TILE) {                                 \
          int64_t ae = a0 + TILE < na ? a0 + TILE : na;                             \
          int64_t be = b0 + TILE < n1 ? b0 + TILE : n1;                             \
          for (int64_t a = a0; a < ae; a++)                                         \
            for (int64_t b = b0; b < be; b++) d[a * n1 + b] = sp[a * sa + b * st1]; \
        }                                                                           \
      d += na * n1;                                                                 \
      for (int k = r - 3; k >= 0; k--) {                                            \
        off += st[k];                                                               \
        if (++idx[k] < dm[k]) break;                                                \
        off -= st[k] * dm[k];                                                       \
        idx[k] = 0;                                                                 \
      }                                                                             \
    }                                                                               \
  } while (0)

ge_status ge_ref_strided_copy(void *dst, const void *src, ge_dtype dt, int rank, const int64_t *dims,
                              const int64_t *sstr, int64_t off) {
  int64_t dm[GE_REF_MAX_DIMS], st[GE_REF_MAX_DIMS], idx[GE_REF_MAX_DIMS] = {0};
  int r = 0;
  if (rank > GE_REF_MAX_DIMS) return ge_error(GE_ERR_INTERNAL, "strided copy of rank %d", rank);
  /* drop size-1 dims, merge dims that are contiguous in the source */
  for (int i = 0; i < rank; i++) {
    if (dims[i] == 0) return GE_OK;
    if (dims[i] == 1) continue;
    if (r > 0 && st[r - 1] == sstr[i] * dims[i]) {
      dm[r - 1] *= dims[i];
      st[r - 1] = sstr[i];
      continue;
    }
    dm[r] = dims[i];
    st[r] = sstr[i];
    r++;
  }
  if (r == 0) {
    dm[0] = 1;
    st[0] = 1;
    r = 1;
  }
  int64_t n1 = dm[r - 1], st1 = st[r - 1];
  size_t outer = 1;
  for (int i = 0; i < r - 1; i++) outer *= (size_t)dm[i];
  size_t es = dt == GE_STRING ? 0 : ge_dtype_size(dt);
  if (r >= 2 && st1 != 1 && st[r - 2] == 1 && es != 0 && n1 >= 8 && dm[r - 2] >= 8) {
    int64_t na = dm[r - 2], sa = st[r - 2];
    outer /= (size_t)na;
    switch (es) {
    case 1: TILED_LOOP(uint8_t); return GE_OK;
    case 2: TILED_LOOP(uint16_t); return GE_OK;
    case 4: TILED_LOOP(uint32_t); return GE_OK;
    case 8: TILED_LOOP(uint64_t); return GE_OK;
    default: break;
    }
  }
  switch (es) {
  case 0: {
    char **d = dst;
    char *const *s = src;
    for (size_t o = 0; o < outer; o++) {
      char *const *sp = s + off;
      INNER_STR;
      d += n1;
      for (int k = r - 2; k >= 0; k--) {
        off += st[k];
        if (++idx[k] < dm[k]) break;
        off -= st[k] * dm[k];
        idx[k] = 0;
      }
    }
    return GE_OK;
  }
  case 1: STRIDED_LOOP(uint8_t, INNER_NUM(uint8_t)); return GE_OK;
  case 2: STRIDED_LOOP(uint16_t, INNER_NUM(uint16_t)); return GE_OK;
  case 4: STRIDED_LOOP(uint32_t, INNER_NUM(uint32_t)); return GE_OK;
  case 8: STRIDED_LOOP(uint64_t, INNER_NUM(uint64_t)); return GE_OK;
  default: return ge_error(GE_ERR_INTERNAL, "strided copy: bad dtype %d", (int)dt);
  }
}
