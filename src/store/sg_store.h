/* sg_store.h: the run store, one SQLite database per run directory
 * (<dir>/run.db) that records everything a run does as it happens.
 *
 * What it is for: nothing measured is lost. Every generation, candidate,
 * evaluation, decision and busy device interval is committed here when it
 * happens, before the runtime acts on it; a killed run is resumed from here;
 * `summary.json`, reports and the dashboard are computed from here.
 *
 * How it works: WAL journal, synchronous=NORMAL, foreign keys on, a
 * schema_version table and migrations applied on open. Every call that
 * records is ONE short transaction (SQLite's autocommit) on a prepared
 * statement: when it returns 0, the record survives the death of this
 * process (SIGKILL included); see docs/store.md for what a power loss may
 * cost. Times are int64 microseconds that the caller passes (`*_us`), on one
 * clock for the whole run: use the wall clock (Unix epoch), so a resumed run
 * continues on the same axis. The store never reads a clock.
 *
 * What it must never do: overwrite a completed evaluation, record a
 * candidate twice in one workflow, or fail silently. Errors name the file,
 * the table and the SQL.
 *
 * One thread uses a store at a time (the runtime's event loop); other
 * processes may read the file concurrently (WAL).
 */
#ifndef SG_STORE_H
#define SG_STORE_H

#include "common/sg_error.h"
#include "eval/sg_eval.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The latest schema version this build writes. */
#define SG_STORE_SCHEMA_VERSION 3
/* The database's name inside a run directory. */
#define SG_STORE_FILE "run.db"
/* Text columns from outside (evaluation messages) are cut to this. */
#define SG_STORE_TEXT_MAX (64 * 1024)

typedef struct sg_store sg_store;

typedef struct sg_store_opts {
  /* fsync every commit (synchronous=FULL): a commit then survives a power
   * loss too, at the cost docs/store.md measures. Default false (NORMAL). */
  bool sync_full;
} sg_store_opts;

/* Opens (creating the directory and the database as needed) <dir>/run.db,
 * applying the migrations up to SG_STORE_SCHEMA_VERSION. Errors name the
 * file: a path that cannot be created (SG_EIO), a file that is not a SQLite
 * database or is damaged (SG_EPARSE), a database from a newer specgen
 * (SG_EUNSUPPORTED). On success *out is a store the caller closes. */
int sg_store_open(const char *dir, sg_store **out, sg_err *err);
/* The same with options (opts NULL: the defaults). */
int sg_store_open_opts(const char *dir, const sg_store_opts *opts,
                       sg_store **out, sg_err *err);
/* Finalizes the statements and closes the database (NULL is fine). */
void sg_store_close(sg_store *s);
/* The database's path (borrowed). */
const char *sg_store_path(const sg_store *s);
/* The schema version of the open database. */
int sg_store_schema_version(const sg_store *s);
/* The synchronous level in force, read back from SQLite at open: "normal"
 * or "full". */
const char *sg_store_synchronous(const sg_store *s);

/* ---- the run (one per database) ---------------------------------------- */

/* Begins the run: its whole configuration (a JSON object, copied) and the
 * number of devices in the pool (for utilization). SG_ESTATE when the
 * database already holds a run (resume it instead: sg_store_resume_json). */
int sg_store_run_begin(sg_store *s, const json_t *config, int devices,
                       int64_t started_us, int64_t *run_id, sg_err *err);
/* Ends the run; SG_ESTATE when there is none or it already ended. */
int sg_store_run_end(sg_store *s, int64_t ended_us, sg_err *err);
/* Extends a finished run to budget_iterations: every workflow done with a
 * smaller iteration budget runs again (state running, the new budget), and
 * the run is open again. *reopened: how many workflows; 0 leaves the store
 * as it was. */
int sg_store_run_extend(sg_store *s, int64_t budget_iterations, int *reopened,
                        sg_err *err);

/* ---- workflows and iterations ------------------------------------------ */

typedef enum sg_store_wf_state {
  SG_STORE_WF_RUNNING,
  SG_STORE_WF_DONE,
  SG_STORE_WF_FAILED,
  SG_STORE_WF__COUNT
} sg_store_wf_state;

/* "running", "done", "failed". */
const char *sg_store_wf_state_name(sg_store_wf_state st);

typedef struct sg_store_workflow {
  const char *task;            /* the task's name */
  int64_t budget_iterations;   /* 0: none */
  double budget_wall_s;        /* 0: none */
  int64_t budget_tokens;       /* 0: none */
  int64_t started_us;
} sg_store_workflow;

/* Records a workflow (state running) of the run. */
int sg_store_workflow_add(sg_store *s, const sg_store_workflow *wf,
                          int64_t *id, sg_err *err);
/* Moves a workflow to state; done and failed also set ended_us. */
int sg_store_workflow_set_state(sg_store *s, int64_t workflow_id,
                                sg_store_wf_state state, int64_t now_us,
                                sg_err *err);

/* Begins iteration `number` (1, 2, ...; unique in the workflow). */
int sg_store_iteration_begin(sg_store *s, int64_t workflow_id, int64_t number,
                             int64_t started_us, int64_t *id, sg_err *err);
/* Ends an open iteration with the controller's reason ("early",
 * "fallback", ...: sg_ctl_reason_name). SG_ESTATE if it is not open. */
int sg_store_iteration_end(sg_store *s, int64_t iteration_id,
                           const char *end_reason, int64_t ended_us,
                           sg_err *err);

/* ---- generations ------------------------------------------------------- */

typedef enum sg_store_gen_kind {
  SG_STORE_GEN_MAIN,  /* a reasoning generation */
  SG_STORE_GEN_SPEC,  /* a speculative fork */
  SG_STORE_GEN__COUNT
} sg_store_gen_kind;

/* "main", "spec". */
const char *sg_store_gen_kind_name(sg_store_gen_kind k);

typedef struct sg_store_generation {
  int64_t iteration_id;   /* the workflow is the iteration's */
  sg_store_gen_kind kind;
  int64_t parent_id;      /* the generation a fork was cut from; 0: none */
  int64_t prefix_bytes;   /* reasoning bytes in the fork's prompt */
  const char *prompt;     /* may be NULL */
  int64_t started_us;
  bool answer_at_cap;     /* spec: the answer asked for at the length cap
                             of its parent (budget forcing), not a fork */
} sg_store_generation;

typedef enum sg_store_gen_outcome {
  SG_STORE_GEN_COMPLETED,  /* the stream ended normally */
  SG_STORE_GEN_CANCELLED,  /* specgen cancelled it */
  SG_STORE_GEN_FAILED,     /* the server or the connection failed */
  SG_STORE_GEN_OUTCOME__COUNT
} sg_store_gen_outcome;

/* "completed", "cancelled", "failed". */
const char *sg_store_gen_outcome_name(sg_store_gen_outcome o);

int sg_store_generation_begin(sg_store *s, const sg_store_generation *g,
                              int64_t *id, sg_err *err);
/* Ends an open generation with its token counts (what it had produced when
 * cancelled or failed), the server's finish_reason (may be NULL) and the
 * outcome. SG_ESTATE if it is not open. */
int sg_store_generation_end(sg_store *s, int64_t generation_id,
                            int64_t prompt_tokens, int64_t completion_tokens,
                            int64_t cached_tokens, const char *finish_reason,
                            sg_store_gen_outcome outcome, int64_t ended_us,
                            sg_err *err);

/* Marks which of a generation's token counts are estimates (the server
 * reported none: docs/llm.md). */
int sg_store_generation_estimated(sg_store *s, int64_t generation_id,
                                  bool prompt, bool completion, sg_err *err);

/* ---- candidates -------------------------------------------------------- */

/* Records the candidate `source` extracted from a generation, keyed in its
 * workflow by the FNV-1a 64 hash of its normalized text (sg_source_key:
 * line-end blanks and outer blank lines do not count). When the workflow
 * already holds the same normalized source, nothing is inserted: *id is the
 * existing candidate (its first copy's text) and *is_new false, so a kernel
 * is never evaluated twice. Two
 * different sources with one hash (a collision) give SG_ESTATE naming both
 * ids rather than a wrong match. is_new may be NULL. */
int sg_store_candidate_add(sg_store *s, int64_t generation_id,
                           const char *source, int64_t created_us,
                           int64_t *id, bool *is_new, sg_err *err);

/* ---- evaluations ------------------------------------------------------- */

typedef enum sg_store_phase {
  SG_STORE_VALIDATE,
  SG_STORE_PROFILE,
  SG_STORE_PHASE__COUNT
} sg_store_phase;

/* "validate", "profile". */
const char *sg_store_phase_name(sg_store_phase p);

/* An evaluation request entered a queue. */
int sg_store_eval_queue(sg_store *s, int64_t candidate_id,
                        sg_store_phase phase, int64_t queued_us, int64_t *id,
                        sg_err *err);
/* It started on a device ("cpu:0", "cuda:3"). SG_ESTATE once finished. */
int sg_store_eval_start(sg_store *s, int64_t eval_id, const char *device,
                        int64_t started_us, sg_err *err);
/* It finished with result r (status, speedup, ref_ms, cand_ms, message cut to
 * SG_STORE_TEXT_MAX, metrics, and the whole result as JSON). A finished
 * evaluation is never overwritten: finishing it again is SG_ESTATE. */
int sg_store_eval_finish(sg_store *s, int64_t eval_id, const sg_eval_result *r,
                         int64_t ended_us, sg_err *err);
/* The completed evaluation of a candidate in a phase, for resume: the latest
 * finished one whose status says something about the candidate (not aborted,
 * not infra_error). *found false when there is none; otherwise *out (which
 * the caller initialized and later frees with sg_eval_result_free) holds the
 * recorded result and *eval_id (may be NULL) its id. */
int sg_store_eval_lookup(sg_store *s, int64_t candidate_id,
                         sg_store_phase phase, sg_eval_result *out,
                         int64_t *eval_id, bool *found, sg_err *err);

/* The same from another run's store (a replay's record): the completed
 * evaluation, in a phase, of the kernel with exactly this source in the
 * workflow of this task, how long it held its device (*device_us) and when
 * it ended, from the run's start (*ended_us; may be NULL). */
int sg_store_eval_lookup_source(sg_store *s, const char *task, const char *source,
                                sg_store_phase phase, sg_eval_result *out,
                                int64_t *device_us, int64_t *ended_us, bool *found,
                                sg_err *err);
/* The same, for a replay of the record's times: the nth (from 0) finished
 * evaluation of that kernel in that phase, in the order the recorded run
 * asked for them (a kernel evaluated again after an infrastructure error
 * has one per time), infrastructure errors included (what the recorded run
 * got then), aborted ones aside; past the last, the last. */
int sg_store_eval_lookup_source_nth(sg_store *s, const char *task, const char *source,
                                    sg_store_phase phase, int64_t nth, sg_eval_result *out,
                                    int64_t *device_us, int64_t *ended_us, bool *found,
                                    sg_err *err);

/* Whether the candidate was ever submitted in a phase (any status, aborted
 * and unfinished included): a validated kernel never submitted for
 * profiling was accepted at validation (sg_ctl_opts.decide_at_validation). */
int sg_store_eval_submitted(sg_store *s, int64_t candidate_id,
                            sg_store_phase phase, bool *submitted,
                            sg_err *err);

/* ---- decisions and device intervals ------------------------------------ */

/* A decision of the controller or the scheduler (kind: "fork", "early",
 * "reallocate", ...) with its detail (a JSON value, copied; NULL: {}).
 * iteration_id 0: none. */
int sg_store_decision_add(sg_store *s, int64_t workflow_id,
                          int64_t iteration_id, const char *kind,
                          const json_t *detail, int64_t at_us, int64_t *id,
                          sg_err *err);

/* A device was busy with a request (evaluation_id; 0: none) in a phase from
 * started_us to ended_us; recorded when the interval ends. */
int sg_store_device_interval_add(sg_store *s, const char *device,
                                 sg_store_phase phase, int64_t evaluation_id,
                                 int64_t started_us, int64_t ended_us,
                                 int64_t *id, sg_err *err);

/* ---- reading --------------------------------------------------------- */

/* One row of a table ("runs", "workflows", "iterations", "generations",
 * "candidates", "evaluations", "decisions", "device_intervals") as a JSON
 * object keyed by column: integers, reals, strings, null; *_json columns
 * parsed. SG_ENOENT when there is no such row, SG_EINVAL for another
 * table name. The caller owns *out (json_decref). */
int sg_store_row_json(sg_store *s, const char *table, int64_t id,
                      json_t **out, sg_err *err);

/* What a resumed run needs (caller owns *out):
 *   {"run": {id, config, devices, started_us, ended_us} or null,
 *    "workflows": [{"id", "task", "state", "budget_iterations",
 *       "budget_wall_s", "budget_tokens", "started_us", "ended_us",
 *       "iterations_ended", "next_iteration" (the number to begin next),
 *       "open_iteration": {"id", "number", "started_us"} or null,
 *       "open_iterations": [ids of every open one, by number] (a main
 *         started ahead opens the next before the current one ends),
 *       "open_iteration_numbers": [their numbers, in the same order],
 *       "open_generations": [ids begun, never ended],
 *       "pending_evaluations": [{"id", "candidate_id", "phase"}]: queued or
 *          started, never finished: submit them again,
 *       "completed_evaluations": [{"id", "candidate_id", "phase",
 *          "status"}]: never to be redone (sg_store_eval_lookup gives
 *          the result)}]}
 * Completed means finished with any status; see docs/store.md. */
int sg_store_resume_json(sg_store *s, json_t **out, sg_err *err);

/* When the record shows a controller acting on a tick (a replay's ticks on
 * the record's clock): [{"task", "at_us" (from the run's start)}] for
 * every idle-device fork decision and every iteration the cutoff ended,
 * in time order (caller owns *out). */
int sg_store_tick_acts_json(sg_store *s, json_t **out, sg_err *err);

/* The fork budget's recorded caps (a replay applies them at their times):
 * [{"at_us" (from the run's start), "cap" (null: unbounded),
 * "slowdown_max", "cap_configured" (null: unbounded)}] for every
 * "fork_budget" decision, in time order (caller owns *out). */
int sg_store_fork_caps_json(sg_store *s, json_t **out, sg_err *err);

/* Every recorded generation's kernel (a replay finds the kernel a recorded
 * generation gave when this binary extracts another from the same text):
 * [{"task", "iteration" (from 1), "kind" ("main" or "spec"), "k" (its
 * order among that iteration's generations of its kind, from 0), "source"}]
 * (caller owns *out). */
int sg_store_gen_kernels_json(sg_store *s, json_t **out, sg_err *err);

/* Where the record ends (a replay of an interrupted run stops there):
 * {"open": whether the run never ended (interrupted, or failed), "last_us":
 * the latest time the store holds (a decision, or the end of an iteration,
 * an evaluation or a generation), from the run's start (null: none),
 * "open_iterations": [{"task", "number"}] for every iteration that never
 * ended} (caller owns *out). */
int sg_store_record_end_json(sg_store *s, json_t **out, sg_err *err);

/* The candidates of a workflow, oldest first (caller owns *out): an array of
 * {"candidate_id", "source", "iteration" (its number), "kind" ("main",
 * "spec"), "generation_id", "prefix_bytes", "answer_at_cap" (0, 1)}; for a
 * resumed run, with sg_store_eval_lookup giving each one's completed
 * results. */
int sg_store_workflow_candidates_json(sg_store *s, int64_t workflow_id,
                                      json_t **out, sg_err *err);

/* A candidate's one figure, its speedup, in SQL over a candidates row `c`:
 * the id of the evaluation that gives it: its latest completed profile that
 * measured a speedup (the authoritative timing: more runs, a device to
 * itself), else its latest validation's; NULL when none passed. The
 * summary, the run's best kernel, `specgen show`, the progress lines, the
 * report and the dashboard all read a kernel's speedup through
 * SG_STORE_FIGURES_SQL, so that they name one number per kernel and the
 * measurement it came from. */
#define SG_STORE_FIGURE_EVAL_SQL                                                \
  "coalesce("                                                                   \
  "(SELECT p.id FROM evaluations p WHERE p.candidate_id = c.id"                 \
  " AND p.phase = 'profile' AND p.status = 'ok' AND p.speedup IS NOT NULL"      \
  " ORDER BY p.id DESC LIMIT 1),"                                               \
  "(SELECT v.id FROM evaluations v WHERE v.candidate_id = c.id"                 \
  " AND v.phase = 'validate' AND v.status = 'ok' AND v.speedup IS NOT NULL"     \
  " ORDER BY v.id DESC LIMIT 1))"

/* One row per candidate with a figure: candidate_id, workflow_id, source,
 * speedup, speedup_kind ("profile" or "validate": the phase that measured
 * it) and speedup_us (when that evaluation ended). */
#define SG_STORE_FIGURES_SQL                                                    \
  "SELECT c.id AS candidate_id, c.workflow_id AS workflow_id,"                  \
  " c.source AS source, f.speedup AS speedup, f.phase AS speedup_kind,"         \
  " f.ended_us AS speedup_us FROM candidates c"                                 \
  " JOIN evaluations f ON f.id = " SG_STORE_FIGURE_EVAL_SQL

/* The best figure of the workflow w.id (an outer row `w`), the earliest
 * kernel on a tie, as column COL of SG_STORE_FIGURES_SQL. */
#define SG_STORE_BEST_SQL(col)                                                  \
  "(SELECT b." col " FROM (" SG_STORE_FIGURES_SQL ") b"                         \
  " WHERE b.workflow_id = w.id ORDER BY b.speedup DESC, b.candidate_id LIMIT 1)"

/* A workflow's best kernel: {"candidate_id", "source", "speedup",
 * "speedup_kind"} of the candidate with the highest figure
 * (SG_STORE_FIGURES_SQL: the latest profile's speedup, else the latest
 * validation's), the earliest on a tie;
 * *out NULL when no candidate passed. The summary's best_speedup is its
 * speedup. */
int sg_store_workflow_best_json(sg_store *s, int64_t workflow_id, json_t **out,
                                sg_err *err);

/* What a workflow's generations spent: {"prompt", "completion", "cached",
 * "last_us" (the latest start or end recorded, 0 if none)}. */
int sg_store_workflow_usage_json(sg_store *s, int64_t workflow_id,
                                 json_t **out, sg_err *err);

/* The summary.json object (caller owns *out):
 *   {"e2e_s", "workflows": [{"task", "iterations", "best_speedup",
 *     "best_speedup_kind", "profiling_feedback", "early_terminations", "generations_main",
 *     "generations_spec", "answers_at_cap", "answers_at_cap_tokens",
 *     "deduplicated", "main_restarts"}], "utilization": {"validation", "profiling",
 *     "overall"}, "tokens": {"prompt", "completion", "cached", "uncached",
 *     "consumption" (common/sg_tokens.h defines these two),
 *     "prompt_estimated", "completion_estimated" (the part of each sum that
 *     is an estimate)}}
 * Definitions (the simulator's): iterations = iterations ended;
 * best_speedup = the largest figure of its kernels (SG_STORE_FIGURES_SQL;
 * null: none), best_speedup_kind = the phase that measured it;
 * profiling_feedback = candidates with an ok profile evaluation;
 * early_terminations = iterations that ended with reason "early";
 * generations_spec = speculative forks (spec generations but the answers
 * at the length cap); answers_at_cap = those answers, and
 * answers_at_cap_tokens the prompt and completion tokens they spent (in
 * the tokens too);
 * utilization = busy device seconds (device_intervals) over pool seconds
 * (devices x e2e_s), validation + profiling = overall; tokens summed over
 * all generations; e2e_s = run end - run start, or, while the run has not
 * ended, the latest time recorded - run start. SG_ESTATE without a run. */
int sg_store_summary_json(sg_store *s, json_t **out, sg_err *err);

#endif
