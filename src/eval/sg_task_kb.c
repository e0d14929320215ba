/* sg_task_kb.c: KernelBench files as tasks (see the header).
 *
 * The task is synthesized as the task.json a user would have written (the
 * same parser checks it), with the file as its reference: nothing is copied
 * or renamed, and the file is read only to check that it is one. */
#include "eval/sg_task_kb.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PREFIX "kernelbench:"
#define KB_FILE_MAX_BYTES (4u << 20)

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool sg_task_kb_is_ref(const char *name) {
  return name && (strncmp(name, PREFIX, strlen(PREFIX)) == 0 || ends_with(name, ".py"));
}

long sg_task_kb_number(const char *file_name) {
  const char *b = strrchr(file_name, '/') ? strrchr(file_name, '/') + 1 : file_name;
  if (!isdigit((unsigned char)b[0]))
    return -1;
  char *end = NULL;
  long v = strtol(b, &end, 10);
  return end && (*end == '_' || *end == '.' || *end == 0) ? v : -1;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A definition at the start of a line: "class Model" followed by '(' or
 * ':', "def get_inputs(". */
static bool defines(const char *text, const char *what) {
  size_t n = strlen(what);
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) {
    if (p != text && p[-1] != '\n')
      continue;
    char c = p[n];
    if (c == '(' || c == ':' || c == ' ')
      return true;
  }
  return false;
}

const char *sg_task_kb_missing(const char *text) {
  return !defines(text, "class Model")          ? "class Model"
         : !defines(text, "def get_inputs")      ? "def get_inputs()"
         : !defines(text, "def get_init_inputs") ? "def get_init_inputs()"
                                                 : NULL;
}

/* The checkout's level directory: $SPECGEN_KERNELBENCH/KernelBench/LEVEL
 * (the repository's layout) or $SPECGEN_KERNELBENCH/LEVEL. */
static int level_dir(const char *level, char **out, sg_err *err) {
  *out = NULL;
  const char *root = getenv("SPECGEN_KERNELBENCH");
  if (!root || !*root)
    return sg_err_set(err, SG_EINVAL,
                      "kernelbench:%s: no KernelBench checkout named (set "
                      "SPECGEN_KERNELBENCH to the directory of a KernelBench "
                      "clone)", level);
  if (!*level || strchr(level, '/') || strstr(level, ".."))
    return sg_err_set(err, SG_EINVAL, "kernelbench:%s: expected a level such as "
                      "level1", level);
  char *a = sg_asprintf("%s/KernelBench/%s", root, level);
  if (is_dir(a)) {
    *out = a;
    return 0;
  }
  free(a);
  a = sg_asprintf("%s/%s", root, level);
  if (is_dir(a)) {
    *out = a;
    return 0;
  }
  free(a);
  return sg_err_set(err, SG_ENOENT, "kernelbench:%s: no such level in %s "
                    "(looked for %s/KernelBench/%s and %s/%s)", level, root, root,
                    level, root, level);
}

static int cmp_files(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  long nx = sg_task_kb_number(x), ny = sg_task_kb_number(y);
  if (nx != ny)
    return nx < ny ? -1 : 1;
  return strcmp(x, y);
}

static bool keep_py(const char *dir, const char *name) {
  (void)dir;
  return ends_with(name, ".py");
}

/* The sorted ".py" names in dir. */
static char **py_files(const char *dir, size_t *n) {
  return sg_file_list(dir, keep_py, cmp_files, n);
}

/* kernelbench:LEVEL/PROBLEM -> the file's path. PROBLEM is a number (the
 * file starting "N_"), a stem or a file name. */
static int resolve(const char *name, char **path, sg_err *err) {
  *path = NULL;
  const char *rest = name + strlen(PREFIX);
  const char *slash = strchr(rest, '/');
  if (!slash || !slash[1])
    return sg_err_set(err, SG_EINVAL, "%s: expected kernelbench:LEVEL/PROBLEM, "
                      "e.g. kernelbench:level1/19", name);
  char *level = sg_strndup(rest, (size_t)(slash - rest));
  char *dir = NULL;
  int rc = level_dir(level, &dir, err);
  free(level);
  if (rc)
    return rc;
  const char *want = slash + 1;
  bool numeric = true;
  for (const char *p = want; *p; p++)
    numeric = numeric && isdigit((unsigned char)*p);
  size_t n = 0;
  char **files = py_files(dir, &n);
  for (size_t i = 0; i < n && !*path; i++) {
    bool hit = numeric ? sg_task_kb_number(files[i]) == atol(want)
                       : strcmp(files[i], want) == 0 ||
                             (strncmp(files[i], want, strlen(want)) == 0 &&
                              strcmp(files[i] + strlen(want), ".py") == 0);
    if (hit)
      *path = sg_asprintf("%s/%s", dir, files[i]);
  }
  sg_file_list_free(files, n);
  if (!*path)
    rc = sg_err_set(err, SG_ENOENT, "%s: no problem \"%s\" in %s", name, want, dir);
  free(dir);
  return rc;
}

/* One file as a task; shown is the name the user gave (for messages). */
static int load_file(const char *shown, const char *path, sg_task **out, sg_err *err) {
  *out = NULL;
  char abs[PATH_MAX];
  if (!realpath(path, abs))
    return sg_err_set(err, errno == ENOENT ? SG_ENOENT : SG_EIO, "%s: %s", shown,
                      strerror(errno));
  char *text = NULL;
  size_t len = 0;
  int rc = sg_file_read(abs, KB_FILE_MAX_BYTES, &text, &len, err);
  if (rc)
    return rc;
  const char *missing = sg_task_kb_missing(text);
  free(text);
  if (missing)
    return sg_err_set(err, SG_EINVAL, "%s: not a KernelBench file: no %s at the start "
                      "of a line", shown, missing);
  char *slash = strrchr(abs, '/');
  char *dir = sg_strndup(abs, (size_t)(slash - abs));
  const char *base = slash + 1;
  char *stem = sg_strndup(base, strlen(base) - 3);
  json_t *j = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:f, s:f}, s:s, s:b}", "name", stem,
      "evaluator", "kernelbench", "language", "python", "description", "",
      "entry", "ModelNew", "signature",
      "class ModelNew(torch.nn.Module): the same constructor and forward as Model's",
      "tolerance", "atol", SG_TASK_KB_ATOL, "rtol", SG_TASK_KB_RTOL, "reference", base,
      "kernelbench_file", 1);
  char *desc = sg_asprintf(
      "KernelBench problem %s (%s). The reference is the PyTorch class Model in "
      "that file, with its inputs from get_inputs() and its constructor's from "
      "get_init_inputs(). The candidate is a Python file defining class "
      "ModelNew(nn.Module) with the same constructor and forward as Model, "
      "computing the same outputs on the GPU with its own kernels (for example "
      "CUDA built with torch.utils.cpp_extension.load_inline), not PyTorch's "
      "operators for the heavy work.", stem, base);
  json_object_set_new(j, "description", json_string(desc));
  free(desc);
  char *jtext = json_dumps(j, 0);
  json_decref(j);
  char *file = sg_asprintf("%s (as a KernelBench task)", shown);
  rc = sg_task_parse(file, dir, jtext, strlen(jtext), out, err);
  free(file);
  free(jtext);
  free(stem);
  free(dir);
  return rc;
}

int sg_task_kb_load(const char *name, sg_task **out, sg_err *err) {
  *out = NULL;
  if (strncmp(name, PREFIX, strlen(PREFIX)) == 0) {
    char *path = NULL;
    int rc = resolve(name, &path, err);
    if (rc)
      return rc;
    rc = load_file(name, path, out, err);
    free(path);
    return rc;
  }
  return load_file(name, name, out, err);
}

int sg_task_kb_list(const char *dir_or_level, sg_task ***out, size_t *n,
                    sg_err *err) {
  *out = NULL;
  *n = 0;
  char *dir = NULL;
  int rc = 0;
  if (strncmp(dir_or_level, PREFIX, strlen(PREFIX)) == 0)
    rc = level_dir(dir_or_level + strlen(PREFIX), &dir, err);
  else if (!is_dir(dir_or_level))
    rc = sg_err_set(err, SG_ENOENT, "%s: not a directory", dir_or_level);
  else
    dir = sg_strdup(dir_or_level);
  if (rc)
    return rc;
  size_t nf = 0;
  char **files = py_files(dir, &nf);
  sg_task **tasks = sg_calloc(nf ? nf : 1, sizeof *tasks);
  size_t count = 0;
  for (size_t i = 0; i < nf; i++) {
    char *path = sg_asprintf("%s/%s", dir, files[i]);
    sg_task *t = NULL;
    sg_err e;
    sg_err_clear(&e);
    if (load_file(path, path, &t, &e) == 0)
      tasks[count++] = t;
    free(path);
  }
  sg_file_list_free(files, nf);
  if (count == 0) {
    free(tasks);
    rc = sg_err_set(err, SG_ENOENT, "%s: no KernelBench file (a .py defining class "
                    "Model, get_inputs and get_init_inputs)", dir_or_level);
    free(dir);
    return rc;
  }
  free(dir);
  *out = tasks;
  *n = count;
  return 0;
}
