/* sg_store_read.c: the run store's reads as JSON (sg_store.h): one row, what
 * a resume needs, the summary, a workflow's candidates and token usage. Each
 * is a query over the tables sg_store.c writes; none changes them. */
#include "store/sg_store_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_tokens.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- reading ----------------------------------------------------------- */

static const char *const row_tables[] = {
    "runs",        "workflows",   "iterations", "generations",
    "candidates",  "evaluations", "decisions",  "device_intervals"};

/* The current row of st as a JSON object keyed by column name. */
static json_t *row_to_json(sqlite3_stmt *st) {
  json_t *o = json_object();
  int n = sqlite3_column_count(st);
  for (int i = 0; i < n; i++) {
    const char *name = sqlite3_column_name(st, i);
    json_t *v;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
      v = json_integer(sqlite3_column_int64(st, i));
      break;
    case SQLITE_FLOAT:
      v = json_real(sqlite3_column_double(st, i));
      break;
    case SQLITE_NULL:
      v = json_null();
      break;
    default: {
      const char *t = (const char *)sqlite3_column_text(st, i);
      size_t len = strlen(name);
      v = NULL;
      if (len > 5 && strcmp(name + len - 5, "_json") == 0)
        v = json_loads(t, JSON_DECODE_ANY, NULL);
      if (v == NULL)
        v = json_string(t);
      if (v == NULL) /* not UTF-8: keep the bytes' length at least visible */
        v = json_stringn_nocheck(t, (size_t)sqlite3_column_bytes(st, i));
    }
    }
    json_object_set_new(o, name, v);
  }
  return o;
}

/* Runs a query (no rows expected to be huge) and calls fn for each row. */
typedef int (*row_fn)(void *ud, sqlite3_stmt *st, sg_err *err);

static int query_each(sg_store *s, const char *table, const char *sql,
                      int64_t arg, row_fn fn, void *ud, sg_err *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return sg_store_db_fail(s, table, sql, err);
  if (sqlite3_bind_parameter_count(st) >= 1)
    sqlite3_bind_int64(st, 1, arg);
  int rc = 0, src;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    rc = fn(ud, st, err);
    if (rc)
      break;
  }
  if (rc == 0 && src != SQLITE_DONE)
    rc = sg_store_db_fail(s, table, sql, err);
  sqlite3_finalize(st);
  return rc;
}

static int collect_first(void *ud, sqlite3_stmt *st, sg_err *err) {
  (void)err;
  json_t **out = ud;
  if (*out == NULL)
    *out = row_to_json(st);
  return 0;
}

static int collect_array(void *ud, sqlite3_stmt *st, sg_err *err) {
  (void)err;
  json_array_append_new((json_t *)ud, row_to_json(st));
  return 0;
}

static int collect_ids(void *ud, sqlite3_stmt *st, sg_err *err) {
  (void)err;
  json_array_append_new((json_t *)ud,
                        json_integer(sqlite3_column_int64(st, 0)));
  return 0;
}

int sg_store_row_json(sg_store *s, const char *table, int64_t id,
                      json_t **out, sg_err *err) {
  *out = NULL;
  const char *known = NULL;
  for (size_t i = 0; i < sizeof row_tables / sizeof row_tables[0]; i++)
    if (table && strcmp(table, row_tables[i]) == 0)
      known = row_tables[i];
  if (known == NULL)
    return sg_err_set(err, SG_EINVAL, "%s: no table named '%s'", s->path,
                      table ? table : "(null)");
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE id = ?1", known);
  int rc = query_each(s, known, sql, id, collect_first, out, err);
  if (rc == 0 && *out == NULL)
    rc = sg_err_set(err, SG_ENOENT, "%s: table %s: no row with id %" PRId64,
                    s->path, known, id);
  return rc;
}

typedef struct resume_ctx {
  sg_store *s;
  json_t *workflows;
} resume_ctx;

static int resume_workflow(void *ud, sqlite3_stmt *st, sg_err *err) {
  resume_ctx *c = ud;
  json_t *wf = row_to_json(st);
  json_array_append_new(c->workflows, wf);
  int64_t id = json_integer_value(json_object_get(wf, "id"));
  int rc;

  /* Every open iteration, by number: with next-ahead the next one is
   * opened before the current one ends. The latest is "open_iteration". */
  json_t *open_rows = json_array();
  rc = query_each(c->s, "iterations",
                  "SELECT id, number, started_us FROM iterations "
                  "WHERE workflow_id = ?1 AND ended_us IS NULL ORDER BY number",
                  id, collect_array, open_rows, err);
  size_t n_open = json_array_size(open_rows);
  json_t *open_ids = json_array(), *open_numbers = json_array();
  for (size_t i = 0; i < n_open; i++) {
    json_array_append(open_ids, json_object_get(json_array_get(open_rows, i), "id"));
    json_array_append(open_numbers,
                      json_object_get(json_array_get(open_rows, i), "number"));
  }
  json_object_set_new(wf, "open_iterations", open_ids);
  json_object_set_new(wf, "open_iteration_numbers", open_numbers);
  json_object_set(wf, "open_iteration",
                  n_open ? json_array_get(open_rows, n_open - 1) : json_null());
  json_decref(open_rows);
  if (rc)
    return rc;

  json_t *counts = NULL;
  rc = query_each(c->s, "iterations",
                  "SELECT count(ended_us) AS iterations_ended, "
                  "coalesce(max(number), 0) + 1 AS next_iteration "
                  "FROM iterations WHERE workflow_id = ?1",
                  id, collect_first, &counts, err);
  if (rc)
    return rc;
  json_object_update(wf, counts);
  json_decref(counts);

  json_t *gens = json_array();
  json_object_set_new(wf, "open_generations", gens);
  rc = query_each(c->s, "generations",
                  "SELECT id FROM generations WHERE workflow_id = ?1 "
                  "AND ended_us IS NULL ORDER BY id",
                  id, collect_ids, gens, err);
  if (rc)
    return rc;

  json_t *pending = json_array();
  json_object_set_new(wf, "pending_evaluations", pending);
  rc = query_each(c->s, "evaluations",
                  "SELECT e.id, e.candidate_id, e.phase FROM evaluations e "
                  "JOIN candidates c ON c.id = e.candidate_id "
                  "WHERE c.workflow_id = ?1 AND e.status IS NULL "
                  "ORDER BY e.id",
                  id, collect_array, pending, err);
  if (rc)
    return rc;

  json_t *done = json_array();
  json_object_set_new(wf, "completed_evaluations", done);
  return query_each(c->s, "evaluations",
                    "SELECT e.id, e.candidate_id, e.phase, e.status "
                    "FROM evaluations e "
                    "JOIN candidates c ON c.id = e.candidate_id "
                    "WHERE c.workflow_id = ?1 AND e.status IS NOT NULL "
                    "ORDER BY e.id",
                    id, collect_array, done, err);
}

int sg_store_resume_json(sg_store *s, json_t **out, sg_err *err) {
  *out = NULL;
  json_t *run = NULL;
  int rc = query_each(s, "runs",
                      "SELECT id, config_json AS config, devices, started_us, "
                      "ended_us FROM runs ORDER BY id LIMIT 1",
                      0, collect_first, &run, err);
  if (rc)
    return rc;
  json_t *o = json_object();
  json_object_set_new(o, "run", run ? run : json_null());
  /* row_to_json parses *_json columns; "config" is aliased, parse it here. */
  if (run) {
    json_t *cfg = json_object_get(run, "config");
    if (json_is_string(cfg))
      json_object_set_new(run, "config",
                          json_loads(json_string_value(cfg), 0, NULL));
  }
  resume_ctx c = {s, json_array()};
  json_object_set_new(o, "workflows", c.workflows);
  rc = query_each(s, "workflows",
                  "SELECT id, task, state, budget_iterations, budget_wall_s, "
                  "budget_tokens, started_us, ended_us FROM workflows "
                  "ORDER BY id",
                  0, resume_workflow, &c, err);
  if (rc) {
    json_decref(o);
    return rc;
  }
  *out = o;
  return 0;
}

static int summary_workflow(void *ud, sqlite3_stmt *st, sg_err *err) {
  (void)err;
  json_t *o = row_to_json(st);
  /* best_speedup is REAL or NULL; an integer-valued REAL stays a real. */
  json_array_append_new((json_t *)ud, o);
  return 0;
}

/* Adds "uncached" and "consumption" (common/sg_tokens.h) to a tokens
 * object that has "prompt", "completion" and "cached". */
static void add_token_consumption(json_t *tok) {
  uint64_t prompt = (uint64_t)json_integer_value(json_object_get(tok, "prompt"));
  uint64_t cached = (uint64_t)json_integer_value(json_object_get(tok, "cached"));
  uint64_t completion =
      (uint64_t)json_integer_value(json_object_get(tok, "completion"));
  json_object_set_new(tok, "uncached",
                      json_integer((json_int_t)sg_tokens_uncached(prompt, cached)));
  json_object_set_new(tok, "consumption",
                      json_integer((json_int_t)sg_tokens_consumption(
                          prompt, cached, completion)));
}

/* Longer than 80 lines on purpose: most of it is the SQL of the summary,
 * one query per part, read next to the keys it fills. */
int sg_store_summary_json(sg_store *s, json_t **out, sg_err *err) {
  *out = NULL;
  /* e2e: the run's end, or the latest time recorded anywhere. */
  json_t *times = NULL;
  int rc = query_each(
      s, "runs",
      "SELECT r.devices, r.started_us,"
      " coalesce(json_extract(r.config_json, '$.reasoning'), 'native') AS reasoning,"
      " coalesce(r.ended_us, max("
      " r.started_us,"
      " coalesce((SELECT max(max(started_us, coalesce(ended_us, 0))) "
      "FROM workflows), 0),"
      " coalesce((SELECT max(max(started_us, coalesce(ended_us, 0))) "
      "FROM iterations), 0),"
      " coalesce((SELECT max(max(started_us, coalesce(ended_us, 0))) "
      "FROM generations), 0),"
      " coalesce((SELECT max(max(queued_us, coalesce(started_us, 0), "
      "coalesce(ended_us, 0))) FROM evaluations), 0),"
      " coalesce((SELECT max(at_us) FROM decisions), 0),"
      " coalesce((SELECT max(ended_us) FROM device_intervals), 0))) "
      "AS end_us FROM runs r ORDER BY r.id LIMIT 1",
      0, collect_first, &times, err);
  if (rc)
    return rc;
  if (times == NULL)
    return sg_err_set(err, SG_ESTATE, "%s: table runs: no run to summarize",
                      s->path);
  int64_t devices = json_integer_value(json_object_get(times, "devices"));
  int64_t start_us = json_integer_value(json_object_get(times, "started_us"));
  int64_t end_us = json_integer_value(json_object_get(times, "end_us"));
  double e2e_s = (double)(end_us - start_us) / 1e6;

  json_t *o = json_object();
  json_object_set_new(o, "e2e_s", json_real(e2e_s));
  /* prompted: the model was asked to think (it is not a reasoning model) */
  json_object_set(o, "reasoning", json_object_get(times, "reasoning"));
  json_decref(times);

  json_t *wfs = json_array();
  json_object_set_new(o, "workflows", wfs);
  rc = query_each(
      s, "workflows",
      "SELECT w.task AS task,"
      " (SELECT count(*) FROM iterations i WHERE i.workflow_id = w.id"
      "  AND i.ended_us IS NOT NULL) AS iterations,"
      /* one figure per kernel, as the run's best kernel has it */
      " " SG_STORE_BEST_SQL("speedup") " AS best_speedup,"
      " " SG_STORE_BEST_SQL("speedup_kind") " AS best_speedup_kind,"
      " (SELECT count(DISTINCT e.candidate_id) FROM evaluations e"
      "  JOIN candidates c ON c.id = e.candidate_id"
      "  WHERE c.workflow_id = w.id AND e.phase = 'profile'"
      "  AND e.status = 'ok') AS profiling_feedback,"
      " (SELECT count(*) FROM iterations i WHERE i.workflow_id = w.id"
      "  AND i.end_reason = 'early') AS early_terminations,"
      " (SELECT count(*) FROM generations g WHERE g.workflow_id = w.id"
      "  AND g.kind = 'main') AS generations_main,"
      " (SELECT count(*) FROM generations g WHERE g.workflow_id = w.id"
      "  AND g.kind = 'spec' AND NOT g.answer_at_cap) AS generations_spec,"
      /* answers asked for at the length cap: spec generations, not forks */
      " (SELECT count(*) FROM generations g WHERE g.workflow_id = w.id"
      "  AND g.answer_at_cap) AS answers_at_cap,"
      " (SELECT coalesce(sum(g.prompt_tokens + g.completion_tokens), 0)"
      "  FROM generations g WHERE g.workflow_id = w.id"
      "  AND g.answer_at_cap) AS answers_at_cap_tokens,"
      /* evaluations not run: the same kernel's was in flight or stored */
      " (SELECT count(*) FROM decisions d WHERE d.workflow_id = w.id"
      "  AND d.kind = 'deduplicated') AS deduplicated,"
      /* mains sent again: the model server cut them */
      " (SELECT count(*) FROM decisions d WHERE d.workflow_id = w.id"
      "  AND d.kind = 'main_restart') AS main_restarts "
      "FROM workflows w ORDER BY w.id",
      0, summary_workflow, wfs, err);
  json_t *busy = NULL;
  if (rc == 0)
    rc = query_each(s, "device_intervals",
                    "SELECT coalesce(sum(CASE WHEN phase = 'validate' THEN "
                    "ended_us - started_us END), 0) AS v,"
                    " coalesce(sum(CASE WHEN phase = 'profile' THEN "
                    "ended_us - started_us END), 0) AS p "
                    "FROM device_intervals",
                    0, collect_first, &busy, err);
  json_t *tok = NULL;
  if (rc == 0)
    rc = query_each(s, "generations",
                    "SELECT coalesce(sum(prompt_tokens), 0) AS prompt,"
                    " coalesce(sum(completion_tokens), 0) AS completion,"
                    " coalesce(sum(cached_tokens), 0) AS cached,"
                    " coalesce(sum(CASE WHEN prompt_estimated THEN prompt_tokens"
                    " END), 0) AS prompt_estimated,"
                    " coalesce(sum(CASE WHEN completion_estimated THEN"
                    " completion_tokens END), 0) AS completion_estimated "
                    "FROM generations",
                    0, collect_first, &tok, err);
  /* why mains were sent again: each cause, most frequent first */
  json_t *causes = json_array();
  if (rc == 0)
    rc = query_each(s, "decisions",
                    "SELECT json_extract(detail_json, '$.cause') AS cause,"
                    " count(*) AS count FROM decisions WHERE kind = 'main_restart'"
                    " GROUP BY 1 ORDER BY 2 DESC, 1",
                    0, collect_array, causes, err);
  if (rc) {
    json_decref(busy);
    json_decref(tok);
    json_decref(causes);
    json_decref(o);
    return rc;
  }
  json_int_t restarts = 0;
  const json_t *c;
  size_t ci;
  json_array_foreach(causes, ci, c)
    restarts += json_integer_value(json_object_get(c, "count"));
  json_object_set_new(o, "main_restarts",
                      json_pack("{s:I, s:o}", "count", restarts, "causes", causes));
  double pool_us = (double)devices * (double)(end_us - start_us);
  double v_us = (double)json_integer_value(json_object_get(busy, "v"));
  double p_us = (double)json_integer_value(json_object_get(busy, "p"));
  json_decref(busy);
  double uv = pool_us > 0 ? v_us / pool_us : 0.0;
  double up = pool_us > 0 ? p_us / pool_us : 0.0;
  json_object_set_new(o, "utilization",
                      json_pack("{s:f, s:f, s:f}", "validation", uv,
                                "profiling", up, "overall", uv + up));
  add_token_consumption(tok);
  json_object_set_new(o, "tokens", tok);
  *out = o;
  return 0;
}

int sg_store_workflow_candidates_json(sg_store *s, int64_t workflow_id,
                                      json_t **out, sg_err *err) {
  json_t *a = json_array();
  int rc = query_each(
      s, "candidates",
      "SELECT c.id AS candidate_id, c.source AS source, i.number AS iteration,"
      " g.kind AS kind, g.id AS generation_id, g.prefix_bytes AS prefix_bytes,"
      " g.answer_at_cap AS answer_at_cap "
      "FROM candidates c JOIN generations g ON g.id = c.generation_id"
      " JOIN iterations i ON i.id = g.iteration_id "
      "WHERE c.workflow_id = ?1 ORDER BY c.id",
      workflow_id, collect_array, a, err);
  if (rc) {
    json_decref(a);
    a = NULL;
  }
  *out = a;
  return rc;
}

int sg_store_workflow_best_json(sg_store *s, int64_t workflow_id, json_t **out,
                                sg_err *err) {
  *out = NULL;
  /* ties go to the earlier kernel, so the best changes only on a gain */
  return query_each(s, "candidates",
                    "SELECT candidate_id, source, speedup, speedup_kind FROM ("
                    SG_STORE_FIGURES_SQL ") WHERE workflow_id = ?1"
                    " ORDER BY speedup DESC, candidate_id LIMIT 1",
                    workflow_id, collect_first, out, err);
}

int sg_store_workflow_usage_json(sg_store *s, int64_t workflow_id,
                                 json_t **out, sg_err *err) {
  *out = NULL;
  return query_each(s, "generations",
                    "SELECT coalesce(sum(prompt_tokens), 0) AS prompt,"
                    " coalesce(sum(completion_tokens), 0) AS completion,"
                    " coalesce(sum(cached_tokens), 0) AS cached,"
                    " coalesce(max(coalesce(ended_us, started_us)), 0)"
                    " AS last_us "
                    "FROM generations WHERE workflow_id = ?1",
                    workflow_id, collect_first, out, err);
}

static int collect_all(void *ud, sqlite3_stmt *st, sg_err *err) {
  (void)err;
  json_array_append_new(ud, row_to_json(st));
  return 0;
}

/* Every row of sql (over the decisions) into *out, an array. */
static int decisions_array(sg_store *s, const char *sql, json_t **out, sg_err *err) {
  *out = json_array();
  int rc = query_each(s, "decisions", sql, 0, collect_all, *out, err);
  if (rc < 0) {
    json_decref(*out);
    *out = NULL;
  }
  return rc;
}

int sg_store_fork_caps_json(sg_store *s, json_t **out, sg_err *err) {
  const char *fields[] = {"cap", "slowdown_max", "cap_configured"};
  sg_buf q;
  sg_buf_init(&q, 0);
  sg_buf_printf(&q, "SELECT d.at_us - (SELECT min(started_us) FROM runs) AS at_us");
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
    sg_buf_printf(&q, ", json_extract(d.detail_json, '$.%s') AS %s", fields[i], fields[i]);
  sg_buf_printf(&q, " FROM decisions d WHERE d.kind = 'fork_budget' ORDER BY d.at_us, d.id");
  int rc = decisions_array(s, sg_buf_str(&q), out, err);
  sg_buf_free(&q);
  return rc;
}

int sg_store_tick_acts_json(sg_store *s, json_t **out, sg_err *err) {
  static const char sql[] =
      "SELECT w.task AS task, d.at_us - (SELECT min(started_us) FROM runs) AS at_us "
      "FROM decisions d JOIN workflows w ON w.id = d.workflow_id "
      "WHERE d.kind = 'fork_idle' "
      "UNION ALL SELECT w.task, i.ended_us - (SELECT min(started_us) FROM runs) "
      "FROM iterations i JOIN workflows w ON w.id = i.workflow_id "
      "WHERE i.end_reason = 'cutoff' AND i.ended_us IS NOT NULL "
      "ORDER BY 2, 1";
  return decisions_array(s, sql, out, err);
}

int sg_store_record_end_json(sg_store *s, json_t **out, sg_err *err) {
  json_t *rows = NULL, *iters = NULL;
  int rc = decisions_array(s,
                           "SELECT EXISTS (SELECT 1 FROM runs WHERE ended_us IS NULL) AS open, "
                           "(SELECT max(t) FROM (SELECT max(at_us) AS t FROM decisions "
                           "UNION ALL SELECT max(ended_us) FROM iterations "
                           "UNION ALL SELECT max(ended_us) FROM evaluations "
                           "UNION ALL SELECT max(ended_us) FROM generations)) "
                           "- (SELECT min(started_us) FROM runs) AS last_us",
                           &rows, err);
  if (rc < 0)
    return rc;
  json_t *row = json_array_get(rows, 0);
  rc = decisions_array(s,
                       "SELECT w.task AS task, i.number AS number FROM iterations i "
                       "JOIN workflows w ON w.id = i.workflow_id WHERE i.ended_us IS NULL "
                       "ORDER BY w.id, i.number",
                       &iters, err);
  if (rc == 0)
    *out = json_pack("{s:b, s:O, s:o}", "open",
                     json_integer_value(json_object_get(row, "open")) != 0, "last_us",
                     row ? json_object_get(row, "last_us") : json_null(), "open_iterations",
                     iters);
  json_decref(rows);
  return rc;
}

int sg_store_gen_kernels_json(sg_store *s, json_t **out, sg_err *err) {
  return decisions_array(
      s,
      "SELECT task, iteration, kind, k, source FROM (SELECT w.task AS task, "
      "i.number AS iteration, g.kind AS kind, g.id AS gid, row_number() OVER "
      "(PARTITION BY g.workflow_id, g.iteration_id, g.kind ORDER BY g.id) - 1 AS k "
      "FROM generations g JOIN workflows w ON w.id = g.workflow_id "
      "JOIN iterations i ON i.id = g.iteration_id) "
      "JOIN candidates c ON c.generation_id = gid ORDER BY gid",
      out, err);
}
