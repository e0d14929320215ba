/* sg_value.h: the one parser of a setting's value from text.
 *
 * A number or an on/off switch with its range, as `specgen run`'s keys
 * (flags, YAML, the JSON record) and the knobs `specgen sim` takes by
 * `--set` are written: both turn text into a value here, so a knob is read
 * and range-checked the same way whichever command sets it, and the words
 * that describe what is expected ("an integer from 1 to 100000") are the
 * same too. Pure: no I/O.
 */
#ifndef SG_VALUE_H
#define SG_VALUE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sg_value_type {
  SG_VALUE_BOOL,   /* bool: on|off|true|false|yes|no|1|0 */
  SG_VALUE_INT,    /* int within [min, max] */
  SG_VALUE_DOUBLE, /* double within [min, max], finite */
  SG_VALUE_U64,    /* uint64_t within [min, max] (max 2^64: to the top) */
} sg_value_type;

/* Range flags. */
#define SG_VALUEF_MIN_OPEN 1u  /* min itself is out of range: (min, ... */
#define SG_VALUEF_MAX_OPEN 2u  /* max itself is out of range: ..., max) */
#define SG_VALUEF_MINUS_ONE 4u /* a number: -1 is accepted as well */

typedef struct sg_value_range {
  sg_value_type type;
  double min, max; /* numbers */
  unsigned flags;  /* SG_VALUEF_* */
} sg_value_range;

/* Parses text (decimal, no blanks) into *out, a bool, int, double or
 * uint64_t as r->type says. False, *out untouched, when text is not such a
 * value or is out of the range. */
bool sg_value_parse(const sg_value_range *r, const char *text, void *out);

/* What r accepts, as a message says it: "an integer from 1 to 100000", "a
 * number in (0, 86400]", "on, off, true, false, yes, no, 1 or 0". */
void sg_value_describe(const sg_value_range *r, char *buf, size_t n);

#endif
