/* commands.h: the subcommands of the specgen program.
 *
 * Each takes the arguments after its name (argv[0] is the subcommand's name)
 * and returns the process exit code: 0 success, 1 a failed run or check,
 * 2 bad usage or input. Subcommands parse flags and call the library; nothing
 * else lives in src/cli.
 */
#ifndef SG_CLI_COMMANDS_H
#define SG_CLI_COMMANDS_H

enum { SG_EXIT_OK = 0, SG_EXIT_FAILED = 1, SG_EXIT_USAGE = 2 };

int sg_cmd_tasks(int argc, char **argv);
int sg_cmd_eval(int argc, char **argv);
int sg_cmd_bench(int argc, char **argv);
int sg_cmd_triggers(int argc, char **argv);
int sg_cmd_sim(int argc, char **argv);
int sg_cmd_replay(int argc, char **argv);
int sg_cmd_llm(int argc, char **argv);
/* `specgen llm chat|check` and `specgen llm serve`, dispatched by sg_cmd_llm. */
int sg_cmd_llm_chat(int argc, char **argv);
int sg_cmd_llm_check(int argc, char **argv);
int sg_cmd_llm_serve(int argc, char **argv);
int sg_cmd_worker(int argc, char **argv);
int sg_cmd_kvstore(int argc, char **argv);
int sg_cmd_run(int argc, char **argv);
int sg_cmd_show(int argc, char **argv);
int sg_cmd_report(int argc, char **argv);

#include <jansson.h>
#include <stdio.h>
/* A usage error of `specgen CMD`: "specgen CMD: MESSAGE" and "see `specgen
 * CMD --help`" on stderr, nothing more; returns SG_EXIT_USAGE. */
int sg_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The usage error for getopt_long's '?' (opterr set to 0): the word it
 * stepped over (argv[optind - 1]) is unknown or lacks its value;
 * sg_cli_flag_refused (cli_flags.h) with '?'. */
int sg_cli_bad_option(const char *cmd, char **argv);

/* The --json object of `llm chat` and `llm check` on stdout (indented,
 * ASCII, 6 digits); takes j's reference. */
void sg_cli_llm_put_json(json_t *j);

/* Prints a run's summary (summary.json's object) as a table. */
void sg_cli_print_summary(FILE *f, const json_t *summary);

#endif
