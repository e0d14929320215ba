/* sg_run.c: the run loop (sg_run.h).
 *
 * How it works. Everything happens on one libuv loop thread. Three kinds of
 * things arrive: LLM stream callbacks (reasoning and content deltas, the end
 * of a generation), worker pool results (a compile, a validation, a
 * profile), and ticks. Each is turned into an event for the pure core: the
 * workflow's controller (generations, candidates, iterations) or the shared
 * scheduler (compile slots and devices). Their actions are executed here, in
 * order: start or cancel a stream, record and submit a candidate, start a
 * compile or a device stage on the pool, abort one. Every fact is written to
 * the run store before the loop acts on it.
 *
 * The core's actions are executed by the action interpreter (sg_interp.h,
 * shared with `specgen sim`) through this loop's ops. Events the loop makes
 * up itself (a candidate already evaluated in this run, a request the
 * scheduler gave up, a submission refused) are not fed to the controller
 * from inside the action that caused them: they wait in the interpreter's
 * deferred queue, drained when the current callback's work is done, so the
 * core is never re-entered while its action list is being executed.
 *
 * A store failure stops the run (nothing may happen that is not recorded):
 * the loop is told to stop, the error is returned, the run stays resumable.
 *
 * This file is the loop: the ops for the controller's actions that are
 * not generations or evaluations, ticks, progress, signals and
 * sg_run_execute. Its parts: generations and token forks (sg_run_gen.c),
 * evaluations on the pool (sg_run_eval.c), a run's records and resuming
 * (sg_run_resume.c), setting up and tearing down (sg_run_setup.c), reading
 * a stored run (sg_run_show.c); sg_run_priv.h is what they share.
 */
#include "run/sg_run_priv.h"

#include "common/sg_file.h"
#include "llm/sg_llm_generate.h"
#include "run/sg_search_exec.h"

#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How often a progress event is emitted. */
#define PROGRESS_EVERY_US 2000000
/* How long closing the pool may take before workers are killed. */
#define POOL_CLOSE_S 5.0

int64_t sg_run_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Records the first fatal error and stops the loop's work. */
void sg_run_fail(run *r, const sg_err *e) {
  if (r->it) {
    sg_interp_fail(r->it, e);
  } else if (!r->failed) {
    r->failed = true;
    *r->err = *e;
  }
  r->stopping = true;
}

void sg_run_emit(run *r, const char *name, json_t *fields) {
  json_t *ev = json_object();
  json_object_set_new(ev, "event", json_string(name));
  json_object_set_new(ev, "t", json_real(t_of(r, now_us())));
  if (fields) {
    json_object_update(ev, fields);
    json_decref(fields);
  }
  if (r->obs && r->obs->on_event)
    r->obs->on_event(r->obs->data, ev);
  json_decref(ev);
}

/* ---- the store, with failures made fatal ------------------------------------ */

void sg_run_record_decision(run *r, wf *f, const char *kind, json_t *detail) {
  int64_t id = 0;
  STORE(r, sg_store_decision_add(r->store, f->store_id, f->iter_store_id, kind,
                                 detail, now_us(), &id, err));
  json_decref(detail);
}

/* ---- the controller's actions (the interpreter's ops) ----------------------- */

static void maybe_finish(run *r);
static void on_tick(uv_timer_t *t);

/* Feeds the made-up events, in order, once no core call is on the stack. */
void sg_run_drain(run *r) {
  sg_interp_drain(r->it);
  maybe_finish(r);
}

static int op_iteration_end(void *data, uint32_t w, const sg_ctl_action *a,
                            bool main_cancelled) {
  run *r = data;
  wf *f = wf_of(r, w);
  const sg_kernel *b = a->u.end.best_kernel
                           ? sg_history_get(sg_controller_history(f->ctl),
                                            a->u.end.best_kernel)
                           : NULL;
  /* The paper's early termination cuts a reasoning short; a kernel the
   * criterion accepts after the reasoning ended is "accepted". */
  const char *reason = sg_ctl_reason_name(a->u.end.reason);
  if (a->u.end.reason == SG_REASON_EARLY && !main_cancelled)
    reason = "accepted";
  reason = sg_gen_iteration_reason(reason, f->iter_kernels);
  f->iter_kernels = 0;
  sg_run_iteration_close(r, f, reason);
  STORE(r, sg_run_write_best(r, f, true, err));
  sg_run_emit(r, "iteration_end",
              json_pack("{s:s, s:i, s:s, s:o, s:o, s:o}", "task", f->task->name, "iteration",
                        (int)a->iteration + 1, "reason", reason, "iteration_best",
                        num_or_null(b ? b->speedup : NAN), "best_speedup",
                        num_or_null(f->best_speedup), "best_speedup_kind", best_kind(f)));
  return 0;
}

static int op_workflow_done(void *data, uint32_t w, const sg_ctl_action *a) {
  run *r = data;
  wf *f = wf_of(r, w);
  sg_run_iteration_close(r, f, sg_ctl_reason_name(a->u.done.reason));
  /* and the next one, if a main started ahead had opened it */
  sg_run_iteration_close(r, f, sg_ctl_reason_name(a->u.done.reason));
  f->done = true;
  STORE(r, sg_run_write_best(r, f, true, err));
  bool failed = a->u.done.reason == SG_REASON_SEARCH_FAILED;
  f->failed = failed;
  STORE(r, sg_store_workflow_set_state(r->store, f->store_id,
                                       failed ? SG_STORE_WF_FAILED : SG_STORE_WF_DONE,
                                       now_us(), err));
  sg_run_emit(r, "workflow_done",
              json_pack("{s:s, s:s, s:o, s:o, s:s?}", "task", f->task->name, "reason",
                        sg_ctl_reason_name(a->u.done.reason), "best_speedup",
                        num_or_null(f->best_speedup), "best_speedup_kind", best_kind(f),
                        "best_file", f->best_file));
  return 0;
}

static int op_decision(void *data, uint32_t w, const sg_ctl_action *a) {
  run *r = data;
  json_t *d = json_pack("{s:I, s:I, s:i}", "generation", (json_int_t)a->u.decision.gen,
                        "prefix_bytes", (json_int_t)a->u.decision.prefix_len, "k",
                        a->u.decision.k);
  if (a->u.decision.trigger >= 0)
    json_object_set_new(d, "trigger",
                        json_string(sg_trigger_class_name(a->u.decision.trigger)));
  if (a->u.decision.reason == SG_REASON_EARLY) {
    json_object_set_new(d, "candidate", json_integer((json_int_t)a->u.decision.candidate));
    json_object_set_new(d, "speedup", num_or_null(a->u.decision.speedup));
    json_object_set_new(d, "history_mean", num_or_null(a->u.decision.threshold_mean));
    json_object_set_new(d, "history_best", num_or_null(a->u.decision.threshold_best));
  }
  sg_run_record_decision(r, wf_of(r, w), sg_ctl_reason_name(a->u.decision.reason), d);
  return 0;
}

static int64_t op_now_us(void *data) {
  (void)data;
  return now_us();
}

static int64_t op_cpu_ns(void *data) {
  (void)data;
  return sg_run_thread_cpu_ns();
}

/* The interpreter failed (a controller or the scheduler): stop. */
static void op_failed(void *data) {
  run *r = data;
  r->failed = true;
  r->stopping = true;
}

static void op_describe(void *data, uint32_t w, char *buf, size_t size) {
  run *r = data;
  snprintf(buf, size, "task %s", wf_of(r, w)->task->name);
}

/* The interpreter over this run (r->sched exists); controllers are set
 * once the store said which workflows are still to run. */
static int interp_new(run *r, sg_err *err) {
  static sg_interp_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.now_us = op_now_us;
  ops.cpu_ns = op_cpu_ns;
  ops.failed = op_failed;
  ops.describe = op_describe;
  ops.iteration_end = op_iteration_end;
  ops.workflow_done = op_workflow_done;
  ops.decision = op_decision;
  sg_run_gen_ops(&ops);
  sg_run_eval_ops(&ops);
  sg_interp_opts o = {.ops = &ops, .data = r, .sched = r->sched, .n_workflows = r->nwf,
                      .err = r->err};
  if (r->obs) {
    o.trace = r->obs->on_action;
    o.trace_data = r->obs->data;
  }
  return sg_interp_new(&o, &r->it, err);
}

/* ---- setting up ------------------------------------------------------------- */

static char *self_exe(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return NULL;
  buf[n] = '\0';
  return sg_strdup(buf);
}

static char *default_out_dir(void) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char name[64];
  strftime(name, sizeof name, "runs/%Y%m%d-%H%M%S", &tm);
  return sg_strdup(name);
}

/* ---- ticks, progress, signals, the end ---------------------------------------- */

static bool all_done(const run *r) {
  for (size_t i = 0; i < r->nwf; i++)
    if (!r->wfs[i].done)
      return false;
  return true;
}

/* Once every workflow is done (or the run must stop), the tick timer fires
 * at once and closes everything from outside any client or pool callback. */
static void maybe_finish(run *r) {
  if ((r->stopping || all_done(r)) && uv_is_active((uv_handle_t *)&r->tick) &&
      !r->closing) {
    r->closing = true;
    uv_timer_start(&r->tick, on_tick, 0, 0);
  }
}

static json_t *progress_json(run *r) {
  sg_sched_stats ss;
  sg_scheduler_stats(r->sched, &ss);
  double pool_s = (double)r->ndevices * t_of(r, now_us());
  json_t *wfs = json_array();
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    sg_ctl_stats st;
    memset(&st, 0, sizeof st);
    if (f->ctl)
      sg_controller_stats(f->ctl, &st);
    json_array_append_new(
        wfs, json_pack("{s:s, s:i, s:b, s:o, s:o, s:i, s:i, s:i, s:I, s:I}", "task",
                       f->task->name, "iteration", f->ctl ? (int)sg_controller_iteration(f->ctl) + 1 : 0,
                       "done", f->done, "best_speedup", num_or_null(f->best_speedup),
                       "best_speedup_kind", best_kind(f),
                       "main_live", f->live_main, "spec_live", f->live_spec,
                       "evaluations_in_flight", f->in_flight, "forks", (json_int_t)st.forks,
                       "early_terminations", (json_int_t)st.early_terminations));
  }
  double uv = pool_s > 0 ? (double)ss.busy_us[SG_PHASE_VALIDATE] / 1e6 / pool_s : 0;
  double up = pool_s > 0 ? (double)ss.busy_us[SG_PHASE_PROFILE] / 1e6 / pool_s : 0;
  return json_pack("{s:o, s:{s:f, s:f, s:f}}", "workflows", wfs, "utilization",
                   "validation", uv, "profiling", up, "overall", uv + up);
}

static void shutdown_all(run *r) {
  sg_run_replay_close(r);
  uv_timer_stop(&r->tick);
  uv_close((uv_handle_t *)&r->tick, NULL);
  uv_close((uv_handle_t *)&r->sigint, NULL);
  uv_close((uv_handle_t *)&r->sigterm, NULL);
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    while (f->gens)
      sg_run_gen_cancel(r, (uint32_t)i, f->gens->gen);
  }
  sg_run_eval_close_intervals(r);
  sg_run_kv_close(r);
  sg_pool_close(r->pool, POOL_CLOSE_S);
  r->pool = NULL;
  sg_llm_client_destroy(r->client);
  r->client = NULL;
}

static void on_tick(uv_timer_t *t) {
  run *r = t->data;
  if (r->closing) {
    shutdown_all(r);
    return;
  }
  int64_t now = now_us();
  sg_run_gen_retry_due(r, now);
  sg_scheduler_tick(r->sched, now, NULL);
  for (size_t i = 0; i < r->nwf && !r->failed; i++) {
    wf *f = &r->wfs[i];
    if (f->done || f->ctl == NULL)
      continue;
    sg_ctl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SG_CEV_TICK;
    ev.now_us = now;
    sg_scheduler_capacity(r->sched, &ev.u.tick.capacity);
    sg_interp_event(r->it, (uint32_t)i, &ev);
  }
  sg_run_drain(r);
  if (now - r->last_progress_us >= PROGRESS_EVERY_US) {
    r->last_progress_us = now;
    sg_run_emit(r, "progress", progress_json(r));
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  run *r = h->data;
  r->interrupted = true;
  r->stopping = true;
  sg_run_emit(r, "warning",
       json_pack("{s:s}", "message",
                 signum == SIGINT
                     ? "interrupted: stopping; the run can be resumed with --resume "
                       "(press Ctrl-C again to stop at once)"
                     : "terminated: stopping; the run can be resumed with --resume"));
  /* A second signal takes the default action: the store loses nothing. */
  uv_signal_stop(&r->sigint);
  uv_signal_stop(&r->sigterm);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  maybe_finish(r);
}

void sg_run_outcome_free(sg_run_outcome *o) {
  free(o->dir);
  free(o->no_generation);
  json_decref(o->summary);
  memset(o, 0, sizeof *o);
}

/* Everything before the loop: the workers' program, the devices (checked),
 * the workflows, the scheduler and the interpreter, the store (a new run or
 * the one resumed), the model, the client and the pool. */
static int prepare(run *r, const char *exe, sg_run_outcome *out, char **token_warning,
                   sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  int rc;
  if ((rc = sg_search_register(&r->sreg, &sg_search_exec_ops, err)) < 0)
    return rc;
  if ((rc = sg_run_devices_parse(cfg->devices, &r->devices, &r->ndevices, err)) < 0)
    return sg_err_prefix(err, "--devices");
  r->device_kind = sg_eval_device_kind(r->devices[0]);
  /* Devices that cannot evaluate anything are bad input, found before the
   * run starts (not after every evaluation failed). */
  for (size_t i = 0; i < r->ndevices; i++)
    if ((rc = sg_eval_device_check(r->devices[i], err)) < 0)
      return sg_err_prefix(err, "--devices");
  r->dir = cfg->resume ? sg_strdup(cfg->resume)
                       : cfg->out ? sg_strdup(cfg->out) : default_out_dir();
  if (cfg->resume && access(cfg->resume, F_OK) != 0)
    return sg_err_set(err, SG_ENOENT, "--resume %s: no such directory", cfg->resume);
  /* A file where the run directory goes is bad input (it failed as a store
   * error, with a hint to resume what never began). */
  struct stat st;
  if (stat(r->dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return sg_err_set(err, SG_EINVAL, "%s %s: a file, not a directory",
                      cfg->resume ? "--resume" : "--out", r->dir);
  /* before the outcome names the directory: a Redis refused here has
   * written nothing there, so no resume hint follows */
  if ((rc = sg_run_remote_devices(r, err)) < 0)
    return rc;
  out->dir = sg_strdup(r->dir);
  if ((rc = sg_run_load_workflows(r, err)) < 0)
    return rc;
  if ((rc = sg_prompt_templates_load(cfg->prompts, &r->templates, err)) < 0)
    return sg_err_prefix(err, "--prompts");
  sg_sched_opts so;
  sg_sched_opts_default(&so);
  so.devices = (int)r->ndevices;
  so.compile_slots = cfg->compile_workers;
  sg_knobs_land(&cfg->knobs, NULL, &so);
  sg_llm_client_opts co;
  sg_llm_client_opts_init(&co);
  co.api_key_env = cfg->llm ? cfg->api_key_env : "";
  co.seed = cfg->seed;
  /* The model first: an endpoint that does not answer is bad input, said
   * before a run directory exists (not after every iteration failed). */
  if ((rc = sg_run_start_model(r, err)) < 0 || (rc = sg_run_check_model(r, &co, err)) < 0)
    return rc;
  if ((rc = sg_scheduler_new(&so, &r->sched, err)) < 0 || (rc = interp_new(r, err)) < 0 ||
      (rc = sg_store_open(r->dir, &r->store, err)) < 0 ||
      (rc = sg_run_begin_or_resume(r, err)) < 0 ||
      (rc = sg_replay_log_open(r->dir, &r->llm_log, err)) < 0)
    return rc;
  for (size_t i = 0; i < r->nwf; i++)
    sg_interp_set_controller(r->it, (uint32_t)i, r->wfs[i].done ? NULL : r->wfs[i].ctl);
  uv_loop_init(&r->loop);
  r->loop_ready = true;
  if ((rc = sg_llm_client_new(&r->loop, &co, &r->client, err)) < 0)
    return rc;
  if (cfg->knobs.spec && cfg->token_forks && r->provider && r->provider->token_ids) {
    /* Once, before the loop: the ids that end a reasoning, from the
     * server's own tokenizer. Without them forks go as chat continuations. */
    sg_err te;
    sg_err_clear(&te);
    if (sg_llm_tokenize(r->base_url, r->model, r->provider->think_close, NULL, 0, false,
                        &co, 10.0, &r->end_think, &r->n_end_think, &te) < 0 ||
        r->n_end_think == 0) {
      free(r->end_think);
      r->end_think = NULL;
      *token_warning = sg_asprintf("token forks are off: the server's /tokenize "
                                   "failed (%s); forks continue the reasoning as chat",
                                   te.msg);
    }
  }
  rc = sg_run_start_pool(r, exe, err);
  return rc < 0 ? rc : sg_run_kv_start(r, err);
}

/* The loop: signals, the first actions of every unfinished workflow, then
 * libuv until everything is closed. */
static void loop(run *r, sg_run_outcome *out, const char *token_warning) {
  const sg_run_config *cfg = r->cfg;
  /* Signals first: a Ctrl-C as soon as the run says it started stops it
   * cleanly (it killed the process before). */
  uv_timer_init(&r->loop, &r->tick);
  r->tick.data = r;
  uv_signal_init(&r->loop, &r->sigint);
  uv_signal_init(&r->loop, &r->sigterm);
  r->sigint.data = r->sigterm.data = r;
  uv_signal_start(&r->sigint, on_signal, SIGINT);
  uv_signal_start(&r->sigterm, on_signal, SIGTERM);
  sg_run_emit(r, "run_start",
       json_pack("{s:s, s:s, s:b, s:s?, s:s, s:s, s:s, s:b, s:b, s:i, s:s}", "dir", r->dir,
                 "llm", cfg->llm ? cfg->llm : r->base_url, "built_in_model",
                 cfg->llm == NULL && cfg->replay == NULL, "replay", cfg->replay,
                 "model", r->model, "reasoning", r->prompted ? "prompted" : "native",
                 "devices", cfg->devices, "spec", cfg->knobs.spec, "resumed", cfg->resume != NULL,
                 "tasks", (int)r->nwf, "search", cfg->search));
  if (token_warning)
    sg_run_emit(r, "warning", json_pack("{s:s}", "message", token_warning));
  if (cfg->knobs.spec && r->provider && r->provider->cancel == SG_LLM_CANCEL_NONE) {
    char w[512];
    sg_gen_cancel_warning(r->provider->server, r->provider->name, w, sizeof w);
    sg_run_emit(r, "warning", json_pack("{s:s}", "message", w));
  }
  uint64_t tick_ms = (uint64_t)(cfg->knobs.tick * 1000);
  uv_timer_start(&r->tick, on_tick, tick_ms ? tick_ms : 1, tick_ms ? tick_ms : 1);
  r->last_progress_us = now_us();
  out->started = true;

  for (size_t i = 0; i < r->nwf && !r->failed; i++) {
    wf *f = &r->wfs[i];
    if (f->done)
      continue;
    sg_run_emit(r, "workflow_start", json_pack("{s:s, s:s, s:i}", "task", f->task->name,
                                        "evaluator", f->task->evaluator, "iteration",
                                        (int)sg_controller_iteration(f->ctl) + 1));
    sg_interp_start(r->it, (uint32_t)i);
  }
  sg_run_drain(r);
  maybe_finish(r);
  uv_run(&r->loop, UV_RUN_DEFAULT);
}

/* After the loop: the run's end in the store (unless interrupted), then
 * summary.json and the run_end event. */
static void conclude(run *r, sg_run_outcome *out) {
  sg_err e;
  sg_err_clear(&e);
  if (sg_run_remote_cleanup(r, &e) < 0) /* keys left: said, the run stands */
    sg_run_emit(r, "warning", json_pack("{s:s}", "message", e.msg));
  sg_err_clear(&e);
  if (!r->failed && !r->interrupted && sg_store_run_end(r->store, now_us(), &e) < 0)
    sg_run_fail(r, &e);
  sg_err_clear(&e);
  json_t *s = sg_run_summary(r, &e);
  if (s) {
    sg_run_kv_report(r, s);
    sg_run_load_report(r, s);
    json_object_set_new(s, "generations", sg_gen_account_json(&r->acct));
    char *text = json_dumps(s, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    char *path = sg_asprintf("%s/summary.json", r->dir);
    size_t len = strlen(text);
    text = sg_realloc(text, len + 2);
    text[len] = '\n';
    text[len + 1] = '\0';
    if (sg_file_write(path, text, len + 1, &e) < 0)
      sg_run_fail(r, &e);
    free(path);
    free(text);
    out->summary = s;
    sg_run_emit(r, "run_end", json_pack("{s:O, s:b}", "summary", s, "interrupted",
                                        r->interrupted));
  } else if (!r->failed) {
    sg_run_fail(r, &e);
  }
  out->interrupted = r->interrupted;
  for (size_t i = 0; i < r->nwf; i++)
    out->failed_workflows += r->wfs[i].failed;
  char why[SG_GEN_CAUSE_BYTES + 64];
  if (!r->failed && sg_gen_account_nothing_generated(&r->acct, why, sizeof why))
    out->no_generation = sg_strdup(why);
}

/* Closes what is open (whatever step failed) and frees the run. */
static void close_all(run *r) {
  sg_run_kv_close(r);
  json_decref(r->kv_stats);
  if (r->pool || r->client) {
    sg_pool_close(r->pool, 0);
    sg_llm_client_destroy(r->client);
    r->pool = NULL;
    r->client = NULL;
  }
  if (r->loop_ready) {
    if (!uv_is_closing((uv_handle_t *)&r->tick) && r->tick.loop) {
      uv_close((uv_handle_t *)&r->tick, NULL);
      uv_close((uv_handle_t *)&r->sigint, NULL);
      uv_close((uv_handle_t *)&r->sigterm, NULL);
    }
    uv_run(&r->loop, UV_RUN_DEFAULT);
    uv_loop_close(&r->loop);
  }
  if (r->build_cache) {
    sg_err e;
    sg_rm_rf(r->build_cache, &e);
  }
  sg_run_free(r);
  free(r->dir);
}

int sg_run_execute(const sg_run_config *cfg, const char *program,
                   const sg_run_server *server, const sg_run_observer *obs,
                   sg_run_outcome *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  int rc = sg_run_config_check(cfg, err);
  if (rc < 0)
    return rc;
  if (cfg->llm == NULL && (server == NULL || server->start == NULL))
    return sg_err_set(err, SG_EINVAL, "llm: unset, and no model server to start");
  run rs;
  memset(&rs, 0, sizeof rs);
  run *r = &rs;
  r->cfg = cfg;
  r->server = server;
  r->obs = obs;
  r->err = err;
  sg_search_registry_init(&r->sreg);
  sg_termination_registry_init(&r->treg);
  char *exe = program ? sg_strdup(program) : self_exe();
  char *token_warning = NULL;
  if (exe == NULL)
    rc = sg_err_set(err, SG_EIO, "cannot find the specgen program for the workers");
  else
    rc = prepare(r, exe, out, &token_warning, err);
  if (rc == 0) {
    loop(r, out, token_warning);
    conclude(r, out);
    rc = r->failed ? (err->code ? err->code : SG_EIO) : 0;
    if (rc > 0)
      rc = -rc;
  }
  close_all(r);
  free(exe);
  free(token_warning);
  return rc;
}
