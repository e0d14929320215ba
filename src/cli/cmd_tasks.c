/* cmd_tasks.c: `specgen tasks`: lists the built-in tasks. */
#include "cli/cli_flags.h"
#include "cli/commands.h"

#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen tasks [--json] [--evaluator cpu|cuda|kernelbench]\n"
          "\n"
          "Lists the built-in tasks (found under $SPECGEN_TASKS_DIR, else the\n"
          "installed data directory, else the source tree's tasks/).\n"
          "\n"
          "  --json            an array of objects: name, evaluator, language,\n"
          "                    description, dir, entry, signature\n"
          "  --evaluator NAME  only the tasks of that evaluator\n"
          "  -h, --help        this help\n");
}

/* One line per task: the description is cut at a word boundary so the table
 * stays readable; `--json` and docs carry the whole text. */
static void print_summary_row(int name_width, const sg_task *t) {
  enum { DESC_MAX = 72 };
  const char *d = t->description ? t->description : "";
  size_t len = strlen(d);
  if (len <= DESC_MAX) {
    printf("%-*s  %-11s  %s\n", name_width, t->name, t->evaluator, d);
    return;
  }
  size_t cut = DESC_MAX;
  while (cut > DESC_MAX / 2 && d[cut] != ' ')
    cut--;
  while (cut > 0 && (d[cut - 1] == ',' || d[cut - 1] == ' ' || d[cut - 1] == ':'))
    cut--;
  printf("%-*s  %-11s  %.*s ...\n", name_width, t->name, t->evaluator, (int)cut, d);
}

int sg_cmd_tasks(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},
      {"evaluator", required_argument, NULL, 'e'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  bool json = false;
  const char *only = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case 'j': json = true; break;
    case 'e': only = optarg; break;
    case 'h': usage(stdout); return SG_EXIT_OK;
    default:
      return sg_cli_flag_refused("tasks", c, argv);
    }
  }
  if (optind < argc)
    return sg_cli_usage_error("tasks", "unexpected argument '%s'", argv[optind]);
  /* An evaluator that does not exist is a mistake, not an empty list. */
  if (only && !sg_evaluator_find(only)) {
    char names[256] = "";
    const sg_evaluator *ev;
    for (size_t i = 0; (ev = sg_evaluator_at(i)) != NULL; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               ev->name);
    return sg_cli_usage_error("tasks", "--evaluator %s: no such evaluator (the evaluators: %s)",
                              only, names);
  }
  sg_task **tasks = NULL;
  size_t n = 0;
  sg_err err;
  sg_err_clear(&err);
  if (sg_task_list(&tasks, &n, &err) != 0) {
    fprintf(stderr, "specgen tasks: %s\n", err.msg);
    return SG_EXIT_USAGE;
  }
  if (json) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
      const sg_task *t = tasks[i];
      if (only && strcmp(t->evaluator, only) != 0)
        continue;
      json_array_append_new(
          arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "name", t->name,
                         "evaluator", t->evaluator, "language", t->language,
                         "description", t->description, "dir", t->dir, "entry",
                         t->entry, "signature", t->signature));
    }
    char *s = json_dumps(arr, JSON_INDENT(2));
    printf("%s\n", s);
    free(s);
    json_decref(arr);
  } else {
    size_t w = 4;
    for (size_t i = 0; i < n; i++)
      if (strlen(tasks[i]->name) > w)
        w = strlen(tasks[i]->name);
    printf("%-*s  %-11s  %s\n", (int)w, "NAME", "EVALUATOR", "DESCRIPTION");
    for (size_t i = 0; i < n; i++) {
      const sg_task *t = tasks[i];
      if (only && strcmp(t->evaluator, only) != 0)
        continue;
      print_summary_row((int)w, t);
    }
    if (n == 0)
      printf("(no tasks under %s)\n", sg_task_builtin_root());
  }
  sg_task_list_free(tasks, n);
  return SG_EXIT_OK;
}
