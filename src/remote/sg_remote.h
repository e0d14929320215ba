/* sg_remote.h: evaluations on other hosts through Redis (docs/remote.md).
 *
 * Two programs meet through Redis streams:
 * - the worker host (`specgen worker --redis URL --run ID --device D`,
 *   sg_remote_worker_serve) takes requests of its run and device kind and
 *   evaluates them with a local pool of one `specgen worker` (the local
 *   evaluation path), heartbeating meanwhile;
 * - the slot proxy (`specgen worker --remote-slot redis:KIND/N`,
 *   sg_remote_proxy_serve), which the controller's pool starts like a local
 *   worker: it speaks the worker protocol on stdin/stdout and carries each
 *   request through Redis, watching the heartbeat of the worker that took
 *   it.
 */
#ifndef SG_REMOTE_H
#define SG_REMOTE_H

#include "common/sg_error.h"
#include "pool/sg_pool.h"

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

/* The environment through which the pool hands the URL and the run id to
 * its slot proxies (never their command line: `ps` would show it). */
#define SG_REMOTE_ENV_URL "SPECGEN_REDIS_URL"
#define SG_REMOTE_ENV_RUN "SPECGEN_REDIS_RUN"

/* A remote device slot's name: "redis:KIND/N" (sg_pool.h). */
#define SG_REMOTE_DEVICE_PREFIX SG_POOL_REMOTE_PREFIX
bool sg_remote_is_device(const char *device);

/* Returns a copy of a URL given on the command line (owned by the
 * process: never freed) and overwrites the credentials in the argument
 * itself with '*', so /proc/PID/cmdline (`ps`) stops showing them. */
char *sg_remote_url_hide(char *arg);

/* A run id: 1..64 of [A-Za-z0-9._-] (it is part of every key). */
int sg_remote_run_id_check(const char *id, sg_err *err);

/* The keys (caller frees). */
char *sg_remote_key_requests(const char *run, const char *kind);
char *sg_remote_key_replies(const char *run, const char *slot_device);
char *sg_remote_key_heartbeat(const char *run, const char *consumer);
char *sg_remote_key_workers(const char *run);
/* A worker's control list: request ids the controller aborted (LPUSH by the
 * proxy, BLPOP by the worker while it evaluates). */
char *sg_remote_key_control(const char *run, const char *consumer);
#define SG_REMOTE_GROUP "workers"
/* A worker's consumer name in this process: HOST/DEVICE/PID (caller frees). */
char *sg_remote_consumer(const char *host, const char *device);

/* A run's end on the controller, once its slot proxies exited: its slots'
 * reply streams, its kind's request stream and the `workers`
 * entries of hosts whose heartbeat expired are deleted (sg_remote_cleanup.c). */
int sg_remote_run_cleanup(const char *url, const char *run, const char *kind,
                          const char *const *slots, size_t n_slots, sg_err *err);
/* A worker host's end: its `workers` entry, heartbeat and control list. */
int sg_remote_worker_unregister(const char *url, const char *run, const char *consumer,
                                sg_err *err);

typedef struct sg_remote_worker_opts {
  const char *url;          /* redis://... (never printed) */
  const char *run_id;
  const char *device;       /* cpu:N or cuda:N */
  const char *host;         /* the name in the consumer; NULL: gethostname */
  const char *program;      /* the specgen executable for the local worker */
  const char *build_cache;  /* this host's; NULL: one under work_dir/$TMPDIR */
  const char *work_dir;
  const char *version;
  double heartbeat_ttl_s;   /* 6 when 0 */
  /* Redis unreachable this long (either connection down, or never up)
   * ends the worker: it leaves, saying why (30 when 0). */
  double redis_timeout_s;
} sg_remote_worker_opts;

/* Serves until SIGTERM or SIGINT. Returns 0 then, negative when it could not
 * start (a bad URL, run id or device: SG_EINVAL; Redis refused the
 * password or cannot be reached: SG_ECONN, with the server's reason) or
 * when it left (it refused a request of another run or version, its local
 * worker was given up, or Redis stayed unreachable for redis_timeout_s:
 * SG_ESTATE, the reason in err). */
int sg_remote_worker_serve(const sg_remote_worker_opts *o, sg_err *err);

/* The remote worker without its process: takes requests through Redis and
 * hands each to an evaluator. `specgen worker --redis` is a process around
 * one whose evaluator is a local pool (sg_remote_host.c); bench_redis runs
 * a thousand on one loop with evaluators that only wait. The consumer name
 * is HOST/DEVICE/PID: workers sharing a process need hosts or devices of
 * their own. */
typedef struct sg_remote_worker sg_remote_worker;
typedef struct sg_remote_evaluator {
  void *data;
  /* Starts an evaluation (the worker sends one at a time); its "started"
   * and result come back through sg_remote_worker_started/_result with the
   * request's ticket. An error answers the request with err's message;
   * SG_ESTATE (the evaluator can take none again) makes the worker leave. */
  int (*submit)(void *data, const sg_pool_request *r, sg_err *err);
  /* The controller aborted it: no result is expected any more. */
  void (*abort)(void *data, uint64_t ticket);
  /* The worker stopped by itself (after sg_remote_worker_leave, or after it
   * refused a request of another run); why says why. It frees itself. May
   * be NULL. */
  void (*stopped)(void *data, const char *why);
} sg_remote_evaluator;

/* The opts' strings are borrowed for the worker's life. */
int sg_remote_worker_new(uv_loop_t *loop, const sg_remote_worker_opts *o,
                         const sg_remote_evaluator *ev, sg_remote_worker **w,
                         sg_err *err);
void sg_remote_worker_started(sg_remote_worker *w, uint64_t ticket);
/* r is borrowed for the call. */
void sg_remote_worker_result(sg_remote_worker *w, uint64_t ticket,
                             const sg_eval_result *r);
/* Takes no more requests and stops once its replies are written (3 s at
 * most), then says so through the evaluator's stopped. */
void sg_remote_worker_leave(sg_remote_worker *w, const char *why);
/* Stops now (no stopped callback); freed once its handles are closed (run
 * the loop). NULL is fine. */
void sg_remote_worker_close(sg_remote_worker *w);

typedef struct sg_remote_proxy_opts {
  const char *url;
  const char *run_id;
  const char *device;       /* redis:KIND/N */
  const char *version;
} sg_remote_proxy_opts;

/* Serves the worker protocol on stdin/stdout until shutdown or the end of
 * stdin. Negative when it could not start. */
int sg_remote_proxy_serve(const sg_remote_proxy_opts *o, sg_err *err);

/* The slot proxy without its process: one remote slot on a caller's loop,
 * speaking the worker protocol through a function call each way instead
 * of stdin/stdout. `specgen worker --remote-slot` is a process around one;
 * bench_redis runs a thousand on one loop. The opts' strings are borrowed
 * for the slot's life. Lines out (the replies a pool would read: hello,
 * started, result, pong, ...) go to out, each ending in '\n'. */
typedef struct sg_remote_slot sg_remote_slot;
typedef void (*sg_remote_slot_out_fn)(void *data, const char *line, size_t len);
int sg_remote_slot_new(uv_loop_t *loop, const sg_remote_proxy_opts *o,
                       sg_remote_slot_out_fn out, void *out_data,
                       sg_remote_slot **slot, sg_err *err);
/* One request line from the pool (without its '\n'). */
void sg_remote_slot_line(sg_remote_slot *s, const char *line, size_t len);
/* The pool is gone (the end of stdin): every entry the slot still holds is
 * closed (nobody will store its result now), and the slot stops, and frees
 * itself, once its acknowledgements went out (2 s at most). */
void sg_remote_slot_finish(sg_remote_slot *s);
/* Stops now; freed once its handles are closed (run the loop). NULL is fine. */
void sg_remote_slot_close(sg_remote_slot *s);

#endif
