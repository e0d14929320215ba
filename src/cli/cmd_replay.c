/* cmd_replay.c: `specgen replay DIR`: a recorded run replayed in virtual
 * time under its recorded options or others (src/sim/sg_sim_replay.h). */
#include "cli/commands.h"

#include "eval/sg_task.h"
#include "run/sg_run_config.h"
#include "sim/sg_sim_replay.h"
#include "store/sg_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen replay DIR [--pace recorded|solo] [--clock recorded|relative]\n"
          "                      [--json] [RUN OPTIONS ...]\n"
          "\n"
          "Replays the run recorded in DIR (its llm.jsonl.gz and run.db) in virtual\n"
          "time: the decision core as `specgen run` drives it, the model's streams and\n"
          "the evaluations' results and durations taken from the record. No model, no\n"
          "evaluator, no waiting: seconds, and the same output every time. The options\n"
          "are the recorded run's, with any `specgen run` option given here on top\n"
          "(--spec off, --termination first-valid, --max-forks 2, ...).\n"
          "\n"
          "  --pace recorded     every chunk at its recorded time (default)\n"
          "  --pace solo         a main generation's chunks at the pace the record\n"
          "                      measured while no fork was live (an estimate of its\n"
          "                      speed without forks, for --spec off)\n"
          "  --clock recorded    no generation starts and no evaluation ends sooner\n"
          "                      than in the record (from the run's start): the\n"
          "                      record's order of events, its decisions (the\n"
          "                      default without RUN OPTIONS)\n"
          "  --clock relative    each recorded span from when the replay starts it\n"
          "                      (the default with RUN OPTIONS)\n"
          "  --json              the summary as JSON (summary.json's keys, a \"replay\"\n"
          "                      object, and the decisions per task)\n"
          "  -h, --help          this help\n"
          "\n"
          "Run it where the recorded run was started (tasks are read as it named them).\n"
          "docs/usage.md, \"Replaying in virtual time\", has the rules for what the\n"
          "record does not hold.\n");
}

static double num(const json_t *j, const char *k) {
  return json_number_value(json_object_get(j, k));
}

static void print_text(json_t *s) {
  const json_t *rp = json_object_get(s, "replay");
  json_t *tok = json_object_get(s, "tokens");
  double prompt = num(tok, "prompt"), cached = num(tok, "cached");
  json_object_set_new(tok, "uncached", json_real(prompt - cached));
  json_object_set_new(tok, "consumption", json_real(prompt - cached + num(tok, "completion")));
  printf("REPLAY of %s in virtual time (pace %s): every figure comes from the record;\n"
         "end to end, utilization and generation times come from the replay's model of\n"
         "time (recorded durations, %s), not from a clock\n",
         json_string_value(json_object_get(rp, "from")),
         json_string_value(json_object_get(rp, "pace")),
         strcmp(json_string_value(json_object_get(rp, "pace")), "solo") == 0
             ? "mains without the forks' slowdown"
             : "as recorded");
  printf("  evaluations: %.0f from the record, %.0f not in the record (%.0f extracted "
         "otherwise since)\n",
         num(rp, "evaluations_from_record"), num(rp, "evaluations_not_in_record"),
         num(rp, "evaluations_changed_kernel"));
  if (json_object_get(rp, "record_interrupted_at_s"))
    printf("  the recorded run was interrupted at %.2f s: the replay stops there too\n",
           num(rp, "record_interrupted_at_s"));
  const json_t *z;
  size_t zi;
  json_array_foreach(json_object_get(rp, "record_resumes"), zi, z)
    printf("  the recorded run was stopped at %.2f s and resumed at %.2f s: the replay too\n",
           num(z, "stopped_at_s"), num(z, "resumed_at_s"));
  printf("  forks: %.0f at a recorded prefix, %.0f took the nearest recorded fork, %.0f "
         "unrecorded (failed); %.0f token forks\n",
         num(rp, "forks_at_recorded_prefix"), num(rp, "forks_nearest_recorded"),
         num(rp, "forks_unrecorded"), num(rp, "token_forks"));
  printf("  mains: %.0f matched by similarity, %.0f unrecorded (failed)\n",
         num(rp, "mains_by_similarity"), num(rp, "mains_unrecorded"));
  double caps = num(rp, "fork_caps_recorded"), applied = num(rp, "fork_caps_applied");
  if (caps > 0 && applied > 0)
    printf("  fork budget: %.0f of the %.0f recorded caps applied at their recorded times\n",
           applied, caps);
  else if (caps > 0)
    printf("  fork budget: the %.0f recorded caps not applied (the options change the "
           "budget: --spec, --fork-slowdown-max or --llm-streams)\n",
           caps);
  json_t *copy = json_deep_copy(s);
  json_object_del(copy, "replay");
  json_object_set_new(copy, "dir", json_string("(virtual-time replay)"));
  sg_cli_print_summary(stdout, copy);
  json_decref(copy);
}

/* The recorded run's options (its store's), then the flags in rest. */
static int options_of(const char *dir, int nrest, char **rest, sg_run_config *cfg,
                      sg_err *err) {
  sg_store *st = NULL;
  json_t *res = NULL;
  int rc = sg_store_open(dir, &st, err);
  if (rc == 0)
    rc = sg_store_resume_json(st, &res, err);
  sg_store_close(st);
  if (rc < 0)
    return rc;
  const json_t *c = json_object_get(json_object_get(res, "run"), "config");
  if (!json_is_object(c))
    rc = sg_err_set(err, SG_EPARSE, "%s: the store holds no recorded run", dir);
  else if ((rc = sg_run_config_from_json(cfg, c, err)) < 0)
    sg_err_prefix(err, "%s: the recorded options", dir);
  json_decref(res);
  if (rc == 0 && nrest > 1 && sg_run_config_parse_args(cfg, nrest, rest, 1, err) < 0)
    return SG_EINVAL;
  return rc;
}

/* Replays under cfg: its tasks loaded for their names and extraction. */
static int replay_with(const char *dir, sg_sim_replay_pace pace, sg_sim_replay_clock clock,
                       const sg_run_config *cfg, json_t **out, sg_err *err) {
  size_t n = cfg->n_task;
  sg_task **tasks = calloc(n + 1, sizeof *tasks);
  const char **name = calloc(n + 1, sizeof *name), **lang = calloc(n + 1, sizeof *lang),
             **entry = calloc(n + 1, sizeof *entry);
  char **devs = NULL;
  size_t ndev = 0;
  int rc = sg_run_devices_parse(cfg->devices, &devs, &ndev, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if ((rc = sg_task_load(cfg->task[i], &tasks[i], err)) < 0) {
      sg_err_prefix(err, "task %s (replay where the recorded run was started)", cfg->task[i]);
      break;
    }
    name[i] = tasks[i]->name;
    lang[i] = tasks[i]->language;
    entry[i] = tasks[i]->entry;
  }
  if (rc == 0) {
    sg_sim_replay_opts o = {
        .dir = dir, .pace = pace, .clock = clock, .knobs = &cfg->knobs, .ntask = n, .task = name,
        .language = lang, .entry = entry, .devices = (int)ndev + cfg->remote,
        .compile_slots = cfg->compile_workers, .seed = cfg->seed, .search = cfg->search,
        .termination = cfg->termination,
        .prompted = cfg->reasoning && strcmp(cfg->reasoning, "prompted") == 0};
    rc = sg_sim_replay_run(&o, out, err);
  }
  for (size_t i = 0; i < ndev; i++)
    free(devs[i]);
  free(devs);
  for (size_t i = 0; i < n; i++)
    sg_task_free(tasks[i]);
  free(tasks);
  free(name);
  free(lang);
  free(entry);
  return rc;
}

int sg_cmd_replay(int argc, char **argv) {
  const char *dir = NULL;
  sg_sim_replay_pace pace = SG_SIM_REPLAY_PACE_RECORDED;
  int clock = -1; /* the default: recorded without run options */
  bool json = false;
  /* Our flags out of argv; the rest are run options. */
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int nrest = 1;
  rest[0] = argv[0];
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      free(rest);
      return SG_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--pace") == 0 || strncmp(argv[i], "--pace=", 7) == 0) {
      const char *v = argv[i][6] == '=' ? argv[i] + 7 : (i + 1 < argc ? argv[++i] : "");
      if (strcmp(v, "recorded") != 0 && strcmp(v, "solo") != 0) {
        free(rest);
        return sg_cli_usage_error("replay", "--pace: \"%s\" is not recorded or solo", v);
      }
      pace = strcmp(v, "solo") == 0 ? SG_SIM_REPLAY_PACE_SOLO : SG_SIM_REPLAY_PACE_RECORDED;
    } else if (strcmp(argv[i], "--clock") == 0 || strncmp(argv[i], "--clock=", 8) == 0) {
      const char *v = argv[i][7] == '=' ? argv[i] + 8 : (i + 1 < argc ? argv[++i] : "");
      if (strcmp(v, "recorded") != 0 && strcmp(v, "relative") != 0) {
        free(rest);
        return sg_cli_usage_error("replay", "--clock: \"%s\" is not recorded or relative", v);
      }
      clock = strcmp(v, "recorded") == 0 ? SG_SIM_REPLAY_CLOCK_RECORDED
                                         : SG_SIM_REPLAY_CLOCK_RELATIVE;
    } else if (dir == NULL && argv[i][0] != '-') {
      dir = argv[i];
    } else {
      rest[nrest++] = argv[i];
    }
  }
  if (dir == NULL) {
    free(rest);
    return sg_cli_usage_error("replay", "which recorded run? (specgen replay DIR)");
  }
  sg_run_config cfg;
  sg_run_config_init(&cfg);
  json_t *out = NULL;
  sg_err err;
  sg_err_clear(&err);
  if (clock < 0)
    clock = nrest > 1 ? SG_SIM_REPLAY_CLOCK_RELATIVE : SG_SIM_REPLAY_CLOCK_RECORDED;
  int rc = options_of(dir, nrest, rest, &cfg, &err);
  free(rest);
  if (rc == SG_EINVAL) {
    sg_run_config_free(&cfg);
    return sg_cli_usage_error("replay", "%s", err.msg);
  }
  if (rc == 0)
    rc = replay_with(dir, pace, (sg_sim_replay_clock)clock, &cfg, &out, &err);
  sg_run_config_free(&cfg);
  if (rc < 0) {
    fprintf(stderr, "specgen replay: %s\n", err.msg);
    /* no record there, or a damaged one: bad input */
    return rc == SG_ENOENT || rc == SG_EPARSE ? SG_EXIT_USAGE : SG_EXIT_FAILED;
  }
  if (json) {
    json_dumpf(out, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    printf("\n");
  } else {
    print_text(out);
  }
  json_decref(out);
  return SG_EXIT_OK;
}
