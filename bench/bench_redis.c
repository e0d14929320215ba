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
 * usage: bench_redis [--specgen PATH] [--reps N] [--requests N]
 */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <libgen.h>
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
#include <unistd.h>

#define PASSWORD "bench-password-7f3a"

static void die(const char *msg) {
  fprintf(stderr, "bench_redis: %s\n", msg);
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

int main(int argc, char **argv) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    die("no /proc/self/exe");
  self[n] = '\0';
  char *specgen = sg_asprintf("%s/../src/cli/specgen", dirname(self));
  int reps = 300, requests = 5000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--specgen") == 0 && i + 1 < argc) {
      free(specgen);
      specgen = sg_strdup(argv[++i]);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
      requests = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_redis [--specgen PATH] [--reps N] [--requests N]\n");
      return 2;
    }
  }
  if (reps < 1 || requests < 1)
    die("--reps and --requests take positive counts");
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
