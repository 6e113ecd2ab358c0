/* ImageDecoder for JPEG, JPEG 2000 and WebP (through libjpeg-turbo, libopenjp2, libwebp):
 * the small images in tests/unit/data/images (written with PIL by
 * tests/unit/data/gen_images.py) must decode to exactly what PIL decodes them to (stored next
 * to them as .ppm for RGB and .pgm for Grayscale), and malformed data (truncated, corrupted)
 * must fail with GE_ERR_INVALID_ARGUMENT naming the node and the format, never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/cpu/ref/image_decode.h"
#include "helpers/ops_harness.h"

#define DATA GE_SOURCE_DIR "/tests/unit/data/images/"

static uint8_t *read_file(const char *name, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s%s", DATA, name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long len = ftell(f);
  assert_true(len > 0);
  rewind(f);
  uint8_t *d = malloc((size_t)len);
  assert_non_null(d);
  assert_int_equal(fread(d, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return d;
}

/* Decodes a reference .ppm/.pgm (gray replicated to RGB) with ge's own PNM decoder. */
static uint8_t *read_ref(const char *name, int64_t *h, int64_t *w) {
  size_t n;
  uint8_t *d = read_file(name, &n);
  ge_image_error err;
  uint8_t *rgb = ge_image_decode_rgb(d, n, h, w, &err);
  if (!rgb) fail_msg("%s: %s", name, err.msg);
  free(d);
  return rgb;
}

/* Runs ImageDecoder on data; returns the status and the output (NULL on failure). */
static ge_status run_decoder(const uint8_t *data, size_t n, const char *fmt, ge_tensor **out) {
  int64_t len = (int64_t)n;
  ge_tensor *x = ge_test_tensor(GE_U8, &len, 1, n ? data : NULL);
  ge_attr a[] = {GE_ATTR_STRING("pixel_format", fmt)};
  *out = NULL;
  ge_status st = ge_test_run_node("ImageDecoder", 20, a, 1, &x, 1, out, 1);
  ge_tensor_free(x);
  return st;
}

static void check_case(const char *stem, const char *ext) {
  char name[128];
  size_t n;
  snprintf(name, sizeof name, "%s.%s", stem, ext);
  uint8_t *data = read_file(name, &n);
  int64_t h, w, gh, gw;
  snprintf(name, sizeof name, "%s.ppm", stem);
  uint8_t *want = read_ref(name, &h, &w);
  snprintf(name, sizeof name, "%s.pgm", stem);
  uint8_t *want_gray = read_ref(name, &gh, &gw);
  assert_int_equal(gh, h);
  assert_int_equal(gw, w);
  size_t px = (size_t)(h * w);
  const char *fmts[] = {"RGB", "BGR", "Grayscale"};
  for (int f = 0; f < 3; f++) {
    ge_tensor *out;
    ge_status st = run_decoder(data, n, fmts[f], &out);
    if (st != GE_OK) fail_msg("%s.%s %s: %s", stem, ext, fmts[f], ge_last_error());
    int64_t dims[3] = {h, w, f == 2 ? 1 : 3};
    ge_test_assert_shape(out, GE_U8, dims, 3);
    const uint8_t *o = out->data;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < px; i++) {
      for (int c = 0; c < (f == 2 ? 1 : 3); c++) {
        uint8_t exp = f == 0 ? want[i * 3 + (size_t)c]
                      : f == 1 ? want[i * 3 + 2 - (size_t)c]
                               : want_gray[i * 3];
        uint8_t got = o[f == 2 ? i : i * 3 + (size_t)c];
        if (got != exp && !bad++) first = i;
      }
    }
    if (bad)
      fail_msg("%s.%s %s: %zu values differ from PIL, first at pixel %zu", stem, ext, fmts[f],
               bad, first);
    ge_tensor_free(out);
  }
  free(want);
  free(want_gray);
  free(data);
}

static void test_jpeg(void **unused) {
  (void)unused;
  check_case("jpeg_420", "jpg");
  check_case("jpeg_444", "jpg");
  check_case("jpeg_422_progressive", "jpg");
  check_case("jpeg_gray", "jpg");
}

static void test_jpeg2000(void **unused) {
  (void)unused;
  check_case("jp2_rgb", "jp2");
  check_case("j2k_gray", "j2k");
}

static void test_webp(void **unused) {
  (void)unused;
  check_case("webp_lossy", "webp");
  check_case("webp_lossless", "webp");
  check_case("webp_alpha", "webp");
}

/* Every truncation of the file fails with GE_ERR_INVALID_ARGUMENT and a message naming the
 * node; corrupting single bytes never crashes (it may still decode). */
static void check_malformed(const char *file, const char *format) {
  size_t n;
  uint8_t *data = read_file(file, &n);
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  for (size_t len = 0; len < n; len += len < 64 ? 1 : 7) {
    ge_tensor *out;
    ge_status st = run_decoder(data, len, "RGB", &out);
    if (st != GE_ERR_INVALID_ARGUMENT)
      fail_msg("%s truncated to %zu of %zu bytes: status %s (%s)", file, len, n,
               ge_status_str(st), st == GE_OK ? "decoded" : ge_last_error());
    assert_non_null(strstr(ge_last_error(), "test_node"));
    if (len >= 16) assert_non_null(strstr(ge_last_error(), format));
  }
  /* flip bytes all over the file (headers included) */
  uint32_t seed = 12345;
  for (int it = 0; it < 300; it++) {
    memcpy(buf, data, n);
    for (int k = 0; k < 1 + it % 4; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % n;
      buf[at] = (uint8_t)(buf[at] ^ (1u << (seed >> 28 & 7)) ^ (it & 0xf0));
    }
    ge_tensor *out;
    ge_status st = run_decoder(buf, n, it % 3 == 0 ? "Grayscale" : "RGB", &out);
    if (st == GE_OK)
      ge_tensor_free(out);
    else
      assert_true(st == GE_ERR_INVALID_ARGUMENT || st == GE_ERR_UNSUPPORTED);
  }
  free(buf);
  free(data);
}

static void test_malformed(void **unused) {
  (void)unused;
  check_malformed("jpeg_420.jpg", "JPEG");
  check_malformed("jpeg_422_progressive.jpg", "JPEG");
  check_malformed("jp2_rgb.jp2", "JPEG 2000");
  check_malformed("j2k_gray.j2k", "JPEG 2000");
  check_malformed("webp_lossy.webp", "WebP");
  check_malformed("webp_lossless.webp", "WebP");
}

/* A valid header that declares a huge image is refused before anything large is allocated. */
static void test_huge_header(void **unused) {
  (void)unused;
  size_t n;
  uint8_t *data = read_file("jpeg_444.jpg", &n);
  /* SOF0 marker: FF C0, length, precision, height, width */
  size_t at = 0;
  for (size_t i = 0; i + 8 < n; i++)
    if (data[i] == 0xff && data[i + 1] == 0xc0) {
      at = i;
      break;
    }
  assert_true(at > 0);
  data[at + 5] = 0xff, data[at + 6] = 0xff; /* height 65535 */
  data[at + 7] = 0xff, data[at + 8] = 0xff; /* width 65535 */
  ge_tensor *out;
  assert_int_equal(run_decoder(data, n, "RGB", &out), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "JPEG"));
  free(data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jpeg),      cmocka_unit_test(test_jpeg2000),
      cmocka_unit_test(test_webp),      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_huge_header),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
