/* bench_llm_server.c: how fast the built-in test LLM server is, so that a
 * test or a demo knows it is not the bottleneck.
 *
 * Measures, each as the median of several runs:
 *   - the model: writing one thinking answer (trace + answer), and its size;
 *     answering a fork of it (thinking off, every trace variant searched);
 *   - streaming over loopback with no pacing: tokens per second delivered to
 *     a libcurl client, one stream, and four streams at once;
 *   - a non-streaming answer of the same size;
 *   - how long after a client hangs up the server stops generating (with
 *     pacing at 200 tokens/s).
 *
 * usage: bench_llm_server [TASKS_DIR]   (default: the built-in tasks)
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "testserver/sg_fakemodel.h"
#include "testserver/sg_llm_server.h"
#include "testserver/sg_server_tasks.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 7

typedef struct sink {
  size_t bytes;
  size_t events;
  int stop_after; /* >0: hang up after this many events */
} sink;

static size_t on_data(char *d, size_t sz, size_t n, void *ud) {
  sink *s = ud;
  s->bytes += sz * n;
  for (size_t i = 0; i + 1 < sz * n; i++)
    if (d[i] == '\n' && d[i + 1] == '\n')
      s->events++;
  if (s->stop_after && s->events >= (size_t)s->stop_after)
    return 0;
  return sz * n;
}

static int g_port;
static const char *g_body;

static double post(const char *body, sink *k) {
  CURL *c = curl_easy_init();
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", g_port);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, k);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  double t0 = sg_clock_now_s();
  curl_easy_perform(c);
  double t = sg_clock_now_s() - t0;
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return t;
}

static void *post_thread(void *arg) {
  sink *k = arg;
  post(g_body, k);
  return NULL;
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : NULL;
  curl_global_init(CURL_GLOBAL_ALL);
  sg_err err;
  sg_err_clear(&err);

  /* The model alone. */
  sg_fm_task *tasks = NULL;
  size_t ntasks = 0;
  if (sg_server_tasks_load(root, &tasks, &ntasks, &err) < 0 || ntasks == 0) {
    fprintf(stderr, "bench_llm_server: no tasks: %s\n", err.msg);
    return 1;
  }
  char *task_name = sg_strdup(tasks[0].name);
  sg_fakemodel *m = sg_fakemodel_new(NULL, 1, tasks, ntasks);
  double gen_ms[RUNS * 5], fork_ms[RUNS * 5];
  size_t tokens = 0;
  for (int i = 0; i < RUNS * 5; i++) {
    char *ctx = sg_asprintf("<|im_start|>user\nOptimize %s (%d)<|im_end|>\n", task_name, i);
    sg_fm_request r = {.context = ctx, .prompt = ctx, .thinking = true};
    sg_fm_answer a;
    double t0 = sg_clock_now_s();
    sg_fakemodel_generate(m, &r, &a);
    gen_ms[i] = (sg_clock_now_s() - t0) * 1e3;
    tokens += sg_fm_tokenize(a.reasoning, strlen(a.reasoning), NULL, NULL, 0);
    /* A fork of it: thinking off, the first half of the trace in the
     * prompt, under another request id (so every variant is searched). */
    size_t half = strlen(a.reasoning) / 2;
    char *prompt = sg_asprintf("%s%.*s\n</think>\n\n", ctx, (int)half, a.reasoning);
    sg_fm_request f = {.context = ctx, .prompt = prompt, .thinking = false,
                       .sample_key = "fork"};
    sg_fm_answer fa;
    t0 = sg_clock_now_s();
    sg_fakemodel_generate(m, &f, &fa);
    fork_ms[i] = (sg_clock_now_s() - t0) * 1e3;
    sg_fm_answer_free(&fa);
    free(prompt);
    sg_fm_answer_free(&a);
    free(ctx);
  }
  sg_fakemodel_free(m);

  /* The server. */
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tasks_root = root;
  sg_llm_server *s;
  if (sg_llm_server_start(&o, &s, &err) < 0) {
    fprintf(stderr, "bench_llm_server: %s\n", err.msg);
    return 1;
  }
  g_port = sg_llm_server_port(s);
  char *stream_body = sg_asprintf("{\"model\": \"m\", \"stream\": true, \"messages\": "
                                  "[{\"role\": \"user\", \"content\": \"Optimize %s\"}]}",
                                  task_name);
  char *plain_body = sg_asprintf("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", "
                                 "\"content\": \"Optimize %s\"}]}", task_name);
  double one[RUNS], four[RUNS], plain[RUNS];
  size_t events = 0;
  for (int i = 0; i < RUNS; i++) {
    sink k = {0};
    double t = post(stream_body, &k);
    events = k.events;
    one[i] = (double)k.events / t;
    sink k2 = {0};
    plain[i] = post(plain_body, &k2) * 1e3;
    /* Four at once: total events over the wall time. */
    g_body = stream_body;
    pthread_t th[4];
    sink ks[4];
    memset(ks, 0, sizeof ks);
    double t0 = sg_clock_now_s();
    for (int j = 0; j < 4; j++)
      pthread_create(&th[j], NULL, post_thread, &ks[j]);
    size_t total = 0;
    for (int j = 0; j < 4; j++) {
      pthread_join(th[j], NULL);
      total += ks[j].events;
    }
    four[i] = (double)total / (sg_clock_now_s() - t0);
  }
  sg_llm_server_stop(s);

  /* Cancellation latency, with pacing. */
  o.tokens_per_s = 200;
  if (sg_llm_server_start(&o, &s, &err) < 0) {
    fprintf(stderr, "bench_llm_server: %s\n", err.msg);
    return 1;
  }
  g_port = sg_llm_server_port(s);
  double cancel_ms[RUNS];
  for (int i = 0; i < RUNS; i++) {
    sg_llm_server_stats before, st;
    sg_llm_server_stats_get(s, &before);
    sink k = {.stop_after = 5};
    post(stream_body, &k);
    double t0 = sg_clock_now_s();
    cancel_ms[i] = -1;
    for (int w = 0; w < 5000; w++) {
      sg_llm_server_stats_get(s, &st);
      if (st.generations_cancelled > before.generations_cancelled) {
        cancel_ms[i] = (sg_clock_now_s() - t0) * 1e3;
        break;
      }
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  sg_llm_server_stop(s);

  printf("bench_llm_server: task %s, %d runs each, medians\n\n", task_name, RUNS);
  printf("| what | median |\n|---|---|\n");
  printf("| model: one thinking answer (%zu reasoning tokens on average) | %.3f ms |\n",
         tokens / (RUNS * 5), sg_stats_median(gen_ms, (size_t)RUNS * 5));
  printf("| model: a fork's answer (thinking off, half the trace in the prompt) | %.3f ms |\n",
         sg_stats_median(fork_ms, (size_t)RUNS * 5));
  printf("| stream, 1 client, no pacing (%zu SSE events, one token each) | %.0f events/s |\n", events,
         sg_stats_median(one, (size_t)RUNS));
  printf("| stream, 4 clients at once, no pacing | %.0f events/s in total |\n",
         sg_stats_median(four, (size_t)RUNS));
  printf("| same answer, not streamed | %.2f ms |\n", sg_stats_median(plain, (size_t)RUNS));
  printf("| client hangs up -> generation counted cancelled (200 tokens/s) | %.2f ms |\n",
         sg_stats_median(cancel_ms, (size_t)RUNS));
  printf("| ratio: 4 clients / 1 client throughput | %.2f |\n",
         sg_stats_median(four, (size_t)RUNS) / sg_stats_median(one, (size_t)RUNS));
  free(stream_body);
  free(plain_body);
  free(task_name);
  curl_global_cleanup();
  return 0;
}
