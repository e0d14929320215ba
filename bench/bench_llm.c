/* bench_llm.c: what many concurrent streams cost the LLM client.
 *
 * Test servers (sg_llm_server) run in forked child processes, pacing every
 * stream at --rate tokens/s; the parent runs the client alone, so its
 * getrusage is the client's CPU and nothing else. For N concurrent streams
 * it prints the client's CPU time (and as a share of one core), the CPU per
 * delivered event, and the delay from the socket becoming readable (the
 * libuv poll callback that fed curl those bytes) to the event reaching its
 * consumer callback: median and p99.
 *
 *   bench_llm [--streams 1,50,200,500] [--rate 50] [--tokens 200]
 */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "llm/sg_llm_client.h"
#include "testserver/sg_llm_server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SAMPLES (4u << 20)
#define NSERVERS 4

typedef struct bench {
  int64_t *delay_us;
  size_t n, cap;
  int finished, failed;
  char first_error[256];
} bench;

static void on_delta(sg_llm_stream *s, void *d, const char *t, size_t n) {
  (void)t;
  (void)n;
  bench *b = d;
  int64_t now = sg_clock_now_us();
  if (b->n < b->cap)
    b->delay_us[b->n++] = now - sg_llm_stream_io_us(s);
}

static void on_finish(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  (void)r;
  ((bench *)d)->finished++;
}

static void on_error(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  bench *b = d;
  if (b->failed++ == 0)
    snprintf(b->first_error, sizeof b->first_error, "%s", r->message);
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The server child: serves until killed; writes its port to fd. */
static void server_child(int fd, double rate, int tokens) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tokens_per_s = rate;
  o.prefill_tokens_per_s = 0;
  o.reasoning_tokens_min = tokens;
  o.reasoning_tokens_max = tokens;
  sg_llm_server *s;
  sg_err err;
  int port = -1;
  if (sg_llm_server_start(&o, &s, &err) == 0)
    port = sg_llm_server_port(s);
  else
    fprintf(stderr, "bench_llm: server: %s\n", err.msg);
  if (write(fd, &port, sizeof port) != sizeof port)
    _exit(1);
  close(fd);
  for (;;)
    pause();
}

int main(int argc, char **argv) {
  const char *streams_arg = "1,50,200,500";
  double rate = 50;
  int tokens = 200;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--streams") == 0 && i + 1 < argc)
      streams_arg = argv[++i];
    else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
      rate = atof(argv[++i]);
    else if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc)
      tokens = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_llm [--streams 1,50,200,500] [--rate 50] "
                      "[--tokens 200]\n");
      return 2;
    }
  }
  /* The test server caps its connections (256), so the streams are spread
   * over NSERVERS server processes. */
  pid_t pids[NSERVERS];
  char base[NSERVERS][64];
  for (int k = 0; k < NSERVERS; k++) {
    int p[2];
    if (pipe(p) != 0)
      return 1;
    pids[k] = fork();
    if (pids[k] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the benchmark */
      close(p[0]);
      server_child(p[1], rate, tokens);
    }
    close(p[1]);
    int port = -1;
    if (read(p[0], &port, sizeof port) != sizeof port || port <= 0) {
      fprintf(stderr, "bench_llm: the server did not start\n");
      return 1;
    }
    close(p[0]);
    snprintf(base[k], sizeof base[k], "http://127.0.0.1:%d", port);
  }
  printf("# client CPU and byte-to-consumer delay; servers in separate processes,\n"
         "# %d server processes, %.0f tokens/s per stream, %d reasoning tokens + answer,\n"
         "# max_tokens %d\n",
         NSERVERS, rate, tokens, tokens + 100);
  printf("%8s %8s %9s %10s %8s %14s %14s %12s %12s %7s\n", "streams", "wall_s",
         "events", "events/s", "cpu_s", "cpu_%_of_core", "cpu_us/event",
         "delay_med_us", "delay_p99_us", "failed");
  char *list = sg_strdup(streams_arg);
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    int n = atoi(tok);
    if (n <= 0)
      continue;
    bench b;
    memset(&b, 0, sizeof b);
    b.cap = MAX_SAMPLES;
    b.delay_us = sg_malloc(b.cap * sizeof *b.delay_us);
    uv_loop_t loop;
    uv_loop_init(&loop);
    sg_llm_client *c;
    sg_err err;
    if (sg_llm_client_new(&loop, NULL, &c, &err) != 0) {
      fprintf(stderr, "bench_llm: %s\n", err.msg);
      return 1;
    }
    static const sg_llm_message msgs[] = {
        {"user", "Write the kernel for the hinge loss task.", NULL, false}};
    sg_llm_request r;
    sg_llm_request_init(&r);
    r.model = "specgen-test";
    r.messages = msgs;
    r.n_messages = 1;
    r.max_tokens = tokens + 100;
    r.deadline_s = 600;
    r.idle_timeout_s = 60;
    sg_llm_callbacks cb = {&b, on_delta, on_delta, NULL, NULL, on_finish, on_error};
    double cpu0 = cpu_s();
    int64_t t0 = sg_clock_now_us();
    for (int i = 0; i < n; i++)
      if ((r.base_url = base[i % NSERVERS]) == NULL ||
          sg_llm_stream_start(c, &r, &cb, NULL, &err) != 0) {
        fprintf(stderr, "bench_llm: %s\n", err.msg);
        return 1;
      }
    while (sg_llm_client_active(c) > 0)
      uv_run(&loop, UV_RUN_ONCE);
    double wall = (double)(sg_clock_now_us() - t0) / 1e6;
    double cpu = cpu_s() - cpu0;
    sg_llm_client_destroy(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    qsort(b.delay_us, b.n, sizeof *b.delay_us, cmp64);
    int64_t med = b.n ? b.delay_us[b.n / 2] : -1;
    int64_t p99 = b.n ? b.delay_us[(size_t)((double)(b.n - 1) * 0.99)] : -1;
    printf("%8d %8.2f %9zu %10.0f %8.3f %14.2f %14.2f %12lld %12lld %7d\n", n, wall,
           b.n, (double)b.n / wall, cpu, 100 * cpu / wall,
           b.n ? 1e6 * cpu / (double)b.n : 0.0, (long long)med, (long long)p99,
           b.failed);
    if (b.failed)
      printf("# first failure: %s\n", b.first_error);
    fflush(stdout);
    free(b.delay_us);
  }
  free(list);
  for (int k = 0; k < NSERVERS; k++) {
    kill(pids[k], SIGTERM);
    waitpid(pids[k], NULL, 0);
  }
  return 0;
}
