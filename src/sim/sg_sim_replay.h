/* sg_sim_replay.h: a recorded run replayed in virtual time (`specgen
 * replay DIR`).
 *
 * The simulator's event loop and action interpreter (sg_sim.c) drive the
 * real core as they do for a simulated campaign, but the outside world is
 * the record instead of the models: every generation the controllers start
 * is answered by a recorded one (DIR/llm.jsonl.gz, sg_replay.h), its chunks
 * delivered at their recorded times from its start (or, with the solo pace,
 * a main's chunks at the pace the record measured while no fork was live),
 * its usage and finish as recorded; every evaluation by the recorded one of
 * the same kernel (DIR/run.db), holding its compile slot and device for the
 * recorded time; the fork budget's cap as the live run measured it, each
 * recorded cap at its recorded time, while the options keep that budget
 * (docs/usage.md). The options are the caller's (`specgen replay` takes the
 * recorded run's, with its flags on top). Nothing depends on the
 * machine's timing, so the same record and options give the same decisions,
 * byte for byte, every time (docs/usage.md, "Replaying in virtual time").
 *
 * Rules where the record has no answer (counted in the result, never made
 * up): a main takes the recorded main of its task at the same iteration and
 * order (sg_replay_match's rule, with that recorded prompt standing for the
 * one the live run rendered; past the recorded iterations, the most similar
 * recorded main); a fork takes sg_replay_match's recorded fork (the one at
 * its prefix, else the nearest short of it), else fails; an evaluation of a
 * kernel the record never evaluated ends at once as an infrastructure error
 * "not in the record" (one extracted otherwise than the record's kernel of
 * the same generation, with that kernel's times). A kernel evaluated more
 * than once in the record (again after an infrastructure error) gets the
 * record's outcomes in turn. A record whose run never ended (interrupted)
 * is replayed up to where it was stopped, and no further.
 */
#ifndef SG_SIM_REPLAY_H
#define SG_SIM_REPLAY_H

#include "common/sg_error.h"
#include "config/sg_knobs.h"
#include "sim/sg_sim.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum sg_sim_replay_pace {
  SG_SIM_REPLAY_PACE_RECORDED, /* every chunk at its recorded time */
  SG_SIM_REPLAY_PACE_SOLO,     /* a main's chunks: each gap the record took
                                  while a fork was live becomes the mean gap
                                  it took while none was */
} sg_sim_replay_pace;

typedef enum sg_sim_replay_clock {
  SG_SIM_REPLAY_CLOCK_RELATIVE, /* each recorded span from when the replay
                                   starts it */
  SG_SIM_REPLAY_CLOCK_RECORDED, /* and no event sooner than the record had
                                   it (from the run's start): a generation's
                                   start, an evaluation's outcome */
} sg_sim_replay_clock;

typedef struct sg_sim_replay_opts {
  const char *dir;       /* the recorded run's directory */
  sg_sim_replay_pace pace;
  sg_sim_replay_clock clock;
  /* The options to replay under (the recorded run's, with the caller's
   * changes): the core's knobs and what `specgen run` sets beside them. */
  const sg_knobs *knobs;
  size_t ntask;          /* per task, its name (the record's), language and
                            entry (the controller's extraction) */
  const char *const *task, *const *language, *const *entry;
  int devices, compile_slots;
  uint64_t seed;
  const char *search, *termination;
  bool prompted;         /* reasoning: prompted (an unclosed thinking block is
                            the answer too, as the live run reads it) */
} sg_sim_replay_opts;

/* Runs the replay. *out is a JSON object (caller owns): the summary of a
 * live run (e2e_s, workflows[], utilization, tokens) labelled by its
 * "replay" object, and "decisions" per task (iteration ends, main
 * generations' completion tokens, evaluations). Errors: the record's or
 * the store's (naming the file). */
int sg_sim_replay_run(const sg_sim_replay_opts *o, json_t **out, sg_err *err);

#endif
