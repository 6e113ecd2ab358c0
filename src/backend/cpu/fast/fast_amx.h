/* A bf16 GEMM of ge's own on AMX (amx.c): C [M,N] = A [M,K] x B [K,N] with B a weight packed
 * once, bf16 products accumulated in float32, then a bias, a residual and an activation, C
 * written float32 or bf16; A may also be a channels-last image batch read through a
 * convolution's window.  fast/pgemm.c runs the bf16 MatMul, Gemm and Conv forms on it (issue
 * 6): its threads claim the work dynamically (ge_parallel_steal), where oneDNN's primitives
 * split it statically and so wait for the slower core. */
#ifndef GE_BACKEND_CPU_FAST_AMX_H
#define GE_BACKEND_CPU_FAST_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/fused.h"

/* True where the processor has AMX-BF16 (with AVX512-BF16), the OS lets this process use the
   tile registers (asked once), and oneDNN's ISA ceiling (ONEDNN_MAX_CPU_ISA) admits AMX. */
bool ge_amx_usable(void);

/* Elements (uint16_t) of B [K,N] packed: panels of 32 columns, K rounded up to 32. */
size_t ge_amx_packed_elems(size_t K, size_t N);

/* Packs alpha * B, B row-major [K,N] or with trans [N,K], as bf16 (rounded to nearest even)
   into bp (ge_amx_packed_elems, 64-byte aligned): panel p, K block kb (32 rows) is two 16 x 32
   tiles of pairs (row r: B[32 kb + 2 r][32 p + c], B[32 kb + 2 r + 1][32 p + c] for c < 16),
   zero where past K or N. */
void ge_amx_pack(const float *B, size_t K, size_t N, bool trans, float alpha, uint16_t *bp);

/* A convolution as the GEMM (ge_amx_gemm.conv): A is then X, a channels-last batch [n, h, w, c]
   (bf16 when a16) read through the window, C the output [n, oh, ow, N] channels-last, M =
   n oh ow and K = kh kw round32(c) (ge_amx_conv_k; B from ge_amx_pack_conv).  With stride 1 and
   dilation 1, X is copied once per run into a zero-bordered [n, h + pads, w + pads, round32(c)]
   buffer and every tap's A tile is a run of its rows (the output computed on the padded width,
   the extra columns dropped); otherwise each output pixel's receptive field is gathered. */
typedef struct ge_amx_conv {
  size_t n, h, w, c;
  size_t kh, kw, sh, sw, dh, dw, pt, pl, oh, ow;
} ge_amx_conv;
#define GE_AMX_MAX_TAPS 64 /* kh kw at most */

size_t ge_amx_conv_k(const ge_amx_conv *cv);
/* Packs convolution weights [N, c, kh, kw] (ONNX order) as B [ge_amx_conv_k, N]: row
   (ky kw + kx) round32(c) + ci.  False when out of memory. */
bool ge_amx_pack_conv(const float *w, size_t N, const ge_amx_conv *cv, uint16_t *bp);

typedef struct ge_amx_gemm {
  size_t M, K, N;
  const ge_amx_conv *conv; /* NULL: A is [M, K] */
  const uint16_t *bp; /* ge_amx_pack */
  const void *a;      /* A [M,K] row-major (or X, with conv): bf16 when a16, else float32 */
  bool a16;
  void *c;            /* C [M,N] row-major: bf16 when c16, else float32 */
  bool c16;
  const float *bias;  /* [N], or NULL */
  const void *sum;    /* a residual [M,N] laid out as C (bf16 when sum16), or NULL; may be C */
  bool sum16;
  ge_fused_act act;   /* applied last; parameters as ge_fo_act_inplace takes them */
  float p0, p1;
} ge_amx_gemm;

/* C = act(A x B + bias + sum) on up to `threads` threads.  Needs ge_amx_usable().  False when
   the scratch for a converted A cannot be had (nothing written then). */
bool ge_amx_run(const ge_amx_gemm *g, int threads);

#endif
