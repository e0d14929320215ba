/* sg_kvstore.h: the KV store as one piece: its devices' backends, the block
 * memory (sg_kv_mem.h) and the lm:// server (sg_kv_server.h), for
 * `specgen kvstore` and for `specgen run --kv-store`, which starts it with
 * the worker pool and lets the pool say when an evaluation takes a device
 * (sg_kvstore_eval_begin/end).
 */
#ifndef SG_KVSTORE_H
#define SG_KVSTORE_H

#include "common/sg_error.h"
#include "kvstore/sg_kv_mem.h"
#include "kvstore/sg_kv_server.h"

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

typedef struct sg_kvstore sg_kvstore;

typedef struct sg_kvstore_opts {
  const char *listen;          /* HOST:PORT (127.0.0.1:0) */
  /* The devices, as the pool names them ("cuda:3", "cpu:0") or "host".
   * Every cuda:N holds blocks in that GPU's memory; every other name
   * shares one host-memory tier. */
  const char *const *devices;
  size_t n_devices;
  size_t budget_bytes;         /* per device (tier) */
  size_t slab_bytes;           /* 0: 64 MiB */
  /* What an evaluation gets of its device: the store shrinks to leave this
   * much free while one runs there. */
  size_t eval_reserve_bytes;
  void (*log)(void *data, const char *line);
  void *log_data;
} sg_kvstore_opts;

/* Opens the devices (SG_EUNSUPPORTED when a GPU cannot be opened, naming
 * it), allocates nothing yet, and listens. */
int sg_kvstore_start(uv_loop_t *loop, const sg_kvstore_opts *opts,
                     sg_kvstore **out, sg_err *err);

/* "lm://HOST:PORT". */
const char *sg_kvstore_url(const sg_kvstore *s);

/* The LMCache configuration (YAML) that points a vLLM at the store.
 * Caller frees. */
char *sg_kvstore_lmcache_config(const sg_kvstore *s);

/* The pool's hooks: an evaluation starts / ended on device slot `slot` (an
 * index into opts.devices). begin shrinks that device's tier so the
 * evaluation has its reserve (synchronously: it is done when this returns);
 * end lets it grow again. */
void sg_kvstore_eval_begin(sg_kvstore *s, size_t slot);
void sg_kvstore_eval_end(sg_kvstore *s, size_t slot);

sg_kv_mem *sg_kvstore_mem(sg_kvstore *s);

/* Counters, per tier and in all: {"url", "hits", "misses", "hit_rate",
 * "put_bytes", "get_bytes", "evictions", "yields", "yield_max_ms",
 * "tiers": [...], ...}. New reference. */
json_t *sg_kvstore_stats_json(const sg_kvstore *s);

/* Stops serving and frees the devices' memory; the rest is freed by the
 * loop (run it until it returns). NULL is fine. */
void sg_kvstore_close(sg_kvstore *s);

/* "4G", "512M", "64K", "1.5GiB", "1000000": bytes (K, M, G, T powers of
 * 1024, with an optional "iB" or "B"). */
int sg_size_parse(const char *text, size_t *bytes, sg_err *err);

#endif
