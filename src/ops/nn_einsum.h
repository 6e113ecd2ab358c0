/* Einsum equation parsing shared by the schema and the CPU kernel. */
#ifndef GE_OPS_NN_EINSUM_H
#define GE_OPS_NN_EINSUM_H

#include "ir/ir.h"

#define GE_EINSUM_MAX_OPS 16
#define GE_EINSUM_MAX_LABELS 64

typedef struct ge_einsum_plan {
  size_t n_ops;
  size_t n_labels;                 /* letters used + ellipsis dims */
  size_t n_ell;                    /* broadcast rank of the ellipsis */
  bool label_is_ell[GE_EINSUM_MAX_LABELS];
  int op_labels[GE_EINSUM_MAX_OPS][GE_MAX_RANK]; /* label of each operand dim */
  int32_t op_rank[GE_EINSUM_MAX_OPS];
  int out_labels[GE_MAX_RANK];
  size_t n_out;
} ge_einsum_plan;

/* Parses `eq` for n_ops operands of the given ranks; on failure writes why into err. */
ge_status ge_einsum_parse(const char *eq, size_t n_ops, const int32_t *ranks, ge_einsum_plan *p,
                          char *err, size_t err_cap);

#endif
