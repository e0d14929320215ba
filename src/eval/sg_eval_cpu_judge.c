/* sg_eval_cpu_judge.c: the trusted side of the cpu evaluator's run stage
 * (docs/eval.md, "The protocol").
 *
 * The judge runs in the evaluating process and never runs kernel code. It
 * puts the inputs in shared memory (a memfd it writes; each worker maps it
 * through a descriptor opened read-only), gives each side its own output
 * memory, and starts two workers (sg_eval_cpu_worker.c) in two sandboxes:
 * one loads the reference, one the candidate; the candidate never sees the
 * reference's outputs, and neither can reach the other. Then, for every
 * call, warm-ups included: fresh input values (drawn here), both outputs
 * poisoned, one call of each side (a byte on its command pipe, a byte back),
 * the wall time around it taken on this side, and the candidate's output
 * compared with the reference's. The workers' CPU clocks
 * (clock_getcpuclockid) tell whether a side kept running between its calls
 * (work done after answering, or spent slowing the other side): that time is
 * charged to its call, and more than GAP_MAX_S of it is rejected.
 *
 * What it must never do: believe a number from a worker (it reads none), run
 * candidate code, or wait on a worker without a deadline.
 */
#include "eval/sg_eval_cpu_judge.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_stats.h"
#include "eval/sg_eval_cpu.h"
#include "eval/sg_eval_cpu_worker.h"
#include "eval/sg_eval_worker_paths.h"
#include "eval/sg_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ALIGN 64

enum { REF, CAND };

typedef struct side {
  const char *who;       /* "reference" or "kernel" */
  sg_sandbox *sb;
  int cmd_w, reply_r;    /* the judge's ends */
  int out_fd;
  char *out;             /* its output memory, mapped here */
  clockid_t clk;
  bool have_clk;
  int64_t cpu_mark;      /* its CPU clock when it last answered */
  sg_sandbox_outcome o;
  bool ended, killed;
} side;

typedef struct judge {
  const sg_task *t;
  size_t n;
  size_t *off;           /* per argument: offset in its memory */
  size_t in_bytes, out_bytes;
  int in_fd;
  char *in;
  side s[2];
  uint64_t seed;
  double budget_s, used_s; /* the kernel's wall-clock budget and use */
  double deadline;        /* for the reference and the setup */
  double max_abs, max_rel;
  int64_t max_gap_ns;
  sg_eval_cpu_gaps gaps;
  bool cand_poisoned;     /* the last comparison poisoned the kernel's outputs */
  /* where we are, for messages */
  const char *phase;
  int call, calls;
} judge;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(const side *s) {
  struct timespec ts;
  if (!s->have_clk || clock_gettime(s->clk, &ts) != 0)
    return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t arg_bytes(const sg_task_arg *a) {
  return a->kind == SG_ARG_SCALAR ? 8 : (size_t)a->numel * sg_dtype_size(a->dtype);
}

static size_t align_up(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

/* A shared memory region of len bytes (at least one page), mapped here. */
static int make_memfd(const char *name, size_t len, int *fd, char **map, sg_err *err) {
  size_t size = len ? len : 4096;
  *fd = memfd_create(name, MFD_CLOEXEC);
  if (*fd < 0)
    return sg_err_set(err, SG_EIO, "memfd_create: %s", strerror(errno));
  if (ftruncate(*fd, (off_t)size) != 0) {
    int e = errno;
    close(*fd);
    *fd = -1;
    return sg_err_set(err, SG_EIO, "sizing shared memory (%zu bytes): %s", size,
                      strerror(e));
  }
  *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (*map == MAP_FAILED) {
    int e = errno;
    close(*fd);
    *fd = -1;
    *map = NULL;
    return sg_err_set(err, SG_EIO, "mapping shared memory (%zu bytes): %s", size,
                      strerror(e));
  }
  return 0;
}

/* The layout: inputs and scalars in the input memory, outputs in each
 * side's output memory; scalar slots written once. */
static int layout(judge *j, sg_err *err) {
  const sg_task *t = j->t;
  j->off = sg_calloc(t->nargs ? t->nargs : 1, sizeof *j->off);
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    size_t *total = a->kind == SG_ARG_OUTPUT ? &j->out_bytes : &j->in_bytes;
    j->off[i] = *total;
    *total = align_up(*total + arg_bytes(a));
  }
  int rc = make_memfd("specgen-inputs", j->in_bytes, &j->in_fd, &j->in, err);
  for (int k = 0; k < 2 && rc == 0; k++)
    rc = make_memfd(k == REF ? "specgen-ref-out" : "specgen-cand-out", j->out_bytes,
                    &j->s[k].out_fd, &j->s[k].out, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind != SG_ARG_SCALAR)
      continue;
    char *p = j->in + j->off[i];
    switch (a->dtype) {
    case SG_DTYPE_F32: { float v = (float)a->scalar_value; memcpy(p, &v, 4); break; }
    case SG_DTYPE_F64: { double v = a->scalar_value; memcpy(p, &v, 8); break; }
    case SG_DTYPE_I32: { int32_t v = (int32_t)a->scalar_value; memcpy(p, &v, 4); break; }
    default: { int64_t v = (int64_t)a->scalar_value; memcpy(p, &v, 8); break; }
    }
  }
  return 0;
}

/* ---- the workers ------------------------------------------------------------- */

static void end_side(side *s, bool timed_out, bool died) {
  if (s->ended)
    return;
  sg_err ignore;
  /* one that died on its own gets a moment to be reaped with its own
   * signal or exit code, not the SIGKILL that ends every worker */
  if (s->sb && died)
    sg_sandbox_wait(s->sb, -1, 2.0);
  if (s->sb && sg_sandbox_finish(s->sb, timed_out, &s->o, &ignore) != 0)
    memset(&s->o, 0, sizeof s->o);
  s->sb = NULL;
  s->ended = true;
  s->killed = timed_out;
  if (s->cmd_w >= 0)
    close(s->cmd_w);
  if (s->reply_r >= 0)
    close(s->reply_r);
  s->cmd_w = s->reply_r = -1;
}

/* Whether the unprivileged user the sandbox drops to may run path: as
 * root it becomes nobody, so every directory on the way must be open to
 * others and the program readable and executable by them (a build tree in
 * a private home directory is not); anyone else keeps their own ids. */
static bool others_may_run(const char *path) {
  if (geteuid() != 0)
    return access(path, X_OK) == 0;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH))
    return false;
  char *dir = sg_strdup(path);
  bool ok = true;
  for (char *slash = strrchr(dir, '/'); ok && slash && slash != dir;
       slash = strrchr(dir, '/')) {
    *slash = '\0';
    ok = stat(dir, &st) == 0 && (st.st_mode & S_IXOTH);
  }
  free(dir);
  return ok;
}

/* NULL: this executable, run again as the worker (slower to start: it
 * loads all of specgen's shared libraries). */
static const char *worker_prog;
static bool worker_prog_known;

void sg_eval_cpu_worker_program_set(const char *prog) {
  worker_prog = prog;
  worker_prog_known = true;
}

const char *sg_eval_cpu_worker_program(void) {
  if (worker_prog_known)
    return worker_prog;
  worker_prog_known = true;
  const char *prog = NULL;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  size_t rl = strlen(SG_WORKER_BUILD_ROOT);
  bool in_build = n > 0 && strncmp(self, SG_WORKER_BUILD_ROOT, rl) == 0 && self[rl] == '/';
  if (in_build && others_may_run(SG_WORKER_BUILD_PATH))
    prog = SG_WORKER_BUILD_PATH;
  else if (!in_build && others_may_run(SG_WORKER_INSTALL_PATH))
    prog = SG_WORKER_INSTALL_PATH;
  worker_prog = prog;
  return prog;
}

/* Starts the worker of side k on so_path; its sandbox's setup goes on
 * (start_sides waits for both). */
static int start_side(judge *j, int k, const char *so_path,
                      const sg_eval_cpu_judge_opts *jo, sg_err *err) {
  side *s = &j->s[k];
  int cmd[2], reply[2];
  if (pipe2(cmd, O_CLOEXEC) != 0)
    return sg_err_set(err, SG_EIO, "pipe: %s", strerror(errno));
  if (pipe2(reply, O_CLOEXEC) != 0) {
    close(cmd[0]);
    close(cmd[1]);
    return sg_err_set(err, SG_EIO, "pipe: %s", strerror(errno));
  }
  fcntl(reply[0], F_SETFL, O_NONBLOCK);
  /* the inputs, through a descriptor that cannot write */
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", j->in_fd);
  int in_ro = open(path, O_RDONLY | O_CLOEXEC);
  if (in_ro < 0) {
    int e = errno;
    close(cmd[0]); close(cmd[1]); close(reply[0]); close(reply[1]);
    return sg_err_set(err, SG_EIO, "reopening the inputs read-only: %s", strerror(e));
  }
  sg_sandbox_limits lim;
  sg_sandbox_limits_default(&lim);
  lim.wall_s = 0; /* the judge keeps the time itself */
  lim.cpu_s = jo->cpu_limit_s;
  uint64_t need = j->in_bytes + j->out_bytes + (UINT64_C(2) << 30);
  if (lim.address_space_bytes < need)
    lim.address_space_bytes = need;
  lim.pin_cpu = jo->cpu;
  lim.work_dir = jo->work_dir;
  lim.isolate = true;
  lim.isolate_network = true;
  lim.forbid_spawn = true;
#if defined(__SANITIZE_ADDRESS__)
  /* A sanitized build's worker: the sanitizer's own fault handlers make
   * system calls the filters refuse (a crash would read as rejected). */
  static char *const empty_env[] = {
      "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:"
      "handle_abort=0:detect_leaks=0",
      NULL};
#else
  static char *const empty_env[] = {NULL};
#endif
  lim.env = empty_env;
  lim.pass_fds[0] = cmd[0];
  lim.pass_fds[1] = reply[1];
  lim.pass_fds[2] = in_ro;
  lim.pass_fds[3] = s->out_fd;
  lim.npass_fds = 4;
  size_t nargs = j->t->nargs;
  char **argv = sg_calloc(nargs + 5, sizeof *argv);
  const char *prog = sg_eval_cpu_worker_program();
  lim.program = prog;
  argv[0] = sg_strdup(SG_EVAL_WORKER_NAME);
  /* relative to the worker's working directory (the scratch directory,
   * entered before it drops its privileges): no parent directory of it
   * needs to be open to nobody */
  size_t wl = jo->work_dir ? strlen(jo->work_dir) : 0;
  if (wl && strncmp(so_path, jo->work_dir, wl) == 0 && so_path[wl] == '/')
    argv[1] = sg_asprintf("./%s", so_path + wl + 1);
  else
    argv[1] = sg_strdup(so_path);
  argv[2] = sg_asprintf("%zu", j->in_bytes ? j->in_bytes : 4096);
  argv[3] = sg_asprintf("%zu", j->out_bytes ? j->out_bytes : 4096);
  for (size_t i = 0; i < nargs; i++) {
    sg_arg_kind kind = j->t->args[i].kind;
    argv[4 + i] = sg_asprintf("%c:%zu", kind == SG_ARG_OUTPUT ? 'O'
                                        : kind == SG_ARG_SCALAR ? 'S' : 'I', j->off[i]);
  }
  int rc = sg_sandbox_spawn_begin(&lim, argv, prog == NULL, &s->sb, err);
  for (size_t i = 0; i < nargs + 4; i++)
    free(argv[i]);
  free(argv);
  close(cmd[0]);
  close(reply[1]);
  close(in_ro);
  if (rc) {
    close(cmd[1]);
    close(reply[0]);
    return sg_err_prefix(err, "starting the %s's worker", s->who);
  }
  s->cmd_w = cmd[1];
  s->reply_r = reply[0];
  return 0;
}

/* Both workers, their sandboxes set up side by side (each setup is a few
 * system calls and waits for this process to map its user namespace, so
 * two in turn took about twice as long). */
static int start_sides(judge *j, const sg_eval_cpu_judge_opts *jo, sg_err *err) {
  int rc = 0;
  for (int k = 0; k < 2 && rc == 0; k++)
    rc = start_side(j, k, k == REF ? jo->ref_so : jo->cand_so, jo, err);
  if (rc)
    return rc;
  sg_sandbox *sbs[2] = {j->s[REF].sb, j->s[CAND].sb};
  size_t failed = 0;
  if ((rc = sg_sandbox_spawn_wait(sbs, 2, &failed, err)) != 0)
    return sg_err_prefix(err, "starting the %s's worker", j->s[failed].who);
  for (int k = 0; k < 2; k++)
    j->s[k].have_clk = clock_getcpuclockid(sg_sandbox_pid(j->s[k].sb), &j->s[k].clk) == 0;
  return 0;
}

typedef enum call_end {
  CALL_OK,
  CALL_TIMEOUT,
  CALL_DIED,
  CALL_PROTOCOL, /* it answered with something other than one byte */
} call_end;

/* Waits for one reply byte `want` from side k until `limit` (absolute, s). */
static call_end await(judge *j, int k, char want, double limit) {
  side *s = &j->s[k];
  for (;;) {
    double left = limit - sg_clock_now_s();
    if (left < 0)
      left = 0;
    int w = sg_sandbox_wait(s->sb, s->reply_r, left);
    if (w == 1) {
      char buf[16];
      ssize_t n = read(s->reply_r, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n == 0)
        return CALL_DIED;
      return n == 1 && buf[0] == want ? CALL_OK : CALL_PROTOCOL;
    }
    if (w == 2)
      return CALL_DIED;
    if (sg_clock_now_s() >= limit)
      return CALL_TIMEOUT;
  }
}

/* One call of side k; *wall_ns is its wall time, taken here. The CPU the
 * side used since it last answered is its gap (checked by the caller). */
static call_end call(judge *j, int k, int64_t *wall_ns, int64_t *gap_ns) {
  side *s = &j->s[k];
  *gap_ns = s->cpu_mark ? cpu_ns(s) - s->cpu_mark : 0;
  /* a byte nobody asked for is a forged answer */
  char junk;
  if (read(s->reply_r, &junk, 1) == 1)
    return CALL_PROTOCOL;
  double limit = k == CAND ? sg_clock_now_s() + fmax(j->budget_s - j->used_s, 0)
                           : j->deadline;
  int64_t t0 = now_ns();
  char c = 'c';
  if (write(s->cmd_w, &c, 1) != 1)
    return CALL_DIED;
  call_end e = await(j, k, 'd', limit);
  int64_t t1 = now_ns();
  *wall_ns = t1 - t0;
  if (k == CAND)
    j->used_s += (double)(t1 - t0) / 1e9;
  s->cpu_mark = cpu_ns(s);
  return e;
}

/* ---- inputs and checks ------------------------------------------------------- */

/* Input set `set` for the correctness checks (exactly as drawn since the
 * first version: a seed reproduces them), or fresh values for call `set`
 * of the timed runs. */
static void draw(judge *j, uint64_t set, bool fresh) {
  const sg_task *t = j->t;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind != SG_ARG_INPUT)
      continue;
    sg_rng rng;
    sg_rng_seed(&rng, sg_rng_derive(j->seed, set, i));
    if (fresh)
      sg_eval_refresh(a, j->in + j->off[i], &rng);
    else
      sg_eval_fill(a, j->in + j->off[i], &rng);
  }
}

/* The candidate's outputs before every call (unless the last comparison
 * already poisoned them as it went); the reference's only where they are
 * checked for unwritten elements (the correctness sets and the first timed
 * call): a reference writes all of its outputs, and poisoning them again
 * costs a pass over memory per call. */
static void poison(judge *j, bool ref_too) {
  for (size_t i = 0; i < j->t->nargs; i++) {
    const sg_task_arg *a = &j->t->args[i];
    if (a->kind != SG_ARG_OUTPUT)
      continue;
    if (ref_too)
      sg_eval_poison(a->dtype, j->s[REF].out + j->off[i], a->numel);
    if (!j->cand_poisoned)
      sg_eval_poison(a->dtype, j->s[CAND].out + j->off[i], a->numel);
  }
  j->cand_poisoned = false;
}

/* Compares the candidate's outputs with the reference's, poisoning them
 * for the next call as it goes; NULL when all is well, else the failure
 * (status and message). check_ref: also look for elements the reference
 * left unwritten (a broken task). */
static json_t *compare(judge *j, bool check_ref) {
  const sg_task *t = j->t;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind != SG_ARG_OUTPUT)
      continue;
    const char *ref = j->s[REF].out + j->off[i];
    char *cand = j->s[CAND].out + j->off[i];
    if (check_ref)
      for (int64_t e = 0; e < a->numel; e++)
        if (sg_eval_is_poison(a->dtype, ref, e))
          return json_pack("{s:s,s:s++}", "status", "infra_error", "message",
                           "the reference left elements of ", a->name,
                           " unwritten (a bug in the task)");
    sg_eval_cmp cmp;
    sg_eval_compare_poison(a->dtype, cand, ref, a->numel, t->atol, t->rtol, &cmp);
    if (cmp.max_abs > j->max_abs)
      j->max_abs = cmp.max_abs;
    if (cmp.max_rel > j->max_rel)
      j->max_rel = cmp.max_rel;
    if (cmp.first_bad >= 0) {
      char *msg = sg_eval_cmp_message(a, &cmp, t->atol, t->rtol);
      json_t *f = json_pack("{s:s,s:s,s:I}", "status", "numerical_error", "message",
                            msg, "first_mismatch", (json_int_t)cmp.first_bad);
      free(msg);
      return f;
    }
  }
  j->cand_poisoned = true;
  return NULL;
}

/* "during correctness check 2 of 3", "during timed call 7 of 50 (warm-ups
 * count)" etc. */
static char *where(const judge *j) {
  if (strcmp(j->phase, "load") == 0)
    return sg_strdup("while loading the kernel (constructors run here)");
  if (strcmp(j->phase, "correctness") == 0)
    return sg_asprintf("during correctness check %d of %d", j->call + 1, j->calls);
  return sg_asprintf("during call %d of %d of the timed runs (warm-ups included; "
                     "every call is checked, on fresh inputs)",
                     j->call + 1, j->calls);
}

/* ---- verdicts ---------------------------------------------------------------- */

/* The last bytes of what a worker printed, made printable, for a message. */
static void append_output(sg_buf *b, const sg_sandbox_outcome *o) {
  const char *s = o->err && o->err[0] ? o->err : o->out ? o->out : "";
  size_t len = strlen(s);
  if (!len)
    return;
  size_t keep = len > 1024 ? 1024 : len;
  char *tail = sg_strdup(s + (len - keep));
  sg_sandbox_sanitize(tail, keep);
  sg_buf_printf(b, "\n%s (last %zu bytes):\n%s", o->err && o->err[0] ? "stderr" : "stdout",
                keep, tail);
  free(tail);
}

/* What a side's end means, once it has been ended (died, or killed after a
 * timeout or a protocol violation). */
static void verdict_end(judge *j, int k, call_end e, sg_eval_result *r, sg_buf *msg) {
  side *s = &j->s[k];
  char *w = where(j);
  char *at = strcmp(j->phase, "load") == 0
                 ? sg_strdup(w)
                 : sg_asprintf("%s, in the %s", w, k == CAND ? "candidate" : "reference");
  free(w);
  if (k == REF) {
    r->status = SG_EVAL_INFRA_ERROR;
    if (e == CALL_TIMEOUT)
      sg_buf_printf(msg, "the reference did not finish in time %s", at);
    else if (s->o.end == SG_SANDBOX_SIGNALED) {
      char *sig = sg_eval_signal_text(s->o.signal);
      sg_buf_printf(msg, "the reference was killed by %s %s", sig, at);
      free(sig);
    } else
      sg_buf_printf(msg, "the reference's worker ended (exit code %d) %s",
                    s->o.exit_code, at);
    append_output(msg, &s->o);
    free(at);
    return;
  }
  if (e == CALL_TIMEOUT) {
    r->status = SG_EVAL_TIMEOUT;
    sg_buf_printf(msg, "the kernel ran for more than %.3g s in total (wall clock) %s",
                  j->budget_s, at);
  } else if (e == CALL_PROTOCOL) {
    r->status = SG_EVAL_REJECTED;
    sg_buf_printf(msg, "rejected: the kernel wrote to the evaluator's reply channel "
                  "(a forged answer) %s", at);
  } else if (s->o.end == SG_SANDBOX_SIGNALED) {
    int sig_no = s->o.signal;
    char *sig = sg_eval_signal_text(sig_no);
    if (sig_no == SIGXCPU || sig_no == SIGKILL) {
      r->status = SG_EVAL_TIMEOUT;
      sg_buf_printf(msg, "killed by %s: the kernel used more than its CPU time %s", sig, at);
    } else if (sig_no == SIGSYS) {
      r->status = SG_EVAL_REJECTED;
      sg_buf_printf(msg,
                    "rejected: killed by %s %s: the kernel made a system call a "
                    "kernel has no use for (a kernel may compute, allocate memory "
                    "and print; it may not create processes or threads, open "
                    "files, sockets or timers, sleep, or signal)", sig, at);
    } else if (sig_no == SIGXFSZ) {
      r->status = SG_EVAL_RUNTIME_ERROR;
      sg_buf_printf(msg, "killed by %s: the kernel wrote a file over the size limit %s",
                    sig, at);
    } else {
      r->status = SG_EVAL_RUNTIME_ERROR;
      sg_buf_printf(msg, "killed by %s %s", sig, at);
      if (sig_no == SIGSEGV || sig_no == SIGBUS)
        sg_buf_printf(msg, " (an out-of-bounds or null access, a write into an "
                      "input (inputs are read-only), or memory exhausted)");
    }
    free(sig);
  } else {
    r->status = SG_EVAL_RUNTIME_ERROR;
    if (s->o.exit_code == SG_WORKER_ABORT_CODE)
      sg_buf_printf(msg, "killed by SIGABRT (aborted) %s: abort() or a failed assertion",
                    at);
    else if (strcmp(j->phase, "load") == 0)
      sg_buf_printf(msg, "the kernel cannot be loaded, or exited %s (exit code %d)", at,
                    s->o.exit_code);
    else
      sg_buf_printf(msg, "exited with code %d before reporting a result %s",
                    s->o.exit_code, at);
  }
  append_output(msg, &s->o);
  free(at);
}

/* Fills r from a failure object (numerical_error, infra_error). */
static void verdict_fail(judge *j, json_t *f, sg_eval_result *r, sg_buf *msg) {
  int st = sg_eval_status_parse(json_string_value(json_object_get(f, "status")));
  r->status = st >= 0 ? (sg_eval_status)st : SG_EVAL_INFRA_ERROR;
  const json_t *fm = json_object_get(f, "first_mismatch");
  if (json_is_integer(fm))
    r->first_mismatch = json_integer_value(fm);
  char *at = where(j);
  const char *m = json_string_value(json_object_get(f, "message"));
  if (strcmp(j->phase, "correctness") == 0)
    sg_buf_printf(msg, "wrong result on input set %d of %d: %s", j->call + 1, j->calls,
                  m ? m : "");
  else
    sg_buf_printf(msg, "wrong result %s: %s", at, m ? m : "");
  free(at);
  r->max_abs_err = j->max_abs;
  r->max_rel_err = j->max_rel;
}

/* ---- the protocol ------------------------------------------------------------ */

typedef struct run_log {
  char *order;
  json_t *ref_ns, *cand_ns;
  json_t *phases;
} run_log;

/* CPU a worker may use between two of its calls: answering and waiting for
 * the next command take microseconds, but a kernel without IRQ time
 * accounting charges an interrupt burst (softirqs run up to 2 ms at a time)
 * to whichever task is current, so on a busy machine one gap now and then
 * comes out over 2 ms for an honest worker, and on some virtual machines
 * every gap does for a while. The reference's worker runs the same loop
 * beside it and is measured the same way, so its largest gap so far is the
 * machine's noise floor: a candidate's gap counts as over when it exceeds
 * GAP_MAX_S plus that floor (the floor counted up to GAP_ALONE_S, so that no
 * floor excuses everything). A kernel that works between its calls does so
 * on every call: rejected after GAP_REPEATS gaps over, or one over
 * GAP_ALONE_S plus the floor. Either way the time is charged to the call it
 * follows, so a gap the floor lets through still costs the kernel. */
#define GAP_MAX_S 0.002
#define GAP_REPEATS 2
#define GAP_ALONE_S 0.020

static bool gap_over(const sg_eval_cpu_gaps *g, int64_t gap_ns, double limit_s) {
  double floor_ns = fmin((double)g->ref_floor_ns, GAP_ALONE_S * 1e9);
  return (double)gap_ns > limit_s * 1e9 + floor_ns;
}

void sg_eval_cpu_gaps_reference(sg_eval_cpu_gaps *g, int64_t gap_ns) {
  if (gap_ns > g->ref_floor_ns)
    g->ref_floor_ns = gap_ns;
}

bool sg_eval_cpu_gaps_candidate(sg_eval_cpu_gaps *g, int64_t gap_ns) {
  if (!gap_over(g, gap_ns, GAP_MAX_S))
    return false;
  g->over++;
  return g->over >= GAP_REPEATS || gap_over(g, gap_ns, GAP_ALONE_S);
}

/* One step: fresh inputs, poisoned outputs, the reference, the kernel, the
 * comparison. Returns 0 when all is well; else 1, with r and msg filled. */
static int step(judge *j, uint64_t set, bool fresh, bool check_ref, int64_t ns[2],
                sg_eval_result *r, sg_buf *msg) {
  draw(j, set, fresh);
  poison(j, check_ref);
  for (int k = 0; k < 2; k++) {
    int64_t gap;
    call_end e = call(j, k, &ns[k], &gap);
    if (gap > j->max_gap_ns)
      j->max_gap_ns = gap;
    if (k == REF)
      sg_eval_cpu_gaps_reference(&j->gaps, gap);
    if (e == CALL_OK && k == CAND && sg_eval_cpu_gaps_candidate(&j->gaps, gap)) {
      r->status = SG_EVAL_REJECTED;
      char *at = where(j);
      sg_buf_printf(msg, "rejected: the kernel kept running after its call had "
                    "returned (%.3g ms of CPU time between two calls, %s); a "
                    "kernel must finish its work before it returns",
                    (double)gap / 1e6, at);
      free(at);
      return 1;
    }
    ns[k] += gap; /* what it did between calls belongs to its calls */
    if (e != CALL_OK) {
      end_side(&j->s[k], e != CALL_DIED, e == CALL_DIED);
      verdict_end(j, k, e, r, msg);
      return 1;
    }
  }
  json_t *f = compare(j, check_ref);
  if (f) {
    verdict_fail(j, f, r, msg);
    json_decref(f);
    return 1;
  }
  return 0;
}

static int run_protocol(judge *j, const sg_eval_cpu_judge_opts *jo, sg_eval_result *r,
                        sg_buf *msg, run_log *lg) {
  int64_t ns[2];
  j->phase = "correctness";
  j->calls = jo->trials;
  double t = sg_clock_now_s();
  for (j->call = 0; j->call < jo->trials; j->call++)
    if (step(j, (uint64_t)j->call, false, true, ns, r, msg))
      return 1;
  json_object_set_new(lg->phases, "correctness", json_real(sg_clock_now_s() - t));
  j->phase = "timing";
  int total = jo->warmups + jo->runs;
  j->calls = total;
  t = sg_clock_now_s();
  for (j->call = 0; j->call < total; j->call++) {
    bool timed = j->call >= jo->warmups;
    if (step(j, 10000u + (uint64_t)j->call, true, j->call == 0, ns, r, msg))
      return 1;
    lg->order[2 * j->call] = timed ? 'R' : 'r';
    lg->order[2 * j->call + 1] = timed ? 'C' : 'c';
    if (timed) {
      json_array_append_new(lg->ref_ns, json_integer(ns[REF]));
      json_array_append_new(lg->cand_ns, json_integer(ns[CAND]));
    }
  }
  json_object_set_new(lg->phases, "timing", json_real(sg_clock_now_s() - t));
  /* the last call's gap: what it did after its last answer, while we compared */
  int64_t last_gap = j->s[CAND].cpu_mark ? cpu_ns(&j->s[CAND]) - j->s[CAND].cpu_mark : 0;
  if (sg_eval_cpu_gaps_candidate(&j->gaps, last_gap)) {
    r->status = SG_EVAL_REJECTED;
    sg_buf_printf(msg, "rejected: the kernel kept running after its last call had "
                  "returned (%.3g ms of CPU time)", (double)last_gap / 1e6);
    return 1;
  }
  return 0;
}

static double ns_array_ms(const json_t *arr, bool median) {
  size_t n = json_array_size(arr);
  if (n == 0)
    return NAN;
  double *x = sg_malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = (double)json_integer_value(json_array_get(arr, i)) / 1e6;
  double v = median ? sg_stats_median(x, n) : sg_stats_mean(x, n);
  free(x);
  return v;
}

static void set_isolation(sg_eval_result *r, const sg_sandbox_outcome *o, bool known) {
  if (r->isolation)
    json_decref(r->isolation);
  r->isolation = NULL;
  if (!known)
    return;
  r->network_isolated = o->network_isolated;
  r->isolation = json_pack("{s:b,s:b,s:b,s:b,s:b,s:b,s:s,s:b}", "user", o->user_isolated,
                           "mount", o->mount_isolated, "pid", o->pid_isolated, "ipc",
                           o->ipc_isolated, "network", o->network_isolated,
                           "unprivileged", o->unprivileged, "seccomp", "allowlist",
                           "separate_judge", 1);
}

/* Ends both workers and fills r (and *log) from what the protocol found. */
static void report(judge *j, const sg_eval_cpu_judge_opts *jo, bool failed,
                   sg_eval_result *r, sg_buf *msg, run_log *lg, json_t **log) {
  /* each worker's CPU time (for the benchmarks: the workers are reaped in
   * their PID namespace, so this process's children's times miss them) */
  double worker_cpu_s = 0;
  for (int k = 0; k < 2; k++)
    if (j->s[k].sb && !j->s[k].ended)
      worker_cpu_s += (double)cpu_ns(&j->s[k]) / 1e9;
  json_object_set_new(lg->phases, "workers_cpu", json_real(worker_cpu_s));
  double t_end = sg_clock_now_s();
  /* both killed first: their exits (unmapping the shared memory, the
   * namespaces' teardown) overlap */
  for (int k = 0; k < 2; k++)
    if (j->s[k].sb && !j->s[k].ended)
      sg_sandbox_kill(j->s[k].sb);
  for (int k = 0; k < 2; k++)
    end_side(&j->s[k], false, false);
  json_object_set_new(lg->phases, "teardown", json_real(sg_clock_now_s() - t_end));
  /* a wrong result with what the kernel printed: often its own check that
   * returned early ("Error: the input is not lower-triangular") */
  if (failed && r->status == SG_EVAL_NUMERICAL_ERROR)
    append_output(msg, &j->s[CAND].o);
  set_isolation(r, &j->s[CAND].o, j->s[CAND].o.out != NULL);
  if (!r->isolation)
    set_isolation(r, &j->s[REF].o, j->s[REF].o.out != NULL);
  if (!failed) {
    r->status = SG_EVAL_OK;
    r->max_abs_err = j->max_abs;
    r->max_rel_err = j->max_rel;
    r->ref_ms = ns_array_ms(lg->ref_ns, true);
    r->cand_ms = ns_array_ms(lg->cand_ns, true);
    r->ref_mean_ms = ns_array_ms(lg->ref_ns, false);
    r->cand_mean_ms = ns_array_ms(lg->cand_ns, false);
    r->speedup = r->ref_ms / r->cand_ms;
    sg_buf_printf(msg,
                  "correct on %d random input sets and on all %d timed calls "
                  "(fresh inputs each; max abs error %.3g, max rel error %.3g); "
                  "median of %d runs: reference %.4g ms, kernel %.4g ms, speedup %.3gx",
                  jo->trials, jo->warmups + jo->runs, r->max_abs_err, r->max_rel_err,
                  jo->runs, r->ref_ms, r->cand_ms, r->speedup);
  }
  const sg_sandbox_outcome *o = &j->s[CAND].o;
  if (o->out && !o->network_isolated && o->note)
    sg_buf_printf(msg, "\n(note: %s)", o->note);
  free(r->message);
  r->message = sg_buf_steal(msg);
  if (log)
    *log = json_pack("{s:s,s:s,s:O,s:O,s:O,s:i,s:I,s:I}", "status",
                     sg_eval_status_name(r->status), "order", lg->order, "ref_ns",
                     lg->ref_ns, "cand_ns", lg->cand_ns, "phase_s", lg->phases, "copies",
                     0, "max_gap_ns", (json_int_t)j->max_gap_ns, "ref_max_gap_ns",
                     (json_int_t)j->gaps.ref_floor_ns);
}

int sg_eval_cpu_judge(const sg_task *task, const sg_eval_cpu_judge_opts *jo,
                      sg_eval_result *r, json_t **log, sg_err *err) {
  if (log)
    *log = NULL;
  judge j;
  memset(&j, 0, sizeof j);
  j.t = task;
  j.seed = jo->seed;
  j.budget_s = jo->budget_s;
  j.in_fd = -1;
  j.s[REF].who = "reference";
  j.s[CAND].who = "kernel";
  for (int k = 0; k < 2; k++)
    j.s[k].cmd_w = j.s[k].reply_r = j.s[k].out_fd = -1;
  j.deadline = sg_clock_now_s() + 2 * jo->budget_s + 120;
  r->speedup = r->ref_ms = r->cand_ms = r->ref_mean_ms = r->cand_mean_ms = NAN;
  r->max_abs_err = r->max_rel_err = NAN;
  r->first_mismatch = -1;
  double t_start = sg_clock_now_s();
  run_log lg = {sg_calloc((size_t)(jo->warmups + jo->runs) * 2 + 1, 1), json_array(),
                json_array(), json_object()};
  sg_buf msg;
  sg_buf_init(&msg, 0);
  int rc = layout(&j, err);
  /* both workers start, then both must say they are loaded */
  j.phase = "load";
  if (rc == 0)
    rc = start_sides(&j, jo, err);
  json_object_set_new(lg.phases, "spawn", json_real(sg_clock_now_s() - t_start));
  bool failed = false;
  for (int k = 0; k < 2 && rc == 0 && !failed; k++) {
    /* loading the kernel (its constructors) counts against its budget */
    double t_load = sg_clock_now_s();
    call_end e = await(&j, k, 'R', k == CAND ? t_load + j.budget_s : j.deadline);
    if (k == CAND)
      j.used_s += sg_clock_now_s() - t_load;
    if (e != CALL_OK) {
      end_side(&j.s[k], e != CALL_DIED, e == CALL_DIED);
      verdict_end(&j, k, e == CALL_PROTOCOL ? CALL_DIED : e, r, &msg);
      failed = true;
    } else {
      j.s[k].cpu_mark = cpu_ns(&j.s[k]);
    }
  }
  json_object_set_new(lg.phases, "setup", json_real(sg_clock_now_s() - t_start));
  if (rc == 0 && !failed)
    failed = run_protocol(&j, jo, r, &msg, &lg) != 0;
  if (rc == 0)
    report(&j, jo, failed, r, &msg, &lg, log);
  else
    for (int k = 0; k < 2; k++)
      end_side(&j.s[k], false, false);
  r->run_s = sg_clock_now_s() - t_start;
  for (int k = 0; k < 2; k++) {
    sg_sandbox_outcome_free(&j.s[k].o);
    if (j.s[k].out)
      munmap(j.s[k].out, j.out_bytes ? j.out_bytes : 4096);
    if (j.s[k].out_fd >= 0)
      close(j.s[k].out_fd);
  }
  if (j.in)
    munmap(j.in, j.in_bytes ? j.in_bytes : 4096);
  if (j.in_fd >= 0)
    close(j.in_fd);
  free(j.off);
  sg_buf_free(&msg);
  free(lg.order);
  json_decref(lg.ref_ns);
  json_decref(lg.cand_ns);
  json_decref(lg.phases);
  return rc;
}
