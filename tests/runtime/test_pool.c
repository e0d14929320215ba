/* test_pool.c: the worker pool (sg_pool.h) with real `specgen worker`
 * processes, real pipes and a real libuv loop: validations on one and two
 * device slots, compile requests on compile workers, a worker killed with
 * SIGKILL mid-validation and one stopped with SIGSTOP (a hang), programs that
 * are not workers (given up), aborts of queued and running requests, and
 * close with requests in flight.
 *
 * Each test makes itself a child subreaper, so every process the pool
 * started, and everything those started, is handed to the test when its
 * parent dies; after the loop ended no_descendants_left() checks that none
 * is left. The loop must end by itself after sg_pool_close (every handle
 * closed: uv_loop_close succeeds), and the sanitizer build checks that the
 * pool freed everything. Callbacks check that they are never called from
 * inside sg_pool_submit, sg_pool_abort or sg_pool_close.
 */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "pool/sg_pool.h"
#include "sg_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

/* Bounds on waiting, not assertions about speed: a loaded machine under
 * sanitizers must pass with a wide margin. */
#define WAIT_LIMIT_S 150.0
#define MAX_EVENTS 64

typedef struct res {
  uint64_t ticket;
  sg_eval_status status;
  char *message;
} res;

typedef struct wev {
  int slot;
  char *what;
  char *message;
} wev;

typedef struct ctx {
  uv_loop_t loop;
  uv_timer_t tick; /* wakes uv_run now and then, so waits can time out */
  sg_pool *p;
  char dir[64];    /* scratch: build cache, work dir, log */
  res results[MAX_EVENTS];
  int nres;
  uint64_t started[MAX_EVENTS];
  int nstarted;
  int started_at_first_result; /* nstarted when the first result came */
  wev wevents[MAX_EVENTS];
  int nw;
  int in_call;     /* inside a pool call: no callback may come */
  /* on_device: each slot's state as told, and the calls */
  bool busy[4];
  int busy_calls, idle_calls;
  int started_while_idle; /* on_started for a slot not told busy */
  /* hooks run from the callbacks */
  void (*on_started_hook)(struct ctx *c, uint64_t ticket);
} ctx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cb_started(sg_pool *p, void *data, uint64_t ticket) {
  ctx *c = data;
  (void)p;
  SG_CHECK_MSG(!c->in_call, "on_started called from inside a pool call");
  SG_CHECK(c->nstarted < MAX_EVENTS);
  c->started[c->nstarted++] = ticket;
  if (!c->busy[0] && !c->busy[1])
    c->started_while_idle++;
  if (c->on_started_hook)
    c->on_started_hook(c, ticket);
}

static void cb_result(sg_pool *p, void *data, uint64_t ticket,
                      const sg_eval_result *r) {
  ctx *c = data;
  (void)p;
  SG_CHECK_MSG(!c->in_call, "on_result called from inside a pool call");
  SG_CHECK(c->nres < MAX_EVENTS);
  for (int i = 0; i < c->nres; i++)
    SG_CHECK_MSG(c->results[i].ticket != ticket, "a second result for ticket %llu",
                 (unsigned long long)ticket);
  if (c->nres == 0)
    c->started_at_first_result = c->nstarted;
  c->results[c->nres].ticket = ticket;
  c->results[c->nres].status = r->status;
  c->results[c->nres].message = sg_strdup(r->message ? r->message : "");
  c->nres++;
}

static void cb_device(sg_pool *p, void *data, int slot, bool busy) {
  ctx *c = data;
  (void)p;
  SG_CHECK(slot >= 0 && slot < 4);
  SG_CHECK_MSG(c->busy[slot] != busy, "slot %d told %s twice", slot,
               busy ? "busy" : "idle");
  c->busy[slot] = busy;
  busy ? c->busy_calls++ : c->idle_calls++;
}

static void cb_worker(sg_pool *p, void *data, int slot, const char *what,
                      const char *message) {
  ctx *c = data;
  (void)p;
  SG_CHECK_MSG(!c->in_call, "on_worker called from inside a pool call");
  SG_CHECK(c->nw < MAX_EVENTS);
  c->wevents[c->nw].slot = slot;
  c->wevents[c->nw].what = sg_strdup(what);
  c->wevents[c->nw].message = sg_strdup(message);
  c->nw++;
}

static void on_tick(uv_timer_t *t) { (void)t; }

static void ctx_init(ctx *c) {
  memset(c, 0, sizeof *c);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  snprintf(c->dir, sizeof c->dir, "/tmp/sg-test-pool-XXXXXX");
  SG_CHECK(mkdtemp(c->dir) != NULL);
  SG_CHECK(uv_loop_init(&c->loop) == 0);
  uv_timer_init(&c->loop, &c->tick);
  uv_timer_start(&c->tick, on_tick, 50, 50);
}

/* Options for tests: small, fast, quiet (the workers' stderr to a log). */
static void test_opts(ctx *c, sg_pool_opts *o, const char *const *devices,
                      size_t n) {
  static char cache[128], work[128], log[128];
  sg_pool_opts_default(o);
  snprintf(cache, sizeof cache, "%s/cache", c->dir);
  snprintf(work, sizeof work, "%s/work", c->dir);
  snprintf(log, sizeof log, "%s/workers.log", c->dir);
  SG_CHECK(mkdir(work, 0700) == 0 || errno == EEXIST);
  o->program = SG_TEST_SPECGEN;
  o->devices = devices;
  o->n_devices = n;
  o->build_cache = cache;
  o->work_dir = work;
  o->log_path = log;
  o->restart_backoff_s = 0.05;
}

static int pool_new(ctx *c, const sg_pool_opts *o, sg_err *err) {
  sg_pool_callbacks cb = {.data = c, .on_started = cb_started,
                          .on_result = cb_result, .on_worker = cb_worker,
                          .on_device = cb_device};
  c->in_call++;
  int rc = sg_pool_new(&c->loop, o, &cb, &c->p, err);
  c->in_call--;
  return rc;
}

static char *example(const char *name) {
  char *path = sg_asprintf("%s/tasks/cpu/hinge_loss/examples/%s", SG_SOURCE_ROOT, name);
  char *src = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &src, NULL, &err), err);
  free(path);
  return src;
}

static int submit_ex(ctx *c, uint64_t ticket, sg_pool_kind kind, int slot,
                     const char *ex, double timeout_s, sg_err *err) {
  char *src = example(ex);
  sg_pool_request r = {.ticket = ticket, .kind = kind, .slot = slot,
                       .task = "hinge_loss", .source = src,
                       .source_len = strlen(src), .seed = 11, .trials = 3,
                       .runs = 3, .warmups = 1, .eval_timeout = timeout_s};
  c->in_call++;
  int rc = sg_pool_submit(c->p, &r, err);
  c->in_call--;
  free(src);
  return rc;
}

static void submit_ok(ctx *c, uint64_t ticket, sg_pool_kind kind, int slot,
                      const char *ex) {
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(submit_ex(c, ticket, kind, slot, ex, 60, &err), err);
}

static void pool_abort(ctx *c, uint64_t ticket) {
  c->in_call++;
  sg_pool_abort(c->p, ticket);
  c->in_call--;
}

static void pool_close(ctx *c, double timeout_s) {
  c->in_call++;
  sg_pool_close(c->p, timeout_s);
  c->in_call--;
  c->p = NULL;
}

typedef bool (*pred)(ctx *c, const void *arg);

static void run_until(ctx *c, pred f, const void *arg, const char *what) {
  double deadline = now_s() + WAIT_LIMIT_S;
  while (!f(c, arg)) {
    SG_CHECK_MSG(now_s() < deadline, "waited %.0f s for %s", WAIT_LIMIT_S, what);
    uv_run(&c->loop, UV_RUN_ONCE);
  }
}

static bool have_results(ctx *c, const void *arg) {
  return c->nres >= *(const int *)arg;
}

static void wait_results(ctx *c, int n) {
  char what[64];
  snprintf(what, sizeof what, "%d results", n);
  run_until(c, have_results, &n, what);
}

static int count_wevents(ctx *c, int slot, const char *what) {
  int n = 0;
  for (int i = 0; i < c->nw; i++)
    if (c->wevents[i].slot == slot && strcmp(c->wevents[i].what, what) == 0)
      n++;
  return n;
}

typedef struct wev_arg {
  int slot;
  const char *what;
  int n;
} wev_arg;

static bool have_wevents(ctx *c, const void *arg) {
  const wev_arg *a = arg;
  return count_wevents(c, a->slot, a->what) >= a->n;
}

static void wait_wevents(ctx *c, int slot, const char *what, int n) {
  wev_arg a = {slot, what, n};
  char buf[96];
  snprintf(buf, sizeof buf, "%d \"%s\" events of slot %d", n, what, slot);
  run_until(c, have_wevents, &a, buf);
}

static const wev *last_wevent(ctx *c, int slot, const char *what) {
  for (int i = c->nw - 1; i >= 0; i--)
    if (c->wevents[i].slot == slot && strcmp(c->wevents[i].what, what) == 0)
      return &c->wevents[i];
  return NULL;
}

static const res *result_of(ctx *c, uint64_t ticket) {
  for (int i = 0; i < c->nres; i++)
    if (c->results[i].ticket == ticket)
      return &c->results[i];
  SG_FAIL("no result for ticket %llu", (unsigned long long)ticket);
  return NULL;
}

static void check_status(ctx *c, uint64_t ticket, sg_eval_status want) {
  const res *r = result_of(c, ticket);
  SG_CHECK_MSG(r->status == want, "ticket %llu: status %s, expected %s: %s",
               (unsigned long long)ticket, sg_eval_status_name(r->status),
               sg_eval_status_name(want), r->message);
}

static bool was_started(ctx *c, uint64_t ticket) {
  for (int i = 0; i < c->nstarted; i++)
    if (c->started[i] == ticket)
      return true;
  return false;
}

/* Every process the pool started has ended (they were handed to this
 * test, the subreaper, if they outlived their parents). */
static void no_descendants_left(void) {
  double deadline = now_s() + 60;
  for (;;) {
    pid_t p = waitpid(-1, NULL, WNOHANG);
    if (p < 0 && errno == ECHILD)
      return;
    SG_CHECK_MSG(now_s() < deadline, "a process the pool started still runs");
    if (p == 0)
      usleep(20000);
  }
}

/* Closes the pool (if open), runs the loop until it ends by itself, checks
 * that every handle was closed and no process is left, frees the test's
 * records. */
static void finish(ctx *c, double timeout_s) {
  if (c->p)
    pool_close(c, timeout_s);
  double t0 = now_s();
  uv_close((uv_handle_t *)&c->tick, NULL);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  SG_CHECK_MSG(now_s() - t0 < WAIT_LIMIT_S, "closing the pool took too long");
  SG_CHECK_MSG(uv_loop_close(&c->loop) == 0, "a handle is still open after close");
  no_descendants_left();
  for (int i = 0; i < c->nres; i++)
    free(c->results[i].message);
  for (int i = 0; i < c->nw; i++) {
    free(c->wevents[i].what);
    free(c->wevents[i].message);
  }
  char *cmd = sg_asprintf("rm -rf '%s'", c->dir);
  SG_CHECK(system(cmd) == 0);
  free(cmd);
}

static const char *const k_cpu0[] = {"cpu:0"};

/* ---- tests ---- */

static void test_bad_options_and_requests_are_refused(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  o.n_devices = 0;
  SG_CHECK_EQ_INT(pool_new(&c, &o, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "device");
  test_opts(&c, &o, k_cpu0, 1);
  o.build_cache = NULL;
  SG_CHECK_EQ_INT(pool_new(&c, &o, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "build_cache");
  test_opts(&c, &o, k_cpu0, 1);
  o.program = "/nonexistent/specgen";
  SG_CHECK_EQ_INT(pool_new(&c, &o, &err), SG_EIO);
  SG_CHECK_CONTAINS(err.msg, "/nonexistent/specgen");
  SG_CHECK(c.p == NULL);

  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  SG_CHECK_EQ_INT(submit_ex(&c, 1, SG_POOL_VALIDATE, 1, "ok-fast.c", 60, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "slot 1 out of range");
  SG_CHECK_EQ_INT(submit_ex(&c, 0, SG_POOL_VALIDATE, 0, "ok-fast.c", 60, &err), SG_EINVAL);
  SG_CHECK_EQ_INT(submit_ex(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c", -1, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "eval_timeout");
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  SG_CHECK_EQ_INT(submit_ex(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c", 60, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "already pending");
  SG_CHECK_EQ_INT(sg_pool_pending(c.p), 1);
  pool_close(&c, 10);
  finish(&c, 10);
  SG_CHECK_EQ_INT(c.nres, 0); /* closed before it ended: no callback */
}

static void test_validate_ok_and_compile_error_on_a_device_slot(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  SG_CHECK(sg_pool_worker_pid(c.p, 0) > 0);
  SG_CHECK(sg_pool_worker_pid(c.p, -1) > 0);
  SG_CHECK_EQ_INT(sg_pool_worker_pid(c.p, 1), 0);
  /* submitted before the hello: they wait in the pool */
  submit_ok(&c, 7, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 8, SG_POOL_VALIDATE, 0, "compile_error-missing_semicolon.c");
  SG_CHECK_EQ_INT(sg_pool_pending(c.p), 2);
  wait_results(&c, 2);
  SG_CHECK_EQ_INT(c.results[0].ticket, 7); /* one slot: in order */
  check_status(&c, 7, SG_EVAL_OK);
  check_status(&c, 8, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(result_of(&c, 8)->message, "error");
  SG_CHECK(was_started(&c, 7) && was_started(&c, 8));
  SG_CHECK_EQ_INT(sg_pool_pending(c.p), 0);
  SG_CHECK(count_wevents(&c, 0, "started") == 1);
  SG_CHECK_CONTAINS(last_wevent(&c, 0, "started")->message, "worker cpu:0 (pid ");
  sg_pool_stats st;
  sg_pool_stats_get(c.p, &st);
  SG_CHECK_EQ_INT(st.submitted, 2);
  SG_CHECK_EQ_INT(st.completed, 2);
  SG_CHECK_EQ_INT(st.restarts, 0);
  SG_CHECK_EQ_INT(st.lost, 0);
  finish(&c, 10);
}

static void kill_on_start(ctx *c, uint64_t ticket);

/* on_device: busy before each device request's write, idle after it, in
 * strict alternation, for results, failures and a worker killed mid-run;
 * never for compile requests. */
static void test_on_device_pairs_busy_and_idle(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  submit_ok(&c, 10, SG_POOL_COMPILE, 0, "ok-fast.c");
  wait_results(&c, 1);
  SG_CHECK_EQ_INT(c.busy_calls, 0);
  c.started_while_idle = 0; /* a compile worker's start holds no device */
  submit_ok(&c, 11, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 12, SG_POOL_VALIDATE, 0, "compile_error-missing_semicolon.c");
  submit_ok(&c, 13, SG_POOL_PROFILE, 0, "ok-fast.c");
  wait_results(&c, 4);
  c.on_started_hook = kill_on_start; /* kills ticket 1's worker */
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  wait_results(&c, 5);
  check_status(&c, 1, SG_EVAL_INFRA_ERROR);
  SG_CHECK_EQ_INT(c.busy_calls, 4);
  SG_CHECK_EQ_INT(c.idle_calls, 4);
  SG_CHECK(!c.busy[0]);
  SG_CHECK_EQ_INT(c.started_while_idle, 0);
  finish(&c, 10);
}

static void test_two_device_slots_at_once(void) {
  ctx c;
  ctx_init(&c);
  /* two slots may name one core: each still gets its own worker */
  static const char *const devs2[] = {"cpu:0", "cpu:1"};
  static const char *const devs1[] = {"cpu:0", "cpu:0"};
  const char *const *devs = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? devs2 : devs1;
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, devs, 2);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  long pid0 = sg_pool_worker_pid(c.p, 0), pid1 = sg_pool_worker_pid(c.p, 1);
  SG_CHECK(pid0 > 0 && pid1 > 0 && pid0 != pid1);
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 2, SG_POOL_VALIDATE, 1, "ok-fast.c");
  wait_results(&c, 2);
  /* both were running before either ended: one worker each */
  SG_CHECK_EQ_INT(c.started_at_first_result, 2);
  check_status(&c, 1, SG_EVAL_OK);
  check_status(&c, 2, SG_EVAL_OK);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "started"), 1);
  SG_CHECK_EQ_INT(count_wevents(&c, 1, "started"), 1);
  finish(&c, 10);
}

static void test_compile_requests_on_compile_workers(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  o.compile_workers = 2;
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  long c0 = sg_pool_worker_pid(c.p, -1), c1 = sg_pool_worker_pid(c.p, -2);
  SG_CHECK(c0 > 0 && c1 > 0 && c0 != c1);
  SG_CHECK_EQ_INT(sg_pool_worker_pid(c.p, -3), 0);
  submit_ok(&c, 1, SG_POOL_COMPILE, 0, "ok-fast.c");
  submit_ok(&c, 2, SG_POOL_COMPILE, 0, "compile_error-missing_semicolon.c");
  submit_ok(&c, 3, SG_POOL_COMPILE, 0, "ok-reference.c");
  wait_results(&c, 3);
  /* the first two went to different (idle) compile workers: both began
   * before either ended */
  SG_CHECK(c.started_at_first_result >= 2);
  check_status(&c, 1, SG_EVAL_OK);
  check_status(&c, 2, SG_EVAL_COMPILE_ERROR);
  check_status(&c, 3, SG_EVAL_OK);
  /* the device worker then finds the build in the shared cache */
  submit_ok(&c, 4, SG_POOL_VALIDATE, 0, "ok-fast.c");
  wait_results(&c, 4);
  check_status(&c, 4, SG_EVAL_OK);
  char *entries = sg_asprintf("test -n \"$(ls -A '%s/cache')\"", c.dir);
  SG_CHECK_MSG(system(entries) == 0, "the build cache is empty");
  free(entries);
  SG_CHECK_EQ_INT(count_wevents(&c, -1, "started"), 1);
  SG_CHECK_EQ_INT(count_wevents(&c, -2, "started"), 1);
  finish(&c, 10);
}

static void kill_on_start(ctx *c, uint64_t ticket) {
  if (ticket != 1)
    return;
  long pid = sg_pool_worker_pid(c->p, 0);
  SG_CHECK(pid > 0);
  SG_CHECK(kill((pid_t)pid, SIGKILL) == 0);
}

static void test_sigkill_mid_validation_is_one_infra_error_and_a_restart(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  long pid = sg_pool_worker_pid(c.p, 0);
  c.on_started_hook = kill_on_start;
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 2, SG_POOL_VALIDATE, 0, "ok-fast.c"); /* queued: kept */
  wait_results(&c, 2);
  check_status(&c, 1, SG_EVAL_INFRA_ERROR);
  const char *m = result_of(&c, 1)->message;
  SG_CHECK_CONTAINS(m, "worker cpu:0");
  SG_CHECK_CONTAINS(m, "died of signal 9");
  SG_CHECK_CONTAINS(m, "while validating");
  char *pidtext = sg_asprintf("(pid %ld)", pid);
  SG_CHECK_CONTAINS(m, pidtext);
  free(pidtext);
  check_status(&c, 2, SG_EVAL_OK); /* the next request on the slot: ok */
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "died"), 1);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "restarted"), 1);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "started"), 2);
  long pid2 = sg_pool_worker_pid(c.p, 0);
  SG_CHECK(pid2 > 0 && pid2 != pid);
  sg_pool_stats st;
  sg_pool_stats_get(c.p, &st);
  SG_CHECK_EQ_INT(st.restarts, 1);
  SG_CHECK_EQ_INT(st.lost, 1);
  SG_CHECK_EQ_INT(st.completed, 2);
  finish(&c, 10);
}

static void test_sigstop_is_a_hang_then_a_restart(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  o.compile_limit_s = 2;
  o.hang_grace_s = 3; /* the restarted worker says hello within 5 s */
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  wait_wevents(&c, 0, "started", 1);
  long pid = sg_pool_worker_pid(c.p, 0);
  SG_CHECK(kill((pid_t)pid, SIGSTOP) == 0);
  SG_CHECK_OK(submit_ex(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c", 1, &err), err);
  wait_results(&c, 1);
  check_status(&c, 1, SG_EVAL_INFRA_ERROR);
  SG_CHECK_CONTAINS(result_of(&c, 1)->message, "hung");
  SG_CHECK_CONTAINS(result_of(&c, 1)->message, "worker cpu:0");
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "hung"), 1);
  wait_wevents(&c, 0, "started", 2);
  long pid2 = sg_pool_worker_pid(c.p, 0);
  SG_CHECK(pid2 > 0 && pid2 != pid);
  /* the restarted worker serves (a long eval_timeout widens its hang limit) */
  submit_ok(&c, 2, SG_POOL_VALIDATE, 0, "ok-fast.c");
  wait_results(&c, 2);
  check_status(&c, 2, SG_EVAL_OK);
  finish(&c, 10); /* the stopped worker was killed: none left */
}

static bool process_gone(ctx *c, const void *arg) {
  (void)c;
  return kill((pid_t)*(const long *)arg, 0) != 0 && errno == ESRCH;
}

/* The caller's scheduler gave the slot up: its worker is shut down, the
 * request it held answered from the loop, and nothing restarts it. */
static void test_a_retired_slot_is_never_restarted(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  o.restart_backoff_s = 0.01;
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  wait_wevents(&c, 0, "started", 1);
  long pid = sg_pool_worker_pid(c.p, 0);
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  c.in_call++;
  sg_pool_retire(c.p, 0, "the test's reason");
  c.in_call--;
  wait_results(&c, 1);
  check_status(&c, 1, SG_EVAL_INFRA_ERROR);
  SG_CHECK_CONTAINS(result_of(&c, 1)->message,
                    "worker cpu:0 taken out of service: the test's reason");
  SG_CHECK(!c.busy[0]);
  SG_CHECK_EQ_INT(sg_pool_worker_pid(c.p, 0), 0);
  SG_CHECK_EQ_INT(submit_ex(&c, 2, SG_POOL_VALIDATE, 0, "ok-fast.c", 60, &err), SG_ESTATE);
  run_until(&c, process_gone, &pid, "the retired worker to end");
  /* a restart would come after the backoff (10 ms): give it ample time */
  double until = now_s() + 1.0;
  while (now_s() < until)
    uv_run(&c.loop, UV_RUN_ONCE);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "restarted"), 0);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "died"), 0);
  SG_CHECK_EQ_INT(sg_pool_worker_pid(c.p, 0), 0);
  finish(&c, 10);
}

static void given_up_case(const char *program, const char *expect,
                          int max_restarts) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  o.program = program;
  o.max_restarts = max_restarts;
  o.restart_backoff_s = 0.01;
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c"); /* waits for a hello */
  wait_wevents(&c, 0, "given_up", 1);
  wait_wevents(&c, -1, "given_up", 1);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "died"), 1 + max_restarts);
  SG_CHECK_EQ_INT(count_wevents(&c, 0, "restarted"), max_restarts);
  SG_CHECK_CONTAINS(last_wevent(&c, 0, "died")->message, expect);
  SG_CHECK_CONTAINS(last_wevent(&c, 0, "given_up")->message, "worker cpu:0 given up");
  SG_CHECK_EQ_INT(c.nres, 1);
  check_status(&c, 1, SG_EVAL_INFRA_ERROR);
  SG_CHECK_CONTAINS(result_of(&c, 1)->message, "given up");
  SG_CHECK_CONTAINS(result_of(&c, 1)->message, expect);
  for (const char *m = result_of(&c, 1)->message; *m; m++)
    SG_CHECK_MSG((unsigned char)*m >= 0x20 && (unsigned char)*m < 0x7f,
                 "a byte 0x%02x in the message", (unsigned char)*m);
  SG_CHECK_EQ_INT(submit_ex(&c, 2, SG_POOL_VALIDATE, 0, "ok-fast.c", 60, &err), SG_ESTATE);
  SG_CHECK_CONTAINS(err.msg, "given up");
  SG_CHECK_EQ_INT(submit_ex(&c, 3, SG_POOL_COMPILE, 0, "ok-fast.c", 60, &err), SG_ESTATE);
  sg_pool_stats st;
  sg_pool_stats_get(c.p, &st);
  SG_CHECK_EQ_INT(st.slots_given_up, 2);
  SG_CHECK_EQ_INT(st.restarts, 2 * max_restarts); /* per worker */
  SG_CHECK_EQ_INT(sg_pool_pending(c.p), 0);
  SG_CHECK_EQ_INT(sg_pool_worker_pid(c.p, 0), 0);
  finish(&c, 10);
}

static void test_a_program_that_exits_is_given_up(void) {
  given_up_case("/bin/true", "exited with status 0 while starting", 2);
}

/* A shell script as the pool's program, given up like a broken worker. */
static void script_case(const char *script, const char *expect,
                        int max_restarts) {
  char path[] = "/tmp/sg-test-pool-script-XXXXXX";
  int fd = mkstemp(path);
  SG_CHECK(fd >= 0);
  SG_CHECK(write(fd, script, strlen(script)) == (ssize_t)strlen(script));
  close(fd);
  SG_CHECK(chmod(path, 0700) == 0);
  given_up_case(path, expect, max_restarts);
  unlink(path);
}

static void test_a_program_that_prints_garbage_is_given_up(void) {
  /* not JSON, and not UTF-8 either: the message must stay printable */
  script_case("#!/bin/sh\nprintf 'this is not json \\377\\001\\n'\n"
              "exec sleep 100\n",
              "not protocol", 2);
}

static void test_a_hello_of_another_protocol_is_given_up(void) {
  script_case("#!/bin/sh\necho '{\"type\":\"hello\",\"protocol\":99,"
              "\"version\":\"9\",\"device\":\"cpu:0\",\"evaluators\":[\"cpu\"],"
              "\"pid\":1}'\nexec sleep 100\n",
              "speaks protocol 99, not 1", 0);
}

static void test_a_program_that_closes_its_output_is_killed(void) {
  /* alive, silent, stdout closed: killed after a short wait for its exit */
  script_case("#!/bin/sh\nexec 1>&-\nexec sleep 100\n",
              "closed its output while starting", 0);
}

static void test_a_refused_request_is_an_infra_error(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  sg_pool_request r = {.ticket = 1, .kind = SG_POOL_VALIDATE, .slot = 0,
                       .task = "no_such_task", .source = "int x;",
                       .source_len = 6, .warmups = -1};
  c.in_call++;
  SG_CHECK_OK(sg_pool_submit(c.p, &r, &err), err);
  c.in_call--;
  submit_ok(&c, 2, SG_POOL_VALIDATE, 0, "compile_error-missing_semicolon.c");
  wait_results(&c, 2);
  check_status(&c, 1, SG_EVAL_INFRA_ERROR);
  SG_CHECK_CONTAINS(result_of(&c, 1)->message, "refused the request");
  SG_CHECK_CONTAINS(result_of(&c, 1)->message, "no_such_task");
  SG_CHECK(!was_started(&c, 1));
  check_status(&c, 2, SG_EVAL_COMPILE_ERROR); /* the worker carried on */
  sg_pool_stats st;
  sg_pool_stats_get(c.p, &st);
  SG_CHECK_EQ_INT(st.restarts, 0);
  SG_CHECK_EQ_INT(st.lost, 0);
  finish(&c, 10);
}

static void abort_on_start(ctx *c, uint64_t ticket) {
  if (ticket == 1) {
    pool_abort(c, 1); /* running */
    pool_abort(c, 2); /* queued */
    pool_abort(c, 99); /* unknown: ignored */
  }
}

static void test_abort_of_queued_and_running_gives_no_callback(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  c.on_started_hook = abort_on_start;
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 2, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 3, SG_POOL_VALIDATE, 0, "compile_error-missing_semicolon.c");
  submit_ok(&c, 4, SG_POOL_VALIDATE, 0, "ok-fast.c");
  pool_abort(&c, 4); /* queued before any hello */
  wait_results(&c, 1);
  SG_CHECK_EQ_INT(c.results[0].ticket, 3);
  check_status(&c, 3, SG_EVAL_COMPILE_ERROR);
  /* a ticket may be used again once aborted */
  c.on_started_hook = NULL;
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "compile_error-missing_semicolon.c");
  wait_results(&c, 2);
  check_status(&c, 1, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_EQ_INT(c.nres, 2);
  sg_pool_stats st;
  sg_pool_stats_get(c.p, &st);
  SG_CHECK_EQ_INT(st.aborted, 3);
  SG_CHECK_EQ_INT(st.restarts, 0); /* an abort is not a failure */
  SG_CHECK_EQ_INT(sg_pool_pending(c.p), 0);
  finish(&c, 10);
}

static bool closed(ctx *c, const void *arg) {
  (void)arg;
  return c->p == NULL;
}

static void close_on_start(ctx *c, uint64_t ticket) {
  (void)ticket;
  pool_close(c, 5);
}

static void test_close_with_requests_in_flight_gives_no_callback(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  o.compile_workers = 2;
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  c.on_started_hook = close_on_start;
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 2, SG_POOL_VALIDATE, 0, "ok-fast.c");
  submit_ok(&c, 3, SG_POOL_COMPILE, 0, "ok-fast.c");
  run_until(&c, closed, NULL, "the close from on_started");
  finish(&c, 5);
  SG_CHECK_EQ_INT(c.nres, 0);
  SG_CHECK_EQ_INT(c.nstarted, 1);
}

static void test_close_right_after_start(void) {
  ctx c;
  ctx_init(&c);
  sg_pool_opts o;
  sg_err err;
  test_opts(&c, &o, k_cpu0, 1);
  SG_CHECK_OK(pool_new(&c, &o, &err), err);
  submit_ok(&c, 1, SG_POOL_VALIDATE, 0, "ok-fast.c");
  finish(&c, 5); /* before any hello */
  SG_CHECK_EQ_INT(c.nres, 0);
  SG_CHECK_EQ_INT(c.nw, 0);
}

SG_TEST_MAIN(SG_TEST(test_bad_options_and_requests_are_refused),
             SG_TEST(test_validate_ok_and_compile_error_on_a_device_slot),
             SG_TEST(test_on_device_pairs_busy_and_idle),
             SG_TEST(test_two_device_slots_at_once),
             SG_TEST(test_compile_requests_on_compile_workers),
             SG_TEST(test_sigkill_mid_validation_is_one_infra_error_and_a_restart),
             SG_TEST(test_sigstop_is_a_hang_then_a_restart),
             SG_TEST(test_a_retired_slot_is_never_restarted),
             SG_TEST(test_a_program_that_exits_is_given_up),
             SG_TEST(test_a_program_that_prints_garbage_is_given_up),
             SG_TEST(test_a_hello_of_another_protocol_is_given_up),
             SG_TEST(test_a_program_that_closes_its_output_is_killed),
             SG_TEST(test_a_refused_request_is_an_infra_error),
             SG_TEST(test_abort_of_queued_and_running_gives_no_callback),
             SG_TEST(test_close_with_requests_in_flight_gives_no_callback),
             SG_TEST(test_close_right_after_start))
