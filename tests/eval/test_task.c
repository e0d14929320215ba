/* test_task.c: the task loader (src/eval/sg_task.c): valid tasks, every
 * malformed field with the message that names it, built-in lookup and
 * listing, and example discovery. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_task.h"
#include "sg_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DATA SG_SOURCE_ROOT "/tests/eval/data"
#define ROOT DATA "/tasks"

static void use_test_root(void) { setenv("SPECGEN_TASKS_DIR", ROOT, 1); }

static void test_load_by_dir(void) {
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(ROOT "/cpu/vector_add", &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "vector_add");
  SG_CHECK_STR_EQ(t->evaluator, "cpu");
  SG_CHECK_STR_EQ(t->language, "c");
  SG_CHECK_STR_EQ(t->entry, "vector_add");
  SG_CHECK(t->dir[0] == '/');
  SG_CHECK_CONTAINS(t->reference_path, "/vector_add/reference.c");
  SG_CHECK_EQ_INT(t->nargs, 5);
  SG_CHECK_EQ_INT(t->args[0].kind, SG_ARG_INPUT);
  SG_CHECK_EQ_INT(t->args[0].dtype, SG_DTYPE_F32);
  SG_CHECK_EQ_INT(t->args[0].ndims, 1);
  SG_CHECK_EQ_INT(t->args[0].numel, 4096);
  SG_CHECK_STR_EQ(t->args[0].init.dist, "normal");
  SG_CHECK_NEAR(t->args[0].init.p[1], 1.0, 0);
  SG_CHECK_STR_EQ(t->args[1].init.dist, "uniform");
  SG_CHECK_NEAR(t->args[1].init.p[0], -2.0, 0);
  SG_CHECK_NEAR(t->args[1].init.p[1], 2.0, 0);
  SG_CHECK_EQ_INT(t->args[2].kind, SG_ARG_OUTPUT);
  SG_CHECK_EQ_INT(t->args[3].kind, SG_ARG_SCALAR);
  SG_CHECK_NEAR(t->args[3].scalar_value, 0.5, 0);
  SG_CHECK_EQ_INT(t->args[4].dtype, SG_DTYPE_I32);
  SG_CHECK_NEAR(t->atol, 1e-5, 0);
  SG_CHECK(json_is_object(t->raw));
  sg_task_free(t);

  SG_CHECK_OK(sg_task_load(ROOT "/cpu/upper_matvec", &t, &err), err);
  SG_CHECK_EQ_INT(t->args[0].ndims, 2);
  SG_CHECK_EQ_INT(t->args[0].numel, 256 * 256);
  SG_CHECK_STR_EQ(t->args[0].init.structure, "upper");
  SG_CHECK_STR_EQ(t->args[1].init.dist, "choice");
  SG_CHECK_EQ_INT(t->args[1].init.nvalues, 3);
  SG_CHECK_NEAR(t->args[1].init.values[2], 2.0, 0);
  SG_CHECK_EQ_INT(t->args[3].dtype, SG_DTYPE_I64);
  sg_task_free(t);
}

static void test_load_by_name(void) {
  use_test_root();
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load("upper_matvec", &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "upper_matvec");
  sg_task_free(t);
}

static void test_qualified_name(void) {
  use_test_root();
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load("cpu/vector_add", &t, &err), err);
  SG_CHECK_STR_EQ(t->name, "vector_add");
  SG_CHECK_STR_EQ(t->evaluator, "cpu");
  sg_task_free(t);
  SG_CHECK_EQ_INT(sg_task_load("cuda/vector_add", &t, &err), SG_ENOENT);
}

/* An unknown name suggests the nearest built-in ones, else points at
 * `specgen tasks`; it used to list every task on one line (issue 31). */
static void test_unknown_name_suggests_the_nearest(void) {
  use_test_root();
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_EQ_INT(sg_task_load("no_such_task", &t, &err), SG_ENOENT);
  SG_CHECK(t == NULL);
  SG_CHECK_STR_EQ(err.msg, "unknown task \"no_such_task\" (`specgen tasks` lists the 2 "
                           "built-in tasks)");
  SG_CHECK_EQ_INT(sg_task_load("vectr_add", &t, &err), SG_ENOENT);
  SG_CHECK_STR_EQ(err.msg, "unknown task \"vectr_add\"; did you mean cpu/vector_add? "
                           "(`specgen tasks` lists all 2)");
  SG_CHECK_EQ_INT(sg_task_load("upper_matvek", &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "did you mean cpu/upper_matvec?");
  /* with the evaluator, the whole name is compared */
  SG_CHECK_EQ_INT(sg_task_load("cpu/vector_ad", &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "did you mean cpu/vector_add?");
}

static void test_missing_dir(void) {
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_EQ_INT(sg_task_load("./does/not/exist", &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "./does/not/exist");
  SG_CHECK_EQ_INT(sg_task_load("", &t, &err), SG_EINVAL);
}

static void test_builtin_root(void) {
  setenv("SPECGEN_TASKS_DIR", "/some/where", 1);
  SG_CHECK_STR_EQ(sg_task_builtin_root(), "/some/where");
  unsetenv("SPECGEN_TASKS_DIR");
  const char *r = sg_task_builtin_root();
  struct stat st;
  bool data = stat(SG_DATA_DIR "/tasks", &st) == 0 && S_ISDIR(st.st_mode);
  SG_CHECK_STR_EQ(r, data ? SG_DATA_DIR "/tasks" : SG_SOURCE_ROOT "/tasks");
}

static void test_list_sorted(void) {
  use_test_root();
  sg_task **ts = NULL;
  size_t n = 0;
  sg_err err;
  SG_CHECK_OK(sg_task_list(&ts, &n, &err), err);
  SG_CHECK_EQ_INT(n, 2);
  SG_CHECK_STR_EQ(ts[0]->name, "upper_matvec");
  SG_CHECK_STR_EQ(ts[1]->name, "vector_add");
  sg_task_list_free(ts, n);

  setenv("SPECGEN_TASKS_DIR", DATA "/no_such_root", 1);
  SG_CHECK_EQ_INT(sg_task_list(&ts, &n, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "no_such_root");
}

static void test_examples(void) {
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(ROOT "/cpu/vector_add", &t, &err), err);
  sg_task_example *ex = NULL;
  size_t n = 0;
  SG_CHECK_OK(sg_task_examples(t, &ex, &n, &err), err);
  SG_CHECK(n >= 8);
  /* sorted by file name */
  SG_CHECK_STR_EQ(ex[0].expected_status, "compile_error");
  SG_CHECK_STR_EQ(ex[0].label, "signature");
  SG_CHECK(ex[0].path[0] == '/');
  SG_CHECK_CONTAINS(ex[0].path, "/examples/compile_error-signature.c");
  for (size_t i = 1; i < n; i++)
    SG_CHECK(strcmp(ex[i - 1].path, ex[i].path) < 0);
  bool saw_ok = false;
  for (size_t i = 0; i < n; i++)
    if (strcmp(ex[i].expected_status, "ok") == 0 &&
        strcmp(ex[i].label, "reference") == 0)
      saw_ok = true;
  SG_CHECK(saw_ok);
  sg_task_examples_free(ex, n);
  sg_task_free(t);
}

/* ---- malformed task.json, one field at a time ---------------------------- */

static const char *base_json =
    "{\"name\": \"t\", \"evaluator\": \"cpu\", \"language\": \"c\","
    " \"description\": \"d\", \"entry\": \"f\","
    " \"signature\": \"void f(const float *a, float *o, int n)\","
    " \"args\": ["
    "  {\"name\": \"a\", \"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4, 4],"
    "   \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},"
    "  {\"name\": \"o\", \"kind\": \"output\", \"dtype\": \"float32\", \"shape\": [4]},"
    "  {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": 4}],"
    " \"tolerance\": {\"atol\": 1e-4, \"rtol\": 1e-4},"
    " \"reference\": \"reference.c\"}";

/* Walks "args[0].init.std" to the parent object/array and the last key. */
static json_t *walk(json_t *root, const char *path, char *last, size_t cap) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  json_t *cur = root;
  char *tok = buf;
  for (;;) {
    char *dot = strchr(tok, '.');
    if (dot)
      *dot = '\0';
    char *br = strchr(tok, '[');
    if (br) {
      *br = '\0';
      cur = json_object_get(cur, tok);
      size_t idx = (size_t)atoi(br + 1);
      if (!dot) { /* the last element is an array slot */
        snprintf(last, cap, "[%zu]", idx);
        return cur;
      }
      cur = json_array_get(cur, idx);
    } else if (!dot) {
      snprintf(last, cap, "%s", tok);
      return cur;
    } else {
      cur = json_object_get(cur, tok);
    }
    tok = dot + 1;
  }
}

/* Writes a task directory whose task.json is the base with path set to value
 * (JSON text), or removed when value is NULL. Returns the directory. */
static char *make_task(const char *path, const char *value) {
  char tmpl[] = "/tmp/sg_task_XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  json_error_t je;
  json_t *root = json_loads(base_json, 0, &je);
  SG_CHECK_MSG(root, "base json: %s", je.text);
  if (path) {
    char last[256];
    json_t *parent = walk(root, path, last, sizeof last);
    SG_CHECK_MSG(parent, "bad path %s", path);
    if (last[0] == '[') {
      size_t idx = (size_t)atoi(last + 1);
      if (value)
        json_array_set_new(parent, idx, json_loads(value, JSON_DECODE_ANY, &je));
      else
        json_array_remove(parent, idx);
    } else if (value) {
      json_t *v = json_loads(value, JSON_DECODE_ANY, &je);
      SG_CHECK_MSG(v, "value %s: %s", value, je.text);
      json_object_set_new(parent, last, v);
    } else {
      json_object_del(parent, last);
    }
  }
  char *text = json_dumps(root, 0);
  json_decref(root);
  char *file = sg_asprintf("%s/task.json", tmpl);
  sg_err err;
  SG_CHECK_OK(sg_file_write(file, text, strlen(text), &err), err);
  free(file);
  free(text);
  file = sg_asprintf("%s/reference.c", tmpl);
  SG_CHECK_OK(sg_file_write(file, "", 0, &err), err);
  free(file);
  return sg_strdup(tmpl);
}

typedef struct bad_case {
  const char *path;    /* field to change */
  const char *value;   /* new JSON value, NULL: remove */
  const char *message; /* what the error must say after the file name */
} bad_case;

static const bad_case bad_cases[] = {
    {"name", NULL, "name: missing (expected a string)"},
    {"name", "3", "name: expected a string"},
    {"name", "\"\"", "name: must not be empty"},
    {"evaluator", "\"gpu\"", "evaluator: unknown value \"gpu\" (expected one of \"cpu\", \"cuda\", \"kernelbench\")"},
    {"evaluator", NULL, "evaluator: missing"},
    {"language", "\"rust\"", "language: unknown value \"rust\""},
    {"description", "[]", "description: expected a string"},
    {"entry", "\"2f\"", "entry: \"2f\" is not a C identifier"},
    {"entry", NULL, "entry: missing"},
    {"signature", NULL, "signature: missing"},
    {"signature", "\"void g(int)\"", "signature: does not declare the entry function f(...)"},
    {"signature", "\"void f(const float *a, float *o)\"", "signature: declares 2 parameters but args lists 3"},
    {"args", NULL, "args: missing (expected a non-empty array"},
    {"args", "[]", "args: expected a non-empty array"},
    {"args", "{}", "args: expected a non-empty array"},
    {"args[1]", "3", "args[1]: expected an object"},
    {"args[0].name", NULL, "args[0].name: missing"},
    {"args[0].name", "\"a b\"", "args[0].name: \"a b\" is not a C identifier"},
    {"args[1].name", "\"a\"", "args[1].name: \"a\" repeats args[0].name"},
    {"args[0].kind", "\"inout\"", "args[0].kind: unknown value \"inout\" (expected one of \"input\", \"output\", \"scalar\")"},
    {"args[0].dtype", "\"float16\"", "args[0].dtype: unknown value \"float16\""},
    {"args[0].dtype", NULL, "args[0].dtype: missing"},
    {"args[0].shape", NULL, "args[0].shape: missing (expected an array of positive integers)"},
    {"args[0].shape", "[4, 0]", "args[0].shape: expected an array of positive integers"},
    {"args[0].shape", "[4, -1]", "args[0].shape: expected an array of positive integers"},
    {"args[0].shape", "[4, 1.5]", "args[0].shape: expected an array of positive integers"},
    {"args[0].shape", "[]", "args[0].shape: expected an array of positive integers"},
    {"args[0].shape", "\"4x4\"", "args[0].shape: expected an array of positive integers"},
    {"args[0].shape", "[1,1,1,1,1,1,1]", "args[0].shape: expected an array of positive integers (1 to 6 dimensions)"},
    {"args[0].shape", "[100000, 100000]", "args[0].shape: more than"},
    {"args[0].value", "1", "args[0].value: only a scalar has a value"},
    {"args[0].init", NULL, "args[0].init: missing (an input needs a distribution"},
    {"args[0].init", "\"normal\"", "args[0].init: expected an object"},
    {"args[0].init.dist", "\"poisson\"", "args[0].init.dist: unknown value \"poisson\" (expected one of \"normal\", \"uniform\", \"choice\")"},
    {"args[0].init.dist", NULL, "args[0].init.dist: missing"},
    {"args[0].init.std", NULL, "args[0].init.std: missing (expected a number)"},
    {"args[0].init.std", "0", "args[0].init.std: must be positive"},
    {"args[0].init.std", "\"1\"", "args[0].init.std: expected a number"},
    {"args[0].init.mean", NULL, "args[0].init.mean: missing"},
    {"args[0].init.sdt", "1", "args[0].init.sdt: unknown key for this distribution"},
    {"args[0].init", "{\"dist\": \"uniform\", \"low\": 1, \"high\": 1}", "args[0].init.high: must be greater than low (1)"},
    {"args[0].init", "{\"dist\": \"uniform\", \"high\": 1}", "args[0].init.low: missing"},
    {"args[0].init", "{\"dist\": \"uniform\", \"low\": 0, \"high\": 1, \"std\": 2}", "args[0].init.std: unknown key"},
    {"args[0].init", "{\"dist\": \"choice\"}", "args[0].init.values: expected a non-empty array of numbers"},
    {"args[0].init", "{\"dist\": \"choice\", \"values\": []}", "args[0].init.values: expected a non-empty array of numbers"},
    {"args[0].init", "{\"dist\": \"choice\", \"values\": [1, \"x\"]}", "args[0].init.values: element 1: expected a finite number"},
    {"args[0].init.structure", "\"banded\"", "args[0].init.structure: unknown value \"banded\""},
    {"args[0].shape", "[4, 3]", NULL}, /* fine alone; with a structure, below */
    {"args[1].init", "{\"dist\": \"normal\", \"mean\": 0, \"std\": 1}", "args[1].init: an output has no init"},
    {"args[1].shape", NULL, "args[1].shape: missing"},
    {"args[1]", "{\"name\": \"o\", \"kind\": \"input\", \"dtype\": \"int32\", \"shape\": [4], \"init\": {\"dist\": \"choice\", \"values\": [1]}}", "args: no argument of kind \"output\""},
    {"args[1]", "{\"name\": \"o\", \"kind\": \"input\", \"dtype\": \"int32\", \"shape\": [4], \"init\": {\"dist\": \"choice\", \"values\": [1.5]}}", "args[1].init.values: element 0: 1.5 is not an integer (dtype int32)"},
    {"args[2].value", NULL, "args[2].value: missing (expected a number)"},
    {"args[2].value", "4.5", "args[2].value: expected an int32 integer"},
    {"args[2].value", "4294967296", "args[2].value: expected an int32 integer"},
    {"args[2].value", "\"4\"", "args[2].value: expected a number"},
    {"args[2].shape", "[2]", "args[2].shape: a scalar has no shape"},
    {"args[2].init", "{\"dist\": \"normal\", \"mean\": 0, \"std\": 1}", "args[2].init: a scalar has a value, not an init"},
    {"tolerance", NULL, "tolerance: missing"},
    {"tolerance", "1e-4", "tolerance: expected an object"},
    {"tolerance.atol", NULL, "tolerance.atol: missing"},
    {"tolerance.atol", "-1", "tolerance.atol: must not be negative"},
    {"tolerance.rtol", "\"tight\"", "tolerance.rtol: expected a number"},
    {"tolerance.rtol", "-0.5", "tolerance.rtol: must not be negative"},
    {"reference", NULL, "reference: missing"},
    {"reference", "\"nope.c\"", "reference: nope.c: no such file"},
};

static void test_malformed_fields(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
    const bad_case *c = &bad_cases[i];
    char *dir = make_task(c->path, c->value);
    sg_task *t = NULL;
    sg_err err;
    int rc = sg_task_load(dir, &t, &err);
    if (!c->message) {
      SG_CHECK_MSG(rc == 0, "case %zu (%s=%s) should load: %s", i, c->path,
                   c->value, err.msg);
      sg_task_free(t);
    } else {
      SG_CHECK_MSG(rc == SG_EINVAL || rc == SG_ERANGE,
                   "case %zu (%s=%s): rc %d", i, c->path,
                   c->value ? c->value : "removed", rc);
      SG_CHECK(t == NULL);
      char *want = sg_asprintf("%s/task.json: %s", dir, c->message);
      SG_CHECK_MSG(strstr(err.msg, want) != NULL,
                   "case %zu: \"%s\" does not contain \"%s\"", i, err.msg, want);
      free(want);
    }
    sg_err e2;
    sg_rm_rf(dir, &e2);
    free(dir);
  }
}

static void test_structure_needs_square(void) {
  char *dir = make_task("args[0].init",
                        "{\"dist\": \"normal\", \"mean\": 0, \"std\": 1, "
                        "\"structure\": \"symmetric\"}");
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  SG_CHECK_STR_EQ(t->args[0].init.structure, "symmetric");
  sg_task_free(t);
  /* now make it 4x3 */
  char *file = sg_asprintf("%s/task.json", dir);
  char *text = NULL;
  SG_CHECK_OK(sg_file_read(file, 1 << 20, &text, NULL, &err), err);
  char *p = strstr(text, "[4, 4]");
  SG_CHECK(p);
  p[4] = '3';
  SG_CHECK_OK(sg_file_write(file, text, strlen(text), &err), err);
  SG_CHECK(sg_task_load(dir, &t, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "args[0].init.structure: \"symmetric\" needs a square matrix");
  free(text);
  free(file);
  sg_rm_rf(dir, &err);
  free(dir);
}

static void test_json_syntax_error_names_line(void) {
  char *dir = make_task(NULL, NULL);
  char *file = sg_asprintf("%s/task.json", dir);
  sg_err err;
  const char *bad = "{\n  \"name\": \"t\",\n  \"evaluator\": cpu\n}\n";
  SG_CHECK_OK(sg_file_write(file, bad, strlen(bad), &err), err);
  sg_task *t = NULL;
  SG_CHECK_EQ_INT(sg_task_load(dir, &t, &err), SG_EPARSE);
  char *want = sg_asprintf("%s:3:", file);
  SG_CHECK_CONTAINS(err.msg, want);
  free(want);
  const char *dup = "{\"name\": \"t\", \"name\": \"u\"}";
  SG_CHECK_OK(sg_file_write(file, dup, strlen(dup), &err), err);
  SG_CHECK_EQ_INT(sg_task_load(dir, &t, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "duplicate");
  SG_CHECK_OK(sg_file_write(file, "[1]", 3, &err), err);
  SG_CHECK_EQ_INT(sg_task_load(dir, &t, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "expected a JSON object");
  unlink(file);
  SG_CHECK_EQ_INT(sg_task_load(dir, &t, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "task.json");
  free(file);
  sg_rm_rf(dir, &err);
  free(dir);
}

static void test_signature_void_and_nested(void) {
  /* a function-pointer-free signature with array brackets and extra spaces */
  char *dir = make_task("signature",
                        "\"void  f (const float a[restrict 16], float *o, int n)\"");
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  sg_task_free(t);
  sg_rm_rf(dir, &err);
  free(dir);
}

/* Builds a root with one task whose folder disagrees with its contents. */
static void test_builtin_name_and_folder_must_match(void) {
  char tmpl[] = "/tmp/sg_root_XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  char *src = make_task(NULL, NULL);
  char *dst_parent = sg_asprintf("%s/cuda", tmpl);
  sg_err err;
  SG_CHECK_OK(sg_mkdir_p(dst_parent, &err), err);
  char *dst = sg_asprintf("%s/t", dst_parent);
  SG_CHECK(rename(src, dst) == 0);
  setenv("SPECGEN_TASKS_DIR", tmpl, 1);
  sg_task *t = NULL;
  SG_CHECK_EQ_INT(sg_task_load("t", &t, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "evaluator: \"cpu\" but the task lives under cuda/");
  sg_task **ts = NULL;
  size_t n = 0;
  SG_CHECK_EQ_INT(sg_task_list(&ts, &n, &err), SG_EINVAL);
  char *moved = sg_asprintf("%s/cpu", tmpl);
  SG_CHECK(rename(dst_parent, moved) == 0);
  char *renamed_from = sg_asprintf("%s/t", moved);
  char *renamed_to = sg_asprintf("%s/u", moved);
  SG_CHECK(rename(renamed_from, renamed_to) == 0);
  SG_CHECK_EQ_INT(sg_task_load("u", &t, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "name: \"t\" differs from the directory's name \"u\"");
  sg_rm_rf(tmpl, &err);
  free(src);
  free(dst_parent);
  free(dst);
  free(moved);
  free(renamed_from);
  free(renamed_to);
}

static void test_bad_example_name(void) {
  char *dir = make_task(NULL, NULL);
  sg_err err;
  char *exdir = sg_asprintf("%s/examples", dir);
  SG_CHECK_OK(sg_mkdir_p(exdir, &err), err);
  char *good = sg_asprintf("%s/ok-fast.c", exdir);
  SG_CHECK_OK(sg_file_write(good, "", 0, &err), err);
  sg_task *t = NULL;
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  sg_task_example *ex = NULL;
  size_t n = 0;
  SG_CHECK_OK(sg_task_examples(t, &ex, &n, &err), err);
  SG_CHECK_EQ_INT(n, 1);
  SG_CHECK_STR_EQ(ex[0].label, "fast");
  sg_task_examples_free(ex, n);
  const char *bad_names[] = {"great-fast.c", "okfast.c", "ok-.c", "ok-fast"};
  for (size_t i = 0; i < 4; i++) {
    char *bad = sg_asprintf("%s/%s", exdir, bad_names[i]);
    SG_CHECK_OK(sg_file_write(bad, "", 0, &err), err);
    SG_CHECK_EQ_INT(sg_task_examples(t, &ex, &n, &err), SG_EINVAL);
    SG_CHECK_CONTAINS(err.msg, bad_names[i]);
    SG_CHECK_CONTAINS(err.msg, "<status>-<label>.<ext>");
    unlink(bad);
    free(bad);
  }
  sg_task_free(t);
  sg_rm_rf(dir, &err);
  free(good);
  free(exdir);
  free(dir);
}

static void test_dtype_names(void) {
  SG_CHECK_STR_EQ(sg_dtype_name(SG_DTYPE_F32), "float32");
  SG_CHECK_STR_EQ(sg_dtype_name(SG_DTYPE_I64), "int64");
  SG_CHECK_EQ_INT(sg_dtype_size(SG_DTYPE_F64), 8);
  SG_CHECK_EQ_INT(sg_dtype_size(SG_DTYPE_I32), 4);
}

SG_TEST_MAIN(SG_TEST(test_load_by_dir), SG_TEST(test_load_by_name),
             SG_TEST(test_qualified_name),
             SG_TEST(test_unknown_name_suggests_the_nearest), SG_TEST(test_missing_dir),
             SG_TEST(test_builtin_root), SG_TEST(test_list_sorted),
             SG_TEST(test_examples), SG_TEST(test_malformed_fields),
             SG_TEST(test_structure_needs_square),
             SG_TEST(test_json_syntax_error_names_line),
             SG_TEST(test_signature_void_and_nested),
             SG_TEST(test_builtin_name_and_folder_must_match),
             SG_TEST(test_bad_example_name), SG_TEST(test_dtype_names))
