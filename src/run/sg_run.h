/* sg_run.h: `specgen run`, the whole loop: tasks optimized by an LLM, with
 * speculative forks, on a shared pool of worker processes.
 *
 * One libuv loop runs everything: the LLM client's streams (sg_llm_client),
 * the worker pool (sg_pool: one `specgen worker` per device plus compile
 * workers), a tick timer and the signal handlers. One controller per task
 * (a workflow, src/core/sg_controller.h) decides; one scheduler
 * (sg_scheduler.h) shares the devices between them; the run store
 * (sg_store.h) records every generation, candidate, evaluation, decision and
 * device interval before the loop acts on it, so a run killed at any moment
 * is resumed from its directory without losing a completed evaluation.
 * Prompts come from templates (sg_prompt.h) and feedback from results
 * (sg_feedback.h). Without an endpoint the caller's server plays the
 * model (sg_run_server: the CLI starts the built-in test server); the run
 * itself talks to every model through the LLM client alone.
 *
 * What happens, and why, is in docs/usage.md (for users) and
 * docs/architecture.md (for the code).
 */
#ifndef SG_RUN_H
#define SG_RUN_H

#include "common/sg_error.h"
#include "run/sg_run_config.h"

#include <jansson.h>
#include <stdbool.h>

/* What the caller (the CLI) sees while the run goes: one JSON object per
 * event, borrowed for the call. Every event has "event" (its name) and "t"
 * (seconds since the run began). Events (docs/usage.md lists the fields):
 *   run_start, workflow_start, generation, fork, candidate, evaluation,
 *   iteration_end, workflow_done, worker, progress (every 2 s), warning,
 *   run_end (with the summary). */
typedef struct sg_run_observer {
  void *data;
  void (*on_event)(void *data, const json_t *event);
  /* optional: one line per core action executed (sg_interp.h's trace), for
   * tests that compare a run's actions with a simulation's */
  void (*on_action)(void *data, const char *line);
} sg_run_observer;

/* The model server of a run without an endpoint (llm unset), which the
 * caller starts: the CLI's is the built-in test server, in its process.
 * start is called where the run would reach an endpoint (after the tasks
 * and templates load, before the store opens), with the run's
 * configuration (seed, server-speed, server-fault, replay); it gives the
 * server's base URL (owned by the run), the model name and the provider
 * profile to talk to it with (both borrowed until stop). Errors name the
 * flag or the server. stop is called as the run is torn down, only after
 * a start that succeeded. */
typedef struct sg_run_server {
  void *data;
  int (*start)(void *data, const sg_run_config *cfg, char **base_url, const char **model,
               const char **profile, sg_err *err);
  void (*stop)(void *data);
} sg_run_server;

/* How a run ended. */
typedef struct sg_run_outcome {
  char *dir;             /* the run directory (owned) */
  json_t *summary;       /* summary.json's object (owned), NULL if none */
  bool interrupted;      /* stopped by SIGINT/SIGTERM: resumable */
  int failed_workflows;  /* workflows that ended in state failed */
  char *no_generation;   /* no generation succeeded: why (owned); the run
                            failed even if every workflow ended */
  bool started;          /* the loop ran: an error before it is about the
                            input (a task, a directory, the configuration) */
} sg_run_outcome;

void sg_run_outcome_free(sg_run_outcome *o);

/* Runs cfg (checked with sg_run_config_check) to its end: every workflow
 * done, or a signal. program is the specgen executable the workers run
 * (NULL: this process's own); server plays the model when cfg has no llm
 * (NULL then: SG_EINVAL before anything starts). Returns 0 when the run completed or was
 * interrupted (out says which); negative when it could not run (a bad task,
 * an unreachable run directory, the pool failing to start), with err naming
 * what. */
int sg_run_execute(const sg_run_config *cfg, const char *program,
                   const sg_run_server *server, const sg_run_observer *obs,
                   sg_run_outcome *out, sg_err *err);

/* The configuration a run in dir was started with (for --resume: the CLI
 * applies the flags given now on top of it). */
int sg_run_load_config(const char *dir, sg_run_config *c, sg_err *err);

/* The summary of the run in dir (finished or not) as summary.json holds it,
 * with "dir", "state" (running, done, interrupted) and the best kernel file
 * of each workflow added. The caller json_decref()s *out. */
/* The summary's "replay" object of a run that replayed the recording in
 * from (a replay's figures always say they are one). */
json_t *sg_run_replay_json(const char *from, double speed, bool evals);
int sg_run_show(const char *dir, json_t **out, sg_err *err);

#endif
