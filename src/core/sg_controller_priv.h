/* sg_controller_priv.h: the controller's state, shared by its files.
 *
 * The controller is one state struct and the files that act on it:
 *   sg_controller.c      Algorithm 1 of the paper: iterations, forks,
 *                        candidates, the termination criterion, events
 *   sg_controller_api.c  options, lifecycle, resuming, names, stats
 *   sg_ctl_restart.c     a main the model server cut, sent again
 *   sg_ctl_answer.c      what forks and the answer at the cap emit; the
 *                        answer at the length cap (budget forcing)
 *   sg_policy.[ch]       the interface of the policies beyond the paper
 *                        and the one table of them
 *   sg_pol_*.c           one policy each (sg_policy.h lists them)
 * Nothing here is part of the public API (sg_controller.h).
 */
#ifndef SG_CONTROLLER_PRIV_H
#define SG_CONTROLLER_PRIV_H

#include "core/sg_controller.h"

#include "common/sg_buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a candidate's evaluation stands. */
typedef enum cand_state {
  CAND_NONE,        /* no source: nothing to evaluate */
  CAND_VALIDATING,
  CAND_PROFILING,
  CAND_DONE,
  CAND_DROPPED,     /* its iteration ended first */
} cand_state;

/* Layout: what a fork's events read (id, kind, live, candidate, usage,
 * prefix) in the first cache line; the main generation's text and scanner
 * after. */
typedef struct gen {
  uint64_t id;
  sg_gen_kind kind;
  bool live;                 /* still generating */
  bool failed;
  bool answer;               /* spec: the answer at the length cap of its
                                parent, not a fork (fork counts skip it) */
  uint64_t candidate;        /* after it finished: its kernel, 0 none */
  uint64_t provisional;      /* completion tokens counted from chunks */
  uint64_t prefix_len;       /* spec: where it was forked */
  uint64_t parent;           /* spec: the main generation */
  size_t prompt_index;
  sg_buf content;
  sg_buf reasoning;          /* main only */
  sg_scanner *scanner;       /* main only */
  uint64_t last_fork_prefix; /* main: prefix of the last fork, 0 none */
  uint64_t last_withheld;    /* main: prefix of the last fork the budget's
                                cap withheld (counted), 0 none */
  uint32_t restarts;         /* main: tries the model server cut */
  uint64_t answer_gen;       /* main: its answer at the length cap, 0 none */
} gen;

/* Layout: what every event reads (state, the generations, the capacity,
 * the token count, the candidates) first and together; the plan (5 KB of
 * prompts, read once per iteration) last. A thousand workflows' controllers
 * do not fit the caches, so each cache line an event touches is a miss.
 * The fields after `plan` belong to one policy each (sg_policy.h). */
struct sg_controller {
  sg_ctl_state state;
  uint32_t iteration;
  gen *gens;                 /* this iteration's generations, by id: the
                                mains first (start_iteration), then the
                                forks, ids consecutive (see ctl_find_gen) */
  size_t ngens, capgens;
  size_t nmain;              /* gens[0..nmain) are the main generations */
  int nlive_forks;           /* forks of gens[] still generating */
  uint64_t next_gen;
  size_t iter_first_kernel;  /* history index where this iteration began */
  size_t compact_from;       /* history index sg_history_compact goes on
                                from (refine only; 0 otherwise) */
  bool compact;              /* the search is refine: compact the history */
  int iter_forks;
  uint64_t valid_prefix[SG_CTL_GATE_WINDOW]; /* prefixes of recent valid
                                forks (sg_policy.c: the gate and the
                                cutoff learn from them) */
  int nvalid_prefix, valid_prefix_next;
  bool iter_valid;           /* sg_pol_cutoff.c: a kernel of this
                                iteration validated */
  sg_history hist;
  uint8_t *cand;             /* cand_state by kernel id - 1 */
  size_t capcand;
  size_t nevaluating;        /* candidates VALIDATING or PROFILING (all of
                                this iteration: its end drops them) */
  sg_sched_capacity cap;
  uint64_t tokens;           /* spent, provisional included */
  int64_t restored_wall_us;  /* wall time spent before a resume */
  sg_ctl_opts o;
  sg_ctl_stats st;
  sg_search_plan plan;
  uint64_t pending_accept;   /* sg_pol_siblings.c: a kernel accepted at
                                validation, waiting for its sibling forks
                                (0: none) */
  gen det;                   /* sg_pol_cutoff.c (cutoff_detach): a main of
                                an ended iteration still generating (live),
                                its answer text only */
  gen ahead;                 /* sg_pol_ahead.c: the next iteration's main,
                                started early (id 0: none); not live once
                                it finished */
  uint64_t ahead_base;       /* the best kernel when its prompt was made */
  int ahead_trigger;         /* the class of the last trigger its text
                                held while ahead, -1 none */
  sg_prompt ahead_prompt;
};

/* ---- shared by the controller's files (sg_controller.c) ------------------- */

/* The one door for state changes (docs/style.md rule 13). */
void ctl_set_state(sg_controller *c, sg_ctl_state to);

/* Appends an action of this iteration. */
sg_ctl_action *ctl_emit(sg_controller *c, sg_ctl_actions *out,
                        sg_ctl_action_type type);

/* The generation of this iteration with this id, or NULL. */
gen *ctl_find_gen(sg_controller *c, uint64_t id);
/* A slot at the end of gens[], uninitialised (it may move gens[]). */
gen *ctl_append_gen(sg_controller *c);
/* g's text buffers (and a main's scanner), empty. */
void ctl_gen_init_bufs(sg_controller *c, gen *g);
/* Frees what ctl_gen_init_bufs made and zeroes g. */
void ctl_gen_free_bufs(gen *g);
/* Frees the iteration's generations (forks still live give their fork
 * budget back). */
void ctl_free_gens(sg_controller *c);
/* A generation of gens[] stops generating (finished, failed, cancelled). */
void ctl_gen_stopped(sg_controller *c, gen *g);
/* Final usage replaces what the chunks counted. */
void ctl_count_usage(sg_controller *c, gen *g, const sg_usage *u);
/* Sends main generation g again in its iteration, its text and scanner
 * anew (sg_ctl_restart.c). */
void ctl_restart_main(sg_controller *c, gen *g, sg_ctl_actions *out);

cand_state ctl_cand_get(const sg_controller *c, uint64_t id);
void ctl_cand_set(sg_controller *c, uint64_t id, cand_state st);

/* A generation ended with text: its candidate is extracted and submitted. */
void ctl_take_candidate(sg_controller *c, gen *g, const char *text, size_t len,
                        sg_ctl_actions *out);
/* GEN_FINISHED of g, which no longer generates: its usage counted, its
 * answer (the event's text, else the content streamed) taken. */
void ctl_take_answer(sg_controller *c, gen *g, const sg_ctl_event *ev,
                     sg_ctl_actions *out);
/* Ends the iteration when every main generation is resolved (step 6). */
int ctl_maybe_fallback(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                       sg_err *err);
/* Ends the iteration and starts the next (or ends the workflow). */
int ctl_end_iteration(sg_controller *c, int64_t now_us, sg_ctl_reason reason,
                      sg_ctl_actions *out, sg_err *err);
/* Starts the next iteration (or lets a policy start it). */
int ctl_start_iteration(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                        sg_err *err);
/* sg_ctl_answer.c: a DECISION about main m (its id; NAN speedups, no candidate). */
sg_ctl_action *ctl_emit_decision(sg_controller *c, sg_ctl_actions *out,
                                 sg_ctl_reason reason, int64_t now_us,
                                 const gen *m, uint64_t prefix_len, int k,
                                 int trigger);
/* START_GEN of g of this iteration's plan (thinking on for a main). */
sg_ctl_action *ctl_emit_start(sg_controller *c, sg_ctl_actions *out, const gen *g);
/* START_GEN of g, thinking off, continuing g->prefix_len bytes of main m's
 * reasoning (a fork, or the answer at the length cap). */
sg_ctl_action *ctl_emit_start_spec(sg_controller *c, sg_ctl_actions *out,
                                   const gen *g, const gen *m);
/* Budget forcing (sg_ctl_opts.answer_at_cap): main m,
 * which just finished with event ev and whose answer was taken, is
 * answered from all its reasoning when it was cut by max tokens with no
 * kernel. */
void ctl_answer_at_cap(sg_controller *c, gen *m, const sg_ctl_event *ev,
                       sg_ctl_actions *out);
/* Forks K speculative generations from main m at prefix_len (step 3). */
void ctl_fork_from(sg_controller *c, gen *m, uint64_t prefix_len,
                   sg_ctl_reason reason, int trigger, int64_t now_us,
                   sg_ctl_actions *out);
/* The criterion accepted kernel k measured at speedup against view:
 * DECISION early, then the iteration ends. */
int ctl_accept_early(sg_controller *c, const sg_kernel *k, double speedup,
                     const sg_termination_history *view, int64_t now_us,
                     sg_ctl_actions *out, sg_err *err);
/* The budget the workflow has spent, or SG_REASON__COUNT while none is. */
sg_ctl_reason ctl_budget_spent(const sg_controller *c, int64_t now_us,
                               bool at_boundary);
void ctl_workflow_done(sg_controller *c, int64_t now_us, sg_ctl_reason reason,
                       sg_ctl_actions *out);

#endif
