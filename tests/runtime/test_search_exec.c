/* test_search_exec.c: the exec:CMD search (docs/search.md).
 *
 * Built twice. SG_EXEC_PART=1, the unit part: the messages alone, pure
 * (hello both ways, every kernel field, which kernels a "next" carries, plans
 * well formed and malformed in every way the checks know, the timeout
 * variable). SG_EXEC_PART=2, the integration part: real processes started
 * through sg_search_new, so the "exec:" split at the first ':' is exercised
 * too: the Python example over a hand-built history, and shell commands that
 * answer in pieces, answer garbage, exit, get killed, hang, close their
 * input, speak another protocol version or report an error. Each process test makes itself a
 * child subreaper, so whatever the search's process started is handed to
 * the test when its parent dies, and the test can check by pid that nothing
 * survives free (or the death of specgen itself).
 */
#include "common/sg_alloc.h"
#include "core/sg_search.h"
#include "pool/sg_jsonl.h"
#include "run/sg_search_exec.h"
#include "sg_test.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#define CHECK_RC(expr, code, needle)                                       \
  do {                                                                     \
    sg_err_clear(&err);                                                    \
    int rc_ = (expr);                                                      \
    SG_CHECK_MSG(rc_ == (code), "%s: rc %d (%s), expected %d; msg: %s",    \
                 #expr, rc_, sg_strerror(rc_), (code), err.msg);           \
    if ((code) < 0)                                                        \
      SG_CHECK_CONTAINS(err.msg, (needle));                                \
  } while (0)

/* A history over three iterations:
 *   1 it0 main  found, ok, profiled 1.5 with a profile   (best)
 *   2 it0 spec  no code
 *   3 it0 main  found, compile_error with a message
 *   4 it1 main  found, ok, profiled 0.8, no profile text
 *   5 it1 spec  found, dropped before validation
 *   6 it2 main  found, not validated yet */
static void make_history(sg_history *h) {
  sg_history_init(h);
  sg_history_add(h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_FOUND, "k1 {}", 5);
  sg_history_validated(h, 1, SG_EVAL_OK, NAN, NULL);
  sg_history_profiled(h, 1, 1.5, "dram 80%");
  sg_history_add(h, 0, SG_GEN_SPEC, 2, 1234, SG_EXTRACT_NONE, NULL, 0);
  sg_history_add(h, 0, SG_GEN_MAIN, 3, 0, SG_EXTRACT_FOUND, "k3", 2);
  sg_history_validated(h, 3, SG_EVAL_COMPILE_ERROR, NAN, "line 4: error");
  sg_history_add(h, 1, SG_GEN_MAIN, 4, 0, SG_EXTRACT_FOUND, "k4", 2);
  sg_history_validated(h, 4, SG_EVAL_OK, NAN, NULL);
  sg_history_profiled(h, 4, 0.8, NULL);
  sg_kernel *k5 = sg_history_add(h, 1, SG_GEN_SPEC, 5, 77, SG_EXTRACT_FOUND,
                                 "k5", 2);
  k5->dropped = true;
  sg_history_add(h, 2, SG_GEN_MAIN, 6, 0, SG_EXTRACT_FOUND, "k6", 2);
}

#if SG_EXEC_PART == 1

/* ---- unit part ------------------------------------------------------------ */

static void test_hello_json_has_version_seed_and_limits(void) {
  json_t *j = sg_search_exec_hello_json(42);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "type")), "hello");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "protocol")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "seed")), 42);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "max_prompts")),
                  SG_SEARCH_MAX_MAINS);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "max_items")),
                  SG_PROMPT_MAX_ITEMS);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "max_inspirations")),
                  SG_PROMPT_MAX_INSPIRATIONS);
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  SG_CHECK(len == strlen(line) && line[len - 1] == '\n');
  SG_CHECK(memchr(line, '\n', len - 1) == NULL);
  free(line);
  json_decref(j);
  /* a seed above 2^63 still gives a non-negative integer */
  j = sg_search_exec_hello_json(UINT64_MAX);
  SG_CHECK(json_integer_value(json_object_get(j, "seed")) >= 0);
  json_decref(j);
}

static void test_hello_parse_checks_type_and_version(void) {
  sg_err err;
  const char *ok = "{\"type\":\"hello\",\"protocol\":1,\"name\":\"x\"}";
  CHECK_RC(sg_search_exec_hello_parse(ok, strlen(ok), 1, &err), 0, "");
  static const struct {
    const char *line;
    int code;
    const char *needle;
  } bad[] = {
      {"{\"type\":\"hello\",\"protocol\":2}", SG_EPROTO,
       "line 1: field \"protocol\": the search speaks protocol 2, specgen "
       "speaks 1"},
      {"{\"type\":\"hello\"}", SG_EPARSE, "field \"protocol\": missing"},
      {"{\"type\":\"hello\",\"protocol\":\"1\"}", SG_EPARSE,
       "not an integer"},
      {"hello", SG_EPARSE, "line 1: not JSON"},
      {"", SG_EPARSE, "line 1: not JSON"},
      {"[1]", SG_EPARSE, "not a JSON object"},
      {"{\"protocol\":1}", SG_EPARSE, "field \"type\": missing"},
      {"{\"type\":\"plan\",\"protocol\":1}", SG_EPARSE,
       "expected a hello, got type \"plan\""},
      {"{\"type\":\"error\",\"message\":\"no numpy\"}", SG_ECHILD,
       "the search reported an error: no numpy"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_RC(sg_search_exec_hello_parse(bad[i].line, strlen(bad[i].line), 1,
                                        &err),
             bad[i].code, bad[i].needle);
}

static const char *sfield(json_t *k, const char *name) {
  json_t *v = json_object_get(k, name);
  SG_CHECK_MSG(v != NULL, "field %s missing", name);
  return json_is_null(v) ? NULL : json_string_value(v);
}

static void test_kernel_json_every_field(void) {
  sg_history h;
  make_history(&h);
  json_t *k = sg_search_exec_kernel_json(sg_history_get(&h, 1));
  SG_CHECK_EQ_INT(json_object_size(k), 15);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k, "id")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k, "iteration")), 0);
  SG_CHECK_STR_EQ(sfield(k, "origin"), "main");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k, "gen")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k, "prefix_len")), 0);
  SG_CHECK(json_is_false(json_object_get(k, "answer_at_cap")));
  SG_CHECK_STR_EQ(sfield(k, "extract"), "found");
  SG_CHECK_STR_EQ(sfield(k, "source"), "k1 {}");
  SG_CHECK(json_is_true(json_object_get(k, "validated")));
  SG_CHECK_STR_EQ(sfield(k, "validate_status"), "ok");
  SG_CHECK(sfield(k, "validate_message") == NULL);
  SG_CHECK(json_is_true(json_object_get(k, "profiled")));
  SG_CHECK(json_real_value(json_object_get(k, "speedup")) == 1.5);
  SG_CHECK_STR_EQ(sfield(k, "profile_text"), "dram 80%");
  SG_CHECK(json_is_false(json_object_get(k, "dropped")));
  json_decref(k);

  h.v[1].answer = true; /* the answer at its main's length cap */
  k = sg_search_exec_kernel_json(sg_history_get(&h, 2));
  SG_CHECK_STR_EQ(sfield(k, "origin"), "spec");
  SG_CHECK(json_is_true(json_object_get(k, "answer_at_cap")));
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k, "prefix_len")), 1234);
  SG_CHECK_STR_EQ(sfield(k, "extract"), "none");
  SG_CHECK(json_is_null(json_object_get(k, "source")));
  SG_CHECK(json_is_false(json_object_get(k, "validated")));
  SG_CHECK(json_is_null(json_object_get(k, "validate_status")));
  SG_CHECK(json_is_null(json_object_get(k, "speedup")));
  SG_CHECK(json_is_null(json_object_get(k, "profile_text")));
  json_decref(k);

  k = sg_search_exec_kernel_json(sg_history_get(&h, 3));
  SG_CHECK_STR_EQ(sfield(k, "validate_status"), "compile_error");
  SG_CHECK_STR_EQ(sfield(k, "validate_message"), "line 4: error");
  SG_CHECK(json_is_false(json_object_get(k, "profiled")));
  json_decref(k);

  k = sg_search_exec_kernel_json(sg_history_get(&h, 5));
  SG_CHECK(json_is_true(json_object_get(k, "dropped")));
  json_decref(k);

  /* text that is not UTF-8 still makes a valid JSON string */
  sg_history_add(&h, 3, SG_GEN_MAIN, 7, 0, SG_EXTRACT_FOUND, "a\xff\xfe", 3);
  k = sg_search_exec_kernel_json(sg_history_get(&h, 7));
  SG_CHECK_STR_EQ(sfield(k, "source"), "a??");
  json_decref(k);
  sg_history_free(&h);
}

static size_t ids_of(json_t *next, uint64_t *ids, size_t max) {
  json_t *ks = json_object_get(next, "kernels");
  SG_CHECK(json_is_array(ks));
  size_t n = json_array_size(ks);
  SG_CHECK(n <= max);
  for (size_t i = 0; i < n; i++)
    ids[i] = (uint64_t)json_integer_value(
        json_object_get(json_array_get(ks, i), "id"));
  return n;
}

static void test_next_sends_each_kernel_once_after_its_iteration(void) {
  sg_history h;
  sg_history_init(&h);
  size_t sent = 0;
  uint64_t ids[8];
  json_t *j = sg_search_exec_next_json(&h, 0, &sent);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "type")), "next");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "iteration")), 0);
  SG_CHECK_EQ_INT(ids_of(j, ids, 8), 0);
  SG_CHECK(json_is_null(json_object_get(j, "best_id")));
  json_decref(j);
  sg_history_free(&h);

  make_history(&h);
  sent = 0;
  j = sg_search_exec_next_json(&h, 1, &sent);
  SG_CHECK_EQ_INT(ids_of(j, ids, 8), 3);
  SG_CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 3);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "best_id")), 1);
  SG_CHECK_EQ_INT(sent, 3);
  json_decref(j);
  /* iteration 2: only what iteration 1 made; kernel 6 is iteration 2's */
  j = sg_search_exec_next_json(&h, 2, &sent);
  SG_CHECK_EQ_INT(ids_of(j, ids, 8), 2);
  SG_CHECK(ids[0] == 4 && ids[1] == 5);
  json_decref(j);
  j = sg_search_exec_next_json(&h, 3, &sent);
  SG_CHECK_EQ_INT(ids_of(j, ids, 8), 1);
  SG_CHECK(ids[0] == 6);
  json_decref(j);
  j = sg_search_exec_next_json(&h, 4, &sent);
  SG_CHECK_EQ_INT(ids_of(j, ids, 8), 0);
  SG_CHECK_EQ_INT(sent, 6);
  json_decref(j);
  sg_history_free(&h);
}

static void test_plan_parse_every_field(void) {
  sg_history h;
  make_history(&h);
  sg_err err;
  sg_search_plan plan;
  const char *line =
      "{\"type\":\"plan\",\"note\":\"unknown top-level keys are ignored\","
      "\"prompts\":["
      "{\"base_kernel\":1,\"items\":[{\"kind\":\"kernel\",\"kernel\":1},"
      "{\"kind\":\"profile\",\"kernel\":1},{\"kind\":\"failure\",\"kernel\":3}],"
      "\"inspirations\":[4,1]},"
      "{\"base_kernel\":0},"
      "{\"base_kernel\":null,\"items\":[{\"kind\":\"failure\",\"kernel\":2}]},"
      "{}]}";
  /* the line sits in a buffer followed by bytes that are not part of it */
  size_t len = strlen(line);
  char *buf = sg_malloc(len + 8);
  memcpy(buf, line, len);
  memcpy(buf + len, "garbage!", 8);
  CHECK_RC(sg_search_exec_plan_parse(buf, len, 2, &h, &plan, &err), 0, "");
  free(buf);
  SG_CHECK_EQ_INT(plan.n, 4);
  const sg_prompt *p = &plan.prompts[0];
  SG_CHECK_EQ_INT(p->base_kernel, 1);
  /* inspiration 4 was not a kernel item: added; 1 already was */
  SG_CHECK_EQ_INT(p->n_items, 4);
  SG_CHECK(p->items[0].kind == SG_ITEM_KERNEL && p->items[0].kernel == 1);
  SG_CHECK(p->items[1].kind == SG_ITEM_PROFILE && p->items[1].kernel == 1);
  SG_CHECK(p->items[2].kind == SG_ITEM_FAILURE && p->items[2].kernel == 3);
  SG_CHECK(p->items[3].kind == SG_ITEM_KERNEL && p->items[3].kernel == 4);
  SG_CHECK_EQ_INT(p->n_inspirations, 2);
  SG_CHECK(p->inspirations[0] == 4 && p->inspirations[1] == 1);
  SG_CHECK(plan.prompts[1].base_kernel == 0 && plan.prompts[1].n_items == 0);
  SG_CHECK(plan.prompts[2].base_kernel == 0 && plan.prompts[2].n_items == 1);
  SG_CHECK(plan.prompts[3].base_kernel == 0 && plan.prompts[3].n_items == 0);

  /* the limits themselves are accepted */
  char big[8192];
  size_t off = (size_t)snprintf(big, sizeof big, "{\"type\":\"plan\",\"prompts\":[");
  for (int i = 0; i < SG_SEARCH_MAX_MAINS; i++) {
    off += (size_t)snprintf(big + off, sizeof big - off, "%s{\"items\":[",
                            i ? "," : "");
    for (int k = 0; k < SG_PROMPT_MAX_ITEMS; k++)
      off += (size_t)snprintf(big + off, sizeof big - off,
                              "%s{\"kind\":\"kernel\",\"kernel\":%d}",
                              k ? "," : "", 1 + k % 6);
    off += (size_t)snprintf(big + off, sizeof big - off,
                            "],\"inspirations\":[1,2,3,4,5,6,1,2]}");
  }
  snprintf(big + off, sizeof big - off, "]}");
  CHECK_RC(sg_search_exec_plan_parse(big, strlen(big), 1, &h, &plan, &err), 0,
           "");
  SG_CHECK_EQ_INT(plan.n, SG_SEARCH_MAX_MAINS);
  SG_CHECK_EQ_INT(plan.prompts[15].n_items, SG_PROMPT_MAX_ITEMS);
  SG_CHECK_EQ_INT(plan.prompts[15].n_inspirations, SG_PROMPT_MAX_INSPIRATIONS);
  sg_history_free(&h);
}

static void test_plan_parse_rejects_every_malformed_plan(void) {
  sg_history h;
  make_history(&h); /* ids 1..6 */
  sg_err err;
  sg_search_plan plan;
  char many_prompts[512], many_items[2048], many_insp[512], overflow[2048];
  size_t o = (size_t)snprintf(many_prompts, sizeof many_prompts,
                              "{\"type\":\"plan\",\"prompts\":[{}");
  for (int i = 1; i <= SG_SEARCH_MAX_MAINS; i++)
    o += (size_t)snprintf(many_prompts + o, sizeof many_prompts - o, ",{}");
  snprintf(many_prompts + o, sizeof many_prompts - o, "]}");
  o = (size_t)snprintf(many_items, sizeof many_items,
                       "{\"type\":\"plan\",\"prompts\":[{\"items\":[");
  for (int i = 0; i <= SG_PROMPT_MAX_ITEMS; i++)
    o += (size_t)snprintf(many_items + o, sizeof many_items - o,
                          "%s{\"kind\":\"kernel\",\"kernel\":1}", i ? "," : "");
  snprintf(many_items + o, sizeof many_items - o, "]}]}");
  snprintf(many_insp, sizeof many_insp,
           "{\"type\":\"plan\",\"prompts\":[{\"inspirations\":"
           "[1,2,3,4,5,6,1,2,3]}]}");
  /* 16 items, none a kernel item of 2: inspiration 2 would be the 17th */
  o = (size_t)snprintf(overflow, sizeof overflow,
                       "{\"type\":\"plan\",\"prompts\":[{\"items\":[");
  for (int i = 0; i < SG_PROMPT_MAX_ITEMS; i++)
    o += (size_t)snprintf(overflow + o, sizeof overflow - o,
                          "%s{\"kind\":\"failure\",\"kernel\":3}", i ? "," : "");
  snprintf(overflow + o, sizeof overflow - o, "],\"inspirations\":[2]}]}");

  static const char *const P = "{\"type\":\"plan\",\"prompts\":";
  struct {
    const char *body; /* after P, or the whole line when P is not wanted */
    bool whole;
    int code;
    const char *needle;
  } bad[] = {
      {"not json", true, SG_EPARSE, "line 3: not JSON"},
      {"{\"type\":\"plan\"", true, SG_EPARSE, "line 3: not JSON"},
      {"[]", true, SG_EPARSE, "line 3: not a JSON object"},
      {"{\"prompts\":[{}]}", true, SG_EPARSE, "field \"type\": missing"},
      {"{\"type\":7,\"prompts\":[{}]}", true, SG_EPARSE, "field \"type\""},
      {"{\"type\":\"hello\",\"protocol\":1}", true, SG_EPARSE,
       "expected a plan, got type \"hello\""},
      {"{\"type\":\"plan\",\"type\":\"plan\",\"prompts\":[{}]}", true,
       SG_EPARSE, "not JSON"},
      {"{\"type\":\"error\",\"message\":\"out of ideas\"}", true, SG_ECHILD,
       "line 3: the search reported an error: out of ideas"},
      {"{\"type\":\"error\"}", true, SG_ECHILD, "(no message)"},
      {"{\"type\":\"plan\"}", true, SG_EPARSE,
       "line 3: field \"prompts\": missing or not an array"},
      {"{}}", false, SG_EPARSE, "field \"prompts\": missing or not an array"},
      {"[]}", false, SG_ERANGE, "field \"prompts\": 0 prompts, expected 1 to 16"},
      {many_prompts, true, SG_ERANGE, "17 prompts, expected 1 to 16"},
      {"[7]}", false, SG_EPARSE, "field \"prompts[0]\": expected an object"},
      {"[{},{\"item\":[]}]}", false, SG_EPARSE,
       "field \"prompts[1]\": unknown key \"item\""},
      {"[{\"base_kernel\":\"1\"}]}", false, SG_EPARSE,
       "field \"prompts[0].base_kernel\": expected a kernel id"},
      {"[{\"base_kernel\":1.0}]}", false, SG_EPARSE,
       "field \"prompts[0].base_kernel\": expected a kernel id"},
      {"[{\"base_kernel\":-1}]}", false, SG_ERANGE,
       "field \"prompts[0].base_kernel\": kernel id -1: ids start at 1"},
      {"[{\"base_kernel\":7}]}", false, SG_ERANGE,
       "field \"prompts[0].base_kernel\": kernel 7 is not in the history"},
      {"[{\"items\":{}}]}", false, SG_EPARSE,
       "field \"prompts[0].items\": expected an array"},
      {many_items, true, SG_ERANGE,
       "field \"prompts[0].items\": 17 items, at most 16"},
      {"[{\"items\":[3]}]}", false, SG_EPARSE,
       "field \"prompts[0].items[0]\": expected an object"},
      {"[{\"items\":[{\"kernel\":1}]}]}", false, SG_EPARSE,
       "field \"prompts[0].items[0].kind\": missing or not a string"},
      {"[{\"items\":[{\"kind\":\"source\",\"kernel\":1}]}]}", false, SG_EPARSE,
       "field \"prompts[0].items[0].kind\": \"source\" is not a kind "
       "(kernel, profile, failure)"},
      {"[{\"items\":[{\"kind\":\"kernel\",\"kernel\":1,\"why\":1}]}]}", false,
       SG_EPARSE, "field \"prompts[0].items[0]\": unknown key \"why\""},
      {"[{\"items\":[{\"kind\":\"kernel\"}]}]}", false, SG_EPARSE,
       "field \"prompts[0].items[0].kernel\": expected a kernel id"},
      {"[{\"items\":[{\"kind\":\"kernel\",\"kernel\":0}]}]}", false, SG_ERANGE,
       "field \"prompts[0].items[0].kernel\": kernel id 0: ids start at 1"},
      {"[{\"items\":[{\"kind\":\"kernel\",\"kernel\":1},"
       "{\"kind\":\"profile\",\"kernel\":1},"
       "{\"kind\":\"failure\",\"kernel\":17}]}]}",
       false, SG_ERANGE,
       "line 3: field \"prompts[0].items[2].kernel\": kernel 17 is not in "
       "the history"},
      {"[{},{\"items\":[{\"kind\":\"kernel\","
       "\"kernel\":99999999999999999999}]}]}",
       false, SG_EPARSE, "not JSON"},
      {"[{\"inspirations\":3}]}", false, SG_EPARSE,
       "field \"prompts[0].inspirations\": expected an array"},
      {many_insp, true, SG_ERANGE,
       "field \"prompts[0].inspirations\": 9 inspirations, at most 8"},
      {"[{\"inspirations\":[1,8]}]}", false, SG_ERANGE,
       "field \"prompts[0].inspirations[1]\": kernel 8 is not in the history"},
      {"[{\"inspirations\":[null]}]}", false, SG_EPARSE,
       "field \"prompts[0].inspirations[0]\": expected a kernel id"},
      {overflow, true, SG_ERANGE,
       "field \"prompts[0].inspirations[0]\": kernel 2 would be item 17"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *line = bad[i].whole ? sg_strdup(bad[i].body)
                              : sg_asprintf("%s%s", P, bad[i].body);
    plan.n = 99;
    sg_err_clear(&err);
    int rc = sg_search_exec_plan_parse(line, strlen(line), 3, &h, &plan, &err);
    SG_CHECK_MSG(rc == bad[i].code && strstr(err.msg, bad[i].needle) != NULL,
                 "case %zu (%s): rc %d, msg \"%s\"; expected %d \"%s\"", i,
                 line, rc, err.msg, bad[i].code, bad[i].needle);
    SG_CHECK_EQ_INT(plan.n, 0); /* nothing half-parsed is left behind */
    free(line);
  }
  sg_history_free(&h);
}

static void test_timeout_variable(void) {
  sg_err err;
  double t = 0;
  CHECK_RC(sg_search_exec_timeout_parse(NULL, &t, &err), 0, "");
  SG_CHECK(t == SG_SEARCH_EXEC_TIMEOUT_S);
  CHECK_RC(sg_search_exec_timeout_parse("", &t, &err), 0, "");
  SG_CHECK(t == 60.0);
  CHECK_RC(sg_search_exec_timeout_parse("0.25", &t, &err), 0, "");
  SG_CHECK(t == 0.25);
  CHECK_RC(sg_search_exec_timeout_parse("86400", &t, &err), 0, "");
  static const char *const bad[] = {"0", "-1", "x", "5s", "86401", "nan",
                                    "inf", " "};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_RC(sg_search_exec_timeout_parse(bad[i], &t, &err), SG_EINVAL,
             "SPECGEN_EXEC_TIMEOUT_S: expected seconds in (0, 86400]");
}

SG_TEST_MAIN(SG_TEST(test_hello_json_has_version_seed_and_limits),
             SG_TEST(test_hello_parse_checks_type_and_version),
             SG_TEST(test_kernel_json_every_field),
             SG_TEST(test_next_sends_each_kernel_once_after_its_iteration),
             SG_TEST(test_plan_parse_every_field),
             SG_TEST(test_plan_parse_rejects_every_malformed_plan),
             SG_TEST(test_timeout_variable))

#else

/* ---- integration part: real processes ------------------------------------ */

/* Bounds on waiting, not claims about speed. */
#define DEATH_LIMIT_S 20.0

/* The shell's lines: JSON inside single quotes. */
#define HELLO_OK "echo '{\"type\":\"hello\",\"protocol\":1}'"
#define PLAN_SCRATCH "echo '{\"type\":\"plan\",\"prompts\":[{\"base_kernel\":0}]}'"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void subreaper(void) {
  SG_CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
}

/* A registry with exec, as the runtime builds it. */
static int new_exec(const char *cmd, sg_search **s, sg_err *err) {
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  SG_CHECK(sg_search_register(&reg, &sg_search_exec_ops, err) == 0);
  char *spec = sg_asprintf("exec:%s", cmd);
  int rc = sg_search_new(&reg, spec, 7, s, err);
  free(spec);
  return rc;
}

/* Waits until pid (our child, or handed to us as subreaper) is gone and
 * returns its wait status; fails the test past the limit. */
static int reap_within(pid_t pid, double limit_s) {
  double deadline = now_s() + limit_s;
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return status;
    SG_CHECK_MSG(r == 0, "waitpid(%d): %s", (int)pid, strerror(errno));
    SG_CHECK_MSG(now_s() < deadline, "process %d still alive after %.0f s",
                 (int)pid, limit_s);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* Waits until pid, which need not be our child, is gone: reaped by us (then
 * it must have died of SIGKILL) or by someone else. A dying shell may reap
 * its own child inside the wait it sits in before its SIGKILL lands, so a
 * grandchild does not always reach the subreaper. */
static void gone_within(pid_t pid, double limit_s) {
  double deadline = now_s() + limit_s;
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      SG_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      return;
    }
    if (r < 0 && errno == ECHILD && kill(pid, 0) < 0 && errno == ESRCH)
      return;
    SG_CHECK_MSG(now_s() < deadline, "process %d still alive after %.0f s",
                 (int)pid, limit_s);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static pid_t read_pid_file(const char *path) {
  double deadline = now_s() + DEATH_LIMIT_S;
  for (;;) {
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f != NULL) {
      if (fscanf(f, "%d", &pid) != 1)
        pid = 0;
      fclose(f);
    }
    if (pid > 0)
      return (pid_t)pid;
    SG_CHECK_MSG(now_s() < deadline, "no pid in %s", path);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static char *tmp_path(const char *name) {
  char dir[] = "/tmp/sg_exec_XXXXXX";
  SG_CHECK(mkdtemp(dir) != NULL);
  return sg_asprintf("%s/%s", dir, name);
}

/* Removes what tmp_path made and frees the path. */
static void tmp_done(char *path) {
  unlink(path);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  rmdir(path);
  free(path);
}

/* Through the table directly, where a test needs the process's pid. */
static int ex_init(const char *cmd, void **st, sg_err *err) {
  return sg_search_exec_ops.init(st, cmd, 7, err);
}

static int ex_next(void *st, const sg_history *h, uint32_t it,
                   sg_search_plan *plan, sg_err *err) {
  memset(plan, 0, sizeof *plan);
  return sg_search_exec_ops.next(st, h, it, plan, err);
}

static void add_profiled(sg_history *h, uint32_t it, double speedup,
                         const char *profile) {
  sg_kernel *k = sg_history_add(h, it, SG_GEN_MAIN, h->n + 1, 0,
                                SG_EXTRACT_FOUND, "k", 1);
  uint64_t id = k->id;
  sg_history_validated(h, id, SG_EVAL_OK, NAN, NULL);
  sg_history_profiled(h, id, speedup, profile);
}

static void test_python_greedy_plans_over_a_history(void) {
  if (system("python3 -c 'import json' >/dev/null 2>&1") != 0)
    SG_SKIP("python3 is not installed");
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  char *cmd = sg_asprintf("python3 %s/examples/search/greedy.py", SG_SOURCE_ROOT);
  CHECK_RC(new_exec(cmd, &s, &err), 0, "");
  free(cmd);
  SG_CHECK_STR_EQ(sg_search_name(s), "exec");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  /* iteration 0: the task alone */
  CHECK_RC(sg_search_next(s, &h, 0, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.n, 1);
  SG_CHECK(plan.prompts[0].base_kernel == 0 && plan.prompts[0].n_items == 0);
  /* iteration 0 gave: 1 profiled 1.5, 2 no code, 3 compile error */
  add_profiled(&h, 0, 1.5, "dram 80%");
  sg_history_add(&h, 0, SG_GEN_SPEC, 2, 10, SG_EXTRACT_NONE, NULL, 0);
  sg_history_add(&h, 0, SG_GEN_MAIN, 3, 0, SG_EXTRACT_FOUND, "k3", 2);
  sg_history_validated(&h, 3, SG_EVAL_COMPILE_ERROR, NAN, "error");
  CHECK_RC(sg_search_next(s, &h, 1, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.n, 1);
  const sg_prompt *p = &plan.prompts[0];
  SG_CHECK_EQ_INT(p->base_kernel, 1);
  SG_CHECK_EQ_INT(p->n_items, 4);
  SG_CHECK(p->items[0].kind == SG_ITEM_KERNEL && p->items[0].kernel == 1);
  SG_CHECK(p->items[1].kind == SG_ITEM_PROFILE && p->items[1].kernel == 1);
  /* failures newest first */
  SG_CHECK(p->items[2].kind == SG_ITEM_FAILURE && p->items[2].kernel == 3);
  SG_CHECK(p->items[3].kind == SG_ITEM_FAILURE && p->items[3].kernel == 2);
  /* a better kernel with no profile text: refined without a profile item */
  add_profiled(&h, 1, 2.0, NULL);
  CHECK_RC(sg_search_next(s, &h, 2, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.prompts[0].base_kernel, 4);
  SG_CHECK(plan.prompts[0].items[1].kind == SG_ITEM_FAILURE);
  /* iterations 2..6 bring nothing better: the 5th stalled one restarts */
  for (uint32_t it = 3; it <= 7; it++) {
    add_profiled(&h, it - 1, 1.0, "p");
    CHECK_RC(sg_search_next(s, &h, it, &plan, &err), 0, "");
    uint64_t want = it == 7 ? 0 : 4;
    SG_CHECK_MSG(plan.prompts[0].base_kernel == want,
                 "iteration %u: base %llu, expected %llu", it,
                 (unsigned long long)plan.prompts[0].base_kernel,
                 (unsigned long long)want);
  }
  add_profiled(&h, 7, 1.0, "p");
  CHECK_RC(sg_search_next(s, &h, 8, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.prompts[0].base_kernel, 4);
  /* bye: the example exits by itself; free reaps it */
  sg_search_free(s);
  sg_history_free(&h);
}

static void test_command_with_colons_is_kept_whole(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  /* only the first ':' separates the name; the rest is the command, and
   * the JSON lines are full of ':' too */
  CHECK_RC(new_exec("X=a:b:c; read l; " HELLO_OK "; read l; "
                    "[ \"$X\" = a:b:c ] && " PLAN_SCRATCH "; read l",
                    &s, &err),
           0, "");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(sg_search_next(s, &h, 0, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.n, 1);
  sg_search_free(s);
  sg_history_free(&h);
}

static void test_reply_split_across_writes(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  /* the hello and the plan each arrive in pieces, with pauses between */
  CHECK_RC(new_exec("read l; printf '{\"type\":'; sleep 0.2; "
                    "printf '\"hello\",\"protocol\"'; sleep 0.2; printf ':1}\\n'; "
                    "read l; printf '{\"type\":\"plan\",\"prompts\":[{},'; "
                    "sleep 0.2; printf '{}]}\\n'; read l",
                    &s, &err),
           0, "");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(sg_search_next(s, &h, 0, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.n, 2);
  sg_search_free(s);
  sg_history_free(&h);
}

static void test_empty_command_rejected(void) {
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("", &s, &err), SG_EINVAL, "needs a command");
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  SG_CHECK(sg_search_register(&reg, &sg_search_exec_ops, &err) == 0);
  CHECK_RC(sg_search_new(&reg, "exec", 1, &s, &err), SG_EINVAL,
           "needs a command");
}

static void test_garbage_answer(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("read l; echo 'hello there'; sleep 30", &s, &err),
           SG_EPARSE,
           "search exec \"read l; echo 'hello there'; sleep 30\": line 1: not "
           "JSON");
  SG_CHECK(s == NULL);
  /* garbage in a plan: init went well, next names line 2 */
  void *st = NULL;
  CHECK_RC(ex_init("read l; " HELLO_OK "; read l; echo '{\"type\":\"plan\"'; "
                   "sleep 30",
                   &st, &err),
           0, "");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(ex_next(st, &h, 0, &plan, &err), SG_EPARSE, "line 2: not JSON");
  /* the stream is out of step now: the search stays stopped */
  CHECK_RC(ex_next(st, &h, 1, &plan, &err), SG_ESTATE,
           "an earlier error stopped the search");
  pid_t pid = (pid_t)sg_search_exec_pid(st);
  SG_CHECK(pid > 0);
  sg_search_exec_ops.free(st); /* the sleep ignores the bye: killed */
  SG_CHECK(kill(pid, 0) == -1 && errno == ESRCH);
  sg_history_free(&h);
}

static void test_line_too_long(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("read l; head -c 1100000 /dev/zero | tr '\\0' x; "
                    "sleep 30", &s, &err),
           SG_ERANGE, "line 1: longer than 1048576 bytes");
}

static void test_process_that_exits(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("exit 3", &s, &err), SG_ECHILD, "exited with status 3");
  CHECK_RC(new_exec("read l; " HELLO_OK "; read l; exit 5", &s, &err), 0, "");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(sg_search_next(s, &h, 0, &plan, &err), SG_ECHILD,
           "its output ended after 1 line(s); the process exited with "
           "status 5");
  sg_search_free(s);
  CHECK_RC(new_exec("read l; " HELLO_OK "; read l; kill -9 $$", &s, &err), 0,
           "");
  CHECK_RC(sg_search_next(s, &h, 0, &plan, &err), SG_ECHILD,
           "was killed by signal 9");
  sg_search_free(s);
  sg_history_free(&h);
}

static void test_process_that_hangs_times_out(void) {
  subreaper();
  SG_CHECK(setenv("SPECGEN_EXEC_TIMEOUT_S", "0.3", 1) == 0);
  sg_err err;
  sg_search *s = NULL;
  char *pidfile = tmp_path("pid");
  char *cmd = sg_asprintf("echo $$ > %s; exec sleep 30", pidfile);
  CHECK_RC(new_exec(cmd, &s, &err), SG_ETIMEDOUT,
           "no reply within 0.3 s (line 1; set SPECGEN_EXEC_TIMEOUT_S");
  free(cmd);
  /* init failed: the process was killed and reaped before it returned */
  pid_t pid = read_pid_file(pidfile);
  SG_CHECK(kill(pid, 0) == -1 && errno == ESRCH);

  void *st = NULL;
  CHECK_RC(ex_init("read l; " HELLO_OK "; read l; sleep 30", &st, &err), 0,
           "");
  pid = (pid_t)sg_search_exec_pid(st);
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(ex_next(st, &h, 0, &plan, &err), SG_ETIMEDOUT,
           "no reply within 0.3 s (line 2");
  sg_search_exec_ops.free(st);
  SG_CHECK(kill(pid, 0) == -1 && errno == ESRCH);
  sg_history_free(&h);
  SG_CHECK(setenv("SPECGEN_EXEC_TIMEOUT_S", "zero", 1) == 0);
  CHECK_RC(new_exec("true", &s, &err), SG_EINVAL,
           "search exec: SPECGEN_EXEC_TIMEOUT_S: expected seconds");
  tmp_done(pidfile);
}

static void test_other_protocol_version(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("read l; echo '{\"type\":\"hello\",\"protocol\":2}'; "
                    "sleep 30", &s, &err),
           SG_EPROTO, "line 1: field \"protocol\": the search speaks protocol "
                      "2, specgen speaks 1");
}

static void test_process_reports_an_error(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("read l; " HELLO_OK "; read l; "
                    "echo '{\"type\":\"error\",\"message\":\"no idea\"}'; "
                    "read l",
                    &s, &err),
           0, "");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(sg_search_next(s, &h, 0, &plan, &err), SG_ECHILD,
           "line 2: the search reported an error: no idea");
  sg_search_free(s);
  sg_history_free(&h);
}

static void test_plan_with_unknown_kernel_never_handed_over(void) {
  subreaper();
  sg_err err;
  sg_search *s = NULL;
  CHECK_RC(new_exec("read l; " HELLO_OK "; read l; echo '{\"type\":\"plan\","
                    "\"prompts\":[{\"base_kernel\":17}]}'; read l",
                    &s, &err),
           0, "");
  sg_history h;
  make_history(&h);
  sg_search_plan plan;
  CHECK_RC(sg_search_next(s, &h, 1, &plan, &err), SG_ERANGE,
           "line 2: field \"prompts[0].base_kernel\": kernel 17 is not in "
           "the history");
  sg_search_free(s);
  sg_history_free(&h);
}

static void test_process_closing_its_input_is_an_error_not_sigpipe(void) {
  subreaper();
  sg_err err;
  void *st = NULL;
  CHECK_RC(ex_init("read l; " HELLO_OK "; exec 0<&-; exec sleep 30", &st,
                   &err),
           0, "");
  sg_history h;
  make_history(&h);
  /* a "next" larger than a pipe's buffer, so the write must meet EPIPE */
  static char big[200000];
  memset(big, 'x', sizeof big - 1);
  sg_history_add(&h, 0, SG_GEN_MAIN, 9, 0, SG_EXTRACT_FOUND, big,
                 sizeof big - 1);
  sg_search_plan plan;
  CHECK_RC(ex_next(st, &h, 3, &plan, &err), SG_ECHILD,
           "it closed its input after 1 line(s); the process is still "
           "running");
  pid_t pid = (pid_t)sg_search_exec_pid(st);
  sg_search_exec_ops.free(st);
  SG_CHECK(kill(pid, 0) == -1 && errno == ESRCH);
  sg_history_free(&h);
}

static void test_no_process_survives_free(void) {
  subreaper();
  sg_err err;
  void *st = NULL;
  char *pidfile = tmp_path("grandchild");
  /* the shell starts a grandchild in its group, then serves plans; the
   * grandchild ignores everything but SIGKILL */
  char *cmd = sg_asprintf(
      "sh -c 'trap \"\" TERM HUP INT; sleep 60' & echo $! > %s; "
      "trap '' TERM HUP INT; "
      "read l; " HELLO_OK "; while read l; do " PLAN_SCRATCH "; done; "
      "sleep 60",
      pidfile);
  CHECK_RC(ex_init(cmd, &st, &err), 0, "");
  free(cmd);
  pid_t pid = (pid_t)sg_search_exec_pid(st);
  pid_t grandchild = read_pid_file(pidfile);
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  CHECK_RC(ex_next(st, &h, 0, &plan, &err), 0, "");
  SG_CHECK_EQ_INT(plan.n, 1);
  SG_CHECK(kill(grandchild, 0) == 0);
  /* the shell ignores the bye and keeps running: free kills the group */
  sg_search_exec_ops.free(st);
  SG_CHECK(kill(pid, 0) == -1 && errno == ESRCH);
  gone_within(grandchild, DEATH_LIMIT_S);
  sg_history_free(&h);
  tmp_done(pidfile);
}

static void test_process_dies_with_specgen(void) {
  subreaper();
  char *pidfile = tmp_path("search");
  pid_t mid = fork();
  SG_CHECK(mid >= 0);
  if (mid == 0) {
    /* stands for specgen: starts the search, then dies without free */
    sg_err err;
    sg_search *s = NULL;
    char *cmd = sg_asprintf("read l; " HELLO_OK "; echo $$ > %s; "
                            "exec sleep 60", pidfile);
    if (new_exec(cmd, &s, &err) != 0)
      _exit(1);
    pause();
    _exit(0);
  }
  pid_t search = read_pid_file(pidfile);
  SG_CHECK(kill(mid, SIGKILL) == 0);
  int status = reap_within(mid, DEATH_LIMIT_S);
  SG_CHECK(WIFSIGNALED(status));
  /* the search's process was handed to us and died by PR_SET_PDEATHSIG */
  status = reap_within(search, DEATH_LIMIT_S);
  SG_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  tmp_done(pidfile);
}

SG_TEST_MAIN(SG_TEST(test_python_greedy_plans_over_a_history),
             SG_TEST(test_command_with_colons_is_kept_whole),
             SG_TEST(test_reply_split_across_writes),
             SG_TEST(test_empty_command_rejected),
             SG_TEST(test_garbage_answer),
             SG_TEST(test_line_too_long),
             SG_TEST(test_process_that_exits),
             SG_TEST(test_process_that_hangs_times_out),
             SG_TEST(test_other_protocol_version),
             SG_TEST(test_process_reports_an_error),
             SG_TEST(test_plan_with_unknown_kernel_never_handed_over),
             SG_TEST(test_process_closing_its_input_is_an_error_not_sigpipe),
             SG_TEST(test_no_process_survives_free),
             SG_TEST(test_process_dies_with_specgen))

#endif
