/* sg_task_files.c: a task the client has as a path travels to a worker as
 * its files (sg_task_files.h; the protocol's "task_files").
 */
#include "pool/sg_task_files.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"
#include "pool/sg_worker_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool plain_file(const char *dir, const char *name) {
  if (!sg_worker_task_file_name_ok(name))
    return false;
  char *p = sg_asprintf("%s/%s", dir, name);
  struct stat st;
  bool ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
  free(p);
  return ok;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds path's content as name; the running total stays within the cap. */
static int add_file(json_t *o, const char *path, const char *name, size_t *total,
                    sg_err *err) {
  char *data = NULL;
  size_t len = 0;
  int rc = sg_file_read(path, SG_WORKER_TASK_FILES_MAX, &data, &len, err);
  if (rc)
    return rc;
  if (memchr(data, '\0', len)) {
    free(data);
    return sg_err_set(err, SG_EINVAL, "%s: a binary file (it holds a NUL byte); a task's "
                      "files travel to the workers as text", path);
  }
  *total += len;
  if (*total > SG_WORKER_TASK_FILES_MAX) {
    free(data);
    return sg_err_set(err, SG_EINVAL, "%s: the task's files come to more than %u bytes, "
                      "too many to send with each request", path,
                      SG_WORKER_TASK_FILES_MAX);
  }
  json_object_set_new(o, name, json_stringn(data, len));
  free(data);
  return 0;
}

int sg_task_files_read(const char *path, json_t **out, sg_err *err) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0)
    return sg_err_set(err, SG_ENOENT, "%s: %s", path, strerror(errno));
  json_t *o = json_object();
  size_t total = 0;
  int rc = 0;
  if (S_ISDIR(st.st_mode)) {
    size_t n = 0;
    char **names = sg_file_list(path, plain_file, by_name, &n);
    for (size_t i = 0; i < n && rc == 0; i++) {
      if (i >= SG_WORKER_TASK_FILES_COUNT) {
        rc = sg_err_set(err, SG_EINVAL, "%s: more than %d files at its top level, too "
                        "many to send with each request", path, SG_WORKER_TASK_FILES_COUNT);
        break;
      }
      char *p = sg_asprintf("%s/%s", path, names[i]);
      rc = add_file(o, p, names[i], &total, err);
      free(p);
    }
    sg_file_list_free(names, n);
    if (rc == 0 && !json_object_get(o, "task.json"))
      rc = sg_err_set(err, SG_EINVAL, "%s: no task.json among its files", path);
  } else {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!sg_worker_task_file_name_ok(base))
      rc = sg_err_set(err, SG_EINVAL, "%s: the file's name has characters other than "
                      "letters, digits, '.', '_' and '-'", path);
    else
      rc = add_file(o, path, base, &total, err);
  }
  if (rc) {
    json_decref(o);
    return rc;
  }
  *out = o;
  return 0;
}

/* The files' digest: names and contents, in name order. */
static uint64_t digest(const json_t *files, const char ***names_out, size_t *n_out) {
  size_t n = json_object_size(files);
  const char **names = sg_calloc(n ? n : 1, sizeof *names);
  size_t i = 0;
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)files, name, v) names[i++] = name;
  qsort(names, n, sizeof *names, by_name);
  uint64_t h = sg_fnv1a64("task_files", 10);
  for (i = 0; i < n; i++) {
    const json_t *f = json_object_get(files, names[i]);
    uint64_t len = json_string_length(f);
    h = sg_fnv1a64_update(h, names[i], strlen(names[i]) + 1);
    h = sg_fnv1a64_update(h, &len, sizeof len);
    h = sg_fnv1a64_update(h, json_string_value(f), (size_t)len);
  }
  *names_out = names;
  *n_out = n;
  return h;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int sg_task_files_materialize(const json_t *files, const char *base, char **path,
                              sg_err *err) {
  *path = NULL;
  const char **names = NULL;
  size_t n = 0;
  uint64_t h = digest(files, &names, &n);
  const char *one = n == 1 ? names[0] : NULL;
  bool has_json = json_object_get(files, "task.json") != NULL;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++)
    if (!sg_worker_task_file_name_ok(names[i]) ||
        !json_is_string(json_object_get(files, names[i])))
      rc = sg_err_set(err, SG_EINVAL, "task files: \"%.64s\" is not a plain file name "
                      "with a text", names[i]);
  if (rc == 0 && !has_json && !one)
    rc = sg_err_set(err, SG_EINVAL, "task files: %zu files without a task.json (a task "
                    "is a directory with a task.json, or one file)", n);
  char *dir = sg_asprintf("%s/tasks/%016" PRIx64, base, h);
  if (rc == 0 && !is_dir(dir)) {
    /* written aside, then renamed: a worker beside this one (sharing the
     * directory) sees the whole task or none */
    static unsigned long seq;
    char *tmp = sg_asprintf("%s/tasks/.tmp-%ld-%lu", base, (long)getpid(), ++seq);
    rc = sg_mkdir_p(tmp, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
      const json_t *f = json_object_get(files, names[i]);
      char *p = sg_asprintf("%s/%s", tmp, names[i]);
      rc = sg_file_write(p, json_string_value(f), json_string_length(f), err);
      free(p);
    }
    if (rc == 0 && rename(tmp, dir) != 0 && !is_dir(dir))
      rc = sg_err_set(err, SG_EIO, "%s: %s", dir, strerror(errno));
    sg_err ignore;
    if (is_dir(tmp))
      sg_rm_rf(tmp, &ignore); /* another worker's copy won */
    free(tmp);
  }
  if (rc == 0)
    *path = has_json ? sg_strdup(dir) : sg_asprintf("%s/%s", dir, one);
  free(dir);
  free(names);
  return rc;
}
