/* dtypes: sizes, names, ONNX codes, and half-precision conversions (bit arithmetic,
 * round to nearest even, NaN/Inf/subnormals preserved). */
#include <string.h>

#include "ir/ir.h"

size_t ge_dtype_size(ge_dtype dt) {
  switch (dt) {
  case GE_F32: return 4;
  case GE_F16: return 2;
  case GE_BF16: return 2;
  case GE_F64: return 8;
  case GE_I8: return 1;
  case GE_I16: return 2;
  case GE_I32: return 4;
  case GE_I64: return 8;
  case GE_U8: return 1;
  case GE_U16: return 2;
  case GE_U32: return 4;
  case GE_U64: return 8;
  case GE_BOOL: return 1;
  case GE_STRING: return sizeof(char *);
  case GE_DTYPE_COUNT: break;
  }
  return 0;
}

const char *ge_dtype_name(ge_dtype dt) {
  switch (dt) {
  case GE_F32: return "float32";
  case GE_F16: return "float16";
  case GE_BF16: return "bfloat16";
  case GE_F64: return "float64";
  case GE_I8: return "int8";
  case GE_I16: return "int16";
  case GE_I32: return "int32";
  case GE_I64: return "int64";
  case GE_U8: return "uint8";
  case GE_U16: return "uint16";
  case GE_U32: return "uint32";
  case GE_U64: return "uint64";
  case GE_BOOL: return "bool";
  case GE_STRING: return "string";
  case GE_DTYPE_COUNT: break;
  }
  return "unknown";
}

bool ge_dtype_from_onnx(int32_t onnx_type, ge_dtype *out) {
  ge_dtype dt;
  switch (onnx_type) {
  case 1: dt = GE_F32; break;
  case 2: dt = GE_U8; break;
  case 3: dt = GE_I8; break;
  case 4: dt = GE_U16; break;
  case 5: dt = GE_I16; break;
  case 6: dt = GE_I32; break;
  case 7: dt = GE_I64; break;
  case 8: dt = GE_STRING; break;
  case 9: dt = GE_BOOL; break;
  case 10: dt = GE_F16; break;
  case 11: dt = GE_F64; break;
  case 12: dt = GE_U32; break;
  case 13: dt = GE_U64; break;
  case 16: dt = GE_BF16; break;
  default: return false;
  }
  if (out) *out = dt;
  return true;
}

int32_t ge_dtype_to_onnx(ge_dtype dt) {
  switch (dt) {
  case GE_F32: return 1;
  case GE_U8: return 2;
  case GE_I8: return 3;
  case GE_U16: return 4;
  case GE_I16: return 5;
  case GE_I32: return 6;
  case GE_I64: return 7;
  case GE_STRING: return 8;
  case GE_BOOL: return 9;
  case GE_F16: return 10;
  case GE_F64: return 11;
  case GE_U32: return 12;
  case GE_U64: return 13;
  case GE_BF16: return 16;
  case GE_DTYPE_COUNT: break;
  }
  return 0; /* UNDEFINED */
}

bool ge_dtype_is_float(ge_dtype dt) {
  return dt == GE_F32 || dt == GE_F16 || dt == GE_BF16 || dt == GE_F64;
}

bool ge_dtype_is_int(ge_dtype dt) {
  switch (dt) {
  case GE_I8: case GE_I16: case GE_I32: case GE_I64:
  case GE_U8: case GE_U16: case GE_U32: case GE_U64:
    return true;
  default:
    return false;
  }
}

/* Signed integers and floats. */
bool ge_dtype_is_signed(ge_dtype dt) {
  switch (dt) {
  case GE_I8: case GE_I16: case GE_I32: case GE_I64:
  case GE_F32: case GE_F16: case GE_BF16: case GE_F64:
    return true;
  default:
    return false;
  }
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float ge_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else { /* subnormal: normalise */
      uint32_t e = 113; /* 127 - 15 + 1 */
      while (!(mant & 0x400u)) {
        mant <<= 1;
        e--;
      }
      mant &= 0x3ffu;
      out = sign | (e << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13); /* inf or NaN (payload kept) */
  } else {
    out = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  return bits_f32(out);
}

uint16_t ge_f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {
    if (x > 0x7f800000u) /* NaN: keep it quiet and keep the top payload bits */
      return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
    return (uint16_t)(sign | 0x7c00u);
  }
  if (x >= 0x47800000u) return (uint16_t)(sign | 0x7c00u); /* >= 65536: overflow */
  if (x < 0x38800000u) {                                    /* below 2^-14: subnormal or 0 */
    uint32_t exp = x >> 23;
    if (exp < 102) return sign; /* < 2^-25: rounds to zero */
    uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp; /* 14..24 */
    uint32_t m = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (m & 1u))) m++;
    return (uint16_t)(sign | m);
  }
  uint32_t h = (x >> 13) - (112u << 10);
  uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into inf: correct */
  return (uint16_t)(sign | h);
}

float ge_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t ge_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}
