/* sg_scheduler_queues.c: the scheduler's queues (the interface is
 * sg_scheduler_priv.h): per workflow four deques, (compile | device) x
 * (validate | profile), the workflow table they live in, and the pick that
 * serves them round-robin across workflows, LIFO or FIFO within one.
 *
 * A request that leaves a queue another way than by a pick (aborted, failed)
 * stays in it until it reaches an end, where the pick drops it, so a pick
 * skips each dead entry once; the workflows whose queue has entries are a
 * bitmap, so a pick visits only those.
 */
#include "core/sg_scheduler_priv.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Ids up to this many map through a table; larger ones (not used by the
 * runtimes, which number workflows from 0) fall back to a scan. */
#define WF_INDEX_MAX (1u << 22)

static size_t dq_len(const deque *d) { return d->tail - d->head; }

static void dq_make_room(deque *d) {
  if (d->head > 0 && d->tail == d->cap) {
    memmove(d->v, d->v + d->head, dq_len(d) * sizeof *d->v);
    d->tail -= d->head;
    d->head = 0;
  }
  if (d->tail == d->cap) {
    d->cap = d->cap ? d->cap * 2 : 8;
    d->v = sg_realloc(d->v, d->cap * sizeof *d->v);
  }
}

static void dq_push_back(deque *d, sg_req_id id) {
  dq_make_room(d);
  d->v[d->tail++] = id;
}

static void dq_push_front(deque *d, sg_req_id id) {
  if (d->head == 0) {
    dq_make_room(d);
    memmove(d->v + 1, d->v, dq_len(d) * sizeof *d->v);
    d->tail++;
    d->v[0] = id;
    return;
  }
  d->v[--d->head] = id;
}

void sched_dq_free(deque *d) { free(d->v); }

workflow *sched_find_wf(sg_scheduler *s, uint32_t id) {
  if (id < WF_INDEX_MAX) {
    if (id >= s->nwf_index || s->wf_index[id] == 0)
      return NULL;
    return &s->wf[s->wf_index[id] - 1];
  }
  for (size_t i = 0; i < s->nwf; i++)
    if (s->wf[i].id == id)
      return &s->wf[i];
  return NULL;
}

workflow *sched_add_wf(sg_scheduler *s, uint32_t id, uint32_t iteration) {
  if (s->nwf == s->capwf) {
    s->capwf = s->capwf ? s->capwf * 2 : 8;
    s->wf = sg_realloc(s->wf, s->capwf * sizeof *s->wf);
  }
  workflow *w = &s->wf[s->nwf++];
  memset(w, 0, sizeof *w);
  w->id = id;
  w->iteration = iteration;
  if (id < WF_INDEX_MAX) {
    if (id >= s->nwf_index) {
      size_t n = s->nwf_index ? s->nwf_index : 64;
      while (n <= id)
        n *= 2;
      s->wf_index = sg_realloc(s->wf_index, n * sizeof *s->wf_index);
      memset(s->wf_index + s->nwf_index, 0,
             (n - s->nwf_index) * sizeof *s->wf_index);
      s->nwf_index = n;
    }
    s->wf_index[id] = (uint32_t)s->nwf;
  }
  return w;
}

/* Pops the next live entry of workflow i's queue, or NULL when it holds
 * none (dead entries are dropped on the way). Keeps the non-empty set. */
static req *pop_live(sg_scheduler *s, size_t i, int stage, sg_phase phase,
                     sg_req_state want, bool lifo) {
  deque *q = &s->wf[i].q[stage][phase];
  while (dq_len(q) > 0) {
    sg_req_id id = lifo ? q->v[q->tail - 1] : q->v[q->head];
    if (lifo)
      q->tail--;
    else
      q->head++;
    req *r = get_req(s, id);
    assert(r != NULL);
    if (r->state != want)
      continue; /* aborted or failed while queued */
    if (dq_len(q) == 0)
      sg_bitset_clear(&s->nonempty[stage][phase], i);
    return r;
  }
  sg_bitset_clear(&s->nonempty[stage][phase], i);
  return NULL;
}

/* The next request of one queue: round-robin across workflows, then LIFO or
 * FIFO within the workflow's queue. Dead entries at the ends are dropped.
 * Only workflows whose queue has entries are visited, in the order a scan
 * from the one after the last served would visit them. */
req *sched_pick(sg_scheduler *s, int stage, sg_phase phase) {
  sg_req_state want = stage == STAGE_COMPILE ? SG_REQ_COMPILE_WAIT
                                             : SG_REQ_DEVICE_WAIT;
  if (s->nstate[want][phase] == 0)
    return NULL; /* nothing waits: skip the scan over workflows */
  bool lifo = phase == SG_PHASE_VALIDATE && s->o.validate_lifo;
  const sg_bitset *ne = &s->nonempty[stage][phase];
  size_t nwf = s->nwf;
  /* Workflows that joined since the last pick are at the end, so they wait
   * at most one round too. rr starts as (size_t)-1: the first pick starts
   * at 0. */
  size_t start = s->rr[stage][phase] + 1;
  if (start >= nwf)
    start = 0;
  for (int round = 0; round < 2; round++) {
    size_t end = round == 0 ? nwf : start;
    for (size_t i = sg_bitset_next(ne, round == 0 ? start : 0); i < end;
         i = sg_bitset_next(ne, i + 1)) {
      req *r = pop_live(s, i, stage, phase, want, lifo);
      if (r != NULL) {
        s->rr[stage][phase] = i;
        return r;
      }
    }
  }
  return NULL;
}

void sched_enqueue(sg_scheduler *s, req *r, int stage, bool front) {
  workflow *w = sched_find_wf(s, r->r.workflow);
  assert(w != NULL);
  deque *q = &w->q[stage][r->r.phase];
  /* "front" means "served next": the back for a LIFO queue. */
  bool lifo = r->r.phase == SG_PHASE_VALIDATE && s->o.validate_lifo;
  if (front && !lifo)
    dq_push_front(q, r->id);
  else
    dq_push_back(q, r->id);
  sg_bitset_set(&s->nonempty[stage][r->r.phase], (size_t)(w - s->wf));
}
