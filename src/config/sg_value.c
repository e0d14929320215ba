/* sg_value.c: a setting's value from text, range-checked (sg_value.h). */
#include "config/sg_value.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define TWO64 18446744073709551616.0 /* 2^64 */

static bool parse_i64(const char *s, long long *v) {
  if (s[0] == '\0' || isspace((unsigned char)s[0]))
    return false;
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return errno == 0 && end != s && *end == '\0';
}

static bool parse_u64(const char *s, uint64_t *v) {
  if (s[0] == '\0' || isspace((unsigned char)s[0]) || s[0] == '-')
    return false;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  *v = x;
  return errno == 0 && end != s && *end == '\0';
}

static bool parse_double(const char *s, double *v) {
  if (s[0] == '\0' || isspace((unsigned char)s[0]))
    return false;
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return errno == 0 && end != s && *end == '\0' && isfinite(*v);
}

static const char *const bool_words[][2] = {
    {"on", "off"}, {"true", "false"}, {"yes", "no"}, {"1", "0"}};

/* 1 on, 0 off, -1 not a bool word. */
static int parse_bool(const char *s) {
  for (size_t i = 0; i < sizeof bool_words / sizeof bool_words[0]; i++) {
    if (strcasecmp(s, bool_words[i][0]) == 0)
      return 1;
    if (strcasecmp(s, bool_words[i][1]) == 0)
      return 0;
  }
  return -1;
}

/* The integer bounds of an INT or U64 range, with the open ends applied. */
static void int_bounds(const sg_value_range *r, long long *lo, long long *hi) {
  *lo = (long long)r->min + ((r->flags & SG_VALUEF_MIN_OPEN) != 0);
  *hi = (long long)r->max - ((r->flags & SG_VALUEF_MAX_OPEN) != 0);
}

static void u64_bounds(const sg_value_range *r, uint64_t *lo, uint64_t *hi) {
  *lo = (uint64_t)r->min + ((r->flags & SG_VALUEF_MIN_OPEN) != 0);
  if (r->max >= TWO64)
    *hi = UINT64_MAX; /* 2^64 itself is not a u64: the open end is implied */
  else
    *hi = (uint64_t)r->max - ((r->flags & SG_VALUEF_MAX_OPEN) != 0);
}

bool sg_value_parse(const sg_value_range *r, const char *text, void *out) {
  switch (r->type) {
  case SG_VALUE_INT: {
    long long x, lo, hi;
    int_bounds(r, &lo, &hi);
    if (!parse_i64(text, &x) || x < lo || x > hi)
      return false;
    *(int *)out = (int)x;
    return true;
  }
  case SG_VALUE_U64: {
    uint64_t x, lo, hi;
    u64_bounds(r, &lo, &hi);
    if (!parse_u64(text, &x) || x < lo || x > hi)
      return false;
    *(uint64_t *)out = x;
    return true;
  }
  case SG_VALUE_DOUBLE: {
    double x;
    if (!parse_double(text, &x))
      return false;
    bool lo_ok = r->flags & SG_VALUEF_MIN_OPEN ? x > r->min : x >= r->min;
    bool hi_ok = r->flags & SG_VALUEF_MAX_OPEN ? x < r->max : x <= r->max;
    if (!(lo_ok && hi_ok) && !((r->flags & SG_VALUEF_MINUS_ONE) && x == -1))
      return false;
    *(double *)out = x;
    return true;
  }
  case SG_VALUE_BOOL: {
    int b = parse_bool(text);
    if (b < 0)
      return false;
    *(bool *)out = b == 1;
    return true;
  }
  }
  return false;
}

void sg_value_describe(const sg_value_range *r, char *buf, size_t n) {
  switch (r->type) {
  case SG_VALUE_INT: {
    long long lo, hi;
    int_bounds(r, &lo, &hi);
    snprintf(buf, n, "an integer from %lld to %lld", lo, hi);
    return;
  }
  case SG_VALUE_U64: {
    uint64_t lo, hi;
    u64_bounds(r, &lo, &hi);
    snprintf(buf, n, "an integer from %llu to %llu", (unsigned long long)lo,
             (unsigned long long)hi);
    return;
  }
  case SG_VALUE_DOUBLE:
    snprintf(buf, n, "%sa number in %c%g, %g%c",
             r->flags & SG_VALUEF_MINUS_ONE ? "-1 or " : "",
             r->flags & SG_VALUEF_MIN_OPEN ? '(' : '[', r->min, r->max,
             r->flags & SG_VALUEF_MAX_OPEN ? ')' : ']');
    return;
  case SG_VALUE_BOOL:
    snprintf(buf, n, "on, off, true, false, yes, no, 1 or 0");
    return;
  }
}
