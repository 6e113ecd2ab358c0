/* Tests of the text family: StringNormalizer, StringConcat, StringSplit, RegexFullMatch,
 * TfIdfVectorizer, ai.onnx.ml LabelEncoder.  The cases mirror onnx's backend node tests
 * (same inputs and expected outputs) plus edge cases and errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

static void run_ok(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                   ge_tensor *const *in, size_t n_in, ge_tensor **out, size_t n_out) {
  ge_status st = ge_test_run_node(op, opset, attrs, n_attrs, in, n_in, out, n_out);
  if (st != GE_OK) fail_msg("%s (opset %lld) failed: %s", op, (long long)opset, ge_last_error());
}

static ge_tensor *strs(const int64_t *dims, size_t rank, const char *const *v) {
  return ge_test_tensor(GE_STRING, dims, rank, v);
}

static void assert_strs(const ge_tensor *t, const char *const *expected, size_t n) {
  assert_int_equal(t->dtype, GE_STRING);
  assert_int_equal(t->numel, n);
  for (size_t i = 0; i < n; i++) {
    const char *s = ((char *const *)t->data)[i];
    if (strcmp(s ? s : "", expected[i]))
      fail_msg("element %zu: '%s', expected '%s'", i, s ? s : "", expected[i]);
  }
}

/* ------------------------------------------------------------------ StringNormalizer */

static void test_string_normalizer(void **unused) {
  (void)unused;
  int64_t d[] = {4};
  const char *in[] = {"monday", "tuesday", "wednesday", "thursday"};
  ge_tensor *x = strs(d, 1, in);
  ge_tensor *out = NULL;
  const char *stops[] = {"monday"};
  ge_attr a[] = {GE_ATTR_STRING("case_change_action", "LOWER"), GE_ATTR_INT("is_case_sensitive", 1),
                 GE_ATTR_STRINGS("stopwords", stops, 1)};
  run_ok("StringNormalizer", 10, a, 3, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_STRING, (int64_t[]){3}, 1);
  assert_strs(out, (const char *[]){"tuesday", "wednesday", "thursday"}, 3);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* [1, C], case-insensitive stopwords, UPPER */
  int64_t d2[] = {1, 6};
  const char *in2[] = {"Monday", "tuesday", "wednesday", "Monday", "tuesday", "wednesday"};
  x = strs(d2, 2, in2);
  ge_attr b[] = {GE_ATTR_STRING("case_change_action", "UPPER"), GE_ATTR_STRINGS("stopwords", stops, 1)};
  run_ok("StringNormalizer", 10, b, 2, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_STRING, (int64_t[]){1, 4}, 2);
  assert_strs(out, (const char *[]){"TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY"}, 4);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* everything removed: one empty string */
  int64_t d3[] = {2};
  x = strs(d3, 1, (const char *[]){"monday", "monday"});
  run_ok("StringNormalizer", 10, a, 3, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_STRING, (int64_t[]){1}, 1);
  assert_strs(out, (const char *[]){""}, 1);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* UTF-8 Latin-1 letters change case too */
  int64_t one = 1;
  x = strs(&one, 1, (const char *[]){"\xc3\x89t\xc3\xa9"}); /* Été */
  ge_attr c[] = {GE_ATTR_STRING("case_change_action", "UPPER")};
  run_ok("StringNormalizer", 10, c, 1, &x, 1, &out, 1);
  assert_strs(out, (const char *[]){"\xc3\x89T\xc3\x89"}, 1);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* bad action; rank 3 input */
  x = strs(&one, 1, (const char *[]){"a"});
  ge_attr bad[] = {GE_ATTR_STRING("case_change_action", "TITLE")};
  assert_int_equal(ge_test_run_node("StringNormalizer", 10, bad, 1, &x, 1, &out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(x);
  int64_t d4[] = {1, 1, 1};
  x = strs(d4, 3, (const char *[]){"a"});
  assert_int_not_equal(ge_test_run_node("StringNormalizer", 10, NULL, 0, &x, 1, &out, 1), GE_OK);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ StringConcat */

static void test_string_concat(void **unused) {
  (void)unused;
  int64_t d[] = {3};
  ge_tensor *a = strs(d, 1, (const char *[]){"abc", "def", ""});
  ge_tensor *b = strs(d, 1, (const char *[]){"!", "\xe2\x9c\x93", "x"});
  ge_tensor *in[] = {a, b}, *out = NULL;
  run_ok("StringConcat", 20, NULL, 0, in, 2, &out, 1);
  assert_strs(out, (const char *[]){"abc!", "def\xe2\x9c\x93", "x"}, 3);
  ge_tensor_free(out);
  ge_tensor_free(b);
  /* broadcasting a scalar, and a [2, 1] x [3] */
  b = strs(NULL, 0, (const char *[]){"_"});
  in[1] = b;
  run_ok("StringConcat", 20, NULL, 0, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_STRING, d, 1);
  assert_strs(out, (const char *[]){"abc_", "def_", "_"}, 3);
  ge_tensor_free(out);
  ge_tensor_free(b);
  int64_t d2[] = {2, 1};
  b = strs(d2, 2, (const char *[]){"1", "2"});
  in[0] = b;
  in[1] = a;
  run_ok("StringConcat", 20, NULL, 0, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_STRING, (int64_t[]){2, 3}, 2);
  assert_strs(out, (const char *[]){"1abc", "1def", "1", "2abc", "2def", "2"}, 6);
  ge_tensor_free(out);
  ge_tensor_free(b);
  /* shapes that do not broadcast; non-string input */
  int64_t d4[] = {4};
  b = strs(d4, 1, (const char *[]){"a", "b", "c", "d"});
  in[0] = a;
  in[1] = b;
  assert_int_equal(ge_test_run_node("StringConcat", 20, NULL, 0, in, 2, &out, 1), GE_ERR_SHAPE);
  ge_tensor_free(b);
  b = ge_test_tensor_f32(d, 1, NULL);
  in[1] = b;
  assert_int_not_equal(ge_test_run_node("StringConcat", 20, NULL, 0, in, 2, &out, 1), GE_OK);
  ge_tensor_free(b);
  ge_tensor_free(a);
}

/* ------------------------------------------------------------------ StringSplit */

static void test_string_split(void **unused) {
  (void)unused;
  int64_t d[] = {2};
  ge_tensor *x = strs(d, 1, (const char *[]){"abc.com", "def.net"});
  ge_tensor *out[2] = {NULL, NULL};
  ge_attr dot[] = {GE_ATTR_STRING("delimiter", ".")};
  run_ok("StringSplit", 20, dot, 1, &x, 1, out, 2);
  ge_test_assert_shape(out[0], GE_STRING, (int64_t[]){2, 2}, 2);
  assert_strs(out[0], (const char *[]){"abc", "com", "def", "net"}, 4);
  ge_test_assert_ints(out[1], (int64_t[]){2, 2}, 2);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  ge_tensor_free(x);
  /* consecutive delimiters give empty pieces; padding with "" */
  int64_t d3[] = {3};
  x = strs(d3, 1, (const char *[]){"1,,2", "", "a,b,c,d"});
  ge_attr comma[] = {GE_ATTR_STRING("delimiter", ",")};
  run_ok("StringSplit", 20, comma, 1, &x, 1, out, 2);
  ge_test_assert_shape(out[0], GE_STRING, (int64_t[]){3, 4}, 2);
  assert_strs(out[0], (const char *[]){"1", "", "2", "", "", "", "", "", "a", "b", "c", "d"}, 12);
  ge_test_assert_ints(out[1], (int64_t[]){3, 1, 4}, 3);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  ge_tensor_free(x);
  /* whitespace runs, maxsplit (the rest keeps its inner spaces) */
  int64_t d2[] = {2, 2};
  x = strs(d2, 2, (const char *[]){"hello world", "def.net", "o n n x", "  the quick brown fox "});
  ge_attr ms[] = {GE_ATTR_INT("maxsplit", 2)};
  run_ok("StringSplit", 20, ms, 1, &x, 1, out, 2);
  ge_test_assert_shape(out[0], GE_STRING, (int64_t[]){2, 2, 3}, 3);
  assert_strs(out[0],
              (const char *[]){"hello", "world", "", "def.net", "", "", "o", "n", "n x", "the",
                               "quick", "brown fox "},
              12);
  ge_test_assert_ints(out[1], (int64_t[]){2, 1, 3, 3}, 4);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  ge_tensor_free(x);
  /* empty input: [0] -> [0, 0] and [0] */
  int64_t zero = 0;
  x = strs(&zero, 1, NULL);
  run_ok("StringSplit", 20, NULL, 0, &x, 1, out, 2);
  ge_test_assert_shape(out[0], GE_STRING, (int64_t[]){0, 0}, 2);
  ge_test_assert_shape(out[1], GE_I64, &zero, 1);
  ge_tensor_free(out[0]);
  ge_tensor_free(out[1]);
  /* negative maxsplit is refused */
  ge_attr neg[] = {GE_ATTR_INT("maxsplit", -1)};
  assert_int_equal(ge_test_run_node("StringSplit", 20, neg, 1, &x, 1, out, 2),
                   GE_ERR_INVALID_ARGUMENT);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ RegexFullMatch */

static void regex_case(const char *pattern, const char *const *in, size_t n, const int64_t *want) {
  int64_t d = (int64_t)n;
  ge_tensor *x = strs(&d, 1, in), *out = NULL;
  ge_attr a[] = {GE_ATTR_STRING("pattern", pattern)};
  run_ok("RegexFullMatch", 20, a, 1, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_BOOL, &d, 1);
  ge_test_assert_ints(out, want, n);
  ge_tensor_free(out);
  ge_tensor_free(x);
}

static void test_regex_full_match(void **unused) {
  (void)unused;
  regex_case("www\\.[\\w.-]+\\.\\bcom\\b",
             (const char *[]){"www.google.com", "www.facebook.com", "www.bbc.co.uk"}, 3,
             (int64_t[]){1, 1, 0});
  regex_case("(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)",
             (const char *[]){"account@gmail.com", "account@hotmail.com", "not email",
                              "account2@yahoo.com"},
             4, (int64_t[]){1, 0, 0, 1});
  /* full match, not search; classes, non-capturing groups, lazy quantifiers, (?i) */
  regex_case("\\d+", (const char *[]){"123", "12a", ""}, 3, (int64_t[]){1, 0, 0});
  regex_case("(?:ab)+?c", (const char *[]){"ababc", "abc", "ac"}, 3, (int64_t[]){1, 1, 0});
  regex_case("(?i)hello\\s\\S+", (const char *[]){"HeLLo world", "hello  x"}, 2,
             (int64_t[]){1, 0});
  regex_case("[^\\d\\]]*", (const char *[]){"abc", "a]c", "a1"}, 3, (int64_t[]){1, 0, 0});
  /* an empty [2, 0] input */
  int64_t d[] = {2, 0};
  ge_tensor *x = strs(d, 2, NULL), *out = NULL;
  ge_attr a[] = {GE_ATTR_STRING("pattern", "a")};
  run_ok("RegexFullMatch", 20, a, 1, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_BOOL, d, 2);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* RE2 constructs without a POSIX equivalent are declined at prepare, naming them */
  int64_t one = 1;
  x = strs(&one, 1, (const char *[]){"a"});
  ge_attr named[] = {GE_ATTR_STRING("pattern", "(?P<x>a)")};
  assert_int_equal(ge_test_run_node("RegexFullMatch", 20, named, 1, &x, 1, &out, 1),
                   GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "(?P<x>a)"));
  ge_attr uni[] = {GE_ATTR_STRING("pattern", "\\pL+")};
  assert_int_equal(ge_test_run_node("RegexFullMatch", 20, uni, 1, &x, 1, &out, 1),
                   GE_ERR_UNSUPPORTED);
  ge_attr broken[] = {GE_ATTR_STRING("pattern", "a(")};
  assert_int_not_equal(ge_test_run_node("RegexFullMatch", 20, broken, 1, &x, 1, &out, 1), GE_OK);
  assert_int_not_equal(ge_test_run_node("RegexFullMatch", 20, NULL, 0, &x, 1, &out, 1), GE_OK);
  ge_tensor_free(x);
}

/* ------------------------------------------------------------------ TfIdfVectorizer */

static void test_tfidf(void **unused) {
  (void)unused;
  int64_t d[] = {12};
  ge_tensor *x = ge_test_tensor_i32(d, 1, (int32_t[]){1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  int64_t counts[] = {0, 4}, idx[] = {0, 1, 2, 3, 4, 5, 6};
  int64_t pool[] = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7};
  ge_tensor *out = NULL;
  /* uni- and bigrams, skip up to 5 */
  ge_attr a[] = {GE_ATTR_INT("max_gram_length", 2), GE_ATTR_INT("min_gram_length", 1),
                 GE_ATTR_INT("max_skip_count", 5), GE_ATTR_STRING("mode", "TF"),
                 GE_ATTR_INTS("ngram_counts", counts, 2), GE_ATTR_INTS("ngram_indexes", idx, 7),
                 GE_ATTR_INTS("pool_int64s", pool, 10)};
  run_ok("TfIdfVectorizer", 9, a, 7, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){7}, 1);
  ge_test_assert_close(out, (float[]){0, 3, 1, 0, 1, 3, 1}, 7, 0, 0);
  ge_tensor_free(out);
  /* only bigrams, no skip, batch of 2 rows */
  int64_t d2[] = {2, 6};
  ge_tensor *x2 = ge_test_tensor_i64(d2, 2, (int64_t[]){1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  ge_attr b[] = {GE_ATTR_INT("max_gram_length", 2), GE_ATTR_INT("min_gram_length", 2),
                 GE_ATTR_INT("max_skip_count", 0), GE_ATTR_STRING("mode", "TF"),
                 GE_ATTR_INTS("ngram_counts", counts, 2), GE_ATTR_INTS("ngram_indexes", idx, 7),
                 GE_ATTR_INTS("pool_int64s", pool, 10)};
  run_ok("TfIdfVectorizer", 9, b, 7, &x2, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){2, 7}, 2);
  ge_test_assert_close(out, (float[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}, 14, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(x2);
  /* IDF and TFIDF with weights */
  float w[] = {1, 2, 3, 4, 5, 6, 7};
  ge_attr c[] = {GE_ATTR_INT("max_gram_length", 2), GE_ATTR_INT("min_gram_length", 1),
                 GE_ATTR_INT("max_skip_count", 5), GE_ATTR_STRING("mode", "TFIDF"),
                 GE_ATTR_INTS("ngram_counts", counts, 2), GE_ATTR_INTS("ngram_indexes", idx, 7),
                 GE_ATTR_INTS("pool_int64s", pool, 10), GE_ATTR_FLOATS("weights", w, 7)};
  run_ok("TfIdfVectorizer", 9, c, 8, &x, 1, &out, 1);
  ge_test_assert_close(out, (float[]){0, 6, 3, 0, 5, 18, 7}, 7, 0, 0);
  ge_tensor_free(out);
  c[3] = GE_ATTR_STRING("mode", "IDF");
  run_ok("TfIdfVectorizer", 9, c, 8, &x, 1, &out, 1);
  ge_test_assert_close(out, (float[]){0, 2, 3, 0, 5, 6, 7}, 7, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(x);
  /* string pool */
  int64_t ds[] = {5};
  ge_tensor *xs = strs(ds, 1, (const char *[]){"a", "b", "c", "a", "b"});
  const char *sp[] = {"a", "z", "a", "b"};
  int64_t sc[] = {0, 2}, si[] = {0, 1, 2};
  ge_attr e[] = {GE_ATTR_INT("max_gram_length", 2), GE_ATTR_INT("min_gram_length", 1),
                 GE_ATTR_STRING("mode", "TF"), GE_ATTR_INTS("ngram_counts", sc, 2),
                 GE_ATTR_INTS("ngram_indexes", si, 3), GE_ATTR_STRINGS("pool_strings", sp, 4)};
  run_ok("TfIdfVectorizer", 9, e, 6, &xs, 1, &out, 1);
  ge_test_assert_close(out, (float[]){2, 0, 2}, 3, 0, 0);
  ge_tensor_free(out);
  /* a pool that does not split into n-grams; a missing pool */
  int64_t badc[] = {0, 1};
  e[3] = GE_ATTR_INTS("ngram_counts", badc, 2);
  assert_int_equal(ge_test_run_node("TfIdfVectorizer", 9, e, 6, &xs, 1, &out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "ngram_counts"));
  assert_int_not_equal(ge_test_run_node("TfIdfVectorizer", 9, a, 6, &xs, 1, &out, 1), GE_OK);
  ge_tensor_free(xs);
}

/* ------------------------------------------------------------------ LabelEncoder */

static void test_label_encoder(void **unused) {
  (void)unused;
  int64_t d[] = {5};
  ge_tensor *x = strs(d, 1, (const char *[]){"a", "b", "d", "c", "g"});
  ge_tensor *out = NULL;
  const char *keys[] = {"a", "b", "c"};
  int64_t vals[] = {0, 1, 2};
  ge_attr a[] = {GE_ATTR_INT("default_int64", 42), GE_ATTR_STRINGS("keys_strings", keys, 3),
                 GE_ATTR_INTS("values_int64s", vals, 3)};
  run_ok("ai.onnx.ml::LabelEncoder", 18, a, 3, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_I64, d, 1);
  ge_test_assert_ints(out, (int64_t[]){0, 1, 42, 2, 42}, 5);
  ge_tensor_free(out);
  run_ok("ai.onnx.ml::LabelEncoder", 18, a + 1, 2, &x, 1, &out, 1);
  ge_test_assert_ints(out, (int64_t[]){0, 1, -1, 2, -1}, 5);
  ge_tensor_free(out);
  /* (the harness imports ai.onnx at the opset given; an ml-domain node takes it as its own)
     tensor-valued values and default (int16) */
  int64_t three = 3, one = 1;
  ge_tensor *vt = ge_test_tensor_from_f32(GE_I16, &three, 1, (float[]){0, 1, 2});
  ge_tensor *dt = ge_test_tensor_from_f32(GE_I16, &one, 1, (float[]){42});
  ge_attr b[] = {GE_ATTR_TENSOR("default_tensor", dt), GE_ATTR_STRINGS("keys_strings", keys, 3),
                 GE_ATTR_TENSOR("values_tensor", vt)};
  run_ok("ai.onnx.ml::LabelEncoder", 18, b, 3, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_I16, d, 1);
  ge_test_assert_ints(out, (int64_t[]){0, 1, 42, 2, 42}, 5);
  ge_tensor_free(out);
  ge_tensor_free(vt);
  ge_tensor_free(dt);
  ge_tensor_free(x);
  /* float keys -> strings, NaN matches NaN, default_string */
  int64_t d4[] = {4};
  ge_tensor *xf = ge_test_tensor_f32(d4, 1, (float[]){1.5f, NAN, -0.0f, 7});
  float fk[] = {1.5f, NAN, 0.0f};
  const char *sv[] = {"one and a half", "nan", "zero"};
  ge_attr c[] = {GE_ATTR_FLOATS("keys_floats", fk, 3), GE_ATTR_STRINGS("values_strings", sv, 3),
                 GE_ATTR_STRING("default_string", "?")};
  run_ok("ai.onnx.ml::LabelEncoder", 18, c, 3, &xf, 1, &out, 1);
  assert_strs(out, (const char *[]){"one and a half", "nan", "zero", "?"}, 4);
  ge_tensor_free(out);
  /* keys of the wrong kind for the input; no values */
  ge_attr e[] = {GE_ATTR_STRINGS("keys_strings", keys, 3), GE_ATTR_INTS("values_int64s", vals, 3)};
  assert_int_equal(ge_test_run_node("ai.onnx.ml::LabelEncoder", 18, e, 2, &xf, 1, &out, 1),
                   GE_ERR_UNSUPPORTED);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  assert_int_not_equal(ge_test_run_node("ai.onnx.ml::LabelEncoder", 18, e, 1, &xf, 1, &out, 1),
                       GE_OK);
  ge_tensor_free(xf);
}

/* ------------------------------------------------------------------ ai.onnx.ml: ArrayFeatureExtractor, Binarizer, TreeEnsemble */

static void test_ml_small_ops(void **unused) {
  (void)unused;
  int64_t d[] = {3, 4}, two = 2;
  float xv[12];
  for (int i = 0; i < 12; i++) xv[i] = (float)i;
  ge_tensor *x = ge_test_tensor_f32(d, 2, xv);
  ge_tensor *ix = ge_test_tensor_i64(&two, 1, (int64_t[]){3, 0});
  ge_tensor *in[] = {x, ix}, *out = NULL;
  run_ok("ai.onnx.ml::ArrayFeatureExtractor", 18, NULL, 0, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3, 2}, 2);
  ge_test_assert_close(out, (float[]){3, 0, 7, 4, 11, 8}, 6, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(ix);
  ix = ge_test_tensor_i64(&two, 1, (int64_t[]){4, 0});
  in[1] = ix;
  assert_int_equal(ge_test_run_node("ai.onnx.ml::ArrayFeatureExtractor", 18, NULL, 0, in, 2, &out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "test_node"));
  ge_tensor_free(ix);
  /* 1-D strings: output [1, k] */
  int64_t three = 3, one = 1;
  ge_tensor *xs = strs(&three, 1, (const char *[]){"a", "b", "c"});
  ix = ge_test_tensor_i64(&one, 1, (int64_t[]){2});
  in[0] = xs;
  in[1] = ix;
  run_ok("ai.onnx.ml::ArrayFeatureExtractor", 18, NULL, 0, in, 2, &out, 1);
  ge_test_assert_shape(out, GE_STRING, (int64_t[]){1, 1}, 2);
  assert_strs(out, (const char *[]){"c"}, 1);
  ge_tensor_free(out);
  ge_tensor_free(ix);
  ge_tensor_free(xs);
  /* Binarizer */
  ge_attr th[] = {GE_ATTR_FLOAT("threshold", 5.0f)};
  run_ok("ai.onnx.ml::Binarizer", 18, th, 1, &x, 1, &out, 1);
  ge_test_assert_close(out, (float[]){0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, 12, 0, 0);
  ge_tensor_free(out);
  ge_tensor_free(x);
}

static void test_tree_ensemble(void **unused) {
  (void)unused;
  int64_t d[] = {3, 2}, three = 3, four = 4;
  ge_tensor *x = ge_test_tensor_f32(d, 2, (float[]){1.2f, 3.4f, -0.12f, 1.66f, 4.14f, 1.77f});
  ge_tensor *modes = ge_test_tensor_from_f32(GE_U8, &three, 1, (float[]){0, 0, 0});
  ge_tensor *splits = ge_test_tensor_f64(&three, 1, (double[]){3.14, 1.2, 4.2});
  ge_tensor *lw = ge_test_tensor_f64(&four, 1, (double[]){5.23, 12.12, -12.23, 7.21});
  int64_t fl[] = {0, 1, 1}, fn[] = {2, 2, 3}, fi[] = {0, 0, 0}, tl[] = {0, 1, 1}, tn[] = {1, 0, 1};
  int64_t lt[] = {0, 1, 0, 1}, roots[] = {0};
  ge_attr a[] = {GE_ATTR_INT("aggregate_function", 1), GE_ATTR_INTS("leaf_targetids", lt, 4),
                 GE_ATTR_TENSOR("leaf_weights", lw), GE_ATTR_INT("n_targets", 2),
                 GE_ATTR_INTS("nodes_falseleafs", fl, 3), GE_ATTR_INTS("nodes_falsenodeids", fn, 3),
                 GE_ATTR_INTS("nodes_featureids", fi, 3), GE_ATTR_TENSOR("nodes_modes", modes),
                 GE_ATTR_TENSOR("nodes_splits", splits), GE_ATTR_INTS("nodes_trueleafs", tl, 3),
                 GE_ATTR_INTS("nodes_truenodeids", tn, 3), GE_ATTR_INTS("tree_roots", roots, 1)};
  ge_tensor *out = NULL;
  run_ok("ai.onnx.ml::TreeEnsemble", 18, a, 12, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_F32, (int64_t[]){3, 2}, 2);
  ge_test_assert_close(out, (float[]){5.23f, 0, 5.23f, 0, 0, 12.12f}, 6, 1e-6f, 1e-6f);
  ge_tensor_free(out);
  /* a child index out of range is refused at prepare */
  int64_t bad[] = {2, 2, 9};
  a[5] = GE_ATTR_INTS("nodes_falsenodeids", bad, 3);
  assert_int_equal(ge_test_run_node("ai.onnx.ml::TreeEnsemble", 18, a, 12, &x, 1, &out, 1),
                   GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "out of range"));
  ge_tensor_free(x);
  ge_tensor_free(modes);
  ge_tensor_free(splits);
  ge_tensor_free(lw);
}

/* ------------------------------------------------------------------ ImageDecoder */

static void decode_case(const uint8_t *data, size_t n, const char *fmt, const int64_t *dims,
                        const uint8_t *want) {
  int64_t len = (int64_t)n;
  ge_tensor *x = ge_test_tensor(GE_U8, &len, 1, data), *out = NULL;
  ge_attr a[] = {GE_ATTR_STRING("pixel_format", fmt)};
  run_ok("ImageDecoder", 20, a, 1, &x, 1, &out, 1);
  ge_test_assert_shape(out, GE_U8, dims, 3);
  assert_memory_equal(out->data, want, (size_t)(dims[0] * dims[1] * dims[2]));
  ge_tensor_free(out);
  ge_tensor_free(x);
}

static void test_image_decoder(void **unused) {
  (void)unused;
  /* 2x2 pixels: red, green / blue, white (top row first) */
  const uint8_t rgb[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255};
  const uint8_t bgr[] = {0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255};
  int64_t d3[] = {2, 2, 3}, d1[] = {2, 2, 1};
  /* PNM P6 */
  uint8_t pnm[64];
  int hl = snprintf((char *)pnm, sizeof pnm, "P6\n# c\n2 2\n255\n");
  memcpy(pnm + hl, rgb, 12);
  decode_case(pnm, (size_t)hl + 12, "RGB", d3, rgb);
  decode_case(pnm, (size_t)hl + 12, "BGR", d3, bgr);
  decode_case(pnm, (size_t)hl + 12, "Grayscale", d1, (const uint8_t[]){76, 150, 29, 255});
  /* 24-bit BMP, bottom-up rows padded to 8 bytes */
  uint8_t bmp[54 + 16] = {'B', 'M'};
  bmp[10] = 54, bmp[14] = 40, bmp[18] = 2, bmp[22] = 2, bmp[26] = 1, bmp[28] = 24;
  const uint8_t rows[16] = {255, 0, 0, 255, 255, 255, 0, 0, /* bottom: blue, white */
                            0, 0, 255, 0, 255, 0, 0, 0};    /* top: red, green */
  memcpy(bmp + 54, rows, 16);
  decode_case(bmp, sizeof bmp, "RGB", d3, rgb);
  /* little-endian uncompressed TIFF, one strip */
  uint8_t tif[8 + 2 + 8 * 12 + 4 + 12] = {'I', 'I', 42, 0, 8, 0, 0, 0, 8, 0};
  const uint16_t tags[8][2] = {{256, 2}, {257, 2}, {258, 8}, {259, 1},
                               {262, 2}, {273, 110}, {277, 3}, {279, 12}};
  for (int i = 0; i < 8; i++) {
    uint8_t *e = tif + 10 + i * 12;
    e[0] = (uint8_t)tags[i][0], e[1] = (uint8_t)(tags[i][0] >> 8);
    e[2] = 3, e[4] = 1; /* SHORT x 1 */
    e[8] = (uint8_t)tags[i][1], e[9] = (uint8_t)(tags[i][1] >> 8);
  }
  memcpy(tif + 110, rgb, 12);
  decode_case(tif, sizeof tif, "RGB", d3, rgb);
  /* PNG, Sub and Up filters: zlib stored block, then fixed Huffman codes */
  static const uint8_t png_stored[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
      0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd,
      0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x19, 0x49, 0x44, 0x41, 0x54, 0x78, 0x01, 0x01, 0x0e,
      0x00, 0xf1, 0xff, 0x01, 0xff, 0x00, 0x00, 0x01, 0xff, 0x00, 0x02, 0x01, 0x00, 0xff, 0xff,
      0x00, 0xff, 0x1e, 0x1c, 0x05, 0x01, 0xac, 0x7e, 0x19, 0x56, 0x00, 0x00, 0x00, 0x00, 0x49,
      0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
  static const uint8_t png_fixed[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
      0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd,
      0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x16, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc,
      0xcf, 0xc0, 0xc0, 0xf8, 0x9f, 0x81, 0x89, 0x91, 0xe1, 0xff, 0x7f, 0x86, 0xff, 0x00, 0x1e,
      0x1c, 0x05, 0x01, 0x39, 0x9a, 0x43, 0x30, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
      0xae, 0x42, 0x60, 0x82};
  decode_case(png_stored, sizeof png_stored, "RGB", d3, rgb);
  decode_case(png_fixed, sizeof png_fixed, "BGR", d3, bgr);
  /* a corrupt PNG stream is an error, not a crash */
  uint8_t png_bad[sizeof png_fixed];
  memcpy(png_bad, png_fixed, sizeof png_bad);
  png_bad[45] ^= 0x5a;
  int64_t nb = (int64_t)sizeof png_bad;
  ge_tensor *xb = ge_test_tensor(GE_U8, &nb, 1, png_bad), *ob = NULL;
  assert_int_not_equal(ge_test_run_node("ImageDecoder", 20, NULL, 0, &xb, 1, &ob, 1), GE_OK);
  ge_tensor_free(xb);
  /* truncated or malformed data, and garbage, fail naming the format */
  int64_t n = 4;
  ge_tensor *x = ge_test_tensor(GE_U8, &n, 1, (const uint8_t[]){0xff, 0xd8, 0xff, 0xe0}), *out = NULL;
  assert_int_equal(ge_test_run_node("ImageDecoder", 20, NULL, 0, &x, 1, &out, 1), GE_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(ge_last_error(), "JPEG"));
  ge_tensor_free(x);
  x = ge_test_tensor(GE_U8, &n, 1, (const uint8_t[]){'B', 'M', 0, 0});
  assert_int_not_equal(ge_test_run_node("ImageDecoder", 20, NULL, 0, &x, 1, &out, 1), GE_OK);
  ge_tensor_free(x);
  x = ge_test_tensor(GE_U8, &n, 1, (const uint8_t[]){'P', '6', ' ', '9'});
  assert_int_not_equal(ge_test_run_node("ImageDecoder", 20, NULL, 0, &x, 1, &out, 1), GE_OK);
  ge_tensor_free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_string_normalizer), cmocka_unit_test(test_string_concat),
      cmocka_unit_test(test_string_split),      cmocka_unit_test(test_regex_full_match),
      cmocka_unit_test(test_tfidf),             cmocka_unit_test(test_label_encoder),
      cmocka_unit_test(test_ml_small_ops),      cmocka_unit_test(test_tree_ensemble),
      cmocka_unit_test(test_image_decoder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
