/* dtypes: sizes, names, ONNX codes, and half-precision conversions (bit arithmetic,
 * round to nearest even, NaN/Inf/subnormals preserved). */
#include <string.h>

#include "ir/dtype_lowp.h"
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
  case GE_F8E4M3FN: case GE_F8E4M3FNUZ: case GE_F8E5M2: case GE_F8E5M2FNUZ: case GE_F8E8M0:
  case GE_U4: case GE_I4: case GE_F4E2M1: case GE_U2: case GE_I2:
    return 1; /* one element per byte (see ge.h) */
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
  case GE_F8E4M3FN: return "float8e4m3fn";
  case GE_F8E4M3FNUZ: return "float8e4m3fnuz";
  case GE_F8E5M2: return "float8e5m2";
  case GE_F8E5M2FNUZ: return "float8e5m2fnuz";
  case GE_F8E8M0: return "float8e8m0";
  case GE_U4: return "uint4";
  case GE_I4: return "int4";
  case GE_F4E2M1: return "float4e2m1";
  case GE_U2: return "uint2";
  case GE_I2: return "int2";
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
  case 17: dt = GE_F8E4M3FN; break;
  case 18: dt = GE_F8E4M3FNUZ; break;
  case 19: dt = GE_F8E5M2; break;
  case 20: dt = GE_F8E5M2FNUZ; break;
  case 21: dt = GE_U4; break;
  case 22: dt = GE_I4; break;
  case 23: dt = GE_F4E2M1; break;
  case 24: dt = GE_F8E8M0; break;
  case 25: dt = GE_U2; break;
  case 26: dt = GE_I2; break;
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
  case GE_F8E4M3FN: return 17;
  case GE_F8E4M3FNUZ: return 18;
  case GE_F8E5M2: return 19;
  case GE_F8E5M2FNUZ: return 20;
  case GE_U4: return 21;
  case GE_I4: return 22;
  case GE_F4E2M1: return 23;
  case GE_F8E8M0: return 24;
  case GE_U2: return 25;
  case GE_I2: return 26;
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

float ge_bf16_to_f32(uint16_t h) { return ge_bf16_to_f32_inline(h); }

uint16_t ge_f32_to_bf16(float f) { return ge_f32_to_bf16_inline(f); }

/* ------------------------------------------------------------------ low-precision dtypes */

bool ge_dtype_is_lowp(ge_dtype dt) { return dt >= GE_F8E4M3FN && dt <= GE_I2; }

bool ge_dtype_is_lowp_float(ge_dtype dt) {
  switch (dt) {
  case GE_F8E4M3FN: case GE_F8E4M3FNUZ: case GE_F8E5M2: case GE_F8E5M2FNUZ: case GE_F8E8M0:
  case GE_F4E2M1:
    return true;
  default:
    return false;
  }
}

bool ge_dtype_is_lowp_int(ge_dtype dt) {
  return dt == GE_U4 || dt == GE_I4 || dt == GE_U2 || dt == GE_I2;
}

unsigned ge_dtype_lowp_bits(ge_dtype dt) {
  switch (dt) {
  case GE_U4: case GE_I4: case GE_F4E2M1: return 4;
  case GE_U2: case GE_I2: return 2;
  default: return 8;
  }
}

bool ge_dtype_packed_nbytes(ge_dtype dt, size_t n, size_t *out) {
  switch (ge_dtype_lowp_bits(dt)) {
  case 4: *out = n / 2 + (n & 1); return true;
  case 2: *out = n / 4 + ((n & 3) != 0); return true;
  default: return !ge_mul_overflow_size(n, ge_dtype_size(dt), out);
  }
}

void ge_lowp_pack(ge_dtype dt, const uint8_t *src, size_t n, uint8_t *dst) {
  unsigned bits = ge_dtype_lowp_bits(dt);
  if (bits == 4) {
    size_t i = 0;
    for (; i + 1 < n; i += 2) dst[i / 2] = (uint8_t)((src[i] & 0xfu) | (unsigned)(src[i + 1] & 0xfu) << 4);
    if (i < n) dst[i / 2] = (uint8_t)(src[i] & 0xfu);
  } else if (bits == 2) {
    size_t nb = n / 4 + ((n & 3) != 0);
    for (size_t b = 0; b < nb; b++) {
      unsigned v = 0;
      for (size_t k = 0; k < 4 && b * 4 + k < n; k++) v |= (unsigned)(src[b * 4 + k] & 3u) << (2 * k);
      dst[b] = (uint8_t)v;
    }
  } else if (n && dst != src) {
    memmove(dst, src, n);
  }
}

void ge_lowp_unpack(ge_dtype dt, const uint8_t *src, size_t n, uint8_t *dst) {
  unsigned bits = ge_dtype_lowp_bits(dt);
  if (bits == 4) {
    for (size_t i = 0; i < n; i++) dst[i] = (uint8_t)((src[i / 2] >> (4 * (i & 1))) & 0xfu);
  } else if (bits == 2) {
    for (size_t i = 0; i < n; i++) dst[i] = (uint8_t)((src[i / 4] >> (2 * (i & 3))) & 3u);
  } else if (n && dst != src) {
    memmove(dst, src, n);
  }
}

/* A small float format: 1 sign bit, exponent, mbits mantissa bits. */
typedef struct lp_fmt {
  int mbits, bias;
  uint8_t sign_bit; /* 0x80, or 0x08 for float4 */
  uint8_t max_mag;  /* largest finite magnitude code */
  uint8_t nan;      /* NaN magnitude code; 0: none (float4) */
  uint8_t inf;      /* inf magnitude code; 0: none */
  bool fnuz;        /* NaN is 0x80, there is no -0 */
} lp_fmt;

static const lp_fmt *lp_format(ge_dtype dt) {
  static const lp_fmt e4m3fn = {3, 7, 0x80, 0x7e, 0x7f, 0, false};
  static const lp_fmt e4m3fnuz = {3, 8, 0x80, 0x7f, 0x80, 0, true};
  static const lp_fmt e5m2 = {2, 15, 0x80, 0x7b, 0x7e, 0x7c, false};
  static const lp_fmt e5m2fnuz = {2, 16, 0x80, 0x7f, 0x80, 0, true};
  static const lp_fmt e2m1 = {1, 1, 0x08, 0x07, 0, 0, false};
  switch (dt) {
  case GE_F8E4M3FN: return &e4m3fn;
  case GE_F8E4M3FNUZ: return &e4m3fnuz;
  case GE_F8E5M2: return &e5m2;
  case GE_F8E5M2FNUZ: return &e5m2fnuz;
  case GE_F4E2M1: return &e2m1;
  default: return NULL;
  }
}

static float lp_decode(const lp_fmt *f, unsigned code) {
  code &= (unsigned)f->sign_bit * 2u - 1u;
  if (f->fnuz && code == 0x80u) return bits_f32(0x7fc00000u);
  bool neg = (code & f->sign_bit) != 0;
  unsigned mag = code & (f->sign_bit - 1u);
  if (f->inf && mag >= f->inf)
    return bits_f32((neg ? 0x80000000u : 0u) | (mag == f->inf ? 0x7f800000u : 0x7fc00000u));
  if (!f->inf && !f->fnuz && f->nan && mag == f->nan) return bits_f32(0x7fc00000u);
  unsigned ef = mag >> f->mbits, mf = mag & ((1u << f->mbits) - 1u);
  uint32_t out;
  if (ef == 0) {
    if (mf == 0) {
      out = 0;
    } else { /* subnormal: normalise (the value is a normal float32) */
      int e = 1 - f->bias;
      while (!(mf & (1u << f->mbits))) {
        mf <<= 1;
        e--;
      }
      mf &= (1u << f->mbits) - 1u;
      out = (uint32_t)(e + 127) << 23 | (uint32_t)mf << (23 - f->mbits);
    }
  } else {
    out = (uint32_t)((int)ef - f->bias + 127) << 23 | (uint32_t)mf << (23 - f->mbits);
  }
  return bits_f32((neg ? 0x80000000u : 0u) | out);
}

static uint8_t lp_encode(const lp_fmt *f, float x, bool saturate) {
  uint32_t u = f32_bits(x), a = u & 0x7fffffffu;
  uint8_t sign = (u >> 31) ? f->sign_bit : 0;
  if (a > 0x7f800000u) { /* NaN */
    if (f->fnuz) return 0x80;
    if (f->nan) return (uint8_t)(f->nan | sign);
    return f->sign_bit; /* float4 has no NaN: -0, as ml_dtypes does */
  }
  uint8_t over; /* what an overflow (or an infinity) becomes */
  if (saturate || (!f->nan && !f->inf))
    over = (uint8_t)(f->max_mag | sign);
  else if (f->inf)
    over = (uint8_t)(f->inf | sign);
  else if (f->fnuz)
    over = 0x80;
  else
    over = (uint8_t)(f->nan | sign);
  if (a == 0x7f800000u) return over;
  if (a == 0) return f->fnuz ? 0 : sign;
  int e = (int)(a >> 23) - 127;
  uint32_t m = a & 0x7fffffu;
  if (a >> 23)
    m |= 0x800000u;
  else
    e = -126;
  int emin = 1 - f->bias;
  int ue = (e < emin ? emin : e) - f->mbits; /* exponent of the result's last bit */
  int rs = ue - (e - 23);                    /* > 0 */
  uint32_t q = 0;
  if (rs <= 25) {
    uint32_t rem = m & ((1u << rs) - 1u), half = 1u << (rs - 1);
    q = m >> rs;
    if (rem > half || (rem == half && (q & 1u))) q++;
  }
  int64_t code = e < emin ? (int64_t)q
                          : ((int64_t)(e + f->bias) << f->mbits) + (int64_t)q - (1 << f->mbits);
  if (code > f->max_mag) return over;
  if (code == 0) return f->fnuz ? 0 : sign;
  return (uint8_t)((uint8_t)code | sign);
}

int64_t ge_lowp_int_value(ge_dtype dt, uint8_t code) {
  switch (dt) {
  case GE_U4: return code & 0xf;
  case GE_I4: return (code & 0x8) ? (int64_t)(code & 0xf) - 16 : (int64_t)(code & 0xf);
  case GE_U2: return code & 0x3;
  case GE_I2: return (code & 0x2) ? (int64_t)(code & 0x3) - 4 : (int64_t)(code & 0x3);
  default: return 0;
  }
}

uint8_t ge_lowp_int_code(ge_dtype dt, int64_t v) {
  return (uint8_t)((uint64_t)v & (ge_dtype_lowp_bits(dt) == 2 ? 3u : 0xfu));
}

void ge_lowp_int_range(ge_dtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case GE_U4: *lo = 0; *hi = 15; break;
  case GE_I4: *lo = -8; *hi = 7; break;
  case GE_U2: *lo = 0; *hi = 3; break;
  case GE_I2: *lo = -2; *hi = 1; break;
  default: *lo = 0; *hi = 0; break;
  }
}

float ge_lowp_float_max(ge_dtype dt) {
  if (dt == GE_F8E8M0) return bits_f32(0x7f000000u); /* 2^127 */
  const lp_fmt *f = lp_format(dt);
  return f ? lp_decode(f, f->max_mag) : 0.0f;
}

static float e8m0_decode(uint8_t code) {
  if (code == 0xff) return bits_f32(0x7fc00000u);
  return bits_f32(code ? (uint32_t)code << 23 : 0x00400000u);
}

uint8_t ge_f32_to_e8m0(float f, bool saturate, ge_e8m0_round mode) {
  uint32_t u = f32_bits(f), ex = (u >> 23) & 0xffu;
  if (ex == 0xffu) return 0xff;
  uint32_t inc = 0;
  if (mode == GE_E8M0_ROUND_UP) {
    inc = (u & 0x7fffffu) != 0;
  } else if (mode == GE_E8M0_ROUND_NEAREST) {
    bool g = u & 0x400000u, r = u & 0x200000u, s = u & 0x1fffffu, lsb = ex > 0;
    inc = g && (r || s || lsb);
  }
  if (saturate && ex == 0xfeu) inc = 0;
  return (uint8_t)(ex + inc);
}

/* float -> int64 truncating toward zero (NaN 0, saturating at the int64 range). */
static int64_t trunc_i64(float x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0f) return INT64_MAX;
  if (x <= -9223372036854775808.0f) return INT64_MIN;
  return (int64_t)x;
}

float ge_lowp_to_f32(ge_dtype dt, uint8_t code) {
  if (dt == GE_F8E8M0) return e8m0_decode(code);
  const lp_fmt *f = lp_format(dt);
  if (f) return lp_decode(f, code);
  return (float)ge_lowp_int_value(dt, code);
}

uint8_t ge_f32_to_lowp(ge_dtype dt, float x, bool saturate) {
  if (dt == GE_F8E8M0) return ge_f32_to_e8m0(x, saturate, GE_E8M0_ROUND_UP);
  const lp_fmt *f = lp_format(dt);
  if (f) return lp_encode(f, x, saturate);
  return ge_lowp_int_code(dt, trunc_i64(x));
}

void ge_lowp_to_f32_n(ge_dtype dt, const uint8_t *src, size_t n, float *dst) {
  if (n >= 256) { /* a table of the 256 codes */
    float tab[256];
    for (unsigned c = 0; c < 256; c++) tab[c] = ge_lowp_to_f32(dt, (uint8_t)c);
    for (size_t i = 0; i < n; i++) dst[i] = tab[src[i]];
    return;
  }
  for (size_t i = 0; i < n; i++) dst[i] = ge_lowp_to_f32(dt, src[i]);
}

void ge_f32_to_lowp_n(ge_dtype dt, const float *src, size_t n, uint8_t *dst, bool saturate,
                      ge_e8m0_round mode) {
  const lp_fmt *f = lp_format(dt);
  if (dt == GE_F8E8M0) {
    for (size_t i = 0; i < n; i++) dst[i] = ge_f32_to_e8m0(src[i], saturate, mode);
  } else if (f) {
    for (size_t i = 0; i < n; i++) dst[i] = lp_encode(f, src[i], saturate);
  } else {
    for (size_t i = 0; i < n; i++) dst[i] = ge_lowp_int_code(dt, trunc_i64(src[i]));
  }
}
