/* sg_run_config.c: the configuration of `specgen run`, driven by one table.
 *
 * The static table `keys` below is the only place a key exists; the rows
 * of the core's knobs are expanded from config/sg_knobs.h, where they are
 * shared with `specgen sim`. Setting a
 * key from text (sg_run_config_set) is the one door: the YAML loader, the
 * flag parser and the JSON reader all turn their values into text and go
 * through it, so a range or a choice is checked in one place and every
 * message names where the value came from. Writing (JSON, usage) iterates
 * the same table. The cross-key checks that need other modules (the
 * termination and search registries, the fault parser, the devices spec)
 * are in sg_run_config_check, which builds each thing once and throws it
 * away. No I/O except reading the YAML file.
 *
 * The checks of a whole configuration are in sg_run_config_check.c. This
 * file stays over 800 lines on purpose: the key table and the code that
 * sets a key from a flag, a YAML value or JSON read together.
 */
#include "run/sg_run_config_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_edit.h"
#include "common/sg_file.h"
#include "config/sg_value.h"
#include "config/sg_yaml.h"
#include "eval/sg_eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(sg_run_config, f)
#define TWO63 9223372036854775808.0  /* 2^63 */

#define G_TASK "what to optimize"
#define G_MODEL "the model"
#define G_SERVER "the built-in test server (used only without llm)"
#define G_EVAL "devices and evaluation"
#define G_KV "the KV store (docs/kvstore.md)"
#define G_SEARCH "the search"
#define G_BUDGET "budgets, per workflow (0: none)"
#define G_OUT "output"

/* A knob's row (config/sg_knobs.h) as a key of this table. */
#define KNOB_KEY(field, TYPE, kname, def, lo, hi, kflags, vname, GROUP, sim, LAND, khelp) \
  {.name = kname, .type = SG_KEY_##TYPE, .offset = OFF(knobs.field), .min = lo, .max = hi, \
   .flags = kflags, .value_name = vname, .help = khelp, .group = G_##GROUP},

static const sg_run_key keys[] = {
    {.name = "task", .type = SG_KEY_LIST, .offset = OFF(task),
     .count_offset = OFF(n_task), .value_name = "NAME",
     .help = "a task name or directory; repeat for more (required)",
     .group = G_TASK},

    {.name = "llm", .type = SG_KEY_STRING, .offset = OFF(llm),
     .value_name = "URL",
     .help = "base URL of an OpenAI-compatible server (unset: the built-in "
             "test server)",
     .group = G_MODEL},
    {.name = "model", .type = SG_KEY_STRING, .offset = OFF(model),
     .value_name = "NAME", .help = "model name on the server (required with llm)",
     .group = G_MODEL},
    {.name = "profile", .type = SG_KEY_STRING, .offset = OFF(profile),
     .choices = "generic|vllm|sglang|deepseek|openai|llamacpp|llamacpp-python",
     .value_name = "NAME",
     .help = "the server's dialect: generic, vllm, sglang, deepseek, openai, llamacpp, "
             "llamacpp-python (generic)",
     .group = G_MODEL},
    {.name = "api-key-env", .type = SG_KEY_STRING, .offset = OFF(api_key_env),
     .value_name = "VAR",
     .help = "environment variable holding the API key (OPENAI_API_KEY)",
     .group = G_MODEL},
    {.name = "reasoning", .type = SG_KEY_STRING, .offset = OFF(reasoning),
     .choices = "native|prompted", .value_name = "HOW",
     .help = "native: the model reasons on its own; prompted: it is asked to "
             "think inside <think>...</think> before answering, for a model "
             "that does not (needs llm) (native)",
     .group = G_MODEL},
    {.name = "max-tokens", .type = SG_KEY_INT, .offset = OFF(max_tokens),
     .min = 0, .max = 1e7, .value_name = "N",
     .help = "tokens per generation, 0: the server's default (0)",
     .group = G_MODEL},
    {.name = "temperature", .type = SG_KEY_DOUBLE, .offset = OFF(temperature),
     .min = 0, .max = 2, .flags = SG_KEYF_MINUS_ONE, .value_name = "T",
     .help = "sampling temperature, -1: the server's default (-1)",
     .group = G_MODEL},
    {.name = "gen-deadline", .type = SG_KEY_DOUBLE, .offset = OFF(gen_deadline),
     .min = 0, .max = 86400, .flags = SG_KEYF_MIN_OPEN, .value_name = "S",
     .help = "seconds one generation may take (1800)", .group = G_MODEL},
    {.name = "idle-timeout", .type = SG_KEY_DOUBLE, .offset = OFF(idle_timeout),
     .min = 0, .max = 86400, .flags = SG_KEYF_MIN_OPEN, .value_name = "S",
     .help = "seconds without a stream event before a generation fails (120)",
     .group = G_MODEL},
    {.name = "llm-outage", .type = SG_KEY_DOUBLE, .offset = OFF(llm_outage),
     .min = 0, .max = 86400, .flags = SG_KEYF_MIN_OPEN, .value_name = "S",
     .help = "seconds the model server may fail every request before the run "
             "stops (resumable); meanwhile iterations wait, uncounted (120)",
     .group = G_MODEL},
    {.name = "main-retries", .type = SG_KEY_INT, .offset = OFF(main_retries),
     .min = 0, .max = 100, .value_name = "N",
     .help = "a main generation the model server cuts mid-stream is sent "
             "again at once N times in its iteration, then after waits, its "
             "iteration uncounted until --llm-outage (2)",
     .group = G_MODEL},

    {.name = "server-speed", .type = SG_KEY_DOUBLE, .offset = OFF(server_speed),
     .min = 0, .max = 1e6, .flags = SG_KEYF_MIN_OPEN, .value_name = "TOK/S",
     .help = "tokens per second per stream (300)", .group = G_SERVER},
    {.name = "server-concurrency", .type = SG_KEY_INT, .offset = OFF(server_concurrency),
     .min = 0, .max = 100000, .value_name = "C",
     .help = "streams decoded at the full rate; with more, each slows to "
             "rate x C / streams, prefill included (0: no contention)",
     .group = G_SERVER},
    {.name = "server-fault", .type = SG_KEY_STRING, .offset = OFF(server_fault),
     .value_name = "SPEC",
     .help = "a fault applied to every request, e.g. disconnect:3 (none)",
     .group = G_SERVER},
    {.name = "replay", .type = SG_KEY_STRING, .offset = OFF(replay),
     .value_name = "DIR",
     .help = "the model's answers are the streams recorded in the run DIR "
             "(its llm.jsonl.gz), replayed under this run's options (none)",
     .group = G_SERVER},
    {.name = "replay-speed", .type = SG_KEY_DOUBLE, .offset = OFF(replay_speed),
     .min = 0, .max = 1e6, .value_name = "F",
     .help = "with replay: the recorded pace times F; 0: no pacing (1)",
     .group = G_SERVER},
    {.name = "replay-evals", .type = SG_KEY_BOOL, .offset = OFF(replay_evals),
     .help = "with replay: a kernel the recorded run evaluated takes its "
             "recorded result instead of a new evaluation (off)",
     .group = G_SERVER},

    {.name = "devices", .type = SG_KEY_STRING, .offset = OFF(devices),
     .value_name = "SPEC",
     .help = "devices to evaluate on: cpu:0-1, cuda:0-3,cuda:6 (cpu:0)",
     .group = G_EVAL},
    {.name = "compile-workers", .type = SG_KEY_INT,
     .offset = OFF(compile_workers), .min = 1, .max = 64, .value_name = "N",
     .help = "compilations at once (1)", .group = G_EVAL},
    {.name = "trials", .type = SG_KEY_INT, .offset = OFF(trials), .min = 3,
     .max = 1000, .value_name = "N",
     .help = "correctness input sets per candidate (3)", .group = G_EVAL},
    {.name = "runs", .type = SG_KEY_INT, .offset = OFF(runs), .min = 0,
     .max = 100000, .value_name = "N",
     .help = "timed runs per candidate, 0: the evaluator's (40)",
     .group = G_EVAL},
    {.name = "warmups", .type = SG_KEY_INT, .offset = OFF(warmups), .min = 0,
     .max = 100000, .value_name = "N",
     .help = "untimed runs before the timed ones (10)", .group = G_EVAL},
    SG_KNOB_EVAL_TIMEOUT(KNOB_KEY)
    {.name = "hang-grace", .type = SG_KEY_DOUBLE, .offset = OFF(hang_grace),
     .min = 0, .max = 3600, .flags = SG_KEYF_MIN_OPEN, .value_name = "S",
     .help = "seconds beyond eval-timeout before a hung evaluation is killed "
             "(30)",
     .group = G_EVAL},
    SG_KNOB_ELASTIC(KNOB_KEY)

    {.name = "remote", .type = SG_KEY_INT, .offset = OFF(remote), .min = 0,
     .max = 4096, .value_name = "N",
     .help = "device slots of the run's kind on worker hosts, through the Redis "
             "of --redis URL or $SPECGEN_REDIS_URL (docs/remote.md) (0)",
     .group = G_EVAL},

    {.name = "kv-store", .type = SG_KEY_BOOL, .offset = OFF(kv_store),
     .help = "keep the LLM server's prefixes in the devices' spare memory: "
             "start an lm:// KV store for LMCache (off)",
     .group = G_KV},
    {.name = "kv-store-listen", .type = SG_KEY_STRING,
     .offset = OFF(kv_store_listen), .value_name = "HOST:PORT",
     .help = "the KV store's address (127.0.0.1:0, any free port)",
     .group = G_KV},
    {.name = "kv-store-memory", .type = SG_KEY_STRING,
     .offset = OFF(kv_store_memory), .value_name = "SIZE",
     .help = "the KV store's budget per device, e.g. 16G (4G)", .group = G_KV},
    {.name = "kv-store-reserve", .type = SG_KEY_STRING,
     .offset = OFF(kv_store_reserve), .value_name = "SIZE",
     .help = "device memory the store leaves free while an evaluation runs "
             "there (8G)",
     .group = G_KV},

    {.name = "search", .type = SG_KEY_STRING, .offset = OFF(search),
     .value_name = "NAME",
     .help = "refine, best-of-n[:N], evolve[:OPTS] or exec:CMD (refine)",
     .group = G_SEARCH},
    SG_KNOB_SPEC(KNOB_KEY)
    SG_KNOB_ANSWER_AT_CAP(KNOB_KEY)
    {.name = "termination", .type = SG_KEY_STRING, .offset = OFF(termination),
     .value_name = "NAME[:ARG]",
     .help = "when a candidate ends the iteration: first-valid, hist-avg, "
             "hist-best, none (hist-avg)",
     .group = G_SEARCH},
    SG_KNOB_FORK_ON_IDLE(KNOB_KEY)
    {.name = "token-forks", .type = SG_KEY_BOOL, .offset = OFF(token_forks),
     .help = "forks continue the exact reasoning tokens on /completions where "
             "the profile allows it (vllm) (on)",
     .group = G_SEARCH},
    SG_KNOB_MAX_FORKS(KNOB_KEY)
    SG_KNOB_MAX_LIVE_FORKS(KNOB_KEY)
    SG_KNOB_LLM_STREAMS(KNOB_KEY)
    SG_KNOB_FORK_SLOWDOWN_MAX(KNOB_KEY)
    SG_KNOB_WORK_CONSERVING(KNOB_KEY)
    SG_KNOB_SPLIT_CAPACITY(KNOB_KEY)
    SG_KNOB_FORK_GATE(KNOB_KEY)
    SG_KNOB_CUTOFF(KNOB_KEY)
    SG_KNOB_CUTOFF_DETACH(KNOB_KEY)
    SG_KNOB_DECIDE_AT_VALIDATION(KNOB_KEY)
    SG_KNOB_DECIDE_WITH_SIBLINGS(KNOB_KEY)
    SG_KNOB_NEXT_AHEAD(KNOB_KEY)
    SG_KNOB_TICK(KNOB_KEY)
    {.name = "seed", .type = SG_KEY_U64, .offset = OFF(seed), .min = 1,
     .max = TWO63, .flags = SG_KEYF_MAX_OPEN, .value_name = "N",
     .help = "random seed (1)", .group = G_SEARCH},

    SG_KNOB_ITERATIONS(KNOB_KEY)
    SG_KNOB_TIME_BUDGET(KNOB_KEY)
    SG_KNOB_TOKEN_BUDGET(KNOB_KEY)

    {.name = "out", .type = SG_KEY_STRING, .offset = OFF(out),
     .value_name = "DIR", .help = "run directory (runs/<UTC time>)",
     .group = G_OUT},
    {.name = "resume", .type = SG_KEY_STRING, .offset = OFF(resume),
     .value_name = "DIR", .help = "continue the run in DIR (unset: a new run)",
     .group = G_OUT},
    {.name = "prompts", .type = SG_KEY_STRING, .offset = OFF(prompts),
     .value_name = "DIR",
     .help = "directory of prompt template overrides (unset: the built-in "
             "templates)",
     .group = G_OUT},
    {.name = "quiet", .type = SG_KEY_BOOL, .offset = OFF(quiet),
     .help = "no progress lines (off)", .group = G_OUT},
    {.name = "json", .type = SG_KEY_BOOL, .offset = OFF(json),
     .help = "progress as one JSON event per line (off)", .group = G_OUT},
    {.name = "dashboard", .type = SG_KEY_STRING, .offset = OFF(dashboard),
     .value_name = "ADDR:PORT",
     .help = "serve a live dashboard of the run; a bare --dashboard is "
             "127.0.0.1:8750 (off)",
     .group = G_OUT},
};

#define NKEYS (sizeof keys / sizeof keys[0])

const sg_run_key *sg_run_keys(size_t *n) {
  if (n)
    *n = NKEYS;
  return keys;
}

const sg_run_key *sg_run_key_find(const char *name) {
  for (size_t i = 0; i < NKEYS; i++)
    if (strcmp(keys[i].name, name) == 0)
      return &keys[i];
  return NULL;
}

/* Field access through the table. */
#define FIELD(c, k, T) ((T *)((char *)(c) + (k)->offset))

void sg_run_config_init(sg_run_config *c) {
  memset(c, 0, sizeof *c);
  c->profile = sg_strdup("generic");
  c->devices = sg_strdup("cpu:0");
  c->api_key_env = sg_strdup("OPENAI_API_KEY");
  c->reasoning = sg_strdup("native");
  c->max_tokens = 0;
  c->temperature = -1;
  c->gen_deadline = 1800;
  c->idle_timeout = 120;
  c->llm_outage = 120;
  c->main_retries = 2;
  c->server_speed = 300;
  c->replay_speed = 1;
  c->compile_workers = 1;
  c->trials = 3;
  c->runs = 40;
  c->warmups = 10;
  c->hang_grace = 30;
  c->search = sg_strdup("refine");
  c->termination = sg_strdup("hist-avg");
  c->token_forks = true;
  c->seed = 1;
  sg_knobs_default(&c->knobs);
}

static void list_clear(sg_run_config *c, const sg_run_key *k) {
  char ***v = FIELD(c, k, char **);
  size_t *n = (size_t *)((char *)c + k->count_offset);
  for (size_t i = 0; i < *n; i++)
    free((*v)[i]);
  free(*v);
  *v = NULL;
  *n = 0;
}

void sg_run_config_free(sg_run_config *c) {
  for (size_t i = 0; i < NKEYS; i++) {
    if (keys[i].type == SG_KEY_STRING) {
      char **s = FIELD(c, &keys[i], char *);
      free(*s);
      *s = NULL;
    } else if (keys[i].type == SG_KEY_LIST) {
      list_clear(c, &keys[i]);
    }
  }
}

/* ---- suggestions --------------------------------------------------------- */

/* The key nearest to name, or NULL when none is near enough to be a typo.
 * with_config: "config" is a candidate too (flags). */
static const char *suggest(const char *name, bool with_config) {
  size_t limit = 1 + strlen(name) / 5;
  if (limit > 3)
    limit = 3;
  const char *best = NULL;
  size_t best_d = limit + 1;
  for (size_t i = 0; i <= NKEYS; i++) {
    const char *cand = i < NKEYS ? keys[i].name : with_config ? "config" : NULL;
    if (cand == NULL)
      continue;
    size_t d = sg_edit_distance(name, cand);
    if (d < best_d) {
      best_d = d;
      best = cand;
    }
  }
  return best;
}

/* ---- setting one key from text ------------------------------------------- */

/* Where a value came from, as the start of a message. */
static void where(char *buf, size_t n, const char *origin, const char *key) {
  if (origin == NULL)
    snprintf(buf, n, "key \"%s\"", key);
  else if (strncmp(origin, "--", 2) == 0)
    snprintf(buf, n, "%s", origin);
  else
    snprintf(buf, n, "%s: key \"%s\"", origin, key);
}

/* Shows a value in a message: at most 64 bytes of it. */
void sg_run_config_shown(char *buf, size_t n, const char *value) {
  size_t len = strlen(value);
  if (len > 64)
    snprintf(buf, n, "%.64s...", value);
  else
    snprintf(buf, n, "%s", value);
}

/* A number or switch key's range as the one value parser (config/sg_value.h)
 * takes it; false for a string or list key. */
static bool value_range(const sg_run_key *k, sg_value_range *r) {
  static const int types[SG_KEY__COUNT] = {
      [SG_KEY_STRING] = -1, [SG_KEY_LIST] = -1, [SG_KEY_INT] = SG_VALUE_INT,
      [SG_KEY_U64] = SG_VALUE_U64, [SG_KEY_DOUBLE] = SG_VALUE_DOUBLE,
      [SG_KEY_BOOL] = SG_VALUE_BOOL};
  if (k->type >= SG_KEY__COUNT || types[k->type] < 0)
    return false;
  *r = (sg_value_range){.type = (sg_value_type)types[k->type], .min = k->min,
                        .max = k->max, .flags = k->flags};
  return true;
}

/* "an integer from 1 to 100000", "a number in (0, 86400]". */
void sg_run_config_describe(const sg_run_key *k, char *buf, size_t n) {
  sg_value_range r;
  if (value_range(k, &r)) {
    sg_value_describe(&r, buf, n);
    return;
  }
  if (k->choices) {
    /* "generic, vllm, sglang" */
    size_t o = (size_t)snprintf(buf, n, "one of ");
    for (const char *p = k->choices; *p && o + 3 < n; p++)
      o += (size_t)snprintf(buf + o, n - o, *p == '|' ? ", " : "%c", *p);
  } else {
    snprintf(buf, n, "a value of at most %d bytes", SG_RUN_VALUE_MAX);
  }
}

bool sg_run_config_in_choices(const char *choices, const char *v) {
  size_t lv = strlen(v);
  for (const char *p = choices;;) {
    const char *bar = strchr(p, '|');
    size_t l = bar ? (size_t)(bar - p) : strlen(p);
    if (l == lv && strncmp(p, v, l) == 0)
      return true;
    if (bar == NULL)
      return false;
    p = bar + 1;
  }
}

/* Whether s is valid UTF-8 (the JSON record needs it). */
static bool utf8_ok(const char *s) {
  json_t *t = json_string(s);
  if (t == NULL)
    return false;
  json_decref(t);
  return true;
}

static int set_key(sg_run_config *c, const sg_run_key *k, const char *value,
                   const char *origin, sg_err *err) {
  char at[SG_ERR_MSG_MAX / 2], v[80], want[160];
  where(at, sizeof at, origin, k->name);
  sg_run_config_shown(v, sizeof v, value);
  sg_run_config_describe(k, want, sizeof want);
  if (value[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "%s: expected %s, got nothing", at, want);
  if (strlen(value) > SG_RUN_VALUE_MAX)
    return sg_err_set(err, SG_EINVAL, "%s: value longer than %d bytes", at,
                      SG_RUN_VALUE_MAX);
  switch (k->type) {
  case SG_KEY_STRING:
  case SG_KEY_LIST: {
    if (k->choices && !sg_run_config_in_choices(k->choices, value))
      return sg_err_set(err, SG_EINVAL, "%s: expected %s, got \"%s\"", at, want,
                        v);
    if (!utf8_ok(value))
      return sg_err_set(err, SG_EINVAL, "%s: not valid UTF-8", at);
    if (k->type == SG_KEY_STRING) {
      char **s = FIELD(c, k, char *);
      free(*s);
      *s = sg_strdup(value);
      return 0;
    }
    char ***list = FIELD(c, k, char **);
    size_t *n = (size_t *)((char *)c + k->count_offset);
    if (*n >= SG_RUN_LIST_MAX)
      return sg_err_set(err, SG_EINVAL, "%s: more than %d entries", at,
                        SG_RUN_LIST_MAX);
    *list = sg_realloc(*list, (*n + 1) * sizeof **list);
    (*list)[(*n)++] = sg_strdup(value);
    return 0;
  }
  case SG_KEY_INT:
  case SG_KEY_U64:
  case SG_KEY_DOUBLE:
  case SG_KEY_BOOL: {
    sg_value_range r;
    if (!value_range(k, &r) || !sg_value_parse(&r, value, FIELD(c, k, char)))
      return sg_err_set(err, SG_EINVAL, "%s: expected %s, got \"%s\"", at, want,
                        v);
    return 0;
  }
  case SG_KEY__COUNT:
    break;
  }
  return sg_err_set(err, SG_EINVAL, "%s: bad key type", at);
}

static int unknown_key(const char *key, const char *origin, sg_err *err) {
  char at[SG_ERR_MSG_MAX / 2], name[80];
  sg_run_config_shown(name, sizeof name, key);
  where(at, sizeof at, origin, name);
  const char *s = suggest(key, false);
  if (s)
    return sg_err_set(err, SG_ENOENT, "%s: unknown key (did you mean \"%s\"?)",
                      at, s);
  return sg_err_set(err, SG_ENOENT, "%s: unknown key", at);
}

int sg_run_config_set(sg_run_config *c, const char *key, const char *value,
                      const char *origin, sg_err *err) {
  const sg_run_key *k = sg_run_key_find(key);
  if (k == NULL)
    return unknown_key(key, origin, err);
  return set_key(c, k, value, origin, err);
}

/* ---- YAML ---------------------------------------------------------------- */

/* The YAML loader: the walker (config/sg_yaml.h) reads one flat mapping of
 * keys to scalars or lists of scalars; each value goes through set_key. */
typedef struct yload {
  sg_run_config *c;
  const sg_run_key *cur;
  size_t seen_line[NKEYS]; /* line a key was given on, 0: not yet */
} yload;

static int yaml_key(yload *y, const sg_yaml_value *v, sg_err *err) {
  char origin[SG_ERR_MSG_MAX / 4];
  snprintf(origin, sizeof origin, "%.*s:%zu", (int)(strrchr(v->origin, ':') - v->origin),
           v->origin, v->key_line);
  const sg_run_key *k = sg_run_key_find(v->key);
  if (k == NULL)
    return unknown_key(v->key, origin, err);
  if (y->seen_line[k - keys])
    return sg_err_set(err, SG_EPARSE, "%s: key \"%s\" given twice (first on line %zu)",
                      origin, k->name, y->seen_line[k - keys]);
  y->seen_line[k - keys] = v->key_line;
  y->cur = k;
  return 0;
}

static int yaml_value(void *data, const sg_yaml_value *v, sg_err *err) {
  yload *y = data;
  sg_run_config *c = y->c;
  int rc = 0;
  switch (v->kind) {
  case SG_YAML_LIST_START:
    if ((rc = yaml_key(y, v, err)) < 0)
      return rc;
    if (y->cur->type != SG_KEY_LIST)
      return sg_err_set(err, SG_EPARSE, "%s: key \"%s\": expected one value, got a list",
                        v->origin, y->cur->name);
    list_clear(c, y->cur);
    return 0;
  case SG_YAML_LIST_ITEM:
    return set_key(c, y->cur, v->value, v->origin, err);
  case SG_YAML_SCALAR:
    break;
  }
  if ((rc = yaml_key(y, v, err)) < 0)
    return rc;
  const sg_run_key *k = y->cur;
  if (v->null) {
    if (k->type == SG_KEY_STRING) {
      char **p = FIELD(c, k, char *);
      free(*p);
      *p = NULL;
    } else if (k->type == SG_KEY_LIST) {
      list_clear(c, k);
    } else {
      char want[160];
      sg_run_config_describe(k, want, sizeof want);
      return sg_err_set(err, SG_EINVAL, "%s: key \"%s\": expected %s, got nothing",
                        v->origin, k->name, want);
    }
    return 0;
  }
  if (k->type == SG_KEY_LIST)
    list_clear(c, k);
  return set_key(c, k, v->value, v->origin, err);
}

int sg_run_config_load_yaml_string(sg_run_config *c, const char *text,
                                   size_t len, const char *name, sg_err *err) {
  if (len > SG_RUN_CONFIG_FILE_MAX)
    return sg_err_set(err, SG_ERANGE, "%s: larger than %zu bytes", name,
                      SG_RUN_CONFIG_FILE_MAX);
  yload y;
  memset(&y, 0, sizeof y);
  y.c = c;
  sg_yaml_opts o = {.nested = false, .lists = true};
  return sg_yaml_walk(text, len, name, &o, yaml_value, &y, err);
}

int sg_run_config_load_yaml(sg_run_config *c, const char *path, sg_err *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = sg_file_read(path, SG_RUN_CONFIG_FILE_MAX, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = sg_run_config_load_yaml_string(c, buf, len, path, err);
  free(buf);
  return rc;
}

/* ---- flags --------------------------------------------------------------- */

static bool is_flag(const char *a) { return strncmp(a, "--", 2) == 0; }

/* Longer than 80 lines on purpose: one pass over argv whose cases (a flag,
 * --no-KEY, --KEY=VALUE, a value in the next word) share its cursor. */
int sg_run_config_parse_args(sg_run_config *c, int argc, char **argv,
                             int first, sg_err *err) {
  /* --config first, wherever it stands. */
  const char *config = NULL;
  for (int i = first; i < argc; i++) {
    const char *file = NULL;
    if (strcmp(argv[i], "--config") == 0) {
      if (i + 1 >= argc || is_flag(argv[i + 1]))
        return sg_err_set(err, SG_EINVAL, "--config: missing value (FILE)");
      file = argv[++i];
    } else if (strncmp(argv[i], "--config=", 9) == 0) {
      file = argv[i] + 9;
    }
    if (file == NULL)
      continue;
    if (config)
      return sg_err_set(err, SG_EINVAL, "--config: given twice (\"%s\", \"%s\")",
                        config, file);
    if (file[0] == '\0')
      return sg_err_set(err, SG_EINVAL, "--config: missing value (FILE)");
    config = file;
  }
  if (config) {
    int rc = sg_run_config_load_yaml(c, config, err);
    if (rc < 0)
      return rc;
  }

  bool list_from_flags[NKEYS] = {false};
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--config") == 0) {
      i++;
      continue;
    }
    if (strncmp(a, "--config=", 9) == 0)
      continue;
    if (!is_flag(a) || a[2] == '\0') {
      char v[80];
      sg_run_config_shown(v, sizeof v, a);
      return sg_err_set(err, SG_EINVAL,
                        "unexpected argument \"%s\" (every setting is a --KEY "
                        "flag)", v);
    }
    const char *body = a + 2;
    const char *eq = strchr(body, '=');
    size_t klen = eq ? (size_t)(eq - body) : strlen(body);
    char name[80];
    if (klen >= sizeof name)
      klen = sizeof name - 1;
    memcpy(name, body, klen);
    name[klen] = '\0';
    char flag[96];
    snprintf(flag, sizeof flag, "--%s", name);

    const sg_run_key *k = sg_run_key_find(name);
    const char *value = eq ? eq + 1 : NULL;
    if (k == NULL && strncmp(name, "no-", 3) == 0 && sg_run_key_find(name + 3)) {
      k = sg_run_key_find(name + 3);
      if (k->type != SG_KEY_BOOL)
        return sg_err_set(err, SG_EINVAL, "%s: %s is not an on/off key", flag,
                          k->name);
      if (eq)
        return sg_err_set(err, SG_EINVAL, "%s: takes no value", flag);
      value = "off";
    }
    if (k == NULL) {
      const char *s = suggest(name, true);
      if (s)
        return sg_err_set(err, SG_EINVAL,
                          "%s: unknown flag (did you mean \"--%s\"?)", flag, s);
      return sg_err_set(err, SG_EINVAL, "%s: unknown flag", flag);
    }
    if (value == NULL) {
      if (k->type == SG_KEY_BOOL) {
        /* --spec alone is on; a word after it is its value, checked as
         * one (specgen takes no other words) */
        value = "on";
        if (i + 1 < argc && !is_flag(argv[i + 1]))
          value = argv[++i];
      } else if (i + 1 < argc && !is_flag(argv[i + 1])) {
        value = argv[++i];
      } else {
        return sg_err_set(err, SG_EINVAL, "%s: missing value (%s)", flag,
                          k->value_name ? k->value_name : "VALUE");
      }
    }
    if (k->type == SG_KEY_LIST && !list_from_flags[k - keys]) {
      list_clear(c, k); /* the command line's list replaces the file's */
      list_from_flags[k - keys] = true;
    }
    int rc = set_key(c, k, value, flag, err);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* ---- JSON ---------------------------------------------------------------- */

json_t *sg_run_config_to_json(const sg_run_config *c) {
  json_t *o = json_object();
  for (size_t i = 0; i < NKEYS; i++) {
    const sg_run_key *k = &keys[i];
    json_t *v = NULL;
    switch (k->type) {
    case SG_KEY_STRING: {
      const char *s = *CFIELD(c, k, char *);
      v = s ? json_string(s) : json_null();
      break;
    }
    case SG_KEY_LIST: {
      char *const *list = *(char **const *)((const char *)c + k->offset);
      size_t n = *(const size_t *)((const char *)c + k->count_offset);
      v = json_array();
      for (size_t j = 0; j < n; j++)
        json_array_append_new(v, json_string(list[j]));
      break;
    }
    case SG_KEY_INT:
      v = json_integer(*CFIELD(c, k, int));
      break;
    case SG_KEY_U64: {
      uint64_t x = *CFIELD(c, k, uint64_t);
      if (x <= (uint64_t)INT64_MAX) {
        v = json_integer((json_int_t)x);
      } else {
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)x);
        v = json_string(buf);
      }
      break;
    }
    case SG_KEY_DOUBLE:
      v = json_real(*CFIELD(c, k, double));
      break;
    case SG_KEY_BOOL:
      v = json_boolean(*CFIELD(c, k, bool));
      break;
    case SG_KEY__COUNT:
      break;
    }
    /* Strings were checked as UTF-8 when set; a NULL here means a caller
     * wrote a field by hand: record null rather than lose the key. */
    json_object_set_new(o, k->name, v ? v : json_null());
  }
  return o;
}

/* One JSON value as the text set_key reads, or NULL for a type the key
 * cannot take. buf holds numbers. */
static const char *json_as_text(const sg_run_key *k, const json_t *v,
                                char *buf, size_t n) {
  bool text_key = k->type == SG_KEY_STRING || k->type == SG_KEY_LIST;
  if (json_is_string(v))
    return json_string_value(v);
  if (json_is_integer(v) && !text_key) {
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    return buf;
  }
  if (json_is_real(v) && !text_key) {
    snprintf(buf, n, "%.17g", json_real_value(v)); /* exact round trip */
    return buf;
  }
  if (json_is_boolean(v) && k->type == SG_KEY_BOOL)
    return json_is_true(v) ? "on" : "off";
  return NULL;
}

int sg_run_config_from_json(sg_run_config *c, const json_t *j, sg_err *err) {
  if (!json_is_object(j))
    return sg_err_set(err, SG_EINVAL, "json: expected an object of keys");
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)j, name, v) {
    const sg_run_key *k = sg_run_key_find(name);
    if (k == NULL)
      return unknown_key(name, "json", err);
    if (json_is_null(v) && k->type == SG_KEY_STRING) {
      char **p = FIELD(c, k, char *);
      free(*p);
      *p = NULL;
      continue;
    }
    if (k->type == SG_KEY_LIST) {
      if (!json_is_array(v))
        return sg_err_set(err, SG_EINVAL, "json: key \"%s\": expected a list",
                          k->name);
      list_clear(c, k);
      size_t idx;
      json_t *e;
      json_array_foreach(v, idx, e) {
        if (!json_is_string(e))
          return sg_err_set(err, SG_EINVAL,
                            "json: key \"%s\": entry %zu is not a string",
                            k->name, idx);
        int rc = set_key(c, k, json_string_value(e), "json", err);
        if (rc < 0)
          return rc;
      }
      continue;
    }
    char buf[64], want[160];
    const char *text = json_as_text(k, v, buf, sizeof buf);
    if (text == NULL) {
      if (k->type == SG_KEY_STRING && k->choices == NULL)
        snprintf(want, sizeof want, "a string or null");
      else
        sg_run_config_describe(k, want, sizeof want);
      return sg_err_set(err, SG_EINVAL, "json: key \"%s\": expected %s", k->name,
                        want);
    }
    int rc = set_key(c, k, text, "json", err);
    if (rc < 0)
      return rc;
  }
  /* A run recorded before answer-at-cap existed ran without it: resumed or
   * replayed under its options, it still does. */
  if (json_object_get(j, "answer-at-cap") == NULL)
    c->knobs.answer_at_cap = false;
  return 0;
}

/* ---- usage --------------------------------------------------------------- */

static void usage_key(FILE *f, const sg_run_key *k) {
  char left[64];
  if (k->type == SG_KEY_BOOL)
    snprintf(left, sizeof left, "--[no-]%s", k->name);
  else
    snprintf(left, sizeof left, "--%s %s", k->name, k->value_name ? k->value_name : "VALUE");
  fprintf(f, "  %-30s %s\n", left, k->help);
}

void sg_run_config_usage(FILE *f) {
  fprintf(f, "  %-30s %s\n", "--config FILE",
          "a YAML file of these keys, applied before the other flags");
  /* Each group once, in the order the table first names it, with all its
   * keys: the table keeps related keys together, not always groups. */
  for (size_t g = 0; g < NKEYS; g++) {
    bool seen = false;
    for (size_t j = 0; j < g && !seen; j++)
      seen = strcmp(keys[j].group, keys[g].group) == 0;
    if (seen)
      continue;
    fprintf(f, "\n %s:\n", keys[g].group);
    for (size_t i = g; i < NKEYS; i++)
      if (strcmp(keys[i].group, keys[g].group) == 0)
        usage_key(f, &keys[i]);
  }
}
