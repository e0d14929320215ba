/* sg_sim_models.c: the simulator's models of the outside world (see
 * docs/simulation.md, "The models"): synthetic reasoning text with planted
 * triggers, when it reaches the controller, main and speculative
 * generations (their lengths under the server's load, prompts and cache
 * hits, kernels, validity and failures), and their endings. */
#include "sim/sg_sim_priv.h"

#include "common/sg_alloc.h"
#include "sim/sg_sim_tasks.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The same, numbered: the scanner stays quiet on an exact repeat of a
 * recent sentence or block (a repetition loop), so a reasoning planting
 * tens of triggers, as the measured ones do, writes each differently. */
static const char *const trigger_fmt[] = {
    "Let me implement version %d now. ",
    "Here is the plan: a %dx32 tile per block staged in shared memory. ",
    "I will use a tile size of %dx64 with each thread computing a 4x4 "
    "sub-block. ",
    "\n```c\nvoid sim_step%d(const float *x, float *y, int n) {\n"
    "  for (int i = 0; i < n; i++)\n    y[i] = x[i];\n}\n```\n",
    "Now let me write kernel number %d. ",
};
_Static_assert(sizeof trigger_fmt / sizeof trigger_fmt[0] == NTRIGGER,
               "one numbered form per trigger sentence");

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Where a reasoning's trigger sentences go (byte offsets, sorted) and
 * the prefix fraction past which its forks can be valid. The guessed
 * model: a Poisson count at uniform positions, the task's threshold. The
 * measured one (sg_sim_streams.h): the count and the positions drawn from
 * real traces, and whether the reasoning holds a complete kernel and
 * where the first begins; a trigger is planted there (the scanner fires
 * on a kernel as it closes), and that is its threshold (none: never). */
static uint64_t *plant_triggers(const sim *s, sg_sim_rng *rng, uint64_t n,
                                double task_threshold, int *ntrig, double *threshold) {
  const sg_sim_streams *st = s->streams;
  if (st == NULL) {
    *ntrig = sg_sim_rng_poisson(rng, s->p->triggers_per_gen);
    *threshold = task_threshold;
    uint64_t *at = sg_calloc((size_t)*ntrig + 1, sizeof *at);
    for (int i = 0; i < *ntrig; i++)
      at[i] = (uint64_t)(sg_sim_rng_uniform(rng) * (double)n);
    qsort(at, (size_t)*ntrig, sizeof *at, cmp_u64);
    return at;
  }
  *ntrig = (int)llround(sg_sim_qf_at(&st->triggers, sg_sim_rng_uniform(rng)));
  bool kernel = !sg_sim_rng_bernoulli(rng, st->share_without_kernel);
  double first = sg_sim_qf_at(&st->first_kernel, sg_sim_rng_uniform(rng));
  *threshold = kernel ? first : 2.0;
  uint64_t *at = sg_calloc((size_t)*ntrig + 1, sizeof *at);
  for (int i = 0; i < *ntrig; i++)
    at[i] = (uint64_t)(sg_sim_qf_at(&st->trigger_pos, sg_sim_rng_uniform(rng)) * (double)n);
  if (kernel && *ntrig > 0)
    at[0] = (uint64_t)(first * (double)n);
  qsort(at, (size_t)*ntrig, sizeof *at, cmp_u64);
  return at;
}

/* Builds n bytes of reasoning with trigger sentences ending near the
 * planted offsets at[] (ntrig, sorted; numbered: each written differently);
 * where each trigger sentence ends goes to ends[] (fewer are used when the
 * text is too short). */
static char *make_reasoning(sg_sim_rng *rng, uint64_t n, const uint64_t *at, int ntrig,
                            bool numbered, uint64_t *ends, int *nends) {
  char *t = sg_malloc(n + 1);
  char buf[256];
  uint64_t len = 0;
  int k = 0;
  *nends = 0;
  while (len < n) {
    const char *piece;
    bool trig = false;
    if (k < ntrig &&
        at[k] <= len + strlen(trigger_text[0]) + 64) {
      uint64_t which = sg_sim_rng_next(rng) % NTRIGGER;
      piece = trigger_text[which];
      if (numbered) {
        snprintf(buf, sizeof buf, trigger_fmt[which], k + 2);
        piece = buf;
      }
      k++;
      trig = true;
    } else {
      piece = filler[sg_sim_rng_next(rng) % NFILLER];
    }
    size_t pl = strlen(piece);
    if (pl > n - len)
      pl = (size_t)(n - len);
    memcpy(t + len, piece, pl);
    len += pl;
    if (trig)
      ends[(*nends)++] = len;
  }
  t[n] = '\0';
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

/* When the reasoning reaches the controller. With gen.chunk_s > 0, every
 * chunk_s; with 0 (event-driven streaming), a chunk just after each planted
 * trigger sentence and, at every controller tick, whatever has been
 * generated since the last delivery (on_tick): the controller sees the
 * text whenever it could act on it, at a few events per trace instead of
 * one per chunk_s. The scanner fires within a few bytes of a sentence's
 * end, hence the slack. */
#define TRIGGER_SLACK_BYTES 8

static void schedule_chunks(sim *s, uint32_t w, uint64_t id, const sim_gen *g,
                            const uint64_t *trig_end, int ntrig) {
  if (s->p->gen_chunk_s > 0) {
    int64_t first = s->now_us + sim_s_to_us(s->p->gen_chunk_s);
    if (first < g->reason_end_us)
      sim_push(s, first, EV_CHUNK, w, id, g->epoch);
    return;
  }
  double span = (double)(g->reason_end_us - g->t0_us);
  for (int i = 0; i < ntrig; i++) {
    uint64_t at = trig_end[i] + TRIGGER_SLACK_BYTES;
    if (at >= g->reason_bytes)
      continue; /* the end of the reasoning delivers it */
    int64_t t = g->t0_us +
                (int64_t)ceil(span * (double)at / (double)g->reason_bytes);
    if (t > s->now_us && t < g->reason_end_us)
      sim_push(s, t, EV_CHUNK, w, id, g->epoch);
  }
  if (g->reason_end_us > s->now_us && g->reason_end_us < g->end_us)
    sim_push(s, g->reason_end_us, EV_CHUNK, w, id, g->epoch);
}

/* Iteration `iteration` of workflow w began with main generation
 * first_main: older generations are no longer reachable (see sim_wf)... */
static void keep_from_iteration(sim *s, uint32_t w, uint64_t first_main, uint32_t iteration) {
  sim_wf *f = &s->wf[w];
  /* ... except a main generation an earlier iteration's cutoff left
   * running (sg_ctl_opts.cutoff_detach), while it generates: one of the
   * last iteration's mains (they come first, ids consecutive), or the
   * one kept from before it */
  uint64_t still = 0;
  if (f->keep_set && s->v->cutoff_detach) {
    for (uint64_t id = f->iter_first;; id++) {
      const sim_gen *m = sim_gen_get(s, w, id, false);
      if (m == NULL || m->kind != SG_GEN_MAIN)
        break;
      if (m->epoch != 0) {
        still = id;
        break;
      }
    }
    const sim_gen *kept = f->detached ? sim_gen_get(s, w, f->detached, false) : NULL;
    if (still == 0 && kept != NULL && kept->epoch != 0)
      still = f->detached;
  }
  f->detached = still;
  f->keep_set = true;
  f->keep_iter = iteration;
  f->iter_first = first_main;
  f->keep_from = still && still < first_main ? still : first_main;
}

int sim_start_main(sim *s, uint32_t w, const sg_ctl_action *a) {
  const sg_sim_params *p = s->p;
  sim_wf *f = &s->wf[w];
  /* A main started ahead for the next iteration (sg_ctl_opts.next_ahead)
   * belongs to no iteration yet; the first main of a new iteration starts
   * it. */
  bool ahead = a->iteration != f->cur_iter;
  if (!ahead && (!f->keep_set || a->iteration != f->keep_iter))
    keep_from_iteration(s, w, a->u.start.gen, a->iteration);
  sim_gen *g = sim_gen_get(s, w, a->u.start.gen, true);
  if (g == NULL || g->used)
    return sg_err_set(s->err, SG_EINVAL, "workflow %u: bad generation id %llu", w,
                      (unsigned long long)a->u.start.gen);
  memset(g, 0, sizeof *g);
  g->id = a->u.start.gen;
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
  /* The drawn duration is at the calibrated load; its tokens are what the
   * model writes, and the server's load now sets how fast. */
  double dur = sg_sim_rng_lognormal(rng, p->gen_mean_s, p->gen_cv);
  double total = dur * p->gen_rate_tok_s;
  g->server = sg_sim_llm_server(s->llm, w);
  g->rate = sg_sim_llm_start_stream(s->llm, g->server, p->gen_rate_tok_s, s->now_us);
  dur = total / g->rate;
  g->answer_tokens = fmin(p->gen_answer_tokens, total * 0.5);
  g->reason_tokens = total - g->answer_tokens;
  g->reason_bytes = (uint64_t)fmax(1.0, g->reason_tokens * s->bpt);
  g->t0_us = s->now_us;
  g->end_us = s->now_us + sim_s_to_us(dur);
  g->reason_end_us = s->now_us + sim_s_to_us(g->reason_tokens / g->rate);
  if (g->reason_end_us > g->end_us)
    g->reason_end_us = g->end_us;
  int ntrig = 0;
  double threshold = 0;
  uint64_t *at = plant_triggers(s, rng, g->reason_bytes, f->threshold, &ntrig, &threshold);
  /* where the planted triggers end: read once, to schedule the chunks */
  uint64_t *trig_end = sg_calloc((size_t)ntrig + 1, sizeof *trig_end);
  int nends = 0;
  g->text = make_reasoning(rng, g->reason_bytes, at, ntrig, s->streams != NULL, trig_end,
                           &nends);
  free(at);
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
  /* Drawn last, so the draws above are those of earlier versions. A
   * measured stream says it with the threshold (a trace without a kernel
   * has none). */
  g->prefix_useful = s->streams != NULL || p->valid_prefix_useful_p >= 1 ||
                     sg_sim_rng_bernoulli(rng, p->valid_prefix_useful_p);
  g->threshold = threshold;
  g->prompt_tokens = prompt_tokens_of(s, pr);
  g->cached_tokens = 0;
  sg_sim_llm_main_begin(s->llm, g->server, g->prompt_tokens, g->rate, g->t0_us);
  int64_t end = g->end_us;
  if (sg_sim_rng_bernoulli(rng, p->fault_gen_fail_p)) {
    g->fails = true;
    end = g->t0_us + sim_s_to_us(sg_sim_rng_uniform(rng) * dur);
    g->end_us = end;
    if (g->reason_end_us > end)
      g->reason_end_us = end;
  }
  s->res->main_gens++;
  s->res->prompt_tokens += (uint64_t)llround(g->prompt_tokens);
  if (ahead) {
    f->ahead_gen = a->u.start.gen;
  } else {
    f->main_gen = a->u.start.gen;
    f->ahead_gen = 0;
  }
  schedule_chunks(s, w, a->u.start.gen, g, trig_end, nends);
  free(trig_end);
  sim_push(s, g->end_us, EV_GEN_END, w, a->u.start.gen, g->epoch);
  return 0;
}

int sim_start_spec(sim *s, uint32_t w, const sg_ctl_action *a) {
  const sg_sim_params *p = s->p;
  sim_wf *f = &s->wf[w];
  /* The first fork of an iteration whose main was started ahead and
   * adopted: that main began it. */
  if (f->keep_set && a->iteration != f->keep_iter)
    keep_from_iteration(s, w, a->u.start.parent_gen, a->iteration);
  /* Create first: growing the table moves the records. */
  sim_gen *g = sim_gen_get(s, w, a->u.start.gen, true);
  sim_gen *parent = sim_gen_get(s, w, a->u.start.parent_gen, false);
  if (g == NULL || g->used)
    return sg_err_set(s->err, SG_EINVAL, "workflow %u: bad generation id %llu", w,
                      (unsigned long long)a->u.start.gen);
  if (parent == NULL || parent->kind != SG_GEN_MAIN)
    return sg_err_set(s->err, SG_EINVAL,
                      "workflow %u: fork %llu of unknown main generation %llu", w,
                      (unsigned long long)a->u.start.gen,
                      (unsigned long long)a->u.start.parent_gen);
  memset(g, 0, sizeof *g);
  g->id = a->u.start.gen;
  g->used = true;
  g->kind = SG_GEN_SPEC;
  g->epoch = 1;
  double frac = (double)a->u.start.prefix_len / (double)parent->reason_bytes;
  if (frac > 1)
    frac = 1;
  double prefix_tokens = (double)a->u.start.prefix_len / s->bpt;
  double other = prompt_tokens_of(s, a->u.start.prompt);
  g->prompt_tokens = other + prefix_tokens;
  double delay_s;
  g->server = sg_sim_llm_server(s->llm, w);
  /* The whole prompt (task, feedback, reasoning so far) is a prefix of the
   * parent's context, so all of it can be found cached; in the constant
   * model only the reasoning share is discounted, as before. */
  if (p->llm_kv_capacity_tokens > 0)
    sg_sim_llm_fork_prompt(s->llm, g->server, g->prompt_tokens, 0, s->now_us,
                           &g->cached_tokens, &delay_s);
  else
    sg_sim_llm_fork_prompt(s->llm, g->server, prefix_tokens, other, s->now_us,
                           &g->cached_tokens, &delay_s);
  g->rate = sg_sim_llm_start_stream(s->llm, g->server, p->spec_rate_tok_s, s->now_us);
  g->answer_tokens = p->spec_answer_tokens;
  g->own_tokens = g->answer_tokens;
  sg_sim_llm_fork_begin(s->llm, g->server, g->own_tokens);
  double dur = delay_s + g->answer_tokens / g->rate;
  g->t0_us = s->now_us;
  g->end_us = g->reason_end_us = s->now_us + sim_s_to_us(dur);
  /* Validity is a step in the prefix fraction: before the workflow's
   * shortest useful prefix a fork rarely writes a valid kernel. */
  double pv = frac > parent->threshold && parent->prefix_useful ? p->valid_spec_p
                                                           : f->no_prefix_p;
  g->valid = sg_sim_rng_bernoulli(&f->rng, pv);
  g->fail_status = draw_failure(s, &f->rng);
  double z = sg_sim_rng_normal(&f->rng);
  g->speedup = parent->speedup *
               exp(-p->speed_spec_gap * (1.0 - frac) + p->speed_spec_sigma * z);
  if (sg_sim_rng_bernoulli(&f->rng, p->fault_gen_fail_p)) {
    g->fails = true;
    g->end_us = g->reason_end_us =
        g->t0_us + sim_s_to_us(sg_sim_rng_uniform(&f->rng) * dur);
  }
  s->res->forks++;
  s->res->prompt_tokens += (uint64_t)llround(g->prompt_tokens);
  s->res->cached_tokens += (uint64_t)llround(g->cached_tokens);
  sim_push(s, g->end_us, EV_GEN_END, w, a->u.start.gen, g->epoch);
  return 0;
}

/* Completion tokens a generation has produced by now. */
double sim_tokens_so_far(const sim *s, const sim_gen *g) {
  double el = (double)(s->now_us - g->t0_us) / 1e6;
  double full = g->reason_tokens + g->answer_tokens;
  if (g->kind == SG_GEN_MAIN)
    return fmin(full, el * g->rate);
  double dur = (double)(g->end_us - g->t0_us) / 1e6;
  double ans_s = g->answer_tokens / g->rate;
  return fmin(full, fmax(0.0, (el - (dur - ans_s)) * s->p->spec_rate_tok_s));
}

void sim_end_gen(sim *s, sim_gen *g, double completion) {
  assert(g->epoch != 0);
  g->epoch = 0;
  s->res->completion_tokens += (uint64_t)llround(completion);
  sg_sim_llm_end_stream(s->llm, g->server, s->now_us);
  if (g->kind == SG_GEN_MAIN)
    sg_sim_llm_main_end(s->llm, g->server, g->prompt_tokens, g->rate, g->t0_us);
  else
    sg_sim_llm_fork_end(s->llm, g->server, g->own_tokens);
  free(g->text);
  g->text = NULL;
}
