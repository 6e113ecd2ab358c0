/* A portable, cache-blocked single-precision GEMM with run-time CPU dispatch. */
#ifndef GE_BACKEND_CPU_GEMM_H
#define GE_BACKEND_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "ge/ge.h"

/* Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
   op(A) = A (M x K, row stride lda) or, with trans_a, A^T where A is K x M (row stride lda);
   likewise for B.  beta == 0 overwrites C (NaNs in C are ignored).  threads <= 1 runs on the
   caller only.  Returns GE_ERR_INVALID_ARGUMENT for a leading dimension that is too small and
   GE_ERR_OUT_OF_MEMORY when packing buffers cannot be allocated (a message is set). */
ge_status ge_sgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                   const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                   size_t ldc, int threads);

/* Double precision, same conventions: a straightforward blocked loop (row-parallel), for
   float64 models where accuracy matters more than speed. */
ge_status ge_dgemm(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, double alpha,
                   const double *A, size_t lda, const double *B, size_t ldb, double beta,
                   double *C, size_t ldc, int threads);

/* Name of the micro-kernel variant picked for this CPU ("avx512", "avx2" or "generic"). */
const char *ge_sgemm_isa(void);

#endif
