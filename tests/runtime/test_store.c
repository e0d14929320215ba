/* test_store.c: the run store on a real SQLite file in a temporary
 * directory: schema and pragmas, every record type written and read back,
 * de-duplication of candidates, completed evaluations never overwritten,
 * resume and summary queries against hand-computed values, a writer killed
 * with SIGKILL mid-run losing nothing whose call had returned, reopening,
 * and the errors for bad paths, corrupt files and bad references. */
#include "sg_test.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"
#include "store/sg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>

#define S1 1000000LL /* one second in microseconds */

static char *tmp_dir(void) {
  char tmpl[] = "/tmp/sg_store_XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  return sg_strdup(tmpl);
}

static void rm_dir(char *dir) {
  sg_err err;
  SG_CHECK_OK(sg_rm_rf(dir, &err), err);
  free(dir);
}

static sg_store *open_ok(const char *dir) {
  sg_err err;
  sg_err_clear(&err);
  sg_store *s = NULL;
  SG_CHECK_OK(sg_store_open(dir, &s, &err), err);
  SG_CHECK(s != NULL);
  return s;
}

/* A run with one workflow, one open iteration and one main generation. */
typedef struct fixture {
  int64_t run, wf, it, gen;
} fixture;

static fixture setup_run(sg_store *s, int devices) {
  sg_err err;
  fixture f;
  json_t *cfg = json_pack("{s:s, s:i}", "search", "refine", "k", 3);
  SG_CHECK_OK(sg_store_run_begin(s, cfg, devices, 1 * S1, &f.run, &err), err);
  json_decref(cfg);
  sg_store_workflow wf = {.task = "cpu/hinge_loss",
                          .budget_iterations = 10,
                          .budget_wall_s = 3600.0,
                          .budget_tokens = 500000,
                          .started_us = 1 * S1};
  SG_CHECK_OK(sg_store_workflow_add(s, &wf, &f.wf, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, f.wf, 1, 1 * S1, &f.it, &err), err);
  sg_store_generation g = {.iteration_id = f.it,
                           .kind = SG_STORE_GEN_MAIN,
                           .prompt = "write a kernel",
                           .started_us = 1 * S1};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &f.gen, &err), err);
  return f;
}

static json_t *row(sg_store *s, const char *table, int64_t id) {
  sg_err err;
  json_t *j = NULL;
  SG_CHECK_OK(sg_store_row_json(s, table, id, &j, &err), err);
  return j;
}

static long long jint(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  SG_CHECK_MSG(json_is_integer(v), "%s is not an integer", key);
  return json_integer_value(v);
}

static double jnum(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  SG_CHECK_MSG(json_is_number(v), "%s is not a number", key);
  return json_number_value(v);
}

static const char *jstr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  SG_CHECK_MSG(json_is_string(v), "%s is not a string", key);
  return json_string_value(v);
}

static void finish_ok(sg_store *s, int64_t eval, double speedup,
                      int64_t at_us) {
  sg_err err;
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = SG_EVAL_OK;
  r.speedup = speedup;
  r.ref_ms = 2.0;
  r.cand_ms = 2.0 / speedup;
  SG_CHECK_OK(sg_store_eval_finish(s, eval, &r, at_us, &err), err);
  sg_eval_result_free(&r);
}

static void finish_status(sg_store *s, int64_t eval, sg_eval_status st,
                          int64_t at_us) {
  sg_err err;
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = st;
  r.message = sg_strdup("it failed");
  SG_CHECK_OK(sg_store_eval_finish(s, eval, &r, at_us, &err), err);
  sg_eval_result_free(&r);
}

/* ---- tests ------------------------------------------------------------- */

static void open_creates_wal_database_with_schema(void) {
  char *dir = tmp_dir();
  char *sub = sg_asprintf("%s/a/b", dir); /* parents are created */
  sg_store *s = open_ok(sub);
  char *path = sg_asprintf("%s/run.db", sub);
  SG_CHECK_STR_EQ(sg_store_path(s), path);
  SG_CHECK_EQ_INT(sg_store_schema_version(s), SG_STORE_SCHEMA_VERSION);
  SG_CHECK_STR_EQ(sg_store_synchronous(s), "normal");
  sg_store_close(s);
  /* The durable option, and back: the level is per connection. */
  sg_err err;
  sg_store_opts opts = {.sync_full = true};
  SG_CHECK_OK(sg_store_open_opts(sub, &opts, &s, &err), err);
  SG_CHECK_STR_EQ(sg_store_synchronous(s), "full");
  sg_store_close(s);
  s = open_ok(sub);
  SG_CHECK_STR_EQ(sg_store_synchronous(s), "normal");
  sg_store_close(s);

  /* Read it with plain SQLite: WAL is persistent, the version is stored. */
  sqlite3 *db = NULL;
  SG_CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
           SQLITE_OK);
  sqlite3_stmt *st = NULL;
  SG_CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) ==
           SQLITE_OK);
  SG_CHECK(sqlite3_step(st) == SQLITE_ROW);
  SG_CHECK_STR_EQ((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  SG_CHECK(sqlite3_prepare_v2(db, "SELECT version FROM schema_version", -1,
                              &st, NULL) == SQLITE_OK);
  SG_CHECK(sqlite3_step(st) == SQLITE_ROW);
  SG_CHECK_EQ_INT(sqlite3_column_int(st, 0), SG_STORE_SCHEMA_VERSION);
  SG_CHECK(sqlite3_step(st) == SQLITE_DONE); /* exactly one row */
  sqlite3_finalize(st);
  const char *tables[] = {"runs",        "workflows",   "iterations",
                          "generations", "candidates",  "evaluations",
                          "decisions",   "device_intervals"};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
    SG_CHECK(sqlite3_prepare_v2(db,
                                "SELECT count(*) FROM sqlite_master WHERE "
                                "type = 'table' AND name = ?1",
                                -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_text(st, 1, tables[i], -1, SQLITE_STATIC);
    SG_CHECK(sqlite3_step(st) == SQLITE_ROW);
    SG_CHECK_MSG(sqlite3_column_int(st, 0) == 1, "table %s missing",
                 tables[i]);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  free(path);
  free(sub);
  rm_dir(dir);
}

static void foreign_keys_are_enforced_and_errors_name_table_and_sql(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  setup_run(s, 1);
  sg_err err;
  sg_err_clear(&err);
  int64_t id = 0;
  int rc = sg_store_eval_queue(s, 999, SG_STORE_VALIDATE, 5, &id, &err);
  SG_CHECK_EQ_INT(rc, SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "run.db");
  SG_CHECK_CONTAINS(err.msg, "table evaluations");
  SG_CHECK_CONTAINS(err.msg, "INSERT INTO evaluations");
  SG_CHECK_CONTAINS(err.msg, "FOREIGN KEY");

  rc = sg_store_iteration_begin(s, 12345, 1, 5, &id, &err);
  SG_CHECK_EQ_INT(rc, SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "table iterations");

  /* The same iteration number twice in a workflow. */
  rc = sg_store_iteration_begin(s, 1, 1, 5, &id, &err);
  SG_CHECK_EQ_INT(rc, SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "UNIQUE");

  sg_store_generation g = {.iteration_id = 777, .kind = SG_STORE_GEN_SPEC};
  rc = sg_store_generation_begin(s, &g, &id, &err);
  SG_CHECK_EQ_INT(rc, SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "no iteration 777");

  rc = sg_store_row_json(s, "sqlite_master; DROP", 1, &(json_t *){NULL}, &err);
  SG_CHECK_EQ_INT(rc, SG_EINVAL);
  rc = sg_store_row_json(s, "runs", 42, &(json_t *){NULL}, &err);
  SG_CHECK_EQ_INT(rc, SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "table runs: no row with id 42");
  sg_store_close(s);
  rm_dir(dir);
}

static void every_record_type_round_trips(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 4);
  sg_err err;

  json_t *r = row(s, "runs", f.run);
  SG_CHECK_EQ_INT(jint(r, "devices"), 4);
  SG_CHECK_EQ_INT(jint(r, "started_us"), 1 * S1);
  SG_CHECK(json_is_null(json_object_get(r, "ended_us")));
  json_t *cfg = json_object_get(r, "config_json");
  SG_CHECK_STR_EQ(jstr(cfg, "search"), "refine");
  SG_CHECK_EQ_INT(jint(cfg, "k"), 3);
  json_decref(r);

  r = row(s, "workflows", f.wf);
  SG_CHECK_EQ_INT(jint(r, "run_id"), f.run);
  SG_CHECK_STR_EQ(jstr(r, "task"), "cpu/hinge_loss");
  SG_CHECK_STR_EQ(jstr(r, "state"), "running");
  SG_CHECK_EQ_INT(jint(r, "budget_iterations"), 10);
  SG_CHECK_NEAR(jnum(r, "budget_wall_s"), 3600.0, 0);
  SG_CHECK_EQ_INT(jint(r, "budget_tokens"), 500000);
  json_decref(r);

  int64_t fork = 0;
  sg_store_generation g = {.iteration_id = f.it,
                           .kind = SG_STORE_GEN_SPEC,
                           .parent_id = f.gen,
                           .prefix_bytes = 4096,
                           .prompt = "prompt + reasoning prefix",
                           .started_us = 2 * S1};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &fork, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, fork, 1200, 800, 1100, "stop",
                                      SG_STORE_GEN_COMPLETED, 3 * S1, &err),
              err);
  r = row(s, "generations", fork);
  SG_CHECK_EQ_INT(jint(r, "workflow_id"), f.wf);
  SG_CHECK_EQ_INT(jint(r, "iteration_id"), f.it);
  SG_CHECK_STR_EQ(jstr(r, "kind"), "spec");
  SG_CHECK_EQ_INT(jint(r, "parent_id"), f.gen);
  SG_CHECK_EQ_INT(jint(r, "prefix_bytes"), 4096);
  SG_CHECK_STR_EQ(jstr(r, "prompt"), "prompt + reasoning prefix");
  SG_CHECK_EQ_INT(jint(r, "prompt_tokens"), 1200);
  SG_CHECK_EQ_INT(jint(r, "completion_tokens"), 800);
  SG_CHECK_EQ_INT(jint(r, "cached_tokens"), 1100);
  SG_CHECK_EQ_INT(jint(r, "started_us"), 2 * S1);
  SG_CHECK_EQ_INT(jint(r, "ended_us"), 3 * S1);
  SG_CHECK_STR_EQ(jstr(r, "finish_reason"), "stop");
  SG_CHECK_STR_EQ(jstr(r, "outcome"), "completed");
  json_decref(r);
  /* An ended generation cannot end again. */
  SG_CHECK_EQ_INT(sg_store_generation_end(s, fork, 1, 1, 1, NULL,
                                          SG_STORE_GEN_FAILED, 4 * S1, &err),
                  SG_ESTATE);
  r = row(s, "generations", f.gen);
  SG_CHECK(json_is_null(json_object_get(r, "parent_id")));
  SG_CHECK_STR_EQ(jstr(r, "kind"), "main");
  SG_CHECK(json_is_null(json_object_get(r, "outcome")));
  json_decref(r);

  const char *src = "__global__ void k(float *x) { x[0] = 1; }";
  int64_t cand = 0;
  bool is_new = false;
  SG_CHECK_OK(sg_store_candidate_add(s, fork, src, 3 * S1, &cand, &is_new,
                                     &err),
              err);
  SG_CHECK(is_new);
  r = row(s, "candidates", cand);
  SG_CHECK_EQ_INT(jint(r, "workflow_id"), f.wf);
  SG_CHECK_EQ_INT(jint(r, "generation_id"), fork);
  SG_CHECK_STR_EQ(jstr(r, "source"), src);
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64,
           sg_source_key(src, strlen(src)));
  SG_CHECK_STR_EQ(jstr(r, "fnv1a64"), hash);
  SG_CHECK_EQ_INT(jint(r, "created_us"), 3 * S1);
  json_decref(r);

  int64_t ev = 0;
  SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_PROFILE, 3 * S1, &ev,
                                  &err),
              err);
  SG_CHECK_OK(sg_store_eval_start(s, ev, "cuda:2", 4 * S1, &err), err);
  sg_eval_result res;
  sg_eval_result_init(&res);
  res.status = SG_EVAL_OK;
  res.speedup = 1.75;
  res.ref_ms = 3.5;
  res.cand_ms = 2.0;
  res.message = sg_strdup("fine");
  res.profile_text = sg_strdup("memory bound");
  res.metrics = json_pack("{s:f}", "dram_throughput_pct", 81.5);
  SG_CHECK_OK(sg_store_eval_finish(s, ev, &res, 5 * S1, &err), err);
  sg_eval_result_free(&res);
  r = row(s, "evaluations", ev);
  SG_CHECK_EQ_INT(jint(r, "candidate_id"), cand);
  SG_CHECK_STR_EQ(jstr(r, "phase"), "profile");
  SG_CHECK_STR_EQ(jstr(r, "device"), "cuda:2");
  SG_CHECK_EQ_INT(jint(r, "queued_us"), 3 * S1);
  SG_CHECK_EQ_INT(jint(r, "started_us"), 4 * S1);
  SG_CHECK_EQ_INT(jint(r, "ended_us"), 5 * S1);
  SG_CHECK_STR_EQ(jstr(r, "status"), "ok");
  SG_CHECK_NEAR(jnum(r, "speedup"), 1.75, 0);
  SG_CHECK_NEAR(jnum(r, "ref_ms"), 3.5, 0);
  SG_CHECK_NEAR(jnum(r, "cand_ms"), 2.0, 0);
  SG_CHECK_STR_EQ(jstr(r, "message"), "fine");
  SG_CHECK_NEAR(jnum(json_object_get(r, "metrics_json"),
                     "dram_throughput_pct"),
                81.5, 0);
  json_decref(r);

  int64_t dec = 0;
  json_t *detail = json_pack("{s:s, s:i}", "trigger", "code_block", "k", 2);
  SG_CHECK_OK(sg_store_decision_add(s, f.wf, f.it, "fork", detail, 2 * S1,
                                    &dec, &err),
              err);
  json_decref(detail);
  r = row(s, "decisions", dec);
  SG_CHECK_EQ_INT(jint(r, "workflow_id"), f.wf);
  SG_CHECK_EQ_INT(jint(r, "iteration_id"), f.it);
  SG_CHECK_STR_EQ(jstr(r, "kind"), "fork");
  SG_CHECK_STR_EQ(jstr(json_object_get(r, "detail_json"), "trigger"),
                  "code_block");
  SG_CHECK_EQ_INT(jint(r, "at_us"), 2 * S1);
  json_decref(r);
  /* A decision outside any iteration, with no detail. */
  SG_CHECK_OK(sg_store_decision_add(s, f.wf, 0, "reallocate", NULL, 6 * S1,
                                    &dec, &err),
              err);
  r = row(s, "decisions", dec);
  SG_CHECK(json_is_null(json_object_get(r, "iteration_id")));
  SG_CHECK(json_is_object(json_object_get(r, "detail_json")));
  json_decref(r);

  int64_t di = 0;
  SG_CHECK_OK(sg_store_device_interval_add(s, "cuda:2", SG_STORE_PROFILE, ev,
                                           4 * S1, 5 * S1, &di, &err),
              err);
  r = row(s, "device_intervals", di);
  SG_CHECK_STR_EQ(jstr(r, "device"), "cuda:2");
  SG_CHECK_STR_EQ(jstr(r, "phase"), "profile");
  SG_CHECK_EQ_INT(jint(r, "evaluation_id"), ev);
  SG_CHECK_EQ_INT(jint(r, "started_us"), 4 * S1);
  SG_CHECK_EQ_INT(jint(r, "ended_us"), 5 * S1);
  json_decref(r);
  /* An interval that ends before it starts is refused by the schema. */
  SG_CHECK_EQ_INT(sg_store_device_interval_add(s, "cuda:0", SG_STORE_VALIDATE,
                                               0, 5 * S1, 4 * S1, &di, &err),
                  SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "table device_intervals");

  SG_CHECK_OK(sg_store_iteration_end(s, f.it, "early", 6 * S1, &err), err);
  r = row(s, "iterations", f.it);
  SG_CHECK_EQ_INT(jint(r, "number"), 1);
  SG_CHECK_STR_EQ(jstr(r, "end_reason"), "early");
  SG_CHECK_EQ_INT(jint(r, "ended_us"), 6 * S1);
  json_decref(r);
  SG_CHECK_EQ_INT(sg_store_iteration_end(s, f.it, "early", 7 * S1, &err),
                  SG_ESTATE);

  SG_CHECK_OK(sg_store_workflow_set_state(s, f.wf, SG_STORE_WF_DONE, 7 * S1,
                                          &err),
              err);
  r = row(s, "workflows", f.wf);
  SG_CHECK_STR_EQ(jstr(r, "state"), "done");
  SG_CHECK_EQ_INT(jint(r, "ended_us"), 7 * S1);
  json_decref(r);
  SG_CHECK_EQ_INT(sg_store_workflow_set_state(s, 99, SG_STORE_WF_DONE, 0,
                                              &err),
                  SG_ENOENT);

  SG_CHECK_OK(sg_store_run_end(s, 8 * S1, &err), err);
  r = row(s, "runs", f.run);
  SG_CHECK_EQ_INT(jint(r, "ended_us"), 8 * S1);
  json_decref(r);
  SG_CHECK_EQ_INT(sg_store_run_end(s, 9 * S1, &err), SG_ESTATE);
  sg_store_close(s);
  rm_dir(dir);
}

static void every_eval_status_is_stored(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 1);
  sg_err err;
  for (int st = 0; st < SG_EVAL__COUNT; st++) {
    char src[64];
    snprintf(src, sizeof src, "kernel %d", st);
    int64_t cand, ev;
    SG_CHECK_OK(sg_store_candidate_add(s, f.gen, src, 2, &cand, NULL, &err),
                err);
    SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_VALIDATE, 2, &ev, &err),
                err);
    if (st == SG_EVAL_OK)
      finish_ok(s, ev, 2.0, 3);
    else
      finish_status(s, ev, (sg_eval_status)st, 3);
    json_t *r = row(s, "evaluations", ev);
    SG_CHECK_STR_EQ(jstr(r, "status"), sg_eval_status_name((sg_eval_status)st));
    if (st != SG_EVAL_OK)
      SG_CHECK(json_is_null(json_object_get(r, "speedup")));
    json_decref(r);
  }
  sg_store_close(s);
  rm_dir(dir);
}

static void long_message_is_cut_at_a_character_boundary(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 1);
  sg_err err;
  int64_t cand, ev;
  SG_CHECK_OK(sg_store_candidate_add(s, f.gen, "k", 2, &cand, NULL, &err),
              err);
  SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_VALIDATE, 2, &ev, &err),
              err);
  /* "a" then two-byte characters: the cap falls inside one of them. */
  size_t n = SG_STORE_TEXT_MAX + 100;
  char *msg = sg_malloc(n + 1);
  msg[0] = 'a';
  for (size_t i = 1; i + 1 < n; i += 2) {
    msg[i] = (char)0xC3;
    msg[i + 1] = (char)0xA9; /* U+00E9 */
  }
  msg[n - 1] = 'z';
  msg[n] = '\0';
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = SG_EVAL_COMPILE_ERROR;
  r.message = msg;
  SG_CHECK_OK(sg_store_eval_finish(s, ev, &r, 3, &err), err);
  sg_eval_result_free(&r);
  json_t *row_e = row(s, "evaluations", ev);
  /* 'a' + whole characters: SG_STORE_TEXT_MAX - 1 bytes, valid UTF-8. */
  const char *m = jstr(row_e, "message");
  SG_CHECK_EQ_INT(strlen(m), SG_STORE_TEXT_MAX - 1);
  json_decref(row_e);
  sg_eval_result out;
  sg_eval_result_init(&out);
  bool found = false;
  SG_CHECK_OK(sg_store_eval_lookup(s, cand, SG_STORE_VALIDATE, &out, NULL,
                                   &found, &err), err);
  SG_CHECK(found);
  SG_CHECK_EQ_INT(strlen(out.message), SG_STORE_TEXT_MAX - 1);
  sg_eval_result_free(&out);
  sg_store_close(s);
  rm_dir(dir);
}

/* What a resumed run restores its history from: each candidate with its
 * generation's kind, prefix and whether it was an answer at the length cap
 * (so the resumed controller does not take it for a fork). */
static void workflow_candidates_say_which_were_answers_at_the_cap(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 1);
  sg_err err;
  int64_t answer_gen, a, b;
  sg_store_generation g = {.iteration_id = f.it, .kind = SG_STORE_GEN_SPEC, .parent_id = f.gen,
                           .prefix_bytes = 900, .answer_at_cap = true, .started_us = 3};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &answer_gen, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, f.gen, "kernel main", 4, &a, NULL, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, answer_gen, "kernel answer", 5, &b, NULL, &err), err);
  json_t *c = NULL;
  SG_CHECK_OK(sg_store_workflow_candidates_json(s, f.wf, &c, &err), err);
  SG_CHECK_EQ_INT(json_array_size(c), 2);
  json_t *m = json_array_get(c, 0), *x = json_array_get(c, 1);
  SG_CHECK_STR_EQ(jstr(m, "kind"), "main");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(m, "answer_at_cap")), 0);
  SG_CHECK_STR_EQ(jstr(x, "kind"), "spec");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(x, "prefix_bytes")), 900);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(x, "answer_at_cap")), 1);
  json_decref(c);
  sg_store_close(s);
  rm_dir(dir);
}

static void candidate_is_recorded_once_per_workflow(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 1);
  sg_err err;
  int64_t a = 0, b = 0, c = 0, d = 0;
  bool is_new = false;
  SG_CHECK_OK(sg_store_candidate_add(s, f.gen, "kernel A", 2, &a, &is_new,
                                     &err),
              err);
  SG_CHECK(is_new);
  /* The same source from another generation of the same workflow. */
  int64_t it2, gen2;
  SG_CHECK_OK(sg_store_iteration_begin(s, f.wf, 2, 3, &it2, &err), err);
  sg_store_generation g = {.iteration_id = it2, .kind = SG_STORE_GEN_SPEC,
                           .parent_id = f.gen, .started_us = 3};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &gen2, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, gen2, "kernel A", 4, &b, &is_new,
                                     &err),
              err);
  SG_CHECK(!is_new);
  SG_CHECK_EQ_INT(b, a);
  /* Line-end blanks and outer blank lines do not make another kernel
   * (sg_source_key); the first copy's text stays. */
  SG_CHECK_OK(sg_store_candidate_add(s, gen2, "\nkernel A \r\n\n", 4, &c, &is_new,
                                     &err),
              err);
  SG_CHECK(!is_new);
  SG_CHECK_EQ_INT(c, a);
  json_t *ra = row(s, "candidates", a);
  SG_CHECK_STR_EQ(jstr(ra, "source"), "kernel A");
  json_decref(ra);
  /* Any other byte different is another candidate. */
  SG_CHECK_OK(sg_store_candidate_add(s, gen2, "kernel  A", 4, &c, &is_new,
                                     &err),
              err);
  SG_CHECK(is_new);
  SG_CHECK(c != a);
  /* The same source in another workflow is that workflow's candidate. */
  sg_store_workflow wf = {.task = "cpu/other", .started_us = 1};
  int64_t wf2, it3, gen3;
  SG_CHECK_OK(sg_store_workflow_add(s, &wf, &wf2, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, wf2, 1, 5, &it3, &err), err);
  g = (sg_store_generation){.iteration_id = it3, .kind = SG_STORE_GEN_MAIN,
                            .started_us = 5};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &gen3, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, gen3, "kernel A", 6, &d, &is_new,
                                     &err),
              err);
  SG_CHECK(is_new);
  SG_CHECK(d != a);
  /* A generation that does not exist. */
  SG_CHECK_EQ_INT(sg_store_candidate_add(s, 4242, "kernel Z", 6, &d, NULL,
                                         &err),
                  SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "table candidates");
  sg_store_close(s);

  /* Exactly three rows, and the store still works after the failed call
   * (its transaction was rolled back). */
  s = open_ok(dir);
  json_t *r = NULL;
  SG_CHECK_EQ_INT(sg_store_row_json(s, "candidates", 4, &r, &err), SG_ENOENT);
  SG_CHECK_OK(sg_store_candidate_add(s, gen3, "kernel B", 7, &d, &is_new,
                                     &err),
              err);
  SG_CHECK(is_new);
  SG_CHECK_EQ_INT(d, 4);
  sg_store_close(s);
  rm_dir(dir);
}

/* A replay of the record's times takes a kernel's evaluations in the order
 * they were asked for: one evaluated again after an infrastructure error
 * has one per time (the error included, aborted ones aside; past the last,
 * the last), where the plain lookup gives the latest that says something
 * about the kernel. The record also names each generation's kernel and
 * says where it ends: an interrupted run's open iterations. */
static void a_record_replays_each_evaluation_in_turn(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  sg_err err;
  int64_t gen = setup_run(s, 1).gen, it = 0, cand, ev;
  SG_CHECK_OK(sg_store_candidate_add(s, gen, "k", 2 * S1, &cand, NULL, &err), err);
  /* asked for three times: an infrastructure error, a withdrawal, an outcome */
  const sg_eval_status got[] = {SG_EVAL_INFRA_ERROR, SG_EVAL_ABORTED, SG_EVAL_RUNTIME_ERROR};
  for (int i = 0; i < 3; i++) {
    SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_VALIDATE, (3 + 2 * i) * S1, &ev, &err),
                err);
    finish_status(s, ev, got[i], (4 + 2 * i) * S1);
  }
  sg_eval_result out;
  sg_eval_result_init(&out);
  bool found = false;
  int64_t dev = 0, end = 0;
  const sg_eval_status want[] = {SG_EVAL_INFRA_ERROR, SG_EVAL_RUNTIME_ERROR,
                                 SG_EVAL_RUNTIME_ERROR};
  const int64_t ends[] = {3 * S1, 7 * S1, 7 * S1}; /* from the run's start (1 s) */
  for (int n = 0; n < 3; n++) {
    SG_CHECK_OK(sg_store_eval_lookup_source_nth(s, "cpu/hinge_loss", "k", SG_STORE_VALIDATE, n,
                                                &out, &dev, &end, &found, &err),
                err);
    SG_CHECK(found);
    SG_CHECK_EQ_INT(out.status, want[n]);
    SG_CHECK_EQ_INT(end, ends[n]);
  }
  SG_CHECK_OK(sg_store_eval_lookup_source(s, "cpu/hinge_loss", "k", SG_STORE_VALIDATE, &out,
                                          &dev, &end, &found, &err),
              err);
  SG_CHECK(found);
  SG_CHECK_EQ_INT(out.status, SG_EVAL_RUNTIME_ERROR);
  SG_CHECK_OK(sg_store_eval_lookup_source_nth(s, "cpu/hinge_loss", "other", SG_STORE_VALIDATE,
                                              1, &out, &dev, &end, &found, &err),
              err);
  SG_CHECK(!found);
  sg_eval_result_free(&out);

  json_t *k = NULL, *e = NULL;
  SG_CHECK_OK(sg_store_gen_kernels_json(s, &k, &err), err);
  SG_CHECK_EQ_INT(json_array_size(k), 1);
  const json_t *k0 = json_array_get(k, 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k0, "task")), "cpu/hinge_loss");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k0, "kind")), "main");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k0, "iteration")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(k0, "k")), 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k0, "source")), "k");
  json_decref(k);
  SG_CHECK_OK(sg_store_record_end_json(s, &e, &err), err);
  SG_CHECK(json_is_true(json_object_get(e, "open")));
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(e, "last_us")), 7 * S1);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(e, "open_iterations")), 1);
  json_decref(e);
  SG_CHECK_OK(sg_store_row_json(s, "generations", gen, &e, &err), err);
  it = json_integer_value(json_object_get(e, "iteration_id"));
  json_decref(e);
  SG_CHECK_OK(sg_store_iteration_end(s, it, "fallback", 10 * S1, &err), err);
  SG_CHECK_OK(sg_store_run_end(s, 11 * S1, &err), err);
  SG_CHECK_OK(sg_store_record_end_json(s, &e, &err), err);
  SG_CHECK(!json_is_true(json_object_get(e, "open")));
  SG_CHECK_EQ_INT(json_array_size(json_object_get(e, "open_iterations")), 0);
  json_decref(e);
  sg_store_close(s);
  rm_dir(dir);
}

static void completed_evaluation_is_never_overwritten_and_is_found(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 1);
  sg_err err;
  int64_t cand, e1, e2, e3;
  SG_CHECK_OK(sg_store_candidate_add(s, f.gen, "k", 2, &cand, NULL, &err),
              err);

  sg_eval_result out;
  sg_eval_result_init(&out);
  bool found = true;
  int64_t got = 0;
  SG_CHECK_OK(sg_store_eval_lookup(s, cand, SG_STORE_VALIDATE, &out, &got,
                                   &found, &err),
              err);
  SG_CHECK(!found);
  bool submitted = true;
  SG_CHECK_OK(sg_store_eval_submitted(s, cand, SG_STORE_VALIDATE, &submitted, &err),
              err);
  SG_CHECK(!submitted);

  /* An aborted validation says nothing about the kernel: not "completed"
   * for lookup; but it was submitted (a resume tells a kernel accepted at
   * validation, never submitted for profiling, by that). */
  SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_VALIDATE, 2, &e1, &err),
              err);
  finish_status(s, e1, SG_EVAL_ABORTED, 3);
  SG_CHECK_OK(sg_store_eval_lookup(s, cand, SG_STORE_VALIDATE, &out, &got,
                                   &found, &err),
              err);
  SG_CHECK(!found);
  SG_CHECK_OK(sg_store_eval_submitted(s, cand, SG_STORE_VALIDATE, &submitted, &err),
              err);
  SG_CHECK(submitted);
  SG_CHECK_OK(sg_store_eval_submitted(s, cand, SG_STORE_PROFILE, &submitted, &err),
              err);
  SG_CHECK(!submitted);

  SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_VALIDATE, 4, &e2, &err),
              err);
  SG_CHECK_OK(sg_store_eval_start(s, e2, "cpu:1", 5, &err), err);
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = SG_EVAL_NUMERICAL_ERROR;
  r.message = sg_strdup("mismatch at index 7");
  r.max_abs_err = 0.5;
  r.first_mismatch = 7;
  SG_CHECK_OK(sg_store_eval_finish(s, e2, &r, 6, &err), err);
  sg_eval_result_free(&r);

  /* Finishing it again, or starting it again, is refused; the row keeps the
   * first result. */
  sg_eval_result_init(&r);
  r.status = SG_EVAL_OK;
  r.speedup = 9.0;
  SG_CHECK_EQ_INT(sg_store_eval_finish(s, e2, &r, 7, &err), SG_ESTATE);
  SG_CHECK_CONTAINS(err.msg, "never overwritten");
  sg_eval_result_free(&r);
  SG_CHECK_EQ_INT(sg_store_eval_start(s, e2, "cpu:0", 7, &err), SG_ESTATE);
  json_t *row_e2 = row(s, "evaluations", e2);
  SG_CHECK_STR_EQ(jstr(row_e2, "status"), "numerical_error");
  SG_CHECK_STR_EQ(jstr(row_e2, "device"), "cpu:1");
  json_decref(row_e2);

  SG_CHECK_OK(sg_store_eval_lookup(s, cand, SG_STORE_VALIDATE, &out, &got,
                                   &found, &err),
              err);
  SG_CHECK(found);
  SG_CHECK_EQ_INT(got, e2);
  SG_CHECK_EQ_INT(out.status, SG_EVAL_NUMERICAL_ERROR);
  SG_CHECK_STR_EQ(out.message, "mismatch at index 7");
  SG_CHECK_NEAR(out.max_abs_err, 0.5, 0);
  SG_CHECK_EQ_INT(out.first_mismatch, 7);

  /* The profile phase is looked up separately. */
  SG_CHECK_OK(sg_store_eval_lookup(s, cand, SG_STORE_PROFILE, &out, &got,
                                   &found, &err),
              err);
  SG_CHECK(!found);
  SG_CHECK_OK(sg_store_eval_queue(s, cand, SG_STORE_PROFILE, 8, &e3, &err),
              err);
  sg_eval_result_init(&r);
  r.status = SG_EVAL_OK;
  r.speedup = 1.25;
  r.ref_ms = 5.0;
  r.cand_ms = 4.0;
  r.profile_text = sg_strdup("compute bound");
  r.metrics = json_pack("{s:i}", "regs", 32);
  SG_CHECK_OK(sg_store_eval_finish(s, e3, &r, 9, &err), err);
  sg_eval_result_free(&r);
  sg_store_close(s);

  /* Found again after reopening, whole. */
  s = open_ok(dir);
  SG_CHECK_OK(sg_store_eval_lookup(s, cand, SG_STORE_PROFILE, &out, &got,
                                   &found, &err),
              err);
  SG_CHECK(found);
  SG_CHECK_EQ_INT(got, e3);
  SG_CHECK_EQ_INT(out.status, SG_EVAL_OK);
  SG_CHECK_NEAR(out.speedup, 1.25, 0);
  SG_CHECK_NEAR(out.cand_ms, 4.0, 0);
  SG_CHECK_STR_EQ(out.profile_text, "compute bound");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(out.metrics, "regs")),
                  32);
  sg_eval_result_free(&out);
  sg_store_close(s);
  rm_dir(dir);
}

/* A hand-built run whose summary is computed by hand in the comments. */
static void summary_matches_hand_computed_values(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  sg_err err;
  json_t *cfg = json_object();
  int64_t run;
  /* 2 devices, 10 s: pool time 20 s. */
  SG_CHECK_OK(sg_store_run_begin(s, cfg, 2, 1 * S1, &run, &err), err);
  json_decref(cfg);

  sg_store_workflow wa = {.task = "task_a", .started_us = 1 * S1};
  sg_store_workflow wb = {.task = "task_b", .started_us = 1 * S1};
  int64_t a, b;
  SG_CHECK_OK(sg_store_workflow_add(s, &wa, &a, &err), err);
  SG_CHECK_OK(sg_store_workflow_add(s, &wb, &b, &err), err);

  /* task_a: iteration 1 ends early, 2 by fallback, 3 stays open:
   * iterations 2, early_terminations 1. */
  int64_t a1, a2, a3;
  SG_CHECK_OK(sg_store_iteration_begin(s, a, 1, 1 * S1, &a1, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, a, 2, 4 * S1, &a2, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, a, 3, 7 * S1, &a3, &err), err);
  SG_CHECK_OK(sg_store_iteration_end(s, a1, "early", 4 * S1, &err), err);
  SG_CHECK_OK(sg_store_iteration_end(s, a2, "fallback", 7 * S1, &err), err);

  /* Generations of task_a: main in each iteration (3), spec: 2 in it 1, 1
   * in it 3 (3). Tokens (prompt/completion/cached):
   *   a1 main 100/1000/0, a1 spec 150/50/100 and 150/60/100,
   *   a2 main 200/2000/50, a3 main 300/10/0 (cancelled), a3 spec 0/0/0
   *   (never ended). */
  struct {
    int64_t it;
    sg_store_gen_kind kind;
    int64_t p, c, k;
    int end;
  } gens[] = {
      {a1, SG_STORE_GEN_MAIN, 100, 1000, 0, 1},
      {a1, SG_STORE_GEN_SPEC, 150, 50, 100, 1},
      {a1, SG_STORE_GEN_SPEC, 150, 60, 100, 1},
      {a2, SG_STORE_GEN_MAIN, 200, 2000, 50, 1},
      {a3, SG_STORE_GEN_MAIN, 300, 10, 0, 1},
      {a3, SG_STORE_GEN_SPEC, 0, 0, 0, 0},
  };
  int64_t gid[6];
  for (int i = 0; i < 6; i++) {
    sg_store_generation g = {.iteration_id = gens[i].it,
                             .kind = gens[i].kind,
                             .started_us = 2 * S1};
    SG_CHECK_OK(sg_store_generation_begin(s, &g, &gid[i], &err), err);
    if (gens[i].end)
      SG_CHECK_OK(sg_store_generation_end(
                      s, gid[i], gens[i].p, gens[i].c, gens[i].k, "stop",
                      i == 4 ? SG_STORE_GEN_CANCELLED : SG_STORE_GEN_COMPLETED,
                      3 * S1, &err),
                  err);
  }
  /* task_b: one iteration ending early, one main generation
   * 50/500/25; no valid kernel: best_speedup null. */
  int64_t b1, bg;
  SG_CHECK_OK(sg_store_iteration_begin(s, b, 1, 1 * S1, &b1, &err), err);
  sg_store_generation g = {.iteration_id = b1, .kind = SG_STORE_GEN_MAIN,
                           .started_us = 1 * S1};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &bg, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, bg, 50, 500, 25, "length",
                                      SG_STORE_GEN_COMPLETED, 5 * S1, &err),
              err);
  SG_CHECK_OK(sg_store_iteration_end(s, b1, "early", 6 * S1, &err), err);
  /* Tokens: prompt 100+150+150+200+300+50 = 950; completion
   * 1000+50+60+2000+10+500 = 3620; cached 100+100+50+25 = 275. */

  /* Candidates of task_a:
   *   c1: validate ok 1.5, profile ok twice (one kernel: counts once)
   *   c2: validate ok 2.5, profile ok
   *   c3: validate numerical_error
   *   c4: validate ok 3.0, profile aborted (not feedback)
   * best_speedup 3.0, profiling_feedback 2. */
  int64_t c[4], ev;
  const char *srcs[] = {"c1", "c2", "c3", "c4"};
  for (int i = 0; i < 4; i++)
    SG_CHECK_OK(sg_store_candidate_add(s, gid[1 + (i % 2)], srcs[i], 3 * S1,
                                       &c[i], NULL, &err),
                err);
  SG_CHECK_OK(sg_store_eval_queue(s, c[0], SG_STORE_VALIDATE, 3 * S1, &ev,
                                  &err), err);
  finish_ok(s, ev, 1.5, 4 * S1);
  for (int k = 0; k < 2; k++) {
    SG_CHECK_OK(sg_store_eval_queue(s, c[0], SG_STORE_PROFILE, 4 * S1, &ev,
                                    &err), err);
    finish_ok(s, ev, 1.5, 5 * S1);
  }
  SG_CHECK_OK(sg_store_eval_queue(s, c[1], SG_STORE_VALIDATE, 3 * S1, &ev,
                                  &err), err);
  finish_ok(s, ev, 2.5, 4 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c[1], SG_STORE_PROFILE, 4 * S1, &ev,
                                  &err), err);
  finish_ok(s, ev, 2.5, 5 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c[2], SG_STORE_VALIDATE, 3 * S1, &ev,
                                  &err), err);
  finish_status(s, ev, SG_EVAL_NUMERICAL_ERROR, 4 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c[3], SG_STORE_VALIDATE, 3 * S1, &ev,
                                  &err), err);
  finish_ok(s, ev, 3.0, 4 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c[3], SG_STORE_PROFILE, 4 * S1, &ev,
                                  &err), err);
  finish_status(s, ev, SG_EVAL_ABORTED, 5 * S1);
  /* Two evaluations of task_a not run (the same kernel's was in flight,
   * then stored) and another kind of decision: deduplicated 2. */
  static const char *const kinds[] = {"deduplicated", "deduplicated", "fork_trigger"};
  for (int i = 0; i < 3; i++) {
    json_t *d = json_pack("{s:I}", "candidate_id", (json_int_t)c[0]);
    int64_t did;
    SG_CHECK_OK(sg_store_decision_add(s, a, a1, kinds[i], d, 4 * S1, &did, &err), err);
    json_decref(d);
  }
  /* Mains task_a sent again after the model server cut them: two for one
   * cause, one for another. */
  static const char *const causes[] = {"the connection broke", "HTTP 5xx", "the connection broke"};
  for (int i = 0; i < 3; i++) {
    json_t *d = json_pack("{s:i, s:i, s:s}", "generation", 1, "restart", i + 1, "cause",
                          causes[i]);
    int64_t did;
    SG_CHECK_OK(sg_store_decision_add(s, a, a1, "main_restart", d, 4 * S1, &did, &err), err);
    json_decref(d);
  }
  /* A pending evaluation: none of the aggregates. */
  SG_CHECK_OK(sg_store_eval_queue(s, c[2], SG_STORE_PROFILE, 9 * S1, &ev,
                                  &err), err);

  /* Busy device time: validation 2 s + 3 s = 5 s, profiling 1 s + 1.5 s =
   * 2.5 s; over the 20 s pool: 0.25, 0.125, overall 0.375. */
  int64_t di;
  SG_CHECK_OK(sg_store_device_interval_add(s, "cuda:0", SG_STORE_VALIDATE, 0,
                                           2 * S1, 4 * S1, &di, &err), err);
  SG_CHECK_OK(sg_store_device_interval_add(s, "cuda:1", SG_STORE_VALIDATE, 0,
                                           5 * S1, 8 * S1, &di, &err), err);
  SG_CHECK_OK(sg_store_device_interval_add(s, "cuda:1", SG_STORE_PROFILE, 0,
                                           3 * S1, 4 * S1, &di, &err), err);
  SG_CHECK_OK(sg_store_device_interval_add(s, "cuda:0", SG_STORE_PROFILE, 0,
                                           8 * S1 + S1 / 2, 10 * S1, &di,
                                           &err), err);

  /* Before the run ends, e2e runs to the latest time recorded (10 s,
   * the last interval's end) from the start (1 s): 9 s. */
  json_t *sum = NULL;
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  SG_CHECK_NEAR(jnum(sum, "e2e_s"), 9.0, 1e-9);
  json_decref(sum);

  SG_CHECK_OK(sg_store_run_end(s, 11 * S1, &err), err);
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  SG_CHECK_NEAR(jnum(sum, "e2e_s"), 10.0, 1e-9);
  json_t *wfs = json_object_get(sum, "workflows");
  SG_CHECK_EQ_INT(json_array_size(wfs), 2);
  json_t *wa_j = json_array_get(wfs, 0), *wb_j = json_array_get(wfs, 1);
  SG_CHECK_STR_EQ(jstr(wa_j, "task"), "task_a");
  SG_CHECK_EQ_INT(jint(wa_j, "iterations"), 2);
  SG_CHECK_NEAR(jnum(wa_j, "best_speedup"), 3.0, 1e-12);
  SG_CHECK_EQ_INT(jint(wa_j, "profiling_feedback"), 2);
  SG_CHECK_EQ_INT(jint(wa_j, "early_terminations"), 1);
  SG_CHECK_EQ_INT(jint(wa_j, "generations_main"), 3);
  SG_CHECK_EQ_INT(jint(wa_j, "generations_spec"), 3);
  SG_CHECK_STR_EQ(jstr(wb_j, "task"), "task_b");
  SG_CHECK_EQ_INT(jint(wb_j, "iterations"), 1);
  SG_CHECK(json_is_null(json_object_get(wb_j, "best_speedup")));
  SG_CHECK_EQ_INT(jint(wb_j, "profiling_feedback"), 0);
  SG_CHECK_EQ_INT(jint(wb_j, "early_terminations"), 1);
  SG_CHECK_EQ_INT(jint(wb_j, "generations_main"), 1);
  SG_CHECK_EQ_INT(jint(wb_j, "generations_spec"), 0);
  SG_CHECK(json_is_null(json_object_get(wb_j, "best_speedup_kind")));
  SG_CHECK_EQ_INT(jint(wa_j, "deduplicated"), 2);
  SG_CHECK_EQ_INT(jint(wb_j, "deduplicated"), 0);
  SG_CHECK_EQ_INT(jint(wa_j, "main_restarts"), 3);
  SG_CHECK_EQ_INT(jint(wb_j, "main_restarts"), 0);
  SG_CHECK_EQ_INT(jint(wa_j, "answers_at_cap"), 0);
  SG_CHECK_EQ_INT(jint(wa_j, "answers_at_cap_tokens"), 0);
  SG_CHECK_EQ_INT(json_object_size(wa_j), 12); /* exactly the documented keys */
  /* why, most frequent cause first */
  json_t *mr = json_object_get(sum, "main_restarts");
  SG_CHECK_EQ_INT(jint(mr, "count"), 3);
  json_t *mc = json_object_get(mr, "causes");
  SG_CHECK_EQ_INT(json_array_size(mc), 2);
  SG_CHECK_STR_EQ(jstr(json_array_get(mc, 0), "cause"), "the connection broke");
  SG_CHECK_EQ_INT(jint(json_array_get(mc, 0), "count"), 2);
  SG_CHECK_STR_EQ(jstr(json_array_get(mc, 1), "cause"), "HTTP 5xx");
  SG_CHECK_EQ_INT(jint(json_array_get(mc, 1), "count"), 1);
  json_t *u = json_object_get(sum, "utilization");
  SG_CHECK_NEAR(jnum(u, "validation"), 0.25, 1e-12);
  SG_CHECK_NEAR(jnum(u, "profiling"), 0.125, 1e-12);
  SG_CHECK_NEAR(jnum(u, "overall"), 0.375, 1e-12);
  json_t *t = json_object_get(sum, "tokens");
  SG_CHECK_EQ_INT(jint(t, "prompt"), 950);
  SG_CHECK_EQ_INT(jint(t, "completion"), 3620);
  SG_CHECK_EQ_INT(jint(t, "cached"), 275);
  /* The paper's consumption: uncached prompt + completion. */
  SG_CHECK_EQ_INT(jint(t, "uncached"), 950 - 275);
  SG_CHECK_EQ_INT(jint(t, "consumption"), 950 - 275 + 3620);
  /* no reasoning in the configuration: the model's own (native) */
  SG_CHECK_STR_EQ(jstr(sum, "reasoning"), "native");
  SG_CHECK_EQ_INT(json_object_size(sum), 6);
  json_decref(sum);
  sg_store_close(s);
  rm_dir(dir);
}

/* One figure per kernel, by one rule, as the loop's progress lines and
 * best files take it: its profile's speedup when the profile measured one,
 * else its validation's. A kernel validated at 4.0 and profiled at 2.0 is a
 * 2.0 kernel (the summary used to take the larger of the two). */
static void summary_best_is_each_kernels_one_figure(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  sg_err err;
  json_t *cfg = json_object();
  int64_t run, w, it, g, ev;
  SG_CHECK_OK(sg_store_run_begin(s, cfg, 1, 1 * S1, &run, &err), err);
  json_decref(cfg);
  sg_store_workflow wa = {.task = "t", .started_us = 1 * S1};
  SG_CHECK_OK(sg_store_workflow_add(s, &wa, &w, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, w, 1, 1 * S1, &it, &err), err);
  sg_store_generation gen = {.iteration_id = it, .kind = SG_STORE_GEN_MAIN,
                             .started_us = 1 * S1};
  SG_CHECK_OK(sg_store_generation_begin(s, &gen, &g, &err), err);
  int64_t c1, c2;
  SG_CHECK_OK(sg_store_candidate_add(s, g, "k1", 2 * S1, &c1, NULL, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, g, "k2", 2 * S1, &c2, NULL, &err), err);
  /* k1: validated 4.0, profiled 2.0: a 2.0 kernel */
  SG_CHECK_OK(sg_store_eval_queue(s, c1, SG_STORE_VALIDATE, 2 * S1, &ev, &err), err);
  finish_ok(s, ev, 4.0, 3 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c1, SG_STORE_PROFILE, 3 * S1, &ev, &err), err);
  finish_ok(s, ev, 2.0, 4 * S1);
  json_t *sum = NULL;
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  json_t *wj = json_array_get(json_object_get(sum, "workflows"), 0);
  SG_CHECK_NEAR(jnum(wj, "best_speedup"), 2.0, 1e-12);
  SG_CHECK_STR_EQ(jstr(wj, "best_speedup_kind"), "profile");
  json_decref(sum);
  /* k2: validated 3.0, profiled without a speedup (hardware counters):
   * a 3.0 kernel, the best */
  SG_CHECK_OK(sg_store_eval_queue(s, c2, SG_STORE_VALIDATE, 4 * S1, &ev, &err), err);
  finish_ok(s, ev, 3.0, 5 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c2, SG_STORE_PROFILE, 5 * S1, &ev, &err), err);
  finish_ok(s, ev, NAN, 6 * S1);
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  wj = json_array_get(json_object_get(sum, "workflows"), 0);
  SG_CHECK_NEAR(jnum(wj, "best_speedup"), 3.0, 1e-12);
  /* a profile without a speedup leaves the validation's figure, named so */
  SG_CHECK_STR_EQ(jstr(wj, "best_speedup_kind"), "validate");
  json_decref(sum);
  json_t *best = NULL;
  SG_CHECK_OK(sg_store_workflow_best_json(s, w, &best, &err), err);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(best, "candidate_id")), c2);
  SG_CHECK_STR_EQ(jstr(best, "source"), "k2");
  SG_CHECK_NEAR(jnum(best, "speedup"), 3.0, 1e-12);
  json_decref(best);

  /* One source that came up twice is one kernel with one figure. k3 is
   * validated at 5.0; its first profile is withdrawn (its iteration ended),
   * a later kernel with the same source is profiled at 2.5: k3 is a 2.5
   * kernel, not a 5.0 one, and k2 stays the best. */
  int64_t c3, again;
  bool is_new = false;
  SG_CHECK_OK(sg_store_candidate_add(s, g, "k3", 6 * S1, &c3, NULL, &err), err);
  SG_CHECK_OK(sg_store_eval_queue(s, c3, SG_STORE_VALIDATE, 6 * S1, &ev, &err), err);
  finish_ok(s, ev, 5.0, 7 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c3, SG_STORE_PROFILE, 7 * S1, &ev, &err), err);
  finish_status(s, ev, SG_EVAL_ABORTED, 8 * S1);
  SG_CHECK_OK(sg_store_workflow_best_json(s, w, &best, &err), err);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(best, "candidate_id")), c3);
  json_decref(best);
  SG_CHECK_OK(sg_store_candidate_add(s, g, "k3", 9 * S1, &again, &is_new, &err), err);
  SG_CHECK(!is_new && again == c3);
  SG_CHECK_OK(sg_store_eval_queue(s, c3, SG_STORE_PROFILE, 9 * S1, &ev, &err), err);
  finish_ok(s, ev, 2.5, 10 * S1);
  SG_CHECK_OK(sg_store_workflow_best_json(s, w, &best, &err), err);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(best, "candidate_id")), c2);
  SG_CHECK_NEAR(jnum(best, "speedup"), 3.0, 1e-12);
  json_decref(best);
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  wj = json_array_get(json_object_get(sum, "workflows"), 0);
  SG_CHECK_NEAR(jnum(wj, "best_speedup"), 3.0, 1e-12);
  json_decref(sum);

  /* A tie keeps the earlier kernel; a workflow with nothing passed has none. */
  int64_t c4;
  SG_CHECK_OK(sg_store_candidate_add(s, g, "k4", 11 * S1, &c4, NULL, &err), err);
  SG_CHECK_OK(sg_store_eval_queue(s, c4, SG_STORE_VALIDATE, 11 * S1, &ev, &err), err);
  finish_ok(s, ev, 3.0, 12 * S1);
  SG_CHECK_OK(sg_store_workflow_best_json(s, w, &best, &err), err);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(best, "candidate_id")), c2);
  json_decref(best);
  sg_store_workflow wb = {.task = "u", .started_us = 12 * S1};
  int64_t w2;
  SG_CHECK_OK(sg_store_workflow_add(s, &wb, &w2, &err), err);
  best = json_true();
  SG_CHECK_OK(sg_store_workflow_best_json(s, w2, &best, &err), err);
  SG_CHECK(best == NULL);
  sg_store_close(s);
  rm_dir(dir);
}

static void summary_and_run_begin_need_the_right_state(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  sg_err err;
  json_t *sum = NULL;
  SG_CHECK_EQ_INT(sg_store_summary_json(s, &sum, &err), SG_ESTATE);
  SG_CHECK(sum == NULL);
  sg_store_workflow wf = {.task = "t"};
  int64_t id;
  SG_CHECK_EQ_INT(sg_store_workflow_add(s, &wf, &id, &err), SG_ESTATE);
  SG_CHECK_EQ_INT(sg_store_run_end(s, 5, &err), SG_ESTATE);
  json_t *arr = json_array();
  SG_CHECK_EQ_INT(sg_store_run_begin(s, arr, 1, 0, &id, &err), SG_EINVAL);
  json_decref(arr);
  setup_run(s, 1);
  json_t *cfg = json_object();
  SG_CHECK_EQ_INT(sg_store_run_begin(s, cfg, 1, 0, &id, &err), SG_ESTATE);
  SG_CHECK_CONTAINS(err.msg, "already holds a run");
  json_decref(cfg);
  sg_store_close(s);
  rm_dir(dir);
}

static void reopening_continues_the_run_and_resume_lists_open_work(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 2);
  sg_err err;
  int64_t fork, c1, c2, e_done, e_pending, e_aborted;
  sg_store_generation g = {.iteration_id = f.it, .kind = SG_STORE_GEN_SPEC,
                           .parent_id = f.gen, .started_us = 2 * S1};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &fork, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, fork, 10, 20, 5, "stop",
                                      SG_STORE_GEN_COMPLETED, 3 * S1, &err),
              err);
  SG_CHECK_OK(sg_store_candidate_add(s, fork, "k1", 3 * S1, &c1, NULL, &err),
              err);
  SG_CHECK_OK(sg_store_candidate_add(s, fork, "k2", 3 * S1, &c2, NULL, &err),
              err);
  SG_CHECK_OK(sg_store_eval_queue(s, c1, SG_STORE_VALIDATE, 3 * S1, &e_done,
                                  &err), err);
  finish_ok(s, e_done, 1.1, 4 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c2, SG_STORE_VALIDATE, 3 * S1,
                                  &e_aborted, &err), err);
  finish_status(s, e_aborted, SG_EVAL_ABORTED, 4 * S1);
  SG_CHECK_OK(sg_store_eval_queue(s, c1, SG_STORE_PROFILE, 4 * S1,
                                  &e_pending, &err), err);
  SG_CHECK_OK(sg_store_eval_start(s, e_pending, "cuda:1", 5 * S1, &err), err);
  sg_store_close(s); /* the "crash": the run never ended */

  s = open_ok(dir);
  json_t *res = NULL;
  SG_CHECK_OK(sg_store_resume_json(s, &res, &err), err);
  json_t *run = json_object_get(res, "run");
  SG_CHECK_EQ_INT(jint(run, "id"), f.run);
  SG_CHECK_EQ_INT(jint(run, "devices"), 2);
  SG_CHECK(json_is_null(json_object_get(run, "ended_us")));
  SG_CHECK_STR_EQ(jstr(json_object_get(run, "config"), "search"), "refine");
  json_t *wfs = json_object_get(res, "workflows");
  SG_CHECK_EQ_INT(json_array_size(wfs), 1);
  json_t *wf = json_array_get(wfs, 0);
  SG_CHECK_EQ_INT(jint(wf, "id"), f.wf);
  SG_CHECK_STR_EQ(jstr(wf, "state"), "running");
  SG_CHECK_EQ_INT(jint(wf, "budget_iterations"), 10);
  SG_CHECK_EQ_INT(jint(wf, "iterations_ended"), 0);
  SG_CHECK_EQ_INT(jint(wf, "next_iteration"), 2);
  json_t *oi = json_object_get(wf, "open_iteration");
  SG_CHECK_EQ_INT(jint(oi, "id"), f.it);
  SG_CHECK_EQ_INT(jint(oi, "number"), 1);
  json_t *og = json_object_get(wf, "open_generations");
  SG_CHECK_EQ_INT(json_array_size(og), 1); /* the main one */
  SG_CHECK_EQ_INT(json_integer_value(json_array_get(og, 0)), f.gen);
  json_t *pend = json_object_get(wf, "pending_evaluations");
  SG_CHECK_EQ_INT(json_array_size(pend), 1);
  SG_CHECK_EQ_INT(jint(json_array_get(pend, 0), "id"), e_pending);
  SG_CHECK_EQ_INT(jint(json_array_get(pend, 0), "candidate_id"), c1);
  SG_CHECK_STR_EQ(jstr(json_array_get(pend, 0), "phase"), "profile");
  json_t *done = json_object_get(wf, "completed_evaluations");
  SG_CHECK_EQ_INT(json_array_size(done), 2);
  SG_CHECK_EQ_INT(jint(json_array_get(done, 0), "id"), e_done);
  SG_CHECK_STR_EQ(jstr(json_array_get(done, 0), "status"), "ok");
  SG_CHECK_EQ_INT(jint(json_array_get(done, 1), "id"), e_aborted);
  SG_CHECK_STR_EQ(jstr(json_array_get(done, 1), "status"), "aborted");
  json_decref(res);

  /* Continue: the old ids stay, new ones follow, duplicates still found. */
  bool is_new = true;
  int64_t again;
  SG_CHECK_OK(sg_store_candidate_add(s, fork, "k1", 6 * S1, &again, &is_new,
                                     &err), err);
  SG_CHECK(!is_new);
  SG_CHECK_EQ_INT(again, c1);
  finish_ok(s, e_pending, 1.1, 6 * S1);
  SG_CHECK_OK(sg_store_iteration_end(s, f.it, "fallback", 6 * S1, &err), err);
  int64_t it2;
  SG_CHECK_OK(sg_store_iteration_begin(s, f.wf, 2, 6 * S1, &it2, &err), err);
  SG_CHECK(it2 > f.it);
  SG_CHECK_OK(sg_store_resume_json(s, &res, &err), err);
  wf = json_array_get(json_object_get(res, "workflows"), 0);
  SG_CHECK_EQ_INT(jint(wf, "iterations_ended"), 1);
  SG_CHECK_EQ_INT(jint(wf, "next_iteration"), 3);
  SG_CHECK_EQ_INT(jint(json_object_get(wf, "open_iteration"), "number"), 2);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(wf, "pending_evaluations")),
                  0);
  SG_CHECK_EQ_INT(
      json_array_size(json_object_get(wf, "completed_evaluations")), 3);
  json_decref(res);
  sg_store_close(s);
  rm_dir(dir);
}

static void resume_of_an_empty_store_has_no_run(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  sg_err err;
  json_t *res = NULL;
  SG_CHECK_OK(sg_store_resume_json(s, &res, &err), err);
  SG_CHECK(json_is_null(json_object_get(res, "run")));
  SG_CHECK_EQ_INT(json_array_size(json_object_get(res, "workflows")), 0);
  json_decref(res);
  sg_store_close(s);
  rm_dir(dir);
}

/* What the killed child reports after each round of calls returned. */
typedef struct crash_rec {
  int64_t cand, eval, dec;
} crash_rec;

static void crash_child(const char *dir, int64_t gen, int64_t wf, int round,
                        int fd) {
  sg_err err;
  sg_store *s = NULL;
  if (sg_store_open(dir, &s, &err) != 0)
    _exit(3);
  for (int i = 0; i < 1000000; i++) {
    char src[64];
    snprintf(src, sizeof src, "kernel round %d number %d", round, i);
    crash_rec r;
    int64_t t = (int64_t)round * 1000000 + i;
    sg_eval_result res;
    sg_eval_result_init(&res);
    res.status = SG_EVAL_OK;
    res.speedup = 1.0 + i % 7;
    res.ref_ms = 1.0;
    res.cand_ms = 1.0 / res.speedup;
    if (sg_store_candidate_add(s, gen, src, t, &r.cand, NULL, &err) ||
        sg_store_eval_queue(s, r.cand, SG_STORE_VALIDATE, t, &r.eval, &err) ||
        sg_store_eval_start(s, r.eval, "cpu:0", t, &err) ||
        sg_store_eval_finish(s, r.eval, &res, t + 1, &err) ||
        sg_store_decision_add(s, wf, 0, "crash_test", NULL, t, &r.dec, &err))
      _exit(4);
    sg_eval_result_free(&res);
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
      _exit(5);
  }
  _exit(6); /* never reached before the kill */
}

static void sigkill_mid_run_keeps_every_returned_record(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  fixture f = setup_run(s, 1);
  sg_store_close(s);

  enum { ROUNDS = 3, MIN_RECS = 300, CAP = 200000 };
  crash_rec *recs = sg_malloc(sizeof *recs * CAP);
  size_t n = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int fds[2];
    SG_CHECK(pipe(fds) == 0);
    fflush(stdout);
    pid_t pid = fork();
    SG_CHECK(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      crash_child(dir, f.gen, f.wf, round, fds[1]);
    }
    close(fds[1]);
    /* Read reports until MIN_RECS arrived this round, then kill it in the
     * middle of whatever call it is in, then read what it wrote before. */
    size_t start = n;
    int killed = 0;
    for (;;) {
      crash_rec r;
      size_t got = 0;
      while (got < sizeof r) {
        ssize_t k = read(fds[0], (char *)&r + got, sizeof r - got);
        if (k < 0 && errno == EINTR)
          continue;
        if (k <= 0)
          break;
        got += (size_t)k;
      }
      if (got < sizeof r)
        break; /* EOF: the child is dead */
      SG_CHECK(n < CAP);
      recs[n++] = r;
      if (!killed && n - start >= MIN_RECS) {
        SG_CHECK(kill(pid, SIGKILL) == 0);
        killed = 1;
      }
    }
    close(fds[0]);
    int st;
    SG_CHECK(waitpid(pid, &st, 0) == pid);
    SG_CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                 "round %d: child ended on its own (status %d)", round, st);
    SG_CHECK(n - start >= MIN_RECS);
  }

  /* The database opens, is intact, and holds every reported record. */
  s = open_ok(dir);
  sg_err err;
  for (size_t i = 0; i < n; i++) {
    json_t *c = row(s, "candidates", recs[i].cand);
    SG_CHECK_EQ_INT(jint(c, "workflow_id"), f.wf);
    json_decref(c);
    json_t *e = row(s, "evaluations", recs[i].eval);
    SG_CHECK_EQ_INT(jint(e, "candidate_id"), recs[i].cand);
    SG_CHECK_STR_EQ(jstr(e, "status"), "ok");
    json_decref(e);
    json_t *d = row(s, "decisions", recs[i].dec);
    SG_CHECK_STR_EQ(jstr(d, "kind"), "crash_test");
    json_decref(d);
  }
  /* And resume never offers a completed evaluation again. */
  sg_eval_result out;
  sg_eval_result_init(&out);
  bool found = false;
  SG_CHECK_OK(sg_store_eval_lookup(s, recs[n - 1].cand, SG_STORE_VALIDATE,
                                   &out, NULL, &found, &err), err);
  SG_CHECK(found);
  SG_CHECK_EQ_INT(out.status, SG_EVAL_OK);
  sg_eval_result_free(&out);
  json_t *res = NULL;
  SG_CHECK_OK(sg_store_resume_json(s, &res, &err), err);
  json_t *wf = json_array_get(json_object_get(res, "workflows"), 0);
  json_t *done = json_object_get(wf, "completed_evaluations");
  SG_CHECK(json_array_size(done) >= n);
  /* At most one evaluation per round was cut between queue and finish. */
  SG_CHECK(json_array_size(json_object_get(wf, "pending_evaluations")) <=
           ROUNDS);
  json_decref(res);
  sg_store_close(s);

  char *path = sg_asprintf("%s/run.db", dir);
  sqlite3 *db = NULL;
  SG_CHECK(sqlite3_open(path, &db) == SQLITE_OK);
  sqlite3_stmt *st = NULL;
  SG_CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) ==
           SQLITE_OK);
  SG_CHECK(sqlite3_step(st) == SQLITE_ROW);
  SG_CHECK_STR_EQ((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
  free(path);
  free(recs);
  rm_dir(dir);
}

static void bad_paths_give_errors_naming_the_path(void) {
  char *dir = tmp_dir();
  sg_err err;
  sg_err_clear(&err);
  sg_store *s = (sg_store *)1;
  /* A run directory below a regular file. */
  char *file = sg_asprintf("%s/plain", dir);
  SG_CHECK_OK(sg_file_write(file, "x", 1, &err), err);
  char *below = sg_asprintf("%s/run", file);
  int rc = sg_store_open(below, &s, &err);
  SG_CHECK(rc < 0);
  SG_CHECK(s == NULL);
  SG_CHECK_CONTAINS(err.msg, file);
  /* The run directory is itself a regular file. */
  rc = sg_store_open(file, &s, &err);
  SG_CHECK(rc < 0);
  SG_CHECK_CONTAINS(err.msg, file);
  /* run.db is a directory. */
  char *sub = sg_asprintf("%s/d", dir);
  char *dbdir = sg_asprintf("%s/run.db", sub);
  SG_CHECK_OK(sg_mkdir_p(dbdir, &err), err);
  rc = sg_store_open(sub, &s, &err);
  SG_CHECK(rc < 0);
  SG_CHECK_CONTAINS(err.msg, dbdir);
  SG_CHECK_EQ_INT(sg_store_open("", &s, &err), SG_EINVAL);
  free(file);
  free(below);
  free(sub);
  free(dbdir);
  rm_dir(dir);
}

static void corrupt_file_gives_an_error_naming_the_file(void) {
  char *dir = tmp_dir();
  sg_err err;
  sg_err_clear(&err);
  char *path = sg_asprintf("%s/run.db", dir);
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (char)(i * 131 + 7);
  SG_CHECK_OK(sg_file_write(path, junk, sizeof junk, &err), err);
  sg_store *s = (sg_store *)1;
  int rc = sg_store_open(dir, &s, &err);
  SG_CHECK_EQ_INT(rc, SG_EPARSE);
  SG_CHECK(s == NULL);
  SG_CHECK_CONTAINS(err.msg, path);
  SG_CHECK_CONTAINS(err.msg, "not a database");

  /* A real database whose pages after the header were overwritten. */
  SG_CHECK_OK(sg_rm_rf(path, &err), err);
  s = open_ok(dir);
  setup_run(s, 1);
  sg_store_close(s);
  FILE *fp = fopen(path, "r+b");
  SG_CHECK(fp != NULL);
  SG_CHECK(fseek(fp, 0, SEEK_END) == 0);
  long size = ftell(fp);
  SG_CHECK(size > 4096);
  SG_CHECK(fseek(fp, 100, SEEK_SET) == 0); /* keep the 100-byte header */
  SG_CHECK(fwrite(junk, 1, sizeof junk, fp) == sizeof junk);
  fclose(fp);
  rc = sg_store_open(dir, &s, &err);
  SG_CHECK_MSG(rc == SG_EPARSE, "rc %d: %s", rc, err.msg);
  SG_CHECK_CONTAINS(err.msg, path);
  free(path);
  rm_dir(dir);
}

static void empty_file_is_a_new_store(void) {
  char *dir = tmp_dir();
  char *path = sg_asprintf("%s/run.db", dir);
  sg_err err;
  SG_CHECK_OK(sg_file_write(path, "", 0, &err), err);
  sg_store *s = open_ok(dir);
  SG_CHECK_EQ_INT(sg_store_schema_version(s), SG_STORE_SCHEMA_VERSION);
  setup_run(s, 1);
  sg_store_close(s);
  free(path);
  rm_dir(dir);
}

/* WAL: a second connection (a report, the dashboard) reads what the writer
 * committed while the writer keeps the store open, and may write too. */
static void second_connection_sees_committed_records(void) {
  char *dir = tmp_dir();
  sg_store *w = open_ok(dir);
  fixture f = setup_run(w, 1);
  sg_store *r = open_ok(dir);
  sg_err err;
  int64_t dec;
  SG_CHECK_OK(sg_store_decision_add(w, f.wf, f.it, "fork", NULL, 5, &dec,
                                    &err), err);
  json_t *j = row(r, "decisions", dec);
  SG_CHECK_STR_EQ(jstr(j, "kind"), "fork");
  json_decref(j);
  json_t *sum = NULL;
  SG_CHECK_OK(sg_store_summary_json(r, &sum, &err), err);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(sum, "workflows")), 1);
  json_decref(sum);
  SG_CHECK_OK(sg_store_decision_add(r, f.wf, 0, "note", NULL, 6, &dec, &err),
              err);
  j = row(w, "decisions", dec);
  SG_CHECK_STR_EQ(jstr(j, "kind"), "note");
  json_decref(j);
  sg_store_close(r);
  sg_store_close(w);
  rm_dir(dir);
}

static void newer_schema_is_refused(void) {
  char *dir = tmp_dir();
  sg_store *s = open_ok(dir);
  sg_store_close(s);
  char *path = sg_asprintf("%s/run.db", dir);
  sqlite3 *db = NULL;
  SG_CHECK(sqlite3_open(path, &db) == SQLITE_OK);
  SG_CHECK(sqlite3_exec(db, "UPDATE schema_version SET version = 99", NULL,
                        NULL, NULL) == SQLITE_OK);
  sqlite3_close(db);
  sg_err err;
  int rc = sg_store_open(dir, &s, &err);
  SG_CHECK_EQ_INT(rc, SG_EUNSUPPORTED);
  SG_CHECK_CONTAINS(err.msg, path);
  SG_CHECK_CONTAINS(err.msg, "schema version 99");
  free(path);
  rm_dir(dir);
}

/* A version-2 store (a recorded run of the test server) opens at the
 * current version: its generations gain answer_at_cap, all 0, and its
 * summary counts its forks as before. */
static void version_2_store_is_migrated(void) {
  char *dir = tmp_dir();
  char *path = sg_asprintf("%s/run.db", dir);
  char *buf = NULL;
  size_t len = 0;
  sg_err err;
  SG_CHECK_OK(sg_file_read(SG_SOURCE_ROOT "/tests/runtime/data/testserver_spec_on/run.db",
                           (size_t)64 << 20, &buf, &len, &err), err);
  SG_CHECK_OK(sg_file_write(path, buf, len, &err), err);
  free(buf);
  sg_store *s = open_ok(dir);
  SG_CHECK_EQ_INT(sg_store_schema_version(s), SG_STORE_SCHEMA_VERSION);
  json_t *sum = NULL;
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  json_t *w = json_array_get(json_object_get(sum, "workflows"), 0);
  SG_CHECK(jint(w, "generations_spec") > 0);
  SG_CHECK_EQ_INT(jint(w, "answers_at_cap"), 0);
  json_decref(sum);
  sg_store_close(s);
  free(path);
  rm_dir(dir);
}

SG_TEST_MAIN(SG_TEST(open_creates_wal_database_with_schema),
             SG_TEST(foreign_keys_are_enforced_and_errors_name_table_and_sql),
             SG_TEST(every_record_type_round_trips),
             SG_TEST(every_eval_status_is_stored),
             SG_TEST(long_message_is_cut_at_a_character_boundary),
             SG_TEST(candidate_is_recorded_once_per_workflow),
             SG_TEST(workflow_candidates_say_which_were_answers_at_the_cap),
             SG_TEST(completed_evaluation_is_never_overwritten_and_is_found),
             SG_TEST(a_record_replays_each_evaluation_in_turn),
             SG_TEST(summary_matches_hand_computed_values),
             SG_TEST(summary_best_is_each_kernels_one_figure),
             SG_TEST(summary_and_run_begin_need_the_right_state),
             SG_TEST(reopening_continues_the_run_and_resume_lists_open_work),
             SG_TEST(resume_of_an_empty_store_has_no_run),
             SG_TEST(sigkill_mid_run_keeps_every_returned_record),
             SG_TEST(bad_paths_give_errors_naming_the_path),
             SG_TEST(corrupt_file_gives_an_error_naming_the_file),
             SG_TEST(empty_file_is_a_new_store),
             SG_TEST(second_connection_sees_committed_records),
             SG_TEST(newer_schema_is_refused),
             SG_TEST(version_2_store_is_migrated))
