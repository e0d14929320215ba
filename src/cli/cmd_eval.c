/* cmd_eval.c: `specgen eval`: validates and times one candidate kernel on a
 * task and reports the result (docs/eval.md). */
#include "cli/commands.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <errno.h>
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
          "  --timeout S      wall-clock limit of the run in seconds (default 60)\n"
          "  --runs N         timed runs of each side (default 40)\n"
          "  --warmups N      warm-up runs of each side (default 10)\n"
          "  --work-dir DIR   where scratch directories go (default $TMPDIR)\n"
          "  -h, --help       this help\n");
}

static int bad_usage(const char *fmt, const char *a, const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  return sg_cli_usage_error("eval", "%s", msg);
}

static bool parse_ll(const char *s, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || !end || *end || end == s || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static void print_ms(const char *label, double median, double mean) {
  if (isfinite(median))
    printf("%-10s %.4g ms median, %.4g ms mean\n", label, median, mean);
}

int sg_cmd_eval(int argc, char **argv) {
  enum { O_TASK = 1000, O_DEVICE, O_JSON, O_SEED, O_TRIALS, O_TIMEOUT, O_RUNS,
         O_WARMUPS, O_WORKDIR };
  static const struct option longopts[] = {
      {"task", required_argument, NULL, O_TASK},
      {"device", required_argument, NULL, O_DEVICE},
      {"json", no_argument, NULL, O_JSON},
      {"seed", required_argument, NULL, O_SEED},
      {"trials", required_argument, NULL, O_TRIALS},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"runs", required_argument, NULL, O_RUNS},
      {"warmups", required_argument, NULL, O_WARMUPS},
      {"work-dir", required_argument, NULL, O_WORKDIR},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  sg_eval_opts opts;
  sg_eval_opts_default(&opts);
  const char *task_name = NULL;
  bool json = false;
  long long v;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case O_TASK: task_name = optarg; break;
    case O_DEVICE: opts.device = optarg; break;
    case O_JSON: json = true; break;
    case O_SEED: {
      char *end = NULL;
      errno = 0;
      unsigned long long s = strtoull(optarg, &end, 10);
      if (errno || *end || end == optarg || optarg[0] == '-' || s == 0 ||
          s > (unsigned long long)INT64_MAX)
        return bad_usage("--seed %s: expected a positive integer below 2^63%s",
                         optarg, "");
      opts.seed = s;
      break;
    }
    case O_TRIALS:
      if (!parse_ll(optarg, 3, 1000, &v))
        return bad_usage("--trials %s: expected an integer from 3 to 1000%s", optarg, "");
      opts.correctness_trials = (int)v;
      break;
    case O_RUNS:
      if (!parse_ll(optarg, 1, 100000, &v))
        return bad_usage("--runs %s: expected an integer from 1 to 100000%s", optarg, "");
      opts.timed_runs = (int)v;
      break;
    case O_WARMUPS:
      if (!parse_ll(optarg, 0, 100000, &v))
        return bad_usage("--warmups %s: expected an integer from 0 to 100000%s", optarg, "");
      opts.warmup_runs = (int)v;
      break;
    case O_TIMEOUT: {
      char *end = NULL;
      double s = strtod(optarg, &end);
      if (!end || *end || end == optarg || !(s > 0) || s > 86400)
        return bad_usage("--timeout %s: expected seconds, more than 0%s", optarg, "");
      opts.run_timeout_s = s;
      break;
    }
    case O_WORKDIR: opts.work_dir = optarg; break;
    case 'h': usage(stdout); return SG_EXIT_OK;
    default:
      return sg_cli_bad_option("eval", argv);
    }
  }
  if (!task_name)
    return bad_usage("--task is required%s%s", "", "");
  if (optind >= argc)
    return bad_usage("the candidate file is missing%s%s", "", "");
  if (optind + 1 < argc)
    return bad_usage("one candidate file only ('%s' is extra)%s", argv[optind + 1], "");
  const char *cand_path = argv[optind];

  sg_err err;
  sg_err_clear(&err);
  sg_task *task = NULL;
  int lrc = SG_ENOENT;
  /* a bare name with --device cuda:N means the cuda task of that name */
  if (opts.device && strncmp(opts.device, "cuda", 4) == 0 && !strchr(task_name, '/')) {
    char *q = sg_asprintf("cuda/%s", task_name);
    lrc = sg_task_load(q, &task, &err);
    free(q);
  }
  if (lrc == SG_ENOENT && sg_task_load(task_name, &task, &err) != 0) {
    fprintf(stderr, "specgen eval: --task %s: %s\n", task_name, err.msg);
    return SG_EXIT_USAGE;
  }
  if (lrc != SG_ENOENT && lrc != 0) {
    fprintf(stderr, "specgen eval: --task %s: %s\n", task_name, err.msg);
    return SG_EXIT_USAGE;
  }
  char *src = NULL;
  size_t len = 0;
  if (sg_file_read(cand_path, 4u << 20, &src, &len, &err) != 0) {
    fprintf(stderr, "specgen eval: cannot read the candidate: %s\n", err.msg);
    sg_task_free(task);
    return SG_EXIT_USAGE;
  }
  sg_eval_result r;
  sg_eval_result_init(&r);
  int rc = sg_eval_validate(task, src, len, &opts, &r, &err);
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
  if (json) {
    json_t *j = sg_eval_result_to_json(&r);
    json_object_set_new(j, "task", json_string(task->name));
    json_object_set_new(j, "candidate", json_string(cand_path));
    char *s = json_dumps(j, JSON_INDENT(2));
    printf("%s\n", s);
    free(s);
    json_decref(j);
  } else {
    printf("%-10s %s (%s evaluator)\n", "task", task->name, task->evaluator);
    printf("%-10s %s\n", "candidate", cand_path);
    printf("%-10s %s\n", "status", sg_eval_status_name(r.status));
    if (r.status == SG_EVAL_OK)
      printf("%-10s %.3gx\n", "speedup", r.speedup);
    print_ms("reference", r.ref_ms, r.ref_mean_ms);
    print_ms("kernel", r.cand_ms, r.cand_mean_ms);
    if (isfinite(r.max_abs_err))
      printf("%-10s max abs %.3g, max rel %.3g\n", "error", r.max_abs_err,
             r.max_rel_err);
    printf("%-10s compile %.2f s", "time", isfinite(r.compile_s) ? r.compile_s : 0.0);
    if (isfinite(r.run_s))
      printf(", run %.2f s", r.run_s);
    printf("\n");
    if (r.seed)
      printf("%-10s %llu\n", "seed", r.seed);
    if (isfinite(r.run_s))
      printf("%-10s %s\n", "network", r.network_isolated ? "isolated" : "NOT isolated");
    if (json_is_object(r.isolation)) {
      /* which parts of the sandbox the candidate got (docs/eval.md) */
      printf("%-10s", "isolation");
      static const char *const keys[] = {"user", "mount", "pid", "ipc", "unprivileged"};
      for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        printf(" %s%s", json_is_true(json_object_get(r.isolation, keys[i])) ? "" : "NO-",
               keys[i]);
      printf("\n");
    }
    if (r.message && r.message[0])
      printf("\n%s\n", r.message);
  }
  int code = r.status == SG_EVAL_INFRA_ERROR ? SG_EXIT_FAILED : SG_EXIT_OK;
  sg_eval_result_free(&r);
  sg_task_free(task);
  return code;
}
