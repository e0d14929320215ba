/* sg_scheduler_priv.h: the scheduler's state, shared by its files.
 *
 * The scheduler is one state struct and the files that act on it:
 *   sg_scheduler.c          requests: their state machine, dispatch, the
 *                           events of Algorithm 2, iteration boundaries
 *   sg_scheduler_queues.c   the per-workflow queues and the round-robin pick
 *   sg_scheduler_devices.c  devices, the split into parts, the capacity
 * Nothing here is part of the public API (sg_scheduler.h).
 */
#ifndef SG_SCHEDULER_PRIV_H
#define SG_SCHEDULER_PRIV_H

#include "core/sg_scheduler.h"

#include "core/sg_bitset.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { STAGE_COMPILE, STAGE_DEVICE, STAGE__COUNT };

/* The part of a device that serves both phases (one live device). */
#define PART_SHARED SG_PHASE__COUNT

/* ---- internal types ---------------------------------------------------- */

typedef struct deque {
  sg_req_id *v;
  size_t head, tail, cap; /* live entries are v[head..tail) */
} deque;

typedef struct req {
  sg_req_id id;
  sg_sched_request r;
  sg_req_state state;
  int device;       /* while RUNNING */
  int slot;         /* while COMPILING */
  int retries;
} req;

typedef struct device {
  sg_device_state state;
  int part;                 /* sg_phase, or PART_SHARED */
  sg_req_id req;            /* while BUSY */
  uint32_t workflow;        /* while BUSY: its request's workflow, so an
                               iteration boundary finds the workflow's
                               running requests without reading each
                               device's request (abort_workflow) */
  int failures;             /* consecutive infra failures */
} device;

#define NPARTS (PART_SHARED + 1)

typedef struct workflow {
  uint32_t id;
  uint32_t iteration;
  bool done;
  deque q[STAGE__COUNT][SG_PHASE__COUNT];
} workflow;

struct sg_scheduler {
  sg_sched_opts o;
  req *reqs;                /* reqs[id-1] */
  size_t nreqs, capreqs;
  device *dev;
  sg_req_id *slots;         /* compile slots: the request compiling, or 0 */
  workflow *wf;
  size_t nwf, capwf;
  size_t rr[STAGE__COUNT][SG_PHASE__COUNT]; /* last served workflow index */
  size_t live;              /* requests not yet DONE/ABORTED/FAILED */
  size_t waiting[SG_PHASE__COUNT];  /* live, not yet on a device */
  size_t running[SG_PHASE__COUNT];
  size_t nstate[SG_REQ__COUNT][SG_PHASE__COUNT]; /* requests per state */
  int prof_target;          /* the wanted number of profiling devices */
  int nlive;                /* devices not dead */
  int npart[NPARTS];        /* live devices per part */
  sg_bitset idle[NPARTS];      /* idle live devices, per part */
  sg_bitset nonempty[STAGE__COUNT][SG_PHASE__COUNT]; /* workflow indices
                               whose queue has entries (maybe dead ones) */
  uint32_t *wf_index;       /* workflow id -> index + 1 (0: none) */
  size_t nwf_index;
  int64_t now;
  sg_sched_stats st;
};

static inline req *get_req(const sg_scheduler *s, sg_req_id id) {
  if (id == 0 || id > s->nreqs)
    return NULL;
  return &s->reqs[id - 1];
}

static inline int live_devices(const sg_scheduler *s) { return s->nlive; }

/* sg_scheduler.c */
void sched_emit(sg_sched_actions *out, const sg_sched_action *a);

/* sg_scheduler_queues.c */
workflow *sched_find_wf(sg_scheduler *s, uint32_t id);
workflow *sched_add_wf(sg_scheduler *s, uint32_t id, uint32_t iteration);
/* The next request of one queue, or NULL. */
req *sched_pick(sg_scheduler *s, int stage, sg_phase phase);
/* "front": served next. */
void sched_enqueue(sg_scheduler *s, req *r, int stage, bool front);
void sched_dq_free(deque *d);

/* sg_scheduler_devices.c */
/* The one door for a device's state (docs/style.md rule 13). */
void sched_device_set_state(sg_scheduler *s, int d, sg_device_state to);
/* Gives the live devices parts so that prof_target of them profile. */
void sched_assign_parts(sg_scheduler *s);
void sched_emit_resplit(sg_scheduler *s, uint32_t workflow, uint32_t iteration,
                        sg_sched_actions *out);

#endif
