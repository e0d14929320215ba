/* cmd_run.c: `specgen run` (optimize tasks with an LLM) and `specgen show`
 * (the summary of a run directory, finished or not). The loop itself is
 * src/run/sg_run.c; this file parses flags and prints. */
#include "cli/cmd_run_server.h"
#include "cli/commands.h"
#include "remote/sg_remote.h"

#include "common/sg_alloc.h"
#include "report/sg_dashboard.h"
#include "pool/sg_jsonl.h"
#include "run/sg_run.h"
#include "run/sg_run_config.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- printing ---------------------------------------------------------------- */

static double num(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* A best figure as the summary and the progress lines print it: marked (v)
 * when no profile measured it (sg_store.h, SG_STORE_FIGURES_SQL). */
static void speedup_text(char *buf, size_t n, const json_t *o) {
  double v = num(o, "best_speedup");
  if (isfinite(v))
    snprintf(buf, n, "%.2fx%s", v,
             strcmp(str(o, "best_speedup_kind"), "validate") == 0 ? " (v)" : "");
  else
    snprintf(buf, n, "-");
}

/* What the model server failed: generations that failed, by cause, and the
 * mains sent again in their iteration. */
static void print_failures(FILE *f, const json_t *s) {
  const json_t *g = json_object_get(s, "generations");
  if (num(g, "failed") > 0) {
    fprintf(f, "  generations: %.0f completed, %.0f failed:\n", num(g, "completed"),
            num(g, "failed"));
    const json_t *c;
    size_t k;
    json_array_foreach(json_object_get(g, "causes"), k, c)
      fprintf(f, "    %5.0f x %s\n", num(c, "count"), str(c, "cause"));
  }
  const json_t *mr = json_object_get(s, "main_restarts");
  if (num(mr, "count") > 0) {
    fprintf(f, "  mains restarted: %.0f (the model server failed them; each sent again "
               "in its iteration):", num(mr, "count"));
    const json_t *c;
    size_t k;
    json_array_foreach(json_object_get(mr, "causes"), k, c)
      fprintf(f, "%s %.0f x %s", k ? ";" : "", num(c, "count"), str(c, "cause"));
    fprintf(f, "\n");
  }
}

void sg_cli_print_summary(FILE *f, const json_t *s) {
  const json_t *u = json_object_get(s, "utilization");
  const json_t *t = json_object_get(s, "tokens");
  fprintf(f, "\nrun %s%s\n", str(s, "dir"),
          json_is_true(json_object_get(s, "interrupted")) ? " (interrupted)" : "");
  const json_t *rp = json_object_get(s, "replay");
  if (rp) {
    fprintf(f, "  REPLAY of %s at %gx the recorded pace: every figure below comes from "
               "recorded\n  model streams; evaluations %s",
            str(rp, "from"), num(rp, "speed"), str(rp, "evaluations"));
    if (json_object_get(rp, "evaluations_from_record"))
      fprintf(f, " (%.0f from the record)", num(rp, "evaluations_from_record"));
    fprintf(f, "\n");
    if (num(rp, "record_resumes") > 0)
      fprintf(f, "  the record was stopped and resumed %.0f time(s); this replay ran straight "
                 "through:\n  its decisions differ from the record's there (`specgen replay` "
                 "replays the stops)\n",
              num(rp, "record_resumes"));
  }
  fprintf(f, "  end to end %.1f s; device utilization %.0f%% (validation %.0f%%, "
             "profiling %.0f%%)\n",
          num(s, "e2e_s"), 100 * num(u, "overall"), 100 * num(u, "validation"),
          100 * num(u, "profiling"));
  if (strcmp(str(s, "reasoning"), "prompted") == 0)
    fprintf(f, "  reasoning: prompted (the model was asked to think inside <think> tags "
               "before answering;\n  it is not a reasoning model)\n");
  /* A count the server did not report is an estimate, and says so. */
  char pe[64] = "", ce[64] = "";
  if (num(t, "prompt_estimated") > 0)
    snprintf(pe, sizeof pe, ", %.0f of them estimated", num(t, "prompt_estimated"));
  if (num(t, "completion_estimated") > 0)
    snprintf(ce, sizeof ce, " (%.0f estimated)", num(t, "completion_estimated"));
  fprintf(f, "  tokens: %.0f consumed (uncached prompt + completion); %.0f prompt "
             "(%.0f cached, %.0f uncached%s), %.0f completion%s\n",
          num(t, "consumption"), num(t, "prompt"), num(t, "cached"), num(t, "uncached"),
          pe, num(t, "completion"), ce);
  print_failures(f, s);
  fprintf(f, "\n  %-28s %5s %10s %9s %6s %5s %6s %7s %6s  %s\n", "task", "iters", "best",
          "profiled", "early", "main", "forks", "answers", "dedup", "best kernel");
  const json_t *w;
  size_t i;
  json_array_foreach(json_object_get(s, "workflows"), i, w) {
    char best[32];
    speedup_text(best, sizeof best, w);
    const char *file = json_string_value(json_object_get(w, "best_file"));
    fprintf(f, "  %-28s %5.0f %10s %9.0f %6.0f %5.0f %6.0f %7.0f %6.0f  %s\n", str(w, "task"),
            num(w, "iterations"), best, num(w, "profiling_feedback"),
            num(w, "early_terminations"), num(w, "generations_main"),
            num(w, "generations_spec"), num(w, "answers_at_cap"), num(w, "deduplicated"),
            file ? file : "-");
  }
  const json_t *fb = json_object_get(s, "fork_budget");
  if (fb)
    fprintf(f, "\n  %s\n", str(fb, "line"));
  const json_t *kv = json_object_get(s, "kv_store");
  if (kv)
    fprintf(f, "\n  kv store %s: %.0f hits, %.0f misses (%.0f%%), %.1f MB in, %.1f MB "
               "out, %.0f evictions, %.0f yields (longest %.2f ms)\n",
            str(kv, "url"), num(kv, "hits"), num(kv, "misses"), 100 * num(kv, "hit_rate"),
            num(kv, "put_bytes") / 1e6, num(kv, "get_bytes") / 1e6, num(kv, "evictions"),
            num(kv, "yields"), num(kv, "yield_max_ms"));
  fprintf(f, "\n  best: largest speedup over the reference of a correct kernel, as "
             "profiled, or as validated (v) when\n  no profile measured it; "
             "profiled: kernels with profiling feedback;\n"
             "  early: iterations ended by a speculative kernel while the reasoning "
             "still ran; forks: speculative generations;\n"
             "  answers: answers at the length cap, asked for from the reasoning of a main "
             "generation cut by max tokens\n  with no kernel (--answer-at-cap; not forks, they "
             "run with --spec off too);\n"
             "  dedup: evaluations not run because the same kernel's was in flight or "
             "done\n");
}

typedef struct printer {
  bool json, quiet;
  const char *dashboard;  /* its address, NULL: none */
  sg_dashboard *dash;     /* started at run_start, when the store exists */
} printer;

static void print_progress(const json_t *ev) {
  const json_t *u = json_object_get(ev, "utilization");
  fprintf(stderr, "%7.1fs ", num(ev, "t"));
  const json_t *w;
  size_t i;
  json_array_foreach(json_object_get(ev, "workflows"), i, w) {
    char best[32];
    speedup_text(best, sizeof best, w);
    if (json_is_true(json_object_get(w, "done")))
      fprintf(stderr, "| %s done %s ", str(w, "task"), best);
    else
      fprintf(stderr, "| %s it%.0f %s gen %.0f+%.0f eval %.0f ", str(w, "task"),
              num(w, "iteration"), best, num(w, "main_live"), num(w, "spec_live"),
              num(w, "evaluations_in_flight"));
  }
  fprintf(stderr, "| devices %.0f%% busy\n", 100 * num(u, "overall"));
}

/* The dashboard starts once the run directory holds the store. A port that
 * is taken does not stop the run: the warning says so, and `specgen show DIR
 * --serve` can serve it later. */
static void start_dashboard(printer *p, const json_t *ev) {
  sg_err err;
  sg_err_clear(&err);
  if (sg_dashboard_start(str(ev, "dir"), p->dashboard, &p->dash, &err) < 0)
    fprintf(stderr, "warning: %s; the run goes on without a dashboard\n", err.msg);
  else
    fprintf(stderr, "dashboard: %s\n", sg_dashboard_url(p->dash));
}

static void on_event(void *data, const json_t *ev) {
  printer *p = data;
  const char *name = str(ev, "event");
  if (strcmp(name, "run_start") == 0 && p->dashboard && !p->dash)
    start_dashboard(p, ev);
  if (strcmp(name, "run_start") == 0 && !p->quiet &&
      json_is_true(json_object_get(ev, "built_in_model")))
    fprintf(stderr, "note: no --llm given, so the built-in test server plays the model. "
                    "Its kernels come from\nthe tasks' own examples: this run shows the "
                    "pipeline working, not a model's skill.\n");
  if (strcmp(name, "run_start") == 0 && !p->quiet && json_is_string(json_object_get(ev, "replay")))
    fprintf(stderr, "note: a REPLAY: the model's answers are the streams recorded in %s,\n"
                    "replayed under this run's options; no model runs.\n",
            str(ev, "replay"));
  if (p->json) {
    sg_jsonl_print(stdout, ev, JSON_REAL_PRECISION(6));
    return;
  }
  if (p->quiet)
    return;
  char best[32];
  if (strcmp(name, "run_start") == 0) {
    fprintf(stderr, "specgen run: %.0f task(s) on %s, search %s, speculation %s; "
                    "model %s at %s%s\nrun directory: %s\n",
            num(ev, "tasks"), str(ev, "devices"), str(ev, "search"),
            json_is_true(json_object_get(ev, "spec")) ? "on" : "off", str(ev, "model"),
            str(ev, "llm"),
            strcmp(str(ev, "reasoning"), "prompted") == 0 ? ", reasoning prompted" : "",
            str(ev, "dir"));
  } else if (strcmp(name, "iteration_end") == 0) {
    speedup_text(best, sizeof best, ev);
    fprintf(stderr, "[%s] iteration %.0f ended (%s); best so far %s\n", str(ev, "task"),
            num(ev, "iteration"), str(ev, "reason"), best);
  } else if (strcmp(name, "main_restart") == 0) {
    fprintf(stderr, "[%s] iteration %.0f: the model server failed the main generation "
                    "(%s); sent again (restart %.0f%s)\n", str(ev, "task"),
            num(ev, "iteration"), str(ev, "cause"), num(ev, "restart"),
            json_is_true(json_object_get(ev, "after_wait")) ? ", after a wait" : "");
  } else if (strcmp(name, "workflow_done") == 0) {
    speedup_text(best, sizeof best, ev);
    fprintf(stderr, "[%s] done (%s); best %s\n", str(ev, "task"), str(ev, "reason"), best);
  } else if (strcmp(name, "worker") == 0) {
    fprintf(stderr, "worker %s %s%s%s\n", str(ev, "device"), str(ev, "what"),
            json_object_get(ev, "message") ? ": " : "", str(ev, "message"));
  } else if (strcmp(name, "warning") == 0) {
    const char *who = json_object_get(ev, "task") ? str(ev, "task") : str(ev, "device");
    fprintf(stderr, "warning: %s%s%s\n", who, *who ? ": " : "", str(ev, "message"));
  } else if (strcmp(name, "progress") == 0) {
    print_progress(ev);
  } else if (strcmp(name, "kv_store") == 0) {
    fprintf(stderr, "kv store: %s on %s; give vLLM this LMCache configuration "
                    "(LMCACHE_CONFIG_FILE):\n%s", str(ev, "url"), str(ev, "devices"),
            str(ev, "lmcache_config"));
  }
}

/* ---- specgen run ------------------------------------------------------------- */

static void run_usage(FILE *f) {
  fprintf(f, "usage: specgen run --task T [--task T2 ...] [options]\n"
             "       specgen run --resume DIR [options]\n"
             "\n"
             "Optimizes tasks with an LLM: generates candidate kernels, validates and\n"
             "profiles them on a shared pool of devices, feeds the results back, and\n"
             "forks cheap speculative generations while the model reasons. Without\n"
             "--llm a built-in test server plays the model. Every option is also a key\n"
             "of the YAML file given with --config (docs/configuration.md).\n"
             "Exit status: 0 the run completed; 1 it failed or was interrupted;\n"
             "2 bad usage or input.\n\n");
  sg_run_config_usage(f);
  fprintf(f, "  --redis URL                    the Redis of --remote's worker hosts,\n"
             "                                 redis://[USER:PASSWORD@]HOST[:PORT][/DB];\n"
             "                                 never stored (or $SPECGEN_REDIS_URL)\n");
  fprintf(f, "  -h, --help                     this help\n");
}

/* A bare --dashboard (last, or followed by another flag) means the default
 * address: argv is copied with that value put in. The caller frees *copy. */
static char **dashboard_default(int argc, char **argv, int *n) {
  char **v = sg_calloc((size_t)argc * 2 + 1, sizeof *v);
  int k = 0;
  for (int i = 0; i < argc; i++) {
    v[k++] = argv[i];
    if (strcmp(argv[i], "--dashboard") == 0 && (i + 1 == argc || argv[i + 1][0] == '-'))
      v[k++] = (char *)SG_DASHBOARD_DEFAULT_ADDR;
  }
  *n = k;
  return v;
}

/* --redis URL is taken out of the arguments before the configuration sees
 * them, so the URL (its password) is never stored in the run directory; it
 * reaches the slot proxies through the environment (docs/remote.md).
 * Returns -1 for a --redis without a value. */
static int take_redis(int *argc, char **argv) {
  int k = 0;
  for (int i = 0; i < *argc; i++) {
    if (strcmp(argv[i], "--redis") == 0) {
      if (i + 1 == *argc)
        return -1;
      char *url = sg_remote_url_hide(argv[++i]);
      setenv(SG_REMOTE_ENV_URL, url, 1);
      free(url);
    } else if (strncmp(argv[i], "--redis=", 8) == 0) {
      char *url = sg_remote_url_hide(argv[i] + 8);
      setenv(SG_REMOTE_ENV_URL, url, 1);
      free(url);
    } else {
      argv[k++] = argv[i];
    }
  }
  *argc = k;
  argv[k] = NULL;
  return 0;
}

/* The dashboard's address, checked before the run starts (bad usage). */
static int check_dashboard(const char *addr) {
  char host[64];
  int port;
  sg_err err;
  sg_err_clear(&err);
  if (addr && sg_dashboard_parse_addr(addr, host, sizeof host, &port, &err) < 0) {
    sg_cli_usage_error("run", "--dashboard: %s", err.msg);
    return -1;
  }
  return 0;
}

/* The configuration from the flags; with --resume, the stored one with the
 * flags given now on top. Checked. */
static int load_config(int argc, char **argv, sg_run_config *cfg, sg_err *err) {
  sg_run_config_init(cfg);
  int rc = sg_run_config_parse_args(cfg, argc, argv, 1, err);
  if (rc == 0 && cfg->resume) {
    /* How this command prints is its own: --quiet given now replaces a
     * stored --json, and --json a stored --quiet (they were refused
     * together). */
    char *dir = sg_strdup(cfg->resume);
    bool json = cfg->json, quiet = cfg->quiet;
    sg_run_config_free(cfg);
    sg_run_config_init(cfg);
    rc = sg_run_load_config(dir, cfg, err);
    if (rc == 0 && (json || quiet))
      cfg->json = cfg->quiet = false;
    if (rc == 0)
      rc = sg_run_config_parse_args(cfg, argc, argv, 1, err);
    free(cfg->resume);
    cfg->resume = dir;
  }
  if (rc == 0)
    rc = sg_run_config_check(cfg, err);
  return rc;
}

/* The exit status of a run that returned rc, with what it says on stderr
 * and the summary on stdout. */
static int run_exit(int rc, const sg_run_outcome *out, const sg_run_config *cfg,
                    const sg_err *err) {
  if (rc < 0) {
    fprintf(stderr, "specgen run: %s\n", err->msg);
    bool input = rc == SG_EINVAL || rc == SG_ENOENT || rc == SG_EPARSE ||
                 rc == SG_ESTATE || rc == SG_EUNSUPPORTED;
    int exit_code = !out->started && input ? SG_EXIT_USAGE : SG_EXIT_FAILED;
    if (out->dir && exit_code == SG_EXIT_FAILED)
      fprintf(stderr, "the run directory %s keeps what was done; `specgen run --resume "
                      "%s` continues it\n", out->dir, out->dir);
    return exit_code;
  }
  if (out->summary && !cfg->json)
    sg_cli_print_summary(stdout, out->summary);
  if (out->interrupted) {
    fprintf(stderr, "interrupted: `specgen run --resume %s` continues this run\n",
            out->dir);
    return SG_EXIT_FAILED;
  }
  if (out->no_generation) {
    fprintf(stderr, "specgen run: %s\n", out->no_generation);
    return SG_EXIT_FAILED;
  }
  return out->failed_workflows > 0 ? SG_EXIT_FAILED : SG_EXIT_OK;
}

int sg_cmd_run(int argc0, char **argv0) {
  for (int i = 1; i < argc0; i++)
    if (strcmp(argv0[i], "--help") == 0 || strcmp(argv0[i], "-h") == 0) {
      run_usage(stdout);
      return SG_EXIT_OK;
    }
  int argc;
  char **argv = dashboard_default(argc0, argv0, &argc);
  if (take_redis(&argc, argv) < 0) {
    free(argv);
    return sg_cli_usage_error("run", "--redis needs a URL (redis://[USER:PASSWORD@]HOST[:PORT])");
  }
  sg_run_config cfg;
  sg_err err;
  sg_err_clear(&err);
  int rc = load_config(argc, argv, &cfg, &err);
  free(argv);
  if (rc < 0) {
    if (rc == SG_EINVAL)
      sg_cli_usage_error("run", "%s", err.msg);
    else
      fprintf(stderr, "specgen run: %s\n", err.msg);
    sg_run_config_free(&cfg);
    return SG_EXIT_USAGE;
  }
  if (check_dashboard(cfg.dashboard) < 0) {
    sg_run_config_free(&cfg);
    return SG_EXIT_USAGE;
  }
  printer p = {cfg.json, cfg.quiet, cfg.dashboard, NULL};
  sg_run_observer obs = {&p, on_event, NULL};
  sg_run_outcome out;
  sg_llm_server *srv;
  sg_run_server server;
  sg_cli_run_server(&srv, &server);
  rc = sg_run_execute(&cfg, NULL, &server, &obs, &out, &err);
  int exit_code = run_exit(rc, &out, &cfg, &err);
  sg_dashboard_stop(p.dash);
  sg_run_outcome_free(&out);
  sg_run_config_free(&cfg);
  return exit_code;
}

/* ---- specgen show ------------------------------------------------------------ */

/* `specgen show DIR --serve`: the dashboard until SIGINT or SIGTERM. The
 * signals are blocked before the server's thread starts (it inherits the
 * mask), so sigwait here is the only one to see them. */
static int serve_dir(const char *dir, const char *addr) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  sg_err err;
  sg_err_clear(&err);
  sg_dashboard *d = NULL;
  int rc = sg_dashboard_start(dir, addr, &d, &err);
  if (rc < 0) {
    fprintf(stderr, "specgen show: %s\n", err.msg);
    return rc == SG_EINVAL ? SG_EXIT_USAGE : SG_EXIT_FAILED;
  }
  fprintf(stderr, "dashboard: %s (Ctrl-C stops it)\n", sg_dashboard_url(d));
  int sig = 0;
  sigwait(&set, &sig);
  sg_dashboard_stop(d);
  return SG_EXIT_OK;
}

static void show_usage(FILE *f) {
  fprintf(f, "usage: specgen show DIR [--json]\n"
             "       specgen show DIR --serve [ADDR:PORT]\n"
             "\n"
             "Prints the summary of the run in DIR, finished or not (the same as its\n"
             "summary.json): end-to-end time, utilization, tokens and, per task,\n"
             "iterations, best speedup, profiling feedback, early terminations and\n"
             "generations. Exit status: 0 printed or served; 1 the store could not be\n"
             "read; 2 bad usage or no run in DIR.\n"
             "\n"
             "  --json               print summary.json's object, with the run's state\n"
             "  --serve [ADDR:PORT]  serve the live dashboard of DIR (a run, running or\n"
             "                       not, or a sim campaign) until interrupted (default\n"
             "                       %s, loopback)\n"
             "  -h, --help           this help\n",
          SG_DASHBOARD_DEFAULT_ADDR);
}

int sg_cmd_show(int argc, char **argv) {
  bool json = false, serve = false;
  const char *dir = NULL, *addr = SG_DASHBOARD_DEFAULT_ADDR;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--serve") == 0) {
      serve = true;
      /* An optional ADDR:PORT: the next argument when it parses as one. */
      char host[64];
      int port;
      sg_err e;
      if (i + 1 < argc && sg_dashboard_parse_addr(argv[i + 1], host, sizeof host, &port,
                                                  &e) == 0)
        addr = argv[++i];
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      show_usage(stdout);
      return SG_EXIT_OK;
    } else if (argv[i][0] == '-' || dir) {
      return sg_cli_usage_error("show", "unexpected argument '%s'", argv[i]);
    } else {
      dir = argv[i];
    }
  }
  if (dir == NULL)
    return sg_cli_usage_error("show", "which run directory? (specgen show DIR)");
  if (serve)
    return serve_dir(dir, addr);
  json_t *s = NULL;
  sg_err err;
  sg_err_clear(&err);
  int rc = sg_run_show(dir, &s, &err);
  if (rc < 0) {
    fprintf(stderr, "specgen show: %s\n", err.msg);
    return rc == SG_ENOENT ? SG_EXIT_USAGE : SG_EXIT_FAILED;
  }
  if (json) {
    char *text = json_dumps(s, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    printf("%s\n", text);
    free(text);
  } else {
    sg_cli_print_summary(stdout, s);
    printf("  state: %s\n", str(s, "state"));
  }
  json_decref(s);
  return SG_EXIT_OK;
}
