/* sg_sim_queue.c: a 4-ary min-heap of events ordered by (t_us, seq).
 * See sg_sim_queue.h. */
#include "sim/sg_sim_queue.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <stdlib.h>

void sg_sim_queue_init(sg_sim_queue *q) {
  q->v = NULL;
  q->n = q->cap = 0;
  q->next_seq = 0;
}

void sg_sim_queue_free(sg_sim_queue *q) {
  free(q->v);
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

void sg_sim_queue_push(sg_sim_queue *q, sg_sim_event ev) {
  if (q->n == q->cap) {
    q->cap = q->cap ? q->cap * 2 : 256;
    q->v = sg_realloc(q->v, q->cap * sizeof *q->v);
  }
  ev.seq = q->next_seq++;
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

bool sg_sim_queue_pop(sg_sim_queue *q, sg_sim_event *ev) {
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

size_t sg_sim_queue_size(const sg_sim_queue *q) { return q->n; }
