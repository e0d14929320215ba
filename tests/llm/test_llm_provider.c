/* test_llm_provider.c: request bodies and URLs each provider profile builds. */
#include "llm/sg_llm_provider.h"
#include "sg_test.h"

#include <stdlib.h>
#include <string.h>

static const sg_llm_message k_user[] = {{"user", "write a kernel", NULL, false}};
static const sg_llm_message k_fork[] = {
    {"user", "write a kernel", NULL, false},
    {"assistant", NULL, "Use 16x16 tiles.", true},
};

static void base_req(sg_llm_request *r) {
  sg_llm_request_init(r);
  r->model = "m";
  r->messages = k_user;
  r->n_messages = 1;
}

static json_t *build(const char *profile, const sg_llm_request *r) {
  json_t *b = NULL;
  sg_err err;
  SG_CHECK_OK(sg_llm_provider_body(sg_llm_provider_get(profile), r, &b, &err), err);
  return b;
}

static void expect_fail(const char *profile, const sg_llm_request *r, int code,
                        const char *msg) {
  json_t *b = (json_t *)1;
  sg_err err;
  SG_CHECK_EQ_INT(sg_llm_provider_body(sg_llm_provider_get(profile), r, &b, &err), code);
  SG_CHECK(b == NULL);
  SG_CHECK_CONTAINS(err.msg, msg);
}

static const char *path_str(json_t *b, const char *a, const char *k) {
  json_t *o = json_object_get(b, a);
  return json_string_value(k ? json_object_get(o, k) : o);
}

static void test_provider_lookup(void) {
  const char *names[] = {"vllm",     "sglang",          "deepseek", "openai",
                         "llamacpp", "llamacpp-python", "generic"};
  for (int i = 0; i < 7; i++) {
    const sg_llm_provider *p = sg_llm_provider_get(names[i]);
    SG_CHECK(p != NULL);
    SG_CHECK_STR_EQ(p->name, names[i]);
    SG_CHECK(sg_llm_provider_by_kind(p->kind) == p);
  }
  const sg_llm_provider *p;
  sg_err err;
  SG_CHECK_EQ_INT(sg_llm_provider_lookup("tgi", &p, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "unknown provider profile 'tgi'");
  SG_CHECK(sg_llm_provider_get(NULL) == NULL);
}

static void test_provider_basic_chat_body(void) {
  sg_llm_request r;
  base_req(&r);
  r.max_tokens = 100;
  r.temperature = 0.5;
  json_t *b = build("generic", &r);
  SG_CHECK_STR_EQ(path_str(b, "model", NULL), "m");
  SG_CHECK(json_is_true(json_object_get(b, "stream")));
  SG_CHECK(json_is_true(json_object_get(json_object_get(b, "stream_options"),
                                        "include_usage")));
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(b, "max_tokens")), 100);
  SG_CHECK_NEAR(json_real_value(json_object_get(b, "temperature")), 0.5, 1e-12);
  json_t *m = json_object_get(b, "messages");
  SG_CHECK_EQ_INT(json_array_size(m), 1);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(m, 0), "content")),
                  "write a kernel");
  SG_CHECK(json_object_get(b, "chat_template_kwargs") == NULL);
  SG_CHECK(json_object_get(b, "continue_final_message") == NULL);
  json_decref(b);
  /* Defaults are left to the server. */
  base_req(&r);
  b = build("generic", &r);
  SG_CHECK(json_object_get(b, "max_tokens") == NULL);
  SG_CHECK(json_object_get(b, "temperature") == NULL);
  json_decref(b);
}

static void test_provider_openai_uses_max_completion_tokens(void) {
  sg_llm_request r;
  base_req(&r);
  r.max_tokens = 64;
  json_t *b = build("openai", &r);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(b, "max_completion_tokens")), 64);
  SG_CHECK(json_object_get(b, "max_tokens") == NULL);
  json_decref(b);
}

static void test_provider_thinking_off(void) {
  sg_llm_request r;
  base_req(&r);
  r.no_think = true;
  const char *kw[] = {"vllm", "sglang", "generic"};
  for (int i = 0; i < 3; i++) {
    json_t *b = build(kw[i], &r);
    json_t *k = json_object_get(b, "chat_template_kwargs");
    SG_CHECK(json_is_false(json_object_get(k, "enable_thinking")));
    SG_CHECK(json_is_false(json_object_get(k, "thinking")));
    SG_CHECK(json_object_get(b, "thinking") == NULL);
    json_decref(b);
  }
  json_t *b = build("deepseek", &r);
  SG_CHECK_STR_EQ(path_str(b, "thinking", "type"), "disabled");
  SG_CHECK(json_object_get(b, "chat_template_kwargs") == NULL);
  json_decref(b);
  expect_fail("openai", &r, SG_EUNSUPPORTED, "openai cannot turn thinking off");
}

static void test_provider_prefix_continue_final_message(void) {
  sg_llm_request r;
  base_req(&r);
  r.messages = k_fork;
  r.n_messages = 2;
  json_t *b = build("vllm", &r);
  SG_CHECK(json_is_true(json_object_get(b, "continue_final_message")));
  SG_CHECK(json_is_false(json_object_get(b, "add_generation_prompt")));
  json_t *last = json_array_get(json_object_get(b, "messages"), 1);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(last, "role")), "assistant");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(last, "content")),
                  "<think>\nUse 16x16 tiles.\n</think>\n\n");
  SG_CHECK(json_object_get(last, "prefix") == NULL);
  json_decref(b);
}

static void test_provider_prefix_deepseek(void) {
  sg_llm_request r;
  base_req(&r);
  r.messages = k_fork;
  r.n_messages = 2;
  json_t *b = build("deepseek", &r);
  json_t *last = json_array_get(json_object_get(b, "messages"), 1);
  SG_CHECK(json_is_true(json_object_get(last, "prefix")));
  SG_CHECK_STR_EQ(json_string_value(json_object_get(last, "reasoning_content")),
                  "Use 16x16 tiles.");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(last, "content")), "");
  SG_CHECK(json_object_get(b, "continue_final_message") == NULL);
  json_decref(b);
}

static void test_provider_prefix_rules(void) {
  sg_llm_request r;
  base_req(&r);
  r.messages = k_fork;
  r.n_messages = 2;
  expect_fail("openai", &r, SG_EUNSUPPORTED, "openai cannot continue");
  static const sg_llm_message not_last[] = {
      {"assistant", "x", NULL, true},
      {"user", "y", NULL, false},
  };
  r.messages = not_last;
  expect_fail("vllm", &r, SG_EINVAL, "must be the last message");
  static const sg_llm_message stray[] = {{"user", "y", "reasoning", false}};
  r.messages = stray;
  r.n_messages = 1;
  expect_fail("vllm", &r, SG_EINVAL, "only sent with a prefix message");
}

static void test_provider_completions_token_prompt(void) {
  sg_llm_request r;
  base_req(&r);
  r.endpoint = SG_LLM_ENDPOINT_COMPLETIONS;
  const int32_t ids[] = {1, 50, 7};
  r.prompt_token_ids = ids;
  r.n_prompt_token_ids = 3;
  r.prompt = "ignored when ids are given";
  r.return_token_ids = true;
  json_t *b = build("vllm", &r);
  json_t *p = json_object_get(b, "prompt");
  SG_CHECK_EQ_INT(json_array_size(p), 3);
  SG_CHECK_EQ_INT(json_integer_value(json_array_get(p, 1)), 50);
  SG_CHECK(json_is_true(json_object_get(b, "return_token_ids")));
  SG_CHECK(json_object_get(b, "messages") == NULL);
  json_decref(b);
  r.n_prompt_token_ids = 0;
  b = build("vllm", &r);
  SG_CHECK_STR_EQ(path_str(b, "prompt", NULL), "ignored when ids are given");
  json_decref(b);
  r.prompt = NULL;
  expect_fail("vllm", &r, SG_EINVAL, "has no prompt");
  r.prompt = "p";
  r.no_think = true;
  expect_fail("vllm", &r, SG_EINVAL, "no_think applies to chat");
}

static void test_provider_token_ids_only_where_supported(void) {
  sg_llm_request r;
  base_req(&r);
  r.return_token_ids = true;
  json_t *b = build("vllm", &r);
  SG_CHECK(json_is_true(json_object_get(b, "return_token_ids")));
  json_decref(b);
  expect_fail("deepseek", &r, SG_EUNSUPPORTED, "does not return token ids");
  expect_fail("openai", &r, SG_EUNSUPPORTED, "does not return token ids");
}

static void test_provider_request_id_fields(void) {
  sg_llm_request r;
  base_req(&r);
  r.request_id = "abc";
  json_t *b = build("sglang", &r);
  SG_CHECK_STR_EQ(path_str(b, "rid", NULL), "abc");
  json_decref(b);
  b = build("vllm", &r);
  SG_CHECK_STR_EQ(path_str(b, "request_id", NULL), "abc");
  SG_CHECK(json_object_get(b, "rid") == NULL);
  json_decref(b);
  b = build("openai", &r);
  SG_CHECK(json_object_get(b, "rid") == NULL && json_object_get(b, "request_id") == NULL);
  json_decref(b);
}

static void test_provider_extra_json_merged_last(void) {
  sg_llm_request r;
  base_req(&r);
  r.max_tokens = 10;
  r.extra_json = "{\"top_p\":0.9,\"max_tokens\":20}";
  json_t *b = build("generic", &r);
  SG_CHECK_NEAR(json_real_value(json_object_get(b, "top_p")), 0.9, 1e-12);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(b, "max_tokens")), 20);
  json_decref(b);
  r.extra_json = "[1]";
  expect_fail("generic", &r, SG_EINVAL, "extra_json is not a JSON object");
  r.extra_json = "{oops";
  expect_fail("generic", &r, SG_EINVAL, "extra_json is not a JSON object");
}

static void test_provider_invalid_requests(void) {
  sg_llm_request r;
  base_req(&r);
  r.model = NULL;
  expect_fail("generic", &r, SG_EINVAL, "no model");
  base_req(&r);
  r.n_messages = 0;
  expect_fail("generic", &r, SG_EINVAL, "no messages");
  base_req(&r);
  r.max_tokens = -3;
  expect_fail("generic", &r, SG_EINVAL, "max_tokens is negative");
}

static void test_provider_urls(void) {
  struct {
    const char *base;
    sg_llm_endpoint ep;
    const char *want;
  } cases[] = {
      {"http://127.0.0.1:8000", SG_LLM_ENDPOINT_CHAT,
       "http://127.0.0.1:8000/v1/chat/completions"},
      {"http://127.0.0.1:8000/", SG_LLM_ENDPOINT_COMPLETIONS,
       "http://127.0.0.1:8000/v1/completions"},
      {"http://h:1/v1", SG_LLM_ENDPOINT_CHAT, "http://h:1/v1/chat/completions"},
      {"http://h:1/v1/", SG_LLM_ENDPOINT_CHAT, "http://h:1/v1/chat/completions"},
      {"https://api.deepseek.com/beta", SG_LLM_ENDPOINT_CHAT,
       "https://api.deepseek.com/beta/chat/completions"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *u = sg_llm_endpoint_url(cases[i].base, cases[i].ep);
    SG_CHECK_STR_EQ(u, cases[i].want);
    free(u);
  }
  char *u = sg_llm_root_url("http://h:30000/v1", "/abort_request");
  SG_CHECK_STR_EQ(u, "http://h:30000/abort_request");
  free(u);
  u = sg_llm_root_url("http://h:30000", "/health");
  SG_CHECK_STR_EQ(u, "http://h:30000/health");
  free(u);
}

static void test_provider_abort_body(void) {
  json_t *b = sg_llm_provider_abort_body(sg_llm_provider_get("sglang"), "r1");
  SG_CHECK(b != NULL);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(b, "rid")), "r1");
  json_decref(b);
  SG_CHECK(sg_llm_provider_abort_body(sg_llm_provider_get("vllm"), "r1") == NULL);
  SG_CHECK(sg_llm_provider_abort_body(sg_llm_provider_get("deepseek"), "r1") == NULL);
}

static void test_fork_token_prompt_concatenates_exactly(void) {
  const int32_t p[] = {1, 2, 3}, g[] = {10, 11}, e[] = {99};
  size_t n;
  int32_t *ids = sg_llm_fork_token_prompt(p, 3, g, 2, e, 1, &n);
  SG_CHECK_EQ_INT(n, 6);
  const int32_t want[] = {1, 2, 3, 10, 11, 99};
  SG_CHECK(memcmp(ids, want, sizeof want) == 0);
  free(ids);
  ids = sg_llm_fork_token_prompt(p, 3, NULL, 0, NULL, 0, &n);
  SG_CHECK_EQ_INT(n, 3);
  free(ids);
}

/* Each server's token-limit field: llama-cpp-python ignores
 * max_completion_tokens (measured), llama.cpp takes both names, OpenAI wants
 * max_completion_tokens. */
static void test_provider_token_limit_field_per_server(void) {
  const char *prof[] = {"llamacpp", "llamacpp-python", "openai", "vllm", "generic"};
  const char *field[] = {"max_tokens", "max_tokens", "max_completion_tokens",
                         "max_tokens", "max_tokens"};
  for (int i = 0; i < 5; i++) {
    sg_llm_request r;
    base_req(&r);
    r.max_tokens = 7;
    json_t *b = build(prof[i], &r);
    SG_CHECK_MSG(json_integer_value(json_object_get(b, field[i])) == 7,
                 "%s: %s not set", prof[i], field[i]);
    SG_CHECK_EQ_INT(json_object_size(b) > 0, 1);
    const char *other = strcmp(field[i], "max_tokens") == 0 ? "max_completion_tokens"
                                                             : "max_tokens";
    SG_CHECK(json_object_get(b, other) == NULL);
    json_decref(b);
  }
}

static void test_request_uuid_shape_and_stability(void) {
  char a[37], b[37], c[37];
  sg_llm_request_uuid("specgen-1-w0-g1-1", a);
  sg_llm_request_uuid("specgen-1-w0-g1-1", b);
  sg_llm_request_uuid("specgen-1-w0-g1-2", c);
  SG_CHECK(sg_llm_is_uuid(a));
  SG_CHECK_STR_EQ(a, b);            /* the same on every retry */
  SG_CHECK(strcmp(a, c) != 0);      /* another name, another id */
  SG_CHECK_EQ_INT(a[14], '4');      /* version 4 */
  SG_CHECK(strchr("89ab", a[19]) != NULL); /* RFC 4122 variant */
  /* A UUID passes unchanged; NULL and "" give valid ids. */
  sg_llm_request_uuid("123e4567-e89b-12d3-a456-426614174000", b);
  SG_CHECK_STR_EQ(b, "123e4567-e89b-12d3-a456-426614174000");
  sg_llm_request_uuid(NULL, b);
  SG_CHECK(sg_llm_is_uuid(b));
  sg_llm_request_uuid("", b);
  SG_CHECK(sg_llm_is_uuid(b));
  /* Distinct for many names (no collisions in 20,000). */
  static char seen[20000][37];
  for (int i = 0; i < 20000; i++) {
    char name[32];
    snprintf(name, sizeof name, "sg-%d", i);
    sg_llm_request_uuid(name, seen[i]);
    SG_CHECK(sg_llm_is_uuid(seen[i]));
  }
  qsort(seen, 20000, 37, (int (*)(const void *, const void *))strcmp);
  for (int i = 1; i < 20000; i++)
    SG_CHECK(strcmp(seen[i - 1], seen[i]) != 0);
  const char *bad[] = {"", "sg-1", "123e4567-e89b-12d3-a456-42661417400",
                       "123e4567-e89b-12d3-a456-4266141740000",
                       "123e4567xe89b-12d3-a456-426614174000",
                       "123e4567-e89b-12d3-a456-42661417400g"};
  for (int i = 0; i < 6; i++)
    SG_CHECK(!sg_llm_is_uuid(bad[i]));
  SG_CHECK(!sg_llm_is_uuid(NULL));
}

/* Cancellation and request-id policy are data of the profile. */
static void test_provider_cancel_and_header_policy(void) {
  SG_CHECK_EQ_INT(sg_llm_provider_get("llamacpp")->cancel, SG_LLM_CANCEL_CLOSE);
  SG_CHECK_EQ_INT(sg_llm_provider_get("sglang")->cancel, SG_LLM_CANCEL_ENDPOINT);
  SG_CHECK_EQ_INT(sg_llm_provider_get("llamacpp-python")->cancel, SG_LLM_CANCEL_NONE);
  SG_CHECK(sg_llm_provider_get("llamacpp-python")->request_id_header);
  SG_CHECK(!sg_llm_provider_get("llamacpp")->request_id_header);
  for (int k = 0; k < SG_LLM_PROVIDER__COUNT; k++) {
    const sg_llm_provider *p = sg_llm_provider_by_kind((sg_llm_provider_kind)k);
    SG_CHECK(p->server && p->server[0]);
    SG_CHECK(p->max_tokens_field && p->name);
    SG_CHECK((p->cancel == SG_LLM_CANCEL_ENDPOINT) == p->abort_endpoint);
  }
}

SG_TEST_MAIN(SG_TEST(test_provider_lookup), SG_TEST(test_provider_basic_chat_body),
             SG_TEST(test_provider_openai_uses_max_completion_tokens),
             SG_TEST(test_provider_thinking_off),
             SG_TEST(test_provider_prefix_continue_final_message),
             SG_TEST(test_provider_prefix_deepseek), SG_TEST(test_provider_prefix_rules),
             SG_TEST(test_provider_completions_token_prompt),
             SG_TEST(test_provider_token_ids_only_where_supported),
             SG_TEST(test_provider_request_id_fields),
             SG_TEST(test_provider_extra_json_merged_last),
             SG_TEST(test_provider_invalid_requests), SG_TEST(test_provider_urls),
             SG_TEST(test_provider_abort_body),
             SG_TEST(test_fork_token_prompt_concatenates_exactly),
             SG_TEST(test_provider_token_limit_field_per_server),
             SG_TEST(test_request_uuid_shape_and_stability),
             SG_TEST(test_provider_cancel_and_header_policy))
