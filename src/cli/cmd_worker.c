/* cmd_worker.c: `specgen worker`: a long-lived process that owns one device
 * and evaluates candidates it receives as JSON lines on stdin, replying as
 * JSON lines on stdout (docs/protocol.md); with --compile-only it holds no
 * device and only compiles, into the shared build cache. */
#include "cli/cli_flags.h"
#include "cli/commands.h"

#include "common/sg_alloc.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_worker.h"
#include "pool/sg_worker_proto.h"
#include "remote/sg_remote.h"

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
          "       specgen worker --redis URL --run ID --device cpu:N|cuda:N [options]\n"
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
          "  --redis URL        serve run ID's requests through Redis instead of\n"
          "                     stdin (docs/remote.md); URL is\n"
          "                     redis://[USER:PASSWORD@]HOST[:PORT][/DB]\n"
          "  --run ID           the run served (its run directory's name)\n"
          "  --host NAME        this host's name in the run (gethostname)\n"
          "  --heartbeat-timeout S  a silence this long means this worker is\n"
          "                     lost (6)\n"
          "  --redis-timeout S  Redis unreachable this long ends the worker\n"
          "                     (exit 1, saying why; 30); a wrong password or\n"
          "                     no Redis at the start ends it at once\n"
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
  if (code == SG_EXIT_USAGE)
    sg_cli_usage_error("worker", "%s", msg);
  else
    fprintf(stderr, "specgen worker: %s\n", msg);
  fatal_line(json, msg);
  return code;
}

/* fail() of a usage error whose message the caller allocated (freed here). */
static int usage_failed(bool json, char *msg) {
  int rc = fail(json, SG_EXIT_USAGE, msg);
  free(msg);
  return rc;
}

/* The Redis URL's copy (its argument's credentials are overwritten): held
 * here for the process's life. */
static char *g_url;

/* A worker asks for SIGTERM when its parent dies: no worker outlives its
 * runtime. False when the parent died before the request took effect. */
static bool follow_parent(void) {
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
  return getppid() == parent;
}

/* --remote-slot: the controller's pool started this process for a remote
 * device slot; the URL and the run come in the environment. */
static int remote_slot(const char *slot, bool json) {
  sg_remote_proxy_opts o = {getenv(SG_REMOTE_ENV_URL), getenv(SG_REMOTE_ENV_RUN), slot,
                            SG_VERSION};
  if (!o.url || !o.run_id)
    return fail(json, SG_EXIT_USAGE, "--remote-slot needs " SG_REMOTE_ENV_URL
                " and " SG_REMOTE_ENV_RUN " in the environment");
  if (!follow_parent())
    return SG_EXIT_OK;
  sg_err err;
  sg_err_clear(&err);
  if (sg_remote_proxy_serve(&o, &err) != 0)
    return fail(json, SG_EXIT_FAILED, err.msg);
  return SG_EXIT_OK;
}

/* --redis: a worker host serving one run through Redis. */
static int remote_host(const char *url, const char *run_id, const char *device,
                       const char *host, double hb, double redis_timeout,
                       const char *build_cache,
                       const char *work_dir, bool json) {
  if (!run_id)
    return fail(json, SG_EXIT_USAGE, "--redis needs --run ID (the run's directory name)");
  if (!device)
    return fail(json, SG_EXIT_USAGE, "--redis needs --device cpu:N or cuda:N");
  sg_err err;
  sg_err_clear(&err);
  const char *kind;
  if (sg_worker_device_check(device, &kind, &err) != 0) {
    return usage_failed(json, sg_asprintf("--device: %s", err.msg));
  }
  char hostname[256] = "";
  if (!host) {
    gethostname(hostname, sizeof hostname - 1);
    host = hostname;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return fail(json, SG_EXIT_FAILED, "cannot find this program (/proc/self/exe)");
  self[n] = '\0';
  sg_remote_worker_opts o = {url, run_id, device, host, self, build_cache, work_dir,
                             SG_VERSION, hb, redis_timeout};
  if (sg_remote_worker_serve(&o, &err) != 0)
    return fail(json, err.code == SG_EINVAL ? SG_EXIT_USAGE : SG_EXIT_FAILED, err.msg);
  return SG_EXIT_OK;
}

/* The worker of a local pool, on stdin/stdout. */
static int local_worker(const char *device, bool compile_only, const char *build_cache,
                        const char *work_dir, bool json) {
  if (compile_only && device)
    return fail(json, SG_EXIT_USAGE,
                "--compile-only and --device exclude each other: a compile "
                "worker holds no device");
  if (!device && !compile_only)
    return fail(json, SG_EXIT_USAGE,
                "--device is required (or --compile-only)");
  if (build_cache && !*build_cache)
    return fail(json, SG_EXIT_USAGE, "--build-cache: empty directory name");
  sg_err err;
  sg_err_clear(&err);
  const char *kind;
  if (!compile_only && sg_worker_device_check(device, &kind, &err) != 0) {
    return usage_failed(json, sg_asprintf("--device: %s", err.msg));
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
  if (!follow_parent())
    return SG_EXIT_OK; /* the parent died before the request took effect */
  fflush(stdout);
  if (sg_worker_serve(&cfg, &err) != 0)
    return fail(json, SG_EXIT_FAILED, err.msg);
  return SG_EXIT_OK;
}

typedef struct worker_args {
  const char *device, *work_dir, *build_cache;
  const char *redis, *run_id, *host, *slot;
  double hb, redis_timeout;
  bool json_errors, compile_only;
} worker_args;

enum { O_DEVICE = 1000, O_WORKDIR, O_JSON_ERRORS, O_COMPILE_ONLY, O_BUILD_CACHE, O_REDIS, O_RUN,
       O_HOST, O_HB, O_SLOT, O_REDIS_TIMEOUT };

/* One flag (c its getopt_long code) into a; -1 to go on, else the exit
 * code. arg is not const: --redis overwrites the credentials in it. */
static int take_flag(int c, char *arg, worker_args *a) {
  switch (c) {
  case O_HB:
    if (!sg_cli_parse_double(arg, 0.3, 3600, &a->hb))
      return fail(a->json_errors, SG_EXIT_USAGE,
                  "--heartbeat-timeout: seconds from 0.3 to 3600 expected");
    break;
  case O_REDIS_TIMEOUT:
    if (!sg_cli_parse_double(arg, 1, 86400, &a->redis_timeout))
      return fail(a->json_errors, SG_EXIT_USAGE,
                  "--redis-timeout: seconds from 1 to 86400 expected");
    break;
  case O_REDIS:
    free(g_url);
    a->redis = g_url = sg_remote_url_hide(arg);
    break;
  case O_DEVICE: a->device = arg; break;
  case O_WORKDIR: a->work_dir = arg; break;
  case O_JSON_ERRORS: a->json_errors = true; break;
  case O_COMPILE_ONLY: a->compile_only = true; break;
  case O_BUILD_CACHE: a->build_cache = arg; break;
  case O_RUN: a->run_id = arg; break;
  case O_HOST: a->host = arg; break;
  case O_SLOT: a->slot = arg; break;
  }
  return -1;
}

/* Parses the flags into a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, worker_args *a) {
  static const struct option longopts[] = {
      {"device", required_argument, NULL, O_DEVICE},
      {"work-dir", required_argument, NULL, O_WORKDIR},
      {"json-errors", no_argument, NULL, O_JSON_ERRORS},
      {"compile-only", no_argument, NULL, O_COMPILE_ONLY},
      {"build-cache", required_argument, NULL, O_BUILD_CACHE},
      {"redis", required_argument, NULL, O_REDIS},
      {"run", required_argument, NULL, O_RUN},
      {"host", required_argument, NULL, O_HOST},
      {"heartbeat-timeout", required_argument, NULL, O_HB},
      {"remote-slot", required_argument, NULL, O_SLOT},
      {"redis-timeout", required_argument, NULL, O_REDIS_TIMEOUT},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  /* --json-errors applies to errors in the flags before or after it */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--json-errors") == 0)
      a->json_errors = true;
  int c, code;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return SG_EXIT_OK;
    }
    if (c == '?')
      return usage_failed(a->json_errors, sg_cli_flag_refused_msg(c, argv));
    if ((code = take_flag(c, optarg, a)) >= 0)
      return code;
  }
  if (optind < argc)
    return usage_failed(a->json_errors, sg_asprintf("unexpected argument '%s'", argv[optind]));
  return -1;
}

int sg_cmd_worker(int argc, char **argv) {
  worker_args a;
  int code = parse_args(argc, argv, &a);
  if (code >= 0)
    return code;
  if (a.slot)
    return remote_slot(a.slot, a.json_errors);
  bool remote_only = a.run_id || a.host || a.hb > 0 || a.redis_timeout > 0;
  if (!a.redis && getenv(SG_REMOTE_ENV_URL) && remote_only)
    a.redis = g_url = sg_strdup(getenv(SG_REMOTE_ENV_URL));
  /* --run and the other worker-host options mean a worker host: without a
   * URL that is a mistake, never a local worker serving stdin */
  if (!a.redis && remote_only)
    return fail(a.json_errors, SG_EXIT_USAGE,
                "--run, --host, --heartbeat-timeout and --redis-timeout serve a run "
                "through Redis: give --redis URL (or set " SG_REMOTE_ENV_URL ")");
  /* out of the environment the local workers (and candidates) inherit */
  if (a.redis)
    unsetenv(SG_REMOTE_ENV_URL);
  if (a.redis)
    return remote_host(a.redis, a.run_id, a.device, a.host, a.hb, a.redis_timeout,
                       a.build_cache, a.work_dir, a.json_errors);
  return local_worker(a.device, a.compile_only, a.build_cache, a.work_dir, a.json_errors);
}
