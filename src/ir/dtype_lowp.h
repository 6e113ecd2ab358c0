/* Low-precision dtypes: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 (E2M1), and
 * the 4-bit and 2-bit integers.  ge stores them one element per byte (the code in the low bits,
 * high bits zero: see include/ge/ge.h); ONNX files pack the 4-bit and 2-bit ones.
 * Conversions follow the ONNX Cast spec: round to nearest even; with `saturate` an overflow or
 * an infinity becomes the largest finite value of the sign, without it NaN (E4M3FN and the FNUZ
 * types) or infinity (E5M2).  float4e2m1 has neither NaN nor inf: it always saturates, and NaN
 * becomes -0 (0x8), as ml_dtypes does. */
#ifndef GE_IR_DTYPE_LOWP_H
#define GE_IR_DTYPE_LOWP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ge/ge.h"

bool ge_dtype_is_lowp(ge_dtype dt);       /* any of the dtypes above */
bool ge_dtype_is_lowp_float(ge_dtype dt); /* float8 *, float4e2m1 */
bool ge_dtype_is_lowp_int(ge_dtype dt);   /* uint4 int4 uint2 int2 */
/* Bits per element in ONNX's packed layout (4 or 2; 8 for the float8 types). */
unsigned ge_dtype_lowp_bits(ge_dtype dt);
/* Bytes n elements of dt take in ONNX's packed layout (n * size for the other dtypes); false
   on overflow. */
bool ge_dtype_packed_nbytes(ge_dtype dt, size_t n, size_t *out);
/* ONNX packed bytes <-> ge's one byte per element (masked; unused high bits of the last
   packed byte are zero).  No-op copies for the 8-bit dtypes. */
void ge_lowp_pack(ge_dtype dt, const uint8_t *src, size_t n, uint8_t *dst);
void ge_lowp_unpack(ge_dtype dt, const uint8_t *src, size_t n, uint8_t *dst);

/* E8M0 rounding (Cast's round_mode attribute). */
typedef enum ge_e8m0_round { GE_E8M0_ROUND_UP = 0, GE_E8M0_ROUND_DOWN, GE_E8M0_ROUND_NEAREST } ge_e8m0_round;

/* The value of one element (any low-precision dtype; ints exactly). */
float ge_lowp_to_f32(ge_dtype dt, uint8_t code);
/* float -> code.  Float targets: as the header comment says (E8M0: round_mode "up").  Integer
   targets: Cast's rule, truncate toward zero (NaN -> 0) and wrap to the width. */
uint8_t ge_f32_to_lowp(ge_dtype dt, float f, bool saturate);
uint8_t ge_f32_to_e8m0(float f, bool saturate, ge_e8m0_round mode);
/* Integer value of an int4/uint4/int2/uint2 element (sign-extended). */
int64_t ge_lowp_int_value(ge_dtype dt, uint8_t code);
/* The code of an integer (wrapped to the width: Cast's rule). */
uint8_t ge_lowp_int_code(ge_dtype dt, int64_t v);
/* [lo, hi] of the integer types; of the float types, -max..max finite */
void ge_lowp_int_range(ge_dtype dt, int64_t *lo, int64_t *hi);
float ge_lowp_float_max(ge_dtype dt);

/* Blocks. */
void ge_lowp_to_f32_n(ge_dtype dt, const uint8_t *src, size_t n, float *dst);
void ge_f32_to_lowp_n(ge_dtype dt, const float *src, size_t n, uint8_t *dst, bool saturate,
                      ge_e8m0_round mode);

#endif
