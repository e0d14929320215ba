/* sg_run_load.c: the fork budget measured (sg_run_priv.h). Every stream's
 * chunk arrivals (mains and forks), with the streams and the mains live,
 * feed the server's load estimate (core/sg_server_load.h), which sets the
 * cap of the fork budget every workflow's controller shares; each
 * change of the cap is a "fork_budget" decision in the store and an event,
 * and the summary says in one line what was measured (docs/core.md, "Fork
 * budget").
 */
#include "run/sg_run_priv.h"

#include "common/sg_buf.h"

#include <stdio.h>

/* Streams of the server generating now (prefilling or decoding): mains
 * and forks alike; a main waiting to be sent again is none. *mains (when
 * not NULL): the mains among them. */
static int streams_live(const run *r, int *mains) {
  int n = 0, m = 0;
  for (size_t i = 0; i < r->nwf; i++)
    for (const rgen *g = r->wfs[i].gens; g; g = g->next)
      if (g->retry_at_us == 0) {
        n++;
        m += g->kind == SG_GEN_MAIN;
      }
  if (mains)
    *mains = m;
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

/* What the estimate holds, for the store's decision and the event: the
 * per-stream rate per streams live, what each n costs the mains live now
 * (slowdown, n > mains) and the cap at them. */
static json_t *load_json(const run *r) {
  const sg_server_load *l = &r->load;
  json_t *rates = json_array();
  int top = sg_load_measured_max(l);
  for (int n = 1; n <= top; n++) {
    double rate = sg_load_rate(l, n);
    if (!isfinite(rate))
      continue;
    json_array_append_new(rates, json_pack("{s:i, s:o, s:o, s:f}", "streams", n,
                                           "tokens_per_s", json_real(rate), "slowdown",
                                           num_or_null(sg_load_slowdown(l, l->mains,
                                                                        n - l->mains)),
                                           "seconds", l->b[n].seconds));
  }
  return json_pack("{s:f, s:o, s:o, s:i, s:o, s:I, s:I, s:I}", "slowdown_max",
                   l->o.slowdown_max, "cap_configured",
                   l->o.cap_max >= SG_LOAD_UNBOUNDED ? json_null() : json_integer(l->o.cap_max),
                   "cap", l->cap >= SG_LOAD_UNBOUNDED ? json_null() : json_integer(l->cap),
                   "mains", l->mains, "rates", rates, "withheld",
                   (json_int_t)r->fork_budget.withheld, "probes", (json_int_t)l->probes,
                   "lowered", (json_int_t)l->lowered);
}

/* Every chunk of a stream (a main or a fork) after its first: the seconds
 * since its last chunk, with the most streams live in them, at the mains
 * live now. */
void sg_run_load_chunk(run *r, rgen *g) {
  if (!r->load_on)
    return;
  int64_t now = now_us();
  int mains = 0, streams = streams_live(r, &mains);
  if (g->last_chunk_us != 0) {
    int before = r->load.cap;
    int cap = sg_load_observe(&r->load, t_of(r, now), 1,
                              (double)(now - g->last_chunk_us) / 1e6, g->streams_max, mains);
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
  g->streams_max = streams;
}

void sg_run_load_stream_started(run *r) {
  if (!r->load_on)
    return;
  int n = streams_live(r, NULL);
  for (size_t i = 0; i < r->nwf; i++)
    for (rgen *g = r->wfs[i].gens; g; g = g->next)
      if (g->streams_max < n)
        g->streams_max = n;
}

/* "fork budget: per stream 300.0 tokens/s with 1 stream live, 150.2 with
 * 2, 99.8 with 3; beside 1 main 1 more stream slows each 50%, 2 more 67%;
 * cap 0 of 3 at 1 main (at most 15% slowdown); 12 forks withheld;
 * re-probed 2 times" */
static char *load_line(const run *r) {
  const sg_server_load *l = &r->load;
  sg_buf b;
  sg_buf_init(&b, 0);
  int top = sg_load_measured_max(l), m = l->mains;
  if (top == 0) {
    sg_buf_printf(&b, "fork budget: not measured (no stream decoded %.0f tokens over %.0f s "
                      "at any number of streams live)",
                  l->o.min_tokens, l->o.min_s);
  } else {
    bool first = true;
    for (int n = 1; n <= top; n++) {
      double rate = sg_load_rate(l, n);
      if (!isfinite(rate))
        continue;
      const char *more = n == SG_LOAD_KMAX ? " or more" : "";
      if (first)
        sg_buf_printf(&b, "fork budget: per stream %.1f tokens/s with %d%s stream%s live", rate,
                      n, more, n == 1 ? "" : "s");
      else
        sg_buf_printf(&b, ", %.1f with %d%s", rate, n, more);
      first = false;
    }
    sg_buf_printf(&b, "; beside %d main%s", m, m == 1 ? "" : "s");
    first = true;
    for (int k = 1; m + k <= top; k++) {
      double s = sg_load_slowdown(l, m, k);
      if (!isfinite(s))
        continue;
      if (first)
        sg_buf_printf(&b, " %d more stream%s slow%s each %.0f%%", k, k == 1 ? "" : "s",
                      k == 1 ? "s" : "", 100 * s);
      else
        sg_buf_printf(&b, ", %d more %.0f%%", k, 100 * s);
      first = false;
    }
    if (first)
      sg_buf_printf(&b, " no more streams measured");
  }
  if (l->cap >= SG_LOAD_UNBOUNDED)
    sg_buf_printf(&b, "; no cap");
  else if (l->o.cap_max >= SG_LOAD_UNBOUNDED)
    sg_buf_printf(&b, "; cap %d", l->cap);
  else
    sg_buf_printf(&b, "; cap %d of %d", l->cap, l->o.cap_max);
  sg_buf_printf(&b, " at %d main%s (at most %.0f%% slowdown); %llu forks withheld; "
                    "re-probed %llu times",
                m, m == 1 ? "" : "s", 100 * l->o.slowdown_max,
                (unsigned long long)r->fork_budget.withheld, (unsigned long long)l->probes);
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
