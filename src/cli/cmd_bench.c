/* cmd_bench.c: `specgen bench`: whole sets of tasks in one command, spread
 * over the devices, with a table at the end (docs/usage.md). */
#include "cli/cli_flags.h"
#include "cli/commands.h"
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "eval/sg_bench.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_prefetch.h"
#include "eval/sg_sandbox.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen bench TASKS... (--cands DIR | --examples LABELS |\n"
          "                               --self-check same|wrong|both) [options]\n"
          "\n"
          "Evaluates one candidate per task over whole sets of tasks, spread over the\n"
          "devices, and prints a table (specgen's verdict and KernelBench's, speedup,\n"
          "times) and a summary with the count of every status printed. Exit status:\n"
          "0 when every evaluation completed, whatever the candidates' statuses; 1 when\n"
          "one was not evaluated or came out infra_error; 2 for bad usage or unknown\n"
          "tasks. Stopped by SIGTERM or SIGINT (a time limit, ^C), it ends the row in\n"
          "flight and still prints the table, the rows not reached as not_run.\n"
          "\n"
          "TASKS, each one of:\n"
          "  paper                   the paper's T1-T20 (the built-in cuda tasks)\n"
          "  path/to/19_ReLU.py      a KernelBench file\n"
          "  path/to/level1/         a folder of KernelBench files or task directories\n"
          "  kernelbench:level1[/N]  a level (or one problem) of $SPECGEN_KERNELBENCH\n"
          "  NAME | DIR              a built-in task or a task directory\n"
          "\n"
          "  --cands DIR       candidates: DIR/<task>.py|.cu|.c, or DIR/<N>_*.py for\n"
          "                    KernelBench problem N; a run directory: its best/\n"
          "  --examples LABELS the tasks' own examples, first of the comma-separated\n"
          "                    labels found (e.g. ok-fast,ok-fused,ok-load_inline)\n"
          "  --self-check MODE a check of the kernelbench harness itself (KernelBench\n"
          "                    tasks only; the heavy-operator rule off): same gives\n"
          "                    each reference back as its candidate (expect ok at about\n"
          "                    1.0x), wrong the reference with a small slice of its\n"
          "                    output perturbed (expect nothing ok); both checks the\n"
          "                    two in one validation per task (one set of reference\n"
          "                    outputs, the same candidate alone timed) and reports\n"
          "                    each mode's rows ({self_check, same, wrong} with --json)\n"
          "  --devices LIST    comma-separated, e.g. cuda:0,cuda:1 (default cuda:0; a cpu\n"
          "                    task on cuda:N runs on cpu:N)\n"
          "  --jobs N          compiles running ahead per device (default 4)\n"
          "  --json            print one JSON object {rows, summary}\n"
          "  --seed N, --trials N, --runs N, --warmups N, --eval-timeout S, --strict\n"
          "                    as for specgen eval\n"
          "  -h, --help        this help\n");
}

static int bad_usage(const char *msg, const char *arg) {
  return sg_cli_usage_error("bench", "%s%s", msg, arg ? arg : "");
}

typedef struct worker {
  pid_t pid;
  int fd;
  sg_buf in;
  bool open;
} worker;

/* The device string for a task: a task whose evaluator runs on CPU cores
 * takes core N on GPU N ("cuda:3" -> "cpu:3"). */
static char *device_for(const sg_task *t, const char *dev) {
  const sg_evaluator *ev = sg_evaluator_find(t->evaluator);
  const char *colon = strchr(dev, ':');
  if (ev && !ev->gpu && colon) {
    const char *kind = sg_eval_device_kind(dev);
    const sg_evaluator *other = NULL;
    for (size_t i = 0; (other = sg_evaluator_at(i)) != NULL; i++)
      if (kind && other->gpu && strcmp(other->device_kind, kind) == 0)
        return sg_asprintf("%s%s", ev->device_kind, colon);
  }
  return sg_strdup(dev);
}

static void send_line(int fd, json_t *j) {
  char *text = json_dumps(j, JSON_COMPACT);
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_puts(&b, text);
  sg_buf_puts(&b, "\n");
  size_t off = 0;
  while (off < b.len) {
    ssize_t w = write(fd, b.data + off, b.len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  sg_buf_free(&b);
  free(text);
  json_decref(j);
}

/* One row's compile, started ahead and finished once (finish_compile). */
typedef struct compile_slot {
  bool started, finished;
  char *src, *err_msg;
  size_t len;
  sg_eval_pending pending;
  int rc;
  sg_eval_build build;
  sg_eval_result res;
  sg_err err;
} compile_slot;

static void finish_compile(compile_slot *c) {
  if (c->finished)
    return;
  c->finished = true;
  memset(&c->build, 0, sizeof c->build);
  sg_eval_result_init(&c->res);
  sg_err_clear(&c->err);
  c->rc = c->started ? sg_eval_compile_finish(&c->pending, &c->build, &c->res, &c->err)
                     : sg_err_set(&c->err, SG_EIO, "%s",
                                  c->err_msg ? c->err_msg : "not started");
}

/* The signal that stopped the bench (SIGTERM, SIGINT): the parent still
 * reports the rows its workers finished; the rest are not_run. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

/* A worker's life: the rows i with i % ndev == d, compiles running ahead;
 * since each row is another task, the next row's runner is started ahead
 * (sg_eval_expect) while a row runs. SIGTERM or SIGINT kills the row in
 * flight (sg_sandbox_abort_install), which is then not reported, and the
 * worker ends as after its last row: compiles finished, runners ended.
 * The two rows after the current one are expected (sg_eval_expect, then
 * sg_eval_expect_then): both their runners start while it runs. */
static _Noreturn void work(sg_bench *b, const sg_eval_opts *base, const char *dev,
                           int d, int ndev, int ahead, int fd, const sigset_t *mask) {
  size_t *mine = sg_calloc(b->n + 1, sizeof *mine);
  size_t n = 0;
  for (size_t i = 0; i < b->n; i++)
    if ((int)(i % (size_t)ndev) == d && b->rows[i].candidate)
      mine[n++] = i;
  compile_slot *cs = sg_calloc(n + 1, sizeof *cs);
  char **devs = sg_calloc(n + 1, sizeof *devs);
  for (size_t k = 0; k < n; k++)
    devs[k] = device_for(b->rows[mine[k]].task, dev);
  sg_sandbox_abort_install(SIGTERM);
  sg_sandbox_abort_install(SIGINT);
  sigprocmask(SIG_SETMASK, mask, NULL);
  sg_cuda_ahead_use(true);
  size_t next = 0, k = 0;
  for (; k < n && !sg_sandbox_aborted(); k++) {
    while (next < n && next < k + (size_t)ahead) {
      sg_bench_row *r = &b->rows[mine[next]];
      compile_slot *c = &cs[next];
      sg_err e;
      sg_err_clear(&e);
      if (sg_file_read(r->candidate, 4u << 20, &c->src, &c->len, &e) == 0) {
        sg_eval_opts o = *base;
        o.device = devs[next];
        c->started = sg_eval_compile_start(r->task, c->src, c->len, &o, &c->pending, &e) == 0;
      }
      if (!c->started)
        c->err_msg = sg_strdup(e.msg);
      next++;
    }
    sg_bench_row *r = &b->rows[mine[k]];
    sg_eval_opts o = *base;
    o.device = devs[k];
    compile_slot *c = &cs[k];
    finish_compile(c);
    double wall = isfinite(c->res.compile_s) ? c->res.compile_s : 0;
    if (!c->rc && c->res.status == SG_EVAL_OK) {
      /* the next rows that validate (compiled already), two by default,
       * so that each runner has two rows' time to start */
      int expected = 0;
      for (size_t m = k + 1; m < next && expected < SG_CUDA_AHEAD_DEPTH; m++) {
        compile_slot *nc = &cs[m];
        finish_compile(nc);
        if (nc->rc || nc->res.status != SG_EVAL_OK)
          continue;
        sg_eval_opts no = *base;
        no.device = devs[m];
        if (expected++ == 0)
          sg_eval_expect(b->rows[mine[m]].task, &nc->build, &no);
        else
          sg_eval_expect_then(b->rows[mine[m]].task, &nc->build, &no);
      }
      if (!expected) /* no row comes that could use a runner */
        sg_eval_expect(NULL, NULL, NULL);
      double t1 = sg_clock_now_s();
      c->rc = sg_eval_run(r->task, &c->build, &o, &c->res, &c->err);
      wall += sg_clock_now_s() - t1;
    }
    if (sg_sandbox_aborted()) /* cut off: its outcome is the signal's */
      break;
    json_t *j = json_pack("{s:I, s:i, s:s, s:f}", "row", (json_int_t)mine[k], "rc", c->rc,
                          "error", c->err.msg, "wall_s", wall);
    json_object_set_new(j, "result", sg_eval_result_to_json(&c->res));
    send_line(fd, j);
    sg_eval_result_free(&c->res);
    sg_eval_build_free(&c->build);
    free(c->src);
    free(c->err_msg);
  }
  for (; k < next; k++) { /* compiles started ahead of an abort: reaped */
    finish_compile(&cs[k]);
    sg_eval_result_free(&cs[k].res);
    sg_eval_build_free(&cs[k].build);
    free(cs[k].src);
    free(cs[k].err_msg);
  }
  sg_cuda_ahead_use(false); /* ends the runners, removes their directories */
  _exit(0);
}

static void take_line(sg_bench *b, const char *line, size_t *done) {
  json_error_t je;
  json_t *j = json_loads(line, 0, &je);
  if (!j)
    return;
  json_int_t row = json_integer_value(json_object_get(j, "row"));
  if (row >= 0 && (size_t)row < b->n) {
    sg_bench_row *r = &b->rows[row];
    r->evaluated = true;
    r->wall_s = json_number_value(json_object_get(j, "wall_s"));
    int rc = (int)json_integer_value(json_object_get(j, "rc"));
    sg_err e;
    sg_eval_result_free(&r->result);
    if (rc || sg_eval_result_from_json(json_object_get(j, "result"), &r->result, &e)) {
      sg_eval_result_init(&r->result);
      r->infra = true;
      r->result.message = sg_strdup(json_string_value(json_object_get(j, "error")));
    }
    (*done)++;
    fprintf(stderr, "[%zu/%zu] %s%s%s: %s", *done, b->n, r->label ? r->label : "",
            r->label ? " " : "", r->task->name,
            r->infra ? "infra_error" : sg_eval_status_name(r->result.status));
    if (!r->infra && r->result.status == SG_EVAL_OK)
      fprintf(stderr, " %.3gx", r->result.speedup);
    if (!r->infra && r->result.kernelbench_status)
      fprintf(stderr, " (KernelBench: %s)", r->result.kernelbench_status);
    fprintf(stderr, ", %.1f s", r->wall_s);
    double v = sg_bench_row_validation_s(r);
    if (isfinite(v)) /* "both": the same candidate's own, without the wrong checks */
      fprintf(stderr, " (validation %.1f s)", v);
    if (b->wrong) { /* "both": the wrong candidate's verdict, same row */
      sg_bench_take_wrong(b, (size_t)row);
      const sg_bench_row *w = &b->wrong->rows[row];
      fprintf(stderr, "; wrong: %s", sg_bench_row_status(w));
      if (w->evaluated && !w->infra && w->result.kernelbench_status)
        fprintf(stderr, " (KernelBench: %s)", w->result.kernelbench_status);
    }
    fprintf(stderr, "\n");
  }
  json_decref(j);
}

/* Reads every worker's lines until all have ended. */
static void collect(sg_bench *b, worker *w, int nw) {
  size_t done = 0;
  for (;;) {
    struct pollfd p[64];
    int map[64], np = 0;
    for (int i = 0; i < nw; i++)
      if (w[i].open) {
        p[np] = (struct pollfd){w[i].fd, POLLIN, 0};
        map[np++] = i;
      }
    if (np == 0)
      break;
    if (stop_signal) { /* a signal for this process alone: passed on once */
      for (int i = 0; i < nw; i++)
        if (w[i].open)
          kill(w[i].pid, SIGTERM);
      stop_signal = 0;
    }
    if (poll(p, (nfds_t)np, 500) < 0 && errno != EINTR)
      break;
    for (int k = 0; k < np; k++) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      worker *x = &w[map[k]];
      char chunk[8192];
      ssize_t n = read(x->fd, chunk, sizeof chunk);
      if (n <= 0) {
        x->open = false;
        close(x->fd);
        continue;
      }
      sg_buf_append(&x->in, chunk, (size_t)n);
      char *s = x->in.data, *nl;
      size_t used = 0;
      while ((nl = memchr(s + used, '\n', x->in.len - used))) {
        *nl = 0;
        take_line(b, s + used, &done);
        used = (size_t)(nl - s) + 1;
      }
      if (used) {
        memmove(x->in.data, x->in.data + used, x->in.len - used);
        x->in.len -= used;
      }
    }
  }
}

typedef struct bench_args {
  const char *cands, *examples, *devices, *self_check;
  long jobs;
  bool json;
  sg_eval_opts opts;
} bench_args;

enum { O_CANDS = 1000, O_EXAMPLES, O_DEVICES, O_JOBS, O_JSON, O_SEED, O_TRIALS, O_RUNS,
       O_WARMUPS, O_TIMEOUT, O_STRICT, O_SELF_CHECK };

/* One flag with a value (c its getopt_long code) into a; -1 to go on, else
 * the exit code. */
static int take_value(int c, const char *arg, bench_args *a) {
  long long v = 0;
  switch (c) {
  case O_JOBS:
    if (!sg_cli_parse_ll(arg, 1, 64, &v))
      return bad_usage("--jobs: expected 1..64, got ", arg);
    a->jobs = (long)v;
    break;
  case O_SEED:
    if (!sg_cli_parse_ll(arg, 1, 0x7fffffffL, &v))
      return bad_usage("--seed: expected a positive integer, got ", arg);
    a->opts.seed = (unsigned long long)v;
    break;
  case O_TRIALS:
    if (!sg_cli_parse_ll(arg, 3, 1000, &v))
      return bad_usage("--trials: expected 3..1000, got ", arg);
    a->opts.correctness_trials = (int)v;
    break;
  case O_RUNS:
    if (!sg_cli_parse_ll(arg, 1, 100000, &v))
      return bad_usage("--runs: expected 1..100000, got ", arg);
    a->opts.timed_runs = (int)v;
    break;
  case O_WARMUPS:
    if (!sg_cli_parse_ll(arg, 0, 100000, &v))
      return bad_usage("--warmups: expected 0..100000, got ", arg);
    a->opts.warmup_runs = (int)v;
    break;
  case O_TIMEOUT: {
    sg_knobs k;
    if (sg_cli_flag_knob("bench", "eval-timeout", arg, &k) != 0)
      return SG_EXIT_USAGE;
    a->opts.eval_timeout = k.eval_timeout;
    break;
  }
  case O_SELF_CHECK:
    if (strcmp(arg, "same") != 0 && strcmp(arg, "wrong") != 0 && strcmp(arg, "both") != 0)
      return bad_usage("--self-check: expected same, wrong or both, got ", arg);
    a->self_check = arg;
    /* the references' own heavy work is the point here; `specgen run`
     * has no way to set either */
    a->opts.heavy_rule_off = true;
    a->opts.also_wrong = strcmp(arg, "both") == 0;
    break;
  case O_CANDS: a->cands = arg; break;
  case O_EXAMPLES: a->examples = arg; break;
  case O_DEVICES: a->devices = arg; break;
  }
  return -1;
}

/* Parses the options into a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, bench_args *a) {
  static const struct option longopts[] = {
      {"cands", required_argument, NULL, O_CANDS},
      {"examples", required_argument, NULL, O_EXAMPLES},
      {"devices", required_argument, NULL, O_DEVICES},
      {"jobs", required_argument, NULL, O_JOBS},
      {"json", no_argument, NULL, O_JSON},
      {"seed", required_argument, NULL, O_SEED},
      {"trials", required_argument, NULL, O_TRIALS},
      {"runs", required_argument, NULL, O_RUNS},
      {"warmups", required_argument, NULL, O_WARMUPS},
      {"eval-timeout", required_argument, NULL, O_TIMEOUT},
      {"strict", no_argument, NULL, O_STRICT},
      {"self-check", required_argument, NULL, O_SELF_CHECK},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  a->devices = "cuda:0";
  a->jobs = 4;
  sg_eval_opts_default(&a->opts);
  a->opts.seed = 42;
  optind = 1;
  opterr = 0;
  int c, code;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (c == O_JSON) {
      a->json = true;
    } else if (c == O_STRICT) {
      a->opts.strict = true;
    } else if (c == 'h') {
      usage(stdout);
      return SG_EXIT_OK;
    } else if (c == '?') {
      return sg_cli_flag_refused("bench", c, argv);
    } else if ((code = take_value(c, optarg, a)) >= 0) {
      return code;
    }
  }
  if (optind >= argc)
    return bad_usage("no tasks named", NULL);
  if ((a->cands != NULL) + (a->examples != NULL) + (a->self_check != NULL) != 1)
    return bad_usage("give exactly one of --cands DIR, --examples LABELS and --self-check "
                     "MODE", NULL);
  return -1;
}

/* One worker process per device; collects their results into b. */
static void run_workers(sg_bench *b, const bench_args *a, char **devs, int ndev) {
  fflush(NULL);
  worker w[64];
  memset(w, 0, sizeof w);
  int nw = 0;
  /* blocked until each side has its handler: a stop is never lost */
  sigset_t stops, old;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  sigprocmask(SIG_BLOCK, &stops, &old);
  for (int d = 0; d < ndev; d++) {
    int fds[2];
    if (pipe(fds))
      break;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      work(b, &a->opts, devs[d], d, ndev, (int)a->jobs, fds[1], &old);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      break;
    }
    w[nw].pid = pid;
    w[nw].fd = fds[0];
    w[nw].open = true;
    sg_buf_init(&w[nw].in, 0);
    nw++;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop; /* no SA_RESTART: poll returns at once */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigprocmask(SIG_SETMASK, &old, NULL);
  collect(b, w, nw);
  for (int i = 0; i < nw; i++) {
    int st;
    waitpid(w[i].pid, &st, 0);
    sg_buf_free(&w[i].in);
  }
}

static void report(const sg_bench *b, bool json) {
  if (json) {
    json_t *j = sg_bench_json(b);
    char *s = json_dumps(j, JSON_INDENT(2));
    printf("%s\n", s);
    free(s);
    json_decref(j);
    return;
  }
  sg_buf out;
  sg_buf_init(&out, 0);
  sg_bench_table(b, &out);
  sg_buf_puts(&out, "\n");
  sg_bench_summary(b, &out);
  fputs(sg_buf_str(&out), stdout);
  sg_buf_free(&out);
}

int sg_cmd_bench(int argc, char **argv) {
  bench_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0)
    return code;
  char *devlist = sg_strdup(a.devices);
  char *devs[64];
  int ndev = 0;
  char *save = NULL;
  for (char *t = strtok_r(devlist, ",", &save); t && ndev < 64; t = strtok_r(NULL, ",", &save))
    if (strncmp(t, "cuda:", 5) == 0 || strncmp(t, "cpu:", 4) == 0)
      devs[ndev++] = t;
    else {
      fprintf(stderr, "specgen bench: --devices: %s is not cuda:N or cpu:N\n", t);
      free(devlist);
      return SG_EXIT_USAGE;
    }
  if (ndev == 0) {
    free(devlist);
    return bad_usage("--devices: empty", NULL);
  }
  sg_bench b = {.rows = NULL};
  sg_err err;
  sg_err_clear(&err);
  for (int i = optind; i < argc; i++)
    if (sg_bench_add_tasks(&b, argv[i], &err)) {
      fprintf(stderr, "specgen bench: %s: %s\n", argv[i], err.msg);
      sg_bench_free(&b);
      free(devlist);
      return SG_EXIT_USAGE;
    }
  /* the self-check's candidates live in a scratch directory of this run */
  char *scratch = NULL;
  if (a.self_check && (sg_scratch_dir(NULL, "specgen-self-check", &scratch, &err) ||
                       sg_bench_self_check(&b, a.self_check, scratch, &err))) {
    fprintf(stderr, "specgen bench: %s\n", err.msg);
    code = err.code == SG_EINVAL ? SG_EXIT_USAGE : SG_EXIT_FAILED;
    if (scratch)
      sg_rm_rf(scratch, &err);
    free(scratch);
    sg_bench_free(&b);
    free(devlist);
    return code;
  }
  for (size_t i = 0; i < b.n && !a.self_check; i++)
    b.rows[i].candidate = a.cands ? sg_bench_find_candidate(b.rows[i].task, a.cands)
                                  : sg_bench_find_example(b.rows[i].task, a.examples);
  run_workers(&b, &a, devs, ndev);
  code = sg_bench_failed(&b) ? SG_EXIT_FAILED : SG_EXIT_OK;
  report(&b, a.json);
  if (scratch && sg_rm_rf(scratch, &err))
    fprintf(stderr, "specgen bench: %s\n", err.msg);
  free(scratch);
  sg_bench_free(&b);
  free(devlist);
  return code;
}
