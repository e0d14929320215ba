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

/* SG_ASAN: built with AddressSanitizer. Its shadow memory is terabytes of
 * address space, so RLIMIT_AS cannot bound a sanitized program from outside:
 * a sanitized build passes the bound in SG_SANDBOX_ASAN_AS_VAR (bytes) to the
 * programs it execs, and a sanitized program of ours that runs untrusted
 * code (the cpu evaluator's worker) sets RLIMIT_AS itself, to what it holds
 * plus that bound. */
#if defined(__SANITIZE_ADDRESS__)
#define SG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SG_ASAN 1
#endif
#endif
#define SG_SANDBOX_ASAN_AS_VAR "SG_ASAN_ADDRESS_SPACE"

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
  /* A seccomp filter (libseccomp; sg_sandbox_filter.h), installed last,
   * that kills the child (SIGSYS) if it creates a process (fork, vfork,
   * clone without CLONE_THREAD), runs a program (execve; sg_sandbox_exec's
   * own exec excepted), opens a socket other than AF_UNIX, signals another
   * process, traces or reads another, or changes namespaces. RLIMIT_NPROC
   * does not bind root; this does. Threads stay allowed (CUDA needs them);
   * a program that needs less installs a narrower filter of its own (the
   * cpu evaluator's candidate: sg_sandbox_filter_compute). */
  bool forbid_spawn;
  /* Full isolation (off by default; the cpu evaluator turns it on): new
   * user, mount, PID and IPC namespaces (and network, per isolate_network),
   * the whole file system read-only but work_dir, a fresh /proc that shows
   * only the child's own processes, and the child running as an
   * unprivileged user (nobody; or the caller's own user where the caller is
   * not root) with no capabilities. Each part the kernel refuses is left
   * out and said so in the outcome; the child runs anyway. */
  bool isolate;
  /* Exec mode: the program's environment. NULL: this process's environment;
   * else exactly these NAME=value strings (NULL-terminated), plus
   * SG_RESULT_FD. */
  char *const *env;
  /* Descriptors handed to the child as 5, 6, ... (in this order); every
   * other descriptor of this process is closed in the child. */
  int pass_fds[6];
  int npass_fds;
  /* The program to run (a path) when it is not argv[0] looked up in PATH,
   * so argv[0] can be a plain name; NULL: argv[0]. */
  const char *program;
  /* The run ends when the program has written a result and closed its
   * result descriptor (EOF on the result pipe, no process holding it): the
   * outcome is returned then, and the program is left to end in order; it
   * is reaped, its group killed, once it has exited (sg_sandbox_reap). For
   * a program whose result is final once written and whose end is slow (a
   * CUDA judge stops two servers and tears down its context: 0.1-0.4 s). */
  bool end_at_result;
} sg_sandbox_limits;

/* The descriptor number the child finds pass_fds[i] at. */
#define SG_SANDBOX_PASS_FD(i) (5 + (i))

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
  /* What `isolate` achieved (all false when it was not asked for). */
  bool user_isolated;   /* a new user namespace */
  bool mount_isolated;  /* a new mount namespace: read-only but work_dir */
  bool pid_isolated;    /* a new PID namespace with its own /proc */
  bool ipc_isolated;    /* a new IPC namespace */
  bool unprivileged;    /* the child ran as a non-root user, no capabilities */
  char *note;            /* e.g. why network isolation was not applied; owned */
  /* end_at_result ended the run: the program had closed its result and is
   * left to end (sg_sandbox_reap); end is EXITED with code 0 and cpu_s is 0
   * (not known yet). */
  bool ended_at_result;
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

/* ---- a sandboxed program to talk to --------------------------------------- */

/* A child started by sg_sandbox_spawn, running while the caller talks to it
 * (through pass_fds). The caller must call sg_sandbox_finish. */
typedef struct sg_sandbox sg_sandbox;

/* Starts argv in a sandboxed child, as sg_sandbox_exec does, and returns
 * once its setup is done (the program is starting). When self is true the
 * program run is this process's own executable (/proc/self/exe) with
 * argv[0] as its name. */
int sg_sandbox_spawn(const sg_sandbox_limits *lim, char *const argv[], bool self,
                     sg_sandbox **out, sg_err *err);

/* The same in two steps, so that several children set up side by side:
 * sg_sandbox_spawn_begin forks the child and returns at once (its setup
 * goes on); sg_sandbox_spawn_wait waits until the setup of each of s[0..n)
 * (n at most SG_SANDBOX_SPAWN_MAX) is done, answering their requests as
 * they come. It returns 0 when all succeeded, else the first failure's
 * error, with its index in *failed. Either way each handle stays the
 * caller's, to end with sg_sandbox_finish. */
#define SG_SANDBOX_SPAWN_MAX 8
int sg_sandbox_spawn_begin(const sg_sandbox_limits *lim, char *const argv[], bool self,
                           sg_sandbox **out, sg_err *err);
int sg_sandbox_spawn_wait(sg_sandbox *const s[], size_t n, size_t *failed, sg_err *err);

/* The process that runs the program, as this process numbers it (for
 * clock_getcpuclockid). */
int sg_sandbox_pid(const sg_sandbox *s);

/* Waits until fd is readable, the child ends, or timeout_s (< 0: no limit)
 * passes, draining the child's stdout and stderr meanwhile (so a chatty
 * child never blocks). Returns 1 when fd is readable, 0 at the timeout, 2
 * when the child has ended (or, with end_at_result, closed its result). */
int sg_sandbox_wait(sg_sandbox *s, int fd, double timeout_s);

/* Kills the child's whole process group (whatever it is doing), reaps it
 * and fills *out; frees s. timed_out marks the outcome as a timeout. With
 * end_at_result, a child that closed its result is left to end instead
 * (sg_sandbox_reap). Returns 0, or negative when the child's setup had
 * failed (err says why). */
int sg_sandbox_finish(sg_sandbox *s, bool timed_out, sg_sandbox_outcome *out,
                   sg_err *err);

/* Waits up to wait_s for the programs that runs ended at their result left
 * to end (end_at_result), reaping each once it has exited and killing what
 * is left of its group; those still running after wait_s are killed and
 * get 2 s more. wait_s <= 0: reaps those already gone, waits for and kills
 * none. Returns how many are left. A caller whose next run must not overlap
 * their ends (timing on the same device, a profile) calls it first. */
int sg_sandbox_reap(double wait_s);

/* Sends SIGKILL to the child's whole process group without waiting (the
 * caller ends several children at once, then finishes each: their exits
 * overlap). sg_sandbox_finish kills as well. */
void sg_sandbox_kill(sg_sandbox *s);

/* Aborting what runs, for a process that evaluates requests one after
 * another and must stop one without ending itself (a worker's evaluation
 * process; the children it keeps, runners started ahead, must live on).
 * After sg_sandbox_abort_install(sig), signal sig kills the process group
 * of every live child not marked kept (sg_sandbox_keep) and makes every
 * later start fail (SG_ESTATE, "aborted"), until sg_sandbox_abort_reset:
 * whatever waits on a child sees it end, and the evaluation returns at
 * once. The signal's handler restarts interrupted system calls
 * (SA_RESTART). */
void sg_sandbox_abort_install(int sig); /* children started after it count */
void sg_sandbox_abort_reset(void);
/* Whether sig came since the last reset. */
bool sg_sandbox_aborted(void);
/* Marks s as kept (an abort spares it) or not. */
void sg_sandbox_keep(sg_sandbox *s, bool kept);

/* Replaces every byte of text (len bytes) that is not printable ASCII,
 * newline or tab with '?', in place, so what a child printed can go into a
 * message, JSON and a terminal unchanged. */
void sg_sandbox_sanitize(char *text, size_t len);

#endif
