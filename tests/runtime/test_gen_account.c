/* test_gen_account.c: the run's account of its generations: causes said
 * once, a run with nothing generated named as such, estimates marked. */
#include "common/sg_file.h"
#include "run/sg_gen_account.h"
#include "store/sg_store.h"
#include "sg_test.h"

#include <stdlib.h>

#include <string.h>

static void test_cause_drops_what_differs_per_request(void) {
  char c[SG_GEN_CAUSE_BYTES];
  sg_gen_cause("connection failed: Couldn't connect to server (request specgen-1-w0-g1-1)",
               c, sizeof c);
  SG_CHECK_STR_EQ(c, "connection failed: Couldn't connect to server");
  sg_gen_cause("deadline of 5 s passed (request sg-ab-1, 2 attempts, 0 chunks)", c, sizeof c);
  SG_CHECK_STR_EQ(c, "deadline of 5 s passed");
  sg_gen_cause("HTTP 500: boom (no retry: waiting 3 s would pass the deadline)", c, sizeof c);
  SG_CHECK_STR_EQ(c, "HTTP 500: boom");
  sg_gen_cause("stream ended before the generation finished (connection closed, after 3 "
               "chunks, request x (nested) y)", c, sizeof c);
  SG_CHECK_STR_EQ(c, "stream ended before the generation finished (connection closed, "
                     "after 3 chunks, request x (nested) y)");
  sg_gen_cause("server error in stream: bad (type x) (request r-1)", c, sizeof c);
  SG_CHECK_STR_EQ(c, "server error in stream: bad (type x)");
  sg_gen_cause("HTTP 400: (empty body)", c, sizeof c);
  SG_CHECK_STR_EQ(c, "HTTP 400: (empty body)");
  sg_gen_cause(NULL, c, sizeof c);
  SG_CHECK_STR_EQ(c, "(no message)");
  sg_gen_cause("", c, sizeof c);
  SG_CHECK_STR_EQ(c, "(no message)");
  /* Unbalanced and capped inputs stay in bounds. */
  sg_gen_cause("x (request never closed", c, sizeof c);
  SG_CHECK_STR_EQ(c, "x");
  char small[8];
  sg_gen_cause("a long message that does not fit", small, sizeof small);
  SG_CHECK_STR_EQ(small, "a long"); /* capped, then trimmed */
}

/* Why the server failed a main sent again: the same words for every
 * request failing the same way. */
static void test_endpoint_cause_in_few_words(void) {
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_ECONN, 0), "the connection broke");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_EPARSE, 200), "an unreadable reply");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_EPROTO, 0), "an unreadable reply");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_EHTTP, 502), "HTTP 5xx");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_EHTTP, 429), "HTTP 429");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_EHTTP, 200), "an error inside the stream");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_EHTTP, 404), "another failure");
  SG_CHECK_STR_EQ(sg_gen_endpoint_cause(SG_ETIMEDOUT, 0), "another failure");
}

/* The client's own messages, grouped: the same cause from different
 * requests is one cause. */
static void test_failures_grouped_and_said_once(void) {
  sg_gen_account a;
  sg_gen_account_init(&a);
  const char *c1 = sg_gen_account_failed(&a, "connection failed: refused (request a-1)");
  SG_CHECK(c1 != NULL);
  SG_CHECK_STR_EQ(c1, "connection failed: refused");
  SG_CHECK(sg_gen_account_failed(&a, "connection failed: refused (request a-2)") == NULL);
  SG_CHECK(sg_gen_account_failed(&a, "HTTP 400: (empty body)") != NULL);
  SG_CHECK(sg_gen_account_failed(&a, "HTTP 400: (empty body)") == NULL);
  SG_CHECK_EQ_INT(a.failed, 4);
  SG_CHECK_EQ_INT(a.ncauses, 2);
  SG_CHECK_EQ_INT(a.causes[0].count, 2);
  char msg[512];
  SG_CHECK(sg_gen_account_nothing_generated(&a, msg, sizeof msg));
  SG_CHECK_CONTAINS(msg, "no generation succeeded (4 failed)");
  SG_CHECK_CONTAINS(msg, "connection failed: refused");
  sg_gen_account_completed(&a);
  SG_CHECK(!sg_gen_account_nothing_generated(&a, msg, sizeof msg));
  json_t *j = sg_gen_account_json(&a);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "completed")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "failed")), 4);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(j, "causes")), 2);
  json_decref(j);
}

static void test_nothing_failed_is_not_nothing_generated(void) {
  sg_gen_account a;
  sg_gen_account_init(&a);
  char msg[64];
  SG_CHECK(!sg_gen_account_nothing_generated(&a, msg, sizeof msg));
}

static void test_causes_bounded(void) {
  sg_gen_account a;
  sg_gen_account_init(&a);
  for (int i = 0; i < SG_GEN_CAUSES_MAX + 10; i++) {
    char m[32];
    snprintf(m, sizeof m, "HTTP 5%02d: x", i);
    const char *c = sg_gen_account_failed(&a, m);
    SG_CHECK((c != NULL) == (i < SG_GEN_CAUSES_MAX));
  }
  SG_CHECK_EQ_INT(a.ncauses, SG_GEN_CAUSES_MAX);
  SG_CHECK_EQ_INT(a.other_failures, 10);
  json_t *j = sg_gen_account_json(&a);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(j, "causes")), SG_GEN_CAUSES_MAX + 1);
  json_decref(j);
}

static void test_tokens_measured_or_marked_estimated(void) {
  sg_gen_account a;
  sg_gen_account_init(&a);
  sg_llm_usage u;
  sg_llm_usage_init(&u);
  /* No usage at all, output came: both estimated. */
  sg_gen_tokens t = sg_gen_tokens_of(&a, &u, false, 12, 401);
  SG_CHECK(t.prompt_estimated && t.completion_estimated);
  SG_CHECK_EQ_INT(t.prompt, 101);
  SG_CHECK_EQ_INT(t.completion, 12);
  /* No usage and no output (refused): nothing read, nothing estimated. */
  t = sg_gen_tokens_of(&a, NULL, false, 0, 400);
  SG_CHECK_EQ_INT(t.prompt, 0);
  SG_CHECK(!t.prompt_estimated);
  SG_CHECK(t.completion_estimated);
  /* The server's usage: measured. */
  u.present = true;
  u.prompt_tokens = 50;
  u.completion_tokens = 7;
  u.cached_tokens = 32;
  t = sg_gen_tokens_of(&a, &u, false, 9, 400);
  SG_CHECK(!t.prompt_estimated && !t.completion_estimated);
  SG_CHECK_EQ_INT(t.prompt, 50);
  SG_CHECK_EQ_INT(t.completion, 7);
  SG_CHECK_EQ_INT(t.cached, 32);
  /* A completion count the client made up: estimated, the prompt not. */
  t = sg_gen_tokens_of(&a, &u, true, 9, 400);
  SG_CHECK(!t.prompt_estimated && t.completion_estimated);
  SG_CHECK_EQ_INT(t.completion, 9);
  /* A usage object without a prompt count. */
  u.prompt_tokens = -1;
  t = sg_gen_tokens_of(&a, &u, false, 3, 8);
  SG_CHECK(t.prompt_estimated);
  SG_CHECK_EQ_INT(t.prompt, 2);
  SG_CHECK_EQ_INT(a.prompt_estimated, 2);
  SG_CHECK_EQ_INT(a.completion_estimated, 3);
}

static void test_iteration_without_kernel_is_named_so(void) {
  SG_CHECK_STR_EQ(sg_gen_iteration_reason("fallback", 0), "no kernel");
  SG_CHECK_STR_EQ(sg_gen_iteration_reason("fallback", 1), "fallback");
  SG_CHECK_STR_EQ(sg_gen_iteration_reason("early", 0), "early");
  SG_CHECK_STR_EQ(sg_gen_iteration_reason("budget_wall", 0), "budget_wall");
  SG_CHECK(sg_gen_iteration_reason(NULL, 0) == NULL);
}

static void test_no_reasoning_warned_once(void) {
  sg_gen_account a;
  sg_gen_account_init(&a);
  SG_CHECK(sg_gen_account_no_reasoning(&a));
  SG_CHECK(!sg_gen_account_no_reasoning(&a));
  SG_CHECK(!sg_gen_account_no_reasoning(&a));
  SG_CHECK_EQ_INT(a.mains_without_reasoning, 3);
}

static void test_cancel_warning_names_the_server(void) {
  char w[512];
  sg_gen_cancel_warning("llama-cpp-python's server", "llamacpp-python", w, sizeof w);
  SG_CHECK_CONTAINS(w, "llama-cpp-python's server");
  SG_CHECK_CONTAINS(w, "profile llamacpp-python");
}

/* The store keeps which counts are estimates (since schema 2), and the
 * summary says how much of each sum is estimated. */
static void test_store_marks_estimated_counts(void) {
  char tmpl[] = "/tmp/sg-test-account-XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  sg_err err;
  sg_err_clear(&err);
  sg_store *s = NULL;
  SG_CHECK_OK(sg_store_open(tmpl, &s, &err), err);
  SG_CHECK(sg_store_schema_version(s) >= 2);
  json_t *cfg = json_pack("{s:s}", "search", "refine");
  int64_t run, wf, it, g1, g2;
  SG_CHECK_OK(sg_store_run_begin(s, cfg, 1, 1000000, &run, &err), err);
  json_decref(cfg);
  sg_store_workflow w = {.task = "hinge_loss", .budget_iterations = 1, .started_us = 1000000};
  SG_CHECK_OK(sg_store_workflow_add(s, &w, &wf, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, wf, 1, 1000000, &it, &err), err);
  sg_store_generation g = {.iteration_id = it, .kind = SG_STORE_GEN_MAIN,
                           .prompt = "p", .started_us = 1000000};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &g1, &err), err);
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &g2, &err), err);
  /* g1: measured by the server; g2: no usage, both counts estimated. */
  SG_CHECK_OK(sg_store_generation_end(s, g1, 100, 40, 0, "stop", SG_STORE_GEN_COMPLETED,
                                      2000000, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, g2, 25, 7, 0, "stop", SG_STORE_GEN_COMPLETED,
                                      2000000, &err), err);
  SG_CHECK_OK(sg_store_generation_estimated(s, g2, true, true, &err), err);
  SG_CHECK_EQ_INT(sg_store_generation_estimated(s, 999, true, false, &err), SG_ESTATE);
  json_t *sum = NULL;
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  json_t *t = json_object_get(sum, "tokens");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(t, "prompt")), 125);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(t, "prompt_estimated")), 25);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(t, "completion")), 47);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(t, "completion_estimated")), 7);
  json_decref(sum);
  sg_store_close(s);
  SG_CHECK_OK(sg_rm_rf(tmpl, &err), err);
}

/* What the run sends again and counts toward --llm-outage: the server's
 * failures, not the request's (4xx) or the model's (a deadline). */
static void test_endpoint_failures_told_from_the_request_and_model(void) {
  static const struct {
    int code;
    long status;
    bool endpoint;
  } cases[] = {
      {SG_ECONN, 0, true},       /* refused, reset, cut mid-stream */
      {SG_EHTTP, 500, true},     {SG_EHTTP, 503, true}, {SG_EHTTP, 429, true},
      {SG_EHTTP, 200, true},     /* an error object inside the stream */
      {SG_EPROTO, 200, true},    /* a JSON body, not an event stream */
      {SG_EPARSE, 200, true},    /* a chunk that is not JSON */
      {SG_EHTTP, 400, false},    {SG_EHTTP, 401, false}, {SG_EHTTP, 404, false},
      {SG_ETIMEDOUT, 0, false},  {SG_EINVAL, 0, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    SG_CHECK_MSG(sg_gen_endpoint_failure(cases[i].code, cases[i].status) == cases[i].endpoint,
                 "case %zu: %s, HTTP %ld", i, sg_strerror(cases[i].code), cases[i].status);
}

SG_TEST_MAIN(SG_TEST(test_cause_drops_what_differs_per_request),
             SG_TEST(test_endpoint_cause_in_few_words),
             SG_TEST(test_endpoint_failures_told_from_the_request_and_model),
             SG_TEST(test_failures_grouped_and_said_once),
             SG_TEST(test_nothing_failed_is_not_nothing_generated),
             SG_TEST(test_causes_bounded), SG_TEST(test_tokens_measured_or_marked_estimated),
             SG_TEST(test_iteration_without_kernel_is_named_so),
             SG_TEST(test_no_reasoning_warned_once),
             SG_TEST(test_cancel_warning_names_the_server),
             SG_TEST(test_store_marks_estimated_counts))
