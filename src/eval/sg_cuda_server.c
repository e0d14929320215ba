/* sg_cuda_server.c: the code-running processes of the cuda evaluator's
 * judge (see the header for the protocol and why it exists).
 *
 * Messages on a socket pair, all fixed size:
 *   judge -> server: setup  {magic, nargs}, then per argument {kind, dtype,
 *                    handle[64], scalar[8]}
 *   server -> judge: opened {rc, msg[1024]}  (the buffers are mapped)
 *   judge -> server: 'L', {len}, the library's path (len bytes): load it now
 *   server -> judge: ready  {rc, msg[1024]}
 *   judge -> server: one byte per call: 'c' call, 'n' only synchronize,
 *                    'q' quit
 *   server -> judge: {rc} per call, the status of cuCtxSynchronize after it
 * The server initializes CUDA and loads its library while the judge
 * initializes its own context, so the three start-ups overlap. */
#include "eval/sg_cuda_server.h"

#include "common/sg_alloc.h"
#include "common/sg_clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVER_MAGIC 0x53474a31u /* "SGJ1" */

typedef struct setup_hdr {
  uint32_t magic, nargs;
} setup_hdr;

typedef struct setup_arg {
  int32_t kind, dtype;
  sg_CUipcMemHandle handle;
  unsigned char scalar[8];
} setup_arg;

typedef struct ready_msg {
  int32_t rc;
  char msg[1024];
} ready_msg;

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

/* ---- the server (child) ---------------------------------------------------- */

typedef void (*launch_fn)(void **args);

static void close_others(int keep) {
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536)
    max = 65536;
  for (int fd = 3; fd < max; fd++)
    if (fd != keep)
      close(fd);
}

/* The server: CUDA first (overlapping the judge's start-up), then the
 * judge's buffers, then, once the judge says so ('L', after it has made
 * itself unreadable to other processes), the library: the candidate's code
 * (its constructors included) runs only from then on. */
static _Noreturn void serve(int fd, int device) {
  ready_msg ready;
  memset(&ready, 0, sizeof ready);
  sg_cuda_api api;
  sg_err err;
  sg_err_clear(&err);
  sg_CUresult rc = 0;
  sg_CUdevice dev = 0;
  sg_CUcontext ctx = NULL;
  launch_fn launch = NULL;
  char buf[256];
  if (sg_cuda_api_load(&api, &err)) {
    ready.rc = -1;
    snprintf(ready.msg, sizeof ready.msg, "%s", err.msg);
  } else if ((rc = api.cuInit(0)) || (rc = api.cuDeviceGet(&dev, device)) ||
             (rc = api.cuDevicePrimaryCtxRetain(&ctx, dev)) ||
             (rc = api.cuCtxSetCurrent(ctx))) {
    ready.rc = -1;
    snprintf(ready.msg, sizeof ready.msg, "creating a CUDA context: %s",
             sg_cuda_api_errstr(&api, rc, buf, sizeof buf));
  }
  setup_hdr h;
  if (read_all(fd, &h, sizeof h) || h.magic != SERVER_MAGIC || h.nargs > 4096)
    _exit(3);
  setup_arg *a = sg_calloc(h.nargs ? h.nargs : 1, sizeof *a);
  void **args = sg_calloc(h.nargs ? h.nargs : 1, sizeof *args);
  sg_CUdeviceptr *ptrs = sg_calloc(h.nargs ? h.nargs : 1, sizeof *ptrs);
  if (read_all(fd, a, sizeof *a * h.nargs))
    _exit(3);
  for (uint32_t i = 0; ready.rc == 0 && i < h.nargs; i++) {
    if (a[i].kind == SG_ARG_SCALAR) {
      args[i] = a[i].scalar;
      continue;
    }
    if ((rc = api.cuIpcOpenMemHandle(&ptrs[i], a[i].handle,
                                     SG_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))) {
      ready.rc = -1;
      snprintf(ready.msg, sizeof ready.msg, "opening the judge's buffer %u: %s", i,
               sg_cuda_api_errstr(&api, rc, buf, sizeof buf));
    }
    args[i] = (void *)(uintptr_t)ptrs[i];
  }
  /* Phase one: the buffers are open (or not). */
  if (write_all(fd, &ready, sizeof ready) || ready.rc)
    _exit(ready.rc ? 4 : 3);
  char go;
  uint32_t len = 0;
  if (read_all(fd, &go, 1) || go != 'L' || read_all(fd, &len, sizeof len) ||
      len == 0 || len > SG_CUDA_SERVER_PATH_MAX)
    _exit(0);
  char *so = sg_calloc(1, (size_t)len + 1);
  if (read_all(fd, so, len))
    _exit(0);
  void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (lib)
    launch = (launch_fn)(uintptr_t)dlsym(lib, "sg_launch");
  if (!launch) {
    ready.rc = -2;
    snprintf(ready.msg, sizeof ready.msg, "%s", lib ? "no sg_launch symbol" : dlerror());
  }
  /* Phase two: the library is loaded (or not). */
  if (write_all(fd, &ready, sizeof ready) || ready.rc)
    _exit(ready.rc ? 4 : 3);
  for (;;) {
    char op;
    if (read_all(fd, &op, 1) || op == 'q')
      _exit(0);
    if (op == 'c')
      launch(args);
    /* The whole context, every stream: work the call left anywhere counts. */
    int32_t r = api.cuCtxSynchronize();
    if (write_all(fd, &r, sizeof r))
      _exit(3);
  }
}

int sg_cuda_server_start(sg_cuda_server *s, const char *who, int device, int keep_fd,
                         char *msg, size_t msg_len) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->who = who;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
    snprintf(msg, msg_len, "socketpair: %s", strerror(errno));
    return -1;
  }
  pid_t judge = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(msg, msg_len, "fork: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != judge)
      _exit(5);
    (void)keep_fd; /* closed below with every other descriptor */
    close_others(sv[1]);
    unsetenv("SG_RESULT_FD");
    serve(sv[1], device);
  }
  close(sv[1]);
  s->pid = pid;
  s->fd = sv[0];
  return 0;
}

int sg_cuda_server_setup(sg_cuda_server *s, const sg_task *task,
                         const sg_CUipcMemHandle *handles, const void *scalars8,
                         char *msg, size_t msg_len) {
  setup_hdr h = {SERVER_MAGIC, (uint32_t)task->nargs};
  setup_arg *a = sg_calloc(task->nargs ? task->nargs : 1, sizeof *a);
  for (size_t i = 0; i < task->nargs; i++) {
    a[i].kind = (int32_t)task->args[i].kind;
    a[i].dtype = (int32_t)task->args[i].dtype;
    if (task->args[i].kind == SG_ARG_SCALAR)
      memcpy(a[i].scalar, (const unsigned char *)scalars8 + 8 * i, 8);
    else
      a[i].handle = handles[i];
  }
  int rc = write_all(s->fd, &h, sizeof h) || write_all(s->fd, a, sizeof *a * task->nargs);
  free(a);
  if (rc) {
    snprintf(msg, msg_len, "the %s's process is gone before setup", s->who);
    return -1;
  }
  return 0;
}

static const char *end_str(pid_t pid, char *buf, size_t len) {
  int st = 0;
  pid_t w = 0;
  for (int i = 0; i < 100 && (w = waitpid(pid, &st, WNOHANG)) == 0; i++)
    usleep(10000);
  if (w == pid && WIFSIGNALED(st))
    snprintf(buf, len, "died of signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else if (w == pid && WIFEXITED(st))
    snprintf(buf, len, "exited with code %d", WEXITSTATUS(st));
  else
    snprintf(buf, len, "closed its connection");
  return buf;
}

/* Waits until fd is readable or limit_s passes: 1 readable, 0 timeout. */
static int wait_readable(int fd, double limit_s) {
  double deadline = sg_clock_now_s() + limit_s;
  for (;;) {
    double left = deadline - sg_clock_now_s();
    if (left <= 0)
      return 0;
    struct pollfd p = {fd, POLLIN, 0};
    int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
    int r = poll(&p, 1, ms);
    if (r > 0)
      return 1;
    if (r < 0 && errno != EINTR)
      return 1; /* let the read report it */
  }
}

int sg_cuda_server_ready(sg_cuda_server *s, double limit_s, char *msg,
                         size_t msg_len) {
  ready_msg r;
  if (!wait_readable(s->fd, limit_s)) {
    snprintf(msg, msg_len, "the %s's process did not start within %.0f s", s->who,
             limit_s);
    return -4;
  }
  if (read_all(s->fd, &r, sizeof r)) {
    char b[128];
    snprintf(msg, msg_len, "the %s's process %s while loading", s->who,
             end_str(s->pid, b, sizeof b));
    close(s->fd);
    s->fd = -1;
    return -3;
  }
  r.msg[sizeof r.msg - 1] = 0;
  if (r.rc) {
    snprintf(msg, msg_len, "%s", r.msg);
    return r.rc;
  }
  return 0;
}

int sg_cuda_server_load(sg_cuda_server *s, const char *so, char *msg, size_t msg_len) {
  char go = 'L';
  size_t n = strlen(so);
  if (n == 0 || n > SG_CUDA_SERVER_PATH_MAX) {
    snprintf(msg, msg_len, "the %s's library path is empty or longer than %d bytes",
             s->who, SG_CUDA_SERVER_PATH_MAX);
    return -1;
  }
  uint32_t len = (uint32_t)n;
  if (s->fd < 0 || write_all(s->fd, &go, 1) || write_all(s->fd, &len, sizeof len) ||
      write_all(s->fd, so, n)) {
    snprintf(msg, msg_len, "the %s's process is gone before loading its library", s->who);
    return -3;
  }
  return 0;
}

sg_cuda_call_end sg_cuda_server_call(sg_cuda_server *s, bool nop, double limit_s,
                                     double *ms, int *cu_rc, char *msg,
                                     size_t msg_len) {
  char op = nop ? 'n' : 'c';
  *cu_rc = 0;
  *ms = 0;
  double t0 = sg_clock_now_s();
  int32_t r = 0;
  if (s->fd < 0 || write_all(s->fd, &op, 1))
    goto died;
  if (!wait_readable(s->fd, limit_s)) {
    *ms = (sg_clock_now_s() - t0) * 1e3;
    kill(s->pid, SIGKILL);
    snprintf(msg, msg_len, "no answer within %.1f s", limit_s);
    return SG_CALL_TIMEOUT;
  }
  if (read_all(s->fd, &r, sizeof r))
    goto died;
  *ms = (sg_clock_now_s() - t0) * 1e3;
  *cu_rc = r;
  return SG_CALL_DONE;
died: {
  char b[128];
  snprintf(msg, msg_len, "the %s's process %s", s->who, end_str(s->pid, b, sizeof b));
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  return SG_CALL_DIED;
}
}

void sg_cuda_server_stop(sg_cuda_server *const s[], size_t n) {
  /* All are asked first, so that their exits (each tears down a CUDA
   * context, a tenth of a second or more) overlap. */
  for (size_t i = 0; i < n; i++) {
    if (s[i]->pid > 0 && s[i]->fd >= 0) {
      char q = 'q';
      (void)!write(s[i]->fd, &q, 1);
    }
    if (s[i]->fd >= 0)
      close(s[i]->fd);
    s[i]->fd = -1;
  }
  for (int round = 0; round <= 250; round++) {
    size_t left = 0;
    for (size_t i = 0; i < n; i++) {
      int st;
      if (s[i]->pid <= 0)
        continue;
      if (round == 250)
        kill(s[i]->pid, SIGKILL);
      if (waitpid(s[i]->pid, &st, round == 250 ? 0 : WNOHANG) != 0)
        s[i]->pid = 0;
      else
        left++;
    }
    if (!left)
      return;
    usleep(2000);
  }
}
