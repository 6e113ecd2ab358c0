/* NumPy .npy files (format 1.0-3.0, little-endian, C order) <-> ge tensors.  Internal to the
 * library (the node dump writes with it) and shared with the `ge` tool: one copy. */
#ifndef GE_RUNTIME_NPY_H
#define GE_RUNTIME_NPY_H

#include "ge/ge.h"

/* Reads a .npy file; errors name the file and what is wrong. */
ge_status ge_npy_read(const char *path, ge_tensor **out);
/* Writes a plain tensor as .npy.  bfloat16 (which NumPy lacks) is written as float32;
   GE_STRING is GE_ERR_UNSUPPORTED. */
ge_status ge_npy_write(const char *path, const ge_tensor *t);

#endif
