/* sg_error.h: error codes and the error buffer every fallible call takes.
 *
 * Functions return 0 or a negative SG_E* code (libuv's convention); the detail
 * a person needs (the file, line, field, request or server message that was
 * wrong) goes into an sg_err the caller passes. sg_strerror() names a code.
 */
#ifndef SG_ERROR_H
#define SG_ERROR_H

#include <stddef.h>

#define SG_ERRNO_MAP(X)                                                   \
  X(EINVAL, -1, "invalid argument or input")                              \
  X(ENOENT, -2, "no such file, task or item")                             \
  X(EIO, -3, "input/output error")                                        \
  X(EPARSE, -4, "malformed input")                                        \
  X(ERANGE, -5, "value out of range")                                     \
  X(ETIMEDOUT, -6, "timed out")                                           \
  X(ECANCELED, -7, "canceled")                                            \
  X(EPROTO, -8, "protocol error")                                         \
  X(EHTTP, -9, "HTTP error from the server")                              \
  X(ECONN, -10, "connection failed")                                      \
  X(ECHILD, -11, "child process failed")                                  \
  X(EFULL, -12, "capacity exhausted")                                     \
  X(ESTATE, -13, "operation not allowed in this state")                   \
  X(EUNSUPPORTED, -14, "not supported here")                              \
  X(EAGAIN, -15, "try again")

enum {
#define SG_ERRNO_ENUM(name, value, text) SG_##name = (value),
  SG_ERRNO_MAP(SG_ERRNO_ENUM)
#undef SG_ERRNO_ENUM
};

/* A static, human-readable name for an SG_E* code (or "unknown error"). */
const char *sg_strerror(int code);

#define SG_ERR_MSG_MAX 1024

/* Detail of the last error; code is 0 while nothing failed. */
typedef struct sg_err {
  int code;
  char msg[SG_ERR_MSG_MAX];
} sg_err;

/* Clears err (err may be NULL). */
void sg_err_clear(sg_err *err);

/* Records code and a printf-style message in err (err may be NULL) and
 * returns code, so callers write `return sg_err_set(err, SG_EINVAL, ...)`. */
int sg_err_set(sg_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of the message already in err (a caller adding
 * context, e.g. the file name). Returns err->code. */
int sg_err_prefix(sg_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
