/* sg_sim_params.c: the parameter table, the presets, `--set` and YAML
 * loading (libyaml's event parser). See sg_sim_params.h. */
#include "sim/sg_sim_params.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "config/sg_yaml.h"
#include "sim/sg_sim_streams.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* T_KNOB: a knob of the core (config/sg_knobs.h) whose row says "--set
 * KEY": its key, range, parser and doc come from that row. */
typedef enum { T_INT, T_DBL, T_STR, T_U64, T_KNOB } ptype;

typedef struct pdef {
  const char *key; /* T_KNOB: the row's name (its key is the row's) */
  ptype type;
  size_t off;
  double min, max;
  const char *doc; /* T_KNOB: NULL (the row's help) */
} pdef;

#define F(field) offsetof(sg_sim_params, field)
#define BIG 1e12
/* A knob's row placed in the table: KNOB(SG_KNOB_TICK). */
#define KNOB_PARAM(field, TYPE, name, def, lo, hi, flags, vname, GROUP, sim, LAND, help) \
  {name, T_KNOB, F(knobs.field), 0, 0, NULL},
#define KNOB(ROW) ROW(KNOB_PARAM)

static const pdef defs[] = {
    {"preset", T_STR, F(preset), 0, 0, "preset the values started from"},
    {"workflows", T_INT, F(workflows), 1, 10000, "parallel workflows (tasks)"},
    {"devices", T_INT, F(devices), 1, 4096, "devices in the pool"},
    KNOB(SG_KNOB_ITERATIONS)
    {"termination", T_STR, F(termination), 0, 0,
     "termination criterion: first-valid, hist-avg, hist-best, none"},
    {"search", T_STR, F(search), 0, 0, "search algorithm: refine, best-of-n:N"},
    {"gen.mean_s", T_DBL, F(gen_mean_s), 1e-3, BIG,
     "mean duration of a main (reasoning) generation, s"},
    {"gen.cv", T_DBL, F(gen_cv), 0, 10, "its coefficient of variation (log-normal)"},
    {"gen.rate_tok_s", T_DBL, F(gen_rate_tok_s), 1e-3, BIG, "decode rate, tokens/s"},
    {"gen.answer_tokens", T_DBL, F(gen_answer_tokens), 0, BIG,
     "answer tokens after the reasoning"},
    {"gen.prompt_tokens", T_DBL, F(gen_prompt_tokens), 0, BIG, "task prompt tokens"},
    {"gen.feedback_tokens", T_DBL, F(gen_feedback_tokens), 0, BIG,
     "prompt tokens per feedback item"},
    {"gen.chunk_s", T_DBL, F(gen_chunk_s), 0, BIG,
     "streaming chunk interval, s; 0: at triggers and ticks only"},
    {"text.bytes_per_token", T_DBL, F(text_bytes_per_token), 0.05, 16,
     "synthetic reasoning bytes per token"},
    {"triggers.per_gen", T_DBL, F(triggers_per_gen), 0, 400,
     "mean trigger sentences per reasoning trace (Poisson; stream.profile none)"},
    {"stream.profile", T_STR, F(stream_profile), 0, 0,
     "measured stream model: qwq32b, gptoss120b (sim/streams/), a .json file of "
     "that form, or none (triggers.per_gen, uniform positions, valid.threshold_*, "
     "valid.prefix_useful_p)"},
    {"spec.answer_tokens", T_DBL, F(spec_answer_tokens), 1, BIG,
     "tokens a speculative fork writes"},
    {"spec.rate_tok_s", T_DBL, F(spec_rate_tok_s), 1e-3, BIG, "its decode rate, tokens/s"},
    {"llm.prefill_tok_s", T_DBL, F(prefill_tok_s), 1e-3, BIG,
     "prefill rate of uncached prompt tokens, tokens/s"},
    {"llm.local_cache_hit", T_DBL, F(local_cache_hit), 0, 1,
     "fraction of a fork's prefix served by the server's own cache"},
    {"llm.remote_cache_hit", T_DBL, F(remote_cache_hit), 0, 1,
     "the same with the remote prefix cache (config full)"},
    {"llm.workflows_per_server", T_INT, F(llm_workflows_per_server), 1, 100000,
     "workflows sharing one LLM server"},
    {"llm.ref_streams", T_DBL, F(llm_ref_streams), 1, 100000,
     "streams per server at which gen.rate_tok_s holds (baseline in-flight)"},
    {"llm.contention", T_DBL, F(llm_contention), 0, 100,
     "per-token slowdown of a stream per extra stream on its server"},
    {"llm.prefill_interference", T_DBL, F(llm_prefill_interference), 0, 1,
     "share of a server's fork prefill time in which its streams do not decode "
     "(0: prefill slows no stream)"},
    {"llm.prefill_window_s", T_DBL, F(llm_prefill_window_s), 1, BIG,
     "window over which a server's prefill load is averaged, s"},
    KNOB(SG_KNOB_LLM_STREAMS)
    {"llm.kv_capacity_tokens", T_DBL, F(llm_kv_capacity_tokens), 0, BIG,
     "server KV capacity for contexts, tokens (0: constant cache-hit shares)"},
    {"kv.remote_gb_per_device", T_DBL, F(kv_remote_gb_per_device), 0, BIG,
     "remote prefix cache: spare memory per device, GB (config full)"},
    {"kv.eval_gb", T_DBL, F(kv_eval_gb), 0, BIG,
     "device memory an evaluation takes back from the store, GB"},
    {"kv.bytes_per_token", T_DBL, F(kv_bytes_per_token), 0, BIG,
     "KV cache bytes per token"},
    {"kv.transfer_gb_s", T_DBL, F(kv_transfer_gb_s), 0, BIG,
     "remote store to server transfer rate, GB/s (0: free)"},
    {"task.table", T_STR, F(task_table), 0, 0,
     "tasks: synthetic (drawn per workflow), glm or dsv4 (the paper's Tables 2 "
     "and 6 for that model's T1-T10)"},
    {"valid.main_p", T_DBL, F(valid_main_p), 0, 1,
     "probability a main generation's kernel is valid"},
    {"valid.threshold_min", T_DBL, F(valid_threshold_min), 0, 1,
     "shortest useful prefix (fraction of the trace), lower bound"},
    {"valid.threshold_max", T_DBL, F(valid_threshold_max), 0, 1,
     "shortest useful prefix, upper bound (drawn per workflow)"},
    {"valid.threshold_log", T_INT, F(valid_threshold_log), 0, 1,
     "1: the threshold is log-uniform in [min, max], 0: uniform"},
    {"valid.prefix_useful_p", T_DBL, F(valid_prefix_useful_p), 0, 1,
     "probability a reasoning trace's prefix can lead forks to a valid kernel"},
    {"valid.spec_p", T_DBL, F(valid_spec_p), 0, 1,
     "probability a fork past the threshold is valid"},
    {"valid.no_prefix_p", T_DBL, F(valid_no_prefix_p), 0, 1,
     "probability a fork before the threshold is valid"},
    {"fail.compile_w", T_DBL, F(fail_compile_w), 0, BIG, "weight of compile errors"},
    {"fail.runtime_w", T_DBL, F(fail_runtime_w), 0, BIG, "weight of runtime errors"},
    {"fail.numerical_w", T_DBL, F(fail_numerical_w), 0, BIG,
     "weight of numerical mismatches"},
    {"speed.first", T_DBL, F(speed_first), 1e-6, BIG,
     "median speedup of a from-scratch kernel"},
    {"speed.first_sigma", T_DBL, F(speed_first_sigma), 0, 10,
     "its log-spread across tasks"},
    {"speed.ceiling", T_DBL, F(speed_ceiling), 1, 1e6,
     "best reachable speedup, times the task's from-scratch median"},
    {"speed.step_frac", T_DBL, F(speed_step_frac), -1, 1,
     "share of the log-distance to the ceiling a refinement closes"},
    {"speed.step_sigma", T_DBL, F(speed_step_sigma), 0, 10, "its log-spread"},
    {"speed.spec_gap", T_DBL, F(speed_spec_gap), 0, 10,
     "log-loss of a fork forked at prefix 0 (times 1 - fraction)"},
    {"speed.spec_sigma", T_DBL, F(speed_spec_sigma), 0, 10,
     "log-spread of a fork's kernel around its parent's"},
    {"speed.noise_sigma", T_DBL, F(speed_noise_sigma), 0, 10,
     "log-noise of a profile measurement"},
    {"val.mean_s", T_DBL, F(val_mean_s), 1e-3, BIG, "mean validation time on a device, s"},
    {"val.cv", T_DBL, F(val_cv), 0, 10, "its coefficient of variation"},
    {"prof.mean_s", T_DBL, F(prof_mean_s), 1e-3, BIG, "mean profiling time on a device, s"},
    {"prof.cv", T_DBL, F(prof_cv), 0, 10, "its coefficient of variation"},
    {"compile.mean_s", T_DBL, F(compile_s), 0, BIG,
     "CPU compile time before validation, s (0: none)"},
    {"compile.slots", T_INT, F(compile_slots), 1, 4096, "CPU compile slots"},
    KNOB(SG_KNOB_TICK)
    {"ctl.idle_min_new_tokens", T_DBL, F(idle_min_new_tokens), 0, BIG,
     "reasoning growth needed for an idle fork, tokens"},
    KNOB(SG_KNOB_MAX_FORKS)
    KNOB(SG_KNOB_MAX_LIVE_FORKS)
    KNOB(SG_KNOB_FORK_GATE)
    KNOB(SG_KNOB_CUTOFF)
    {"sched.static_profile_devices", T_INT, F(static_profile_devices), -1, 4096,
     "profiling devices of the static split (-1: half)"},
    {"sched.max_infra_failures", T_INT, F(max_infra_failures), 1, 1000,
     "consecutive infra failures that retire a device"},
    {"sched.max_retries", T_INT, F(max_retries), 0, 1000,
     "re-queues of a request after infra failures"},
    KNOB(SG_KNOB_TIME_BUDGET)
    KNOB(SG_KNOB_TOKEN_BUDGET)
    {"fault.gen_fail_p", T_DBL, F(fault_gen_fail_p), 0, 1,
     "probability a generation fails midway"},
    {"fault.device_mtbf_s", T_DBL, F(fault_device_mtbf_s), 0, BIG,
     "mean time until a device dies, s (0: never)"},
    {"fault.infra_s", T_DBL, F(fault_infra_s), 1e-3, BIG,
     "time a dead device takes to fail a request, s"},
    {"seed", T_U64, F(seed), 0, 0, "random seed"},
};

#define NDEFS (sizeof defs / sizeof defs[0])

/* The presets. The paper's characterization fixes generation, validation and
 * profiling times, the valid fraction of baseline iterations and the useful
 * prefix range; the rest (rates, token counts, speed model) are assumptions
 * documented in docs/simulation.md. */
static void base_preset(sg_sim_params *p) {
  memset(p, 0, sizeof *p);
  sg_knobs_default(&p->knobs);
  p->workflows = 10;
  p->devices = 10;
  p->knobs.iterations = 100;
  snprintf(p->termination, sizeof p->termination, "hist-avg");
  snprintf(p->search, sizeof p->search, "refine");
  p->gen_cv = 0.35;
  p->gen_rate_tok_s = 50;
  p->gen_answer_tokens = 1500;
  p->gen_prompt_tokens = 3000;
  p->gen_feedback_tokens = 800;
  p->gen_chunk_s = 0;
  p->text_bytes_per_token = 0.25;
  p->triggers_per_gen = 4;
  snprintf(p->stream_profile, sizeof p->stream_profile, "none");
  p->spec_answer_tokens = 1500;
  p->spec_rate_tok_s = 50;
  p->prefill_tok_s = 1500;
  p->local_cache_hit = 0.5;
  p->remote_cache_hit = 0.95;
  p->llm_workflows_per_server = 10;
  p->llm_ref_streams = 8;
  p->llm_contention = 0;
  p->llm_prefill_interference = 0;
  p->llm_prefill_window_s = 60;
  p->llm_kv_capacity_tokens = 0;
  p->kv_remote_gb_per_device = 0;
  p->kv_eval_gb = 0;
  p->kv_bytes_per_token = 0;
  p->kv_transfer_gb_s = 0;
  snprintf(p->task_table, sizeof p->task_table, "synthetic");
  p->valid_threshold_min = 0.14;
  p->valid_threshold_max = 0.70;
  p->valid_no_prefix_p = 0.02;
  p->valid_prefix_useful_p = 1;
  p->fail_compile_w = 0.45;
  p->fail_runtime_w = 0.2;
  p->fail_numerical_w = 0.35;
  p->speed_first = 1.0;
  p->speed_first_sigma = 0.3;
  p->speed_ceiling = 4.0;
  p->speed_step_frac = 0.2;
  p->speed_step_sigma = 0.1;
  p->speed_spec_gap = 0.3;
  p->speed_spec_sigma = 0.1;
  p->speed_noise_sigma = 0.02;
  p->val_cv = 0.3;
  p->prof_cv = 0.2;
  p->compile_s = 0;
  p->compile_slots = 16;
  p->knobs.tick = 5;
  p->idle_min_new_tokens = 1024;
  p->knobs.max_forks = 64;
  p->knobs.max_live_forks = 8;
  p->knobs.fork_gate = 0.8;
  p->knobs.cutoff = 1.3;
  p->static_profile_devices = -1;
  p->max_infra_failures = 3;
  p->max_retries = 2;
  p->fault_gen_fail_p = 0;
  p->fault_device_mtbf_s = 0;
  p->fault_infra_s = 1;
  p->seed = 1;
}

/* The paper's workload model shared by both presets (docs/simulation.md,
 * "Calibration", names each assumption and why): the paper's K (no cap on
 * forks), the prefix-cache mechanism, log-uniform useful prefixes, a share
 * of traces whose prefix never helps a fork. */
static void paper_model(sg_sim_params *p) {
  p->knobs.max_live_forks = 100000;
  p->knobs.max_forks = 100000;
  p->valid_threshold_log = 1;
  p->spec_answer_tokens = 1000;
  /* Fitted on GLM's Table 9 alone (scripts/sim_fit.py fit; the other
   * cells are predictions): a fork past the useful prefix valid far more
   * often than a whole reasoning answer, a fork's kernel a little worse
   * than its parent's the shorter its prefix. The idle-fork growth (1024
   * tokens, base_preset) came out of the same fit. */
  p->valid_spec_p = 0.7;
  p->speed_spec_gap = 0.2;
  p->speed_spec_sigma = 0.05;
  p->kv_remote_gb_per_device = 100;
  p->kv_eval_gb = 40;
  p->kv_bytes_per_token = 376000;
  p->kv_transfer_gb_s = 25;
  /* The streams measured on QwQ-32B's CUDA traces (the reasoning models
   * the paper ran write CUDA too; gpt-oss-120b's 89 Triton traces are the
   * other profile): triggers, their positions and the first kernel. */
  snprintf(p->stream_profile, sizeof p->stream_profile, "qwq32b");
}

static void preset_glm(sg_sim_params *p) {
  base_preset(p);
  paper_model(p);
  p->gen_rate_tok_s = 26;
  p->llm_ref_streams = 8.19;
  p->llm_contention = 0.01;
  /* The fork budget: the streams at which a main decodes at most 10%
   * slower than at the calibrated 8.19 (r(n) in sg_sim_llm.h):
   * 1 + c (n - 1) <= 1.1 (1 + c (8.19 - 1)) gives n <= 18.9, so 18 per
   * server, 8 of them for forks beside its 10 workflows' mains. */
  p->knobs.llm_streams = 18;
  p->llm_kv_capacity_tokens = 150000;
  p->valid_prefix_useful_p = 0.8;
  snprintf(p->preset, sizeof p->preset, "paper-glm");
  p->gen_mean_s = 706.9;
  p->val_mean_s = 22.9;
  p->prof_mean_s = 26.5;
  p->valid_main_p = 0.363;
  /* Table 2: no valid kernel in 100 tries without the prefix on 8 of 10
   * tasks: (1 - p)^100 = 0.8 */
  p->valid_no_prefix_p = 0.002;
}

static void preset_dsv4(sg_sim_params *p) {
  base_preset(p);
  paper_model(p);
  p->gen_rate_tok_s = 22;
  p->llm_ref_streams = 9.62;
  p->llm_contention = 0;          /* a provider's API: our forks do not load it */
  p->llm_kv_capacity_tokens = 1e9; /* its context cache keeps every prefix */
  p->valid_prefix_useful_p = 0.75;
  snprintf(p->preset, sizeof p->preset, "paper-dsv4");
  p->gen_mean_s = 522.6;
  p->val_mean_s = 59.0;
  p->prof_mean_s = 26.6;
  p->valid_main_p = 0.407;
  p->valid_no_prefix_p = 0.009; /* Table 2: 4 of 10 tasks, (1 - p)^100 = 0.4 */
}

static const struct {
  const char *name;
  void (*fill)(sg_sim_params *p);
} presets[] = {
    {"paper-glm", preset_glm},
    {"paper-dsv4", preset_dsv4},
};

size_t sg_sim_preset_count(void) { return sizeof presets / sizeof presets[0]; }

const char *sg_sim_preset_name(size_t i) {
  return i < sg_sim_preset_count() ? presets[i].name : NULL;
}

int sg_sim_params_preset(sg_sim_params *p, const char *name, sg_err *err) {
  for (size_t i = 0; i < sg_sim_preset_count(); i++)
    if (strcmp(name, presets[i].name) == 0) {
      presets[i].fill(p);
      return 0;
    }
  return sg_err_set(err, SG_ENOENT, "unknown preset \"%s\" (known: paper-glm, paper-dsv4)",
                    name);
}

/* The key of entry d: its own, or its knob row's "--set KEY" (into buf). */
static const char *def_key(const pdef *d, char *buf, size_t n) {
  if (d->type != T_KNOB)
    return d->key;
  sg_knob_sim_key(sg_knobs_find(d->key), buf, n);
  return buf;
}

static const pdef *find(const char *key) {
  char buf[SG_SIM_NAME_MAX];
  for (size_t i = 0; i < NDEFS; i++)
    if (strcmp(def_key(&defs[i], buf, sizeof buf), key) == 0)
      return &defs[i];
  return NULL;
}

int sg_sim_params_set(sg_sim_params *p, const char *key, const char *value,
                      sg_err *err) {
  const pdef *d = find(key);
  if (d == NULL)
    return sg_err_set(err, SG_ENOENT,
                      "%s: unknown parameter (`specgen sim --list-params` lists them)",
                      key);
  if (strcmp(key, "preset") == 0) {
    uint64_t seed = p->seed;
    int rc = sg_sim_params_preset(p, value, err);
    if (rc == 0)
      p->seed = seed;
    return rc;
  }
  char *base = (char *)p + d->off;
  char *end = NULL;
  errno = 0;
  switch (d->type) {
  case T_KNOB: {
    sg_err e;
    sg_err_clear(&e);
    int rc = sg_knobs_set(&p->knobs, sg_knobs_find(d->key), value, &e);
    return rc < 0 ? sg_err_set(err, rc, "%s: %s", key, e.msg) : 0;
  }
  case T_STR:
    if (value[0] == '\0' || strlen(value) >= SG_SIM_NAME_MAX)
      return sg_err_set(err, SG_EINVAL, "%s: \"%s\" must be 1..%d characters", key,
                        value, SG_SIM_NAME_MAX - 1);
    snprintf(base, SG_SIM_NAME_MAX, "%s", value);
    return 0;
  case T_U64: {
    if (value[0] == '-' || value[0] == '\0')
      return sg_err_set(err, SG_EINVAL, "%s: \"%s\" is not an unsigned integer", key,
                        value);
    unsigned long long v = strtoull(value, &end, 0);
    if (errno || *end || v > (unsigned long long)INT64_MAX)
      return sg_err_set(err, SG_EINVAL, "%s: \"%s\" is not an integer in [0, 2^63)", key,
                        value);
    *(uint64_t *)base = v;
    return 0;
  }
  case T_INT: {
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end)
      return sg_err_set(err, SG_EINVAL, "%s: \"%s\" is not an integer", key, value);
    if (v < d->min || v > d->max)
      return sg_err_set(err, SG_EINVAL, "%s: %ld is out of range [%g, %g]", key, v,
                        d->min, d->max);
    *(int *)base = (int)v;
    return 0;
  }
  case T_DBL: {
    double v = strtod(value, &end);
    if (errno || end == value || *end || !isfinite(v))
      return sg_err_set(err, SG_EINVAL, "%s: \"%s\" is not a number", key, value);
    if (v < d->min || v > d->max)
      return sg_err_set(err, SG_EINVAL, "%s: %g is out of range [%g, %g]", key, v,
                        d->min, d->max);
    *(double *)base = v;
    return 0;
  }
  }
  return sg_err_set(err, SG_EINVAL, "%s: bad parameter type", key);
}

int sg_sim_params_set_kv(sg_sim_params *p, const char *kv, sg_err *err) {
  const char *eq = strchr(kv, '=');
  if (eq == NULL || eq == kv)
    return sg_err_set(err, SG_EINVAL, "\"%s\": expected key=value", kv);
  char *key = sg_strndup(kv, (size_t)(eq - kv));
  int rc = sg_sim_params_set(p, key, eq + 1, err);
  free(key);
  return rc;
}

int sg_sim_params_validate(const sg_sim_params *p, sg_err *err) {
  if (p->valid_threshold_min > p->valid_threshold_max)
    return sg_err_set(err, SG_EINVAL,
                      "valid.threshold_min (%g) is above valid.threshold_max (%g)",
                      p->valid_threshold_min, p->valid_threshold_max);
  if (p->fail_compile_w + p->fail_runtime_w + p->fail_numerical_w <= 0)
    return sg_err_set(err, SG_EINVAL,
                      "fail.compile_w, fail.runtime_w, fail.numerical_w: all zero");
  if (p->static_profile_devices >= p->devices && p->devices > 1)
    return sg_err_set(err, SG_EINVAL,
                      "sched.static_profile_devices (%d) must be below devices (%d)",
                      p->static_profile_devices, p->devices);
  if (strcmp(p->task_table, "synthetic") != 0 && strcmp(p->task_table, "glm") != 0 &&
      strcmp(p->task_table, "dsv4") != 0)
    return sg_err_set(err, SG_EINVAL, "task.table: \"%s\" (known: synthetic, glm, dsv4)",
                      p->task_table);
  if (!sg_sim_streams_none(p->stream_profile)) {
    sg_sim_streams st;
    int rc = sg_sim_streams_load(p->stream_profile, &st, err);
    if (rc < 0)
      return rc;
  }
  for (size_t i = 0; i < NDEFS; i++)
    if (defs[i].type == T_STR && strcmp(defs[i].key, "preset") != 0 &&
        ((const char *)p + defs[i].off)[0] == '\0')
      return sg_err_set(err, SG_EINVAL, "%s: empty", defs[i].key);
  return 0;
}

size_t sg_sim_param_count(void) { return NDEFS; }

/* A knob's doc: the run's flag, what the sim column adds after the key
 * (", in configurations with +gate, beyond") and the row's help line, whose
 * default in parentheses is the run's. */
static void knob_doc(const sg_knob *r, char *buf, size_t n) {
  char key[SG_SIM_NAME_MAX];
  sg_knob_sim_key(r, key, sizeof key);
  const char *rest = strstr(r->sim, key) + strlen(key);
  snprintf(buf, n, "as `specgen run --%s`%s: %s", r->name, rest, r->help);
}

const sg_sim_param_info *sg_sim_param_get(size_t i) {
  static sg_sim_param_info info[NDEFS];
  static char keys[NDEFS][SG_SIM_NAME_MAX], docs[NDEFS][512];
  if (i >= NDEFS)
    return NULL;
  info[i].key = def_key(&defs[i], keys[i], sizeof keys[i]);
  info[i].doc = defs[i].doc;
  if (defs[i].type == T_KNOB) {
    knob_doc(sg_knobs_find(defs[i].key), docs[i], sizeof docs[i]);
    info[i].doc = docs[i];
  }
  return &info[i];
}

void sg_sim_param_format(const sg_sim_params *p, size_t i, char *buf,
                         size_t n) {
  if (i >= NDEFS || n == 0)
    return;
  const char *base = (const char *)p + defs[i].off;
  ptype t = defs[i].type;
  if (t == T_KNOB) {
    /* a knob's number prints as the sim's own of its type */
    sg_knob_type kt = sg_knobs_find(defs[i].key)->type;
    if (kt == SG_KNOB_BOOL) {
      snprintf(buf, n, "%s", *(const bool *)base ? "on" : "off");
      return;
    }
    t = kt == SG_KNOB_INT ? T_INT : kt == SG_KNOB_U64 ? T_U64 : T_DBL;
  }
  switch (t) {
  case T_STR:
    snprintf(buf, n, "%s", base);
    break;
  case T_INT:
    snprintf(buf, n, "%d", *(const int *)base);
    break;
  case T_U64:
    snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)base);
    break;
  case T_DBL:
  case T_KNOB:
    snprintf(buf, n, "%.17g", *(const double *)base);
    break;
  }
}

/* YAML: a mapping whose values are scalars or nested mappings, nested keys
 * joined with dots (the walker, config/sg_yaml.h); lists are refused. */
typedef struct yload {
  sg_sim_params *p;
  bool first_key;
} yload;

static int yaml_value(void *data, const sg_yaml_value *v, sg_err *err) {
  yload *y = data;
  if (strcmp(v->key, "preset") == 0 && !y->first_key)
    return sg_err_set(err, SG_EINVAL,
                      "%s: preset: must be the first key (it resets the others)",
                      v->origin);
  y->first_key = false;
  sg_err e2;
  sg_err_clear(&e2);
  int r = sg_sim_params_set(y->p, v->key, v->value, &e2);
  return r < 0 ? sg_err_set(err, r, "%s: %s", v->origin, e2.msg) : 0;
}

int sg_sim_params_load_yaml_string(sg_sim_params *p, const char *text,
                                   size_t len, const char *name, sg_err *err) {
  yload y = {p, true};
  sg_yaml_opts o = {.nested = true, .lists = false};
  return sg_yaml_walk(text, len, name, &o, yaml_value, &y, err);
}

int sg_sim_params_load_yaml(sg_sim_params *p, const char *path, sg_err *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = sg_file_read(path, 1u << 20, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = sg_sim_params_load_yaml_string(p, buf, len, path, err);
  free(buf);
  return rc;
}
