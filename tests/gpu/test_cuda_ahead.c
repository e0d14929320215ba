/* test_cuda_ahead.c: runners started ahead (sg_cuda_ahead.h), on the CPU.
 *
 * The runner here is a stand-in script that speaks the go channel as
 * specgen-cuda-run does ('R' when ready, a "SEED PATH" line, 'G' when it
 * took it, then its result on the result descriptor) and logs what it saw.
 * What it does before its ready and after its go is read from files, so a
 * test can make a runner die or hang at either point. The real runner's
 * side runs in the gpu suite. */
#include "eval/sg_cuda_ahead.h"
#include "tmpfiles.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

static const char *fake_runner =
    "#!/bin/bash\n"
    "d=$FAKE_DIR\n"
    "while [ $# -gt 0 ]; do case $1 in --task) task=$2; shift;; --go-fd) fd=$2; shift;; esac;"
    " shift; done\n"
    "echo \"start $$ $task\" >> $d/log\n"
    "case \"$(cat $d/before 2>/dev/null)\" in die) exit 3;; slow) sleep 2;; esac\n"
    "echo \"ready $$\" >> $d/log\n" /* before its 'R': logged once that is read */
    "printf R >&$fd\n"
    "read -r seed path <&$fd || { echo \"eof $$\" >> $d/log; exit 4; }\n"
    "printf G >&$fd\n"
    "echo \"go $$ $seed $path\" >> $d/log\n"
    "case \"$(cat $d/after 2>/dev/null)\" in die) kill -9 $$;; hang) sleep 60;; esac\n"
    "printf '{\"status\":\"ok\",\"message\":\"ran %s %s\",\"go_wait_s\":0}' \"$seed\" \"$path\""
    " >&$SG_RESULT_FD\n"
    /* as the real runner: the result closed, then a slow end */
    "case \"$(cat $d/after 2>/dev/null)\" in linger)"
    " echo \"linger $$\" >> $d/log; eval \"exec $SG_RESULT_FD>&-\"; sleep 30;; esac\n";

typedef struct fixture {
  char *dir, *tmp, *runner;
  sg_sandbox_limits lim;
} fixture;

static void setup(fixture *f) {
  f->dir = tmp_dir("sg-ahead");
  f->tmp = sg_asprintf("%s/tmp", f->dir);
  SG_CHECK(mkdir(f->tmp, 0700) == 0);
  put_file(f->dir, "runner", fake_runner);
  f->runner = sg_asprintf("%s/runner", f->dir);
  SG_CHECK(chmod(f->runner, 0755) == 0);
  setenv("FAKE_DIR", f->dir, 1);
  setenv("TMPDIR", f->tmp, 1); /* the runners' scratch directories go here */
  unsetenv("SPECGEN_CUDA_AHEAD");
  sg_sandbox_limits_default(&f->lim);
  f->lim.wall_s = 30;
  f->lim.cpu_s = 0;
  f->lim.address_space_bytes = 0;
  f->lim.max_processes = 0;
  f->lim.forbid_spawn = false; /* the script runs cat and sleep */
  sg_cuda_ahead_use(true);
}

/* Every runner ended, no scratch directory left behind. */
static void teardown(fixture *f) {
  sg_cuda_ahead_use(false);
  DIR *d = opendir(f->tmp);
  SG_CHECK(d != NULL);
  int left = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.')
      left++;
  if (d)
    closedir(d);
  SG_CHECK(left == 0);
  sg_err err;
  sg_rm_rf(f->dir, &err);
  free(f->dir);
  free(f->tmp);
  free(f->runner);
  unsetenv("TMPDIR");
}

static sg_cuda_ahead_key key_for(const fixture *f, const char *task) {
  sg_cuda_ahead_key k = {f->runner, task, "/nonexistent/ref.so", 0, 3, 10, 40, false};
  return k;
}

/* How many log lines start with word (and, when pid is not NULL, the pid
 * of the last one). */
static int log_count(const fixture *f, const char *word, long *pid) {
  char *p = sg_asprintf("%s/log", f->dir);
  FILE *fp = fopen(p, "r");
  free(p);
  int n = 0;
  char line[512];
  while (fp && fgets(line, sizeof line, fp)) {
    size_t w = strlen(word);
    if (strncmp(line, word, w) == 0 && line[w] == ' ') {
      n++;
      if (pid)
        *pid = strtol(line + w + 1, NULL, 10);
    }
  }
  if (fp)
    fclose(fp);
  return n;
}

static bool alive(long pid) { return pid > 0 && kill((pid_t)pid, 0) == 0; }

/* Runs one candidate; returns the outcome's result text (owned). */
static char *run(fixture *f, const char *task, const char *cand, uint64_t seed,
                 bool *ahead, sg_sandbox_outcome *o) {
  sg_cuda_ahead_key k = key_for(f, task);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_cuda_ahead_run(&k, cand, seed, &f->lim, o, ahead, &err), err);
  return sg_strndup(o->result ? o->result : "", o->result_len);
}

/* Wait (bounded) until the log has n lines of word. */
static bool wait_log(const fixture *f, const char *word, int n) {
  for (int i = 0; i < 2000; i++) {
    if (log_count(f, word, NULL) >= n)
      return true;
    usleep(10000);
  }
  return false;
}

/* Runs a first candidate of task /t/a and waits until the runner started
 * ahead for the next one is up; returns that runner's pid. */
static long first_then_ahead(fixture *f) {
  bool ahead;
  sg_sandbox_outcome o;
  free(run(f, "/t/a", "/c/one.so", 1, &ahead, &o));
  sg_sandbox_outcome_free(&o);
  SG_CHECK(wait_log(f, "start", 2));
  long pid = 0;
  log_count(f, "start", &pid);
  return pid;
}

static void test_next_candidate_gets_the_runner_started_ahead(void) {
  fixture f;
  setup(&f);
  bool ahead = true;
  sg_sandbox_outcome o;
  char *res = run(&f, "/t/a", "/c/one.so", 7, &ahead, &o);
  SG_CHECK(!ahead); /* the first one starts at its go */
  SG_CHECK(o.end == SG_SANDBOX_EXITED && o.exit_code == 0);
  SG_CHECK(strstr(res, "ran 7 /c/one.so") != NULL);
  free(res);
  sg_sandbox_outcome_free(&o);
  /* the next one was started when the first said ready */
  SG_CHECK(wait_log(&f, "start", 2));
  long next = 0;
  log_count(&f, "start", &next);
  res = run(&f, "/t/a", "/c/two.so", 8, &ahead, &o);
  SG_CHECK(ahead);
  SG_CHECK(strstr(res, "ran 8 /c/two.so") != NULL);
  long went = 0;
  SG_CHECK(log_count(&f, "go", &went) == 2);
  SG_CHECK(went == next); /* the second candidate ran on the runner started ahead */
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

/* With one runner per device, another task's candidate ends it. */
static void test_other_task_ends_the_runner_ahead(void) {
  fixture f;
  setup(&f);
  setenv("SPECGEN_CUDA_AHEAD", "1", 1);
  long stale = first_then_ahead(&f);
  bool ahead;
  sg_sandbox_outcome o;
  char *res = run(&f, "/t/b", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(!ahead);
  SG_CHECK(strstr(res, "ran 2 /c/two.so") != NULL);
  SG_CHECK(!alive(stale)); /* ended, not left waiting */
  free(res);
  sg_sandbox_outcome_free(&o);
  unsetenv("SPECGEN_CUDA_AHEAD");
  teardown(&f);
}

/* Runs a candidate of task on the fixture's device 0; returns whether it
 * ran on a runner started ahead, after waiting until the next one for
 * task has started (the log has starts of its). */
static bool run_task(fixture *f, const char *task, int starts) {
  bool ahead;
  sg_sandbox_outcome o;
  free(run(f, task, "/c/x.so", 1, &ahead, &o));
  sg_sandbox_outcome_free(&o);
  SG_CHECK(wait_log(f, "start", starts));
  return ahead;
}

/* With two runners per device, two tasks taking turns on it keep a runner
 * each; a third ends the one asked for least recently. */
static void test_tasks_taking_turns_keep_their_runners(void) {
  fixture f;
  setup(&f);
  SG_CHECK(sg_cuda_ahead_per_device() == 4); /* the default */
  setenv("SPECGEN_CUDA_AHEAD", "2", 1);
  SG_CHECK(!run_task(&f, "/t/a", 2));
  SG_CHECK(!run_task(&f, "/t/b", 4));
  SG_CHECK(run_task(&f, "/t/a", 5));
  SG_CHECK(run_task(&f, "/t/b", 6));
  /* a third task: b's runner (asked for last) stays, a's ends */
  SG_CHECK(!run_task(&f, "/t/c", 8));
  SG_CHECK(run_task(&f, "/t/b", 9));
  SG_CHECK(!run_task(&f, "/t/a", 11));
  setenv("SPECGEN_CUDA_AHEAD", "x", 1); /* not a number: the default */
  SG_CHECK(sg_cuda_ahead_per_device() == 4);
  setenv("SPECGEN_CUDA_AHEAD", "5", 1);
  SG_CHECK(sg_cuda_ahead_per_device() == 5);
  unsetenv("SPECGEN_CUDA_AHEAD");
  teardown(&f);
}

static void test_runner_dead_before_its_go_is_replaced(void) {
  fixture f;
  setup(&f);
  long waiting = first_then_ahead(&f);
  bool ahead;
  sg_sandbox_outcome o;
  /* killed while it waited (its 'R' is already on the channel) */
  SG_CHECK(kill((pid_t)waiting, SIGKILL) == 0);
  char *res = run(&f, "/t/a", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(!ahead);
  SG_CHECK(strstr(res, "ran 2 /c/two.so") != NULL);
  SG_CHECK(log_count(&f, "go", NULL) == 2); /* once, on the runner started now */
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

static void test_runner_dead_after_its_go_is_the_candidates(void) {
  fixture f;
  setup(&f);
  first_then_ahead(&f);
  bool ahead;
  sg_sandbox_outcome o;
  put_file(f.dir, "after", "die");
  char *res = run(&f, "/t/a", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(ahead);
  SG_CHECK(o.end == SG_SANDBOX_SIGNALED && o.signal == SIGKILL);
  SG_CHECK(res[0] == '\0');
  SG_CHECK(log_count(&f, "go", NULL) == 2); /* never run twice */
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

/* A runner whose run ends at its result (end_at_result, as a validation's
 * does) hands its result over before its slow end, and is reaped later. */
static void test_run_ends_at_the_result(void) {
  fixture f;
  setup(&f);
  f.lim.end_at_result = true; /* the runners' limits, the one ahead's too */
  first_then_ahead(&f);
  put_file(f.dir, "after", "linger");
  bool ahead;
  sg_sandbox_outcome o;
  char *res = run(&f, "/t/a", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(ahead);
  SG_CHECK(o.ended_at_result);
  SG_CHECK(o.end == SG_SANDBOX_EXITED && o.exit_code == 0);
  SG_CHECK(o.wall_s < 20); /* not its 30-s end */
  SG_CHECK_CONTAINS(res, "ran 2 /c/two.so");
  SG_CHECK(wait_log(&f, "linger", 1));
  long pid = 0;
  log_count(&f, "linger", &pid);
  SG_CHECK(alive(pid)); /* left to end; killed after the wait below */
  SG_CHECK_EQ_INT(sg_sandbox_reap(0.5), 0);
  SG_CHECK(!alive(pid));
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

static void test_runner_that_never_gets_ready(void) {
  fixture f;
  setup(&f);
  put_file(f.dir, "before", "die");
  bool ahead;
  sg_sandbox_outcome o;
  char *res = run(&f, "/t/a", "/c/one.so", 1, &ahead, &o);
  SG_CHECK(!ahead);
  SG_CHECK(o.end == SG_SANDBOX_EXITED && o.exit_code == 3);
  SG_CHECK(log_count(&f, "start", NULL) == 1); /* no next one from a runner never ready */
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

static void test_wall_limit_counts_from_the_go(void) {
  fixture f;
  setup(&f);
  first_then_ahead(&f);
  bool ahead;
  sg_sandbox_outcome o;
  sleep(2); /* longer than the limit below, spent waiting: not counted */
  put_file(f.dir, "after", "hang");
  f.lim.wall_s = 1;
  char *res = run(&f, "/t/a", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(ahead);
  SG_CHECK(o.end == SG_SANDBOX_TIMED_OUT);
  SG_CHECK(o.wall_s >= 1 && o.wall_s < 30);
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

/* Settling waits for a runner still starting, keeps it, and the candidate
 * after it still starts the next one at its go. */
static void test_settle_waits_for_the_runner_ahead(void) {
  fixture f;
  setup(&f);
  put_file(f.dir, "before", "slow");
  long waiting = first_then_ahead(&f);
  sg_cuda_ahead_settle(30);
  SG_CHECK(log_count(&f, "ready", NULL) == 2); /* the one started ahead too */
  SG_CHECK(alive(waiting));
  bool ahead;
  sg_sandbox_outcome o;
  char *res = run(&f, "/t/a", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(ahead);
  long went = 0;
  log_count(&f, "go", &went);
  SG_CHECK(went == waiting);
  SG_CHECK(strstr(res, "ran 2 /c/two.so") != NULL);
  SG_CHECK(wait_log(&f, "start", 3)); /* the next one, though its 'R' was read */
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

/* One not ready within the limit is ended; the next candidate starts its
 * own. */
static void test_settle_ends_a_runner_not_ready_in_time(void) {
  fixture f;
  setup(&f);
  put_file(f.dir, "before", "slow");
  long waiting = first_then_ahead(&f);
  sg_cuda_ahead_settle(0.05);
  SG_CHECK(!alive(waiting));
  put_file(f.dir, "before", "");
  bool ahead;
  sg_sandbox_outcome o;
  char *res = run(&f, "/t/a", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(!ahead);
  SG_CHECK(strstr(res, "ran 2 /c/two.so") != NULL);
  free(res);
  sg_sandbox_outcome_free(&o);
  teardown(&f);
}

/* Lines of the log that start a runner for task. */
static int starts_for(const fixture *f, const char *task) {
  char *p = sg_asprintf("%s/log", f->dir);
  FILE *fp = fopen(p, "r");
  free(p);
  int n = 0;
  char line[512];
  while (fp && fgets(line, sizeof line, fp)) {
    char *sp = strncmp(line, "start ", 6) == 0 ? strchr(line + 6, ' ') : NULL;
    if (sp && strncmp(sp + 1, task, strlen(task)) == 0 && sp[1 + strlen(task)] == '\n')
      n++;
  }
  if (fp)
    fclose(fp);
  return n;
}

/* A caller that knows the next candidate's task (a bench: every row another
 * task) gets that task's runner started ahead instead of another for the
 * current one; the expectation holds for one run. */
static void test_expected_task_starts_instead(void) {
  fixture f;
  setup(&f);
  sg_cuda_ahead_key b = key_for(&f, "/t/b");
  sg_cuda_ahead_expect(&b, &f.lim);
  bool ahead;
  sg_sandbox_outcome o;
  free(run(&f, "/t/a", "/c/one.so", 1, &ahead, &o));
  sg_sandbox_outcome_free(&o);
  SG_CHECK(!ahead);
  SG_CHECK(wait_log(&f, "start", 2));
  SG_CHECK(starts_for(&f, "/t/b") == 1);
  SG_CHECK(starts_for(&f, "/t/a") == 1); /* its own, at its go */
  char *res = run(&f, "/t/b", "/c/two.so", 2, &ahead, &o);
  SG_CHECK(ahead);
  SG_CHECK(strstr(res, "ran 2 /c/two.so") != NULL);
  free(res);
  sg_sandbox_outcome_free(&o);
  /* nothing expected now: /t/b's next is started as before */
  SG_CHECK(wait_log(&f, "start", 3));
  SG_CHECK(starts_for(&f, "/t/b") == 2);
  SG_CHECK(starts_for(&f, "/t/a") == 1);
  teardown(&f);
}

/* An expected runner already waiting is not started twice, and "none"
 * starts nothing after the run. */
static void test_expected_waiting_or_none_starts_nothing(void) {
  fixture f;
  setup(&f);
  long waiting = first_then_ahead(&f); /* /t/a's next is waiting */
  sg_cuda_ahead_key a = key_for(&f, "/t/a");
  sg_cuda_ahead_expect(&a, &f.lim);
  bool ahead;
  sg_sandbox_outcome o;
  free(run(&f, "/t/b", "/c/one.so", 1, &ahead, &o));
  sg_sandbox_outcome_free(&o);
  SG_CHECK(!ahead);
  SG_CHECK(starts_for(&f, "/t/a") == 2);
  SG_CHECK(starts_for(&f, "/t/b") == 1);
  SG_CHECK(alive(waiting));
  sg_cuda_ahead_expect_none();
  free(run(&f, "/t/a", "/c/two.so", 2, &ahead, &o));
  sg_sandbox_outcome_free(&o);
  SG_CHECK(ahead);
  usleep(200000); /* a runner started by mistake would have logged by now */
  SG_CHECK(log_count(&f, "start", NULL) == 3);
  teardown(&f);
}

/* A profile's way: its runner is started when the caller says a profile
 * comes (start_argv: now, and once), and a run "once" starts no runner
 * after it and leaves the caller's expectation for the next run. */
static void test_started_now_and_run_once(void) {
  fixture f;
  setup(&f);
  char fd[16];
  snprintf(fd, sizeof fd, "%d", SG_SANDBOX_PASS_FD(0));
  char *prof[] = {f.runner, "--task", "/t/p", "--go-fd", fd, NULL};
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_cuda_ahead_start_argv(0, prof, &f.lim, &err), err);
  SG_CHECK(wait_log(&f, "ready", 1));
  SG_CHECK_OK(sg_cuda_ahead_start_argv(0, prof, &f.lim, &err), err);
  SG_CHECK(starts_for(&f, "/t/p") == 1);
  sg_cuda_ahead_key b = key_for(&f, "/t/b");
  sg_cuda_ahead_expect(&b, &f.lim);
  bool ahead = false;
  sg_sandbox_outcome o;
  SG_CHECK_OK(sg_cuda_ahead_run_once_argv(0, prof, "/c/p.so", 7, &f.lim, &o, &ahead, &err),
              err);
  SG_CHECK(ahead);
  SG_CHECK(o.result && strstr(o.result, "ran 7 /c/p.so") != NULL);
  sg_sandbox_outcome_free(&o);
  /* not started ahead: one is started now for it, and none after */
  SG_CHECK_OK(sg_cuda_ahead_run_once_argv(0, prof, "/c/q.so", 8, &f.lim, &o, &ahead, &err),
              err);
  SG_CHECK(!ahead);
  SG_CHECK(o.result && strstr(o.result, "ran 8 /c/q.so") != NULL);
  sg_sandbox_outcome_free(&o);
  usleep(200000); /* a runner started by mistake would have logged by now */
  SG_CHECK(starts_for(&f, "/t/p") == 2);
  SG_CHECK(log_count(&f, "start", NULL) == 2);
  /* the expectation is still there for the next validation */
  free(run(&f, "/t/a", "/c/one.so", 1, &ahead, &o));
  sg_sandbox_outcome_free(&o);
  SG_CHECK(wait_log(&f, "start", 4));
  SG_CHECK(starts_for(&f, "/t/b") == 1);
  /* nothing is started while runners ahead are off */
  sg_cuda_ahead_use(false);
  char *other[] = {f.runner, "--task", "/t/q", "--go-fd", fd, NULL};
  SG_CHECK_OK(sg_cuda_ahead_start_argv(0, other, &f.lim, &err), err);
  usleep(200000);
  SG_CHECK(starts_for(&f, "/t/q") == 0);
  teardown(&f);
}

static void test_off_by_environment(void) {
  fixture f;
  setup(&f);
  setenv("SPECGEN_CUDA_AHEAD", "0", 1);
  SG_CHECK(!sg_cuda_ahead_enabled());
  unsetenv("SPECGEN_CUDA_AHEAD");
  SG_CHECK(sg_cuda_ahead_enabled());
  sg_cuda_ahead_use(false);
  SG_CHECK(!sg_cuda_ahead_enabled());
  teardown(&f);
}

SG_TEST_MAIN(SG_TEST(test_next_candidate_gets_the_runner_started_ahead),
             SG_TEST(test_other_task_ends_the_runner_ahead),
             SG_TEST(test_tasks_taking_turns_keep_their_runners),
             SG_TEST(test_runner_dead_before_its_go_is_replaced),
             SG_TEST(test_runner_dead_after_its_go_is_the_candidates),
             SG_TEST(test_run_ends_at_the_result),
             SG_TEST(test_runner_that_never_gets_ready),
             SG_TEST(test_wall_limit_counts_from_the_go),
             SG_TEST(test_settle_waits_for_the_runner_ahead),
             SG_TEST(test_settle_ends_a_runner_not_ready_in_time),
             SG_TEST(test_expected_task_starts_instead),
             SG_TEST(test_expected_waiting_or_none_starts_nothing),
             SG_TEST(test_started_now_and_run_once),
             SG_TEST(test_off_by_environment))
