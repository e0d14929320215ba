/* sg_worker.h: the worker process's loop (`specgen worker`, docs/protocol.md).
 *
 * A worker owns one device (or, with compile_only, none: it only compiles,
 * into the build cache) and serves requests read as JSON lines from
 * in_fd, writing replies as JSON lines to out_fd (sg_worker_proto.h); logs go
 * to stderr. It runs one evaluation at a time, in a long-lived forked
 * process of its own (sg_worker_eval.h; the sandbox forks the candidates
 * from there), while it keeps reading requests, so an abort, a ping or a
 * new request is answered while an evaluation runs. Requests wait in a FIFO
 * queue of at most queue_cap.
 */
#ifndef SG_WORKER_H
#define SG_WORKER_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sg_worker_config {
  const char *device;      /* "cpu:N" or "cuda:N"; NULL with compile_only */
  int in_fd, out_fd;       /* requests in, replies out */
  const char *version;     /* specgen's version, for the hello reply */
  const char *scratch_root;/* where per-request scratch goes; NULL: $TMPDIR */
  size_t queue_cap;        /* 0: SG_WORKER_QUEUE_DEFAULT */
  /* A compile worker holds no device: it serves compile requests for every
   * evaluator this build has (its hello says device "compile") and refuses
   * validate and profile. */
  bool compile_only;
  /* The build cache shared by the workers of a host (sg_build_cache.h);
   * NULL: none. A validate or profile looks it up before compiling and
   * stores what it compiled; compile requests need it. */
  const char *build_cache;
} sg_worker_config;

#define SG_WORKER_QUEUE_DEFAULT 256

/* Checks a device name: "cpu:N" (N a core this process may use) or
 * "cuda:N". Fills *kind with "cpu" or "cuda" (static strings). */
int sg_worker_device_check(const char *device, const char **kind, sg_err *err);

/* Serves until a shutdown request, the end of in_fd or a closed out_fd.
 * Returns 0 then; negative when the worker could not start (bad device, a
 * device given with compile_only, no scratch directory, a build cache that
 * cannot be created) or its input failed. */
int sg_worker_serve(const sg_worker_config *cfg, sg_err *err);

#endif
