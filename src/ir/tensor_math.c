/* Elementwise arithmetic on whole tensors that the runtime itself needs (variables'
 * AssignAdd/AssignSub), shared with the kernels that compute the same. */
#include "ir/ir.h"

#define ADDSUB_LOOP(T)                                              \
  do {                                                              \
    T *d = (T *)dst->data;                                          \
    const T *x = (const T *)a->data, *y = (const T *)b->data;       \
    if (sub)                                                        \
      for (size_t i = 0; i < n; i++) d[i] = (T)(x[i] - y[i]);       \
    else                                                            \
      for (size_t i = 0; i < n; i++) d[i] = (T)(x[i] + y[i]);       \
  } while (0)

bool ge_tensor_add_sub(ge_tensor *dst, const ge_tensor *a, const ge_tensor *b, bool sub) {
  size_t n = a->numel;
  switch (a->dtype) {
  case GE_F32: ADDSUB_LOOP(float); break;
  case GE_F64: ADDSUB_LOOP(double); break;
  case GE_I8: ADDSUB_LOOP(int8_t); break;
  case GE_I16: ADDSUB_LOOP(int16_t); break;
  case GE_I32: ADDSUB_LOOP(int32_t); break;
  case GE_I64: ADDSUB_LOOP(int64_t); break;
  case GE_U8: ADDSUB_LOOP(uint8_t); break;
  case GE_U16: ADDSUB_LOOP(uint16_t); break;
  case GE_U32: ADDSUB_LOOP(uint32_t); break;
  case GE_U64: ADDSUB_LOOP(uint64_t); break;
  case GE_F16:
  case GE_BF16: {
    bool h = a->dtype == GE_F16;
    uint16_t *d = dst->data;
    const uint16_t *x = a->data, *y = b->data;
    for (size_t i = 0; i < n; i++) {
      float fa = h ? ge_f16_to_f32(x[i]) : ge_bf16_to_f32(x[i]);
      float fb = h ? ge_f16_to_f32(y[i]) : ge_bf16_to_f32(y[i]);
      float r = sub ? fa - fb : fa + fb;
      d[i] = h ? ge_f32_to_f16(r) : ge_f32_to_bf16(r);
    }
    break;
  }
  default:
    return false;
  }
  return true;
}
