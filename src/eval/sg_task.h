/* sg_task.h: a task, loaded from its directory (format: docs/tasks.md).
 *
 * A task is a directory holding task.json (what to compute, the kernel's
 * signature, its arguments with shapes, dtypes and how to draw random inputs,
 * the tolerance), a reference implementation, and example candidates in
 * examples/, each named <expected-status>-<label>.<ext> (ok-fast.c,
 * compile_error-syntax.c, ...). Built-in tasks live in tasks/<evaluator>/<name>.
 */
#ifndef SG_TASK_H
#define SG_TASK_H

#include "common/sg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sg_dtype {
  SG_DTYPE_F32,
  SG_DTYPE_F64,
  SG_DTYPE_I32,
  SG_DTYPE_I64,
  SG_DTYPE__COUNT
} sg_dtype;

/* "float32", "float64", "int32", "int64". */
const char *sg_dtype_name(sg_dtype d);
size_t sg_dtype_size(sg_dtype d);

typedef enum sg_arg_kind { SG_ARG_INPUT, SG_ARG_OUTPUT, SG_ARG_SCALAR } sg_arg_kind;

/* How an input's values are drawn (docs/tasks.md lists the distributions). */
typedef struct sg_init_spec {
  char dist[16];        /* "normal", "uniform", "choice", "sign_mix", ... */
  double p[4];          /* the distribution's parameters, in its documented order */
  double *values;       /* for "choice": the values, owned */
  size_t nvalues;
  char structure[16];   /* "", "symmetric", "upper", "lower", "diagonal" */
} sg_init_spec;

#define SG_TASK_MAX_DIMS 6

typedef struct sg_task_arg {
  char *name;
  sg_arg_kind kind;
  sg_dtype dtype;
  int ndims;
  int64_t shape[SG_TASK_MAX_DIMS];
  int64_t numel;         /* product of shape; 1 for a scalar */
  sg_init_spec init;     /* inputs only */
  double scalar_value;   /* scalars only */
} sg_task_arg;

typedef struct sg_task {
  char *dir;             /* absolute path of the task directory */
  char *name;
  char *evaluator;       /* "cpu", "cuda", "kernelbench" */
  char *language;        /* "c", "cuda", "python" */
  char *description;
  char *entry;           /* the function (or class) the candidate must define */
  char *signature;       /* its full C signature, shown to the LLM */
  sg_task_arg *args;     /* in signature order */
  size_t nargs;
  double atol, rtol;
  char *reference_path;  /* absolute */
  char *reference_source; /* its text, read once when the task is loaded:
                             shown to the LLM as the specification and built
                             by the evaluators, so both see the same text */
  size_t reference_len;
  json_t *raw;           /* the whole task.json, for evaluator-specific keys */
} sg_task;

/* Loads a task by built-in name ("hinge_loss": the first evaluator's, cpu
 * before cuda; "cuda/hinge_loss": that evaluator's) or by directory path.
 * Errors name the file and
 * the field that is wrong (SG_ENOENT for an unknown name, SG_EPARSE or
 * SG_EINVAL for an invalid description). *out is freed with sg_task_free. */
int sg_task_load(const char *name_or_dir, sg_task **out, sg_err *err);
void sg_task_free(sg_task *task);

/* Parses the text of a task.json for the task directory dir (absolute; the
 * reference is looked up there); file names it in error messages. What
 * sg_task_load does after reading the file; also the fuzz target's door. */
int sg_task_parse(const char *file, const char *dir, const char *text,
                  size_t len, sg_task **out, sg_err *err);

/* The directory that holds the built-in tasks: $SPECGEN_TASKS_DIR, else the
 * installed data directory, else the source tree's tasks/. */
const char *sg_task_builtin_root(void);

/* Every built-in task, sorted by evaluator then name; the caller frees the
 * array with sg_task_list_free. */
int sg_task_list(sg_task ***out, size_t *n, sg_err *err);
void sg_task_list_free(sg_task **tasks, size_t n);

typedef struct sg_task_example {
  char *path;            /* absolute */
  char *expected_status; /* "ok", "compile_error", ... (the file name's prefix) */
  char *label;           /* the rest of the name: "fast", "reference", "segv" */
} sg_task_example;

/* The task's example candidates, sorted by file name. */
int sg_task_examples(const sg_task *task, sg_task_example **out, size_t *n,
                     sg_err *err);
void sg_task_examples_free(sg_task_example *ex, size_t n);

/* "[12, 3]" for a flat index into a's shape; into buf of size len. */
const char *sg_task_index_str(const sg_task_arg *a, int64_t flat, char *buf,
                              size_t len);

#endif
