/* Reference CPU kernels of the elementwise family.
 *
 * Every op is a table of row functions indexed by dtype, generated from one expression per
 * dtype class with the macros below; a kernel looks its row function up once per run and
 * calls it once per broadcast row (never per element).  f16/bf16 compute in f32 in blocks of
 * GE_EW_BLOCK elements.  Same-shape and scalar-broadcast inputs reduce to one contiguous row
 * (see broadcast.h), which the inner loops handle with plain restrict loops. */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "backend/cpu/cpu_dispatch.h"
#include "backend/cpu/ref/broadcast.h"
#include "backend/cpu/ref/ew_common.h"

/* ------------------------------------------------------------------ shared helpers */

void ge_ew_half_to_f32(ge_dtype dt, const uint16_t *src, ptrdiff_t stride, size_t n, float *dst) {
  if (dt == GE_F16)
    for (size_t i = 0; i < n; i++) dst[i] = ge_f16_to_f32(src[(ptrdiff_t)i * stride]);
  else
    for (size_t i = 0; i < n; i++) dst[i] = ge_bf16_to_f32(src[(ptrdiff_t)i * stride]);
}

void ge_ew_f32_to_half(ge_dtype dt, const float *src, size_t n, uint16_t *dst) {
  if (dt == GE_F16)
    for (size_t i = 0; i < n; i++) dst[i] = ge_f32_to_f16(src[i]);
  else
    for (size_t i = 0; i < n; i++) dst[i] = ge_f32_to_bf16(src[i]);
}

typedef struct ew_params {
  float alpha, beta, gamma;
  int mode;
} ew_params;

/* ------------------------------------------------------------------ unary row functions */

typedef void (*un_fn)(size_t n, const void *a, void *o, const ew_params *p);

#define UN_DEF(op, TAG, T, TO, EXPR)                                                     \
  static void op##_##TAG(size_t n, const void *va, void *vo, const ew_params *p) {       \
    typedef T ew_t; /* EXPR may name the element type */                                \
    const ew_t *a = va; /* o may be a: in place */                                      \
    TO *o = vo;                                                                          \
    GE_IVDEP for (size_t i = 0; i < n; i++) {                                            \
      T x = a[i];                                                                        \
      o[i] = (TO)(EXPR);                                                                 \
    }                                                                                    \
  }

/* float ops: T is float or double; <tgmath.h> picks expf/exp */
#define UNF(op, EXPR)                                 \
  UN_DEF(op, F32, float, float, EXPR)                 \
  UN_DEF(op, F64, double, double, EXPR)
#define UNSI(op, EXPR)                                \
  UN_DEF(op, I8, int8_t, int8_t, EXPR)                \
  UN_DEF(op, I16, int16_t, int16_t, EXPR)             \
  UN_DEF(op, I32, int32_t, int32_t, EXPR)             \
  UN_DEF(op, I64, int64_t, int64_t, EXPR)
#define UNUI(op, EXPR)                                \
  UN_DEF(op, U8, uint8_t, uint8_t, EXPR)              \
  UN_DEF(op, U16, uint16_t, uint16_t, EXPR)           \
  UN_DEF(op, U32, uint32_t, uint32_t, EXPR)           \
  UN_DEF(op, U64, uint64_t, uint64_t, EXPR)

#define F_FN(op) [GE_F32] = op##_F32, [GE_F64] = op##_F64
#define SI_FN(op) [GE_I8] = op##_I8, [GE_I16] = op##_I16, [GE_I32] = op##_I32, [GE_I64] = op##_I64
#define UI_FN(op) [GE_U8] = op##_U8, [GE_U16] = op##_U16, [GE_U32] = op##_U32, [GE_U64] = op##_U64

/* negation without signed overflow: wraps like two's complement */
#define NEG_WRAP(x) (-(uint64_t)(x))

UNF(Abs, fabs(x))
UNSI(Abs, x < 0 ? NEG_WRAP(x) : (uint64_t)x)
UNUI(Abs, x)
UNF(Neg, -x)
UNSI(Neg, NEG_WRAP(x))
UNF(Reciprocal, 1 / x)
UNF(Sqrt, sqrt(x))
UNF(Exp, exp(x))
UNF(Log, log(x))
UNF(Floor, floor(x))
UNF(Ceil, ceil(x))
UNF(Round, nearbyint(x))
UNF(Sign, x > 0 ? 1 : (x < 0 ? -1 : (x == 0 ? 0 : x)))
UNSI(Sign, (x > 0) - (x < 0))
UNUI(Sign, x > 0)
UNF(Erf, erf(x))
UNSI(Erf, erf((double)x))
UNUI(Erf, erf((double)x))
UNF(Sin, sin(x))
UNF(Cos, cos(x))
UNF(Tan, tan(x))
UNF(Asin, asin(x))
UNF(Acos, acos(x))
UNF(Atan, atan(x))
UNF(Sinh, sinh(x))
UNF(Cosh, cosh(x))
UNF(Asinh, asinh(x))
UNF(Acosh, acosh(x))
UNF(Atanh, atanh(x))
UN_DEF(IsNaN, F32, float, uint8_t, x != x)
UN_DEF(IsNaN, F64, double, uint8_t, x != x)
UN_DEF(IsInf, F32, float, uint8_t,
       (x == INFINITY && (p->mode & 2)) || (x == -INFINITY && (p->mode & 1)))
UN_DEF(IsInf, F64, double, uint8_t,
       (x == INFINITY && (p->mode & 2)) || (x == -INFINITY && (p->mode & 1)))
UN_DEF(Not, BOOL, uint8_t, uint8_t, !x)
UNSI(BitwiseNot, ~x)
UNUI(BitwiseNot, ~x)
/* activations */
UNF(Relu, x > 0 ? x : 0)
UNSI(Relu, x > 0 ? x : 0)
UNF(LeakyRelu, x < 0 ? p->alpha * x : x)
UNF(Sigmoid, x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)))
UNF(HardSigmoid, fmax((ew_t)0, fmin((ew_t)1, p->alpha * x + p->beta)))
UNF(HardSwish, x * fmax((ew_t)0, fmin((ew_t)1, x / 6 + (ew_t)0.5)))
UNF(Tanh, tanh(x))
UNF(Elu, x < 0 ? p->alpha * (exp(x) - 1) : x)
UNF(Selu, x > 0 ? p->gamma * x : p->gamma * (p->alpha * exp(x) - p->alpha))
UNF(Celu, fmax((ew_t)0, x) + fmin((ew_t)0, p->alpha * (exp(x / p->alpha) - 1)))
UNF(Softplus, x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)))
UNF(Softsign, x / (1 + fabs(x)))
UNF(ThresholdedRelu, x > p->alpha ? x : 0)
UNF(Gelu, p->mode ? (ew_t)0.5 * x *
                        (1 + tanh((ew_t)0.7978845608028654 * (x + (ew_t)0.044715 * x * x * x)))
                  : (ew_t)0.5 * x * (1 + erf(x * (ew_t)0.7071067811865476)))
UNF(Mish, x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))))
UNF(Swish, x * (p->alpha * x >= 0 ? 1 / (1 + exp(-p->alpha * x))
                                  : exp(p->alpha * x) / (1 + exp(p->alpha * x))))

typedef struct un_op {
  const char *name;
  un_fn fn[GE_DTYPE_COUNT];
  bool bool_out;
} un_op;

static const un_op un_ops[] = {
    {"Abs", {F_FN(Abs), SI_FN(Abs), UI_FN(Abs)}, false},
    {"Neg", {F_FN(Neg), SI_FN(Neg)}, false},
    {"Reciprocal", {F_FN(Reciprocal)}, false},
    {"Sqrt", {F_FN(Sqrt)}, false},
    {"Exp", {F_FN(Exp)}, false},
    {"Log", {F_FN(Log)}, false},
    {"Floor", {F_FN(Floor)}, false},
    {"Ceil", {F_FN(Ceil)}, false},
    {"Round", {F_FN(Round)}, false},
    {"Sign", {F_FN(Sign), SI_FN(Sign), UI_FN(Sign)}, false},
    {"Erf", {F_FN(Erf), SI_FN(Erf), UI_FN(Erf)}, false},
    {"Sin", {F_FN(Sin)}, false},
    {"Cos", {F_FN(Cos)}, false},
    {"Tan", {F_FN(Tan)}, false},
    {"Asin", {F_FN(Asin)}, false},
    {"Acos", {F_FN(Acos)}, false},
    {"Atan", {F_FN(Atan)}, false},
    {"Sinh", {F_FN(Sinh)}, false},
    {"Cosh", {F_FN(Cosh)}, false},
    {"Asinh", {F_FN(Asinh)}, false},
    {"Acosh", {F_FN(Acosh)}, false},
    {"Atanh", {F_FN(Atanh)}, false},
    {"IsNaN", {F_FN(IsNaN)}, true},
    {"IsInf", {F_FN(IsInf)}, true},
    {"Not", {[GE_BOOL] = Not_BOOL}, false},
    {"BitwiseNot", {SI_FN(BitwiseNot), UI_FN(BitwiseNot)}, false},
    {"Relu", {F_FN(Relu), SI_FN(Relu)}, false},
    {"LeakyRelu", {F_FN(LeakyRelu)}, false},
    {"Sigmoid", {F_FN(Sigmoid)}, false},
    {"HardSigmoid", {F_FN(HardSigmoid)}, false},
    {"HardSwish", {F_FN(HardSwish)}, false},
    {"Tanh", {F_FN(Tanh)}, false},
    {"Elu", {F_FN(Elu)}, false},
    {"Selu", {F_FN(Selu)}, false},
    {"Celu", {F_FN(Celu)}, false},
    {"Softplus", {F_FN(Softplus)}, false},
    {"Softsign", {F_FN(Softsign)}, false},
    {"ThresholdedRelu", {F_FN(ThresholdedRelu)}, false},
    {"Gelu", {F_FN(Gelu)}, false},
    {"Mish", {F_FN(Mish)}, false},
    {"Swish", {F_FN(Swish)}, false},
};

/* ------------------------------------------------------------------ binary row functions */

typedef void (*bin_fn)(size_t n, const void *a, ptrdiff_t sa, const void *b, ptrdiff_t sb,
                       void *o, const ew_params *p);

#define BIN_DEF(op, TAG, T, UT, TO, EXPR)                                                  \
  static void op##_##TAG(size_t n, const void *va, ptrdiff_t sa, const void *vb,           \
                         ptrdiff_t sb, void *vo, const ew_params *p) {                     \
    const T *a = va;                                                                       \
    const T *b = vb;                                                                       \
    TO *o = vo; /* may be a or b: in place */                                              \
    if (sa == 1 && sb == 1) {                                                              \
      GE_IVDEP for (size_t i = 0; i < n; i++) {                                            \
        T x = a[i], y = b[i];                                                              \
        o[i] = (TO)(EXPR);                                                                 \
      }                                                                                    \
    } else if (sa == 1 && sb == 0) {                                                       \
      const T y = b[0];                                                                    \
      GE_IVDEP for (size_t i = 0; i < n; i++) {                                            \
        T x = a[i];                                                                        \
        o[i] = (TO)(EXPR);                                                                 \
      }                                                                                    \
    } else if (sa == 0 && sb == 1) {                                                       \
      const T x = a[0];                                                                    \
      GE_IVDEP for (size_t i = 0; i < n; i++) {                                            \
        T y = b[i];                                                                        \
        o[i] = (TO)(EXPR);                                                                 \
      }                                                                                    \
    } else {                                                                               \
      GE_IVDEP for (size_t i = 0; i < n; i++) {                                            \
        T x = a[(ptrdiff_t)i * sa], y = b[(ptrdiff_t)i * sb];                              \
        o[i] = (TO)(EXPR);                                                                 \
      }                                                                                    \
    }                                                                                      \
  }

#define BINF(op, TO_SAME, EXPR)                                          \
  BIN_DEF(op, F32, float, float, TO_SAME##_F32, EXPR)                    \
  BIN_DEF(op, F64, double, double, TO_SAME##_F64, EXPR)
#define BINSI(op, TO_SAME, EXPR)                                         \
  BIN_DEF(op, I8, int8_t, uint8_t, TO_SAME##_I8, EXPR)                   \
  BIN_DEF(op, I16, int16_t, uint16_t, TO_SAME##_I16, EXPR)               \
  BIN_DEF(op, I32, int32_t, uint32_t, TO_SAME##_I32, EXPR)               \
  BIN_DEF(op, I64, int64_t, uint64_t, TO_SAME##_I64, EXPR)
#define BINUI(op, TO_SAME, EXPR)                                         \
  BIN_DEF(op, U8, uint8_t, uint8_t, TO_SAME##_U8, EXPR)                  \
  BIN_DEF(op, U16, uint16_t, uint16_t, TO_SAME##_U16, EXPR)              \
  BIN_DEF(op, U32, uint32_t, uint32_t, TO_SAME##_U32, EXPR)              \
  BIN_DEF(op, U64, uint64_t, uint64_t, TO_SAME##_U64, EXPR)
#define BINI(op, TO_SAME, EXPR) BINSI(op, TO_SAME, EXPR) BINUI(op, TO_SAME, EXPR)
#define BINN(op, TO_SAME, EXPR) BINF(op, TO_SAME, EXPR) BINI(op, TO_SAME, EXPR)

/* output type names for the TO_SAME argument */
#define SAME_F32 float
#define SAME_F64 double
#define SAME_I8 int8_t
#define SAME_I16 int16_t
#define SAME_I32 int32_t
#define SAME_I64 int64_t
#define SAME_U8 uint8_t
#define SAME_U16 uint16_t
#define SAME_U32 uint32_t
#define SAME_U64 uint64_t
#define BOOL_F32 uint8_t
#define BOOL_F64 uint8_t
#define BOOL_I8 uint8_t
#define BOOL_I16 uint8_t
#define BOOL_I32 uint8_t
#define BOOL_I64 uint8_t
#define BOOL_U8 uint8_t
#define BOOL_U16 uint8_t
#define BOOL_U32 uint8_t
#define BOOL_U64 uint8_t

#define N_FN(op) F_FN(op), SI_FN(op), UI_FN(op)
#define I_FN(op) SI_FN(op), UI_FN(op)

/* integer arithmetic wraps (computed unsigned); x / 0 is 0 */
BINF(Add, SAME, x + y)
BINI(Add, SAME, (uint64_t)x + (uint64_t)y)
BINF(Sub, SAME, x - y)
BINI(Sub, SAME, (uint64_t)x - (uint64_t)y)
BINF(Mul, SAME, x * y)
BINSI(Mul, SAME, (int64_t)((uint64_t)x * (uint64_t)y))
BINUI(Mul, SAME, (uint64_t)x * (uint64_t)y)
BINF(Div, SAME, x / y)
BINSI(Div, SAME, y == 0 ? 0 : (y == -1 ? (int64_t)NEG_WRAP(x) : (int64_t)(x / y)))
BINUI(Div, SAME, y == 0 ? 0 : x / y)
/* Mod: mode 1 = fmod (sign of the dividend), 0 = sign of the divisor (numpy.mod; for floats
   a zero result takes the divisor's sign, x mod +-inf keeps x or gives +-inf) */
static inline double py_fmod(double x, double y) {
  double r = fmod(x, y);
  if (r == 0) return copysign(0.0, y);
  return (r < 0) != (y < 0) ? r + y : r;
}
BINF(Mod, SAME, p->mode ? fmod(x, y) : py_fmod(x, y))
BINSI(Mod, SAME,
      y == 0 || y == -1 ? 0
                        : (p->mode ? x % y
                                   : (x % y != 0 && ((x % y < 0) != (y < 0)) ? x % y + y : x % y)))
BINUI(Mod, SAME, y == 0 ? 0 : x % y)
/* BitShift: mode 0 = LEFT, 1 = RIGHT; shifting by the width or more gives 0 */
BINUI(BitShift, SAME,
      (uint64_t)y >= sizeof x * 8 ? 0 : (p->mode ? (uint64_t)x >> y : (uint64_t)x << y))
/* signed (opset 28): RIGHT is arithmetic; a shift < 0 or >= the width gives the sign fill
   (-1 for RIGHT of a negative x, else 0); LEFT discards bits past the sign bit */
BINSI(BitShift, SAME,
      (y < 0 || (uint64_t)y >= sizeof x * 8)
          ? (p->mode && x < 0 ? -1 : 0)
          : (p->mode ? (int64_t)(x < 0 ? ~(~(uint64_t)(int64_t)x >> y) : (uint64_t)(int64_t)x >> y)
                     : (int64_t)((uint64_t)(int64_t)x << y)))
BINI(BitwiseAnd, SAME, x & y)
BINI(BitwiseOr, SAME, x | y)
BINI(BitwiseXor, SAME, x ^ y)
BIN_DEF(And, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN_DEF(Or, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) | (y != 0))
BIN_DEF(Xor, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) ^ (y != 0))
BIN_DEF(Equal, BOOL, uint8_t, uint8_t, uint8_t, (x != 0) == (y != 0))
BINN(Equal, BOOL, x == y)
BINN(Less, BOOL, x < y)
BINN(LessOrEqual, BOOL, x <= y)
BINN(Greater, BOOL, x > y)
BINN(GreaterOrEqual, BOOL, x >= y)
/* Max/Min propagate NaN like numpy.maximum */
BINF(Max, SAME, x != x ? x : (x > y || y != y ? (x > y ? x : y) : y))
BINI(Max, SAME, x > y ? x : y)
BINF(Min, SAME, x != x ? x : (x < y || y != y ? (x < y ? x : y) : y))
BINI(Min, SAME, x < y ? x : y)
BINF(PRelu, SAME, x < 0 ? y * x : x)
BIN_DEF(PRelu, I32, int32_t, uint32_t, int32_t, x < 0 ? (int32_t)((uint32_t)y * (uint32_t)x) : x)
BIN_DEF(PRelu, I64, int64_t, uint64_t, int64_t, x < 0 ? (int64_t)((uint64_t)y * (uint64_t)x) : x)
BIN_DEF(PRelu, U32, uint32_t, uint32_t, uint32_t, ((void)y, x))
BIN_DEF(PRelu, U64, uint64_t, uint64_t, uint64_t, ((void)y, x))
/* Pow with the exponent of the base's dtype */
BINF(Pow, SAME, pow(x, y))

static int64_t ipow_i64(int64_t x, int64_t y) {
  if (y < 0) return x == 1 ? 1 : (x == -1 ? ((y & 1) ? -1 : 1) : 0);
  uint64_t r = 1, b = (uint64_t)x;
  while (y) {
    if (y & 1) r *= b;
    b *= b;
    y >>= 1;
  }
  return (int64_t)r;
}
BINSI(Pow, SAME, ipow_i64(x, y))
BINUI(Pow, SAME, ipow_i64((int64_t)x, (int64_t)y))

static void Equal_STRING(size_t n, const void *va, ptrdiff_t sa, const void *vb, ptrdiff_t sb,
                         void *vo, const ew_params *p) {
  char *const *a = va, *const *b = vb;
  uint8_t *o = vo;
  for (size_t i = 0; i < n; i++) {
    const char *x = a[(ptrdiff_t)i * sa], *y = b[(ptrdiff_t)i * sb];
    o[i] = strcmp(x ? x : "", y ? y : "") == 0;
  }
}

enum { B_SAME, B_BOOL };
typedef struct bin_op {
  const char *name;
  bin_fn fn[GE_DTYPE_COUNT];
  int out; /* B_SAME / B_BOOL */
} bin_op;

static const bin_op bin_ops[] = {
    {"Add", {N_FN(Add)}, B_SAME},
    {"Sub", {N_FN(Sub)}, B_SAME},
    {"Mul", {N_FN(Mul)}, B_SAME},
    {"Div", {N_FN(Div)}, B_SAME},
    {"Mod", {N_FN(Mod)}, B_SAME},
    {"Pow", {N_FN(Pow)}, B_SAME},
    {"PRelu", {F_FN(PRelu), [GE_I32] = PRelu_I32, [GE_I64] = PRelu_I64, [GE_U32] = PRelu_U32,
               [GE_U64] = PRelu_U64}, B_SAME},
    {"BitShift", {I_FN(BitShift)}, B_SAME},
    {"BitwiseAnd", {I_FN(BitwiseAnd)}, B_SAME},
    {"BitwiseOr", {I_FN(BitwiseOr)}, B_SAME},
    {"BitwiseXor", {I_FN(BitwiseXor)}, B_SAME},
    {"And", {[GE_BOOL] = And_BOOL}, B_BOOL},
    {"Or", {[GE_BOOL] = Or_BOOL}, B_BOOL},
    {"Xor", {[GE_BOOL] = Xor_BOOL}, B_BOOL},
    {"Equal", {N_FN(Equal), [GE_BOOL] = Equal_BOOL, [GE_STRING] = Equal_STRING}, B_BOOL},
    {"Less", {N_FN(Less)}, B_BOOL},
    {"LessOrEqual", {N_FN(LessOrEqual)}, B_BOOL},
    {"Greater", {N_FN(Greater)}, B_BOOL},
    {"GreaterOrEqual", {N_FN(GreaterOrEqual)}, B_BOOL},
    /* variadic ops fold with these */
    {"Sum", {N_FN(Add)}, B_SAME},
    {"Mean", {F_FN(Add)}, B_SAME},
    {"Max", {N_FN(Max)}, B_SAME},
    {"Min", {N_FN(Min)}, B_SAME},
};

/* ------------------------------------------------------------------ state and lookup */

typedef struct ew_state {
  const un_op *un;
  const bin_op *bin;
  ew_params p;
  bool has_lo, has_hi; /* Clip before opset 11 */
  float lo, hi;
} ew_state;

static const un_op *find_un(const char *name) {
  for (size_t i = 0; i < sizeof un_ops / sizeof un_ops[0]; i++)
    if (!strcmp(un_ops[i].name, name)) return &un_ops[i];
  return NULL;
}

static const bin_op *find_bin(const char *name) {
  for (size_t i = 0; i < sizeof bin_ops / sizeof bin_ops[0]; i++)
    if (!strcmp(bin_ops[i].name, name)) return &bin_ops[i];
  return NULL;
}

static un_fn un_pick(const un_op *op, ge_dtype dt, bool *via_f32) {
  if (dt >= GE_DTYPE_COUNT) return NULL;
  *via_f32 = false;
  if (op->fn[dt]) return op->fn[dt];
  if (ge_ew_is_half(dt) && op->fn[GE_F32]) {
    *via_f32 = true;
    return op->fn[GE_F32];
  }
  return NULL;
}

static bin_fn bin_pick(const bin_op *op, ge_dtype dt, bool *via_f32) {
  if (dt >= GE_DTYPE_COUNT) return NULL;
  *via_f32 = false;
  if (op->fn[dt]) return op->fn[dt];
  if (ge_ew_is_half(dt) && op->fn[GE_F32]) {
    *via_f32 = true;
    return op->fn[GE_F32];
  }
  return NULL;
}

static ge_status state_new(const ge_prepare_ctx *p, ew_state **out) {
  ew_state *s = calloc(1, sizeof *s);
  if (!s) return ge_prepare_fail(p, GE_ERR_OUT_OF_MEMORY, "out of memory");
  *out = s;
  return GE_OK;
}

static void ew_release(void *state) { free(state); }

static ge_dtype prep_dtype(const ge_prepare_ctx *p, size_t i) {
  if (i >= p->n_in || !p->in[i].present || !p->in[i].type) return GE_DTYPE_COUNT;
  return p->in[i].type->dtype;
}

/* ------------------------------------------------------------------ unary kernels */

static ge_status un_prepare(const ge_prepare_ctx *p, void **state) {
  const un_op *op = find_un(p->node->op_type);
  if (!op) return ge_prepare_fail(p, GE_ERR_INTERNAL, "no elementwise kernel for this op");
  ge_dtype dt = prep_dtype(p, 0);
  bool half;
  if (dt != GE_DTYPE_COUNT && !un_pick(op, dt, &half))
    return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for input 0 of dtype %s",
                           ge_dtype_name(dt));
  ew_state *s = NULL;
  GE_CHECK(state_new(p, &s));
  const char *n = op->name;
  const ge_node *nd = p->node;
  float alpha = 1.0f;
  if (!strcmp(n, "LeakyRelu")) alpha = 0.01f;
  if (!strcmp(n, "HardSigmoid")) alpha = 0.2f;
  if (!strcmp(n, "Selu")) alpha = 1.67326319217681884765625f;
  s->p.alpha = ge_node_attr_float(nd, "alpha", alpha);
  s->p.beta = ge_node_attr_float(nd, "beta", 0.5f);
  s->p.gamma = ge_node_attr_float(nd, "gamma", 1.05070102214813232421875f);
  if (!strcmp(n, "Gelu")) {
    const char *a = ge_node_attr_string(nd, "approximate", "none");
    if (strcmp(a, "none") && strcmp(a, "tanh")) {
      free(s);
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                             "attribute approximate is '%s'; expected 'none' or 'tanh'", a);
    }
    s->p.mode = !strcmp(a, "tanh");
  }
  if (!strcmp(n, "IsInf"))
    s->p.mode = (ge_node_attr_int(nd, "detect_negative", 1) ? 1 : 0) |
                (ge_node_attr_int(nd, "detect_positive", 1) ? 2 : 0);
  if (!strcmp(n, "Celu") && s->p.alpha == 0) {
    free(s);
    return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT, "attribute alpha must not be 0");
  }
  s->un = op;
  *state = s;
  return GE_OK;
}

static ge_status check_out(ge_kctx *ctx, const ge_tensor *o, size_t numel, ge_dtype dt) {
  if (!o) return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output 0 is missing");
  if (o->numel != numel || o->dtype != dt || (numel && !o->data))
    return ge_kctx_fail(ctx, GE_ERR_INTERNAL,
                        "output 0 was allocated as %s with %zu elements; expected %s with %zu",
                        ge_dtype_name(o->dtype), o->numel, ge_dtype_name(dt), numel);
  return GE_OK;
}

static ge_status un_run(const void *state, ge_kctx *ctx) {
  const ew_state *s = state;
  const ge_tensor *x = ctx->in[0];
  ge_tensor *y = ctx->out[0];
  bool half;
  un_fn fn = un_pick(s->un, x->dtype, &half);
  if (!fn)
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "no CPU kernel for input 0 of dtype %s",
                        ge_dtype_name(x->dtype));
  ge_dtype odt = s->un->bool_out ? GE_BOOL : x->dtype;
  GE_CHECK(check_out(ctx, y, x->numel, odt));
  if (!half) {
    fn(x->numel, x->data, y->data, &s->p);
    return GE_OK;
  }
  float fa[GE_EW_BLOCK], fo[GE_EW_BLOCK];
  const uint16_t *src = x->data;
  for (size_t i = 0; i < x->numel; i += GE_EW_BLOCK) {
    size_t m = x->numel - i < GE_EW_BLOCK ? x->numel - i : GE_EW_BLOCK;
    ge_ew_half_to_f32(x->dtype, src + i, 1, m, fa);
    if (s->un->bool_out) {
      fn(m, fa, (uint8_t *)y->data + i, &s->p);
    } else {
      fn(m, fa, fo, &s->p);
      ge_ew_f32_to_half(x->dtype, fo, m, (uint16_t *)y->data + i);
    }
  }
  return GE_OK;
}

/* ------------------------------------------------------------------ binary kernels */

/* One row through an f32 row function for f16/bf16 inputs. */
static void half_row(bin_fn fn, ge_dtype dt, bool bool_out, size_t n, const uint16_t *a,
                     ptrdiff_t sa, const uint16_t *b, ptrdiff_t sb, void *o, const ew_params *p) {
  float fa[GE_EW_BLOCK], fb[GE_EW_BLOCK], fo[GE_EW_BLOCK];
  if (sa == 0) ge_ew_half_to_f32(dt, a, 0, 1, fa);
  if (sb == 0) ge_ew_half_to_f32(dt, b, 0, 1, fb);
  for (size_t i = 0; i < n; i += GE_EW_BLOCK) {
    size_t m = n - i < GE_EW_BLOCK ? n - i : GE_EW_BLOCK;
    if (sa) ge_ew_half_to_f32(dt, a + (ptrdiff_t)i * sa, sa, m, fa);
    if (sb) ge_ew_half_to_f32(dt, b + (ptrdiff_t)i * sb, sb, m, fb);
    if (bool_out) {
      fn(m, fa, sa ? 1 : 0, fb, sb ? 1 : 0, (uint8_t *)o + i, p);
    } else {
      fn(m, fa, sa ? 1 : 0, fb, sb ? 1 : 0, fo, p);
      ge_ew_f32_to_half(dt, fo, m, (uint16_t *)o + i);
    }
  }
}

/* n elements of any numeric dtype (element stride `stride`) as double */
static void load_f64(ge_dtype dt, const void *src, ptrdiff_t stride, size_t n, double *d) {
#define LOAD_CASE(TAG, T, UT)                                        \
  case GE_##TAG: {                                                   \
    const T *s = src;                                                \
    for (size_t i = 0; i < n; i++) d[i] = (double)s[(ptrdiff_t)i * stride]; \
  } break;
  switch (dt) {
    GE_EW_FLOATS(LOAD_CASE)
    GE_EW_SINTS(LOAD_CASE)
    GE_EW_UINTS(LOAD_CASE)
    case GE_F16:
    case GE_BF16: {
      const uint16_t *s = src;
      for (size_t i = 0; i < n; i++)
        d[i] = dt == GE_F16 ? ge_f16_to_f32(s[(ptrdiff_t)i * stride])
                            : ge_bf16_to_f32(s[(ptrdiff_t)i * stride]);
    } break;
    case GE_BOOL: {
      const uint8_t *s = src;
      for (size_t i = 0; i < n; i++) d[i] = s[(ptrdiff_t)i * stride] != 0;
    } break;
    default:
      for (size_t i = 0; i < n; i++) d[i] = 0;
  }
#undef LOAD_CASE
}

/* Pow with an exponent of another dtype: computed in double. */
static ge_status pow_mixed_row(size_t n, const ge_tensor *a, const void *pa, ptrdiff_t sa,
                               const ge_tensor *b, const void *pb, ptrdiff_t sb, ge_tensor *o,
                               void *po) {
  double da[GE_EW_BLOCK], db[GE_EW_BLOCK];
  size_t ea = ge_dtype_size(a->dtype), eb = ge_dtype_size(b->dtype), eo = ge_dtype_size(o->dtype);
  for (size_t i = 0; i < n; i += GE_EW_BLOCK) {
    size_t m = n - i < GE_EW_BLOCK ? n - i : GE_EW_BLOCK;
    load_f64(a->dtype, (const char *)pa + (ptrdiff_t)i * sa * (ptrdiff_t)ea, sa, m, da);
    load_f64(b->dtype, (const char *)pb + (ptrdiff_t)i * sb * (ptrdiff_t)eb, sb, m, db);
    for (size_t j = 0; j < m; j++) da[j] = pow(da[j], db[j]);
    GE_CHECK(ge_ew_convert(GE_F64, da, o->dtype, (char *)po + i * eo, m));
  }
  return GE_OK;
}

/* out = op(a, b) with broadcasting; a and b may be any tensors of the op's dtype. */
static ge_status bin_apply(ge_kctx *ctx, const bin_op *op, const ew_params *p, const ge_tensor *a,
                           const ge_tensor *b, ge_tensor *o) {
  const ge_tensor *ins[2] = {a, b};
  ge_bcast bc;
  ge_status st = ge_bcast_init(&bc, o->dims, o->rank, ins, 2);
  if (st != GE_OK) return ge_kctx_fail(ctx, st, "%s", ge_last_error());
  bool mixed = a->dtype != b->dtype;
  if (mixed && strcmp(op->name, "Pow"))
    return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "inputs have dtypes %s and %s",
                        ge_dtype_name(a->dtype), ge_dtype_name(b->dtype));
  bool half = false;
  bin_fn fn = bin_pick(op, a->dtype, &half);
  if (!fn && !(mixed && a->dtype != GE_STRING && a->dtype != GE_BOOL))
    return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "no CPU kernel for input 0 of dtype %s",
                        ge_dtype_name(a->dtype));
  bool bool_out = op->out == B_BOOL;
  GE_CHECK(check_out(ctx, o, bc.numel, bool_out ? GE_BOOL : a->dtype));
  if (bc.numel == 0) return GE_OK;
  size_t ea = ge_dtype_size(a->dtype), eb = ge_dtype_size(b->dtype), eo = ge_dtype_size(o->dtype);
  ge_bcast_iter it;
  ge_bcast_begin(&bc, &it);
  for (size_t r = 0; r < bc.rows; r++, ge_bcast_next(&bc, &it)) {
    const char *pa = (const char *)a->data + it.off[0] * (ptrdiff_t)ea;
    const char *pb = (const char *)b->data + it.off[1] * (ptrdiff_t)eb;
    char *po = (char *)o->data + r * bc.inner * eo;
    if (mixed)
      GE_CHECK(pow_mixed_row(bc.inner, a, pa, bc.step[0], b, pb, bc.step[1], o, po));
    else if (half)
      half_row(fn, a->dtype, bool_out, bc.inner, (const uint16_t *)pa, bc.step[0],
               (const uint16_t *)pb, bc.step[1], po, p);
    else
      fn(bc.inner, pa, bc.step[0], pb, bc.step[1], po, p);
  }
  return GE_OK;
}

static ge_status bin_prepare(const ge_prepare_ctx *p, void **state) {
  const bin_op *op = find_bin(p->node->op_type);
  if (!op) return ge_prepare_fail(p, GE_ERR_INTERNAL, "no elementwise kernel for this op");
  bool half;
  for (size_t i = 0; i < p->n_in; i++) {
    ge_dtype dt = prep_dtype(p, i);
    if (dt == GE_DTYPE_COUNT) continue;
    bool ok = bin_pick(op, dt, &half) != NULL;
    if (!strcmp(op->name, "Pow")) ok = dt != GE_STRING && dt != GE_BOOL;
    if (!ok)
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for input %zu of dtype %s",
                             i, ge_dtype_name(dt));
  }
  ew_state *s = NULL;
  GE_CHECK(state_new(p, &s));
  s->bin = op;
  if (!strcmp(op->name, "Mod")) s->p.mode = ge_node_attr_int(p->node, "fmod", 0) != 0;
  if (!strcmp(op->name, "BitShift")) {
    const char *d = ge_node_attr_string(p->node, "direction", "");
    if (strcmp(d, "LEFT") && strcmp(d, "RIGHT")) {
      free(s);
      return ge_prepare_fail(p, GE_ERR_INVALID_ARGUMENT,
                             "attribute direction is '%s'; expected 'LEFT' or 'RIGHT'", d);
    }
    s->p.mode = !strcmp(d, "RIGHT");
  }
  *state = s;
  return GE_OK;
}

static ge_status bin_run(const void *state, ge_kctx *ctx) {
  const ew_state *s = state;
  if (!ctx->in[0] || !ctx->in[1]) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "missing input");
  const ge_tensor *a = ctx->in[0], *b = ctx->in[1];
  /* PRelu before opset 7: a slope of shape [C] is per channel (axis 1 of x) */
  ge_tensor chan;
  if (ctx->node && ctx->node->opset < 7 && !strcmp(s->bin->name, "PRelu") && b->rank == 1 &&
      a->rank > 2 && b->dims[0] == a->dims[1] && b->dims[0] != 1) {
    ge_tensor_view(&chan, b);
    chan.rank = a->rank - 1;
    for (int32_t d = 1; d < chan.rank; d++) chan.dims[d] = 1;
    b = &chan;
  }
  return bin_apply(ctx, s->bin, &s->p, a, b, ctx->out[0]);
}

/* ------------------------------------------------------------------ variadic kernels */

static ge_status var_run(const void *state, ge_kctx *ctx) {
  const ew_state *s = state;
  ge_tensor *o = ctx->out[0];
  size_t n = ctx->n_in;
  for (size_t i = 0; i < n; i++)
    if (!ctx->in[i]) return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT, "input %zu is missing", i);
  if (!o) return ge_kctx_fail(ctx, GE_ERR_INTERNAL, "output 0 is missing");
  if (n == 1) {
    /* broadcast copy of one input: Max(x) etc. is x */
    const ge_tensor *x = ctx->in[0];
    GE_CHECK(check_out(ctx, o, x->numel, x->dtype));
    if (x->nbytes) memcpy(o->data, x->data, x->nbytes);
    return GE_OK;
  }
  GE_CHECK(bin_apply(ctx, s->bin, &s->p, ctx->in[0], ctx->in[1], o));
  if (n > 2 && o->numel) {
    ge_tensor tmp;
    ge_status st = ge_tensor_init_alloc(&tmp, o->dtype, o->dims, o->rank);
    if (st != GE_OK) return ge_kctx_fail(ctx, st, "%s", ge_last_error());
    for (size_t i = 2; i < n && st == GE_OK; i++) {
      memcpy(tmp.data, o->data, o->nbytes);
      st = bin_apply(ctx, s->bin, &s->p, &tmp, ctx->in[i], o);
    }
    ge_tensor_release_storage(&tmp);
    GE_CHECK(st);
  }
  if (!strcmp(s->bin->name, "Mean") && o->numel) {
    size_t m = o->numel;
    switch (o->dtype) {
      case GE_F32: {
        float *restrict d = o->data, k = (float)n;
        for (size_t i = 0; i < m; i++) d[i] /= k;
      } break;
      case GE_F64: {
        double *restrict d = o->data, k = (double)n;
        for (size_t i = 0; i < m; i++) d[i] /= k;
      } break;
      case GE_F16:
      case GE_BF16: {
        uint16_t *d = o->data;
        float f[GE_EW_BLOCK];
        for (size_t i = 0; i < m; i += GE_EW_BLOCK) {
          size_t c = m - i < GE_EW_BLOCK ? m - i : GE_EW_BLOCK;
          ge_ew_half_to_f32(o->dtype, d + i, 1, c, f);
          for (size_t j = 0; j < c; j++) f[j] /= (float)n;
          ge_ew_f32_to_half(o->dtype, f, c, d + i);
        }
      } break;
      default:
        return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "Mean of dtype %s", ge_dtype_name(o->dtype));
    }
  }
  return GE_OK;
}

static ge_status var_prepare(const ge_prepare_ctx *p, void **state) {
  const bin_op *op = find_bin(p->node->op_type);
  if (!op) return ge_prepare_fail(p, GE_ERR_INTERNAL, "no elementwise kernel for this op");
  bool half;
  for (size_t i = 0; i < p->n_in; i++) {
    ge_dtype dt = prep_dtype(p, i);
    if (dt != GE_DTYPE_COUNT && !bin_pick(op, dt, &half))
      return ge_prepare_fail(p, GE_ERR_UNSUPPORTED, "no CPU kernel for input %zu of dtype %s",
                             i, ge_dtype_name(dt));
  }
  ew_state *s = NULL;
  GE_CHECK(state_new(p, &s));
  s->bin = op;
  *state = s;
  return GE_OK;
}

/* ------------------------------------------------------------------ Clip */

static const ge_dtype clip_dtypes[] = {GE_F32, GE_F16, GE_BF16, GE_F64, GE_I8, GE_I16, GE_I32,
                                       GE_I64, GE_U8, GE_U16, GE_U32, GE_U64, GE_DTYPE_COUNT};

static ge_status clip_prepare(const ge_prepare_ctx *p, void **state) {
  for (size_t i = 0; i < p->n_in; i++) GE_CHECK(ge_prepare_check_dtype(p, i, clip_dtypes));
  ew_state *s = NULL;
  GE_CHECK(state_new(p, &s));
  if (p->opset < 11) {
    const ge_attr_value *lo = ge_node_attr(p->node, "min"), *hi = ge_node_attr(p->node, "max");
    s->has_lo = lo != NULL;
    s->has_hi = hi != NULL;
    s->lo = ge_node_attr_float(p->node, "min", -INFINITY);
    s->hi = ge_node_attr_float(p->node, "max", INFINITY);
  }
  *state = s;
  return GE_OK;
}

#define CLIP_LOOP(T, lo, hi)                    \
  do {                                          \
    const T *restrict xs = x->data;             \
    T *restrict ys = y->data;                   \
    const T lo_ = (lo), hi_ = (hi);             \
    for (size_t i = 0; i < n; i++) {            \
      T v = xs[i];                              \
      v = v < lo_ ? lo_ : v;                    \
      ys[i] = v > hi_ ? hi_ : v;                \
    }                                           \
  } while (0)

static ge_status clip_run(const void *state, ge_kctx *ctx) {
  const ew_state *s = state;
  const ge_tensor *x = ctx->in[0];
  const ge_tensor *tlo = ctx->n_in > 1 ? ctx->in[1] : NULL;
  const ge_tensor *thi = ctx->n_in > 2 ? ctx->in[2] : NULL;
  ge_tensor *y = ctx->out[0];
  size_t n = x->numel;
  GE_CHECK(check_out(ctx, y, n, x->dtype));
  for (int k = 1; k <= 2; k++) {
    const ge_tensor *t = k == 1 ? tlo : thi;
    if (!t) continue;
    if (t->dtype != x->dtype || t->numel != 1)
      return ge_kctx_fail(ctx, GE_ERR_INVALID_ARGUMENT,
                          "input %d (%s) must be a scalar of dtype %s; got %s with %zu elements",
                          k, k == 1 ? "min" : "max", ge_dtype_name(x->dtype),
                          ge_dtype_name(t->dtype), t->numel);
  }
  if (n == 0) return GE_OK;
#define CLIP_CASE(TAG, T, UT, MINV, MAXV)                                           \
  case GE_##TAG:                                                                    \
    CLIP_LOOP(T, tlo ? *(const T *)tlo->data : (s->has_lo ? (T)s->lo : (MINV)),     \
              thi ? *(const T *)thi->data : (s->has_hi ? (T)s->hi : (MAXV)));       \
    break;
  switch (x->dtype) {
    CLIP_CASE(F32, float, float, -INFINITY, INFINITY)
    CLIP_CASE(F64, double, double, -INFINITY, INFINITY)
    CLIP_CASE(I8, int8_t, uint8_t, INT8_MIN, INT8_MAX)
    CLIP_CASE(I16, int16_t, uint16_t, INT16_MIN, INT16_MAX)
    CLIP_CASE(I32, int32_t, uint32_t, INT32_MIN, INT32_MAX)
    CLIP_CASE(I64, int64_t, uint64_t, INT64_MIN, INT64_MAX)
    CLIP_CASE(U8, uint8_t, uint8_t, 0, UINT8_MAX)
    CLIP_CASE(U16, uint16_t, uint16_t, 0, UINT16_MAX)
    CLIP_CASE(U32, uint32_t, uint32_t, 0, UINT32_MAX)
    CLIP_CASE(U64, uint64_t, uint64_t, 0, UINT64_MAX)
    case GE_F16:
    case GE_BF16: {
      float lo = -INFINITY, hi = INFINITY, f[GE_EW_BLOCK];
      if (tlo) ge_ew_half_to_f32(x->dtype, tlo->data, 1, 1, &lo);
      else if (s->has_lo) lo = s->lo;
      if (thi) ge_ew_half_to_f32(x->dtype, thi->data, 1, 1, &hi);
      else if (s->has_hi) hi = s->hi;
      const uint16_t *xs = x->data;
      for (size_t i = 0; i < n; i += GE_EW_BLOCK) {
        size_t c = n - i < GE_EW_BLOCK ? n - i : GE_EW_BLOCK;
        ge_ew_half_to_f32(x->dtype, xs + i, 1, c, f);
        for (size_t j = 0; j < c; j++) {
          float v = f[j] < lo ? lo : f[j];
          f[j] = v > hi ? hi : v;
        }
        ge_ew_f32_to_half(x->dtype, f, c, (uint16_t *)y->data + i);
      }
    } break;
    default:
      return ge_kctx_fail(ctx, GE_ERR_UNSUPPORTED, "no CPU kernel for input 0 of dtype %s",
                          ge_dtype_name(x->dtype));
  }
#undef CLIP_CASE
  return GE_OK;
}

/* ------------------------------------------------------------------ registration */

#define K_UN(name) {"", name, 1, 0, {un_prepare, un_run, ew_release, false, false, 1}}
#define K_BIN(name) {"", name, 1, 0, {bin_prepare, bin_run, ew_release, false, false, 3}}
#define K_VAR(name) {"", name, 1, 0, {var_prepare, var_run, ew_release, false}}

const ge_kernel_def ge_ref_kernels_elementwise[] = {
    K_UN("Abs"), K_UN("Neg"), K_UN("Reciprocal"), K_UN("Sqrt"), K_UN("Exp"), K_UN("Log"),
    K_UN("Floor"), K_UN("Ceil"), K_UN("Round"), K_UN("Sign"), K_UN("Erf"), K_UN("Sin"),
    K_UN("Cos"), K_UN("Tan"), K_UN("Asin"), K_UN("Acos"), K_UN("Atan"), K_UN("Sinh"),
    K_UN("Cosh"), K_UN("Asinh"), K_UN("Acosh"), K_UN("Atanh"), K_UN("IsNaN"), K_UN("IsInf"),
    K_UN("Not"), K_UN("BitwiseNot"), K_UN("Relu"), K_UN("LeakyRelu"), K_UN("Sigmoid"),
    K_UN("HardSigmoid"), K_UN("HardSwish"), K_UN("Tanh"), K_UN("Elu"), K_UN("Selu"),
    K_UN("Celu"), K_UN("Softplus"), K_UN("Softsign"), K_UN("ThresholdedRelu"), K_UN("Gelu"),
    K_UN("Mish"), K_UN("Swish"),
    K_BIN("Add"), K_BIN("Sub"), K_BIN("Mul"), K_BIN("Div"), K_BIN("Mod"), K_BIN("Pow"),
    K_BIN("PRelu"), K_BIN("BitShift"), K_BIN("BitwiseAnd"), K_BIN("BitwiseOr"),
    K_BIN("BitwiseXor"), K_BIN("And"), K_BIN("Or"), K_BIN("Xor"), K_BIN("Equal"), K_BIN("Less"),
    K_BIN("LessOrEqual"), K_BIN("Greater"), K_BIN("GreaterOrEqual"),
    K_VAR("Sum"), K_VAR("Mean"), K_VAR("Max"), K_VAR("Min"),
    {"", "Clip", 1, 0, {clip_prepare, clip_run, ew_release, false}},
    {"", "Cast", 1, 0, {ge_ew_cast_prepare, ge_ew_cast_run, free, false}},
    {"", "CastLike", 15, 0, {ge_ew_cast_prepare, ge_ew_cast_run, free, false}},
    {"", "Where", 9, 0, {ge_ew_where_prepare, ge_ew_where_run, free, false}},
    {0},
};
