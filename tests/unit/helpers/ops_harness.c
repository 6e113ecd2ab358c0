/* See ops_harness.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers/ops_harness.h"

#define H_MAX_IO 64

static void free_outputs(ge_tensor **outputs, size_t n_out) {
  for (size_t i = 0; i < n_out; i++) {
    ge_tensor_free(outputs[i]);
    outputs[i] = NULL;
  }
}

/* Builds the one-node graph.  decl[i]: dtype/dims declared for input i (NULL = omitted). */
static ge_status build_graph(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                             const ge_type *const *decl, size_t n_in, size_t n_out,
                             ge_graph **gout, ge_node **nout) {
  char in_names[H_MAX_IO][24], out_names[H_MAX_IO][24];
  const char *in_ptrs[H_MAX_IO], *out_ptrs[H_MAX_IO];
  if (n_in > H_MAX_IO || n_out > H_MAX_IO)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "test harness: too many inputs/outputs");
  ge_graph *g = NULL;
  GE_CHECK(ge_graph_create("test", &g));
  ge_status st = ge_graph_set_opset(g, "", opset);
  for (size_t i = 0; st == GE_OK && i < n_in; i++) {
    if (!decl[i]) {
      in_ptrs[i] = "";
      continue;
    }
    snprintf(in_names[i], sizeof in_names[i], "in%zu", i);
    in_ptrs[i] = in_names[i];
    int64_t dims[GE_MAX_RANK];
    int rank = decl[i]->shape.rank < 0 ? 0 : decl[i]->shape.rank;
    for (int d = 0; d < rank; d++) dims[d] = decl[i]->shape.dims[d] < 0 ? -1 : decl[i]->shape.dims[d];
    ge_dtype dt = decl[i]->dtype == GE_DTYPE_COUNT ? GE_F32 : decl[i]->dtype;
    st = ge_graph_add_input(g, in_names[i], dt, dims, (size_t)rank);
  }
  for (size_t i = 0; i < n_out; i++) {
    snprintf(out_names[i], sizeof out_names[i], "out%zu", i);
    out_ptrs[i] = out_names[i];
  }
  if (st == GE_OK)
    st = ge_graph_add_node(g, op, "test_node", in_ptrs, n_in, out_ptrs, n_out, attrs, n_attrs);
  if (st == GE_OK && g->n_nodes == 0) st = ge_error(GE_ERR_INTERNAL, "test harness: no node");
  if (st != GE_OK) {
    ge_graph_free(g);
    return st;
  }
  ge_node *node = &g->nodes[g->n_nodes - 1];
  if (node->opset == 0) node->opset = opset;
  *gout = g;
  *nout = node;
  return GE_OK;
}

ge_type ge_test_type(ge_dtype dt, const int64_t *dims, int rank) {
  ge_type t;
  memset(&t, 0, sizeof t);
  t.kind = GE_TYPE_TENSOR;
  t.dtype = dt;
  if (rank < 0) {
    t.shape.rank = GE_RANK_UNKNOWN;
  } else {
    t.shape.rank = rank;
    for (int i = 0; i < rank; i++) t.shape.dims[i] = dims[i];
  }
  return t;
}

ge_status ge_test_infer_node(const char *op, int64_t opset, const ge_attr *attrs,
                             size_t n_attrs, const ge_type *const *in_types,
                             const ge_tensor *const *values, size_t n_in, ge_type *out_types,
                             size_t n_out) {
  ge_graph *g = NULL;
  ge_node *node = NULL;
  GE_CHECK(build_graph(op, opset, attrs, n_attrs, in_types, n_in, n_out, &g, &node));
  ge_infer_input ins[H_MAX_IO];
  for (size_t i = 0; i < n_in; i++) {
    ins[i].present = in_types[i] != NULL;
    ins[i].type = in_types[i];
    ins[i].value = values ? values[i] : NULL;
  }
  ge_infer_ctx c = {.graph = g, .node = node, .opset = node->opset, .n_in = n_in,
                    .n_out = n_out, .in = ins, .out = out_types};
  ge_status st = ge_op_infer(&c);
  ge_graph_free(g);
  return st;
}

ge_status ge_test_run_node(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                           ge_tensor *const *inputs, size_t n_in, ge_tensor **outputs,
                           size_t n_out) {
  for (size_t i = 0; i < n_out; i++) outputs[i] = NULL;
  if (n_in > H_MAX_IO || n_out > H_MAX_IO)
    return ge_error(GE_ERR_INVALID_ARGUMENT, "test harness: too many inputs/outputs");
  ge_type in_types[H_MAX_IO], out_types[H_MAX_IO];
  const ge_type *decl[H_MAX_IO];
  ge_infer_input ins[H_MAX_IO];
  for (size_t i = 0; i < n_in; i++) {
    if (inputs[i]) {
      ge_tensor_shape(inputs[i], &in_types[i].shape);
      in_types[i].kind = GE_TYPE_TENSOR;
      in_types[i].dtype = inputs[i]->dtype;
      in_types[i].elem_is_seq = false;
      decl[i] = &in_types[i];
    } else {
      decl[i] = NULL;
    }
    ins[i].present = inputs[i] != NULL;
    ins[i].type = decl[i];
    ins[i].value = inputs[i];
  }
  ge_graph *g = NULL;
  ge_node *node = NULL;
  GE_CHECK(build_graph(op, opset, attrs, n_attrs, decl, n_in, n_out, &g, &node));
  ge_infer_ctx ic = {.graph = g, .node = node, .opset = node->opset, .n_in = n_in,
                     .n_out = n_out, .in = ins, .out = out_types};
  ge_status st = ge_op_infer(&ic);
  const ge_kernel *k = NULL;
  void *state = NULL;
  if (st == GE_OK) {
    k = ge_cpu_find_kernel(node->domain, node->op_type, node->opset);
    if (!k)
      st = ge_error(GE_ERR_UNSUPPORTED, "test harness: no CPU kernel for %s at opset %lld",
                    op, (long long)node->opset);
  }
  if (st == GE_OK && k->prepare) {
    ge_prepare_ctx pc = {.graph = g, .node = node, .opset = node->opset, .n_in = n_in,
                         .n_out = n_out, .in = ins, .out = out_types, .intra_threads = 1};
    st = k->prepare(&pc, &state);
  }
  for (size_t i = 0; st == GE_OK && i < n_out; i++) {
    if (k->dynamic_output) {
      int64_t zero = 0;
      st = ge_tensor_create(GE_F32, &zero, 1, &outputs[i]);
      if (st == GE_OK) {
        ge_tensor_release_storage(outputs[i]);
        outputs[i]->data = NULL;
        outputs[i]->numel = 0;
        outputs[i]->nbytes = 0;
        outputs[i]->owns = false;
        outputs[i]->release = NULL;
      }
    } else if (out_types[i].dtype == GE_DTYPE_COUNT || !ge_shape_is_static(&out_types[i].shape)) {
      char buf[128];
      st = ge_error(GE_ERR_SHAPE, "test harness: output %zu of %s is not static: %s %s", i, op,
                    out_types[i].dtype == GE_DTYPE_COUNT ? "?" : ge_dtype_name(out_types[i].dtype),
                    ge_shape_str(&out_types[i].shape, g, buf, sizeof buf));
    } else {
      st = ge_tensor_create_shape(out_types[i].dtype, &out_types[i].shape, &outputs[i]);
    }
  }
  if (st == GE_OK) {
    ge_kctx kc = {.node = node, .n_in = n_in, .n_out = n_out, .in = inputs, .out = outputs,
                  .threads = 1, .exec = NULL};
    st = k->run(state, &kc);
  }
  if (k && k->release && state) k->release(state);
  if (st != GE_OK) free_outputs(outputs, n_out);
  ge_graph_free(g);
  return st;
}

ge_tensor *ge_test_tensor(ge_dtype dt, const int64_t *dims, size_t rank, const void *vals) {
  ge_tensor *t = NULL;
  ge_status st = ge_tensor_create(dt, dims, rank, &t);
  if (st != GE_OK) fail_msg("ge_tensor_create: %s", ge_last_error());
  if (vals && t->nbytes) {
    if (dt == GE_STRING) {
      const char *const *s = vals;
      for (size_t i = 0; i < t->numel; i++)
        if (ge_tensor_set_string(t, i, s[i]) != GE_OK) fail_msg("%s", ge_last_error());
    } else {
      memcpy(t->data, vals, t->nbytes);
    }
  }
  return t;
}

ge_tensor *ge_test_tensor_f32(const int64_t *dims, size_t rank, const float *vals) {
  return ge_test_tensor(GE_F32, dims, rank, vals);
}
ge_tensor *ge_test_tensor_f64(const int64_t *dims, size_t rank, const double *vals) {
  return ge_test_tensor(GE_F64, dims, rank, vals);
}
ge_tensor *ge_test_tensor_i32(const int64_t *dims, size_t rank, const int32_t *vals) {
  return ge_test_tensor(GE_I32, dims, rank, vals);
}
ge_tensor *ge_test_tensor_i64(const int64_t *dims, size_t rank, const int64_t *vals) {
  return ge_test_tensor(GE_I64, dims, rank, vals);
}
ge_tensor *ge_test_tensor_bool(const int64_t *dims, size_t rank, const bool *vals) {
  return ge_test_tensor(GE_BOOL, dims, rank, vals);
}

ge_tensor *ge_test_tensor_from_f32(ge_dtype dt, const int64_t *dims, size_t rank,
                                   const float *vals) {
  ge_tensor *t = ge_test_tensor(dt, dims, rank, NULL);
  for (size_t i = 0; vals && i < t->numel; i++) {
    float v = vals[i];
    switch (dt) {
      case GE_F32: ((float *)t->data)[i] = v; break;
      case GE_F64: ((double *)t->data)[i] = v; break;
      case GE_F16: ((uint16_t *)t->data)[i] = ge_f32_to_f16(v); break;
      case GE_BF16: ((uint16_t *)t->data)[i] = ge_f32_to_bf16(v); break;
      case GE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
      case GE_I16: ((int16_t *)t->data)[i] = (int16_t)v; break;
      case GE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
      case GE_I64: ((int64_t *)t->data)[i] = (int64_t)v; break;
      case GE_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
      case GE_U16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
      case GE_U32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
      case GE_U64: ((uint64_t *)t->data)[i] = (uint64_t)v; break;
      case GE_BOOL: ((bool *)t->data)[i] = v != 0; break;
      default: fail_msg("ge_test_tensor_from_f32: dtype %s", ge_dtype_name(dt));
    }
  }
  return t;
}

static void check_one(size_t i, double v, double e, double atol, double rtol) {
  if (isnan(e) && isnan(v)) return;
  if (isinf(e) || isinf(v)) {
    if (v != e) fail_msg("element %zu: got %.9g, expected %.9g", i, v, e);
    return;
  }
  if (!(fabs(v - e) <= atol + rtol * fabs(e)))
    fail_msg("element %zu: got %.9g, expected %.9g (atol %g rtol %g)", i, v, e, atol, rtol);
}

void ge_test_assert_close_f64(const ge_tensor *a, const double *expected, size_t n, double atol,
                              double rtol) {
  if (!a) fail_msg("tensor is NULL");
  if (a->numel != n) fail_msg("tensor has %zu elements, expected %zu", a->numel, n);
  for (size_t i = 0; i < n; i++) check_one(i, ge_tensor_get_f64(a, i), expected[i], atol, rtol);
}

void ge_test_assert_close(const ge_tensor *a, const float *expected, size_t n, float atol,
                          float rtol) {
  if (!a) fail_msg("tensor is NULL");
  if (a->numel != n) fail_msg("tensor has %zu elements, expected %zu", a->numel, n);
  for (size_t i = 0; i < n; i++)
    check_one(i, ge_tensor_get_f64(a, i), (double)expected[i], (double)atol, (double)rtol);
}

void ge_test_assert_ints(const ge_tensor *a, const int64_t *expected, size_t n) {
  if (!a) fail_msg("tensor is NULL");
  if (a->numel != n) fail_msg("tensor has %zu elements, expected %zu", a->numel, n);
  for (size_t i = 0; i < n; i++) {
    int64_t v = ge_tensor_get_i64(a, i);
    if (v != expected[i])
      fail_msg("element %zu: got %lld, expected %lld", i, (long long)v, (long long)expected[i]);
  }
}

void ge_test_assert_shape(const ge_tensor *a, ge_dtype dt, const int64_t *dims, size_t rank) {
  if (!a) fail_msg("tensor is NULL");
  if (a->dtype != dt)
    fail_msg("dtype %s, expected %s", ge_dtype_name(a->dtype), ge_dtype_name(dt));
  if ((size_t)a->rank != rank) fail_msg("rank %d, expected %zu", a->rank, rank);
  for (size_t i = 0; i < rank; i++)
    if (a->dims[i] != dims[i])
      fail_msg("dim %zu is %lld, expected %lld", i, (long long)a->dims[i], (long long)dims[i]);
}
