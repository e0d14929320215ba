/* main.c: the specgen program: picks a subcommand and hands it the rest. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"run", sg_cmd_run, "optimize tasks with an LLM: generate, validate, profile, speculate"},
    {"show", sg_cmd_show, "print the summary of a run directory, finished or not"},
    {"tasks", sg_cmd_tasks, "list the built-in tasks"},
    {"eval", sg_cmd_eval, "validate and time one candidate kernel on a task"},
    {"bench", sg_cmd_bench, "evaluate whole sets of tasks (KernelBench levels, the paper's T1-T20)"},
    {"triggers", sg_cmd_triggers, "show where speculation would fork in a reasoning trace"},
    {"report", sg_cmd_report, "write the HTML report of a run directory or a sim campaign"},
    {"sim", sg_cmd_sim, "simulate whole campaigns in virtual time"},
    {"replay", sg_cmd_replay, "replay a recorded run in virtual time, under its options or others"},
    {"llm", sg_cmd_llm, "talk to an LLM endpoint (chat, check) or serve the test model (serve)"},
    {"worker", sg_cmd_worker, "serve evaluations for one device over JSON lines (docs/protocol.md)"},
    {"kvstore", sg_cmd_kvstore, "serve a KV cache store for vLLM over LMCache's lm:// protocol"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: specgen <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n`specgen <command> --help` describes each command.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return SG_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return SG_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("specgen %s\n", SG_VERSION);
    return SG_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "specgen: unknown command '%s'\nsee `specgen --help`\n", argv[1]);
  return SG_EXIT_USAGE;
}
