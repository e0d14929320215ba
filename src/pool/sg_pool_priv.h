/* sg_pool_priv.h: what the pool's files share (sg_pool.c: requests, the
 * workers' timers, failures and the public calls; sg_pool_proc.c: spawning
 * worker processes and reading their replies). Not a public header: only
 * src/pool/sg_pool*.c include it. sg_pool.c's header comment says how
 * the pool works. */
#ifndef SG_POOL_PRIV_H
#define SG_POOL_PRIV_H

#include "pool/sg_pool.h"

#include "common/sg_buf.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* How long "the output ended" waits for "the process exited", and back. */
#define REAP_WAIT_S 5.0
#define READ_CHUNK 65536
#define HASH_BUCKETS 1024
#define REASON_LINE_MAX 200 /* bytes of a bad line quoted in a message */

typedef enum phase { PH_QUEUED, PH_SENT, PH_STARTED, PH_COMPILED } phase;

typedef struct worker worker;
typedef struct proc proc;

typedef struct preq {
  uint64_t ticket;
  sg_pool_kind kind;
  char *task;
  json_t *task_files; /* NULL, or referenced */
  char *source;
  size_t source_len;
  unsigned long long seed;
  int trials, runs, warmups;
  double eval_timeout;
  worker *w;
  phase ph;
  double t_phase;   /* when ph began (monotonic s) */
  bool aborted;     /* withdrawn while in flight: its result is swallowed */
  char *wire_id;    /* while in flight */
  struct preq *qprev, *qnext; /* the worker's queue */
  struct preq *hprev, *hnext; /* the ticket table's chain */
} preq;

typedef enum wstate {
  W_STARTING, /* a process runs; no hello yet */
  W_READY,    /* hello received */
  W_BACKOFF,  /* no process; one starts at restart_at */
  W_GIVEN_UP,
  W_CLOSED    /* the pool is closing */
} wstate;

struct proc {
  sg_pool *p;
  worker *w;        /* NULL once detached */
  uv_process_t process;
  uv_pipe_t in, out;
  long pid;
  uint64_t gen;
  sg_buf line;      /* bytes read, not yet a line */
  char rd[READ_CHUNK];
  bool exited;
  int64_t exit_status;
  int term_signal;
  bool eof;         /* end of its stdout (or a read error) */
  bool write_failed;
  char write_err[128];
  bool in_closed, out_closed, process_closed;
  int open_handles;
  double t_noticed; /* when eof, exit or a write error was first seen */
  proc *prev, *next; /* the pool's procs */
};

struct worker {
  sg_pool *p;
  int slot;         /* device slot, or -1 - i for compile worker i */
  char *name;       /* "worker cpu:0", "compile worker 0" */
  const char *device; /* NULL for a compile worker */
  wstate state;
  proc *pr;         /* the current incarnation; NULL in backoff */
  double t_spawn;
  double restart_at;
  int fails;        /* failures in a row without a completed request */
  char *last_failure;
  preq *inflight;
  bool told_busy;   /* on_device(busy) was called, not yet its idle */
  preq *qhead, *qtail;
  size_t nqueue;
  uv_timer_t timer;
};

struct sg_pool {
  uv_loop_t *loop;
  sg_pool_callbacks cb;
  /* options, copied */
  char *program;
  char *build_cache;
  char *work_dir;
  double hang_grace_s, restart_backoff_s, compile_limit_s;
  int max_restarts;
  char **env;       /* NULL: inherit ours */
  char **env_remote; /* the slot proxies' (env and remote_env); NULL: env */
  int log_fd;       /* -1: stderr inherited */
  worker *workers;  /* devices first, then compile workers */
  size_t n_dev, n_comp, n_workers;
  proc *procs;
  uint64_t gen;
  preq *table[HASH_BUCKETS];
  size_t pending;
  sg_pool_stats st;
  bool closing;
  uv_timer_t close_timer;
  bool close_timer_live;
  int open_handles;
};

void sg_pool_deliver(sg_pool *p, preq *q, const sg_eval_result *r,
                    const char *infra_msg);
void sg_pool_preq_free(preq *q);
void sg_pool_proc_close_out(proc *pr);
void sg_pool_proc_close_process(proc *pr);
void sg_pool_proc_retire(proc *pr);
void sg_pool_worker_arm(worker *w);
void sg_pool_worker_event(worker *w, const char *what, const char *msg);
void sg_pool_worker_fail(worker *w, const char *what, const char *reason);
void sg_pool_worker_pump(worker *w);
/* Tells the caller a device slot's busy state changed (on_device). */
void sg_pool_device_told(worker *w, bool busy);
void sg_pool_worker_spawn(worker *w);
/* Tells a slot proxy (docs/remote.md) that the result of its request wire
 * is stored, so it may acknowledge the request in Redis. */
void sg_pool_remote_stored(proc *pr, const char *wire);
int sg_pool_worker_spawn_proc(worker *w, sg_err *err);

#endif
