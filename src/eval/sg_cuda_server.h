/* sg_cuda_server.h: the processes that run code for the cuda evaluator's
 * judge.
 *
 * The judge (sg_cuda_validate.h) never runs the candidate's code in its own
 * address space: it starts one server process for the candidate and one for
 * the reference, each with its own CUDA context, before it initializes CUDA
 * itself. It allocates every buffer, hands each server CUDA IPC handles to
 * its own set, and for each call sends one byte; the server calls the
 * shared object's sg_launch on those buffers, synchronizes its whole
 * context (every stream) and answers with the CUDA status. The judge times
 * each call by its own clock around that round trip and reads the outputs
 * itself, so nothing the candidate's process computes or claims decides the
 * verdict: a server that answers early leaves outputs that the judge finds
 * incomplete. The reference runs behind the same protocol, so both sides
 * pay the same round trip.
 */
#ifndef SG_CUDA_SERVER_H
#define SG_CUDA_SERVER_H

#include "eval/sg_cuda_api.h"
#include "eval/sg_task.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sg_cuda_server {
  pid_t pid;
  int fd;           /* the judge's end of the socket pair; -1 when gone */
  const char *who;  /* "candidate" or "reference", for messages */
} sg_cuda_server;

/* Starts a server on device (fork; the child never returns). Call before
 * this process initializes CUDA. The server makes its context and maps the
 * judge's buffers at once; which library it runs is told only at
 * sg_cuda_server_load, so a judge can start its servers before it knows the
 * candidate (a runner started ahead, docs/gpu.md). keep_fd is closed in the
 * child (the judge's result pipe): the server has no way to answer for the
 * judge. Returns 0, or -1 with the reason in msg. */
int sg_cuda_server_start(sg_cuda_server *s, const char *who, int device, int keep_fd,
                         char *msg, size_t msg_len);

/* Sends the argument table: for each task argument its IPC handle (inputs
 * and outputs) or its value (scalars, 8 bytes). */
int sg_cuda_server_setup(sg_cuda_server *s, const sg_task *task,
                         const sg_CUipcMemHandle *handles, const void *scalars8,
                         char *msg, size_t msg_len);

/* Waits for the server's answer, twice: after setup (the buffers are
 * mapped) and after sg_cuda_server_load (the library is loaded). 0 ready;
 * otherwise the reason in msg and -1 (CUDA or the buffers failed), -2 (the
 * library did not load), -3 (the process died) or -4 (no answer within
 * limit_s). */
int sg_cuda_server_ready(sg_cuda_server *s, double limit_s, char *msg,
                         size_t msg_len);

/* The longest library path a server takes. */
#define SG_CUDA_SERVER_PATH_MAX 4096

/* Tells the server to load the library so (its code runs from then on). */
int sg_cuda_server_load(sg_cuda_server *s, const char *so, char *msg, size_t msg_len);

typedef enum sg_cuda_call_end {
  SG_CALL_DONE,     /* answered; *cu_rc is the server's CUDA status */
  SG_CALL_TIMEOUT,  /* no answer within the limit: the server is killed */
  SG_CALL_DIED,     /* the server ended (signal or exit) without answering */
} sg_cuda_call_end;

/* One call (nop: only synchronize, to measure the round trip), timed by this
 * process's monotonic clock from the request to the answer. */
sg_cuda_call_end sg_cuda_server_call(sg_cuda_server *s, bool nop, double limit_s,
                                     double *ms, int *cu_rc, char *msg,
                                     size_t msg_len);

/* Ends the n servers (asks all, then kills those still there after half
 * a second) and reaps them. */
void sg_cuda_server_stop(sg_cuda_server *const s[], size_t n);

#endif
