/* sg_sandbox_filter.c: the sandbox's seccomp filters (sg_sandbox_filter.h),
 * built with libseccomp rather than by hand: it generates the architecture
 * and ABI checks, resolves system call numbers per architecture and lays the
 * rules out as a tree, which a hand-written BPF program got wrong in the
 * past only too easily (an x32 number, a 32-bit argument compared in 64).
 *
 * Why allowlists: a denylist forgets the next system call that matters (a
 * new way to make a process, to reach the network, to signal). An
 * allowlisted program that makes a call nobody thought of dies with SIGSYS,
 * which the evaluator reports as `rejected` naming the rule.
 *
 * 32-bit arguments (file descriptors, pids, flags passed as int) are
 * compared on their low 32 bits: the upper half of the register is not
 * defined for them.
 */
#include "eval/sg_sandbox_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOW32 UINT64_C(0xffffffff)

/* set_nnp: let libseccomp set no_new_privs (a prctl call); the compute
 * filters leave it to their caller, since the first forbids prctl for the
 * second. */
static int new_ctx(scmp_filter_ctx *ctx, bool set_nnp) {
  *ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (!*ctx)
    return -ENOMEM;
  int rc = seccomp_attr_set(*ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc == 0)
    rc = seccomp_attr_set(*ctx, SCMP_FLTATR_CTL_NNP, set_nnp ? 1 : 0);
  if (rc == 0) /* a binary tree: the long allowlist costs log(n) per call */
    (void)seccomp_attr_set(*ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc)
    seccomp_release(*ctx);
  return rc;
}

static int finish(scmp_filter_ctx ctx, int rc) {
  if (rc == 0)
    rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc;
}

/* ---- no processes ------------------------------------------------------------ */

/* Calls with a rule of their own below, or none (killed). */
static bool special(const char *name) {
  static const char *const names[] = {
      "fork", "vfork", "clone", "clone3", "execve", "execveat", "socket",
      "kill", "tgkill", "tkill", "ptrace", "process_vm_readv",
      "process_vm_writev", "setns", "unshare", "pidfd_getfd",
      "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
      "kcmp", "process_madvise"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(name, names[i]) == 0)
      return true;
  return false;
}

static int nospawn_rules(scmp_filter_ctx ctx, uint64_t allowed_exec, pid_t self) {
  int rc = 0;
  /* everything this kernel's table knows, but the special ones */
  uint32_t arch = seccomp_arch_native();
  for (int nr = 0; nr < 1024 && rc == 0; nr++) {
    char *name = seccomp_syscall_resolve_num_arch(arch, nr);
    if (!name)
      continue;
    if (!special(name))
      rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
    free(name);
  }
  uint64_t me = (uint32_t)self, group = (uint32_t)-self;
  if (rc == 0) /* threads only */
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, AF_UNIX));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, AF_UNIX));
  const uint64_t kill_ok[] = {0, me, group};
  for (int i = 0; i < 3 && rc == 0; i++)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, kill_ok[i]));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, me));
  if (rc == 0 && allowed_exec)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(execve), 1,
                          SCMP_A0(SCMP_CMP_EQ, allowed_exec, 0));
  return rc;
}

int sg_sandbox_filter_nospawn(uint64_t allowed_exec, pid_t self) {
  scmp_filter_ctx ctx;
  int rc = new_ctx(&ctx, true);
  if (rc)
    return rc;
  return finish(ctx, nospawn_rules(ctx, allowed_exec, self));
}

/* ---- the nospawn filter built once ------------------------------------------- */

/* Building the nospawn filter (some 370 rules compiled into a tree) takes
 * libseccomp several ms of CPU in every child, on the core the child is
 * pinned to, where two workers of one evaluation set up side by side; a
 * program built once is loaded with one system call. */
enum { PROGS_MAX = 16 };
static struct {
  uint64_t allowed_exec;
  pid_t self;
  struct sock_fprog prog;
} progs[PROGS_MAX];
static int nprogs;
static pthread_mutex_t progs_lock = PTHREAD_MUTEX_INITIALIZER;

/* ctx's program, exported by libseccomp (2.5 writes it to a descriptor). */
static int export_prog(scmp_filter_ctx ctx, struct sock_fprog *out) {
  int fd = memfd_create("sg-filter", MFD_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = seccomp_export_bpf(ctx, fd);
  struct stat st;
  if (rc == 0 && fstat(fd, &st) != 0)
    rc = -errno;
  size_t size = rc == 0 ? (size_t)st.st_size : 0;
  if (rc == 0 && (size == 0 || size % sizeof(struct sock_filter) != 0 ||
                  size / sizeof(struct sock_filter) > USHRT_MAX))
    rc = -EINVAL;
  struct sock_filter *f = rc == 0 ? malloc(size) : NULL;
  if (rc == 0 && !f)
    rc = -ENOMEM;
  if (rc == 0 && pread(fd, f, size, 0) != (ssize_t)size)
    rc = -EIO;
  close(fd);
  if (rc) {
    free(f);
    return rc;
  }
  out->len = (unsigned short)(size / sizeof(struct sock_filter));
  out->filter = f;
  return 0;
}

int sg_sandbox_filter_nospawn_prog(uint64_t allowed_exec, pid_t self,
                                   const struct sock_fprog **out) {
  *out = NULL;
  pthread_mutex_lock(&progs_lock);
  int rc = 0;
  int i = 0;
  while (i < nprogs && (progs[i].allowed_exec != allowed_exec || progs[i].self != self))
    i++;
  if (i == nprogs) {
    scmp_filter_ctx ctx;
    if (nprogs == PROGS_MAX)
      rc = -ENOSPC;
    else if ((rc = new_ctx(&ctx, false)) == 0) {
      rc = nospawn_rules(ctx, allowed_exec, self);
      if (rc == 0)
        rc = export_prog(ctx, &progs[i].prog);
      seccomp_release(ctx);
      if (rc == 0) {
        progs[i].allowed_exec = allowed_exec;
        progs[i].self = self;
        nprogs++;
      }
    }
  }
  if (rc == 0)
    *out = &progs[i].prog;
  pthread_mutex_unlock(&progs_lock);
  return rc;
}

int sg_sandbox_filter_load_prog(const struct sock_fprog *prog) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) != 0)
    return -errno;
  return 0;
}

/* ---- compute only ------------------------------------------------------------ */

static int allow(scmp_filter_ctx ctx, int nr) {
  return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

int sg_sandbox_filter_compute(int stage, pid_t self, int read_fd,
                              const int *write_fds, int nwrite) {
  if (stage == SG_FILTER_LOAD && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -errno;
  scmp_filter_ctx ctx;
  int rc = new_ctx(&ctx, false);
  if (rc)
    return rc;
  /* memory, futexes (a lock taken twice waits, as anywhere), the clocks,
   * signal handlers and masks (only its own faults and its own raise() can
   * reach them: no timers, no signals from others), exit */
  const int plain[] = {
      SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
      SCMP_SYS(futex), SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
      SCMP_SYS(gettimeofday), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
      SCMP_SYS(rt_sigaction), /* abort() resets SIGABRT's handler */
      SCMP_SYS(sigaltstack),  /* a handler's own stack (sanitizers set one) */
      SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(exit), SCMP_SYS(exit_group),
      SCMP_SYS(sched_yield), SCMP_SYS(getrandom), SCMP_SYS(fstat),
      SCMP_SYS(newfstatat), SCMP_SYS(lseek),
      SCMP_SYS(close), /* fclose(stdout): it only loses its own descriptors */
  };
  for (size_t i = 0; i < sizeof plain / sizeof *plain && rc == 0; i++)
    rc = allow(ctx, plain[i]);
  /* raise() and abort(): signals to itself only */
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, (uint32_t)self));
  /* writev: the C library's own fatal messages ("double free detected") */
  for (int i = 0; i < nwrite && rc == 0; i++) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, (uint32_t)write_fds[i]));
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(writev), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, (uint32_t)write_fds[i]));
  }
  if (stage == SG_FILTER_LOAD) {
    /* what dlopen needs: files opened for reading, executable mappings */
    const int load[] = {SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(getcwd),
                        SCMP_SYS(mmap), SCMP_SYS(mprotect)};
    for (size_t i = 0; i < sizeof load / sizeof *load && rc == 0; i++)
      rc = allow(ctx, load[i]);
    const uint64_t writing = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND |
                             O_TMPFILE;
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                            SCMP_A2(SCMP_CMP_MASKED_EQ, writing, 0));
    /* the calling stage's filter goes on top of this one (filters only
     * ever narrow: one the kernel's constructor adds can only hurt it) */
    if (rc == 0)
      rc = allow(ctx, SCMP_SYS(seccomp)); /* libseccomp also asks what is there */
  } else {
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(read), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, (uint32_t)read_fd));
    /* memory, never executable: no code made at run time */
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                            SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
                            SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  }
  return finish(ctx, rc);
}
