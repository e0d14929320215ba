/* sg_cuda_ahead.c: cuda validation runners started ahead (see the header).
 *
 * A runner started ahead is `specgen-cuda-run --go-fd 5 ...` in the usual
 * sandbox, with one end of a socket pair as its descriptor 5; it gets
 * ready and blocks reading its go line ("SEED PATH\n"). The evaluator keeps
 * the other end. If the evaluator goes away, the runner reads EOF and
 * exits; sg_cuda_ahead_release ends it at once. */
#include "eval/sg_cuda_ahead.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "eval/sg_shm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AHEAD_SLOTS 32 /* runners a process keeps, over all its devices */
#define AHEAD_PER_DEVICE_DEFAULT 4

typedef struct ahead {
  sg_sandbox *sb;   /* NULL: the slot is free */
  int go_fd;        /* our end of the go channel */
  int device;
  char *key;        /* the runner's command line, joined */
  char *scratch;    /* its working directory, removed when it ends */
  bool ready;       /* its 'R' was read already (sg_cuda_ahead_settle) */
  uint64_t used;    /* when its key was last asked for (a counter) */
} ahead;

static ahead slots[AHEAD_SLOTS];
static bool in_use;
static uint64_t clock_used;

/* The runners the caller says its next candidates want, in order
 * (sg_cuda_ahead_expect, then sg_cuda_ahead_expect_then): n 0 when it
 * said nothing. */
typedef struct expectation {
  int device;
  char **argv;
  sg_sandbox_limits lim;
} expectation;

static struct {
  bool none; /* it said none: start nothing */
  bool then; /* sg_cuda_ahead_expect_then: expectations are added */
  int n;
  expectation e[SG_CUDA_AHEAD_DEPTH];
} expected;

/* How long the last run waited from its go until its runner took it. */
static double last_wait_s;

static void expect_clear(void) {
  for (int k = 0; k < expected.n; k++) {
    for (int i = 0; expected.e[k].argv[i]; i++)
      free(expected.e[k].argv[i]);
    free(expected.e[k].argv);
    expected.e[k].argv = NULL;
  }
  expected.n = 0;
  expected.none = false;
}

void sg_cuda_ahead_use(bool on) {
  in_use = on;
  if (!on)
    sg_cuda_ahead_release();
}

int sg_cuda_ahead_per_device(void) {
  if (!in_use)
    return 0;
  const char *e = getenv("SPECGEN_CUDA_AHEAD");
  if (!e || !*e)
    return AHEAD_PER_DEVICE_DEFAULT;
  char *end;
  long n = strtol(e, &end, 10);
  if (*end || n < 0)
    return AHEAD_PER_DEVICE_DEFAULT;
  return n > AHEAD_SLOTS ? AHEAD_SLOTS : (int)n;
}

bool sg_cuda_ahead_enabled(void) { return sg_cuda_ahead_per_device() > 0; }

/* A runner's identity: its device and whole command line. */
static char *key_text(int device, char *const argv[]) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_printf(&b, "%d", device);
  for (int i = 0; argv[i]; i++)
    sg_buf_printf(&b, "\n%s", argv[i]);
  return sg_buf_steal(&b);
}

/* Ends a's runner (sg_sandbox_finish kills its group) into *out (NULL:
 * dropped) and frees the slot; a runner killed leaves its CUDA IPC files,
 * and its servers', which go with it (sg_shm.h). */
static void slot_end(ahead *a, sg_sandbox_outcome *out, bool timed_out) {
  if (a->go_fd >= 0)
    close(a->go_fd);
  a->go_fd = -1;
  sg_sandbox_outcome tmp;
  sg_err err;
  sg_err_clear(&err);
  int pid = sg_sandbox_pid(a->sb);
  sg_sandbox_finish(a->sb, timed_out, out ? out : &tmp, &err);
  sg_shm_remove_owned(NULL, pid);
  if (a->scratch) { /* its servers' files (a kernelbench judge's) */
    char *pids = sg_asprintf("%s/%s", a->scratch, SG_SHM_PIDS_FILE);
    sg_shm_remove_listed(NULL, pids);
    free(pids);
  }
  if (!out)
    sg_sandbox_outcome_free(&tmp);
  a->sb = NULL;
  if (a->scratch) {
    sg_rm_rf(a->scratch, &err);
    free(a->scratch);
    a->scratch = NULL;
  }
  free(a->key);
  a->key = NULL;
}

void sg_cuda_ahead_release(void) {
  expect_clear();
  /* all killed first, so that their exits overlap */
  for (int i = 0; i < AHEAD_SLOTS; i++)
    if (slots[i].sb)
      sg_sandbox_kill(slots[i].sb);
  for (int i = 0; i < AHEAD_SLOTS; i++)
    if (slots[i].sb)
      slot_end(&slots[i], NULL, false);
}

int sg_cuda_ahead_live(void) {
  int n = 0;
  for (int i = 0; i < AHEAD_SLOTS; i++)
    n += slots[i].sb != NULL;
  return n;
}

void sg_cuda_ahead_settle(double limit_s) {
  double end = sg_clock_now_s() + limit_s;
  for (int i = 0; i < AHEAD_SLOTS; i++) {
    ahead *a = &slots[i];
    while (a->sb && !a->ready && !sg_sandbox_aborted()) {
      double left = end - sg_clock_now_s();
      int w = left > 0 ? sg_sandbox_wait(a->sb, a->go_fd, left) : 0;
      char c = 0;
      ssize_t n = w == 1 ? read(a->go_fd, &c, 1) : 0;
      if (n < 0 && errno == EINTR)
        continue;
      if (n == 1 && c == 'R') {
        a->ready = true;
      } else if (n != 1) { /* gone, or not ready in time */
        sg_sandbox_kill(a->sb);
        slot_end(a, NULL, false);
      }
    }
  }
}

/* Starts a runner (argv, on device) in a (free) slot a. */
static int slot_start(ahead *a, int device, char *const argv[], const sg_sandbox_limits *lim,
                      sg_err *err) {
  memset(a, 0, sizeof *a);
  a->go_fd = -1;
  char *scratch = NULL;
  int rc = sg_scratch_dir(NULL, "specgen-cuda-ahead", &scratch, err);
  if (rc)
    return rc;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    int rc = sg_err_set(err, SG_EIO, "socketpair: %s", strerror(errno));
    sg_rm_rf(scratch, err);
    free(scratch);
    return rc;
  }
  sg_sandbox_limits l = *lim;
  l.work_dir = scratch;
  l.pass_fds[0] = sv[1];
  l.npass_fds = 1;
  rc = sg_sandbox_spawn(&l, argv, false, &a->sb, err);
  close(sv[1]);
  if (rc) {
    close(sv[0]);
    sg_err e2;
    sg_rm_rf(scratch, &e2);
    free(scratch);
    a->sb = NULL;
    return rc;
  }
  sg_sandbox_keep(a->sb, true); /* an abort of the current request spares it */
  a->go_fd = sv[0];
  a->device = device;
  a->key = key_text(device, argv);
  a->scratch = scratch;
  a->used = ++clock_used;
  return 0;
}

/* The slot for key on device: the runner started for it, if any (*match);
 * otherwise a free slot, after ending the runner of that device asked for
 * least recently when the device already has its share of runners (or
 * when no slot is free at all). */
static ahead *slot_for(int device, char *const argv[], bool *match) {
  char *key = key_text(device, argv);
  int share = sg_cuda_ahead_per_device();
  ahead *free_slot = NULL, *oldest_here = NULL, *oldest = NULL;
  int here = 0;
  *match = false;
  for (int i = 0; i < AHEAD_SLOTS; i++) {
    ahead *a = &slots[i];
    if (!a->sb) {
      if (!free_slot)
        free_slot = a;
      continue;
    }
    if (!oldest || a->used < oldest->used)
      oldest = a;
    if (a->device != device)
      continue;
    if (strcmp(a->key, key) == 0) {
      *match = true;
      free(key);
      a->used = ++clock_used;
      return a;
    }
    here++;
    if (!oldest_here || a->used < oldest_here->used)
      oldest_here = a;
  }
  free(key);
  ahead *a = free_slot;
  if (here >= share && oldest_here)
    a = oldest_here;
  else if (!a)
    a = oldest;
  if (a->sb)
    slot_end(a, NULL, false);
  return a;
}

static int send_go(int fd, uint64_t seed, const char *cand_so) {
  char *line = sg_asprintf("%llu %s\n", (unsigned long long)seed, cand_so);
  size_t n = strlen(line), off = 0;
  int rc = 0;
  while (off < n) {
    ssize_t w = send(fd, line + off, n - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      rc = -1;
      break;
    }
    off += (size_t)w;
  }
  free(line);
  return rc;
}

/* Starts the runners that come next: those the caller expects, when it
 * said (each unless one for it is waiting already; all at once, so that
 * their start-ups overlap; no more per device than the device keeps, so
 * that none evicts another expected), else another for the current key
 * (device, argv) in the slot its runner left (freed). */
static void start_next(ahead *freed, int device, char *const argv[],
                       const sg_sandbox_limits *lim) {
  sg_err e2;
  sg_err_clear(&e2);
  if (expected.none)
    return;
  if (expected.n > 0) {
    int share = sg_cuda_ahead_per_device();
    for (int k = 0; k < expected.n; k++) {
      const expectation *x = &expected.e[k];
      int before = 0; /* expected earlier on the same device */
      for (int i = 0; i < k; i++)
        before += expected.e[i].device == x->device;
      if (before >= share)
        continue;
      bool match = false;
      ahead *s = slot_for(x->device, x->argv, &match);
      if (!match) /* one that cannot start leaves the slot free */
        (void)slot_start(s, x->device, x->argv, &x->lim, &e2);
    }
    return;
  }
  if (!freed->sb)
    (void)slot_start(freed, device, argv, lim, &e2);
}

/* Waits for cur to end (at most wall_s from now; <= 0: no limit). When it
 * says it is ready ('R' on the go channel: it has its servers, context,
 * buffers and reference), the next runner starts (start_next): its
 * start-up overlaps cur's run, but not cur's own start-up. When it says it
 * took its go ('G', before it loads the candidate), *took is set: what
 * follows is the candidate's outcome. next false: no runner is started.
 * Returns whether cur timed out. */
static bool wait_run(ahead *cur, ahead *freed, int device, char *const argv[],
                     const sg_sandbox_limits *lim, bool next, bool *took) {
  bool ready = cur->ready || !next;
  if (cur->ready && next) /* said so before its go: the next starts now */
    start_next(freed, device, argv, lim);
  double t0 = sg_clock_now_s(), end = t0 + lim->wall_s;
  int fd = cur->go_fd;
  for (;;) {
    double left = lim->wall_s > 0 ? end - sg_clock_now_s() : -1;
    if (lim->wall_s > 0 && left <= 0)
      return true;
    int w = sg_sandbox_wait(cur->sb, fd, left);
    if (w == 2)
      return false;
    if (w == 0)
      return true;
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 1 && c == 'G' && !*took) {
      *took = true;
      last_wait_s = sg_clock_now_s() - t0;
    }
    if (n == 1 && c == 'R' && !ready) {
      ready = true;
      start_next(freed, device, argv, lim);
    }
    if (n <= 0)
      fd = -1; /* EOF or an error: only its exit is left to wait for */
  }
}

/* The command line of a cuda runner for k, in bufs (which it points into). */
typedef struct key_bufs {
  char dev[16], trials[16], warm[16], timed[16], fd[16];
  char *argv[18];
} key_bufs;

static char **key_argv(const sg_cuda_ahead_key *k, key_bufs *b) {
  snprintf(b->dev, sizeof b->dev, "%d", k->device);
  snprintf(b->trials, sizeof b->trials, "%d", k->trials);
  snprintf(b->warm, sizeof b->warm, "%d", k->warmup);
  snprintf(b->timed, sizeof b->timed, "%d", k->timed);
  snprintf(b->fd, sizeof b->fd, "%d", SG_SANDBOX_PASS_FD(0));
  char *argv[] = {(char *)k->runner, "--task", (char *)k->task_dir, "--ref",
                  (char *)k->ref_so, "--device", b->dev, "--trials", b->trials,
                  "--warmup", b->warm, "--timed", b->timed, "--go-fd", b->fd,
                  k->strict ? "--strict" : NULL, NULL};
  memcpy(b->argv, argv, sizeof argv);
  return b->argv;
}

void sg_cuda_ahead_expect_argv(int device, char *const argv[], const sg_sandbox_limits *lim) {
  if (!expected.then)
    expect_clear();
  if (!sg_cuda_ahead_enabled() || expected.none || expected.n >= SG_CUDA_AHEAD_DEPTH)
    return; /* off, none said, or as many as a caller may expect */
  int n = 0;
  while (argv[n])
    n++;
  expectation *x = &expected.e[expected.n++];
  x->argv = sg_calloc((size_t)n + 1, sizeof *x->argv);
  for (int i = 0; i < n; i++)
    x->argv[i] = sg_strdup(argv[i]);
  x->device = device;
  x->lim = *lim;
  x->lim.work_dir = NULL; /* a runner started ahead has its own */
}

void sg_cuda_ahead_expect_then(bool on) { expected.then = on; }

double sg_cuda_ahead_last_wait_s(void) { return last_wait_s; }

void sg_cuda_ahead_expect_none(void) {
  if (expected.then) /* nothing after the runs expected already */
    return;
  expect_clear();
  expected.none = true;
}

void sg_cuda_ahead_expect(const sg_cuda_ahead_key *k, const sg_sandbox_limits *lim) {
  key_bufs b;
  sg_cuda_ahead_expect_argv(k->device, key_argv(k, &b), lim);
}

int sg_cuda_ahead_run(const sg_cuda_ahead_key *k, const char *cand_so, uint64_t seed,
                      const sg_sandbox_limits *lim, sg_sandbox_outcome *out, bool *ahead_out,
                      sg_err *err) {
  key_bufs b;
  return sg_cuda_ahead_run_argv(k->device, key_argv(k, &b), cand_so, seed, lim, out,
                                ahead_out, err);
}

/* sg_cuda_ahead_run_argv (next: start the next runner when this one is
 * ready) and sg_cuda_ahead_run_once_argv (start none). */
static int run_argv(int device, char *const argv[], const char *cand, uint64_t seed,
                    const sg_sandbox_limits *lim, bool next, sg_sandbox_outcome *out,
                    bool *ahead_out, sg_err *err) {
  *ahead_out = false;
  last_wait_s = 0;
  for (int attempt = 0;; attempt++) {
    bool match = false;
    ahead *a = slot_for(device, argv, &match);
    int rc = 0;
    if (!match && (rc = slot_start(a, device, argv, lim, err)) != 0) {
      if (next)
        expect_clear();
      return rc;
    }
    double t_go = sg_clock_now_s();
    sg_sandbox_keep(a->sb, false); /* it is this request's now */
    /* a runner that is gone fails this; its end says why */
    (void)send_go(a->go_fd, seed, cand);
    /* this runner is taken; the slot gets the next one */
    ahead cur = *a;
    memset(a, 0, sizeof *a);
    a->go_fd = -1;
    bool took = false;
    bool timed_out = wait_run(&cur, a, device, argv, lim, next, &took);
    slot_end(&cur, out, timed_out);
    /* time from the go, not from the runner's start ahead */
    out->wall_s = sg_clock_now_s() - t_go;
    if (match && !took && !timed_out && attempt == 0 && !sg_sandbox_aborted()) {
      /* it ended before it took its go (its start failed, or it was killed
       * while it waited): nothing of the candidate ran; once more, now */
      sg_sandbox_outcome_free(out);
      if (a->sb && next && expected.n == 0 && !expected.none) /* this key's next: used below */
        slot_end(a, NULL, false);
      continue;
    }
    *ahead_out = match;
    if (next)
      expect_clear(); /* good for this run only */
    return 0;
  }
}

int sg_cuda_ahead_run_argv(int device, char *const argv[], const char *cand, uint64_t seed,
                           const sg_sandbox_limits *lim, sg_sandbox_outcome *out,
                           bool *ahead_out, sg_err *err) {
  return run_argv(device, argv, cand, seed, lim, true, out, ahead_out, err);
}

int sg_cuda_ahead_run_once_argv(int device, char *const argv[], const char *cand,
                                uint64_t seed, const sg_sandbox_limits *lim,
                                sg_sandbox_outcome *out, bool *ahead_out, sg_err *err) {
  return run_argv(device, argv, cand, seed, lim, false, out, ahead_out, err);
}

int sg_cuda_ahead_start_argv(int device, char *const argv[], const sg_sandbox_limits *lim,
                             sg_err *err) {
  if (!sg_cuda_ahead_enabled())
    return 0;
  bool match = false;
  ahead *a = slot_for(device, argv, &match);
  if (match)
    return 0;
  sg_sandbox_limits l = *lim;
  l.work_dir = NULL;
  return slot_start(a, device, argv, &l, err);
}
