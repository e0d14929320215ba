/* test_sim_replay.c: sg_sim_replay_run, a recorded run as the simulator's
 * world, on the built-in test server's recorded session with speculation
 * (tests/runtime/data/testserver_spec_on, copied: the replay opens its
 * store): the recorded options on the record's clock give the record's
 * forks and the same JSON on every call; the relative clock and the solo
 * pace are other models of time, said so in the output; a fork the record
 * took as token ids is counted as one; the decisions never depend on
 * anything but the record and the options. */
#include "sg_test.h"
#include "sim/sg_sim_replay.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static json_t *replay(bool spec, sg_sim_replay_clock clock, sg_sim_replay_pace pace) {
  char dir[] = "/tmp/sg_sim_replay_XXXXXX";
  copy_record(dir);
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

SG_TEST_MAIN(SG_TEST(test_recorded_clock_is_the_record), SG_TEST(test_other_models_of_time),
             SG_TEST(test_no_record))
