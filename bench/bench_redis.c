/* bench_redis.c: what carrying requests through Redis costs (docs/remote.md).
 *
 * Starts its own redis-server (loopback, a password, no persistence) and
 * measures:
 *   - request round trip, local pipe vs Redis: a validate request for a task
 *     no worker has (refused at once by the worker process, no evaluation),
 *     written to a local `specgen worker --device cpu:0` on its pipes, and
 *     written to a slot proxy (`specgen worker --remote-slot`) that carries
 *     it through Redis to a worker host (`specgen worker --redis`), whose
 *     pool hands it to its own local worker, and back: the difference is
 *     what the remote path adds (two streams, the proxy, the worker host's
 *     pool);
 *   - small-request throughput through the broker alone: W fake workers
 *     (threads, one connection each) take requests from one stream with
 *     XREADGROUP, answer each at once with an XADD to a reply stream and
 *     XACK it; a producer keeps 2 W requests in flight. The same stream
 *     layout and commands as the real workers, without an evaluation.
 *
 * With --pool N[,N...] it measures instead a simulated pool of N remote
 * devices per row: N slot proxies (sg_remote_slot, each remote slot of
 * `specgen run --redis`) on one thread, driven as the run's pool drives
 * them (a request whenever free, validate and profile in turn, a 4 KB
 * source; the ping once the result is "stored"), and N remote workers
 * (sg_remote_worker, the code of `specgen worker --redis`, each its own
 * consumer) on another, whose evaluator only waits: the paper's mean
 * validation and profiling times (22.9 s, 26.5 s; uniform 0.5-1.5x)
 * divided by --scale (1000). Per row: results per second against the rate
 * if the broker added nothing, the overhead it adds (submit to result
 * minus the wait), and how much of a core redis-server and each side ran
 * and wanted (schedstat), to show which part saturates first.
 *
 * usage: bench_redis [--specgen PATH] [--reps N] [--requests N]
 *        bench_redis --pool N[,N...] [--scale F] [--seconds S]
 */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "common/sg_rng.h"
#include "eval/sg_eval.h"
#include "remote/sg_remote.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PASSWORD "bench-password-7f3a"

static int g_errfd = 2; /* stderr before the pool mode sends it to a log */

static void die(const char *msg) {
  dprintf(g_errfd, "bench_redis: %s\n", msg);
  exit(1);
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &n))
    die("no free port");
  close(s);
  return ntohs(a.sin_port);
}

static pid_t spawn(char *const argv[], int *in, int *out, char **env) {
  int pi[2], po[2];
  if (in && (pipe2(pi, O_CLOEXEC) || pipe2(po, O_CLOEXEC)))
    die("pipe");
  pid_t pid = fork();
  if (pid < 0)
    die("fork");
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(in ? pi[0] : null, 0);
    dup2(in ? po[1] : null, 1);
    dup2(null, 2);
    if (env)
      execve(argv[0], argv, env);
    else
      execvp(argv[0], argv);
    _exit(127);
  }
  if (in) {
    close(pi[0]);
    close(po[1]);
    *in = pi[1];
    *out = po[0];
  }
  return pid;
}

/* One line from fd (blocking), into buf; false at the end. */
static bool read_line(int fd, char *buf, size_t cap, char *rest, size_t *nrest) {
  for (;;) {
    char *nl = memchr(rest, '\n', *nrest);
    if (nl) {
      size_t n = (size_t)(nl - rest);
      size_t k = n < cap - 1 ? n : cap - 1;
      memcpy(buf, rest, k);
      buf[k] = '\0';
      memmove(rest, nl + 1, *nrest - n - 1);
      *nrest -= n + 1;
      return true;
    }
    if (*nrest >= 1 << 20)
      die("line too long");
    ssize_t r = read(fd, rest + *nrest, (1 << 20) - *nrest);
    if (r <= 0)
      return false;
    *nrest += (size_t)r;
  }
}

typedef struct peer {
  pid_t pid;
  int in, out;
  char rest[1 << 20];
  size_t nrest;
} peer;

/* Reads lines until one holds needle (and, if given, also needle2). */
static void wait_for2(peer *p, const char *needle, const char *needle2) {
  static char line[1 << 16];
  for (;;) {
    if (!read_line(p->out, line, sizeof line, p->rest, &p->nrest))
      die("a worker ended early");
    if (strstr(line, needle) && (!needle2 || strstr(line, needle2)))
      return;
  }
}

static void wait_for(peer *p, const char *needle) { wait_for2(p, needle, NULL); }

static void send_line(peer *p, const char *s) {
  size_t n = strlen(s);
  if (write(p->in, s, n) != (ssize_t)n)
    die("write");
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pct(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[(int)(q * (n - 1) + 0.5)];
}

/* Round trips of a request for a task no worker has (refused at once, by
 * the worker process: the local pipe answers "error", the worker host's
 * pool turns that into an infra_error "result"); ack: ping it afterwards
 * (a slot proxy acknowledges then, as after the pool stored it). */
static void round_trips(peer *p, int reps, bool ack, double *ms) {
  for (int i = 0; i < reps; i++) {
    char *req = sg_asprintf("{\"type\":\"validate\",\"id\":\"r%d\",\"task\":\"no_such_task\","
                            "\"source\":\"int x;\"}\n", i);
    char needle[64];
    snprintf(needle, sizeof needle, "\"id\":\"r%d\"", i);
    double t0 = sg_clock_now_s();
    send_line(p, req);
    wait_for2(p, needle, ack ? "\"type\":\"result\"" : "\"type\":\"error\"");
    ms[i] = (sg_clock_now_s() - t0) * 1e3;
    free(req);
    if (ack) {
      char *ping = sg_asprintf("{\"type\":\"ping\",\"id\":\"r%d\"}\n", i);
      send_line(p, ping);
      wait_for(p, "\"pong\"");
      free(ping);
    }
  }
}

/* ---- broker throughput with fake workers ---------------------------------- */

static int g_port;
static atomic_bool g_stop;

static redisContext *conn(void) {
  redisContext *c = redisConnect("127.0.0.1", g_port);
  if (!c || c->err)
    die("cannot connect to redis-server");
  redisReply *r = redisCommand(c, "AUTH %s", PASSWORD);
  if (!r || r->type == REDIS_REPLY_ERROR)
    die("AUTH refused");
  freeReplyObject(r);
  return c;
}

static void *fake_worker(void *arg) {
  long me = (long)arg;
  redisContext *c = conn();
  char name[32];
  snprintf(name, sizeof name, "fake%ld", me);
  while (!atomic_load(&g_stop)) {
    redisReply *r = redisCommand(c, "XREADGROUP GROUP workers %s COUNT 1 BLOCK 100 "
                                    "STREAMS bench:req >", name);
    if (!r)
      break;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
      redisReply *e = r->element[0]->element[1]->element[0];
      const char *id = e->element[0]->str;
      redisReply *f = e->element[1];
      const char *rid = f->elements >= 2 ? f->element[1]->str : "?";
      freeReplyObject(redisCommand(c, "XADD bench:res * id %s body {}", rid));
      freeReplyObject(redisCommand(c, "XACK bench:req workers %s", id));
    }
    freeReplyObject(r);
  }
  redisFree(c);
  return NULL;
}

static double throughput(int workers, int requests) {
  redisContext *c = conn();
  freeReplyObject(redisCommand(c, "DEL bench:req bench:res"));
  freeReplyObject(redisCommand(c, "XGROUP CREATE bench:req workers 0 MKSTREAM"));
  atomic_store(&g_stop, false);
  pthread_t *t = sg_calloc((size_t)workers, sizeof *t);
  for (long i = 0; i < workers; i++)
    pthread_create(&t[i], NULL, fake_worker, (void *)i);
  int window = 2 * workers, sent = 0, got = 0;
  char last[64] = "0";
  double t0 = sg_clock_now_s();
  while (got < requests) {
    while (sent < requests && sent - got < window) {
      char id[32];
      snprintf(id, sizeof id, "q%d", sent++);
      freeReplyObject(redisCommand(c, "XADD bench:req * id %s body {}", id));
    }
    redisReply *r = redisCommand(c, "XREAD COUNT 64 BLOCK 1000 STREAMS bench:res %s", last);
    if (r && r->type == REDIS_REPLY_ARRAY) {
      redisReply *es = r->element[0]->element[1];
      for (size_t i = 0; i < es->elements; i++) {
        snprintf(last, sizeof last, "%s", es->element[i]->element[0]->str);
        got++;
      }
    }
    freeReplyObject(r);
  }
  double s = sg_clock_now_s() - t0;
  atomic_store(&g_stop, true);
  for (int i = 0; i < workers; i++)
    pthread_join(t[i], NULL);
  free(t);
  redisFree(c);
  return requests / s;
}

/* ---- a simulated pool: N fake devices through the real remote code ------- */

/* The paper's mean validation and profiling times (GLM-4.6 runs, s). */
#define PAPER_VALIDATE_S 22.9
#define PAPER_PROFILE_S 26.5
#define POOL_RUN "pool"
#define POOL_VERSION "bench"
#define POOL_SOURCE_BYTES 4096 /* about a candidate kernel's source */

typedef struct side {
  uv_loop_t loop;
  uv_timer_t watch; /* polls g_pool_stop */
  int n;
  bool run;         /* the run's side (slots), else the workers' */
  void *items;      /* slot_drv[n] or fake_dev[n] */
  pthread_t thread;
  atomic_long tid; /* for its /proc/self/task/TID/schedstat */
} side;

static atomic_bool g_pool_stop;
static char *g_url;
static double g_scale;

/* Worker side: a remote worker (sg_remote_worker, the code of `specgen
 * worker --redis`) whose evaluator waits the time the request names
 * instead of evaluating, and reports the time it waited. */
typedef struct fake_dev {
  sg_remote_worker *w;
  sg_remote_worker_opts o;
  char host[32];
  uv_timer_t t;
  uint64_t ticket;
  double t_start;
  bool busy;
} fake_dev;

static void fake_done(uv_timer_t *t) {
  fake_dev *d = t->data;
  d->busy = false;
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = SG_EVAL_OK;
  r.message = sg_asprintf("waited_us=%.0f", (sg_clock_now_s() - d->t_start) * 1e6);
  sg_remote_worker_result(d->w, d->ticket, &r);
  sg_eval_result_free(&r);
}

static int fake_submit(void *data, const sg_pool_request *r, sg_err *err) {
  fake_dev *d = data;
  if (d->busy)
    return sg_err_set(err, SG_EINVAL, "fake device busy");
  unsigned long long us = strtoull(r->source, NULL, 10);
  d->busy = true;
  d->ticket = r->ticket;
  d->t_start = sg_clock_now_s();
  sg_remote_worker_started(d->w, r->ticket);
  uv_timer_start(&d->t, fake_done, (us + 500) / 1000, 0);
  return 0;
}

static void fake_abort(void *data, uint64_t ticket) {
  fake_dev *d = data;
  if (d->busy && d->ticket == ticket) {
    uv_timer_stop(&d->t);
    d->busy = false;
  }
}

/* Run side: a slot proxy (sg_remote_slot, the code of each remote slot of
 * `specgen run --redis`) driven as the pool drives it: a request whenever
 * the slot is free (validate and profile in turn, each with a service time
 * drawn around the paper's mean), the ping after each result. */
typedef struct sample { double t_done, latency_s, overhead_s, to_start_s; } sample;

typedef struct slot_drv {
  sg_remote_slot *s;
  sg_remote_proxy_opts o;
  char dev[32];
  unsigned long long n_sent;
  sg_rng rng;
  double t_sub, t_started;
  char wire[32];
  bool ping; /* the next step pings wire first */
  /* the next step runs from the loop, as the pool's next write would: a
   * line given to the slot from inside its own output would come too early
   * (it emits the result before it has done with it) */
  uv_timer_t next;
} slot_drv;

static pthread_mutex_t g_samples_mu = PTHREAD_MUTEX_INITIALIZER;
static sample *g_samples;
static size_t g_nsamples, g_capsamples;
static atomic_int g_first_results, g_bad_replies;
static atomic_llong g_results;

static void slot_send(slot_drv *d) {
  bool validate = d->n_sent % 2 == 0;
  double u = sg_rng_uniform(&d->rng);
  double mean = (validate ? PAPER_VALIDATE_S : PAPER_PROFILE_S) / g_scale;
  double svc_us = mean * (0.5 + u) * 1e6; /* uniform, mean the paper's */
  char *src = sg_malloc(POOL_SOURCE_BYTES + 1);
  int k = snprintf(src, POOL_SOURCE_BYTES, "%.0f\n", svc_us);
  memset(src + k, 'x', POOL_SOURCE_BYTES - (size_t)k);
  src[POOL_SOURCE_BYTES] = '\0';
  snprintf(d->wire, sizeof d->wire, "w%llu", ++d->n_sent);
  json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "type", validate ? "validate" : "profile",
                        "id", d->wire, "task", "sim", "source", src);
  char *line = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  free(src);
  d->t_sub = sg_clock_now_s();
  d->t_started = NAN;
  sg_remote_slot_line(d->s, line, strlen(line));
  free(line);
}

static void slot_next(uv_timer_t *t) {
  slot_drv *d = t->data;
  if (d->ping) { /* stored: the pool's ping lets the proxy acknowledge */
    d->ping = false;
    char ping[64];
    int n = snprintf(ping, sizeof ping, "{\"type\":\"ping\",\"id\":\"%s\"}", d->wire);
    sg_remote_slot_line(d->s, ping, (size_t)n);
  }
  if (!atomic_load(&g_pool_stop))
    slot_send(d);
}

static void slot_out(void *data, const char *line, size_t len) {
  slot_drv *d = data;
  json_t *j = json_loadb(line, len, 0, NULL);
  const char *type = json_string_value(json_object_get(j, "type"));
  const char *id = json_string_value(json_object_get(j, "id"));
  if (type && strcmp(type, "hello") == 0 && d->n_sent == 0) {
    uv_timer_start(&d->next, slot_next, 0, 0);
  } else if (type && strcmp(type, "started") == 0 && id && strcmp(id, d->wire) == 0) {
    d->t_started = sg_clock_now_s();
  } else if (type && strcmp(type, "result") == 0 && id && strcmp(id, d->wire) == 0) {
    double now = sg_clock_now_s();
    json_t *res = json_object_get(j, "result");
    const char *st = json_string_value(json_object_get(res, "status"));
    const char *msg = json_string_value(json_object_get(res, "message"));
    if (!st || strcmp(st, "ok") != 0 || !msg || strncmp(msg, "waited_us=", 10) != 0) {
      if (atomic_fetch_add(&g_bad_replies, 1) == 0)
        dprintf(g_errfd, "bench_redis: a result not from a fake device: %.*s", (int)len, line);
    } else {
      double waited = atof(msg + 10) / 1e6;
      pthread_mutex_lock(&g_samples_mu);
      if (g_nsamples == g_capsamples) {
        g_capsamples = g_capsamples ? 2 * g_capsamples : 4096;
        g_samples = sg_realloc(g_samples, g_capsamples * sizeof *g_samples);
      }
      g_samples[g_nsamples++] =
          (sample){now, now - d->t_sub, now - d->t_sub - waited, d->t_started - d->t_sub};
      pthread_mutex_unlock(&g_samples_mu);
    }
    atomic_fetch_add(&g_results, 1);
    if (d->n_sent == 1)
      atomic_fetch_add(&g_first_results, 1);
    d->ping = true;
    uv_timer_start(&d->next, slot_next, 0, 0);
  } else if (type && strcmp(type, "error") == 0) {
    if (atomic_fetch_add(&g_bad_replies, 1) == 0)
      dprintf(g_errfd, "bench_redis: an error reply: %.*s", (int)len, line);
  }
  json_decref(j);
}

/* Every 20 ms: once told to stop, closes the side's slots or workers (and
 * itself), so its loop ends. */
static void on_watch(uv_timer_t *t) {
  side *s = t->data;
  if (!atomic_load(&g_pool_stop))
    return;
  for (int i = 0; i < s->n; i++) {
    if (s->run) {
      slot_drv *d = &((slot_drv *)s->items)[i];
      sg_remote_slot_close(d->s);
      uv_close((uv_handle_t *)&d->next, NULL);
    } else {
      fake_dev *d = &((fake_dev *)s->items)[i];
      sg_remote_worker_close(d->w);
      uv_close((uv_handle_t *)&d->t, NULL);
    }
  }
  uv_close((uv_handle_t *)t, NULL);
}

/* A side's thread: its slots or workers on its own loop until told to stop. */
static void *side_main(void *arg) {
  side *s = arg;
  atomic_store(&s->tid, (long)gettid());
  for (int i = 0; i < s->n; i++) {
    sg_err err;
    int rc;
    if (s->run) {
      slot_drv *d = &((slot_drv *)s->items)[i];
      snprintf(d->dev, sizeof d->dev, "redis:cpu/%d", i);
      d->o = (sg_remote_proxy_opts){g_url, POOL_RUN, d->dev, POOL_VERSION};
      sg_rng_seed(&d->rng, (uint64_t)i + 1);
      uv_timer_init(&s->loop, &d->next);
      d->next.data = d;
      rc = sg_remote_slot_new(&s->loop, &d->o, slot_out, d, &d->s, &err);
    } else {
      fake_dev *d = &((fake_dev *)s->items)[i];
      snprintf(d->host, sizeof d->host, "sim%d", i); /* its own consumer */
      d->o = (sg_remote_worker_opts){.url = g_url, .run_id = POOL_RUN, .device = "cpu:0",
                                     .host = d->host, .version = POOL_VERSION};
      uv_timer_init(&s->loop, &d->t);
      d->t.data = d;
      sg_remote_evaluator ev = {d, fake_submit, fake_abort, NULL};
      rc = sg_remote_worker_new(&s->loop, &d->o, &ev, &d->w, &err);
    }
    if (rc < 0)
      die(err.msg);
  }
  uv_timer_init(&s->loop, &s->watch);
  s->watch.data = s;
  uv_timer_start(&s->watch, on_watch, 20, 20);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  return NULL;
}

/* Seconds a thread ran and waited to run (on a run queue): together, the
 * time it wanted a core. A part that wants one all the time is saturated,
 * however little it got on a shared machine. */
static void sched_s(const char *path, double *ran, double *waited) {
  FILE *f = fopen(path, "r");
  unsigned long long r = 0, w = 0;
  if (!f || fscanf(f, "%llu %llu", &r, &w) != 2)
    die("cannot read a schedstat");
  fclose(f);
  *ran = (double)r / 1e9;
  *waited = (double)w / 1e9;
}

static long long redis_commands(redisContext *c) {
  redisReply *r = redisCommand(c, "INFO stats");
  const char *p = r && r->type == REDIS_REPLY_STRING ? r->str : NULL;
  const char *k = p ? strstr(p, "total_commands_processed:") : NULL;
  long long v = k ? atoll(k + strlen("total_commands_processed:")) : -1;
  freeReplyObject(r);
  return v;
}

/* ran and waited, s: redis-server's main thread, the run side, the workers */
typedef struct snap { double t, ran[3], waited[3]; long long cmds, results; } snap;

static void snap_take(snap *s, pid_t redis, redisContext *c, side *run, side *work) {
  s->t = sg_clock_now_s();
  char path[3][64];
  snprintf(path[0], sizeof path[0], "/proc/%ld/schedstat", (long)redis);
  snprintf(path[1], sizeof path[1], "/proc/self/task/%ld/schedstat", atomic_load(&run->tid));
  snprintf(path[2], sizeof path[2], "/proc/self/task/%ld/schedstat", atomic_load(&work->tid));
  for (int i = 0; i < 3; i++)
    sched_s(path[i], &s->ran[i], &s->waited[i]);
  s->cmds = redis_commands(c);
  s->results = atomic_load(&g_results);
}

static int cmp_overhead(const void *a, const void *b) {
  double x = ((const sample *)a)->overhead_s, y = ((const sample *)b)->overhead_s;
  return (x > y) - (x < y);
}

static int cmp_to_start(const void *a, const void *b) {
  double x = ((const sample *)a)->to_start_s, y = ((const sample *)b)->to_start_s;
  return (x > y) - (x < y);
}

/* One row: n devices for `seconds` after every slot had its first result. */
static void pool_row(int n, double seconds, pid_t redis) {
  redisContext *c = conn();
  freeReplyObject(redisCommand(c, "FLUSHALL"));
  atomic_store(&g_pool_stop, false);
  atomic_store(&g_first_results, 0);
  atomic_store(&g_bad_replies, 0);
  atomic_store(&g_results, 0);
  g_nsamples = 0;
  side run = {.n = n, .run = true}, work = {.n = n};
  run.items = sg_calloc((size_t)n, sizeof(slot_drv));
  work.items = sg_calloc((size_t)n, sizeof(fake_dev));
  uv_loop_init(&run.loop);
  uv_loop_init(&work.loop);
  pthread_create(&work.thread, NULL, side_main, &work);
  pthread_create(&run.thread, NULL, side_main, &run);
  double t_ready = sg_clock_now_s();
  while (atomic_load(&g_first_results) < n) { /* bounded: 120 s */
    if (sg_clock_now_s() - t_ready > 120)
      die("the pool did not get going within 120 s");
    usleep(20000);
  }
  t_ready = sg_clock_now_s() - t_ready;
  snap a, b;
  snap_take(&a, redis, c, &run, &work);
  usleep((useconds_t)(seconds * 1e6));
  snap_take(&b, redis, c, &run, &work);
  atomic_store(&g_pool_stop, true);
  pthread_join(run.thread, NULL);
  pthread_join(work.thread, NULL);
  uv_loop_close(&run.loop);
  uv_loop_close(&work.loop);
  free(run.items);
  free(work.items);
  redisFree(c);
  /* the samples of results inside the window */
  size_t k = 0;
  for (size_t i = 0; i < g_nsamples; i++)
    if (g_samples[i].t_done >= a.t && g_samples[i].t_done <= b.t)
      g_samples[k++] = g_samples[i];
  if (k == 0)
    die("no result inside the measured window");
  qsort(g_samples, k, sizeof *g_samples, cmp_to_start);
  double start_p50 = g_samples[(k - 1) / 2].to_start_s * 1e3;
  qsort(g_samples, k, sizeof *g_samples, cmp_overhead);
  double dt = b.t - a.t;
  double mean_svc = (PAPER_VALIDATE_S + PAPER_PROFILE_S) / 2 / g_scale;
  double offered = n / mean_svc, got = (double)(b.results - a.results) / dt;
#define Q(q) (g_samples[(size_t)((q) * (double)(k - 1) + 0.5)].overhead_s * 1e3)
  char use[3][32];
  for (int i = 0; i < 3; i++)
    snprintf(use[i], sizeof use[i], "%.0f%%/%.0f%%", 100 * (b.ran[i] - a.ran[i]) / dt,
             100 * (b.ran[i] - a.ran[i] + b.waited[i] - a.waited[i]) / dt);
  printf("%-8d %9.0f %9.0f %6.1f%% %8.2f %8.2f %8.2f %9.2f %9s %9s %9s %8.1f %7.1f %5d\n",
         n, offered, got, 100 * got / offered, Q(0.5), Q(0.9), Q(0.99), start_p50, use[0],
         use[1], use[2],
         (double)(b.cmds - a.cmds) / (double)(b.results - a.results), t_ready,
         atomic_load(&g_bad_replies));
#undef Q
  fflush(stdout);
  if (atomic_load(&g_bad_replies))
    die("a fake device's request came back wrong");
}

/* Lines of the pool's log that say a worker was lost, a result came late
 * or a command failed: none is expected. */
static int count_warnings(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    die("cannot read the pool's log");
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "lost") || strstr(line, "late result") || strstr(line, "failed"))
      n++;
  fclose(f);
  return n;
}

static void pool_bench(const char *sizes, double seconds, pid_t redis) {
  double load[3] = {0};
  getloadavg(load, 3);
  printf("simulated pool through Redis: fake devices answering after the paper's "
         "validation %.1f s / profiling %.1f s (mean; uniform 0.5-1.5x) divided by %.0f; "
         "%.0f s measured per row; load average %.2f\n",
         PAPER_VALIDATE_S, PAPER_PROFILE_S, g_scale, seconds, load[0]);
  printf("%-8s %9s %9s %7s %8s %8s %8s %9s %9s %9s %9s %8s %7s %5s\n", "devices",
         "offered/s", "results/s", "busy", "ovh p50", "ovh p90", "ovh p99", "start p50",
         "redis", "run side",
         "workers", "cmd/res", "ready s", "bad");
  char *copy = sg_strdup(sizes);
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int n = atoi(t);
    if (n < 1 || n > 5000)
      die("--pool takes device counts of 1 to 5000");
    pool_row(n, seconds, redis);
  }
  free(copy);
  printf("(overhead: submit-to-result time minus the time the fake device waited, ms; "
         "start: submit to the worker's \"started\", ms; "
         "redis, run side, workers: ran/wanted, the share of the wall time each ran on a core / "
         "ran or waited for one; near 100%% wanted: saturated)\n");
}

int main(int argc, char **argv) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    die("no /proc/self/exe");
  self[n] = '\0';
  char *specgen = sg_asprintf("%s/../src/cli/specgen", dirname(self));
  int reps = 300, requests = 5000;
  const char *pool = NULL;
  double seconds = 10;
  g_scale = 1000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--specgen") == 0 && i + 1 < argc) {
      free(specgen);
      specgen = sg_strdup(argv[++i]);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
      requests = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--pool") == 0 && i + 1 < argc) {
      pool = argv[++i];
    } else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
      g_scale = atof(argv[++i]);
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_redis [--specgen PATH] [--reps N] [--requests N]\n"
                      "       bench_redis --pool N[,N...] [--scale F] [--seconds S]\n");
      return 2;
    }
  }
  if (reps < 1 || requests < 1)
    die("--reps and --requests take positive counts");
  if (!(g_scale >= 1 && g_scale <= 1e6) || !(seconds > 0 && seconds <= 3600))
    die("--scale takes 1 to 1e6, --seconds 0 to 3600");
  signal(SIGPIPE, SIG_IGN);
  g_port = free_port();
  char port[16];
  snprintf(port, sizeof port, "%d", g_port);
  char *rargv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--requirepass",
                   PASSWORD, "--save", "", "--appendonly", "no", NULL};
  pid_t redis = spawn(rargv, NULL, NULL, NULL);
  for (int i = 0; i < 200; i++) { /* bounded: 10 s */
    redisContext *c = redisConnect("127.0.0.1", g_port);
    bool up = c && !c->err;
    redisFree(c);
    if (up)
      break;
    usleep(50000);
  }
  char *url = sg_asprintf("redis://:%s@127.0.0.1:%d", PASSWORD, g_port);
  const char *tmp = getenv("TMPDIR");
  char *tmpl = sg_asprintf("%s/bench-redis-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  char *dir = mkdtemp(tmpl);
  if (!dir)
    die("mkdtemp");
  if (pool) {
    /* a thousand slots and workers log their connections: to a file, whose
     * warnings (lost workers, late results) are counted at the end */
    char *log = sg_asprintf("%s/pool.log", dir);
    g_errfd = dup(2);
    if (!freopen(log, "w", stderr))
      die("cannot open the pool's log");
    g_url = url;
    pool_bench(pool, seconds, redis);
    fflush(stderr);
    int warn = count_warnings(log);
    printf("warnings in the slots' and workers' log (lost, late, failed): %d\n", warn);
    kill(redis, SIGTERM);
    waitpid(redis, NULL, 0);
    sg_err err;
    sg_rm_rf(dir, &err);
    free(log);
    free(url);
    free(tmpl);
    free(specgen);
    free(g_samples);
    return warn ? 1 : 0;
  }

  peer *local = sg_calloc(1, sizeof *local), *remote = sg_calloc(1, sizeof *remote);
  char *largv[] = {specgen, "worker", "--device", "cpu:0", "--work-dir", dir, NULL};
  local->pid = spawn(largv, &local->in, &local->out, NULL);
  wait_for(local, "\"hello\"");
  char *hargv[] = {specgen, "worker", "--redis", url, "--run", "bench", "--device", "cpu:0",
                   "--host", "bench", "--work-dir", dir, NULL};
  pid_t host = spawn(hargv, NULL, NULL, NULL);
  extern char **environ;
  size_t ne = 0;
  while (environ[ne])
    ne++;
  char **env = sg_calloc(ne + 3, sizeof *env);
  memcpy(env, environ, ne * sizeof *env);
  env[ne] = sg_asprintf("SPECGEN_REDIS_URL=%s", url);
  env[ne + 1] = "SPECGEN_REDIS_RUN=bench";
  char *pargv[] = {specgen, "worker", "--remote-slot", "redis:cpu/0", NULL};
  remote->pid = spawn(pargv, &remote->in, &remote->out, env);
  wait_for(remote, "\"hello\"");

  double *lp = sg_calloc((size_t)reps, sizeof *lp), *rd = sg_calloc((size_t)reps, sizeof *rd);
  round_trips(local, 3, false, lp); /* warm both */
  round_trips(remote, 3, true, rd);
  round_trips(local, reps, false, lp);
  round_trips(remote, reps, true, rd);
  double lm = pct(lp, reps, 0.5), rm = pct(rd, reps, 0.5);
  printf("request round trip (a validate of an unknown task, refused at once, %d reps)\n",
         reps);
  printf("%-34s %10s %10s\n", "path", "median", "p90");
  printf("%-34s %7.2f ms %7.2f ms\n", "local pipe", lm, pct(lp, reps, 0.9));
  printf("%-34s %7.2f ms %7.2f ms\n", "through Redis (proxy, worker host)", rm,
         pct(rd, reps, 0.9));
  printf("%-34s %7.2f ms   (x%.2f)\n", "broker path added (median)", rm - lm, rm / lm);

  printf("\nsmall-request throughput through the broker (%d requests, fake workers "
         "answering at once)\n", requests);
  printf("%-10s %12s\n", "workers", "requests/s");
  int ws[] = {1, 4, 16};
  for (int i = 0; i < 3; i++)
    printf("%-10d %12.0f\n", ws[i], throughput(ws[i], requests));

  close(local->in);
  close(remote->in);
  waitpid(local->pid, NULL, 0);
  waitpid(remote->pid, NULL, 0);
  kill(host, SIGTERM);
  waitpid(host, NULL, 0);
  kill(redis, SIGTERM);
  waitpid(redis, NULL, 0);
  sg_err err;
  sg_rm_rf(dir, &err);
  return 0;
}
