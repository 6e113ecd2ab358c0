/* NumPy .npy files (format 1.0-3.0, little-endian, C order) <-> ge tensors. */
#ifndef GE_TOOLS_NPY_H
#define GE_TOOLS_NPY_H

#include "ge/ge.h"

/* Reads a .npy file; errors name the file and what is wrong. */
ge_status ge_npy_read(const char *path, ge_tensor **out);
/* Writes a tensor (not GE_STRING) as .npy. */
ge_status ge_npy_write(const char *path, const ge_tensor *t);

#endif
