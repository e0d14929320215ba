/* sg_llm_check.c: the probes behind `specgen llm check` (see the header).
 *
 * Each probe sends real requests with sg_llm_generate and records what came
 * back, never what the profile table claims. The profile recommendation is
 * read from the evidence: token ids come back only from vLLM; an answering
 * /abort_request is SGLang's; thinking turned off by thinking.type is
 * DeepSeek's; reasoning that cannot be turned off in the `reasoning` field
 * looks like OpenAI; anything else is generic.
 */
#include "llm/sg_llm_check.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "llm/sg_llm_generate.h"

#include <jansson.h>

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const k_probe_names[SG_LLM_CHECK__COUNT] = {
    [SG_LLM_CHECK_STREAM] = "stream",
    [SG_LLM_CHECK_REASONING] = "reasoning",
    [SG_LLM_CHECK_THINK_OFF] = "think_off",
    [SG_LLM_CHECK_PREFIX] = "prefix",
    [SG_LLM_CHECK_TOKEN_IDS] = "token_ids",
    [SG_LLM_CHECK_CACHED_TOKENS] = "cached_tokens",
    [SG_LLM_CHECK_PREFIX_CACHE] = "prefix_cache",
    [SG_LLM_CHECK_CANCEL] = "cancel",
    [SG_LLM_CHECK_SERVER] = "server",
    [SG_LLM_CHECK_REQUEST_ID] = "request_id",
    [SG_LLM_CHECK_TOKEN_LIMIT] = "token_limit",
};

const char *sg_llm_probe_status_name(sg_llm_probe_status s) {
  switch (s) {
  case SG_LLM_PROBE_YES:
    return "yes";
  case SG_LLM_PROBE_NO:
    return "no";
  case SG_LLM_PROBE_UNVERIFIED:
    return "unverified";
  case SG_LLM_PROBE_SKIPPED:
  default:
    return "skipped";
  }
}

static void set_probe(sg_llm_check_report *r, sg_llm_probe_id id,
                      sg_llm_probe_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_probe(sg_llm_check_report *r, sg_llm_probe_id id,
                      sg_llm_probe_status st, const char *fmt, ...) {
  r->probes[id].status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->probes[id].detail, sizeof r->probes[id].detail, fmt, ap);
  va_end(ap);
}

typedef struct ctx {
  const sg_llm_check_opts *o;
  const sg_llm_provider *profile; /* for requests whose style is not probed */
  sg_llm_client_opts client;
} ctx;

static const sg_llm_message k_short[] = {
    {"user", "In two sentences: why do CUDA kernels tile matrix products in shared "
             "memory?", NULL, false},
};

static void base_request(const ctx *x, sg_llm_request *r, const sg_llm_provider *p) {
  sg_llm_request_init(r);
  r->base_url = x->o->base_url;
  r->model = x->o->model;
  r->provider = p;
  r->messages = k_short;
  r->n_messages = 1;
  r->max_tokens = x->o->max_tokens > 0 ? x->o->max_tokens : 1024;
  r->temperature = 0;
  r->deadline_s = x->o->timeout_s > 0 ? x->o->timeout_s : 120;
  r->idle_timeout_s = r->deadline_s;
  r->max_retries = 2;
}

typedef struct watch {
  int deltas;
  int at;           /* sample on this delta */
  double sampled;   /* the sample; -1 until taken or when unavailable */
  bool taken;
  const struct ctx *x;
} watch;

static double running_requests(const ctx *x);

static void watch_delta(void *d, const char *t, size_t n) {
  (void)t;
  (void)n;
  watch *w = d;
  if (++w->deltas == w->at && !w->taken) {
    w->taken = true;
    w->sampled = running_requests(w->x);
  }
}

static int generate_watched(const ctx *x, const sg_llm_request *r, int cancel_after,
                            watch *w, sg_llm_generation *g) {
  sg_llm_generate_opts go;
  memset(&go, 0, sizeof go);
  go.client = &x->client;
  go.cancel_after_deltas = cancel_after;
  go.max_text_bytes = 1u << 20;
  if (w) {
    go.data = w;
    go.on_reasoning = watch_delta;
    go.on_content = watch_delta;
  }
  sg_err err;
  return sg_llm_generate(r, &go, g, &err);
}

static int generate(const ctx *x, const sg_llm_request *r, int cancel_after,
                    sg_llm_generation *g) {
  return generate_watched(x, r, cancel_after, NULL, g);
}

/* A blocking request for the few non-streamed calls (abort probe, metrics).
 * Returns the HTTP status, or 0 when no answer came; body gets (capped) the
 * answer. */
static long http_call(const char *url, const char *post_json, const char *header,
                      const ctx *x, sg_buf *body) {
  CURL *e = curl_easy_init();
  if (e == NULL)
    return 0;
  struct curl_slist *h = NULL;
  h = curl_slist_append(h, "Content-Type: application/json");
  const char *env = x->client.api_key_env ? x->client.api_key_env : "OPENAI_API_KEY";
  const char *key = env[0] ? getenv(env) : NULL;
  char *auth = key && key[0] ? sg_asprintf("Authorization: Bearer %s", key) : NULL;
  if (auth)
    h = curl_slist_append(h, auth);
  if (header)
    h = curl_slist_append(h, header);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
  if (post_json)
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, post_json);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, (curl_write_callback)NULL);
  FILE *mem = NULL;
  char *buf = NULL;
  size_t len = 0;
  mem = open_memstream(&buf, &len);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, mem);
  long status = 0;
  if (curl_easy_perform(e) == CURLE_OK)
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  fclose(mem);
  if (body && buf)
    sg_buf_append(body, buf, len);
  free(buf);
  curl_slist_free_all(h);
  free(auth);
  curl_easy_cleanup(e);
  return status;
}

/* Sum of the running-request gauges of vLLM and SGLang in /metrics; -1 when
 * the server has no such metrics. */
static double running_requests(const ctx *x) {
  char *url = sg_llm_root_url(x->o->base_url, "/metrics");
  sg_buf b;
  sg_buf_init(&b, 4u << 20);
  long st = http_call(url, NULL, NULL, x, &b);
  free(url);
  double sum = -1;
  if (st == 200) {
    const char *p = sg_buf_str(&b);
    while (p && *p) {
      const char *nl = strchr(p, '\n');
      if (strncmp(p, "vllm:num_requests_running", 25) == 0 ||
          strncmp(p, "sglang:num_running_reqs", 23) == 0) {
        const char *sp = nl ? nl : p + strlen(p);
        while (sp > p && sp[-1] != ' ')
          sp--;
        sum = (sum < 0 ? 0 : sum) + strtod(sp, NULL);
      }
      p = nl ? nl + 1 : NULL;
    }
  }
  sg_buf_free(&b);
  return sum;
}

static void probe_think_off(const ctx *x, sg_llm_check_report *r) {
  if (r->reasoning_field[0] == '\0') {
    set_probe(r, SG_LLM_CHECK_THINK_OFF, SG_LLM_PROBE_SKIPPED,
              "no reasoning arrived, nothing to turn off");
    return;
  }
  const sg_llm_provider *styles[2];
  int n = 0;
  if (x->o->profile)
    styles[n++] = x->o->profile;
  else {
    styles[n++] = sg_llm_provider_get("generic");
    styles[n++] = sg_llm_provider_get("deepseek");
  }
  sg_buf tried;
  sg_buf_init(&tried, 600);
  for (int i = 0; i < n; i++) {
    const char *style = styles[i]->think_off == SG_LLM_THINK_OFF_DEEPSEEK
                            ? "thinking.type"
                            : "chat_template_kwargs";
    if (styles[i]->think_off == SG_LLM_THINK_OFF_NONE) {
      sg_buf_printf(&tried, "%sprofile %s has no way", tried.len ? "; " : "",
                    styles[i]->name);
      continue;
    }
    sg_llm_request q;
    base_request(x, &q, styles[i]);
    q.no_think = true;
    sg_llm_generation g;
    generate(x, &q, 0, &g);
    if (g.code == 0 && g.reasoning_chunks == 0 && g.content_chunks > 0) {
      snprintf(r->think_off_style, sizeof r->think_off_style, "%s", style);
      set_probe(r, SG_LLM_CHECK_THINK_OFF, SG_LLM_PROBE_YES,
                "%s: no reasoning, %llu content chunks", style,
                (unsigned long long)g.content_chunks);
      sg_llm_generation_free(&g);
      sg_buf_free(&tried);
      return;
    }
    if (g.code != 0)
      sg_buf_printf(&tried, "%s%s: %s", tried.len ? "; " : "", style, g.message);
    else
      sg_buf_printf(&tried, "%s%s: reasoning still came (%llu chunks)",
                    tried.len ? "; " : "", style,
                    (unsigned long long)g.reasoning_chunks);
    sg_llm_generation_free(&g);
  }
  set_probe(r, SG_LLM_CHECK_THINK_OFF, SG_LLM_PROBE_NO, "%s", sg_buf_str(&tried));
  sg_buf_free(&tried);
}

static void probe_token_ids(const ctx *x, sg_llm_check_report *r,
                            sg_llm_generation *keep) {
  sg_llm_request q;
  base_request(x, &q, sg_llm_provider_get("vllm"));
  q.return_token_ids = true;
  q.request_id = NULL;
  generate(x, &q, 0, keep);
  if (keep->code == 0 && keep->n_prompt_ids > 0 && keep->n_completion_ids > 0)
    set_probe(r, SG_LLM_CHECK_TOKEN_IDS, SG_LLM_PROBE_YES,
              "return_token_ids: %zu prompt ids, %zu completion ids",
              keep->n_prompt_ids, keep->n_completion_ids);
  else if (keep->code != 0)
    set_probe(r, SG_LLM_CHECK_TOKEN_IDS, SG_LLM_PROBE_NO,
              "return_token_ids refused: %s", keep->message);
  else
    set_probe(r, SG_LLM_CHECK_TOKEN_IDS, SG_LLM_PROBE_NO,
              "return_token_ids accepted but no ids came back");
}

static void probe_prefix(const ctx *x, sg_llm_check_report *r,
                         const sg_llm_generation *first,
                         const sg_llm_generation *ids) {
  /* Continue from the first half of the first answer's reasoning. */
  const char *reasoning = first->reasoning[0] ? first->reasoning
                                              : "The kernel should tile the "
                                                "matrices in shared memory.";
  size_t half = strlen(reasoning) / 2;
  char *prefix = sg_strndup(reasoning, half > 0 ? half : strlen(reasoning));
  const sg_llm_provider *styles[2];
  int n = 0;
  if (x->o->profile)
    styles[n++] = x->o->profile;
  else {
    styles[n++] = sg_llm_provider_get("generic");
    styles[n++] = sg_llm_provider_get("deepseek");
  }
  sg_buf detail;
  sg_buf_init(&detail, 700);
  bool ok = false;
  for (int i = 0; i < n && !ok; i++) {
    if (styles[i]->prefix == SG_LLM_PREFIX_NONE) {
      sg_buf_printf(&detail, "%sprofile %s cannot", detail.len ? "; " : "",
                    styles[i]->name);
      continue;
    }
    const char *style = styles[i]->prefix == SG_LLM_PREFIX_DEEPSEEK
                            ? "prefix: true"
                            : "continue_final_message";
    sg_llm_message msgs[2] = {k_short[0], {"assistant", NULL, prefix, true}};
    sg_llm_request q;
    base_request(x, &q, styles[i]);
    q.messages = msgs;
    q.n_messages = 2;
    sg_llm_generation g;
    generate(x, &q, 0, &g);
    if (g.code == 0 && g.content_chunks > 0) {
      ok = true;
      sg_buf_printf(&detail, "%s%s: continued with %llu content chunks",
                    detail.len ? "; " : "", style,
                    (unsigned long long)g.content_chunks);
    } else {
      sg_buf_printf(&detail, "%s%s: %s", detail.len ? "; " : "", style,
                    g.code ? g.message : "no content came");
    }
    sg_llm_generation_free(&g);
  }
  free(prefix);
  /* The exact-token fork (vLLM): prompt ids + half the generated ids. */
  if (ids && ids->code == 0 && ids->n_prompt_ids > 0 && ids->n_completion_ids > 1) {
    size_t n_ids;
    int32_t *p = sg_llm_fork_token_prompt(ids->prompt_ids, ids->n_prompt_ids,
                                          ids->completion_ids,
                                          ids->n_completion_ids / 2, NULL, 0, &n_ids);
    sg_llm_request q;
    base_request(x, &q, sg_llm_provider_get("vllm"));
    q.endpoint = SG_LLM_ENDPOINT_COMPLETIONS;
    q.prompt_token_ids = p;
    q.n_prompt_token_ids = n_ids;
    q.max_tokens = 64;
    sg_llm_generation g;
    generate(x, &q, 0, &g);
    if (g.code == 0) {
      ok = true;
      sg_buf_printf(&detail, "; token-id fork on /completions: %lld of %zu prompt "
                             "tokens cached",
                    (long long)g.usage.cached_tokens, n_ids);
    } else {
      sg_buf_printf(&detail, "; token-id fork on /completions failed: %s", g.message);
    }
    sg_llm_generation_free(&g);
    free(p);
  }
  set_probe(r, SG_LLM_CHECK_PREFIX, ok ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO, "%s",
            sg_buf_str(&detail));
  sg_buf_free(&detail);
}

static void probe_prefix_cache(const ctx *x, sg_llm_check_report *r) {
  /* A long shared system prompt, then two different questions. */
  sg_buf sys;
  sg_buf_init(&sys, 0);
  /* A fresh first line, so no earlier check has warmed the cache for it. */
  sg_buf_printf(&sys, "Session %llx.\n",
                (unsigned long long)sg_clock_now_us() ^ (unsigned long long)getpid() << 32);
  for (int i = 0; i < 120; i++)
    sg_buf_printf(&sys, "Rule %d: a kernel for tile size %d must keep its "
                        "shared-memory footprint under %d bytes. ",
                  i, 8 * (i % 8 + 1), 1024 * (i % 48 + 1));
  const char *questions[2] = {"Answer in one word: is 64 a power of two?",
                              "Answer in one word: is 96 a power of two?"};
  double ttft[2] = {-1, -1};
  int64_t cached[2] = {-1, -1}, prompt = -1;
  char errmsg[SG_ERR_MSG_MAX] = "";
  for (int k = 0; k < 2; k++) {
    sg_llm_message msgs[2] = {{"system", sg_buf_str(&sys), NULL, false},
                              {"user", questions[k], NULL, false}};
    sg_llm_request q;
    base_request(x, &q, x->profile);
    q.messages = msgs;
    q.n_messages = 2;
    q.max_tokens = 16;
    q.no_think = r->think_off_style[0] != '\0';
    if (q.no_think && strcmp(r->think_off_style, "thinking.type") == 0)
      q.provider = sg_llm_provider_get("deepseek");
    else if (q.no_think)
      q.provider = sg_llm_provider_get("generic");
    sg_llm_generation g;
    generate(x, &q, 0, &g);
    if (g.code != 0 && g.finish_reason[0] == '\0' && g.ttft_s < 0) {
      snprintf(errmsg, sizeof errmsg, "%s", g.message);
      sg_llm_generation_free(&g);
      break;
    }
    ttft[k] = g.ttft_s;
    cached[k] = g.usage.cached_tokens;
    prompt = g.usage.prompt_tokens;
    sg_llm_generation_free(&g);
  }
  sg_buf_free(&sys);
  r->ttft_first_s = ttft[0];
  r->ttft_second_s = ttft[1];
  r->cached_first = cached[0];
  r->cached_second = cached[1];
  r->prompt_tokens_long = prompt;
  if (errmsg[0]) {
    set_probe(r, SG_LLM_CHECK_PREFIX_CACHE, SG_LLM_PROBE_NO, "request failed: %s",
              errmsg);
    return;
  }
  if (cached[1] >= 0) {
    bool hit = cached[1] > cached[0] && cached[1] > 0;
    set_probe(r, SG_LLM_CHECK_PREFIX_CACHE, hit ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO,
              "prompt %lld tokens; cached %lld then %lld; TTFT %.3f s then %.3f s",
              (long long)prompt, (long long)cached[0], (long long)cached[1],
              ttft[0], ttft[1]);
  } else {
    set_probe(r, SG_LLM_CHECK_PREFIX_CACHE, SG_LLM_PROBE_UNVERIFIED,
              "no cached-token count; TTFT %.3f s then %.3f s", ttft[0], ttft[1]);
  }
}


/* GETs root + path; the parsed JSON body when the answer is 200 and JSON. */
static json_t *get_json(const ctx *x, const char *path) {
  char *url = sg_llm_root_url(x->o->base_url, path);
  sg_buf b;
  sg_buf_init(&b, 1u << 20);
  long st = http_call(url, NULL, NULL, x, &b);
  free(url);
  json_t *j = st == 200 ? json_loadb(sg_buf_str(&b), b.len, 0, NULL) : NULL;
  sg_buf_free(&b);
  return j;
}

/* Which server answers, from the endpoints only it has. */
static void probe_server(const ctx *x, sg_llm_check_report *r) {
  json_t *j = get_json(x, "/props");
  if (json_is_object(j) && (json_object_get(j, "default_generation_settings") ||
                            json_object_get(j, "build_info"))) {
    const char *build = json_string_value(json_object_get(j, "build_info"));
    snprintf(r->server, sizeof r->server, "llama.cpp");
    set_probe(r, SG_LLM_CHECK_SERVER, SG_LLM_PROBE_YES,
              "llama.cpp's llama-server (/props: build %.60s, %lld slots)",
              build ? build : "?",
              (long long)json_integer_value(json_object_get(j, "total_slots")));
    json_decref(j);
    return;
  }
  json_decref(j);
  j = get_json(x, "/openapi.json");
  const char *title = json_string_value(json_object_get(json_object_get(j, "info"), "title"));
  if (title && strstr(title, "llama.cpp Python")) {
    const char *v = json_string_value(json_object_get(json_object_get(j, "info"), "version"));
    snprintf(r->server, sizeof r->server, "llama-cpp-python");
    set_probe(r, SG_LLM_CHECK_SERVER, SG_LLM_PROBE_YES,
              "llama-cpp-python's server (/openapi.json: \"%.60s\" %.20s)", title,
              v ? v : "");
    json_decref(j);
    return;
  }
  json_decref(j);
  j = get_json(x, "/version");
  const char *v = json_string_value(json_object_get(j, "version"));
  if (v) {
    snprintf(r->server, sizeof r->server, "vllm");
    set_probe(r, SG_LLM_CHECK_SERVER, SG_LLM_PROBE_YES, "vLLM %.40s (/version)", v);
    json_decref(j);
    return;
  }
  json_decref(j);
  j = get_json(x, "/get_server_info");
  if (json_is_object(j)) {
    snprintf(r->server, sizeof r->server, "sglang");
    set_probe(r, SG_LLM_CHECK_SERVER, SG_LLM_PROBE_YES, "SGLang (/get_server_info)");
    json_decref(j);
    return;
  }
  json_decref(j);
  set_probe(r, SG_LLM_CHECK_SERVER, SG_LLM_PROBE_NO,
            "not recognised: none of /props (llama.cpp), /openapi.json "
            "(llama-cpp-python), /version (vLLM), /get_server_info (SGLang) "
            "answered as that server does");
}

/* A one-token chat request with an X-Request-Id; the HTTP status. */
static long request_with_id(const ctx *x, const char *id) {
  json_t *b = json_pack("{s:s, s:[{s:s, s:s}], s:i}", "model", x->o->model, "messages",
                        "role", "user", "content", "Say OK.", "max_tokens", 1);
  char *body = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  char *url = sg_llm_endpoint_url(x->o->base_url, SG_LLM_ENDPOINT_CHAT);
  char *hdr = sg_asprintf("X-Request-Id: %s", id);
  long st = http_call(url, body, hdr, x, NULL);
  free(hdr);
  free(url);
  free(body);
  return st;
}

static void probe_request_id(const ctx *x, sg_llm_check_report *r) {
  char uuid[37];
  sg_llm_request_uuid("specgen-check-request-id", uuid);
  long with_uuid = request_with_id(x, uuid);
  long other = request_with_id(x, "specgen-check-1");
  bool ok_uuid = with_uuid >= 200 && with_uuid < 300;
  bool ok_other = other >= 200 && other < 300;
  if (!ok_uuid)
    set_probe(r, SG_LLM_CHECK_REQUEST_ID, SG_LLM_PROBE_NO,
              "a UUID X-Request-Id was answered with HTTP %ld (another form: %ld)",
              with_uuid, other);
  else
    set_probe(r, SG_LLM_CHECK_REQUEST_ID, SG_LLM_PROBE_YES,
              "a UUID X-Request-Id is accepted (what specgen sends); another form "
              "%s%.0ld",
              ok_other ? "too" : "is refused with HTTP ", ok_other ? 0L : other);
}

/* Asks for 8 tokens under one field name; the completion count seen. */
static int64_t limited_completion(const ctx *x, const char *profile, bool *estimated,
                                  char *why, size_t cap) {
  sg_llm_request q;
  base_request(x, &q, sg_llm_provider_get(profile));
  q.max_tokens = 8;
  q.messages = k_short;
  sg_llm_generation g;
  generate(x, &q, 0, &g);
  int64_t n = g.code == 0 ? g.usage.completion_tokens : -1;
  *estimated = g.usage_estimated;
  snprintf(why, cap, "%s", g.code ? g.message : "");
  sg_llm_generation_free(&g);
  return n;
}

static void probe_token_limit(const ctx *x, sg_llm_check_report *r) {
  bool est_a = false, est_b = false;
  char why_a[SG_ERR_MSG_MAX], why_b[SG_ERR_MSG_MAX];
  int64_t a = limited_completion(x, "generic", &est_a, why_a, sizeof why_a);
  int64_t b = limited_completion(x, "openai", &est_b, why_b, sizeof why_b);
  bool ok_a = a >= 0 && a <= 8, ok_b = b >= 0 && b <= 8;
  char da[SG_ERR_MSG_MAX + 64], db[SG_ERR_MSG_MAX + 64];
  if (a < 0)
    snprintf(da, sizeof da, "failed: %s", why_a);
  else
    snprintf(da, sizeof da, "%s (%lld tokens%s)", ok_a ? "honoured" : "ignored",
             (long long)a, est_a ? ", counted here" : "");
  if (b < 0)
    snprintf(db, sizeof db, "failed: %s", why_b);
  else
    snprintf(db, sizeof db, "%s (%lld tokens%s)", ok_b ? "honoured" : "ignored",
             (long long)b, est_b ? ", counted here" : "");
  set_probe(r, SG_LLM_CHECK_TOKEN_LIMIT, ok_a || ok_b ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO,
            "8 tokens asked: max_tokens %s; max_completion_tokens %s", da, db);
}

/* Seconds a 4-token request takes on the idle server (-1 if it fails). */
static double short_request_s(const ctx *x) {
  sg_llm_request q;
  base_request(x, &q, x->profile);
  q.max_tokens = 4;
  sg_llm_generation g;
  generate(x, &q, 0, &g);
  double t = g.code == 0 ? g.elapsed_s : -1;
  sg_llm_generation_free(&g);
  return t;
}

/* llama.cpp's /slots: how many slots are processing; -1 without the
 * endpoint. */
static int busy_slots(const ctx *x) {
  json_t *j = get_json(x, "/slots");
  if (!json_is_array(j)) {
    json_decref(j);
    return -1;
  }
  int n = 0;
  size_t i;
  json_t *sl;
  json_array_foreach(j, i, sl)
    n += json_is_true(json_object_get(sl, "is_processing"));
  json_decref(j);
  return n;
}

/* After a cancel, without metrics: is the server free? A short request must
 * come back about as fast as one on an idle server; a server still busy with
 * the cancelled generation (one that ignores closed connections and serves
 * one request at a time) answers late or not within the deadline. */
static void cancel_by_timing(const ctx *x, sg_llm_check_report *r, double idle_s,
                             const char *abort_note) {
  int slots = busy_slots(x);
  if (slots >= 0) {
    for (int i = 0; i < 30 && slots > 0; i++) {
      usleep(100000);
      slots = busy_slots(x);
    }
    set_probe(r, SG_LLM_CHECK_CANCEL, slots == 0 ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO,
              "cancelled after 5 deltas (connection closed%s); /slots: %d slot%s "
              "still processing after it",
              abort_note, slots, slots == 1 ? "" : "s");
    return;
  }
  sg_llm_request q;
  base_request(x, &q, x->profile);
  q.max_tokens = 4;
  q.deadline_s = 3 * idle_s + 5;
  q.max_retries = -1;
  sg_llm_generation g;
  generate(x, &q, 0, &g);
  double t = g.elapsed_s;
  bool quick = g.code == 0 && t <= 3 * idle_s + 2;
  set_probe(r, SG_LLM_CHECK_CANCEL, quick ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO,
            "cancelled after 5 deltas (connection closed%s); a 4-token request "
            "right after it took %.2f s (%.2f s on the idle server)%s%s",
            abort_note, t, idle_s, g.code ? ": " : "", g.code ? g.message : "");
  sg_llm_generation_free(&g);
}

static void probe_cancel(const ctx *x, sg_llm_check_report *r, double idle_s) {
  sg_llm_request q;
  base_request(x, &q, x->profile);
  q.max_tokens = 4096;
  double before = running_requests(x);
  /* The gauge is sampled while the stream runs (on its 3rd delta), then
   * after the cancel (on the 5th): it must rise, then fall back. */
  watch w = {0, 3, -1, false, x};
  sg_llm_generation g;
  generate_watched(x, &q, 5, before >= 0 ? &w : NULL, &g);
  bool cancelled = g.code == SG_ECANCELED;
  char got[SG_ERR_MSG_MAX];
  snprintf(got, sizeof got, "%s", g.message);
  sg_llm_generation_free(&g);
  if (!cancelled) {
    set_probe(r, SG_LLM_CHECK_CANCEL, SG_LLM_PROBE_UNVERIFIED,
              "the stream ended before 5 deltas to cancel after (%s)",
              got[0] ? got : "finished");
    return;
  }
  const char *abort_note = x->profile->abort_endpoint
                               ? " and POST /abort_request sent"
                               : "";
  if (before >= 0 && w.sampled > before) {
    double now = w.sampled;
    for (int i = 0; i < 30; i++) {
      now = running_requests(x);
      if (now <= before)
        break;
      usleep(100000);
    }
    set_probe(r, SG_LLM_CHECK_CANCEL,
              now <= before ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO,
              "cancelled after 5 deltas (connection closed%s); running requests "
              "in /metrics: %.0f before, %.0f while streaming, %.0f after",
              abort_note, before, w.sampled, now);
    return;
  }
  if (before < 0) {
    cancel_by_timing(x, r, idle_s, abort_note);
    return;
  }
  set_probe(r, SG_LLM_CHECK_CANCEL, SG_LLM_PROBE_UNVERIFIED,
            "cancelled after 5 deltas (connection closed%s); /metrics did not "
            "count the running request",
            abort_note);
}

static int ctx_init(ctx *x, const sg_llm_check_opts *o, sg_err *err) {
  if (o->base_url == NULL || o->base_url[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "no endpoint URL (--llm)");
  if (o->model == NULL || o->model[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "no model (--model)");
  x->o = o;
  x->profile = o->profile ? o->profile : sg_llm_provider_get("generic");
  if (o->client)
    x->client = *o->client;
  else
    sg_llm_client_opts_init(&x->client);
  return 0;
}

/* 1. streaming: a chat request streams and finishes. first keeps the
 * generation (the caller frees it); true when it streamed. */
static bool probe_stream(const ctx *x, sg_llm_probe *p, sg_llm_generation *first) {
  sg_llm_request q;
  base_request(x, &q, x->profile);
  generate(x, &q, 0, first);
  p->name = k_probe_names[SG_LLM_CHECK_STREAM];
  p->status = first->code == 0 ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO;
  if (first->code != 0) {
    /* the message, cut to the detail's size */
    size_t n = strnlen(first->message, sizeof p->detail - 1);
    memcpy(p->detail, first->message, n);
    p->detail[n] = '\0';
  } else
    snprintf(p->detail, sizeof p->detail,
             "%llu reasoning + %llu content chunks, finish_reason %s, TTFT %.3f s, "
             "%.1f tokens/s",
             (unsigned long long)first->reasoning_chunks,
             (unsigned long long)first->content_chunks,
             first->finish_reason[0] ? first->finish_reason : "(none)", first->ttft_s,
             first->tokens_per_s);
  return first->code == 0;
}

int sg_llm_check_stream(const sg_llm_check_opts *o, sg_llm_probe *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  out->name = k_probe_names[SG_LLM_CHECK_STREAM];
  out->status = SG_LLM_PROBE_SKIPPED;
  ctx x;
  int rc = ctx_init(&x, o, err);
  if (rc < 0)
    return rc;
  sg_llm_generation first;
  probe_stream(&x, out, &first);
  sg_llm_generation_free(&first);
  return 0;
}

int sg_llm_check_run(const sg_llm_check_opts *o, sg_llm_check_report *out,
                     sg_err *err) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < SG_LLM_CHECK__COUNT; i++) {
    out->probes[i].name = k_probe_names[i];
    out->probes[i].status = SG_LLM_PROBE_SKIPPED;
  }
  ctx x;
  int rc = ctx_init(&x, o, err);
  if (rc < 0)
    return rc;
  out->profile_given = o->profile != NULL;

  /* 1. streaming */
  sg_llm_generation first;
  if (!probe_stream(&x, &out->probes[SG_LLM_CHECK_STREAM], &first)) {
    sg_llm_generation_free(&first);
    snprintf(out->profile, sizeof out->profile, "%s", x.profile->name);
    return 0;
  }
  out->usable = true;
  /* 2. reasoning field */
  snprintf(out->reasoning_field, sizeof out->reasoning_field, "%s",
           first.reasoning_field);
  if (strncmp(first.reasoning_field, "content", 7) == 0)
    set_probe(out, SG_LLM_CHECK_REASONING, SG_LLM_PROBE_YES,
              "inline <think>...</think> in delta.content (%llu pieces), split out "
              "as reasoning by specgen",
              (unsigned long long)first.reasoning_chunks);
  else if (first.reasoning_field[0])
    set_probe(out, SG_LLM_CHECK_REASONING, SG_LLM_PROBE_YES,
              "delta.%s (%llu chunks)", first.reasoning_field,
              (unsigned long long)first.reasoning_chunks);
  else
    set_probe(out, SG_LLM_CHECK_REASONING, SG_LLM_PROBE_NO,
              "no reasoning text in delta.reasoning, delta.reasoning_content or "
              "a leading <think> block in delta.content");
  bool cached_seen = first.usage.cached_tokens >= 0;
  /* What this server is, and the request id and limit field it takes. */
  probe_server(&x, out);
  probe_request_id(&x, out);
  probe_token_limit(&x, out);
  double first_s = short_request_s(&x);
  /* 3. thinking off */
  probe_think_off(&x, out);
  /* 4. token ids */
  sg_llm_generation ids;
  probe_token_ids(&x, out, &ids);
  cached_seen = cached_seen || ids.usage.cached_tokens >= 0;
  /* 5. prefix continuation */
  probe_prefix(&x, out, &first, &ids);
  /* 6. prefix cache */
  probe_prefix_cache(&x, out);
  cached_seen = cached_seen || out->cached_second >= 0;
  set_probe(out, SG_LLM_CHECK_CACHED_TOKENS,
            cached_seen ? SG_LLM_PROBE_YES : SG_LLM_PROBE_NO,
            cached_seen ? "usage reports cached prompt tokens"
                        : "usage has neither prompt_tokens_details.cached_tokens "
                          "nor prompt_cache_hit_tokens");
  /* The profile, from the evidence (unless given). */
  const char *rec = "generic";
  if (out->probes[SG_LLM_CHECK_TOKEN_IDS].status == SG_LLM_PROBE_YES) {
    rec = "vllm";
  } else if (strcmp(out->server, "llama.cpp") == 0) {
    rec = "llamacpp";
  } else if (strcmp(out->server, "llama-cpp-python") == 0) {
    rec = "llamacpp-python";
  } else {
    char *url = sg_llm_root_url(o->base_url, "/abort_request");
    long st = http_call(url, "{\"rid\":\"specgen-check-no-such-request\"}", NULL, &x, NULL);
    free(url);
    if (st >= 200 && st < 300)
      rec = "sglang";
    else if (strcmp(out->think_off_style, "thinking.type") == 0)
      rec = "deepseek";
    else if (strcmp(out->reasoning_field, "reasoning") == 0 &&
             out->probes[SG_LLM_CHECK_THINK_OFF].status == SG_LLM_PROBE_NO)
      rec = "openai";
  }
  snprintf(out->profile, sizeof out->profile, "%s",
           o->profile ? o->profile->name : rec);
  if (o->profile == NULL)
    x.profile = sg_llm_provider_get(rec);
  /* 7. cancellation, with the profile's abort */
  probe_cancel(&x, out, first_s);
  sg_llm_generation_free(&ids);
  sg_llm_generation_free(&first);
  return 0;
}
