/* sg_sandbox_filter.h: the seccomp filters of the sandbox, built with
 * libseccomp. Every filter is an allowlist: a system call that no rule
 * allows kills the whole process with SIGSYS (SECCOMP_RET_KILL_PROCESS),
 * and so does a call from another ABI (x32, i386) than this build's.
 * Installing one sets no_new_privs. Filters stack: a later one can only
 * narrow what an earlier one allowed.
 */
#ifndef SG_SANDBOX_FILTER_H
#define SG_SANDBOX_FILTER_H

#include <stdint.h>
#include <sys/types.h>

/* Everything but creating a process (fork, vfork, clone without
 * CLONE_THREAD), running a program (execve, but for the one path pointer
 * allowed_exec, 0: none; execveat), sockets other than AF_UNIX, signals to
 * another process (kill, tgkill, tkill), ptrace, reading or writing another
 * process's memory, and leaving or joining namespaces. clone3 answers ENOSYS
 * (its flags are in memory a filter cannot read; glibc falls back to clone).
 * self is this process's pid (its own signals stay allowed). Returns 0 or
 * a negative errno. */
int sg_sandbox_filter_nospawn(uint64_t allowed_exec, pid_t self);

/* The same filter as a BPF program, built on the first call for these
 * (allowed_exec, self) and kept for the process's life (at most 16 of
 * them: then -ENOSPC, and the caller builds it where it installs it), so
 * that a child after fork only loads it: sg_sandbox_filter_load_prog sets
 * no_new_privs and installs prog (one system call, nothing allocated).
 * Both return 0 or a negative errno. */
struct sock_fprog;
int sg_sandbox_filter_nospawn_prog(uint64_t allowed_exec, pid_t self,
                                   const struct sock_fprog **out);
int sg_sandbox_filter_load_prog(const struct sock_fprog *prog);

/* The candidate's: compute and nothing else.
 *
 * Stage SG_FILTER_LOAD (installed before the kernel's shared object is
 * loaded, so its constructors run under it): memory (brk, mmap, mprotect,
 * munmap, mremap, madvise), reading (read, pread64, lseek, fstat, newfstatat,
 * openat for reading only, close) which the dynamic loader needs, writing to
 * the descriptors in write_fds only, futex, the clocks, signals to itself
 * (self is its pid), exit.
 * Stage SG_FILTER_CALL (installed on top, before the first call): the same
 * without opening files or mapping executable memory, and reading only from
 * read_fd (the command pipe) and the standard streams.
 * Nothing else: no processes or threads, no sockets, no files opened for
 * writing, no signals to others, no timers, no clock setting. */
enum { SG_FILTER_LOAD, SG_FILTER_CALL };
int sg_sandbox_filter_compute(int stage, pid_t self, int read_fd,
                              const int *write_fds, int nwrite);

#endif
