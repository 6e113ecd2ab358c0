/* Thread-local error messages, status names, version, warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

#define GE_ERR_BUF 2048

static _Thread_local char g_err[GE_ERR_BUF];

ge_status ge_error(ge_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt ? fmt : "", ap);
  va_end(ap);
  return st;
}

ge_status ge_error_prefix(ge_status st, const char *fmt, ...) {
  char prefix[GE_ERR_BUF];
  char old[GE_ERR_BUF];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt ? fmt : "", ap);
  va_end(ap);
  memcpy(old, g_err, sizeof old);
  old[GE_ERR_BUF - 1] = '\0';
  size_t pl = strlen(prefix), ol = strlen(old);
  if (pl > GE_ERR_BUF - 1) pl = GE_ERR_BUF - 1;
  if (ol > GE_ERR_BUF - 1 - pl) ol = GE_ERR_BUF - 1 - pl;
  memcpy(g_err, prefix, pl);
  memcpy(g_err + pl, old, ol);
  g_err[pl + ol] = '\0';
  return st;
}

void ge_error_clear(void) { g_err[0] = '\0'; }

const char *ge_last_error(void) { return g_err; }

const char *ge_status_str(ge_status s) {
  switch (s) {
  case GE_OK: return "GE_OK";
  case GE_ERR_INVALID_ARGUMENT: return "GE_ERR_INVALID_ARGUMENT";
  case GE_ERR_NOT_FOUND: return "GE_ERR_NOT_FOUND";
  case GE_ERR_UNSUPPORTED: return "GE_ERR_UNSUPPORTED";
  case GE_ERR_PARSE: return "GE_ERR_PARSE";
  case GE_ERR_SHAPE: return "GE_ERR_SHAPE";
  case GE_ERR_OUT_OF_MEMORY: return "GE_ERR_OUT_OF_MEMORY";
  case GE_ERR_STATE: return "GE_ERR_STATE";
  case GE_ERR_IO: return "GE_ERR_IO";
  case GE_ERR_CALLBACK: return "GE_ERR_CALLBACK";
  case GE_ERR_INTERNAL: return "GE_ERR_INTERNAL";
  }
  return "GE_ERR_UNKNOWN_STATUS";
}

const char *ge_version(void) { return "0.1.0"; }

void ge_warn(const char *fmt, ...) {
  char msg[GE_ERR_BUF];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
  va_end(ap);
  fprintf(stderr, "ge: warning: %s\n", msg);
}
