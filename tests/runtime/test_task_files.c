/* test_task_files.c: a task given as a path, read into its files on the
 * client's side and written back on a worker's (sg_task_files.h), on real
 * files: the built-in tasks' directories and a KernelBench file.
 */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_task.h"
#include "pool/sg_task_files.h"
#include "pool/sg_worker_proto.h"
#include "sg_test.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp_dir(void) {
  const char *t = getenv("TMPDIR");
  char *d = sg_asprintf("%s/sg-test-task-files-XXXXXX", t && *t ? t : "/tmp");
  SG_CHECK(mkdtemp(d) != NULL);
  return d;
}

static void rm_dir(char *d) {
  sg_err err;
  SG_CHECK_OK(sg_rm_rf(d, &err), err);
  free(d);
}

/* Entries of dir (hidden ones too), . and .. aside. */
static int entries(const char *dir) {
  DIR *d = opendir(dir);
  SG_CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static void write_file(const char *dir, const char *name, const char *text, size_t len) {
  char *p = sg_asprintf("%s/%s", dir, name);
  sg_err err;
  SG_CHECK_OK(sg_file_write(p, text, len, &err), err);
  free(p);
}

/* Every built-in task's directory travels and loads as the same task. */
static void test_builtin_tasks_round_trip(void) {
  sg_task **ts = NULL;
  size_t n = 0;
  sg_err err;
  SG_CHECK_OK(sg_task_list(&ts, &n, &err), err);
  SG_CHECK(n >= 20);
  char *base = tmp_dir();
  for (size_t i = 0; i < n; i++) {
    json_t *files = NULL;
    SG_CHECK_OK(sg_task_files_read(ts[i]->dir, &files, &err), err);
    SG_CHECK(json_object_get(files, "task.json") != NULL);
    SG_CHECK(json_object_get(files, "examples") == NULL); /* subdirectories stay */
    char *path = NULL, *again = NULL;
    SG_CHECK_OK(sg_task_files_materialize(files, base, &path, &err), err);
    SG_CHECK_OK(sg_task_files_materialize(files, base, &again, &err), err);
    SG_CHECK_STR_EQ(path, again); /* the same files: the same directory */
    sg_task *t = NULL;
    SG_CHECK_MSG(sg_task_load(path, &t, &err) == 0, "%s: %s", ts[i]->dir, err.msg);
    if (t) {
      SG_CHECK_STR_EQ(t->name, ts[i]->name);
      SG_CHECK_STR_EQ(t->evaluator, ts[i]->evaluator);
      SG_CHECK_STR_EQ(t->entry, ts[i]->entry);
    }
    sg_task_free(t);
    free(path);
    free(again);
    json_decref(files);
  }
  char *tasks = sg_asprintf("%s/tasks", base);
  /* one directory per task whose files differ, nothing left aside */
  SG_CHECK(entries(tasks) <= (int)n && entries(tasks) >= 2);
  DIR *d = opendir(tasks);
  struct dirent *e;
  while (d && (e = readdir(d)))
    SG_CHECK_MSG(e->d_name[0] != '.' || strcmp(e->d_name, ".") == 0 ||
                     strcmp(e->d_name, "..") == 0,
                 "left behind: %s", e->d_name);
  if (d)
    closedir(d);
  free(tasks);
  rm_dir(base);
  sg_task_list_free(ts, n);
}

/* A KernelBench file alone is a task of one file; changed content is
 * another directory. */
static void test_one_file_task(void) {
  char *src = tmp_dir(), *base = tmp_dir();
  char *kb = sg_asprintf("%s/tests/fuzz/corpus/fuzz_kb_file/relu.py", SG_SOURCE_ROOT);
  char *text = NULL;
  size_t len = 0;
  sg_err err;
  SG_CHECK_OK(sg_file_read(kb, 1 << 20, &text, &len, &err), err);
  write_file(src, "19_ReLU.py", text, len);
  char *given = sg_asprintf("%s/19_ReLU.py", src);
  json_t *files = NULL;
  SG_CHECK_OK(sg_task_files_read(given, &files, &err), err);
  SG_CHECK_EQ_INT(json_object_size(files), 1);
  char *path = NULL;
  SG_CHECK_OK(sg_task_files_materialize(files, base, &path, &err), err);
  const char *slash = strrchr(path, '/');
  SG_CHECK_STR_EQ(slash + 1, "19_ReLU.py");
  sg_task *t = NULL;
  SG_CHECK_MSG(sg_task_load(path, &t, &err) == 0, "%s", err.msg);
  sg_task_free(t);
  json_object_set_new(files, "19_ReLU.py", json_string("# another\n"));
  char *other = NULL;
  SG_CHECK_OK(sg_task_files_materialize(files, base, &other, &err), err);
  SG_CHECK(strcmp(other, path) != 0);
  free(other);
  free(path);
  json_decref(files);
  free(given);
  free(text);
  free(kb);
  rm_dir(src);
  rm_dir(base);
}

/* What cannot travel is an error naming the file; files that make no task
 * are refused where they are written. */
static void test_errors_name_the_file(void) {
  char *src = tmp_dir(), *base = tmp_dir();
  sg_err err;
  json_t *files = NULL;
  write_file(src, "reference.c", "int x;", 6);
  SG_CHECK_EQ_INT(sg_task_files_read(src, &files, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "no task.json");
  SG_CHECK(files == NULL);
  write_file(src, "task.json", "{}", 2);
  write_file(src, "data.bin", "a\0b", 3);
  SG_CHECK_EQ_INT(sg_task_files_read(src, &files, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "data.bin");
  SG_CHECK_CONTAINS(err.msg, "binary");
  char *bin = sg_asprintf("%s/data.bin", src);
  unlink(bin);
  free(bin);
  write_file(src, "odd name.c", "x", 1); /* not a plain name: stays behind */
  SG_CHECK_OK(sg_task_files_read(src, &files, &err), err);
  SG_CHECK_EQ_INT(json_object_size(files), 2);
  json_decref(files);
  char *missing = sg_asprintf("%s/nothing-here", src);
  SG_CHECK_EQ_INT(sg_task_files_read(missing, &files, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "nothing-here");
  free(missing);
  char *huge = sg_malloc(SG_WORKER_TASK_FILES_MAX + 1);
  memset(huge, 'x', SG_WORKER_TASK_FILES_MAX + 1);
  write_file(src, "huge.c", huge, SG_WORKER_TASK_FILES_MAX + 1);
  free(huge);
  SG_CHECK(sg_task_files_read(src, &files, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "huge.c");

  char *path = NULL;
  json_t *two = json_pack("{s:s, s:s}", "a.c", "1", "b.c", "2");
  SG_CHECK_EQ_INT(sg_task_files_materialize(two, base, &path, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "without a task.json");
  json_decref(two);
  json_t *bad = json_pack("{s:s, s:s}", "task.json", "{}", "../escape.c", "x");
  SG_CHECK_EQ_INT(sg_task_files_materialize(bad, base, &path, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "../escape.c");
  json_decref(bad);
  SG_CHECK(path == NULL);
  char *esc = sg_asprintf("%s/escape.c", base);
  SG_CHECK(access(esc, F_OK) != 0);
  free(esc);
  rm_dir(src);
  rm_dir(base);
}

SG_TEST_MAIN(SG_TEST(test_builtin_tasks_round_trip), SG_TEST(test_one_file_task),
             SG_TEST(test_errors_name_the_file))
