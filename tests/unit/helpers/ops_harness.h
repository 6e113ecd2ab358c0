/* A small harness for op tests: run one node through inference, prepare and run, and small
 * tensor constructors / comparisons.  Linked into every unit test (tests/unit/helpers/).
 *
 *   int64_t d[] = {2, 3};
 *   ge_tensor *a = ge_test_tensor_f32(d, 2, (float[]){1, 2, 3, 4, 5, 6});
 *   ge_tensor *out = NULL;
 *   assert_int_equal(ge_test_run_node("Relu", 17, NULL, 0, &a, 1, &out, 1), GE_OK);
 *   ge_test_assert_close(out, (float[]){1, 2, 3, 4, 5, 6}, 6, 0, 0);
 *   ge_tensor_free(out); ge_tensor_free(a);
 */
#ifndef GE_TESTS_OPS_HARNESS_H
#define GE_TESTS_OPS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/kernel.h"
#include "ir/ir.h"
#include "ops/op.h"

/* Runs one node `op` ("Op" for ai.onnx or "domain::Op") at ai.onnx opset `opset`:
 * builds a graph (inputs "in0".. with the exact static shapes of the given tensors; a NULL
 * inputs[i] is an omitted optional input), adds the node "test_node" with outputs "out0"..,
 * runs ge_op_infer (every input's value is known: value-dependent inference works), finds
 * the CPU kernel, prepares it, allocates the outputs from the inferred static shapes (or
 * leaves them for a dynamic_output kernel to allocate), runs it and releases the state.
 * On success outputs[0..n_out) are new tensors the caller frees with ge_tensor_free.
 * On failure every outputs[i] is NULL and the status/message of the failing step is
 * returned (ge_last_error()). */
ge_status ge_test_run_node(const char *op, int64_t opset, const ge_attr *attrs, size_t n_attrs,
                           ge_tensor *const *inputs, size_t n_in, ge_tensor **outputs,
                           size_t n_out);

/* Inference only, from hand-made types: in_types[i] (NULL = omitted input), values[i] the
 * constant value of input i or NULL (values itself may be NULL).  Fills out_types[0..n_out).
 * The node is named "test_node", so error messages contain "test_node". */
ge_status ge_test_infer_node(const char *op, int64_t opset, const ge_attr *attrs,
                             size_t n_attrs, const ge_type *const *in_types,
                             const ge_tensor *const *values, size_t n_in, ge_type *out_types,
                             size_t n_out);

/* A tensor type with a given dtype and shape; rank < 0 = unknown rank.  dims may contain
 * GE_DIM_UNKNOWN or GE_DIM_SYM(id). */
ge_type ge_test_type(ge_dtype dt, const int64_t *dims, int rank);

/* New tensors holding a copy of vals (vals may be NULL: zeros).  Abort the test on failure. */
ge_tensor *ge_test_tensor(ge_dtype dt, const int64_t *dims, size_t rank, const void *vals);
ge_tensor *ge_test_tensor_f32(const int64_t *dims, size_t rank, const float *vals);
ge_tensor *ge_test_tensor_f64(const int64_t *dims, size_t rank, const double *vals);
ge_tensor *ge_test_tensor_i32(const int64_t *dims, size_t rank, const int32_t *vals);
ge_tensor *ge_test_tensor_i64(const int64_t *dims, size_t rank, const int64_t *vals);
ge_tensor *ge_test_tensor_bool(const int64_t *dims, size_t rank, const bool *vals);
/* Any dtype from float values (converted like a C cast; f16/bf16 rounded). */
ge_tensor *ge_test_tensor_from_f32(ge_dtype dt, const int64_t *dims, size_t rank,
                                   const float *vals);

/* cmocka assertions.  Elements are read as double (any numeric dtype or bool):
 * |a - e| <= atol + rtol * |e|, NaN equals NaN, infinities must match exactly.
 * The tensor must have exactly n elements. */
void ge_test_assert_close(const ge_tensor *a, const float *expected, size_t n, float atol,
                          float rtol);
void ge_test_assert_close_f64(const ge_tensor *a, const double *expected, size_t n, double atol,
                              double rtol);
/* Exact integer comparison (any int dtype or bool). */
void ge_test_assert_ints(const ge_tensor *a, const int64_t *expected, size_t n);
/* dtype and dims must match. */
void ge_test_assert_shape(const ge_tensor *a, ge_dtype dt, const int64_t *dims, size_t rank);

#endif
