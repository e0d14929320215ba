/* cmd_worker.c: `specgen worker`: a long-lived process that owns one device
 * and evaluates candidates it receives as JSON lines on stdin, replying as
 * JSON lines on stdout (docs/protocol.md); with --compile-only it holds no
 * device and only compiles, into the shared build cache. */
#include "cli/commands.h"

#include "common/sg_alloc.h"
#include "runtime/sg_jsonl.h"
#include "runtime/sg_worker.h"
#include "runtime/sg_worker_proto.h"

#include <getopt.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen worker --device cpu:N|cuda:N [options]\n"
          "       specgen worker --compile-only --build-cache DIR [options]\n"
          "\n"
          "Serves evaluation requests for one device: reads JSON lines on stdin\n"
          "(validate, profile, compile, abort, ping, hello, shutdown) and writes\n"
          "JSON-lines replies on stdout; logs go to stderr (docs/protocol.md).\n"
          "Ends on shutdown or at the end of stdin. Exit status: 0 when it\n"
          "served and ended; 2 for bad usage (a bad device); 1 when it could\n"
          "not serve.\n"
          "\n"
          "  --device DEV       cpu:N (a core this process may use) or cuda:N\n"
          "  --compile-only     hold no device: serve compile requests only\n"
          "                     (for every evaluator), refuse validate and\n"
          "                     profile; not with --device\n"
          "  --build-cache DIR  the build cache shared by a host's workers:\n"
          "                     compile stores builds there, validate and\n"
          "                     profile use a stored build instead of compiling\n"
          "  --work-dir DIR     where scratch directories go (default $TMPDIR)\n"
          "  --json-errors    also write a usage or startup error as one\n"
          "                   {\"type\":\"error\",\"fatal\":true,...} line on stdout,\n"
          "                   for a supervisor that reads only stdout\n"
          "  -h, --help       this help\n");
}

static void fatal_line(bool json, const char *msg) {
  if (!json)
    return;
  sg_worker_reply r;
  sg_worker_reply_init(&r, SG_WREP_ERROR);
  r.message = sg_strdup(msg);
  r.fatal = true;
  json_t *j = sg_worker_reply_to_json(&r);
  char *line = sg_jsonl_line(j, NULL);
  fputs(line, stdout);
  fflush(stdout);
  free(line);
  json_decref(j);
  sg_worker_reply_free(&r);
}

static int fail(bool json, int code, const char *msg) {
  fprintf(stderr, "specgen worker: %s\n", msg);
  if (code == SG_EXIT_USAGE && !json) {
    fprintf(stderr, "\n");
    usage(stderr);
  }
  fatal_line(json, msg);
  return code;
}

int sg_cmd_worker(int argc, char **argv) {
  enum { O_DEVICE = 1000, O_WORKDIR, O_JSON_ERRORS, O_COMPILE_ONLY, O_BUILD_CACHE };
  static const struct option longopts[] = {
      {"device", required_argument, NULL, O_DEVICE},
      {"work-dir", required_argument, NULL, O_WORKDIR},
      {"json-errors", no_argument, NULL, O_JSON_ERRORS},
      {"compile-only", no_argument, NULL, O_COMPILE_ONLY},
      {"build-cache", required_argument, NULL, O_BUILD_CACHE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *device = NULL, *work_dir = NULL, *build_cache = NULL;
  bool json_errors = false, compile_only = false;
  /* --json-errors applies to errors in the flags before or after it */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--json-errors") == 0)
      json_errors = true;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case O_DEVICE: device = optarg; break;
    case O_WORKDIR: work_dir = optarg; break;
    case O_JSON_ERRORS: json_errors = true; break;
    case O_COMPILE_ONLY: compile_only = true; break;
    case O_BUILD_CACHE: build_cache = optarg; break;
    case 'h': usage(stdout); return SG_EXIT_OK;
    default: {
      char *msg = sg_asprintf("unknown or incomplete option '%s'", argv[optind - 1]);
      int rc = fail(json_errors, SG_EXIT_USAGE, msg);
      free(msg);
      return rc;
    }
    }
  }
  if (optind < argc) {
    char *msg = sg_asprintf("unexpected argument '%s'", argv[optind]);
    int rc = fail(json_errors, SG_EXIT_USAGE, msg);
    free(msg);
    return rc;
  }
  if (compile_only && device)
    return fail(json_errors, SG_EXIT_USAGE,
                "--compile-only and --device exclude each other: a compile "
                "worker holds no device");
  if (!device && !compile_only)
    return fail(json_errors, SG_EXIT_USAGE,
                "--device is required (or --compile-only)");
  if (build_cache && !*build_cache)
    return fail(json_errors, SG_EXIT_USAGE, "--build-cache: empty directory name");
  sg_err err;
  sg_err_clear(&err);
  const char *kind;
  if (!compile_only && sg_worker_device_check(device, &kind, &err) != 0) {
    char *msg = sg_asprintf("--device: %s", err.msg);
    int rc = fail(json_errors, SG_EXIT_USAGE, msg);
    free(msg);
    return rc;
  }
  sg_worker_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.device = device;
  cfg.in_fd = STDIN_FILENO;
  cfg.out_fd = STDOUT_FILENO;
  cfg.version = SG_VERSION;
  cfg.scratch_root = work_dir;
  cfg.compile_only = compile_only;
  cfg.build_cache = build_cache;
  /* A worker serves the process that started it: when that process dies
   * (even by SIGKILL), the worker gets SIGTERM, which it handles like a
   * shutdown (its evaluation aborted, its scratch removed), so no worker
   * outlives its runtime, even one whose stdin another process holds. */
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
  if (getppid() != parent)
    return SG_EXIT_OK; /* the parent died before the request took effect */
  fflush(stdout);
  if (sg_worker_serve(&cfg, &err) != 0)
    return fail(json_errors, SG_EXIT_FAILED, err.msg);
  return SG_EXIT_OK;
}
