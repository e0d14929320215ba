/* cli_flags.c: the flag parsing every subcommand shares (cli_flags.h): the
 * tail of the getopt_long switch and numbers with a range. Each command had
 * its own copy of both (strtod and strtoull wrappers in four files, the
 * getopt tail in every one). */
#include "cli/cli_flags.h"

#include "cli/commands.h"
#include "common/sg_alloc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

char *sg_cli_flag_refused_msg(int ch, char **argv) {
  /* getopt_long has stepped over the offending word */
  const char *word = optind > 0 ? argv[optind - 1] : "?";
  if (ch == ':')
    return sg_asprintf("%s needs a value", word);
  return sg_asprintf("unknown option '%s', or it lacks its value", word);
}

int sg_cli_flag_refused(const char *cmd, int ch, char **argv) {
  char *msg = sg_cli_flag_refused_msg(ch, argv);
  int rc = sg_cli_usage_error(cmd, "%s", msg);
  free(msg);
  return rc;
}

bool sg_cli_parse_ll(const char *s, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

bool sg_cli_parse_ull(const char *s, unsigned long long hi, unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  /* strtoull takes "-1" as its largest value */
  if (errno || end == s || *end || s[0] == '-' || v > hi)
    return false;
  *out = v;
  return true;
}

bool sg_cli_parse_double(const char *s, double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return false;
  *out = v;
  return true;
}

int sg_cli_flag_min(const char *cmd, const char *flag, const char *s, double lo, double *out) {
  if (sg_cli_parse_double(s, lo, INFINITY, out))
    return 0;
  fprintf(stderr, "specgen %s: %s \"%s\": not a number >= %g\n", cmd, flag, s, lo);
  return -1;
}

int sg_cli_flag_uint(const char *cmd, const char *flag, const char *s, unsigned long long hi,
                     unsigned long long *out) {
  if (sg_cli_parse_ull(s, hi, out))
    return 0;
  fprintf(stderr, "specgen %s: %s \"%s\": not an integer in 0..%llu\n", cmd, flag, s, hi);
  return -1;
}

int sg_cli_flag_knob(const char *cmd, const char *name, const char *s, sg_knobs *k) {
  sg_err err;
  sg_err_clear(&err);
  if (sg_knobs_set(k, sg_knobs_find(name), s, &err) < 0)
    return sg_cli_usage_error(cmd, "--%s: %s", name, err.msg);
  return 0;
}
