/* cmd_llm_check.c: `specgen llm check`, what an endpoint can do for specgen.
 *
 * Parses flags, runs sg_llm_check_run and prints its report point by point
 * (or as one JSON object), ending with the profile to use.
 */
#include "cli/cli_flags.h"
#include "cli/commands.h"
#include "llm/sg_llm_check.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen llm check --llm URL --model M [options]\n"
          "\n"
          "Probes an OpenAI-compatible endpoint with real requests and reports:\n"
          "streaming; where reasoning arrives; whether thinking can be turned off per\n"
          "request; whether a reasoning prefix can be continued; whether token ids and\n"
          "cached-token counts come back; whether a second request sharing a long\n"
          "prefix is served from the cache; whether cancelling stops the generation.\n"
          "Ends with the provider profile to use.\n"
          "\n"
          "  --llm URL            server base URL\n"
          "  --model M            model name\n"
          "  --profile P          probe with this profile (default: detect)\n"
          "  --timeout S          deadline of each probe request (default 120)\n"
          "  --max-tokens N       completion limit of the short probes (default 1024)\n"
          "  --api-key-env NAME   environment variable holding the API key\n"
          "                       (default OPENAI_API_KEY; the key is never printed)\n"
          "  --json               one JSON object instead of the text report\n"
          "  -h, --help           this help\n"
          "\n"
          "Exit status: 0 the endpoint is usable, 1 it is not, 2 bad usage.\n");
}

typedef struct check_args {
  const char *llm, *model, *profile, *keyenv;
  double timeout, max_tokens;
  bool json;
} check_args;

/* Parses the flags into a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, check_args *a) {
  enum { O_LLM = 256, O_MODEL, O_PROFILE, O_TIMEOUT, O_MAX_TOKENS, O_KEYENV, O_JSON, O_HELP };
  static const struct option opts[] = {
      {"llm", required_argument, NULL, O_LLM},
      {"model", required_argument, NULL, O_MODEL},
      {"profile", required_argument, NULL, O_PROFILE},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"max-tokens", required_argument, NULL, O_MAX_TOKENS},
      {"api-key-env", required_argument, NULL, O_KEYENV},
      {"json", no_argument, NULL, O_JSON},
      {"help", no_argument, NULL, O_HELP},
      {NULL, 0, NULL, 0},
  };
  memset(a, 0, sizeof *a);
  const char *cmd = "llm check";
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (ch) {
    case O_LLM: a->llm = optarg; break;
    case O_MODEL: a->model = optarg; break;
    case O_PROFILE: a->profile = optarg; break;
    case O_KEYENV: a->keyenv = optarg; break;
    case O_JSON: a->json = true; break;
    case O_TIMEOUT:
      if (sg_cli_flag_min(cmd, "--timeout", optarg, 0.001, &a->timeout) < 0)
        return SG_EXIT_USAGE;
      break;
    case O_MAX_TOKENS:
      if (sg_cli_flag_min(cmd, "--max-tokens", optarg, 1, &a->max_tokens) < 0 ||
          a->max_tokens > 1e7)
        return SG_EXIT_USAGE;
      break;
    case 'h':
    case O_HELP:
      usage(stdout);
      return SG_EXIT_OK;
    default:
      return sg_cli_flag_refused(cmd, ch, argv);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "specgen llm check: unexpected argument '%s'\n", argv[optind]);
    return SG_EXIT_USAGE;
  }
  if (a->llm == NULL || a->model == NULL) {
    fprintf(stderr, "specgen llm check: %s is required\n", a->llm ? "--model" : "--llm");
    return SG_EXIT_USAGE;
  }
  return -1;
}

static void report_json(const sg_llm_check_report *r) {
  json_t *j = json_object();
  json_object_set_new(j, "usable", json_boolean(r->usable));
  json_t *probes = json_object();
  for (int i = 0; i < SG_LLM_CHECK__COUNT; i++) {
    json_t *p = json_object();
    json_object_set_new(p, "status", json_string(sg_llm_probe_status_name(r->probes[i].status)));
    json_object_set_new(p, "detail", json_string(r->probes[i].detail));
    json_object_set_new(probes, r->probes[i].name, p);
  }
  json_object_set_new(j, "probes", probes);
  json_object_set_new(j, "reasoning_field", json_string(r->reasoning_field));
  json_object_set_new(j, "think_off_style", json_string(r->think_off_style));
  json_t *pc = json_object();
  json_object_set_new(pc, "prompt_tokens", json_integer(r->prompt_tokens_long));
  json_object_set_new(pc, "cached_tokens_first", json_integer(r->cached_first));
  json_object_set_new(pc, "cached_tokens_second", json_integer(r->cached_second));
  json_object_set_new(pc, "ttft_first_s", json_real(r->ttft_first_s));
  json_object_set_new(pc, "ttft_second_s", json_real(r->ttft_second_s));
  json_object_set_new(j, "prefix_cache", pc);
  json_object_set_new(j, "profile", json_string(r->profile));
  json_object_set_new(j, "profile_given", json_boolean(r->profile_given));
  sg_cli_llm_put_json(j);
}

static void report_text(const check_args *a, const sg_llm_check_report *r) {
  printf("endpoint %s, model %s\n", a->llm, a->model);
  for (int i = 0; i < SG_LLM_CHECK__COUNT; i++)
    printf("  %-14s %-10s %s\n", r->probes[i].name,
           sg_llm_probe_status_name(r->probes[i].status), r->probes[i].detail);
  if (r->usable)
    printf("profile to use: %s%s\n", r->profile, r->profile_given ? " (given)" : "");
  else
    printf("the endpoint is not usable: %s\n", r->probes[SG_LLM_CHECK_STREAM].detail);
}

int sg_cmd_llm_check(int argc, char **argv) {
  check_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0)
    return code;
  sg_err err;
  const sg_llm_provider *prov = NULL;
  if (a.profile && sg_llm_provider_lookup(a.profile, &prov, &err) < 0) {
    fprintf(stderr, "specgen llm check: --profile: %s\n", err.msg);
    return SG_EXIT_USAGE;
  }
  sg_llm_client_opts co;
  sg_llm_client_opts_init(&co);
  co.api_key_env = a.keyenv;
  sg_llm_check_opts o = {a.llm, a.model, prov, &co, a.timeout, (int)a.max_tokens};
  sg_llm_check_report r;
  if (sg_llm_check_run(&o, &r, &err) < 0) {
    fprintf(stderr, "specgen llm check: %s\n", err.msg);
    return SG_EXIT_USAGE;
  }
  if (a.json)
    report_json(&r);
  else
    report_text(&a, &r);
  return r.usable ? SG_EXIT_OK : SG_EXIT_FAILED;
}
