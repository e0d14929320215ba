/* sg_ctl_answer.c: budget forcing, the answer at the length cap
 * (sg_ctl_opts.answer_at_cap; docs/core.md, step 6). Pure, as the rest of
 * the controller.
 *
 * A main generation cut by max tokens inside its reasoning gives no kernel,
 * and its iteration's tokens are lost. Reasoning models' users know the
 * remedy: ask for the answer now, from the reasoning there is. The
 * controller starts one generation with thinking off that continues all the
 * main's reasoning (what a fork from its last byte would be), once per main
 * generation; its kernel stands in for the main's (main_resolved waits for
 * it). It is not speculation: it runs with speculate off, nothing runs
 * beside the reasoning (the reasoning is over), and it takes the stream the
 * main freed, so the fork caps, the fork budget and the fork counts leave
 * it out. */
#include "core/sg_controller_priv.h"

#include <math.h>
#include <string.h>

/* ---- what forks and the answer emit alike -------------------------------- */

sg_ctl_action *ctl_emit_decision(sg_controller *c, sg_ctl_actions *out,
                                 sg_ctl_reason reason, int64_t now_us,
                                 const gen *m, uint64_t prefix_len, int k,
                                 int trigger) {
  sg_ctl_action *d = ctl_emit(c, out, SG_CACT_DECISION);
  d->u.decision.reason = reason;
  d->u.decision.now_us = now_us;
  d->u.decision.gen = m->id;
  d->u.decision.prefix_len = prefix_len;
  d->u.decision.k = k;
  d->u.decision.trigger = trigger;
  d->u.decision.speedup = NAN;
  d->u.decision.threshold_mean = NAN;
  d->u.decision.threshold_best = NAN;
  return d;
}

sg_ctl_action *ctl_emit_start(sg_controller *c, sg_ctl_actions *out, const gen *g) {
  sg_ctl_action *a = ctl_emit(c, out, SG_CACT_START_GEN);
  a->u.start.gen = g->id;
  a->u.start.kind = g->kind;
  a->u.start.thinking = g->kind == SG_GEN_MAIN;
  a->u.start.prompt_index = g->prompt_index;
  a->u.start.prompt = &c->plan.prompts[g->prompt_index];
  return a;
}

sg_ctl_action *ctl_emit_start_spec(sg_controller *c, sg_ctl_actions *out,
                                   const gen *g, const gen *m) {
  sg_ctl_action *a = ctl_emit_start(c, out, g);
  a->u.start.parent_gen = m->id;
  a->u.start.prefix_len = g->prefix_len;
  a->u.start.prefix = sg_buf_str(&m->reasoning);
  return a;
}

/* ---- the answer at the length cap ------------------------------------------ */

void ctl_answer_at_cap(sg_controller *c, gen *m, const sg_ctl_event *ev,
                       sg_ctl_actions *out) {
  if (!c->o.answer_at_cap || m->kind != SG_GEN_MAIN ||
      ev->u.finished.reason != SG_FINISH_LENGTH || m->answer_gen != 0 ||
      m->reasoning.len == 0 || c->state != SG_CTL_GENERATING ||
      ctl_budget_spent(c, ev->now_us, false) != SG_REASON__COUNT)
    return;
  const sg_kernel *k = sg_history_get(&c->hist, m->candidate);
  if (k != NULL && k->extract == SG_EXTRACT_FOUND)
    return; /* its answer has a kernel: that one is the fallback */
  uint64_t prefix_len = m->reasoning.len;
  ctl_emit_decision(c, out, SG_REASON_ANSWER_AT_CAP, ev->now_us, m, prefix_len, 1, -1);
  size_t mi = (size_t)(m - c->gens); /* ctl_append_gen may move gens[] */
  gen *g = ctl_append_gen(c);
  memset(g, 0, sizeof *g);
  m = &c->gens[mi];
  g->id = ++c->next_gen;
  g->kind = SG_GEN_SPEC;
  g->answer = true; /* no fork count: not through new_gen */
  g->live = true;
  g->prompt_index = m->prompt_index;
  g->parent = m->id;
  g->prefix_len = prefix_len;
  ctl_gen_init_bufs(c, g);
  m->answer_gen = g->id;
  ctl_emit_start_spec(c, out, g, m)->u.start.answer = true;
  c->st.answers_at_cap++;
}
