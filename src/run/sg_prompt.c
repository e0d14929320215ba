/* sg_prompt.c: templates in files, placeholders substituted by hand, and the
 * rendering of a search's structured prompt (see sg_prompt.h).
 *
 * Each template has a scope: the placeholders it may use. Loading checks
 * every template against its scope, so a typo in a user's template stops
 * the run before the first generation, with the file and line, instead of
 * sending a prompt with a hole in it. Rendering builds the values from the
 * task, the history and the plan, expands the item templates (kernel.txt,
 * failure.txt) once per item, and the message templates once.
 */
#include "run/sg_prompt.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "run/sg_feedback.h"

#include <assert.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- expansion --------------------------------------------------------- */

#define NAME_MAX_BYTES 64

typedef struct expander {
  const char *file;
  const char *text;        /* the whole template, for line numbers */
  const sg_prompt_var *vars;
  size_t nvars;
  sg_buf *out;             /* NULL: check only */
  sg_err *err;
} expander;

static int line_of(const expander *x, const char *at) {
  int line = 1;
  for (const char *p = x->text; p < at; p++)
    line += *p == '\n';
  return line;
}

static const char *lookup(const expander *x, const char *name, size_t len) {
  for (size_t i = 0; i < x->nvars; i++)
    if (strlen(x->vars[i].name) == len &&
        memcmp(x->vars[i].name, name, len) == 0)
      return x->vars[i].value;
  return NULL;
}

/* A tag "{{...}}" at p (p points at "{{"): its name span and its end. */
typedef struct tag {
  const char *start, *end;  /* "{{" and one past "}}" */
  char sigil;               /* '#', '/' or 0 */
  const char *name;
  size_t len;
} tag;

static int parse_tag(const expander *x, const char *p, tag *t) {
  *t = (tag){.start = p, .end = p + 2, .sigil = 0, .name = p + 2, .len = 0};
  const char *close = strstr(p + 2, "}}");
  const char *nl = strchr(p + 2, '\n');
  if (close == NULL || (nl != NULL && nl < close))
    return sg_err_set(x->err, SG_EPARSE,
                      "%s:%d: '{{' without '}}' on the same line", x->file,
                      line_of(x, p));
  t->end = close + 2;
  const char *a = p + 2, *b = close;
  while (a < b && *a == ' ')
    a++;
  while (b > a && b[-1] == ' ')
    b--;
  t->sigil = 0;
  if (a < b && (*a == '#' || *a == '/')) {
    t->sigil = *a;
    a++;
  }
  t->name = a;
  t->len = (size_t)(b - a);
  if (t->len == 0 || t->len > NAME_MAX_BYTES)
    return sg_err_set(x->err, SG_EPARSE, "%s:%d: empty or too long tag %.*s",
                      x->file, line_of(x, p),
                      (int)(t->end - p > 80 ? 80 : t->end - p), p);
  if (lookup(x, t->name, t->len) == NULL) {
    sg_buf known;
    sg_buf_init(&known, 0);
    for (size_t i = 0; i < x->nvars; i++)
      sg_buf_printf(&known, "%s%s", i ? ", " : "", x->vars[i].name);
    int rc = sg_err_set(x->err, SG_EPARSE,
                        "%s:%d: unknown placeholder {{%s%.*s}} (known here: "
                        "%.700s)",
                        x->file, line_of(x, p),
                        t->sigil ? (t->sigil == '#' ? "#" : "/") : "",
                        (int)t->len, t->name, sg_buf_str(&known));
    sg_buf_free(&known);
    return rc;
  }
  return 0;
}

/* A section tag alone on its line: its line break goes with it. */
static const char *after_standalone(const expander *x, const tag *t) {
  bool at_line_start = t->start == x->text || t->start[-1] == '\n';
  if (at_line_start && *t->end == '\n')
    return t->end + 1;
  return t->end;
}

/* Finds the "{{/name}}" closing the section opened by open, counting
 * nested sections of the same name. */
static int find_close(const expander *x, const tag *open, const char *limit,
                      tag *close) {
  int depth = 0;
  const char *p = open->end;
  while ((p = strstr(p, "{{")) != NULL && p < limit) {
    tag t;
    int rc = parse_tag(x, p, &t);
    if (rc < 0)
      return rc;
    if (t.len == open->len && memcmp(t.name, open->name, t.len) == 0) {
      if (t.sigil == '#') {
        depth++;
      } else if (t.sigil == '/') {
        if (depth == 0) {
          *close = t;
          return 0;
        }
        depth--;
      }
    }
    p = t.end;
  }
  return sg_err_set(x->err, SG_EPARSE,
                    "%s:%d: section {{#%.*s}} is never closed with {{/%.*s}}",
                    x->file, line_of(x, open->start), (int)open->len,
                    open->name, (int)open->len, open->name);
}

static int expand_range(const expander *x, const char *p, const char *end,
                        int depth) {
  if (depth > SG_PROMPT_MAX_DEPTH)
    return sg_err_set(x->err, SG_EPARSE,
                      "%s:%d: sections nested deeper than %d", x->file,
                      line_of(x, p), SG_PROMPT_MAX_DEPTH);
  while (p < end) {
    const char *o = strstr(p, "{{");
    if (o == NULL || o >= end) {
      if (x->out)
        sg_buf_append(x->out, p, (size_t)(end - p));
      break;
    }
    if (x->out)
      sg_buf_append(x->out, p, (size_t)(o - p));
    tag t;
    int rc = parse_tag(x, o, &t);
    if (rc < 0)
      return rc;
    if (t.end > end)
      return sg_err_set(x->err, SG_EPARSE, "%s:%d: tag crosses a section end",
                        x->file, line_of(x, o));
    if (t.sigil == '/')
      return sg_err_set(x->err, SG_EPARSE,
                        "%s:%d: {{/%.*s}} closes no open section", x->file,
                        line_of(x, o), (int)t.len, t.name);
    if (t.sigil == '#') {
      tag c = t; /* set by find_close */
      rc = find_close(x, &t, end, &c);
      if (rc < 0)
        return rc;
      const char *inner = after_standalone(x, &t);
      const char *value = lookup(x, t.name, t.len);
      if (x->out == NULL || value[0] != '\0') {
        rc = expand_range(x, inner, c.start > inner ? c.start : inner,
                          depth + 1);
        if (rc < 0)
          return rc;
      }
      p = after_standalone(x, &c);
      continue;
    }
    if (x->out)
      sg_buf_puts(x->out, lookup(x, t.name, t.len));
    p = t.end;
  }
  return 0;
}

int sg_prompt_expand(const char *file, const char *text,
                     const sg_prompt_var *vars, size_t nvars, sg_buf *out,
                     sg_err *err) {
  expander x = {file, text, vars, nvars, out, err};
  int rc = expand_range(&x, text, text + strlen(text), 0);
  if (rc < 0)
    return rc;
  if (out != NULL && out->truncated)
    return sg_err_set(err, SG_EFULL,
                      "%s: the rendered text exceeds its cap of %zu bytes",
                      file, out->limit);
  return 0;
}

/* ---- the templates and their scopes ------------------------------------ */

enum { SCOPE_RULES, SCOPE_TASK, SCOPE_MESSAGE, SCOPE_ITEM };

static const struct {
  const char *name;
  int scope;
} k_templates[] = {
    {"system.txt", SCOPE_TASK},
    {"task.txt", SCOPE_MESSAGE},
    {"refine.txt", SCOPE_MESSAGE},
    {"kernel.txt", SCOPE_ITEM},
    {"failure.txt", SCOPE_ITEM},
    {"think.txt", SCOPE_TASK},
    {"rules_cpu.txt", SCOPE_RULES},
    {"rules_cuda.txt", SCOPE_RULES},
    {"rules_kernelbench.txt", SCOPE_RULES},
};
#define N_TEMPLATES (sizeof k_templates / sizeof k_templates[0])

/* The placeholders, by scope: each scope adds to the one before. */
static const char *const k_rules_vars[] = {
    "task.name",      "task.evaluator", "task.language", "task.language_name",
    "task.description",
    "task.entry",     "task.signature", "task.args",     "task.tolerance",
    "task.reference", "task.reference_language", "iteration",
};
static const char *const k_task_vars[] = {"task.rules"};
static const char *const k_message_vars[] = {
    "best.id",       "best.iteration", "best.origin",  "best.status",
    "best.speedup",  "best.source",    "best.feedback", "best.profile",
    "others",        "failures",
};
static const char *const k_item_vars[] = {
    "kernel.id",      "kernel.iteration", "kernel.origin",
    "kernel.status",  "kernel.speedup",   "kernel.source",
    "kernel.feedback", "kernel.profile",
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_VARS                                                          \
  (COUNT(k_rules_vars) + COUNT(k_task_vars) + COUNT(k_message_vars) +    \
   COUNT(k_item_vars))

/* A set of placeholder values under construction. */
typedef struct varset {
  sg_prompt_var v[MAX_VARS];
  size_t n;
} varset;

static void set_var(varset *s, const char *name, const char *value) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i].name, name) == 0) {
      s->v[i].value = value;
      return;
    }
  assert(s->n < MAX_VARS);
  s->v[s->n].name = name;
  s->v[s->n].value = value;
  s->n++;
}

/* Every placeholder of a scope, set to "" (for checking templates). */
static void scope_vars(int scope, varset *s) {
  s->n = 0;
  for (size_t i = 0; i < COUNT(k_rules_vars); i++)
    set_var(s, k_rules_vars[i], "");
  if (scope >= SCOPE_TASK)
    set_var(s, k_task_vars[0], "");
  if (scope == SCOPE_MESSAGE)
    for (size_t i = 0; i < COUNT(k_message_vars); i++)
      set_var(s, k_message_vars[i], "");
  if (scope == SCOPE_ITEM)
    for (size_t i = 0; i < COUNT(k_item_vars); i++)
      set_var(s, k_item_vars[i], "");
}

struct sg_prompt_templates {
  char *text[N_TEMPLATES];
  char *path[N_TEMPLATES];
};

const char *sg_prompt_builtin_dir(void) {
  /* recomputed on every call: tests change the environment between calls */
  static char dir[PATH_MAX];
  const char *env = getenv("SPECGEN_PROMPTS_DIR");
  if (env && env[0]) {
    snprintf(dir, sizeof dir, "%s", env);
    return dir;
  }
  struct stat st;
  snprintf(dir, sizeof dir, "%s/prompts", SG_DATA_DIR);
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
    return dir;
  snprintf(dir, sizeof dir, "%s/prompts", SG_SOURCE_ROOT);
  return dir;
}

static int template_index(const char *name) {
  for (size_t i = 0; i < N_TEMPLATES; i++)
    if (strcmp(k_templates[i].name, name) == 0)
      return (int)i;
  return -1;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A *.txt in the user's directory that no template has: a typo. */
static int check_user_dir(const char *dir, sg_err *err) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return sg_err_set(err, SG_ENOENT, "%s: cannot open the prompt directory",
                      dir);
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && strcmp(e->d_name + n - 4, ".txt") == 0 &&
        template_index(e->d_name) < 0) {
      sg_buf known;
      sg_buf_init(&known, 0);
      for (size_t i = 0; i < N_TEMPLATES; i++)
        sg_buf_printf(&known, "%s%s", i ? ", " : "", k_templates[i].name);
      rc = sg_err_set(err, SG_EINVAL,
                      "%s/%s: not a template name (templates: %s)", dir,
                      e->d_name, sg_buf_str(&known));
      sg_buf_free(&known);
    }
  }
  closedir(d);
  return rc;
}

int sg_prompt_templates_load(const char *user_dir, sg_prompt_templates **out,
                             sg_err *err) {
  *out = NULL;
  if (user_dir != NULL) {
    int rc = check_user_dir(user_dir, err);
    if (rc < 0)
      return rc;
  }
  sg_prompt_templates *t = sg_calloc(1, sizeof *t);
  const char *builtin = sg_prompt_builtin_dir();
  for (size_t i = 0; i < N_TEMPLATES; i++) {
    char *path = NULL;
    if (user_dir != NULL) {
      path = sg_asprintf("%s/%s", user_dir, k_templates[i].name);
      if (!is_file(path)) {
        free(path);
        path = NULL;
      }
    }
    if (path == NULL)
      path = sg_asprintf("%s/%s", builtin, k_templates[i].name);
    t->path[i] = path;
    size_t len = 0;
    int rc = sg_file_read(path, SG_PROMPT_TEMPLATE_MAX_BYTES, &t->text[i],
                          &len, err);
    if (rc == 0 && strlen(t->text[i]) != len)
      rc = sg_err_set(err, SG_EPARSE, "%s: holds a NUL byte", path);
    if (rc == 0) {
      varset s;
      scope_vars(k_templates[i].scope, &s);
      rc = sg_prompt_expand(path, t->text[i], s.v, s.n, NULL, err);
    }
    if (rc < 0) {
      sg_prompt_templates_free(t);
      return rc;
    }
  }
  *out = t;
  return 0;
}

void sg_prompt_templates_free(sg_prompt_templates *t) {
  if (t == NULL)
    return;
  for (size_t i = 0; i < N_TEMPLATES; i++) {
    free(t->text[i]);
    free(t->path[i]);
  }
  free(t);
}

const char *sg_prompt_template_path(const sg_prompt_templates *t,
                                    const char *name) {
  int i = template_index(name);
  return i < 0 ? NULL : t->path[i];
}

void sg_prompt_text_free(sg_prompt_text *pt) {
  free(pt->system);
  free(pt->user);
  free(pt->think);
  pt->system = pt->user = pt->think = NULL;
}

/* ---- values ------------------------------------------------------------ */

/* Strings made while rendering, freed together at the end. */
typedef struct strpool {
  char *s[64];
  size_t n;
} strpool;

static const char *keep(strpool *p, char *s) {
  assert(p->n < COUNT(p->s));
  p->s[p->n++] = s;
  return s;
}

static void strpool_free(strpool *p) {
  for (size_t i = 0; i < p->n; i++)
    free(p->s[i]);
  p->n = 0;
}

static char *task_args_text(const sg_task *task) {
  static const char *const kind[] = {"input", "output", "scalar"};
  sg_buf b;
  sg_buf_init(&b, 0);
  for (size_t i = 0; i < task->nargs; i++) {
    const sg_task_arg *a = &task->args[i];
    sg_buf_printf(&b, "- %s: %s, %s", a->name, kind[a->kind],
                  sg_dtype_name(a->dtype));
    if (a->kind == SG_ARG_SCALAR) {
      /* Said plainly because small models turned "value 384" into
       * `#define N 384`, which breaks the signature's parameter N. */
      sg_buf_printf(&b, ", value %.17g (passed as this argument: read it, "
                        "do not #define it)",
                    a->scalar_value);
    } else {
      sg_buf_puts(&b, ", shape [");
      for (int d = 0; d < a->ndims; d++)
        sg_buf_printf(&b, "%s%lld", d ? ", " : "", (long long)a->shape[d]);
      sg_buf_puts(&b, "]");
    }
    sg_buf_puts(&b, "\n");
  }
  return sg_buf_steal(&b);
}

/* The fence's language for a source file, by its extension. */
static const char *source_language(const char *path) {
  const char *dot = path ? strrchr(path, '.') : NULL;
  if (dot == NULL)
    return "";
  if (strcmp(dot, ".c") == 0 || strcmp(dot, ".h") == 0)
    return "c";
  if (strcmp(dot, ".cu") == 0 || strcmp(dot, ".cuh") == 0)
    return "cuda";
  if (strcmp(dot, ".py") == 0)
    return "python";
  return "";
}

static const char *language_name(const char *lang) {
  if (lang == NULL)
    return "";
  if (strcmp(lang, "c") == 0)
    return "C";
  if (strcmp(lang, "cuda") == 0)
    return "CUDA C++";
  if (strcmp(lang, "python") == 0)
    return "Python";
  return lang;
}

/* A copy without trailing blank space (kept in pool): the templates decide
 * the spacing around a value, not the value. */
static const char *trimmed(strpool *pool, const char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    n--;
  return keep(pool, sg_strndup(s, n));
}

static void task_vars(const sg_task *task, uint32_t iteration, strpool *pool,
                      varset *s) {
  s->n = 0;
  set_var(s, "task.name", task->name ? task->name : "");
  set_var(s, "task.evaluator", task->evaluator ? task->evaluator : "");
  set_var(s, "task.language", task->language ? task->language : "");
  set_var(s, "task.language_name", language_name(task->language));
  set_var(s, "task.description", task->description ? task->description : "");
  set_var(s, "task.entry", task->entry ? task->entry : "");
  set_var(s, "task.signature", task->signature ? task->signature : "");
  set_var(s, "task.args", keep(pool, task_args_text(task)));
  set_var(s, "task.tolerance",
          keep(pool, sg_asprintf("|kernel - reference| <= atol + rtol * "
                                 "|reference| with atol %g, rtol %g",
                                 task->atol, task->rtol)));
  const char *ref = task->reference_source ? task->reference_source : "";
  set_var(s, "task.reference",
          trimmed(pool, keep(pool, sg_feedback_cap(ref, strlen(ref),
                                                   SG_PROMPT_REFERENCE_MAX, 1))));
  set_var(s, "task.reference_language",
          source_language(task->reference_path));
  set_var(s, "iteration", keep(pool, sg_asprintf("%u", iteration)));
}

static const char *status_text(const sg_kernel *k) {
  if (k->extract != SG_EXTRACT_FOUND)
    return "no candidate in the answer";
  if (k->dropped)
    return "withdrawn at an iteration boundary";
  if (!k->validated)
    return "not evaluated yet";
  return sg_eval_status_name(k->validate_status);
}

static const char *feedback_text(const sg_kernel *k, const sg_task *task) {
  if (k->extract != SG_EXTRACT_FOUND)
    return sg_feedback_extract(k->extract, task->language, NULL);
  if (!k->validated)
    return "not evaluated yet";
  if (k->validate_message != NULL)
    return k->validate_message;
  return sg_eval_status_name(k->validate_status);
}

/* The values describing kernel k under prefix ("best" or "kernel"). */
static void kernel_vars(const char *prefix, const sg_kernel *k,
                        const sg_task *task, bool show_source,
                        bool show_profile, size_t source_cap, strpool *pool,
                        varset *s) {
  static const char *const names[][8] = {
      {"best.id", "best.iteration", "best.origin", "best.status",
       "best.speedup", "best.source", "best.feedback", "best.profile"},
      {"kernel.id", "kernel.iteration", "kernel.origin", "kernel.status",
       "kernel.speedup", "kernel.source", "kernel.feedback", "kernel.profile"},
  };
  int w = strcmp(prefix, "best") == 0 ? 0 : 1;
  if (k == NULL) {
    for (int i = 0; i < 8; i++)
      set_var(s, names[w][i], "");
    return;
  }
  set_var(s, names[w][0],
          keep(pool, sg_asprintf("%llu", (unsigned long long)k->id)));
  set_var(s, names[w][1], keep(pool, sg_asprintf("%u", k->iteration)));
  set_var(s, names[w][2],
          k->origin == SG_GEN_MAIN ? "the main reasoning generation"
          : k->answer              ? "the answer asked of the main reasoning generation "
                                     "at its length cap"
                                   : "a speculative generation");
  set_var(s, names[w][3], status_text(k));
  set_var(s, names[w][4],
          isfinite(k->speedup)
              ? keep(pool, sg_asprintf("%.3gx", k->speedup))
              : "not measured");
  const char *src = "";
  if (show_source && k->source != NULL)
    src = trimmed(pool, keep(pool, sg_feedback_cap(k->source, k->source_len,
                                                   source_cap, 1)));
  set_var(s, names[w][5], src);
  set_var(s, names[w][6], trimmed(pool, feedback_text(k, task)));
  set_var(s, names[w][7],
          show_profile && k->profile_text ? trimmed(pool, k->profile_text)
                                          : "");
}

static bool has_item(const sg_prompt *p, sg_prompt_item_kind kind,
                     uint64_t id) {
  for (size_t i = 0; i < p->n_items; i++)
    if (p->items[i].kind == kind && p->items[i].kernel == id)
      return true;
  return false;
}

static int expand_template(const sg_prompt_templates *t, const char *name,
                           const varset *s, sg_buf *out, sg_err *err) {
  int i = template_index(name);
  assert(i >= 0);
  return sg_prompt_expand(t->path[i], t->text[i], s->v, s->n, out, err);
}

/* Expands an item template for kernel k and appends it to out. */
static int render_item(const sg_prompt_templates *t, const char *name,
                       const varset *base, const sg_kernel *k,
                       const sg_task *task, bool source, bool profile,
                       size_t source_cap, sg_buf *out, sg_err *err) {
  strpool pool = {.n = 0};
  varset s = *base;
  kernel_vars("kernel", k, task, source, profile, source_cap, &pool, &s);
  int rc = expand_template(t, name, &s, out, err);
  strpool_free(&pool);
  return rc;
}

int sg_prompt_render(const sg_prompt_templates *t, const sg_task *task,
                     const sg_history *h, const sg_prompt *p,
                     uint32_t iteration, sg_prompt_text *out, sg_err *err) {
  out->system = out->user = out->think = NULL;
  strpool pool = {.n = 0};
  varset s;
  task_vars(task, iteration, &pool, &s);
  sg_buf rules, system, think, others, failures, user;
  sg_buf_init(&rules, SG_PROMPT_TEXT_MAX);
  sg_buf_init(&system, SG_PROMPT_TEXT_MAX);
  sg_buf_init(&think, SG_PROMPT_TEXT_MAX);
  sg_buf_init(&others, SG_PROMPT_TEXT_MAX);
  sg_buf_init(&failures, SG_PROMPT_TEXT_MAX);
  sg_buf_init(&user, SG_PROMPT_TEXT_MAX);
  int rc = 0;

  /* rules_<evaluator>.txt; an evaluator without one has no rules to show */
  char *rules_name =
      sg_asprintf("rules_%s.txt", task->evaluator ? task->evaluator : "");
  if (template_index(rules_name) >= 0)
    rc = expand_template(t, rules_name, &s, &rules, err);
  free(rules_name);
  set_var(&s, "task.rules", trimmed(&pool, sg_buf_str(&rules)));
  if (rc == 0)
    rc = expand_template(t, "system.txt", &s, &system, err);
  if (rc == 0)
    rc = expand_template(t, "think.txt", &s, &think, err);

  const sg_kernel *best =
      p->base_kernel ? sg_history_get(h, p->base_kernel) : NULL;
  assert(p->base_kernel == 0 || best != NULL);

  /* others: kernels shown besides the base, in the plan's order, once each */
  for (size_t i = 0; rc == 0 && i < p->n_items; i++) {
    const sg_prompt_item *it = &p->items[i];
    if (it->kind == SG_ITEM_FAILURE || it->kernel == p->base_kernel)
      continue;
    bool seen = false;
    for (size_t j = 0; j < i; j++)
      seen |= p->items[j].kind != SG_ITEM_FAILURE &&
              p->items[j].kernel == it->kernel;
    if (seen)
      continue;
    const sg_kernel *k = sg_history_get(h, it->kernel);
    assert(k != NULL);
    rc = render_item(t, "kernel.txt", &s, k, task,
                     has_item(p, SG_ITEM_KERNEL, k->id),
                     has_item(p, SG_ITEM_PROFILE, k->id), SG_KERNEL_SOURCE_MAX,
                     &others, err);
  }
  for (size_t i = 0; rc == 0 && i < p->n_items; i++) {
    if (p->items[i].kind != SG_ITEM_FAILURE)
      continue;
    const sg_kernel *k = sg_history_get(h, p->items[i].kernel);
    assert(k != NULL);
    rc = render_item(t, "failure.txt", &s, k, task, true, false,
                     SG_PROMPT_FAILURE_SOURCE_MAX, &failures, err);
  }

  if (rc == 0) {
    /* the item placeholders are not in the message scope: drop them */
    varset m;
    m.n = 0;
    for (size_t i = 0; i < s.n; i++)
      if (strncmp(s.v[i].name, "kernel.", 7) != 0)
        m.v[m.n++] = s.v[i];
    kernel_vars("best", best, task, best != NULL,
                best != NULL && has_item(p, SG_ITEM_PROFILE, best->id),
                SG_KERNEL_SOURCE_MAX, &pool, &m);
    set_var(&m, "others", trimmed(&pool, sg_buf_str(&others)));
    set_var(&m, "failures", trimmed(&pool, sg_buf_str(&failures)));
    rc = expand_template(t, best ? "refine.txt" : "task.txt", &m, &user, err);
  }
  if (rc == 0) {
    out->system = sg_buf_steal(&system);
    out->user = sg_buf_steal(&user);
    out->think = sg_buf_steal(&think);
  }
  sg_buf_free(&rules);
  sg_buf_free(&system);
  sg_buf_free(&think);
  sg_buf_free(&others);
  sg_buf_free(&failures);
  sg_buf_free(&user);
  strpool_free(&pool);
  return rc;
}
