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
#include "runtime/sg_pool.h"

#include <stdbool.h>
#include <stddef.h>

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
} sg_remote_worker_opts;

/* Serves until SIGTERM or SIGINT. Returns 0 then, negative when it could not
 * start (a bad URL, run id or device). */
int sg_remote_worker_serve(const sg_remote_worker_opts *o, sg_err *err);

typedef struct sg_remote_proxy_opts {
  const char *url;
  const char *run_id;
  const char *device;       /* redis:KIND/N */
  const char *version;
} sg_remote_proxy_opts;

/* Serves the worker protocol on stdin/stdout until shutdown or the end of
 * stdin. Negative when it could not start. */
int sg_remote_proxy_serve(const sg_remote_proxy_opts *o, sg_err *err);

#endif
