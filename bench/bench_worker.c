/* bench_worker.c: what the worker protocol costs (docs/protocol.md).
 *
 * Spawns `specgen worker --device cpu:0` on pipes and measures, from the
 * client's side:
 *   - ping round trip: a ping written, its pong read;
 *   - abort latency: a spinning candidate (hinge_loss's timeout example)
 *     running, the abort written, its "aborted" result read (the evaluation
 *     child killed and reaped, its scratch removed);
 *   - request overhead: a validation's wall time from the request written to
 *     the result read, minus the compile_s and run_s the result reports
 *     (handing the request on, relaying, task loading, JSON both ways);
 *   - abort latency and request overhead side by side for a worker that
 *     keeps its evaluation process (the default) and one that starts a
 *     fresh process for every request (SPECGEN_WORKER_EVAL_MAX=1: a fork
 *     per request, as a child per request did), alternating between the
 *     two in each rep;
 *   - the build cache: a second worker with --build-cache validates a
 *     source it has not seen (a miss: compile, store, run), then the same
 *     source again (a hit: the stored build, run); each rep's source differs
 *     by a comment, so every first validation is a real miss.
 *
 * usage: bench_worker [--specgen PATH] [--pings N] [--reps N]
 * PATH defaults to src/cli/specgen beside this program's bench/ folder.
 */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_worker_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct wp {
  pid_t pid;
  int in, out;
  sg_buf buf;
} wp;

static void die(const char *msg) {
  fprintf(stderr, "bench_worker: %s\n", msg);
  exit(1);
}

/* cache: the --build-cache directory, or NULL for none; eval_max: the
 * worker's $SPECGEN_WORKER_EVAL_MAX, or NULL for its default */
static void start(wp *w, const char *specgen, const char *cache, const char *eval_max) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
    die("pipe");
  pid_t pid = fork();
  if (pid < 0)
    die("fork");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    if (eval_max)
      setenv("SPECGEN_WORKER_EVAL_MAX", eval_max, 1);
    else
      unsetenv("SPECGEN_WORKER_EVAL_MAX");
    if (cache)
      execl(specgen, specgen, "worker", "--device", "cpu:0", "--build-cache",
            cache, (char *)NULL);
    else
      execl(specgen, specgen, "worker", "--device", "cpu:0", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  w->pid = pid;
  w->in = in[1];
  w->out = out[0];
  sg_buf_init(&w->buf, 0);
}

static void sendl(wp *w, const char *line) {
  size_t len = strlen(line), off = 0;
  while (off < len) {
    ssize_t k = write(w->in, line + off, len - off);
    if (k <= 0 && errno != EINTR)
      die("write to the worker failed");
    if (k > 0)
      off += (size_t)k;
  }
}

/* The next reply as JSON (bounded wait: 300 s). */
static json_t *recvj(wp *w) {
  double deadline = sg_clock_now_s() + 300;
  for (;;) {
    char *nl = w->buf.len ? memchr(w->buf.data, '\n', w->buf.len) : NULL;
    if (nl) {
      size_t n = (size_t)(nl - w->buf.data);
      json_error_t je;
      json_t *j = json_loadb(w->buf.data, n, 0, &je);
      sg_buf_consume(&w->buf, n + 1);
      if (!j)
        die("a reply is not JSON");
      return j;
    }
    if (sg_clock_now_s() > deadline)
      die("no reply within 300 s");
    struct pollfd p = {.fd = w->out, .events = POLLIN};
    if (poll(&p, 1, 1000) <= 0)
      continue;
    char chunk[65536];
    ssize_t k = read(w->out, chunk, sizeof chunk);
    if (k == 0)
      die("the worker's output ended");
    if (k > 0)
      sg_buf_append(&w->buf, chunk, (size_t)k);
  }
}

/* Reads replies until one of this type (and id); returns it. */
static json_t *until(wp *w, const char *type, const char *id) {
  for (int i = 0; i < 1000; i++) {
    json_t *j = recvj(w);
    const char *t = json_string_value(json_object_get(j, "type"));
    const char *jid = json_string_value(json_object_get(j, "id"));
    if (t && strcmp(t, type) == 0 && (!id || (jid && strcmp(jid, id) == 0)))
      return j;
    json_decref(j);
  }
  die("too many replies without the one expected");
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp);
  size_t i = (size_t)floor(p * (double)(n - 1) + 0.5);
  return v[i];
}

static char *request(const char *id, const char *src, double timeout_s) {
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:{s:i, s:i, s:i, s:f}}", "type",
                        "validate", "id", id, "task", "hinge_loss", "source", src,
                        "opts", "runs", 1, "warmups", 0, "seed", 3, "eval_timeout",
                        timeout_s);
  char *line = sg_jsonl_line(j, NULL);
  json_decref(j);
  return line;
}

static char *example(const char *name) {
  char *path = sg_asprintf("%s/tasks/cpu/hinge_loss/examples/%s", SG_SOURCE_ROOT, name);
  char *src;
  sg_err err;
  if (sg_file_read(path, 1 << 20, &src, NULL, &err))
    die(err.msg);
  free(path);
  return src;
}

/* A spinning candidate aborted (*ab: ms from the abort written to its
 * result read), then ok-fast validated (*wall: s; *ovh: ms of it that
 * were neither compile nor run). */
static void abort_and_validate(wp *w, const char *spin, const char *fast, double *ab,
                               double *ovh, double *wall) {
  char *line = request("spin", spin, 120);
  sendl(w, line);
  free(line);
  json_decref(until(w, "compiled", "spin"));
  usleep(200000); /* let the candidate spin */
  double t0 = sg_clock_now_s();
  sendl(w, "{\"type\":\"abort\",\"id\":\"spin\"}\n");
  json_t *r = until(w, "result", "spin");
  *ab = (sg_clock_now_s() - t0) * 1e3;
  json_decref(r);

  line = request("fast", fast, 60);
  t0 = sg_clock_now_s();
  sendl(w, line);
  free(line);
  r = until(w, "result", "fast");
  *wall = sg_clock_now_s() - t0;
  json_t *res = json_object_get(r, "result");
  const char *st = json_string_value(json_object_get(res, "status"));
  if (!st || strcmp(st, "ok") != 0)
    die("ok-fast did not validate");
  double inner = json_number_value(json_object_get(res, "compile_s")) +
                 json_number_value(json_object_get(res, "run_s"));
  *ovh = (*wall - inner) * 1e3;
  json_decref(r);
}

int main(int argc, char **argv) {
  char *self = sg_strdup(argv[0]);
  char *specgen = sg_asprintf("%s/../src/cli/specgen", dirname(self));
  int pings = 500, reps = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--specgen") == 0 && i + 1 < argc) {
      free(specgen);
      specgen = sg_strdup(argv[++i]);
    } else if (strcmp(argv[i], "--pings") == 0 && i + 1 < argc) {
      pings = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_worker [--specgen PATH] [--pings N] [--reps N]\n");
      return 2;
    }
  }
  if (pings < 1 || reps < 1)
    die("--pings and --reps take positive counts");
  signal(SIGPIPE, SIG_IGN);
  wp w;
  start(&w, specgen, NULL, NULL);
  json_decref(until(&w, "hello", NULL));

  double *rtt = sg_calloc((size_t)pings, sizeof *rtt);
  for (int i = 0; i < pings; i++) {
    double t0 = sg_clock_now_s();
    sendl(&w, "{\"type\":\"ping\",\"id\":\"p\"}\n");
    json_decref(until(&w, "pong", "p"));
    rtt[i] = (sg_clock_now_s() - t0) * 1e6;
  }

  char *spin = example("timeout-unstarted_workers.c");
  char *fast = example("ok-fast.c");
  /* [0]: the evaluation process kept, [1]: a fresh one per request */
  wp fresh;
  start(&fresh, specgen, NULL, "1");
  json_decref(until(&fresh, "hello", NULL));
  wp *modes[2] = {&w, &fresh};
  double *ab[2], *ovh[2], *wall[2];
  for (int m = 0; m < 2; m++) {
    ab[m] = sg_calloc((size_t)reps, sizeof *ab[m]);
    ovh[m] = sg_calloc((size_t)reps, sizeof *ovh[m]);
    wall[m] = sg_calloc((size_t)reps, sizeof *wall[m]);
  }
  for (int i = 0; i < reps; i++)
    for (int k = 0; k < 2; k++) {
      int m = (i + k) % 2; /* each goes first in every other rep */
      abort_and_validate(modes[m], spin, fast, &ab[m][i], &ovh[m][i], &wall[m][i]);
    }
  for (int m = 0; m < 2; m++) {
    sendl(modes[m], "{\"type\":\"shutdown\"}\n");
    json_decref(until(modes[m], "bye", NULL));
    waitpid(modes[m]->pid, NULL, 0);
    sg_buf_free(&modes[m]->buf);
  }

  /* the build cache: miss then hit, per rep */
  const char *tmp = getenv("TMPDIR");
  char *cache = sg_asprintf("%s/bench-worker-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(cache))
    die("cannot create a cache directory");
  start(&w, specgen, cache, NULL);
  json_decref(until(&w, "hello", NULL));
  double *miss = sg_calloc((size_t)reps, sizeof *miss);
  double *hit = sg_calloc((size_t)reps, sizeof *hit);
  double *miss_c = sg_calloc((size_t)reps, sizeof *miss_c);
  for (int i = 0; i < reps; i++) {
    char *src = sg_asprintf("%s\n/* rep %d */\n", fast, i);
    for (int k = 0; k < 2; k++) {
      char *line = request("c", src, 60);
      double t0 = sg_clock_now_s();
      sendl(&w, line);
      free(line);
      json_t *c = until(&w, "compiled", "c");
      bool cached = json_is_true(json_object_get(c, "cached"));
      json_decref(c);
      json_t *r = until(&w, "result", "c");
      double dt = sg_clock_now_s() - t0;
      const char *st = json_string_value(json_object_get(json_object_get(r, "result"), "status"));
      if (!st || strcmp(st, "ok") != 0)
        die("ok-fast did not validate with the build cache");
      if (cached != (k == 1))
        die(k ? "the second validation missed the cache" : "the first validation hit the cache");
      if (k == 0) {
        miss[i] = dt;
        miss_c[i] = json_number_value(json_object_get(json_object_get(r, "result"), "compile_s"));
      } else {
        hit[i] = dt;
      }
      json_decref(r);
    }
    free(src);
  }
  sendl(&w, "{\"type\":\"shutdown\"}\n");
  json_decref(until(&w, "bye", NULL));
  waitpid(w.pid, NULL, 0);
  sg_err err;
  if (sg_rm_rf(cache, &err))
    die(err.msg);
  free(cache);

  printf("%-42s %14s %20s %6s\n", "measure (median)", "kept process", "process per request",
         "n");
  printf("%-42s %11.2f ms %17.2f ms %6d\n", "abort -> aborted result",
         pct(ab[0], (size_t)reps, 0.5), pct(ab[1], (size_t)reps, 0.5), reps);
  printf("%-42s %11.2f ms %17.2f ms %6d\n", "validate overhead (wall - compile - run)",
         pct(ovh[0], (size_t)reps, 0.5), pct(ovh[1], (size_t)reps, 0.5), reps);
  printf("%-42s %11.3f s  %17.3f s  %6d\n\n", "validate wall (ok-fast, 1 run)",
         pct(wall[0], (size_t)reps, 0.5), pct(wall[1], (size_t)reps, 0.5), reps);
  printf("%-42s %10s %10s %6s\n", "measure", "median", "p90/max", "n");
  printf("%-42s %8.1f us %8.1f us %6d\n", "ping round trip", pct(rtt, (size_t)pings, 0.5),
         pct(rtt, (size_t)pings, 0.9), pings);
  printf("%-42s %8.3f s  %8.3f s  %6d\n", "validate wall, build cache miss",
         pct(miss, (size_t)reps, 0.5), pct(miss, (size_t)reps, 1.0), reps);
  printf("%-42s %8.3f s  %8.3f s  %6d\n", "  of which compile_s (the miss)",
         pct(miss_c, (size_t)reps, 0.5), pct(miss_c, (size_t)reps, 1.0), reps);
  printf("%-42s %8.3f s  %8.3f s  %6d\n", "validate wall, build cache hit",
         pct(hit, (size_t)reps, 0.5), pct(hit, (size_t)reps, 1.0), reps);
  free(rtt);
  for (int m = 0; m < 2; m++) {
    free(ab[m]);
    free(ovh[m]);
    free(wall[m]);
  }
  free(miss);
  free(miss_c);
  free(hit);
  free(spin);
  free(fast);
  free(specgen);
  free(self);
  sg_buf_free(&w.buf);
  return 0;
}
