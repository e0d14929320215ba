/* test_llm_chunk.c: the OpenAI chunk interpreter on every shape servers send. */
#include "llm/sg_llm_chunk.h"
#include "sg_test.h"

#include <stdlib.h>
#include <string.h>

/* Parses s from an exact-size heap copy (an over-read crashes under ASan). */
static int parse(const char *s, sg_llm_chunk *c, sg_err *err) {
  size_t n = strlen(s);
  char *copy = malloc(n ? n : 1);
  memcpy(copy, s, n);
  sg_err_clear(err);
  int rc = sg_llm_chunk_parse(copy, n, c, err);
  free(copy);
  return rc;
}

static void test_chunk_done(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("[DONE]", &c, &err), err);
  SG_CHECK(c.done);
  sg_llm_chunk_free(&c);
}

static void test_chunk_reasoning_content_field(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                    "\"reasoning_content\":\"Let me tile\"},\"finish_reason\":null}]}",
                    &c, &err), err);
  SG_CHECK(!c.done);
  SG_CHECK_EQ_INT(c.n_choices, 1);
  SG_CHECK_EQ_INT(c.reasoning_len, 11);
  SG_CHECK(memcmp(c.reasoning, "Let me tile", 11) == 0);
  SG_CHECK_STR_EQ(c.reasoning_field, "reasoning_content");
  SG_CHECK(c.content == NULL);
  SG_CHECK(c.finish_reason == NULL);
  SG_CHECK(!c.usage.present);
  sg_llm_chunk_free(&c);
}

static void test_chunk_reasoning_field_vllm(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"delta\":{\"reasoning\":\"hm\",\"content\":null}}]}",
                    &c, &err), err);
  SG_CHECK_STR_EQ(c.reasoning, "hm");
  SG_CHECK_STR_EQ(c.reasoning_field, "reasoning");
  SG_CHECK(c.content == NULL);
  sg_llm_chunk_free(&c);
}

static void test_chunk_chat_content_and_finish(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"delta\":{\"content\":\"__global__\"},"
                    "\"finish_reason\":\"length\"}]}", &c, &err), err);
  SG_CHECK_STR_EQ(c.content, "__global__");
  SG_CHECK_STR_EQ(c.finish_reason, "length");
  SG_CHECK(c.reasoning == NULL && c.reasoning_field == NULL);
  sg_llm_chunk_free(&c);
}

static void test_chunk_abort_finish_reason(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"delta\":{},\"finish_reason\":\"abort\"}]}", &c,
                    &err), err);
  SG_CHECK_STR_EQ(c.finish_reason, "abort");
  sg_llm_chunk_free(&c);
}

static void test_chunk_completions_text(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
                    "\"text\":\" int i\",\"finish_reason\":null}]}", &c, &err), err);
  SG_CHECK_STR_EQ(c.content, " int i");
  sg_llm_chunk_free(&c);
}

static void test_chunk_usage_openai_cached_tokens(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[],\"usage\":{\"prompt_tokens\":1200,"
                    "\"completion_tokens\":300,\"total_tokens\":1500,"
                    "\"prompt_tokens_details\":{\"cached_tokens\":1024},"
                    "\"completion_tokens_details\":{\"reasoning_tokens\":250}}}",
                    &c, &err), err);
  SG_CHECK_EQ_INT(c.n_choices, 0);
  SG_CHECK(c.usage.present);
  SG_CHECK_EQ_INT(c.usage.prompt_tokens, 1200);
  SG_CHECK_EQ_INT(c.usage.completion_tokens, 300);
  SG_CHECK_EQ_INT(c.usage.total_tokens, 1500);
  SG_CHECK_EQ_INT(c.usage.cached_tokens, 1024);
  SG_CHECK_EQ_INT(c.usage.reasoning_tokens, 250);
  sg_llm_chunk_free(&c);
}

static void test_chunk_usage_deepseek_cache_hit(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"delta\":{\"content\":\"\"},\"finish_reason\":"
                    "\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":"
                    "5,\"prompt_cache_hit_tokens\":8,\"prompt_cache_miss_tokens\":2}}",
                    &c, &err), err);
  SG_CHECK_EQ_INT(c.usage.cached_tokens, 8);
  SG_CHECK_EQ_INT(c.usage.reasoning_tokens, -1);
  SG_CHECK_EQ_INT(c.content_len, 0);
  sg_llm_chunk_free(&c);
}

static void test_chunk_usage_null_is_absent(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}",
                    &c, &err), err);
  SG_CHECK(!c.usage.present);
  SG_CHECK_EQ_INT(c.usage.completion_tokens, -1);
  sg_llm_chunk_free(&c);
}

static void test_chunk_token_ids_chat_vllm(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"prompt_token_ids\":[1,2,3],\"choices\":[{\"delta\":"
                    "{\"content\":\"a\"},\"token_ids\":[77]}]}", &c, &err), err);
  SG_CHECK_EQ_INT(c.n_prompt_token_ids, 3);
  SG_CHECK_EQ_INT(c.prompt_token_ids[2], 3);
  SG_CHECK_EQ_INT(c.n_token_ids, 1);
  SG_CHECK_EQ_INT(c.token_ids[0], 77);
  sg_llm_chunk_free(&c);
}

static void test_chunk_token_ids_completions_per_choice(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"choices\":[{\"text\":\"a\",\"prompt_token_ids\":[5,6],"
                    "\"token_ids\":[9,10]}]}", &c, &err), err);
  SG_CHECK_EQ_INT(c.n_prompt_token_ids, 2);
  SG_CHECK_EQ_INT(c.n_token_ids, 2);
  SG_CHECK_EQ_INT(c.token_ids[1], 10);
  sg_llm_chunk_free(&c);
}

static void test_chunk_bad_token_id_is_error(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_EQ_INT(parse("{\"choices\":[{\"text\":\"a\",\"token_ids\":[1,\"x\"]}]}",
                        &c, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "choices[0].token_ids[1] is not a token id");
  SG_CHECK_EQ_INT(parse("{\"choices\":[{\"text\":\"a\",\"token_ids\":[-1]}]}", &c,
                        &err), SG_EPARSE);
}

static void test_chunk_error_object_forms(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_EQ_INT(parse("{\"error\":{\"message\":\"KV cache full\",\"type\":"
                        "\"server_error\",\"code\":500}}", &c, &err), SG_EHTTP);
  SG_CHECK_CONTAINS(err.msg, "server error in stream: KV cache full (type server_error)");
  SG_CHECK_EQ_INT(parse("{\"error\":\"overloaded\"}", &c, &err), SG_EHTTP);
  SG_CHECK_CONTAINS(err.msg, "overloaded");
  SG_CHECK_EQ_INT(parse("{\"object\":\"error\",\"message\":\"bad rid\",\"type\":"
                        "\"BadRequestError\",\"code\":400}", &c, &err), SG_EHTTP);
  SG_CHECK_CONTAINS(err.msg, "bad rid");
  /* "error": null is no error. */
  SG_CHECK_OK(parse("{\"error\":null,\"choices\":[]}", &c, &err), err);
  sg_llm_chunk_free(&c);
}

static void test_chunk_malformed_json_quotes_data(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_EQ_INT(parse("{\"choices\": [{\"delta\": {\"content\": \n", &c, &err),
                  SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "malformed chunk");
  SG_CHECK_CONTAINS(err.msg, "(data: '{\"choices\"");
  SG_CHECK_EQ_INT(parse("[1,2]", &c, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "not a JSON object");
  SG_CHECK_EQ_INT(parse("", &c, &err), SG_EPARSE);
}

static void test_chunk_wrong_types_name_the_field(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_EQ_INT(parse("{\"choices\":[{\"delta\":{\"content\":5}}]}", &c, &err),
                  SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "choices[0].delta.content is not a string");
  SG_CHECK_EQ_INT(parse("{\"choices\":{}}", &c, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "choices is not an array");
  SG_CHECK_EQ_INT(parse("{\"choices\":[7]}", &c, &err), SG_EPARSE);
  SG_CHECK_EQ_INT(parse("{\"choices\":[{\"delta\":[]}]}", &c, &err), SG_EPARSE);
  SG_CHECK_EQ_INT(parse("{\"usage\":3}", &c, &err), SG_EPARSE);
  SG_CHECK_EQ_INT(parse("{\"choices\":[{\"finish_reason\":1}]}", &c, &err), SG_EPARSE);
}

static void test_chunk_empty_choices_and_role_only(void) {
  sg_llm_chunk c;
  sg_err err;
  SG_CHECK_OK(parse("{\"id\":\"x\",\"choices\":[]}", &c, &err), err);
  SG_CHECK_EQ_INT(c.n_choices, 0);
  sg_llm_chunk_free(&c);
  SG_CHECK_OK(parse("{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
                    &c, &err), err);
  SG_CHECK_EQ_INT(c.content_len, 0);
  sg_llm_chunk_free(&c);
}

static void test_error_body_forms(void) {
  sg_err err;
  const char *b1 = "{\"error\":{\"message\":\"model not found\",\"type\":\"NotFound\"}}";
  SG_CHECK_EQ_INT(sg_llm_error_from_body(404, b1, strlen(b1), SG_EHTTP, &err), SG_EHTTP);
  SG_CHECK_CONTAINS(err.msg, "HTTP 404: model not found");
  const char *b2 = "{\"object\":\"error\",\"message\":\"max_tokens too large\"}";
  sg_llm_error_from_body(400, b2, strlen(b2), SG_EHTTP, &err);
  SG_CHECK_CONTAINS(err.msg, "HTTP 400: max_tokens too large");
  const char *b3 = "{\"detail\":\"Not Found\"}";
  sg_llm_error_from_body(404, b3, strlen(b3), SG_EHTTP, &err);
  SG_CHECK_CONTAINS(err.msg, "HTTP 404: Not Found");
  const char *b4 = "upstream connect error\nmore";
  sg_llm_error_from_body(502, b4, strlen(b4), SG_EHTTP, &err);
  SG_CHECK_STR_EQ(err.msg, "HTTP 502: upstream connect error");
  sg_llm_error_from_body(503, "", 0, SG_EHTTP, &err);
  SG_CHECK_STR_EQ(err.msg, "HTTP 503: (empty body)");
  /* A huge body is quoted, capped. */
  char big[5000];
  memset(big, 'z', sizeof big);
  sg_llm_error_from_body(500, big, sizeof big, SG_EHTTP, &err);
  SG_CHECK(strlen(err.msg) < 400);
}

SG_TEST_MAIN(SG_TEST(test_chunk_done), SG_TEST(test_chunk_reasoning_content_field),
             SG_TEST(test_chunk_reasoning_field_vllm),
             SG_TEST(test_chunk_chat_content_and_finish),
             SG_TEST(test_chunk_abort_finish_reason),
             SG_TEST(test_chunk_completions_text),
             SG_TEST(test_chunk_usage_openai_cached_tokens),
             SG_TEST(test_chunk_usage_deepseek_cache_hit),
             SG_TEST(test_chunk_usage_null_is_absent),
             SG_TEST(test_chunk_token_ids_chat_vllm),
             SG_TEST(test_chunk_token_ids_completions_per_choice),
             SG_TEST(test_chunk_bad_token_id_is_error),
             SG_TEST(test_chunk_error_object_forms),
             SG_TEST(test_chunk_malformed_json_quotes_data),
             SG_TEST(test_chunk_wrong_types_name_the_field),
             SG_TEST(test_chunk_empty_choices_and_role_only),
             SG_TEST(test_error_body_forms))
