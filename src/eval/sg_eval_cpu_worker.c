/* sg_eval_cpu_worker.c: the candidate's side of the cpu evaluator.
 *
 * The worker is a program of its own, specgen-eval-worker (its main is
 * sg_eval_worker_main.c), or, where that program cannot be found, this
 * executable run again under the name SG_EVAL_WORKER_NAME (argv[0]): a
 * constructor below sees the name and runs the worker instead of the
 * program's main. Either way a fresh exec, not a fork of the judge, so that
 * nothing of the judge's memory (its environment, API keys, the reference's
 * outputs) is in the candidate's address space. The program of its own
 * links only the C library and libseccomp: it starts in about a millisecond,
 * where specgen with its forty shared libraries took 20 to 35 ms, most of a
 * sandbox's setup.
 *
 * It maps the judge's shared memory (inputs read-only: the descriptor it is
 * given was opened O_RDONLY, so neither mmap nor mprotect can make it
 * writable), installs the loading filter, loads one shared object (whose
 * constructors run here, under that filter), installs the calling filter,
 * says it is ready and then, for each command byte on the command pipe,
 * calls the kernel once and answers one byte. It measures nothing and
 * decides nothing: the judge times the calls from its side and checks every
 * output itself.
 *
 * argv: NAME SO_PATH IN_BYTES OUT_BYTES SPEC... where each SPEC is I:OFF
 * (an input at OFF in the input memory), O:OFF (an output, in the output
 * memory) or S:OFF (a scalar's slot, in the input memory).
 * Descriptors: SG_WORKER_CMD_FD, SG_WORKER_REPLY_FD, SG_WORKER_IN_FD,
 * SG_WORKER_OUT_FD (sg_eval_cpu_worker.h).
 */
#include "eval/sg_eval_cpu_worker.h"

#include "eval/sg_sandbox.h"
#include "eval/sg_sandbox_filter.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

const char sg_eval_cpu_worker_name[] = SG_EVAL_WORKER_NAME;

typedef void (*call_fn)(void *const *args);

static _Noreturn void die(const char *what, const char *detail) {
  /* stderr goes to the judge, capped and sanitized */
  dprintf(2, "specgen worker: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  _exit(3);
}

/* The worker is the first process of its PID namespace, which ignores
 * signals it sends itself without a handler: abort() (a failed assert)
 * would end in a confusing SIGSEGV. With this handler it ends with the
 * code the judge reads as SIGABRT. */
static void on_abort(int sig) {
  (void)sig;
  _exit(SG_WORKER_ABORT_CODE);
}

static void put(int fd, char c) {
  while (write(fd, &c, 1) < 0 && errno == EINTR)
    ;
}

#ifdef SG_ASAN
/* A sanitized build: the sandbox could not set RLIMIT_AS from outside
 * (sg_sandbox.h), so the bound it passed is set here, above what this
 * process already holds (mostly AddressSanitizer's reserved shadow). */
static void asan_limit_address_space(void) {
  const char *v = getenv(SG_SANDBOX_ASAN_AS_VAR);
  unsigned long long bound = v ? strtoull(v, NULL, 10) : 0, pages = 0;
  FILE *f = bound ? fopen("/proc/self/statm", "re") : NULL;
  if (!f)
    return;
  if (fscanf(f, "%llu", &pages) != 1)
    pages = 0;
  fclose(f);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)(pages * (unsigned long long)sysconf(_SC_PAGESIZE) + bound);
  if (pages && setrlimit(RLIMIT_AS, &rl) != 0)
    die("RLIMIT_AS", strerror(errno));
}
#endif

int sg_eval_cpu_worker_main(int argc, char **argv) {
  if (argc < 4)
    die("bad arguments", NULL);
#ifdef SG_ASAN
  asan_limit_address_space();
#endif
  const char *so = argv[1];
  size_t in_bytes = strtoull(argv[2], NULL, 10);
  size_t out_bytes = strtoull(argv[3], NULL, 10);
  int nargs = argc - 4;
  char *in = NULL, *out = NULL;
  if (in_bytes) {
    in = mmap(NULL, in_bytes, PROT_READ, MAP_SHARED, SG_WORKER_IN_FD, 0);
    if (in == MAP_FAILED)
      die("mapping the inputs", strerror(errno));
  }
  if (out_bytes) {
    out = mmap(NULL, out_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, SG_WORKER_OUT_FD, 0);
    if (out == MAP_FAILED)
      die("mapping the outputs", strerror(errno));
  }
  close(SG_WORKER_IN_FD);
  close(SG_WORKER_OUT_FD);
  void **args = calloc((size_t)nargs + 1, sizeof *args);
  if (!args)
    die("out of memory", NULL);
  for (int i = 0; i < nargs; i++) {
    const char *spec = argv[4 + i];
    size_t off = strtoull(spec + 2, NULL, 10);
    if (spec[0] == 'O')
      args[i] = out + off;
    else
      args[i] = in + off;
  }
  signal(SIGABRT, on_abort);
  const int wfds[] = {1, 2, SG_WORKER_REPLY_FD};
  pid_t self = getpid();
  int rc = sg_sandbox_filter_compute(SG_FILTER_LOAD, self, SG_WORKER_CMD_FD, wfds, 3);
  if (rc)
    die("seccomp filter (loading)", strerror(-rc));
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    die("the kernel cannot be loaded", dlerror());
  void *sym = dlsym(h, SG_WORKER_SHIM);
  if (!sym)
    die("the kernel cannot be loaded", "the call shim is missing");
  call_fn fn;
  memcpy(&fn, &sym, sizeof fn);
  rc = sg_sandbox_filter_compute(SG_FILTER_CALL, self, SG_WORKER_CMD_FD, wfds, 3);
  if (rc)
    die("seccomp filter (calls)", strerror(-rc));
  put(SG_WORKER_REPLY_FD, 'R');
  for (;;) {
    char c;
    ssize_t n = read(SG_WORKER_CMD_FD, &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || c != 'c')
      _exit(0); /* no destructors, no atexit handlers: nothing runs after */
    fn(args);
    /* what the kernel printed reaches the judge now, not at an exit that a
     * kill for a wrong result never lets come: the judge shows it beside
     * the verdict (nothing buffered: no system call) */
    fflush(stdout);
    put(SG_WORKER_REPLY_FD, 'd');
  }
}

/* Runs before main: the worker when this executable was started as one. */
__attribute__((constructor)) static void worker_hook(int argc, char **argv,
                                                     char **envp) {
  (void)envp;
  if (argc >= 1 && argv && argv[0] && strcmp(argv[0], SG_EVAL_WORKER_NAME) == 0)
    _exit(sg_eval_cpu_worker_main(argc, argv));
}
