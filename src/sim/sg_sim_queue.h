/* sg_sim_queue.h: the simulator's event queue, a 4-ary min-heap keyed by
 * virtual time in microseconds.
 *
 * Ties are broken by insertion order (a sequence number taken at push), so
 * two events at the same microsecond always pop in the order they were
 * scheduled: the simulation is deterministic for a seed whatever the heap's
 * internal layout. Events are small values (a type and two integers); what
 * they refer to lives in the runtime's tables. There is no removal: a
 * cancelled event is recognised as stale when it pops (its epoch no longer
 * matches), which keeps the heap simple and O(log n).
 *
 * Lanes: most events are scheduled at a time no earlier than the last
 * event of their kind (a controller tick every tick period, an event at
 * "now"), so a kind can keep its events in a first-in first-out lane
 * instead of the heap: appending and taking the head cost O(1) and touch
 * one cache line. An event pushed to a lane whose last event is later goes
 * to the heap. The pop takes the earliest of the heap's top and the lanes'
 * heads by (t_us, seq), so the order is exactly the heap's alone.
 */
#ifndef SG_SIM_QUEUE_H
#define SG_SIM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sg_sim_event {
  int64_t t_us;      /* virtual time it fires */
  uint64_t seq;      /* push order: the tie-breaker */
  int type;          /* the runtime's event type */
  uint32_t owner;    /* e.g. the workflow or device */
  uint64_t id;       /* e.g. a generation or request id */
  uint64_t epoch;    /* stale when it differs from the object's */
} sg_sim_event;

#define SG_SIM_QUEUE_LANES 3

/* A ring of events in (t_us, seq) order. */
typedef struct sg_sim_lane {
  sg_sim_event *v;
  size_t head, n, cap; /* cap: a power of two */
} sg_sim_lane;

typedef struct sg_sim_queue {
  sg_sim_event *v;
  size_t n, cap;
  uint64_t next_seq;
  sg_sim_lane lane[SG_SIM_QUEUE_LANES];
} sg_sim_queue;

void sg_sim_queue_init(sg_sim_queue *q);
void sg_sim_queue_free(sg_sim_queue *q);
/* Schedules ev (its seq is assigned here). */
void sg_sim_queue_push(sg_sim_queue *q, sg_sim_event ev);
/* Schedules ev in lane (< SG_SIM_QUEUE_LANES) if no event there is later,
 * else in the heap; pops in the same order as sg_sim_queue_push would. */
void sg_sim_queue_push_lane(sg_sim_queue *q, unsigned lane, sg_sim_event ev);
/* The earliest event (smallest t_us, then seq) into *ev; false when empty. */
bool sg_sim_queue_pop(sg_sim_queue *q, sg_sim_event *ev);
size_t sg_sim_queue_size(const sg_sim_queue *q);

#endif
