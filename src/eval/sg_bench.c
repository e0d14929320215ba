/* sg_bench.c: the task sets, candidates and report of `specgen bench` (see
 * the header). */
#include "eval/sg_bench.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_task_kb.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void add_row(sg_bench *b, sg_task *t, const char *label) {
  b->rows = sg_realloc(b->rows, (b->n + 1) * sizeof *b->rows);
  sg_bench_row *r = &b->rows[b->n++];
  memset(r, 0, sizeof *r);
  r->task = t;
  r->label = label ? sg_strdup(label) : NULL;
  sg_eval_result_init(&r->result);
  r->wall_s = NAN;
}

long sg_bench_paper_rank(const sg_task *t) {
  const char *kb = json_string_value(json_object_get(t->raw, "kernelbench"));
  if (!kb || strncmp(kb, "level", 5) != 0)
    return LONG_MAX;
  long level = strtol(kb + 5, NULL, 10);
  const char *slash = strchr(kb, '/');
  long num = slash ? sg_task_kb_number(slash + 1) : -1;
  return level * 100000 + (num < 0 ? 99999 : num);
}

static int cmp_rank(const void *a, const void *b) {
  long x = sg_bench_paper_rank(*(sg_task *const *)a);
  long y = sg_bench_paper_rank(*(sg_task *const *)b);
  return x < y ? -1 : x > y;
}

static int add_paper(sg_bench *b, sg_err *err) {
  sg_task **all = NULL;
  size_t n = 0;
  int rc = sg_task_list(&all, &n, err);
  if (rc)
    return rc;
  sg_task **cuda = sg_calloc(n ? n : 1, sizeof *cuda);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(all[i]->evaluator, "cuda") == 0) {
      cuda[k++] = all[i];
      all[i] = NULL;
    }
  }
  sg_task_list_free(all, n);
  qsort(cuda, k, sizeof *cuda, cmp_rank);
  for (size_t i = 0; i < k; i++) {
    char label[32];
    snprintf(label, sizeof label, "T%zu", i + 1);
    add_row(b, cuda[i], label);
  }
  free(cuda);
  if (k == 0)
    return sg_err_set(err, SG_ENOENT, "paper: no built-in cuda task found");
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder: task directories (each with task.json) or KernelBench files. */
static int add_folder(sg_bench *b, const char *dir, sg_err *err) {
  DIR *d = opendir(dir);
  if (!d)
    return sg_err_set(err, SG_ENOENT, "%s: cannot open", dir);
  char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    char *json = sg_asprintf("%s/%s/task.json", dir, de->d_name);
    if (is_file(json)) {
      names = sg_realloc(names, (n + 1) * sizeof *names);
      names[n++] = sg_strdup(de->d_name);
    }
    free(json);
  }
  closedir(d);
  int rc = 0;
  if (n == 0) {
    sg_task **ts = NULL;
    size_t nt = 0;
    rc = sg_task_kb_list(dir, &ts, &nt, err);
    for (size_t i = 0; !rc && i < nt; i++)
      add_row(b, ts[i], NULL);
    free(ts);
    return rc;
  }
  qsort(names, n, sizeof *names, cmp_name);
  for (size_t i = 0; i < n; i++) {
    char *p = sg_asprintf("%s/%s", dir, names[i]);
    sg_task *t = NULL;
    if (!rc && (rc = sg_task_load(p, &t, err)) == 0)
      add_row(b, t, NULL);
    free(p);
    free(names[i]);
  }
  free(names);
  return rc;
}

int sg_bench_add_tasks(sg_bench *b, const char *spec, sg_err *err) {
  if (strcmp(spec, "paper") == 0)
    return add_paper(b, err);
  bool kb_level = strncmp(spec, "kernelbench:", 12) == 0 && !strchr(spec + 12, '/');
  if (kb_level) {
    sg_task **ts = NULL;
    size_t n = 0;
    int rc = sg_task_kb_list(spec, &ts, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
      add_row(b, ts[i], NULL);
    free(ts);
    return rc;
  }
  char *json = sg_asprintf("%s/task.json", spec);
  bool task_dir = is_file(json);
  free(json);
  if (is_dir(spec) && !task_dir)
    return add_folder(b, spec, err);
  sg_task *t = NULL;
  int rc = sg_task_load(spec, &t, err);
  if (rc == 0)
    add_row(b, t, NULL);
  return rc;
}

static const char *ext_of(const sg_task *t) {
  return strcmp(t->language, "python") == 0 ? "py"
         : strcmp(t->language, "cuda") == 0 ? "cu"
                                            : "c";
}

char *sg_bench_find_candidate(const sg_task *task, const char *dir) {
  /* a run directory: its best kernels */
  char *best = sg_asprintf("%s/best", dir), *summary = sg_asprintf("%s/summary.json", dir);
  if (is_dir(best) && is_file(summary)) {
    char *c = sg_bench_find_candidate(task, best);
    free(best);
    free(summary);
    return c;
  }
  free(best);
  free(summary);
  const char *ext = ext_of(task);
  char *p = sg_asprintf("%s/%s.%s", dir, task->name, ext);
  if (is_file(p))
    return p;
  free(p);
  long num = sg_task_kb_number(task->name);
  if (num < 0)
    return NULL;
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  char *first = NULL;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name), el = strlen(ext);
    if (de->d_name[0] == '.' || len <= el + 1 || strcmp(de->d_name + len - el, ext) != 0 ||
        de->d_name[len - el - 1] != '.')
      continue;
    const char *tail = NULL;
    char *end = NULL;
    if (!isdigit((unsigned char)de->d_name[0]))
      continue;
    long v = strtol(de->d_name, &end, 10);
    tail = end;
    if (v != num || (*tail != '_' && *tail != '.'))
      continue;
    if (!first || strcmp(de->d_name, first) < 0) {
      free(first);
      first = sg_strdup(de->d_name);
    }
  }
  closedir(d);
  if (!first)
    return NULL;
  p = sg_asprintf("%s/%s", dir, first);
  free(first);
  return p;
}

char *sg_bench_find_example(const sg_task *task, const char *labels) {
  sg_task_example *ex = NULL;
  size_t n = 0;
  sg_err err;
  if (sg_task_examples(task, &ex, &n, &err))
    return NULL;
  char *found = NULL;
  char *copy = sg_strdup(labels);
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok && !found;
       tok = strtok_r(NULL, ",", &save)) {
    for (size_t i = 0; i < n && !found; i++) {
      char *full = sg_asprintf("%s-%s", ex[i].expected_status, ex[i].label);
      if (strcmp(full, tok) == 0)
        found = sg_strdup(ex[i].path);
      free(full);
    }
  }
  free(copy);
  sg_task_examples_free(ex, n);
  return found;
}

static const char *base_name(const char *p) {
  const char *s = p ? strrchr(p, '/') : NULL;
  return s ? s + 1 : p ? p : "-";
}

const char *sg_bench_row_status(const sg_bench_row *r) {
  if (!r->candidate)
    return "missing";
  if (!r->evaluated)
    return "not_run";
  return r->infra ? "infra_error" : sg_eval_status_name(r->result.status);
}

double sg_bench_row_validation_s(const sg_bench_row *r) {
  const json_t *w = r->evaluated && !r->infra ? json_object_get(r->result.stages, "wrong_s")
                                              : NULL;
  if (!json_is_number(w) || !isfinite(r->result.run_s))
    return NAN;
  return r->result.run_s - json_number_value(w);
}

/* An infra_error row: specgen failed (r->infra) or the evaluator said the
 * machine or specgen failed (a reference out of device memory, say). */
static bool row_infra(const sg_bench_row *r) {
  return r->candidate && r->evaluated &&
         (r->infra || r->result.status == SG_EVAL_INFRA_ERROR);
}

bool sg_bench_failed(const sg_bench *b) {
  for (size_t i = 0; i < b->n; i++)
    if (b->rows[i].candidate && (!b->rows[i].evaluated || row_infra(&b->rows[i])))
      return true;
  return b->wrong && sg_bench_failed(b->wrong);
}

void sg_bench_take_wrong(sg_bench *b, size_t i) {
  if (!b->wrong || i >= b->n || i >= b->wrong->n || !b->rows[i].evaluated)
    return;
  const sg_bench_row *r = &b->rows[i];
  sg_bench_row *w = &b->wrong->rows[i];
  sg_eval_result_free(&w->result);
  sg_eval_result_init(&w->result);
  w->wall_s = NAN; /* its time is in the same row's */
  w->infra = r->infra || r->result.status == SG_EVAL_INFRA_ERROR;
  if (w->infra) { /* the evaluation failed for both candidates */
    w->evaluated = true;
    w->infra = r->infra;
    w->result.status = SG_EVAL_INFRA_ERROR;
    w->result.message = sg_strdup(r->result.message ? r->result.message : "");
    return;
  }
  const json_t *v = r->result.self_check_wrong;
  const char *st = json_string_value(json_object_get(v, "status"));
  sg_err err;
  if (v && st && sg_eval_status_parse(st) >= 0 &&
      sg_eval_result_from_json(v, &w->result, &err) == 0) {
    w->evaluated = true;
    return;
  }
  sg_eval_result_init(&w->result);
  w->evaluated = false;
  const char *msg = json_string_value(json_object_get(v, "message"));
  w->result.message = msg ? sg_strdup(msg)
                          : sg_asprintf("not decided: the validation ended (%s) without "
                                        "the wrong candidate's verdict",
                                        sg_eval_status_name(r->result.status));
}

/* What the self-check appends to a reference, by mode. */
static const char *self_check_tail(const char *mode) {
  if (strcmp(mode, "same") == 0)
    return "\n\n# specgen bench --self-check same: the reference given back as its own "
           "candidate\nModelNew = Model\n";
  if (strcmp(mode, "wrong") == 0)
    return "\n\n# specgen bench --self-check wrong: the reference with a small slice of "
           "its first output\n# perturbed past any tolerance; it must not come out ok\n"
           "from specgen_kb import selfcheck as _specgen_selfcheck\n\n\n"
           "class ModelNew(Model):\n"
           "    def forward(self, *args, **kwargs):\n"
           "        return _specgen_selfcheck.wrong(super().forward(*args, **kwargs))\n";
  return NULL;
}

/* "both": b's wrong rows, the same tasks (borrowed) and candidates. */
static void add_wrong_rows(sg_bench *b) {
  sg_bench *w = sg_calloc(1, sizeof *w);
  w->borrowed = true;
  w->self_check = "wrong";
  for (size_t i = 0; i < b->n; i++) {
    add_row(w, b->rows[i].task, b->rows[i].label);
    w->rows[i].candidate = sg_strdup(b->rows[i].candidate);
  }
  b->wrong = w;
}

int sg_bench_self_check(sg_bench *b, const char *mode, const char *dir, sg_err *err) {
  bool both = mode && strcmp(mode, "both") == 0;
  const char *tail = mode ? self_check_tail(both ? "same" : mode) : NULL;
  if (!tail)
    return sg_err_set(err, SG_EINVAL, "--self-check: expected same, wrong or both, got %s",
                      mode ? mode : "nothing");
  for (size_t i = 0; i < b->n; i++)
    if (strcmp(b->rows[i].task->evaluator, "kernelbench") != 0)
      return sg_err_set(err, SG_EINVAL, "--self-check: task %s is a %s task; the "
                        "self-check is of the kernelbench harness",
                        b->rows[i].task->name, b->rows[i].task->evaluator);
  for (size_t i = 0; i < b->n; i++) {
    sg_bench_row *r = &b->rows[i];
    sg_buf text;
    sg_buf_init(&text, r->task->reference_len + 512);
    sg_buf_append(&text, r->task->reference_source, r->task->reference_len);
    sg_buf_puts(&text, tail);
    char *path = sg_asprintf("%s/%zu_%s.py", dir, i, r->task->name);
    int rc = sg_file_write(path, text.data, text.len, err);
    sg_buf_free(&text);
    if (rc) {
      free(path);
      return rc;
    }
    free(r->candidate);
    r->candidate = path;
  }
  b->self_check = both ? "both" : strcmp(mode, "same") == 0 ? "same" : "wrong";
  if (both)
    add_wrong_rows(b);
  return 0;
}

void sg_bench_table(const sg_bench *b, sg_buf *out) {
  if (b->wrong) { /* "both": each mode's table, as alone */
    sg_bench same = *b;
    same.self_check = "same";
    same.wrong = NULL;
    sg_bench_table(&same, out);
    sg_buf_puts(out, "\n");
    sg_bench_table(b->wrong, out);
    return;
  }
  if (b->self_check)
    sg_buf_printf(out, "self-check %s: %s; the heavy-operator rule is off\n", b->self_check,
                  strcmp(b->self_check, "same") == 0
                      ? "each task's reference is its own candidate (expect ok at about 1.0x)"
                      : "each task's reference with a slice of its output perturbed "
                        "(expect none ok)");
  sg_buf_printf(out, "%-4s %-32s %-34s %-15s %-15s %8s %10s %10s %8s\n", "", "task",
                "candidate", "specgen", "kernelbench", "speedup", "ref_ms", "cand_ms",
                "time_s");
  for (size_t i = 0; i < b->n; i++) {
    const sg_bench_row *r = &b->rows[i];
    const sg_eval_result *e = &r->result;
    char sp[32] = "-", rm[32] = "-", cm[32] = "-", ts[32] = "-";
    if (r->evaluated && e->status == SG_EVAL_OK && isfinite(e->speedup))
      snprintf(sp, sizeof sp, "%.3fx", e->speedup);
    if (r->evaluated && isfinite(e->ref_ms))
      snprintf(rm, sizeof rm, "%.4f", e->ref_ms);
    if (r->evaluated && isfinite(e->cand_ms))
      snprintf(cm, sizeof cm, "%.4f", e->cand_ms);
    if (isfinite(r->wall_s))
      snprintf(ts, sizeof ts, "%.2f", r->wall_s);
    sg_buf_printf(out, "%-4s %-32s %-34s %-15s %-15s %8s %10s %10s %8s\n",
                  r->label ? r->label : "", r->task->name, base_name(r->candidate),
                  sg_bench_row_status(r),
                  r->evaluated && e->kernelbench_status ? e->kernelbench_status : "-", sp,
                  rm, cm, ts);
  }
}

/* Statuses a row can print: the evaluators' and bench's own. */
#define MAX_STATUSES 24

typedef struct tally {
  size_t tasks, evaluated, ok, kb_ok, kb_given, infra, missing;
  const char *status[MAX_STATUSES];
  size_t status_n[MAX_STATUSES], nstatus;
  double log_sum, total_s;
  size_t n_speed;
} tally;

static tally count(const sg_bench *b) {
  tally t;
  memset(&t, 0, sizeof t);
  t.tasks = b->n;
  for (size_t i = 0; i < b->n; i++) {
    const sg_bench_row *r = &b->rows[i];
    const char *st = sg_bench_row_status(r);
    size_t k = 0;
    while (k < t.nstatus && strcmp(t.status[k], st) != 0)
      k++;
    assert(k < MAX_STATUSES);
    if (k == t.nstatus)
      t.status[t.nstatus++] = st;
    t.status_n[k]++;
    if (!r->candidate) {
      t.missing++;
      continue;
    }
    if (!r->evaluated)
      continue;
    t.evaluated++;
    if (isfinite(r->wall_s))
      t.total_s += r->wall_s;
    if (row_infra(r)) {
      t.infra++;
      continue;
    }
    if (r->result.status == SG_EVAL_OK) {
      t.ok++;
      if (isfinite(r->result.speedup) && r->result.speedup > 0) {
        t.log_sum += log(r->result.speedup);
        t.n_speed++;
      }
    }
    if (r->result.kernelbench_status)
      t.kb_given++;
    if (r->result.kernelbench_status && strcmp(r->result.kernelbench_status, "ok") == 0)
      t.kb_ok++;
  }
  return t;
}

void sg_bench_summary(const sg_bench *b, sg_buf *out) {
  if (b->wrong) {
    sg_bench same = *b;
    same.wrong = NULL;
    sg_buf_puts(out, "self-check same: ");
    sg_bench_summary(&same, out);
    sg_buf_puts(out, "self-check wrong (checked in the same validations; its times are "
                     "theirs): ");
    sg_bench_summary(b->wrong, out);
    return;
  }
  tally t = count(b);
  sg_buf_printf(out, "%zu tasks, %zu candidates evaluated (%zu missing): %zu correct by "
                "specgen's check", t.tasks, t.evaluated, t.missing, t.ok);
  if (t.kb_given)
    sg_buf_printf(out, ", %zu by KernelBench's", t.kb_ok);
  if (t.infra)
    sg_buf_printf(out, ", %zu not evaluated (infra_error)", t.infra);
  if (t.n_speed)
    sg_buf_printf(out, "; geometric mean speedup of the correct ones %.3fx",
                  exp(t.log_sum / (double)t.n_speed));
  sg_buf_printf(out, "; %.1f s of compile and run\n", t.total_s);
  sg_buf_puts(out, "statuses:");
  for (size_t k = 0; k < t.nstatus; k++)
    sg_buf_printf(out, "%s %s %zu", k ? "," : "", t.status[k], t.status_n[k]);
  sg_buf_puts(out, "\n");
}

json_t *sg_bench_json(const sg_bench *b) {
  if (b->wrong) {
    sg_bench same = *b;
    same.self_check = "same";
    same.wrong = NULL;
    return json_pack("{s:s, s:o, s:o}", "self_check", "both", "same", sg_bench_json(&same),
                     "wrong", sg_bench_json(b->wrong));
  }
  json_t *rows = json_array();
  for (size_t i = 0; i < b->n; i++) {
    const sg_bench_row *r = &b->rows[i];
    json_t *j = r->evaluated && !r->infra ? sg_eval_result_to_json(&r->result) : json_object();
    json_object_set_new(j, "task", json_string(r->task->name));
    json_object_set_new(j, "task_dir", json_string(r->task->dir));
    json_object_set_new(j, "evaluator", json_string(r->task->evaluator));
    if (r->label)
      json_object_set_new(j, "label", json_string(r->label));
    json_object_set_new(j, "candidate", r->candidate ? json_string(r->candidate) : json_null());
    json_object_set_new(j, "status", json_string(sg_bench_row_status(r)));
    if (r->infra || (!r->evaluated && r->result.message))
      json_object_set_new(j, "message", json_string(r->result.message ? r->result.message : ""));
    json_object_set_new(j, "time_s", isfinite(r->wall_s) ? json_real(r->wall_s) : json_null());
    double v = sg_bench_row_validation_s(r);
    if (isfinite(v))
      json_object_set_new(j, "validation_s", json_real(v));
    json_array_append_new(rows, j);
  }
  tally t = count(b);
  json_t *s = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "tasks", (json_int_t)t.tasks,
                        "evaluated", (json_int_t)t.evaluated, "missing",
                        (json_int_t)t.missing, "ok", (json_int_t)t.ok, "kernelbench_ok",
                        (json_int_t)t.kb_ok, "infra_error", (json_int_t)t.infra,
                        "total_s", t.total_s);
  json_t *st = json_object();
  for (size_t k = 0; k < t.nstatus; k++)
    json_object_set_new(st, t.status[k], json_integer((json_int_t)t.status_n[k]));
  json_object_set_new(s, "statuses", st);
  json_object_set_new(s, "self_check", b->self_check ? json_string(b->self_check) : json_null());
  json_object_set_new(s, "geomean_speedup",
                      t.n_speed ? json_real(exp(t.log_sum / (double)t.n_speed)) : json_null());
  return json_pack("{s:o, s:o}", "rows", rows, "summary", s);
}

void sg_bench_free(sg_bench *b) {
  if (b->wrong) {
    sg_bench_free(b->wrong);
    free(b->wrong);
    b->wrong = NULL;
  }
  for (size_t i = 0; i < b->n; i++) {
    if (!b->borrowed)
      sg_task_free(b->rows[i].task);
    free(b->rows[i].label);
    free(b->rows[i].candidate);
    sg_eval_result_free(&b->rows[i].result);
  }
  free(b->rows);
  b->rows = NULL;
  b->n = 0;
}
