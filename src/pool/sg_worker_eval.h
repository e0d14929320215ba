/* sg_worker_eval.h: the worker's evaluation process (docs/protocol.md).
 *
 * A worker evaluates in one long-lived process of its own, forked from it:
 * a process, not a thread, because the sandbox forks candidates and must be
 * called before any thread exists, and because a process can be killed at
 * once, whole. The worker writes each request into the request's scratch
 * directory (request.json, the task named as the worker loaded it) and the
 * directory's path as one line on a pipe; the process answers on another
 * pipe with {"compiled":{...}} (when it got that far) and {"result":{...}},
 * one line each, then waits for the next request. Because it lives on, a
 * cuda or kernelbench runner started ahead for one request
 * (sg_cuda_ahead.h) serves the next request of the same task.
 *
 * An abort of the request it runs is SIGUSR1 (sg_worker_eval_abort): the
 * sandbox kills what that request started and refuses to start more
 * (sg_sandbox_abort_install), the runners kept ahead for later requests
 * live on, and the request ends at once with some result, which the worker
 * drops. The process ends only by SIGKILL (an abort it did not answer in
 * time, after SG_WORKER_EVAL_MAX requests, the worker's end) or by itself
 * (a crash); everything it started dies with it (PR_SET_PDEATHSIG at every
 * level), and the worker removes its scratch directory (its TMPDIR: the
 * runners' directories and the compilers' temporaries). The next request
 * starts a fresh one.
 */
#ifndef SG_WORKER_EVAL_H
#define SG_WORKER_EVAL_H

#include "common/sg_error.h"
#include "eval/sg_task.h"
#include "pool/sg_worker.h"
#include "pool/sg_worker_proto.h"

#include <stdbool.h>
#include <sys/types.h>

/* Requests one process serves before the next starts fresh (bounds what a
 * leak can grow to); $SPECGEN_WORKER_EVAL_MAX overrides it. */
#define SG_WORKER_EVAL_MAX 500

typedef struct sg_worker_eval {
  const sg_worker_config *cfg;
  const char *kind;     /* the worker's: "cpu", "cuda" or "compile" */
  const char *root;     /* the worker's scratch directory */
  pid_t pid;            /* the process; 0: none */
  int req_fd;           /* request lines to it; -1: none */
  int res_fd;           /* its reply lines; -1: none. Poll it while pid > 0 */
  char *dir;            /* its scratch directory */
  unsigned long served; /* requests given to this process */
  unsigned long nstarted;
} sg_worker_eval;

void sg_worker_eval_init(sg_worker_eval *e, const sg_worker_config *cfg,
                         const char *kind, const char *root);

/* Gives a request to the process, starting one first when none runs (or
 * the one running has served its SG_WORKER_EVAL_MAX): req with its task
 * loaded from task (the name or directory the worker loaded it from), in
 * run_dir (which exists). Returns negative when it could not be handed on;
 * a process that dies before it answers shows as the end of res_fd. */
int sg_worker_eval_submit(sg_worker_eval *e, const sg_worker_request *req,
                          const char *task, const char *run_dir, sg_err *err);

/* Asks the process to stop the request it runs (SIGUSR1); it answers with
 * that request's result line soon after. Negative when it cannot be sent. */
int sg_worker_eval_abort(sg_worker_eval *e);

/* Whether the request in run_dir was never taken: the process reads and
 * removes its request.json first, so one that died while idle left it
 * there, and the request may go to a fresh process. */
bool sg_worker_eval_untaken(const char *run_dir);

/* Ends the process (SIGKILL, reaped) and removes its scratch directory.
 * *status (when given) gets its wait status: how it ended, also when it
 * had ended by itself. */
void sg_worker_eval_stop(sg_worker_eval *e, int *status);

/* Removes the scratch directory *dir (a failure is logged), frees the
 * name and sets it to NULL. */
void sg_worker_scratch_remove(char **dir);

/* Whether tasks of evaluator run on a worker of cfg and kind: every
 * evaluator on a compile worker, else those of the device's kind. */
bool sg_worker_evaluator_fits(const sg_worker_config *cfg, const char *kind,
                              const char *evaluator);

/* Loads a request's task as a worker of cfg and kind resolves its name (a
 * bare name on a cuda worker is the cuda task); refuses one whose
 * evaluator does not fit the worker. */
int sg_worker_load_task(const sg_worker_config *cfg, const char *kind,
                        const char *name, sg_task **out, sg_err *err);

#endif
