/* test_run_config.c: `specgen run`'s configuration (sg_run_config): every key
 * through a flag, through YAML and through the JSON record, each with a bad
 * value whose error names where it came from; precedence (file, then flags);
 * bool spellings; lists; unknown keys with suggestions; YAML errors with line
 * numbers; the devices spec; the cross-key checks; and that
 * docs/configuration.md and examples/run.yaml keep up with the table. */
#include "sg_test.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "config/sg_knobs.h"
#include "run/sg_run_config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ----------------------------------------------------------- */

/* One good and one bad value per key; json: the good value as to_json
 * writes it. Every key of the table must have a row (checked). */
typedef struct key_case {
  const char *key, *good, *json, *bad;
} key_case;

static const key_case listed[] = {
    {"task", "softmax", "[\"softmax\"]", ""},
    {"llm", "http://127.0.0.1:8000/v1", "\"http://127.0.0.1:8000/v1\"", ""},
    {"model", "Qwen/Qwen3-8B", "\"Qwen/Qwen3-8B\"", ""},
    {"profile", "vllm", "\"vllm\"", "vllmx"},
    {"api-key-env", "MY_KEY", "\"MY_KEY\"", ""},
    {"reasoning", "prompted", "\"prompted\"", "thinking"},
    {"max-tokens", "10000000", "10000000", "10000001"},
    {"temperature", "-1", "-1.0", "-0.5"},
    {"gen-deadline", "86400", "86400.0", "0"},
    {"idle-timeout", "0.5", "0.5", "86400.5"},
    {"llm-outage", "3", "3.0", "0"},
    {"main-retries", "100", "100", "101"},
    {"server-speed", "1000000", "1000000.0", "0"},
    {"server-concurrency", "1", "1", "-1"},
    {"server-fault", "disconnect:3", "\"disconnect:3\"", ""},
    {"replay", "runs/live", "\"runs/live\"", ""},
    {"replay-speed", "0", "0.0", "-1"},
    {"replay-evals", "on", "true", "onn"},
    {"devices", "cuda:0-3,cuda:6", "\"cuda:0-3,cuda:6\"", ""},
    {"compile-workers", "64", "64", "65"},
    {"trials", "3", "3", "2"},
    {"runs", "0", "0", "-1"},
    {"warmups", "100000", "100000", "1e3"},
    {"eval-timeout", "1e-3", "0.001", "-1"},
    {"hang-grace", "3600", "3600.0", "3600.0001"},
    {"elastic", "off", "false", "maybe"},
    {"remote", "4096", "4096", "4097"},
    {"kv-store", "on", "true", "onn"},
    {"kv-store-listen", "0.0.0.0:65432", "\"0.0.0.0:65432\"", ""},
    {"kv-store-memory", "16G", "\"16G\"", ""},
    {"kv-store-reserve", "512M", "\"512M\"", ""},
    {"search", "best-of-n:8", "\"best-of-n:8\"", ""},
    {"spec", "no", "false", "2"},
    {"termination", "hist-best", "\"hist-best\"", ""},
    {"fork-on-idle", "false", "false", "offf"},
    {"token-forks", "off", "false", "of"},
    {"max-forks", "0", "0", "100001"},
    {"max-live-forks", "100000", "100000", "0"},
    {"llm-streams", "64", "64", "-1"},
    {"fork-slowdown-max", "0.25", "0.25", "1"},
    {"work-conserving", "on", "true", "sometimes"},
    {"split-capacity", "on", "true", "halves"},
    {"fork-gate", "0.5", "0.5", "1.5"},
    {"cutoff", "1.25", "1.25", "-1"},
    {"cutoff-detach", "on", "true", "later"},
    {"decide-at-validation", "1.05", "1.05", "11"},
    {"decide-with-siblings", "on", "true", "best"},
    {"next-ahead", "on", "true", "soon"},
    {"tick", "0.01", "0.01", "0.009"},
    {"seed", "9223372036854775807", "9223372036854775807", "9223372036854775808"},
    {"iterations", "100000", "100000", "x"},
    {"time-budget", "10000000", "10000000.0", "nan"},
    {"token-budget", "18446744073709551615", "\"18446744073709551615\"",
     "18446744073709551616"},
    {"out", "runs/a", "\"runs/a\"", ""},
    {"resume", "runs/b", "\"runs/b\"", ""},
    {"prompts", "my-prompts", "\"my-prompts\"", ""},
    {"quiet", "yes", "true", "yess"},
    {"json", "1", "true", "-"},
    {"dashboard", "127.0.0.1:8750", "\"127.0.0.1:8750\"", ""},
};
#define NLISTED (sizeof listed / sizeof listed[0])

/* The cases: those listed, then one for each knob (config/sg_knobs.h) the
 * list has none for, from its row: the top of its range, as to_json writes
 * it, and a value below it. A new knob is tested three ways with no line
 * here. */
static key_case cases[NLISTED + 64];
static size_t NCASES;
static char knob_text[64][3][48];

__attribute__((constructor)) static void add_knob_cases(void) {
  memcpy(cases, listed, sizeof listed);
  NCASES = NLISTED;
  size_t n;
  const sg_knob *t = sg_knobs_table(&n);
  for (size_t i = 0, m = 0; i < n && m < 64; i++) {
    bool found = false;
    for (size_t j = 0; j < NLISTED; j++)
      found |= strcmp(listed[j].key, t[i].name) == 0;
    if (found)
      continue;
    char *good = knob_text[m][0], *json = knob_text[m][1], *bad = knob_text[m][2];
    json_t *v = NULL;
    switch (t[i].type) {
    case SG_KNOB_BOOL:
      snprintf(good, 48, "on");
      v = json_true();
      break;
    case SG_KNOB_INT:
      snprintf(good, 48, "%d", (int)t[i].max);
      v = json_integer((json_int_t)t[i].max);
      break;
    case SG_KNOB_DOUBLE:
      snprintf(good, 48, "%.17g", t[i].max);
      v = json_real(t[i].max);
      break;
    case SG_KNOB_U64:
      snprintf(good, 48, "%llu", (unsigned long long)t[i].min);
      v = json_integer((json_int_t)t[i].min);
      break;
    }
    char *dump = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(json, 48, "%s", dump);
    free(dump);
    json_decref(v);
    snprintf(bad, 48, "%s", t[i].type == SG_KNOB_BOOL ? "maybe" : "-2");
    cases[NCASES++] = (key_case){t[i].name, good, json, bad};
    m++;
  }
}

/* The key's value in c, as JSON text; the caller frees it. */
static char *json_of(const sg_run_config *c, const char *key) {
  json_t *j = sg_run_config_to_json(c);
  json_t *v = json_object_get(j, key);
  SG_CHECK_MSG(v != NULL, "to_json has no key \"%s\"", key);
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  json_decref(j);
  return s;
}

static int args(sg_run_config *c, sg_err *err, int argc, const char **argv) {
  sg_err_clear(err);
  return sg_run_config_parse_args(c, argc, (char **)argv, 0, err);
}
#define ARGS(c, err, ...)                                               \
  args(c, err, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), \
       (const char *[]){__VA_ARGS__})

static int yaml(sg_run_config *c, const char *text, sg_err *err) {
  sg_err_clear(err);
  return sg_run_config_load_yaml_string(c, text, strlen(text), "cfg.yaml", err);
}

/* ---- the table ---------------------------------------------------------- */

static void test_every_key_has_a_case_and_a_help(void) {
  size_t n;
  const sg_run_key *k = sg_run_keys(&n);
  SG_CHECK_EQ_INT(n, NCASES);
  for (size_t i = 0; i < n; i++) {
    bool found = false;
    for (size_t j = 0; j < NCASES; j++)
      found |= strcmp(cases[j].key, k[i].name) == 0;
    SG_CHECK_MSG(found, "key \"%s\" has no test case", k[i].name);
    SG_CHECK(k[i].help != NULL && k[i].help[0] != '\0');
    SG_CHECK(k[i].group != NULL);
    SG_CHECK(sg_run_key_find(k[i].name) == &k[i]);
  }
  SG_CHECK(sg_run_key_find("nope") == NULL);
}

static void test_defaults(void) {
  sg_run_config c;
  sg_run_config_init(&c);
  SG_CHECK_EQ_INT(c.n_task, 0);
  SG_CHECK(c.llm == NULL && c.model == NULL && c.out == NULL);
  SG_CHECK(c.server_fault == NULL && c.resume == NULL);
  SG_CHECK_STR_EQ(c.devices, "cpu:0");
  SG_CHECK_STR_EQ(c.profile, "generic");
  SG_CHECK_STR_EQ(c.api_key_env, "OPENAI_API_KEY");
  SG_CHECK_STR_EQ(c.search, "refine");
  SG_CHECK_STR_EQ(c.termination, "hist-avg");
  SG_CHECK_EQ_INT(c.max_tokens, 0);
  SG_CHECK(c.temperature == -1 && c.gen_deadline == 1800 && c.idle_timeout == 120);
  SG_CHECK(c.server_speed == 300 && c.knobs.eval_timeout == 60 && c.hang_grace == 30);
  /* one evaluation timeout: the run's default is the evaluators' own, and
   * what a 0 (or no options) stands for */
  sg_eval_opts eo;
  sg_eval_opts_default(&eo);
  SG_CHECK(c.knobs.eval_timeout == SG_EVAL_TIMEOUT_S && eo.eval_timeout == SG_EVAL_TIMEOUT_S);
  eo.eval_timeout = 0;
  SG_CHECK(sg_eval_timeout(&eo) == SG_EVAL_TIMEOUT_S);
  SG_CHECK(sg_eval_timeout(NULL) == SG_EVAL_TIMEOUT_S);
  SG_CHECK_EQ_INT(c.compile_workers, 1);
  SG_CHECK_EQ_INT(c.trials, 3);
  SG_CHECK_EQ_INT(c.runs, 40);
  SG_CHECK_EQ_INT(c.warmups, 10);
  SG_CHECK(c.knobs.elastic && c.knobs.spec && c.knobs.fork_on_idle && !c.quiet && !c.json);
  SG_CHECK_EQ_INT(c.knobs.max_forks, 64);
  SG_CHECK_EQ_INT(c.knobs.max_live_forks, 16);
  SG_CHECK(!c.knobs.work_conserving && c.knobs.fork_gate == 0 && c.knobs.cutoff == 0);
  SG_CHECK(c.knobs.decide_at_validation == 0 && !c.knobs.split_capacity && !c.knobs.cutoff_detach);
  SG_CHECK(!c.knobs.decide_with_siblings && !c.knobs.next_ahead);
  SG_CHECK(c.knobs.tick == 0.25 && c.knobs.time_budget == 0);
  SG_CHECK_EQ_INT(c.seed, 1);
  SG_CHECK_EQ_INT(c.knobs.iterations, 10);
  SG_CHECK_EQ_INT(c.knobs.token_budget, 0);
  sg_run_config_free(&c);
  SG_CHECK(c.profile == NULL && c.task == NULL);
}

/* ---- every key, three ways --------------------------------------------- */

static void test_every_key_as_flag(void) {
  for (size_t i = 0; i < NCASES; i++) {
    const key_case *kc = &cases[i];
    char flag[64], eqflag[256];
    snprintf(flag, sizeof flag, "--%s", kc->key);
    snprintf(eqflag, sizeof eqflag, "--%s=%s", kc->key, kc->good);
    for (int form = 0; form < 2; form++) {
      sg_run_config c;
      sg_err err;
      sg_run_config_init(&c);
      int rc = form == 0 ? ARGS(&c, &err, flag, kc->good) : ARGS(&c, &err, eqflag);
      SG_CHECK_OK(rc, err);
      char *got = json_of(&c, kc->key);
      SG_CHECK_MSG(strcmp(got, kc->json) == 0, "%s %s: got %s, want %s", flag,
                   kc->good, got, kc->json);
      free(got);
      sg_run_config_free(&c);
    }
    /* The bad value, as --KEY=BAD (an empty one too, for strings). */
    snprintf(eqflag, sizeof eqflag, "--%s=%s", kc->key, kc->bad);
    sg_run_config c;
    sg_err err;
    sg_run_config_init(&c);
    char *before = json_of(&c, kc->key);
    SG_CHECK_EQ_INT(ARGS(&c, &err, eqflag), SG_EINVAL);
    SG_CHECK_CONTAINS(err.msg, flag);
    SG_CHECK_MSG(strncmp(err.msg, flag, strlen(flag)) == 0, "%s", err.msg);
    char *after = json_of(&c, kc->key);
    SG_CHECK_MSG(strcmp(before, after) == 0, "%s: a bad value changed the key",
                 kc->key);
    free(before);
    free(after);
    sg_run_config_free(&c);
  }
}

static void test_every_key_in_yaml(void) {
  for (size_t i = 0; i < NCASES; i++) {
    const key_case *kc = &cases[i];
    sg_run_config c;
    sg_err err;
    sg_run_config_init(&c);
    char *text = sg_asprintf("# a comment\n%s: \"%s\"\n", kc->key, kc->good);
    SG_CHECK_OK(yaml(&c, text, &err), err);
    free(text);
    char *got = json_of(&c, kc->key);
    SG_CHECK_MSG(strcmp(got, kc->json) == 0, "yaml %s: %s: got %s, want %s",
                 kc->key, kc->good, got, kc->json);
    free(got);
    /* The bad value on line 3. */
    text = sg_asprintf("# line 1\n\n%s: '%s'\n", kc->key, kc->bad);
    SG_CHECK(yaml(&c, text, &err) < 0);
    free(text);
    char want[128];
    snprintf(want, sizeof want, "cfg.yaml:3: key \"%s\": ", kc->key);
    SG_CHECK_CONTAINS(err.msg, want);
    sg_run_config_free(&c);
  }
}

/* Sets every key to its good value through flags. */
static void set_all(sg_run_config *c) {
  for (size_t i = 0; i < NCASES; i++) {
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_OK(sg_run_config_set(c, cases[i].key, cases[i].good, NULL, &err), err);
  }
}

static void round_trip(const sg_run_config *c) {
  json_t *j = sg_run_config_to_json(c);
  char *text = json_dumps(j, JSON_COMPACT);
  json_error_t jerr;
  json_t *back = json_loads(text, 0, &jerr);
  SG_CHECK_MSG(back != NULL, "to_json wrote unreadable JSON: %s", jerr.text);
  sg_run_config d;
  sg_err err;
  sg_err_clear(&err);
  sg_run_config_init(&d);
  SG_CHECK_OK(sg_run_config_from_json(&d, back, &err), err);
  SG_CHECK(d.knobs.answer_at_cap == c->knobs.answer_at_cap);
  json_t *again = sg_run_config_to_json(&d);
  char *text2 = json_dumps(again, JSON_COMPACT);
  SG_CHECK_MSG(strcmp(text, text2) == 0, "round trip:\n%s\n%s", text, text2);
  /* Doubles bit for bit, strings and lists by value. */
  SG_CHECK(memcmp(&d.temperature, &c->temperature, sizeof(double)) == 0);
  SG_CHECK(memcmp(&d.knobs.tick, &c->knobs.tick, sizeof(double)) == 0);
  SG_CHECK(memcmp(&d.knobs.time_budget, &c->knobs.time_budget, sizeof(double)) == 0);
  SG_CHECK(d.knobs.token_budget == c->knobs.token_budget && d.seed == c->seed);
  SG_CHECK_EQ_INT(d.n_task, c->n_task);
  for (size_t i = 0; i < c->n_task; i++)
    SG_CHECK_STR_EQ(d.task[i], c->task[i]);
  free(text);
  free(text2);
  json_decref(j);
  json_decref(back);
  json_decref(again);
  sg_run_config_free(&d);
}

static void test_json_round_trip(void) {
  sg_run_config c;
  sg_err err;
  sg_err_clear(&err);
  sg_run_config_init(&c);
  round_trip(&c); /* the defaults, with their nulls */
  set_all(&c);
  SG_CHECK_OK(sg_run_config_set(&c, "task", "tasks/cpu/hinge_loss", NULL, &err), err);
  round_trip(&c);
  /* Doubles that print badly at fewer than 17 digits. */
  SG_CHECK_OK(sg_run_config_set(&c, "temperature", "0.30000000000000004", NULL, &err),
              err);
  SG_CHECK_OK(sg_run_config_set(&c, "tick", "0.1234567890123456789", NULL, &err), err);
  SG_CHECK_OK(sg_run_config_set(&c, "time-budget", "3.3333333333333335", NULL, &err),
              err);
  SG_CHECK_OK(sg_run_config_set(&c, "token-budget", "9223372036854775807", NULL, &err),
              err);
  round_trip(&c);
  sg_run_config_free(&c);
  /* a recorded configuration from before answer-at-cap: it ran without it */
  sg_run_config_init(&c);
  SG_CHECK(c.knobs.answer_at_cap);
  json_t *old = json_pack("{s:b}", "spec", 0);
  SG_CHECK_OK(sg_run_config_from_json(&c, old, &err), err);
  SG_CHECK(!c.knobs.answer_at_cap);
  json_decref(old);
  sg_run_config_free(&c);
}

static void test_json_bad_values(void) {
  for (size_t i = 0; i < NCASES; i++) {
    const key_case *kc = &cases[i];
    sg_run_config c;
    sg_err err;
    sg_err_clear(&err);
    sg_run_config_init(&c);
    /* The bad text as a JSON string (or, for a list, in an array). */
    json_t *j = json_object();
    if (strcmp(kc->key, "task") == 0)
      json_object_set_new(j, kc->key, json_pack("[s]", kc->bad));
    else
      json_object_set_new(j, kc->key, json_string(kc->bad));
    SG_CHECK(sg_run_config_from_json(&c, j, &err) < 0);
    char want[96];
    snprintf(want, sizeof want, "json: key \"%s\"", kc->key);
    SG_CHECK_CONTAINS(err.msg, want);
    json_decref(j);
    sg_run_config_free(&c);
  }
  /* Wrong JSON types and unknown keys. */
  static const char *const bad[][2] = {
      {"{\"iterations\": \"x\"}", "json: key \"iterations\""},
      {"{\"iterations\": true}", "json: key \"iterations\""},
      {"{\"iterations\": 2.5}", "json: key \"iterations\""},
      {"{\"spec\": 1.5}", "json: key \"spec\""},
      {"{\"llm\": 5}", "json: key \"llm\": expected a string or null"},
      {"{\"task\": \"a\"}", "json: key \"task\": expected a list"},
      {"{\"task\": [1]}", "json: key \"task\": entry 0"},
      {"{\"seed\": null}", "json: key \"seed\""},
      {"{\"iteration\": 3}", "did you mean \"iterations\""},
      {"[1]", "json: expected an object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sg_run_config c;
    sg_err err;
    sg_err_clear(&err);
    sg_run_config_init(&c);
    json_t *j = json_loads(bad[i][0], 0, NULL);
    SG_CHECK(j != NULL);
    SG_CHECK_MSG(sg_run_config_from_json(&c, j, &err) < 0, "%s accepted", bad[i][0]);
    SG_CHECK_CONTAINS(err.msg, bad[i][1]);
    json_decref(j);
    sg_run_config_free(&c);
  }
}

/* ---- flags and the file together --------------------------------------- */

static char *write_tmp(const char *text) {
  char *path = sg_strdup("/tmp/sg_run_config_XXXXXX");
  int fd = mkstemp(path);
  SG_CHECK(fd >= 0);
  SG_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  return path;
}

static void test_precedence_file_then_flags(void) {
  char *path = write_tmp("iterations: 5\nseed: 9\ntask: [a, b]\nquiet: on\n");
  char *cfg = sg_asprintf("--config=%s", path);
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  /* --config last: still applied first, so the flags win. */
  SG_CHECK_OK(ARGS(&c, &err, "--iterations", "7", "--task", "x", "--task=y",
                   "--no-quiet", "--config", path),
              err);
  SG_CHECK_EQ_INT(c.knobs.iterations, 7);
  SG_CHECK_EQ_INT(c.seed, 9); /* from the file, untouched by flags */
  SG_CHECK(!c.quiet);
  SG_CHECK_EQ_INT(c.n_task, 2); /* the flags' list replaced the file's */
  SG_CHECK_STR_EQ(c.task[0], "x");
  SG_CHECK_STR_EQ(c.task[1], "y");
  sg_run_config_free(&c);

  /* Without list flags the file's list stays. */
  sg_run_config_init(&c);
  SG_CHECK_OK(ARGS(&c, &err, cfg, "--seed", "3"), err);
  SG_CHECK_EQ_INT(c.n_task, 2);
  SG_CHECK_STR_EQ(c.task[1], "b");
  SG_CHECK_EQ_INT(c.seed, 3);
  SG_CHECK(c.quiet);
  sg_run_config_free(&c);

  /* --config twice, missing, or naming no file. */
  sg_run_config_init(&c);
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--config", path, cfg), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--config: given twice");
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--config"), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--config: missing value");
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--config", "--seed", "2"), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--config: missing value");
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--config", "/nonexistent/run.yaml"), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "/nonexistent/run.yaml");
  sg_run_config_free(&c);

  /* A bad file value names the file and line, even through flags. */
  char *bad = write_tmp("seed: 2\ntrials: 1\n");
  sg_run_config_init(&c);
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--config", bad), SG_EINVAL);
  char *want = sg_asprintf("%s:2: key \"trials\": expected an integer from 3 to 1000, "
                           "got \"1\"", bad);
  SG_CHECK_STR_EQ(err.msg, want);
  free(want);
  sg_run_config_free(&c);
  unlink(bad);
  free(bad);
  unlink(path);
  free(path);
  free(cfg);
}

static void test_bool_spellings(void) {
  static const struct {
    const char *a, *b;
    bool want;
  } rows[] = {
      {"--spec", NULL, true},       {"--no-spec", NULL, false},
      {"--spec=off", NULL, false},  {"--spec=ON", NULL, true},
      {"--spec=no", NULL, false},   {"--spec=Yes", NULL, true},
      {"--spec=0", NULL, false},    {"--spec=true", NULL, true},
      {"--spec", "off", false},     {"--spec", "false", false},
      {"--spec", "1", true},        {"--spec", "--quiet", true},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_run_config c;
    sg_err err;
    sg_run_config_init(&c);
    c.knobs.spec = !rows[i].want;
    int rc = rows[i].b ? ARGS(&c, &err, rows[i].a, rows[i].b) : ARGS(&c, &err, rows[i].a);
    SG_CHECK_OK(rc, err);
    SG_CHECK_MSG(c.knobs.spec == rows[i].want, "%s %s", rows[i].a, rows[i].b ? rows[i].b : "");
    if (rows[i].b && strcmp(rows[i].b, "--quiet") == 0)
      SG_CHECK(c.quiet);
    sg_run_config_free(&c);
  }
  /* A word after an on/off flag is its value: a bad one is named as such
   * (it was "unexpected argument ... every setting is a --KEY flag"). */
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--spec", "softmax"), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--spec: expected on, off");
  SG_CHECK_CONTAINS(err.msg, "got \"softmax\"");
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--spec=maybe"), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--spec: expected on, off");
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--no-iterations"), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--no-iterations: iterations is not an on/off key");
  SG_CHECK_EQ_INT(ARGS(&c, &err, "--no-spec=on"), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--no-spec: takes no value");
  /* YAML's own spellings go through the same words. */
  SG_CHECK_OK(yaml(&c, "spec: false\nelastic: yes\nquiet: On\n", &err), err);
  SG_CHECK(!c.knobs.spec && c.knobs.elastic && c.quiet);
  sg_run_config_free(&c);
}

static void test_flag_errors(void) {
  static const struct {
    const char *a, *b, *want;
  } rows[] = {
      {"softmax", NULL, "unexpected argument \"softmax\""},
      {"--", NULL, "unexpected argument \"--\""},
      {"-v", NULL, "unexpected argument \"-v\""},
      {"--iterations", NULL, "--iterations: missing value (N)"},
      {"--out", "--quiet", "--out: missing value (DIR)"},
      {"--iteration", "3", "--iteration: unknown flag (did you mean \"--iterations\"?)"},
      {"--confg", "x", "--confg: unknown flag (did you mean \"--config\"?)"},
      {"--temprature=1", NULL, "did you mean \"--temperature\"?"},
      {"--zzzzzzzzzz", NULL, "--zzzzzzzzzz: unknown flag"},
      {"--task=", NULL, "--task: expected"},
      {"--iterations", " 5", "--iterations: expected an integer from 1 to 100000, "
                             "got \" 5\""},
      {"--iterations", "5x", "got \"5x\""},
      {"--eval-timeout", "inf", "--eval-timeout: expected a number in (0, 86400]"},
      {"--temperature", "2.5", "--temperature: expected -1 or a number in [0, 2]"},
      {"--seed", "0", "--seed: expected an integer from 1 to 9223372036854775807"},
      {"--token-budget", "-1", "from 0 to 18446744073709551615"},
      {"--profile", "openia", "--profile: expected one of generic, vllm, sglang, "
                              "deepseek, openai, llamacpp, llamacpp-python, got \"openia\""},
      /* an on/off flag followed by a word that is not on or off: that word
       * is its bad value, not a stray argument */
      {"--spec", "maybe", "--spec: expected on, off, true, false, yes, no, 1 or 0, got \"maybe\""},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_run_config c;
    sg_err err;
    sg_run_config_init(&c);
    int rc = rows[i].b ? ARGS(&c, &err, rows[i].a, rows[i].b) : ARGS(&c, &err, rows[i].a);
    SG_CHECK_MSG(rc == SG_EINVAL, "%s: rc %d", rows[i].a, rc);
    SG_CHECK_CONTAINS(err.msg, rows[i].want);
    sg_run_config_free(&c);
  }
  /* The first index is honoured. */
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  char *argv[] = {"specgen", "run", "--seed", "4"};
  sg_err_clear(&err);
  SG_CHECK_OK(sg_run_config_parse_args(&c, 4, argv, 2, &err), err);
  SG_CHECK_EQ_INT(c.seed, 4);
  sg_run_config_free(&c);
}

static void test_lists(void) {
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  SG_CHECK_OK(yaml(&c, "task:\n  - a\n  - 'b c'\n  - tasks/cpu/x\n", &err), err);
  SG_CHECK_EQ_INT(c.n_task, 3);
  SG_CHECK_STR_EQ(c.task[1], "b c");
  /* One scalar is a list of one; it replaces what was there. */
  SG_CHECK_OK(yaml(&c, "task: solo\n", &err), err);
  SG_CHECK_EQ_INT(c.n_task, 1);
  SG_CHECK_STR_EQ(c.task[0], "solo");
  SG_CHECK_OK(yaml(&c, "task: [p, q]\n", &err), err);
  SG_CHECK_EQ_INT(c.n_task, 2);
  SG_CHECK_OK(yaml(&c, "task: []\n", &err), err);
  SG_CHECK_EQ_INT(c.n_task, 0);
  SG_CHECK_OK(yaml(&c, "task: [p]\n", &err), err);
  SG_CHECK_OK(yaml(&c, "task:\n", &err), err);
  SG_CHECK_EQ_INT(c.n_task, 0);
  /* A null unsets a string; other types need a value. */
  SG_CHECK_OK(yaml(&c, "out: runs/x\n", &err), err);
  SG_CHECK_OK(yaml(&c, "out: ~\n", &err), err);
  SG_CHECK(c.out == NULL);
  SG_CHECK_OK(yaml(&c, "model: \"null\"\n", &err), err); /* quoted: a name */
  SG_CHECK_STR_EQ(c.model, "null");
  SG_CHECK(yaml(&c, "seed:\n", &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "cfg.yaml:1: key \"seed\": expected an integer");
  /* Flags append (repeat) and set() appends. */
  SG_CHECK_OK(ARGS(&c, &err, "--task", "a", "--task", "b", "--task=c"), err);
  SG_CHECK_EQ_INT(c.n_task, 3);
  SG_CHECK_OK(sg_run_config_set(&c, "task", "d", NULL, &err), err);
  SG_CHECK_EQ_INT(c.n_task, 4);
  SG_CHECK_STR_EQ(c.task[3], "d");
  /* The cap. */
  for (size_t i = c.n_task; i < SG_RUN_LIST_MAX; i++)
    SG_CHECK_OK(sg_run_config_set(&c, "task", "t", NULL, &err), err);
  SG_CHECK_EQ_INT(sg_run_config_set(&c, "task", "t", "--task", &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--task: more than 1024 entries");
  SG_CHECK_EQ_INT(c.n_task, SG_RUN_LIST_MAX);
  /* A value's cap. */
  char *longv = sg_malloc(SG_RUN_VALUE_MAX + 2);
  memset(longv, 'a', SG_RUN_VALUE_MAX + 1);
  longv[SG_RUN_VALUE_MAX + 1] = '\0';
  SG_CHECK_EQ_INT(sg_run_config_set(&c, "out", longv, "--out", &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "--out: value longer than 4096 bytes");
  free(longv);
  /* Not UTF-8 (argv can hold anything; the JSON record cannot). */
  SG_CHECK_EQ_INT(sg_run_config_set(&c, "out", "a\xff", "--out", &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "UTF-8");
  sg_run_config_free(&c);
}

static void test_unknown_keys(void) {
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  SG_CHECK_EQ_INT(yaml(&c, "seed: 2\niteration: 3\n", &err), SG_ENOENT);
  SG_CHECK_STR_EQ(err.msg,
                  "cfg.yaml:2: key \"iteration\": unknown key (did you mean "
                  "\"iterations\"?)");
  SG_CHECK_EQ_INT(yaml(&c, "max_forks: 3\n", &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "did you mean \"max-forks\"?");
  SG_CHECK_EQ_INT(yaml(&c, "config: x.yaml\n", &err), SG_ENOENT);
  SG_CHECK_EQ_INT(yaml(&c, "qqqqqqqq: 1\n", &err), SG_ENOENT);
  SG_CHECK_STR_EQ(err.msg, "cfg.yaml:1: key \"qqqqqqqq\": unknown key");
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_run_config_set(&c, "sed", "3", "--sed", &err), SG_ENOENT);
  SG_CHECK_STR_EQ(err.msg, "--sed: unknown key (did you mean \"seed\"?)");
  SG_CHECK_EQ_INT(sg_run_config_set(&c, "sed", "3", NULL, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "key \"sed\": unknown key");
  sg_run_config_free(&c);
}

/* ---- YAML errors -------------------------------------------------------- */

static void test_yaml_errors(void) {
  static const struct {
    const char *text, *want;
  } rows[] = {
      {"seed: 1\ntask:\n  a: b\n", "cfg.yaml:3: key \"task\": nested mappings"},
      {"seed: 1\nllm: {a: 1}\n", "cfg.yaml:2: key \"llm\": nested mappings"},
      {"out: &x runs\nresume: *x\n", "cfg.yaml:2: aliases are not supported"},
      {"seed: 1\n---\nseed: 2\n", "cfg.yaml:2: a second document"},
      {"seed: 1\n\n\nseed: 2\n", "cfg.yaml:4: key \"seed\" given twice (first on line 1)"},
      {"- a\n- b\n", "cfg.yaml:1: expected a mapping of keys"},
      {"just text\n", "cfg.yaml:1: expected a mapping of keys"},
      {"seed: 1\nllm: [a, b]\n", "cfg.yaml:2: key \"llm\": expected one value, got a list"},
      {"task:\n  - a\n  - [b]\n", "cfg.yaml:3: key \"task\": nested lists"},
      {"task:\n  - a\n  - {b: 1}\n", "cfg.yaml:3: key \"task\": nested mappings"},
      {"seed: 1\n[a]: 2\n", "cfg.yaml:2: a key must be a plain name"},
      {"seed: 1\ntask: [3\n", "cfg.yaml:3:"},
      {"seed: 1\nout: a: b\n", "cfg.yaml:2:"},
      {"seed: \"1\n", "cfg.yaml:"},
      {"task:\n  - a\n  -\n", "cfg.yaml:3: key \"task\": expected"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_run_config c;
    sg_err err;
    sg_run_config_init(&c);
    SG_CHECK_MSG(yaml(&c, rows[i].text, &err) < 0, "accepted: %s", rows[i].text);
    SG_CHECK_MSG(strstr(err.msg, rows[i].want) != NULL, "%s: got \"%s\", want \"%s\"",
                 rows[i].text, err.msg, rows[i].want);
    sg_run_config_free(&c);
  }
  /* Empty files and documents are no keys. */
  static const char *const empty[] = {"", "# only a comment\n", "---\n", "---\n...\n"};
  for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
    sg_run_config c;
    sg_err err;
    sg_run_config_init(&c);
    SG_CHECK_OK(yaml(&c, empty[i], &err), err);
    SG_CHECK_EQ_INT(c.knobs.iterations, 10);
    sg_run_config_free(&c);
  }
  /* A NUL inside a scalar, and the size cap (string and file). */
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  sg_err_clear(&err);
  SG_CHECK(sg_run_config_load_yaml_string(&c, "out: \"a\\0b\"\n", 12, "n.yaml", &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "n.yaml:1: a NUL byte");
  size_t big = SG_RUN_CONFIG_FILE_MAX + 1;
  char *text = sg_malloc(big + 1);
  memset(text, '#', big);
  text[big] = '\0';
  SG_CHECK_EQ_INT(sg_run_config_load_yaml_string(&c, text, big, "big.yaml", &err),
                  SG_ERANGE);
  SG_CHECK_CONTAINS(err.msg, "big.yaml: larger than");
  char *path = write_tmp(text);
  SG_CHECK_EQ_INT(sg_run_config_load_yaml(&c, path, &err), SG_ERANGE);
  SG_CHECK_CONTAINS(err.msg, path);
  unlink(path);
  free(path);
  free(text);
  sg_run_config_free(&c);
}

/* ---- devices ------------------------------------------------------------ */

static void test_devices_parse(void) {
  static const struct {
    const char *spec, *want; /* want: names joined by spaces */
  } ok[] = {
      {"cpu:0", "cpu:0"},
      {"cpu:2", "cpu:2"},
      {"cpu:0-1", "cpu:0 cpu:1"},
      {"cuda:0-3,cuda:6", "cuda:0 cuda:1 cuda:2 cuda:3 cuda:6"},
      {"cpu:0,cpu:2", "cpu:0 cpu:2"},
      {"cuda:5,cuda:1-2", "cuda:5 cuda:1 cuda:2"},
      {"cpu:3-3", "cpu:3"},
      {"cuda:4095", "cuda:4095"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char **names;
    size_t n;
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_OK(sg_run_devices_parse(ok[i].spec, &names, &n, &err), err);
    char joined[256] = "";
    for (size_t j = 0; j < n; j++) {
      strcat(joined, j ? " " : "");
      strcat(joined, names[j]);
      free(names[j]);
    }
    free(names);
    SG_CHECK_STR_EQ(joined, ok[i].want);
  }
  char **all;
  size_t n_all;
  sg_err err;
  SG_CHECK_OK(sg_run_devices_parse("cuda:0-4095", &all, &n_all, &err), err);
  SG_CHECK_EQ_INT(n_all, 4096);
  SG_CHECK_STR_EQ(all[4095], "cuda:4095");
  for (size_t i = 0; i < n_all; i++)
    free(all[i]);
  free(all);

  static const struct {
    const char *spec, *want;
  } bad[] = {
      {"", "devices: empty spec"},
      {"gpu:0", "devices \"gpu:0\": \"gpu:0\": expected cpu:N"},
      {"cpu", "expected cpu:N"},
      {"cpu:", "expected an index"},
      {"cpu:x", "expected an index"},
      {"cpu:1-", "devices \"cpu:1-\": \"cpu:1-\": expected an index"},
      {"cpu:-1", "expected an index"},
      {"cpu:1-2-3", "expected an index"},
      {"cpu:0,", "devices \"cpu:0,\": \"\": expected cpu:N"},
      {"cpu:0, cpu:1", "\" cpu:1\": expected cpu:N"},
      {"cpu:3-1", "\"cpu:3-1\": a range goes up"},
      {"cpu:4096", "indices go from 0 to 4095"},
      {"cuda:0-9999999", "expected an index"},
      {"cpu:0-2,cpu:1", "\"cpu:1\": cpu:1 given twice"},
      {"cpu:0,cuda:1", "one kind of device only (cpu and cuda)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char **names = (char **)1;
    size_t n = 7;
    sg_err_clear(&err);
    SG_CHECK_MSG(sg_run_devices_parse(bad[i].spec, &names, &n, &err) == SG_EINVAL,
                 "accepted \"%s\"", bad[i].spec);
    SG_CHECK(names == NULL && n == 0);
    SG_CHECK_MSG(strstr(err.msg, bad[i].want) != NULL, "%s: got \"%s\"", bad[i].spec,
                 err.msg);
  }
}

/* ---- check() ------------------------------------------------------------ */

static void test_check(void) {
  sg_run_config c;
  sg_err err;
  sg_run_config_init(&c);
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_run_config_check(&c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "task: at least one task");
  SG_CHECK_OK(ARGS(&c, &err, "--task", "softmax"), err);
  SG_CHECK_OK(sg_run_config_check(&c, &err), err);
  sg_run_config_free(&c);

  /* Settings that pass, then ones that fail, each on a fresh config. */
  static const char *const good[][2] = {
      {"--llm=http://h/v1", "--model=m"},
      {"--server-fault=status429:1:2", NULL},
      {"--devices=cuda:0-7", NULL},
      {"--termination=first-valid", NULL},
      {"--termination=none", NULL},
      {"--search=best-of-n:8", NULL},
      {"--search=evolve", NULL},
      {"--search=evolve:islands=2,migrate=5", NULL},
      {"--search=exec:python3 search.py --fast", NULL},
      {"--json", NULL},
      {"--next-ahead", "--search=refine"},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    sg_run_config_init(&c);
    int rc = good[i][1] ? ARGS(&c, &err, "--task=t", good[i][0], good[i][1])
                        : ARGS(&c, &err, "--task=t", good[i][0]);
    SG_CHECK_OK(rc, err);
    SG_CHECK_OK(sg_run_config_check(&c, &err), err);
    sg_run_config_free(&c);
  }
  static const char *const bad[][3] = {
      {"--llm=http://h/v1", NULL, "model: required with llm"},
      {"--server-fault=explode", NULL, "server-fault: "},
      {"--server-fault=disconnect:x", NULL, "server-fault: "},
      {"--json", "--quiet", "json and quiet"},
      {"--devices=cpu:0,cuda:0", NULL, "devices \"cpu:0,cuda:0\""},
      {"--termination=hist-median", NULL, "termination: "},
      {"--search=anneal", NULL, "search: "},
      {"--search=best-of-n:0", NULL, "search: "},
      {"--search=evolve:islands=0", NULL, "search: "},
      {"--search=evolve:colour=red", NULL, "search: "},
      {"--search=exec:", NULL, "search: exec: needs a command"},
      {"--search=exec:   ", NULL, "search: exec: needs a command"},
      {"--decide-at-validation=0.5", NULL, "decide-at-validation: expected 0"},
      {"--cutoff-detach", NULL, "cutoff-detach: needs a cutoff"},
      {"--cutoff-detach", "--cutoff=0", "cutoff-detach: needs a cutoff"},
      {"--decide-with-siblings", NULL, "decide-with-siblings: needs decide-at-validation"},
      {"--decide-with-siblings", "--decide-at-validation=0",
       "decide-with-siblings: needs decide-at-validation"},
      {"--next-ahead", "--search=best-of-n:2", "next-ahead: needs the refine search"},
      {"--next-ahead", "--search=evolve", "next-ahead: needs the refine search"},
      {"--replay-evals", NULL, "replay-evals: needs replay"},
      {"--replay=runs/live", "--llm=http://127.0.0.1:1", "replay: the recorded streams"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sg_run_config_init(&c);
    int rc = bad[i][1] ? ARGS(&c, &err, "--task=t", bad[i][0], bad[i][1])
                       : ARGS(&c, &err, "--task=t", bad[i][0]);
    SG_CHECK_OK(rc, err);
    sg_err_clear(&err);
    SG_CHECK_MSG(sg_run_config_check(&c, &err) < 0, "%s passed", bad[i][0]);
    SG_CHECK_MSG(strncmp(err.msg, bad[i][2], strlen(bad[i][2])) == 0,
                 "%s: got \"%s\", want \"%s...\"", bad[i][0], err.msg, bad[i][2]);
    /* each prefix once: "termination: termination: ..." was printed */
    const char *colon = strchr(err.msg, ':');
    SG_CHECK(colon != NULL);
    size_t plen = (size_t)(colon - err.msg) + 2;
    SG_CHECK_MSG(strncmp(err.msg + plen, err.msg, plen) != 0, "doubled prefix: %s",
                 err.msg);
    sg_run_config_free(&c);
  }
  /* The list of searches an unknown one is answered with names exec too. */
  sg_run_config_init(&c);
  SG_CHECK_OK(ARGS(&c, &err, "--task=t", "--search=anneal"), err);
  SG_CHECK(sg_run_config_check(&c, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "refine");
  SG_CHECK_CONTAINS(err.msg, "exec");
  sg_run_config_free(&c);
  /* Devices unset by a YAML null: the run would have none. */
  sg_run_config_init(&c);
  SG_CHECK_OK(ARGS(&c, &err, "--task=t"), err);
  SG_CHECK_OK(yaml(&c, "devices: ~\n", &err), err);
  SG_CHECK_EQ_INT(sg_run_config_check(&c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "devices: empty spec");
  sg_run_config_free(&c);
  /* A profile written into the struct by hand is still checked. */
  sg_run_config_init(&c);
  SG_CHECK_OK(ARGS(&c, &err, "--task=t"), err);
  free(c.profile);
  c.profile = sg_strdup("vllmm");
  SG_CHECK_EQ_INT(sg_run_config_check(&c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "profile: expected one of");
  sg_run_config_free(&c);
}

/* ---- usage, docs, example ---------------------------------------------- */

static void test_usage_lists_every_key(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  sg_run_config_usage(f);
  fclose(f);
  SG_CHECK_CONTAINS(buf, "  --config FILE");
  SG_CHECK_CONTAINS(buf, "  --iterations N ");
  SG_CHECK_CONTAINS(buf, "  --[no-]spec ");
  SG_CHECK_CONTAINS(buf, "\n the search:\n");
  size_t n;
  const sg_run_key *k = sg_run_keys(&n);
  for (size_t i = 0; i < n; i++) {
    char *want = sg_asprintf("%s%s ", k[i].type == SG_KEY_BOOL ? "--[no-]" : "--",
                             k[i].name);
    SG_CHECK_CONTAINS(buf, want);
    SG_CHECK_CONTAINS(buf, k[i].help);
    free(want);
    /* each group's heading once (two came twice: issue 31) */
    char *head = sg_asprintf("\n %s:\n", k[i].group);
    char *first = strstr(buf, head);
    SG_CHECK_MSG(first && !strstr(first + 1, head), "the heading \"%s\" is not there once",
                 k[i].group);
    free(head);
  }
  free(buf);
}

static void test_docs_list_every_key(void) {
  char *doc = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_file_read(SG_SOURCE_ROOT "/docs/configuration.md", 1 << 20, &doc,
                           NULL, &err),
              err);
  size_t n;
  const sg_run_key *k = sg_run_keys(&n);
  for (size_t i = 0; i < n; i++) {
    char *row = sg_asprintf("| `%s` |", k[i].name); /* a row of the table */
    const char *at = strstr(doc, row);
    SG_CHECK_MSG(at != NULL, "docs/configuration.md has no row for key \"%s\"", k[i].name);
    free(row);
    /* and its row names every value the program takes (the llamacpp
     * profiles were missing: issue 31) */
    size_t row_len = strcspn(at, "\n");
    for (const char *c = k[i].choices; c && *c;) {
      size_t n = strcspn(c, "|");
      char *want = sg_asprintf("`%.*s`", (int)n, c);
      char *line = sg_asprintf("%.*s", (int)row_len, at);
      SG_CHECK_MSG(strstr(line, want) != NULL,
                   "docs/configuration.md: the row of \"%s\" does not name %s", k[i].name,
                   want);
      free(line);
      free(want);
      c += n + (c[n] == '|');
    }
  }
  free(doc);
}

static void test_example_config_loads(void) {
  sg_run_config c;
  sg_err err;
  sg_err_clear(&err);
  sg_run_config_init(&c);
  SG_CHECK_OK(sg_run_config_load_yaml(&c, SG_SOURCE_ROOT "/examples/run.yaml", &err),
              err);
  SG_CHECK_OK(sg_run_config_check(&c, &err), err);
  SG_CHECK(c.llm != NULL && c.model != NULL);
  SG_CHECK_STR_EQ(c.profile, "vllm");
  SG_CHECK(c.n_task >= 1);
  sg_run_config_free(&c);
}

SG_TEST_MAIN(SG_TEST(test_every_key_has_a_case_and_a_help), SG_TEST(test_defaults),
             SG_TEST(test_every_key_as_flag), SG_TEST(test_every_key_in_yaml),
             SG_TEST(test_json_round_trip), SG_TEST(test_json_bad_values),
             SG_TEST(test_precedence_file_then_flags), SG_TEST(test_bool_spellings),
             SG_TEST(test_flag_errors), SG_TEST(test_lists), SG_TEST(test_unknown_keys),
             SG_TEST(test_yaml_errors), SG_TEST(test_devices_parse),
             SG_TEST(test_check), SG_TEST(test_usage_lists_every_key),
             SG_TEST(test_docs_list_every_key), SG_TEST(test_example_config_loads))
