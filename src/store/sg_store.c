/* sg_store.c: the run store on SQLite (see sg_store.h and docs/store.md).
 *
 * Every statement the store runs is prepared once at open, in the table
 * `stmts` below, which also names the table each one touches, so an error
 * says file, table and SQL. Recording calls run one statement each in
 * SQLite's autocommit mode: each is its own transaction, committed to the WAL
 * before the call returns. The few calls that need two statements to be
 * atomic (a candidate's lookup-then-insert) run them inside BEGIN IMMEDIATE.
 *
 * The JSON reads (a row, what a resume needs, the summary) are in
 * sg_store_read.c. This file stays over 800 lines on purpose: the schema,
 * the table of statements and the calls that run them are read together
 * (each call names its statement), and splitting them apart would export
 * the statement helpers for no reader's benefit.
 *
 * Migrations: migrations[v] takes a database at version v to v + 1; version 0
 * is an empty file. They run in one transaction at open, so a crash during a
 * migration leaves the old version intact.
 */
#include "store/sg_store_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- schema ------------------------------------------------------------ */

static const char *const migrations[SG_STORE_SCHEMA_VERSION] = {
    /* 0 -> 1: the first schema. */
    "CREATE TABLE schema_version (version INTEGER NOT NULL);"
    "INSERT INTO schema_version (version) VALUES (0);"
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " config_json TEXT NOT NULL CHECK (json_valid(config_json)),"
    " devices INTEGER NOT NULL CHECK (devices >= 0),"
    " started_us INTEGER NOT NULL,"
    " ended_us INTEGER CHECK (ended_us IS NULL OR ended_us >= started_us));"
    "CREATE TABLE workflows ("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES runs(id),"
    " task TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('running','done','failed')),"
    " budget_iterations INTEGER NOT NULL CHECK (budget_iterations >= 0),"
    " budget_wall_s REAL NOT NULL CHECK (budget_wall_s >= 0),"
    " budget_tokens INTEGER NOT NULL CHECK (budget_tokens >= 0),"
    " started_us INTEGER NOT NULL,"
    " ended_us INTEGER);"
    "CREATE TABLE iterations ("
    " id INTEGER PRIMARY KEY,"
    " workflow_id INTEGER NOT NULL REFERENCES workflows(id),"
    " number INTEGER NOT NULL CHECK (number >= 1),"
    " started_us INTEGER NOT NULL,"
    " ended_us INTEGER,"
    " end_reason TEXT,"
    " UNIQUE (workflow_id, number));"
    "CREATE TABLE generations ("
    " id INTEGER PRIMARY KEY,"
    " workflow_id INTEGER NOT NULL REFERENCES workflows(id),"
    " iteration_id INTEGER NOT NULL REFERENCES iterations(id),"
    " kind TEXT NOT NULL CHECK (kind IN ('main','spec')),"
    " parent_id INTEGER REFERENCES generations(id),"
    " prefix_bytes INTEGER NOT NULL CHECK (prefix_bytes >= 0),"
    " prompt TEXT,"
    " prompt_tokens INTEGER NOT NULL DEFAULT 0,"
    " completion_tokens INTEGER NOT NULL DEFAULT 0,"
    " cached_tokens INTEGER NOT NULL DEFAULT 0,"
    " started_us INTEGER NOT NULL,"
    " ended_us INTEGER,"
    " finish_reason TEXT,"
    " outcome TEXT CHECK (outcome IS NULL OR"
    "  outcome IN ('completed','cancelled','failed')));"
    "CREATE INDEX generations_workflow ON generations(workflow_id);"
    "CREATE TABLE candidates ("
    " id INTEGER PRIMARY KEY,"
    " workflow_id INTEGER NOT NULL REFERENCES workflows(id),"
    " generation_id INTEGER NOT NULL REFERENCES generations(id),"
    " source TEXT NOT NULL,"
    " fnv1a64 TEXT NOT NULL CHECK (length(fnv1a64) = 16),"
    " created_us INTEGER NOT NULL,"
    " UNIQUE (workflow_id, fnv1a64));"
    "CREATE TABLE evaluations ("
    " id INTEGER PRIMARY KEY,"
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id),"
    " phase TEXT NOT NULL CHECK (phase IN ('validate','profile')),"
    " device TEXT,"
    " queued_us INTEGER NOT NULL,"
    " started_us INTEGER,"
    " ended_us INTEGER,"
    " status TEXT CHECK (status IS NULL OR status IN ('ok','compile_error',"
    "  'runtime_error','numerical_error','timeout','rejected','aborted',"
    "  'infra_error')),"
    " speedup REAL,"
    " ref_ms REAL,"
    " cand_ms REAL,"
    " message TEXT,"
    " metrics_json TEXT CHECK (metrics_json IS NULL OR json_valid(metrics_json)),"
    " result_json TEXT CHECK (result_json IS NULL OR json_valid(result_json)));"
    "CREATE INDEX evaluations_candidate ON evaluations(candidate_id, phase);"
    "CREATE TABLE decisions ("
    " id INTEGER PRIMARY KEY,"
    " workflow_id INTEGER NOT NULL REFERENCES workflows(id),"
    " iteration_id INTEGER REFERENCES iterations(id),"
    " kind TEXT NOT NULL,"
    " detail_json TEXT NOT NULL CHECK (json_valid(detail_json)),"
    " at_us INTEGER NOT NULL);"
    "CREATE TABLE device_intervals ("
    " id INTEGER PRIMARY KEY,"
    " device TEXT NOT NULL,"
    " phase TEXT NOT NULL CHECK (phase IN ('validate','profile')),"
    " evaluation_id INTEGER REFERENCES evaluations(id),"
    " started_us INTEGER NOT NULL,"
    " ended_us INTEGER NOT NULL CHECK (ended_us >= started_us));",
    /* 1 -> 2: which token counts are estimates (the server sent no usage,
     * or the stream was cut before it), so no one reads them as measured. */
    "ALTER TABLE generations ADD COLUMN prompt_estimated INTEGER NOT NULL "
    " DEFAULT 0 CHECK (prompt_estimated IN (0, 1));"
    "ALTER TABLE generations ADD COLUMN completion_estimated INTEGER NOT NULL "
    " DEFAULT 0 CHECK (completion_estimated IN (0, 1));",
    /* 2 -> 3: a spec generation that is the answer at the length cap
     * (budget forcing), not a speculative fork, so no count calls it one. */
    ("ALTER TABLE generations ADD COLUMN answer_at_cap INTEGER NOT NULL "
     " DEFAULT 0 CHECK (answer_at_cap IN (0, 1));"),
};

/* ---- prepared statements ----------------------------------------------- */

typedef struct stmt_def {
  const char *table;
  const char *sql;
} stmt_def;

/* The evaluations of the kernel with exactly this source (?3, its hash ?2
 * or its normalized key ?5) in the workflow of task ?1, phase ?4, finished:
 * id, result, how long it held its device, when it ended from the run's
 * start. */
#define EVAL_OF_SOURCE_SQL                                                   \
  "SELECT e.id, e.result_json, coalesce(e.ended_us - e.started_us, 0), "     \
  "coalesce(e.ended_us - (SELECT min(started_us) FROM runs), 0) "            \
  "FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "           \
  "JOIN workflows w ON w.id = c.workflow_id "                                \
  "WHERE w.task = ?1 AND c.fnv1a64 IN (?2, ?5) AND c.source = ?3 "           \
  "AND e.phase = ?4 AND e.status IS NOT NULL "

static const stmt_def stmt_defs[ST__COUNT] = {
    [ST_RUN_COUNT] = {"runs", "SELECT count(*) FROM runs"},
    [ST_RUN_INSERT] = {"runs",
                       "INSERT INTO runs (config_json, devices, started_us) "
                       "VALUES (?1, ?2, ?3)"},
    [ST_RUN_END] = {"runs",
                    "UPDATE runs SET ended_us = ?1 WHERE ended_us IS NULL"},
    [ST_RUN_ID] = {"runs", "SELECT id FROM runs ORDER BY id LIMIT 1"},
    [ST_WF_INSERT] = {"workflows",
                      "INSERT INTO workflows (run_id, task, state, "
                      "budget_iterations, budget_wall_s, budget_tokens, "
                      "started_us) SELECT id, ?1, 'running', ?2, ?3, ?4, ?5 "
                      "FROM runs ORDER BY id LIMIT 1"},
    [ST_WF_STATE] = {"workflows",
                     "UPDATE workflows SET state = ?2, ended_us = ?3 "
                     "WHERE id = ?1"},
    [ST_IT_INSERT] = {"iterations",
                      "INSERT INTO iterations (workflow_id, number, "
                      "started_us) VALUES (?1, ?2, ?3)"},
    [ST_IT_END] = {"iterations",
                   "UPDATE iterations SET end_reason = ?2, ended_us = ?3 "
                   "WHERE id = ?1 AND ended_us IS NULL"},
    [ST_GEN_INSERT] = {"generations",
                       "INSERT INTO generations (workflow_id, iteration_id, "
                       "kind, parent_id, prefix_bytes, prompt, started_us, "
                       "answer_at_cap) "
                       "SELECT workflow_id, id, ?2, ?3, ?4, ?5, ?6, ?7 "
                       "FROM iterations WHERE id = ?1"},
    [ST_GEN_END] = {"generations",
                    "UPDATE generations SET prompt_tokens = ?2, "
                    "completion_tokens = ?3, cached_tokens = ?4, "
                    "finish_reason = ?5, outcome = ?6, ended_us = ?7 "
                    "WHERE id = ?1 AND ended_us IS NULL"},
    [ST_GEN_ESTIMATED] = {"generations",
                          "UPDATE generations SET prompt_estimated = ?2, "
                          "completion_estimated = ?3 WHERE id = ?1"},
    [ST_CAND_FIND] = {"candidates",
                      "SELECT c.id, c.source FROM candidates c "
                      "JOIN generations g ON g.workflow_id = c.workflow_id "
                      "WHERE g.id = ?1 AND c.fnv1a64 = ?2"},
    [ST_CAND_INSERT] = {"candidates",
                        "INSERT INTO candidates (workflow_id, generation_id, "
                        "source, fnv1a64, created_us) "
                        "SELECT workflow_id, id, ?2, ?3, ?4 "
                        "FROM generations WHERE id = ?1"},
    [ST_EVAL_QUEUE] = {"evaluations",
                       "INSERT INTO evaluations (candidate_id, phase, "
                       "queued_us) VALUES (?1, ?2, ?3)"},
    [ST_EVAL_START] = {"evaluations",
                       "UPDATE evaluations SET device = ?2, started_us = ?3 "
                       "WHERE id = ?1 AND status IS NULL"},
    [ST_EVAL_FINISH] = {"evaluations",
                        "UPDATE evaluations SET status = ?2, speedup = ?3, "
                        "ref_ms = ?4, cand_ms = ?5, message = ?6, "
                        "metrics_json = ?7, result_json = ?8, ended_us = ?9 "
                        "WHERE id = ?1 AND status IS NULL"},
    [ST_EVAL_LOOKUP] = {"evaluations",
                        "SELECT id, result_json FROM evaluations "
                        "WHERE candidate_id = ?1 AND phase = ?2 "
                        "AND status IS NOT NULL "
                        "AND status NOT IN ('aborted', 'infra_error') "
                        "ORDER BY ended_us DESC, id DESC LIMIT 1"},
    [ST_EVAL_LOOKUP_SOURCE] = {"evaluations",
                               EVAL_OF_SOURCE_SQL
                               "AND e.status NOT IN ('aborted', 'infra_error') "
                               "ORDER BY e.ended_us DESC, e.id DESC LIMIT 1"},
    [ST_EVAL_LOOKUP_SOURCE_NTH] = {"evaluations",
                                   EVAL_OF_SOURCE_SQL "AND e.status != 'aborted' "
                                   "ORDER BY e.id LIMIT 1 OFFSET ?6"},
    [ST_EVAL_SUBMITTED] = {"evaluations",
                           "SELECT 1 FROM evaluations "
                           "WHERE candidate_id = ?1 AND phase = ?2 LIMIT 1"},
    [ST_DEC_INSERT] = {"decisions",
                       "INSERT INTO decisions (workflow_id, iteration_id, "
                       "kind, detail_json, at_us) VALUES (?1, ?2, ?3, ?4, ?5)"},
    [ST_DEV_INSERT] = {"device_intervals",
                       "INSERT INTO device_intervals (device, phase, "
                       "evaluation_id, started_us, ended_us) "
                       "VALUES (?1, ?2, ?3, ?4, ?5)"},
    [ST_BEGIN] = {"(transaction)", "BEGIN IMMEDIATE"},
    [ST_COMMIT] = {"(transaction)", "COMMIT"},
    [ST_ROLLBACK] = {"(transaction)", "ROLLBACK"},
};

/* ---- names ------------------------------------------------------------- */

static const char *const wf_state_names[SG_STORE_WF__COUNT] = {
    "running", "done", "failed"};
static const char *const gen_kind_names[SG_STORE_GEN__COUNT] = {"main",
                                                                "spec"};
static const char *const gen_outcome_names[SG_STORE_GEN_OUTCOME__COUNT] = {
    "completed", "cancelled", "failed"};
static const char *const phase_names[SG_STORE_PHASE__COUNT] = {"validate",
                                                               "profile"};

const char *sg_store_wf_state_name(sg_store_wf_state st) {
  return (unsigned)st < SG_STORE_WF__COUNT ? wf_state_names[st] : "?";
}
const char *sg_store_gen_kind_name(sg_store_gen_kind k) {
  return (unsigned)k < SG_STORE_GEN__COUNT ? gen_kind_names[k] : "?";
}
const char *sg_store_gen_outcome_name(sg_store_gen_outcome o) {
  return (unsigned)o < SG_STORE_GEN_OUTCOME__COUNT ? gen_outcome_names[o]
                                                   : "?";
}
const char *sg_store_phase_name(sg_store_phase p) {
  return (unsigned)p < SG_STORE_PHASE__COUNT ? phase_names[p] : "?";
}

/* ---- errors ------------------------------------------------------------ */

/* The SG_E* code for a SQLite result code. */
static int map_rc(int rc) {
  switch (rc & 0xff) {
  case SQLITE_CONSTRAINT:
  case SQLITE_MISMATCH:
  case SQLITE_TOOBIG:
    return SG_EINVAL;
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
    return SG_EPARSE;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return SG_EAGAIN;
  case SQLITE_NOMEM:
  case SQLITE_FULL:
    return SG_EFULL;
  default:
    return SG_EIO;
  }
}

/* "<file>: <table>: <sqlite message> (in SQL: <sql>)". */
int sg_store_db_fail(sg_store *s, const char *table, const char *sql,
                     sg_err *err) {
  int rc = sqlite3_extended_errcode(s->db);
  /* Pseudo-tables such as "(pragma)" are written without "table". */
  bool real = table[0] != '(';
  return sg_err_set(err, map_rc(rc), "%s: %s%s: %s (in SQL: %s)", s->path,
                    real ? "table " : "", table, sqlite3_errmsg(s->db), sql);
}

static int st_fail(sg_store *s, int k, sg_err *err) {
  return sg_store_db_fail(s, stmt_defs[k].table, stmt_defs[k].sql, err);
}

/* ---- statement helpers ------------------------------------------------- */

static sqlite3_stmt *st_get(sg_store *s, int k) {
  sqlite3_stmt *st = s->st[k];
  assert(st != NULL);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return st;
}

/* Binds an id, or NULL for 0 (no referenced row). */
static void bind_id(sqlite3_stmt *st, int i, int64_t v) {
  if (v == 0)
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_int64(st, i, v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *t) {
  if (t == NULL)
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT);
}

static void bind_real(sqlite3_stmt *st, int i, double v) {
  if (isfinite(v))
    sqlite3_bind_double(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

/* Steps a statement that returns no row; the changed-row count into
 * *changes (may be NULL). */
static int st_exec(sg_store *s, int k, int *changes, sg_err *err) {
  sqlite3_stmt *st = s->st[k];
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) {
    int r = st_fail(s, k, err);
    sqlite3_reset(st);
    return r;
  }
  if (changes)
    *changes = sqlite3_changes(s->db);
  sqlite3_reset(st);
  return 0;
}

static int tx(sg_store *s, int k, sg_err *err) {
  st_get(s, k);
  return st_exec(s, k, NULL, err);
}

static void tx_rollback(sg_store *s) {
  if (!sqlite3_get_autocommit(s->db)) {
    st_get(s, ST_ROLLBACK);
    (void)st_exec(s, ST_ROLLBACK, NULL, NULL);
  }
}

/* Runs SQL text that is not a prepared statement (schema, pragmas). */
static int exec_sql(sg_store *s, const char *table, const char *sql,
                    sg_err *err) {
  if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return sg_store_db_fail(s, table, sql, err);
  return 0;
}

/* ---- open and close ---------------------------------------------------- */

/* Reads the schema version; 0 for a database without the table. */
static int read_version(sg_store *s, int *version, sg_err *err) {
  static const char q_exists[] =
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
      "AND name = 'schema_version'";
  static const char q_version[] = "SELECT version FROM schema_version";
  sqlite3_stmt *st = NULL;
  *version = 0;
  if (sqlite3_prepare_v2(s->db, q_exists, -1, &st, NULL) != SQLITE_OK)
    return sg_store_db_fail(s, "sqlite_master", q_exists, err);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return sg_store_db_fail(s, "sqlite_master", q_exists, err);
  }
  int exists = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (!exists)
    return 0;
  if (sqlite3_prepare_v2(s->db, q_version, -1, &st, NULL) != SQLITE_OK)
    return sg_store_db_fail(s, "schema_version", q_version, err);
  rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    int r = rc == SQLITE_DONE
                ? sg_err_set(err, SG_EPARSE,
                             "%s: table schema_version: no row (in SQL: %s)",
                             s->path, q_version)
                : sg_store_db_fail(s, "schema_version", q_version, err);
    sqlite3_finalize(st);
    return r;
  }
  *version = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return 0;
}

/* Brings the schema to SG_STORE_SCHEMA_VERSION in one transaction. */
static int migrate(sg_store *s, sg_err *err) {
  int rc = exec_sql(s, "(transaction)", "BEGIN IMMEDIATE", err);
  if (rc)
    return rc;
  int v;
  rc = read_version(s, &v, err);
  if (rc == 0 && v > SG_STORE_SCHEMA_VERSION)
    rc = sg_err_set(err, SG_EUNSUPPORTED,
                    "%s: schema version %d is newer than this specgen's "
                    "(%d); open it with a newer specgen",
                    s->path, v, SG_STORE_SCHEMA_VERSION);
  if (rc == 0 && v < 0)
    rc = sg_err_set(err, SG_EPARSE, "%s: table schema_version: bad version %d",
                    s->path, v);
  for (; rc == 0 && v < SG_STORE_SCHEMA_VERSION; v++) {
    rc = exec_sql(s, "(migration)", migrations[v], err);
    if (rc == 0) {
      char sql[96];
      snprintf(sql, sizeof sql, "UPDATE schema_version SET version = %d",
               v + 1);
      rc = exec_sql(s, "schema_version", sql, err);
    }
  }
  if (rc == 0)
    rc = exec_sql(s, "(transaction)", "COMMIT", err);
  if (rc) {
    if (!sqlite3_get_autocommit(s->db))
      sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
  }
  s->version = v;
  return 0;
}

int sg_store_open(const char *dir, sg_store **out, sg_err *err) {
  return sg_store_open_opts(dir, NULL, out, err);
}

/* Reads a pragma's value as text into buf. */
static int pragma_text(sg_store *s, const char *name, char *buf, size_t size,
                       sg_err *err) {
  char q[64];
  snprintf(q, sizeof q, "PRAGMA %s", name);
  sqlite3_stmt *st = NULL;
  int rc = 0;
  if (sqlite3_prepare_v2(s->db, q, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW)
    rc = sg_store_db_fail(s, "(pragma)", q, err);
  else
    snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return rc;
}

int sg_store_open_opts(const char *dir, const sg_store_opts *opts,
                       sg_store **out, sg_err *err) {
  *out = NULL;
  bool sync_full = opts && opts->sync_full;
  if (dir == NULL || dir[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "run store: empty run directory path");
  int rc = sg_mkdir_p(dir, err);
  if (rc)
    return sg_err_prefix(err, "run store %s", dir);
  struct stat stt;
  if (stat(dir, &stt) != 0 || !S_ISDIR(stt.st_mode))
    return sg_err_set(err, SG_EIO, "run store %s: not a directory", dir);

  sg_store *s = sg_calloc(1, sizeof *s);
  s->path = sg_asprintf("%s/%s", dir, SG_STORE_FILE);
  int src = sqlite3_open_v2(s->path, &s->db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                SQLITE_OPEN_NOMUTEX,
                            NULL);
  if (src != SQLITE_OK) {
    rc = sg_err_set(err, map_rc(src),
                    "%s: cannot open: %s", s->path,
                    s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
    sg_store_close(s);
    return rc;
  }
  sqlite3_extended_result_codes(s->db, 1);
  /* Another process (a report, the dashboard) may hold a read lock for a
   * moment; wait rather than fail. */
  sqlite3_busy_timeout(s->db, 5000);
  /* WAL: readers never block the writer, and a commit is one append.
   * synchronous=NORMAL: in WAL mode a commit is not fsync'ed, only each
   * checkpoint is; a process crash loses nothing committed, a power loss may
   * lose the last commits but never corrupts (docs/store.md). */
  const char *pragmas = sync_full ? "PRAGMA journal_mode = WAL;"
                                    "PRAGMA synchronous = FULL;"
                                    "PRAGMA foreign_keys = ON;"
                                  : "PRAGMA journal_mode = WAL;"
                                    "PRAGMA synchronous = NORMAL;"
                                    "PRAGMA foreign_keys = ON;";
  rc = exec_sql(s, "(pragma)", pragmas, err);
  /* Pragmas can fail quietly (WAL on a file system without shared memory);
   * read back that each took. */
  char val[32];
  if (rc == 0)
    rc = pragma_text(s, "journal_mode", val, sizeof val, err);
  if (rc == 0 && strcmp(val, "wal") != 0)
    rc = sg_err_set(err, SG_EUNSUPPORTED,
                    "%s: journal_mode is %s, WAL could not be enabled",
                    s->path, val);
  if (rc == 0)
    rc = pragma_text(s, "synchronous", val, sizeof val, err);
  if (rc == 0 && strcmp(val, sync_full ? "2" : "1") != 0)
    rc = sg_err_set(err, SG_EUNSUPPORTED, "%s: synchronous is %s, not %s",
                    s->path, val, sync_full ? "FULL (2)" : "NORMAL (1)");
  s->synchronous = sync_full ? "full" : "normal";
  if (rc == 0)
    rc = pragma_text(s, "foreign_keys", val, sizeof val, err);
  if (rc == 0 && strcmp(val, "1") != 0)
    rc = sg_err_set(err, SG_EUNSUPPORTED,
                    "%s: foreign keys could not be enabled", s->path);
  if (rc == 0)
    rc = migrate(s, err);
  for (int k = 0; rc == 0 && k < ST__COUNT; k++) {
    if (sqlite3_prepare_v3(s->db, stmt_defs[k].sql, -1,
                           SQLITE_PREPARE_PERSISTENT, &s->st[k],
                           NULL) != SQLITE_OK)
      rc = st_fail(s, k, err);
  }
  if (rc) {
    sg_store_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

void sg_store_close(sg_store *s) {
  if (s == NULL)
    return;
  for (int k = 0; k < ST__COUNT; k++)
    sqlite3_finalize(s->st[k]);
  if (s->db)
    sqlite3_close(s->db);
  free(s->path);
  free(s);
}

const char *sg_store_path(const sg_store *s) { return s->path; }
int sg_store_schema_version(const sg_store *s) { return s->version; }
const char *sg_store_synchronous(const sg_store *s) { return s->synchronous; }

/* ---- recording ----------------------------------------------------------- */

static char *dump_json(const json_t *j) {
  char *t = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  if (t == NULL) /* jansson fails only on OOM or an invalid value */
    t = strdup("null");
  if (t == NULL)
    abort();
  return t;
}

static int64_t last_id(sg_store *s) { return sqlite3_last_insert_rowid(s->db); }

int sg_store_run_begin(sg_store *s, const json_t *config, int devices,
                       int64_t started_us, int64_t *run_id, sg_err *err) {
  if (config == NULL || !json_is_object(config))
    return sg_err_set(err, SG_EINVAL,
                      "%s: table runs: the configuration must be a JSON object",
                      s->path);
  if (devices < 0)
    return sg_err_set(err, SG_EINVAL, "%s: table runs: devices %d < 0",
                      s->path, devices);
  sqlite3_stmt *st = st_get(s, ST_RUN_COUNT);
  if (sqlite3_step(st) != SQLITE_ROW) {
    int r = st_fail(s, ST_RUN_COUNT, err);
    sqlite3_reset(st);
    return r;
  }
  int n = sqlite3_column_int(st, 0);
  sqlite3_reset(st);
  if (n > 0)
    return sg_err_set(err, SG_ESTATE,
                      "%s: table runs: the database already holds a run "
                      "(resume it instead)",
                      s->path);
  char *text = dump_json(config);
  st = st_get(s, ST_RUN_INSERT);
  sqlite3_bind_text(st, 1, text, -1, free);
  sqlite3_bind_int(st, 2, devices);
  sqlite3_bind_int64(st, 3, started_us);
  int rc = st_exec(s, ST_RUN_INSERT, NULL, err);
  if (rc == 0 && run_id)
    *run_id = last_id(s);
  return rc;
}

int sg_store_run_end(sg_store *s, int64_t ended_us, sg_err *err) {
  sqlite3_stmt *st = st_get(s, ST_RUN_END);
  sqlite3_bind_int64(st, 1, ended_us);
  int changes = 0;
  int rc = st_exec(s, ST_RUN_END, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table runs: no open run to end (in SQL: %s)",
                    s->path, stmt_defs[ST_RUN_END].sql);
  return rc;
}

int sg_store_run_extend(sg_store *s, int64_t budget_iterations, int *reopened,
                        sg_err *err) {
  *reopened = 0;
  char *sql = sg_asprintf("UPDATE workflows SET state = 'running', ended_us = NULL,"
                          " budget_iterations = %" PRId64 " WHERE state = 'done'"
                          " AND budget_iterations < %" PRId64,
                          budget_iterations, budget_iterations);
  int rc = exec_sql(s, "workflows", "BEGIN IMMEDIATE", err);
  if (rc == 0)
    rc = exec_sql(s, "workflows", sql, err);
  int n = rc == 0 ? sqlite3_changes(s->db) : 0;
  if (rc == 0 && n > 0)
    rc = exec_sql(s, "runs", "UPDATE runs SET ended_us = NULL", err);
  if (rc == 0)
    rc = exec_sql(s, "workflows", "COMMIT", err);
  if (rc < 0)
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  else
    *reopened = n;
  free(sql);
  return rc;
}

int sg_store_workflow_add(sg_store *s, const sg_store_workflow *wf,
                          int64_t *id, sg_err *err) {
  if (wf->task == NULL)
    return sg_err_set(err, SG_EINVAL, "%s: table workflows: no task name",
                      s->path);
  sqlite3_stmt *st = st_get(s, ST_WF_INSERT);
  bind_text(st, 1, wf->task);
  sqlite3_bind_int64(st, 2, wf->budget_iterations);
  sqlite3_bind_double(st, 3, wf->budget_wall_s);
  sqlite3_bind_int64(st, 4, wf->budget_tokens);
  sqlite3_bind_int64(st, 5, wf->started_us);
  int changes = 0;
  int rc = st_exec(s, ST_WF_INSERT, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table workflows: no run to add a workflow to "
                    "(sg_store_run_begin first)",
                    s->path);
  if (rc == 0 && id)
    *id = last_id(s);
  return rc;
}

int sg_store_workflow_set_state(sg_store *s, int64_t workflow_id,
                                sg_store_wf_state state, int64_t now_us,
                                sg_err *err) {
  if ((unsigned)state >= SG_STORE_WF__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table workflows: bad state %d",
                      s->path, (int)state);
  sqlite3_stmt *st = st_get(s, ST_WF_STATE);
  sqlite3_bind_int64(st, 1, workflow_id);
  bind_text(st, 2, wf_state_names[state]);
  if (state == SG_STORE_WF_RUNNING)
    sqlite3_bind_null(st, 3);
  else
    sqlite3_bind_int64(st, 3, now_us);
  int changes = 0;
  int rc = st_exec(s, ST_WF_STATE, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ENOENT, "%s: table workflows: no workflow %" PRId64,
                    s->path, workflow_id);
  return rc;
}

int sg_store_iteration_begin(sg_store *s, int64_t workflow_id, int64_t number,
                             int64_t started_us, int64_t *id, sg_err *err) {
  sqlite3_stmt *st = st_get(s, ST_IT_INSERT);
  sqlite3_bind_int64(st, 1, workflow_id);
  sqlite3_bind_int64(st, 2, number);
  sqlite3_bind_int64(st, 3, started_us);
  int rc = st_exec(s, ST_IT_INSERT, NULL, err);
  if (rc == 0 && id)
    *id = last_id(s);
  return rc;
}

int sg_store_iteration_end(sg_store *s, int64_t iteration_id,
                           const char *end_reason, int64_t ended_us,
                           sg_err *err) {
  sqlite3_stmt *st = st_get(s, ST_IT_END);
  sqlite3_bind_int64(st, 1, iteration_id);
  bind_text(st, 2, end_reason);
  sqlite3_bind_int64(st, 3, ended_us);
  int changes = 0;
  int rc = st_exec(s, ST_IT_END, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table iterations: no open iteration %" PRId64
                    " (missing or already ended)",
                    s->path, iteration_id);
  return rc;
}

int sg_store_generation_begin(sg_store *s, const sg_store_generation *g,
                              int64_t *id, sg_err *err) {
  if ((unsigned)g->kind >= SG_STORE_GEN__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table generations: bad kind %d",
                      s->path, (int)g->kind);
  sqlite3_stmt *st = st_get(s, ST_GEN_INSERT);
  sqlite3_bind_int64(st, 1, g->iteration_id);
  bind_text(st, 2, gen_kind_names[g->kind]);
  bind_id(st, 3, g->parent_id);
  sqlite3_bind_int64(st, 4, g->prefix_bytes);
  bind_text(st, 5, g->prompt);
  sqlite3_bind_int64(st, 6, g->started_us);
  sqlite3_bind_int(st, 7, g->kind == SG_STORE_GEN_SPEC && g->answer_at_cap);
  int changes = 0;
  int rc = st_exec(s, ST_GEN_INSERT, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ENOENT,
                    "%s: table generations: no iteration %" PRId64, s->path,
                    g->iteration_id);
  if (rc == 0 && id)
    *id = last_id(s);
  return rc;
}

int sg_store_generation_end(sg_store *s, int64_t generation_id,
                            int64_t prompt_tokens, int64_t completion_tokens,
                            int64_t cached_tokens, const char *finish_reason,
                            sg_store_gen_outcome outcome, int64_t ended_us,
                            sg_err *err) {
  if ((unsigned)outcome >= SG_STORE_GEN_OUTCOME__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table generations: bad outcome %d",
                      s->path, (int)outcome);
  sqlite3_stmt *st = st_get(s, ST_GEN_END);
  sqlite3_bind_int64(st, 1, generation_id);
  sqlite3_bind_int64(st, 2, prompt_tokens);
  sqlite3_bind_int64(st, 3, completion_tokens);
  sqlite3_bind_int64(st, 4, cached_tokens);
  bind_text(st, 5, finish_reason);
  bind_text(st, 6, gen_outcome_names[outcome]);
  sqlite3_bind_int64(st, 7, ended_us);
  int changes = 0;
  int rc = st_exec(s, ST_GEN_END, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table generations: no open generation %" PRId64
                    " (missing or already ended)",
                    s->path, generation_id);
  return rc;
}

int sg_store_generation_estimated(sg_store *s, int64_t generation_id,
                                  bool prompt, bool completion, sg_err *err) {
  sqlite3_stmt *st = st_get(s, ST_GEN_ESTIMATED);
  sqlite3_bind_int64(st, 1, generation_id);
  sqlite3_bind_int(st, 2, prompt ? 1 : 0);
  sqlite3_bind_int(st, 3, completion ? 1 : 0);
  int changes = 0;
  int rc = st_exec(s, ST_GEN_ESTIMATED, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table generations: no generation %" PRId64, s->path,
                    generation_id);
  return rc;
}

/* Whether two sources normalize to the same text (the hash matched). */
static bool same_source(const char *a, size_t alen, const char *b, size_t blen) {
  if (b == NULL)
    return false;
  char *na = sg_malloc(alen + 1), *nb = sg_malloc(blen + 1);
  size_t la = sg_source_normalize(a, alen, na), lb = sg_source_normalize(b, blen, nb);
  bool same = la == lb && memcmp(na, nb, la) == 0;
  free(na);
  free(nb);
  return same;
}

int sg_store_candidate_add(sg_store *s, int64_t generation_id,
                           const char *source, int64_t created_us,
                           int64_t *id, bool *is_new, sg_err *err) {
  if (source == NULL)
    return sg_err_set(err, SG_EINVAL, "%s: table candidates: no source",
                      s->path);
  /* The key is the normalized text's (sg_source_key): a copy that differs
   * only in line-end blanks is the same kernel, evaluated once. */
  size_t len = strlen(source);
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, sg_source_key(source, len));
  /* Lookup and insert in one transaction, so the answer "new" is true when
   * the row is written. */
  int rc = tx(s, ST_BEGIN, err);
  if (rc)
    return rc;
  sqlite3_stmt *st = st_get(s, ST_CAND_FIND);
  sqlite3_bind_int64(st, 1, generation_id);
  sqlite3_bind_text(st, 2, hash, -1, SQLITE_TRANSIENT);
  int src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    int64_t existing = sqlite3_column_int64(st, 0);
    bool same = same_source(source, len, (const char *)sqlite3_column_text(st, 1),
                            (size_t)sqlite3_column_bytes(st, 1));
    sqlite3_reset(st);
    if (!same) {
      rc = sg_err_set(err, SG_ESTATE,
                      "%s: table candidates: FNV-1a 64 collision: a new "
                      "source from generation %" PRId64
                      " has the hash %s of candidate %" PRId64,
                      s->path, generation_id, hash, existing);
    } else {
      if (id)
        *id = existing;
      if (is_new)
        *is_new = false;
    }
    tx_rollback(s);
    return rc;
  }
  if (src != SQLITE_DONE) {
    rc = st_fail(s, ST_CAND_FIND, err);
    sqlite3_reset(st);
    tx_rollback(s);
    return rc;
  }
  sqlite3_reset(st);
  st = st_get(s, ST_CAND_INSERT);
  sqlite3_bind_int64(st, 1, generation_id);
  sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 4, created_us);
  int changes = 0;
  rc = st_exec(s, ST_CAND_INSERT, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ENOENT,
                    "%s: table candidates: no generation %" PRId64, s->path,
                    generation_id);
  int64_t new_id = last_id(s);
  if (rc == 0)
    rc = tx(s, ST_COMMIT, err);
  if (rc) {
    tx_rollback(s);
    return rc;
  }
  if (id)
    *id = new_id;
  if (is_new)
    *is_new = true;
  return 0;
}

int sg_store_eval_queue(sg_store *s, int64_t candidate_id,
                        sg_store_phase phase, int64_t queued_us, int64_t *id,
                        sg_err *err) {
  if ((unsigned)phase >= SG_STORE_PHASE__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table evaluations: bad phase %d",
                      s->path, (int)phase);
  sqlite3_stmt *st = st_get(s, ST_EVAL_QUEUE);
  sqlite3_bind_int64(st, 1, candidate_id);
  bind_text(st, 2, phase_names[phase]);
  sqlite3_bind_int64(st, 3, queued_us);
  int rc = st_exec(s, ST_EVAL_QUEUE, NULL, err);
  if (rc == 0 && id)
    *id = last_id(s);
  return rc;
}

int sg_store_eval_start(sg_store *s, int64_t eval_id, const char *device,
                        int64_t started_us, sg_err *err) {
  sqlite3_stmt *st = st_get(s, ST_EVAL_START);
  sqlite3_bind_int64(st, 1, eval_id);
  bind_text(st, 2, device);
  sqlite3_bind_int64(st, 3, started_us);
  int changes = 0;
  int rc = st_exec(s, ST_EVAL_START, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table evaluations: no unfinished evaluation %" PRId64,
                    s->path, eval_id);
  return rc;
}

/* The length of text cut to at most max bytes, never inside a UTF-8
 * sequence. */
static size_t cut_len(const char *text, size_t max) {
  size_t n = strnlen(text, max + 1);
  if (n <= max)
    return n;
  n = max;
  while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
    n--;
  return n;
}

int sg_store_eval_finish(sg_store *s, int64_t eval_id, const sg_eval_result *r,
                         int64_t ended_us, sg_err *err) {
  if ((unsigned)r->status >= SG_EVAL__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table evaluations: bad status %d",
                      s->path, (int)r->status);
  size_t msg_len = r->message ? cut_len(r->message, SG_STORE_TEXT_MAX) : 0;
  json_t *rj = sg_eval_result_to_json(r);
  if (r->message && r->message[msg_len] != '\0')
    json_object_set_new(rj, "message", json_stringn(r->message, msg_len));
  char *result_text = dump_json(rj);
  json_decref(rj);
  sqlite3_stmt *st = st_get(s, ST_EVAL_FINISH);
  sqlite3_bind_int64(st, 1, eval_id);
  bind_text(st, 2, sg_eval_status_name(r->status));
  bind_real(st, 3, r->status == SG_EVAL_OK ? r->speedup : NAN);
  bind_real(st, 4, r->ref_ms);
  bind_real(st, 5, r->cand_ms);
  if (r->message)
    sqlite3_bind_text(st, 6, r->message, (int)msg_len, SQLITE_TRANSIENT);
  if (r->metrics)
    sqlite3_bind_text(st, 7, dump_json(r->metrics), -1, free);
  sqlite3_bind_text(st, 8, result_text, -1, free);
  sqlite3_bind_int64(st, 9, ended_us);
  int changes = 0;
  int rc = st_exec(s, ST_EVAL_FINISH, &changes, err);
  if (rc == 0 && changes == 0)
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: table evaluations: no unfinished evaluation %" PRId64
                    " (a finished evaluation is never overwritten)",
                    s->path, eval_id);
  return rc;
}

/* The row statement st (statement k, bound) steps to, if any: an
 * evaluation's recorded result into *out, its third column into *col2. */
static int eval_row(sg_store *s, sqlite3_stmt *st, int k, sg_eval_result *out,
                    int64_t *eval_id, int64_t *col2, int64_t *col3, bool *found,
                    sg_err *err) {
  int src = sqlite3_step(st);
  if (src == SQLITE_DONE) {
    sqlite3_reset(st);
    return 0;
  }
  if (src != SQLITE_ROW) {
    int r = st_fail(s, k, err);
    sqlite3_reset(st);
    return r;
  }
  int64_t id = sqlite3_column_int64(st, 0);
  const char *text = (const char *)sqlite3_column_text(st, 1);
  if (col2)
    *col2 = sqlite3_column_int64(st, 2);
  if (col3)
    *col3 = sqlite3_column_int64(st, 3);
  json_error_t jerr;
  json_t *j = text ? json_loads(text, 0, &jerr) : NULL;
  sqlite3_reset(st);
  if (j == NULL)
    return sg_err_set(err, SG_EPARSE,
                      "%s: table evaluations: evaluation %" PRId64
                      " has no readable result_json",
                      s->path, id);
  sg_eval_result_free(out);
  int rc = sg_eval_result_from_json(j, out, err);
  json_decref(j);
  if (rc)
    return sg_err_prefix(err, "%s: table evaluations: evaluation %" PRId64,
                         s->path, id);
  if (eval_id)
    *eval_id = id;
  *found = true;
  return 0;
}

int sg_store_eval_lookup(sg_store *s, int64_t candidate_id,
                         sg_store_phase phase, sg_eval_result *out,
                         int64_t *eval_id, bool *found, sg_err *err) {
  *found = false;
  if ((unsigned)phase >= SG_STORE_PHASE__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table evaluations: bad phase %d",
                      s->path, (int)phase);
  sqlite3_stmt *st = st_get(s, ST_EVAL_LOOKUP);
  sqlite3_bind_int64(st, 1, candidate_id);
  bind_text(st, 2, phase_names[phase]);
  return eval_row(s, st, ST_EVAL_LOOKUP, out, eval_id, NULL, NULL, found, err);
}

/* The evaluation of the kernel with exactly this source in the workflow
 * of this task: with ST_EVAL_LOOKUP_SOURCE the latest that says something
 * about it (nth unused), with ST_EVAL_LOOKUP_SOURCE_NTH the nth asked for,
 * past the last the last. */
static int lookup_source(sg_store *s, int k, const char *task, const char *source,
                         sg_store_phase phase, int64_t nth, sg_eval_result *out,
                         int64_t *device_us, int64_t *ended_us, bool *found, sg_err *err) {
  *found = false;
  *device_us = 0;
  if (ended_us)
    *ended_us = 0;
  if ((unsigned)phase >= SG_STORE_PHASE__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table evaluations: bad phase %d",
                      s->path, (int)phase);
  /* A store keys a kernel by its normalized text (sg_source_key); one
   * written before that, by its exact bytes: either finds it. */
  char hash[17], key[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, sg_fnv1a64(source, strlen(source)));
  snprintf(key, sizeof key, "%016" PRIx64, sg_source_key(source, strlen(source)));
  sqlite3_stmt *st = st_get(s, k);
  int rc = 0;
  for (int64_t n = nth; rc == 0 && !*found && n >= 0; n--) {
    bind_text(st, 1, task);
    bind_text(st, 2, hash);
    bind_text(st, 3, source);
    bind_text(st, 4, phase_names[phase]);
    bind_text(st, 5, key);
    if (k == ST_EVAL_LOOKUP_SOURCE_NTH)
      sqlite3_bind_int64(st, 6, n);
    else
      n = 0; /* one query */
    rc = eval_row(s, st, k, out, NULL, device_us, ended_us, found, err);
  }
  return rc;
}

int sg_store_eval_lookup_source(sg_store *s, const char *task, const char *source,
                                sg_store_phase phase, sg_eval_result *out,
                                int64_t *device_us, int64_t *ended_us, bool *found,
                                sg_err *err) {
  return lookup_source(s, ST_EVAL_LOOKUP_SOURCE, task, source, phase, 0, out, device_us,
                       ended_us, found, err);
}

int sg_store_eval_lookup_source_nth(sg_store *s, const char *task, const char *source,
                                    sg_store_phase phase, int64_t nth, sg_eval_result *out,
                                    int64_t *device_us, int64_t *ended_us, bool *found,
                                    sg_err *err) {
  return lookup_source(s, ST_EVAL_LOOKUP_SOURCE_NTH, task, source, phase, nth < 0 ? 0 : nth,
                       out, device_us, ended_us, found, err);
}

int sg_store_eval_submitted(sg_store *s, int64_t candidate_id,
                            sg_store_phase phase, bool *submitted,
                            sg_err *err) {
  *submitted = false;
  if ((unsigned)phase >= SG_STORE_PHASE__COUNT)
    return sg_err_set(err, SG_EINVAL, "%s: table evaluations: bad phase %d",
                      s->path, (int)phase);
  sqlite3_stmt *st = st_get(s, ST_EVAL_SUBMITTED);
  sqlite3_bind_int64(st, 1, candidate_id);
  bind_text(st, 2, phase_names[phase]);
  int src = sqlite3_step(st);
  if (src != SQLITE_ROW && src != SQLITE_DONE) {
    int r = st_fail(s, ST_EVAL_SUBMITTED, err);
    sqlite3_reset(st);
    return r;
  }
  *submitted = src == SQLITE_ROW;
  sqlite3_reset(st);
  return 0;
}

int sg_store_decision_add(sg_store *s, int64_t workflow_id,
                          int64_t iteration_id, const char *kind,
                          const json_t *detail, int64_t at_us, int64_t *id,
                          sg_err *err) {
  if (kind == NULL)
    return sg_err_set(err, SG_EINVAL, "%s: table decisions: no kind", s->path);
  sqlite3_stmt *st = st_get(s, ST_DEC_INSERT);
  sqlite3_bind_int64(st, 1, workflow_id);
  bind_id(st, 2, iteration_id);
  bind_text(st, 3, kind);
  if (detail)
    sqlite3_bind_text(st, 4, dump_json(detail), -1, free);
  else
    sqlite3_bind_text(st, 4, "{}", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, at_us);
  int rc = st_exec(s, ST_DEC_INSERT, NULL, err);
  if (rc == 0 && id)
    *id = last_id(s);
  return rc;
}

int sg_store_device_interval_add(sg_store *s, const char *device,
                                 sg_store_phase phase, int64_t evaluation_id,
                                 int64_t started_us, int64_t ended_us,
                                 int64_t *id, sg_err *err) {
  if (device == NULL || (unsigned)phase >= SG_STORE_PHASE__COUNT)
    return sg_err_set(err, SG_EINVAL,
                      "%s: table device_intervals: no device or bad phase",
                      s->path);
  sqlite3_stmt *st = st_get(s, ST_DEV_INSERT);
  bind_text(st, 1, device);
  bind_text(st, 2, phase_names[phase]);
  bind_id(st, 3, evaluation_id);
  sqlite3_bind_int64(st, 4, started_us);
  sqlite3_bind_int64(st, 5, ended_us);
  int rc = st_exec(s, ST_DEV_INSERT, NULL, err);
  if (rc == 0 && id)
    *id = last_id(s);
  return rc;
}
