/* sg_sim.c: the simulated runtime. See sg_sim.h for what it is; this file is
 * the event loop, the models, and the ops through which the action
 * interpreter (sg_interp.h, shared with `specgen run`) executes the core's
 * actions against them.
 *
 * Invariants (asserted): an event is processed at a time no earlier than the
 * previous one; a generation gets exactly one ending (finished, failed or
 * cancelled); a request's device run ends once per start. Stale events (for
 * a cancelled generation or an aborted request) are recognised by an epoch
 * that no longer matches, and dropped.
 */
#include "sim/sg_sim.h"

#include "common/sg_alloc.h"
#include "core/sg_controller.h"
#include "core/sg_interp.h"
#include "core/sg_scheduler.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"
#include "sim/sg_sim_queue.h"
#include "sim/sg_sim_rng.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configurations ---- */

static const sg_sim_variant variants[SG_SIM_VARIANTS] = {
    {"baseline", false, false, false, false},
    {"spec", true, false, false, false},
    {"spec+realloc", true, true, false, false},
    {"spec+realloc+priority", true, true, true, false},
    {"full", true, true, true, true},
};

const char *sg_sim_variant_name(int i) {
  return i >= 0 && i < SG_SIM_VARIANTS ? variants[i].name : NULL;
}

int sg_sim_variant_parse(const char *name, sg_sim_variant *v, sg_err *err) {
  for (int i = 0; i < SG_SIM_VARIANTS; i++)
    if (strcmp(name, variants[i].name) == 0) {
      *v = variants[i];
      return 0;
    }
  return sg_err_set(err, SG_ENOENT,
                    "unknown configuration \"%s\" (known: baseline, spec, "
                    "spec+realloc, spec+realloc+priority, full)",
                    name);
}

/* ---- state ---- */

enum {
  EV_CHUNK,       /* owner workflow, id gen: stream the next chunk */
  EV_GEN_END,     /* owner workflow, id gen: finish or fail */
  EV_COMPILE_END, /* id req */
  EV_DEVICE_END,  /* id req */
  EV_EVAL_FAIL,   /* owner workflow, id candidate, epoch phase: infra error */
  EV_TICK,        /* owner workflow */
};

/* Streams of random numbers (sg_sim_rng_seed's stream argument). The task
 * stream is shared by every configuration, so they face the same tasks. */
enum { RNG_TASK = 1, RNG_WORKFLOW = 1000, RNG_DEVICE = 2000000 };
#define RNG_MAIN (1ull << 62)

typedef struct sim_gen {
  bool used;
  sg_gen_kind kind;
  uint64_t epoch;       /* 0: ended; events carry it */
  int64_t t0_us, end_us, reason_end_us;
  bool fails;           /* ends in GEN_FAILED at end_us */
  char *text;           /* main: the planned reasoning text */
  uint64_t reason_bytes, sent_bytes;
  double reason_tokens, answer_tokens;
  double prompt_tokens, cached_tokens;
  double speedup;       /* the kernel it converges to */
  bool valid;
  sg_eval_status fail_status;
  double prefix_frac;   /* spec: fraction of the parent's trace */
} sim_gen;

typedef struct sim_wf {
  sg_controller *ctl;
  sg_search *search;
  sg_termination *term;
  sg_sim_rng rng;
  double threshold;     /* shortest useful prefix, fraction of the trace */
  double task_speed;    /* median from-scratch speedup of this task */
  sim_gen *gens;
  size_t ngens;
  bool done;
  int64_t done_us;
} sim_wf;

typedef struct sim_req {
  uint32_t workflow;
  uint64_t candidate;
  uint64_t gen;
  sg_phase phase;
  uint64_t epoch;       /* bumped on every start and on abort */
  bool live;
} sim_req;

typedef struct sim {
  const sg_sim_params *p;
  const sg_sim_variant *v;
  sg_sim_result *res;
  sg_err *err;
  sg_search_registry sreg;
  sg_termination_registry treg;
  sg_scheduler *sched;
  sim_wf *wf;
  sim_req *reqs;
  size_t nreqs;
  int64_t *dies_us;     /* per device; INT64_MAX: never */
  sg_sim_queue q;
  sg_interp *it;        /* executes the core's actions (sg_interp.h) */
  int64_t now_us;
  double bpt;           /* text bytes per token */
  void (*trace)(void *data, const char *line);
  void *trace_data;
} sim;

#define GEN_ID_MAX (1u << 22)
#define REQ_ID_MAX (1u << 26)

static int64_t s_to_us(double s) {
  double us = s * 1e6;
  if (us < 1)
    return 1;
  if (us > 9e18)
    return INT64_MAX / 4;
  return (int64_t)llround(us);
}

static void push(sim *s, int64_t t_us, int type, uint32_t owner, uint64_t id,
                 uint64_t epoch) {
  assert(t_us >= s->now_us);
  sg_sim_event ev = {.t_us = t_us, .type = type, .owner = owner, .id = id,
                     .epoch = epoch};
  sg_sim_queue_push(&s->q, ev);
}

static sim_gen *gen_get(sim *s, uint32_t w, uint64_t id, bool create) {
  sim_wf *f = &s->wf[w];
  if (id == 0 || id >= GEN_ID_MAX)
    return NULL;
  if (id >= f->ngens) {
    if (!create)
      return NULL;
    size_t n = f->ngens ? f->ngens : 64;
    while (n <= id)
      n *= 2;
    f->gens = sg_realloc(f->gens, n * sizeof *f->gens);
    memset(f->gens + f->ngens, 0, (n - f->ngens) * sizeof *f->gens);
    f->ngens = n;
  }
  sim_gen *g = &f->gens[id];
  if (!create && !g->used)
    return NULL;
  return g;
}

static sim_req *req_get(sim *s, sg_req_id id, bool create) {
  if (id == 0 || id >= REQ_ID_MAX)
    return NULL;
  if (id >= s->nreqs) {
    if (!create)
      return NULL;
    size_t n = s->nreqs ? s->nreqs : 1024;
    while (n <= id)
      n *= 2;
    s->reqs = sg_realloc(s->reqs, n * sizeof *s->reqs);
    memset(s->reqs + s->nreqs, 0, (n - s->nreqs) * sizeof *s->reqs);
    s->nreqs = n;
  }
  return &s->reqs[id];
}

/* ---- models ---- */

/* Synthetic reasoning. Filler sentences say nothing the scanner reacts to;
 * trigger sentences are each one of the scanner's classes (a design
 * decision, an implementation phrase, a fenced block, a kernel body). */
static const char *const filler[] = {
    "The reference computes every output element independently of the others. ",
    "I should check the shapes again before going further. ",
    "The inputs are large enough that bandwidth will matter more than arithmetic. ",
    "Each row is read once and each column many times. ",
    "Wait, the earlier estimate ignored the cost of the final reduction. ",
    "The previous attempt was correct but slower than the reference. ",
    "Numerical accuracy has to stay within the tolerance of the checker. ",
    "So the dominant cost is reading the second operand from memory. ",
    "Hmm, that count was off by one; redo it for the last block. ",
    "The last measurement was noisy, so I will not read too much into it. ",
};
#define NFILLER (sizeof filler / sizeof filler[0])

static const char *const trigger_text[] = {
    "Let me implement this now. ",
    "Here is the plan: a 32x32 tile per block staged in shared memory. ",
    "I will use a tile size of 64x64 with each thread computing a 4x4 "
    "sub-block. ",
    "\n```c\nvoid sim_step(const float *x, float *y, int n) {\n"
    "  for (int i = 0; i < n; i++)\n    y[i] = x[i];\n}\n```\n",
    "Now let me write the kernel. ",
};
#define NTRIGGER (sizeof trigger_text / sizeof trigger_text[0])

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Builds n bytes of reasoning with trigger sentences ending near the
 * planted offsets. */
static char *make_reasoning(sg_sim_rng *rng, uint64_t n, int ntrig) {
  uint64_t *at = sg_calloc((size_t)ntrig + 1, sizeof *at);
  for (int i = 0; i < ntrig; i++)
    at[i] = (uint64_t)(sg_sim_rng_uniform(rng) * (double)n);
  qsort(at, (size_t)ntrig, sizeof *at, cmp_u64);
  char *t = sg_malloc(n + 1);
  uint64_t len = 0;
  int k = 0;
  while (len < n) {
    const char *piece;
    if (k < ntrig &&
        at[k] <= len + strlen(trigger_text[0]) + 64) {
      piece = trigger_text[sg_sim_rng_next(rng) % NTRIGGER];
      k++;
    } else {
      piece = filler[sg_sim_rng_next(rng) % NFILLER];
    }
    size_t pl = strlen(piece);
    if (pl > n - len)
      pl = (size_t)(n - len);
    memcpy(t + len, piece, pl);
    len += pl;
  }
  t[n] = '\0';
  free(at);
  return t;
}

static sg_eval_status draw_failure(sim *s, sg_sim_rng *rng) {
  const sg_sim_params *p = s->p;
  double tot = p->fail_compile_w + p->fail_runtime_w + p->fail_numerical_w;
  double u = sg_sim_rng_uniform(rng) * tot;
  if (u < p->fail_compile_w)
    return SG_EVAL_COMPILE_ERROR;
  if (u < p->fail_compile_w + p->fail_runtime_w)
    return SG_EVAL_RUNTIME_ERROR;
  return SG_EVAL_NUMERICAL_ERROR;
}

static double prompt_tokens_of(const sim *s, const sg_prompt *pr) {
  double t = s->p->gen_prompt_tokens;
  if (pr != NULL)
    t += s->p->gen_feedback_tokens * (double)(pr->n_items + (pr->base_kernel != 0));
  return t;
}

static int start_main(sim *s, uint32_t w, const sg_ctl_action *a) {
  const sg_sim_params *p = s->p;
  sim_wf *f = &s->wf[w];
  sim_gen *g = gen_get(s, w, a->u.start.gen, true);
  if (g == NULL || g->used)
    return sg_err_set(s->err, SG_EINVAL, "workflow %u: bad generation id %llu", w,
                      (unsigned long long)a->u.start.gen);
  memset(g, 0, sizeof *g);
  g->used = true;
  g->kind = SG_GEN_MAIN;
  g->epoch = 1;
  /* Its own stream, keyed by (workflow, iteration, prompt): every
   * configuration sees the same main generations (common random numbers),
   * so their differences are the policy's, not the dice's. */
  sg_sim_rng rr, *rng = &rr;
  sg_sim_rng_seed(rng, p->seed,
                  RNG_MAIN | ((uint64_t)w << 32) | ((uint64_t)a->iteration << 8) |
                      (uint64_t)(a->u.start.prompt_index & 0xff));
  double dur = sg_sim_rng_lognormal(rng, p->gen_mean_s, p->gen_cv);
  double total = dur * p->gen_rate_tok_s;
  g->answer_tokens = fmin(p->gen_answer_tokens, total * 0.5);
  g->reason_tokens = total - g->answer_tokens;
  g->reason_bytes = (uint64_t)fmax(1.0, g->reason_tokens * s->bpt);
  g->t0_us = s->now_us;
  g->end_us = s->now_us + s_to_us(dur);
  g->reason_end_us = s->now_us + s_to_us(g->reason_tokens / p->gen_rate_tok_s);
  if (g->reason_end_us > g->end_us)
    g->reason_end_us = g->end_us;
  int ntrig = sg_sim_rng_poisson(rng, p->triggers_per_gen);
  g->text = make_reasoning(rng, g->reason_bytes, ntrig);
  /* The kernel this reasoning converges to: a refinement of the prompt's
   * base kernel, or a first attempt at the task. */
  double base = 0;
  const sg_prompt *pr = a->u.start.prompt;
  if (pr != NULL && pr->base_kernel != 0) {
    const sg_kernel *k = sg_history_get(sg_controller_history(f->ctl), pr->base_kernel);
    if (k != NULL && k->profiled && isfinite(k->speedup))
      base = k->speedup;
  }
  double z = sg_sim_rng_normal(rng);
  if (base > 0) {
    /* Diminishing returns: a refinement closes a share of the log-distance
     * from its base to the task's ceiling, with spread. */
    double ceil_log = log(f->task_speed * p->speed_ceiling);
    double lb = log(base);
    g->speedup = exp(lb + p->speed_step_frac * (ceil_log - lb) + p->speed_step_sigma * z);
  } else {
    g->speedup = f->task_speed * exp(p->speed_step_sigma * z);
  }
  g->valid = sg_sim_rng_bernoulli(rng, p->valid_main_p);
  g->fail_status = draw_failure(s, rng);
  g->prompt_tokens = prompt_tokens_of(s, pr);
  g->cached_tokens = 0;
  int64_t end = g->end_us;
  if (sg_sim_rng_bernoulli(rng, p->fault_gen_fail_p)) {
    g->fails = true;
    end = g->t0_us + s_to_us(sg_sim_rng_uniform(rng) * dur);
    g->end_us = end;
    if (g->reason_end_us > end)
      g->reason_end_us = end;
  }
  s->res->main_gens++;
  s->res->prompt_tokens += (uint64_t)llround(g->prompt_tokens);
  int64_t first = s->now_us + s_to_us(p->gen_chunk_s);
  if (first < g->reason_end_us)
    push(s, first, EV_CHUNK, w, a->u.start.gen, g->epoch);
  push(s, g->end_us, EV_GEN_END, w, a->u.start.gen, g->epoch);
  return 0;
}

static int start_spec(sim *s, uint32_t w, const sg_ctl_action *a) {
  const sg_sim_params *p = s->p;
  sim_wf *f = &s->wf[w];
  /* Create first: growing the table moves the records. */
  sim_gen *g = gen_get(s, w, a->u.start.gen, true);
  sim_gen *parent = gen_get(s, w, a->u.start.parent_gen, false);
  if (g == NULL || g->used)
    return sg_err_set(s->err, SG_EINVAL, "workflow %u: bad generation id %llu", w,
                      (unsigned long long)a->u.start.gen);
  if (parent == NULL || parent->kind != SG_GEN_MAIN)
    return sg_err_set(s->err, SG_EINVAL,
                      "workflow %u: fork %llu of unknown main generation %llu", w,
                      (unsigned long long)a->u.start.gen,
                      (unsigned long long)a->u.start.parent_gen);
  memset(g, 0, sizeof *g);
  g->used = true;
  g->kind = SG_GEN_SPEC;
  g->epoch = 1;
  double frac = (double)a->u.start.prefix_len / (double)parent->reason_bytes;
  if (frac > 1)
    frac = 1;
  g->prefix_frac = frac;
  double prefix_tokens = (double)a->u.start.prefix_len / s->bpt;
  double hit = s->v->remote_cache ? p->remote_cache_hit : p->local_cache_hit;
  g->prompt_tokens = prompt_tokens_of(s, a->u.start.prompt) + prefix_tokens;
  g->cached_tokens = prefix_tokens * hit;
  double prefill_s = (g->prompt_tokens - g->cached_tokens) / p->prefill_tok_s;
  g->answer_tokens = p->spec_answer_tokens;
  double dur = prefill_s + g->answer_tokens / p->spec_rate_tok_s;
  g->t0_us = s->now_us;
  g->end_us = g->reason_end_us = s->now_us + s_to_us(dur);
  /* Validity is a step in the prefix fraction: before the workflow's
   * shortest useful prefix a fork rarely writes a valid kernel. */
  double pv = frac > f->threshold ? p->valid_spec_p : p->valid_no_prefix_p;
  g->valid = sg_sim_rng_bernoulli(&f->rng, pv);
  g->fail_status = draw_failure(s, &f->rng);
  double z = sg_sim_rng_normal(&f->rng);
  g->speedup = parent->speedup *
               exp(-p->speed_spec_gap * (1.0 - frac) + p->speed_spec_sigma * z);
  if (sg_sim_rng_bernoulli(&f->rng, p->fault_gen_fail_p)) {
    g->fails = true;
    g->end_us = g->reason_end_us =
        g->t0_us + s_to_us(sg_sim_rng_uniform(&f->rng) * dur);
  }
  s->res->forks++;
  s->res->prompt_tokens += (uint64_t)llround(g->prompt_tokens);
  s->res->cached_tokens += (uint64_t)llround(g->cached_tokens);
  push(s, g->end_us, EV_GEN_END, w, a->u.start.gen, g->epoch);
  return 0;
}

/* Completion tokens a generation has produced by now. */
static double tokens_so_far(const sim *s, const sim_gen *g) {
  double el = (double)(s->now_us - g->t0_us) / 1e6;
  double full = g->reason_tokens + g->answer_tokens;
  if (g->kind == SG_GEN_MAIN)
    return fmin(full, el * s->p->gen_rate_tok_s);
  double dur = (double)(g->end_us - g->t0_us) / 1e6;
  double ans_s = g->answer_tokens / s->p->spec_rate_tok_s;
  return fmin(full, fmax(0.0, (el - (dur - ans_s)) * s->p->spec_rate_tok_s));
}

static void end_gen(sim *s, sim_gen *g, double completion) {
  assert(g->epoch != 0);
  g->epoch = 0;
  s->res->completion_tokens += (uint64_t)llround(completion);
  free(g->text);
  g->text = NULL;
}

/* ---- executing the core's actions (the interpreter's ops) ---- */

/* The interpreter's verdict after a call into it: its first error, if any
 * (already in s->err). */
static int it_rc(const sim *s) {
  return sg_interp_failed(s->it) ? (s->err->code < 0 ? s->err->code : SG_EIO) : 0;
}

static int ctl_call(sim *s, uint32_t w, const sg_ctl_event *ev) {
  sg_interp_event(s->it, w, ev);
  return it_rc(s);
}

static int64_t op_now_us(void *data) { return ((sim *)data)->now_us; }

static int op_gen_start(void *data, uint32_t w, const sg_ctl_action *a) {
  sim *s = data;
  return a->u.start.kind == SG_GEN_MAIN ? start_main(s, w, a) : start_spec(s, w, a);
}

static int op_gen_cancel(void *data, uint32_t w, uint64_t gen, bool *was_main) {
  sim *s = data;
  sim_gen *g = gen_get(s, w, gen, false);
  if (g != NULL && g->epoch != 0) {
    s->res->gens_cancelled++;
    *was_main = g->kind == SG_GEN_MAIN;
    end_gen(s, g, tokens_so_far(s, g));
  }
  return 0;
}

static int op_submit(void *data, uint32_t w, const sg_ctl_action *a, bool *answered,
                     bool *needs_compile) {
  sim *s = data;
  sim_wf *f = &s->wf[w];
  if (sg_history_get(sg_controller_history(f->ctl), a->u.submit.candidate) == NULL)
    return sg_err_set(s->err, SG_EINVAL, "workflow %u: submit of unknown candidate %llu",
                      w, (unsigned long long)a->u.submit.candidate);
  if (a->u.submit.phase == SG_PHASE_VALIDATE)
    s->res->candidates++;
  *answered = false;
  *needs_compile = a->u.submit.phase == SG_PHASE_VALIDATE && s->p->compile_s > 0;
  return 0;
}

/* Refused (full, or the iteration already ended): the candidate's
 * evaluation failed for infrastructure reasons. */
static int op_refused(void *data, uint32_t w, const sg_ctl_action *a, const char *why) {
  sim *s = data;
  (void)why;
  push(s, s->now_us, EV_EVAL_FAIL, w, a->u.submit.candidate, (uint64_t)a->u.submit.phase);
  return 0;
}

static int op_submitted(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id id) {
  sim *s = data;
  sim_req *q = req_get(s, id, true);
  if (q == NULL)
    return sg_err_set(s->err, SG_ERANGE, "request id %llu out of range",
                      (unsigned long long)id);
  const sg_kernel *k = sg_history_get(sg_controller_history(s->wf[w].ctl),
                                      a->u.submit.candidate);
  q->workflow = w;
  q->candidate = a->u.submit.candidate;
  q->gen = k->gen;
  q->phase = a->u.submit.phase;
  q->epoch = 1;
  q->live = true;
  return 0;
}

static int op_iteration_end(void *data, uint32_t w, const sg_ctl_action *a,
                            bool main_cancelled) {
  sim *s = data;
  (void)w;
  s->res->iterations++;
  if (a->u.end.reason == SG_REASON_EARLY) {
    s->res->criterion_accepts++;
    /* Early in the paper's sense: the reasoning was still running (the
     * controller cancels it just before ending the iteration). */
    if (main_cancelled)
      s->res->early_terminations++;
  }
  return 0;
}

static int op_workflow_done(void *data, uint32_t w, const sg_ctl_action *a) {
  sim *s = data;
  (void)a;
  sim_wf *f = &s->wf[w];
  f->done = true;
  f->done_us = s->now_us;
  s->res->workflows_done++;
  return 0;
}

static int op_decision(void *data, uint32_t w, const sg_ctl_action *a) {
  (void)data, (void)w, (void)a;
  return 0;
}

static int op_compile_start(void *data, const sg_sched_action *a) {
  sim *s = data;
  sim_req *q = req_get(s, a->req, false);
  assert(q != NULL);
  q->epoch++;
  push(s, s->now_us + s_to_us(s->p->compile_s), EV_COMPILE_END, q->workflow, a->req,
       q->epoch);
  return 0;
}

static int op_device_start(void *data, const sg_sched_action *a) {
  sim *s = data;
  const sg_sim_params *p = s->p;
  sim_req *q = req_get(s, a->req, false);
  assert(q != NULL && a->device >= 0 && a->device < p->devices);
  q->epoch++;
  double d;
  sim_wf *f = &s->wf[q->workflow];
  if (s->now_us >= s->dies_us[a->device])
    d = p->fault_infra_s;
  else if (a->phase == SG_PHASE_VALIDATE)
    d = sg_sim_rng_lognormal(&f->rng, p->val_mean_s, p->val_cv);
  else
    d = sg_sim_rng_lognormal(&f->rng, p->prof_mean_s, p->prof_cv);
  /* owner carries the device: its death decides an infra failure. */
  push(s, s->now_us + s_to_us(d), EV_DEVICE_END, (uint32_t)a->device, a->req, q->epoch);
  return 0;
}

static int op_abort(void *data, const sg_sched_action *a) {
  sim *s = data;
  sim_req *q = req_get(s, a->req, false);
  if (q != NULL) {
    q->live = false;
    q->epoch++;
  }
  s->res->requests_aborted++;
  return 0;
}

static int op_give_up(void *data, const sg_sched_action *a) {
  sim *s = data;
  sim_req *q = req_get(s, a->req, false);
  if (q != NULL && q->live) {
    q->live = false;
    q->epoch++;
    push(s, s->now_us, EV_EVAL_FAIL, q->workflow, q->candidate, (uint64_t)q->phase);
  }
  s->res->requests_failed++;
  return 0;
}

static int op_device_dead(void *data, const sg_sched_action *a) {
  (void)a;
  ((sim *)data)->res->devices_retired++;
  return 0;
}

static int op_resplit(void *data, const sg_sched_action *a) {
  (void)a;
  ((sim *)data)->res->resplits++;
  return 0;
}

static const sg_interp_ops sim_ops = {
    .now_us = op_now_us,
    .gen_start = op_gen_start,
    .gen_cancel = op_gen_cancel,
    .submit = op_submit,
    .submitted = op_submitted,
    .refused = op_refused,
    .iteration_end = op_iteration_end,
    .workflow_done = op_workflow_done,
    .decision = op_decision,
    .compile_start = op_compile_start,
    .device_start = op_device_start,
    .abort = op_abort,
    .give_up = op_give_up,
    .device_dead = op_device_dead,
    .resplit = op_resplit,
};

static void eval_event(sim *s, sg_ctl_event *ev, uint64_t cand, sg_phase ph,
                       sg_eval_status st, double speedup, const char *msg) {
  memset(ev, 0, sizeof *ev);
  ev->type = SG_CEV_EVAL_DONE;
  ev->now_us = s->now_us;
  ev->u.eval.candidate = cand;
  ev->u.eval.phase = ph;
  ev->u.eval.status = st;
  ev->u.eval.speedup = speedup;
  ev->u.eval.message = msg;
  ev->u.eval.profile_text = NULL;
}

static const char answer_fmt[] =
    "Here is the kernel.\n```c\n/* simulated candidate: workflow %u, generation "
    "%llu */\nvoid sim_kernel(const float *x, float *y, int n) {\n"
    "  for (int i = 0; i < n; i++)\n    y[i] = x[i];\n}\n```\n";

static int on_chunk(sim *s, const sg_sim_event *e) {
  sim_gen *g = gen_get(s, e->owner, e->id, false);
  if (g == NULL || g->epoch != e->epoch || g->epoch == 0)
    return 0;
  double frac = (double)(s->now_us - g->t0_us) /
                (double)(g->reason_end_us - g->t0_us);
  uint64_t upto = (uint64_t)(fmin(1.0, frac) * (double)g->reason_bytes);
  if (upto > g->sent_bytes) {
    sg_ctl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SG_CEV_GEN_CHUNK;
    ev.now_us = s->now_us;
    ev.u.chunk.gen = e->id;
    ev.u.chunk.reasoning = g->text + g->sent_bytes;
    ev.u.chunk.reasoning_len = (size_t)(upto - g->sent_bytes);
    ev.u.chunk.tokens = (uint64_t)llround((double)(upto - g->sent_bytes) / s->bpt);
    g->sent_bytes = upto;
    uint64_t epoch = g->epoch;
    int rc = ctl_call(s, e->owner, &ev);
    if (rc < 0)
      return rc;
    g = gen_get(s, e->owner, e->id, false); /* the table may have grown */
    if (g == NULL || g->epoch != epoch)
      return 0;                              /* cancelled meanwhile */
  }
  int64_t next = s->now_us + s_to_us(s->p->gen_chunk_s);
  if (next < g->reason_end_us)
    push(s, next, EV_CHUNK, e->owner, e->id, g->epoch);
  else if (g->sent_bytes < g->reason_bytes && g->reason_end_us > s->now_us)
    push(s, g->reason_end_us, EV_CHUNK, e->owner, e->id, g->epoch);
  return 0;
}

static int on_gen_end(sim *s, const sg_sim_event *e) {
  sim_gen *g = gen_get(s, e->owner, e->id, false);
  if (g == NULL || g->epoch != e->epoch || g->epoch == 0)
    return 0;
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.now_us = s->now_us;
  double prompt = g->prompt_tokens, cached = g->cached_tokens;
  if (g->fails) {
    double done = tokens_so_far(s, g);
    s->res->gens_failed++;
    end_gen(s, g, done);
    ev.type = SG_CEV_GEN_FAILED;
    ev.u.failed.gen = e->id;
    ev.u.failed.error = SG_EHTTP;
    ev.u.failed.message = "simulated generation failure";
    ev.u.failed.usage.prompt_tokens = (uint64_t)llround(prompt);
    ev.u.failed.usage.cached_tokens = (uint64_t)llround(cached);
    ev.u.failed.usage.completion_tokens = (uint64_t)llround(done);
    return ctl_call(s, e->owner, &ev);
  }
  /* The rest of the reasoning, if the last chunk left some. */
  if (g->kind == SG_GEN_MAIN && g->sent_bytes < g->reason_bytes) {
    sg_ctl_event ch;
    memset(&ch, 0, sizeof ch);
    ch.type = SG_CEV_GEN_CHUNK;
    ch.now_us = s->now_us;
    ch.u.chunk.gen = e->id;
    ch.u.chunk.reasoning = g->text + g->sent_bytes;
    ch.u.chunk.reasoning_len = (size_t)(g->reason_bytes - g->sent_bytes);
    g->sent_bytes = g->reason_bytes;
    uint64_t epoch = g->epoch;
    int rc = ctl_call(s, e->owner, &ch);
    if (rc < 0)
      return rc;
    g = gen_get(s, e->owner, e->id, false);
    if (g == NULL || g->epoch != epoch)
      return 0;
  }
  double completion = g->reason_tokens + g->answer_tokens;
  if (g->kind == SG_GEN_MAIN) {
    s->res->main_gen_s += (double)(s->now_us - g->t0_us) / 1e6;
    s->res->main_gens_completed++;
  }
  end_gen(s, g, completion);
  char answer[512];
  int len = snprintf(answer, sizeof answer, answer_fmt, e->owner,
                     (unsigned long long)e->id);
  assert(len > 0 && (size_t)len < sizeof answer);
  ev.type = SG_CEV_GEN_FINISHED;
  ev.u.finished.gen = e->id;
  ev.u.finished.text = answer;
  ev.u.finished.len = (size_t)len;
  ev.u.finished.reason = SG_FINISH_STOP;
  ev.u.finished.usage.prompt_tokens = (uint64_t)llround(prompt);
  ev.u.finished.usage.cached_tokens = (uint64_t)llround(cached);
  ev.u.finished.usage.completion_tokens = (uint64_t)llround(completion);
  return ctl_call(s, e->owner, &ev);
}

/* The outcome of a finished evaluation, from the candidate's generation. */
static int deliver_eval(sim *s, sim_req *q) {
  sim_wf *f = &s->wf[q->workflow];
  sim_gen *g = gen_get(s, q->workflow, q->gen, false);
  sg_ctl_event ev;
  if (g == NULL) {
    eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_INFRA_ERROR, NAN,
               "simulated: unknown generation");
    return ctl_call(s, q->workflow, &ev);
  }
  double noise = exp(s->p->speed_noise_sigma * sg_sim_rng_normal(&f->rng));
  if (q->phase == SG_PHASE_VALIDATE) {
    if (g->kind == SG_GEN_MAIN) {
      s->res->main_validated++;
      s->res->main_valid += g->valid;
    } else {
      s->res->spec_validated++;
      s->res->spec_valid += g->valid;
    }
    if (g->valid) {
      s->res->validated_ok++;
      eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_OK, g->speedup * noise, NULL);
    } else {
      eval_event(s, &ev, q->candidate, q->phase, g->fail_status, NAN,
                 "simulated: the kernel failed validation");
    }
  } else {
    s->res->profiling_feedback++;
    eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_OK, g->speedup * noise, NULL);
  }
  return ctl_call(s, q->workflow, &ev);
}

static int on_compile_end(sim *s, const sg_sim_event *e) {
  sim_req *q = req_get(s, e->id, false);
  if (q == NULL || !q->live || q->epoch != e->epoch)
    return 0;
  sim_gen *g = gen_get(s, q->workflow, q->gen, false);
  bool ok = g == NULL || g->valid || g->fail_status != SG_EVAL_COMPILE_ERROR;
  int rc = sg_interp_compiled(s->it, e->id, ok, s->err);
  if (rc == 0)
    rc = it_rc(s);
  if (rc < 0 || ok)
    return rc;
  q->live = false;
  if (g != NULL && g->kind == SG_GEN_MAIN)
    s->res->main_validated++;
  else if (g != NULL)
    s->res->spec_validated++;
  sg_ctl_event ev;
  eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_COMPILE_ERROR, NAN,
             "simulated: the kernel did not compile");
  return ctl_call(s, q->workflow, &ev);
}

static int on_device_end(sim *s, const sg_sim_event *e) {
  sim_req *q = req_get(s, e->id, false);
  if (q == NULL || !q->live || q->epoch != e->epoch)
    return 0;
  bool infra = s->now_us >= s->dies_us[e->owner];
  if (infra)
    s->res->infra_failures++;
  int rc = sg_interp_device_done(s->it, e->id, infra, s->err);
  if (rc == 0)
    rc = it_rc(s);
  if (rc < 0 || infra)
    return rc; /* re-queued or failed by the scheduler */
  q->live = false;
  return deliver_eval(s, q);
}

static int on_tick(sim *s, const sg_sim_event *e) {
  sim_wf *f = &s->wf[e->owner];
  if (f->done)
    return 0;
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SG_CEV_TICK;
  ev.now_us = s->now_us;
  sg_scheduler_capacity(s->sched, &ev.u.tick.capacity);
  int rc = ctl_call(s, e->owner, &ev);
  if (rc < 0)
    return rc;
  if (!f->done)
    push(s, s->now_us + s_to_us(s->p->tick_s), EV_TICK, e->owner, 0, 0);
  return 0;
}

/* ---- the campaign ---- */

static int setup(sim *s) {
  const sg_sim_params *p = s->p;
  sg_search_registry_init(&s->sreg);
  sg_termination_registry_init(&s->treg);
  sg_sched_opts so;
  sg_sched_opts_default(&so);
  so.devices = p->devices;
  so.compile_slots = p->compile_slots;
  so.elastic = s->v->elastic;
  so.static_profile_devices = p->static_profile_devices;
  so.validate_lifo = s->v->lifo;
  so.max_infra_failures = p->max_infra_failures;
  so.max_retries = p->max_retries;
  so.max_queued = 1u << 20;
  int rc = sg_scheduler_new(&so, &s->sched, s->err);
  if (rc < 0)
    return rc;
  sg_interp_opts io = {.ops = &sim_ops, .data = s, .sched = s->sched,
                       .n_workflows = (size_t)p->workflows, .err = s->err,
                       .trace = s->trace, .trace_data = s->trace_data};
  if ((rc = sg_interp_new(&io, &s->it, s->err)) < 0)
    return rc;
  s->dies_us = sg_calloc((size_t)p->devices, sizeof *s->dies_us);
  for (int d = 0; d < p->devices; d++) {
    sg_sim_rng r;
    sg_sim_rng_seed(&r, p->seed, RNG_DEVICE + (uint64_t)d);
    s->dies_us[d] = p->fault_device_mtbf_s > 0
                        ? s_to_us(sg_sim_rng_exponential(&r, p->fault_device_mtbf_s))
                        : INT64_MAX;
  }
  s->wf = sg_calloc((size_t)p->workflows, sizeof *s->wf);
  for (int w = 0; w < p->workflows; w++) {
    sim_wf *f = &s->wf[w];
    sg_sim_rng task;
    sg_sim_rng_seed(&task, p->seed, RNG_TASK + (uint64_t)w * 7);
    f->threshold = sg_sim_rng_range(&task, p->valid_threshold_min, p->valid_threshold_max);
    f->task_speed = p->speed_first * exp(p->speed_first_sigma * sg_sim_rng_normal(&task));
    sg_sim_rng_seed(&f->rng, p->seed, RNG_WORKFLOW + (uint64_t)w);
    rc = sg_search_new(&s->sreg, p->search, p->seed + (uint64_t)w, &f->search, s->err);
    if (rc < 0)
      return rc; /* the message names the search */
    rc = sg_termination_new(&s->treg, p->termination, &f->term, s->err);
    if (rc < 0)
      return rc; /* the message names the criterion */
    sg_ctl_opts o;
    sg_ctl_opts_default(&o);
    o.search = f->search;
    o.termination = f->term;
    o.language = "c";
    o.entry = "sim_kernel";
    o.speculate = s->v->speculate;
    o.fork_on_idle = true;
    o.idle_min_new_bytes = (uint64_t)llround(p->idle_min_new_tokens * s->bpt);
    o.max_forks_per_iteration = p->max_forks_per_iteration;
    o.max_live_forks = p->max_live_forks;
    o.max_iterations = (uint32_t)p->iterations;
    o.max_wall_us = p->budget_wall_s > 0 ? s_to_us(p->budget_wall_s) : 0;
    o.max_tokens = (uint64_t)llround(p->budget_tokens);
    rc = sg_controller_new(&o, &f->ctl, s->err);
    if (rc < 0)
      return sg_err_prefix(s->err, "controller");
    sg_interp_set_controller(s->it, (uint32_t)w, f->ctl);
  }
  return 0;
}

static void teardown(sim *s) {
  if (s->wf != NULL)
    for (int w = 0; w < s->p->workflows; w++) {
      sim_wf *f = &s->wf[w];
      sg_controller_free(f->ctl);
      sg_termination_free(f->term);
      sg_search_free(f->search);
      for (size_t i = 0; i < f->ngens; i++)
        free(f->gens[i].text);
      free(f->gens);
    }
  free(s->wf);
  free(s->reqs);
  free(s->dies_us);
  sg_scheduler_free(s->sched);
  sg_sim_queue_free(&s->q);
  sg_interp_free(s->it);
}

static void finish_stats(sim *s) {
  sg_sim_result *r = s->res;
  const sg_sim_params *p = s->p;
  int64_t end = 0;
  for (int w = 0; w < p->workflows; w++)
    if (s->wf[w].done_us > end)
      end = s->wf[w].done_us;
  r->e2e_s = (double)end / 1e6;
  sg_scheduler_tick(s->sched, end, NULL);
  sg_sched_stats st;
  sg_scheduler_stats(s->sched, &st);
  double pool = (double)p->devices * (double)end;
  if (pool > 0) {
    r->util_validate = (double)st.busy_us[SG_PHASE_VALIDATE] / pool;
    r->util_profile = (double)st.busy_us[SG_PHASE_PROFILE] / pool;
  }
  r->util_overall = r->util_validate + r->util_profile;
  r->devices_died = 0;
  for (int d = 0; d < p->devices; d++)
    r->devices_died += s->dies_us[d] < end;
  double sum = 0, logsum = 0;
  for (int w = 0; w < p->workflows; w++) {
    sg_ctl_stats cs;
    sg_controller_stats(s->wf[w].ctl, &cs);
    r->controller_profiled += cs.profiled;
    r->controller_early += cs.early_terminations;
    r->forks_trigger += cs.forks_by_reason[SG_REASON_FORK_TRIGGER];
    r->forks_idle += cs.forks_by_reason[SG_REASON_FORK_IDLE];
    const sg_history *h = sg_controller_history(s->wf[w].ctl);
    const sg_kernel *k = h->best_id ? sg_history_get(h, h->best_id) : NULL;
    /* A workflow that never profiled a kernel keeps the reference: 1.0
     * (and is counted, so the fallback is visible). */
    double best = 1.0;
    if (k != NULL && isfinite(k->speedup) && k->speedup > 0)
      best = k->speedup;
    else
      r->workflows_without_kernel++;
    sum += best;
    logsum += log(best);
  }
  r->best_speedup_mean = sum / p->workflows;
  r->best_speedup_geomean = exp(logsum / p->workflows);
}

int sg_sim_run(const sg_sim_params *p, const sg_sim_variant *v,
               sg_sim_result *out, sg_err *err) {
  return sg_sim_run_traced(p, v, NULL, NULL, out, err);
}

int sg_sim_run_traced(const sg_sim_params *p, const sg_sim_variant *v,
                      void (*trace)(void *data, const char *line), void *trace_data,
                      sg_sim_result *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", v->name);
  int rc = sg_sim_params_validate(p, err);
  if (rc < 0)
    return rc;
  sim s;
  memset(&s, 0, sizeof s);
  s.p = p;
  s.v = v;
  s.res = out;
  s.err = err;
  s.bpt = p->text_bytes_per_token;
  s.trace = trace;
  s.trace_data = trace_data;
  sg_sim_queue_init(&s.q);
  rc = setup(&s);
  for (int w = 0; rc == 0 && w < p->workflows; w++) {
    sg_interp_start(s.it, (uint32_t)w);
    rc = it_rc(&s);
    if (rc == 0)
      push(&s, s_to_us(p->tick_s), EV_TICK, (uint32_t)w, 0, 0);
  }
  /* A guard against a campaign that never ends: far beyond any plausible
   * length (every iteration 50 times its mean). */
  double guard_s = 50.0 * p->iterations *
                       (p->gen_mean_s + p->val_mean_s + p->prof_mean_s + p->compile_s +
                        p->tick_s) +
                   86400.0;
  int64_t guard_us = s_to_us(guard_s);
  sg_sim_event e;
  while (rc == 0 && out->workflows_done < (uint64_t)p->workflows) {
    if (!sg_sim_queue_pop(&s.q, &e)) {
      rc = sg_err_set(err, SG_ESTATE,
                      "the campaign stalled at t=%.1f s with %llu of %d workflows done",
                      (double)s.now_us / 1e6, (unsigned long long)out->workflows_done,
                      p->workflows);
      break;
    }
    assert(e.t_us >= s.now_us);
    s.now_us = e.t_us;
    if (s.now_us > guard_us) {
      rc = sg_err_set(err, SG_ETIMEDOUT, "virtual time passed the guard of %.0f s",
                      guard_s);
      break;
    }
    out->events++;
    sg_scheduler_tick(s.sched, s.now_us, NULL);
    switch (e.type) {
    case EV_CHUNK:
      rc = on_chunk(&s, &e);
      break;
    case EV_GEN_END:
      rc = on_gen_end(&s, &e);
      break;
    case EV_COMPILE_END:
      rc = on_compile_end(&s, &e);
      break;
    case EV_DEVICE_END:
      rc = on_device_end(&s, &e);
      break;
    case EV_EVAL_FAIL: {
      sg_ctl_event ev;
      eval_event(&s, &ev, e.id, (sg_phase)e.epoch, SG_EVAL_INFRA_ERROR, NAN,
                 "simulated: no device could run it");
      rc = ctl_call(&s, e.owner, &ev);
      break;
    }
    case EV_TICK:
      rc = on_tick(&s, &e);
      break;
    default:
      assert(0 && "unknown event type");
    }
  }
  if (rc == 0)
    finish_stats(&s);
  teardown(&s);
  return rc;
}
