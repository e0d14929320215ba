/* sg_sim_priv.h: the simulated runtime's state, shared by its event loop
 * (sg_sim.c) and its models (sg_sim_models.c). Private to src/sim. */
#ifndef SG_SIM_PRIV_H
#define SG_SIM_PRIV_H

#include "config/sg_knobs.h"
#include "core/sg_controller.h"
#include "core/sg_interp.h"
#include "core/sg_scheduler.h"
#include "core/sg_server_load.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"
#include "sim/sg_sim.h"
#include "sim/sg_sim_llm.h"
#include "sim/sg_sim_queue.h"
#include "sim/sg_sim_rng.h"
#include "sim/sg_sim_streams.h"

#include <stdbool.h>
#include <stdint.h>


enum {
  EV_CHUNK,       /* owner workflow, id gen: stream the next chunk */
  EV_GEN_END,     /* owner workflow, id gen: finish or fail */
  EV_COMPILE_END, /* id req */
  EV_DEVICE_END,  /* id req */
  EV_EVAL_FAIL,   /* owner workflow, id candidate, epoch phase: infra error */
  EV_TICK,        /* owner workflow */
};

/* Streams of random numbers (sg_sim_rng_seed's stream argument). The task
 * stream is shared by every configuration, so they face the same tasks. */
enum { RNG_TASK = 1, RNG_WORKFLOW = 1000, RNG_DEVICE = 2000000 };
#define RNG_MAIN (1ull << 62)

/* Layout: two cache lines, the ring aligned to them (a thousand workflows'
 * rings do not fit the caches, so each line an event touches is a miss).
 * The first holds what a lookup, a tick's or a chunk's delivery and an
 * ending read (identity, epoch, kind, times, the text and how much of it
 * was sent); the second the model's numbers, read at the start and the
 * end. */
typedef struct sim_gen {
  uint64_t id;          /* which generation holds this slot of the ring */
  uint16_t epoch;       /* 1 while it runs, 0: ended; events carry it */
  bool used;
  uint8_t kind;         /* sg_gen_kind */
  bool fails;           /* ends in GEN_FAILED at end_us */
  bool valid;
  bool prefix_useful;   /* main: forks past the threshold can be valid */
  int64_t t0_us, end_us, reason_end_us;
  uint64_t reason_bytes, sent_bytes;
  char *text;           /* main: the planned reasoning text */
  /* second line */
  double speedup;       /* the kernel it converges to */
  double rate;          /* its decode rate, tokens/s */
  double reason_tokens, answer_tokens;
  double prompt_tokens, cached_tokens;
  union {
    double own_tokens;  /* spec: tokens in the server's working set */
    double threshold;   /* main: the prefix fraction past which its forks
                           can be valid (its first kernel, or its task's) */
  };
  int32_t server;       /* its LLM server (sg_sim_llm) */
  int32_t fail_status;  /* sg_eval_status */
} __attribute__((aligned(64))) sim_gen;

_Static_assert(sizeof(sim_gen) == 128, "a generation's slot is two cache lines");

typedef struct sim_wf {
  sg_controller *ctl;
  sg_search *search;
  sg_termination *term;
  sg_sim_rng rng;
  double threshold;     /* shortest useful prefix, fraction of the trace */
  double task_speed;    /* median from-scratch speedup of this task */
  double no_prefix_p;   /* a fork before the threshold is valid */
  /* Generations in a ring indexed by id mod ngens (a power of two): only
   * the current iteration's can still be reached (the boundary aborts the
   * ended iteration's requests, and its generations were cancelled), so
   * older slots are reused and memory stays bounded by one iteration's
   * forks, not the campaign's (a thousand workflows fork millions). */
  sim_gen *gens;
  size_t ngens;
  uint64_t keep_from;   /* the current iteration's first generation id, or
                           an older detached main's (below) */
  uint64_t iter_first;  /* the current iteration's first generation id */
  uint32_t keep_iter;
  bool keep_set;
  bool done;
  int64_t done_us;
  uint64_t main_gen;    /* the live main generation, 0: none */
  uint64_t ahead_gen;   /* a main started ahead for the next iteration
                           (sg_ctl_opts.next_ahead), 0: none */
  uint32_t cur_iter;    /* the iteration the workflow is in */
  uint64_t detached;    /* a main of an ended iteration still generating
                           (sg_ctl_opts.cutoff_detach), 0: none */
} sim_wf;

typedef struct sim_replay sim_replay; /* a recorded world (sg_sim_replay.c) */

typedef struct sim_req {
  sg_req_id id;         /* which request holds this slot of the ring */
  uint32_t workflow;
  uint64_t candidate;
  uint64_t gen;
  sg_phase phase;
  uint64_t epoch;       /* bumped on every start and on abort */
  bool live;
} sim_req;

typedef struct sim {
  const sg_sim_params *p;
  const sg_sim_variant *v;
  sg_knobs knobs;       /* the core's knobs, from p and v (sim_knobs) */
  sg_sim_result *res;
  sg_err *err;
  sg_search_registry sreg;
  sg_termination_registry treg;
  sg_scheduler *sched;
  sim_wf *wf;
  sim_req *reqs;
  size_t nreqs;
  int64_t *dies_us;     /* per device; INT64_MAX: never */
  sg_sim_queue q;
  sg_interp *it;        /* executes the core's actions (sg_interp.h) */
  int64_t now_us;
  /* Where device time goes (sg_sim_result.idle_*): devices running a
   * request now, and the time the counts below reach. */
  int running;
  int64_t idle_us;
  double bpt;           /* text bytes per token */
  sg_sim_llm *llm;      /* servers and prefix caches */
  sg_fork_budget *budgets; /* per server (llm.server_streams); NULL: none */
  const sg_sim_streams *streams; /* the measured stream model; NULL: none */
  sg_sim_streams streams_data;
  void (*trace)(void *data, const char *line);
  void *trace_data;
  sim_replay *rp;       /* a replay's record; NULL: the models */
  sg_interp_ops ops;    /* the interpreter's ops (it keeps a pointer) */
} sim;

#define GEN_ID_MAX (1u << 22)
#define REQ_ID_MAX (1u << 26)

/* Seconds to virtual microseconds, at least 1. */
int64_t sim_s_to_us(double s);
/* Schedules an event (never in the past). */
void sim_push(sim *s, int64_t t_us, int type, uint32_t owner, uint64_t id,
              uint64_t epoch);
/* Generation id of workflow w (create: grow the table); NULL if unknown. */
sim_gen *sim_gen_get(sim *s, uint32_t w, uint64_t id, bool create);
/* Request record of a scheduler id (create: grow the table). */
sim_req *sim_req_get(sim *s, sg_req_id id, bool create);

/* The models (sg_sim_models.c): a main or speculative generation starts
 * (draws its length, text, kernel and schedules its events), the completion
 * tokens it has produced by now, and its ending. */
int sim_start_main(sim *s, uint32_t w, const sg_ctl_action *a);
int sim_start_spec(sim *s, uint32_t w, const sg_ctl_action *a);
double sim_tokens_so_far(const sim *s, const sim_gen *g);
void sim_end_gen(sim *s, sim_gen *g, double completion);

/* The campaign's loop (sg_sim.c) with the world given by rp (NULL: the
 * models); tasks: per workflow {language, entry} for the controllers (NULL:
 * the simulated kernel's). */
int sim_campaign(const sg_sim_params *p, const sg_sim_variant *v, sim_replay *rp,
                 const sg_knobs *knobs, const char *const *const *lang_entry,
                 void (*trace)(void *data, const char *line), void *trace_data,
                 sg_sim_result *out, sg_err *err);

/* A replay's world (sg_sim_replay.c), called by the loop where the models'
 * code would run. Each returns 0 or < 0 with s->err set. */
int simrp_gen_start(sim *s, uint32_t w, const sg_ctl_action *a);
void simrp_gen_cancel(sim *s, uint32_t w, uint64_t gen, bool *was_main);
int simrp_on_chunk(sim *s, const sg_sim_event *e);
int simrp_on_gen_end(sim *s, const sg_sim_event *e);
int simrp_submit(sim *s, uint32_t w, const sg_ctl_action *a, bool *answered);
int simrp_joined(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id leader,
                 uint64_t leader_cand);
int simrp_submitted(sim *s, uint32_t w, const sg_ctl_action *a, sg_req_id id);
int64_t simrp_stage_us(sim *s, sg_req_id id, bool compile);
bool simrp_compile_ok(sim *s, sg_req_id id);
int simrp_deliver(sim *s, sim_req *q, bool compile);
void simrp_abort(sim *s, sg_req_id id);
void simrp_refused(sim *s, uint32_t w, const sg_ctl_action *a);
void simrp_iteration_end(sim *s, uint32_t w, const sg_ctl_action *a, bool main_cancelled);
void simrp_finish(sim *s);
/* Where an interrupted record ends (0: the record ended): the loop stops
 * there and calls simrp_interrupt, as the live run was stopped. */
int64_t simrp_stop_us(const sim *s);
void simrp_interrupt(sim *s);
/* A record the run was resumed from after a stop: the stop simrp_stop_us
 * gives is followed by a resume at simrp_resume_us (0: none, the record
 * ends there). The loop calls simrp_stop_for_resume at the stop, then
 * begins the resumed run (fresh controllers, restored) at the resume. */
int64_t simrp_resume_us(const sim *s);
void simrp_stop_for_resume(sim *s);
/* On the record's clock, workflow w's ticks are the record's (its
 * idle-device forks and cutoffs), scheduled here (w UINT32_MAX: none, only
 * the answer): true; else false, and the loop ticks every tick_s. */
bool simrp_ticks(sim *s, uint32_t w);
/* The recorded fork budget caps: whether they apply (the budget is built
 * for them), and those due by now applied to it. */
bool simrp_fork_caps_on(const sim *s);
void simrp_fork_caps(sim *s);

#endif
