/* Unit tests of the IR: tensors, dtypes, shapes, attributes, graphs, tensor maps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <cmocka.h>

#include "ir/ir.h"

/* ------------------------------------------------------------------ errors, dtypes */

static void test_errors(void **state) {
  (void)state;
  assert_string_equal(ge_status_str(GE_OK), "GE_OK");
  assert_string_equal(ge_status_str(GE_ERR_SHAPE), "GE_ERR_SHAPE");
  assert_string_equal(ge_status_str(GE_ERR_INTERNAL), "GE_ERR_INTERNAL");
  assert_string_equal(ge_version(), "0.1.0");
  ge_error_clear();
  assert_string_equal(ge_last_error(), "");
  assert_int_equal(ge_error(GE_ERR_IO, "cannot open '%s'", "x.onnx"), GE_ERR_IO);
  assert_string_equal(ge_last_error(), "cannot open 'x.onnx'");
  assert_int_equal(ge_error_prefix(GE_ERR_IO, "loading %d: ", 3), GE_ERR_IO);
  assert_string_equal(ge_last_error(), "loading 3: cannot open 'x.onnx'");
  char big[4000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ge_error(GE_ERR_IO, "%s", big);
  ge_error_prefix(GE_ERR_IO, "%s", big);
  assert_true(strlen(ge_last_error()) < 2048);
}

static void test_dtypes(void **state) {
  (void)state;
  assert_int_equal(ge_dtype_size(GE_F32), 4);
  assert_int_equal(ge_dtype_size(GE_BF16), 2);
  assert_int_equal(ge_dtype_size(GE_U64), 8);
  assert_int_equal(ge_dtype_size(GE_BOOL), 1);
  assert_int_equal(ge_dtype_size(GE_STRING), sizeof(char *));
  assert_int_equal(ge_dtype_size(GE_DTYPE_COUNT), 0);
  assert_string_equal(ge_dtype_name(GE_F16), "float16");
  assert_string_equal(ge_dtype_name(GE_BF16), "bfloat16");
  assert_string_equal(ge_dtype_name(GE_U16), "uint16");
  for (int d = 0; d < GE_DTYPE_COUNT; d++) {
    ge_dtype back;
    assert_true(ge_dtype_from_onnx(ge_dtype_to_onnx((ge_dtype)d), &back));
    assert_int_equal(back, d);
  }
  ge_dtype dt;
  assert_true(ge_dtype_from_onnx(16, &dt));
  assert_int_equal(dt, GE_BF16);
  assert_int_equal(ge_dtype_to_onnx(GE_F64), 11);
  assert_false(ge_dtype_from_onnx(14, &dt)); /* complex64 */
  assert_false(ge_dtype_from_onnx(0, &dt));
  assert_true(ge_dtype_is_float(GE_BF16));
  assert_false(ge_dtype_is_float(GE_I32));
  assert_true(ge_dtype_is_int(GE_U8));
  assert_false(ge_dtype_is_int(GE_BOOL));
  assert_true(ge_dtype_is_signed(GE_I8));
  assert_false(ge_dtype_is_signed(GE_U32));
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_f16(void **state) {
  (void)state;
  assert_int_equal(ge_f32_to_f16(0.0f), 0x0000);
  assert_int_equal(ge_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(ge_f32_to_f16(1.0f), 0x3c00);
  assert_int_equal(ge_f32_to_f16(-2.0f), 0xc000);
  assert_int_equal(ge_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(ge_f32_to_f16(0.5f), 0x3800);
  assert_int_equal(ge_f32_to_f16(0.333251953125f), 0x3555);
  /* overflow */
  assert_int_equal(ge_f32_to_f16(65520.0f), 0x7c00);   /* tie rounds to even: inf */
  assert_int_equal(ge_f32_to_f16(65519.0f), 0x7bff);
  assert_int_equal(ge_f32_to_f16(1e10f), 0x7c00);
  assert_int_equal(ge_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(ge_f32_to_f16(INFINITY), 0x7c00);
  uint16_t hn = ge_f32_to_f16(NAN);
  assert_int_equal(hn & 0x7c00, 0x7c00);
  assert_true((hn & 0x3ff) != 0);
  /* rounding to nearest even: 1 + 2^-11 is a tie between 1 and 1+2^-10 -> 1 */
  assert_int_equal(ge_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  assert_int_equal(ge_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02); /* tie -> even mantissa 2 */
  assert_int_equal(ge_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  /* subnormals */
  assert_int_equal(ge_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(ge_f32_to_f16(0x1p-25f), 0x0000);         /* tie -> even 0 */
  assert_int_equal(ge_f32_to_f16(0x1.8p-24f), 0x0002);       /* 1.5 -> 2 */
  assert_int_equal(ge_f32_to_f16(0x1p-25f * 1.0001f), 0x0001);
  assert_int_equal(ge_f32_to_f16(0x1p-14f), 0x0400);          /* smallest normal */
  assert_int_equal(ge_f32_to_f16(0x1.ff8p-15f), 0x03ff);      /* largest subnormal */
  assert_int_equal(ge_f32_to_f16(0x1.ffcp-15f), 0x0400);      /* tie rounds up into normal */
  assert_int_equal(ge_f32_to_f16(0x1.ffap-15f), 0x03ff);
  assert_int_equal(ge_f32_to_f16(0x1.ff4p-15f), 0x03fe);      /* 1022.5: tie -> even */
  assert_int_equal(ge_f32_to_f16(0x1.ff0p-15f), 0x03fe);
  assert_int_equal(ge_f32_to_f16(1e-10f), 0x0000);
  assert_int_equal(ge_f32_to_f16(-0x1p-24f), 0x8001);
  /* f16 -> f32 */
  assert_true(ge_f16_to_f32(0x3c00) == 1.0f);
  assert_true(ge_f16_to_f32(0xc000) == -2.0f);
  assert_true(ge_f16_to_f32(0x7bff) == 65504.0f);
  assert_true(ge_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(ge_f16_to_f32(0x03ff) == 0x1.ff8p-15f);
  assert_true(ge_f16_to_f32(0x0400) == 0x1p-14f);
  assert_int_equal(fbits(ge_f16_to_f32(0x8000)), 0x80000000u);
  assert_true(isinf(ge_f16_to_f32(0x7c00)) && ge_f16_to_f32(0x7c00) > 0);
  assert_true(isinf(ge_f16_to_f32(0xfc00)) && ge_f16_to_f32(0xfc00) < 0);
  assert_true(isnan(ge_f16_to_f32(0x7e00)));
  assert_true(isnan(ge_f16_to_f32(0x7c01)));
  /* every finite half round-trips exactly */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00) continue;
    assert_int_equal(ge_f32_to_f16(ge_f16_to_f32((uint16_t)h)), h);
  }
}

static void test_bf16(void **state) {
  (void)state;
  assert_int_equal(ge_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(ge_f32_to_bf16(-2.0f), 0xc000);
  assert_int_equal(ge_f32_to_bf16(0.0f), 0x0000);
  assert_int_equal(ge_f32_to_bf16(-0.0f), 0x8000);
  /* ties to even */
  assert_int_equal(ge_f32_to_bf16(bitsf(0x3f808000u)), 0x3f80);
  assert_int_equal(ge_f32_to_bf16(bitsf(0x3f818000u)), 0x3f82);
  assert_int_equal(ge_f32_to_bf16(bitsf(0x3f808001u)), 0x3f81);
  assert_int_equal(ge_f32_to_bf16(bitsf(0x3f807fffu)), 0x3f80);
  assert_int_equal(ge_f32_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(ge_f32_to_bf16(-INFINITY), 0xff80);
  assert_int_equal(ge_f32_to_bf16(bitsf(0x7f7fffffu)), 0x7f80); /* max float rounds to inf */
  uint16_t n = ge_f32_to_bf16(bitsf(0x7f800001u));               /* NaN with low payload */
  assert_int_equal(n & 0x7f80, 0x7f80);
  assert_true((n & 0x7f) != 0);
  assert_true(isnan(ge_bf16_to_f32(n)));
  assert_int_equal(ge_f32_to_bf16(bitsf(0x00010000u)), 0x0001); /* subnormal kept */
  assert_true(ge_bf16_to_f32(0x3f80) == 1.0f);
  assert_true(ge_bf16_to_f32(0x4049) == bitsf(0x40490000u));
  assert_true(isinf(ge_bf16_to_f32(0xff80)));
}

/* ------------------------------------------------------------------ tensors */

static int g_release_calls;
static void count_release(void *data, void *ctx) {
  assert_non_null(data);
  assert_ptr_equal(ctx, &g_release_calls);
  g_release_calls++;
}

static void test_tensor_create(void **state) {
  (void)state;
  int64_t dims[] = {2, 3};
  ge_tensor *t = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, dims, 2, &t), GE_OK);
  assert_int_equal(ge_tensor_dtype(t), GE_F32);
  assert_int_equal(ge_tensor_rank(t), 2);
  assert_int_equal(ge_tensor_dims(t)[1], 3);
  assert_int_equal(ge_tensor_numel(t), 6);
  assert_int_equal(ge_tensor_nbytes(t), 24);
  assert_int_equal((uintptr_t)ge_tensor_data(t) % 64, 0);
  const float *f = ge_tensor_data(t);
  for (int i = 0; i < 6; i++) assert_true(f[i] == 0.0f);
  ((float *)ge_tensor_data(t))[4] = 2.5f;
  assert_true(ge_tensor_get_f64(t, 4) == 2.5);
  assert_int_equal(ge_tensor_get_i64(t, 4), 2);
  ge_tensor *c = NULL;
  assert_int_equal(ge_tensor_clone(t, &c), GE_OK);
  assert_ptr_not_equal(ge_tensor_data(c), ge_tensor_data(t));
  ge_tensor_free(t);
  assert_true(((float *)ge_tensor_data(c))[4] == 2.5f);
  ge_tensor_free(c);

  /* scalars and empty tensors */
  ge_tensor *s = NULL, *e1 = NULL, *e2 = NULL;
  assert_int_equal(ge_tensor_create(GE_I64, NULL, 0, &s), GE_OK);
  assert_int_equal(ge_tensor_numel(s), 1);
  assert_int_equal(ge_tensor_nbytes(s), 8);
  int64_t z[] = {0, 5};
  assert_int_equal(ge_tensor_create(GE_F32, z, 2, &e1), GE_OK);
  assert_int_equal(ge_tensor_create(GE_F32, z, 2, &e2), GE_OK);
  assert_int_equal(ge_tensor_nbytes(e1), 0);
  assert_non_null(ge_tensor_data(e1));
  assert_ptr_not_equal(ge_tensor_data(e1), ge_tensor_data(e2));
  ge_tensor_free(s);
  ge_tensor_free(e1);
  ge_tensor_free(e2);

  /* NULL handling */
  ge_tensor_free(NULL);
  assert_int_equal(ge_tensor_rank(NULL), 0);
  assert_null(ge_tensor_data(NULL));
  assert_null(ge_tensor_dims(NULL));
  assert_int_equal(ge_tensor_nbytes(NULL), 0);
}

/* The THPeligible flag of the mapping that holds p in /proc/self/smaps: 1, 0, or -1 where the
   kernel does not report it. */
static int thp_eligible(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  bool in = false;
  int r = -1;
  uintptr_t a = (uintptr_t)p;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = a >= lo && a < hi;
      continue;
    }
    int v = 0;
    if (in && sscanf(line, "THPeligible: %d", &v) == 1) {
      r = v;
      break;
    }
  }
  fclose(f);
  return r;
}

/* Whether the kernel gives this process transparent huge pages where it asks for them:
   THP "madvise" or "always", and not turned off by prctl(PR_SET_THP_DISABLE).  mode: the
   setting as read, for messages. */
static bool thp_on(char *mode, size_t cap) {
  mode[0] = 0;
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    if (!fgets(mode, (int)cap, f)) mode[0] = 0;
    fclose(f);
  }
  mode[strcspn(mode, "\n")] = 0;
  return (strstr(mode, "[madvise]") || strstr(mode, "[always]")) && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0;
}

/* Large blocks come 2 MiB-aligned and advised for huge pages, small ones 64-byte aligned as
   before: with THP in "madvise" mode (Debian's default) only the advice makes the mapping
   eligible. */
static void test_aligned_alloc_huge(void **state) {
  (void)state;
  void *s = ge_aligned_alloc(1000);
  assert_non_null(s);
  assert_int_equal((uintptr_t)s % 64, 0);
  ge_aligned_free(s);
  size_t n = ((size_t)5 << 20) + 100;
  unsigned char *p = ge_aligned_alloc(n);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % ((size_t)2 << 20), 0);
  memset(p, 1, n);
  assert_int_equal(p[n - 1], 1);
  char mode[128];
  int elig = thp_eligible(p);
  if (thp_on(mode, sizeof mode) && elig >= 0)
    assert_int_equal(elig, 1);
  else
    printf("  (huge pages not checked: THP mode '%s', THPeligible %d)\n", mode, elig);
  ge_aligned_free(p);
}

/* Packed constants: small blocks share huge-page slabs (not under AddressSanitizer, where each
   is its own allocation: GE_CONST_SLABS), stay 64-byte aligned and apart; large ones are as
   ge_aligned_alloc. */
static void test_const_alloc(void **state) {
  (void)state;
  enum { NB = 40 };
  unsigned char *b[NB];
  size_t sz[NB];
  for (int i = 0; i < NB; i++) {
    sz[i] = (size_t)(i * 7919 % 300000) + (i == 0 ? 0 : 1); /* includes 0 bytes */
    b[i] = ge_const_alloc(sz[i]);
    assert_non_null(b[i]);
    assert_int_equal((uintptr_t)b[i] % 64, 0);
    memset(b[i], i + 1, sz[i]);
  }
  for (int i = 0; i < NB; i++)
    for (size_t k = 0; k < sz[i]; k += 997) assert_int_equal(b[i][k], i + 1);
  for (int i = 0; i < NB; i++)
    for (int j = i + 1; j < NB; j++)
      assert_true(b[i] + (sz[i] ? sz[i] : 1) <= b[j] || b[j] + (sz[j] ? sz[j] : 1) <= b[i]);
  char mode[128];
  int elig = thp_eligible(b[1]);
  if (GE_CONST_SLABS && thp_on(mode, sizeof mode) && elig >= 0) assert_int_equal(elig, 1);
  unsigned char *big = ge_const_alloc((size_t)3 << 20);
  assert_non_null(big);
  assert_int_equal((uintptr_t)big % ((size_t)2 << 20), 0);
  /* freed in another order than allocated; a block allocated after some are freed */
  for (int i = 0; i < NB; i += 2) ge_const_free(b[i]);
  unsigned char *late = ge_const_alloc(100);
  assert_non_null(late);
  memset(late, 0xAB, 100);
  for (int i = 1; i < NB; i += 2)
    for (size_t k = 0; k < sz[i]; k += 997) assert_int_equal(b[i][k], i + 1);
  for (int i = 1; i < NB; i += 2) ge_const_free(b[i]);
  ge_const_free(late);
  ge_const_free(big);
  ge_const_free(NULL);
}

static void test_tensor_errors(void **state) {
  (void)state;
  ge_tensor *t = (ge_tensor *)0x1;
  int64_t neg[] = {2, -3};
  assert_int_equal(ge_tensor_create(GE_F32, neg, 2, &t), GE_ERR_INVALID_ARGUMENT);
  assert_null(t);
  assert_non_null(strstr(ge_last_error(), "[2,-3]"));
  int64_t huge[] = {INT64_MAX, INT64_MAX};
  assert_int_equal(ge_tensor_create(GE_F32, huge, 2, &t), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "overflow"));
  int64_t big[] = {(int64_t)1 << 62};
  assert_int_equal(ge_tensor_create(GE_F64, big, 1, &t), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "overflow"));
  int64_t d17[17] = {0};
  assert_int_equal(ge_tensor_create(GE_F32, d17, 17, &t), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_tensor_create(GE_DTYPE_COUNT, NULL, 0, &t), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_tensor_create(GE_F32, NULL, 2, &t), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_tensor_create(GE_F32, NULL, 0, NULL), GE_ERR_INVALID_ARGUMENT);
}

static void test_tensor_wrap(void **state) {
  (void)state;
  float *buf = malloc(4 * sizeof(float));
  for (int i = 0; i < 4; i++) buf[i] = (float)i;
  int64_t dims[] = {4};
  ge_tensor *t = NULL;
  g_release_calls = 0;
  assert_int_equal(ge_tensor_wrap(GE_F32, dims, 1, buf, 12, count_release, &g_release_calls, &t),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "nbytes"));
  assert_int_equal(ge_tensor_wrap(GE_STRING, dims, 1, buf, 32, NULL, NULL, &t),
                   GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(g_release_calls, 0);
  assert_int_equal(ge_tensor_wrap(GE_F32, dims, 1, buf, 16, count_release, &g_release_calls, &t),
                   GE_OK);
  assert_ptr_equal(ge_tensor_data(t), buf);
  assert_true(ge_tensor_get_f64(t, 3) == 3.0);
  ge_tensor *c = NULL;
  assert_int_equal(ge_tensor_clone(t, &c), GE_OK);
  ge_tensor_free(t);
  assert_int_equal(g_release_calls, 1);
  ge_tensor_free(c);
  assert_int_equal(g_release_calls, 1);
  free(buf);
}

static void test_tensor_strings(void **state) {
  (void)state;
  int64_t dims[] = {3};
  ge_tensor *t = NULL, *c = NULL;
  assert_int_equal(ge_tensor_create(GE_STRING, dims, 1, &t), GE_OK);
  char **s = ge_tensor_data(t);
  for (int i = 0; i < 3; i++) assert_null(s[i]);
  assert_int_equal(ge_tensor_set_string(t, 0, "hello"), GE_OK);
  assert_int_equal(ge_tensor_set_string(t, 2, "world"), GE_OK);
  assert_int_equal(ge_tensor_set_string(t, 2, "again"), GE_OK);
  assert_int_equal(ge_tensor_set_string(t, 3, "x"), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_tensor_clone(t, &c), GE_OK);
  ge_tensor_free(t);
  char **cs = ge_tensor_data(c);
  assert_string_equal(cs[0], "hello");
  assert_null(cs[1]);
  assert_string_equal(cs[2], "again");
  ge_tensor_free(c);
  ge_tensor *f = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, dims, 1, &f), GE_OK);
  assert_int_equal(ge_tensor_set_string(f, 0, "x"), GE_ERR_INVALID_ARGUMENT);
  ge_tensor_free(f);
}

static void test_tensor_reads(void **state) {
  (void)state;
  int64_t d[] = {2};
  ge_tensor *t;
  assert_int_equal(ge_tensor_create(GE_F16, d, 1, &t), GE_OK);
  ((uint16_t *)t->data)[1] = ge_f32_to_f16(-3.5f);
  assert_true(ge_tensor_get_f64(t, 1) == -3.5);
  assert_int_equal(ge_tensor_get_i64(t, 1), -3);
  ge_tensor_free(t);
  assert_int_equal(ge_tensor_create(GE_BF16, d, 1, &t), GE_OK);
  ((uint16_t *)t->data)[0] = ge_f32_to_bf16(7.0f);
  assert_int_equal(ge_tensor_get_i64(t, 0), 7);
  ge_tensor_free(t);
  assert_int_equal(ge_tensor_create(GE_BOOL, d, 1, &t), GE_OK);
  ((uint8_t *)t->data)[1] = 1;
  assert_int_equal(ge_tensor_get_i64(t, 1), 1);
  assert_true(ge_tensor_get_f64(t, 0) == 0.0);
  ge_tensor_free(t);
  assert_int_equal(ge_tensor_create(GE_U64, d, 1, &t), GE_OK);
  ((uint64_t *)t->data)[0] = UINT64_MAX;
  assert_int_equal(ge_tensor_get_i64(t, 0), INT64_MAX);
  ge_tensor_free(t);
  assert_int_equal(ge_tensor_create(GE_I8, d, 1, &t), GE_OK);
  ((int8_t *)t->data)[0] = -5;
  assert_int_equal(ge_tensor_get_i64(t, 0), -5);
  assert_int_equal(ge_tensor_get_i64(t, 7), 0); /* out of range */
  ge_tensor_free(t);
  assert_int_equal(ge_tensor_create(GE_F32, d, 1, &t), GE_OK);
  ((float *)t->data)[0] = NAN;
  ((float *)t->data)[1] = 1e30f;
  assert_int_equal(ge_tensor_get_i64(t, 0), 0);
  assert_int_equal(ge_tensor_get_i64(t, 1), INT64_MAX);
  ge_tensor_free(t);

  /* struct tensors: init/release/view */
  ge_tensor st;
  int64_t d2[] = {3, 2};
  assert_int_equal(ge_tensor_init_alloc(&st, GE_I32, d2, 2), GE_OK);
  assert_true(st.owns);
  ge_tensor v;
  ge_tensor_view(&v, &st);
  assert_false(v.owns);
  assert_ptr_equal(v.data, st.data);
  ge_shape sh;
  ge_tensor_shape(&v, &sh);
  assert_int_equal(sh.rank, 2);
  assert_int_equal(sh.dims[0], 3);
  ge_tensor_release_storage(&v); /* a view frees nothing */
  ge_tensor_release_storage(&st);
  assert_null(st.data);
  ge_tensor *cs = NULL;
  assert_int_equal(ge_tensor_create_shape(GE_U8, &sh, &cs), GE_OK);
  assert_int_equal(ge_tensor_nbytes(cs), 6);
  ge_tensor_free(cs);
  sh.dims[1] = GE_DIM_SYM(0);
  assert_int_equal(ge_tensor_create_shape(GE_U8, &sh, &cs), GE_ERR_SHAPE);
}

/* ------------------------------------------------------------------ shapes */

static ge_shape mk(int32_t rank, const int64_t *d) {
  ge_shape s;
  memset(&s, 0, sizeof s);
  s.rank = rank;
  for (int32_t i = 0; i < rank; i++) s.dims[i] = d[i];
  return s;
}

static void test_broadcast(void **state) {
  (void)state;
  ge_shape out;
  const int64_t N = GE_DIM_SYM(0), M = GE_DIM_SYM(1);
  ge_shape a = mk(3, (int64_t[]){2, 1, 4}), b = mk(2, (int64_t[]){3, 1});
  assert_int_equal(ge_shape_broadcast(&a, &b, &out), GE_OK);
  assert_int_equal(out.rank, 3);
  assert_int_equal(out.dims[0], 2);
  assert_int_equal(out.dims[1], 3);
  assert_int_equal(out.dims[2], 4);
  ge_shape c = mk(1, (int64_t[]){5}), d = mk(2, (int64_t[]){2, 4});
  assert_int_equal(ge_shape_broadcast(&c, &d, &out), GE_ERR_SHAPE);
  assert_non_null(strstr(ge_last_error(), "[5]"));
  /* symbolic */
  ge_shape s1 = mk(2, (int64_t[]){N, 1}), s2 = mk(2, (int64_t[]){1, 8});
  assert_int_equal(ge_shape_broadcast(&s1, &s2, &out), GE_OK);
  assert_int_equal(out.dims[0], N);
  assert_int_equal(out.dims[1], 8);
  ge_shape s3 = mk(1, (int64_t[]){N}), s4 = mk(1, (int64_t[]){N});
  assert_int_equal(ge_shape_broadcast(&s3, &s4, &out), GE_OK);
  assert_int_equal(out.dims[0], N);
  ge_shape s5 = mk(1, (int64_t[]){M});
  assert_int_equal(ge_shape_broadcast(&s3, &s5, &out), GE_OK);
  assert_int_equal(out.dims[0], GE_DIM_UNKNOWN);
  ge_shape s6 = mk(1, (int64_t[]){GE_DIM_UNKNOWN});
  assert_int_equal(ge_shape_broadcast(&s3, &s6, &out), GE_OK);
  assert_int_equal(out.dims[0], GE_DIM_UNKNOWN);
  ge_shape s7 = mk(1, (int64_t[]){7});
  assert_int_equal(ge_shape_broadcast(&s3, &s7, &out), GE_OK);
  assert_int_equal(out.dims[0], 7);
  assert_int_equal(ge_shape_broadcast(&s6, &s7, &out), GE_OK);
  assert_int_equal(out.dims[0], 7);
  ge_shape u;
  memset(&u, 0, sizeof u);
  u.rank = GE_RANK_UNKNOWN;
  assert_int_equal(ge_shape_broadcast(&u, &s7, &out), GE_OK);
  assert_int_equal(out.rank, GE_RANK_UNKNOWN);
  /* scalar */
  ge_shape sc = mk(0, NULL);
  assert_int_equal(ge_shape_broadcast(&sc, &a, &out), GE_OK);
  assert_true(ge_shape_equal(&out, &a));
}

static void test_shape_misc(void **state) {
  (void)state;
  char buf[128];
  ge_graph *g = ge_graph_new("g", NULL);
  assert_non_null(g);
  size_t n = ge_graph_sym(g, "N");
  assert_int_equal(n, 0);
  assert_int_equal(ge_graph_sym(g, "seq"), 1);
  assert_int_equal(ge_graph_sym(g, "N"), 0);
  ge_shape s = mk(4, (int64_t[]){GE_DIM_SYM(0), GE_DIM_UNKNOWN, 768, GE_DIM_SYM(1)});
  assert_string_equal(ge_shape_str(&s, g, buf, sizeof buf), "[N,?,768,seq]");
  assert_string_equal(ge_shape_str(&s, NULL, buf, sizeof buf), "[s0,?,768,s1]");
  ge_graph *sub = ge_graph_new("sub", g);
  assert_int_equal(ge_graph_sym(sub, "seq"), 1); /* symbols live in the root */
  assert_string_equal(ge_shape_str(&s, sub, buf, sizeof buf), "[N,?,768,seq]");
  ge_graph_free(sub);
  ge_shape u;
  memset(&u, 0, sizeof u);
  u.rank = GE_RANK_UNKNOWN;
  assert_string_equal(ge_shape_str(&u, g, buf, sizeof buf), "[*]");
  ge_shape sc = mk(0, NULL);
  assert_string_equal(ge_shape_str(&sc, g, buf, sizeof buf), "[]");
  ge_shape st = mk(3, (int64_t[]){2, 3, 4});
  size_t ne;
  assert_true(ge_shape_is_static(&st));
  assert_true(ge_shape_numel(&st, &ne));
  assert_int_equal(ne, 24);
  assert_false(ge_shape_is_static(&s));
  assert_false(ge_shape_numel(&s, &ne));
  ge_shape ov = mk(3, (int64_t[]){INT64_MAX, INT64_MAX, 2});
  assert_false(ge_shape_numel(&ov, &ne));
  char tiny[4];
  ge_shape_str(&st, NULL, tiny, sizeof tiny);
  assert_true(strlen(tiny) < 4);
  size_t r;
  assert_true(ge_mul_overflow_size(SIZE_MAX, 2, &r));
  assert_false(ge_mul_overflow_size(3, 4, &r));
  assert_int_equal(r, 12);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ graphs */

static void test_graph_values_and_index(void **state) {
  (void)state;
  ge_graph *g = ge_graph_new("big", NULL);
  char name[32];
  for (int i = 0; i < 5000; i++) {
    int32_t id;
    snprintf(name, sizeof name, "v%d", i);
    assert_int_equal(ge_graph_value(g, name, &id), GE_OK);
    assert_int_equal(id, i);
  }
  for (int i = 0; i < 5000; i += 7) {
    snprintf(name, sizeof name, "v%d", i);
    assert_int_equal(ge_graph_find_value(g, name), i);
    int32_t id;
    assert_int_equal(ge_graph_value(g, name, &id), GE_OK);
    assert_int_equal(id, i);
  }
  assert_int_equal(ge_graph_find_value(g, "nope"), -1);
  assert_int_equal(g->n_values, 5000);
  assert_int_equal(g->values[3].kind, GE_VALUE_INTERMEDIATE);
  assert_int_equal(g->values[3].producer, -1);
  int32_t id;
  assert_int_equal(ge_graph_value(g, "", &id), GE_ERR_INVALID_ARGUMENT);
  ge_graph_free(g);
}

static ge_graph *build_chain(void) {
  /* x -> Relu(a) -> Neg(b) -> Add(b, w) -> y */
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("chain", &g), GE_OK);
  int64_t dims[] = {-1, 4};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, dims, 2), GE_OK);
  int64_t wd[] = {4};
  ge_tensor *w;
  assert_int_equal(ge_tensor_create(GE_F32, wd, 1, &w), GE_OK);
  assert_int_equal(ge_graph_add_constant(g, "w", w), GE_OK);
  ge_tensor_free(w);
  const char *i0[] = {"x"}, *o0[] = {"a"};
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu", i0, 1, o0, 1, NULL, 0), GE_OK);
  const char *i1[] = {"a"}, *o1[] = {"b"};
  assert_int_equal(ge_graph_add_node(g, "Neg", "", i1, 1, o1, 1, NULL, 0), GE_OK);
  const char *i2[] = {"b", "w"}, *o2[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Add", "add", i2, 2, o2, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  return g;
}

static void test_graph_builder(void **state) {
  (void)state;
  ge_graph *g = build_chain();
  assert_int_equal(ge_graph_num_inputs(g), 1);
  assert_int_equal(ge_graph_num_outputs(g), 1);
  assert_int_equal(ge_graph_num_nodes(g), 3);
  assert_int_equal(ge_graph_opset(g, ""), GE_ONNX_OPSET_MAX);
  assert_int_equal(ge_graph_opset(g, "ai.onnx"), GE_ONNX_OPSET_MAX);
  assert_int_equal(ge_graph_opset(g, "ai.ge"), 1);
  assert_int_equal(g->nodes[0].opset, GE_ONNX_OPSET_MAX);
  const char *name;
  ge_dtype dt;
  const int64_t *dims;
  size_t rank;
  assert_int_equal(ge_graph_input_info(g, 0, &name, &dt, &dims, &rank), GE_OK);
  assert_string_equal(name, "x");
  assert_int_equal(dt, GE_F32);
  assert_int_equal(rank, 2);
  assert_int_equal(dims[0], -1);
  assert_int_equal(dims[1], 4);
  assert_null(ge_graph_input_dim_name(g, 0, 0));
  assert_int_equal(ge_graph_input_info(g, 1, &name, &dt, &dims, &rank), GE_ERR_NOT_FOUND);
  assert_int_equal(ge_graph_output_info(g, 0, &name, &dt, &dims, &rank), GE_OK);
  assert_string_equal(name, "y");
  assert_int_equal(ge_graph_output_info(g, 1, &name, &dt, &dims, &rank), GE_ERR_NOT_FOUND);
  /* a symbolic dim is reported as -1 and by name */
  g->values[g->inputs[0]].type.shape.dims[0] = GE_DIM_SYM(ge_graph_sym(g, "batch"));
  assert_int_equal(ge_graph_input_info(g, 0, &name, &dt, &dims, &rank), GE_OK);
  assert_int_equal(dims[0], -1);
  assert_string_equal(ge_graph_input_dim_name(g, 0, 0), "batch");
  assert_null(ge_graph_input_dim_name(g, 0, 1));
  assert_null(ge_graph_input_dim_name(g, 0, 5));
  /* node description */
  char buf[64];
  assert_string_equal(ge_node_desc(&g->nodes[0], buf, sizeof buf), "node 'relu' (Relu)");
  assert_string_equal(ge_node_desc(&g->nodes[1], buf, sizeof buf), "node #1 (Neg)");
  /* errors */
  const char *in[] = {"x"}, *out_a[] = {"a"}, *out_x[] = {"x"}, *out_w[] = {"w"};
  assert_int_equal(ge_graph_add_node(g, "Relu", "dup", in, 1, out_a, 1, NULL, 0),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "dup"));
  assert_non_null(strstr(ge_last_error(), "'a'"));
  assert_non_null(strstr(ge_last_error(), "relu"));
  assert_int_equal(ge_graph_add_node(g, "Relu", "r2", in, 1, out_x, 1, NULL, 0),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "input"));
  assert_int_equal(ge_graph_add_node(g, "Relu", "r3", in, 1, out_w, 1, NULL, 0),
                   GE_ERR_INVALID_ARGUMENT);
  const char *twice[] = {"t", "t"};
  assert_int_equal(ge_graph_add_node(g, "Split", "sp", in, 1, twice, 2, NULL, 0),
                   GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(g->values[ge_graph_find_value(g, "t")].producer, -1); /* rolled back */
  assert_int_equal(ge_graph_add_node(g, "Relu", "n", NULL, 1, out_a, 1, NULL, 0),
                   GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_graph_add_node(g, "Relu", "n", in, 1, out_a, 1, NULL, 2),
                   GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_graph_add_node(g, "", "n", in, 1, out_a, 1, NULL, 0),
                   GE_ERR_INVALID_ARGUMENT);
  int64_t d1[] = {1};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, d1, 1), GE_ERR_INVALID_ARGUMENT);
  int64_t bad[] = {-2};
  assert_int_equal(ge_graph_add_input(g, "z", GE_F32, bad, 1), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_graph_add_output(g, "missing"), GE_ERR_NOT_FOUND);
  assert_non_null(strstr(ge_last_error(), "missing"));
  assert_int_equal(ge_graph_num_nodes(g), 3);
  /* duplicate attributes */
  ge_attr at[] = {GE_ATTR_INT("axis", 1), GE_ATTR_INT("axis", 2)};
  const char *o9[] = {"o9"};
  assert_int_equal(ge_graph_add_node(g, "Concat", "c", in, 1, o9, 1, at, 2),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "axis"));
  /* domains */
  assert_int_equal(ge_graph_add_node(g, "ai.ge::Summary", "s", in, 1, NULL, 0, NULL, 0), GE_OK);
  assert_string_equal(g->nodes[3].domain, "ai.ge");
  assert_string_equal(g->nodes[3].op_type, "Summary");
  assert_int_equal(g->nodes[3].opset, 1);
  assert_int_equal(ge_graph_add_node(g, "ai.onnx::Relu", "r", in, 1, o9, 1, NULL, 0), GE_OK);
  assert_string_equal(g->nodes[4].domain, "");
  assert_int_equal(ge_graph_set_opset(g, "", 13), GE_OK);
  assert_int_equal(g->nodes[4].opset, 13);
  assert_int_equal(ge_graph_set_opset(g, "", 0), GE_ERR_INVALID_ARGUMENT);
  assert_int_equal(ge_graph_set_opset(g, "", 99), GE_ERR_UNSUPPORTED);
  /* use counts */
  int32_t *uc = NULL;
  assert_int_equal(ge_graph_use_counts(g, &uc), GE_OK);
  assert_int_equal(uc[ge_graph_find_value(g, "x")], 3);
  assert_int_equal(uc[ge_graph_find_value(g, "y")], 1);
  free(uc);
  ge_graph_free(g);
  ge_graph_free(NULL);
}

static void test_default_inputs(void **state) {
  (void)state;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("d", &g), GE_OK);
  int64_t d[] = {2};
  assert_int_equal(ge_graph_add_input(g, "a", GE_F32, d, 1), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "b", GE_F32, d, 1), GE_OK);
  ge_tensor *t;
  assert_int_equal(ge_tensor_create(GE_F32, d, 1, &t), GE_OK);
  assert_int_equal(ge_graph_add_constant(g, "a", t), GE_OK); /* a default for input a */
  assert_int_equal(ge_graph_add_constant(g, "a", t), GE_ERR_INVALID_ARGUMENT);
  ge_tensor_free(t);
  assert_int_equal(g->n_inputs, 2);
  assert_int_equal(ge_graph_num_inputs(g), 1);
  const char *name;
  assert_int_equal(ge_graph_input_info(g, 0, &name, NULL, NULL, NULL), GE_OK);
  assert_string_equal(name, "b");
  ge_graph_free(g);
}

/* Shuffled diamond: nodes listed out of order. */
static void test_toposort(void **state) {
  (void)state;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("topo", &g), GE_OK);
  int64_t d[] = {1};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, d, 1), GE_OK);
  const char *e_in[] = {"c", "b"}, *e_out[] = {"y"};
  const char *c_in[] = {"a"}, *c_out[] = {"c"};
  const char *b_in[] = {"a"}, *b_out[] = {"b"};
  const char *a_in[] = {"x"}, *a_out[] = {"a"};
  const char *f_in[] = {"x"}, *f_out[] = {"f"};
  assert_int_equal(ge_graph_add_node(g, "Add", "E", e_in, 2, e_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Neg", "C", c_in, 1, c_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Abs", "F", f_in, 1, f_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Relu", "B", b_in, 1, b_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Exp", "A", a_in, 1, a_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  const char *expect[] = {"F", "A", "C", "B", "E"};
  for (size_t i = 0; i < 5; i++) {
    assert_string_equal(g->nodes[i].name, expect[i]);
    assert_int_equal(g->nodes[i].index, (int32_t)i);
    for (size_t k = 0; k < g->nodes[i].n_outputs; k++)
      assert_int_equal(g->values[g->nodes[i].outputs[k]].producer, (int32_t)i);
  }
  /* sorting a sorted graph changes nothing */
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  for (size_t i = 0; i < 5; i++) assert_string_equal(g->nodes[i].name, expect[i]);
  /* a value used but never produced */
  const char *m_in[] = {"ghost"}, *m_out[] = {"m"};
  assert_int_equal(ge_graph_add_node(g, "Neg", "M", m_in, 1, m_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "'M'"));
  assert_non_null(strstr(ge_last_error(), "ghost"));
  ge_graph_free(g);

  /* a long chain inserted in reverse order */
  assert_int_equal(ge_graph_create("rev", &g), GE_OK);
  assert_int_equal(ge_graph_add_input(g, "v0", GE_F32, d, 1), GE_OK);
  enum { N = 20000 };
  char in[32], out[32];
  for (int i = N; i >= 1; i--) {
    snprintf(in, sizeof in, "v%d", i - 1);
    snprintf(out, sizeof out, "v%d", i);
    const char *ii[] = {in}, *oo[] = {out};
    assert_int_equal(ge_graph_add_node(g, "Neg", NULL, ii, 1, oo, 1, NULL, 0), GE_OK);
  }
  assert_int_equal(ge_graph_toposort(g), GE_OK);
  for (int i = 0; i < N; i++) {
    snprintf(in, sizeof in, "v%d", i);
    assert_string_equal(g->values[g->nodes[i].inputs[0]].name, in);
  }
  ge_graph_free(g);
}

static void test_cycle(void **state) {
  (void)state;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("cyc", &g), GE_OK);
  int64_t d[] = {1};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, d, 1), GE_OK);
  /* head -> (p <-> q) -> tail: the message must name p or q */
  const char *h_in[] = {"x"}, *h_out[] = {"h"};
  const char *t_in[] = {"pq"}, *t_out[] = {"t"};
  const char *p_in[] = {"h", "qp"}, *p_out[] = {"pq"};
  const char *q_in[] = {"pq"}, *q_out[] = {"qp"};
  assert_int_equal(ge_graph_add_node(g, "Neg", "tail", t_in, 1, t_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Neg", "head", h_in, 1, h_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Add", "p", p_in, 2, p_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Neg", "q", q_in, 1, q_out, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_ERR_INVALID_ARGUMENT);
  const char *msg = ge_last_error();
  assert_non_null(strstr(msg, "cycle"));
  assert_true(strstr(msg, "node 'p'") || strstr(msg, "node 'q'"));
  ge_graph_free(g);
  /* self loop */
  assert_int_equal(ge_graph_create("self", &g), GE_OK);
  const char *s_io[] = {"s"};
  assert_int_equal(ge_graph_add_node(g, "Neg", "selfie", s_io, 1, s_io, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_toposort(g), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "selfie"));
  ge_graph_free(g);
}

static void test_outer_scope(void **state) {
  (void)state;
  ge_graph *g = build_chain();
  ge_graph *sub = ge_graph_new("then", g);
  int32_t id;
  assert_int_equal(ge_graph_resolve_input(sub, "a", &id), GE_OK);
  assert_int_equal(sub->values[id].kind, GE_VALUE_OUTER);
  assert_string_equal(sub->values[id].name, "a");
  int32_t id2;
  assert_int_equal(ge_graph_resolve_input(sub, "a", &id2), GE_OK);
  assert_int_equal(id2, id);
  assert_int_equal(ge_graph_resolve_input(sub, "x", &id), GE_OK);
  assert_int_equal(sub->values[id].type.dtype, GE_F32);
  assert_int_equal(sub->values[id].type.shape.rank, 2);
  assert_int_equal(ge_graph_resolve_input(sub, "nowhere", &id), GE_ERR_NOT_FOUND);
  assert_non_null(strstr(ge_last_error(), "nowhere"));
  /* nested two levels, and nodes reading outer values */
  ge_graph *sub2 = ge_graph_new("inner", sub);
  const char *in[] = {"w", "b"}, *out[] = {"r"};
  assert_int_equal(ge_graph_append_node(sub2, "Add", "ai.onnx", "inner_add", in, 2, out, 1, NULL),
                   GE_OK);
  assert_string_equal(sub2->nodes[0].domain, "");
  assert_int_equal(sub2->nodes[0].opset, GE_ONNX_OPSET_MAX); /* from the root */
  assert_int_equal(sub2->values[sub2->nodes[0].inputs[0]].kind, GE_VALUE_OUTER);
  assert_int_equal(sub2->values[sub2->nodes[0].inputs[1]].kind, GE_VALUE_OUTER);
  assert_int_equal(ge_graph_toposort(sub2), GE_OK);
  ge_graph_free(sub2);
  ge_graph_free(sub);
  ge_graph_free(g);
}

/* A subgraph built on its own, attached as an attribute: unresolved inputs become OUTER at
   toposort; the clone is deep. */
static void test_attrs_and_clone(void **state) {
  (void)state;
  ge_graph *body = NULL;
  assert_int_equal(ge_graph_create("body", &body), GE_OK);
  const char *bi[] = {"a"}, *bo[] = {"r"};
  assert_int_equal(ge_graph_add_node(body, "Neg", "bneg", bi, 1, bo, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(body, "r"), GE_OK);

  ge_graph *g = build_chain();
  size_t nsym = ge_graph_sym(g, "batch");
  g->values[g->inputs[0]].type.shape.dims[0] = GE_DIM_SYM(nsym);
  int64_t td[] = {2};
  ge_tensor *t, *ts;
  assert_int_equal(ge_tensor_create(GE_I64, td, 1, &t), GE_OK);
  ((int64_t *)t->data)[1] = 42;
  assert_int_equal(ge_tensor_create(GE_STRING, td, 1, &ts), GE_OK);
  assert_int_equal(ge_tensor_set_string(ts, 1, "str"), GE_OK);
  const float fl[] = {1.5f, 2.5f};
  const int64_t il[] = {3, 4, 5};
  const char *sl[] = {"p", "q"};
  const ge_tensor *tl[] = {t, ts};
  const ge_graph *gl[] = {body, body};
  ge_attr attrs[] = {
      GE_ATTR_FLOAT("f", 0.25f),
      GE_ATTR_INT("i", -7),
      GE_ATTR_STRING("s", "hello"),
      GE_ATTR_TENSOR("t", t),
      GE_ATTR_GRAPH("then_branch", body),
      GE_ATTR_FLOATS("fs", fl, 2),
      GE_ATTR_INTS("is", il, 3),
      GE_ATTR_STRINGS("ss", sl, 2),
      {.name = "ts", .kind = GE_ATTR_KIND_TENSORS, .v.tensors = {tl, 2}},
      {.name = "gs", .kind = GE_ATTR_KIND_GRAPHS, .v.graphs = {gl, 2}},
      GE_ATTR_INTS("empty", NULL, 0),
  };
  const char *in[] = {"x"}, *out[] = {"o"};
  assert_int_equal(ge_graph_add_node(g, "If", "if", in, 1, out, 1, attrs, 11), GE_OK);
  ge_tensor_free(t);
  ge_tensor_free(ts);
  ge_graph_free(body);
  /* bad attributes */
  ge_attr nullt = GE_ATTR_TENSOR("t", NULL);
  const char *o2[] = {"o2"};
  assert_int_equal(ge_graph_add_node(g, "X", "x2", in, 1, o2, 1, &nullt, 1),
                   GE_ERR_INVALID_ARGUMENT);
  ge_attr nullfs = GE_ATTR_FLOATS("fs", NULL, 3);
  assert_int_equal(ge_graph_add_node(g, "X", "x2", in, 1, o2, 1, &nullfs, 1),
                   GE_ERR_INVALID_ARGUMENT);
  ge_attr undef = {.name = "u", .kind = GE_ATTR_KIND_UNDEFINED};
  assert_int_equal(ge_graph_add_node(g, "X", "x2", in, 1, o2, 1, &undef, 1),
                   GE_ERR_INVALID_ARGUMENT);

  ge_node *n = &g->nodes[3];
  assert_int_equal(n->n_attrs, 11);
  const ge_attr_value *sg = ge_node_attr(n, "then_branch");
  assert_non_null(sg);
  assert_ptr_equal(sg->g->parent, g);
  assert_int_equal(ge_graph_toposort(sg->g), GE_OK); /* "a" resolves to the outer graph */
  assert_int_equal(sg->g->values[sg->g->nodes[0].inputs[0]].kind, GE_VALUE_OUTER);

  ge_graph *c = NULL;
  assert_int_equal(ge_graph_clone(g, NULL, &c), GE_OK);
  ge_graph_free(g);

  /* use the clone only */
  assert_int_equal(ge_graph_num_nodes(c), 4);
  assert_string_equal(ge_graph_input_dim_name(c, 0, 0), "batch");
  assert_int_equal(ge_graph_find_value(c, "w"), 1);
  assert_non_null(c->values[1].constant);
  n = &c->nodes[3];
  assert_true(ge_node_attr_float(n, "f", 0) == 0.25f);
  assert_int_equal(ge_node_attr_int(n, "i", 0), -7);
  assert_int_equal(ge_node_attr_int(n, "missing", 9), 9);
  assert_int_equal(ge_node_attr_int(n, "f", 9), 9); /* wrong kind: default */
  assert_string_equal(ge_node_attr_string(n, "s", NULL), "hello");
  assert_int_equal(ge_node_attr(n, "s")->s_len, 5);
  const ge_attr_value *at = ge_node_attr(n, "t");
  assert_int_equal(ge_tensor_get_i64(at->t, 1), 42);
  const float *fd;
  size_t cnt;
  assert_true(ge_node_attr_floats(n, "fs", &fd, &cnt));
  assert_int_equal(cnt, 2);
  assert_true(fd[1] == 2.5f);
  const int64_t *idt;
  assert_true(ge_node_attr_ints(n, "is", &idt, &cnt));
  assert_int_equal(cnt, 3);
  assert_int_equal(idt[2], 5);
  assert_true(ge_node_attr_ints(n, "empty", &idt, &cnt));
  assert_int_equal(cnt, 0);
  assert_false(ge_node_attr_ints(n, "fs", &idt, &cnt));
  assert_null(idt);
  const ge_attr_value *ss = ge_node_attr(n, "ss");
  assert_int_equal(ss->n, 2);
  assert_string_equal(ss->strings[1], "q");
  const ge_attr_value *tsv = ge_node_attr(n, "ts");
  assert_int_equal(tsv->n, 2);
  assert_string_equal(((char **)tsv->tensors[1]->data)[1], "str");
  const ge_attr_value *gsv = ge_node_attr(n, "gs");
  assert_int_equal(gsv->n, 2);
  assert_ptr_equal(gsv->graphs[0]->parent, c);
  assert_ptr_equal(gsv->graphs[1]->parent, c);
  assert_int_equal(ge_graph_num_nodes(gsv->graphs[1]), 1);
  sg = ge_node_attr(n, "then_branch");
  assert_ptr_equal(sg->g->parent, c);
  assert_int_equal(sg->g->values[sg->g->nodes[0].inputs[0]].kind, GE_VALUE_OUTER);
  assert_int_equal(ge_graph_toposort(c), GE_OK);

  /* copy and add an attribute by hand */
  ge_attr_value cp;
  assert_int_equal(ge_attr_value_copy(&cp, ge_node_attr(n, "gs"), c), GE_OK);
  free(cp.name);
  cp.name = strdup("gs2");
  assert_int_equal(ge_node_add_attr(n, &cp), GE_OK);
  assert_null(cp.name);
  assert_int_equal(ge_attr_value_copy(&cp, ge_node_attr(n, "i"), c), GE_OK);
  assert_int_equal(ge_node_add_attr(n, &cp), GE_ERR_INVALID_ARGUMENT); /* duplicate */
  ge_attr_value_clear(&cp);
  assert_string_equal(ge_attr_kind_name(GE_ATTR_KIND_GRAPHS), "graphs");

  /* a clone of a clone, then free in the other order */
  ge_graph *c2 = NULL;
  assert_int_equal(ge_graph_clone(c, NULL, &c2), GE_OK);
  ge_graph_free(c);
  assert_int_equal(ge_graph_num_nodes(c2), 4);
  assert_int_equal(ge_node_attr(&c2->nodes[3], "gs2")->n, 2);
  ge_graph_free(c2);
}

static void test_clone_functions_and_meta(void **state) {
  (void)state;
  ge_graph *g = build_chain();
  g->producer_name = strdup("test");
  g->n_meta = 1;
  g->meta_keys = calloc(1, sizeof(char *));
  g->meta_values = calloc(1, sizeof(char *));
  g->meta_keys[0] = strdup("k");
  g->meta_values[0] = strdup("v");
  g->functions = calloc(1, sizeof(ge_function));
  g->n_functions = 1;
  ge_function *f = &g->functions[0];
  f->name = strdup("MyFn");
  f->domain = strdup("local");
  f->n_inputs = 1;
  f->inputs = calloc(1, sizeof(char *));
  f->inputs[0] = strdup("X");
  f->body = ge_graph_new("MyFn", NULL);
  const char *in[] = {"X"}, *out[] = {"Y"};
  assert_int_equal(ge_graph_append_node(f->body, "Neg", "", "", in, 1, out, 1, NULL), GE_OK);
  ge_graph *c = NULL;
  assert_int_equal(ge_graph_clone(g, NULL, &c), GE_OK);
  ge_graph_free(g);
  assert_string_equal(c->producer_name, "test");
  assert_string_equal(c->meta_values[0], "v");
  assert_int_equal(c->n_functions, 1);
  assert_string_equal(c->functions[0].inputs[0], "X");
  assert_int_equal(ge_graph_num_nodes(c->functions[0].body), 1);
  ge_graph_free(c);
}

/* A standalone subgraph with its own symbols, attached to a graph with other symbols: the
   attribute copy re-expresses its symbolic dims in the new root's table. */
static void test_clone_symbol_remap(void **state) {
  (void)state;
  ge_graph *body = NULL, *g = NULL;
  assert_int_equal(ge_graph_create("body", &body), GE_OK);
  int64_t d[] = {-1, 3};
  assert_int_equal(ge_graph_add_input(body, "bx", GE_F32, d, 2), GE_OK);
  body->values[body->inputs[0]].type.shape.dims[0] = GE_DIM_SYM(ge_graph_sym(body, "N"));
  assert_int_equal(ge_graph_create("main", &g), GE_OK);
  assert_int_equal(ge_graph_sym(g, "batch"), 0);
  assert_int_equal(ge_graph_sym(g, "seq"), 1);
  ge_attr a = GE_ATTR_GRAPH("body", body);
  const char *out[] = {"o"};
  assert_int_equal(ge_graph_add_node(g, "Loop", "loop", NULL, 0, out, 1, &a, 1), GE_OK);
  ge_graph_free(body);
  ge_graph *sub = g->nodes[0].attrs[0].g;
  int64_t dim = sub->values[sub->inputs[0]].type.shape.dims[0];
  assert_true(dim <= -2);
  assert_string_equal(g->syms[GE_DIM_SYM_ID(dim)], "N");
  char buf[64];
  assert_string_equal(ge_shape_str(&sub->values[sub->inputs[0]].type.shape, sub, buf, sizeof buf),
                      "[N,3]");
  /* a subgraph output may name an outer value */
  int64_t d1[] = {1};
  assert_int_equal(ge_graph_add_input(g, "gx", GE_F32, d1, 1), GE_OK);
  assert_int_equal(ge_graph_add_output(sub, "gx"), GE_OK);
  assert_int_equal(sub->values[sub->outputs[0]].kind, GE_VALUE_OUTER);
  ge_graph_free(g);
}

/* ------------------------------------------------------------------ tensor map */

static void test_tensor_map(void **state) {
  (void)state;
  ge_tensor_map *m = NULL;
  assert_int_equal(ge_tensor_map_create(&m), GE_OK);
  assert_int_equal(ge_tensor_map_size(m), 0);
  assert_null(ge_tensor_map_find(m, "a"));
  int64_t d[] = {1};
  char key[32];
  for (int i = 0; i < 300; i++) {
    ge_tensor *t;
    assert_int_equal(ge_tensor_create(GE_I32, d, 1, &t), GE_OK);
    ((int32_t *)t->data)[0] = i;
    snprintf(key, sizeof key, "k%d", i);
    assert_int_equal(ge_tensor_map_put(m, key, t), GE_OK);
  }
  assert_int_equal(ge_tensor_map_size(m), 300);
  assert_string_equal(ge_tensor_map_key(m, 17), "k17");
  assert_int_equal(ge_tensor_get_i64(ge_tensor_map_value(m, 17), 0), 17);
  assert_int_equal(ge_tensor_get_i64(ge_tensor_map_find(m, "k250"), 0), 250);
  /* replace keeps the position */
  ge_tensor *r;
  assert_int_equal(ge_tensor_create(GE_I32, d, 1, &r), GE_OK);
  ((int32_t *)r->data)[0] = -1;
  assert_int_equal(ge_tensor_map_put(m, "k5", r), GE_OK);
  assert_int_equal(ge_tensor_map_size(m), 300);
  assert_string_equal(ge_tensor_map_key(m, 5), "k5");
  assert_int_equal(ge_tensor_get_i64(ge_tensor_map_find(m, "k5"), 0), -1);
  assert_null(ge_tensor_map_key(m, 300));
  assert_null(ge_tensor_map_value(m, 300));
  assert_null(ge_tensor_map_find(m, "nope"));
  assert_int_equal(ge_tensor_map_put(m, NULL, NULL), GE_ERR_INVALID_ARGUMENT);
  ge_tensor_map_free(m);
  ge_tensor_map_free(NULL);
  assert_int_equal(ge_tensor_map_size(NULL), 0);
  assert_null(ge_tensor_map_find(NULL, "a"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_f16),
      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_tensor_create),
      cmocka_unit_test(test_tensor_errors),
      cmocka_unit_test(test_tensor_wrap),
      cmocka_unit_test(test_tensor_strings),
      cmocka_unit_test(test_tensor_reads),
      cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_shape_misc),
      cmocka_unit_test(test_graph_values_and_index),
      cmocka_unit_test(test_graph_builder),
      cmocka_unit_test(test_default_inputs),
      cmocka_unit_test(test_toposort),
      cmocka_unit_test(test_cycle),
      cmocka_unit_test(test_outer_scope),
      cmocka_unit_test(test_attrs_and_clone),
      cmocka_unit_test(test_clone_functions_and_meta),
      cmocka_unit_test(test_clone_symbol_remap),
      cmocka_unit_test(test_tensor_map),
      cmocka_unit_test(test_aligned_alloc_huge),
      cmocka_unit_test(test_const_alloc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
