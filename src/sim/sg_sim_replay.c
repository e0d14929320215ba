/* sg_sim_replay.c: a recorded run as the simulator's world (sg_sim_replay.h).
 * The event loop, the interpreter and the core are sg_sim.c's; this file
 * answers what the models answer there: which generation a START_GEN gets
 * and when its chunks and end come, how long an evaluation holds its
 * compile slot and device and what it returns. Every answer is read from
 * the record; where the record has none, the rule says so and counts it.
 */
#include "sim/sg_sim_replay.h"

#include "common/sg_alloc.h"
#include "eval/sg_eval.h"
#include "sim/sg_sim_priv.h"
#include "store/sg_replay.h"
#include "store/sg_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A generation being replayed. */
typedef struct rp_live {
  uint32_t w;
  uint64_t id, epoch;   /* the controller's id; a stamp its events carry */
  const sg_replay_gen *r;
  size_t prompt_bytes;  /* its messages (a fork: its main's) and prefix */
  const int64_t *at;    /* the solo pace's chunk times; NULL: recorded */
  int64_t t0_us;        /* its start */
  size_t next;          /* the next chunk to deliver */
  uint64_t chunks, content_bytes, reasoning_bytes;
  bool main, live;
} rp_live;

/* An evaluation request, with the recorded outcome of its kernel. */
typedef struct rp_req {
  sg_req_id id;
  char *looked_up;      /* the source whose recorded evaluation it got */
  bool found, live;
  bool changed;         /* not found, but its generation's recorded kernel
                           was (rec): this binary extracted another one */
  sg_eval_result rec;
  int64_t device_us;
  int64_t ended_us;     /* when it ended in the record, from the run's start */
} rp_req;

/* A kernel this replay evaluated: a later copy of it is answered from here,
 * as the live run answers one from its store. */
typedef struct rp_done {
  char *source;
  sg_phase phase;
  sg_eval_status st;
  double speedup;
  char *message;
} rp_done;

typedef struct rp_wf {
  const char *task;
  uint32_t iter;                 /* the iteration its mains belong to */
  unsigned iter_mains;           /* mains started in it */
  uint64_t iter_kernels;         /* candidates of the open iteration */
  uint64_t mains, forks, dedup;
  uint64_t answers;              /* answers at the length cap: not forks */
  json_t *iters, *main_tokens, *evals, *forks_at;
  uint64_t early_before;         /* early terminations before a resume */
  rp_done *done;
  size_t ndone;
  struct rp_served {             /* the recorded generation each one got */
    uint64_t id;
    const sg_replay_gen *r;
  } *served;
  size_t nserved;
  struct rp_told {               /* recorded outcomes delivered, per kernel */
    char *source;
    sg_phase phase;
    int64_t n;
  } *told;
  size_t ntold;
} rp_wf;

struct sim_replay {
  sg_replay *rec;
  sg_store *store;
  sg_sim_replay_pace pace;
  bool prompted;                 /* reasoning: prompted (the run's handling) */
  int64_t **solo_at;             /* per recorded generation; NULL: recorded */
  double solo_gap_us;            /* the mean gap with no fork live */
  uint64_t solo_gaps, fork_gaps; /* main chunk gaps without and with forks */
  rp_wf *wf;
  size_t nwf;
  rp_live *live;
  size_t nlive;
  struct {                       /* the generation whose end the controller
                                    is told of (no longer live): the answer
                                    at the length cap continues it */
    uint32_t w;
    uint64_t id;
    const sg_replay_gen *r;      /* NULL: none */
  } ending;
  rp_req *reqs;
  size_t nreqs;
  uint64_t stamp;
  int64_t unrecorded_us;         /* an unrecorded kernel's device stage */
  bool anchor;                   /* the record's clock (sg_sim_replay_opts) */
  int64_t span_us;               /* the record's last event, from its start */
  int64_t stop_us;               /* an interrupted record's end (0: it ended) */
  json_t *open_iters;            /* its iterations that never ended (sg_store) */
  json_t *gen_kernels;           /* each recorded generation's kernel (sg_store) */
  bool stopped;                  /* the replay stopped there */
  sg_replay_resume *resumes;     /* the stops the run was resumed from */
  sg_replay_gen unrecorded;      /* a main its stopped process never recorded */
  size_t nresumes, resume_next;  /* the next one the replay reaches */
  json_t *ticks;                 /* on it, the record's ticks that acted */
  json_t *caps;                  /* the record's fork budget caps (sg_store) */
  bool caps_on;                  /* applied (the options keep the budget) */
  size_t caps_next;              /* the next one to apply */
  uint64_t evals_rec, evals_missing, forks_exact, forks_nearest, forks_missing,
      token_forks, mains_other, mains_missing, evals_changed;
  json_t *workflows;             /* filled at the end */
};

/* Compile slots on the record's clock (params_of). */
#define SG_SIM_REPLAY_SLOTS 256

static int rc_of(const sim *s) {
  return sg_interp_failed(s->it) ? (s->err->code < 0 ? s->err->code : SG_EIO) : 0;
}

/* ---- generations ---------------------------------------------------------- */

static rp_live *live_find(sim_replay *rp, uint32_t w, uint64_t id) {
  for (size_t i = 0; i < rp->nlive; i++)
    if (rp->live[i].live && rp->live[i].w == w && rp->live[i].id == id)
      return &rp->live[i];
  return NULL;
}

/* The recorded generation main id of workflow w is replaying: live, or
 * ending (its answer at the length cap starts as it ends); NULL if none. */
static const sg_replay_gen *main_rec(const sim_replay *rp, uint32_t w, uint64_t id) {
  const rp_live *g = live_find((sim_replay *)rp, w, id);
  if (g != NULL)
    return g->r;
  return rp->ending.r && rp->ending.w == w && rp->ending.id == id ? rp->ending.r : NULL;
}

static rp_live *live_add(sim_replay *rp) {
  for (size_t i = 0; i < rp->nlive; i++)
    if (!rp->live[i].live)
      return memset(&rp->live[i], 0, sizeof rp->live[i]);
  rp->live = sg_realloc(rp->live, (rp->nlive + 1) * sizeof *rp->live);
  return memset(&rp->live[rp->nlive++], 0, sizeof *rp->live);
}

static int64_t chunk_at(const rp_live *g, size_t i) {
  return g->at ? g->at[i] : g->r->chunks[i].at_us;
}

/* When it ends, from its start: its last chunk, then the time the record
 * took from there to its end. */
static int64_t gen_end_us(const rp_live *g) {
  const sg_replay_gen *r = g->r;
  int64_t last = r->nchunks ? chunk_at(g, r->nchunks - 1) : 0;
  int64_t tail = r->nchunks && r->ended_us >= r->chunks[r->nchunks - 1].at_us
                     ? r->ended_us - r->chunks[r->nchunks - 1].at_us
                     : 0;
  if (!r->nchunks && r->ended_us > 0)
    tail = r->ended_us;
  return last + tail;
}

static size_t common_prefix(const char *a, const char *b) {
  size_t i = 0;
  while (a[i] && a[i] == b[i])
    i++;
  return i;
}

/* The recorded main a START_GEN main gets: of its task, the k-th main of
 * the same iteration if unserved; else the unserved one whose user message
 * shares the longest prefix with that one's (or the task's last recorded
 * main's, past the recorded iterations), earliest on a tie; once all are
 * served, the same over all of them (sg_replay_match's rule, within the
 * task). NULL: the task has no recorded main. */
static const sg_replay_gen *main_for(sim_replay *rp, rp_wf *f, uint32_t iteration,
                                     unsigned k) {
  size_t n = sg_replay_count(rp->rec);
  sg_replay_gen *want = NULL, *last = NULL;
  unsigned seen = 0;
  /* A record resumed after stops: the k-th among the mains the current
   * process sent (those started since the last resume the replay passed,
   * before the next). */
  size_t z = rp->resume_next;
  int64_t lo = z > 0 ? rp->resumes[z - 1].resume_us : INT64_MIN;
  int64_t hi = z < rp->nresumes ? rp->resumes[z].resume_us : INT64_MAX;
  for (size_t i = 0; i < n; i++) {
    sg_replay_gen *g = (sg_replay_gen *)sg_replay_get(rp->rec, i);
    if (g->fork || strcmp(g->task, f->task) != 0)
      continue;
    if (last == NULL || g->iteration > last->iteration ||
        (g->iteration == last->iteration && g->started_us > last->started_us))
      last = g;
    if (g->iteration == (int)iteration + 1 && g->started_us >= lo && g->started_us < hi &&
        seen++ == k)
      want = g;
  }
  if (want != NULL && want->served == 0) {
    want->served++;
    return want;
  }
  /* None before a stop the run was resumed from: this main was still live
   * when its process stopped without recording it (killed): it streams
   * nothing, and the stop cancels it, as it did live. */
  if (want == NULL && hi != INT64_MAX)
    return &rp->unrecorded;
  const sg_replay_gen *like = want ? want : last;
  if (like == NULL)
    return NULL;
  for (int pass = 0; pass < 2; pass++) {
    sg_replay_gen *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < n; i++) {
      sg_replay_gen *g = (sg_replay_gen *)sg_replay_get(rp->rec, i);
      if (g->fork || strcmp(g->task, f->task) != 0 || (pass == 0 && g->served))
        continue;
      size_t l = common_prefix(g->user, like->user);
      if (best == NULL || l > best_len ||
          (l == best_len && g->started_us < best->started_us)) {
        best = g;
        best_len = l;
      }
    }
    if (best) {
      best->served++;
      rp->mains_other++;
      return best;
    }
  }
  return NULL;
}

/* The solo pace's chunk times of r, or NULL: the recorded ones. */
static const int64_t *solo_times(sim_replay *rp, const sg_replay_gen *r) {
  if (rp->solo_at == NULL || r == &rp->unrecorded)
    return NULL;
  return rp->solo_at[(size_t)(r - sg_replay_get(rp->rec, 0))];
}

/* ---- a stopped and resumed record ------------------------------------------- */

/* Whether r's recording was cut by a stop the run was resumed from:
 * started before that resume, in an iteration the resumed run redid (a
 * main of it was sent again after the resume). */
static bool cut_by_resume(const sim_replay *rp, const sg_replay_gen *r) {
  int64_t from = 0;
  for (size_t k = 0; k < rp->nresumes; k++) {
    int64_t resume = rp->resumes[k].resume_us;
    if (r->started_us >= from && r->started_us < resume) {
      for (size_t i = 0; i < sg_replay_count(rp->rec); i++) {
        const sg_replay_gen *m = sg_replay_get(rp->rec, i);
        if (!m->fork && m->started_us >= resume && m->iteration == r->iteration &&
            strcmp(m->task, r->task) == 0)
          return true;
      }
      return false;
    }
    from = resume;
  }
  return false;
}

/* Whether r's recording was cut by the record's interruption: cancelled in
 * an iteration that never ended, or by a stop the run was resumed from. The
 * replay stops there too, so its end is never reached: it is cancelled at
 * the stop, as it was live. */
static bool cut_by_stop(const sim_replay *rp, const sg_replay_gen *r) {
  if (r->finish != NULL || r->outcome == NULL || strcmp(r->outcome, "cancelled") != 0)
    return false;
  if (cut_by_resume(rp, r))
    return true;
  if (rp->stop_us <= 0)
    return false;
  const json_t *it;
  size_t i;
  json_array_foreach(rp->open_iters, i, it) {
    const char *task = json_string_value(json_object_get(it, "task"));
    if (task && strcmp(task, r->task) == 0 &&
        json_integer_value(json_object_get(it, "number")) == r->iteration)
      return true;
  }
  return false;
}

static void gen_fail_now(sim *s, uint32_t w, uint64_t gen, const char *msg) {
  sg_interp_gen_failed(s->it, w, gen, SG_ENOENT, msg);
}

int simrp_gen_start(sim *s, uint32_t w, const sg_ctl_action *a) {
  sim_replay *rp = s->rp;
  rp_wf *f = &rp->wf[w];
  bool main = a->u.start.kind == SG_GEN_MAIN;
  const sg_replay_gen *r = NULL;
  char msg[512];
  if (main) {
    if (a->iteration != f->iter) {
      f->iter = a->iteration;
      f->iter_mains = 0;
    }
    r = main_for(rp, f, a->iteration, f->iter_mains++);
    f->mains++;
    s->res->main_gens++;
    if (r == NULL) {
      rp->mains_missing++;
      snprintf(msg, sizeof msg, "replay: the record has no main generation of task %s",
               f->task);
      gen_fail_now(s, w, a->u.start.gen, msg);
      return 0;
    }
  } else {
    if (a->u.start.answer) { /* the answer at the length cap: not a fork */
      f->answers++;
    } else {
      f->forks++;
      s->res->forks++;
    }
    json_array_append_new(f->forks_at, json_sprintf("%u:%llu", a->iteration + 1,
                                                    (unsigned long long)a->u.start.prefix_len));
    /* The replay server's rule, from the recorded main its parent is
     * replaying (the server finds it by the prefix's text; here it is
     * known, so two recorded mains that began alike are not confused). */
    const sg_replay_gen *parent = main_rec(rp, w, a->u.start.parent_gen);
    size_t plen = (size_t)a->u.start.prefix_len;
    sg_err e;
    sg_err_clear(&e);
    if (parent == NULL)
      sg_err_set(&e, SG_ENOENT, "replay: the fork's main generation is not being replayed");
    if (parent == NULL || sg_replay_match_fork(rp->rec, parent, plen, &r, &e) < 0) {
      rp->forks_missing++;
      gen_fail_now(s, w, a->u.start.gen, e.msg);
      return 0;
    }
    if (r->prefix_bytes == plen)
      rp->forks_exact++;
    else
      rp->forks_nearest++;
    if (r->token_ids > 0)
      rp->token_forks++; /* its recorded text, as /completions streamed it */
  }
  size_t prompt_bytes = main ? strlen(r->system) + strlen(r->user) : 0;
  if (!main) {
    const sg_replay_gen *m = main_rec(rp, w, a->u.start.parent_gen);
    prompt_bytes = strlen(m->system) + strlen(m->user) + (size_t)a->u.start.prefix_len;
  }
  f->served = sg_realloc(f->served, (f->nserved + 1) * sizeof *f->served);
  f->served[f->nserved++] = (struct rp_served){a->u.start.gen, r};
  rp_live *g = live_add(rp);
  g->prompt_bytes = prompt_bytes;
  g->w = w;
  g->id = a->u.start.gen;
  g->epoch = ++rp->stamp;
  g->r = r;
  g->main = main;
  g->live = true;
  g->at = solo_times(rp, r);
  /* On the record's clock it starts no sooner than it did there. */
  g->t0_us = rp->anchor && r->started_us > s->now_us ? r->started_us : s->now_us;
  if (r->nchunks)
    sim_push(s, g->t0_us + chunk_at(g, 0), EV_CHUNK, w, g->id, g->epoch);
  if (r != &rp->unrecorded && !cut_by_stop(rp, r))
    sim_push(s, g->t0_us + gen_end_us(g), EV_GEN_END, w, g->id, g->epoch);
  return 0;
}

int simrp_on_chunk(sim *s, const sg_sim_event *e) {
  sim_replay *rp = s->rp;
  rp_live *g = live_find(rp, e->owner, e->id);
  if (g == NULL || g->epoch != e->epoch || g->next >= g->r->nchunks)
    return 0;
  const sg_replay_chunk *c = &g->r->chunks[g->next];
  int64_t t0 = g->t0_us;
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SG_CEV_GEN_CHUNK;
  ev.now_us = s->now_us;
  ev.u.chunk.gen = e->id;
  if (c->reasoning) {
    ev.u.chunk.reasoning = g->r->text + c->off;
    ev.u.chunk.reasoning_len = c->len;
    g->reasoning_bytes += c->len;
  } else {
    ev.u.chunk.content = g->r->text + c->off;
    ev.u.chunk.content_len = c->len;
    g->content_bytes += c->len;
  }
  ev.u.chunk.tokens = 1; /* one token per streamed chunk, as the live run counts */
  g->chunks++;
  size_t next = ++g->next;
  uint64_t epoch = g->epoch;
  sg_interp_event(s->it, e->owner, &ev);
  int rc = rc_of(s);
  g = live_find(rp, e->owner, e->id); /* the list may have grown */
  if (rc < 0 || g == NULL || g->epoch != epoch || next >= g->r->nchunks)
    return rc;
  sim_push(s, t0 + chunk_at(g, next), EV_CHUNK, e->owner, e->id, epoch);
  return 0;
}

/* As the live run counts it (sg_gen_tokens_of): the recorded usage, else
 * its chunks, and a prompt that was answered from its bytes. */
static sg_usage usage_of(const rp_live *g) {
  sg_usage u = {g->chunks > 0 ? (g->prompt_bytes + 3) / 4 : 0, g->chunks, 0};
  if (g->r->has_usage) {
    u.prompt_tokens = (uint64_t)(g->r->prompt_tokens > 0 ? g->r->prompt_tokens : 0);
    u.completion_tokens =
        (uint64_t)(g->r->completion_tokens > 0 ? g->r->completion_tokens : 0);
    u.cached_tokens = (uint64_t)(g->r->cached_tokens > 0 ? g->r->cached_tokens : 0);
  }
  return u;
}

/* Its tokens into the campaign's counts, and a main's into the decisions. */
static void gen_account(sim *s, rp_live *g, const sg_usage *u) {
  s->res->prompt_tokens += u->prompt_tokens;
  s->res->completion_tokens += u->completion_tokens;
  s->res->cached_tokens += u->cached_tokens;
  if (g->main)
    json_array_append_new(s->rp->wf[g->w].main_tokens,
                          json_integer((json_int_t)u->completion_tokens));
  g->live = false;
}

void simrp_gen_cancel(sim *s, uint32_t w, uint64_t gen, bool *was_main) {
  rp_live *g = live_find(s->rp, w, gen);
  if (g == NULL)
    return;
  *was_main = g->main;
  s->res->gens_cancelled++;
  sg_usage u = usage_of(g);
  u.completion_tokens = g->chunks; /* what it had streamed */
  gen_account(s, g, &u);
}

int simrp_on_gen_end(sim *s, const sg_sim_event *e) {
  sim_replay *rp = s->rp;
  rp_live *g = live_find(rp, e->owner, e->id);
  if (g == NULL || g->epoch != e->epoch)
    return 0;
  const sg_replay_gen *r = g->r;
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.now_us = s->now_us;
  sg_usage u = usage_of(g);
  char msg[512];
  if (r->finish != NULL) {
    ev.type = SG_CEV_GEN_FINISHED;
    ev.u.finished.gen = e->id;
    /* Prompted reasoning never closed: its thinking is its answer too, as
     * the live run reads it. */
    if (rp->prompted && g->main && g->content_bytes == 0 && g->reasoning_bytes > 0) {
      ev.u.finished.text = r->text;
      ev.u.finished.len = (size_t)g->reasoning_bytes;
    }
    ev.u.finished.reason = strcmp(r->finish, "stop") == 0     ? SG_FINISH_STOP
                           : strcmp(r->finish, "length") == 0 ? SG_FINISH_LENGTH
                                                              : SG_FINISH_OTHER;
    ev.u.finished.usage = u;
    if (g->main) {
      s->res->main_gen_s += (double)(s->now_us - g->t0_us) / 1e6;
      s->res->main_gens_completed++;
    }
  } else {
    /* It failed while recorded, or was cut: what came next was never
     * recorded. */
    if (r->error)
      snprintf(msg, sizeof msg, "%s", r->error);
    else
      snprintf(msg, sizeof msg,
               "replay: the recording of task %s iteration %d generation %llu ends here "
               "(%s while recorded)",
               r->task, r->iteration, (unsigned long long)r->gen, r->outcome);
    s->res->gens_failed++;
    ev.type = SG_CEV_GEN_FAILED;
    ev.u.failed.gen = e->id;
    ev.u.failed.error = SG_EHTTP;
    ev.u.failed.message = msg;
    ev.u.failed.usage = u;
  }
  gen_account(s, g, &u);
  rp->ending.w = e->owner;
  rp->ending.id = e->id;
  rp->ending.r = r;
  sg_interp_event(s->it, e->owner, &ev);
  rp->ending.r = NULL;
  return rc_of(s);
}

/* ---- evaluations ---------------------------------------------------------- */

static rp_req *req_find(sim_replay *rp, sg_req_id id) {
  for (size_t i = 0; i < rp->nreqs; i++)
    if (rp->reqs[i].live && rp->reqs[i].id == id)
      return &rp->reqs[i];
  return NULL;
}

static void req_drop(rp_req *q) {
  sg_eval_result_free(&q->rec);
  free(q->looked_up);
  q->looked_up = NULL;
  q->live = false;
}

/* How many of source's recorded evaluations in phase this replay has
 * delivered: the next one asked for gets the record's next (a kernel the
 * record evaluated again after an infrastructure error has one per time).
 * bump: one more delivered. */
static int64_t told(rp_wf *f, const char *source, sg_phase phase, bool bump) {
  for (size_t i = 0; i < f->ntold; i++)
    if (f->told[i].phase == phase && strcmp(f->told[i].source, source) == 0)
      return bump ? ++f->told[i].n : f->told[i].n;
  if (!bump)
    return 0;
  f->told = sg_realloc(f->told, (f->ntold + 1) * sizeof *f->told);
  f->told[f->ntold++] = (struct rp_told){sg_strdup(source), phase, 1};
  return 1;
}

/* The recorded evaluation a request gets: source's next (told). */
static int lookup(sim *s, uint32_t w, rp_req *q, const char *source, sg_phase phase,
                  bool *found) {
  rp_wf *f = &s->rp->wf[w];
  sg_store_phase ph = phase == SG_PHASE_VALIDATE ? SG_STORE_VALIDATE : SG_STORE_PROFILE;
  int rc = sg_store_eval_lookup_source_nth(s->rp->store, f->task, source, ph,
                                           told(f, source, phase, false), &q->rec,
                                           &q->device_us, &q->ended_us, found, s->err);
  if (rc == 0 && *found)
    q->looked_up = sg_strdup(source);
  return rc;
}

/* A new kernel of the open iteration (a copy of an earlier one counts). */
static void kernel_seen(sim_replay *rp, uint32_t w, const sg_ctl_action *a) {
  if (a->u.submit.phase == SG_PHASE_VALIDATE)
    rp->wf[w].iter_kernels++;
}

int simrp_submit(sim *s, uint32_t w, const sg_ctl_action *a, bool *answered) {
  rp_wf *f = &s->rp->wf[w];
  kernel_seen(s->rp, w, a);
  for (size_t i = 0; i < f->ndone; i++) {
    const rp_done *d = &f->done[i];
    if (d->phase != a->u.submit.phase || strcmp(d->source, a->u.submit.source) != 0)
      continue;
    /* Evaluated before in this replay: never again. */
    f->dedup++;
    *answered = true;
    sg_interp_eval_done(s->it, w, a->u.submit.candidate, d->phase, d->st, d->speedup,
                        d->message, NULL);
    return 0;
  }
  return 0;
}

int simrp_joined(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id leader,
                 uint64_t leader_cand) {
  sim *s = data;
  (void)leader, (void)leader_cand;
  kernel_seen(s->rp, w, a);
  s->rp->wf[w].dedup++;
  return 0;
}

void simrp_refused(sim *s, uint32_t w, const sg_ctl_action *a) {
  json_array_append_new(s->rp->wf[w].evals,
                        json_pack("[s, s, n]", sg_phase_name(a->u.submit.phase),
                                  sg_eval_status_name(SG_EVAL_INFRA_ERROR)));
}

/* The kernel the record has for the recorded generation that candidate
 * came from (NULL: none): the same (task, iteration, kind) and order among
 * them, as the store numbers them (sg_store_gen_kernels_json). */
static const char *recorded_kernel(sim *s, uint32_t w, uint64_t candidate) {
  sim_replay *rp = s->rp;
  rp_wf *f = &rp->wf[w];
  const sg_kernel *k = sg_history_get(sg_controller_history(s->wf[w].ctl), candidate);
  const sg_replay_gen *r = NULL;
  for (size_t i = 0; k != NULL && i < f->nserved && r == NULL; i++)
    if (f->served[i].id == k->gen)
      r = f->served[i].r;
  if (r == NULL)
    return NULL;
  json_int_t order = 0;
  for (size_t i = 0; i < sg_replay_count(rp->rec); i++) {
    const sg_replay_gen *g = sg_replay_get(rp->rec, i);
    order += g != r && g->fork == r->fork && g->iteration == r->iteration &&
             strcmp(g->task, r->task) == 0 &&
             (g->started_us < r->started_us || (g->started_us == r->started_us && g < r));
  }
  const json_t *e;
  size_t i;
  json_array_foreach(rp->gen_kernels, i, e) {
    const char *task = json_string_value(json_object_get(e, "task"));
    const char *kind = json_string_value(json_object_get(e, "kind"));
    if (task && kind && strcmp(task, r->task) == 0 &&
        strcmp(kind, r->fork ? "spec" : "main") == 0 &&
        json_integer_value(json_object_get(e, "iteration")) == r->iteration &&
        json_integer_value(json_object_get(e, "k")) == order)
      return json_string_value(json_object_get(e, "source"));
  }
  return NULL;
}

int simrp_submitted(sim *s, uint32_t w, const sg_ctl_action *a, sg_req_id id) {
  sim_replay *rp = s->rp;
  rp_req *q = NULL;
  for (size_t i = 0; i < rp->nreqs && q == NULL; i++)
    if (!rp->reqs[i].live)
      q = &rp->reqs[i];
  if (q == NULL) {
    rp->reqs = sg_realloc(rp->reqs, (rp->nreqs + 1) * sizeof *rp->reqs);
    q = &rp->reqs[rp->nreqs++];
  }
  memset(q, 0, sizeof *q);
  q->id = id;
  q->live = true;
  sg_eval_result_init(&q->rec);
  int rc = lookup(s, w, q, a->u.submit.source, a->u.submit.phase, &q->found);
  if (rc < 0 || q->found)
    return rc;
  /* Not in the record: if its generation's recorded kernel is, this binary
   * extracted another kernel from the same text (its extraction or tidying
   * changed since); that kernel's times stand for its own. */
  const char *was = recorded_kernel(s, w, a->u.submit.candidate);
  if (was == NULL || strcmp(was, a->u.submit.source) == 0)
    return 0;
  return lookup(s, w, q, was, a->u.submit.phase, &q->changed);
}

/* Whether the record's outcome of q came from its compile stage, as the
 * live run ends an evaluation whose compile stage fails: a compile error,
 * or a kernel rejected or failed there, never given a device. */
static bool compile_outcome(const rp_req *q) {
  sg_eval_status st = q->rec.status;
  return st == SG_EVAL_COMPILE_ERROR ||
         (st != SG_EVAL_OK && st != SG_EVAL_INFRA_ERROR && q->device_us == 0);
}

/* A kernel the record never evaluated to an end (never submitted, or
 * withdrawn while it waited or ran): its compile passes at once and its
 * device stage lasts the evaluation timeout, the longest a real one runs;
 * then it is "not in the record". */
int64_t simrp_stage_us(sim *s, sg_req_id id, bool compile) {
  rp_req *q = req_find(s->rp, id);
  int64_t us = compile ? 1 : s->rp->unrecorded_us;
  /* On the record's clock such a kernel waits in its compile stage (the
   * slots are not limited there) until the record's end: it was withdrawn
   * before that (with the recorded options it is again), or the record
   * cannot say. */
  bool timed = q != NULL && (q->found || q->changed); /* the record has its times */
  if (compile && s->rp->anchor && !timed)
    us = s->rp->span_us - s->now_us;
  if (timed) {
    bool last = !compile || compile_outcome(q); /* its outcome's stage */
    us = compile ? (int64_t)llround(q->rec.compile_s * 1e6) : q->device_us;
    /* On the record's clock it asks for a device no sooner than it did
     * there (its compile slot is not held meanwhile: see params_of), and
     * its outcome comes when it came there while that is still ahead (the
     * record's end of a device stage can come a little after the next
     * one's start: the run noted it late), else a stage's time from now. */
    if (s->rp->anchor && q->ended_us > 0) {
      int64_t ask = q->ended_us - q->device_us;
      if (last && q->ended_us > s->now_us)
        us = q->ended_us - s->now_us;
      else if (!last && ask > s->now_us + us)
        us = ask - s->now_us;
    }
  }
  return us > 0 ? us : 1;
}

bool simrp_compile_ok(sim *s, sg_req_id id) {
  rp_req *q = req_find(s->rp, id);
  if (q == NULL || (!q->found && !q->changed))
    return !s->rp->anchor;
  return !compile_outcome(q);
}

void simrp_abort(sim *s, sg_req_id id) {
  rp_req *q = req_find(s->rp, id);
  if (q != NULL)
    req_drop(q);
}

/* A kernel's figure, as the live summary's (SG_STORE_FIGURES_SQL): its
 * profile's speedup, else its validation's; NAN when it has neither. */
static double figure_of(const rp_wf *f, const rp_done *d, bool *profiled) {
  *profiled = false;
  if (d->st != SG_EVAL_OK || !isfinite(d->speedup))
    return NAN;
  if (d->phase == SG_PHASE_VALIDATE)
    for (size_t i = 0; i < f->ndone; i++) {
      const rp_done *p = &f->done[i];
      if (p->phase == SG_PHASE_PROFILE && p->st == SG_EVAL_OK && isfinite(p->speedup) &&
          strcmp(p->source, d->source) == 0)
        return NAN; /* its profile is its figure */
    }
  *profiled = d->phase == SG_PHASE_PROFILE;
  return d->speedup;
}

int simrp_deliver(sim *s, sim_req *sq, bool compile) {
  sim_replay *rp = s->rp;
  rp_wf *f = &rp->wf[sq->workflow];
  rp_req *q = req_find(rp, sq->id);
  sg_eval_status st = SG_EVAL_INFRA_ERROR;
  double sp = NAN;
  const char *msg = "replay: not in the record (the recorded run never evaluated this "
                    "kernel)";
  if (q != NULL && q->looked_up != NULL)
    told(f, q->looked_up, sq->phase, true);
  if (q != NULL && q->found) {
    st = q->rec.status;
    sp = q->rec.speedup;
    msg = q->rec.message;
    rp->evals_rec++;
  } else {
    rp->evals_missing++;
    if (q != NULL && q->changed) {
      rp->evals_changed++;
      msg = "replay: not in the record (the recorded run extracted another kernel from "
            "this generation's text; that kernel's times)";
    }
  }
  (void)compile;
  json_array_append_new(f->evals, json_pack("[s, s, o]", sg_phase_name(sq->phase),
                                            sg_eval_status_name(st),
                                            isfinite(sp) ? json_real(sp) : json_null()));
  const sg_kernel *k = sg_history_get(sg_controller_history(s->wf[sq->workflow].ctl),
                                      sq->candidate);
  /* An infrastructure error says nothing of the kernel: a copy of it is
   * evaluated again, as live. */
  if (q != NULL && q->found && st != SG_EVAL_INFRA_ERROR && k != NULL && k->source != NULL) {
    f->done = sg_realloc(f->done, (f->ndone + 1) * sizeof *f->done);
    f->done[f->ndone++] = (rp_done){sg_strdup(k->source), sq->phase, st, sp,
                                    msg ? sg_strdup(msg) : NULL};
  }
  if (sq->phase == SG_PHASE_PROFILE && st == SG_EVAL_OK)
    s->res->profiling_feedback++;
  if (sq->phase == SG_PHASE_VALIDATE && st == SG_EVAL_OK)
    s->res->validated_ok++;
  /* Through the interpreter's queue: it hands the result to the kernels
   * that joined this one too (drained by the loop, after this event). */
  sg_interp_eval_done(s->it, sq->workflow, sq->candidate, sq->phase, st, sp, msg, NULL);
  if (q != NULL)
    req_drop(q);
  return rc_of(s);
}

void simrp_iteration_end(sim *s, uint32_t w, const sg_ctl_action *a, bool main_cancelled) {
  rp_wf *f = &s->rp->wf[w];
  /* Named as the live run names it (sg_run.c's op_iteration_end). */
  const char *reason = sg_ctl_reason_name(a->u.end.reason);
  if (a->u.end.reason == SG_REASON_EARLY && !main_cancelled)
    reason = "accepted";
  if (f->iter_kernels == 0 && strcmp(reason, "fallback") == 0)
    reason = "no kernel";
  f->iter_kernels = 0;
  json_array_append_new(f->iters, json_sprintf("%u:%s", a->iteration + 1, reason));
}

bool simrp_ticks(sim *s, uint32_t w) {
  sim_replay *rp = s->rp;
  if (!rp->anchor)
    return false;
  if (w != 0)
    return true;
  /* All at once, in time order (the ticks' lane of the queue keeps it). */
  const json_t *t;
  size_t i;
  json_array_foreach(rp->ticks, i, t) {
    int64_t at = json_integer_value(json_object_get(t, "at_us"));
    const char *task = json_string_value(json_object_get(t, "task"));
    for (uint32_t k = 0; k < rp->nwf && at >= s->now_us; k++)
      if (task && strcmp(task, rp->wf[k].task) == 0)
        sim_push(s, at, EV_TICK, k, 0, 0);
  }
  return true;
}

/* ---- the fork budget -------------------------------------------------------- */

/* A recorded cap (null: unbounded) as the budget holds it. */
static int cap_of(const json_t *c) {
  const json_t *v = json_object_get(c, "cap");
  return json_is_integer(v) ? (int)json_integer_value(v) : SG_LOAD_UNBOUNDED;
}

bool simrp_fork_caps_on(const sim *s) { return s->rp->caps_on; }

void simrp_fork_caps(sim *s) {
  sim_replay *rp = s->rp;
  if (!rp->caps_on || s->budgets == NULL)
    return;
  for (; rp->caps_next < json_array_size(rp->caps); rp->caps_next++) {
    const json_t *c = json_array_get(rp->caps, rp->caps_next);
    if (json_integer_value(json_object_get(c, "at_us")) > s->now_us)
      break;
    s->budgets[0].cap = cap_of(c);
  }
}

/* An interrupted record (its run never ended) ends where the run was
 * stopped: its summary's end to end where it wrote one saying so, else its
 * latest event. The replay stops there too (*stop_us; 0: the record
 * ended), and what the record never finished waits for it. */
static int record_stop(sim_replay *rp, const char *dir, int64_t *stop_us, sg_err *err) {
  json_t *end = NULL;
  *stop_us = 0;
  int rc = sg_store_record_end_json(rp->store, &end, err);
  /* The record spans its latest event, a generation's end or later (an
   * iteration's end withdrawing a kernel the record never evaluated, which
   * waits until then: simrp_stage_us). */
  int64_t last = json_integer_value(json_object_get(end, "last_us"));
  if (rc == 0 && last >= rp->span_us)
    rp->span_us = last + 1;
  if (rc == 0 && json_is_true(json_object_get(end, "open"))) {
    /* just past the last event: what happened then (a failed run's last
     * refusals) is replayed, what never ended waits beyond it */
    *stop_us = rp->span_us;
    char path[4096];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *sum = json_load_file(path, 0, NULL);
    double e2e = json_number_value(json_object_get(sum, "e2e_s"));
    if (json_is_true(json_object_get(sum, "interrupted")) && e2e * 1e6 > (double)*stop_us)
      *stop_us = (int64_t)llround(e2e * 1e6);
    json_decref(sum);
    rp->span_us = *stop_us;
    rp->open_iters = json_incref(json_object_get(end, "open_iterations"));
  }
  json_decref(end);
  return rc;
}

/* The recorded caps apply when the options keep the budget the record
 * measured under: speculation on, the same --fork-slowdown-max and the
 * same configured cap (--llm-streams less the mains). The simulator
 * measures nothing (sg_sim.c's sim_knobs), so they stand for the
 * measurement. */
static bool caps_apply(const sg_sim_replay_opts *o, const json_t *caps) {
  const sg_knobs *k = o->knobs;
  if (json_array_size(caps) == 0 || !k->spec || k->fork_slowdown_max <= 0)
    return false;
  int want = k->llm_streams > 0 ? k->llm_streams - (int)o->ntask : SG_LOAD_UNBOUNDED;
  const json_t *c;
  size_t i;
  json_array_foreach(caps, i, c) {
    const json_t *cc = json_object_get(c, "cap_configured");
    int conf = json_is_integer(cc) ? (int)json_integer_value(cc) : SG_LOAD_UNBOUNDED;
    if (conf != want ||
        fabs(json_number_value(json_object_get(c, "slowdown_max")) - k->fork_slowdown_max) >
            1e-9)
      return false;
  }
  return true;
}

/* ---- the campaign ----------------------------------------------------------- */

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

int64_t simrp_stop_us(const sim *s) {
  const sim_replay *rp = s->rp;
  return rp->resume_next < rp->nresumes ? rp->resumes[rp->resume_next].stop_us : rp->stop_us;
}

int64_t simrp_resume_us(const sim *s) {
  const sim_replay *rp = s->rp;
  return rp->resume_next < rp->nresumes ? rp->resumes[rp->resume_next].resume_us : 0;
}

/* Cancels what is live, as simrp_interrupt does. */
static void cancel_live(sim *s) {
  sim_replay *rp = s->rp;
  for (size_t i = 0; i < rp->nlive; i++) {
    bool was_main = false;
    if (rp->live[i].live)
      simrp_gen_cancel(s, rp->live[i].w, rp->live[i].id, &was_main);
  }
}

/* Stopped where the record was stopped and later resumed: its live
 * generations cancelled there (counted, as live), its evaluations in flight
 * aborted (never delivered: the record's were aborted too), and what the
 * replay keeps per generation id dropped (a resumed run numbers its
 * generations from 1 again). The loop then begins the resumed run. */
void simrp_stop_for_resume(sim *s) {
  sim_replay *rp = s->rp;
  cancel_live(s);
  for (size_t i = 0; i < rp->nreqs; i++)
    if (rp->reqs[i].live)
      req_drop(&rp->reqs[i]);
  for (size_t w = 0; w < rp->nwf; w++) {
    rp_wf *f = &rp->wf[w];
    sg_ctl_stats cs;
    sg_controller_stats(s->wf[w].ctl, &cs);
    f->early_before += cs.early_terminations;
    f->nserved = 0;
    f->iter_kernels = 0;
    f->iter = UINT32_MAX; /* the resumed run's mains count from the first */
  }
  rp->resume_next++;
}

/* Stopped where the record was interrupted: its live generations cancelled
 * there (their streamed tokens counted, as the live run counts them); its
 * evaluations in flight and its open iterations never end. */
void simrp_interrupt(sim *s) {
  sim_replay *rp = s->rp;
  rp->stopped = true;
  cancel_live(s);
}

void simrp_finish(sim *s) {
  sim_replay *rp = s->rp;
  rp->workflows = json_array();
  for (size_t w = 0; w < rp->nwf; w++) {
    rp_wf *f = &rp->wf[w];
    sg_ctl_stats cs;
    sg_controller_stats(s->wf[w].ctl, &cs);
    /* The largest figure, the earliest kernel's on a tie, as live. */
    double best = NAN;
    bool prof = false;
    for (size_t i = 0; i < f->ndone; i++) {
      bool p;
      double x = figure_of(f, &f->done[i], &p);
      if (isfinite(x) && (isnan(best) || x > best)) {
        best = x;
        prof = p;
      }
    }
    /* Kernels profiled, as the live run's summary counts them: each once
     * (a copy answered from an earlier evaluation is not profiled again). */
    json_int_t profiled = 0;
    for (size_t i = 0; i < f->ndone; i++)
      profiled += f->done[i].phase == SG_PHASE_PROFILE && f->done[i].st == SG_EVAL_OK;
    json_array_append_new(
        rp->workflows,
        json_pack("{s:s, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "task", f->task,
                  "iterations", (json_int_t)json_array_size(f->iters), "best_speedup",
                  num_or_null(best), "best_speedup_kind",
                  isfinite(best) ? json_string(prof ? "profile" : "validate") : json_null(),
                  "profiling_feedback", profiled, "early_terminations",
                  (json_int_t)(cs.early_terminations + f->early_before), "generations_main",
                  (json_int_t)f->mains, "generations_spec", (json_int_t)f->forks,
                  "answers_at_cap", (json_int_t)f->answers, "deduplicated",
                  (json_int_t)f->dedup));
  }
}

/* The solo pace (sg_sim_replay.h): the record's main chunk gaps split by
 * whether a fork was live over them (any fork: the model server is
 * shared); each gap taken with a fork live becomes the mean of the others.
 * Without a gap free of forks, the recorded pace stays. */
static void solo_pace(sim_replay *rp) {
  size_t n = sg_replay_count(rp->rec);
  double sum = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      if (rp->solo_gaps == 0)
        return;
      rp->solo_gap_us = sum / (double)rp->solo_gaps;
      rp->solo_at = sg_calloc(n ? n : 1, sizeof *rp->solo_at);
    }
    for (size_t i = 0; i < n; i++) {
      const sg_replay_gen *g = sg_replay_get(rp->rec, i);
      if (g->fork || g->started_us < 0)
        continue;
      int64_t *at = pass ? sg_calloc(g->nchunks ? g->nchunks : 1, sizeof *at) : NULL;
      for (size_t c = 0; c < g->nchunks; c++) {
        int64_t a0 = c ? g->chunks[c - 1].at_us : 0, a1 = g->chunks[c].at_us;
        bool forked = false;
        for (size_t k = 0; c > 0 && k < n && !forked; k++) {
          const sg_replay_gen *f = sg_replay_get(rp->rec, k);
          int64_t f0 = f->started_us, f1 = f->started_us + (f->ended_us > 0 ? f->ended_us : 0);
          forked = f->fork && f0 >= 0 && f0 < g->started_us + a1 && f1 > g->started_us + a0;
        }
        if (pass == 0 && c > 0) {
          if (forked) {
            rp->fork_gaps++;
          } else {
            rp->solo_gaps++;
            sum += (double)(a1 - a0);
          }
        }
        if (pass == 1)
          at[c] = c == 0 ? a1 : at[c - 1] + (forked ? llround(rp->solo_gap_us) : a1 - a0);
      }
      if (pass == 1)
        rp->solo_at[i] = at;
    }
  }
}

static void replay_free(sim_replay *rp) {
  if (rp->solo_at)
    for (size_t i = 0; i < sg_replay_count(rp->rec); i++)
      free(rp->solo_at[i]);
  free(rp->solo_at);
  for (size_t w = 0; w < rp->nwf; w++) {
    rp_wf *f = &rp->wf[w];
    json_decref(f->iters);
    json_decref(f->main_tokens);
    json_decref(f->evals);
    json_decref(f->forks_at);
    for (size_t i = 0; i < f->ndone; i++) {
      free(f->done[i].source);
      free(f->done[i].message);
    }
    free(f->done);
    free(f->served);
    for (size_t i = 0; i < f->ntold; i++)
      free(f->told[i].source);
    free(f->told);
  }
  free(rp->wf);
  for (size_t i = 0; i < rp->nreqs; i++)
    if (rp->reqs[i].live)
      req_drop(&rp->reqs[i]);
  free(rp->reqs);
  free(rp->live);
  json_decref(rp->workflows);
  json_decref(rp->ticks);
  json_decref(rp->caps);
  json_decref(rp->open_iters);
  json_decref(rp->gen_kernels);
  free(rp->resumes);
  sg_store_close(rp->store);
  sg_replay_free(rp->rec);
}

/* The simulator's parameters for the recorded campaign: its size and
 * budgets; the models' parameters are unused (the record answers). */
static int params_of(const sg_sim_replay_opts *o, int64_t span_us, sg_sim_params *p,
                     sg_err *err) {
  int rc = sg_sim_params_preset(p, "paper-glm", err);
  if (rc < 0)
    return rc;
  p->workflows = (int)o->ntask;
  p->devices = o->devices;
  p->knobs.iterations = o->knobs->iterations > 0 ? o->knobs->iterations : 1;
  if (snprintf(p->termination, sizeof p->termination, "%s", o->termination) >=
          (int)sizeof p->termination ||
      snprintf(p->search, sizeof p->search, "%s", o->search) >= (int)sizeof p->search)
    return sg_err_set(err, SG_EINVAL, "replay: the termination or search spec is too long");
  snprintf(p->stream_profile, sizeof p->stream_profile, "none");
  p->seed = o->seed;
  p->knobs.tick = o->knobs->tick;
  p->gen_chunk_s = 1;   /* the record streams; the ticks never do */
  p->compile_s = 1;     /* validation has a compile stage, as live */
  /* On the record's clock a compile ends when its kernel asked for a
   * device there: the record's times hold the wait for a compile slot
   * already, so the slots do not limit it twice. */
  p->compile_slots = o->clock == SG_SIM_REPLAY_CLOCK_RECORDED ? SG_SIM_REPLAY_SLOTS
                                                               : o->compile_slots;
  p->llm_workflows_per_server = (int)o->ntask; /* one server, as live */
  p->knobs.llm_streams = o->knobs->llm_streams;
  p->fault_gen_fail_p = 0;
  p->fault_device_mtbf_s = 0;
  /* the stall guard: far beyond the recorded campaign */
  p->gen_mean_s = fmax(p->gen_mean_s, (double)span_us / 1e6);
  return 0;
}

static const char *pace_name(sg_sim_replay_pace p) {
  return p == SG_SIM_REPLAY_PACE_SOLO ? "solo" : "recorded";
}

/* The summary of a live run, labelled a replay; which figures the replay
 * models rather than reads ("modelled"). */
static json_t *summary_json(const sg_sim_replay_opts *o, sim_replay *rp,
                            const sg_sim_result *r, json_t *decisions) {
  json_t *rep = json_pack(
      "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:[s, s, s]}", "from",
      o->dir, "mode", "virtual time", "pace", pace_name(rp->pace), "clock",
      rp->anchor ? "recorded" : "relative",
      "evaluations_from_record", (json_int_t)rp->evals_rec, "evaluations_not_in_record",
      (json_int_t)rp->evals_missing, "evaluations_changed_kernel", (json_int_t)rp->evals_changed,
      "forks_at_recorded_prefix", (json_int_t)rp->forks_exact,
      "forks_nearest_recorded", (json_int_t)rp->forks_nearest, "forks_unrecorded",
      (json_int_t)rp->forks_missing, "token_forks", (json_int_t)rp->token_forks,
      "mains_by_similarity", (json_int_t)rp->mains_other, "mains_unrecorded",
      (json_int_t)rp->mains_missing, "main_gaps_with_forks", (json_int_t)rp->fork_gaps,
      "modelled", "e2e_s", "utilization", "generation times");
  if (rp->pace == SG_SIM_REPLAY_PACE_SOLO)
    json_object_set_new(rep, "solo_gap_s", json_real(rp->solo_gap_us / 1e6));
  json_object_set_new(rep, "fork_caps_recorded",
                      json_integer((json_int_t)json_array_size(rp->caps)));
  json_object_set_new(rep, "fork_caps_applied",
                      json_integer(rp->caps_on ? (json_int_t)rp->caps_next : 0));
  if (rp->stop_us > 0)
    json_object_set_new(rep, "record_interrupted_at_s", json_real((double)rp->stop_us / 1e6));
  if (rp->nresumes > 0) {
    json_t *rs = json_array();
    for (size_t i = 0; i < rp->nresumes; i++)
      json_array_append_new(rs, json_pack("{s:f, s:f}", "stopped_at_s",
                                          (double)rp->resumes[i].stop_us / 1e6, "resumed_at_s",
                                          (double)rp->resumes[i].resume_us / 1e6));
    json_object_set_new(rep, "record_resumes", rs);
  }
  json_t *j = json_pack(
      "{s:o, s:f, s:O, s:{s:f, s:f, s:f}, s:{s:I, s:I, s:I}, s:I, s:I, s:o}", "replay", rep,
      "e2e_s", r->e2e_s, "workflows", rp->workflows, "utilization", "validation",
      r->util_validate, "profiling", r->util_profile, "overall", r->util_overall, "tokens",
      "prompt", (json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens,
      "cached", (json_int_t)r->cached_tokens, "generations_cancelled",
      (json_int_t)r->gens_cancelled, "generations_failed", (json_int_t)r->gens_failed,
      "decisions", decisions);
  if (rp->stopped)
    json_object_set_new(j, "interrupted", json_true());
  return j;
}

static int64_t record_span_us(const sg_replay *rec) {
  int64_t span = 0;
  for (size_t i = 0; i < sg_replay_count(rec); i++) {
    const sg_replay_gen *g = sg_replay_get(rec, i);
    int64_t end = (g->started_us > 0 ? g->started_us : 0) + (g->ended_us > 0 ? g->ended_us : 0);
    if (end > span)
      span = end;
  }
  return span;
}

int sg_sim_replay_run(const sg_sim_replay_opts *o, json_t **out, sg_err *err) {
  sim_replay rp;
  memset(&rp, 0, sizeof rp);
  rp.pace = o->pace;
  rp.prompted = o->prompted;
  rp.unrecorded_us = (int64_t)llround(o->knobs->eval_timeout * 1e6);
  rp.anchor = o->clock == SG_SIM_REPLAY_CLOCK_RECORDED;
  rp.unrecorded = (sg_replay_gen){.task = (char *)"", .system = (char *)"", .user = (char *)"",
                                  .text = (char *)"", .outcome = (char *)"cancelled",
                                  .started_us = -1, .ended_us = -1};
  int rc = sg_replay_load(o->dir, &rp.rec, err);
  if (rc == 0 && (rc = sg_store_open(o->dir, &rp.store, err)) < 0)
    sg_err_prefix(err, "replay");
  if (rc == 0 && rp.anchor)
    rc = sg_store_tick_acts_json(rp.store, &rp.ticks, err);
  if (rc == 0)
    rc = sg_store_fork_caps_json(rp.store, &rp.caps, err);
  if (rc == 0)
    rc = sg_store_gen_kernels_json(rp.store, &rp.gen_kernels, err);
  rp.caps_on = rc == 0 && caps_apply(o, rp.caps);
  rp.wf = sg_calloc(o->ntask ? o->ntask : 1, sizeof *rp.wf);
  rp.nwf = o->ntask;
  for (size_t i = 0; i < o->ntask; i++) {
    rp_wf *f = &rp.wf[i];
    f->task = o->task[i];
    f->iter = UINT32_MAX;
    f->iters = json_array();
    f->main_tokens = json_array();
    f->evals = json_array();
    f->forks_at = json_array();
  }
  sg_sim_params p;
  if (rc == 0) {
    rp.span_us = record_span_us(rp.rec);
    rp.nresumes = sg_replay_resumes(rp.rec, &rp.resumes);
    rc = record_stop(&rp, o->dir, &rp.stop_us, err);
  }
  if (rc == 0) {
    rc = params_of(o, rp.span_us, &p, err);
  }
  sg_sim_result res;
  if (rc == 0) {
    if (rp.pace == SG_SIM_REPLAY_PACE_SOLO)
      solo_pace(&rp);
    sg_sim_variant v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "replay");
    v.speculate = o->knobs->spec;
    const char *const *le[2] = {o->language, o->entry};
    rc = sim_campaign(&p, &v, &rp, o->knobs, le, NULL, NULL, &res, err);
  }
  if (rc == 0) {
    json_t *dec = json_object();
    for (size_t w = 0; w < o->ntask; w++)
      json_object_set_new(dec, rp.wf[w].task,
                          json_pack("{s:O, s:O, s:O, s:O}", "iterations", rp.wf[w].iters,
                                    "mains", rp.wf[w].main_tokens, "forks", rp.wf[w].forks_at,
                                    "evaluations", rp.wf[w].evals));
    *out = summary_json(o, &rp, &res, dec);
  }
  replay_free(&rp);
  return rc;
}
