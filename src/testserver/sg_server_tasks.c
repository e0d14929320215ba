/* sg_server_tasks.c: finds task directories and loads them (with sg_task,
 * the one task loader) into the form the test model uses. Example files are
 * read with a cap, so a huge task directory cannot blow up the server.
 */
#include "testserver/sg_server_tasks.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_task.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXAMPLE_MAX_BYTES (256u << 10)
#define MAX_TASKS 1024

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The model's view of a task loaded by sg_task: names, shapes, examples. */
static int convert(const sg_task *st, sg_fm_task *t, sg_err *err) {
  memset(t, 0, sizeof *t);
  t->name = sg_strdup(st->name);
  t->evaluator = sg_strdup(st->evaluator);
  t->language = sg_strdup(st->language);
  t->description = sg_strdup(st->description);
  t->entry = sg_strdup(st->entry);
  t->signature = sg_strdup(st->signature);
  t->args = sg_calloc(st->nargs ? st->nargs : 1, sizeof *t->args);
  for (size_t i = 0; i < st->nargs; i++) {
    const sg_task_arg *a = &st->args[i];
    sg_fm_arg *fa = &t->args[t->nargs++];
    fa->name = sg_strdup(a->name);
    fa->kind = sg_strdup(a->kind == SG_ARG_INPUT    ? "input"
                         : a->kind == SG_ARG_OUTPUT ? "output"
                                                    : "scalar");
    fa->dtype = sg_strdup(sg_dtype_name(a->dtype));
    fa->ndims = a->ndims < 6 ? a->ndims : 6;
    for (int d = 0; d < fa->ndims; d++)
      fa->shape[d] = a->shape[d];
    fa->value = a->scalar_value;
  }
  sg_task_example *ex = NULL;
  size_t nex = 0;
  int rc = sg_task_examples(st, &ex, &nex, err);
  if (rc < 0)
    return rc;
  t->examples = sg_calloc(nex ? nex : 1, sizeof *t->examples);
  for (size_t i = 0; i < nex && rc == 0; i++) {
    char *code = NULL;
    rc = sg_file_read(ex[i].path, EXAMPLE_MAX_BYTES, &code, NULL, err);
    if (rc < 0)
      break;
    sg_fm_example *e = &t->examples[t->nexamples++];
    e->status = sg_strdup(ex[i].expected_status);
    e->label = sg_strdup(ex[i].label);
    e->code = code;
  }
  sg_task_examples_free(ex, nex);
  return rc;
}

static int load_task(const char *dir, sg_fm_task *t, sg_err *err) {
  sg_task *st = NULL;
  int rc = sg_task_load(dir, &st, err);
  if (rc < 0)
    return rc;
  rc = convert(st, t, err);
  sg_task_free(st);
  if (rc < 0)
    sg_fm_task_clear(t);
  return rc;
}

typedef struct task_list {
  sg_fm_task *v;
  size_t n, cap;
} task_list;

static int add_dir(task_list *l, const char *dir, int depth, sg_err *err) {
  char *tj = sg_asprintf("%s/task.json", dir);
  bool has = is_file(tj);
  free(tj);
  if (has) {
    if (l->n >= MAX_TASKS)
      return sg_err_set(err, SG_EFULL, "%s: more than %d tasks", dir, MAX_TASKS);
    if (l->n == l->cap) {
      l->cap = l->cap ? l->cap * 2 : 16;
      l->v = sg_realloc(l->v, l->cap * sizeof *l->v);
    }
    int rc = load_task(dir, &l->v[l->n], err);
    if (rc < 0)
      return rc;
    l->n++;
    return 0;
  }
  if (depth == 0)
    return 0;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct dirent *de;
  int rc = 0;
  while (rc == 0 && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char *sub = sg_asprintf("%s/%s", dir, de->d_name);
    if (is_dir(sub))
      rc = add_dir(l, sub, depth - 1, err);
    free(sub);
  }
  closedir(d);
  return rc;
}

static int cmp_task(const void *a, const void *b) {
  const sg_fm_task *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c)
    return c;
  return strcmp(x->evaluator ? x->evaluator : "", y->evaluator ? y->evaluator : "");
}

int sg_server_tasks_load(const char *root, sg_fm_task **out, size_t *n, sg_err *err) {
  *out = NULL;
  *n = 0;
  if (!root)
    root = sg_task_builtin_root();
  if (!*root)
    return 0;
  if (!is_dir(root))
    return sg_err_set(err, SG_ENOENT, "%s: no such tasks directory", root);
  task_list l = {0};
  int rc = add_dir(&l, root, 2, err);
  if (rc < 0) {
    for (size_t i = 0; i < l.n; i++)
      sg_fm_task_clear(&l.v[i]);
    free(l.v);
    return rc;
  }
  if (l.n > 1)
    qsort(l.v, l.n, sizeof *l.v, cmp_task);
  *out = l.v;
  *n = l.n;
  return 0;
}
