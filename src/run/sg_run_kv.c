/* sg_run_kv.c: `specgen run --kv-store`: the KV store started with the
 * pool, on the run's devices, told by the pool when an evaluation takes a
 * device (docs/kvstore.md).
 *
 * The store serves on the run's own loop: its work is copies and socket
 * writes, short and non-blocking, and a yield is a direct call made before
 * the pool writes the evaluation's request, so the evaluation never starts
 * on memory the store still holds. What the run announces: the lm:// URL
 * and the LMCache configuration (a "kv_store" event); what it reports: the
 * store's counters in summary.json ("kv_store") and in kv_store.json in the
 * run directory.
 */
#include "run/sg_run_priv.h"

#include "common/sg_file.h"
#include "kvstore/sg_kv_server.h"
#include "kvstore/sg_kvstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KV_MEMORY_DEFAULT "4G"
#define KV_RESERVE_DEFAULT "8G"
#define KV_LISTEN_DEFAULT "127.0.0.1:0"

int sg_run_kv_config_check(const sg_run_config *c, sg_err *err) {
  size_t n;
  char host[256];
  int port;
  if (c->kv_store_memory && sg_size_parse(c->kv_store_memory, &n, err) < 0)
    return sg_err_prefix(err, "kv-store-memory");
  if (c->kv_store_memory && n == 0)
    return sg_err_set(err, SG_EINVAL, "kv-store-memory: must be above 0");
  if (c->kv_store_reserve && sg_size_parse(c->kv_store_reserve, &n, err) < 0)
    return sg_err_prefix(err, "kv-store-reserve");
  if (c->kv_store_listen &&
      sg_kv_listen_parse(c->kv_store_listen, host, sizeof host, &port, err) < 0)
    return sg_err_prefix(err, "kv-store-listen");
  return 0;
}

static void kv_log(void *data, const char *line) {
  run *r = data;
  sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "device", "kv-store",
                                      "message", line));
}

/* The pool's on_device: an evaluation takes slot (busy) or left it. */
void sg_run_kv_on_device(sg_pool *p, void *data, int slot, bool busy) {
  (void)p;
  run *r = data;
  if (!r->kv || slot < 0)
    return;
  if (busy)
    sg_kvstore_eval_begin(r->kv, (size_t)slot);
  else
    sg_kvstore_eval_end(r->kv, (size_t)slot);
}

int sg_run_kv_start(run *r, sg_err *err) {
  const sg_run_config *c = r->cfg;
  if (!c->kv_store)
    return 0;
  size_t budget, reserve;
  int rc = sg_size_parse(c->kv_store_memory ? c->kv_store_memory : KV_MEMORY_DEFAULT,
                         &budget, err);
  if (rc == 0)
    rc = sg_size_parse(c->kv_store_reserve ? c->kv_store_reserve : KV_RESERVE_DEFAULT,
                       &reserve, err);
  if (rc < 0)
    return sg_err_prefix(err, "kv-store");
  sg_kvstore_opts o = {
      .listen = c->kv_store_listen ? c->kv_store_listen : KV_LISTEN_DEFAULT,
      .devices = (const char *const *)r->devices,
      .n_devices = r->ndevices,
      .budget_bytes = budget,
      .eval_reserve_bytes = reserve,
      .log = kv_log,
      .log_data = r};
  rc = sg_kvstore_start(&r->loop, &o, &r->kv, err);
  if (rc < 0)
    return sg_err_prefix(err, "kv-store: cannot start the KV store");
  char *cfg = sg_kvstore_lmcache_config(r->kv);
  sg_run_emit(r, "kv_store",
              json_pack("{s:s, s:s, s:s, s:I, s:I}", "url", sg_kvstore_url(r->kv),
                        "lmcache_config", cfg, "devices", c->devices,
                        "budget_bytes", (json_int_t)budget, "reserve_bytes",
                        (json_int_t)reserve));
  free(cfg);
  return 0;
}

void sg_run_kv_close(run *r) {
  if (!r->kv)
    return;
  json_decref(r->kv_stats);
  r->kv_stats = sg_kvstore_stats_json(r->kv);
  sg_kvstore_close(r->kv);
  r->kv = NULL;
}

void sg_run_kv_report(run *r, json_t *summary) {
  if (!r->kv_stats)
    return;
  json_object_set(summary, "kv_store", r->kv_stats);
  char *text = json_dumps(r->kv_stats, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
  char *path = sg_asprintf("%s/kv_store.json", r->dir);
  char *line = sg_asprintf("%s\n", text);
  sg_err e;
  sg_err_clear(&e);
  /* summary.json has the same counters: a failure here is worth a warning,
   * not the run. */
  if (sg_file_write(path, line, strlen(line), &e) < 0)
    sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "device", "kv-store",
                                        "message", e.msg));
  free(line);
  free(path);
  free(text);
}
