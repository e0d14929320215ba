/* sg_sim_queue.c: a 4-ary min-heap of events ordered by (t_us, seq).
 * See sg_sim_queue.h. */
#include "sim/sg_sim_queue.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void sg_sim_queue_init(sg_sim_queue *q) { memset(q, 0, sizeof *q); }

void sg_sim_queue_free(sg_sim_queue *q) {
  free(q->v);
  for (unsigned l = 0; l < SG_SIM_QUEUE_LANES; l++)
    free(q->lane[l].v);
  sg_sim_queue_init(q);
}

static bool before(const sg_sim_event *a, const sg_sim_event *b) {
  if (a->t_us != b->t_us)
    return a->t_us < b->t_us;
  return a->seq < b->seq;
}

/* A 4-ary heap: half the levels of a binary one, and a node's children
 * sit side by side (160 bytes, a few cache lines). A thousand workflows
 * keep a few hundred thousand events pending, far more than the caches
 * hold, so a pop costs its levels' cache misses. The order is the total
 * order (t_us, seq) whatever the arity: the same events pop in the same
 * order. */
#define ARITY 4

static void heap_push(sg_sim_queue *q, sg_sim_event ev) {
  if (q->n == q->cap) {
    q->cap = q->cap ? q->cap * 2 : 256;
    q->v = sg_realloc(q->v, q->cap * sizeof *q->v);
  }
  size_t i = q->n++;
  while (i > 0) {
    size_t p = (i - 1) / ARITY;
    if (!before(&ev, &q->v[p]))
      break;
    q->v[i] = q->v[p];
    i = p;
  }
  q->v[i] = ev;
}

void sg_sim_queue_push(sg_sim_queue *q, sg_sim_event ev) {
  ev.seq = q->next_seq++;
  heap_push(q, ev);
}

void sg_sim_queue_push_lane(sg_sim_queue *q, unsigned lane, sg_sim_event ev) {
  assert(lane < SG_SIM_QUEUE_LANES);
  sg_sim_lane *l = &q->lane[lane];
  ev.seq = q->next_seq++;
  /* Its seq is the newest, so it goes last unless an earlier time is due. */
  if (l->n > 0 && l->v[(l->head + l->n - 1) & (l->cap - 1)].t_us > ev.t_us) {
    heap_push(q, ev);
    return;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 256;
    sg_sim_event *v = sg_malloc(cap * sizeof *v);
    for (size_t i = 0; i < l->n; i++)
      v[i] = l->v[(l->head + i) & (l->cap - 1)];
    free(l->v);
    l->v = v;
    l->cap = cap;
    l->head = 0;
  }
  l->v[(l->head + l->n++) & (l->cap - 1)] = ev;
}

/* The heap's top against the lanes' heads: which holds the earliest. */
static sg_sim_lane *earliest_lane(sg_sim_queue *q) {
  const sg_sim_event *best = q->n > 0 ? &q->v[0] : NULL;
  sg_sim_lane *from = NULL;
  for (unsigned i = 0; i < SG_SIM_QUEUE_LANES; i++) {
    sg_sim_lane *l = &q->lane[i];
    if (l->n > 0 && (best == NULL || before(&l->v[l->head], best))) {
      best = &l->v[l->head];
      from = l;
    }
  }
  return from;
}

bool sg_sim_queue_pop(sg_sim_queue *q, sg_sim_event *ev) {
  sg_sim_lane *l = earliest_lane(q);
  if (l != NULL) {
    *ev = l->v[l->head];
    l->head = (l->head + 1) & (l->cap - 1);
    l->n--;
    return true;
  }
  if (q->n == 0)
    return false;
  *ev = q->v[0];
  sg_sim_event last = q->v[--q->n];
  size_t i = 0, n = q->n;
  for (;;) {
    size_t c = ARITY * i + 1, m = i;
    const sg_sim_event *best = &last;
    size_t end = c + ARITY < n ? c + ARITY : n;
    for (; c < end; c++)
      if (before(&q->v[c], best)) {
        m = c;
        best = &q->v[c];
      }
    if (m == i)
      break;
    q->v[i] = q->v[m];
    i = m;
  }
  if (n > 0)
    q->v[i] = last;
  assert(q->n == 0 || !before(&q->v[0], ev));
  return true;
}

size_t sg_sim_queue_size(const sg_sim_queue *q) {
  size_t n = q->n;
  for (unsigned l = 0; l < SG_SIM_QUEUE_LANES; l++)
    n += q->lane[l].n;
  return n;
}
