/* sg_server_tasks.c: reads task directories for the test model.
 *
 * It reads only what the model needs (names, shapes, examples), with jansson,
 * and caps every file it reads, so a huge or hostile task directory cannot
 * blow up the server.
 */
#include "llm/sg_server_tasks.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TASK_JSON_MAX_BYTES (1u << 20)
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

static char *opt_str(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? sg_strdup(json_string_value(v)) : NULL;
}

static int cmp_example(const void *a, const void *b) {
  const sg_fm_example *x = a, *y = b;
  int c = strcmp(x->status, y->status);
  return c ? c : strcmp(x->label, y->label);
}

static int load_examples(const char *dir, sg_fm_task *t, sg_err *err) {
  char *ex = sg_asprintf("%s/examples", dir);
  DIR *d = opendir(ex);
  if (!d) {
    free(ex);
    return 0; /* no examples: the model writes an empty body */
  }
  size_t cap = 0;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    const char *dash = strchr(nm, '-');
    const char *dot = strrchr(nm, '.');
    if (nm[0] == '.' || !dash || !dot || dot < dash)
      continue;
    char *path = sg_asprintf("%s/%s", ex, nm);
    if (!is_file(path)) {
      free(path);
      continue;
    }
    char *code = NULL;
    rc = sg_file_read(path, EXAMPLE_MAX_BYTES, &code, NULL, err);
    free(path);
    if (rc < 0)
      break;
    if (t->nexamples == cap) {
      cap = cap ? cap * 2 : 8;
      t->examples = sg_realloc(t->examples, cap * sizeof *t->examples);
    }
    sg_fm_example *e = &t->examples[t->nexamples++];
    e->status = sg_strndup(nm, (size_t)(dash - nm));
    e->label = sg_strndup(dash + 1, (size_t)(dot - dash - 1));
    e->code = code;
  }
  closedir(d);
  free(ex);
  if (t->nexamples > 1)
    qsort(t->examples, t->nexamples, sizeof *t->examples, cmp_example);
  return rc;
}

static int load_args(json_t *args, const char *file, sg_fm_task *t, sg_err *err) {
  if (!args)
    return 0;
  if (!json_is_array(args))
    return sg_err_set(err, SG_EPARSE, "%s: field \"args\" is not an array", file);
  size_t n = json_array_size(args);
  t->args = sg_calloc(n ? n : 1, sizeof *t->args);
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(args, i);
    if (!json_is_object(a))
      return sg_err_set(err, SG_EPARSE, "%s: field \"args[%zu]\" is not an object", file, i);
    sg_fm_arg *fa = &t->args[t->nargs++];
    fa->name = opt_str(a, "name");
    fa->kind = opt_str(a, "kind");
    fa->dtype = opt_str(a, "dtype");
    if (!fa->name)
      return sg_err_set(err, SG_EPARSE, "%s: field \"args[%zu].name\" is missing", file, i);
    json_t *shape = json_object_get(a, "shape");
    if (json_is_array(shape)) {
      size_t nd = json_array_size(shape);
      if (nd > 6)
        return sg_err_set(err, SG_EPARSE, "%s: field \"args[%zu].shape\" has more than 6 dims",
                          file, i);
      for (size_t d = 0; d < nd; d++)
        fa->shape[d] = json_integer_value(json_array_get(shape, d));
      fa->ndims = (int)nd;
    }
    json_t *v = json_object_get(a, "value");
    if (json_is_number(v))
      fa->value = json_number_value(v);
  }
  return 0;
}

static int load_task(const char *dir, sg_fm_task *t, sg_err *err) {
  memset(t, 0, sizeof *t);
  char *file = sg_asprintf("%s/task.json", dir);
  char *text = NULL;
  int rc = sg_file_read(file, TASK_JSON_MAX_BYTES, &text, NULL, err);
  if (rc < 0) {
    free(file);
    return rc;
  }
  json_error_t je;
  json_t *root = json_loads(text, 0, &je);
  free(text);
  if (!root) {
    rc = sg_err_set(err, SG_EPARSE, "%s:%d: %s", file, je.line, je.text);
    free(file);
    return rc;
  }
  if (!json_is_object(root)) {
    rc = sg_err_set(err, SG_EPARSE, "%s: not a JSON object", file);
    goto out;
  }
  t->name = opt_str(root, "name");
  if (!t->name) {
    rc = sg_err_set(err, SG_EPARSE, "%s: field \"name\" is missing or not a string", file);
    goto out;
  }
  t->evaluator = opt_str(root, "evaluator");
  t->language = opt_str(root, "language");
  t->description = opt_str(root, "description");
  t->entry = opt_str(root, "entry");
  t->signature = opt_str(root, "signature");
  rc = load_args(json_object_get(root, "args"), file, t, err);
  if (rc == 0)
    rc = load_examples(dir, t, err);
out:
  json_decref(root);
  free(file);
  if (rc < 0)
    sg_fm_task_clear(t);
  return rc;
}

static const char *builtin_root(void) {
  const char *env = getenv("SPECGEN_TASKS_DIR");
  if (env && *env)
    return env;
  if (is_dir(SG_DATA_DIR "/tasks"))
    return SG_DATA_DIR "/tasks";
  return SG_SOURCE_ROOT "/tasks";
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
    root = builtin_root();
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
