/* sg_pool.h: the run's worker processes, driven from the runtime's libuv loop.
 *
 * A pool owns one `specgen worker --device D` process per device of the run
 * (a "device slot") and `compile_workers` processes `specgen worker
 * --compile-only` (the CPU compile stage, no device held). All of them share
 * one build cache directory: a compile worker builds a candidate into it, and
 * the device worker that later validates the same candidate finds the build
 * there instead of compiling again (docs/protocol.md). Requests and replies
 * are the JSON lines of sg_worker_proto.h over each worker's stdin/stdout
 * pipes; each worker's stderr is appended to a log file.
 *
 * The pool's promise: every request submitted gets exactly one result
 * callback, unless the caller aborted it first. A worker that exits, is
 * killed, closes its stdout, writes a line that is not protocol, or holds a
 * request past its deadline (hang) is killed if needed and restarted (after
 * a short backoff), and each request it held is reported with status
 * infra_error and a message that names the worker, the device and what
 * happened ("worker cuda:1 (pid 4242) died of signal 9 while validating";
 * the scheduler then retries it elsewhere). A slot restarted more than
 * max_restarts times in a row without completing a request is given up:
 * its queued requests are failed the same way and later submits to it are
 * refused (SG_ESTATE), so the runtime can take the device out of service.
 *
 * Single-threaded: every call and callback happens on the loop's thread.
 */
#ifndef SG_POOL_H
#define SG_POOL_H

#include "common/sg_error.h"
#include "eval/sg_eval.h"
#include "pool/sg_worker_proto.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

typedef struct sg_pool sg_pool;

/* A device named "redis:KIND/N" is a remote slot (docs/remote.md): its
 * process is a slot proxy (`specgen worker --remote-slot DEVICE`) that
 * carries the requests through Redis to worker hosts. The pool treats it as
 * any worker, and after storing a result of one tells it so with a ping
 * naming the request, so it acknowledges the request in Redis only then. */
#define SG_POOL_REMOTE_PREFIX "redis:"
static inline bool sg_pool_device_remote(const char *device) {
  return device && strncmp(device, SG_POOL_REMOTE_PREFIX,
                           sizeof SG_POOL_REMOTE_PREFIX - 1) == 0;
}

/* What a request asks for. */
typedef enum sg_pool_kind {
  SG_POOL_COMPILE,  /* on a compile worker: the CPU stage only */
  SG_POOL_VALIDATE, /* on a device worker: compile (or cache hit) and run */
  SG_POOL_PROFILE,  /* on a device worker: compile (or cache hit), profile */
  SG_POOL_KIND__COUNT
} sg_pool_kind;

/* "compile", "validate", "profile". */
const char *sg_pool_kind_name(sg_pool_kind k);

typedef struct sg_pool_opts {
  const char *program;         /* the specgen executable to run as workers */
  const char *const *devices;  /* "cpu:0", "cuda:3": one device slot each */
  size_t n_devices;            /* >= 1 */
  int compile_workers;         /* >= 1 */
  const char *build_cache;     /* shared --build-cache directory (required) */
  const char *work_dir;        /* --work-dir of every worker; NULL: $TMPDIR */
  const char *log_path;        /* workers' stderr appended here; NULL: ours */
  /* A request is declared hung when no reply for it came for its own
   * timeout (sg_pool_request.eval_timeout, or SG_EVAL_TIMEOUT_S) plus this
   * grace; then its worker is killed and restarted. Default 30. */
  double hang_grace_s;
  int max_restarts;            /* in a row, per slot; default 5 */
  double restart_backoff_s;    /* first delay, doubled each time; 0.1 */
  /* Extra environment for the workers ("NAME=value"), e.g. for tests. */
  const char *const *env;
  size_t n_env;
  /* Extra environment for the remote slots' proxies only (over env): the
   * Redis URL, which no other worker (nor a candidate) may see. */
  const char *const *remote_env;
  size_t n_remote_env;
  /* The workers' compile stage limit (the evaluator's, 60 s). Until its
   * "compiled" reply a request is hung after the larger of this and its
   * eval_timeout, plus hang_grace_s; after it, after eval_timeout plus the grace.
   * A worker that says no hello within this plus the grace is hung too. */
  double compile_limit_s;
} sg_pool_opts;

/* program NULL, no devices, compile_workers 1, hang_grace_s 30,
 * max_restarts 5, restart_backoff_s 0.1, compile_limit_s 60. */
void sg_pool_opts_default(sg_pool_opts *o);

/* One evaluation request. Strings are copied by sg_pool_submit. */
typedef struct sg_pool_request {
  uint64_t ticket;          /* the caller's id, unique while live (> 0) */
  sg_pool_kind kind;
  int slot;                 /* device slot for validate/profile (0-based);
                               ignored for compile (the least loaded compile
                               worker takes it) */
  const char *task;         /* a task name or directory, as the worker
                               understands it */
  const json_t *task_files; /* NULL, or the task's files (the protocol's
                               "task_files"), referenced while queued */
  const char *source;
  size_t source_len;
  unsigned long long seed;  /* 0: the evaluator's default */
  int trials, runs;         /* 0: default */
  int warmups;              /* -1: default */
  double eval_timeout;      /* device stage; 0: SG_EVAL_TIMEOUT_S */
} sg_pool_request;

typedef struct sg_pool_callbacks {
  void *data;
  /* A device worker began the request (its "started" reply): the device
   * stage's real start time, for the store. May be NULL. */
  void (*on_started)(sg_pool *p, void *data, uint64_t ticket);
  /* The request's one result (borrowed for the call). For compile requests
   * status is ok, compile_error, rejected or infra_error. */
  void (*on_result)(sg_pool *p, void *data, uint64_t ticket,
                    const sg_eval_result *r);
  /* Something happened to a worker, for the log and the progress line:
   * what is "started", "restarted", "hung", "died" or "given_up"; slot is
   * the device slot, or -1 - i for compile worker i. May be NULL. */
  void (*on_worker)(sg_pool *p, void *data, int slot, const char *what,
                    const char *message);
  /* A device slot takes an evaluation (busy: called just before the
   * request is written to its worker, so a KV store sharing the device can
   * make room first) or has none any more (its result came, it was
   * aborted, or its worker died). Pairs exactly per slot, except that none
   * follows sg_pool_close. The one callback that may come from inside
   * sg_pool_submit (which writes at once to an idle worker): it must not
   * call the pool. May be NULL. */
  void (*on_device)(sg_pool *p, void *data, int slot, bool busy);
} sg_pool_callbacks;

/* Spawns every worker (their hello arrives later; requests submitted before
 * it wait in the pool). Errors: SG_EINVAL for bad options, SG_EIO when a
 * process cannot be spawned (naming the program) or the log cannot be
 * opened. After an SG_EIO the processes already spawned are being killed
 * and their handles closed: run the loop until it returns before closing
 * it (no callback is called). Ignores SIGPIPE in this process (a worker
 * that dies leaves a pipe without a reader; the write error is handled). */
int sg_pool_new(uv_loop_t *loop, const sg_pool_opts *opts,
                const sg_pool_callbacks *cb, sg_pool **out, sg_err *err);

/* Sends a request to its worker. SG_EINVAL for a bad request (a slot out of
 * range, a ticket in use, a field the worker would refuse: the request is
 * checked with the protocol's own parser), SG_ESTATE for a slot given up or
 * a pool closing, SG_EFULL beyond SG_POOL_PENDING_MAX pending requests.
 * Each worker is sent one request at a time; the others wait in the pool. */
int sg_pool_submit(sg_pool *p, const sg_pool_request *r, sg_err *err);

#define SG_POOL_PENDING_MAX 65536

/* Withdraws a request: its worker is told to abort it and no result callback
 * follows for this ticket. Unknown tickets are ignored. */
void sg_pool_abort(sg_pool *p, uint64_t ticket);

/* Requests submitted and not yet reported, in all slots. */
size_t sg_pool_pending(const sg_pool *p);

typedef struct sg_pool_stats {
  uint64_t submitted;
  uint64_t completed;         /* results delivered, of any status */
  uint64_t aborted;           /* withdrawn with sg_pool_abort */
  uint64_t restarts;          /* worker processes restarted */
  uint64_t lost;              /* requests reported as infra_error because
                                 their worker died or hung */
  int slots_given_up;
} sg_pool_stats;

void sg_pool_stats_get(const sg_pool *p, sg_pool_stats *st);

/* The pid of a slot's current worker (device slot >= 0, compile worker
 * -1 - i), 0 when none runs: for tests that kill one. */
long sg_pool_worker_pid(const sg_pool *p, int slot);

/* Takes device slot out of service for good (the caller's scheduler gave
 * it up; why says why): no restart follows, its process is asked to shut
 * down, later submits to it are refused (SG_ESTATE), and a request it
 * still held gets an infra_error result (from the loop, as always).
 * Without it a slot the scheduler gave up would still be restarted, and a
 * remote slot's proxy kept on. Unknown slots are ignored. */
void sg_pool_retire(sg_pool *p, int slot, const char *why);

/* Asks every worker to shut down (requests in flight are aborted: no more
 * callbacks), closes the pipes and, once the workers exited or after
 * timeout_s, kills what is left; the pool is freed by the loop, so run the
 * loop (uv_run) afterwards until it returns. NULL is fine. */
void sg_pool_close(sg_pool *p, double timeout_s);

#endif
