/* sg_report_data.c: a report's data, read from a run store (read-only) or
 * a sim campaign directory. See sg_report.h; the row layouts are listed in
 * docs/report.md and read by assets/report.js (keep the three in step). */
#include "report/sg_report.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "store/sg_store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A campaign file is a few hundred KiB at most; refuse anything absurd. */
#define CAMPAIGN_MAX_BYTES ((size_t)64 << 20)
#define CAMPAIGNS_MAX 64

struct sg_report_src {
  char *dir;
  char *db_path;    /* run: dir/run.db */
  sqlite3 *db;      /* run: opened read-only */
  int version;      /* run: its schema version */
  json_t *campaigns; /* sim: [{"file", ...campaign}] */
};

extern const unsigned char sg_report_asset_paper_numbers[];
extern const size_t sg_report_asset_paper_numbers_len;

static int db_error(sg_report_src *s, const char *sql, sg_err *err) {
  int code = sqlite3_errcode(s->db);
  int rc = code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? SG_EPARSE
           : code == SQLITE_BUSY                           ? SG_EAGAIN
                                                           : SG_EIO;
  return sg_err_set(err, rc, "%s: %s (in SQL: %.120s)", s->db_path, sqlite3_errmsg(s->db),
                    sql);
}

/* ---- opening ------------------------------------------------------------------ */

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* campaign-*.json in dir, sorted by name; *n 0 when there is none. */
static int campaign_files(const char *dir, char ***names, size_t *n, sg_err *err) {
  *names = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return sg_err_set(err, errno == ENOENT ? SG_ENOENT : SG_EIO, "%s: %s", dir,
                      strerror(errno));
  struct dirent *e;
  char **v = sg_calloc(CAMPAIGNS_MAX, sizeof *v);
  size_t k = 0;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "campaign-", 9) != 0 || len < 14 ||
        strcmp(e->d_name + len - 5, ".json") != 0)
      continue;
    if (k == CAMPAIGNS_MAX) {
      closedir(d);
      for (size_t i = 0; i < k; i++)
        free(v[i]);
      free(v);
      return sg_err_set(err, SG_EINVAL, "%s: more than %d campaign files", dir,
                        CAMPAIGNS_MAX);
    }
    v[k++] = sg_strdup(e->d_name);
  }
  closedir(d);
  qsort(v, k, sizeof *v, cmp_names);
  *names = v;
  *n = k;
  return 0;
}

static int open_sim(sg_report_src *s, char **names, size_t n, sg_err *err) {
  s->campaigns = json_array();
  for (size_t i = 0; i < n; i++) {
    char *path = sg_asprintf("%s/%s", s->dir, names[i]);
    char *text = NULL;
    size_t len = 0;
    int rc = sg_file_read(path, CAMPAIGN_MAX_BYTES, &text, &len, err);
    if (rc < 0) {
      free(path);
      return rc;
    }
    json_error_t je;
    json_t *c = json_loadb(text, len, 0, &je);
    free(text);
    if (!c || !json_is_object(c) || !json_is_array(json_object_get(c, "configs"))) {
      rc = c ? sg_err_set(err, SG_EPARSE, "%s: not a campaign (no \"configs\" array)", path)
             : sg_err_set(err, SG_EPARSE, "%s:%d: %s", path, je.line, je.text);
      json_decref(c);
      free(path);
      return rc;
    }
    json_object_set_new(c, "file", json_string(names[i]));
    json_array_append_new(s->campaigns, c);
    free(path);
  }
  return 0;
}

static int open_run(sg_report_src *s, sg_err *err) {
  /* Read-only: a report never changes the store, even of a finished run.
   * WAL lets it read while the run writes. */
  if (sqlite3_open_v2(s->db_path, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK)
    return db_error(s, "open", err);
  sqlite3_busy_timeout(s->db, 5000);
  const char *sql = "SELECT version FROM schema_version";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  int rc = sqlite3_step(st);
  int version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW)
    return sg_err_set(err, SG_EPARSE, "%s: no schema version (not a run store)", s->db_path);
  /* Version 2 only added the generations' estimated-count flags, which the
   * report does not read; version 3 the answers at the length cap, which it
   * names apart from the forks (GEN_SQL_V3). */
  if (version < 1 || version > 3)
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "%s: schema version %d; this report reads versions 1 to 3",
                      s->db_path, version);
  s->version = version;
  return 0;
}

int sg_report_open(const char *dir, sg_report_src **out, sg_err *err) {
  *out = NULL;
  sg_report_src *s = sg_calloc(1, sizeof *s);
  s->dir = sg_strdup(dir);
  s->db_path = sg_asprintf("%s/run.db", dir);
  int rc;
  if (is_file(s->db_path)) {
    rc = open_run(s, err);
  } else {
    char **names = NULL;
    size_t n = 0;
    rc = campaign_files(dir, &names, &n, err);
    if (rc == 0 && n == 0)
      rc = sg_err_set(err, SG_ENOENT,
                      "%s: neither a run directory (no run.db) nor a sim campaign "
                      "(no campaign-*.json from `specgen sim --out`)", dir);
    if (rc == 0)
      rc = open_sim(s, names, n, err);
    for (size_t i = 0; i < n; i++)
      free(names[i]);
    free(names);
  }
  if (rc < 0) {
    sg_report_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

void sg_report_close(sg_report_src *s) {
  if (!s)
    return;
  if (s->db)
    sqlite3_close(s->db);
  json_decref(s->campaigns);
  free(s->db_path);
  free(s->dir);
  free(s);
}

bool sg_report_is_sim(const sg_report_src *s) { return s->campaigns != NULL; }

int sg_report_version(sg_report_src *s, int64_t *version, sg_err *err) {
  *version = 0;
  if (!s->db)
    return 0;
  const char *sql = "PRAGMA data_version";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  if (sqlite3_step(st) == SQLITE_ROW)
    *version = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return 0;
}

/* ---- rows --------------------------------------------------------------------- */

/* Seconds since t0 on the page, to the millisecond. */
static json_t *rel_s(int64_t us, int64_t t0) {
  return json_real(round((double)(us - t0) / 1e3) / 1e3);
}

/* Appends the rows of sql to arr, each a JSON array built column by column
 * from kinds: 'i' integer, 't' a time (µs, as seconds since t0), 'r' real,
 * 's' text, 'j' JSON text (parsed; invalid: null). NULL stays null. */
static int rows(sg_report_src *s, const char *sql, const char *kinds, int64_t t0,
                json_t *arr, sg_err *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  int n = (int)strlen(kinds), rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    json_t *row = json_array();
    for (int c = 0; c < n; c++) {
      json_t *v = NULL;
      if (sqlite3_column_type(st, c) != SQLITE_NULL) {
        switch (kinds[c]) {
        case 'i':
          v = json_integer(sqlite3_column_int64(st, c));
          break;
        case 't':
          v = rel_s(sqlite3_column_int64(st, c), t0);
          break;
        case 'r':
          v = isfinite(sqlite3_column_double(st, c)) ? json_real(sqlite3_column_double(st, c))
                                                     : NULL;
          break;
        case 's':
          v = json_stringn_nocheck((const char *)sqlite3_column_text(st, c),
                                   (size_t)sqlite3_column_bytes(st, c));
          break;
        case 'j':
          v = json_loads((const char *)sqlite3_column_text(st, c), JSON_DECODE_ANY, NULL);
          break;
        }
      }
      json_array_append_new(row, v ? v : json_null());
    }
    json_array_append_new(arr, row);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return db_error(s, sql, err);
  return 0;
}

/* One integer from sql (0 when NULL or no row). */
static int scalar(sg_report_src *s, const char *sql, int64_t *v, sg_err *err) {
  sqlite3_stmt *st = NULL;
  *v = 0;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    *v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_error(s, sql, err);
}

char *sg_report_redact_url(const char *url) {
  const char *scheme = strstr(url, "://");
  if (!scheme)
    return sg_strdup(url);
  const char *host = scheme + 3;
  const char *end = host + strcspn(host, "/?#");
  const char *at = NULL;
  for (const char *p = host; p < end; p++)
    if (*p == '@')
      at = p;
  if (!at)
    return sg_strdup(url);
  return sg_asprintf("%.*s%s", (int)(host - url), url, at + 1);
}

/* The configuration as the page shows it: every string that is a URL
 * without its userinfo. */
static json_t *redacted_config(json_t *cfg) {
  if (!json_is_object(cfg))
    return json_object();
  const char *k;
  json_t *v;
  json_object_foreach(cfg, k, v) {
    if (json_is_string(v) && strstr(json_string_value(v), "://")) {
      char *r = sg_report_redact_url(json_string_value(v));
      json_object_set_new(cfg, k, json_string(r));
      free(r);
    }
  }
  return json_incref(cfg);
}

/* The latest time recorded anywhere (the summary's e2e for an open run). */
static const char *latest_sql =
    "SELECT max(t) FROM (SELECT max(coalesce(ended_us, started_us)) AS t FROM iterations "
    "UNION ALL SELECT max(coalesce(ended_us, started_us)) FROM generations "
    "UNION ALL SELECT max(coalesce(ended_us, started_us, queued_us)) FROM evaluations "
    "UNION ALL SELECT max(ended_us) FROM device_intervals "
    "UNION ALL SELECT max(at_us) FROM decisions "
    "UNION ALL SELECT max(created_us) FROM candidates "
    "UNION ALL SELECT max(coalesce(ended_us, started_us)) FROM workflows "
    "UNION ALL SELECT max(started_us) FROM runs)";

static int run_header(sg_report_src *s, json_t *o, int64_t *t0, sg_err *err) {
  const char *sql = "SELECT id, config_json, devices, started_us, ended_us FROM runs "
                    "ORDER BY id LIMIT 1";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return rc == SQLITE_DONE
               ? sg_err_set(err, SG_ENOENT, "%s: the run has not begun (no run recorded)",
                            s->db_path)
               : db_error(s, sql, err);
  }
  json_t *cfg = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
  int devices = sqlite3_column_int(st, 2);
  *t0 = sqlite3_column_int64(st, 3);
  bool ended = sqlite3_column_type(st, 4) != SQLITE_NULL;
  int64_t end_us = sqlite3_column_int64(st, 4);
  sqlite3_finalize(st);
  if (!ended && (rc = scalar(s, latest_sql, &end_us, err)) < 0) {
    json_decref(cfg);
    return rc;
  }
  json_t *red = redacted_config(cfg);
  json_decref(cfg);
  const char *base = strrchr(s->dir, '/');
  base = base && base[1] ? base + 1 : s->dir;
  json_object_set_new(o, "run",
                      json_pack("{s:s, s:o, s:i, s:I, s:o, s:b}", "dir", base, "config", red,
                                "devices", devices, "started_us", (json_int_t)*t0, "e2e_s",
                                rel_s(end_us > *t0 ? end_us : *t0, *t0), "ended", ended));
  return 0;
}

/* The row arrays (docs/report.md, "Data"): name, kinds, SQL. */
/* The generations of a version-3 store: an answer at the length cap is a
 * spec generation whose kind reads "answer_at_cap", so that no count of
 * kind "spec" (the speculative forks) takes it in. */
#define GEN_SQL_V3                                                                    \
  "SELECT id, iteration_id, CASE WHEN answer_at_cap THEN 'answer_at_cap' ELSE kind END, " \
  "parent_id, started_us, ended_us, prompt_tokens, completion_tokens, cached_tokens, "    \
  "outcome FROM generations ORDER BY id"

static const struct {
  const char *name, *kinds, *sql;
} tables[] = {
    {"workflows", "isstt",
     "SELECT id, task, state, started_us, ended_us FROM workflows ORDER BY id"},
    {"iterations", "iiitts",
     "SELECT id, workflow_id, number, started_us, ended_us, end_reason FROM iterations "
     "ORDER BY id"},
    {"generations", "iisittiiis",
     "SELECT id, iteration_id, kind, parent_id, started_us, ended_us, prompt_tokens, "
     "completion_tokens, cached_tokens, outcome FROM generations ORDER BY id"},
    /* the kernel's one figure, as the summary and `specgen show` take it */
    {"candidates", "iitirst",
     "SELECT c.id, c.generation_id, c.created_us, length(CAST(c.source AS BLOB)),"
     " f.speedup, f.phase, f.ended_us FROM candidates c"
     " LEFT JOIN evaluations f ON f.id = " SG_STORE_FIGURE_EVAL_SQL " ORDER BY c.id"},
    {"evaluations", "iistttsrss",
     "SELECT id, candidate_id, phase, queued_us, started_us, ended_us, status, speedup, "
     "device, substr(message, 1, 160) FROM evaluations ORDER BY id"},
    {"device_intervals", "sstt",
     "SELECT device, phase, started_us, ended_us FROM device_intervals ORDER BY id"},
    {"decisions", "iistj",
     "SELECT workflow_id, iteration_id, kind, at_us, detail_json FROM decisions ORDER BY id"},
};

static int details(sg_report_src *s, json_t *o, sg_err *err);

static int run_data(sg_report_src *s, bool with_details, json_t *o, sg_err *err) {
  int64_t t0 = 0;
  int rc = run_header(s, o, &t0, err);
  for (size_t i = 0; rc == 0 && i < sizeof tables / sizeof tables[0]; i++) {
    json_t *arr = json_array();
    json_object_set_new(o, tables[i].name, arr);
    bool v3gen = s->version >= 3 && strcmp(tables[i].name, "generations") == 0;
    rc = rows(s, v3gen ? GEN_SQL_V3 : tables[i].sql, tables[i].kinds, t0, arr, err);
  }
  if (rc == 0 && with_details)
    rc = details(s, o, err);
  return rc;
}

/* ---- details ------------------------------------------------------------------ */

static json_t *col_json(sqlite3_stmt *st, int c, char kind) {
  if (sqlite3_column_type(st, c) == SQLITE_NULL)
    return json_null();
  switch (kind) {
  case 'i':
    return json_integer(sqlite3_column_int64(st, c));
  case 'r':
    return isfinite(sqlite3_column_double(st, c)) ? json_real(sqlite3_column_double(st, c))
                                                  : json_null();
  case 'j': {
    json_t *v = json_loads((const char *)sqlite3_column_text(st, c), JSON_DECODE_ANY, NULL);
    return v ? v : json_null();
  }
  default:
    return json_stringn_nocheck((const char *)sqlite3_column_text(st, c),
                                (size_t)sqlite3_column_bytes(st, c));
  }
}

#define EVAL_DETAIL_SQL                                                                  \
  "SELECT id, candidate_id, phase, status, device, speedup, ref_ms, cand_ms, message, "  \
  "metrics_json FROM evaluations "

/* Appends an evaluation row of EVAL_DETAIL_SQL to the candidate c. */
static void eval_detail(sqlite3_stmt *st, json_t *c) {
  static const char *names[] = {"id", NULL, "phase", "status", "device", "speedup",
                                "ref_ms", "cand_ms", "message", "metrics"};
  static const char kinds[] = "iisssrrrsj";
  json_t *e = json_object();
  for (int k = 0; k < 10; k++)
    if (names[k])
      json_object_set_new(e, names[k], col_json(st, k, kinds[k]));
  json_array_append_new(json_object_get(c, "evaluations"), e);
}

static json_t *candidate_obj(sqlite3_stmt *st) {
  return json_pack("{s:I, s:o, s:[]}", "id", (json_int_t)sqlite3_column_int64(st, 0),
                   "source", col_json(st, 1, 's'), "evaluations");
}

static int details(sg_report_src *s, json_t *o, sg_err *err) {
  json_t *d = json_object();
  json_object_set_new(o, "details", d);
  const char *sql = "SELECT id, source FROM candidates ORDER BY id";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  int rc;
  char key[32];
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    snprintf(key, sizeof key, "%lld", (long long)sqlite3_column_int64(st, 0));
    json_object_set_new(d, key, candidate_obj(st));
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return db_error(s, sql, err);
  sql = EVAL_DETAIL_SQL "ORDER BY id";
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    snprintf(key, sizeof key, "%lld", (long long)sqlite3_column_int64(st, 1));
    json_t *c = json_object_get(d, key);
    if (c)
      eval_detail(st, c);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : db_error(s, sql, err);
}

int sg_report_candidate_json(sg_report_src *s, int64_t id, json_t **out, sg_err *err) {
  *out = NULL;
  if (!s->db)
    return sg_err_set(err, SG_ENOENT, "%s: a sim campaign has no candidates", s->dir);
  const char *sql = "SELECT id, source FROM candidates WHERE id = ?1";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(s, sql, err);
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  json_t *c = rc == SQLITE_ROW ? candidate_obj(st) : NULL;
  sqlite3_finalize(st);
  if (!c)
    return rc == SQLITE_DONE
               ? sg_err_set(err, SG_ENOENT, "%s: no candidate %lld", s->db_path, (long long)id)
               : db_error(s, sql, err);
  sql = EVAL_DETAIL_SQL "WHERE candidate_id = ?1 ORDER BY id";
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
    json_decref(c);
    return db_error(s, sql, err);
  }
  sqlite3_bind_int64(st, 1, id);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    eval_detail(st, c);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    json_decref(c);
    return db_error(s, sql, err);
  }
  *out = c;
  return 0;
}

/* ---- the whole ---------------------------------------------------------------- */

int sg_report_data_json(sg_report_src *s, bool with_details, json_t **out, sg_err *err) {
  *out = NULL;
  json_t *o = json_pack("{s:i, s:s}", "format", SG_REPORT_FORMAT, "kind",
                        s->db ? "run" : "sim");
  int rc = 0;
  if (s->db) {
    /* One read transaction: every table from the same moment of a live run. */
    char *e = NULL;
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, &e) != SQLITE_OK) {
      sqlite3_free(e);
      json_decref(o);
      return db_error(s, "BEGIN", err);
    }
    rc = run_data(s, with_details, o, err);
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
  } else {
    json_object_set(o, "campaigns", s->campaigns);
    json_error_t je;
    json_t *paper = json_loadb((const char *)sg_report_asset_paper_numbers,
                               sg_report_asset_paper_numbers_len, 0, &je);
    if (!paper)
      rc = sg_err_set(err, SG_EPARSE, "paper-numbers.json:%d: %s (a build defect)", je.line,
                      je.text);
    else
      json_object_set_new(o, "paper", paper);
  }
  if (rc < 0) {
    json_decref(o);
    return rc;
  }
  *out = o;
  return 0;
}

/* ---- saving a campaign -------------------------------------------------------- */

static void file_part(sg_buf *b, const char *s) {
  for (; *s; s++)
    sg_buf_printf(b, "%c", isalnum((unsigned char)*s) || strchr("-+.", *s) ? *s : '_');
}

int sg_report_campaign_save(const char *dir, const char *text, char **path, sg_err *err) {
  if (path)
    *path = NULL;
  json_error_t je;
  json_t *c = json_loads(text, 0, &je);
  json_t *params = json_object_get(c, "params");
  const char *preset = json_string_value(json_object_get(c, "preset"));
  const char *crit = json_string_value(json_object_get(params, "termination"));
  if (!preset || !crit || !json_is_array(json_object_get(c, "configs"))) {
    json_decref(c);
    return sg_err_set(err, SG_EPARSE, "not a campaign report (no preset, termination or "
                      "configs)");
  }
  int rc = sg_mkdir_p(dir, err);
  if (rc == 0) {
    sg_buf b;
    sg_buf_init(&b, 0);
    sg_buf_printf(&b, "%s/campaign-", dir);
    file_part(&b, preset);
    sg_buf_puts(&b, "-");
    file_part(&b, crit);
    sg_buf_puts(&b, ".json");
    rc = sg_file_write(sg_buf_str(&b), text, strlen(text), err);
    if (rc == 0 && path)
      *path = sg_buf_steal(&b);
    sg_buf_free(&b);
  }
  json_decref(c);
  return rc;
}
