/* sg_cuda_runner.c: specgen-cuda-run, the program the cuda evaluator runs in
 * a sandboxed child (and under ncu when profiling).
 *
 *   specgen-cuda-run --task DIR --cand CAND.so --ref REF.so
 *                    [--mode validate|profile] [--device N] [--trials N]
 *                    [--warmup N] [--timed N] [--seed N] [--strict]
 *   specgen-cuda-run --task DIR --ref REF.so --go-fd FD [...]
 *
 * With --go-fd it is started ahead of its candidate: it makes what needs
 * no candidate (validate mode: its servers, contexts and buffers, the
 * reference loaded; profile mode, under ncu: its context and buffers), then
 * reads "SEED PATH\n" from FD and validates or profiles the candidate at
 * PATH with that seed (sg_cuda_harness.h; docs/gpu.md, "Runners started
 * ahead").
 *
 * It writes one JSON object (sg_cuda_harness.h) to the file descriptor named
 * by $SG_RESULT_FD (the sandbox's result pipe), or to stdout without it,
 * closes it (the verdict is out before the judge's servers end), and exits 0
 * when it could write it. It links only libc, libdl, libm and a static
 * jansson, so it runs on GPU machines that lack specgen's other libraries. */
#include "eval/sg_cuda_harness.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f, "usage: specgen-cuda-run --task DIR --cand CAND.so --ref REF.so\n"
             "         [--mode validate|profile] [--device N] [--trials N]\n"
             "         [--warmup N] [--timed N] [--seed N] [--strict]\n"
             "       specgen-cuda-run --task DIR --ref REF.so --go-fd FD [...]\n");
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"task", required_argument, NULL, 't'},  {"cand", required_argument, NULL, 'c'},
      {"ref", required_argument, NULL, 'r'},   {"mode", required_argument, NULL, 'm'},
      {"device", required_argument, NULL, 'd'}, {"trials", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'}, {"timed", required_argument, NULL, 'i'},
      {"seed", required_argument, NULL, 's'},  {"strict", no_argument, NULL, 'S'},
      {"go-fd", required_argument, NULL, 'g'},
      {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
  };
  const char *task_dir = NULL;
  sg_cuda_harness_cfg cfg = {.mode = SG_CUDA_MODE_VALIDATE, .trials = 3,
                             .warmup = 10, .timed = 40, .seed = 1,
                             .go_fd = -1};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 't': task_dir = optarg; break;
    case 'c': cfg.cand_so = optarg; break;
    case 'r': cfg.ref_so = optarg; break;
    case 'm':
      if (strcmp(optarg, "validate") == 0)
        cfg.mode = SG_CUDA_MODE_VALIDATE;
      else if (strcmp(optarg, "profile") == 0)
        cfg.mode = SG_CUDA_MODE_PROFILE;
      else {
        fprintf(stderr, "specgen-cuda-run: --mode: expected validate or profile\n");
        return 2;
      }
      break;
    case 'd': cfg.device = atoi(optarg); break;
    case 'n': cfg.trials = atoi(optarg); break;
    case 'w': cfg.warmup = atoi(optarg); break;
    case 'i': cfg.timed = atoi(optarg); break;
    case 's': cfg.seed = strtoull(optarg, NULL, 0); break;
    case 'S': cfg.strict = true; break;
    case 'g': cfg.go_fd = atoi(optarg); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  bool ahead = cfg.go_fd >= 0;
  /* both modes need the reference's library: its judge's kernels */
  if (!task_dir || !cfg.ref_so || (!cfg.cand_so && !ahead) || cfg.trials < 1 ||
      cfg.warmup < 0 || cfg.timed < 1) {
    usage(stderr);
    return 2;
  }
  sg_err err;
  sg_err_clear(&err);
  sg_task *task = NULL;
  json_t *out;
  if (sg_task_load(task_dir, &task, &err)) {
    out = json_pack("{s:s, s:s}", "status", "infra_error", "message", err.msg);
  } else {
    cfg.task = task;
    out = sg_cuda_harness_run(&cfg);
  }
  char *text = json_dumps(out, JSON_COMPACT);
  int fd = 1;
  const char *e = getenv("SG_RESULT_FD");
  if (e && *e)
    fd = atoi(e);
  size_t len = strlen(text), off = 0;
  while (off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w <= 0)
      return 3;
    off += (size_t)w;
  }
  if (fd == 1)
    (void)!write(1, "\n", 1);
  else
    close(fd); /* the result is complete: a sandbox may end the run here */
  sg_cuda_harness_end();
  /* The process ends here: the context, the candidate's memory and its
   * libraries go with it, whatever state the candidate left them in. */
  _exit(0);
}
