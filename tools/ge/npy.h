/* The tool's .npy reader and writer are the library's (src/runtime/npy.c). */
#ifndef GE_TOOLS_NPY_H
#define GE_TOOLS_NPY_H

#include "runtime/npy.h"

#endif
