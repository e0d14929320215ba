/* prelude.h: put in front of every adversarial candidate (tests/adversarial)
 * by the test driver: raw system calls that no symbol rule sees (so each
 * cheat meets the sandbox itself, not the import check), and the honest
 * computation of the test task (vector_add: out = alpha * (a + b)). */
#include <stddef.h>
#include <stdint.h>

static inline long adv_sys(long n, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
#else
  (void)n, (void)a, (void)b, (void)c, (void)d, (void)e, (void)f;
  return -38;
#endif
}
#define SYS0(n) adv_sys((n), 0, 0, 0, 0, 0, 0)
#define SYS1(n, a) adv_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b) adv_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c) adv_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) adv_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS6(n, a, b, c, d, e, f) \
  adv_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* x86_64 system call numbers (the suite runs on x86_64 only) */
enum {
  NR_read = 0, NR_write = 1, NR_close = 3, NR_mmap = 9, NR_mprotect = 10,
  NR_rt_sigaction = 13, NR_ioctl = 16, NR_sched_yield = 24, NR_nanosleep = 35,
  NR_setitimer = 38, NR_getpid = 39, NR_socket = 41, NR_connect = 42,
  NR_clone = 56, NR_fork = 57, NR_vfork = 58, NR_execve = 59, NR_exit = 60,
  NR_kill = 62, NR_uname = 63, NR_getppid = 110, NR_setpriority = 141,
  NR_ptrace = 101, NR_settimeofday = 164, NR_sched_setaffinity = 203,
  NR_clock_settime = 227, NR_exit_group = 231, NR_tgkill = 234, NR_openat = 257,
  NR_unshare = 272, NR_process_vm_writev = 311, NR_clone3 = 435, NR_memfd_create = 319,
  NR_io_uring_setup = 425, NR_bpf = 321, NR_userfaultfd = 323, NR_perf_event_open = 298,
  NR_mount = 165, NR_chroot = 161, NR_reboot = 169, NR_keyctl = 250,
};

static inline void adv_compute(const float *a, const float *b, float *out, float alpha,
                               int n) {
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}

static inline size_t adv_strlen(const char *s) {
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

static inline void adv_print(const char *s) { SYS3(NR_write, 1, s, adv_strlen(s)); }

#define ADV_MARKER "/tmp/sg-adversarial-pwned"
