/* test_sim_runtime.c: the simulated runtime driving the real core: seeds
 * replay, each configuration keeps its invariants, the models hold their
 * calibration, faults never leave a workflow unfinished, and the policy
 * orders the configurations as it should. */
#include "sg_test.h"
#include "sim_test_preset.h"
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"
#include "sim/sg_sim_report.h"

#include <stdio.h>
#include <stdlib.h>

static sg_sim_params preset(const char *name) { return sim_test_preset(name); }

/* A small campaign: 3 workflows, 12 iterations, 4 devices. */
static sg_sim_params small(void) {
  sg_sim_params p = preset("paper-glm");
  p.workflows = 3;
  p.knobs.iterations = 12;
  p.devices = 4;
  return p;
}

static sg_sim_result run(const sg_sim_params *p, const char *config) {
  sg_sim_variant v;
  sg_sim_result r;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_sim_variant_parse(config, &v, &err), err);
  SG_CHECK_OK(sg_sim_run(p, &v, &r, &err), err);
  return r;
}

static char *campaign_json(const sg_sim_params *p) {
  sg_sim_variant v[SG_SIM_VARIANTS];
  for (int i = 0; i < SG_SIM_VARIANTS; i++) {
    sg_err err;
    SG_CHECK_OK(sg_sim_variant_parse(sg_sim_variant_name(i), &v[i], &err), err);
  }
  sg_sim_campaign *c = malloc(sizeof *c);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_sim_campaign_run(p, v, SG_SIM_VARIANTS, c, &err), err);
  char *s = sg_sim_report_json(c);
  free(c);
  return s;
}

static void same_seed_same_bytes(void) {
  sg_sim_params p = small();
  p.seed = 5;
  char *a = campaign_json(&p);
  char *b = campaign_json(&p);
  SG_CHECK(strlen(a) > 1000);
  SG_CHECK_STR_EQ(a, b);
  free(a);
  free(b);
}

static void different_seeds_differ(void) {
  sg_sim_params p = small();
  p.seed = 5;
  sg_sim_result a = run(&p, "full");
  p.seed = 6;
  sg_sim_result b = run(&p, "full");
  SG_CHECK(a.e2e_s != b.e2e_s);
  SG_CHECK(a.events != b.events || a.forks != b.forks ||
           a.profiling_feedback != b.profiling_feedback);
}

static void check_invariants(const sg_sim_params *p, const sg_sim_result *r) {
  SG_CHECK_EQ_INT(r->workflows_done, p->workflows);
  SG_CHECK_EQ_INT(r->iterations, (uint64_t)p->workflows * (uint64_t)p->knobs.iterations);
  SG_CHECK(r->e2e_s > 0);
  SG_CHECK(r->util_validate >= 0 && r->util_validate <= 1);
  SG_CHECK(r->util_profile >= 0 && r->util_profile <= 1);
  SG_CHECK(r->util_overall >= 0 && r->util_overall <= 1);
  SG_CHECK_NEAR(r->util_overall, r->util_validate + r->util_profile, 1e-12);
  /* Device time is busy, idle while requests waited, or idle with none. */
  SG_CHECK(r->idle_waiting >= 0 && r->idle_no_work >= 0);
  SG_CHECK_NEAR(r->util_overall + r->idle_waiting + r->idle_no_work, 1, 1e-9);
  SG_CHECK(r->util_all_live > 0 && r->util_all_live <= 1);
  /* Feedback counted by the runtime equals what the controllers saw. */
  SG_CHECK_EQ_INT(r->profiling_feedback, r->controller_profiled);
  SG_CHECK(r->profiling_feedback <= r->validated_ok);
  SG_CHECK(r->validated_ok <= r->candidates);
  SG_CHECK_EQ_INT(r->validated_ok, r->main_valid + r->spec_valid);
  SG_CHECK_EQ_INT(r->early_terminations, r->controller_early);
  SG_CHECK(r->early_terminations <= r->criterion_accepts);
  SG_CHECK(r->criterion_accepts <= r->iterations);
  SG_CHECK(r->cached_tokens <= r->prompt_tokens);
  SG_CHECK_EQ_INT(r->forks, r->forks_trigger + r->forks_idle);
  SG_CHECK(r->main_gens >= r->iterations);
  SG_CHECK(r->workflows_without_kernel <= (uint64_t)p->workflows);
  SG_CHECK(r->best_speedup_geomean > 0 && isfinite(r->best_speedup_geomean));
}

/* A long campaign keeps only what an iteration can reach: the generation
 * and request rings stay far smaller than the ids the campaign used, and
 * the results are what the seed gives (checked byte for byte above). */
static void memory_is_bounded_by_an_iteration(void) {
  sg_sim_params p = small();
  p.workflows = 2;
  p.knobs.iterations = 200;
  sg_sim_result r = run(&p, "full");
  check_invariants(&p, &r);
  SG_CHECK_MSG(r.gen_slots_max > 0 && r.gen_slots_max * 8 < r.forks / 2,
               "%llu generation slots for %llu forks per workflow",
               (unsigned long long)r.gen_slots_max, (unsigned long long)(r.forks / 2));
  SG_CHECK_MSG(r.req_slots_max > 0 && r.req_slots_max * 4 < r.candidates,
               "%llu request slots for %llu candidates",
               (unsigned long long)r.req_slots_max, (unsigned long long)r.candidates);
}

static void baseline_never_forks(void) {
  sg_sim_params p = small();
  sg_sim_result r = run(&p, "baseline");
  check_invariants(&p, &r);
  SG_CHECK_EQ_INT(r.forks, 0);
  SG_CHECK_EQ_INT(r.early_terminations, 0);
  SG_CHECK_EQ_INT(r.cached_tokens, 0);
  SG_CHECK_EQ_INT(r.gens_cancelled, 0);
  /* One main generation per iteration, each candidate validated. */
  SG_CHECK_EQ_INT(r.main_gens, r.iterations);
  SG_CHECK_EQ_INT(r.main_validated, r.iterations);
}

static void spec_configs_fork_and_end_early(void) {
  sg_sim_params p = small();
  for (int i = 1; i < SG_SIM_VARIANTS; i++) {
    sg_sim_result r = run(&p, sg_sim_variant_name(i));
    check_invariants(&p, &r);
    SG_CHECK_MSG(r.forks > 0, "%s: no forks", r.name);
    SG_CHECK_MSG(r.forks_trigger > 0, "%s: no trigger forks", r.name);
    SG_CHECK_MSG(r.early_terminations > 0, "%s: never ended early", r.name);
    SG_CHECK_MSG(r.spec_validated > 0, "%s: no fork validated", r.name);
  }
}

/* The constant model (no KV capacity): the remote cache's share applies. */
static void remote_cache_serves_more_of_the_prefix(void) {
  sg_sim_params p = small();
  p.llm_kv_capacity_tokens = 0;
  sg_sim_result a = run(&p, "spec+realloc+priority");
  sg_sim_result b = run(&p, "full");
  SG_CHECK((double)b.cached_tokens / (double)b.prompt_tokens >
           (double)a.cached_tokens / (double)a.prompt_tokens + 0.1);
}

static void synthetic_reasoning_triggers_only_where_planted(void) {
  /* No planted trigger sentences and no idle forks: the real scanner finds
   * nothing in the filler, so nothing forks (the guessed stream model;
   * test_sim_streams plants the measured one's). */
  sg_sim_params p = small();
  snprintf(p.stream_profile, sizeof p.stream_profile, "none");
  p.triggers_per_gen = 0;
  p.idle_min_new_tokens = 1e12;
  sg_sim_result r = run(&p, "full");
  check_invariants(&p, &r);
  SG_CHECK_EQ_INT(r.forks, 0);
  /* Planted ones are found. */
  p.triggers_per_gen = 6;
  r = run(&p, "full");
  SG_CHECK(r.forks_trigger > 0);
  SG_CHECK_EQ_INT(r.forks_idle, 0);
}

/* Event-driven streaming (chunk_s 0) and fixed chunks both hand the
 * planted triggers to the scanner; the first needs far fewer events, and
 * both campaigns come out alike (same generations, forks within a third). */
static void streaming_modes_agree(void) {
  sg_sim_params p = small();
  p.gen_chunk_s = 0;
  sg_sim_result ev = run(&p, "full");
  check_invariants(&p, &ev);
  p.gen_chunk_s = 2;
  sg_sim_result ch = run(&p, "full");
  check_invariants(&p, &ch);
  SG_CHECK(ev.forks_trigger > 0 && ch.forks_trigger > 0);
  SG_CHECK_MSG(ev.events * 2 < ch.events, "events %llu vs %llu",
               (unsigned long long)ev.events, (unsigned long long)ch.events);
  SG_CHECK(fabs((double)ev.forks - (double)ch.forks) < 0.34 * (double)ch.forks);
  SG_CHECK(ev.e2e_s > 0.7 * ch.e2e_s && ev.e2e_s < 1.3 * ch.e2e_s);
}

/* The prefix-cache mechanism: a server whose working set overflows its
 * KV keeps only part of a fork's prefix; the remote store restores more
 * of the rest (counted as remote hits, with transfer time), and yields to
 * evaluations when it is full. With room for everything, every fork's
 * prompt is cached. */
static void prefix_cache_mechanism(void) {
  sg_sim_params p = small();
  p.llm_kv_capacity_tokens = 20000;
  p.kv_bytes_per_token = 1e5;
  p.kv_remote_gb_per_device = 1;
  p.kv_eval_gb = 1;
  p.kv_transfer_gb_s = 10;
  sg_sim_result a = run(&p, "spec+realloc+priority");
  sg_sim_result b = run(&p, "full");
  check_invariants(&p, &a);
  check_invariants(&p, &b);
  SG_CHECK(a.cache_miss_tokens > 0);
  SG_CHECK(a.cache_remote_tokens == 0 && a.remote_yields == 0);
  SG_CHECK(b.cache_remote_tokens > 0 && b.remote_transfer_s > 0);
  SG_CHECK(b.remote_yields > 0); /* a full store, evaluations take it back */
  SG_CHECK(b.cache_miss_tokens / (b.cache_miss_tokens + b.cache_local_tokens +
                                  b.cache_remote_tokens) <
           a.cache_miss_tokens / (a.cache_miss_tokens + a.cache_local_tokens +
                                  a.cache_remote_tokens));
  p.llm_kv_capacity_tokens = 1e12;
  sg_sim_result c = run(&p, "spec+realloc+priority");
  SG_CHECK(c.forks > 0);
  SG_CHECK_NEAR(c.cache_miss_tokens, 0, 1e-6);
  SG_CHECK(c.cache_local_tokens > 0);
}

/* Prefill interference: the prefix tokens a fork finds in no cache are
 * prefilled on its server's GPUs, in time no stream decodes in; the main
 * generations that start meanwhile are slower. The remote cache, restoring
 * those tokens instead, takes that cost away; without misses the option
 * changes nothing. */
static void prefill_slows_the_mains(void) {
  sg_sim_params p = small();
  p.llm_kv_capacity_tokens = 20000;
  p.prefill_tok_s = 200;
  sg_sim_result a = run(&p, "spec+realloc+priority");
  p.llm_prefill_interference = 1;
  sg_sim_result b = run(&p, "spec+realloc+priority");
  check_invariants(&p, &b);
  SG_CHECK(a.cache_miss_tokens > 0 && b.cache_miss_tokens > 0);
  double ma = a.main_gen_s / (double)a.main_gens_completed;
  double mb = b.main_gen_s / (double)b.main_gens_completed;
  SG_CHECK_MSG(mb > 1.02 * ma, "%g s vs %g s", mb, ma);
  p.llm_kv_capacity_tokens = 1e12; /* every prefix resident: no prefill */
  sg_sim_result c = run(&p, "spec+realloc+priority");
  p.llm_prefill_interference = 0;
  sg_sim_result d = run(&p, "spec+realloc+priority");
  SG_CHECK_NEAR(c.cache_miss_tokens, 0, 1e-6);
  SG_CHECK_NEAR(c.e2e_s, d.e2e_s, 1e-9);
  SG_CHECK_NEAR(c.main_gen_s, d.main_gen_s, 1e-9);
}

/* Contention: extra streams (forks) slow the main generations down; with
 * none, the calibrated rate holds at the reference load. */
static void forks_slow_the_server_down(void) {
  sg_sim_params p = small();
  p.llm_contention = 0.2;
  p.llm_ref_streams = 1;
  sg_sim_result base = run(&p, "baseline");
  sg_sim_result spec = run(&p, "spec");
  double mb = base.main_gen_s / (double)base.main_gens_completed;
  SG_CHECK(spec.llm_mean_streams > base.llm_mean_streams);
  p.llm_contention = 0;
  sg_sim_result base0 = run(&p, "baseline");
  double m0 = base0.main_gen_s / (double)base0.main_gens_completed;
  SG_CHECK_MSG(mb > 1.2 * m0, "%g vs %g", mb, m0); /* 3 workflows share a server */
}

/* The fork budget (llm.server_streams, the core's sg_fork_budget): with a
 * hundred workflows on a hundred devices K, the pool's free capacity, is in
 * the tens; bounded, a server carries no more streams on average than it
 * takes, fewer forks start, and the mains it no longer slows make full
 * faster. A bound that leaves a server no fork stream is refused, named. */
static void fork_budget_bounds_the_servers(void) {
  sg_sim_params p = preset("paper-glm");
  p.workflows = 100;
  p.devices = 100;
  p.knobs.iterations = 10;
  SG_CHECK_EQ_INT(p.knobs.llm_streams, 18);
  sg_sim_result bounded = run(&p, "full");
  p.knobs.llm_streams = 0;
  sg_sim_result open = run(&p, "full");
  double servers = 100.0 / p.llm_workflows_per_server;
  SG_CHECK_MSG(bounded.llm_mean_streams / servers <= 18, "%.1f streams per server",
               bounded.llm_mean_streams / servers);
  SG_CHECK_MSG(open.llm_mean_streams > 1.2 * bounded.llm_mean_streams, "%.1f vs %.1f",
               open.llm_mean_streams, bounded.llm_mean_streams);
  SG_CHECK(open.forks > bounded.forks);
  SG_CHECK_MSG(bounded.e2e_geomean_s < open.e2e_geomean_s, "%.0f s vs %.0f s",
               bounded.e2e_geomean_s, open.e2e_geomean_s);
  p.knobs.llm_streams = 10; /* ten workflows per server: no stream left */
  sg_sim_variant v;
  sg_sim_result r;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_sim_variant_parse("full", &v, &err), err);
  SG_CHECK_EQ_INT(sg_sim_run(&p, &v, &r, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "llm.server_streams 10");
}

/* The policies beyond the paper run through the real core's options and
 * keep every invariant; work-conserving devices are busier, and gated
 * forks are fewer than full's. */
static void beyond_the_paper_configs(void) {
  sg_sim_params p = small();
  sg_sim_result full = run(&p, "full");
  for (int i = SG_SIM_VARIANTS; i < SG_SIM_VARIANTS_ALL; i++) {
    sg_sim_result r = run(&p, sg_sim_variant_name(i));
    check_invariants(&p, &r);
    SG_CHECK(r.forks > 0 && r.iterations == full.iterations);
  }
  sg_sim_result wc = run(&p, "full+wc");
  sg_sim_result gate = run(&p, "full+gate");
  SG_CHECK(wc.util_overall > full.util_overall);
  SG_CHECK(gate.forks < full.forks);
  /* Deciding at validation skips most profiles; a margin profiles more
   * (the bar at validation is higher); split capacity forks fewer than
   * work-conserving devices alone (K is the part's, not the pool's). */
  sg_sim_result vd = run(&p, "full+vd");
  sg_sim_result vd3 = run(&p, "full+vd:3");
  sg_sim_result wcs = run(&p, "full+wcs");
  SG_CHECK_MSG(vd.profiling_feedback < full.profiling_feedback / 2, "%llu vs %llu",
               (unsigned long long)vd.profiling_feedback,
               (unsigned long long)full.profiling_feedback);
  SG_CHECK(vd3.profiling_feedback > vd.profiling_feedback);
  SG_CHECK_STR_EQ(vd3.name, "full+vd:3");
  SG_CHECK(wcs.forks < wc.forks);
  /* The cutoff's mains go on detached only where asked, and answer (a
   * campaign long enough for the cutoff to learn and fire) */
  sg_sim_params longer = p;
  longer.knobs.iterations = 40;
  sg_sim_result cut = run(&longer, "full+cutoff");
  sg_sim_result det = run(&longer, "full+cutoff+detach");
  check_invariants(&longer, &det);
  SG_CHECK_EQ_INT(cut.detached, 0);
  /* a kernel accepted at validation waits for its siblings only where
   * asked. Siblings need decisions that fork several at once: with the
   * measured streams' 24.7 triggers a trace, a pool of 4 devices is
   * nearly always busy and a decision forks one at a time, so this check
   * runs the guessed streams (4 a trace), as the configuration was
   * measured. */
  sg_sim_params sib = longer;
  snprintf(sib.stream_profile, sizeof sib.stream_profile, "none");
  sg_sim_result vdl = run(&sib, "full+vd"), vds = run(&sib, "full+vds");
  check_invariants(&sib, &vds);
  SG_CHECK_EQ_INT(vdl.sibling_waits, 0);
  SG_CHECK_MSG(vds.sibling_waits > 0, "%llu waits", (unsigned long long)vds.sibling_waits);
  SG_CHECK_MSG(det.detached > 0 && det.detached_answers > 0 &&
                   det.detached_answers <= det.detached,
               "%llu detached, %llu answers", (unsigned long long)det.detached,
               (unsigned long long)det.detached_answers);
  /* The next iteration's main starts ahead only where asked; most become
   * their iteration's main, the rest are dropped (the best kernel changed
   * under them), none in a workflow's last iteration, and the campaign is
   * shorter for it */
  sg_sim_result gv = run(&longer, "full+gate+vd"), ga = run(&longer, "full+gate+vd+ahead");
  check_invariants(&longer, &ga);
  SG_CHECK_EQ_INT(gv.ahead_started, 0);
  SG_CHECK_MSG(ga.ahead_adopted > 0 && ga.ahead_adopted < ga.ahead_started &&
                   ga.ahead_started <= (uint64_t)longer.workflows * (uint64_t)(longer.knobs.iterations - 1),
               "%llu started ahead, %llu adopted", (unsigned long long)ga.ahead_started,
               (unsigned long long)ga.ahead_adopted);
  SG_CHECK_MSG(ga.e2e_geomean_s < gv.e2e_geomean_s, "%g s vs %g s", ga.e2e_geomean_s,
               gv.e2e_geomean_s);
  /* what an adopted main lacks: the failures that came after it started
   * (refine shows the newest), which its prompt could not hold */
  SG_CHECK_MSG(ga.ahead_stale > 0 && ga.ahead_stale <= ga.ahead_adopted &&
                   ga.ahead_stale_items >= ga.ahead_stale,
               "%llu adopted, %llu stale, %llu items lacked",
               (unsigned long long)ga.ahead_adopted, (unsigned long long)ga.ahead_stale,
               (unsigned long long)ga.ahead_stale_items);
  /* Deciding at validation is what takes the profiles away (the goal's
   * policy feeds almost none back); the main started ahead alone keeps
   * most of full's, and is still shorter than the gate alone */
  sg_sim_result fl = run(&longer, "full"), fg = run(&longer, "full+gate");
  sg_sim_result gna = run(&longer, "full+gate+ahead");
  check_invariants(&longer, &gna);
  SG_CHECK_MSG(ga.profiling_feedback < fl.profiling_feedback / 4 &&
                   gna.profiling_feedback > fl.profiling_feedback / 2,
               "feedback: full %llu, +gate+vd+ahead %llu, +gate+ahead %llu",
               (unsigned long long)fl.profiling_feedback,
               (unsigned long long)ga.profiling_feedback,
               (unsigned long long)gna.profiling_feedback);
  SG_CHECK_MSG(gna.ahead_adopted > 0 && gna.e2e_geomean_s < fg.e2e_geomean_s,
               "%llu adopted, %g s vs %g s", (unsigned long long)gna.ahead_adopted,
               gna.e2e_geomean_s, fg.e2e_geomean_s);
  /* with two mains an iteration, whichever one is detached keeps its slot
   * in the generation ring until it answers: only a workflow's last one
   * may go unanswered (cancelled at the workflow's end) */
  snprintf(longer.search, sizeof longer.search, "best-of-n:2");
  sg_sim_result two = run(&longer, "full+cutoff+detach");
  check_invariants(&longer, &two);
  SG_CHECK_MSG(two.detached > 0 && two.detached_answers <= two.detached &&
                   two.detached - two.detached_answers <= (uint64_t)longer.workflows,
               "%llu detached, %llu answers", (unsigned long long)two.detached,
               (unsigned long long)two.detached_answers);
  sg_sim_variant v;
  sg_err err;
  SG_CHECK_EQ_INT(sg_sim_variant_parse("full:2", &v, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "+vd");
  SG_CHECK_EQ_INT(sg_sim_variant_parse("full+vd:0.5", &v, &err), SG_EINVAL);
  SG_CHECK_EQ_INT(sg_sim_variant_parse("full+vd:x", &v, &err), SG_EINVAL);
  /* a main started ahead refines the best kernel: the refine search only */
  sg_sim_result none;
  SG_CHECK_OK(sg_sim_variant_parse("full+ahead", &v, &err), err);
  SG_CHECK_EQ_INT(sg_sim_run(&longer, &v, &none, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "next_ahead needs the refine search");
}

/* task.table glm: workflow w is the paper's task w mod 10. T1 had no
 * valid kernel without the reasoning prefix (Table 2), so before its useful
 * prefix no fork of it is valid, whatever valid.no_prefix_p says; T2 had
 * one. T4's kernels are of Table 6's scale (its best known: 57.72x). */
static void paper_task_table(void) {
  sg_sim_params p = small();
  snprintf(p.stream_profile, sizeof p.stream_profile, "none"); /* a threshold per task */
  snprintf(p.task_table, sizeof p.task_table, "glm");
  p.valid_no_prefix_p = 1.0;
  p.valid_threshold_min = p.valid_threshold_max = 1.0; /* never past it */
  p.workflows = 1;                                      /* T1 */
  sg_sim_result r = run(&p, "full");
  SG_CHECK(r.spec_validated > 5);
  SG_CHECK_EQ_INT(r.spec_valid, 0);
  p.workflows = 2;                                      /* T1 and T2 */
  r = run(&p, "full");
  SG_CHECK(r.spec_valid > 0);
  p.workflows = 4;                                      /* T1-T4 */
  p.valid_threshold_min = p.valid_threshold_max = 0.3;
  r = run(&p, "full");
  check_invariants(&p, &r);
  SG_CHECK(r.best_speedup_mean > 5); /* T4 alone pulls the mean past 14/4 */
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK(sg_sim_params_set(&p, "task.table", "paper", &err) == 0);
  SG_CHECK(sg_sim_params_validate(&p, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "task.table");
}

static void fork_validity_follows_the_prefix_threshold(void) {
  /* The guessed model's threshold per task (test_sim_streams: the
   * measured one's first kernel per trace). */
  sg_sim_params p = small();
  snprintf(p.stream_profile, sizeof p.stream_profile, "none");
  p.valid_spec_p = 1.0;
  p.valid_no_prefix_p = 0.0;
  p.valid_prefix_useful_p = 1.0;
  /* Threshold at the end of the trace: no fork is ever past it. */
  p.valid_threshold_min = p.valid_threshold_max = 1.0;
  sg_sim_result r = run(&p, "full");
  SG_CHECK(r.spec_validated > 20);
  SG_CHECK_EQ_INT(r.spec_valid, 0);
  /* Threshold at the start: every fork is past it. */
  p.valid_threshold_min = p.valid_threshold_max = 0.0;
  r = run(&p, "full");
  SG_CHECK(r.spec_validated > 20);
  SG_CHECK_EQ_INT(r.spec_valid, r.spec_validated);
  /* No trace's prefix is useful: past the threshold or not, no fork is. */
  p.valid_prefix_useful_p = 0.0;
  r = run(&p, "full");
  SG_CHECK(r.spec_validated > 20);
  SG_CHECK_EQ_INT(r.spec_valid, 0);
}

static void baseline_calibration(const char *name, double gen_s, double valid) {
  /* 10 workflows x 100 iterations: 1000 baseline iterations. */
  sg_sim_params p = preset(name);
  sg_sim_result r = run(&p, "baseline");
  SG_CHECK_EQ_INT(r.main_gens_completed, 1000);
  double mean = r.main_gen_s / (double)r.main_gens_completed;
  SG_CHECK_MSG(fabs(mean / gen_s - 1) < 0.10, "%s: mean generation %.1f s vs %.1f s",
               name, mean, gen_s);
  double frac = (double)r.main_valid / (double)r.main_validated;
  SG_CHECK_MSG(fabs(frac - valid) < 0.04, "%s: valid fraction %.3f vs %.3f", name,
               frac, valid);
  /* Generation dominates the iteration (the paper: 70-99%). */
  double per_iter = r.e2e_s * p.workflows / (double)r.iterations;
  SG_CHECK_MSG(mean / per_iter > 0.70 && mean / per_iter < 0.99, "%s: share %.3f", name,
               mean / per_iter);
}

static void calibration_glm(void) { baseline_calibration("paper-glm", 706.9, 0.363); }
static void calibration_dsv4(void) { baseline_calibration("paper-dsv4", 522.6, 0.407); }

static void evaluation_times_hold_their_means(void) {
  /* With one workflow per device and no forks nothing queues: the busy time
   * per validation is the model's mean. */
  sg_sim_params p = preset("paper-dsv4");
  p.knobs.iterations = 100;
  sg_sim_result r = run(&p, "baseline");
  double pool = r.e2e_s * p.devices;
  double val_s = r.util_validate * pool / (double)r.main_validated;
  double prof_s = r.util_profile * pool / (double)r.profiling_feedback;
  SG_CHECK_MSG(fabs(val_s / 59.0 - 1) < 0.10, "validation %.1f s", val_s);
  SG_CHECK_MSG(fabs(prof_s / 26.6 - 1) < 0.10, "profiling %.1f s", prof_s);
}

static void faults_still_finish_every_workflow(void) {
  sg_sim_params p = small();
  p.fault_gen_fail_p = 0.2;
  p.fault_device_mtbf_s = 3000; /* most devices die during the campaign */
  for (int i = 0; i < SG_SIM_VARIANTS; i++) {
    sg_sim_result r = run(&p, sg_sim_variant_name(i));
    check_invariants(&p, &r);
    SG_CHECK_MSG(r.gens_failed > 0, "%s: no failed generation", r.name);
    SG_CHECK_MSG(r.devices_died > 0, "%s: no device died", r.name);
    SG_CHECK_MSG(r.infra_failures > 0, "%s: no infra failure", r.name);
  }
}

static void every_device_dead_still_finishes(void) {
  sg_sim_params p = small();
  p.fault_device_mtbf_s = 1; /* all dead at once */
  sg_sim_result r = run(&p, "full");
  check_invariants(&p, &r);
  SG_CHECK_EQ_INT(r.devices_died, p.devices);
  SG_CHECK_EQ_INT(r.devices_retired, p.devices);
  SG_CHECK_EQ_INT(r.profiling_feedback, 0);
  SG_CHECK(r.requests_failed > 0);
  /* No kernel anywhere: each workflow keeps the reference. */
  SG_CHECK_EQ_INT(r.workflows_without_kernel, p.workflows);
  SG_CHECK_NEAR(r.best_speedup_geomean, 1.0, 1e-12);
}

static void full_beats_baseline_on_the_presets(void) {
  const char *names[] = {"paper-glm", "paper-dsv4"};
  for (int i = 0; i < 2; i++) {
    sg_sim_params p = preset(names[i]);
    p.knobs.iterations = 40;
    sg_sim_result b = run(&p, "baseline");
    sg_sim_result f = run(&p, "full");
    SG_CHECK_MSG(b.e2e_s / f.e2e_s > 1.08, "%s: full only %.3fx", names[i],
                 b.e2e_s / f.e2e_s);
    SG_CHECK_MSG(f.profiling_feedback > 1.5 * (double)b.profiling_feedback,
                 "%s: feedback %llu vs %llu", names[i],
                 (unsigned long long)f.profiling_feedback,
                 (unsigned long long)b.profiling_feedback);
    SG_CHECK_MSG(f.util_overall > 3 * b.util_overall, "%s: utilization %.3f vs %.3f",
                 names[i], f.util_overall, b.util_overall);
  }
}

static void never_terminating_is_slower_than_first_valid(void) {
  sg_sim_params p = small();
  p.knobs.iterations = 20;
  snprintf(p.termination, sizeof p.termination, "first-valid");
  sg_sim_result fv = run(&p, "full");
  snprintf(p.termination, sizeof p.termination, "none");
  sg_sim_result none = run(&p, "full");
  SG_CHECK_EQ_INT(none.early_terminations, 0);
  SG_CHECK(fv.early_terminations > 0);
  SG_CHECK(none.e2e_s > fv.e2e_s * 1.1);
}

static void bad_core_specs_are_named(void) {
  sg_sim_params p = small();
  snprintf(p.termination, sizeof p.termination, "hist-median");
  sg_sim_variant v;
  sg_sim_result r;
  sg_err err;
  SG_CHECK_OK(sg_sim_variant_parse("full", &v, &err), err);
  SG_CHECK(sg_sim_run(&p, &v, &r, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "hist-median");
  p = small();
  snprintf(p.search, sizeof p.search, "evolve-ish");
  SG_CHECK(sg_sim_run(&p, &v, &r, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "evolve-ish");
  SG_CHECK_EQ_INT(sg_sim_variant_parse("turbo", &v, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "turbo");
}

static void configs_list_parsing(void) {
  sg_sim_variant v[SG_SIM_MAX_CONFIGS];
  size_t n = 0;
  sg_err err;
  SG_CHECK_OK(sg_sim_configs_parse("baseline,full", v, &n, &err), err);
  SG_CHECK_EQ_INT(n, 2);
  SG_CHECK_STR_EQ(v[1].name, "full");
  SG_CHECK(v[1].remote_cache && v[1].lifo && v[1].elastic && v[1].speculate);
  SG_CHECK(!v[0].speculate && !v[0].elastic && !v[0].lifo);
  SG_CHECK(sg_sim_configs_parse("spec,spec", v, &n, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "twice");
  SG_CHECK(sg_sim_configs_parse("spec,warp", v, &n, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "warp");
  SG_CHECK(sg_sim_configs_parse(",", v, &n, &err) < 0);
}

static void wall_budget_ends_workflows(void) {
  sg_sim_params p = small();
  p.knobs.iterations = 1000;
  p.knobs.time_budget = 5000;
  sg_sim_result r = run(&p, "full");
  SG_CHECK_EQ_INT(r.workflows_done, p.workflows);
  SG_CHECK(r.iterations < (uint64_t)p.workflows * 1000);
  SG_CHECK(r.e2e_s < 5000 + 3 * p.gen_mean_s);
}

SG_TEST_MAIN(SG_TEST(same_seed_same_bytes), SG_TEST(different_seeds_differ),
             SG_TEST(baseline_never_forks), SG_TEST(spec_configs_fork_and_end_early),
             SG_TEST(memory_is_bounded_by_an_iteration),
             SG_TEST(remote_cache_serves_more_of_the_prefix),
             SG_TEST(synthetic_reasoning_triggers_only_where_planted),
             SG_TEST(fork_validity_follows_the_prefix_threshold),
             SG_TEST(streaming_modes_agree), SG_TEST(beyond_the_paper_configs),
             SG_TEST(paper_task_table), SG_TEST(prefix_cache_mechanism),
             SG_TEST(prefill_slows_the_mains),
             SG_TEST(forks_slow_the_server_down), SG_TEST(fork_budget_bounds_the_servers),
             SG_TEST(calibration_glm), SG_TEST(calibration_dsv4),
             SG_TEST(evaluation_times_hold_their_means),
             SG_TEST(faults_still_finish_every_workflow),
             SG_TEST(every_device_dead_still_finishes),
             SG_TEST(full_beats_baseline_on_the_presets),
             SG_TEST(never_terminating_is_slower_than_first_valid),
             SG_TEST(bad_core_specs_are_named), SG_TEST(configs_list_parsing),
             SG_TEST(wall_budget_ends_workflows))
