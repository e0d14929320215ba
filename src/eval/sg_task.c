/* sg_task.c: loading tasks from their directories (format: docs/tasks.md).
 *
 * A task is named either by path (anything holding a '/', or "." / "..") or
 * by built-in name, which is looked up as <root>/<evaluator>/<name> under the
 * built-in root. task.json is parsed with jansson and checked field by field;
 * every error names the file and the field ("tasks/x/task.json: args[2].shape:
 * expected an array of positive integers"), because the people who read them
 * are writing tasks by hand and an LLM prompt is built from what we accept.
 *
 * Unknown keys at the top level and in args[] are allowed (evaluators read
 * keys of their own); unknown keys inside an init spec are not, because a
 * misspelt distribution parameter would silently change the inputs.
 */
#include "eval/sg_task.h"
#include "eval/sg_task_kb.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_edit.h"
#include "common/sg_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* task.json is small; anything bigger is not a task description. */
#define TASK_JSON_MAX_BYTES (1u << 20)
#define TASK_REFERENCE_MAX_BYTES (4u << 20)
/* The most elements one argument may have (2^31: 8 GiB of doubles). */
#define TASK_MAX_NUMEL (INT64_C(1) << 31)

static const char *const dtype_names[SG_DTYPE__COUNT] = {"float32", "float64",
                                                         "int32", "int64"};
static const size_t dtype_sizes[SG_DTYPE__COUNT] = {4, 8, 4, 8};

const char *sg_dtype_name(sg_dtype d) {
  return (unsigned)d < SG_DTYPE__COUNT ? dtype_names[d] : "unknown";
}

size_t sg_dtype_size(sg_dtype d) {
  return (unsigned)d < SG_DTYPE__COUNT ? dtype_sizes[d] : 0;
}

/* ---- the built-in root -------------------------------------------------- */

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *sg_task_builtin_root(void) {
  /* Recomputed on every call (tests change the environment between calls);
   * the buffer is static so the pointer stays valid for the caller. */
  static char root[PATH_MAX];
  const char *env = getenv("SPECGEN_TASKS_DIR");
  if (env && env[0]) {
    snprintf(root, sizeof root, "%s", env);
    return root;
  }
  snprintf(root, sizeof root, "%s/tasks", SG_DATA_DIR);
  if (is_dir(root))
    return root;
  snprintf(root, sizeof root, "%s/tasks", SG_SOURCE_ROOT);
  return root;
}

/* ---- field checks ----------------------------------------------------- */

/* Every check writes "<file>: <field>: <problem>" into err. */
typedef struct loader {
  const char *file; /* task.json's path, as the user named it */
  sg_err *err;
} loader;

static int fail(loader *L, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(loader *L, int code, const char *field, const char *fmt, ...) {
  char detail[SG_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  if (field && field[0])
    return sg_err_set(L->err, code, "%s: %s: %s", L->file, field, detail);
  return sg_err_set(L->err, code, "%s: %s", L->file, detail);
}

static bool is_identifier(const char *s) {
  if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return false;
  return true;
}

/* A required non-empty string field of obj, copied into *out. */
static int get_string(loader *L, const json_t *obj, const char *key,
                      const char *field, char **out) {
  const json_t *v = json_object_get(obj, key);
  if (!v)
    return fail(L, SG_EINVAL, field, "missing (expected a string)");
  if (!json_is_string(v))
    return fail(L, SG_EINVAL, field, "expected a string");
  if (json_string_length(v) == 0)
    return fail(L, SG_EINVAL, field, "must not be empty");
  if (strlen(json_string_value(v)) != json_string_length(v))
    return fail(L, SG_EINVAL, field, "must not contain NUL characters");
  *out = sg_strdup(json_string_value(v));
  return 0;
}

/* One of a fixed list of names; the message lists them. */
static int get_enum(loader *L, const json_t *obj, const char *key,
                    const char *field, const char *const *names, size_t n,
                    int *out) {
  char *s = NULL;
  int rc = get_string(L, obj, key, field, &s);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) {
      free(s);
      *out = (int)i;
      return 0;
    }
  sg_buf b;
  sg_buf_init(&b, 0);
  for (size_t i = 0; i < n; i++)
    sg_buf_printf(&b, "%s\"%s\"", i ? ", " : "", names[i]);
  rc = fail(L, SG_EINVAL, field, "unknown value \"%s\" (expected one of %s)", s,
            sg_buf_str(&b));
  sg_buf_free(&b);
  free(s);
  return rc;
}

static int get_number(loader *L, const json_t *obj, const char *key,
                      const char *field, double *out) {
  const json_t *v = json_object_get(obj, key);
  if (!v)
    return fail(L, SG_EINVAL, field, "missing (expected a number)");
  if (!json_is_number(v))
    return fail(L, SG_EINVAL, field, "expected a number");
  *out = json_number_value(v);
  if (!isfinite(*out))
    return fail(L, SG_EINVAL, field, "expected a finite number");
  return 0;
}

/* ---- args ---------------------------------------------------------------- */

static const char *const kind_names[] = {"input", "output", "scalar"};

static int check_keys(loader *L, const json_t *obj, const char *field,
                      const char *const *allowed) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    bool ok = false;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(key, *a) == 0)
        ok = true;
    if (!ok) {
      char f[256];
      snprintf(f, sizeof f, "%s.%s", field, key);
      return fail(L, SG_EINVAL, f, "unknown key for this distribution");
    }
  }
  return 0;
}

static int parse_init(loader *L, const json_t *j, const char *field,
                      sg_task_arg *a) {
  char f[256];
  if (!json_is_object(j))
    return fail(L, SG_EINVAL, field,
                "expected an object such as {\"dist\": \"normal\", \"mean\": 0, "
                "\"std\": 1}");
  static const char *const dists[] = {"normal", "uniform", "choice"};
  int d = 0;
  snprintf(f, sizeof f, "%s.dist", field);
  int rc = get_enum(L, j, "dist", f, dists, 3, &d);
  if (rc)
    return rc;
  sg_init_spec *s = &a->init;
  snprintf(s->dist, sizeof s->dist, "%s", dists[d]);
  if (d == 0) {
    static const char *const keys[] = {"dist", "mean", "std", "structure", NULL};
    if ((rc = check_keys(L, j, field, keys)))
      return rc;
    snprintf(f, sizeof f, "%s.mean", field);
    if ((rc = get_number(L, j, "mean", f, &s->p[0])))
      return rc;
    snprintf(f, sizeof f, "%s.std", field);
    if ((rc = get_number(L, j, "std", f, &s->p[1])))
      return rc;
    if (!(s->p[1] > 0))
      return fail(L, SG_EINVAL, f, "must be positive");
  } else if (d == 1) {
    static const char *const keys[] = {"dist", "low", "high", "structure", NULL};
    if ((rc = check_keys(L, j, field, keys)))
      return rc;
    snprintf(f, sizeof f, "%s.low", field);
    if ((rc = get_number(L, j, "low", f, &s->p[0])))
      return rc;
    snprintf(f, sizeof f, "%s.high", field);
    if ((rc = get_number(L, j, "high", f, &s->p[1])))
      return rc;
    if (!(s->p[1] > s->p[0]))
      return fail(L, SG_EINVAL, f, "must be greater than low (%g)", s->p[0]);
  } else {
    static const char *const keys[] = {"dist", "values", "structure", NULL};
    if ((rc = check_keys(L, j, field, keys)))
      return rc;
    snprintf(f, sizeof f, "%s.values", field);
    const json_t *v = json_object_get(j, "values");
    if (!json_is_array(v) || json_array_size(v) == 0)
      return fail(L, SG_EINVAL, f, "expected a non-empty array of numbers");
    s->nvalues = json_array_size(v);
    s->values = sg_calloc(s->nvalues, sizeof *s->values);
    for (size_t i = 0; i < s->nvalues; i++) {
      const json_t *x = json_array_get(v, i);
      if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return fail(L, SG_EINVAL, f, "element %zu: expected a finite number", i);
      s->values[i] = json_number_value(x);
    }
  }
  /* Integer inputs take their drawn values rounded; choice values must be
   * representable as they are. */
  if (d == 2 && (a->dtype == SG_DTYPE_I32 || a->dtype == SG_DTYPE_I64))
    for (size_t i = 0; i < s->nvalues; i++)
      if (s->values[i] != floor(s->values[i]))
        return fail(L, SG_EINVAL, f, "element %zu: %g is not an integer (dtype %s)",
                    i, s->values[i], sg_dtype_name(a->dtype));
  const json_t *st = json_object_get(j, "structure");
  if (st) {
    static const char *const structs[] = {"symmetric", "upper", "lower",
                                          "diagonal"};
    int k = 0;
    snprintf(f, sizeof f, "%s.structure", field);
    if ((rc = get_enum(L, j, "structure", f, structs, 4, &k)))
      return rc;
    if (a->ndims < 2 || a->shape[a->ndims - 1] != a->shape[a->ndims - 2])
      return fail(L, SG_EINVAL, f,
                  "\"%s\" needs a square matrix (the last two dimensions equal)",
                  structs[k]);
    snprintf(s->structure, sizeof s->structure, "%s", structs[k]);
  }
  return 0;
}

static int parse_shape(loader *L, const json_t *j, const char *field,
                       sg_task_arg *a) {
  if (!json_is_array(j) || json_array_size(j) == 0 ||
      json_array_size(j) > SG_TASK_MAX_DIMS)
    return fail(L, SG_EINVAL, field,
                "expected an array of positive integers (1 to %d dimensions)",
                SG_TASK_MAX_DIMS);
  a->ndims = (int)json_array_size(j);
  a->numel = 1;
  for (int i = 0; i < a->ndims; i++) {
    const json_t *x = json_array_get(j, (size_t)i);
    if (!json_is_integer(x) || json_integer_value(x) <= 0)
      return fail(L, SG_EINVAL, field, "expected an array of positive integers");
    a->shape[i] = json_integer_value(x);
    if (a->shape[i] > TASK_MAX_NUMEL || a->numel > TASK_MAX_NUMEL / a->shape[i])
      return fail(L, SG_ERANGE, field, "more than %lld elements",
                  (long long)TASK_MAX_NUMEL);
    a->numel *= a->shape[i];
  }
  return 0;
}

static int parse_arg(loader *L, const json_t *j, size_t idx, sg_task_arg *a) {
  char field[64], f[128];
  snprintf(field, sizeof field, "args[%zu]", idx);
  if (!json_is_object(j))
    return fail(L, SG_EINVAL, field, "expected an object");
  int rc, k = 0, d = 0;
  snprintf(f, sizeof f, "%s.name", field);
  if ((rc = get_string(L, j, "name", f, &a->name)))
    return rc;
  if (!is_identifier(a->name))
    return fail(L, SG_EINVAL, f, "\"%s\" is not a C identifier", a->name);
  snprintf(f, sizeof f, "%s.kind", field);
  if ((rc = get_enum(L, j, "kind", f, kind_names, 3, &k)))
    return rc;
  a->kind = (sg_arg_kind)k;
  snprintf(f, sizeof f, "%s.dtype", field);
  if ((rc = get_enum(L, j, "dtype", f, dtype_names, SG_DTYPE__COUNT, &d)))
    return rc;
  a->dtype = (sg_dtype)d;

  const json_t *shape = json_object_get(j, "shape");
  const json_t *init = json_object_get(j, "init");
  const json_t *value = json_object_get(j, "value");
  if (a->kind == SG_ARG_SCALAR) {
    snprintf(f, sizeof f, "%s.shape", field);
    if (shape && !(json_is_array(shape) && json_array_size(shape) == 0))
      return fail(L, SG_EINVAL, f, "a scalar has no shape");
    snprintf(f, sizeof f, "%s.init", field);
    if (init)
      return fail(L, SG_EINVAL, f, "a scalar has a value, not an init");
    snprintf(f, sizeof f, "%s.value", field);
    if ((rc = get_number(L, j, "value", f, &a->scalar_value)))
      return rc;
    double v = a->scalar_value;
    if (a->dtype == SG_DTYPE_I32 &&
        (v != floor(v) || v < INT32_MIN || v > INT32_MAX))
      return fail(L, SG_EINVAL, f, "expected an int32 integer");
    if (a->dtype == SG_DTYPE_I64 &&
        (v != floor(v) || v < -9.2233720368547758e18 || v >= 9.2233720368547758e18))
      return fail(L, SG_EINVAL, f, "expected an int64 integer");
    a->ndims = 0;
    a->numel = 1;
    return 0;
  }
  snprintf(f, sizeof f, "%s.shape", field);
  if (!shape)
    return fail(L, SG_EINVAL, f, "missing (expected an array of positive integers)");
  if ((rc = parse_shape(L, shape, f, a)))
    return rc;
  snprintf(f, sizeof f, "%s.value", field);
  if (value)
    return fail(L, SG_EINVAL, f, "only a scalar has a value");
  snprintf(f, sizeof f, "%s.init", field);
  if (a->kind == SG_ARG_OUTPUT) {
    if (init)
      return fail(L, SG_EINVAL, f, "an output has no init (it is computed)");
    return 0;
  }
  if (!init)
    return fail(L, SG_EINVAL, f,
                "missing (an input needs a distribution: normal, uniform or "
                "choice)");
  return parse_init(L, init, f, a);
}

/* Counts the parameters between the signature's outermost parentheses;
 * -1 when they cannot be found. "(void)" and "()" count as none. */
static int signature_params(const char *sig, const char *entry) {
  const char *p = strstr(sig, entry);
  while (p) {
    bool start_ok = p == sig || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    const char *q = p + strlen(entry);
    while (*q == ' ' || *q == '\t' || *q == '\n')
      q++;
    if (start_ok && *q == '(')
      break;
    p = strstr(p + 1, entry);
  }
  if (!p)
    return -1;
  const char *open = strchr(p, '(');
  int depth = 0, n = 0;
  const char *arg_start = open + 1;
  for (const char *c = open; *c; c++) {
    if (*c == '(' || *c == '[')
      depth++;
    else if (*c == ')' || *c == ']') {
      if (--depth == 0) {
        /* the last parameter: empty or "void" means none */
        char last[16] = "";
        const char *s = arg_start, *e = c;
        while (s < e && isspace((unsigned char)*s))
          s++;
        while (e > s && isspace((unsigned char)e[-1]))
          e--;
        if ((size_t)(e - s) < sizeof last)
          snprintf(last, sizeof last, "%.*s", (int)(e - s), s);
        if (n == 0 && (last[0] == '\0' || strcmp(last, "void") == 0))
          return 0;
        return n + 1;
      }
    } else if (*c == ',' && depth == 1) {
      n++;
      arg_start = c + 1;
    }
  }
  return -1;
}

static void task_free_fields(sg_task *t) {
  free(t->dir);
  free(t->name);
  free(t->evaluator);
  free(t->language);
  free(t->description);
  free(t->entry);
  free(t->signature);
  for (size_t i = 0; i < t->nargs; i++) {
    free(t->args[i].name);
    free(t->args[i].init.values);
  }
  free(t->args);
  free(t->reference_path);
  free(t->reference_source);
  if (t->raw)
    json_decref(t->raw);
}

void sg_task_free(sg_task *task) {
  if (!task)
    return;
  task_free_fields(task);
  free(task);
}

static const char *const evaluator_names[] = {"cpu", "cuda", "kernelbench"};
static const char *const language_names[] = {"c", "cuda", "python"};

/* Parses task.json's text for the task directory dir; file names it in
 * messages. */
int sg_task_parse(const char *file, const char *dir, const char *text,
                  size_t len, sg_task **out, sg_err *err) {
  *out = NULL;
  loader L = {file, err};
  sg_task *t = sg_calloc(1, sizeof *t);
  int rc = 0;
  t->dir = sg_strdup(dir);
  json_error_t je;
  t->raw = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!t->raw) {
    rc = sg_err_set(err, SG_EPARSE, "%s:%d:%d: %s", file, je.line, je.column,
                    je.text);
    goto done;
  }
  if (!json_is_object(t->raw)) {
    rc = fail(&L, SG_EPARSE, NULL, "expected a JSON object at the top level");
    goto done;
  }
  int e = 0;
  if ((rc = get_string(&L, t->raw, "name", "name", &t->name)))
    goto done;
  if ((rc = get_enum(&L, t->raw, "evaluator", "evaluator", evaluator_names, 3,
                     &e)))
    goto done;
  t->evaluator = sg_strdup(evaluator_names[e]);
  if ((rc = get_enum(&L, t->raw, "language", "language", language_names, 3, &e)))
    goto done;
  t->language = sg_strdup(language_names[e]);
  if ((rc = get_string(&L, t->raw, "description", "description",
                       &t->description)))
    goto done;
  if ((rc = get_string(&L, t->raw, "entry", "entry", &t->entry)))
    goto done;
  if (!is_identifier(t->entry)) {
    rc = fail(&L, SG_EINVAL, "entry", "\"%s\" is not a C identifier", t->entry);
    goto done;
  }
  if ((rc = get_string(&L, t->raw, "signature", "signature", &t->signature)))
    goto done;

  /* kernelbench tasks describe their inputs in Python; the others need args. */
  const json_t *args = json_object_get(t->raw, "args");
  bool need_args = strcmp(t->evaluator, "kernelbench") != 0;
  if (args || need_args) {
    if (!json_is_array(args) || json_array_size(args) == 0) {
      rc = fail(&L, SG_EINVAL, "args",
                args ? "expected a non-empty array of argument objects"
                     : "missing (expected a non-empty array of argument objects)");
      goto done;
    }
    t->nargs = json_array_size(args);
    t->args = sg_calloc(t->nargs, sizeof *t->args);
    size_t outputs = 0;
    for (size_t i = 0; i < t->nargs; i++) {
      if ((rc = parse_arg(&L, json_array_get(args, i), i, &t->args[i])))
        goto done;
      for (size_t k = 0; k < i; k++)
        if (strcmp(t->args[k].name, t->args[i].name) == 0) {
          char f[64];
          snprintf(f, sizeof f, "args[%zu].name", i);
          rc = fail(&L, SG_EINVAL, f, "\"%s\" repeats args[%zu].name",
                    t->args[i].name, k);
          goto done;
        }
      outputs += t->args[i].kind == SG_ARG_OUTPUT;
    }
    if (outputs == 0) {
      rc = fail(&L, SG_EINVAL, "args", "no argument of kind \"output\"");
      goto done;
    }
  }
  if (need_args) {
    int np = signature_params(t->signature, t->entry);
    if (np < 0) {
      rc = fail(&L, SG_EINVAL, "signature",
                "does not declare the entry function %s(...)", t->entry);
      goto done;
    }
    if ((size_t)np != t->nargs) {
      rc = fail(&L, SG_EINVAL, "signature",
                "declares %d parameters but args lists %zu", np, t->nargs);
      goto done;
    }
  }

  const json_t *tol = json_object_get(t->raw, "tolerance");
  if (!json_is_object(tol)) {
    rc = fail(&L, SG_EINVAL, "tolerance",
              tol ? "expected an object {\"atol\": ..., \"rtol\": ...}"
                  : "missing (expected {\"atol\": ..., \"rtol\": ...})");
    goto done;
  }
  if ((rc = get_number(&L, tol, "atol", "tolerance.atol", &t->atol)))
    goto done;
  if (t->atol < 0) {
    rc = fail(&L, SG_EINVAL, "tolerance.atol", "must not be negative");
    goto done;
  }
  if ((rc = get_number(&L, tol, "rtol", "tolerance.rtol", &t->rtol)))
    goto done;
  if (t->rtol < 0) {
    rc = fail(&L, SG_EINVAL, "tolerance.rtol", "must not be negative");
    goto done;
  }

  char *ref = NULL;
  if ((rc = get_string(&L, t->raw, "reference", "reference", &ref)))
    goto done;
  t->reference_path =
      ref[0] == '/' ? sg_strdup(ref) : sg_asprintf("%s/%s", t->dir, ref);
  if (!is_file(t->reference_path)) {
    rc = fail(&L, SG_EINVAL, "reference", "%s: no such file", ref);
    free(ref);
    goto done;
  }
  free(ref);
  /* the evaluators' own limit on a source file: one they can build is one the
   * prompt can show (capped there) */
  rc = sg_file_read(t->reference_path, TASK_REFERENCE_MAX_BYTES,
                    &t->reference_source, &t->reference_len, err);
  if (rc)
    goto done;

done:
  if (rc) {
    sg_task_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* Loads dir/task.json. shown_dir is the directory as the user named it (for
 * messages); the task keeps its absolute path. */
static int load_dir(const char *shown_dir, sg_task **out, sg_err *err) {
  *out = NULL;
  char abs[PATH_MAX];
  if (!realpath(shown_dir, abs))
    return sg_err_set(err, errno == ENOENT ? SG_ENOENT : SG_EIO, "%s: %s",
                      shown_dir, strerror(errno));
  if (!is_dir(abs))
    return sg_err_set(err, SG_EINVAL, "%s: not a directory", shown_dir);
  char *file = sg_asprintf("%s/task.json", shown_dir);
  char *text = NULL;
  size_t len = 0;
  int rc = sg_file_read(file, TASK_JSON_MAX_BYTES, &text, &len, err);
  if (rc == 0)
    rc = sg_task_parse(file, abs, text, len, out, err);
  free(text);
  free(file);
  return rc;
}

/* ---- built-in tasks ------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool keep_dir(const char *dir, const char *name) {
  char *full = sg_asprintf("%s/%s", dir, name);
  bool yes = is_dir(full);
  free(full);
  return yes;
}

/* The sorted names of the subdirectories of path (hidden ones skipped). */
static char **subdirs(const char *path, size_t *n) {
  return sg_file_list(path, keep_dir, cmp_str, n);
}

/* A built-in task's name must be its directory's, and its evaluator the
 * folder it sits in: that is how a name finds it. */
static int check_builtin(sg_task *t, const char *shown, const char *evaluator,
                         const char *name, sg_err *err) {
  if (strcmp(t->name, name) != 0)
    return sg_err_set(err, SG_EINVAL,
                      "%s/task.json: name: \"%s\" differs from the directory's "
                      "name \"%s\"",
                      shown, t->name, name);
  if (strcmp(t->evaluator, evaluator) != 0)
    return sg_err_set(err, SG_EINVAL,
                      "%s/task.json: evaluator: \"%s\" but the task lives under "
                      "%s/",
                      shown, t->evaluator, evaluator);
  return 0;
}

void sg_task_list_free(sg_task **tasks, size_t n) {
  for (size_t i = 0; i < n; i++)
    sg_task_free(tasks[i]);
  free(tasks);
}

int sg_task_list(sg_task ***out, size_t *n, sg_err *err) {
  *out = NULL;
  *n = 0;
  const char *root = sg_task_builtin_root();
  if (!is_dir(root))
    return sg_err_set(err, SG_ENOENT,
                      "%s: the built-in task directory does not exist (set "
                      "SPECGEN_TASKS_DIR)",
                      root);
  size_t nev = 0;
  char **evs = subdirs(root, &nev);
  sg_task **tasks = NULL;
  size_t count = 0, cap = 0;
  int rc = 0;
  /* evaluators sorted, then names sorted within: the promised order */
  for (size_t i = 0; i < nev && rc == 0; i++) {
    char *evdir = sg_asprintf("%s/%s", root, evs[i]);
    size_t nn = 0;
    char **names = subdirs(evdir, &nn);
    for (size_t k = 0; k < nn && rc == 0; k++) {
      char *dir = sg_asprintf("%s/%s", evdir, names[k]);
      char *json = sg_asprintf("%s/task.json", dir);
      if (is_file(json)) {
        sg_task *t = NULL;
        rc = load_dir(dir, &t, err);
        if (rc == 0)
          rc = check_builtin(t, dir, evs[i], names[k], err);
        if (rc == 0) {
          if (count == cap) {
            cap = cap ? cap * 2 : 16;
            tasks = sg_realloc(tasks, cap * sizeof *tasks);
          }
          tasks[count++] = t;
        } else {
          sg_task_free(t);
        }
      }
      free(json);
      free(dir);
    }
    sg_file_list_free(names, nn);
    free(evdir);
  }
  sg_file_list_free(evs, nev);
  if (rc) {
    sg_task_list_free(tasks, count);
    return rc;
  }
  *out = tasks;
  *n = count;
  return 0;
}

/* "cpu/a, cpu/b, cuda/a" of every built-in task (or a note when there is
 * none): qualified, since a name may exist for several evaluators. */
/* Why `want` names no built-in task, and which ones it may have meant: the
 * built-in EVALUATOR/NAME whose NAME (or whole name) is nearest, within a
 * third of its length. Listing them all on one line buried the answer
 * (issue 31); `specgen tasks` lists them. The caller frees the text. */
static char *unknown_task_text(const char *want) {
  const char *root = sg_task_builtin_root();
  sg_buf near;
  sg_buf_init(&near, 128);
  size_t nev = 0, total = 0, best = SIZE_MAX, shown = 0;
  char **evs = subdirs(root, &nev);
  /* two passes: the nearest distance, then the names at it (at most 4) */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < nev; i++) {
      char *evdir = sg_asprintf("%s/%s", root, evs[i]);
      size_t nn = 0;
      char **names = subdirs(evdir, &nn);
      for (size_t k = 0; k < nn; k++) {
        char *json = sg_asprintf("%s/%s/task.json", evdir, names[k]);
        char *full = sg_asprintf("%s/%s", evs[i], names[k]);
        if (is_file(json)) {
          size_t d = sg_edit_distance(want, strchr(want, '/') ? full : names[k]);
          if (pass == 0) {
            total++;
            if (d < best)
              best = d;
          } else if (d == best && shown < 4) {
            sg_buf_printf(&near, "%s%s", shown++ ? ", " : "", full);
          }
        }
        free(full);
        free(json);
      }
      sg_file_list_free(names, nn);
      free(evdir);
    }
    if (pass == 0 && (total == 0 || best > (strlen(want) + 2) / 3))
      break;
  }
  sg_file_list_free(evs, nev);
  char *text;
  if (total == 0)
    text = sg_asprintf("unknown task \"%s\" (no built-in tasks in %s)", want, root);
  else if (shown > 0)
    text = sg_asprintf("unknown task \"%s\"; did you mean %s? (`specgen tasks` lists "
                       "all %zu)", want, sg_buf_str(&near), total);
  else
    text = sg_asprintf("unknown task \"%s\" (`specgen tasks` lists the %zu built-in "
                       "tasks)", want, total);
  sg_buf_free(&near);
  return text;
}

static bool looks_like_path(const char *s) {
  return strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

int sg_task_load(const char *name_or_dir, sg_task **out, sg_err *err) {
  *out = NULL;
  if (!name_or_dir || !name_or_dir[0])
    return sg_err_set(err, SG_EINVAL, "no task named (give a name or a directory)");
  /* A KernelBench file by path or kernelbench:LEVEL/N (sg_task_kb.h). */
  if (sg_task_kb_is_ref(name_or_dir))
    return sg_task_kb_load(name_or_dir, out, err);
  /* "cuda/hinge_loss": a built-in task qualified by its evaluator (a name
   * alone finds the first evaluator's, in sorted order: cpu before cuda) */
  const char *slash = strchr(name_or_dir, '/');
  if (slash && slash != name_or_dir && !strchr(slash + 1, '/') && slash[1] &&
      name_or_dir[0] != '.') {
    char *dir = sg_asprintf("%s/%s", sg_task_builtin_root(), name_or_dir);
    char *json = sg_asprintf("%s/task.json", dir);
    bool found = is_file(json);
    free(json);
    if (found) {
      char *ev = sg_strndup(name_or_dir, (size_t)(slash - name_or_dir));
      int rc = load_dir(dir, out, err);
      if (rc == 0 && (rc = check_builtin(*out, dir, ev, slash + 1, err))) {
        sg_task_free(*out);
        *out = NULL;
      }
      free(ev);
      free(dir);
      return rc;
    }
    free(dir);
    /* an evaluator's folder with no such task in it, and no such directory
     * here: a mistyped name, not a path */
    char *evdir = sg_asprintf("%s/%.*s", sg_task_builtin_root(), (int)(slash - name_or_dir),
                              name_or_dir);
    bool mistyped = is_dir(evdir) && !is_dir(name_or_dir);
    free(evdir);
    if (mistyped) {
      char *text = unknown_task_text(name_or_dir);
      int rc = sg_err_set(err, SG_ENOENT, "%s", text);
      free(text);
      return rc;
    }
  }
  if (looks_like_path(name_or_dir))
    return load_dir(name_or_dir, out, err);

  /* A name: <root>/<evaluator>/<name>/task.json for some evaluator. */
  const char *root = sg_task_builtin_root();
  size_t nev = 0;
  char **evs = subdirs(root, &nev);
  int rc = SG_ENOENT;
  for (size_t i = 0; i < nev; i++) {
    char *dir = sg_asprintf("%s/%s/%s", root, evs[i], name_or_dir);
    char *json = sg_asprintf("%s/task.json", dir);
    bool found = is_file(json);
    free(json);
    if (found) {
      rc = load_dir(dir, out, err);
      if (rc == 0 && (rc = check_builtin(*out, dir, evs[i], name_or_dir, err))) {
        sg_task_free(*out);
        *out = NULL;
      }
      free(dir);
      break;
    }
    free(dir);
  }
  sg_file_list_free(evs, nev);
  if (rc != SG_ENOENT)
    return rc;
  /* Not built in: a directory of that name in the working directory will do. */
  char *json = sg_asprintf("%s/task.json", name_or_dir);
  bool local = is_file(json);
  free(json);
  if (local)
    return load_dir(name_or_dir, out, err);
  char *text = unknown_task_text(name_or_dir);
  rc = sg_err_set(err, SG_ENOENT, "%s", text);
  free(text);
  return rc;
}

/* ---- examples -------------------------------------------------------------- */

static const char *const example_statuses[] = {
    "ok", "compile_error", "runtime_error", "numerical_error", "timeout",
    "rejected"};

void sg_task_examples_free(sg_task_example *ex, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(ex[i].path);
    free(ex[i].expected_status);
    free(ex[i].label);
  }
  free(ex);
}

int sg_task_examples(const sg_task *task, sg_task_example **out, size_t *n,
                     sg_err *err) {
  *out = NULL;
  *n = 0;
  char *dir = sg_asprintf("%s/examples", task->dir);
  DIR *d = opendir(dir);
  if (!d) {
    int e = errno;
    free(dir);
    if (e == ENOENT)
      return 0; /* a task without examples has none */
    return sg_err_set(err, SG_EIO, "%s/examples: %s", task->dir, strerror(e));
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    char *full = sg_asprintf("%s/%s", dir, de->d_name);
    bool file = is_file(full);
    free(full);
    if (!file)
      continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      names = sg_realloc(names, cap * sizeof *names);
    }
    names[count++] = sg_strdup(de->d_name);
  }
  closedir(d);
  if (count)
    qsort(names, count, sizeof *names, cmp_str);

  sg_task_example *ex = count ? sg_calloc(count, sizeof *ex) : NULL;
  int rc = 0;
  for (size_t i = 0; i < count && rc == 0; i++) {
    const char *nm = names[i];
    const char *dash = strchr(nm, '-');
    const char *dot = strrchr(nm, '.');
    size_t plen = dash ? (size_t)(dash - nm) : 0;
    bool known = false;
    for (size_t k = 0; dash && k < sizeof example_statuses / sizeof *example_statuses; k++)
      if (strlen(example_statuses[k]) == plen &&
          strncmp(nm, example_statuses[k], plen) == 0)
        known = true;
    if (!known || !dot || dot <= dash + 1) {
      rc = sg_err_set(err, SG_EINVAL,
                      "%s/%s: an example's name must be <status>-<label>.<ext> "
                      "with status one of ok, compile_error, runtime_error, "
                      "numerical_error, timeout, rejected",
                      dir, nm);
      break;
    }
    ex[i].path = sg_asprintf("%s/%s", dir, nm);
    ex[i].expected_status = sg_strndup(nm, plen);
    ex[i].label = sg_strndup(dash + 1, (size_t)(dot - dash - 1));
  }
  sg_file_list_free(names, count);
  free(dir);
  if (rc) {
    sg_task_examples_free(ex, count);
    return rc;
  }
  *out = ex;
  *n = count;
  return 0;
}

const char *sg_task_index_str(const sg_task_arg *a, int64_t flat, char *buf,
                              size_t len) {
  int64_t idx[SG_TASK_MAX_DIMS];
  for (int d = a->ndims - 1; d >= 0; d--) {
    idx[d] = flat % a->shape[d];
    flat /= a->shape[d];
  }
  size_t off = 0;
  off += (size_t)snprintf(buf + off, len - off, "[");
  for (int d = 0; d < a->ndims && off < len; d++)
    off += (size_t)snprintf(buf + off, len - off, "%s%lld", d ? ", " : "",
                            (long long)idx[d]);
  if (off < len)
    snprintf(buf + off, len - off, "]");
  return buf;
}
