/* sg_sandbox.c: running untrusted code in a limited child process: the
 * parent's side (sg_sandbox_child.c is the child's, sg_sandbox_filter.c the
 * seccomp filters).
 *
 * How it works. The parent opens three pipes (stdout, stderr, the result)
 * and a socket pair (the setup channel) and forks. The child arranges its
 * descriptors, enters its namespaces, asks the parent to map its user
 * namespace where it made one (only the parent, outside it, may map root's
 * ids to nobody), forks the first process of its PID namespace, makes its
 * read-only view of the file system, drops to an unprivileged user, pins
 * itself, sets its rlimits and installs its seccomp filter; then it reports
 * on the setup channel what isolation it got and runs the candidate (a
 * function, or a program).
 *
 * The parent polls the pipes and a pidfd of the child, cutting captured
 * output at its caps while it keeps draining (so a chatty child never
 * blocks), until the child ends or the caller is done with it; then it kills
 * the whole process group with SIGKILL and reaps the child. The first process
 * of a PID namespace takes every other one in it along when it dies.
 *
 * What it must never do: let the child outlive the call, block on a child
 * that stops reading or writing, or trust anything the child wrote.
 */
#include "eval/sg_sandbox.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"

#include "eval/sg_sandbox_filter.h"
#include "eval/sg_sandbox_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
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
#include <time.h>
#include <unistd.h>


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

/* Readers: stdout, stderr, result, setup. */
enum { R_OUT, R_ERR, R_RES, R_SETUP, NR };

struct sg_sandbox {
  pid_t pid;            /* the forked child (the waiter, with a PID namespace) */
  pid_t prog_pid;       /* the process running the program */
  int pidfd;
  double t0;
  sg_buf bufs[NR];
  pipe_reader pr[NR];
  size_t setup_used;    /* bytes of bufs[R_SETUP] already handled */
  sg_setup_msg setup;   /* the 'S' message */
  bool got_setup;
  char exec_error[480];
  bool exited;
  bool end_at_result;   /* the limits' */
  bool result_done;     /* end_at_result and the result pipe at EOF */
  double deadline;      /* for the setup: bounded, whatever the wall-clock limit */
  double wall_s;
  double setup_s;
  int abort_slot;       /* its entry in the abort registry; -1: none */
};

/* ---- aborting what runs (sg_sandbox_abort_install) ----------------------------
 * The live children, for a signal handler: plain arrays of pids it can read
 * at any moment (an entry is written whole, its kept flag before its pid). */
#define ABORT_SLOTS 64
static volatile pid_t abort_live[ABORT_SLOTS];
static volatile sig_atomic_t abort_kept[ABORT_SLOTS];
static volatile sig_atomic_t abort_flag;
static bool abort_on;

static void abort_kill_live(void) {
  for (int i = 0; i < ABORT_SLOTS; i++) {
    pid_t p = abort_live[i];
    if (p > 0 && !abort_kept[i]) {
      kill(-p, SIGKILL);
      kill(p, SIGKILL);
    }
  }
}

static void abort_handler(int sig) {
  (void)sig;
  int saved = errno;
  abort_flag = 1;
  abort_kill_live();
  errno = saved;
}

void sg_sandbox_abort_install(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = abort_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  abort_on = true;
  sigaction(sig, &sa, NULL);
}

void sg_sandbox_abort_reset(void) { abort_flag = 0; }

bool sg_sandbox_aborted(void) { return abort_on && abort_flag; }

void sg_sandbox_keep(sg_sandbox *s, bool kept) {
  if (s && s->abort_slot >= 0)
    abort_kept[s->abort_slot] = kept;
}

/* Enters a new child; one that came after the abort's signal dies now. */
static void abort_register(sg_sandbox *s) {
  s->abort_slot = -1;
  if (!abort_on)
    return;
  for (int i = 0; i < ABORT_SLOTS; i++)
    if (abort_live[i] == 0) {
      abort_kept[i] = 0;
      abort_live[i] = s->pid;
      s->abort_slot = i;
      break;
    }
  if (abort_flag)
    abort_kill_live();
}

/* Writes text into /proc/PID/NAME; 0 or an errno. */
static int write_proc(pid_t pid, const char *name, const char *text) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  ssize_t w = write(fd, text, strlen(text));
  int e = w == (ssize_t)strlen(text) ? 0 : (w < 0 ? errno : EIO);
  close(fd);
  return e;
}

/* Maps the child's new user namespace: root's caller maps nobody to nobody
 * (the child then runs as nobody, outside as inside); anyone else can only
 * map its own ids. */
static void answer_map(sg_sandbox *s) {
  sg_setup_reply r = {-1, -1};
  char buf[64];
  int e;
  if (geteuid() == 0) {
    r.uid = r.gid = 65534;
    snprintf(buf, sizeof buf, "65534 65534 1\n");
    e = write_proc(s->pid, "uid_map", buf);
    if (!e)
      e = write_proc(s->pid, "gid_map", buf);
  } else {
    r.uid = (int)geteuid();
    r.gid = (int)getegid();
    e = write_proc(s->pid, "setgroups", "deny");
    snprintf(buf, sizeof buf, "%d %d 1\n", r.uid, r.uid);
    if (!e)
      e = write_proc(s->pid, "uid_map", buf);
    snprintf(buf, sizeof buf, "%d %d 1\n", r.gid, r.gid);
    if (!e)
      e = write_proc(s->pid, "gid_map", buf);
  }
  if (e)
    r.uid = r.gid = -1;
  sg_sandbox_write_all(s->pr[R_SETUP].fd, &r, sizeof r);
}

/* Handles the setup messages read so far. */
static void take_setup(sg_sandbox *s) {
  sg_buf *b = &s->bufs[R_SETUP];
  while (b->len - s->setup_used >= sizeof(sg_setup_msg)) {
    sg_setup_msg m;
    memcpy(&m, b->data + s->setup_used, sizeof m);
    s->setup_used += sizeof m;
    m.text[sizeof m.text - 1] = '\0';
    if (m.type == 'M' && s->pr[R_SETUP].fd >= 0)
      answer_map(s);
    else if (m.type == 'P')
      s->prog_pid = m.pid;
    else if (m.type == 'S' && !s->got_setup) {
      s->setup = m;
      s->got_setup = true;
    } else if (m.type == 'E')
      snprintf(s->exec_error, sizeof s->exec_error, "%s", m.text);
  }
}

/* One round of polling: the pipes, the pidfd and fd (-1: none) for up to
 * timeout_s (< 0: no limit). Returns 1 when fd is readable. */
static int poll_once(sg_sandbox *s, int fd, double timeout_s) {
  struct pollfd pfd[NR + 2];
  int np = 0, map[NR + 2];
  for (int i = 0; i < NR; i++)
    if (s->pr[i].fd >= 0) {
      pfd[np] = (struct pollfd){.fd = s->pr[i].fd, .events = POLLIN};
      map[np++] = i;
    }
  if (s->pidfd >= 0 && !s->exited) {
    pfd[np] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
    map[np++] = -1;
  }
  if (fd >= 0) {
    pfd[np] = (struct pollfd){.fd = fd, .events = POLLIN};
    map[np++] = -2;
  }
  /* without a pidfd, look at the child every 10 ms; once it has ended (or
   * closed its result, seen maybe in the round that found fd readable),
   * only look at what is readable now: nothing more will come to wait for */
  double wait_s = timeout_s;
  if (s->pidfd < 0 && (wait_s < 0 || wait_s > 0.01))
    wait_s = 0.01;
  if (s->exited || s->result_done)
    wait_s = 0;
  int ms = wait_s < 0 ? -1 : (int)ceil(fmin(wait_s, 3600.0) * 1000.0);
  int rc = poll(pfd, (nfds_t)np, ms);
  int ready = 0;
  for (int i = 0; rc > 0 && i < np; i++) {
    if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    if (map[i] >= 0)
      drain(&s->pr[map[i]]);
    else if (map[i] == -2)
      ready = 1;
  }
  take_setup(s);
  if (s->end_at_result && s->pr[R_RES].fd < 0 && s->bufs[R_RES].len > 0)
    s->result_done = true;
  if (!s->exited) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == s->pid)
      s->exited = true;
  }
  return ready;
}

int sg_sandbox_wait(sg_sandbox *s, int fd, double timeout_s) {
  double end = timeout_s < 0 ? INFINITY : sg_clock_now_s() + timeout_s;
  for (;;) {
    double left = isinf(end) ? -1 : end - sg_clock_now_s();
    if (!isinf(end) && left < 0)
      left = 0;
    if (poll_once(s, fd, left))
      return 1;
    if (s->exited || s->result_done)
      return 2;
    if (!isinf(end) && sg_clock_now_s() >= end)
      return 0;
  }
}

int sg_sandbox_pid(const sg_sandbox *s) {
  return s->prog_pid > 0 ? s->prog_pid : s->pid;
}

static void close_all(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0)
      close(fds[i]);
}

/* Forks the child; its setup goes on while the caller starts others. *out
 * is the handle. */
static int fork_child(const sg_sandbox_limits *lim, const spawn_spec *spec,
                 sg_sandbox **out, sg_err *err) {
  *out = NULL;
  int p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_res[2] = {-1, -1},
      p_setup[2] = {-1, -1};
  int rc = 0;
  if ((rc = make_pipe(p_out, err)) || (rc = make_pipe(p_err, err)) ||
      (rc = make_pipe(p_res, err))) {
    int all[] = {p_out[0], p_out[1], p_err[0], p_err[1], p_res[0], p_res[1]};
    close_all(all, 6);
    return rc;
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p_setup) != 0) {
    rc = sg_err_set(err, SG_EIO, "sandbox: socketpair: %s", strerror(errno));
    int all[] = {p_out[0], p_out[1], p_err[0], p_err[1], p_res[0], p_res[1]};
    close_all(all, 6);
    return rc;
  }
  fcntl(p_setup[0], F_SETFL, O_NONBLOCK);
  if (sg_sandbox_aborted()) {
    int all[] = {p_out[0], p_out[1], p_err[0], p_err[1], p_res[0], p_res[1],
                 p_setup[0], p_setup[1]};
    close_all(all, 8);
    return sg_err_set(err, SG_ESTATE, "sandbox: the evaluation was aborted");
  }
  /* nobody must be able to write its scratch directory */
  if (lim->isolate && lim->work_dir && geteuid() == 0)
    (void)chown(lim->work_dir, 65534, 65534);
  /* The filter, built here once for all children alike (the program's
   * path at its interned address, the PID namespace's first pid); a child
   * elsewhere builds its own. */
  uint64_t allowed_exec = spec->fn ? 0 : (uint64_t)(uintptr_t)spec->path;
  const struct sock_fprog *prebuilt = NULL;
  if (lim->forbid_spawn && lim->isolate)
    (void)sg_sandbox_filter_nospawn_prog(allowed_exec, SG_SANDBOX_NS_PID, &prebuilt);
  fflush(NULL); /* or buffered parent output is written twice */
  double t0 = sg_clock_now_s();
  pid_t pid = fork();
  if (pid < 0) {
    rc = sg_err_set(err, SG_ECHILD, "sandbox: fork: %s", strerror(errno));
    int all[] = {p_out[0], p_out[1], p_err[0], p_err[1], p_res[0], p_res[1],
                 p_setup[0], p_setup[1]};
    close_all(all, 8);
    return rc;
  }
  if (pid == 0) {
    sg_sandbox_child_setup(lim, p_out[1], p_err[1], p_res[1], p_setup[1], allowed_exec,
                           prebuilt, SG_SANDBOX_NS_PID);
#ifdef SG_ASAN
    in_sandbox_child = 1;
#endif
    if (spec->fn) {
      close(SG_SETUP_FD);
      int code = spec->fn(spec->arg, SG_RESULT_FD);
      fflush(NULL);
      _exit(code & 0xff);
    }
    execve(spec->path, spec->argv, spec->envp);
    sg_setup_msg m;
    memset(&m, 0, sizeof m);
    m.type = 'E';
    snprintf(m.text, sizeof m.text, "sandbox: cannot run %s: %s", spec->path,
             strerror(errno));
    sg_sandbox_write_all(SG_SETUP_FD, &m, sizeof m);
    _exit(127);
  }
  setpgid(pid, pid); /* also here: no window where the group does not exist */
  close(p_out[1]);
  close(p_err[1]);
  close(p_res[1]);
  close(p_setup[1]);

  sg_sandbox *s = sg_calloc(1, sizeof *s);
  s->pid = pid;
  s->t0 = t0;
  size_t caps[NR] = {lim->output_cap_bytes ? lim->output_cap_bytes : 65536,
                     lim->output_cap_bytes ? lim->output_cap_bytes : 65536,
                     lim->result_cap_bytes ? lim->result_cap_bytes : (1u << 20),
                     16 * sizeof(sg_setup_msg)};
  int fds[NR] = {p_out[0], p_err[0], p_res[0], p_setup[0]};
  for (int i = 0; i < NR; i++) {
    sg_buf_init(&s->bufs[i], caps[i]);
    s->pr[i] = (pipe_reader){fds[i], &s->bufs[i]};
  }
  s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  s->end_at_result = lim->end_at_result;
  s->deadline = t0 + (lim->wall_s > 0 ? fmin(lim->wall_s, 30.0) : 30.0);
  abort_register(s);
  *out = s;
  return 0;
}

static bool setting_up(const sg_sandbox *s, double now) {
  return !s->got_setup && !s->exited && now < s->deadline;
}

/* Waits until every child's setup is done, it ended, or its setup deadline
 * passed, answering their setup messages (the user namespace maps among
 * them) as they come: children started together set up side by side. */
static void await_setup(sg_sandbox *const *s, size_t n) {
  enum { MAX = SG_SANDBOX_SPAWN_MAX };
  for (;;) {
    double now = sg_clock_now_s(), until = INFINITY;
    struct pollfd pfd[2 * MAX];
    sg_sandbox *owner[2 * MAX];
    nfds_t np = 0;
    bool ticking = false; /* a child without a pidfd is looked at every 10 ms */
    for (size_t i = 0; i < n && i < MAX; i++) {
      if (!setting_up(s[i], now))
        continue;
      until = fmin(until, s[i]->deadline);
      if (s[i]->pr[R_SETUP].fd >= 0) {
        pfd[np] = (struct pollfd){.fd = s[i]->pr[R_SETUP].fd, .events = POLLIN};
        owner[np++] = s[i];
      }
      if (s[i]->pidfd >= 0) {
        pfd[np] = (struct pollfd){.fd = s[i]->pidfd, .events = POLLIN};
        owner[np++] = s[i];
      } else {
        ticking = true;
      }
    }
    if (isinf(until))
      break;
    double wait_s = fmax(until - now, 0);
    if (ticking)
      wait_s = fmin(wait_s, 0.01);
    int rc = poll(pfd, np, (int)ceil(wait_s * 1000.0));
    for (nfds_t k = 0; rc > 0 && k < np; k++)
      if ((pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) &&
          pfd[k].fd == owner[k]->pr[R_SETUP].fd)
        drain(&owner[k]->pr[R_SETUP]);
    for (size_t i = 0; i < n && i < MAX; i++) {
      take_setup(s[i]);
      siginfo_t si;
      memset(&si, 0, sizeof si);
      if (!s[i]->exited &&
          waitid(P_PID, (id_t)s[i]->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          si.si_pid == s[i]->pid)
        s[i]->exited = true;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (s[i]->setup_s == 0)
      s[i]->setup_s = sg_clock_now_s() - s[i]->t0;
}

/* Forks the child and waits until its setup is done; *out is the handle. */
static int start(const sg_sandbox_limits *lim, const spawn_spec *spec,
                 sg_sandbox **out, sg_err *err) {
  int rc = fork_child(lim, spec, out, err);
  if (rc == 0)
    await_setup(out, 1);
  return rc;
}

static void drain_rest(sg_sandbox *s) {
  /* What is left in the pipes; bounded, since the group is dead (a writer
   * that escaped it would only cost this loop's 200 ms). */
  double drain_end = sg_clock_now_s() + 0.2;
  for (;;) {
    struct pollfd pfd[NR];
    int np = 0, map[NR];
    for (int i = 0; i < NR; i++)
      if (s->pr[i].fd >= 0) {
        pfd[np] = (struct pollfd){.fd = s->pr[i].fd, .events = POLLIN};
        map[np++] = i;
      }
    double left = drain_end - sg_clock_now_s();
    if (np == 0 || left <= 0)
      break;
    if (poll(pfd, (nfds_t)np, (int)ceil(left * 1000)) <= 0)
      break;
    for (int i = 0; i < np; i++)
      if (pfd[i].revents)
        drain(&s->pr[map[i]]);
  }
}

void sg_sandbox_kill(sg_sandbox *s) {
  /* the child is not reaped before sg_sandbox_finish: its group id cannot
   * be reused yet */
  kill(-s->pid, SIGKILL);
  kill(s->pid, SIGKILL);
}

/* ---- children left to end (end_at_result) ---------------------------------
 * Runs that ended at their result, their programs still ending in order
 * (a CUDA judge stops its servers, then tears down its context). Each is
 * reaped once it has exited, after its group is killed (a straggler the
 * program left in it dies then); until it is reaped its pid, and so its
 * group id, cannot be reused. */
#define LINGER_MAX 32
static struct lingering {
  pid_t pid;
  bool killed;
} lingering[LINGER_MAX];
static int nlingering;

/* Reaps those that have exited; returns how many are left. */
static int reap_ended(void) {
  int kept = 0;
  for (int i = 0; i < nlingering; i++) {
    pid_t pid = lingering[i].pid;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && si.si_pid == 0) { /* still running */
      lingering[kept++] = lingering[i];
      continue;
    }
    if (r == 0) { /* exited: the rest of its group goes, then it */
      kill(-pid, SIGKILL);
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    }
    /* r < 0: someone else reaped it (ECHILD); it is gone */
  }
  nlingering = kept;
  return kept;
}

/* Keeps pid to reap later; false when the list is full (end it now). */
static bool linger(pid_t pid) {
  if (reap_ended() == LINGER_MAX)
    return false;
  lingering[nlingering++] = (struct lingering){pid, false};
  return true;
}

int sg_sandbox_reap(double wait_s) {
  if (wait_s <= 0)
    return reap_ended();
  /* after the wait, those still running are killed and get a little
   * longer to go (their exit still tears down what they hold) */
  double end = sg_clock_now_s() + wait_s, kill_end = end + 2.0;
  for (;;) {
    int left = reap_ended();
    double now = sg_clock_now_s();
    if (left == 0 || now >= kill_end)
      return left;
    if (now >= end)
      for (int i = 0; i < nlingering; i++)
        if (!lingering[i].killed) {
          kill(-lingering[i].pid, SIGKILL);
          kill(lingering[i].pid, SIGKILL);
          lingering[i].killed = true;
        }
    struct timespec ts = {0, 1000000}; /* 1 ms */
    nanosleep(&ts, NULL);
  }
}

/* Why s's setup failed, in err (timed_out: it ran out of time); 0 when it
 * did not. */
static int setup_failure(const sg_sandbox *s, bool timed_out, sg_err *err) {
  if (s->exec_error[0])
    return sg_err_set(err, SG_ECHILD, "%s", s->exec_error);
  if (s->got_setup && !s->setup.ok)
    return sg_err_set(err, SG_ECHILD, "%s", s->setup.text);
  if (!s->got_setup && timed_out)
    return sg_err_set(err, SG_ETIMEDOUT,
                      "sandbox: the child's setup did not finish in %.1f s",
                      s->setup_s);
  if (!s->got_setup)
    return sg_err_set(err, SG_ECHILD,
                      "sandbox: the child ended before its setup was done");
  return 0;
}

int sg_sandbox_finish(sg_sandbox *s, bool timed_out, sg_sandbox_outcome *out,
                   sg_err *err) {
  memset(out, 0, sizeof *out);
  /* Ended at its result: the program ends in order without us, and is
   * reaped (its group killed) later: sg_sandbox_reap. */
  bool early = !timed_out && s->result_done && !s->exited && linger(s->pid);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  if (!early) {
    /* Whatever happened, nothing of the group survives the call. The child
     * is still a zombie here at most (WNOWAIT), so its group id cannot be
     * reused yet. */
    kill(-s->pid, SIGKILL);
    kill(s->pid, SIGKILL);
    while (wait4(s->pid, &status, 0, &ru) < 0 && errno == EINTR)
      ;
  }
  out->wall_s = sg_clock_now_s() - s->t0;
  out->cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  if (early) { /* what is there now: the group's pipes close only at its exit */
    for (int i = 0; i < NR; i++)
      if (s->pr[i].fd >= 0)
        drain(&s->pr[i]);
  } else {
    drain_rest(s);
  }
  take_setup(s);
  for (int i = 0; i < NR; i++)
    if (s->pr[i].fd >= 0)
      close(s->pr[i].fd);
  if (s->pidfd >= 0)
    close(s->pidfd);

  out->ended_at_result = early;
  if (timed_out) {
    out->end = SG_SANDBOX_TIMED_OUT;
  } else if (early) {
    out->end = SG_SANDBOX_EXITED;
    out->exit_code = 0;
  } else if (WIFSIGNALED(status)) {
    out->end = SG_SANDBOX_SIGNALED;
    out->signal = WTERMSIG(status);
  } else {
    out->end = SG_SANDBOX_EXITED;
    out->exit_code = WEXITSTATUS(status);
  }
  out->out_truncated = s->bufs[R_OUT].truncated;
  out->err_truncated = s->bufs[R_ERR].truncated;
  out->out = sg_buf_steal(&s->bufs[R_OUT]);
  out->err = sg_buf_steal(&s->bufs[R_ERR]);
  out->result_len = s->bufs[R_RES].len;
  out->result = sg_buf_steal(&s->bufs[R_RES]);
  sg_buf_free(&s->bufs[R_SETUP]);

  const sg_setup_msg *m = &s->setup;
  bool ok = s->got_setup && m->ok;
  unsigned iso = ok ? m->iso : 0;
  out->network_isolated = iso & SG_ISO_NET;
  out->user_isolated = iso & SG_ISO_USER;
  out->mount_isolated = iso & SG_ISO_MOUNT;
  out->pid_isolated = iso & SG_ISO_PID;
  out->ipc_isolated = iso & SG_ISO_IPC;
  out->unprivileged = iso & SG_ISO_UNPRIV;
  if (ok && m->text[0])
    out->note = sg_strdup(m->text);
  int rc = setup_failure(s, !s->got_setup && s->setup_s >= 30.0 - 1e-3, err);
  if (s->abort_slot >= 0)
    abort_live[s->abort_slot] = 0;
  free(s);
  if (rc)
    sg_sandbox_outcome_free(out);
  return rc;
}

/* Runs the child to its end or its wall-clock limit. */
static int run_child(const sg_sandbox_limits *lim, const spawn_spec *spec,
                     sg_sandbox_outcome *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  sg_sandbox *s;
  int rc = start(lim, spec, &s, err);
  if (rc)
    return rc;
  bool timed_out = false;
  double deadline = lim->wall_s > 0 ? s->t0 + lim->wall_s : INFINITY;
  while (s->got_setup && s->setup.ok && !s->exited && !s->result_done) {
    double left = isinf(deadline) ? -1 : deadline - sg_clock_now_s();
    if (!isinf(deadline) && left <= 0) {
      timed_out = true;
      break;
    }
    sg_sandbox_wait(s, -1, left);
  }
  if (!s->got_setup && !s->exited)
    timed_out = true;
  return sg_sandbox_finish(s, timed_out, out, err);
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

#ifdef SG_ASAN
/* A sanitized build execs a sanitized program, which gets no RLIMIT_AS (see
 * set_limits): the bound travels in SG_SANDBOX_ASAN_AS_VAR instead (see
 * sg_sandbox.h). Leak checking (which stops the world through ptrace) and
 * symbolizing (which starts a process) are system calls the filter refuses:
 * off; so is its catching of fatal signals, so that a crash ends as it does
 * in a plain build; a report aborts, as a failed assert does. Only sanitized builds
 * add these variables; a plain build's program gets exactly the environment
 * it is given. */
static void asan_env(const sg_sandbox_limits *lim, char *opts, char *as, size_t cap) {
  snprintf(opts, cap, "ASAN_OPTIONS=detect_leaks=0:symbolize=0:color=never:"
                      "abort_on_error=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0");
  snprintf(as, cap, "%s=%llu", SG_SANDBOX_ASAN_AS_VAR,
           (unsigned long long)lim->address_space_bytes);
}
#endif

/* The program's environment, with SG_RESULT_FD set (and, in a sanitized
 * build, the variables of asan_env), built before the fork (no allocation
 * between fork and exec); vars holds the variables (3 x cap bytes). */
static char **build_env(const sg_sandbox_limits *lim, char *vars, size_t cap) {
  char *const *src = lim->env ? lim->env : environ;
  size_t n = 0;
  while (src && src[n])
    n++;
  char **envp = sg_calloc(n + 4, sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(src[i], "SG_RESULT_FD=", 13) != 0
#ifdef SG_ASAN
        && strncmp(src[i], "ASAN_OPTIONS=", 13) != 0 &&
        strncmp(src[i], SG_SANDBOX_ASAN_AS_VAR "=", sizeof SG_SANDBOX_ASAN_AS_VAR) != 0
#endif
    )
      envp[k++] = src[i];
  snprintf(vars, cap, "SG_RESULT_FD=%d", SG_RESULT_FD);
  envp[k++] = vars;
#ifdef SG_ASAN
  asan_env(lim, vars + cap, vars + 2 * cap, cap);
  envp[k++] = vars + cap;
  envp[k++] = vars + 2 * cap;
#endif
  envp[k] = NULL;
  return envp;
}

/* Programs' resolved paths, kept at one address each for the process's
 * life: the filter lets execve through for that pointer only, so an
 * interned path lets one built filter serve every child of a program. */
enum { PATHS_MAX = 16 };
static char *paths[PATHS_MAX];
static int npaths;
static pthread_mutex_t paths_lock = PTHREAD_MUTEX_INITIALIZER;

/* p's interned copy (p freed), or p itself when the table is full. */
static char *intern(char *p) {
  if (!p)
    return NULL;
  pthread_mutex_lock(&paths_lock);
  char *out = p;
  int i = 0;
  while (i < npaths && strcmp(paths[i], p) != 0)
    i++;
  if (i < npaths) {
    out = paths[i];
    free(p);
  } else if (npaths < PATHS_MAX) {
    out = paths[npaths++] = p;
  }
  pthread_mutex_unlock(&paths_lock);
  return out;
}

static bool interned(const char *p) {
  pthread_mutex_lock(&paths_lock);
  bool found = false;
  for (int i = 0; i < npaths && !found; i++)
    found = paths[i] == p;
  pthread_mutex_unlock(&paths_lock);
  return found;
}

/* Runs argv (self: this executable) to its end (out != NULL) or hands back
 * the started child (*handle). */
static int exec_program(const sg_sandbox_limits *lim, char *const argv[], bool self,
                        sg_sandbox_outcome *out, sg_sandbox **handle, bool wait_setup,
                        sg_err *err) {
  if (!argv || !argv[0])
    return sg_err_set(err, SG_EINVAL, "sandbox: no program to run");
  char *path = intern(self           ? sg_strdup("/proc/self/exe")
                      : lim->program ? resolve_program(lim->program)
                                     : resolve_program(argv[0]));
  if (!path)
    return sg_err_set(err, SG_ENOENT, "sandbox: %s: program not found in PATH",
                      argv[0]);
  char vars[3][160];
  char **envp = build_env(lim, vars[0], sizeof vars[0]);
  spawn_spec spec = {.path = path, .argv = argv, .envp = envp};
  int rc = out          ? run_child(lim, &spec, out, err)
           : wait_setup ? start(lim, &spec, handle, err)
                        : fork_child(lim, &spec, handle, err);
  free(envp);
  if (!interned(path))
    free(path);
  return rc;
}


int sg_sandbox_spawn(const sg_sandbox_limits *lim, char *const argv[], bool self,
                     sg_sandbox **out, sg_err *err) {
  *out = NULL;
  sg_sandbox *s = NULL;
  int rc = exec_program(lim, argv, self, NULL, &s, true, err);
  if (rc)
    return rc;
  if (setup_failure(s, !s->exited, err) != 0) {
    sg_sandbox_outcome o;
    rc = sg_sandbox_finish(s, !s->got_setup && !s->exited, &o, err);
    if (rc == 0) {
      rc = sg_err_set(err, SG_ECHILD, "sandbox: the child ended before its setup was done");
      sg_sandbox_outcome_free(&o);
    }
    return rc;
  }
  *out = s;
  return 0;
}

int sg_sandbox_spawn_begin(const sg_sandbox_limits *lim, char *const argv[], bool self,
                           sg_sandbox **out, sg_err *err) {
  *out = NULL;
  return exec_program(lim, argv, self, NULL, out, false, err);
}

int sg_sandbox_spawn_wait(sg_sandbox *const s[], size_t n, size_t *failed, sg_err *err) {
  if (n > SG_SANDBOX_SPAWN_MAX)
    return sg_err_set(err, SG_EINVAL, "sandbox: %zu children set up at once, at most %d",
                      n, SG_SANDBOX_SPAWN_MAX);
  await_setup(s, n);
  for (size_t i = 0; i < n; i++) {
    int rc = setup_failure(s[i], !s[i]->exited, err);
    if (rc) {
      if (failed)
        *failed = i;
      return rc;
    }
  }
  return 0;
}

int sg_sandbox_exec(const sg_sandbox_limits *lim, char *const argv[],
                    sg_sandbox_outcome *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  return exec_program(lim, argv, false, out, NULL, true, err);
}

void sg_sandbox_sanitize(char *text, size_t len) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c != '\n' && c != '\t' && (c < 0x20 || c > 0x7e))
      text[i] = '?';
  }
}
