/* sg_kvstore.c: the store as one piece (see the header). */
#include "kvstore/sg_kvstore.h"

#include "common/sg_alloc.h"
#include "kvstore/sg_kv_dev.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sg_kvstore {
  sg_kv_mem *mem;
  sg_kv_server *server;
  sg_kv_host *host;
  sg_kv_cuda **cuda;     /* per tier; NULL for the host tier */
  sg_kv_backend *be;     /* per tier */
  size_t n_tiers;
  size_t *slot_tier;     /* per device slot */
  size_t *slot_busy;     /* evaluations running per slot */
  size_t n_slots;
  size_t reserve;
  size_t budget;
};

int sg_size_parse(const char *text, size_t *bytes, sg_err *err) {
  char *end;
  double v = strtod(text, &end);
  if (end == text || !isfinite(v) || v < 0)
    return sg_err_set(err, SG_EINVAL, "size \"%s\": not a number", text);
  double mul = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K': mul = 1024.0; end++; break;
  case 'M': mul = 1024.0 * 1024; end++; break;
  case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
  case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: break;
  }
  if (mul > 1 && (end[0] == 'i' || end[0] == 'I') && toupper((unsigned char)end[1]) == 'B')
    end += 2;
  else if (toupper((unsigned char)*end) == 'B')
    end++;
  if (*end)
    return sg_err_set(err, SG_EINVAL, "size \"%s\": unknown unit \"%s\" (K, M, "
                      "G, T)", text, end);
  if (v * mul >= 9.0e18)
    return sg_err_set(err, SG_ERANGE, "size \"%s\": too large", text);
  *bytes = (size_t)(v * mul);
  return 0;
}

static void free_devices(sg_kvstore *s) {
  for (size_t i = 0; i < s->n_tiers; i++)
    sg_kv_cuda_close(s->cuda[i]);
  if (s->host)
    sg_kv_host_free(s->host);
  free(s->cuda);
  free(s->be);
  free(s->slot_tier);
  free(s->slot_busy);
  free(s);
}

/* One tier per GPU named, one shared host tier for every other name. */
static int open_devices(sg_kvstore *s, const sg_kvstore_opts *o, sg_err *err) {
  size_t n = o->n_devices ? o->n_devices : 1;
  s->n_slots = n;
  s->slot_tier = sg_calloc(n, sizeof *s->slot_tier);
  s->slot_busy = sg_calloc(n, sizeof *s->slot_busy);
  s->cuda = sg_calloc(n, sizeof *s->cuda);
  s->be = sg_calloc(n, sizeof *s->be);
  size_t host_tier = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    const char *d = o->n_devices ? o->devices[i] : "host";
    int ord = -1;
    if (strncmp(d, "cuda:", 5) == 0) {
      bool is_cuda;
      int rc = sg_kv_device_parse(d, &is_cuda, &ord, err);
      if (rc < 0)
        return rc;
    }
    if (ord < 0) {
      if (host_tier == (size_t)-1) {
        host_tier = s->n_tiers++;
        s->host = sg_kv_host_new();
        sg_kv_host_backend(s->host, &s->be[host_tier]);
      }
      s->slot_tier[i] = host_tier;
      continue;
    }
    size_t t = s->n_tiers;
    for (size_t k = 0; k < s->n_tiers; k++)
      if (s->cuda[k] && strcmp(s->be[k].name, d) == 0)
        t = k;
    if (t == s->n_tiers) {
      int rc = sg_kv_cuda_open(ord, &s->cuda[t], err);
      if (rc < 0)
        return rc;
      sg_kv_cuda_backend(s->cuda[t], &s->be[t]);
      s->n_tiers++;
    }
    s->slot_tier[i] = t;
  }
  return 0;
}

int sg_kvstore_start(uv_loop_t *loop, const sg_kvstore_opts *o,
                     sg_kvstore **out, sg_err *err) {
  sg_kvstore *s = sg_calloc(1, sizeof *s);
  s->reserve = o->eval_reserve_bytes;
  s->budget = o->budget_bytes;
  int rc = open_devices(s, o, err);
  if (rc < 0) {
    free_devices(s);
    return rc;
  }
  size_t *budgets = sg_calloc(s->n_tiers, sizeof *budgets);
  for (size_t i = 0; i < s->n_tiers; i++)
    budgets[i] = o->budget_bytes;
  sg_kv_mem_opts mo = {.slab_bytes = o->slab_bytes,
                       .max_block_bytes = o->budget_bytes};
  rc = sg_kv_mem_new(s->be, budgets, s->n_tiers, &mo, &s->mem, err);
  free(budgets);
  if (rc < 0) {
    free_devices(s);
    return rc;
  }
  sg_kv_server_opts so = {.listen = o->listen ? o->listen : "127.0.0.1:0",
                          .staging = &s->be[0],
                          .log = o->log,
                          .log_data = o->log_data};
  rc = sg_kv_server_start(loop, s->mem, &so, &s->server, err);
  if (rc < 0) {
    sg_kv_mem_free(s->mem);
    free_devices(s);
    return rc;
  }
  *out = s;
  return 0;
}

const char *sg_kvstore_url(const sg_kvstore *s) {
  return sg_kv_server_url(s->server);
}

char *sg_kvstore_lmcache_config(const sg_kvstore *s) {
  return sg_asprintf(
      "# LMCache configuration (LMCACHE_CONFIG_FILE) for a vLLM that keeps\n"
      "# its prefixes in specgen's KV store\n"
      "chunk_size: 256\n"
      "local_cpu: true\n"
      "max_local_cpu_size: 5\n"
      "remote_url: \"%s\"\n"
      "remote_serde: \"naive\"\n",
      sg_kv_server_url(s->server));
}

void sg_kvstore_eval_begin(sg_kvstore *s, size_t slot) {
  if (!s || slot >= s->n_slots)
    return;
  if (s->slot_busy[slot]++ == 0)
    sg_kv_mem_yield(s->mem, s->slot_tier[slot], s->reserve, NULL);
}

void sg_kvstore_eval_end(sg_kvstore *s, size_t slot) {
  if (!s || slot >= s->n_slots || s->slot_busy[slot] == 0)
    return;
  if (--s->slot_busy[slot] > 0)
    return;
  /* A tier shared by several slots (the host tier) grows back only when
   * none of them runs an evaluation. */
  size_t t = s->slot_tier[slot];
  for (size_t i = 0; i < s->n_slots; i++)
    if (s->slot_tier[i] == t && s->slot_busy[i])
      return;
  sg_kv_mem_unyield(s->mem, t);
}

sg_kv_mem *sg_kvstore_mem(sg_kvstore *s) { return s->mem; }

json_t *sg_kvstore_stats_json(const sg_kvstore *s) {
  sg_kv_stats st;
  sg_kv_mem_stats(s->mem, &st);
  sg_kv_server_stats ss;
  sg_kv_server_stats_get(s->server, &ss);
  json_t *tiers = json_array();
  double ymax = 0;
  for (size_t i = 0; i < s->n_tiers; i++) {
    sg_kv_tier_stats ts;
    sg_kv_mem_tier_stats(s->mem, i, &ts);
    if (ts.yield_max_s > ymax)
      ymax = ts.yield_max_s;
    json_array_append_new(tiers, json_pack(
        "{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
        "device", ts.name, "failed", ts.failed,
        "budget_bytes", (json_int_t)ts.budget_bytes,
        "limit_bytes", (json_int_t)ts.limit_bytes,
        "slab_bytes", (json_int_t)ts.slab_bytes,
        "used_bytes", (json_int_t)ts.used_bytes,
        "blocks", (json_int_t)ts.blocks, "yields", (json_int_t)ts.yields,
        "yield_freed_bytes", (json_int_t)ts.yield_freed_bytes,
        "yield_max_ms", ts.yield_max_s * 1e3,
        "yield_total_ms", ts.yield_total_s * 1e3));
  }
  uint64_t lookups = st.hits + st.misses;
  json_t *j = json_pack(
      "{s:s, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
      " s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:o}",
      "url", sg_kv_server_url(s->server), "puts", (json_int_t)st.puts,
      "hits", (json_int_t)st.hits, "misses", (json_int_t)st.misses,
      "hit_rate", lookups ? (double)st.hits / (double)lookups : 0.0,
      "exists", (json_int_t)st.exists, "put_bytes", (json_int_t)st.put_bytes,
      "get_bytes", (json_int_t)st.get_bytes,
      "puts_dropped", (json_int_t)(ss.puts_dropped),
      "puts_aborted", (json_int_t)ss.puts_aborted,
      "evictions", (json_int_t)st.evictions,
      "evicted_bytes", (json_int_t)st.evicted_bytes,
      "lost_blocks", (json_int_t)st.lost_blocks,
      "device_errors", (json_int_t)st.device_errors,
      "protocol_errors", (json_int_t)ss.protocol_errors,
      "blocks", (json_int_t)st.blocks, "used_bytes", (json_int_t)st.used_bytes,
      "yields", (json_int_t)st.yields, "yield_max_ms", ymax * 1e3,
      "connections", (json_int_t)ss.connections,
      "slab_bytes", (json_int_t)st.slab_bytes, "tiers", tiers);
  return j;
}

void sg_kvstore_close(sg_kvstore *s) {
  if (!s)
    return;
  sg_kv_server_close(s->server);
  sg_kv_mem_free(s->mem);
  free_devices(s);
}
