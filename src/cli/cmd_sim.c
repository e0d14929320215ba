/* cmd_sim.c: placeholder until the module that serves it lands. */
#include "cli/commands.h"

#include <stdio.h>

int sg_cmd_sim(int argc, char **argv) {
  (void)argc;
  fprintf(stderr, "specgen %s: not built yet\n", argv[0]);
  return SG_EXIT_USAGE;
}
