/* cli_usage.c: how every subcommand reports bad usage: one line naming what
 * was wrong, then where the help is. The whole help after the message used
 * to bury it (eval, kvstore, report), and each command said it its own way. */
#include "cli/cli_flags.h"
#include "cli/commands.h"

#include <stdarg.h>
#include <stdio.h>

int sg_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "specgen %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nsee `specgen %s --help`\n", cmd);
  return SG_EXIT_USAGE;
}

int sg_cli_bad_option(const char *cmd, char **argv) {
  return sg_cli_flag_refused(cmd, '?', argv);
}
