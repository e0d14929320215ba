/* sg_sandbox_child.c: the sandbox's child side, from fork to the candidate
 * (sg_sandbox.h says what the child gets; docs/eval.md why).
 *
 * Order matters: descriptors first (nothing of the parent's leaks), then the
 * namespaces (a user namespace is mapped by the parent, who alone may map
 * root's ids), then a fork into the new PID namespace (unshare does not move
 * the caller; its next child is the namespace's first process), the mount
 * view (read-only, a fresh /proc, the scratch directory writable), the drop
 * to an unprivileged user, the rlimits, and last the seccomp filter, after
 * which only the candidate's code (or the program exec'd) runs.
 *
 * Why our own code and not bubblewrap: the cpu evaluator needs a handful of
 * calls (unshare, mount_setattr, setresuid) it already made for the network
 * namespace, plus descriptors passed in (memfds, command pipes) and the
 * program's pid for its CPU clock; bwrap would add a setuid-or-userns helper
 * program, a process of its own and its argument protocol between the judge
 * and the candidate, for the same kernel calls.
 *
 * This file runs in the child after fork: it allocates nothing and never
 * returns an error but through the setup channel (then _exit(127)).
 */
#include "eval/sg_sandbox_impl.h"
#include "eval/sg_sandbox_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mount.h>


#define NOBODY 65534

void sg_sandbox_write_all(int fd, const void *p, size_t n) {
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

static void note(sg_setup_msg *m, const char *fmt, const char *what, int e) {
  size_t used = strlen(m->text);
  if (used + 2 >= sizeof m->text)
    return;
  snprintf(m->text + used, sizeof m->text - used, "%s", used ? "; " : "");
  used = strlen(m->text);
  snprintf(m->text + used, sizeof m->text - used, fmt, what, strerror(e));
}

static _Noreturn void child_fail(sg_setup_msg *m, const char *what, int e) {
  m->type = 'S';
  m->ok = 0;
  snprintf(m->text, sizeof m->text, "sandbox setup: %s: %s", what, strerror(e));
  sg_sandbox_write_all(SG_SETUP_FD, m, sizeof *m);
  _exit(127);
}

static void set_limit(sg_setup_msg *m, int resource, const char *name, uint64_t v) {
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

/* 0 stdin (/dev/null), 1 out, 2 err, 3 result, 4 setup, 5.. passed fds;
 * nothing else. Every source is first moved above the targets, so the dup2s
 * never clobber one another. */
static void arrange_fds(const sg_sandbox_limits *lim, int out_w, int err_w,
                        int res_w, int setup_w) {
  int src[4 + 6], n = 0;
  src[n++] = out_w;
  src[n++] = err_w;
  src[n++] = res_w;
  src[n++] = setup_w;
  for (int i = 0; i < lim->npass_fds && i < 6; i++)
    src[n++] = lim->pass_fds[i];
  int top = n; /* targets are 1..n */
  for (int i = 0; i < n; i++) {
    int moved = fcntl(src[i], F_DUPFD_CLOEXEC, top + 1);
    if (moved < 0)
      _exit(127);
    src[i] = moved;
  }
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0)
    _exit(127);
  for (int i = 0; i < n; i++)
    if (dup2(src[i], i + 1) < 0)
      _exit(127);
  if (syscall(SYS_close_range, top + 1, ~0U, 0) != 0) {
    long maxfd = sysconf(_SC_OPEN_MAX);
    for (long fd = top + 1; fd < maxfd && fd < 65536; fd++)
      close((int)fd);
  }
  fcntl(SG_SETUP_FD, F_SETFD, FD_CLOEXEC);
}

/* The namespaces: all at once where the kernel allows it, else as many as
 * it allows, each refusal noted. */
static unsigned enter_namespaces(const sg_sandbox_limits *lim, sg_setup_msg *m) {
  int net = lim->isolate_network ? CLONE_NEWNET : 0;
  if (!lim->isolate) {
    if (!net)
      return 0;
    if (unshare(CLONE_NEWNET) == 0)
      return SG_ISO_NET;
    int e1 = errno;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0)
      return SG_ISO_NET;
    int e2 = errno;
    snprintf(m->text, sizeof m->text,
             "network not isolated: unshare(CLONE_NEWNET): %s; "
             "unshare(CLONE_NEWUSER|CLONE_NEWNET): %s",
             strerror(e1), strerror(e2));
    return 0;
  }
  /* Only the user and PID namespaces here; the others come later, in the
   * PID namespace's first process (other_namespaces): the last process to
   * leave a namespace pays for its teardown (a mount namespace's RCU grace
   * periods cost milliseconds), and the waiter the parent reaps must not be
   * that process. */
  if (unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0)
    return SG_ISO_USER | SG_ISO_PID;
  note(m, "%s: %s", "user namespace refused (unshare(CLONE_NEWUSER))", errno);
  if (unshare(CLONE_NEWPID) == 0) /* root without user namespaces */
    return SG_ISO_PID;
  note(m, "%s: %s", "PID namespace refused", errno);
  return 0;
}

/* The mount, IPC and network namespaces (see enter_namespaces for why
 * here): all at once, else each the kernel allows. */
static unsigned other_namespaces(const sg_sandbox_limits *lim, sg_setup_msg *m) {
  int net = lim->isolate_network ? CLONE_NEWNET : 0;
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC | net) == 0)
    return SG_ISO_MOUNT | SG_ISO_IPC | (net ? SG_ISO_NET : 0);
  static const struct { int flag; unsigned bit; const char *name; } each[] = {
      {CLONE_NEWNS, SG_ISO_MOUNT, "mount namespace refused"},
      {CLONE_NEWIPC, SG_ISO_IPC, "IPC namespace refused"},
      {CLONE_NEWNET, SG_ISO_NET, "network not isolated: unshare(CLONE_NEWNET)"},
  };
  unsigned got = 0;
  for (size_t i = 0; i < sizeof each / sizeof *each; i++) {
    if (each[i].flag == CLONE_NEWNET && !net)
      continue;
    if (unshare(each[i].flag) == 0)
      got |= each[i].bit;
    else
      note(m, "%s: %s", each[i].name, errno);
  }
  return got;
}

/* A parent-side map of the new user namespace: ask, wait for the answer. */
static sg_setup_reply ask_for_map(sg_setup_msg *m) {
  sg_setup_msg req;
  memset(&req, 0, sizeof req);
  req.type = 'M';
  sg_sandbox_write_all(SG_SETUP_FD, &req, sizeof req);
  sg_setup_reply r = {-1, -1};
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t n = read(SG_SETUP_FD, (char *)&r + got, sizeof r - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      child_fail(m, "waiting for the user namespace's map", n < 0 ? errno : EPIPE);
    got += (size_t)n;
  }
  if (r.uid < 0)
    child_fail(m, "mapping the user namespace", EPERM);
  return r;
}

/* With a PID namespace: fork its first process, which returns; this one
 * stays, waits for it and ends as it ended (so the parent's view of the
 * child is the program's). */
static void fork_into_pid_ns(sg_setup_msg *m) {
  pid_t p = fork();
  if (p < 0)
    child_fail(m, "fork into the PID namespace", errno);
  if (p == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    return;
  }
  sg_setup_msg pm;
  memset(&pm, 0, sizeof pm);
  pm.type = 'P';
  pm.pid = p;
  sg_sandbox_write_all(SG_SETUP_FD, &pm, sizeof pm);
  for (int fd = 0; fd < 64; fd++)
    close(fd);
  int st = 0;
  while (waitpid(p, &st, 0) < 0) {
    if (errno != EINTR)
      _exit(127);
  }
  if (WIFEXITED(st))
    _exit(WEXITSTATUS(st));
  int sig = WTERMSIG(st);
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

static int mount_setattr_(const char *path, unsigned flags, uint64_t set, uint64_t clr) {
#ifdef SYS_mount_setattr
  struct mount_attr a;
  memset(&a, 0, sizeof a);
  a.attr_set = set;
  a.attr_clr = clr;
  return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a, sizeof a);
#else
  (void)path, (void)flags, (void)set, (void)clr;
  errno = ENOSYS;
  return -1;
#endif
}

/* The file system as the candidate sees it: everything read-only and
 * without setuid, a /proc of its own PID namespace (or an empty one), and
 * work_dir writable. Returns false (noted) when the view could not be made;
 * the mount namespace is then not counted as isolation. */
static bool make_view(const sg_sandbox_limits *lim, unsigned iso, sg_setup_msg *m) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    note(m, "%s: %s", "read-only view refused (making / private)", errno);
    return false;
  }
  /* a /proc of its own PID namespace; without one the host's stays (read
   * only; as another user it shows no other process's memory or
   * environment) */
  if ((iso & SG_ISO_PID) &&
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
    note(m, "%s: %s", "no /proc of its own (mount)", errno);
  if (lim->work_dir &&
      mount(lim->work_dir, lim->work_dir, NULL, MS_BIND | MS_NOSUID, NULL) != 0) {
    note(m, "%s: %s", "read-only view refused (binding the scratch directory)", errno);
    return false;
  }
  if (mount_setattr_("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0) != 0) {
    note(m, "%s: %s", "read-only view refused (mount_setattr)", errno);
    return false;
  }
  if (lim->work_dir && mount_setattr_(lim->work_dir, 0, 0, MOUNT_ATTR_RDONLY) != 0) {
    note(m, "%s: %s", "read-only view refused (a writable scratch directory)", errno);
    return false;
  }
  return true;
}

/* Drops to uid/gid with no supplementary groups and no capabilities. */
static bool drop_user(int uid, int gid, sg_setup_msg *m) {
  if (setgroups(0, NULL) != 0 && errno != EPERM)
    child_fail(m, "setgroups", errno);
  if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0)
    child_fail(m, "setresgid", errno);
  if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0)
    child_fail(m, "setresuid", errno);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  return getuid() != 0 && geteuid() != 0;
}

static void set_limits(const sg_sandbox_limits *lim, sg_setup_msg *m, bool exec_mode) {
  set_limit(m, RLIMIT_CORE, "RLIMIT_CORE", 0);
  if (lim->cpu_s > 0) {
    /* soft at the limit (SIGXCPU), hard a second later (SIGKILL) */
    struct rlimit rl = {(rlim_t)ceil(lim->cpu_s), (rlim_t)ceil(lim->cpu_s) + 1};
    if (setrlimit(RLIMIT_CPU, &rl) != 0)
      child_fail(m, "RLIMIT_CPU", errno);
  }
  if (lim->address_space_bytes > 0) {
    uint64_t as = lim->address_space_bytes;
#ifdef SG_ASAN
    /* AddressSanitizer reserves terabytes of shadow: in this process, on top
     * of what it holds; an exec'd sanitized program gets no limit. */
    if (exec_mode)
      as = 0;
    else
      as += current_vm_bytes();
#else
    (void)exec_mode;
    (void)current_vm_bytes;
#endif
    if (as)
      set_limit(m, RLIMIT_AS, "RLIMIT_AS", as);
  }
  if (lim->file_size_bytes > 0)
    set_limit(m, RLIMIT_FSIZE, "RLIMIT_FSIZE", lim->file_size_bytes);
  if (lim->max_processes > 0)
    set_limit(m, RLIMIT_NPROC, "RLIMIT_NPROC", (uint64_t)lim->max_processes);
}

void sg_sandbox_child_setup(const sg_sandbox_limits *lim, int out_w, int err_w,
                            int res_w, int setup_w, uint64_t allowed_exec,
                            const struct sock_fprog *prebuilt, pid_t prebuilt_self) {
  sg_setup_msg m;
  memset(&m, 0, sizeof m);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* Default dispositions: a crash must end the child with its own signal,
   * whatever handlers this process had (AddressSanitizer installs some). */
  static const int defaults[] = {SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                 SIGALRM, SIGXCPU, SIGXFSZ, SIGSYS, SIGTERM, SIGINT};
  for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
    signal(defaults[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  arrange_fds(lim, out_w, err_w, res_w, setup_w);
  /* no core dumps, even of the waiter below */
  set_limit(&m, RLIMIT_CORE, "RLIMIT_CORE", 0);

  unsigned iso = enter_namespaces(lim, &m);
  sg_setup_reply ids = {-1, -1};
  if (iso & SG_ISO_USER)
    ids = ask_for_map(&m);
  else if (lim->isolate && geteuid() == 0)
    ids = (sg_setup_reply){NOBODY, NOBODY};
  if (iso & SG_ISO_PID)
    fork_into_pid_ns(&m);
  if (lim->isolate)
    iso |= other_namespaces(lim, &m);
  if ((iso & SG_ISO_MOUNT) && !make_view(lim, iso, &m))
    iso &= ~(unsigned)SG_ISO_MOUNT;
  if (lim->work_dir && chdir(lim->work_dir) != 0)
    child_fail(&m, lim->work_dir, errno);
  if (lim->isolate) {
    if (ids.uid >= 0 && drop_user(ids.uid, ids.gid, &m))
      iso |= SG_ISO_UNPRIV;
    else if (ids.uid < 0 && geteuid() != 0)
      iso |= SG_ISO_UNPRIV; /* never root here: nothing to drop */
    /* A change of credentials clears the parent-death signal: set it again,
     * or a worker whose judge was killed outright (an aborted evaluation)
     * would run on until its CPU limit. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  }
  if (lim->pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(lim->pin_cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      child_fail(&m, "sched_setaffinity", errno);
  }
  set_limits(lim, &m, allowed_exec != 0);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    child_fail(&m, "no_new_privs", errno);
  if (lim->forbid_spawn) {
    pid_t self = getpid();
    int rc = prebuilt && self == prebuilt_self ? sg_sandbox_filter_load_prog(prebuilt)
                                               : sg_sandbox_filter_nospawn(allowed_exec, self);
    if (rc)
      child_fail(&m, "seccomp filter", -rc);
  }
  m.type = 'S';
  m.ok = 1;
  m.iso = iso;
  sg_sandbox_write_all(SG_SETUP_FD, &m, sizeof m);
}
