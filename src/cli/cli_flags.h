/* cli_flags.h: how every subcommand reads its flags (docs/style.md rule 10).
 *
 * A subcommand parses with getopt_long (opterr 0) and hands every word the
 * loop refuses to sg_cli_flag_refused; numbers go through the sg_cli_parse_*
 * functions, which say only whether the text is a number of that kind in
 * range (no output), so each command keeps its own words for the error;
 * sg_cli_flag_min and sg_cli_flag_uint parse and report in the one form the
 * `llm` commands use. The two functions that print live in cli_flags.c with
 * the usage errors of cli_usage.c.
 */
#ifndef SG_CLI_FLAGS_H
#define SG_CLI_FLAGS_H

#include "config/sg_knobs.h"

#include <stdbool.h>

/* The end of a getopt_long switch: ch is what it returned for a word it did
 * not take: ':' (a value missing, optstring ":...") says "FLAG needs a
 * value", anything else that the word is unknown or lacks its value. Prints
 * the usage error of `specgen CMD` and returns SG_EXIT_USAGE. */
int sg_cli_flag_refused(const char *cmd, int ch, char **argv);

/* The message of sg_cli_flag_refused, for a command that reports it its own
 * way; the caller frees it. */
char *sg_cli_flag_refused_msg(int ch, char **argv);

/* s, all of it, as a decimal integer in [lo, hi]. */
bool sg_cli_parse_ll(const char *s, long long lo, long long hi, long long *out);

/* s, all of it, as a decimal integer in [0, hi] with no sign. */
bool sg_cli_parse_ull(const char *s, unsigned long long hi, unsigned long long *out);

/* s, all of it, as a finite-or-infinite number in [lo, hi]; text that
 * strtod takes only by rounding (out of range, ERANGE) and NaN are not. */
bool sg_cli_parse_double(const char *s, double lo, double hi, double *out);

/* FLAG's value s as a number >= lo into *out: 0; else prints
 * "specgen CMD: FLAG "S": not a number >= LO" and returns -1. */
int sg_cli_flag_min(const char *cmd, const char *flag, const char *s, double lo, double *out);

/* FLAG's value s as an integer in 0..hi into *out: 0; else prints
 * "specgen CMD: FLAG "S": not an integer in 0..HI" and returns -1. */
int sg_cli_flag_uint(const char *cmd, const char *flag, const char *s, unsigned long long hi,
                     unsigned long long *out);

/* The flag --NAME of a knob (config/sg_knobs.h) that a command other than
 * `specgen run` takes too (`specgen eval --eval-timeout`): its value s
 * read by the knob's row, parser and range, into k. 0; else prints
 * "specgen CMD: --NAME: expected ..., got "S"" and returns SG_EXIT_USAGE. */
int sg_cli_flag_knob(const char *cmd, const char *name, const char *s, sg_knobs *k);

#endif
