/* Window geometry shared by the nn schemas (src/ops/nn.c) and the CPU kernels: conv, conv
 * transpose and pooling attributes and the output-size arithmetic of the ONNX spec. */
#ifndef GE_OPS_NN_GEOM_H
#define GE_OPS_NN_GEOM_H

#include "ir/ir.h"

#define GE_NN_MAX_SP (GE_MAX_RANK - 2)

typedef enum ge_nn_autopad { GE_PAD_NOTSET, GE_PAD_SAME_UPPER, GE_PAD_SAME_LOWER, GE_PAD_VALID } ge_nn_autopad;

/* Attributes of Conv / ConvTranspose / *Pool, parsed and checked. */
typedef struct ge_nn_win_attrs {
  ge_nn_autopad auto_pad;
  bool has_kernel;        /* kernel_shape given */
  size_t nsp;             /* spatial rank from the attributes (0 = not yet known) */
  int64_t kernel[GE_NN_MAX_SP];
  int64_t strides[GE_NN_MAX_SP];
  int64_t dilations[GE_NN_MAX_SP];
  int64_t pads[2 * GE_NN_MAX_SP]; /* begins then ends */
  bool has_pads, has_strides, has_dilations;
  int64_t output_padding[GE_NN_MAX_SP];
  bool has_output_padding;
  int64_t output_shape[GE_NN_MAX_SP];
  bool has_output_shape;
  size_t n_output_shape;
  int64_t group;
  bool ceil_mode;
} ge_nn_win_attrs;

/* Parses the window attributes of node n ("kernel_shape" required when need_kernel).
   Errors name the node. */
ge_status ge_nn_win_parse(const ge_node *n, bool need_kernel, ge_nn_win_attrs *a);

/* Resolves per-dim values once nsp is known (defaults strides/dilations 1, pads 0); checks
   lengths against nsp.  kernel: spatial kernel dims (NULL = from attributes). */
ge_status ge_nn_win_resolve(const ge_node *n, ge_nn_win_attrs *a, size_t nsp, const int64_t *kernel);

/* Output extent and effective pads of spatial dim i for input extent `in` (>= 0) for
   Conv/Pool; ceil applies ceil_mode.  Error (naming the node) when the window is larger than
   the padded input. */
ge_status ge_nn_win_out(const ge_node *n, const ge_nn_win_attrs *a, size_t i, int64_t in,
                        bool ceil, int64_t *out, int64_t *pad_begin, int64_t *pad_end);

/* ConvTranspose: output extent and pads of dim i. */
ge_status ge_nn_convt_out(const ge_node *n, const ge_nn_win_attrs *a, size_t i, int64_t in,
                          int64_t *out, int64_t *pad_begin, int64_t *pad_end);

#endif
