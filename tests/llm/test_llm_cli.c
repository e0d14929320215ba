/* test_llm_cli.c: `specgen llm chat` and `specgen llm check` end to end,
 * against `specgen llm serve` running as a separate process on loopback.
 */
#include "sg_test.h"

#include "common/sg_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct server {
  pid_t pid;
  int out_fd;
  char url[64];
} server;

/* Starts `specgen llm serve --port 0 <extra...>` and reads its first line. */
static void server_start(server *s, const char *const *extra) {
  int p[2];
  SG_CHECK(pipe(p) == 0);
  const char *argv[32] = {SG_TEST_SPECGEN, "llm", "serve", "--port", "0"};
  int n = 5;
  for (int i = 0; extra && extra[i] && n < 31; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    /* The server dies with the test, even one that fails half-way. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(p[1], STDOUT_FILENO);
    close(p[0]);
    close(p[1]);
    execv(SG_TEST_SPECGEN, (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  s->pid = pid;
  s->out_fd = p[0];
  char line[256];
  size_t k = 0;
  for (int i = 0; i < 1000 && k < sizeof line - 1; i++) {
    struct pollfd pfd = {p[0], POLLIN, 0};
    if (poll(&pfd, 1, 10) <= 0)
      continue;
    ssize_t r = read(p[0], line + k, 1);
    if (r <= 0)
      break;
    if (line[k] == '\n')
      break;
    k++;
  }
  line[k] = '\0';
  const char *at = strstr(line, "http://");
  SG_CHECK_MSG(at != NULL, "serve printed '%s'", line);
  snprintf(s->url, sizeof s->url, "%s", at);
}

static void server_stop(server *s) {
  kill(s->pid, SIGTERM);
  int st;
  for (int i = 0; i < 500; i++) {
    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
      close(s->out_fd);
      return;
    }
    usleep(10000);
  }
  kill(s->pid, SIGKILL);
  waitpid(s->pid, &st, 0);
  close(s->out_fd);
}

typedef struct ran {
  int code;
  sg_buf out, err;
} ran;

static void drain(int fd, sg_buf *b, bool *open) {
  char buf[4096];
  ssize_t r = read(fd, buf, sizeof buf);
  if (r > 0)
    sg_buf_append(b, buf, (size_t)r);
  else if (r == 0 || (errno != EINTR && errno != EAGAIN))
    *open = false;
}

/* Runs specgen with args (NULL-terminated), env additions "K=V" (may be NULL). */
static void run(const char *const *args, const char *env_kv, ran *out) {
  int po[2], pe[2];
  SG_CHECK(pipe(po) == 0 && pipe(pe) == 0);
  const char *argv[40] = {SG_TEST_SPECGEN};
  int n = 1;
  for (int i = 0; args[i] && n < 39; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(po[1], STDOUT_FILENO);
    dup2(pe[1], STDERR_FILENO);
    close(po[0]);
    close(pe[0]);
    close(po[1]);
    close(pe[1]);
    if (env_kv)
      putenv((char *)env_kv);
    execv(SG_TEST_SPECGEN, (char *const *)argv);
    _exit(127);
  }
  close(po[1]);
  close(pe[1]);
  sg_buf_init(&out->out, 1 << 22);
  sg_buf_init(&out->err, 1 << 22);
  bool oo = true, eo = true;
  for (int i = 0; i < 6000 && (oo || eo); i++) { /* 60 s at most */
    struct pollfd f[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    if (poll(f, 2, 10) <= 0)
      continue;
    if (oo && (f[0].revents & (POLLIN | POLLHUP)))
      drain(po[0], &out->out, &oo);
    if (eo && (f[1].revents & (POLLIN | POLLHUP)))
      drain(pe[0], &out->err, &eo);
  }
  close(po[0]);
  close(pe[0]);
  int st = 0;
  bool exited = false;
  for (int i = 0; i < 500 && !exited; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid)
      exited = true;
    else
      usleep(10000);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    SG_FAIL("specgen %s %s did not exit within its time", args[0], args[1]);
  }
  out->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void ran_free(ran *r) {
  sg_buf_free(&r->out);
  sg_buf_free(&r->err);
}

static json_t *parse_json(const ran *r) {
  json_error_t je;
  json_t *j = json_loads(sg_buf_str(&r->out), 0, &je);
  SG_CHECK_MSG(j != NULL, "not JSON (%s): %s", je.text, sg_buf_str(&r->out));
  return j;
}

static const char *const k_fast[] = {"--tokens-per-s", "0", "--reasoning-tokens",
                                     "40:80", NULL};

static void test_cli_chat_json_reports_everything(void) {
  server s;
  server_start(&s, k_fast);
  const char *args[] = {"llm", "chat", "--llm", s.url, "--model", "specgen-test",
                        "--prompt", "Write the hinge loss kernel.", "--json", NULL};
  ran r;
  run(args, NULL, &r);
  SG_CHECK_MSG(r.code == 0, "exit %d: %s", r.code, sg_buf_str(&r.err));
  json_t *j = parse_json(&r);
  SG_CHECK(json_is_true(json_object_get(j, "ok")));
  SG_CHECK(json_string_length(json_object_get(j, "reasoning")) > 0);
  SG_CHECK(json_string_length(json_object_get(j, "content")) > 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "finish_reason")), "stop");
  json_t *u = json_object_get(j, "usage");
  SG_CHECK(json_integer_value(json_object_get(u, "prompt_tokens")) > 0);
  SG_CHECK(json_integer_value(json_object_get(u, "completion_tokens")) > 0);
  SG_CHECK(json_is_integer(json_object_get(u, "cached_tokens")));
  SG_CHECK(json_real_value(json_object_get(j, "ttft_s")) >= 0);
  SG_CHECK(json_real_value(json_object_get(j, "tokens_per_s")) > 0);
  json_decref(j);
  ran_free(&r);
  server_stop(&s);
}

static void test_cli_chat_streams_reasoning_prefixed_then_content(void) {
  server s;
  server_start(&s, k_fast);
  const char *args[] = {"llm", "chat", "--llm", s.url, "--model", "specgen-test",
                        "--prompt", "Write the hinge loss kernel.", NULL};
  ran r;
  run(args, NULL, &r);
  SG_CHECK_MSG(r.code == 0, "exit %d: %s", r.code, sg_buf_str(&r.err));
  const char *o = sg_buf_str(&r.out);
  SG_CHECK(strncmp(o, "| ", 2) == 0); /* not a terminal: prefixed reasoning */
  SG_CHECK_CONTAINS(sg_buf_str(&r.err), "finish_reason stop");
  ran_free(&r);
  /* --no-think: no reasoning at all. */
  const char *args2[] = {"llm", "chat", "--llm", s.url, "--model", "specgen-test",
                         "--prompt", "Write the hinge loss kernel.", "--no-think",
                         "--json", NULL};
  run(args2, NULL, &r);
  SG_CHECK_EQ_INT(r.code, 0);
  json_t *j = parse_json(&r);
  SG_CHECK_EQ_INT(json_string_length(json_object_get(j, "reasoning")), 0);
  SG_CHECK(json_string_length(json_object_get(j, "content")) > 0);
  json_decref(j);
  ran_free(&r);
  server_stop(&s);
}

static void test_cli_chat_failure_exits_1_with_server_message_no_key(void) {
  const char *faulty[] = {"--tokens-per-s", "0", "--fault", "status500", NULL};
  server s;
  server_start(&s, faulty);
  const char *args[] = {"llm", "chat", "--llm", s.url, "--model", "specgen-test",
                        "--prompt", "x", "--retries", "1", NULL};
  ran r;
  run(args, "OPENAI_API_KEY=sk-cli-SECRET-777", &r);
  SG_CHECK_EQ_INT(r.code, 1);
  SG_CHECK_CONTAINS(sg_buf_str(&r.err), "HTTP 500");
  SG_CHECK(strstr(sg_buf_str(&r.err), "SECRET") == NULL);
  SG_CHECK(strstr(sg_buf_str(&r.out), "SECRET") == NULL);
  ran_free(&r);
  const char *args2[] = {"llm", "chat", "--llm", s.url, "--model", "specgen-test",
                         "--prompt", "x", "--retries", "0", "--json", NULL};
  run(args2, "OPENAI_API_KEY=sk-cli-SECRET-777", &r);
  SG_CHECK_EQ_INT(r.code, 1);
  json_t *j = parse_json(&r);
  SG_CHECK(json_is_false(json_object_get(j, "ok")));
  SG_CHECK_CONTAINS(json_string_value(json_object_get(j, "error")), "HTTP 500");
  SG_CHECK(strstr(sg_buf_str(&r.out), "SECRET") == NULL);
  json_decref(j);
  ran_free(&r);
  server_stop(&s);
}

static void test_cli_chat_usage_errors_exit_2_naming_the_flag(void) {
  struct {
    const char *args[12];
    const char *msg;
  } cases[] = {
      {{"llm", "chat", "--model", "m", "--prompt", "x", NULL}, "--llm is required"},
      {{"llm", "chat", "--llm", "http://127.0.0.1:1", "--prompt", "x", NULL},
       "--model is required"},
      {{"llm", "chat", "--llm", "http://127.0.0.1:1", "--model", "m", NULL},
       "exactly one of --prompt and --prompt-file"},
      {{"llm", "chat", "--llm", "u", "--model", "m", "--prompt", "x", "--profile",
        "tgi", NULL},
       "--profile: unknown provider profile 'tgi'"},
      {{"llm", "chat", "--llm", "u", "--model", "m", "--prompt-file",
        "/nonexistent/prompt.txt", NULL},
       "/nonexistent/prompt.txt"},
      {{"llm", "chat", "--llm", "u", "--model", "m", "--prompt", "x", "--max-tokens",
        "lots", NULL},
       "--max-tokens \"lots\""},
      {{"llm", "chat", "--llm", "u", "--model", "m", "--prompt", "x", "--profile",
        "openai", "--no-think", NULL},
       "cannot turn thinking off"},
      {{"llm", "check", "--llm", "u", NULL}, "--model is required"},
      {{"llm", "check", "--llm", "u", "--model", "m", "--bogus", NULL},
       "unknown option '--bogus'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ran r;
    run(cases[i].args, NULL, &r);
    SG_CHECK_MSG(r.code == 2, "case %zu: exit %d", i, r.code);
    SG_CHECK_CONTAINS(sg_buf_str(&r.err), cases[i].msg);
    ran_free(&r);
  }
  ran r;
  const char *help[] = {"llm", "chat", "--help", NULL};
  run(help, NULL, &r);
  SG_CHECK_EQ_INT(r.code, 0);
  SG_CHECK_CONTAINS(sg_buf_str(&r.out), "--prompt-file");
  ran_free(&r);
}

static void test_cli_check_reports_every_point_and_profile(void) {
  const char *paced[] = {"--tokens-per-s", "400", "--reasoning-tokens", "100:150",
                         NULL};
  server s;
  server_start(&s, paced);
  const char *args[] = {"llm", "check", "--llm", s.url, "--model", "specgen-test",
                        "--timeout", "20", "--json", NULL};
  ran r;
  run(args, NULL, &r);
  SG_CHECK_MSG(r.code == 0, "exit %d: %s %s", r.code, sg_buf_str(&r.out),
               sg_buf_str(&r.err));
  json_t *j = parse_json(&r);
  SG_CHECK(json_is_true(json_object_get(j, "usable")));
  json_t *p = json_object_get(j, "probes");
  /* The test server serves vLLM's running-requests gauge in /metrics, so
   * the cancellation is confirmed too. */
  const char *want_yes[] = {"stream",        "reasoning",    "think_off", "prefix",
                            "token_ids",     "cached_tokens", "prefix_cache", "cancel",
                            "request_id",    "token_limit"};
  for (size_t i = 0; i < sizeof want_yes / sizeof want_yes[0]; i++) {
    json_t *pr = json_object_get(p, want_yes[i]);
    SG_CHECK_MSG(pr && strcmp(json_string_value(json_object_get(pr, "status")), "yes") == 0,
                 "probe %s: %s", want_yes[i], json_dumps(pr, 0));
  }
  SG_CHECK(json_object_get(p, "cancel") != NULL);
  /* The test server is none of the servers the check knows by name. */
  SG_CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(p, "server"), "status")),
                  "no");
  SG_CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(p, "token_limit"),
                                                      "detail")),
                    "max_tokens honoured");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "reasoning_field")),
                  "reasoning_content");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "profile")), "vllm");
  json_t *pc = json_object_get(j, "prefix_cache");
  SG_CHECK(json_integer_value(json_object_get(pc, "cached_tokens_second")) >
           json_integer_value(json_object_get(pc, "cached_tokens_first")));
  json_decref(j);
  ran_free(&r);
  /* The text report ends with the profile. */
  const char *args2[] = {"llm", "check", "--llm", s.url, "--model", "specgen-test",
                         "--timeout", "20", "--profile", "sglang", NULL};
  run(args2, NULL, &r);
  SG_CHECK_EQ_INT(r.code, 0);
  SG_CHECK_CONTAINS(sg_buf_str(&r.out), "profile to use: sglang (given)");
  SG_CHECK_CONTAINS(sg_buf_str(&r.out), "/abort_request");
  ran_free(&r);
  server_stop(&s);
}

static void test_cli_check_unusable_endpoint_exits_1(void) {
  /* A port nobody listens on: start a server, note its URL, stop it. */
  server s;
  server_start(&s, k_fast);
  server_stop(&s);
  const char *args[] = {"llm", "check", "--llm", s.url, "--model", "specgen-test",
                        "--timeout", "5", NULL};
  ran r;
  run(args, NULL, &r);
  SG_CHECK_EQ_INT(r.code, 1);
  SG_CHECK_CONTAINS(sg_buf_str(&r.out), "not usable");
  SG_CHECK_CONTAINS(sg_buf_str(&r.out), "connection failed");
  ran_free(&r);
}

SG_TEST_MAIN(SG_TEST(test_cli_chat_json_reports_everything),
             SG_TEST(test_cli_chat_streams_reasoning_prefixed_then_content),
             SG_TEST(test_cli_chat_failure_exits_1_with_server_message_no_key),
             SG_TEST(test_cli_chat_usage_errors_exit_2_naming_the_flag),
             SG_TEST(test_cli_check_reports_every_point_and_profile),
             SG_TEST(test_cli_check_unusable_endpoint_exits_1))
