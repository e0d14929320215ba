/* sg_worker_eval.c: the worker's evaluation process (see the header).
 *
 * Its life: die with the worker, wait for a request's directory on the
 * request pipe, read request.json there, load the task, compile (or find
 * the build in the build cache), report the compile, run or profile, free
 * the build (so the worker may remove the directory as soon as the result
 * arrives), report the result, wait again. It never writes to the worker's
 * stdout (its own stdout goes to stderr).
 */
#include "pool/sg_worker_eval.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_sandbox.h"
#include "eval/sg_eval.h"
#include "pool/sg_build_cache.h"
#include "pool/sg_jsonl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REQUEST_FILE "request.json"

/* ---- tasks -------------------------------------------------------------------- */

bool sg_worker_evaluator_fits(const sg_worker_config *cfg, const char *kind,
                              const char *evaluator) {
  const sg_evaluator *ev = sg_evaluator_find(evaluator);
  if (ev == NULL || cfg->compile_only)
    return ev != NULL;
  return strcmp(ev->device_kind, kind) == 0;
}

/* A bare name on a cuda worker means the cuda task of that name, as
 * `specgen eval --device cuda:N` does. A compile worker serves every
 * evaluator and resolves a bare name as sg_task_load does, cpu first: a
 * client compiling for cuda names the task "cuda/NAME" or by directory
 * (docs/protocol.md). */
int sg_worker_load_task(const sg_worker_config *cfg, const char *kind,
                        const char *name, sg_task **out, sg_err *err) {
  int rc = SG_ENOENT;
  /* (the first evaluator of the worker's kind, when that is not the
   * evaluator a bare name resolves to by default) */
  const sg_evaluator *first = NULL;
  for (size_t i = 0; first == NULL && sg_evaluator_at(i); i++)
    if (strcmp(sg_evaluator_at(i)->device_kind, kind) == 0)
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
  if (!sg_worker_evaluator_fits(cfg, kind, (*out)->evaluator)) {
    rc = sg_err_set(err, SG_EINVAL, "task %s/%s needs the %s evaluator, which "
                    "does not run on this worker's device %s",
                    (*out)->evaluator, (*out)->name, (*out)->evaluator,
                    cfg->compile_only ? "compile" : cfg->device);
    sg_task_free(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- inside the evaluation process ---------------------------------------------- */

static bool write_all(int fd, const char *data, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t k = write(fd, data + off, len - off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    off += (size_t)k;
  }
  return true;
}

static void send_line(int fd, json_t *j) {
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  if (!write_all(fd, line, len))
    _exit(3); /* the worker is gone */
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

/* The request in run_dir and its task. */
static int read_request(const sg_worker_eval *e, const char *run_dir,
                        sg_worker_request *req, sg_task **task, sg_err *err) {
  char *path = sg_asprintf("%s/%s", run_dir, REQUEST_FILE);
  char *text = NULL;
  size_t len = 0;
  int rc = sg_file_read(path, SG_WORKER_LINE_MAX, &text, &len, err);
  unlink(path); /* nothing of it for the candidate to find */
  free(path);
  if (!rc)
    rc = sg_worker_request_parse(text, len, req, err);
  free(text);
  if (!rc)
    rc = sg_worker_load_task(e->cfg, e->kind, req->task, task, err);
  return rc;
}

/* The build: found in the build cache, or compiled (and stored there).
 * *cached says which. Returns negative when specgen failed, not the
 * candidate. */
static int get_build(const sg_worker_eval *e, const sg_worker_request *req,
                     const sg_task *task, const sg_eval_opts *opts,
                     sg_eval_build *build, sg_eval_result *r, bool *cached,
                     sg_err *err) {
  const char *cache = e->cfg->build_cache;
  uint64_t key = 0;
  *cached = false;
  if (cache) {
    const char *arch = getenv("SPECGEN_CUDA_ARCH");
    sg_build_cache_key_in in = {task->evaluator, task->dir,
                                e->cfg->version ? e->cfg->version : "",
                                arch && *arch ? arch : NULL, req->source,
                                req->source_len};
    key = sg_build_cache_key(&in);
    double cs = NAN;
    int lrc = sg_build_cache_lookup(cache, key, opts->work_dir, build, &cs, err);
    if (lrc == 0) {
      *cached = true;
      r->status = SG_EVAL_OK;
      r->compile_s = cs;
      r->message = sg_strdup("compiled (found in the build cache)");
      if (sg_cuda_ahead_enabled() &&
          sg_eval_build_share_reference(task, build, e->dir, err) != 0) {
        fprintf(stderr, "specgen worker: %s; this candidate's runner is not shared\n",
                err->msg);
        sg_err_clear(err);
      }
      return 0;
    }
    if (lrc != SG_ENOENT)
      fprintf(stderr, "specgen worker: build cache: %s; compiling instead\n", err->msg);
    sg_err_clear(err);
  }
  int rc = sg_eval_compile(task, req->source, req->source_len, opts, build, r, err);
  if (rc || !cache || r->status != SG_EVAL_OK)
    return rc;
  bool stored = false;
  if (sg_build_cache_store(cache, key, task->evaluator, task->dir, build, r->compile_s,
                           &stored, err) != 0) {
    fprintf(stderr, "specgen worker: build cache: storing: %s\n", err->msg);
    /* a compile request exists to fill the cache: without the entry it did
     * not do its job; a validation goes on with its own build */
    if (req->type == SG_WREQ_COMPILE) {
      sg_err_prefix(err, "storing the build in the build cache");
      return err->code ? err->code : SG_EIO;
    }
    sg_err_clear(err);
  }
  return 0;
}

/* Whether this process has profiled a candidate of task_dir (remembered for
 * the last PROFILED_TASKS tasks). A validation of such a task starts its
 * profile's runner ahead (sg_eval_expect_profile): the pool profiles the
 * valid candidates, often on the device that validated them. */
#define PROFILED_TASKS 8
static bool profiled_before(const char *task_dir, bool remember) {
  static char *seen[PROFILED_TASKS];
  static int next;
  for (int i = 0; i < PROFILED_TASKS; i++)
    if (seen[i] && strcmp(seen[i], task_dir) == 0)
      return true;
  if (remember) {
    free(seen[next]);
    seen[next] = sg_strdup(task_dir);
    next = (next + 1) % PROFILED_TASKS;
  }
  return false;
}

/* One request, from its directory to its result line. */
static void evaluate(const sg_worker_eval *e, const char *run_dir, int res_fd) {
  sg_worker_request req;
  sg_worker_request_init(&req);
  sg_task *task = NULL;
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_eval_build build;
  memset(&build, 0, sizeof build);
  sg_err err;
  sg_err_clear(&err);
  bool cached = false;
  int rc = read_request(e, run_dir, &req, &task, &err);
  sg_eval_opts opts;
  sg_eval_opts_default(&opts);
  opts.device = e->cfg->device;
  opts.work_dir = run_dir;
  sg_worker_request_apply(&req, &opts);
  if (!rc)
    rc = get_build(e, &req, task, &opts, &build, &r, &cached, &err);
  if (!rc) {
    json_t *c = json_object();
    json_object_set_new(c, "compile_s", isfinite(r.compile_s) ? json_real(r.compile_s)
                                                              : json_null());
    json_object_set_new(c, "status", json_string(sg_eval_status_name(r.status)));
    if (cached)
      json_object_set_new(c, "cached", json_true());
    send_line(res_fd, json_pack("{s:o}", "compiled", c));
    if (r.status == SG_EVAL_OK && req.type != SG_WREQ_COMPILE) {
      double compile_s = r.compile_s;
      bool profile = req.type == SG_WREQ_PROFILE;
      if (profiled_before(task->dir, profile) && !profile)
        sg_eval_expect_profile(task, &build, &opts);
      rc = profile ? sg_eval_profile(task, &build, &opts, &r, &err)
                   : sg_eval_run(task, &build, &opts, &r, &err);
      r.compile_s = compile_s;
    }
  }
  if (rc)
    infra(&r, &err);
  sg_eval_build_free(&build);
  send_line(res_fd, json_pack("{s:o}", "result", sg_eval_result_to_json(&r)));
  sg_eval_result_free(&r);
  sg_task_free(task);
  sg_worker_request_free(&req);
}

/* The next line from fd (owned), or NULL at its end. */
static char *read_line(int fd, sg_buf *in) {
  for (;;) {
    char *nl = in->len ? memchr(in->data, '\n', in->len) : NULL;
    if (nl) {
      size_t n = (size_t)(nl - in->data);
      char *line = sg_strndup(in->data, n);
      sg_buf_consume(in, n + 1);
      return line;
    }
    char chunk[4096];
    ssize_t k = read(fd, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return NULL;
    sg_buf_append(in, chunk, (size_t)k);
  }
}

static _Noreturn void eval_main(const sg_worker_eval *e, pid_t parent, int req_fd,
                                int res_fd) {
  /* die with the worker; if it is already gone, stop here */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent)
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
  /* what it and its runners leave goes with its directory */
  setenv("TMPDIR", e->dir, 1);
  sg_cuda_ahead_use(true);
  /* the worker's abort of the request it runs (sg_worker_eval_abort) */
  sg_sandbox_abort_install(SIGUSR1);
  sg_buf in;
  sg_buf_init(&in, 0);
  for (;;) {
    /* an abort is sent only while a request runs, so one that came after
     * the last result belonged to it */
    sg_sandbox_abort_reset();
    char *dir = read_line(req_fd, &in);
    if (!dir)
      break;
    evaluate(e, dir, res_fd);
    free(dir);
  }
  sg_cuda_ahead_use(false);
  _exit(0);
}

/* ---- the worker's side ------------------------------------------------------------ */

void sg_worker_eval_init(sg_worker_eval *e, const sg_worker_config *cfg,
                         const char *kind, const char *root) {
  memset(e, 0, sizeof *e);
  e->cfg = cfg;
  e->kind = kind;
  e->root = root;
  e->req_fd = e->res_fd = -1;
}

static unsigned long eval_max(void) {
  const char *s = getenv("SPECGEN_WORKER_EVAL_MAX");
  char *end = NULL;
  unsigned long v = s && *s ? strtoul(s, &end, 10) : 0;
  return v > 0 && end && !*end ? v : SG_WORKER_EVAL_MAX;
}

static int start(sg_worker_eval *e, sg_err *err) {
  e->dir = sg_asprintf("%s/e%lu", e->root, ++e->nstarted);
  int req[2] = {-1, -1}, res[2] = {-1, -1};
  int rc = 0;
  if (mkdir(e->dir, 0700) != 0)
    rc = sg_err_set(err, SG_EIO, "%s: %s", e->dir, strerror(errno));
  else if (pipe2(req, O_CLOEXEC) != 0 || pipe2(res, O_CLOEXEC) != 0)
    rc = sg_err_set(err, SG_EIO, "pipe: %s", strerror(errno));
  pid_t parent = getpid();
  fflush(stderr);
  pid_t pid = rc ? -1 : fork();
  if (pid == 0) {
    close(req[1]);
    close(res[0]);
    eval_main(e, parent, req[0], res[1]);
  }
  if (!rc && pid < 0)
    rc = sg_err_set(err, SG_EIO, "fork: %s", strerror(errno));
  /* its ends; and ours too when it did not start */
  int *ends[] = {&req[0], &res[1], rc ? &req[1] : NULL, rc ? &res[0] : NULL};
  for (int i = 0; i < 4; i++)
    if (ends[i] && *ends[i] >= 0)
      close(*ends[i]);
  if (rc) {
    sg_worker_scratch_remove(&e->dir);
    return rc;
  }
  e->pid = pid;
  e->req_fd = req[1];
  e->res_fd = res[0];
  e->served = 0;
  return 0;
}

static int write_request(const sg_worker_request *req, const char *task,
                         const char *run_dir, sg_err *err) {
  json_t *j = sg_worker_request_to_json(req);
  json_object_set_new(j, "task", json_string(task));
  json_object_del(j, "task_files"); /* the worker wrote them out already */
  size_t len;
  char *text = sg_jsonl_line(j, &len);
  json_decref(j);
  char *path = sg_asprintf("%s/%s", run_dir, REQUEST_FILE);
  int rc = sg_file_write(path, text, len, err);
  free(path);
  free(text);
  return rc;
}

int sg_worker_eval_submit(sg_worker_eval *e, const sg_worker_request *req,
                          const char *task, const char *run_dir, sg_err *err) {
  if (e->pid > 0 && e->served >= eval_max())
    sg_worker_eval_stop(e, NULL);
  int rc = write_request(req, task, run_dir, err);
  if (!rc && e->pid <= 0)
    rc = start(e, err);
  if (rc)
    return rc;
  e->served++;
  char *line = sg_asprintf("%s\n", run_dir);
  /* a short line into an empty pipe; a process that died just now fails
   * it, and the end of its replies says how it ended */
  (void)write_all(e->req_fd, line, strlen(line));
  free(line);
  return 0;
}

int sg_worker_eval_abort(sg_worker_eval *e) {
  return e->pid > 0 && kill(e->pid, SIGUSR1) == 0 ? 0 : -1;
}

bool sg_worker_eval_untaken(const char *run_dir) {
  char *path = sg_asprintf("%s/%s", run_dir, REQUEST_FILE);
  bool there = access(path, F_OK) == 0;
  free(path);
  return there;
}

void sg_worker_eval_stop(sg_worker_eval *e, int *status) {
  int st = 0;
  if (e->pid > 0) {
    kill(e->pid, SIGKILL);
    while (waitpid(e->pid, &st, 0) < 0 && errno == EINTR)
      ;
  }
  if (status)
    *status = st;
  e->pid = 0;
  if (e->req_fd >= 0)
    close(e->req_fd);
  if (e->res_fd >= 0)
    close(e->res_fd);
  e->req_fd = e->res_fd = -1;
  sg_worker_scratch_remove(&e->dir);
}

void sg_worker_scratch_remove(char **dir) {
  sg_err err;
  if (*dir && sg_rm_rf(*dir, &err) != 0)
    fprintf(stderr, "specgen worker: %s\n", err.msg);
  free(*dir);
  *dir = NULL;
}
