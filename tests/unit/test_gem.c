/* The .gem offline model: header round trip, corruption and version checks, and a graph saved
 * as .gem, loaded back (marked optimized) and run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/gem.h"
#include "ge/ge.h"
#include "ir/ir.h"
#include "passes/pass.h"

/* A header plus a fake payload, as a whole file's bytes. */
static uint8_t *make_file(const ge_gem_header *h, const char *payload, size_t *size) {
  size_t pn = strlen(payload);
  uint8_t *head = NULL;
  size_t hn = 0;
  assert_int_equal(ge_gem_header_encode(h, pn, ge_hash64(payload, pn), &head, &hn), GE_OK);
  uint8_t *f = malloc(hn + pn);
  assert_non_null(f);
  memcpy(f, head, hn);
  memcpy(f + hn, payload, pn);
  free(head);
  *size = hn + pn;
  return f;
}

static void test_header_round_trip(void **state) {
  (void)state;
  ge_gem_header h;
  ge_gem_header_init(&h, GE_PRECISION_MIX_BF16, 2);
  assert_int_equal(ge_gem_header_add_shape(&h, "input_ids", "1,128"), GE_OK);
  assert_int_equal(ge_gem_header_add_shape(&h, "x", "3"), GE_OK);
  size_t n;
  uint8_t *f = make_file(&h, "payload bytes!", &n);
  assert_memory_equal(f, "GEM1", 4);
  ge_gem_header r;
  const uint8_t *pl;
  size_t pn;
  assert_int_equal(ge_gem_parse(f, n, "t.gem", &r, &pl, &pn), GE_OK);
  assert_int_equal(r.format_version, GE_GEM_FORMAT_VERSION);
  assert_string_equal(r.ge_version, ge_version());
  assert_int_equal(r.precision_mode, GE_PRECISION_MIX_BF16);
  assert_int_equal(r.opt_level, 2);
  assert_int_equal(r.n_input_shapes, 2);
  assert_string_equal(r.input_shapes[0], "input_ids:1,128");
  assert_string_equal(r.input_shapes[1], "x:3");
  assert_int_equal(pn, 14);
  assert_memory_equal(pl, "payload bytes!", 14);
  ge_gem_header_clear(&r);
  ge_gem_header_clear(&h);
  free(f);
}

static void test_corrupt(void **state) {
  (void)state;
  ge_gem_header h;
  ge_gem_header_init(&h, GE_PRECISION_KEEP, 3);
  size_t n;
  uint8_t *f = make_file(&h, "0123456789abcdef0123", &n);
  ge_gem_header r;
  const uint8_t *pl;
  size_t pn;
  /* every truncation is a clean parse error naming the file */
  for (size_t cut = 0; cut < n; cut++) {
    assert_int_equal(ge_gem_parse(f, cut, "cut.gem", &r, &pl, &pn), GE_ERR_PARSE);
    assert_non_null(strstr(ge_last_error(), "cut.gem"));
    assert_int_equal(r.n_input_shapes, 0);
  }
  /* trailing garbage */
  uint8_t *big = malloc(n + 1);
  memcpy(big, f, n);
  big[n] = 0;
  assert_int_equal(ge_gem_parse(big, n + 1, "x.gem", &r, &pl, &pn), GE_ERR_PARSE);
  free(big);
  /* a flipped payload byte: checksum */
  f[n - 3] ^= 0x40;
  assert_int_equal(ge_gem_parse(f, n, "flip.gem", &r, &pl, &pn), GE_ERR_PARSE);
  assert_non_null(strstr(ge_last_error(), "checksum"));
  f[n - 3] ^= 0x40;
  assert_int_equal(ge_gem_parse(f, n, "ok.gem", &r, &pl, &pn), GE_OK);
  ge_gem_header_clear(&r);
  /* format version mismatch */
  f[4] = 2;
  assert_int_equal(ge_gem_parse(f, n, "v2.gem", &r, &pl, &pn), GE_ERR_PARSE);
  assert_non_null(strstr(ge_last_error(), "format version 2"));
  f[4] = 1;
  /* magic of another generation */
  f[3] = '2';
  assert_int_equal(ge_gem_parse(f, n, "g2.gem", &r, &pl, &pn), GE_ERR_PARSE);
  f[3] = '1';
  /* every single-byte corruption of the header fails cleanly or parses (never crashes) */
  for (size_t i = 0; i < n; i++) {
    uint8_t keep = f[i];
    f[i] ^= 0xff;
    ge_status st = ge_gem_parse(f, n, "fuzz.gem", &r, &pl, &pn);
    assert_true(st == GE_OK || st == GE_ERR_PARSE);
    ge_gem_header_clear(&r);
    f[i] = keep;
  }
  free(f);
  /* another ge version */
  snprintf(h.ge_version, sizeof h.ge_version, "0.0.0-other");
  f = make_file(&h, "p", &n);
  assert_int_equal(ge_gem_parse(f, n, "old.gem", &r, &pl, &pn), GE_ERR_PARSE);
  assert_non_null(strstr(ge_last_error(), "0.0.0-other"));
  free(f);
  ge_gem_header_clear(&h);
}

static void test_precision_names(void **state) {
  (void)state;
  assert_int_equal(ge_gem_precision_parse("must_keep_origin_dtype"), GE_PRECISION_KEEP);
  assert_int_equal(ge_gem_precision_parse("fp32"), GE_PRECISION_FORCE_FP32);
  assert_int_equal(ge_gem_precision_parse("bf16"), GE_PRECISION_FP32_TO_BF16);
  assert_int_equal(ge_gem_precision_parse("allow_fp32_to_fp16"), GE_PRECISION_FP32_TO_FP16);
  assert_int_equal(ge_gem_precision_parse("mixed_bf16"), GE_PRECISION_MIX_BF16);
  assert_int_equal(ge_gem_precision_parse("mixed_fp16"), GE_PRECISION_MIX_FP16);
  assert_int_equal(ge_gem_precision_parse("fp8"), -1);
  assert_string_equal(ge_gem_precision_name(GE_PRECISION_MIX_FP16), "allow_mix_precision_fp16");
}

/* y = Relu(x + b): saved as .gem, loaded back marked optimized, run in a session. */
static void test_graph_round_trip(void **state) {
  (void)state;
  ge_graph *g = NULL;
  assert_int_equal(ge_graph_create("addrelu", &g), GE_OK);
  int64_t xd[] = {2, 4};
  assert_int_equal(ge_graph_add_input(g, "x", GE_F32, xd, 2), GE_OK);
  float bv[] = {1, -2, 3, -4};
  int64_t bd[] = {4};
  ge_tensor *b = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, bd, 1, &b), GE_OK);
  memcpy(ge_tensor_data(b), bv, sizeof bv);
  assert_int_equal(ge_graph_add_constant(g, "b", b), GE_OK);
  ge_tensor_free(b);
  const char *in1[] = {"x", "b"}, *out1[] = {"s"}, *in2[] = {"s"}, *out2[] = {"y"};
  assert_int_equal(ge_graph_add_node(g, "Add", "add", in1, 2, out1, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_node(g, "Relu", "relu", in2, 1, out2, 1, NULL, 0), GE_OK);
  assert_int_equal(ge_graph_add_output(g, "y"), GE_OK);

  char path[] = "/tmp/ge_test_gem_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  ge_gem_header h;
  ge_gem_header_init(&h, GE_PRECISION_FORCE_FP32, 2);
  assert_int_equal(ge_gem_header_add_shape(&h, "x", "2,4"), GE_OK);
  assert_int_equal(ge_gem_save(g, &h, path), GE_OK);
  ge_gem_header_clear(&h);
  ge_graph_free(g);

  ge_graph *l = NULL;
  assert_int_equal(ge_graph_load(path, NULL, 0, &l), GE_OK);
  assert_true(l->optimized);
  assert_int_equal(l->precision_mode, GE_PRECISION_FORCE_FP32);
  assert_int_equal(l->opt_level, 2);
  ge_graph *c = NULL;
  assert_int_equal(ge_graph_clone(l, NULL, &c), GE_OK);
  assert_true(c->optimized);
  assert_int_equal(c->precision_mode, GE_PRECISION_FORCE_FP32);
  ge_graph_free(c);

  assert_int_equal(ge_initialize(NULL, 0), GE_OK);
  ge_session *s = NULL;
  assert_int_equal(ge_session_create(NULL, 0, &s), GE_OK);
  assert_int_equal(ge_session_add_graph(s, 1, l), GE_OK);
  ge_tensor *x = NULL;
  assert_int_equal(ge_tensor_create(GE_F32, xd, 2, &x), GE_OK);
  float *xv = ge_tensor_data(x);
  for (int i = 0; i < 8; i++) xv[i] = (float)i - 3.0f;
  ge_tensor *y = NULL;
  assert_int_equal(ge_session_run_graph(s, 1, &x, 1, &y, 1), GE_OK);
  const float *yv = ge_tensor_data(y);
  for (int i = 0; i < 8; i++) {
    float want = xv[i] + bv[i % 4];
    assert_float_equal(yv[i], want > 0 ? want : 0, 1e-6);
  }
  ge_tensor_free(x);
  ge_tensor_free(y);
  ge_session_free(s);
  ge_graph_free(l);
  assert_int_equal(ge_finalize(), GE_OK);

  /* a truncated file: GE_ERR_PARSE naming it */
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fclose(f);
  assert_int_equal(truncate(path, sz - 5), 0);
  assert_int_equal(ge_graph_load(path, NULL, 0, &l), GE_ERR_PARSE);
  assert_null(l);
  assert_non_null(strstr(ge_last_error(), path));
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_round_trip),
      cmocka_unit_test(test_corrupt),
      cmocka_unit_test(test_precision_names),
      cmocka_unit_test(test_graph_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
