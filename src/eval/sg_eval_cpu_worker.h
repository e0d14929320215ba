/* sg_eval_cpu_worker.h: the protocol between the cpu evaluator's judge
 * (sg_eval_cpu_judge.c, trusted) and its worker (sg_eval_cpu_worker.c, the
 * process that runs one kernel in the sandbox).
 *
 * The judge writes one byte 'c' on the command pipe per call; the worker
 * calls the kernel once and writes 'd' on the reply pipe. 'R' on the reply
 * pipe means loaded and ready. Anything else on the command pipe, or its
 * end, makes the worker exit. Nothing the worker writes is believed: a
 * reply only tells the judge when to look, and the judge looks itself.
 */
#ifndef SG_EVAL_CPU_WORKER_H
#define SG_EVAL_CPU_WORKER_H

#include "eval/sg_sandbox.h"

/* argv[0] that makes this executable a worker. */
#define SG_EVAL_WORKER_NAME "specgen-eval-worker"
/* The call shim's name in every built shared object. */
#define SG_WORKER_SHIM "specgen_call__"

/* The descriptors it finds (sg_sandbox_limits.pass_fds, in this order). */
#define SG_WORKER_CMD_FD SG_SANDBOX_PASS_FD(0)
#define SG_WORKER_REPLY_FD SG_SANDBOX_PASS_FD(1)
#define SG_WORKER_IN_FD SG_SANDBOX_PASS_FD(2)
#define SG_WORKER_OUT_FD SG_SANDBOX_PASS_FD(3)

/* The exit code of a worker whose kernel called abort(). */
#define SG_WORKER_ABORT_CODE 134

/* Defined by the worker's file; referenced so that linking the evaluator
 * links the worker (and its constructor) into every program. */
extern const char sg_eval_cpu_worker_name[];

#endif
