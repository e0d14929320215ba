/* test_sim_replay.c: sg_sim_replay_run, a recorded run as the simulator's
 * world, on the built-in test server's recorded session with speculation
 * (tests/runtime/data/testserver_spec_on, copied: the replay opens its
 * store): the recorded options on the record's clock give the record's
 * forks and the same JSON on every call; the relative clock and the solo
 * pace are other models of time, said so in the output; a fork the record
 * took as token ids is counted as one; the decisions never depend on
 * anything but the record and the options; the best speedup follows the
 * store's rule. */
#include "sg_test.h"
#include "sim/sg_sim_replay.h"
#include "store/sg_replay.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SG_TEST_RECORD
#error "SG_TEST_RECORD: the kept record's directory"
#endif

/* A copy of the record in a fresh directory; rm_record removes it. */
static void copy_record(char *dir) {
  SG_CHECK(mkdtemp(dir) != NULL);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cp '%s/llm.jsonl.gz' '%s/run.db' '%s/'", SG_TEST_RECORD,
           SG_TEST_RECORD, dir);
  SG_CHECK(system(cmd) == 0);
}

static void rm_record(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  SG_CHECK(system(cmd) == 0);
}

/* The recorded options (the record's run.db holds them; here as the
 * replay's caller sets them). */
static json_t *replay_edited(bool spec, sg_sim_replay_clock clock, sg_sim_replay_pace pace,
                             const char *sql) {
  char dir[] = "/tmp/sg_sim_replay_XXXXXX";
  copy_record(dir);
  if (sql) { /* the record edited: what the kept one lacks */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s/run.db' \"%s\"", dir, sql);
    SG_CHECK(system(cmd) == 0);
  }
  sg_knobs k;
  sg_knobs_default(&k);
  k.spec = spec;
  k.iterations = 2;
  k.tick = 0.05;
  k.max_forks = 4;
  k.max_live_forks = 16;
  k.eval_timeout = 5;
  static const char *const task[] = {"hinge_loss"}, *const lang[] = {"c"},
                           *const entry[] = {"hinge_loss"};
  sg_sim_replay_opts o = {.dir = dir, .pace = pace, .clock = clock, .knobs = &k,
                          .ntask = 1, .task = task, .language = lang, .entry = entry,
                          .devices = 1, .compile_slots = 1,
                          .seed = 7, .search = "refine", .termination = "hist-avg"};
  json_t *out = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_sim_replay_run(&o, &out, &err), err);
  rm_record(dir);
  return out;
}

static json_t *replay(bool spec, sg_sim_replay_clock clock, sg_sim_replay_pace pace) {
  return replay_edited(spec, clock, pace, NULL);
}

static const json_t *get(const json_t *j, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *k = strtok(buf, "."); k && j; k = strtok(NULL, "."))
    j = json_object_get(j, k);
  return j;
}

static void test_recorded_clock_is_the_record(void) {
  json_t *a = replay(true, SG_SIM_REPLAY_CLOCK_RECORDED, SG_SIM_REPLAY_PACE_RECORDED);
  json_t *b = replay(true, SG_SIM_REPLAY_CLOCK_RECORDED, SG_SIM_REPLAY_PACE_RECORDED);
  /* all but where the copy was */
  json_object_del(json_object_get(a, "replay"), "from");
  json_object_del(json_object_get(b, "replay"), "from");
  char *sa = json_dumps(a, JSON_SORT_KEYS), *sb = json_dumps(b, JSON_SORT_KEYS);
  SG_CHECK_STR_EQ(sa, sb);
  /* the record's forks (tests/runtime/replay_virtual.sh compares the rest) */
  const json_t *forks = get(a, "decisions.hinge_loss.forks");
  SG_CHECK_EQ_INT((int)json_array_size(forks), 8);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(forks, 0)), "1:758");
  SG_CHECK_STR_EQ(json_string_value(json_array_get(forks, 7)), "2:1994");
  SG_CHECK_EQ_INT((int)json_integer_value(get(a, "replay.forks_at_recorded_prefix")), 8);
  SG_CHECK_EQ_INT((int)json_integer_value(get(a, "replay.token_forks")), 8);
  SG_CHECK_STR_EQ(json_string_value(get(a, "replay.clock")), "recorded");
  free(sa);
  free(sb);
  json_decref(a);
  json_decref(b);
}

static void test_other_models_of_time(void) {
  json_t *rec = replay(true, SG_SIM_REPLAY_CLOCK_RECORDED, SG_SIM_REPLAY_PACE_RECORDED);
  json_t *rel = replay(true, SG_SIM_REPLAY_CLOCK_RELATIVE, SG_SIM_REPLAY_PACE_RECORDED);
  json_t *off = replay(false, SG_SIM_REPLAY_CLOCK_RELATIVE, SG_SIM_REPLAY_PACE_RECORDED);
  json_t *solo = replay(false, SG_SIM_REPLAY_CLOCK_RELATIVE, SG_SIM_REPLAY_PACE_SOLO);
  /* the relative clock drops the live run's delays: never longer */
  SG_CHECK(json_real_value(get(rel, "e2e_s")) <= json_real_value(get(rec, "e2e_s")));
  SG_CHECK_STR_EQ(json_string_value(get(rel, "replay.clock")), "relative");
  /* spec off: no fork; the same main generations as recorded */
  SG_CHECK_EQ_INT((int)json_array_size(get(off, "decisions.hinge_loss.forks")), 0);
  SG_CHECK(json_equal((json_t *)get(off, "decisions.hinge_loss.mains"),
                      (json_t *)get(rec, "decisions.hinge_loss.mains")));
  /* the solo pace: the gaps taken with a fork live replaced, counted */
  SG_CHECK_STR_EQ(json_string_value(get(solo, "replay.pace")), "solo");
  SG_CHECK(json_integer_value(get(solo, "replay.main_gaps_with_forks")) > 0);
  SG_CHECK(json_real_value(get(solo, "replay.solo_gap_s")) > 0);
  SG_CHECK(json_real_value(get(solo, "e2e_s")) <= json_real_value(get(off, "e2e_s")));
  json_decref(rec);
  json_decref(rel);
  json_decref(off);
  json_decref(solo);
}

static void test_no_record(void) {
  sg_knobs k;
  sg_knobs_default(&k);
  sg_sim_replay_opts o = {.dir = "/nonexistent/record", .knobs = &k, .search = "refine",
                          .termination = "hist-avg"};
  json_t *out = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_sim_replay_run(&o, &out, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "no recorded model session");
  SG_CHECK(out == NULL);
}

/* A record line: a main (parent 0) or a fork of main `parent`, at `at_s`
 * for `len_s`, with its outcome. */
static void line(FILE *f, uint64_t gen, uint64_t parent, double at_s, double len_s,
                 const char *outcome) {
  fprintf(f,
          "{\"task\":\"t\",\"iteration\":1,\"gen\":%llu,\"kind\":\"%s\",\"parent_gen\":%llu,"
          "\"prefix_bytes\":%d,\"chunks\":[[1,\"r\",\"x\"]],\"outcome\":\"%s\","
          "\"started_us\":%lld,\"ended_us\":%lld}\n",
          (unsigned long long)gen, parent ? "spec" : "main", (unsigned long long)parent,
          parent ? 500 : 0, outcome, (long long)(at_s * 1e6), (long long)(len_s * 1e6));
}

/* Two tries of one main (the same task, iteration and id), each with a
 * fork at the same prefix: a stop cut the first and a resumed run sent the
 * second (found as a resume), or the server cut the first (a failed try:
 * no resume). Each try's fork answers that try. */
static void test_tries_of_a_main(void) {
  for (int resumed = 0; resumed < 2; resumed++) {
    char path[] = "/tmp/sg_replay_tries_XXXXXX";
    int fd = mkstemp(path);
    SG_CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    line(f, 2, 1, 50, 40, "completed");
    line(f, 1, 0, 0, 100, resumed ? "cancelled" : "failed");
    line(f, 2, 1, 300, 40, "completed");
    line(f, 1, 0, 200, 300, "completed");
    fclose(f);
    sg_replay *rp = NULL;
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_EQ_INT(sg_replay_load(path, &rp, &err), 0);
    sg_replay_resume *z = NULL;
    size_t nz = sg_replay_resumes(rp, &z);
    SG_CHECK_EQ_INT((int)nz, resumed);
    if (resumed) {
      SG_CHECK(z[0].resume_us == 200000000 && z[0].stop_us == 100000001);
    }
    free(z);
    const sg_replay_gen *first = sg_replay_get(rp, 1), *second = sg_replay_get(rp, 3);
    const sg_replay_gen *fork = NULL;
    SG_CHECK_EQ_INT(sg_replay_match_fork(rp, second, 500, &fork, &err), 0);
    SG_CHECK(fork == sg_replay_get(rp, 2));
    SG_CHECK_EQ_INT(sg_replay_match_fork(rp, first, 500, &fork, &err), 0);
    SG_CHECK(fork == sg_replay_get(rp, 0));
    sg_replay_free(rp);
    unlink(path);
  }
}

/* The best speedup as the live summary has it (the store's figures): each
 * kernel's profile, else its validation, the largest; a kernel validated
 * fast whose profile failed beats a slower profiled one. The kept record
 * is edited so: kernel 1 validated at 9x, its profile a runtime error;
 * kernel 2 validated at 1.2x, profiled at 1.5x. */
static void test_best_speedup_as_the_store_has_it(void) {
  static const char sql[] =
      "UPDATE evaluations SET status = 'ok', speedup = 9.0, message = NULL, result_json = "
      "json_set(result_json, '$.status', 'ok', '$.speedup', 9.0, '$.message', NULL) "
      "WHERE candidate_id = 1 AND phase = 'validate';"
      "UPDATE evaluations SET status = 'ok', speedup = 1.2, message = NULL, result_json = "
      "json_set(result_json, '$.status', 'ok', '$.speedup', 1.2, '$.message', NULL) "
      "WHERE candidate_id = 2 AND phase = 'validate';"
      "INSERT INTO evaluations (candidate_id, phase, device, queued_us, started_us, ended_us, "
      "status, speedup, result_json) SELECT candidate_id, 'profile', 'cpu:0', ended_us, ended_us, "
      "ended_us + 100000, CASE candidate_id WHEN 1 THEN 'runtime_error' ELSE 'ok' END, "
      "CASE candidate_id WHEN 1 THEN NULL ELSE 1.5 END, json_set(result_json, '$.status', "
      "CASE candidate_id WHEN 1 THEN 'runtime_error' ELSE 'ok' END, '$.speedup', "
      "CASE candidate_id WHEN 1 THEN NULL ELSE 1.5 END) FROM evaluations "
      "WHERE candidate_id IN (1, 2) AND phase = 'validate';";
  json_t *a = replay_edited(true, SG_SIM_REPLAY_CLOCK_RECORDED, SG_SIM_REPLAY_PACE_RECORDED, sql);
  char *evals = json_dumps(get(a, "decisions.hinge_loss.evaluations"), JSON_COMPACT);
  const json_t *w = json_array_get(json_object_get(a, "workflows"), 0);
  SG_CHECK_MSG(json_real_value(json_object_get(w, "best_speedup")) == 9.0,
               "best %g (%s), evaluations %s",
               json_number_value(json_object_get(w, "best_speedup")),
               json_string_value(json_object_get(w, "best_speedup_kind")), evals);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(w, "best_speedup_kind")), "validate");
  SG_CHECK_CONTAINS(evals, "[\"profile\",\"ok\",1.5]"); /* the slower one was profiled */
  free(evals);
  json_decref(a);
}

SG_TEST_MAIN(SG_TEST(test_recorded_clock_is_the_record), SG_TEST(test_other_models_of_time),
             SG_TEST(test_no_record), SG_TEST(test_tries_of_a_main),
             SG_TEST(test_best_speedup_as_the_store_has_it))
