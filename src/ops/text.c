/* Schemas of the text family: StringNormalizer, StringConcat, StringSplit, RegexFullMatch,
 * TfIdfVectorizer and ai.onnx.ml LabelEncoder. */
#include <string.h>

#include "ops/op.h"

static const ge_dtype string_only[] = {GE_STRING, GE_DTYPE_COUNT};

static bool tensor_rank_known(const ge_infer_ctx *c, size_t i) {
  return ge_infer_has_input(c, i) && c->in[i].type->kind == GE_TYPE_TENSOR &&
         c->in[i].type->shape.rank != GE_RANK_UNKNOWN;
}

/* ------------------------------------------------------------------ StringNormalizer */

static ge_status infer_string_normalizer(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, string_only));
  const char *act = ge_node_attr_string(c->node, "case_change_action", "NONE");
  if (strcmp(act, "NONE") && strcmp(act, "LOWER") && strcmp(act, "UPPER"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "case_change_action '%s' is not one of NONE, LOWER, UPPER", act);
  if (!tensor_rank_known(c, 0)) {
    ge_infer_set(c, 0, GE_STRING, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  if (is->rank != 1 && !(is->rank == 2 && (is->dims[0] == 1 || is->dims[0] < 0)))
    return ge_infer_fail(c, GE_ERR_SHAPE,
                         "input 0 must have shape [C] or [1, C] (rank %d given)", (int)is->rank);
  ge_shape s = *is;
  s.dims[s.rank - 1] = GE_DIM_UNKNOWN; /* stopwords are removed at run time */
  if (s.rank == 2) s.dims[0] = 1;
  ge_infer_set(c, 0, GE_STRING, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ StringConcat */

static ge_status infer_string_concat(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, string_only));
  GE_CHECK(ge_infer_check_dtype(c, 1, string_only));
  if (!tensor_rank_known(c, 0) || !tensor_rank_known(c, 1)) {
    ge_infer_set(c, 0, GE_STRING, NULL);
    return GE_OK;
  }
  ge_shape s;
  if (ge_shape_broadcast(&c->in[0].type->shape, &c->in[1].type->shape, &s) != GE_OK) {
    char a[128], b[128];
    return ge_infer_fail(c, GE_ERR_SHAPE, "inputs %s and %s do not broadcast",
                         ge_shape_str(&c->in[0].type->shape, c->graph, a, sizeof a),
                         ge_shape_str(&c->in[1].type->shape, c->graph, b, sizeof b));
  }
  ge_infer_set(c, 0, GE_STRING, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ StringSplit */

static ge_status infer_string_split(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, string_only));
  const ge_attr_value *ms = ge_node_attr(c->node, "maxsplit");
  if (ms && ms->i < 0)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "maxsplit must be >= 0 (got %lld)",
                         (long long)ms->i);
  if (!tensor_rank_known(c, 0)) {
    ge_infer_set(c, 0, GE_STRING, NULL);
    if (c->n_out > 1) ge_infer_set(c, 1, GE_I64, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  if (is->rank >= GE_MAX_RANK)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input rank %d leaves no room for the split axis",
                         (int)is->rank);
  ge_shape s = *is;
  s.dims[s.rank++] = GE_DIM_UNKNOWN;
  ge_infer_set(c, 0, GE_STRING, &s);
  if (c->n_out > 1) ge_infer_set(c, 1, GE_I64, is);
  return GE_OK;
}

/* ------------------------------------------------------------------ RegexFullMatch */

static ge_status infer_regex_full_match(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, string_only));
  if (!ge_node_attr(c->node, "pattern"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'pattern' is required");
  if (!tensor_rank_known(c, 0)) {
    ge_infer_set(c, 0, GE_BOOL, NULL);
    return GE_OK;
  }
  ge_infer_set(c, 0, GE_BOOL, &c->in[0].type->shape);
  return GE_OK;
}

/* ------------------------------------------------------------------ TfIdfVectorizer */

static ge_status infer_tfidf(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_STRING, GE_I32, GE_I64,
                                                         GE_DTYPE_COUNT}));
  const int64_t *idx;
  size_t n_idx;
  if (!ge_node_attr_ints(c->node, "ngram_indexes", &idx, &n_idx) || n_idx == 0)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "attribute 'ngram_indexes' is required");
  int64_t width = 0;
  for (size_t i = 0; i < n_idx; i++) {
    if (idx[i] < 0 || idx[i] > ((int64_t)1 << 40))
      return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "ngram_indexes[%zu] = %lld is out of range",
                           i, (long long)idx[i]);
    if (idx[i] + 1 > width) width = idx[i] + 1;
  }
  if (!tensor_rank_known(c, 0)) {
    ge_infer_set(c, 0, GE_F32, NULL);
    return GE_OK;
  }
  const ge_shape *is = &c->in[0].type->shape;
  ge_shape s;
  if (is->rank == 1 || is->rank == 0) {
    s.rank = 1;
    s.dims[0] = width;
  } else if (is->rank == 2) {
    s.rank = 2;
    s.dims[0] = is->dims[0];
    s.dims[1] = width;
  } else {
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must be [C] or [N, C] (rank %d given)",
                         (int)is->rank);
  }
  ge_infer_set(c, 0, GE_F32, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ LabelEncoder (ai.onnx.ml) */

/* The dtype the values attribute family gives (or GE_DTYPE_COUNT when none is set). */
static ge_dtype label_values_dtype(const ge_node *n) {
  const ge_attr_value *a;
  if ((a = ge_node_attr(n, "values_tensor")) && a->t) return a->t->dtype;
  if (ge_node_attr(n, "values_strings")) return GE_STRING;
  if (ge_node_attr(n, "values_int64s")) return GE_I64;
  if (ge_node_attr(n, "values_floats")) return GE_F32;
  return GE_DTYPE_COUNT;
}

static ge_status infer_label_encoder(ge_infer_ctx *c) {
  ge_dtype vt = label_values_dtype(c->node);
  if (vt == GE_DTYPE_COUNT)
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "one of values_strings, values_int64s, values_floats, values_tensor is "
                         "required");
  if (!ge_infer_has_input(c, 0)) {
    ge_infer_set(c, 0, vt, NULL);
    return GE_OK;
  }
  ge_infer_set(c, 0, vt, tensor_rank_known(c, 0) ? &c->in[0].type->shape : NULL);
  return GE_OK;
}

/* ------------------------------------------------------------------ ArrayFeatureExtractor, Binarizer */

static ge_status infer_array_feature_extractor(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_F32, GE_F64, GE_I64, GE_I32, GE_STRING,
                                                         GE_DTYPE_COUNT}));
  GE_CHECK(ge_infer_check_dtype(c, 1, (const ge_dtype[]){GE_I64, GE_DTYPE_COUNT}));
  ge_dtype dt = ge_infer_has_input(c, 0) ? c->in[0].type->dtype : GE_DTYPE_COUNT;
  if (!tensor_rank_known(c, 0)) {
    ge_infer_set(c, 0, dt, NULL);
    return GE_OK;
  }
  const ge_shape *xs = &c->in[0].type->shape;
  if (xs->rank < 1)
    return ge_infer_fail(c, GE_ERR_SHAPE, "input 0 must have rank >= 1 (a scalar given)");
  int64_t k = GE_DIM_UNKNOWN;
  size_t nk;
  if (tensor_rank_known(c, 1) && ge_shape_numel(&c->in[1].type->shape, &nk)) k = (int64_t)nk;
  ge_shape s = *xs;
  if (s.rank == 1) {
    s.rank = 2;
    s.dims[0] = 1;
  }
  s.dims[s.rank - 1] = k;
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

static ge_status infer_binarizer(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_F32, GE_F64, GE_I64, GE_I32,
                                                         GE_DTYPE_COUNT}));
  ge_infer_copy(c, 0, 0);
  return GE_OK;
}

/* ------------------------------------------------------------------ ImageDecoder */

static ge_status infer_image_decoder(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_U8, GE_DTYPE_COUNT}));
  const char *fmt = ge_node_attr_string(c->node, "pixel_format", "RGB");
  bool gray = !strcmp(fmt, "Grayscale");
  if (!gray && strcmp(fmt, "RGB") && strcmp(fmt, "BGR"))
    return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT,
                         "pixel_format '%s' is not one of RGB, BGR, Grayscale", fmt);
  ge_shape s = {.rank = 3, .dims = {GE_DIM_UNKNOWN, GE_DIM_UNKNOWN, gray ? 1 : 3}};
  ge_infer_set(c, 0, GE_U8, &s);
  return GE_OK;
}

/* ------------------------------------------------------------------ TreeEnsemble (ai.onnx.ml 5) */

static ge_status infer_tree_ensemble(ge_infer_ctx *c) {
  GE_CHECK(ge_infer_check_dtype(c, 0, (const ge_dtype[]){GE_F32, GE_F64, GE_F16, GE_DTYPE_COUNT}));
  int64_t nt = ge_node_attr_int(c->node, "n_targets", 0);
  if (nt < 1) return ge_infer_fail(c, GE_ERR_INVALID_ARGUMENT, "n_targets must be >= 1");
  ge_dtype dt = ge_infer_has_input(c, 0) ? c->in[0].type->dtype : GE_DTYPE_COUNT;
  ge_shape s = {.rank = 2, .dims = {GE_DIM_UNKNOWN, nt}};
  if (tensor_rank_known(c, 0) && c->in[0].type->shape.rank >= 1)
    s.dims[0] = c->in[0].type->shape.dims[0];
  ge_infer_set(c, 0, dt, &s);
  return GE_OK;
}

const ge_op_schema ge_schemas_text[] = {
    {"", "StringNormalizer", 10, 0, 1, 1, 1, 1, infer_string_normalizer},
    {"", "StringConcat", 20, 0, 2, 2, 1, 1, infer_string_concat},
    {"", "StringSplit", 20, 0, 1, 1, 2, 2, infer_string_split},
    {"", "RegexFullMatch", 20, 0, 1, 1, 1, 1, infer_regex_full_match},
    {"", "TfIdfVectorizer", 9, 0, 1, 1, 1, 1, infer_tfidf},
    {"ai.onnx.ml", "LabelEncoder", 1, 0, 1, 1, 1, 1, infer_label_encoder},
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, 0, 2, 2, 1, 1, infer_array_feature_extractor},
    {"ai.onnx.ml", "Binarizer", 1, 0, 1, 1, 1, 1, infer_binarizer},
    {"", "ImageDecoder", 20, 0, 1, 1, 1, 1, infer_image_decoder},
    {"ai.onnx.ml", "TreeEnsemble", 5, 0, 1, 1, 1, 1, infer_tree_ensemble},
    {0},
};
