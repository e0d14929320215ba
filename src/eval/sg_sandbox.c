/* sg_sandbox.c: running untrusted candidate code in a limited child process.
 *
 * How it works. The parent opens four pipes (stdout, stderr, the result and a
 * private setup channel) and forks. The child makes itself a process group,
 * moves its pipes into place (stdin on /dev/null, every other descriptor
 * closed), tries to leave the network (a new network namespace: as root
 * unshare(CLONE_NEWNET) works; otherwise a user namespace is created first),
 * changes to its scratch directory, pins itself to a core, sets its rlimits,
 * and, last, installs a seccomp filter that forbids creating processes. It
 * then reports on the setup channel (whether the network is isolated, or why
 * setup failed) and runs the candidate code (a function, or a program).
 *
 * The parent polls the pipes and a pidfd of the child, cutting captured output
 * at its caps while it keeps draining (so a chatty child never blocks), until
 * the child ends or the wall-clock deadline passes; then it kills the whole
 * process group with SIGKILL and reaps the child.
 *
 * Why a seccomp filter: RLIMIT_NPROC counts processes per user and is not
 * enforced for root (CAP_SYS_RESOURCE / CAP_SYS_ADMIN), so a fork bomb run as
 * root would go through it. The filter is written by hand in classic BPF
 * (linux/filter.h, linux/seccomp.h): fork, vfork, clone without CLONE_THREAD,
 * execve and execveat, sockets other than AF_UNIX, and signals to any other
 * process kill the child with SIGSYS, whoever runs it. clone3 answers ENOSYS:
 * its flags sit in memory that BPF cannot read, and glibc then falls back to
 * clone, whose flags it can.
 *
 * What it must never do: let the child outlive the call, block on a child
 * that stops reading or writing, or trust anything the child wrote.
 */
#include "eval/sg_sandbox.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SG_ASAN 1
#endif
#endif

#if defined(__x86_64__)
#define SG_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SG_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* The child's result descriptor after setup (0, 1 and 2 are stdio). */
#define RESULT_FD 3
#define SETUP_FD 4

void sg_sandbox_limits_default(sg_sandbox_limits *lim) {
  memset(lim, 0, sizeof *lim);
  lim->wall_s = 60;
  lim->cpu_s = 60;
  lim->address_space_bytes = UINT64_C(4) << 30;
  lim->file_size_bytes = UINT64_C(16) << 20;
  lim->max_processes = 64;
  lim->output_cap_bytes = 64 * 1024;
  lim->result_cap_bytes = 4 * 1024 * 1024;
  lim->isolate_network = true;
  lim->work_dir = NULL;
  lim->pin_cpu = -1;
  lim->forbid_spawn = true;
}

void sg_sandbox_outcome_free(sg_sandbox_outcome *o) {
  if (!o)
    return;
  free(o->out);
  free(o->err);
  free(o->result);
  free(o->note);
  memset(o, 0, sizeof *o);
}

#ifdef SG_ASAN
/* LeakSanitizer's exit-time check clones a tracer without CLONE_THREAD, which
 * the seccomp filter kills; a sandboxed child that calls exit() would then
 * die of SIGSYS instead of exiting. Its leaks are not ours to report. */
static volatile int in_sandbox_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return in_sandbox_child; }
#endif

/* ---- the child ------------------------------------------------------------ */

/* What the child tells the parent on the setup channel, once. */
typedef struct setup_msg {
  int ok;               /* 1: setup done, the candidate starts */
  int net_isolated;
  char text[480];       /* the failure, or a note about the network */
} setup_msg;

static void write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    c += w;
    n -= (size_t)w;
  }
}

static _Noreturn void child_fail(setup_msg *m, const char *what, int e) {
  m->ok = 0;
  snprintf(m->text, sizeof m->text, "sandbox setup: %s: %s", what, strerror(e));
  write_all(SETUP_FD, m, sizeof *m);
  _exit(127);
}

#define BPF_STMT_(code, k) ((struct sock_filter)BPF_STMT((code), (k)))
#define BPF_JUMP_(code, k, jt, jf) ((struct sock_filter)BPF_JUMP((code), (k), (jt), (jf)))

/* Builds and installs the filter described at the top of the file.
 * allowed_exec is the one execve path pointer sg_sandbox_exec may pass (0:
 * none): the comparison is on the pointer, which only this child's memory
 * holds before the exec replaces it. */
static int install_seccomp(uint64_t allowed_exec) {
#ifndef SG_AUDIT_ARCH
  (void)allowed_exec;
  errno = ENOSYS;
  return -1;
#else
  const uint32_t self = (uint32_t)getpid();
  enum { MAXF = 64 };
  struct sock_filter f[MAXF];
  int n = 0;
#define EMIT(x) (f[n++] = (x))
  const uint32_t ret_kill = SECCOMP_RET_KILL_PROCESS;
  const uint32_t ret_allow = SECCOMP_RET_ALLOW;
  const uint32_t ret_enosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);
  /* Labels are resolved by index below; each check is "if nr == X jump". */
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SG_AUDIT_ARCH, 1, 0));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
  /* x32 system calls reach the same kernel functions by other numbers */
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
#endif
  /* straight kills */
  static const long killed[] = {
#ifdef SYS_fork
      SYS_fork,
#endif
#ifdef SYS_vfork
      SYS_vfork,
#endif
      SYS_execveat, SYS_ptrace, SYS_tkill, SYS_process_vm_writev,
      SYS_setns, SYS_unshare,
  };
  for (size_t i = 0; i < sizeof killed / sizeof *killed; i++) {
    EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)killed[i], 0, 1));
    EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  }
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_enosys));
  /* The argument checks below load args[0]'s low word (little-endian). */
  const uint32_t arg0 = offsetof(struct seccomp_data, args[0]);
  const uint32_t arg0_hi = arg0 + 4;
  /* clone: only threads */
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, arg0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_allow));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  /* socket: AF_UNIX only */
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, arg0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_allow));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  /* kill: only ourselves (pid 0, our pid, our group -pid) */
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 0, 6));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, arg0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, self, 2, 0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)-(int32_t)self, 1, 0));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_allow));
  /* tgkill (raise, abort): only our own thread group */
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 0, 4));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, arg0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_allow));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  /* execve: only the one sg_sandbox_exec makes, by its path pointer */
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 6));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, arg0));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)allowed_exec, 0, 3));
  EMIT(BPF_STMT_(BPF_LD | BPF_W | BPF_ABS, arg0_hi));
  EMIT(BPF_JUMP_(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(allowed_exec >> 32), 0, 1));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, allowed_exec ? ret_allow : ret_kill));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_kill));
  EMIT(BPF_STMT_(BPF_RET | BPF_K, ret_allow));
#undef EMIT
  if (n > MAXF)
    abort(); /* the array above overflowed: a programming error */
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
#endif
}

static void set_limit(setup_msg *m, int resource, const char *name, uint64_t v) {
  struct rlimit rl = {(rlim_t)v, (rlim_t)v};
  if (setrlimit(resource, &rl) != 0)
    child_fail(m, name, errno);
}

/* Current virtual size of this process, from /proc/self/statm (pages). */
static uint64_t current_vm_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "re");
  unsigned long long pages = 0;
  if (f) {
    if (fscanf(f, "%llu", &pages) != 1)
      pages = 0;
    fclose(f);
  }
  return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Everything between fork and the candidate. fds: the child ends of the
 * stdout, stderr, result and setup pipes. */
static void child_setup(const sg_sandbox_limits *lim, int out_w, int err_w,
                        int res_w, int setup_w, uint64_t allowed_exec) {
  setup_msg m;
  memset(&m, 0, sizeof m);
  setpgid(0, 0);
  /* die with the parent */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* Default dispositions: a crash must end the child with its own signal,
   * whatever handlers this process had (AddressSanitizer installs some). */
  static const int defaults[] = {SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                                 SIGABRT, SIGALRM, SIGXCPU, SIGXFSZ, SIGSYS};
  for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
    signal(defaults[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  /* Descriptors: 0 /dev/null, 1 out, 2 err, 3 result, 4 setup; nothing else.
   * Move every source above 4 first, so the dup2s below never clobber one. */
  int fds[4] = {out_w, err_w, res_w, setup_w};
  for (int i = 0; i < 4; i++)
    if (fds[i] <= SETUP_FD) {
      int moved = fcntl(fds[i], F_DUPFD, SETUP_FD + 1);
      if (moved < 0)
        _exit(127);
      fds[i] = moved;
    }
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0)
    _exit(127);
  for (int i = 0; i < 4; i++)
    if (dup2(fds[i], i + 1) < 0)
      _exit(127);
  /* close_range(5, ~0U, 0); a loop where the call is missing */
  if (syscall(SYS_close_range, SETUP_FD + 1, ~0U, 0) != 0) {
    long maxfd = sysconf(_SC_OPEN_MAX);
    for (long fd = SETUP_FD + 1; fd < maxfd && fd < 65536; fd++)
      close((int)fd);
  }
  fcntl(SETUP_FD, F_SETFD, FD_CLOEXEC);

  if (lim->isolate_network) {
    if (unshare(CLONE_NEWNET) == 0) {
      m.net_isolated = 1;
    } else {
      int e1 = errno;
      if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
        m.net_isolated = 1;
      } else {
        int e2 = errno;
        snprintf(m.text, sizeof m.text,
                 "network not isolated: unshare(CLONE_NEWNET): %s; "
                 "unshare(CLONE_NEWUSER|CLONE_NEWNET): %s",
                 strerror(e1), strerror(e2));
      }
    }
  }
  if (lim->work_dir && chdir(lim->work_dir) != 0)
    child_fail(&m, lim->work_dir, errno);
  if (lim->pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(lim->pin_cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      child_fail(&m, "sched_setaffinity", errno);
  }
  set_limit(&m, RLIMIT_CORE, "RLIMIT_CORE", 0);
  if (lim->cpu_s > 0) {
    /* soft at the limit (SIGXCPU), hard a second later (SIGKILL) */
    struct rlimit rl = {(rlim_t)ceil(lim->cpu_s), (rlim_t)ceil(lim->cpu_s) + 1};
    if (setrlimit(RLIMIT_CPU, &rl) != 0)
      child_fail(&m, "RLIMIT_CPU", errno);
  }
  if (lim->address_space_bytes > 0) {
    uint64_t as = lim->address_space_bytes;
#ifdef SG_ASAN
    /* AddressSanitizer has reserved terabytes of shadow already: the limit
     * is counted on top of what the process holds at this point. */
    as += current_vm_bytes();
#else
    (void)current_vm_bytes;
#endif
    set_limit(&m, RLIMIT_AS, "RLIMIT_AS", as);
  }
  if (lim->file_size_bytes > 0)
    set_limit(&m, RLIMIT_FSIZE, "RLIMIT_FSIZE", lim->file_size_bytes);
  if (lim->max_processes > 0)
    set_limit(&m, RLIMIT_NPROC, "RLIMIT_NPROC", (uint64_t)lim->max_processes);
  if (lim->forbid_spawn && install_seccomp(allowed_exec) != 0)
    child_fail(&m, "seccomp filter", errno);
#ifdef SG_ASAN
  in_sandbox_child = 1;
#endif
  m.ok = 1;
  write_all(SETUP_FD, &m, sizeof m);
}

/* ---- the parent ------------------------------------------------------------- */

typedef struct pipe_reader {
  int fd;       /* -1 once closed */
  sg_buf *buf;
} pipe_reader;

/* Reads what is there; returns false at EOF or error (fd closed). */
static bool drain(pipe_reader *p) {
  char chunk[16384];
  for (;;) {
    ssize_t r = read(p->fd, chunk, sizeof chunk);
    if (r > 0) {
      sg_buf_append(p->buf, chunk, (size_t)r);
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    close(p->fd);
    p->fd = -1;
    return false;
  }
}

static int make_pipe(int p[2], sg_err *err) {
  if (pipe2(p, O_CLOEXEC) != 0)
    return sg_err_set(err, SG_EIO, "sandbox: pipe: %s", strerror(errno));
  /* the parent's end never blocks */
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  return 0;
}

typedef struct spawn_spec {
  sg_sandbox_fn fn;
  void *arg;
  const char *path;     /* exec mode: resolved program */
  char *const *argv;
  char **envp;
} spawn_spec;

static int run_child(const sg_sandbox_limits *lim, const spawn_spec *spec,
                     sg_sandbox_outcome *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  int p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_res[2] = {-1, -1},
      p_setup[2] = {-1, -1};
  int rc = 0;
  if ((rc = make_pipe(p_out, err)) || (rc = make_pipe(p_err, err)) ||
      (rc = make_pipe(p_res, err)) || (rc = make_pipe(p_setup, err))) {
    int *all[] = {p_out, p_err, p_res, p_setup};
    for (int i = 0; i < 4; i++)
      for (int k = 0; k < 2; k++)
        if (all[i][k] >= 0)
          close(all[i][k]);
    return rc;
  }
  fflush(NULL); /* or buffered parent output is written twice */
  double t0 = sg_clock_now_s();
  pid_t pid = fork();
  if (pid < 0) {
    rc = sg_err_set(err, SG_ECHILD, "sandbox: fork: %s", strerror(errno));
    int *all[] = {p_out, p_err, p_res, p_setup};
    for (int i = 0; i < 4; i++)
      for (int k = 0; k < 2; k++)
        close(all[i][k]);
    return rc;
  }
  if (pid == 0) {
    child_setup(lim, p_out[1], p_err[1], p_res[1], p_setup[1],
                spec->fn ? 0 : (uint64_t)(uintptr_t)spec->path);
    if (spec->fn) {
      close(SETUP_FD);
      int code = spec->fn(spec->arg, RESULT_FD);
      fflush(NULL);
      _exit(code & 0xff);
    }
    execve(spec->path, spec->argv, spec->envp);
    setup_msg m;
    memset(&m, 0, sizeof m);
    snprintf(m.text, sizeof m.text, "sandbox: cannot run %s: %s", spec->path,
             strerror(errno));
    write_all(SETUP_FD, &m, sizeof m);
    _exit(127);
  }
  setpgid(pid, pid); /* also here: no window where the group does not exist */
  close(p_out[1]);
  close(p_err[1]);
  close(p_res[1]);
  close(p_setup[1]);

  sg_buf bout, berr, bres, bsetup;
  sg_buf_init(&bout, lim->output_cap_bytes ? lim->output_cap_bytes : 65536);
  sg_buf_init(&berr, lim->output_cap_bytes ? lim->output_cap_bytes : 65536);
  sg_buf_init(&bres, lim->result_cap_bytes ? lim->result_cap_bytes : (1u << 20));
  sg_buf_init(&bsetup, 2 * sizeof(setup_msg));
  pipe_reader pr[4] = {{p_out[0], &bout}, {p_err[0], &berr}, {p_res[0], &bres},
                       {p_setup[0], &bsetup}};
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  double deadline = lim->wall_s > 0 ? t0 + lim->wall_s : INFINITY;
  bool exited = false, timed_out = false;

  while (!exited) {
    struct pollfd pfd[5];
    int np = 0, map[5];
    for (int i = 0; i < 4; i++)
      if (pr[i].fd >= 0) {
        pfd[np] = (struct pollfd){.fd = pr[i].fd, .events = POLLIN};
        map[np++] = i;
      }
    if (pidfd >= 0) {
      pfd[np] = (struct pollfd){.fd = pidfd, .events = POLLIN};
      map[np++] = -1;
    }
    double now = sg_clock_now_s();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    /* without a pidfd, look at the child every 10 ms */
    double wait_s = pidfd >= 0 ? deadline - now : fmin(deadline - now, 0.01);
    int ms = isinf(wait_s) ? -1 : (int)ceil(fmin(wait_s, 3600.0) * 1000.0);
    int pr_rc = poll(pfd, (nfds_t)np, ms);
    if (pr_rc < 0 && errno != EINTR) {
      rc = sg_err_set(err, SG_EIO, "sandbox: poll: %s", strerror(errno));
      timed_out = true; /* kill it below; the error is returned */
      break;
    }
    for (int i = 0; pr_rc > 0 && i < np; i++)
      if (map[i] >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
        drain(&pr[map[i]]);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == pid)
      exited = true;
  }
  /* Whatever happened, nothing of the group survives the call. The child is
   * still a zombie here (WNOWAIT), so its group id cannot be reused yet. */
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
    ;
  out->wall_s = sg_clock_now_s() - t0;
  out->cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  /* What is left in the pipes; bounded, since the group is dead (a writer
   * that escaped it would only cost this loop's 200 ms). */
  double drain_end = sg_clock_now_s() + 0.2;
  for (;;) {
    struct pollfd pfd[4];
    int np = 0, map[4];
    for (int i = 0; i < 4; i++)
      if (pr[i].fd >= 0) {
        pfd[np] = (struct pollfd){.fd = pr[i].fd, .events = POLLIN};
        map[np++] = i;
      }
    double left = drain_end - sg_clock_now_s();
    if (np == 0 || left <= 0)
      break;
    if (poll(pfd, (nfds_t)np, (int)ceil(left * 1000)) <= 0)
      break;
    for (int i = 0; i < np; i++)
      if (pfd[i].revents)
        drain(&pr[map[i]]);
  }
  for (int i = 0; i < 4; i++)
    if (pr[i].fd >= 0)
      close(pr[i].fd);
  if (pidfd >= 0)
    close(pidfd);

  if (timed_out) {
    out->end = SG_SANDBOX_TIMED_OUT;
  } else if (WIFSIGNALED(status)) {
    out->end = SG_SANDBOX_SIGNALED;
    out->signal = WTERMSIG(status);
  } else {
    out->end = SG_SANDBOX_EXITED;
    out->exit_code = WEXITSTATUS(status);
  }
  out->out_truncated = bout.truncated;
  out->err_truncated = berr.truncated;
  out->out = sg_buf_steal(&bout);
  out->err = sg_buf_steal(&berr);
  out->result_len = bres.len;
  out->result = sg_buf_steal(&bres);

  setup_msg m;
  memset(&m, 0, sizeof m);
  bool got_setup = bsetup.len >= sizeof m;
  if (got_setup)
    memcpy(&m, bsetup.data, sizeof m);
  m.text[sizeof m.text - 1] = '\0';
  /* exec mode: a second message means the exec itself failed */
  bool exec_failed = bsetup.len >= 2 * sizeof m;
  if (exec_failed) {
    setup_msg m2;
    memcpy(&m2, bsetup.data + sizeof m, sizeof m2);
    m2.text[sizeof m2.text - 1] = '\0';
    if (rc == 0)
      rc = sg_err_set(err, SG_ECHILD, "%s", m2.text);
  }
  sg_buf_free(&bsetup);
  out->network_isolated = got_setup && m.ok && m.net_isolated;
  if (got_setup && m.text[0] && m.ok)
    out->note = sg_strdup(m.text);
  if (rc == 0 && got_setup && !m.ok)
    rc = sg_err_set(err, SG_ECHILD, "%s", m.text);
  if (rc == 0 && !got_setup && !timed_out)
    rc = sg_err_set(err, SG_ECHILD,
                    "sandbox: the child ended before its setup was done");
  if (rc == 0 && !got_setup && timed_out)
    rc = sg_err_set(err, SG_ETIMEDOUT,
                    "sandbox: the child's setup did not finish in %.1f s",
                    lim->wall_s);
  if (rc) {
    sg_sandbox_outcome_free(out);
    return rc;
  }
  return 0;
}

int sg_sandbox_run(const sg_sandbox_limits *lim, sg_sandbox_fn fn, void *arg,
                   sg_sandbox_outcome *out, sg_err *err) {
  spawn_spec spec = {.fn = fn, .arg = arg};
  return run_child(lim, &spec, out, err);
}

/* argv0 looked up in PATH, as execvp would; the caller frees it. */
static char *resolve_program(const char *argv0) {
  if (strchr(argv0, '/'))
    return access(argv0, X_OK) == 0 ? sg_strdup(argv0) : NULL;
  const char *path = getenv("PATH");
  if (!path || !path[0])
    path = "/usr/local/bin:/usr/bin:/bin";
  const char *p = path;
  while (*p) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    char *cand = len ? sg_asprintf("%.*s/%s", (int)len, p, argv0)
                     : sg_asprintf("./%s", argv0);
    struct stat st;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
      return cand;
    free(cand);
    if (!colon)
      break;
    p = colon + 1;
  }
  return NULL;
}

extern char **environ;

int sg_sandbox_exec(const sg_sandbox_limits *lim, char *const argv[],
                    sg_sandbox_outcome *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  if (!argv || !argv[0])
    return sg_err_set(err, SG_EINVAL, "sandbox: no program to run");
  char *path = resolve_program(argv[0]);
  if (!path)
    return sg_err_set(err, SG_ENOENT, "sandbox: %s: program not found in PATH",
                      argv[0]);
  /* The environment, with SG_RESULT_FD set, built before the fork (no
   * allocation between fork and exec). */
  size_t n = 0;
  while (environ && environ[n])
    n++;
  char **envp = sg_calloc(n + 2, sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "SG_RESULT_FD=", 13) != 0)
      envp[k++] = environ[i];
  char fdvar[32];
  snprintf(fdvar, sizeof fdvar, "SG_RESULT_FD=%d", RESULT_FD);
  envp[k++] = fdvar;
  envp[k] = NULL;
  spawn_spec spec = {.path = path, .argv = argv, .envp = envp};
  int rc = run_child(lim, &spec, out, err);
  free(envp);
  free(path);
  return rc;
}
