/* cmd_kvstore.c: `specgen kvstore`: the KV store on its own, serving
 * LMCache's remote protocol (lm://) until SIGINT or SIGTERM, then printing
 * its counters (docs/kvstore.md). */
#include "cli/cli_flags.h"
#include "cli/commands.h"

#include "common/sg_alloc.h"
#include "kvstore/sg_kv_dev.h"
#include "kvstore/sg_kvstore.h"

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen kvstore --listen HOST:PORT [--memory SIZE]\n"
          "                       [--device cuda:N|host] [options]\n"
          "\n"
          "Serves LMCache's remote server protocol (remote_url: lm://HOST:PORT)\n"
          "from GPU memory (cuda:N) or locked host memory (host), evicting the\n"
          "least recently used blocks beyond SIZE. Runs until SIGINT or\n"
          "SIGTERM, then prints its counters. Exit status: 0 after serving,\n"
          "1 when it cannot serve (no such GPU, address in use), 2 bad usage.\n"
          "\n"
          "  --listen HOST:PORT  address to serve (port 0: any free port)\n"
          "  --memory SIZE       budget per device: 4G, 512M (1G)\n"
          "  --device DEV        cuda:N or host (host); repeat for more GPUs\n"
          "  --slab SIZE         allocation unit of block memory (64M)\n"
          "  --eval-reserve SIZE memory an evaluation gets when the run's pool\n"
          "                      says one starts (only with specgen run) (8G)\n"
          "  --json              counters at the end as one JSON object (else\n"
          "                      as text)\n"
          "  -h, --help          this help\n");
}

static uv_signal_t sig_int, sig_term;

static void on_signal(uv_signal_t *h, int signum) {
  (void)signum;
  uv_stop(h->loop);
}

static int bad(const char *msg) {
  return sg_cli_usage_error("kvstore", "%s", msg);
}

static double num(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

/* The counters as text (--json: the object itself). */
static void print_stats(const json_t *st) {
  printf("%.0f PUTs (%.1f MB), %.0f hits, %.0f misses (hit rate %.0f%%), "
         "%.1f MB out\n"
         "%.0f evictions (%.1f MB), %.0f yields (longest %.2f ms), %.0f "
         "dropped PUTs, %.0f aborted, %.0f refused headers, %.0f connections\n",
         num(st, "puts"), num(st, "put_bytes") / 1e6, num(st, "hits"),
         num(st, "misses"), 100 * num(st, "hit_rate"), num(st, "get_bytes") / 1e6,
         num(st, "evictions"), num(st, "evicted_bytes") / 1e6, num(st, "yields"),
         num(st, "yield_max_ms"), num(st, "puts_dropped"), num(st, "puts_aborted"),
         num(st, "protocol_errors"), num(st, "connections"));
  size_t i;
  const json_t *t;
  json_array_foreach(json_object_get(st, "tiers"), i, t) {
    printf("  %-8s %s%.0f blocks, %.1f of %.1f MB used, %.1f MB allocated\n",
           json_string_value(json_object_get(t, "device")),
           json_is_true(json_object_get(t, "failed")) ? "FAILED, " : "",
           num(t, "blocks"), num(t, "used_bytes") / 1e6, num(t, "budget_bytes") / 1e6,
           num(t, "slab_bytes") / 1e6);
  }
}

/* Serves until SIGINT or SIGTERM, then prints the counters. */
static int serve(const sg_kvstore_opts *o, bool json) {
  sg_err err;
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_kvstore *s;
  int rc = sg_kvstore_start(&loop, o, &s, &err);
  if (rc < 0) {
    /* the store's messages name it ("kvstore: ...") for a run's log; said
     * here once ("specgen kvstore: kvstore: ..." was said twice) */
    const char *msg = err.msg;
    if (strncmp(msg, "kvstore: ", 9) == 0)
      msg += 9;
    if (rc == SG_EINVAL)
      sg_cli_usage_error("kvstore", "%s", msg);
    else
      fprintf(stderr, "specgen kvstore: %s\n", msg);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc == SG_EINVAL ? SG_EXIT_USAGE : SG_EXIT_FAILED;
  }
  char *cfg = sg_kvstore_lmcache_config(s);
  fprintf(stderr, "specgen kvstore: serving %s (%zu bytes per device on %s)\n"
          "%s", sg_kvstore_url(s), o->budget_bytes,
          o->n_devices ? o->devices[0] : "host", cfg);
  free(cfg);
  /* The URL alone on stdout's first line, for scripts and tests. */
  printf("%s\n", sg_kvstore_url(s));
  fflush(stdout);
  uv_signal_init(&loop, &sig_int);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_term, on_signal, SIGTERM);
  signal(SIGPIPE, SIG_IGN);
  uv_run(&loop, UV_RUN_DEFAULT);
  json_t *st = sg_kvstore_stats_json(s);
  if (json) {
    char *text = json_dumps(st, JSON_COMPACT);
    printf("%s\n", text);
    free(text);
  } else {
    print_stats(st);
  }
  json_decref(st);
  sg_kvstore_close(s);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return SG_EXIT_OK;
}

int sg_cmd_kvstore(int argc, char **argv) {
  enum { O_LISTEN = 1000, O_MEMORY, O_DEVICE, O_SLAB, O_RESERVE, O_JSON };
  static const struct option longopts[] = {
      {"listen", required_argument, NULL, O_LISTEN},
      {"memory", required_argument, NULL, O_MEMORY},
      {"device", required_argument, NULL, O_DEVICE},
      {"slab", required_argument, NULL, O_SLAB},
      {"eval-reserve", required_argument, NULL, O_RESERVE},
      {"json", no_argument, NULL, O_JSON},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *listen = NULL;
  const char *devices[64];
  size_t n_dev = 0;
  size_t memory = 1u << 30, slab = 0, reserve = (size_t)8 << 30;
  bool json = false;
  sg_err err;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (ch) {
    case O_LISTEN: listen = optarg; break;
    case O_MEMORY:
    case O_SLAB:
    case O_RESERVE: {
      size_t *dst = ch == O_MEMORY ? &memory : ch == O_SLAB ? &slab : &reserve;
      if (sg_size_parse(optarg, dst, &err) < 0)
        return bad(err.msg);
      break;
    }
    case O_DEVICE: {
      bool is_cuda;
      int ord;
      if (sg_kv_device_parse(optarg, &is_cuda, &ord, &err) < 0)
        return bad(err.msg);
      if (n_dev == 64)
        return bad("too many --device");
      devices[n_dev++] = optarg;
      break;
    }
    case O_JSON: json = true; break;
    case 'h': usage(stdout); return SG_EXIT_OK;
    default: return sg_cli_flag_refused("kvstore", ch, argv);
    }
  }
  if (optind < argc)
    return sg_cli_usage_error("kvstore", "unexpected argument '%s'", argv[optind]);
  if (!listen)
    return bad("--listen HOST:PORT is required");
  if (memory == 0)
    return bad("--memory must be above 0");
  sg_kvstore_opts o = {.listen = listen, .devices = devices,
                       .n_devices = n_dev, .budget_bytes = memory,
                       .slab_bytes = slab, .eval_reserve_bytes = reserve};
  return serve(&o, json);
}
