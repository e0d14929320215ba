/* sg_sim_report.c: campaigns of several configurations, and their report.
 * See sg_sim_report.h. */
#include "sim/sg_sim_report.h"

#include "common/sg_tokens.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int sg_sim_configs_parse(const char *list, sg_sim_variant *out, size_t *n,
                         sg_err *err) {
  *n = 0;
  char *copy = sg_strdup(list);
  int rc = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == SG_SIM_MAX_CONFIGS) {
      rc = sg_err_set(err, SG_EINVAL, "--configs: more than %d configurations",
                      SG_SIM_MAX_CONFIGS);
      break;
    }
    rc = sg_sim_variant_parse(tok, &out[*n], err);
    if (rc < 0) {
      sg_err_prefix(err, "--configs");
      break;
    }
    for (size_t i = 0; i < *n; i++)
      if (strcmp(out[i].name, tok) == 0) {
        rc = sg_err_set(err, SG_EINVAL, "--configs: \"%s\" listed twice", tok);
        break;
      }
    if (rc < 0)
      break;
    (*n)++;
  }
  free(copy);
  if (rc == 0 && *n == 0)
    rc = sg_err_set(err, SG_EINVAL, "--configs: empty list");
  return rc;
}

int sg_sim_campaign_run(const sg_sim_params *p, const sg_sim_variant *v,
                        size_t n, sg_sim_campaign *c, sg_err *err) {
  memset(c, 0, sizeof *c);
  c->params = *p;
  if (n > SG_SIM_MAX_CONFIGS)
    return sg_err_set(err, SG_EINVAL, "more than %d configurations", SG_SIM_MAX_CONFIGS);
  sg_sim_variant base;
  int rc = sg_sim_variant_parse("baseline", &base, err);
  if (rc == 0)
    rc = sg_sim_run(p, &base, &c->baseline, err);
  if (rc < 0)
    return sg_err_prefix(err, "baseline");
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].name, "baseline") == 0) {
      c->results[i] = c->baseline;
    } else {
      rc = sg_sim_run(p, &v[i], &c->results[i], err);
      if (rc < 0)
        return sg_err_prefix(err, "%s", v[i].name);
    }
  }
  c->n = n;
  return 0;
}

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

double sg_sim_e2e_speedup(const sg_sim_campaign *c, const sg_sim_result *r) {
  return ratio(c->baseline.e2e_s, r->e2e_s);
}

double sg_sim_feedback_ratio(const sg_sim_campaign *c, const sg_sim_result *r) {
  return ratio((double)r->profiling_feedback, (double)c->baseline.profiling_feedback);
}

static uint64_t total_tokens(const sg_sim_result *r) {
  return sg_tokens_billed(r->prompt_tokens, r->completion_tokens);
}

uint64_t sg_sim_consumption(const sg_sim_result *r) {
  return sg_tokens_consumption(r->prompt_tokens, r->cached_tokens,
                               r->completion_tokens);
}

/* Rounded so the output is stable and readable. */
static json_t *num(double x, int digits) {
  if (!isfinite(x))
    return json_null();
  double m = pow(10, digits);
  return json_real(round(x * m) / m);
}

static double mean_main_gen_s(const sg_sim_result *r) {
  return r->main_gens_completed ? r->main_gen_s / (double)r->main_gens_completed : NAN;
}

static double main_valid_fraction(const sg_sim_result *r) {
  return r->main_validated ? (double)r->main_valid / (double)r->main_validated : NAN;
}

char *sg_sim_report_json(const sg_sim_campaign *c) {
  json_t *root = json_object();
  json_object_set_new(root, "preset", json_string(c->params.preset));
  json_object_set_new(root, "seed", json_integer((json_int_t)c->params.seed));
  json_t *params = json_object();
  for (size_t i = 0; i < sg_sim_param_count(); i++) {
    char buf[128];
    sg_sim_param_format(&c->params, i, buf, sizeof buf);
    json_object_set_new(params, sg_sim_param_get(i)->key, json_string(buf));
  }
  json_object_set_new(root, "params", params);
  json_t *arr = json_array();
  for (size_t i = 0; i < c->n; i++) {
    const sg_sim_result *r = &c->results[i];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(r->name));
    json_object_set_new(o, "e2e_s", num(r->e2e_s, 3));
    json_object_set_new(o, "e2e_geomean_s", num(r->e2e_geomean_s, 3));
    json_object_set_new(o, "iterations", json_integer((json_int_t)r->iterations));
    json_object_set_new(o, "profiling_feedback",
                        json_integer((json_int_t)r->profiling_feedback));
    json_object_set_new(o, "utilization", num(r->util_overall, 6));
    json_object_set_new(o, "utilization_validation", num(r->util_validate, 6));
    json_object_set_new(o, "utilization_profiling", num(r->util_profile, 6));
    json_object_set_new(o, "idle_waiting", num(r->idle_waiting, 6));
    json_object_set_new(o, "idle_no_work", num(r->idle_no_work, 6));
    json_object_set_new(o, "utilization_all_live", num(r->util_all_live, 6));
    json_t *tok = json_object();
    json_object_set_new(tok, "prompt", json_integer((json_int_t)r->prompt_tokens));
    json_object_set_new(tok, "completion",
                        json_integer((json_int_t)r->completion_tokens));
    json_object_set_new(tok, "cached", json_integer((json_int_t)r->cached_tokens));
    json_object_set_new(tok, "uncached",
                        json_integer((json_int_t)sg_tokens_uncached(
                            r->prompt_tokens, r->cached_tokens)));
    json_object_set_new(tok, "consumption",
                        json_integer((json_int_t)sg_sim_consumption(r)));
    json_object_set_new(tok, "total", json_integer((json_int_t)total_tokens(r)));
    json_object_set_new(o, "tokens", tok);
    json_object_set_new(o, "early_terminations",
                        json_integer((json_int_t)r->early_terminations));
    json_object_set_new(o, "criterion_accepts",
                        json_integer((json_int_t)r->criterion_accepts));
    json_object_set_new(o, "forks", json_integer((json_int_t)r->forks));
    json_object_set_new(o, "forks_trigger", json_integer((json_int_t)r->forks_trigger));
    json_object_set_new(o, "forks_idle", json_integer((json_int_t)r->forks_idle));
    json_object_set_new(o, "detached", json_integer((json_int_t)r->detached));
    json_object_set_new(o, "detached_answers",
                        json_integer((json_int_t)r->detached_answers));
    json_object_set_new(o, "sibling_waits", json_integer((json_int_t)r->sibling_waits));
    json_object_set_new(o, "ahead_started", json_integer((json_int_t)r->ahead_started));
    json_object_set_new(o, "ahead_adopted", json_integer((json_int_t)r->ahead_adopted));
    json_object_set_new(o, "ahead_stale", json_integer((json_int_t)r->ahead_stale));
    json_object_set_new(o, "ahead_stale_items",
                        json_integer((json_int_t)r->ahead_stale_items));
    json_object_set_new(o, "spec_valid_fraction",
                        num(r->spec_validated
                                ? (double)r->spec_valid / (double)r->spec_validated
                                : NAN,
                            4));
    json_object_set_new(o, "candidates", json_integer((json_int_t)r->candidates));
    json_object_set_new(o, "validated_ok", json_integer((json_int_t)r->validated_ok));
    json_object_set_new(o, "controller_profiled",
                        json_integer((json_int_t)r->controller_profiled));
    json_object_set_new(o, "best_speedup", num(r->best_speedup_mean, 4));
    json_object_set_new(o, "best_speedup_geomean", num(r->best_speedup_geomean, 4));
    json_object_set_new(o, "workflows_without_kernel",
                        json_integer((json_int_t)r->workflows_without_kernel));
    json_object_set_new(o, "mean_main_gen_s", num(mean_main_gen_s(r), 3));
    json_object_set_new(o, "main_valid_fraction", num(main_valid_fraction(r), 4));
    json_object_set_new(o, "workflows_done", json_integer((json_int_t)r->workflows_done));
    json_t *f = json_object();
    json_object_set_new(f, "generations_failed", json_integer((json_int_t)r->gens_failed));
    json_object_set_new(f, "devices_died", json_integer((json_int_t)r->devices_died));
    json_object_set_new(f, "devices_retired",
                        json_integer((json_int_t)r->devices_retired));
    json_object_set_new(f, "infra_failures", json_integer((json_int_t)r->infra_failures));
    json_object_set_new(f, "requests_failed",
                        json_integer((json_int_t)r->requests_failed));
    json_object_set_new(o, "faults", f);
    json_object_set_new(o, "generations_cancelled",
                        json_integer((json_int_t)r->gens_cancelled));
    json_object_set_new(o, "requests_aborted",
                        json_integer((json_int_t)r->requests_aborted));
    json_object_set_new(o, "resplits", json_integer((json_int_t)r->resplits));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    json_t *pc = json_object();
    json_object_set_new(pc, "local_hit_tokens", num(r->cache_local_tokens, 0));
    json_object_set_new(pc, "remote_hit_tokens", num(r->cache_remote_tokens, 0));
    json_object_set_new(pc, "miss_tokens", num(r->cache_miss_tokens, 0));
    json_object_set_new(pc, "remote_transfer_gb", num(r->remote_transfer_gb, 3));
    json_object_set_new(pc, "remote_transfer_s", num(r->remote_transfer_s, 3));
    json_object_set_new(pc, "remote_yields", json_integer((json_int_t)r->remote_yields));
    json_object_set_new(o, "prefix_cache", pc);
    json_object_set_new(o, "llm_mean_streams", num(r->llm_mean_streams, 3));
    json_object_set_new(o, "e2e_speedup_vs_baseline", num(sg_sim_e2e_speedup(c, r), 4));
    json_object_set_new(o, "e2e_geomean_speedup_vs_baseline",
                        num(ratio(c->baseline.e2e_geomean_s, r->e2e_geomean_s), 4));
    json_object_set_new(o, "feedback_ratio_vs_baseline",
                        num(sg_sim_feedback_ratio(c, r), 4));
    json_object_set_new(o, "best_speedup_ratio_vs_baseline",
                        num(ratio(r->best_speedup_geomean, c->baseline.best_speedup_geomean),
                            4));
    json_object_set_new(o, "tokens_ratio_vs_baseline",
                        num(ratio((double)total_tokens(r),
                                  (double)total_tokens(&c->baseline)),
                            4));
    json_object_set_new(o, "consumption_ratio_vs_baseline",
                        num(ratio((double)sg_sim_consumption(r),
                                  (double)sg_sim_consumption(&c->baseline)),
                            4));
    json_array_append_new(arr, o);
  }
  json_object_set_new(root, "configs", arr);
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  json_decref(root);
  if (s == NULL)
    abort(); /* jansson fails only on allocation failure: our OOM policy */
  char *copy = sg_strdup(s);
  free(s);
  return copy;
}

char *sg_sim_report_table(const sg_sim_campaign *c) {
  sg_buf b;
  sg_buf_init(&b, 0);
  const sg_sim_params *p = &c->params;
  sg_buf_printf(&b,
                "preset %s, seed %llu: %d workflows x %d iterations on %d devices, "
                "termination %s\n\n",
                p->preset[0] ? p->preset : "(none)", (unsigned long long)p->seed,
                p->workflows, p->knobs.iterations, p->devices, p->termination);
  int w = 22; /* the config column fits the longest name asked for */
  for (size_t i = 0; i < c->n; i++)
    if ((int)strlen(c->results[i].name) > w)
      w = (int)strlen(c->results[i].name);
  sg_buf_printf(&b,
                "%-*s %11s %8s %9s %6s %6s %6s %6s %7s %6s %8s %8s %8s %6s %7s %8s "
                "%7s\n",
                w, "config", "e2e_s", "x_base", "feedback", "x_base", "util", "val",
                "prof", "cons_M", "x_base", "prompt_M", "uncach_M", "compl_M",
                "early", "best_x", "x_base", "forks");
  for (size_t i = 0; i < c->n; i++) {
    const sg_sim_result *r = &c->results[i];
    sg_buf_printf(&b,
                  "%-*s %11.1f %8.3f %9llu %6.3f %6.3f %6.3f %6.3f %7.2f %6.3f %8.2f "
                  "%8.2f %8.2f %6llu %7.3f %8.3f %7llu\n",
                  w, r->name, r->e2e_s, sg_sim_e2e_speedup(c, r),
                  (unsigned long long)r->profiling_feedback, sg_sim_feedback_ratio(c, r),
                  r->util_overall, r->util_validate, r->util_profile,
                  (double)sg_sim_consumption(r) / 1e6,
                  ratio((double)sg_sim_consumption(r),
                        (double)sg_sim_consumption(&c->baseline)),
                  (double)r->prompt_tokens / 1e6,
                  (double)sg_tokens_uncached(r->prompt_tokens, r->cached_tokens) / 1e6,
                  (double)r->completion_tokens / 1e6,
                  (unsigned long long)r->early_terminations, r->best_speedup_geomean,
                  ratio(r->best_speedup_geomean, c->baseline.best_speedup_geomean),
                  (unsigned long long)r->forks);
  }
  for (size_t i = 0; i < c->n; i++) {
    const sg_sim_result *r = &c->results[i];
    if (r->gens_failed + r->devices_died + r->infra_failures + r->requests_failed == 0)
      continue;
    sg_buf_printf(&b,
                  "%s faults: %llu generations failed, %llu devices died, %llu retired, "
                  "%llu infra failures, %llu requests given up\n",
                  r->name, (unsigned long long)r->gens_failed,
                  (unsigned long long)r->devices_died,
                  (unsigned long long)r->devices_retired,
                  (unsigned long long)r->infra_failures,
                  (unsigned long long)r->requests_failed);
  }
  sg_buf_puts(&b,
              "\nx_base: ratio to baseline (e2e: baseline time / this time). util: busy "
              "device time / pool time\n(val + prof). tokens in millions: cons = the "
              "paper's token consumption (uncached\nprompt + completion); prompt = "
              "uncached + cached. best_x: geometric mean over workflows\nof the best "
              "kernel's speedup.\n");
  return sg_buf_steal(&b);
}
