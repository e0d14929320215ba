/* sg_cuda_ahead.h: cuda validation runners started ahead of their
 * candidates.
 *
 * A validation run (specgen-cuda-run) spends most of its fixed cost before
 * the candidate matters: three processes each make a CUDA context, the
 * judge allocates and maps every buffer, and the reference's server loads
 * cuBLAS. A process that validates candidates one after another (the GPU
 * check, a `specgen bench` device loop, a device worker of `specgen run`)
 * keeps runners started ahead on each device, one for each of the tasks
 * and options it validated last: when the next candidate of such a task
 * comes, its runner only loads it and runs. Each
 * candidate still gets fresh processes of its own (the judge, both servers):
 * nothing a candidate did reaches the next one.
 *
 * The next runner is started when the current one says it is ready, so
 * its start-up (and its one warm-up call of the reference) overlaps the
 * current candidate's run but not the current runner's own start-up. A
 * caller that knows the two runs after the current one says so
 * (sg_cuda_ahead_expect, then sg_cuda_ahead_expect_then): both their
 * runners are started then, at once, each unless it is waiting already, so
 * that a runner whose start-up takes longer than one run (a kernelbench
 * judge's import of PyTorch, seconds, beside validations of under two) has
 * two runs' time and the next run never waits for it. One
 * evaluation at a time per process (not thread-safe), as the evaluators
 * are.
 *
 * Off unless the process says it validates a sequence (sg_cuda_ahead_use):
 * a process that evaluates one candidate and exits would start a runner
 * for nothing. SPECGEN_CUDA_AHEAD=0 turns it off even then; =N keeps
 * runners for up to N tasks per device (default 4), since the tasks of a
 * run take turns on its devices.
 */
#ifndef SG_CUDA_AHEAD_H
#define SG_CUDA_AHEAD_H

#include "common/sg_error.h"
#include "eval/sg_sandbox.h"

#include <stdbool.h>
#include <stdint.h>

/* How many runs after the current one a caller may expect
 * (sg_cuda_ahead_expect, then sg_cuda_ahead_expect_then). */
#define SG_CUDA_AHEAD_DEPTH 2

/* What a runner is started for: everything on its command line. */
typedef struct sg_cuda_ahead_key {
  const char *runner, *task_dir, *ref_so;
  int device, trials, warmup, timed;
  bool strict;
} sg_cuda_ahead_key;

/* Says that this process validates candidates one after another (on: start
 * runners ahead), or no longer (off: and ends those running). */
void sg_cuda_ahead_use(bool on);

/* How many runners, each for another task or options, a device keeps
 * started ahead: 0 unless sg_cuda_ahead_use said so; then
 * $SPECGEN_CUDA_AHEAD when it is a number (0: none), else 4. */
int sg_cuda_ahead_per_device(void);

/* Whether runners are started ahead: sg_cuda_ahead_per_device() > 0. */
bool sg_cuda_ahead_enabled(void);

/* Validates cand_so with seed on a runner for key: the one started ahead
 * when it matches, else a new one; then starts the next ahead. lim gives
 * the sandbox (its wall_s bounds the run from the go; its work_dir is
 * ignored: a runner started ahead has a scratch directory of its own).
 * *ahead says whether the runner had been started ahead. Returns 0 with the
 * outcome filled (however the runner ended), negative when none could be
 * started. */
int sg_cuda_ahead_run(const sg_cuda_ahead_key *key, const char *cand_so, uint64_t seed,
                      const sg_sandbox_limits *lim, sg_sandbox_outcome *out, bool *ahead,
                      sg_err *err);

/* The same for any program that speaks the go protocol (the kernelbench
 * judge too: `--go-fd`, docs/gpu.md): argv is its whole command line, its
 * go descriptor (SG_SANDBOX_PASS_FD(0)) named in it and neither the
 * candidate nor the seed; the runner started ahead for the same device and
 * argv is used, and the next one started. cand goes in the go line. */
int sg_cuda_ahead_run_argv(int device, char *const argv[], const char *cand, uint64_t seed,
                           const sg_sandbox_limits *lim, sg_sandbox_outcome *out,
                           bool *ahead, sg_err *err);

/* The same as sg_cuda_ahead_run_argv, but no runner is started after it
 * (nor is the caller's sg_cuda_ahead_expect used up): for a profile, whose
 * replays no other runner's start-up may share the device with, and whose
 * runners the caller starts when it knows a profile comes
 * (sg_cuda_ahead_start_argv). */
int sg_cuda_ahead_run_once_argv(int device, char *const argv[], const char *cand,
                                uint64_t seed, const sg_sandbox_limits *lim,
                                sg_sandbox_outcome *out, bool *ahead, sg_err *err);

/* Starts a runner for argv on device now, unless one is started already
 * (the device's least recently asked-for runner makes room, as for any
 * other). Nothing when runners ahead are off. Returns 0, or negative when
 * it could not be started. */
int sg_cuda_ahead_start_argv(int device, char *const argv[], const sg_sandbox_limits *lim,
                             sg_err *err);

/* Says which runner the next candidate will want, when the caller knows
 * it (a bench's next task, the first example of a check's next task): when
 * the next run says it is ready, that runner is started instead of another
 * for the run's own key (none, if one for it is waiting already). Good for
 * the next run only; nothing when runners ahead are off. */
void sg_cuda_ahead_expect(const sg_cuda_ahead_key *key, const sg_sandbox_limits *lim);
/* The same for a runner named by its whole command line
 * (sg_cuda_ahead_run_argv's argv). */
void sg_cuda_ahead_expect_argv(int device, char *const argv[], const sg_sandbox_limits *lim);
/* Says that no candidate the caller knows of comes next (a bench's last
 * task): the next run starts no runner ahead. */
void sg_cuda_ahead_expect_none(void);

/* on: the expectations set from here on (sg_cuda_ahead_expect*) come after
 * those set already, instead of replacing them, up to SG_CUDA_AHEAD_DEPTH
 * runs ahead of the current one and no more per device than
 * sg_cuda_ahead_per_device (extra ones are not started; expect_none is
 * ignored). off: back to replacing.
 * Expectations still hold for the next run only. */
void sg_cuda_ahead_expect_then(bool on);

/* How long the last run (sg_cuda_ahead_run*) waited from its go until its
 * runner took it ('G'): the rest of the runner's start-up where the go came
 * before it was ready, about 0 where it was. 0 when it never took it. */
double sg_cuda_ahead_last_wait_s(void);

/* Ends every runner started ahead (at exit, or when the device is needed
 * whole). */
void sg_cuda_ahead_release(void);

/* How many runners started ahead this process holds now, on any device
 * (each a judge with its contexts, and the kernelbench judge its shared
 * inputs: memory the candidate running beside it cannot have). */
int sg_cuda_ahead_live(void);

/* Waits, at most limit_s in all, until every runner started ahead is ready
 * (it has its context, buffers and warm reference, and runs nothing until
 * its go); one that is not ready by then, or that died, is ended. Before
 * ncu: an idle runner may share the device with the profiled kernel's
 * replays, one still starting may not. The runners stay for the next
 * candidates. */
void sg_cuda_ahead_settle(double limit_s);

#endif
