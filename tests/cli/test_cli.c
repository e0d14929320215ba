/* test_cli.c: what every subcommand of the specgen program does the same
 * way, through the real binary: a usage error is one line naming what was
 * wrong and a pointer to --help (not the whole help); --help goes to stdout
 * with its options written one way; and the small messages issue 31 found
 * wrong (an evaluator that does not exist, an unknown task, doubled
 * prefixes, a report into a missing directory). */
#include "common/sg_alloc.h"
#include "sg_test.h"

#include "common/sg_file.h"
#include "store/sg_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs `specgen ARGS` under sh with stdin from /dev/null; returns its exit
 * code and what it wrote to stderr (which = 2) or stdout (which = 1). */
static int run(const char *args, int which, char **out) {
  char *cmd = which == 2 ? sg_asprintf("%s %s </dev/null 2>&1 >/dev/null", SG_TEST_SPECGEN, args)
                         : sg_asprintf("%s %s </dev/null 2>/dev/null", SG_TEST_SPECGEN, args);
  int rc = sg_test_sh(cmd, out);
  free(cmd);
  return rc;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

static const char *const commands[] = {"run",       "show",      "tasks",     "eval",
                                       "bench",     "triggers",  "report",    "sim",
                                       "llm",       "llm chat",  "llm check", "llm serve",
                                       "worker",    "kvstore"};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* "specgen CMD: ...SAYS..." then "see `specgen CMD --help`", nothing else. */
static void expect_usage_error(const char *cmd, const char *args, const char *says) {
  char *out = NULL;
  int rc = run(args, 2, &out);
  SG_CHECK_MSG(rc == 2, "specgen %s: exit %d, want 2; stderr:\n%s", args, rc, out);
  char *first = sg_asprintf("specgen %s: ", cmd);
  char *last = sg_asprintf("\nsee `specgen %s --help`\n", cmd);
  SG_CHECK_MSG(strncmp(out, first, strlen(first)) == 0 && count_lines(out) == 2 &&
                   strlen(out) > strlen(last) &&
                   strcmp(out + strlen(out) - strlen(last), last) == 0,
               "specgen %s: not one line and the pointer to --help:\n%s", args, out);
  SG_CHECK_CONTAINS(out, says);
  free(first);
  free(last);
  free(out);
}

static void test_usage_errors_are_one_line_and_a_pointer(void) {
  for (size_t i = 0; i < NCOMMANDS; i++) {
    char *args = sg_asprintf("%s --no-such-flag", commands[i]);
    /* `specgen llm --no-such-flag` is an unknown subcommand */
    expect_usage_error(commands[i], args, "--no-such-flag");
    free(args);
  }
  /* what is missing, for the commands that print their whole help there */
  expect_usage_error("show", "show", "DIR");
  expect_usage_error("report", "report", "DIR");
  expect_usage_error("eval", "eval /dev/null", "--task");
  expect_usage_error("kvstore", "kvstore", "--listen");
  expect_usage_error("kvstore", "kvstore --listen 127.0.0.1:0 extra", "'extra'");
  expect_usage_error("kvstore", "kvstore --listen nowhere", "HOST:PORT");
  expect_usage_error("llm", "llm", "chat");
  expect_usage_error("triggers", "triggers", "FILE");
  expect_usage_error("bench", "bench --cands /nonexistent", "no tasks");
  expect_usage_error("run", "run --task hinge_loss --iteratons 2", "iteratons");
}

/* A flag's value that is missing or out of range is named with the range
 * (cli_flags.c reads the numbers of every command). */
static void test_flag_values_are_checked(void) {
  expect_usage_error("llm chat", "llm chat --timeout", "--timeout needs a value");
  expect_usage_error("eval", "eval --trials 2", "--trials 2: expected an integer from 3 to 1000");
  expect_usage_error("eval", "eval --seed -1", "--seed -1: expected a positive integer");
  expect_usage_error("bench", "bench --jobs 65 paper", "--jobs: expected 1..64, got 65");
  expect_usage_error("worker", "worker --heartbeat-timeout 0.1",
                     "--heartbeat-timeout: seconds from 0.3 to 3600 expected");
  char *out = NULL;
  SG_CHECK_EQ_INT(run("llm serve --port -1", 2, &out), 2);
  SG_CHECK_STR_EQ(out, "specgen llm serve: --port \"-1\": not an integer in 0..65535\n");
  free(out);
  SG_CHECK_EQ_INT(run("llm chat --temperature nan", 2, &out), 2);
  SG_CHECK_STR_EQ(out, "specgen llm chat: --temperature \"nan\": not a number >= 0\n");
  free(out);
  SG_CHECK_EQ_INT(run("triggers --min-gap 1k -", 2, &out), 2);
  SG_CHECK_STR_EQ(out, "specgen triggers: --min-gap: '1k' is not a whole number of bytes\n");
  free(out);
}

static void test_help_is_written_one_way(void) {
  for (size_t i = 0; i < NCOMMANDS; i++) {
    for (int form = 0; form < 2; form++) {
      char *args = sg_asprintf("%s %s", commands[i], form ? "-h" : "--help");
      char *out = NULL;
      int rc = run(args, 1, &out);
      SG_CHECK_MSG(rc == 0, "specgen %s: exit %d", args, rc);
      char *head = sg_asprintf("usage: specgen %s", commands[i]);
      SG_CHECK_MSG(strncmp(out, head, strlen(head)) == 0, "specgen %s starts:\n%.200s",
                   args, out);
      /* one help line, "  -h, --help" then the column, "this help" */
      const char *h = strstr(out, "\n  -h, --help ");
      SG_CHECK_MSG(h != NULL, "specgen %s lists no \"-h, --help\" line:\n%s", args, out);
      h += strlen("\n  -h, --help ");
      h += strspn(h, " ");
      SG_CHECK_MSG(strncmp(h, "this help\n", 10) == 0, "specgen %s: \"%.20s\"", args, h);
      SG_CHECK(strstr(out, "this text") == NULL);
      free(head);
      free(out);
      free(args);
    }
  }
  /* show --help lists its options (it listed none) */
  char *out = NULL;
  SG_CHECK_EQ_INT(run("show --help", 1, &out), 0);
  SG_CHECK_CONTAINS(out, "\n  --json ");
  SG_CHECK_CONTAINS(out, "\n  --serve [ADDR:PORT] ");
  free(out);
}

/* `tasks --evaluator gpu` printed an empty table and exited 0. */
static void test_tasks_unknown_evaluator_is_refused(void) {
  expect_usage_error("tasks", "tasks --evaluator gpu", "gpu");
  char *out = NULL;
  SG_CHECK_EQ_INT(run("tasks --evaluator gpu", 2, &out), 2);
  SG_CHECK_CONTAINS(out, "cpu");
  SG_CHECK_CONTAINS(out, "cuda");
  SG_CHECK_CONTAINS(out, "kernelbench");
  free(out);
  SG_CHECK_EQ_INT(run("tasks --evaluator cpu", 1, &out), 0);
  SG_CHECK_CONTAINS(out, "hinge_loss");
  free(out);
}

/* An unknown --task suggests the nearest names in one short line; it
 * printed every task's name on one line. */
static void test_unknown_task_suggests_the_nearest(void) {
  static const char *const args[] = {"run --task hinge_los --iterations 1",
                                     "eval --task hinge_los /dev/null"};
  for (size_t i = 0; i < 2; i++) {
    char *out = NULL;
    SG_CHECK_EQ_INT(run(args[i], 2, &out), 2);
    SG_CHECK_CONTAINS(out, "did you mean cpu/hinge_loss, cuda/hinge_loss?");
    SG_CHECK_CONTAINS(out, "`specgen tasks` lists");
    SG_CHECK_MSG(strlen(out) < 200 && count_lines(out) <= 2, "%s:\n%s", args[i], out);
    SG_CHECK(strstr(out, "diag_matmul") == NULL);
    free(out);
  }
}

/* `report --out` into a directory that does not exist named the report's
 * temporary file and exited 1; it is bad input (exit 2) naming the file and
 * the missing directory. */
static void test_report_into_a_missing_directory(void) {
  char tmpl[] = "/tmp/sg-test-cli-XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  sg_store *st = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_store_open(tmpl, &st, &err), err);
  json_t *cfg = json_object();
  int64_t run_id = 0;
  SG_CHECK_OK(sg_store_run_begin(st, cfg, 1, 1000000, &run_id, &err), err);
  json_decref(cfg);
  sg_store_close(st);
  char *args = sg_asprintf("report %s --out %s/missing/page.html", tmpl, tmpl);
  char *out = NULL;
  SG_CHECK_EQ_INT(run(args, 2, &out), 2);
  char *want = sg_asprintf("specgen report: %s/missing/page.html: the directory %s/missing "
                           "does not exist\n", tmpl, tmpl);
  SG_CHECK_STR_EQ(out, want);
  free(out);
  free(want);
  free(args);
  args = sg_asprintf("report %s --out %s/page.html", tmpl, tmpl);
  SG_CHECK_EQ_INT(run(args, 2, &out), 0);
  free(out);
  free(args);
  sg_rm_rf(tmpl, &err);
}

/* A library message that names its module is not prefixed twice
 * ("specgen kvstore: kvstore: ..."), a driver error not said twice ("no
 * CUDA driver on this machine (no CUDA driver: ...)"). */
static void test_messages_say_things_once(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  SG_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0 &&
           getsockname(fd, (struct sockaddr *)&a, &alen) == 0);
  char *args = sg_asprintf("kvstore --listen 127.0.0.1:%d --device host", ntohs(a.sin_port));
  char *out = NULL;
  SG_CHECK_EQ_INT(run(args, 2, &out), 1);
  SG_CHECK_CONTAINS(out, "specgen kvstore: cannot listen on 127.0.0.1:");
  SG_CHECK(strstr(out, "kvstore: kvstore") == NULL);
  free(out);
  free(args);
  close(fd);
  if (access("/dev/nvidiactl", F_OK) == 0)
    return; /* a driver is there: nothing to refuse */
  SG_CHECK_EQ_INT(run("run --task gemm_add_relu --devices cuda:0 --out /nonexistent/x", 2,
                      &out), 2);
  const char *first = strstr(out, "no CUDA driver");
  SG_CHECK_MSG(first && !strstr(first + 1, "no CUDA driver"), "%s", out);
  SG_CHECK_CONTAINS(out, "cuda:0: no CUDA driver");
  free(out);
}

SG_TEST_MAIN(SG_TEST(test_usage_errors_are_one_line_and_a_pointer),
             SG_TEST(test_flag_values_are_checked),
             SG_TEST(test_help_is_written_one_way),
             SG_TEST(test_tasks_unknown_evaluator_is_refused),
             SG_TEST(test_unknown_task_suggests_the_nearest),
             SG_TEST(test_report_into_a_missing_directory),
             SG_TEST(test_messages_say_things_once))
