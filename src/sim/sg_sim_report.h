/* sg_sim_report.h: running several configurations side by side and
 * rendering what they measured as a table or as JSON, with every ratio taken
 * against the baseline.
 *
 * The library renders into strings; the CLI prints them. The JSON object is
 *   {"preset", "seed", "params": {key: value...},
 *    "configs": [{"name", "e2e_s" (until the last workflow ended),
 *                 "e2e_geomean_s" (geometric mean over workflows of the
 *                 time each took), "iterations", "profiling_feedback",
 *                 "utilization" (0..1), "utilization_validation",
 *                 "utilization_profiling", "tokens": {"prompt",
 *                 "completion", "cached", "uncached", "consumption",
 *                 "total"} (common/sg_tokens.h defines them),
 *                 "early_terminations",
 *                 "forks", "candidates", "validated_ok", "best_speedup",
 *                 "best_speedup_geomean", "mean_main_gen_s",
 *                 "main_valid_fraction", "faults": {...},
 *                 "e2e_speedup_vs_baseline",
 *                 "e2e_geomean_speedup_vs_baseline" (the paper's: per task,
 *                 then the geometric mean), "feedback_ratio_vs_baseline",
 *                 "best_speedup_ratio_vs_baseline",
 *                 "tokens_ratio_vs_baseline" (total),
 *                 "consumption_ratio_vs_baseline", "prefix_cache":
 *                 {"local_hit_tokens", "remote_hit_tokens", "miss_tokens",
 *                 "remote_transfer_gb", "remote_transfer_s", "remote_yields"},
 *                 "llm_mean_streams"}...]}
 * Numbers are printed with a fixed precision so a seed gives the same bytes.
 */
#ifndef SG_SIM_REPORT_H
#define SG_SIM_REPORT_H

#include "common/sg_error.h"
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"

#include <stddef.h>

#define SG_SIM_MAX_CONFIGS 16

typedef struct sg_sim_campaign {
  sg_sim_params params;
  size_t n;                              /* configurations asked for */
  sg_sim_result results[SG_SIM_MAX_CONFIGS];
  sg_sim_result baseline;                /* always run: ratios need it */
} sg_sim_campaign;

/* Parses "baseline,spec,full" into variants (at most SG_SIM_MAX_CONFIGS, no
 * duplicates). SG_ENOENT naming an unknown one, SG_EINVAL for an empty
 * list or a duplicate. */
int sg_sim_configs_parse(const char *list, sg_sim_variant *out, size_t *n,
                         sg_err *err);

/* Runs the baseline and each configuration with the same parameters and
 * seed; c->params is a copy of p. */
int sg_sim_campaign_run(const sg_sim_params *p, const sg_sim_variant *v,
                        size_t n, sg_sim_campaign *c, sg_err *err);

/* The ratios of r to the campaign's baseline. */
double sg_sim_e2e_speedup(const sg_sim_campaign *c, const sg_sim_result *r);
double sg_sim_feedback_ratio(const sg_sim_campaign *c, const sg_sim_result *r);
/* The paper's token consumption of r (common/sg_tokens.h). */
uint64_t sg_sim_consumption(const sg_sim_result *r);

/* The report as JSON / as a human table; the caller frees the string. */
char *sg_sim_report_json(const sg_sim_campaign *c);
char *sg_sim_report_table(const sg_sim_campaign *c);

#endif
