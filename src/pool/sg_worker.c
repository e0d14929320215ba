/* sg_worker.c: the worker's loop (sg_worker.h, docs/protocol.md).
 *
 * How it works. The worker is one single-threaded process with a poll loop
 * over two descriptors: its request input and the reply pipe of its
 * evaluation process (sg_worker_eval.h), a long-lived process forked from
 * it that evaluates one request at a time: a "compiled" line, then a
 * "result" line, which the worker turns into replies carrying the request's
 * id. So the loop stays free to answer abort, ping and new requests while
 * an evaluation runs, and a runner started ahead by one request serves the
 * next.
 *
 * Abort sends the request's aborted result at once and asks the evaluation
 * process to stop it (SIGUSR1: the sandbox kills what the request started,
 * sparing runners kept ahead); one that does not answer in time is killed
 * with SIGKILL and reaped, and the next request starts a fresh one. The
 * process asked the kernel for SIGKILL when
 * the worker dies (PR_SET_PDEATHSIG), and the sandbox asks the same for the
 * candidate, the compiler and the runners it starts, so a kill at any level
 * takes everything below it down: a worker killed mid-request leaves no
 * spinning candidate behind, and its client sees the end of the worker's
 * output (which the runtime takes as "restart it").
 *
 * Each request gets its own scratch directory under the worker's, removed
 * when the request ends; the worker's is removed when it exits.
 *
 * With a build cache (sg_build_cache.h) the evaluation looks the candidate
 * up before compiling; a hit hands the stored build to run or profile (the
 * "compiled" reply then says cached: true), a miss compiles and stores. A
 * compile worker (compile_only) holds no device and answers only compile
 * requests: the build goes into the cache for a device worker to find.
 *
 * Never: write anything but protocol lines to out_fd, evaluate two requests
 * at once (one device, one measurement at a time), or block on the
 * evaluation process while requests wait unread.
 */
#include "pool/sg_worker.h"

#include "common/sg_clock.h"
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_task_files.h"
#include "pool/sg_worker_eval.h"
#include "pool/sg_worker_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct job {
  sg_worker_request req;
  char *task;     /* what its task was loaded from: a name or directory */
  long long line; /* the request's input line */
  bool resent;    /* given to a second process: the first died idle */
  bool aborted;   /* its result went out; the process is stopping it */
} job;

typedef struct worker {
  const sg_worker_config *cfg;
  const char *kind;  /* "cpu", "cuda", or "compile" (compile_only) */
  char *root;        /* the worker's scratch directory */
  unsigned long seq; /* requests started */
  pid_t self;
  /* the queue: FIFO, jobs[0] is next */
  job **queue;
  size_t nqueue, cap;
  /* the evaluation process and the request it runs */
  sg_worker_eval ev;
  job *run;
  char *run_dir;
  sg_buf rbuf;       /* its lines, until complete */
  double compile_s;
  double abort_deadline; /* run->aborted: when the process is killed instead */
  /* input */
  sg_buf in;
  long long lines;   /* complete lines read so far */
  bool discarding;   /* dropping an overlong line until its newline */
  bool in_eof;
  bool out_broken;
  bool stop;
} worker;

/* ---- device ------------------------------------------------------------------ */

static int parse_index(const char *s, long max, long *out) {
  if (!*s)
    return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > max || s[0] == '+' || s[0] == '-')
    return -1;
  *out = v;
  return 0;
}

int sg_worker_device_check(const char *device, const char **kind, sg_err *err) {
  long n = 0;
  if (device && strncmp(device, "cpu:", 4) == 0 &&
      parse_index(device + 4, 4095, &n) == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
      return sg_err_set(err, SG_EIO, "sched_getaffinity: %s", strerror(errno));
    if (n >= CPU_SETSIZE || !CPU_ISSET((int)n, &set))
      return sg_err_set(err, SG_EINVAL,
                        "device %s: this process may not use core %ld", device, n);
    *kind = "cpu";
    return 0;
  }
  if (device && strncmp(device, "cuda:", 5) == 0 &&
      parse_index(device + 5, 1023, &n) == 0) {
    *kind = "cuda";
    return 0;
  }
  return sg_err_set(err, SG_EINVAL, "device \"%s\": expected cpu:N or cuda:N",
                    device ? device : "");
}

/* ---- output ------------------------------------------------------------------ */

static void send_json(worker *w, json_t *j) {
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  size_t off = 0;
  while (!w->out_broken && off < len) {
    ssize_t k = write(w->cfg->out_fd, line + off, len - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      /* the client is gone: nobody can use what this worker does any more */
      fprintf(stderr, "specgen worker: replies cannot be written (%s); stopping\n",
              k < 0 ? strerror(errno) : "short write");
      w->out_broken = true;
      w->stop = true;
      break;
    }
    off += (size_t)k;
  }
  free(line);
}

static void send_reply(worker *w, sg_worker_reply *r) {
  send_json(w, sg_worker_reply_to_json(r));
  sg_worker_reply_free(r);
}

static void send_simple(worker *w, sg_worker_reply_type t, const char *id) {
  sg_worker_reply r;
  sg_worker_reply_init(&r, t);
  r.id = sg_strdup(id);
  send_reply(w, &r);
}

static void send_error(worker *w, long long line, const char *id,
                       const char *msg) {
  sg_worker_reply r;
  sg_worker_reply_init(&r, SG_WREP_ERROR);
  r.id = sg_strdup(id);
  r.line = line;
  r.message = sg_strdup(msg);
  send_reply(w, &r);
}

static void send_hello(worker *w, const char *id) {
  sg_worker_reply r;
  sg_worker_reply_init(&r, SG_WREP_HELLO);
  r.id = sg_strdup(id);
  r.version = sg_strdup(w->cfg->version ? w->cfg->version : "");
  r.device = sg_strdup(w->cfg->compile_only ? "compile" : w->cfg->device);
  /* a compile worker: every evaluator of this build; else those that run
   * on its device's kind */
  for (size_t i = 0; sg_evaluator_at(i); i++)
    if (sg_worker_evaluator_fits(w->cfg, w->kind, sg_evaluator_at(i)->name))
      r.evaluators[r.nevaluators++] = sg_strdup(sg_evaluator_at(i)->name);
  r.pid = (long long)w->self;
  send_reply(w, &r);
}

/* A result the worker itself decided (aborted, or the evaluation process
 * died). */
static void send_own_result(worker *w, const char *id, sg_eval_status st,
                            double compile_s, const char *msg) {
  sg_worker_reply r;
  sg_worker_reply_init(&r, SG_WREP_RESULT);
  r.id = sg_strdup(id);
  r.result.status = st;
  r.result.compile_s = compile_s;
  r.result.message = sg_strdup(msg);
  send_reply(w, &r);
}

/* ---- jobs -------------------------------------------------------------------- */

static void job_free(job *j) {
  if (!j)
    return;
  sg_worker_request_free(&j->req);
  free(j->task);
  free(j);
}

static bool id_in_use(const worker *w, const char *id) {
  if (w->run && !w->run->aborted && strcmp(w->run->req.id, id) == 0)
    return true;
  for (size_t i = 0; i < w->nqueue; i++)
    if (strcmp(w->queue[i]->req.id, id) == 0)
      return true;
  return false;
}

/* ---- running ----------------------------------------------------------------- */

/* The running request is over: its scratch goes. */
static void end_run(worker *w) {
  sg_worker_scratch_remove(&w->run_dir);
  job_free(w->run);
  w->run = NULL;
}

static void start_next(worker *w) {
  while (!w->run && w->nqueue && !w->stop) {
    job *j = w->queue[0];
    memmove(w->queue, w->queue + 1, (w->nqueue - 1) * sizeof *w->queue);
    w->nqueue--;
    w->run = j;
    w->compile_s = NAN;
    w->run_dir = sg_asprintf("%s/r%lu", w->root, ++w->seq);
    send_simple(w, SG_WREP_STARTED, j->req.id);
    sg_err err;
    sg_err_clear(&err);
    int rc = mkdir(w->run_dir, 0700) == 0
                 ? sg_worker_eval_submit(&w->ev, &j->req, j->task, w->run_dir, &err)
                 : sg_err_set(&err, SG_EIO, "%s: %s", w->run_dir, strerror(errno));
    if (rc) {
      char *msg = sg_asprintf("specgen could not evaluate: cannot start the "
                              "evaluation: %s", err.msg);
      send_own_result(w, j->req.id, SG_EVAL_INFRA_ERROR, NAN, msg);
      free(msg);
      end_run(w); /* and try the next one */
    }
  }
}

/* One line from the evaluation process: {"compiled":{...}} or
 * {"result":{...}}, which ends the request. An aborted request's lines
 * are dropped: its result went out already. */
static void eval_line(worker *w, const json_t *j) {
  const json_t *c = json_object_get(j, "compiled");
  const json_t *res = json_object_get(j, "result");
  if (w->run && w->run->aborted) {
    if (json_is_object(res))
      end_run(w);
  } else if (w->run && json_is_object(c)) {
    sg_worker_reply r;
    sg_worker_reply_init(&r, SG_WREP_COMPILED);
    r.id = sg_strdup(w->run->req.id);
    const json_t *cs = json_object_get(c, "compile_s");
    r.compile_s = json_is_number(cs) ? json_number_value(cs) : NAN;
    int st = sg_eval_status_parse(json_string_value(json_object_get(c, "status")));
    r.compile_status = st >= 0 ? (sg_eval_status)st : SG_EVAL_INFRA_ERROR;
    r.cached = json_is_true(json_object_get(c, "cached"));
    w->compile_s = r.compile_s;
    send_reply(w, &r);
  } else if (w->run && json_is_object(res)) {
    sg_worker_reply r;
    sg_worker_reply_init(&r, SG_WREP_RESULT);
    r.id = sg_strdup(w->run->req.id);
    sg_err err;
    sg_eval_result_free(&r.result);
    if (sg_eval_result_from_json(res, &r.result, &err) == 0) {
      send_reply(w, &r);
    } else {
      sg_worker_reply_free(&r);
      send_own_result(w, w->run->req.id, SG_EVAL_INFRA_ERROR, w->compile_s, err.msg);
    }
    end_run(w);
  } else {
    fprintf(stderr, "specgen worker: unexpected line from the evaluation process\n");
  }
}

/* Ends the evaluation process; the request it ran (if any) ends with
 * status st and message why. */
static void kill_running(worker *w, sg_eval_status st, const char *why) {
  sg_worker_eval_stop(&w->ev, NULL);
  sg_buf_reset(&w->rbuf);
  if (w->run && w->run->aborted) /* its result went out already */
    end_run(w);
  if (!w->run)
    return;
  char *id = sg_strdup(w->run->req.id);
  double cs = w->compile_s;
  end_run(w);
  send_own_result(w, id, st, cs, why);
  free(id);
}

/* The evaluation process's pipe is readable: relay its lines; at its end
 * (the process died), the request it ran gets an infra_error. */
static void eval_readable(worker *w) {
  char chunk[65536];
  ssize_t k = read(w->ev.res_fd, chunk, sizeof chunk);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (k > 0) {
    sg_buf_append(&w->rbuf, chunk, (size_t)k);
    char *nl;
    while (w->rbuf.len && (nl = memchr(w->rbuf.data, '\n', w->rbuf.len))) {
      size_t n = (size_t)(nl - w->rbuf.data);
      json_error_t je;
      json_t *j = json_loadb(w->rbuf.data, n, 0, &je);
      sg_buf_consume(&w->rbuf, n + 1);
      eval_line(w, j);
      if (j)
        json_decref(j);
    }
    return;
  }
  int st = 0;
  sg_worker_eval_stop(&w->ev, &st);
  sg_buf_reset(&w->rbuf);
  if (w->run && w->run->aborted) { /* died while stopping it: its result went out */
    end_run(w);
    return;
  }
  if (w->run && !w->run->resent && sg_worker_eval_untaken(w->run_dir)) {
    /* it died idle, before it took the request: a fresh one gets it */
    w->run->resent = true;
    sg_err err;
    if (sg_worker_eval_submit(&w->ev, &w->run->req, w->run->task, w->run_dir, &err) == 0)
      return;
  }
  char *msg = WIFSIGNALED(st)
                  ? sg_asprintf("specgen could not evaluate: the evaluation process "
                                "was killed by signal %d", WTERMSIG(st))
                  : sg_asprintf("specgen could not evaluate: the evaluation process "
                                "ended without a result (exit status %d)",
                                WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  if (!w->run)
    fprintf(stderr, "specgen worker: %s; the next request starts a fresh one\n",
            msg + strlen("specgen could not evaluate: "));
  kill_running(w, SG_EVAL_INFRA_ERROR, msg);
  free(msg);
}

static void abort_queued(worker *w, size_t i, const char *why) {
  job *j = w->queue[i];
  memmove(w->queue + i, w->queue + i + 1, (w->nqueue - i - 1) * sizeof *w->queue);
  w->nqueue--;
  send_own_result(w, j->req.id, SG_EVAL_ABORTED, NAN, why);
  job_free(j);
}

/* Shutdown and end of input: every request ends, aborted, and the
 * evaluation process with them. */
static void abort_all(worker *w) {
  kill_running(w, SG_EVAL_ABORTED, "aborted: the worker is shutting down");
  while (w->nqueue)
    abort_queued(w, 0, "aborted: the worker is shutting down");
}

/* ---- requests ---------------------------------------------------------------- */

/* An abort of the running request: its result goes out now, and the
 * evaluation process is asked to stop it (sg_worker_eval_abort: what the
 * request started dies, the runners kept ahead for later requests live
 * on); its late lines are dropped. One that has not answered within
 * ABORT_DRAIN_S is killed, runners and all. */
#define ABORT_DRAIN_S 5.0

static void abort_running(worker *w, const char *why) {
  if (w->run->aborted)
    return;
  if (w->ev.pid <= 0 || sg_worker_eval_abort(&w->ev) != 0) {
    kill_running(w, SG_EVAL_ABORTED, why);
    return;
  }
  w->run->aborted = true;
  w->abort_deadline = sg_clock_now_s() + ABORT_DRAIN_S;
  send_own_result(w, w->run->req.id, SG_EVAL_ABORTED, w->compile_s, why);
}

/* An aborted request whose process has not answered in time. */
static void abort_overdue(worker *w) {
  if (w->run && w->run->aborted && sg_clock_now_s() >= w->abort_deadline) {
    fprintf(stderr, "specgen worker: the evaluation process did not stop an aborted "
            "request within %.0f s; killing it\n", ABORT_DRAIN_S);
    kill_running(w, SG_EVAL_ABORTED, NULL);
  }
}

static void do_abort(worker *w, long long line, const char *id) {
  if (w->run && !w->run->aborted && strcmp(w->run->req.id, id) == 0) {
    abort_running(w, "aborted by the client while it ran");
    return;
  }
  for (size_t i = 0; i < w->nqueue; i++)
    if (strcmp(w->queue[i]->req.id, id) == 0) {
      abort_queued(w, i, "aborted by the client before it ran");
      return;
    }
  char *msg = sg_asprintf("abort: no queued or running request has id \"%s\"", id);
  send_error(w, line, id, msg);
  free(msg);
}

static void do_request(worker *w, long long line, const char *text, size_t len) {
  sg_worker_request req;
  sg_err err;
  sg_err_clear(&err);
  if (sg_worker_request_parse(text, len, &req, &err) != 0) {
    send_error(w, line, req.id, err.msg);
    sg_worker_request_free(&req);
    return;
  }
  switch (req.type) {
  case SG_WREQ_HELLO:
    send_hello(w, req.id);
    break;
  case SG_WREQ_PING:
    send_simple(w, SG_WREP_PONG, req.id);
    break;
  case SG_WREQ_SHUTDOWN:
    abort_all(w);
    send_simple(w, SG_WREP_BYE, req.id);
    w->stop = true;
    break;
  case SG_WREQ_ABORT:
    do_abort(w, line, req.id);
    break;
  case SG_WREQ_VALIDATE:
  case SG_WREQ_PROFILE:
  case SG_WREQ_COMPILE: {
    if (w->cfg->compile_only && req.type != SG_WREQ_COMPILE) {
      char *msg = sg_asprintf("%s: this worker only compiles (--compile-only) "
                              "and holds no device; send it to a device worker",
                              sg_worker_req_type_name(req.type));
      send_error(w, line, req.id, msg);
      free(msg);
      break;
    }
    if (req.type == SG_WREQ_COMPILE && !w->cfg->build_cache) {
      send_error(w, line, req.id, "compile: this worker has no build cache "
                 "(--build-cache DIR), so the build would be lost");
      break;
    }
    if (id_in_use(w, req.id)) {
      send_error(w, line, req.id, "field \"id\": a request with this id is "
                 "already queued or running");
      break;
    }
    if (w->nqueue >= w->cap) {
      char *msg = sg_asprintf("queue full (%zu requests wait): retry later", w->nqueue);
      send_error(w, line, req.id, msg);
      free(msg);
      break;
    }
    /* a task sent as its files is loaded from them, written once under the
     * host's build cache (whose keys then name the same directory for every
     * worker of the host) or this worker's scratch directory */
    char *from_files = NULL;
    if (req.task_files &&
        sg_task_files_materialize(req.task_files,
                                  w->cfg->build_cache ? w->cfg->build_cache : w->root,
                                  &from_files, &err) != 0) {
      sg_err_prefix(&err, "field \"task_files\"");
      send_error(w, line, req.id, err.msg);
      break;
    }
    /* loaded here to refuse what cannot load; the evaluation process loads
     * it again from the same name */
    char *from = from_files ? from_files : sg_strdup(req.task);
    sg_task *task = NULL;
    int trc = sg_worker_load_task(w->cfg, w->kind, from, &task, &err);
    sg_task_free(task);
    if (trc != 0) {
      free(from);
      sg_err_prefix(&err, req.task_files ? "field \"task_files\"" : "field \"task\"");
      send_error(w, line, req.id, err.msg);
      break;
    }
    job *j = sg_calloc(1, sizeof *j);
    j->req = req; /* moves the strings */
    sg_worker_request_init(&req);
    j->task = from;
    j->line = line;
    w->queue[w->nqueue++] = j;
    break;
  }
  default:
    break;
  }
  sg_worker_request_free(&req);
}

static bool blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
      return false;
  return true;
}

static void input_line(worker *w, const char *text, size_t len) {
  long long line = ++w->lines;
  if (!blank(text, len))
    do_request(w, line, text, len);
}

static int input_readable(worker *w, sg_err *err) {
  char chunk[65536];
  ssize_t k = read(w->cfg->in_fd, chunk, sizeof chunk);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (k < 0)
    return sg_err_set(err, SG_EIO, "reading requests: %s", strerror(errno));
  if (k == 0) {
    /* a last line without its newline still counts */
    if (!w->discarding && w->in.len)
      input_line(w, w->in.data, w->in.len);
    sg_buf_reset(&w->in);
    w->in_eof = true;
    return 0;
  }
  const char *p = chunk;
  size_t n = (size_t)k;
  while (n && !w->stop) {
    const char *nl = memchr(p, '\n', n);
    size_t take = nl ? (size_t)(nl - p) : n;
    if (w->discarding) {
      if (nl) {
        w->discarding = false;
        w->lines++;
      }
    } else if (w->in.len + take > SG_WORKER_LINE_MAX) {
      char *msg = sg_asprintf("line longer than %u bytes: ignored", SG_WORKER_LINE_MAX);
      send_error(w, w->lines + 1, NULL, msg);
      free(msg);
      sg_buf_reset(&w->in);
      if (nl)
        w->lines++;
      else
        w->discarding = true;
    } else {
      sg_buf_append(&w->in, p, take);
      if (nl) {
        input_line(w, w->in.data ? w->in.data : "", w->in.len);
        sg_buf_reset(&w->in);
      }
    }
    if (!nl)
      break;
    p = nl + 1;
    n -= take + 1;
  }
  return 0;
}

/* ---- the loop ------------------------------------------------------------------ */

/* Longer than 80 lines on purpose: the worker's main loop, read in one place. */
int sg_worker_serve(const sg_worker_config *cfg, sg_err *err) {
  worker w;
  memset(&w, 0, sizeof w);
  w.cfg = cfg;
  w.self = getpid();
  w.cap = cfg->queue_cap ? cfg->queue_cap : SG_WORKER_QUEUE_DEFAULT;
  int rc = 0;
  if (cfg->compile_only) {
    if (cfg->device)
      return sg_err_set(err, SG_EINVAL, "a compile worker holds no device "
                        "(device %s given)", cfg->device);
    w.kind = "compile";
  } else if ((rc = sg_worker_device_check(cfg->device, &w.kind, err))) {
    return rc;
  }
  if (cfg->build_cache && (rc = sg_mkdir_p(cfg->build_cache, err)))
    return sg_err_prefix(err, "build cache");
  const char *tmp = cfg->scratch_root ? cfg->scratch_root : getenv("TMPDIR");
  w.root = sg_asprintf("%s/specgen-worker-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(w.root)) {
    rc = sg_err_set(err, SG_EIO, "cannot create a scratch directory %s: %s",
                    w.root, strerror(errno));
    free(w.root);
    return rc;
  }
  /* a vanished client must end in an error from write, not a signal */
  signal(SIGPIPE, SIG_IGN);
  /* SIGTERM and SIGINT (a supervisor stopping the worker, Ctrl-C) are read
   * in the loop and end it like a shutdown request: results say "aborted",
   * scratch is removed */
  sigset_t stopsigs, oldmask;
  sigemptyset(&stopsigs);
  sigaddset(&stopsigs, SIGTERM);
  sigaddset(&stopsigs, SIGINT);
  sigprocmask(SIG_BLOCK, &stopsigs, &oldmask);
  int sfd = signalfd(-1, &stopsigs, SFD_CLOEXEC | SFD_NONBLOCK);
  sg_worker_eval_init(&w.ev, cfg, w.kind, w.root);
  w.queue = sg_calloc(w.cap, sizeof *w.queue);
  sg_buf_init(&w.in, 0);
  sg_buf_init(&w.rbuf, SG_WORKER_LINE_MAX);
  send_hello(&w, NULL);
  fprintf(stderr, "specgen worker: pid %ld serving %s%s%s\n", (long)w.self,
          cfg->compile_only ? "compile requests" : "device ",
          cfg->compile_only ? "" : cfg->device,
          cfg->build_cache ? " with a build cache" : "");

  rc = 0;
  while (!w.stop) {
    if (w.in_eof) {
      /* nobody is left to read what this worker would measure */
      fprintf(stderr, "specgen worker: end of input; stopping\n");
      abort_all(&w);
      break;
    }
    start_next(&w);
    struct pollfd p[3];
    nfds_t np = 0;
    p[np++] = (struct pollfd){.fd = cfg->in_fd, .events = POLLIN};
    p[np++] = (struct pollfd){.fd = sfd, .events = POLLIN}; /* -1: ignored */
    if (w.ev.res_fd >= 0) /* idle too: to see it die */
      p[np++] = (struct pollfd){.fd = w.ev.res_fd, .events = POLLIN};
    int timeout_ms = -1;
    if (w.run && w.run->aborted)
      timeout_ms = (int)fmax(0, ceil((w.abort_deadline - sg_clock_now_s()) * 1000));
    if (poll(p, np, timeout_ms) < 0) {
      if (errno == EINTR)
        continue;
      rc = sg_err_set(err, SG_EIO, "poll: %s", strerror(errno));
      break;
    }
    /* the evaluation first: a result that is ready goes out before an
     * abort that arrived at the same time could withdraw it */
    if (np > 2 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
      eval_readable(&w);
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        fprintf(stderr, "specgen worker: signal %u; stopping\n", si.ssi_signo);
        abort_all(&w);
        send_simple(&w, SG_WREP_BYE, NULL);
        break;
      }
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if ((rc = input_readable(&w, err)) != 0)
        break;
    }
    abort_overdue(&w);
    if (w.rbuf.truncated) {
      fprintf(stderr, "specgen worker: the evaluation process wrote too much\n");
      kill_running(&w, SG_EVAL_INFRA_ERROR, "specgen could not evaluate: the "
                   "evaluation process wrote an overlong result");
    }
  }
  abort_all(&w);
  if (sfd >= 0)
    close(sfd);
  sigprocmask(SIG_SETMASK, &oldmask, NULL);
  for (size_t i = 0; i < w.nqueue; i++)
    job_free(w.queue[i]);
  free(w.queue);
  sg_buf_free(&w.in);
  sg_buf_free(&w.rbuf);
  sg_worker_scratch_remove(&w.root);
  return rc;
}
