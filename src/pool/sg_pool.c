/* sg_pool.c: the run's worker processes on the libuv loop (sg_pool.h).
 *
 * How it works. Each worker (a device slot, or a compile worker) is a
 * `worker` that outlives its processes; each process it runs is a `proc`
 * (an incarnation: the uv process handle, its stdin and stdout pipes and the
 * bytes read that are not yet a line). A proc that failed is detached from
 * its worker at once and lives on only until its three handles are closed,
 * so a new incarnation never shares a handle, a buffer or a request id with
 * the old one.
 *
 * One request at a time per worker. The worker evaluates one request at a
 * time anyway, so the pool keeps the others in the worker's queue and sends
 * the next when a result (or a refusal) arrives. So a death loses at most the
 * one request in flight, a hang deadline runs from a moment the pool saw, and
 * aborting a queued request never touches the worker. The cost is one pipe
 * round trip per request (about a millisecond; an evaluation takes seconds).
 *
 * Request ids on the wire are "<ticket>.<generation>", the generation being
 * the pool's count of processes spawned, so a reply from one incarnation can
 * never be matched to a request sent to another.
 *
 * Every worker has one timer and one door, worker_tick(): it starts a process
 * after the restart backoff, declares a request or a silent worker hung, and
 * turns "the output ended" or "the process exited" into a failure once both
 * were seen (or a short while after one), so a death's message names the
 * exit code or signal whichever of the two events libuv reports first.
 *
 * Workers are spawned in their own session (UV_PROCESS_DETACHED: setsid), so
 * killing the process group -pid takes the worker and its evaluation child
 * down together; the candidates and compilers below ask for SIGKILL when
 * their parent dies (PR_SET_PDEATHSIG). A worker left alone when the runtime
 * itself dies sees the end of its stdin and exits.
 *
 * Callbacks are called only from the loop (read, exit and timer callbacks),
 * never from inside sg_pool_submit, sg_pool_abort or sg_pool_close (except
 * on_device, which must precede the request's write: see the header): a write
 * that fails at once is turned into a failure on the worker's timer. Every
 * callback may submit, abort or close; after each one the code re-checks
 * that the pool is not closing and the proc is still the worker's.
 *
 * Never: call a callback for an aborted ticket or after sg_pool_close; close
 * a process handle before its exit callback (the child would stay a zombie);
 * free the pool before the last handle's close callback.
 *
 * Spawning processes and reading their replies: sg_pool_proc.c. This file
 * stays over 800 lines on purpose: the requests, the workers' one timer and
 * the failure paths that timer drives are one state machine, read together.
 */
#include "pool/sg_pool_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "pool/sg_jsonl.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *sg_pool_kind_name(sg_pool_kind k) {
  static const char *const names[] = {"compile", "validate", "profile"};
  return (unsigned)k < SG_POOL_KIND__COUNT ? names[k] : "unknown";
}

static const char *kind_verb(sg_pool_kind k) {
  static const char *const verbs[] = {"compiling", "validating", "profiling"};
  return (unsigned)k < SG_POOL_KIND__COUNT ? verbs[k] : "serving";
}

void sg_pool_opts_default(sg_pool_opts *o) {
  memset(o, 0, sizeof *o);
  o->compile_workers = 1;
  o->hang_grace_s = 30;
  o->max_restarts = 5;
  o->restart_backoff_s = 0.1;
  o->compile_limit_s = 60;
}

/* ---- handles and freeing ---- */

static void free_env(char **env) {
  if (!env)
    return;
  for (char **e = env; *e; e++) {
    memset(*e, 0, strlen(*e)); /* it may hold a password */
    free(*e);
  }
  free(env);
}

static void pool_maybe_free(sg_pool *p) {
  if (!p->closing || p->open_handles > 0)
    return;
  assert(p->procs == NULL);
  for (size_t i = 0; i < p->n_workers; i++) {
    free(p->workers[i].name);
    free(p->workers[i].last_failure);
  }
  free(p->workers);
  free_env(p->env);
  free_env(p->env_remote);
  if (p->log_fd >= 0)
    close(p->log_fd);
  free(p->program);
  free(p->build_cache);
  free(p->work_dir);
  free(p);
}

static void pool_handle_closed(uv_handle_t *h) {
  sg_pool *p = h->data;
  p->open_handles--;
  pool_maybe_free(p);
}

static void worker_timer_closed(uv_handle_t *h) {
  worker *w = h->data;
  w->p->open_handles--;
  pool_maybe_free(w->p);
}

static void proc_handle_closed(uv_handle_t *h) {
  proc *pr = h->data;
  sg_pool *p = pr->p;
  pr->open_handles--;
  p->open_handles--;
  if (pr->open_handles == 0) {
    assert(pr->w == NULL);
    if (pr->prev)
      pr->prev->next = pr->next;
    else
      p->procs = pr->next;
    if (pr->next)
      pr->next->prev = pr->prev;
    sg_buf_free(&pr->line);
    free(pr);
    if (p->closing && !p->procs && p->close_timer_live) {
      p->close_timer_live = false;
      uv_close((uv_handle_t *)&p->close_timer, pool_handle_closed);
    }
  }
  pool_maybe_free(p);
}

static void proc_close_in(proc *pr) {
  if (pr->in_closed)
    return;
  pr->in_closed = true;
  uv_close((uv_handle_t *)&pr->in, proc_handle_closed);
}

void sg_pool_proc_close_out(proc *pr) {
  if (pr->out_closed)
    return;
  pr->out_closed = true;
  uv_read_stop((uv_stream_t *)&pr->out);
  uv_close((uv_handle_t *)&pr->out, proc_handle_closed);
}

/* The process handle closes only after its exit callback (or never ran). */
void sg_pool_proc_close_process(proc *pr) {
  if (pr->process_closed)
    return;
  pr->process_closed = true;
  uv_close((uv_handle_t *)&pr->process, proc_handle_closed);
}

static void proc_kill(proc *pr) {
  if (pr->exited || pr->pid <= 0)
    return;
  /* its own session: the group holds the worker and its evaluation child */
  if (kill(-(pid_t)pr->pid, SIGKILL) != 0)
    kill((pid_t)pr->pid, SIGKILL);
}

/* Detaches pr from its worker and ends it: killed if alive, pipes closed,
 * the process handle closed once its exit callback ran. */
void sg_pool_proc_retire(proc *pr) {
  if (pr->w) {
    assert(pr->w->pr == pr);
    pr->w->pr = NULL;
    pr->w = NULL;
  }
  proc_kill(pr);
  proc_close_in(pr);
  sg_pool_proc_close_out(pr);
  if (pr->exited)
    sg_pool_proc_close_process(pr);
}

/* ---- requests ---- */

static size_t bucket(uint64_t ticket) {
  return (size_t)((ticket * 0x9E3779B97F4A7C15ull) >> 54) % HASH_BUCKETS;
}

static preq *table_find(sg_pool *p, uint64_t ticket) {
  for (preq *q = p->table[bucket(ticket)]; q; q = q->hnext)
    if (q->ticket == ticket)
      return q;
  return NULL;
}

static void table_add(sg_pool *p, preq *q) {
  size_t b = bucket(q->ticket);
  q->hprev = NULL;
  q->hnext = p->table[b];
  if (q->hnext)
    q->hnext->hprev = q;
  p->table[b] = q;
  p->pending++;
}

static void table_remove(sg_pool *p, preq *q) {
  if (q->hprev)
    q->hprev->hnext = q->hnext;
  else
    p->table[bucket(q->ticket)] = q->hnext;
  if (q->hnext)
    q->hnext->hprev = q->hprev;
  q->hprev = q->hnext = NULL;
  assert(p->pending > 0);
  p->pending--;
}

static void queue_push(worker *w, preq *q) {
  q->qnext = NULL;
  q->qprev = w->qtail;
  if (w->qtail)
    w->qtail->qnext = q;
  else
    w->qhead = q;
  w->qtail = q;
  w->nqueue++;
}

static void queue_remove(worker *w, preq *q) {
  if (q->qprev)
    q->qprev->qnext = q->qnext;
  else
    w->qhead = q->qnext;
  if (q->qnext)
    q->qnext->qprev = q->qprev;
  else
    w->qtail = q->qprev;
  q->qprev = q->qnext = NULL;
  assert(w->nqueue > 0);
  w->nqueue--;
}

void sg_pool_preq_free(preq *q) {
  if (!q)
    return;
  free(q->task);
  json_decref(q->task_files);
  free(q->source);
  free(q->wire_id);
  free(q);
}

/* The protocol request for q (borrowing q's strings). */
static json_t *preq_to_json(const preq *q, const char *id) {
  static const sg_worker_req_type types[] = {SG_WREQ_COMPILE, SG_WREQ_VALIDATE,
                                             SG_WREQ_PROFILE};
  sg_worker_request r;
  sg_worker_request_init(&r);
  r.type = types[q->kind];
  r.id = (char *)id;
  r.task = q->task;
  r.task_files = q->task_files;
  r.source = q->source;
  r.source_len = q->source_len;
  r.seed = q->seed;
  r.trials = q->trials;
  r.runs = q->runs;
  r.warmups = q->warmups;
  r.eval_timeout = q->eval_timeout;
  return sg_worker_request_to_json(&r); /* r's strings are q's: not freed */
}

/* Hands q's one result to the caller and frees q (already out of the
 * worker). The status and message replace r's when r is NULL. */
void sg_pool_deliver(sg_pool *p, preq *q, const sg_eval_result *r,
                    const char *infra_msg) {
  table_remove(p, q);
  uint64_t ticket = q->ticket;
  sg_pool_preq_free(q);
  p->st.completed++;
  if (r) {
    p->cb.on_result(p, p->cb.data, ticket, r);
    return;
  }
  sg_eval_result res;
  sg_eval_result_init(&res);
  res.status = SG_EVAL_INFRA_ERROR;
  res.message = sg_asprintf("specgen could not evaluate: %s", infra_msg);
  p->cb.on_result(p, p->cb.data, ticket, &res);
  sg_eval_result_free(&res);
}

void sg_pool_worker_event(worker *w, const char *what, const char *msg) {
  sg_pool *p = w->p;
  if (p->cb.on_worker && !p->closing)
    p->cb.on_worker(p, p->cb.data, w->slot, what, msg);
}

/* ---- the worker's timer: the one door ---- */

static void worker_tick(uv_timer_t *t);

static bool remote_slot(const worker *w) {
  return w->device && sg_pool_device_remote(w->device);
}

static double inflight_deadline(const worker *w) {
  const preq *q = w->inflight;
  const sg_pool *p = w->p;
  double timeout = q->eval_timeout > 0 ? q->eval_timeout : SG_EVAL_TIMEOUT_S;
  double limit = q->ph == PH_COMPILED ? timeout
                                      : fmax(timeout, p->compile_limit_s);
  if (q->kind == SG_POOL_COMPILE)
    limit = p->compile_limit_s;
  /* a remote slot's request no worker host took yet ("started") waits in
   * Redis, compiling nothing: eval_timeout and the grace bound that wait */
  if (q->ph == PH_SENT && remote_slot(w))
    limit = timeout;
  return q->t_phase + limit + p->hang_grace_s;
}

static double hello_deadline(const worker *w) {
  return w->t_spawn + w->p->compile_limit_s + w->p->hang_grace_s;
}

/* Starts the timer for the nearest thing the worker waits for. */
void sg_pool_worker_arm(worker *w) {
  sg_pool *p = w->p;
  if (p->closing)
    return;
  double due = INFINITY;
  if (w->state == W_BACKOFF)
    due = w->restart_at;
  proc *pr = w->pr;
  if (pr) {
    if (pr->eof && pr->exited)
      due = 0;
    else if (pr->eof || pr->exited || pr->write_failed)
      due = fmin(due, pr->t_noticed + REAP_WAIT_S);
    if (w->state == W_STARTING)
      due = fmin(due, hello_deadline(w));
    if (w->inflight)
      due = fmin(due, inflight_deadline(w));
  }
  if (isinf(due)) {
    uv_timer_stop(&w->timer);
    return;
  }
  double left_s = due - sg_clock_now_s();
  uint64_t ms = left_s <= 0 ? 0 : (uint64_t)ceil(left_s * 1000.0);
  uv_timer_start(&w->timer, worker_tick, ms, 0);
}


/* Sends the next queued request if the worker is free. Never calls a
 * callback: a write that fails now is seen on the worker's timer. */

typedef struct wreq {
  uv_write_t req;
  proc *pr;
  char *line;
  bool close_after; /* the shutdown line: close stdin once written */
} wreq;

static void on_write(uv_write_t *req, int status) {
  wreq *wr = (wreq *)req;
  proc *pr = wr->pr;
  if (wr->close_after)
    proc_close_in(pr);
  if (status < 0 && status != UV_ECANCELED && !pr->write_failed && pr->w &&
      !pr->p->closing) {
    pr->write_failed = true;
    snprintf(pr->write_err, sizeof pr->write_err, "%s", uv_strerror(status));
    if (!(pr->eof || pr->exited))
      pr->t_noticed = sg_clock_now_s();
    sg_pool_worker_arm(pr->w);
  }
  free(wr->line);
  free(wr);
}

static int proc_write(proc *pr, char *line, size_t len, bool close_after) {
  if (pr->in_closed) {
    free(line);
    return UV_EPIPE;
  }
  wreq *wr = sg_calloc(1, sizeof *wr);
  wr->pr = pr;
  wr->line = line;
  wr->close_after = close_after;
  uv_buf_t b = uv_buf_init(line, (unsigned)len);
  int rc = uv_write(&wr->req, (uv_stream_t *)&pr->in, &b, 1, on_write);
  if (rc < 0) {
    free(line);
    free(wr);
  }
  return rc;
}

/* Detaches pr from its worker and asks it to end: shutdown, then the end of
 * its stdin. Its output is drained to the end, so it never blocks on a
 * full pipe while it shuts down (a slot proxy writes its last
 * acknowledgements to Redis then); the pool's close kills what is left. */
static void proc_shutdown(proc *pr) {
  if (pr->w) {
    pr->w->pr = NULL;
    pr->w = NULL;
  }
  if (pr->exited) {
    proc_close_in(pr);
    sg_pool_proc_close_process(pr);
  } else if (!pr->in_closed) {
    sg_worker_request s;
    sg_worker_request_init(&s);
    s.type = SG_WREQ_SHUTDOWN;
    json_t *j = sg_worker_request_to_json(&s);
    sg_worker_request_free(&s);
    size_t len;
    char *line = sg_jsonl_line(j, &len);
    json_decref(j);
    if (proc_write(pr, line, len, true) < 0)
      proc_close_in(pr);
  }
}

static void proc_write_failed(proc *pr, int rc) {
  if (pr->write_failed)
    return;
  pr->write_failed = true;
  snprintf(pr->write_err, sizeof pr->write_err, "%s", uv_strerror(rc));
  if (!(pr->eof || pr->exited))
    pr->t_noticed = sg_clock_now_s();
}

void sg_pool_remote_stored(proc *pr, const char *wire) {
  if (pr->in_closed || pr->eof || pr->exited || pr->write_failed)
    return; /* unacknowledged: a later proxy's reads ignore its result */
  json_t *j = json_pack("{s:s, s:s}", "type", "ping", "id", wire);
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  int rc = proc_write(pr, line, len, false);
  if (rc < 0)
    proc_write_failed(pr, rc);
}

void sg_pool_device_told(worker *w, bool busy) {
  sg_pool *p = w->p;
  if (w->slot < 0 || w->told_busy == busy || p->closing)
    return;
  w->told_busy = busy;
  if (p->cb.on_device)
    p->cb.on_device(p, p->cb.data, w->slot, busy);
}

void sg_pool_worker_pump(worker *w) {
  sg_pool *p = w->p;
  proc *pr = w->pr;
  if (p->closing || w->state != W_READY || !pr || w->inflight || !w->qhead ||
      pr->eof || pr->exited || pr->write_failed)
    return;
  preq *q = w->qhead;
  queue_remove(w, q);
  q->wire_id = sg_asprintf("%llu.%llu", (unsigned long long)q->ticket,
                           (unsigned long long)pr->gen);
  json_t *j = preq_to_json(q, q->wire_id);
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  q->ph = PH_SENT;
  q->t_phase = sg_clock_now_s();
  w->inflight = q;
  sg_pool_device_told(w, true);
  int rc = proc_write(pr, line, len, false);
  if (rc < 0)
    proc_write_failed(pr, rc);
  sg_pool_worker_arm(w);
}

/* A short text for how the process ended, from what was seen. */
static char *proc_end_text(const proc *pr) {
  if (pr->exited && pr->term_signal)
    return sg_asprintf("died of signal %d (%s)", pr->term_signal,
                       strsignal(pr->term_signal));
  if (pr->exited)
    return sg_asprintf("exited with status %lld", (long long)pr->exit_status);
  if (pr->eof)
    return sg_strdup("closed its output");
  return sg_asprintf("stopped reading its input (%s)", pr->write_err);
}

static void worker_give_up_queue(worker *w, const char *msg);

static void worker_tick(uv_timer_t *t) {
  worker *w = t->data;
  sg_pool *p = w->p;
  if (p->closing)
    return;
  if (w->state == W_GIVEN_UP) { /* retired by the caller: see sg_pool_retire */
    preq *q = w->inflight;
    w->inflight = NULL;
    sg_pool_device_told(w, false);
    if (q && q->aborted)
      sg_pool_preq_free(q);
    else if (q)
      sg_pool_deliver(p, q, NULL, w->last_failure);
    worker_give_up_queue(w, w->last_failure);
    return;
  }
  double now = sg_clock_now_s();
  if (w->state == W_BACKOFF) {
    if (now >= w->restart_at)
      sg_pool_worker_spawn(w);
    else
      sg_pool_worker_arm(w);
    return;
  }
  proc *pr = w->pr;
  if (!pr)
    return;
  if ((pr->eof && pr->exited) ||
      ((pr->eof || pr->exited || pr->write_failed) &&
       now >= pr->t_noticed + REAP_WAIT_S)) {
    char *why = proc_end_text(pr);
    sg_pool_worker_fail(w, "died", why);
    free(why);
    return;
  }
  if (w->state == W_STARTING && now >= hello_deadline(w)) {
    char *why = sg_asprintf("said no hello within %.0f s",
                            p->compile_limit_s + p->hang_grace_s);
    sg_pool_worker_fail(w, "hung", why);
    free(why);
    return;
  }
  if (w->inflight && now >= inflight_deadline(w)) {
    const preq *q = w->inflight;
    char *why = q->ph == PH_SENT && remote_slot(w)
                    ? sg_asprintf("hung: no worker host took the request within %.0f s "
                                  "(docs/remote.md)", now - q->t_phase)
                    : sg_asprintf("hung: no reply for %.0f s", now - q->t_phase);
    sg_pool_worker_fail(w, "hung", why);
    free(why);
    return;
  }
  sg_pool_worker_arm(w);
}

/* ---- failure, restart, giving up ---- */

static void worker_give_up_queue(worker *w, const char *msg) {
  sg_pool *p = w->p;
  while (w->qhead && !p->closing) {
    preq *q = w->qhead;
    queue_remove(w, q);
    sg_pool_deliver(p, q, NULL, msg);
  }
}

/* The worker's process failed (what: "died" or "hung"; reason says how):
 * it is killed, the request it held is reported, and it is restarted after
 * the backoff or given up. Callbacks run last, with the state settled. */
void sg_pool_worker_fail(worker *w, const char *what, const char *reason) {
  sg_pool *p = w->p;
  proc *pr = w->pr;
  long pid = pr ? pr->pid : 0;
  if (pr)
    sg_pool_proc_retire(pr);
  preq *q = w->inflight;
  w->inflight = NULL;
  sg_pool_device_told(w, false);
  char *msg;
  if (pid > 0)
    msg = sg_asprintf("%s (pid %ld) %s while %s", w->name, pid, reason,
                      q ? kind_verb(q->kind)
                        : w->state == W_STARTING ? "starting" : "idle");
  else
    msg = sg_asprintf("%s %s", w->name, reason);
  free(w->last_failure);
  w->last_failure = sg_strdup(msg);
  w->fails++;
  bool give_up = w->fails > p->max_restarts;
  if (give_up) {
    w->state = W_GIVEN_UP;
    p->st.slots_given_up++;
    uv_timer_stop(&w->timer);
  } else {
    w->state = W_BACKOFF;
    w->restart_at = sg_clock_now_s() +
                    p->restart_backoff_s * ldexp(1.0, w->fails - 1);
    sg_pool_worker_arm(w);
  }
  sg_pool_worker_event(w, what, msg);
  if (q) {
    if (q->aborted || p->closing) {
      sg_pool_preq_free(q);
    } else {
      p->st.lost++;
      sg_pool_deliver(p, q, NULL, msg);
    }
  }
  if (give_up && !p->closing) {
    char *gmsg = sg_asprintf("%s given up after %d failure%s in a row; the "
                             "last: %s", w->name, w->fails,
                             w->fails == 1 ? "" : "s", msg);
    sg_pool_worker_event(w, "given_up", gmsg);
    worker_give_up_queue(w, gmsg);
    free(gmsg);
  }
  free(msg);
}

/* ---- reading replies ---- */

/* ---- the public calls ---- */

/* Our environment with the n variables of add ("NAME=value") set over it. */
static char **build_env(const char *const *add, size_t n_add) {
  extern char **environ;
  size_t n = 0;
  for (char **e = environ; *e; e++)
    n++;
  char **env = sg_calloc(n + n_add + 1, sizeof *env);
  size_t k = 0;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    size_t nl = eq ? (size_t)(eq - *e) : strlen(*e);
    bool overridden = false;
    for (size_t i = 0; i < n_add; i++)
      if (strncmp(add[i], *e, nl) == 0 && add[i][nl] == '=')
        overridden = true;
    if (!overridden)
      env[k++] = sg_strdup(*e);
  }
  for (size_t i = 0; i < n_add; i++)
    env[k++] = sg_strdup(add[i]);
  env[k] = NULL;
  return env;
}

/* True when program can be run (an executable path, or found on PATH). */
static bool program_runs(const char *program) {
  if (strchr(program, '/'))
    return access(program, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path)
    return false;
  while (*path) {
    const char *colon = strchr(path, ':');
    size_t n = colon ? (size_t)(colon - path) : strlen(path);
    char *full = sg_asprintf("%.*s/%s", (int)n, n ? path : ".", program);
    bool ok = access(full, X_OK) == 0;
    free(full);
    if (ok)
      return true;
    path += n + (colon ? 1 : 0);
  }
  return false;
}

static int check_opts(const sg_pool_opts *o, const sg_pool_callbacks *cb,
                      sg_err *err) {
  if (!cb || !cb->on_result)
    return sg_err_set(err, SG_EINVAL, "pool: on_result callback is required");
  if (!o->program || !*o->program)
    return sg_err_set(err, SG_EINVAL, "pool: program is required");
  if (!o->build_cache || !*o->build_cache)
    return sg_err_set(err, SG_EINVAL, "pool: build_cache is required");
  if (o->n_devices < 1 || !o->devices)
    return sg_err_set(err, SG_EINVAL, "pool: at least one device is required");
  if (o->n_devices > 4096)
    return sg_err_set(err, SG_EINVAL, "pool: %zu devices (at most 4096)", o->n_devices);
  for (size_t i = 0; i < o->n_devices; i++)
    if (!o->devices[i] || !*o->devices[i])
      return sg_err_set(err, SG_EINVAL, "pool: device %zu is empty", i);
  if (o->compile_workers < 1 || o->compile_workers > 1024)
    return sg_err_set(err, SG_EINVAL,
                      "pool: compile_workers %d (expected 1 to 1024)",
                      o->compile_workers);
  if (!(o->hang_grace_s >= 0 && o->hang_grace_s <= 86400))
    return sg_err_set(err, SG_EINVAL, "pool: hang_grace_s %g (expected 0 to 86400)",
                      o->hang_grace_s);
  if (!(o->compile_limit_s > 0 && o->compile_limit_s <= 86400))
    return sg_err_set(err, SG_EINVAL,
                      "pool: compile_limit_s %g (expected more than 0, at most 86400)",
                      o->compile_limit_s);
  if (o->max_restarts < 0 || o->max_restarts > 1000)
    return sg_err_set(err, SG_EINVAL, "pool: max_restarts %d (expected 0 to 1000)",
                      o->max_restarts);
  if (!(o->restart_backoff_s >= 0 && o->restart_backoff_s <= 3600))
    return sg_err_set(err, SG_EINVAL,
                      "pool: restart_backoff_s %g (expected 0 to 3600)",
                      o->restart_backoff_s);
  for (size_t i = 0; i < o->n_env; i++)
    if (!o->env || !o->env[i] || !strchr(o->env[i], '=') || o->env[i][0] == '=')
      return sg_err_set(err, SG_EINVAL, "pool: env[%zu] is not NAME=value", i);
  for (size_t i = 0; i < o->n_remote_env; i++)
    if (!o->remote_env || !o->remote_env[i] || !strchr(o->remote_env[i], '=') ||
        o->remote_env[i][0] == '=')
      return sg_err_set(err, SG_EINVAL, "pool: remote_env[%zu] is not NAME=value", i);
  return 0;
}

int sg_pool_new(uv_loop_t *loop, const sg_pool_opts *o,
                const sg_pool_callbacks *cb, sg_pool **out, sg_err *err) {
  *out = NULL;
  int rc = check_opts(o, cb, err);
  if (rc != 0)
    return rc;
  if (!program_runs(o->program))
    return sg_err_set(err, SG_EIO, "pool: cannot run %s: %s", o->program,
                      strchr(o->program, '/') ? strerror(errno)
                                              : "not found on PATH");
  int log_fd = -1;
  if (o->log_path) {
    log_fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
      return sg_err_set(err, SG_EIO, "pool: cannot open the workers' log %s: %s",
                        o->log_path, strerror(errno));
  }
  /* a worker that dies leaves a pipe with no reader: the write error, not
   * a signal, must tell us */
  signal(SIGPIPE, SIG_IGN);

  sg_pool *p = sg_calloc(1, sizeof *p);
  p->loop = loop;
  p->cb = *cb;
  p->program = sg_strdup(o->program);
  p->build_cache = sg_strdup(o->build_cache);
  p->work_dir = sg_strdup(o->work_dir);
  p->hang_grace_s = o->hang_grace_s;
  p->restart_backoff_s = o->restart_backoff_s;
  p->compile_limit_s = o->compile_limit_s;
  p->max_restarts = o->max_restarts;
  p->env = o->n_env ? build_env(o->env, o->n_env) : NULL;
  if (o->n_remote_env) { /* the slot proxies': env, then remote_env */
    size_t n = o->n_env + o->n_remote_env;
    const char **all = sg_calloc(n, sizeof *all);
    for (size_t i = 0; i < o->n_env; i++)
      all[i] = o->env[i];
    for (size_t i = 0; i < o->n_remote_env; i++)
      all[o->n_env + i] = o->remote_env[i];
    p->env_remote = build_env(all, n);
    free(all);
  }
  p->log_fd = log_fd;
  p->n_dev = o->n_devices;
  p->n_comp = (size_t)o->compile_workers;
  p->n_workers = p->n_dev + p->n_comp;
  p->workers = sg_calloc(p->n_workers, sizeof *p->workers);
  /* device names are kept in the worker's name; the pointer into it is the
   * device */
  for (size_t i = 0; i < p->n_workers; i++) {
    worker *w = &p->workers[i];
    w->p = p;
    if (i < p->n_dev) {
      w->slot = (int)i;
      w->name = sg_asprintf("worker %s", o->devices[i]);
      w->device = w->name + strlen("worker ");
    } else {
      w->slot = -1 - (int)(i - p->n_dev);
      w->name = sg_asprintf("compile worker %zu", i - p->n_dev);
    }
    w->state = W_BACKOFF;
    uv_timer_init(loop, &w->timer);
    w->timer.data = w;
    p->open_handles++;
  }
  uv_timer_init(loop, &p->close_timer);
  p->close_timer.data = p;
  p->open_handles++;
  p->close_timer_live = true;

  for (size_t i = 0; i < p->n_workers; i++) {
    rc = sg_pool_worker_spawn_proc(&p->workers[i], err);
    if (rc != 0) {
      sg_err_prefix(err, "pool: %s", p->workers[i].name);
      sg_pool_close(p, 0);
      return rc;
    }
    sg_pool_worker_arm(&p->workers[i]);
  }
  *out = p;
  return 0;
}

static worker *least_loaded_compile(sg_pool *p) {
  worker *best = NULL;
  size_t best_load = 0;
  for (size_t i = p->n_dev; i < p->n_workers; i++) {
    worker *w = &p->workers[i];
    if (w->state == W_GIVEN_UP)
      continue;
    size_t load = w->nqueue + (w->inflight ? 1 : 0);
    if (!best || load < best_load) {
      best = w;
      best_load = load;
    }
  }
  return best;
}

/* Longer than 80 lines on purpose: the checks of a request and the choice of
 * its worker are one decision, read in order. */
int sg_pool_submit(sg_pool *p, const sg_pool_request *r, sg_err *err) {
  if (p->closing)
    return sg_err_set(err, SG_ESTATE, "pool: closing; request %llu refused",
                      (unsigned long long)r->ticket);
  if (r->ticket == 0)
    return sg_err_set(err, SG_EINVAL, "pool: ticket 0 (tickets start at 1)");
  if ((unsigned)r->kind >= SG_POOL_KIND__COUNT)
    return sg_err_set(err, SG_EINVAL, "pool: request %llu: unknown kind %d",
                      (unsigned long long)r->ticket, (int)r->kind);
  if (table_find(p, r->ticket))
    return sg_err_set(err, SG_EINVAL, "pool: ticket %llu is already pending",
                      (unsigned long long)r->ticket);
  if (p->pending >= SG_POOL_PENDING_MAX)
    return sg_err_set(err, SG_EFULL, "pool: %d requests pending already",
                      SG_POOL_PENDING_MAX);
  worker *w;
  if (r->kind == SG_POOL_COMPILE) {
    w = least_loaded_compile(p);
    if (!w)
      return sg_err_set(err, SG_ESTATE,
                        "pool: every compile worker was given up; request %llu refused",
                        (unsigned long long)r->ticket);
  } else {
    if (r->slot < 0 || (size_t)r->slot >= p->n_dev)
      return sg_err_set(err, SG_EINVAL,
                        "pool: request %llu: slot %d out of range (0 to %zu)",
                        (unsigned long long)r->ticket, r->slot, p->n_dev - 1);
    w = &p->workers[r->slot];
    if (w->state == W_GIVEN_UP)
      return sg_err_set(err, SG_ESTATE, "pool: %s was given up; request %llu refused",
                        w->name, (unsigned long long)r->ticket);
  }
  if (!r->task || !r->source)
    return sg_err_set(err, SG_EINVAL, "pool: request %llu: task and source are required",
                      (unsigned long long)r->ticket);
  /* the two options a request line would leave out rather than refuse */
  if (!(r->eval_timeout == 0 || (r->eval_timeout > 0 && isfinite(r->eval_timeout))))
    return sg_err_set(err, SG_EINVAL,
                      "pool: request %llu: eval_timeout %g (0 for the default, "
                      "else more than 0)",
                      (unsigned long long)r->ticket, r->eval_timeout);
  if (r->warmups < -1)
    return sg_err_set(err, SG_EINVAL,
                      "pool: request %llu: warmups %d (-1 for the default, "
                      "else 0 or more)",
                      (unsigned long long)r->ticket, r->warmups);
  preq *q = sg_calloc(1, sizeof *q);
  q->ticket = r->ticket;
  q->kind = r->kind;
  q->task = sg_strdup(r->task);
  q->task_files = r->task_files ? json_incref((json_t *)r->task_files) : NULL;
  q->source = sg_strndup(r->source, r->source_len);
  q->source_len = r->source_len;
  q->seed = r->seed;
  q->trials = r->trials;
  q->runs = r->runs;
  q->warmups = r->warmups;
  q->eval_timeout = r->eval_timeout;
  /* checked by the parser the worker runs, so a request the worker would
   * refuse is refused here, where the caller can see why */
  json_t *j = preq_to_json(q, "0");
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  sg_worker_request chk;
  sg_err perr;
  sg_err_clear(&perr);
  int rc = sg_worker_request_parse(line, len - 1, &chk, &perr);
  sg_worker_request_free(&chk);
  free(line);
  if (rc != 0) {
    sg_pool_preq_free(q);
    return sg_err_set(err, SG_EINVAL, "pool: request %llu: %s",
                      (unsigned long long)r->ticket, perr.msg);
  }
  q->w = w;
  q->ph = PH_QUEUED;
  table_add(p, q);
  queue_push(w, q);
  p->st.submitted++;
  sg_pool_worker_pump(w);
  return 0;
}

void sg_pool_abort(sg_pool *p, uint64_t ticket) {
  if (!p || p->closing)
    return;
  preq *q = table_find(p, ticket);
  if (!q)
    return;
  worker *w = q->w;
  table_remove(p, q);
  p->st.aborted++;
  if (q->ph == PH_QUEUED) {
    queue_remove(w, q);
    sg_pool_preq_free(q);
    return;
  }
  /* in flight: the worker kills it; its result is swallowed and the next
   * request goes out once it came */
  assert(w->inflight == q);
  q->aborted = true;
  proc *pr = w->pr;
  if (!pr)
    return;
  sg_worker_request a;
  sg_worker_request_init(&a);
  a.type = SG_WREQ_ABORT;
  a.id = q->wire_id;
  json_t *j = sg_worker_request_to_json(&a);
  a.id = NULL;
  sg_worker_request_free(&a);
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  int rc = proc_write(pr, line, len, false);
  if (rc < 0) {
    proc_write_failed(pr, rc);
    sg_pool_worker_arm(w);
  }
}

size_t sg_pool_pending(const sg_pool *p) { return p ? p->pending : 0; }

void sg_pool_stats_get(const sg_pool *p, sg_pool_stats *st) {
  *st = p->st;
}

long sg_pool_worker_pid(const sg_pool *p, int slot) {
  size_t i;
  if (slot >= 0) {
    if ((size_t)slot >= p->n_dev)
      return 0;
    i = (size_t)slot;
  } else {
    size_t c = (size_t)(-1 - (long)slot);
    if (c >= p->n_comp)
      return 0;
    i = p->n_dev + c;
  }
  const proc *pr = p->workers[i].pr;
  return pr && !pr->exited ? pr->pid : 0;
}

static void on_close_timeout(uv_timer_t *t) {
  sg_pool *p = t->data;
  /* closing the pipes too: a descendant still holding one must not keep the
   * pool alive */
  for (proc *pr = p->procs; pr; pr = pr->next) {
    proc_kill(pr);
    proc_close_in(pr);
    sg_pool_proc_close_out(pr);
  }
  p->close_timer_live = false;
  uv_close((uv_handle_t *)&p->close_timer, pool_handle_closed);
}

void sg_pool_retire(sg_pool *p, int slot, const char *why) {
  if (!p || p->closing || slot < 0 || (size_t)slot >= p->n_dev)
    return;
  worker *w = &p->workers[slot];
  if (w->state == W_GIVEN_UP)
    return;
  w->state = W_GIVEN_UP;
  p->st.slots_given_up++;
  free(w->last_failure);
  w->last_failure = sg_asprintf("%s taken out of service: %s", w->name, why);
  if (w->pr)
    proc_shutdown(w->pr);
  /* what it still holds is answered from the loop, never from this call */
  if (w->inflight || w->qhead)
    uv_timer_start(&w->timer, worker_tick, 0, 0);
  else
    uv_timer_stop(&w->timer);
}

void sg_pool_close(sg_pool *p, double timeout_s) {
  if (!p || p->closing)
    return;
  p->closing = true;
  /* every request is dropped: no callback follows */
  for (size_t b = 0; b < HASH_BUCKETS; b++) {
    while (p->table[b]) {
      preq *q = p->table[b];
      table_remove(p, q);
      if (q->w->inflight == q)
        q->w->inflight = NULL;
      else
        queue_remove(q->w, q);
      sg_pool_preq_free(q);
    }
  }
  for (size_t i = 0; i < p->n_workers; i++) {
    worker *w = &p->workers[i];
    if (w->inflight) { /* aborted ones, waiting for their result */
      sg_pool_preq_free(w->inflight);
      w->inflight = NULL;
    }
    proc *pr = w->pr;
    w->state = W_CLOSED;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, worker_timer_closed);
    if (!pr)
      continue;
    proc_shutdown(pr);
  }
  /* procs retired earlier are already being killed; the rest get until the
   * timeout */
  if (timeout_s < 0 || !isfinite(timeout_s))
    timeout_s = 0;
  uint64_t ms = (uint64_t)ceil(fmin(timeout_s, 86400.0) * 1000.0);
  if (p->procs) {
    uv_timer_start(&p->close_timer, on_close_timeout, ms, 0);
  } else {
    p->close_timer_live = false;
    uv_close((uv_handle_t *)&p->close_timer, pool_handle_closed);
  }
}
