/* sg_run_config.h: the configuration of `specgen run`, one table of keys.
 *
 * Every setting is one key. The same key is a command-line flag (`--KEY
 * VALUE`, `--KEY=VALUE`; a bool also as a bare `--KEY`) and a YAML key of the
 * file given with `--config FILE` (spelled the same, dashes included), and is
 * recorded in the run store as part of the run's configuration (JSON). The
 * table below drives the parsing of all three, the usage text and
 * docs/configuration.md's reference (a unit test checks that every key is
 * there), so no key can exist in one place and not the others. Precedence:
 * the defaults, then the file, then the flags; a list key given as a flag
 * replaces the file's list rather than adding to it.
 *
 * Errors name where the bad value came from: "--iterations: expected an
 * integer from 1 to 100000, got \"x\"" or "run.yaml:7: key \"iteration\": unknown
 * key (did you mean \"iterations\"?)".
 */
#ifndef SG_RUN_CONFIG_H
#define SG_RUN_CONFIG_H

#include "common/sg_error.h"
#include "config/sg_knobs.h"
#include "config/sg_value.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sg_run_config {
  /* what to optimize */
  char **task;             /* task: one or more names or directories */
  size_t n_task;
  /* the model */
  char *llm;               /* llm: base URL; NULL: the built-in test server */
  char *model;             /* model: required with llm */
  char *profile;           /* profile: generic|vllm|sglang|deepseek|openai
                              (generic) */
  char *api_key_env;       /* api-key-env: OPENAI_API_KEY */
  int max_tokens;          /* max-tokens: per generation, 0: server default */
  double temperature;      /* temperature: < 0: server default (-1) */
  double gen_deadline;     /* gen-deadline: s, per generation (1800) */
  double idle_timeout;     /* idle-timeout: s between stream events (120) */
  char *reasoning;         /* reasoning: native|prompted: the model thinks on
                              its own, or is asked to think inside
                              <think>...</think> first (native) */
  double llm_outage;       /* llm-outage: s of model server failures before
                              the run stops, resumable (120) */
  int main_retries;        /* main-retries: a main generation the model
                              server cut is sent again at once this many
                              times per iteration, then after waits (2) */
  /* the built-in test server (used only without llm) */
  double server_speed;     /* server-speed: tokens/s per stream (300) */
  int server_concurrency;  /* server-concurrency: streams at the full rate
                              (0: no contention) */
  char *server_fault;      /* server-fault: a fault spec applied to every
                              request, NULL: none */
  char *replay;            /* replay: a recorded run's directory whose model
                              streams answer instead of a model; NULL: none */
  double replay_speed;     /* replay-speed: the recorded pace times this; 0:
                              as fast as possible (1) */
  bool replay_evals;       /* replay-evals: evaluation results from the
                              recorded run where it evaluated the same
                              kernel (off) */
  /* devices and evaluation */
  char *devices;           /* devices: "cpu:0-1", "cuda:0-7", "cpu:0,cpu:2"
                              (cpu:0) */
  int compile_workers;     /* compile-workers: 1 */
  int trials;              /* trials: correctness input sets (3) */
  int runs;                /* runs: timed runs (40; 0: the evaluator's) */
  int warmups;             /* warmups: (10) */
  double hang_grace;       /* hang-grace: s beyond eval-timeout (30) */
  int remote;              /* remote: device slots on worker hosts, through
                              Redis (docs/remote.md) (0) */
  /* the KV store (docs/kvstore.md) */
  bool kv_store;           /* kv-store: start it (off) */
  char *kv_store_listen;   /* kv-store-listen: HOST:PORT (127.0.0.1:0) */
  char *kv_store_memory;   /* kv-store-memory: SIZE per device (4G) */
  char *kv_store_reserve;  /* kv-store-reserve: SIZE left to an evaluation
                              (8G) */
  /* the search */
  char *search;            /* search: refine|best-of-n[:N]|evolve[:...]|exec:CMD
                              (refine) */
  char *termination;       /* termination: first-valid|hist-avg|hist-best|none,
                              NAME[:ARG] (hist-avg) */
  bool token_forks;        /* token-forks: forks as exact token-id prompts
                              where the profile allows (vllm) (on) */
  uint64_t seed;           /* seed: (1) */
  /* the policy knobs of the core, shared with `specgen sim`: their keys,
     defaults and landing are rows of config/sg_knobs.h */
  sg_knobs knobs;
  /* output */
  char *out;               /* out: run directory; NULL: runs/<UTC time> */
  char *resume;            /* resume: continue the run in this directory */
  char *prompts;           /* prompts: directory of template overrides */
  bool quiet;              /* quiet: no progress lines */
  bool json;               /* json: progress as one JSON event per line */
  char *dashboard;         /* dashboard: ADDR:PORT of a live dashboard
                              (docs/report.md); NULL: none */
} sg_run_config;

typedef enum sg_run_key_type {
  SG_KEY_STRING,   /* char * (NULL: unset) */
  SG_KEY_LIST,     /* char ** + size_t count; flags repeat, YAML: a sequence
                      or one scalar */
  SG_KEY_INT,      /* int within [min, max] */
  SG_KEY_U64,      /* uint64_t within [min, max] */
  SG_KEY_DOUBLE,   /* double within [min, max] */
  SG_KEY_BOOL,     /* on|off|true|false|yes|no|1|0; bare flag: on */
  SG_KEY__COUNT
} sg_run_key_type;

typedef struct sg_run_key {
  const char *name;         /* "time-budget" */
  sg_run_key_type type;
  size_t offset;            /* of the field in sg_run_config */
  size_t count_offset;      /* SG_KEY_LIST: of its size_t count */
  double min, max;          /* numbers */
  const char *choices;      /* strings with fixed values: "a|b|c", else NULL */
  const char *value_name;   /* for the usage text: "N", "S", "URL" */
  const char *help;         /* one line, with the default */
  unsigned flags;           /* SG_KEYF_* */
  const char *group;        /* the struct's section, for the usage text */
} sg_run_key;

/* Range flags of a number key: the value parser's (config/sg_value.h). */
#define SG_KEYF_MIN_OPEN SG_VALUEF_MIN_OPEN   /* min itself is out of range */
#define SG_KEYF_MAX_OPEN SG_VALUEF_MAX_OPEN   /* max itself is out of range */
#define SG_KEYF_MINUS_ONE SG_VALUEF_MINUS_ONE /* -1 is accepted as well ("the
                                                 default") */

/* Caps on what is read from outside. */
#define SG_RUN_CONFIG_FILE_MAX ((size_t)1 << 20) /* a YAML file, bytes */
#define SG_RUN_VALUE_MAX 4096                    /* one value, bytes */
#define SG_RUN_LIST_MAX 1024                     /* entries of a list key */

/* The table (static) and its length. */
const sg_run_key *sg_run_keys(size_t *n);
/* The key called name, or NULL. */
const sg_run_key *sg_run_key_find(const char *name);

/* The defaults (the comments above). */
void sg_run_config_init(sg_run_config *c);
void sg_run_config_free(sg_run_config *c);

/* Sets key from text; origin names where it came from, for errors ("--seed",
 * "run.yaml:7"; NULL: none). An origin that starts with "--" names the key
 * already ("--seed: expected ..."); any other is followed by the key
 * ("run.yaml:7: key \"seed\": expected ..."). A LIST key appends. An empty
 * value is refused. SG_ENOENT for an unknown key (with a suggestion),
 * SG_EINVAL for a bad value. */
int sg_run_config_set(sg_run_config *c, const char *key, const char *value,
                      const char *origin, sg_err *err);

/* Applies a YAML file: a mapping of keys to scalars (lists: a sequence of
 * scalars, or one scalar). Errors name the file and line. */
int sg_run_config_load_yaml(sg_run_config *c, const char *path, sg_err *err);
/* The same from len bytes of text; name stands for the file in errors. A
 * list key given in the text replaces the list; a plain null (`out:`, `~`)
 * unsets a string key and empties a list; duplicate keys, nested mappings,
 * aliases and a second document are errors. */
int sg_run_config_load_yaml_string(sg_run_config *c, const char *text,
                                   size_t len, const char *name, sg_err *err);

/* Applies argv[first..argc): first `--config FILE` wherever it is (once at
 * most), then every other flag in order. A value never starts with "--"
 * (`--out --quiet` is a missing value). A bool takes the next argument only
 * when it is a bool word (`--spec off`). SG_EINVAL (usage) for an unknown
 * flag (with a suggestion), a missing value, a positional argument; the
 * file's own errors as load_yaml returns them. "--help" is not handled
 * here. */
int sg_run_config_parse_args(sg_run_config *c, int argc, char **argv,
                             int first, sg_err *err);

/* Every key as a JSON object (unset strings as null; a token-budget above
 * 2^63-1 as a decimal string, since JSON integers stop there); the caller
 * owns the result. And back, for a resumed run: keys absent from j keep
 * their value, unknown keys are errors naming them, values go through
 * sg_run_config_set's checks (origin "json"). A recorded configuration
 * without "answer-at-cap" predates it: that key reads off. */
json_t *sg_run_config_to_json(const sg_run_config *c);
int sg_run_config_from_json(sg_run_config *c, const json_t *j, sg_err *err);

/* The checks that span keys or need parsing: at least one task; model
 * given with llm; not json and quiet together; server-fault parses
 * (sg_llm_fault_parse); devices well formed (sg_run_devices_parse); profile
 * one of its choices; termination and search build in their registries
 * (an exec:CMD search only needs a non-blank CMD). Messages start with the
 * key. */
int sg_run_config_check(const sg_run_config *c, sg_err *err);

/* Expands a devices spec ("cpu:0-1", "cuda:0-3,cuda:6", "cpu:2") into a
 * list of device names ("cpu:0", "cpu:1"); the caller frees each and the
 * list. Duplicates and mixing cpu with cuda are errors. */
int sg_run_devices_parse(const char *spec, char ***out, size_t *n,
                         sg_err *err);

/* The flags' usage text, one line per key under its group's title,
 * generated from the table, after a line for --config. */
void sg_run_config_usage(FILE *f);

/* The kv-store-* keys' values (sizes, the address), in sg_run_kv.c;
 * called by sg_run_config_check. */
int sg_run_kv_config_check(const sg_run_config *c, sg_err *err);

#endif
