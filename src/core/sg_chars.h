/* sg_chars.h: the character classes the core's text scanners share
 * (extraction, the trigger scanner's code machine, candidate tidying).
 * ASCII only and locale-free, unlike <ctype.h>: the texts are a model's
 * output, and a scanner must classify a byte the same way everywhere. */
#ifndef SG_CHARS_H
#define SG_CHARS_H

#include <stdbool.h>

static inline bool sg_is_blank(char c) { return c == ' ' || c == '\t'; }

static inline bool sg_is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* A byte of a C identifier: letters, digits, underscore. */
static inline bool sg_is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_';
}

#endif
