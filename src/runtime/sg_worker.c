/* sg_worker.c: the worker's loop (sg_worker.h, docs/protocol.md).
 *
 * How it works. The worker is one single-threaded process with a poll loop
 * over two descriptors: its request input and, while an evaluation runs, a
 * pipe from the evaluation's process. Each evaluation runs in a forked child
 * of the worker (not a thread: the sandbox forks candidates and must be
 * called before any thread exists, and a child can be killed at once, whole,
 * which a thread cannot). The child compiles, writes a "compiled" line on the
 * pipe, runs or profiles, writes a "result" line and exits; the worker turns
 * these into replies carrying the request's id. So the loop stays free to
 * answer abort, ping and new requests while an evaluation runs.
 *
 * Abort kills the child with SIGKILL and reaps it. The child asked the
 * kernel for SIGKILL when the worker dies (PR_SET_PDEATHSIG), and the sandbox
 * asks the same for the candidate and the compiler it starts, so a kill at
 * any level takes everything below it down: a worker killed mid-request
 * leaves no spinning candidate behind, and its client sees the end of the
 * worker's output (which the runtime takes as "restart it").
 *
 * Each request gets its own scratch directory under the worker's, removed
 * when the request ends; the worker's is removed when it exits.
 *
 * With a build cache (sg_build_cache.h) the child looks the candidate up
 * before compiling; a hit hands the stored build to run or profile (the
 * "compiled" reply then says cached: true), a miss compiles and stores. A
 * compile worker (compile_only) holds no device and answers only compile
 * requests: the build goes into the cache for a device worker to find.
 *
 * Never: write anything but protocol lines to out_fd (the child's stdout is
 * moved to stderr), evaluate two requests at once (one device, one
 * measurement at a time), or block on the child while requests wait unread.
 */
#include "runtime/sg_worker.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"
#include "runtime/sg_build_cache.h"
#include "runtime/sg_jsonl.h"
#include "runtime/sg_task_files.h"
#include "runtime/sg_worker_proto.h"

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
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct job {
  sg_worker_request req;
  sg_task *task;
  long long line; /* the request's input line */
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
  /* the running evaluation */
  job *run;
  pid_t pid;
  int rfd;
  char *run_dir;
  sg_buf rbuf;       /* the child's lines, until complete */
  json_t *result;    /* the child's result, once received */
  double compile_s;
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

static bool evaluator_fits(const worker *w, const char *evaluator) {
  const sg_evaluator *ev = sg_evaluator_find(evaluator);
  if (ev == NULL || w->cfg->compile_only)
    return ev != NULL;
  return strcmp(ev->device_kind, w->kind) == 0;
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
    if (evaluator_fits(w, sg_evaluator_at(i)->name))
      r.evaluators[r.nevaluators++] = sg_strdup(sg_evaluator_at(i)->name);
  r.pid = (long long)w->self;
  send_reply(w, &r);
}

/* A result the worker itself decided (aborted, or the child died). */
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
  sg_task_free(j->task);
  free(j);
}


/* A bare name on a cuda worker means the cuda task of that name, as
 * `specgen eval --device cuda:N` does. A compile worker serves every
 * evaluator and resolves a bare name as sg_task_load does, cpu first: a
 * client compiling for cuda names the task "cuda/NAME" or by directory
 * (docs/protocol.md). */
static int load_task(worker *w, const char *name, sg_task **out, sg_err *err) {
  int rc = SG_ENOENT;
  /* (the first evaluator of the worker's kind, when that is not the
   * evaluator a bare name resolves to by default) */
  const sg_evaluator *first = NULL;
  for (size_t i = 0; first == NULL && sg_evaluator_at(i); i++)
    if (strcmp(sg_evaluator_at(i)->device_kind, w->kind) == 0)
      first = sg_evaluator_at(i);
  if (first && first != sg_evaluator_at(0) && !strchr(name, '/')) {
    char *q = sg_asprintf("%s/%s", first->name, name);
    rc = sg_task_load(q, out, err);
    free(q);
  }
  if (rc == SG_ENOENT)
    rc = sg_task_load(name, out, err);
  if (rc)
    return rc;
  if (!evaluator_fits(w, (*out)->evaluator)) {
    rc = sg_err_set(err, SG_EINVAL, "task %s/%s needs the %s evaluator, which "
                    "does not run on this worker's device %s",
                    (*out)->evaluator, (*out)->name, (*out)->evaluator,
                    w->cfg->compile_only ? "compile" : w->cfg->device);
    sg_task_free(*out);
    *out = NULL;
  }
  return rc;
}

static bool id_in_use(const worker *w, const char *id) {
  if (w->run && strcmp(w->run->req.id, id) == 0)
    return true;
  for (size_t i = 0; i < w->nqueue; i++)
    if (strcmp(w->queue[i]->req.id, id) == 0)
      return true;
  return false;
}

/* ---- the evaluation child ------------------------------------------------------- */

static void child_send(int fd, json_t *j) {
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  size_t off = 0;
  while (off < len) {
    ssize_t k = write(fd, line + off, len - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      _exit(3); /* the worker is gone */
    off += (size_t)k;
  }
  free(line);
}

static void infra(sg_eval_result *r, const sg_err *err) {
  double compile_s = r->compile_s;
  sg_eval_result_free(r);
  sg_eval_result_init(r);
  r->status = SG_EVAL_INFRA_ERROR;
  r->compile_s = compile_s;
  r->message = sg_asprintf("specgen could not evaluate: %s", err->msg);
}

/* Longer than 80 lines on purpose: the child's whole life (task, compile or
 * cache, run or profile, reply) in order, with its exits. */
static _Noreturn void eval_child(worker *w, job *j, int wfd) {
  /* die with the worker; if it is already gone, stop here */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != w->self)
    _exit(2);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL); /* the worker blocks SIGTERM, SIGINT */
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) {
    dup2(devnull, 0);
    close(devnull);
  }
  dup2(2, 1); /* stdout is the protocol's: nothing else may reach it */

  sg_eval_opts opts;
  sg_eval_opts_default(&opts);
  opts.device = w->cfg->device;
  opts.work_dir = w->run_dir;
  sg_worker_request_apply(&j->req, &opts);
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_eval_build build;
  memset(&build, 0, sizeof build);
  sg_err err;
  sg_err_clear(&err);
  const char *cache = w->cfg->build_cache;
  uint64_t key = 0;
  bool cached = false;
  int rc = 0;
  if (cache) {
    const char *arch = getenv("SPECGEN_CUDA_ARCH");
    sg_build_cache_key_in in = {j->task->evaluator, j->task->dir,
                                w->cfg->version ? w->cfg->version : "",
                                arch && *arch ? arch : NULL, j->req.source,
                                j->req.source_len};
    key = sg_build_cache_key(&in);
    double cs = NAN;
    int lrc = sg_build_cache_lookup(cache, key, w->run_dir, &build, &cs, &err);
    if (lrc == 0) {
      cached = true;
      r.status = SG_EVAL_OK;
      r.compile_s = cs;
      r.message = sg_strdup("compiled (found in the build cache)");
    } else if (lrc != SG_ENOENT) {
      fprintf(stderr, "specgen worker: build cache: %s; compiling instead\n",
              err.msg);
    }
    sg_err_clear(&err);
  }
  if (!cached)
    rc = sg_eval_compile(j->task, j->req.source, j->req.source_len, &opts,
                         &build, &r, &err);
  if (rc == 0 && !cached && cache && r.status == SG_EVAL_OK) {
    bool stored = false;
    if (sg_build_cache_store(cache, key, j->task->evaluator, j->task->dir,
                             &build, r.compile_s, &stored, &err) != 0) {
      fprintf(stderr, "specgen worker: build cache: storing: %s\n", err.msg);
      /* a compile request exists to fill the cache: without the entry it
       * did not do its job; a validation goes on with its own build */
      if (j->req.type == SG_WREQ_COMPILE) {
        sg_err_prefix(&err, "storing the build in the build cache");
        rc = err.code ? err.code : SG_EIO;
      }
      if (!rc)
        sg_err_clear(&err);
    }
  }
  if (rc) {
    infra(&r, &err);
  } else {
    json_t *c = json_object();
    json_object_set_new(c, "compile_s", isfinite(r.compile_s)
                                            ? json_real(r.compile_s)
                                            : json_null());
    json_object_set_new(c, "status", json_string(sg_eval_status_name(r.status)));
    if (cached)
      json_object_set_new(c, "cached", json_true());
    json_t *m = json_object();
    json_object_set_new(m, "compiled", c);
    child_send(wfd, m);
    if (r.status == SG_EVAL_OK && j->req.type != SG_WREQ_COMPILE) {
      double compile_s = r.compile_s;
      rc = j->req.type == SG_WREQ_PROFILE
               ? sg_eval_profile(j->task, &build, &opts, &r, &err)
               : sg_eval_run(j->task, &build, &opts, &r, &err);
      r.compile_s = compile_s;
      if (rc)
        infra(&r, &err);
    }
  }
  json_t *m = json_object();
  json_object_set_new(m, "result", sg_eval_result_to_json(&r));
  child_send(wfd, m);
  sg_eval_build_free(&build);
  sg_eval_result_free(&r);
  _exit(0);
}

/* ---- running ----------------------------------------------------------------- */

static void end_run(worker *w) {
  if (w->rfd >= 0)
    close(w->rfd);
  w->rfd = -1;
  if (w->pid > 0) {
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
      ;
  }
  w->pid = 0;
  if (w->run_dir) {
    sg_err err;
    if (sg_rm_rf(w->run_dir, &err) != 0)
      fprintf(stderr, "specgen worker: %s\n", err.msg);
  }
  free(w->run_dir);
  w->run_dir = NULL;
  sg_buf_reset(&w->rbuf);
  if (w->result)
    json_decref(w->result);
  w->result = NULL;
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
    int fds[2] = {-1, -1};
    pid_t pid = -1;
    if (mkdir(w->run_dir, 0700) == 0 && pipe2(fds, O_CLOEXEC) == 0) {
      fflush(stderr);
      pid = fork();
      if (pid == 0) {
        close(fds[0]);
        eval_child(w, j, fds[1]);
      }
      close(fds[1]);
      if (pid < 0)
        close(fds[0]);
    }
    if (pid < 0) {
      char *msg = sg_asprintf("specgen could not evaluate: cannot start the "
                              "evaluation: %s", strerror(errno));
      send_own_result(w, j->req.id, SG_EVAL_INFRA_ERROR, NAN, msg);
      free(msg);
      end_run(w); /* and try the next one */
      continue;
    }
    w->pid = pid;
    w->rfd = fds[0];
  }
}

/* One line from the child: {"compiled":{...}} or {"result":{...}}. */
static void child_line(worker *w, const char *line, size_t len) {
  json_error_t je;
  json_t *j = json_loadb(line, len, 0, &je);
  const json_t *c = json_object_get(j, "compiled");
  const json_t *res = json_object_get(j, "result");
  if (json_is_object(c)) {
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
  } else if (json_is_object(res) && !w->result) {
    w->result = json_incref((json_t *)res);
  } else {
    fprintf(stderr, "specgen worker: unexpected line from the evaluation process\n");
  }
  if (j)
    json_decref(j);
}

/* The child's pipe is readable: relay its lines; at its end, the result. */
static void child_readable(worker *w) {
  char chunk[65536];
  ssize_t k = read(w->rfd, chunk, sizeof chunk);
  if (k < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (k > 0) {
    sg_buf_append(&w->rbuf, chunk, (size_t)k);
    char *nl;
    while (w->rbuf.len && (nl = memchr(w->rbuf.data, '\n', w->rbuf.len))) {
      size_t n = (size_t)(nl - w->rbuf.data);
      child_line(w, w->rbuf.data, n);
      sg_buf_consume(&w->rbuf, n + 1);
    }
    return;
  }
  /* end of the pipe: the child is done (or died) */
  close(w->rfd);
  w->rfd = -1;
  int st = 0;
  pid_t p;
  while ((p = waitpid(w->pid, &st, 0)) < 0 && errno == EINTR)
    ;
  w->pid = 0;
  const char *id = w->run->req.id;
  if (w->result) {
    sg_worker_reply r;
    sg_worker_reply_init(&r, SG_WREP_RESULT);
    r.id = sg_strdup(id);
    sg_err err;
    sg_eval_result_free(&r.result);
    if (sg_eval_result_from_json(w->result, &r.result, &err) == 0) {
      send_reply(w, &r);
    } else {
      sg_worker_reply_free(&r);
      send_own_result(w, id, SG_EVAL_INFRA_ERROR, w->compile_s, err.msg);
    }
  } else {
    char *msg;
    if (p > 0 && WIFSIGNALED(st))
      msg = sg_asprintf("specgen could not evaluate: the evaluation process "
                        "was killed by signal %d", WTERMSIG(st));
    else
      msg = sg_asprintf("specgen could not evaluate: the evaluation process "
                        "ended without a result (exit status %d)",
                        p > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    send_own_result(w, id, SG_EVAL_INFRA_ERROR, w->compile_s, msg);
    free(msg);
  }
  end_run(w);
}

/* Kills the running evaluation and reports it ended with status st. */
static void kill_running(worker *w, sg_eval_status st, const char *why) {
  if (!w->run)
    return;
  if (w->pid > 0)
    kill(w->pid, SIGKILL);
  char *id = sg_strdup(w->run->req.id);
  double cs = w->compile_s;
  end_run(w); /* reaps the child */
  send_own_result(w, id, st, cs, why);
  free(id);
}

static void abort_queued(worker *w, size_t i, const char *why) {
  job *j = w->queue[i];
  memmove(w->queue + i, w->queue + i + 1, (w->nqueue - i - 1) * sizeof *w->queue);
  w->nqueue--;
  send_own_result(w, j->req.id, SG_EVAL_ABORTED, NAN, why);
  job_free(j);
}

/* Shutdown and end of input: every request ends, aborted. */
static void abort_all(worker *w) {
  kill_running(w, SG_EVAL_ABORTED, "aborted: the worker is shutting down");
  while (w->nqueue)
    abort_queued(w, 0, "aborted: the worker is shutting down");
}

/* ---- requests ---------------------------------------------------------------- */

static void do_abort(worker *w, long long line, const char *id) {
  if (w->run && strcmp(w->run->req.id, id) == 0) {
    if (w->result) /* finished already: its real result follows */
      return;
    kill_running(w, SG_EVAL_ABORTED, "aborted by the client while it ran");
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
    sg_task *task = NULL;
    int trc = load_task(w, from_files ? from_files : req.task, &task, &err);
    free(from_files);
    if (trc != 0) {
      sg_err_prefix(&err, req.task_files ? "field \"task_files\"" : "field \"task\"");
      send_error(w, line, req.id, err.msg);
      break;
    }
    job *j = sg_calloc(1, sizeof *j);
    j->req = req; /* moves the strings */
    sg_worker_request_init(&req);
    j->task = task;
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
  w.rfd = -1;
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
    if (w.rfd >= 0)
      p[np++] = (struct pollfd){.fd = w.rfd, .events = POLLIN};
    if (poll(p, np, -1) < 0) {
      if (errno == EINTR)
        continue;
      rc = sg_err_set(err, SG_EIO, "poll: %s", strerror(errno));
      break;
    }
    /* the child first: a result that is ready goes out before an abort
     * that arrived at the same time could withdraw it */
    if (np > 2 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
      child_readable(&w);
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
    if (w.rbuf.truncated && w.run) {
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
  sg_err e2;
  if (sg_rm_rf(w.root, &e2) != 0)
    fprintf(stderr, "specgen worker: %s\n", e2.msg);
  free(w.root);
  return rc;
}
