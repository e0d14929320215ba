/* cmd_llm_chat.c: `specgen llm chat`, one streamed generation.
 *
 * Parses flags, runs sg_llm_generate and prints reasoning (dimmed on a
 * terminal, each line prefixed with "| " otherwise) and content as they
 * arrive; with --json, one object at the end instead.
 */
#include "cli/cli_flags.h"
#include "cli/commands.h"
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "llm/sg_llm_generate.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROMPT_FILE_MAX (16u << 20)

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen llm chat --llm URL --model M (--prompt TEXT | --prompt-file F)\n"
          "                        [options]\n"
          "\n"
          "Streams one generation from an OpenAI-compatible endpoint, printing the\n"
          "reasoning (dimmed, or prefixed with '| ' when not a terminal) and then the\n"
          "answer as they arrive.\n"
          "\n"
          "  --llm URL            server base URL (http://host:port, or one ending in /v1)\n"
          "  --model M            model name\n"
          "  --prompt TEXT        the user message\n"
          "  --prompt-file F      read the user message from F\n"
          "  --system TEXT        a system message\n"
          "  --profile P          vllm, sglang, deepseek, openai, llamacpp, llamacpp-python\n"
          "                       or generic (default)\n"
          "  --no-think           turn thinking off for this request (per the profile)\n"
          "  --max-tokens N       completion token limit (default: the server's)\n"
          "  --temperature T      sampling temperature (default: the server's)\n"
          "  --timeout S          absolute deadline in seconds, retries included (default 1800)\n"
          "  --idle-timeout S     longest wait between events (default 120)\n"
          "  --retries N          retries on connection errors, 429 and 5xx (default 4)\n"
          "  --api-key-env NAME   environment variable holding the API key\n"
          "                       (default OPENAI_API_KEY; the key is never printed)\n"
          "  --json               print one JSON object at the end instead of streaming\n"
          "  -h, --help           this help\n"
          "\n"
          "Exit status: 0 finished, 1 the request failed, 2 bad usage.\n");
}

typedef struct printer {
  bool tty;
  bool in_reasoning;
  bool at_line_start;
  bool printed_any;
} printer;

static void print_reasoning(void *d, const char *t, size_t n) {
  printer *p = d;
  if (!p->in_reasoning) {
    p->in_reasoning = true;
    p->at_line_start = true;
    if (p->tty)
      fputs("\033[2m", stdout);
  }
  for (size_t i = 0; i < n; i++) {
    if (!p->tty && p->at_line_start)
      fputs("| ", stdout);
    fputc(t[i], stdout);
    p->at_line_start = t[i] == '\n';
  }
  p->printed_any = true;
  fflush(stdout);
}

static void end_reasoning(printer *p) {
  if (!p->in_reasoning)
    return;
  p->in_reasoning = false;
  if (p->tty)
    fputs("\033[0m", stdout);
  fputs(p->at_line_start ? "\n" : "\n\n", stdout);
}

static void print_content(void *d, const char *t, size_t n) {
  printer *p = d;
  end_reasoning(p);
  fwrite(t, 1, n, stdout);
  p->printed_any = true;
  fflush(stdout);
}

static json_t *usage_json(const sg_llm_generation *g) {
  json_t *u = json_object();
  json_object_set_new(u, "prompt_tokens", json_integer(g->usage.prompt_tokens));
  json_object_set_new(u, "completion_tokens", json_integer(g->usage.completion_tokens));
  json_object_set_new(u, "cached_tokens", json_integer(g->usage.cached_tokens));
  json_object_set_new(u, "reasoning_tokens", json_integer(g->usage.reasoning_tokens));
  json_object_set_new(u, "estimated", json_boolean(g->usage_estimated));
  return u;
}

typedef struct chat_args {
  const char *llm, *model, *prompt, *prompt_file, *system, *profile, *keyenv;
  bool no_think, json;
  double max_tokens, temperature, timeout, idle, retries;
  bool retries_set;
} chat_args;

enum {
  O_LLM = 256, O_MODEL, O_PROMPT, O_PROMPT_FILE, O_SYSTEM, O_PROFILE, O_NO_THINK,
  O_MAX_TOKENS, O_TEMP, O_TIMEOUT, O_IDLE, O_RETRIES, O_KEYENV, O_JSON, O_HELP
};

/* A flag with a number (ch its getopt_long code) into a; -1 when the
 * number is bad (a message printed, except for a number over the cap of
 * --max-tokens or --retries). */
static int take_number(int ch, const char *arg, chat_args *a) {
  const char *cmd = "llm chat";
  switch (ch) {
  case O_MAX_TOKENS:
    if (sg_cli_flag_min(cmd, "--max-tokens", arg, 1, &a->max_tokens) < 0 || a->max_tokens > 1e7)
      return -1;
    return 0;
  case O_TEMP: return sg_cli_flag_min(cmd, "--temperature", arg, 0, &a->temperature);
  case O_TIMEOUT: return sg_cli_flag_min(cmd, "--timeout", arg, 0.001, &a->timeout);
  case O_IDLE: return sg_cli_flag_min(cmd, "--idle-timeout", arg, 0.001, &a->idle);
  case O_RETRIES:
    if (sg_cli_flag_min(cmd, "--retries", arg, 0, &a->retries) < 0 || a->retries > 100)
      return -1;
    a->retries_set = true;
    return 0;
  }
  return -1;
}

/* Parses the flags into a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, chat_args *a) {
  static const struct option opts[] = {
      {"llm", required_argument, NULL, O_LLM},
      {"model", required_argument, NULL, O_MODEL},
      {"prompt", required_argument, NULL, O_PROMPT},
      {"prompt-file", required_argument, NULL, O_PROMPT_FILE},
      {"system", required_argument, NULL, O_SYSTEM},
      {"profile", required_argument, NULL, O_PROFILE},
      {"no-think", no_argument, NULL, O_NO_THINK},
      {"max-tokens", required_argument, NULL, O_MAX_TOKENS},
      {"temperature", required_argument, NULL, O_TEMP},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"idle-timeout", required_argument, NULL, O_IDLE},
      {"retries", required_argument, NULL, O_RETRIES},
      {"api-key-env", required_argument, NULL, O_KEYENV},
      {"json", no_argument, NULL, O_JSON},
      {"help", no_argument, NULL, O_HELP},
      {NULL, 0, NULL, 0},
  };
  memset(a, 0, sizeof *a);
  a->temperature = -1;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (ch) {
    case O_LLM: a->llm = optarg; break;
    case O_MODEL: a->model = optarg; break;
    case O_PROMPT: a->prompt = optarg; break;
    case O_PROMPT_FILE: a->prompt_file = optarg; break;
    case O_SYSTEM: a->system = optarg; break;
    case O_PROFILE: a->profile = optarg; break;
    case O_NO_THINK: a->no_think = true; break;
    case O_KEYENV: a->keyenv = optarg; break;
    case O_JSON: a->json = true; break;
    case O_MAX_TOKENS:
    case O_TEMP:
    case O_TIMEOUT:
    case O_IDLE:
    case O_RETRIES:
      if (take_number(ch, optarg, a) < 0)
        return SG_EXIT_USAGE;
      break;
    case 'h':
    case O_HELP:
      usage(stdout);
      return SG_EXIT_OK;
    default:
      return sg_cli_flag_refused("llm chat", ch, argv);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "specgen llm chat: unexpected argument '%s'\n", argv[optind]);
    return SG_EXIT_USAGE;
  }
  if (a->llm == NULL || a->model == NULL) {
    fprintf(stderr, "specgen llm chat: %s is required\n", a->llm ? "--model" : "--llm");
    return SG_EXIT_USAGE;
  }
  if ((a->prompt == NULL) == (a->prompt_file == NULL)) {
    fprintf(stderr, "specgen llm chat: give exactly one of --prompt and --prompt-file\n");
    return SG_EXIT_USAGE;
  }
  return -1;
}

/* The generation as one JSON object on stdout (--json). */
static void report_json(int rc, const sg_llm_generation *g) {
  json_t *o = json_object();
  json_object_set_new(o, "ok", json_boolean(rc == 0));
  if (rc != 0)
    json_object_set_new(o, "error", json_string(g->message));
  json_object_set_new(o, "reasoning", json_string(g->reasoning));
  json_object_set_new(o, "content", json_string(g->content));
  json_object_set_new(o, "reasoning_field", json_string(g->reasoning_field));
  json_object_set_new(o, "finish_reason", json_string(g->finish_reason));
  json_object_set_new(o, "usage", usage_json(g));
  json_object_set_new(o, "ttft_s", g->ttft_s >= 0 ? json_real(g->ttft_s) : json_null());
  json_object_set_new(o, "elapsed_s", json_real(g->elapsed_s));
  json_object_set_new(o, "tokens_per_s", json_real(g->tokens_per_s));
  json_object_set_new(o, "attempts", json_integer(g->attempts));
  json_object_set_new(o, "http_status", json_integer(g->http_status));
  sg_cli_llm_put_json(o);
}

/* The end of the streamed text, and its counters on stderr. */
static void report_text(int rc, const sg_llm_generation *g, printer *pr) {
  end_reasoning(pr);
  if (pr->printed_any)
    fputc('\n', stdout);
  fflush(stdout);
  if (rc == 0 || g->attempts > 0)
    fprintf(stderr,
            "[finish_reason %s; prompt %lld tokens (%lld cached); completion "
            "%lld tokens%s; TTFT %.3f s; %.1f tokens/s]\n",
            g->finish_reason[0] ? g->finish_reason : "none",
            (long long)g->usage.prompt_tokens, (long long)g->usage.cached_tokens,
            (long long)g->usage.completion_tokens,
            g->usage_estimated ? " (counted here)" : "", g->ttft_s, g->tokens_per_s);
}

/* Runs the one generation the flags describe (the prompt already read) and
 * reports it; returns the exit code. */
static int generate(const chat_args *a, const sg_llm_provider *prov, const char *prompt) {
  sg_llm_message msgs[2];
  size_t nmsg = 0;
  if (a->system)
    msgs[nmsg++] = (sg_llm_message){"system", a->system, NULL, false};
  msgs[nmsg++] = (sg_llm_message){"user", prompt, NULL, false};
  sg_llm_request r;
  sg_llm_request_init(&r);
  r.base_url = a->llm;
  r.model = a->model;
  r.provider = prov;
  r.messages = msgs;
  r.n_messages = nmsg;
  r.max_tokens = (int)a->max_tokens;
  r.temperature = a->temperature;
  r.no_think = a->no_think;
  r.deadline_s = a->timeout;
  r.idle_timeout_s = a->idle;
  r.max_retries = a->retries_set ? (a->retries == 0 ? -1 : (int)a->retries) : 0;
  sg_llm_client_opts co;
  sg_llm_client_opts_init(&co);
  co.api_key_env = a->keyenv;
  printer pr = {isatty(STDOUT_FILENO) == 1, false, true, false};
  sg_llm_generate_opts go;
  memset(&go, 0, sizeof go);
  go.client = &co;
  if (!a->json) {
    go.data = &pr;
    go.on_reasoning = print_reasoning;
    go.on_content = print_content;
  }
  sg_llm_generation g;
  sg_err err;
  int rc = sg_llm_generate(&r, &go, &g, &err);
  bool bad_request = rc == SG_EINVAL || rc == SG_EUNSUPPORTED;
  if (a->json)
    report_json(rc, &g);
  else
    report_text(rc, &g, &pr);
  if (rc != 0)
    fprintf(stderr, "specgen llm chat: %s\n", g.message);
  sg_llm_generation_free(&g);
  if (rc == 0)
    return SG_EXIT_OK;
  return bad_request ? SG_EXIT_USAGE : SG_EXIT_FAILED;
}

int sg_cmd_llm_chat(int argc, char **argv) {
  chat_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0)
    return code;
  const sg_llm_provider *prov = NULL;
  sg_err err;
  if (a.profile && sg_llm_provider_lookup(a.profile, &prov, &err) < 0) {
    fprintf(stderr, "specgen llm chat: --profile: %s\n", err.msg);
    return SG_EXIT_USAGE;
  }
  char *file_text = NULL;
  if (a.prompt_file &&
      sg_file_read(a.prompt_file, PROMPT_FILE_MAX, &file_text, NULL, &err) < 0) {
    fprintf(stderr, "specgen llm chat: --prompt-file: %s\n", err.msg);
    return SG_EXIT_USAGE;
  }
  code = generate(&a, prov, file_text ? file_text : a.prompt);
  free(file_text);
  return code;
}
