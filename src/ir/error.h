/* Thread-local error messages: every failure returns a status and sets a message naming the
 * file, node, op, shapes or option it concerns. */
#ifndef GE_IR_ERROR_H
#define GE_IR_ERROR_H

#include "ge/ge.h"

#if defined(__GNUC__)
#define GE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GE_PRINTF(a, b)
#endif

/* Sets this thread's message and returns st, so that `return ge_error(...)` reads well. */
ge_status ge_error(ge_status st, const char *fmt, ...) GE_PRINTF(2, 3);
/* Prefixes context to the current message ("while compiling graph 3: " + old). Returns st. */
ge_status ge_error_prefix(ge_status st, const char *fmt, ...) GE_PRINTF(2, 3);
void ge_error_clear(void);

/* Log a warning to stderr (once-per-key de-duplication is the caller's business). */
void ge_warn(const char *fmt, ...) GE_PRINTF(1, 2);

#define GE_CHECK(expr)             \
  do {                             \
    ge_status ge__st = (expr);     \
    if (ge__st != GE_OK) return ge__st; \
  } while (0)

#endif
