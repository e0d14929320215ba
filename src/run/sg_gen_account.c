/* sg_gen_account.c: the run's account of its generations (see the header). */
#include "run/sg_gen_account.h"

#include "common/sg_error.h"

#include <stdio.h>
#include <string.h>

void sg_gen_account_init(sg_gen_account *a) { memset(a, 0, sizeof *a); }

/* Copies s to out without the parenthesized groups that begin with
 * "(request " or "(no retry", and trims the spaces left behind. */
void sg_gen_cause(const char *message, char *out, size_t cap) {
  const char *s = message && message[0] ? message : "(no message)";
  size_t k = 0;
  if (cap == 0)
    return;
  while (*s && k + 1 < cap) {
    if (*s == '(' && (strncmp(s, "(request ", 9) == 0 || strncmp(s, "(no retry", 9) == 0)) {
      int depth = 0;
      for (; *s; s++) {
        depth += *s == '(';
        depth -= *s == ')';
        if (depth == 0) {
          s++;
          break;
        }
      }
      while (k > 0 && out[k - 1] == ' ')
        k--;
      continue;
    }
    out[k++] = *s++;
  }
  while (k > 0 && (out[k - 1] == ' ' || out[k - 1] == ','))
    k--;
  out[k] = '\0';
}

const char *sg_gen_account_failed(sg_gen_account *a, const char *message) {
  a->failed++;
  char cause[SG_GEN_CAUSE_BYTES];
  sg_gen_cause(message, cause, sizeof cause);
  for (size_t i = 0; i < a->ncauses; i++)
    if (strcmp(a->causes[i].text, cause) == 0) {
      a->causes[i].count++;
      return NULL;
    }
  if (a->ncauses == SG_GEN_CAUSES_MAX) {
    a->other_failures++;
    return NULL; /* bounded: the first causes are the ones to read */
  }
  snprintf(a->causes[a->ncauses].text, SG_GEN_CAUSE_BYTES, "%s", cause);
  a->causes[a->ncauses].count = 1;
  return a->causes[a->ncauses++].text;
}

void sg_gen_account_completed(sg_gen_account *a) { a->completed++; }

bool sg_gen_account_no_reasoning(sg_gen_account *a) {
  return a->mains_without_reasoning++ == 0;
}

bool sg_gen_account_nothing_generated(const sg_gen_account *a, char *msg, size_t cap) {
  if (a->completed > 0 || a->failed == 0)
    return false;
  size_t top = 0;
  for (size_t i = 1; i < a->ncauses; i++)
    if (a->causes[i].count > a->causes[top].count)
      top = i;
  snprintf(msg, cap, "no generation succeeded (%llu failed): %s",
           (unsigned long long)a->failed,
           a->ncauses ? a->causes[top].text : "(no message)");
  return true;
}

json_t *sg_gen_account_json(const sg_gen_account *a) {
  json_t *causes = json_array();
  for (size_t i = 0; i < a->ncauses; i++)
    json_array_append_new(causes, json_pack("{s:s, s:I}", "cause", a->causes[i].text,
                                            "count", (json_int_t)a->causes[i].count));
  if (a->other_failures)
    json_array_append_new(causes, json_pack("{s:s, s:I}", "cause", "(other causes)",
                                            "count", (json_int_t)a->other_failures));
  return json_pack("{s:I, s:I, s:o, s:I, s:I}", "completed", (json_int_t)a->completed,
                   "failed", (json_int_t)a->failed, "causes", causes, "prompt_estimated",
                   (json_int_t)a->prompt_estimated, "completion_estimated",
                   (json_int_t)a->completion_estimated);
}

sg_gen_tokens sg_gen_tokens_of(sg_gen_account *a, const sg_llm_usage *u,
                               bool client_counted, uint64_t chunks,
                               size_t prompt_bytes) {
  sg_gen_tokens t = {0, 0, 0, false, false};
  bool have = u != NULL && u->present;
  if (have && u->prompt_tokens >= 0) {
    t.prompt = u->prompt_tokens;
  } else if (chunks > 0) {
    /* The server read the prompt (it answered) but did not say its size. */
    t.prompt = (int64_t)((prompt_bytes + 3) / 4);
    t.prompt_estimated = true;
  }
  if (have && u->completion_tokens >= 0 && !client_counted) {
    t.completion = u->completion_tokens;
  } else {
    t.completion = (int64_t)chunks;
    t.completion_estimated = true;
  }
  t.cached = have && u->cached_tokens > 0 ? u->cached_tokens : 0;
  if (a) {
    a->prompt_estimated += t.prompt_estimated;
    a->completion_estimated += t.completion_estimated;
  }
  return t;
}

bool sg_gen_endpoint_failure(int code, long http_status) {
  switch (code) {
  case SG_ECONN:
  case SG_EPROTO:
  case SG_EPARSE:
    return true;
  case SG_EHTTP:
    return http_status == 429 || http_status < 400 || http_status >= 500;
  default:
    return false;
  }
}

const char *sg_gen_endpoint_cause(int code, long http_status) {
  switch (code) {
  case SG_ECONN:
    return "the connection broke";
  case SG_EPROTO:
  case SG_EPARSE:
    return "an unreadable reply";
  case SG_EHTTP:
    return http_status == 429  ? "HTTP 429"
           : http_status >= 500 ? "HTTP 5xx"
           : http_status < 400  ? "an error inside the stream"
                                : "another failure";
  default:
    return "another failure";
  }
}

const char *sg_gen_iteration_reason(const char *reason, uint64_t kernels) {
  if (kernels == 0 && reason && strcmp(reason, "fallback") == 0)
    return "no kernel";
  return reason;
}

void sg_gen_cancel_warning(const char *server, const char *profile, char *out,
                           size_t cap) {
  snprintf(out, cap,
           "%s (profile %s) has no way to stop a generation: a cancelled fork or "
           "an early-terminated reasoning may keep generating there and delay the "
           "next request; use fewer forks (--max-forks) or a server that stops on "
           "disconnect (llama.cpp's llama-server, vLLM, SGLang)",
           server ? server : "the server", profile ? profile : "?");
}
