/* A Mersenne Twister (MT19937) that reproduces numpy's legacy RandomState for an integer
 * seed: random_sample() doubles and the polar-method gauss().  Used by the random family
 * and by Dropout in training mode.  Plain data: one generator per run, on the stack. */
#ifndef GE_BACKEND_CPU_REF_RANDOM_H
#define GE_BACKEND_CPU_REF_RANDOM_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

typedef struct ge_mt19937 {
  uint32_t key[624];
  int pos;
  bool has_gauss;
  double gauss;
} ge_mt19937;

/* numpy.random.RandomState(seed) for 0 <= seed < 2^32. */
void ge_mt_seed(ge_mt19937 *m, uint32_t seed);
uint32_t ge_mt_u32(ge_mt19937 *m);
/* A double in [0, 1) with 53 random bits (numpy random_sample). */
double ge_mt_double(ge_mt19937 *m);
/* A standard normal sample (numpy legacy gauss: polar Box-Muller, second value cached). */
double ge_mt_gauss(ge_mt19937 *m);

/* The seed a random kernel uses for its run number `run` (0, 1, ...): the `seed` attribute
 * itself for the first run when one is given (so that run matches numpy), then a mix. */
uint32_t ge_random_run_seed(bool has_seed, float seed, uint64_t base, uint64_t run);

/* Per-kernel seeding: the `seed` attribute (if any) and a run counter (atomic; the only
 * mutable part of a kernel's state).  Init in prepare, next at the start of each run. */
typedef struct ge_random_stream {
  bool has_seed;
  float seed;
  uint64_t base;          /* unseeded: from the clock and the stream's address */
  _Atomic uint64_t runs;
} ge_random_stream;

void ge_random_stream_init(ge_random_stream *r, const ge_node *node);
/* Seeds m for the next run of the kernel owning r (r is logically const: only the counter). */
void ge_random_stream_next(const ge_random_stream *r, ge_mt19937 *m);

#endif
