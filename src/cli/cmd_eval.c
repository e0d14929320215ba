/* cmd_eval.c: `specgen eval`: validates and times one candidate kernel on a
 * task and reports the result (docs/eval.md). */
#include "cli/cli_flags.h"
#include "cli/commands.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen eval --task NAME|DIR CANDIDATE [options]\n"
          "\n"
          "Compiles CANDIDATE, checks it against the task's reference on fresh\n"
          "random inputs and times both (docs/eval.md). Exit status: 0 when the\n"
          "evaluation completed, whatever the candidate's status; 2 for bad\n"
          "usage, an unknown task, an invalid task or an unreadable candidate;\n"
          "1 when specgen itself failed (status infra_error).\n"
          "\n"
          "  --task NAME|DIR  a built-in task's name (specgen tasks; EVALUATOR/NAME picks\n"
          "                   one evaluator's, a bare name the cpu one unless --device\n"
          "                   is cuda:N) or a task directory\n"
          "  --device DEV     cpu:N pins the runs to core N (default cpu:0);\n"
          "                   cuda:N for cuda tasks\n"
          "  --json           print one JSON object\n"
          "  --seed N         seed of the random inputs (default: from the clock)\n"
          "  --trials N       correctness input sets, at least 3 (default 3)\n"
          "  --eval-timeout S seconds one device stage may take, as for specgen run\n"
          "                   (default 60)\n"
          "  --runs N         timed runs of each side (default 40)\n"
          "  --warmups N      warm-up runs of each side (default 10)\n"
          "  --work-dir DIR   where scratch directories go (default $TMPDIR)\n"
          "  -h, --help       this help\n");
}

enum { O_TASK = 1000, O_DEVICE, O_JSON, O_SEED, O_TRIALS, O_TIMEOUT, O_RUNS, O_WARMUPS,
       O_WORKDIR };

static void print_ms(const char *label, double median, double mean) {
  if (isfinite(median))
    printf("%-10s %.4g ms median, %.4g ms mean\n", label, median, mean);
}

typedef struct eval_args {
  const char *task_name, *cand_path;
  bool json;
  sg_eval_opts opts;
} eval_args;

/* One flag with a value (ch its getopt_long code) into a; -1 to go on, else
 * the exit code. */
static int take_value(int ch, const char *arg, eval_args *a) {
  long long v;
  unsigned long long u;
  switch (ch) {
  case O_SEED:
    if (!sg_cli_parse_ull(arg, (unsigned long long)INT64_MAX, &u) || u == 0)
      return sg_cli_usage_error("eval", "--seed %s: expected a positive integer below 2^63",
                                arg);
    a->opts.seed = u;
    break;
  case O_TRIALS:
    if (!sg_cli_parse_ll(arg, 3, 1000, &v))
      return sg_cli_usage_error("eval", "--trials %s: expected an integer from 3 to 1000", arg);
    a->opts.correctness_trials = (int)v;
    break;
  case O_RUNS:
    if (!sg_cli_parse_ll(arg, 1, 100000, &v))
      return sg_cli_usage_error("eval", "--runs %s: expected an integer from 1 to 100000", arg);
    a->opts.timed_runs = (int)v;
    break;
  case O_WARMUPS:
    if (!sg_cli_parse_ll(arg, 0, 100000, &v))
      return sg_cli_usage_error("eval", "--warmups %s: expected an integer from 0 to 100000",
                                arg);
    a->opts.warmup_runs = (int)v;
    break;
  case O_TIMEOUT: {
    sg_knobs k;
    if (sg_cli_flag_knob("eval", "eval-timeout", arg, &k) != 0)
      return SG_EXIT_USAGE;
    a->opts.eval_timeout = k.eval_timeout;
    break;
  }
  case O_TASK: a->task_name = arg; break;
  case O_DEVICE: a->opts.device = arg; break;
  case O_WORKDIR: a->opts.work_dir = arg; break;
  }
  return -1;
}

/* Parses the flags and the candidate's path into a; returns -1 to go on,
 * else the exit code. */
static int parse_args(int argc, char **argv, eval_args *a) {
  static const struct option longopts[] = {
      {"task", required_argument, NULL, O_TASK},
      {"device", required_argument, NULL, O_DEVICE},
      {"json", no_argument, NULL, O_JSON},
      {"seed", required_argument, NULL, O_SEED},
      {"trials", required_argument, NULL, O_TRIALS},
      {"eval-timeout", required_argument, NULL, O_TIMEOUT},
      {"runs", required_argument, NULL, O_RUNS},
      {"warmups", required_argument, NULL, O_WARMUPS},
      {"work-dir", required_argument, NULL, O_WORKDIR},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  sg_eval_opts_default(&a->opts);
  int c, code;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (c == O_JSON) {
      a->json = true;
    } else if (c == 'h') {
      usage(stdout);
      return SG_EXIT_OK;
    } else if (c == '?') {
      return sg_cli_flag_refused("eval", c, argv);
    } else if ((code = take_value(c, optarg, a)) >= 0) {
      return code;
    }
  }
  if (!a->task_name)
    return sg_cli_usage_error("eval", "--task is required");
  if (optind >= argc)
    return sg_cli_usage_error("eval", "the candidate file is missing");
  if (optind + 1 < argc)
    return sg_cli_usage_error("eval", "one candidate file only ('%s' is extra)",
                              argv[optind + 1]);
  a->cand_path = argv[optind];
  return -1;
}

/* The task --task names: 0, or the exit code with the message printed. */
static int load_task(const eval_args *a, sg_task **task) {
  sg_err err;
  sg_err_clear(&err);
  int lrc = SG_ENOENT;
  /* a bare name with --device cuda:N means the cuda task of that name */
  if (a->opts.device && strncmp(a->opts.device, "cuda", 4) == 0 &&
      !strchr(a->task_name, '/')) {
    char *q = sg_asprintf("cuda/%s", a->task_name);
    lrc = sg_task_load(q, task, &err);
    free(q);
  }
  if ((lrc == SG_ENOENT && sg_task_load(a->task_name, task, &err) != 0) ||
      (lrc != SG_ENOENT && lrc != 0)) {
    fprintf(stderr, "specgen eval: --task %s: %s\n", a->task_name, err.msg);
    return SG_EXIT_USAGE;
  }
  return 0;
}

static void report_text(const sg_task *task, const char *cand_path, const sg_eval_result *r) {
  printf("%-10s %s (%s evaluator)\n", "task", task->name, task->evaluator);
  printf("%-10s %s\n", "candidate", cand_path);
  printf("%-10s %s\n", "status", sg_eval_status_name(r->status));
  if (r->status == SG_EVAL_OK)
    printf("%-10s %.3gx\n", "speedup", r->speedup);
  print_ms("reference", r->ref_ms, r->ref_mean_ms);
  print_ms("kernel", r->cand_ms, r->cand_mean_ms);
  if (isfinite(r->max_abs_err))
    printf("%-10s max abs %.3g, max rel %.3g\n", "error", r->max_abs_err, r->max_rel_err);
  printf("%-10s compile %.2f s", "time", isfinite(r->compile_s) ? r->compile_s : 0.0);
  if (isfinite(r->run_s))
    printf(", run %.2f s", r->run_s);
  printf("\n");
  if (r->seed)
    printf("%-10s %llu\n", "seed", r->seed);
  if (isfinite(r->run_s))
    printf("%-10s %s\n", "network", r->network_isolated ? "isolated" : "NOT isolated");
  if (json_is_object(r->isolation)) {
    /* which parts of the sandbox the candidate got (docs/eval.md) */
    printf("%-10s", "isolation");
    static const char *const keys[] = {"user", "mount", "pid", "ipc", "unprivileged"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
      printf(" %s%s", json_is_true(json_object_get(r->isolation, keys[i])) ? "" : "NO-",
             keys[i]);
    printf("\n");
  }
  if (r->message && r->message[0])
    printf("\n%s\n", r->message);
}

static void report_json(const sg_task *task, const char *cand_path, const sg_eval_result *r) {
  json_t *j = sg_eval_result_to_json(r);
  json_object_set_new(j, "task", json_string(task->name));
  json_object_set_new(j, "candidate", json_string(cand_path));
  char *s = json_dumps(j, JSON_INDENT(2));
  printf("%s\n", s);
  free(s);
  json_decref(j);
}

int sg_cmd_eval(int argc, char **argv) {
  eval_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0)
    return code;
  sg_task *task = NULL;
  if ((code = load_task(&a, &task)) != 0)
    return code;
  sg_err err;
  sg_err_clear(&err);
  char *src = NULL;
  size_t len = 0;
  if (sg_file_read(a.cand_path, 4u << 20, &src, &len, &err) != 0) {
    fprintf(stderr, "specgen eval: cannot read the candidate: %s\n", err.msg);
    sg_task_free(task);
    return SG_EXIT_USAGE;
  }
  sg_eval_result r;
  sg_eval_result_init(&r);
  int rc = sg_eval_validate(task, src, len, &a.opts, &r, &err);
  free(src);
  if (rc != 0) {
    fprintf(stderr, "specgen eval: %s\n", err.msg);
    sg_eval_result_free(&r);
    sg_task_free(task);
    /* the task or an option was wrong: usage; anything else: specgen failed */
    return rc == SG_EINVAL || rc == SG_ENOENT || rc == SG_EPARSE ||
                   rc == SG_ERANGE || rc == SG_EUNSUPPORTED
               ? SG_EXIT_USAGE
               : SG_EXIT_FAILED;
  }
  if (a.json)
    report_json(task, a.cand_path, &r);
  else
    report_text(task, a.cand_path, &r);
  code = r.status == SG_EVAL_INFRA_ERROR ? SG_EXIT_FAILED : SG_EXIT_OK;
  sg_eval_result_free(&r);
  sg_task_free(task);
  return code;
}
