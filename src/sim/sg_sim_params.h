/* sg_sim_params.h: every parameter of the simulator's models, the presets
 * calibrated to the SpecGen paper, and loading them from `--set key=value`
 * and from YAML files.
 *
 * One struct holds the whole configuration (docs/style.md rule 11): filled
 * from a preset, then a YAML file, then `--set` flags, and validated in one
 * place. Each field has a dotted key ("gen.mean_s") in one table, which
 * drives parsing, range checks, YAML loading and `specgen sim
 * --list-params`; the core's knobs in it are rows of config/sg_knobs.h,
 * placed in the table, whose key, range and parser are the row's. In YAML a key may be written dotted or nested:
 *
 *   preset: paper-glm        # optional, must come first
 *   workflows: 4
 *   gen:
 *     mean_s: 600
 *
 * docs/simulation.md explains what each model is and how it was calibrated.
 */
#ifndef SG_SIM_PARAMS_H
#define SG_SIM_PARAMS_H

#include "common/sg_error.h"
#include "config/sg_knobs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_SIM_NAME_MAX 64

typedef struct sg_sim_params {
  char preset[SG_SIM_NAME_MAX];
  /* Campaign. */
  int workflows;             /* parallel workflows (tasks) */
  int devices;               /* device pool G */
  char termination[SG_SIM_NAME_MAX]; /* criterion spec (sg_termination) */
  char search[SG_SIM_NAME_MAX];      /* search spec (sg_search) */
  /* Main (reasoning) generation. */
  double gen_mean_s;         /* mean duration of a main generation */
  double gen_cv;             /* its coefficient of variation (log-normal) */
  double gen_rate_tok_s;     /* decode rate, tokens per second */
  double gen_answer_tokens;  /* answer tokens after the reasoning */
  double gen_prompt_tokens;  /* task prompt */
  double gen_feedback_tokens;/* per feedback item in a refine prompt */
  double gen_chunk_s;        /* streaming granularity in virtual time */
  double text_bytes_per_token; /* synthetic reasoning bytes per token */
  double triggers_per_gen;   /* mean trigger sentences in a reasoning trace */
  char stream_profile[SG_SIM_NAME_MAX]; /* measured stream model
                                (sg_sim_streams.h); "none": the guessed one */
  /* Speculative (non-reasoning) forks. */
  double spec_answer_tokens; /* tokens a fork writes */
  double spec_rate_tok_s;    /* its decode rate */
  double prefill_tok_s;      /* prefill rate for uncached prompt tokens */
  double local_cache_hit;    /* fraction of a fork's prefix the server's own
                                cache serves */
  double remote_cache_hit;   /* the same with the remote prefix cache */
  /* LLM servers and prefix caches (sg_sim_llm.h). */
  int llm_workflows_per_server; /* workflows sharing one server */
  double llm_ref_streams;    /* streams per server at the calibrated rate */
  double llm_contention;     /* slowdown per extra stream */
  double llm_prefill_interference; /* share of a server's prefill time that
                                no stream decodes in (0: prefill is free) */
  double llm_prefill_window_s; /* window of the server's prefill load */
  double llm_kv_capacity_tokens; /* server KV for contexts; 0: the constant
                                cache-hit model above */
  double kv_remote_gb_per_device; /* remote prefix cache: spare memory */
  double kv_eval_gb;         /* memory an evaluation takes back */
  double kv_bytes_per_token; /* KV size of one token */
  double kv_transfer_gb_s;   /* store to server transfer rate */
  /* Tasks: "synthetic" (drawn), "glm" or "dsv4" (sg_sim_tasks.h). */
  char task_table[SG_SIM_NAME_MAX];
  /* Kernel validity. */
  double valid_main_p;       /* a main generation's kernel is valid */
  double valid_threshold_min;/* shortest useful prefix, fraction of trace: */
  double valid_threshold_max;/*   drawn per workflow in [min, max] */
  int valid_threshold_log;   /* 1: log-uniform in [min, max], 0: uniform */
  double valid_prefix_useful_p; /* a main generation's prefix can lead a
                                fork to a valid kernel at all */
  double valid_spec_p;       /* a fork past the threshold is valid */
  double valid_no_prefix_p;  /* a fork before the threshold is valid */
  double fail_compile_w;     /* mix of failure kinds (weights) */
  double fail_runtime_w;
  double fail_numerical_w;
  /* Kernel speed (log-speedup model). */
  double speed_first;        /* median speedup of a from-scratch kernel */
  double speed_first_sigma;  /* its log-spread across tasks */
  double speed_ceiling;      /* best reachable speedup, times the task's
                                from-scratch median */
  double speed_step_frac;    /* share of the log-distance from the base
                                kernel to the ceiling a refinement closes */
  double speed_step_sigma;   /* log-spread of a refinement */
  double speed_spec_gap;     /* log-loss of a fork at prefix fraction 0
                                (scaled by 1 - fraction) */
  double speed_spec_sigma;   /* log-spread of a fork around its parent */
  double speed_noise_sigma;  /* measurement noise of a profile */
  /* Evaluation. */
  double val_mean_s, val_cv; /* validation on a device */
  double prof_mean_s, prof_cv; /* profiling on a device */
  double compile_s;          /* CPU compile before validation; 0: none */
  int compile_slots;
  /* Controller and scheduler knobs (sg_ctl_opts, sg_sched_opts). */
  double idle_min_new_tokens;/* reasoning growth for an idle fork */
  int static_profile_devices;/* -1: even split */
  int max_infra_failures;
  int max_retries;
  /* Faults. */
  double fault_gen_fail_p;   /* a generation fails midway */
  double fault_device_mtbf_s;/* mean time to a device dying; 0: never */
  double fault_infra_s;      /* how long a dead device takes to fail a run */
  /* Reproducibility. */
  uint64_t seed;
  /* The core's knobs (config/sg_knobs.h). Those whose row says "--set KEY"
   * are parameters under that key, read and range-checked by the row (the
   * gate and the cutoff used only by the configurations that name them);
   * the policy switches come from the configuration (sg_sim_variant);
   * every other knob keeps its default. */
  sg_knobs knobs;
} sg_sim_params;

/* Compiled-in presets: "paper-glm", "paper-dsv4". */
size_t sg_sim_preset_count(void);
const char *sg_sim_preset_name(size_t i);
/* Fills p from the preset; SG_ENOENT (naming the known ones) if unknown. */
int sg_sim_params_preset(sg_sim_params *p, const char *name, sg_err *err);

/* Sets one key from text ("gen.mean_s", "700"). SG_ENOENT for an unknown
 * key, SG_EINVAL naming key and value for a malformed or out-of-range value.
 * "preset" resets every field to that preset. */
int sg_sim_params_set(sg_sim_params *p, const char *key, const char *value,
                      sg_err *err);
/* "key=value" form of the above. */
int sg_sim_params_set_kv(sg_sim_params *p, const char *kv, sg_err *err);

/* Applies a YAML file on top of p. Errors name the file, the line and the
 * key ("sim.yaml:3: gen.mean_s: ..."). */
int sg_sim_params_load_yaml(sg_sim_params *p, const char *path, sg_err *err);
/* The same from a string; name is used in messages. */
int sg_sim_params_load_yaml_string(sg_sim_params *p, const char *text,
                                   size_t len, const char *name, sg_err *err);

/* Cross-field checks (threshold_min <= max, weights not all 0, ...). */
int sg_sim_params_validate(const sg_sim_params *p, sg_err *err);

/* The key table, for listings and docs. */
typedef struct sg_sim_param_info {
  const char *key;
  const char *doc;
} sg_sim_param_info;
size_t sg_sim_param_count(void);
const sg_sim_param_info *sg_sim_param_get(size_t i);
/* The value of key i as text (for listings and the JSON report); buf gets
 * at most n bytes. */
void sg_sim_param_format(const sg_sim_params *p, size_t i, char *buf,
                         size_t n);

#endif
