/* sg_sandbox.h: running untrusted candidate code in a limited child process.
 *
 * The child gets rlimits (CPU seconds, address space, file size, processes),
 * its own process group (killed whole at the wall-clock timeout), its own
 * scratch directory as working directory, stdin on /dev/null, stdout and
 * stderr captured and capped, and no network (a new network namespace where
 * the kernel allows it; the outcome says when it could not). A separate pipe
 * carries the child's structured result, so a candidate that prints, closes
 * its stdout or exits early cannot forge or hide one.
 */
#ifndef SG_SANDBOX_H
#define SG_SANDBOX_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sg_sandbox_limits {
  double wall_s;               /* 0: no timeout */
  double cpu_s;                /* RLIMIT_CPU; 0: none */
  uint64_t address_space_bytes;/* RLIMIT_AS; 0: none (CUDA needs none) */
  uint64_t file_size_bytes;    /* RLIMIT_FSIZE; 0: none */
  int max_processes;           /* RLIMIT_NPROC; 0: none */
  size_t output_cap_bytes;     /* stdout and stderr are each cut here */
  size_t result_cap_bytes;     /* the result pipe is cut here */
  bool isolate_network;        /* try a new network namespace */
  const char *work_dir;        /* the child's working directory, or NULL */
  int pin_cpu;                 /* core to pin the child to; -1: none */
  /* A seccomp filter, installed last, that kills the child (SIGSYS) if it
   * creates a process (fork, vfork, clone without CLONE_THREAD), runs a
   * program (execve; sg_sandbox_exec's own exec excepted), opens a socket
   * other than AF_UNIX, or signals another process. RLIMIT_NPROC does not
   * bind root; this does. Threads stay allowed (CUDA needs them). */
  bool forbid_spawn;
} sg_sandbox_limits;

/* Sensible defaults for a CPU candidate (docs/eval.md lists them). */
void sg_sandbox_limits_default(sg_sandbox_limits *lim);

typedef enum sg_sandbox_end {
  SG_SANDBOX_EXITED,
  SG_SANDBOX_SIGNALED,
  SG_SANDBOX_TIMED_OUT,
} sg_sandbox_end;

typedef struct sg_sandbox_outcome {
  sg_sandbox_end end;
  int exit_code;         /* when EXITED */
  int signal;            /* when SIGNALED (SIGXCPU for the CPU limit) */
  double wall_s, cpu_s;
  char *out, *err;       /* captured, capped, owned */
  bool out_truncated, err_truncated;
  char *result;          /* bytes written to the result fd, owned; "" if none */
  size_t result_len;
  bool network_isolated;
  char *note;            /* e.g. why network isolation was not applied; owned */
} sg_sandbox_outcome;

void sg_sandbox_outcome_free(sg_sandbox_outcome *o);

/* Runs fn(arg, result_fd) in a sandboxed child (forked, not exec'd: call it
 * before any threads or device contexts exist in this process). The child's
 * exit code is fn's return value. Returns 0 when the child ran and ended,
 * however it ended; negative if it could not be started. */
typedef int (*sg_sandbox_fn)(void *arg, int result_fd);
int sg_sandbox_run(const sg_sandbox_limits *lim, sg_sandbox_fn fn, void *arg,
                   sg_sandbox_outcome *out, sg_err *err);

/* Runs a program in a sandboxed child; argv[0] is looked up in PATH. The
 * child finds its result fd number in the environment variable
 * SG_RESULT_FD. */
int sg_sandbox_exec(const sg_sandbox_limits *lim, char *const argv[],
                    sg_sandbox_outcome *out, sg_err *err);

#endif
