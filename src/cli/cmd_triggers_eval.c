/* cmd_triggers_eval.c: `specgen triggers --eval DIR`: the scanner measured
 * against annotated traces.
 *
 * DIR holds NAME.txt (a reasoning trace) and NAME.ann (where each trigger
 * should fire, sg_triggers_eval.h) for each trace. Every trace is scanned
 * with the given options and compared; the table gives precision, recall
 * and offset error per model family and class, and over all traces.
 */
#include "cli/cmd_triggers_eval.h"

#include "cli/commands.h"
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "core/sg_triggers_eval.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVAL_TRACE_MAX_BYTES (64u << 20)
#define EVAL_FAMILIES_MAX 32
#define EVAL_TRACES_MAX 100000

typedef struct family {
  char name[SG_TRIG_FAMILY_MAX];
  uint64_t traces;
  sg_trig_score score[SG_TRIGGER__COUNT];
} family;

typedef struct got_list {
  sg_trigger *v;
  size_t n, cap;
} got_list;

static void on_got(void *user, const sg_trigger *t) {
  got_list *g = user;
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 64;
    g->v = sg_realloc(g->v, g->cap * sizeof *g->v);
  }
  g->v[g->n++] = *t;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The NAME.txt files of dir, sorted; NULL and a message when unreadable. */
static char **list_traces(const char *dir, size_t *n) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return NULL;
  size_t cap = 16;
  char **v = sg_malloc(cap * sizeof *v);
  *n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && *n < EVAL_TRACES_MAX) {
    size_t l = strlen(e->d_name);
    if (l <= 4 || strcmp(e->d_name + l - 4, ".txt") != 0 || e->d_name[0] == '.')
      continue;
    if (*n == cap) {
      cap *= 2;
      v = sg_realloc(v, cap * sizeof *v);
    }
    v[(*n)++] = sg_strndup(e->d_name, l - 4);
  }
  closedir(d);
  qsort(v, *n, sizeof *v, name_cmp);
  return v;
}

static family *family_of(family *f, size_t *nf, const char *name) {
  const char *nm = name[0] ? name : "unknown";
  for (size_t i = 0; i < *nf; i++)
    if (strcmp(f[i].name, nm) == 0)
      return &f[i];
  if (*nf == EVAL_FAMILIES_MAX)
    return NULL;
  family *x = &f[(*nf)++];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", nm);
  return x;
}

/* Scans and scores one trace; 0, or an exit status with the message
 * printed. */
static int eval_one(const char *dir, const char *base, const sg_scanner_opts *o,
                    uint64_t window, family *fam, size_t *nf, family *all) {
  char path[4096], apath[4096];
  snprintf(path, sizeof path, "%s/%s.txt", dir, base);
  snprintf(apath, sizeof apath, "%s/%s.ann", dir, base);
  char *text = NULL, *ann = NULL;
  size_t len = 0, alen = 0;
  sg_err err;
  sg_err_clear(&err);
  if (sg_file_read(path, EVAL_TRACE_MAX_BYTES, &text, &len, &err) < 0 ||
      sg_file_read(apath, EVAL_TRACE_MAX_BYTES, &ann, &alen, &err) < 0) {
    fprintf(stderr, "specgen triggers --eval: %s\n", err.msg);
    free(text);
    return SG_EXIT_USAGE;
  }
  sg_trig_anns want;
  if (sg_trig_anns_parse(ann, alen, apath, &want, &err) < 0) {
    fprintf(stderr, "specgen triggers --eval: %s\n", err.msg);
    free(text);
    free(ann);
    return SG_EXIT_USAGE;
  }
  got_list got = {0};
  sg_scanner *s = sg_scanner_new(o);
  sg_scanner_feed(s, text, len, on_got, &got);
  sg_scanner_finish(s, on_got, &got);
  sg_scanner_free(s);
  family *f = family_of(fam, nf, want.family);
  int rc = 0;
  if (f == NULL) {
    fprintf(stderr, "specgen triggers --eval: %s: more than %d model families\n",
            apath, EVAL_FAMILIES_MAX);
    rc = SG_EXIT_USAGE;
  } else {
    sg_trig_eval_add(&want, got.v, got.n, window, f->score);
    sg_trig_eval_add(&want, got.v, got.n, window, all->score);
    f->traces++;
    all->traces++;
  }
  free(got.v);
  sg_trig_anns_free(&want);
  free(text);
  free(ann);
  return rc;
}

static json_t *row_json(const family *f, int k) {
  const sg_trig_score *s = &f->score[k];
  return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I}",
                   "family", f->name, "class", sg_trigger_class_name(k),
                   "expected", (json_int_t)s->expected, "reported",
                   (json_int_t)s->reported, "matched", (json_int_t)s->matched,
                   "exact", (json_int_t)s->exact, "precision",
                   sg_trig_score_precision(s), "recall", sg_trig_score_recall(s),
                   "offset_err_mean_bytes",
                   s->matched ? (double)s->err_sum_bytes / (double)s->matched : 0.0,
                   "offset_err_max_bytes", (json_int_t)s->err_max_bytes);
}

static void print_rows(const family *f) {
  for (int k = 0; k < SG_TRIGGER__COUNT; k++) {
    const sg_trig_score *s = &f->score[k];
    if (s->expected == 0 && s->reported == 0)
      continue;
    printf("%-28s %-6s %8llu %8llu %7llu %9.1f%% %6.1f%% %7llu %8.1f %7llu\n",
           f->name, sg_trigger_class_name(k), (unsigned long long)s->expected,
           (unsigned long long)s->reported, (unsigned long long)s->matched,
           100.0 * sg_trig_score_precision(s), 100.0 * sg_trig_score_recall(s),
           (unsigned long long)s->exact,
           s->matched ? (double)s->err_sum_bytes / (double)s->matched : 0.0,
           (unsigned long long)s->err_max_bytes);
  }
}

int sg_cmd_triggers_eval(const char *dir, bool json, const sg_scanner_opts *o,
                         uint64_t window) {
  size_t n = 0;
  char **names = list_traces(dir, &n);
  if (names == NULL) {
    fprintf(stderr, "specgen triggers --eval: %s: not a readable directory\n", dir);
    return SG_EXIT_USAGE;
  }
  int rc = 0;
  if (n == 0) {
    fprintf(stderr, "specgen triggers --eval: %s: no NAME.txt traces in it\n", dir);
    rc = SG_EXIT_USAGE;
  }
  family *fam = sg_calloc(EVAL_FAMILIES_MAX, sizeof *fam);
  size_t nf = 0;
  family all;
  memset(&all, 0, sizeof all);
  snprintf(all.name, sizeof all.name, "all");
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = eval_one(dir, names[i], o, window, fam, &nf, &all);
  if (rc == 0 && json) {
    json_t *rows = json_array();
    for (size_t i = 0; i < nf; i++)
      for (int k = 0; k < SG_TRIGGER__COUNT; k++)
        json_array_append_new(rows, row_json(&fam[i], k));
    for (int k = 0; k < SG_TRIGGER__COUNT; k++)
      json_array_append_new(rows, row_json(&all, k));
    json_t *top = json_pack("{s:I, s:I, s:o}", "traces", (json_int_t)all.traces,
                            "window_bytes", (json_int_t)window, "rows", rows);
    char *line = json_dumps(top, JSON_COMPACT);
    printf("%s\n", line);
    free(line);
    json_decref(top);
  } else if (rc == 0) {
    printf("%-28s %-6s %8s %8s %7s %10s %7s %7s %8s %7s\n", "family", "class",
           "expected", "reported", "matched", "precision", "recall", "exact",
           "err_mean", "err_max");
    for (size_t i = 0; i < nf; i++)
      print_rows(&fam[i]);
    print_rows(&all);
    printf("%llu traces; a match is the same class within %llu bytes; offset "
           "errors in bytes\n",
           (unsigned long long)all.traces, (unsigned long long)window);
  }
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  free(fam);
  return rc;
}
