/* sg_interp.h: the action interpreter, the one piece of glue between the
 * pure core and a runtime. `specgen run` (src/run) and `specgen sim`
 * (src/sim) both use it, so a seeded simulation exercises the real loop's
 * glue: its deferred queue, its re-entry guard and the order in which
 * actions reach the world.
 *
 * How it works. The interpreter holds the workflows' controllers and the
 * shared scheduler. An event for a controller (sg_interp_event) is fed to
 * it and the actions it returns are executed in order, each by one call of
 * the runtime's ops table (start or cancel a generation, record a candidate
 * and hand it to the scheduler, end an iteration, record a decision); the
 * scheduler's actions (start a compile or a device stage, abort one, give a
 * request up) likewise. What the interpreter does itself is the protocol
 * between the two: END_ITERATION is a scheduler iteration boundary,
 * WORKFLOW_DONE is the scheduler's workflow_done, a submission is a
 * scheduler request, and a submission the scheduler refuses is an
 * infrastructure failure of that evaluation.
 *
 * Events the runtime makes up while actions run (a result it knew already,
 * a stage that could not start, a generation that could not start) are not
 * fed to a controller from inside the action list that caused them: they
 * wait in a deferred queue (sg_interp_eval_done, sg_interp_gen_failed),
 * drained once no core call is on the stack (sg_interp_drain). A runtime
 * callback that may produce several such events holds the guard itself
 * (sg_interp_hold / sg_interp_release).
 *
 * Deduplication. A kernel is evaluated at most once per phase: while a
 * request is in flight (queued, compiling or running), a submission of the
 * same kernel (sg_source_key of its source, compared in full; same
 * workflow, iteration and phase) joins it (ops.joined) and gets the
 * leader's result when it comes (sg_interp_eval_done fans it out); a kernel
 * whose evaluation already finished is the runtime's to answer from its
 * store (ops.submit's *answered). It is decided here, not in the
 * controller or the scheduler, because it spans both: the controller
 * knows only its own candidates' ids, the scheduler no sources, and the
 * in-flight set is the one both see through this file. A leader withdrawn
 * at its iteration's end takes its followers with it: they belong to the
 * same, ended iteration.
 *
 * Failures. An op returns 0, or < 0 with the detail already in the error
 * buffer the interpreter was given (opts.err); sg_interp_fail records an
 * error from elsewhere. The first error wins; after it no event is fed and
 * no action executed (the runtime stops). Pure: no I/O, no clock (time
 * comes from ops.now_us), no randomness.
 */
#ifndef SG_INTERP_H
#define SG_INTERP_H

#include "common/sg_error.h"
#include "core/sg_controller.h"
#include "core/sg_scheduler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sg_interp sg_interp;

/* The runtime's side. data is ops's first argument. Every op is called on
 * the runtime's one thread, from inside an sg_interp_* call. */
typedef struct sg_interp_ops {
  int64_t (*now_us)(void *data);
  /* optional: the calling thread's CPU time in ns, to account the time the
   * controllers take; NULL: not accounted */
  int64_t (*cpu_ns)(void *data);
  /* optional: told once, at the first fatal error (it is in opts.err) */
  void (*failed)(void *data);
  /* optional: what a controller's error is prefixed with ("task NAME"),
   * written into buf; NULL: "workflow W" */
  void (*describe)(void *data, uint32_t w, char *buf, size_t size);

  /* The controller's actions. */
  int (*gen_start)(void *data, uint32_t w, const sg_ctl_action *a);
  /* *was_main: a running main generation was cancelled (the iteration's
   * end, if it follows, is early in the paper's sense) */
  int (*gen_cancel)(void *data, uint32_t w, uint64_t gen, bool *was_main);
  /* Before the scheduler: record the candidate. *answered: the runtime
   * answered it itself (with sg_interp_eval_done) and the scheduler is not
   * asked; *needs_compile: the request has a compile stage. */
  int (*submit)(void *data, uint32_t w, const sg_ctl_action *a, bool *answered,
                bool *needs_compile);
  /* optional: the candidate's kernel is the same (sg_source_key, same
   * workflow, iteration and phase) as that of a request in flight, leader
   * (candidate leader_cand): it joins that evaluation instead of being
   * submitted (no submit op, no scheduler request); the runtime records
   * the candidate and that it was deduplicated. The leader's final result
   * (sg_interp_eval_done) is then delivered to it too. NULL: no joining
   * (the simulator: its kernels' text is a stand-in, their outcomes are
   * drawn per candidate). */
  int (*joined)(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id leader,
                uint64_t leader_cand);
  /* The scheduler took it as request id. */
  int (*submitted)(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id id);
  /* The scheduler refused it (message: why): the runtime records the
   * evaluation failed and reports it as an infrastructure error
   * (sg_interp_eval_done, or its own queue). */
  int (*refused)(void *data, uint32_t w, const sg_ctl_action *a, const char *message);
  /* END_ITERATION, before the scheduler's boundary. main_cancelled: this
   * iteration cancelled a running main generation. */
  int (*iteration_end)(void *data, uint32_t w, const sg_ctl_action *a,
                       bool main_cancelled);
  /* WORKFLOW_DONE, before the scheduler is told. */
  int (*workflow_done)(void *data, uint32_t w, const sg_ctl_action *a);
  int (*decision)(void *data, uint32_t w, const sg_ctl_action *a);

  /* The scheduler's actions. */
  int (*compile_start)(void *data, const sg_sched_action *a);
  int (*device_start)(void *data, const sg_sched_action *a);
  int (*abort)(void *data, const sg_sched_action *a);
  /* SG_SACT_FAIL: the request was given up; the runtime reports the
   * evaluation as an infrastructure error (sg_interp_eval_done) */
  int (*give_up)(void *data, const sg_sched_action *a);
  int (*device_dead)(void *data, const sg_sched_action *a);
  int (*resplit)(void *data, const sg_sched_action *a);
} sg_interp_ops;

typedef struct sg_interp_opts {
  const sg_interp_ops *ops;
  void *data;
  sg_scheduler *sched;     /* borrowed */
  size_t n_workflows;
  sg_err *err;             /* where the first fatal error goes (borrowed) */
  /* optional: one line per action executed and per event fed, without
   * times or ids the world chose (the action trace tests compare) */
  void (*trace)(void *trace_data, const char *line);
  void *trace_data;
} sg_interp_opts;

int sg_interp_new(const sg_interp_opts *o, sg_interp **out, sg_err *err);
void sg_interp_free(sg_interp *it);

/* Workflow w's controller (borrowed); NULL: a workflow already done. */
void sg_interp_set_controller(sg_interp *it, uint32_t w, sg_controller *ctl);
bool sg_interp_done(const sg_interp *it, uint32_t w);

/* Starts workflow w's controller and executes its first actions. */
int sg_interp_start(sg_interp *it, uint32_t w);
/* Feeds ev to workflow w's controller (with the scheduler's capacity) and
 * executes its actions. Ignored for a done workflow or after a failure. */
int sg_interp_event(sg_interp *it, uint32_t w, const sg_ctl_event *ev);

/* Deferred events: queued (strings copied), fed by sg_interp_drain. */
void sg_interp_eval_done(sg_interp *it, uint32_t w, uint64_t cand, sg_phase phase,
                         sg_eval_status st, double speedup, const char *message,
                         const char *profile_text);
void sg_interp_gen_failed(sg_interp *it, uint32_t w, uint64_t gen, int error,
                          const char *message);
/* Feeds the deferred events, in order, unless a core call or a hold is on
 * the stack. */
int sg_interp_drain(sg_interp *it);
void sg_interp_hold(sg_interp *it);
/* Ends a hold; drains once none is left. */
int sg_interp_release(sg_interp *it);

/* The scheduler told of a stage's end, then its actions executed. Returns
 * the scheduler's result (< 0 for a request it does not know, with err
 * set; nothing else happens then): the caller decides whether that is
 * fatal. */
int sg_interp_compiled(sg_interp *it, sg_req_id id, bool ok, sg_err *err);
int sg_interp_device_done(sg_interp *it, sg_req_id id, bool infra_failure, sg_err *err);

/* Records a fatal error (the first wins) and tells ops.failed. */
void sg_interp_fail(sg_interp *it, const sg_err *e);
bool sg_interp_failed(const sg_interp *it);

typedef struct sg_interp_stats {
  int64_t controller_cpu_ns;   /* 0 without ops.cpu_ns */
  uint64_t controller_calls;
  uint64_t joined;             /* submissions that joined one in flight */
} sg_interp_stats;
void sg_interp_stats_get(const sg_interp *it, sg_interp_stats *st);

#endif
