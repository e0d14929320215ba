/* sg_error.c: error names and the error buffer. */
#include "common/sg_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *sg_strerror(int code) {
  switch (code) {
  case 0:
    return "success";
#define SG_ERRNO_CASE(name, value, text) \
  case value:                            \
    return text;
    SG_ERRNO_MAP(SG_ERRNO_CASE)
#undef SG_ERRNO_CASE
  default:
    return "unknown error";
  }
}

void sg_err_clear(sg_err *err) {
  if (err == NULL)
    return;
  err->code = 0;
  err->msg[0] = '\0';
}

int sg_err_set(sg_err *err, int code, const char *fmt, ...) {
  if (err == NULL)
    return code;
  err->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return code;
}

int sg_err_prefix(sg_err *err, const char *fmt, ...) {
  if (err == NULL)
    return 0;
  char prefix[SG_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  char old[SG_ERR_MSG_MAX];
  memcpy(old, err->msg, sizeof old);
  /* Cut the joined text at the buffer's end; a long message loses its tail. */
  size_t n = strnlen(prefix, sizeof prefix - 1);
  if (n > sizeof err->msg - 3)
    n = sizeof err->msg - 3;
  memcpy(err->msg, prefix, n);
  memcpy(err->msg + n, ": ", 2);
  size_t room = sizeof err->msg - n - 2;
  size_t m = strnlen(old, room - 1);
  memcpy(err->msg + n + 2, old, m);
  err->msg[n + 2 + m] = '\0';
  return err->code;
}
