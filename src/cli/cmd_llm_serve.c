/* cmd_llm_serve.c: `specgen llm serve`, the built-in test LLM server.
 *
 * Parses flags, starts sg_llm_server, prints where it listens (the first
 * stdout line, flushed, so a script can wait for it), serves until SIGINT or
 * SIGTERM, then prints the counters.
 */
#include "cli/cli_flags.h"
#include "cli/commands.h"
#include "testserver/sg_llm_server.h"

#include <stdbool.h>
#include <stdint.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen llm serve [options]\n"
          "\n"
          "Serves an OpenAI-compatible test model that reasons about kernels and\n"
          "answers with the example candidates of the built-in tasks\n"
          "(docs/test-server.md).\n"
          "\n"
          "  --host ADDR              address to bind (default 127.0.0.1)\n"
          "  --port N                 port (default 0: any free port)\n"
          "  --seed N                 the model's seed (default 1)\n"
          "  --tokens-per-s R         decode rate, tokens/s (default 100; 0: no pacing)\n"
          "  --prefill-tokens-per-s R uncached prompt tokens/s before the first token\n"
          "                           (default 20000; 0: none)\n"
          "  --concurrency C          streams at the full rates; with n > C streams\n"
          "                           live each goes at rate x C / n (default 0: none)\n"
          "  --reasoning-field F      reasoning or reasoning_content (default)\n"
          "  --reasoning-tokens MIN:MAX  length range of a reasoning trace\n"
          "                           (default 600:1800)\n"
          "  --tasks DIR              tasks to play (default: the built-in tasks)\n"
          "  --model NAME             the model's name in /v1/models (default specgen-test)\n"
          "  --fault NAME[:ARG[:ARG]] inject a fault into every request: disconnect:N,\n"
          "                           status429:S[:N], status500[:N], stall:S[:N],\n"
          "                           malformed[:N], slow_first_byte:S, error_in_stream[:N]\n"
          "  --replay DIR             answer every request from the run recorded in DIR\n"
          "                           (its llm.jsonl.gz), never from the model\n"
          "  --replay-speed F         the recorded pace times F (default 1; 0: no pacing)\n"
          "  --replay-hold S          a generation cut while recorded waits S seconds\n"
          "                           for a cancel before its error (default 5)\n"
          "  --trace FILE             reasoning of main generations from the \"reasoning\"\n"
          "                           fields of a JSON-lines file (.gz or plain), in turn,\n"
          "                           at --tokens-per-s\n"
          "  --json                   print the address and the final counters as JSON\n"
          "  -h, --help               this help\n");
}

/* --reasoning-tokens MIN:MAX into o; -1 with the message printed. */
static int parse_reasoning_tokens(const char *arg, sg_llm_server_opts *o) {
  int lo, hi, n = 0;
  if (sscanf(arg, "%d:%d%n", &lo, &hi, &n) != 2 || arg[n] || lo < 16 || hi < lo ||
      hi > 1000000) {
    fprintf(stderr,
            "specgen llm serve: --reasoning-tokens \"%s\": use MIN:MAX with "
            "16 <= MIN <= MAX <= 1000000\n",
            arg);
    return -1;
  }
  o->reasoning_tokens_min = lo;
  o->reasoning_tokens_max = hi;
  return 0;
}

enum {
  OPT_HOST = 256, OPT_PORT, OPT_SEED, OPT_RATE, OPT_PREFILL, OPT_CONC, OPT_FIELD, OPT_RLEN,
  OPT_TASKS, OPT_MODEL, OPT_FAULT, OPT_REPLAY, OPT_RSPEED, OPT_RHOLD, OPT_TRACE, OPT_JSON, OPT_HELP
};

/* One flag with a value (ch its getopt_long code) into o; -1 with the
 * message printed. */
static int take_value(int ch, const char *arg, sg_llm_server_opts *o) {
  const char *cmd = "llm serve";
  unsigned long long u;
  sg_err err;
  switch (ch) {
  case OPT_PORT:
    if (sg_cli_flag_uint(cmd, "--port", arg, 65535, &u) < 0)
      return -1;
    o->port = (int)u;
    return 0;
  case OPT_SEED:
    if (sg_cli_flag_uint(cmd, "--seed", arg, UINT64_MAX, &u) < 0)
      return -1;
    o->seed = u;
    return 0;
  case OPT_RATE: return sg_cli_flag_min(cmd, "--tokens-per-s", arg, 0, &o->tokens_per_s);
  case OPT_PREFILL:
    return sg_cli_flag_min(cmd, "--prefill-tokens-per-s", arg, 0, &o->prefill_tokens_per_s);
  case OPT_CONC:
    if (sg_cli_flag_uint(cmd, "--concurrency", arg, 100000, &u) < 0)
      return -1;
    o->concurrency = (int)u;
    return 0;
  case OPT_RSPEED: return sg_cli_flag_min(cmd, "--replay-speed", arg, 0, &o->replay_speed);
  case OPT_RHOLD: return sg_cli_flag_min(cmd, "--replay-hold", arg, 0, &o->replay_hold_s);
  case OPT_FIELD:
    if (strcmp(arg, "reasoning") && strcmp(arg, "reasoning_content")) {
      fprintf(stderr,
              "specgen llm serve: --reasoning-field \"%s\": use reasoning or "
              "reasoning_content\n",
              arg);
      return -1;
    }
    o->reasoning_field = arg;
    return 0;
  case OPT_RLEN: return parse_reasoning_tokens(arg, o);
  case OPT_FAULT:
    sg_err_clear(&err);
    if (sg_llm_fault_parse(arg, &o->fault, &err) < 0) {
      fprintf(stderr, "specgen llm serve: --fault: %s\n", err.msg);
      return -1;
    }
    return 0;
  case OPT_HOST: o->host = arg; return 0;
  case OPT_TASKS: o->tasks_root = arg; return 0;
  case OPT_MODEL: o->model_name = arg; return 0;
  case OPT_REPLAY: o->replay = arg; return 0;
  case OPT_TRACE: o->trace = arg; return 0;
  }
  return -1;
}

/* Parses the flags into o and *json; returns -1 to go on, else the exit
 * code. */
static int parse_args(int argc, char **argv, sg_llm_server_opts *o, bool *json) {
  static const struct option longopts[] = {
      {"host", required_argument, NULL, OPT_HOST},
      {"port", required_argument, NULL, OPT_PORT},
      {"seed", required_argument, NULL, OPT_SEED},
      {"tokens-per-s", required_argument, NULL, OPT_RATE},
      {"prefill-tokens-per-s", required_argument, NULL, OPT_PREFILL},
      {"concurrency", required_argument, NULL, OPT_CONC},
      {"reasoning-field", required_argument, NULL, OPT_FIELD},
      {"reasoning-tokens", required_argument, NULL, OPT_RLEN},
      {"tasks", required_argument, NULL, OPT_TASKS},
      {"model", required_argument, NULL, OPT_MODEL},
      {"fault", required_argument, NULL, OPT_FAULT},
      {"replay", required_argument, NULL, OPT_REPLAY},
      {"replay-speed", required_argument, NULL, OPT_RSPEED},
      {"replay-hold", required_argument, NULL, OPT_RHOLD},
      {"trace", required_argument, NULL, OPT_TRACE},
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, OPT_HELP},
      {NULL, 0, NULL, 0},
  };
  sg_llm_server_opts_init(o);
  o->tokens_per_s = 100;
  o->prefill_tokens_per_s = 20000;
  o->replay_speed = 1;
  o->replay_hold_s = 5;
  *json = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    if (c == OPT_JSON) {
      *json = true;
    } else if (c == 'h' || c == OPT_HELP) {
      usage(stdout);
      return SG_EXIT_OK;
    } else if (c == ':' || c == '?') {
      return sg_cli_flag_refused("llm serve", c, argv);
    } else if (take_value(c, optarg, o) < 0) {
      return SG_EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "specgen llm serve: unexpected argument '%s'\n", argv[optind]);
    return SG_EXIT_USAGE;
  }
  return -1;
}

/* Where the server listens: stdout's first line, flushed, for a script to
 * wait on; a human line on stderr. */
static void print_listening(const sg_llm_server_opts *o, const sg_llm_server *s, bool json) {
  const char *host = o->host ? o->host : "127.0.0.1";
  bool v6 = strchr(host, ':') != NULL;
  if (json)
    printf("{\"listening\": \"http://%s%s%s:%d\", \"tasks\": %d}\n", v6 ? "[" : "", host,
           v6 ? "]" : "", sg_llm_server_port(s), sg_llm_server_ntasks(s));
  else
    printf("listening on http://%s%s%s:%d\n", v6 ? "[" : "", host, v6 ? "]" : "",
           sg_llm_server_port(s));
  fflush(stdout);
  if (!json && o->replay) {
    fprintf(stderr, "specgen llm serve: replaying %s at %g x its recorded pace; Ctrl-C stops\n",
            o->replay, o->replay_speed);
  } else if (!json) {
    fprintf(stderr, "specgen llm serve: %d tasks, seed %llu, %g tokens/s; Ctrl-C stops\n",
            sg_llm_server_ntasks(s), (unsigned long long)o->seed, o->tokens_per_s);
  }
}

/* The counters at the end; sig is the signal that stopped the server. */
static void print_stats(const sg_llm_server_stats *st, int sig, bool json) {
  if (json)
    printf("{\"stopped_by\": \"%s\", \"requests_total\": %llu, \"generations_started\": %llu, "
           "\"generations_completed\": %llu, \"generations_cancelled\": %llu, "
           "\"generations_aborted\": %llu, \"abort_requests\": %llu, \"faults_injected\": %llu, "
           "\"tokens_generated\": %llu, \"prompt_tokens\": %llu, \"cached_tokens\": %llu}\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)st->requests_total,
           (unsigned long long)st->generations_started,
           (unsigned long long)st->generations_completed,
           (unsigned long long)st->generations_cancelled,
           (unsigned long long)st->generations_aborted, (unsigned long long)st->abort_requests,
           (unsigned long long)st->faults_injected, (unsigned long long)st->tokens_generated,
           (unsigned long long)st->prompt_tokens, (unsigned long long)st->cached_tokens);
  else
    printf("stopped: %llu requests, %llu generations (%llu completed, %llu cancelled, "
           "%llu aborted), %llu tokens generated\n",
           (unsigned long long)st->requests_total, (unsigned long long)st->generations_started,
           (unsigned long long)st->generations_completed,
           (unsigned long long)st->generations_cancelled,
           (unsigned long long)st->generations_aborted,
           (unsigned long long)st->tokens_generated);
  fflush(stdout);
}

int sg_cmd_llm_serve(int argc, char **argv) {
  sg_llm_server_opts o;
  bool json;
  int code = parse_args(argc, argv, &o, &json);
  if (code >= 0)
    return code;

  /* Block the signals before the server's threads start, so only this thread
   * takes them (sigwait below). */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  sg_err err;
  sg_err_clear(&err);
  sg_llm_server *s = NULL;
  int rc = sg_llm_server_start(&o, &s, &err);
  if (rc < 0) {
    fprintf(stderr, "specgen llm serve: %s\n", err.msg);
    return rc == SG_EIO ? SG_EXIT_FAILED : SG_EXIT_USAGE;
  }
  print_listening(&o, s, json);

  int sig = 0;
  sigwait(&set, &sig);

  sg_llm_server_stats st;
  sg_llm_server_stats_get(s, &st);
  sg_llm_server_stop(s);
  print_stats(&st, sig, json);
  return SG_EXIT_OK;
}
