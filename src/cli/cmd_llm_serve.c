/* cmd_llm_serve.c: `specgen llm serve`, the built-in test LLM server.
 *
 * Parses flags, starts sg_llm_server, prints where it listens (the first
 * stdout line, flushed, so a script can wait for it), serves until SIGINT or
 * SIGTERM, then prints the counters.
 */
#include "cli/commands.h"
#include "testserver/sg_llm_server.h"

#include <errno.h>
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

static int parse_double(const char *flag, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= 0)) {
    fprintf(stderr, "specgen llm serve: %s \"%s\": not a number >= 0\n", flag, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_ull(const char *flag, const char *s, unsigned long long max,
                     unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v > max) {
    fprintf(stderr, "specgen llm serve: %s \"%s\": not an integer in 0..%llu\n", flag, s, max);
    return -1;
  }
  *out = v;
  return 0;
}

int sg_cmd_llm_serve(int argc, char **argv) {
  enum {
    OPT_HOST = 256, OPT_PORT, OPT_SEED, OPT_RATE, OPT_PREFILL, OPT_FIELD, OPT_RLEN,
    OPT_TASKS, OPT_MODEL, OPT_FAULT, OPT_REPLAY, OPT_RSPEED, OPT_RHOLD, OPT_TRACE, OPT_JSON, OPT_HELP
  };
  static const struct option longopts[] = {
      {"host", required_argument, NULL, OPT_HOST},
      {"port", required_argument, NULL, OPT_PORT},
      {"seed", required_argument, NULL, OPT_SEED},
      {"tokens-per-s", required_argument, NULL, OPT_RATE},
      {"prefill-tokens-per-s", required_argument, NULL, OPT_PREFILL},
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
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tokens_per_s = 100;
  o.prefill_tokens_per_s = 20000;
  o.replay_speed = 1;
  o.replay_hold_s = 5;
  bool json = false;
  unsigned long long u;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_HOST:
      o.host = optarg;
      break;
    case OPT_PORT:
      if (parse_ull("--port", optarg, 65535, &u) < 0)
        return SG_EXIT_USAGE;
      o.port = (int)u;
      break;
    case OPT_SEED:
      if (parse_ull("--seed", optarg, UINT64_MAX, &u) < 0)
        return SG_EXIT_USAGE;
      o.seed = u;
      break;
    case OPT_RATE:
      if (parse_double("--tokens-per-s", optarg, &o.tokens_per_s) < 0)
        return SG_EXIT_USAGE;
      break;
    case OPT_PREFILL:
      if (parse_double("--prefill-tokens-per-s", optarg, &o.prefill_tokens_per_s) < 0)
        return SG_EXIT_USAGE;
      break;
    case OPT_FIELD:
      if (strcmp(optarg, "reasoning") && strcmp(optarg, "reasoning_content")) {
        fprintf(stderr,
                "specgen llm serve: --reasoning-field \"%s\": use reasoning or "
                "reasoning_content\n",
                optarg);
        return SG_EXIT_USAGE;
      }
      o.reasoning_field = optarg;
      break;
    case OPT_RLEN: {
      int lo, hi, n = 0;
      if (sscanf(optarg, "%d:%d%n", &lo, &hi, &n) != 2 || optarg[n] || lo < 16 || hi < lo ||
          hi > 1000000) {
        fprintf(stderr,
                "specgen llm serve: --reasoning-tokens \"%s\": use MIN:MAX with "
                "16 <= MIN <= MAX <= 1000000\n",
                optarg);
        return SG_EXIT_USAGE;
      }
      o.reasoning_tokens_min = lo;
      o.reasoning_tokens_max = hi;
      break;
    }
    case OPT_TASKS:
      o.tasks_root = optarg;
      break;
    case OPT_MODEL:
      o.model_name = optarg;
      break;
    case OPT_FAULT: {
      sg_err err;
      sg_err_clear(&err);
      if (sg_llm_fault_parse(optarg, &o.fault, &err) < 0) {
        fprintf(stderr, "specgen llm serve: --fault: %s\n", err.msg);
        return SG_EXIT_USAGE;
      }
      break;
    }
    case OPT_REPLAY:
      o.replay = optarg;
      break;
    case OPT_RSPEED:
      if (parse_double("--replay-speed", optarg, &o.replay_speed) < 0)
        return SG_EXIT_USAGE;
      break;
    case OPT_RHOLD:
      if (parse_double("--replay-hold", optarg, &o.replay_hold_s) < 0)
        return SG_EXIT_USAGE;
      break;
    case OPT_TRACE:
      o.trace = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
    case OPT_HELP:
      usage(stdout);
      return SG_EXIT_OK;
    case ':':
      return sg_cli_usage_error("llm serve", "%s needs a value", argv[optind - 1]);
    default:
      return sg_cli_bad_option("llm serve", argv);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "specgen llm serve: unexpected argument '%s'\n", argv[optind]);
    return SG_EXIT_USAGE;
  }

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
  const char *host = o.host ? o.host : "127.0.0.1";
  bool v6 = strchr(host, ':') != NULL;
  if (json)
    printf("{\"listening\": \"http://%s%s%s:%d\", \"tasks\": %d}\n", v6 ? "[" : "", host,
           v6 ? "]" : "", sg_llm_server_port(s), sg_llm_server_ntasks(s));
  else
    printf("listening on http://%s%s%s:%d\n", v6 ? "[" : "", host, v6 ? "]" : "",
           sg_llm_server_port(s));
  fflush(stdout);
  if (!json && o.replay) {
    fprintf(stderr, "specgen llm serve: replaying %s at %g x its recorded pace; Ctrl-C stops\n",
            o.replay, o.replay_speed);
  } else if (!json) {
    fprintf(stderr, "specgen llm serve: %d tasks, seed %llu, %g tokens/s; Ctrl-C stops\n",
            sg_llm_server_ntasks(s), (unsigned long long)o.seed, o.tokens_per_s);
  }

  int sig = 0;
  sigwait(&set, &sig);

  sg_llm_server_stats st;
  sg_llm_server_stats_get(s, &st);
  sg_llm_server_stop(s);
  if (json)
    printf("{\"stopped_by\": \"%s\", \"requests_total\": %llu, \"generations_started\": %llu, "
           "\"generations_completed\": %llu, \"generations_cancelled\": %llu, "
           "\"generations_aborted\": %llu, \"abort_requests\": %llu, \"faults_injected\": %llu, "
           "\"tokens_generated\": %llu, \"prompt_tokens\": %llu, \"cached_tokens\": %llu}\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)st.requests_total,
           (unsigned long long)st.generations_started,
           (unsigned long long)st.generations_completed,
           (unsigned long long)st.generations_cancelled,
           (unsigned long long)st.generations_aborted, (unsigned long long)st.abort_requests,
           (unsigned long long)st.faults_injected, (unsigned long long)st.tokens_generated,
           (unsigned long long)st.prompt_tokens, (unsigned long long)st.cached_tokens);
  else
    printf("stopped: %llu requests, %llu generations (%llu completed, %llu cancelled, "
           "%llu aborted), %llu tokens generated\n",
           (unsigned long long)st.requests_total, (unsigned long long)st.generations_started,
           (unsigned long long)st.generations_completed,
           (unsigned long long)st.generations_cancelled,
           (unsigned long long)st.generations_aborted, (unsigned long long)st.tokens_generated);
  fflush(stdout);
  return SG_EXIT_OK;
}
