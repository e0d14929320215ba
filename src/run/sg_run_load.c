/* sg_run_load.c: the fork budget measured (sg_run_priv.h). The mains' chunk
 * arrivals feed the server's load estimate (core/sg_server_load.h), which
 * sets the cap of the fork budget every workflow's controller shares; each
 * change of the cap is a "fork_budget" decision in the store and an event,
 * and the summary says in one line what was measured (docs/core.md, "Fork
 * budget").
 */
#include "run/sg_run_priv.h"

#include "common/sg_buf.h"

#include <stdio.h>

/* Forks of the server generating (prefilling or decoding) now. */
static int forks_live(const run *r) {
  int n = 0;
  for (size_t i = 0; i < r->nwf; i++)
    n += r->wfs[i].live_spec;
  return n;
}

int sg_run_load_setup(run *r, sg_err *err) {
  const sg_knobs *k = &r->cfg->knobs;
  if (!k->spec || (k->llm_streams <= 0 && k->fork_slowdown_max <= 0))
    return 0;
  int cap = SG_LOAD_UNBOUNDED;
  if (k->llm_streams > 0) {
    /* one server serves every task: its streams less their mains */
    cap = k->llm_streams - (int)r->nwf;
    if (cap < 1)
      return sg_err_set(err, SG_EINVAL, "--llm-streams %d leaves no stream for "
                        "forks beside the main generations of %zu tasks",
                        k->llm_streams, r->nwf);
  }
  r->fork_budget.cap = cap;
  r->has_budget = true;
  if (k->fork_slowdown_max > 0) {
    sg_load_opts o;
    sg_load_opts_default(&o, k->fork_slowdown_max, cap);
    sg_load_init(&r->load, &o);
    r->load_on = true;
  }
  return 0;
}

/* What the estimate holds, for the store's decision and the event. */
static json_t *load_json(const run *r) {
  const sg_server_load *l = &r->load;
  json_t *rates = json_array();
  int top = sg_load_measured_max(l);
  for (int k = 0; k <= top; k++) {
    double rate = sg_load_rate(l, k);
    if (!isfinite(rate))
      continue;
    json_array_append_new(rates, json_pack("{s:i, s:o, s:o, s:f}", "forks", k,
                                           "tokens_per_s", json_real(rate), "slowdown",
                                           num_or_null(sg_load_slowdown(l, k)), "seconds",
                                           l->b[k].seconds));
  }
  return json_pack("{s:f, s:o, s:o, s:o, s:I, s:I, s:I}", "slowdown_max",
                   l->o.slowdown_max, "cap_configured",
                   l->o.cap_max >= SG_LOAD_UNBOUNDED ? json_null() : json_integer(l->o.cap_max),
                   "cap", l->cap >= SG_LOAD_UNBOUNDED ? json_null() : json_integer(l->cap),
                   "rates", rates, "withheld",
                   (json_int_t)r->fork_budget.withheld, "probes", (json_int_t)l->probes,
                   "lowered", (json_int_t)l->lowered);
}

void sg_run_load_chunk(run *r, rgen *g) {
  if (!r->load_on || g->kind != SG_GEN_MAIN)
    return;
  int64_t now = now_us();
  if (g->last_chunk_us != 0) {
    int before = r->load.cap;
    int cap = sg_load_observe(&r->load, t_of(r, now), 1,
                              (double)(now - g->last_chunk_us) / 1e6, g->forks_max);
    r->fork_budget.cap = cap;
    if (cap != before) {
      wf *f = wf_of(r, g->w);
      json_t *d = load_json(r);
      json_object_set_new(d, "cap_before",
                          before >= SG_LOAD_UNBOUNDED ? json_null() : json_integer(before));
      sg_run_record_decision(r, f, "fork_budget", json_incref(d));
      sg_run_emit(r, "fork_budget", d);
    }
  }
  g->last_chunk_us = now;
  g->forks_max = forks_live(r);
}

void sg_run_load_fork_started(run *r) {
  if (!r->load_on)
    return;
  int n = forks_live(r);
  for (size_t i = 0; i < r->nwf; i++)
    for (rgen *g = r->wfs[i].gens; g; g = g->next)
      if (g->kind == SG_GEN_MAIN && g->forks_max < n)
        g->forks_max = n;
}

/* "fork budget: mains 14.2 tokens/s with no fork live, 7.1 with 1 (slowdown
 * 50%), ...; cap 0 of 3 (at most 15% slowdown); 12 forks withheld;
 * re-probed 2 times" */
static char *load_line(const run *r) {
  const sg_server_load *l = &r->load;
  sg_buf b;
  sg_buf_init(&b, 0);
  double r0 = sg_load_rate(l, 0);
  if (!isfinite(r0)) {
    sg_buf_printf(&b, "fork budget: not measured (no main decoded %.0f tokens over %.0f s "
                      "with no fork live)",
                  l->o.min_tokens, l->o.min_s);
  } else {
    sg_buf_printf(&b, "fork budget: mains %.1f tokens/s with no fork live", r0);
    int top = sg_load_measured_max(l);
    for (int k = 1; k <= top; k++)
      if (isfinite(sg_load_rate(l, k)))
        sg_buf_printf(&b, ", %.1f with %d%s (slowdown %.0f%%)", sg_load_rate(l, k), k,
                      k == SG_LOAD_KMAX ? " or more" : "", 100 * sg_load_slowdown(l, k));
  }
  if (l->cap >= SG_LOAD_UNBOUNDED)
    sg_buf_printf(&b, "; no cap");
  else if (l->o.cap_max >= SG_LOAD_UNBOUNDED)
    sg_buf_printf(&b, "; cap %d", l->cap);
  else
    sg_buf_printf(&b, "; cap %d of %d", l->cap, l->o.cap_max);
  sg_buf_printf(&b, " (at most %.0f%% slowdown); %llu forks withheld; re-probed %llu times",
                100 * l->o.slowdown_max, (unsigned long long)r->fork_budget.withheld,
                (unsigned long long)l->probes);
  return sg_buf_steal(&b);
}

void sg_run_load_report(run *r, json_t *summary) {
  if (!r->load_on)
    return;
  json_t *j = load_json(r);
  char *line = load_line(r);
  json_object_set_new(j, "line", json_string(line));
  free(line);
  json_object_set_new(summary, "fork_budget", j);
}
