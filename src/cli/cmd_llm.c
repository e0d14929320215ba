/* cmd_llm.c: `specgen llm chat|check|serve`, and what its subcommands share. */
#include "cli/commands.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen llm chat  --llm URL --model M (--prompt TEXT | --prompt-file F) [options]\n"
          "       specgen llm check --llm URL --model M [options]\n"
          "       specgen llm serve [options]   (the built-in test model)\n"
          "\n"
          "`specgen llm SUBCOMMAND --help` describes each.\n"
          "\n"
          "  -h, --help   this help\n");
}

int sg_cmd_llm(int argc, char **argv) {
  if (argc < 2)
    return sg_cli_usage_error("llm", "which one: chat, check or serve?");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return SG_EXIT_OK;
  }
  if (strcmp(argv[1], "chat") == 0)
    return sg_cmd_llm_chat(argc - 1, argv + 1);
  if (strcmp(argv[1], "check") == 0)
    return sg_cmd_llm_check(argc - 1, argv + 1);
  if (strcmp(argv[1], "serve") == 0)
    return sg_cmd_llm_serve(argc - 1, argv + 1);
  return sg_cli_usage_error("llm", "unknown subcommand '%s' (chat, check or serve)", argv[1]);
}

void sg_cli_llm_put_json(json_t *j) {
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));
  puts(s ? s : "{}");
  free(s);
  json_decref(j);
}
