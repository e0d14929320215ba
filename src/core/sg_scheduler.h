/* sg_scheduler.h: the elastic device scheduler, Algorithm 2 of the SpecGen
 * paper (pure: no I/O, no clock; time is an argument).
 *
 * One pool of G devices, split into a validation part and a profiling part.
 * Several workflows share the pool. A request (validate or profile one
 * candidate) goes through a CPU compile stage (its own slots; no device is
 * held while compiling), then waits for a device of its phase's part, then
 * runs on it. The scheduler takes events and appends actions:
 *
 *   events:  submit, compiled(ok|failed), device done(status, infra failure?),
 *            iteration boundary(workflow), tick
 *   actions: start compile R, start R on device D, abort R (on device D, or
 *            while compiling, or queued), fail R (given up: the runtime
 *            reports it to the controller as an infra error)
 *
 * Rules (docs/core.md has the reasoning):
 * - Re-split at every iteration boundary (elastic mode) from the peak
 *   queue lengths Lv, Lp seen since the last re-split:
 *     G_prof = min(G-1, max(1, round(G*Lp/(Lv+Lp)))), round half up;
 *     Lv = Lp = 0: G_prof = G/2 (validation gets the odd device).
 *   G counts devices in service. G = 1: the one device serves both parts
 *   (profiling first). A device busy when the split changes finishes its
 *   request and then joins its new part.
 * - Validation: last-arrival-first (LIFO) within a workflow; profiling:
 *   FIFO. Across workflows: round-robin, so a workflow with a waiting
 *   request is served before any other workflow is served twice in that
 *   queue (the fairness guarantee).
 * - One request per device at a time (asserted).
 * - At a workflow's iteration boundary, all its queued, compiling and
 *   running requests are aborted; later submissions for the ended iteration
 *   are refused (SG_ESTATE).
 * - A device that reports N consecutive infra failures is taken out of
 *   service; the failed request is re-queued (at most max_retries times,
 *   then failed).
 * Baseline configurations of the paper's ablation: elastic=false (a static
 * split) and validate_lifo=false (FIFO validation).
 */
#ifndef SG_SCHEDULER_H
#define SG_SCHEDULER_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sg_phase {
  SG_PHASE_VALIDATE,
  SG_PHASE_PROFILE,
  SG_PHASE__COUNT
} sg_phase;

/* "validate", "profile". */
const char *sg_phase_name(sg_phase p);

/* A request id; ids start at 1 and are never reused within a scheduler. */
typedef uint64_t sg_req_id;

/* A request's life. Transitions (asserted, through one setter):
 *   COMPILE_WAIT -> COMPILING -> DEVICE_WAIT -> RUNNING -> DONE
 *   (no compile: submitted straight to DEVICE_WAIT)
 *   RUNNING -> DEVICE_WAIT (infra failure, retried)
 *   any live state -> ABORTED | FAILED;  COMPILING -> DONE (compile failed) */
typedef enum sg_req_state {
  SG_REQ_COMPILE_WAIT,
  SG_REQ_COMPILING,
  SG_REQ_DEVICE_WAIT,
  SG_REQ_RUNNING,
  SG_REQ_DONE,
  SG_REQ_ABORTED,
  SG_REQ_FAILED,
  SG_REQ__COUNT
} sg_req_state;

const char *sg_req_state_name(sg_req_state s);

typedef enum sg_device_state {
  SG_DEVICE_IDLE,
  SG_DEVICE_BUSY,
  SG_DEVICE_DEAD,  /* out of service after repeated infra failures */
  SG_DEVICE__COUNT
} sg_device_state;

const char *sg_device_state_name(sg_device_state s);

typedef struct sg_sched_opts {
  int devices;              /* G >= 1 */
  int compile_slots;        /* CPU compile slots >= 1 */
  bool elastic;             /* re-split at iteration boundaries (Alg. 2) */
  int static_profile_devices; /* initial (and, if !elastic, fixed) G_prof;
                                 -1: the even split G/2 */
  bool validate_lifo;       /* LIFO validation (priority); false: FIFO */
  bool work_conserving;     /* an idle device whose part has nothing waiting
                               runs the other part's next request (no device
                               idles while any queue has work; with two
                               devices, both serve both); the split still
                               decides who goes first. false: the paper's */
  bool split_capacity;      /* with work_conserving: the free capacity the
                               controllers see (and so their fork count K)
                               stays each part's own, as without it, so
                               the devices lent across parts do not also
                               multiply the forks. false: the pool's */
  int max_infra_failures;   /* N consecutive on a device: out of service */
  int max_retries;          /* re-queues of one request after infra failure */
  size_t max_queued;        /* cap on live requests; submit gives SG_EFULL */
} sg_sched_opts;

/* devices=1, compile_slots=1, elastic=true, static_profile_devices=-1,
 * validate_lifo=true, max_infra_failures=3, max_retries=2, max_queued=4096. */
void sg_sched_opts_default(sg_sched_opts *o);

typedef enum sg_sched_action_type {
  SG_SACT_START_COMPILE,   /* compile request req on a CPU slot */
  SG_SACT_START_DEVICE,    /* run request req on device */
  SG_SACT_ABORT,           /* withdraw req; device >= 0: kill it there
                              (the device is free for the next action);
                              was_compiling: kill its compile */
  SG_SACT_FAIL,            /* given up on req (retries exhausted or no device
                              left): report it as an infra error */
  SG_SACT_DEVICE_DEAD,     /* device taken out of service (for the log) */
  SG_SACT_RESPLIT,         /* the split changed (for the log) */
} sg_sched_action_type;

typedef struct sg_sched_action {
  sg_sched_action_type type;
  sg_req_id req;           /* 0 for DEVICE_DEAD / RESPLIT */
  uint32_t workflow;       /* RESPLIT: the live workflow whose iteration
                              boundary (or whose request's infrastructure
                              failure, killing a device) caused it */
  uint32_t iteration;      /* RESPLIT: that workflow's current iteration */
  sg_phase phase;
  int device;              /* -1 when none */
  bool was_compiling;      /* ABORT only */
  int validate_devices;    /* RESPLIT only: the new split */
  int profile_devices;
  uint64_t candidate;      /* the request's candidate (as submitted) */
} sg_sched_action;

/* A caller-owned growable list of actions; the scheduler appends. */
typedef struct sg_sched_actions {
  sg_sched_action *v;
  size_t n, cap;
} sg_sched_actions;

void sg_sched_actions_init(sg_sched_actions *a);
void sg_sched_actions_clear(sg_sched_actions *a);
void sg_sched_actions_free(sg_sched_actions *a);

/* What a request carries in. */
typedef struct sg_sched_request {
  uint32_t workflow;
  uint32_t iteration;      /* the workflow's current iteration */
  sg_phase phase;
  uint64_t candidate;      /* the controller's candidate id (opaque here) */
  bool needs_compile;      /* false: straight to the device queue */
} sg_sched_request;

/* Free capacity for the controller's K: devices of a part in service minus
 * that part's live requests (compiling, waiting or running), at least 0. */
typedef struct sg_sched_capacity {
  int free_validate;
  int free_profile;
  int validate_devices, profile_devices;  /* the current split (in service) */
  int queued_validate, queued_profile;    /* live, not yet on a device */
} sg_sched_capacity;

/* Cumulative device-time accounting (for utilization). */
typedef struct sg_sched_stats {
  int64_t busy_us[SG_PHASE__COUNT];  /* device time running requests */
  uint64_t started[SG_PHASE__COUNT]; /* device starts */
  uint64_t completed[SG_PHASE__COUNT];
  uint64_t aborted, failed, infra_failures, resplits;
  int dead_devices;
  size_t peak_queued[SG_PHASE__COUNT]; /* since the last re-split */
} sg_sched_stats;

typedef struct sg_scheduler sg_scheduler;

/* SG_EINVAL (message names the option) for bad options. */
int sg_scheduler_new(const sg_sched_opts *opts, sg_scheduler **out,
                     sg_err *err);
void sg_scheduler_free(sg_scheduler *s);

/* A new request; its id in *id. Actions (a compile or device start) are
 * appended to out. SG_ESTATE if iteration is not the workflow's current one
 * (an ended iteration), SG_EFULL past max_queued. A workflow is known from
 * its first submit or boundary; its current iteration starts at the first
 * iteration it submits for. */
int sg_scheduler_submit(sg_scheduler *s, const sg_sched_request *r,
                        int64_t now_us, sg_req_id *id, sg_sched_actions *out,
                        sg_err *err);

/* The compile stage of id ended. ok=false: the request is done (the runtime
 * reports the compile error to its controller). SG_ENOENT / SG_ESTATE for an
 * unknown id or one not compiling (e.g. aborted meanwhile: ignore it). */
int sg_scheduler_compiled(sg_scheduler *s, sg_req_id id, bool ok,
                          int64_t now_us, sg_sched_actions *out, sg_err *err);

/* The device stage of id ended. infra_failure: the machine, not the
 * candidate, failed (the request is retried elsewhere, the device's failure
 * count grows); otherwise the device's count resets. Same errors as above. */
int sg_scheduler_device_done(sg_scheduler *s, sg_req_id id, bool infra_failure,
                             int64_t now_us, sg_sched_actions *out,
                             sg_err *err);

/* The workflow's iteration ended: abort its requests, advance its current
 * iteration to next_iteration (> the current one), re-split (elastic), and
 * start what can start. */
int sg_scheduler_iteration_boundary(sg_scheduler *s, uint32_t workflow,
                                    uint32_t next_iteration, int64_t now_us,
                                    sg_sched_actions *out, sg_err *err);

/* The workflow is finished: abort its requests and forget it. A workflow
 * never seen before (done before its first request) is fine. */
int sg_scheduler_workflow_done(sg_scheduler *s, uint32_t workflow,
                               int64_t now_us, sg_sched_actions *out,
                               sg_err *err);

/* Time passes: accounts busy time up to now_us. Never appends actions today
 * (kept for timeouts); out may be NULL. */
void sg_scheduler_tick(sg_scheduler *s, int64_t now_us, sg_sched_actions *out);

void sg_scheduler_capacity(const sg_scheduler *s, sg_sched_capacity *c);
void sg_scheduler_stats(const sg_scheduler *s, sg_sched_stats *st);

/* Inspection (tests, sim, dashboard). */
int sg_scheduler_devices(const sg_scheduler *s);
sg_device_state sg_scheduler_device_state(const sg_scheduler *s, int device);
/* The request running on device, 0 if none. */
sg_req_id sg_scheduler_device_request(const sg_scheduler *s, int device);
/* The phase a device serves now (G=1: SG_PHASE__COUNT, both). */
sg_phase sg_scheduler_device_part(const sg_scheduler *s, int device);
/* SG_ENOENT for an unknown id. */
int sg_scheduler_request_state(const sg_scheduler *s, sg_req_id id,
                               sg_req_state *state);
/* The request as submitted (workflow, iteration, phase, candidate);
 * SG_ENOENT for an unknown id. */
int sg_scheduler_request_info(const sg_scheduler *s, sg_req_id id,
                              sg_sched_request *out);

/* The re-split formula alone: G_prof for g >= 1 devices in service and peak
 * queue lengths lv, lp; g = 1 gives 0 (the device is shared, see above). */
int sg_scheduler_split(int g, size_t lv, size_t lp);

#endif
