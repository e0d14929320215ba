/* sg_cuda_harness.h: the device side of the cuda evaluator.
 *
 * Runs inside a sandboxed child process (specgen-cuda-run), never inside
 * specgen itself: it creates the CUDA context, loads the compiled reference
 * and candidate (shared objects exporting sg_launch, see sg_cuda_shim), checks
 * the candidate on fresh random inputs and times both. The outcome is a JSON
 * object (keys: docs/gpu.md) that the parent turns into an sg_eval_result;
 * only that object crosses the process boundary.
 */
#ifndef SG_CUDA_HARNESS_H
#define SG_CUDA_HARNESS_H

#include "eval/sg_task.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum sg_cuda_mode {
  SG_CUDA_MODE_VALIDATE,  /* correctness, then timing against the reference */
  SG_CUDA_MODE_PROFILE,   /* one warm-up, then one call between
                             cuProfilerStart/Stop, for ncu */
} sg_cuda_mode;

typedef struct sg_cuda_harness_cfg {
  const sg_task *task;
  const char *cand_so;
  const char *ref_so;      /* the reference; in profile mode only for the
                              judge's input generator (sg_judge_fill) */
  sg_cuda_mode mode;
  int device;              /* ordinal */
  int trials, warmup, timed;
  uint64_t seed;
  bool strict;             /* atol and rtol divided by 10 */
  /* A runner started ahead of its candidate: >= 0, the descriptor to read
   * the go from, a line "SEED PATH\n" (cand_so and seed come from it), once
   * what needs no candidate is ready (validate mode: the servers, the
   * judge's context and buffers and the reference; profile mode: the
   * context, the input generator and the buffers, under ncu); -1: start at
   * once with cand_so and seed. */
  int go_fd;
} sg_cuda_harness_cfg;

/* Parses a go line (without its newline): "SEED PATH", SEED a decimal
 * unsigned 64-bit number, PATH the rest (absolute, at most path_cap - 1
 * bytes). Returns 0, or -1 with the reason in msg. */
int sg_cuda_go_parse(const char *line, size_t len, uint64_t *seed, char *path,
                     size_t path_cap, char *msg, size_t msg_len);

/* Reads the go line from fd (blocking: the evaluator sends it when its
 * candidate is compiled) into *seed and path. Returns 0, or -1 with the
 * reason in msg (EOF: the evaluator let this runner go unused). */
int sg_cuda_go_read(int fd, uint64_t *seed, char *path, size_t path_cap, char *msg,
                    size_t msg_len);

/* Runs and returns the outcome object (status, message, timings, errors);
 * never NULL. The caller owns it. */
json_t *sg_cuda_harness_run(const sg_cuda_harness_cfg *cfg);

/* Ends what the run left to end after its outcome is written (the judge's
 * servers). */
void sg_cuda_harness_end(void);

#endif
