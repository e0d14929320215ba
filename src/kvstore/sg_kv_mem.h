/* sg_kv_mem.h: the store's blocks, in device memory (or pinned host memory),
 * with a budget per device, LRU eviction and yielding to evaluations.
 *
 * A store has one tier per device. Each tier owns slabs (large allocations
 * made through its backend: cuMemAlloc for a GPU, locked host memory for the
 * host fallback) carved into equal slots of one size class; a block takes
 * one slot. Slabs keep allocation calls rare, and let a yield hand memory
 * back in a few large frees (cuMemFree is slow and synchronizing: freeing
 * thousands of blocks one by one would make an evaluation wait).
 *
 * Budget and limit: a tier may hold at most `limit` bytes of slabs; limit is
 * the budget, except while an evaluation runs on the device, when
 * sg_kv_mem_yield() lowers it to what the evaluation leaves free (and
 * sg_kv_mem_unyield() restores it). Blocks are evicted least recently used
 * first (a GET hit or a PUT refreshes a block; EXIST does not), per tier,
 * and a slab that empties is freed at once.
 *
 * Data only moves through the backend's copy functions (host to device on
 * PUT, device to host on GET), from and into the caller's host buffer, so a
 * block evicted later never affects data already copied out. A backend
 * error marks its tier failed (the device vanished): its blocks are dropped
 * (GETs miss, never return wrong data) and the tier takes no more blocks.
 *
 * Single-threaded (the server's loop thread); not thread-safe.
 */
#ifndef SG_KV_MEM_H
#define SG_KV_MEM_H

#include "common/sg_error.h"
#include "kvstore/sg_kv_proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a tier's slabs live. addr is a device pointer or a host pointer. */
typedef struct sg_kv_backend {
  void *ctx;
  const char *name;  /* "cuda:0", "host" */
  int (*slab_alloc)(void *ctx, size_t bytes, uint64_t *addr, sg_err *err);
  void (*slab_free)(void *ctx, uint64_t addr, size_t bytes);
  int (*write)(void *ctx, uint64_t dst, const void *src, size_t n, sg_err *err);
  int (*read)(void *ctx, void *dst, uint64_t src, size_t n, sg_err *err);
  /* Free and total bytes of the device, or SG_EUNSUPPORTED (host). May be
   * NULL. */
  int (*mem_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
  /* Host buffers the copies use best (pinned for a GPU); NULL: malloc. */
  void *(*host_alloc)(void *ctx, size_t bytes);
  void (*host_free)(void *ctx, void *p, size_t bytes);
} sg_kv_backend;

/* What a block was stored with: echoed in the GET reply. */
typedef struct sg_kv_meta {
  int32_t length, fmt, dtype;
  int32_t shape[4];
} sg_kv_meta;

typedef struct sg_kv_tier_stats {
  const char *name;
  bool failed;
  size_t budget_bytes, limit_bytes;
  size_t slab_bytes;   /* allocated */
  size_t used_bytes;   /* blocks' lengths */
  size_t blocks;
  uint64_t yields;
  uint64_t yield_freed_bytes;
  double yield_max_s, yield_total_s;
} sg_kv_tier_stats;

typedef struct sg_kv_stats {
  uint64_t puts, put_bytes, put_rejected;  /* rejected: over the limit, no
                                              room while yielding, or failed */
  uint64_t gets, hits, misses, get_bytes;
  uint64_t exists;
  uint64_t evictions, evicted_bytes;
  uint64_t lost_blocks;                    /* dropped with a failed tier */
  uint64_t device_errors;
  uint64_t yields;
  size_t blocks, used_bytes, slab_bytes;
} sg_kv_stats;

typedef struct sg_kv_mem sg_kv_mem;

typedef struct sg_kv_mem_opts {
  size_t slab_bytes;  /* slab size (64 MiB), at most an eighth of the
                         budget; a block larger gets a slab of its own */
  size_t max_block_bytes; /* PUTs above are refused (the budget) */
} sg_kv_mem_opts;

/* tiers: n backends (borrowed for the store's life), budgets: bytes each. */
int sg_kv_mem_new(const sg_kv_backend *tiers, const size_t *budgets, size_t n,
                  const sg_kv_mem_opts *opts, sg_kv_mem **out, sg_err *err);
/* Frees every slab. NULL is fine. */
void sg_kv_mem_free(sg_kv_mem *m);

/* Stores data (meta->length bytes) under key (replacing a block there).
 * SG_EFULL when no tier can take it (too large, or every limit is 0 while
 * yielding), SG_EIO when the copy failed (the tier is then failed). */
int sg_kv_mem_put(sg_kv_mem *m, const char *key, size_t key_len,
                  const sg_kv_meta *meta, const void *data, sg_err *err);

/* Looks a block up: SG_ENOENT when absent. With dst (room bytes), copies
 * the block into dst (SG_ERANGE when it does not fit) and refreshes it;
 * without, only returns its meta (a miss is counted either way, a hit only
 * by the copy). SG_EIO when the copy failed (the block's
 * tier is failed and the call reports a miss). */
int sg_kv_mem_get(sg_kv_mem *m, const char *key, size_t key_len,
                  sg_kv_meta *meta, void *dst, size_t room, sg_err *err);

/* EXIST: no refresh. */
bool sg_kv_mem_contains(sg_kv_mem *m, const char *key, size_t key_len);

/* An evaluation is starting on tier t and needs reserve_bytes of its device
 * free: the tier's limit drops to what leaves that much free (from the
 * device's free memory where the backend knows it, else from the budget),
 * and blocks are evicted and slabs freed until the tier fits. Returns the
 * bytes freed; *seconds (may be NULL) the time taken. */
size_t sg_kv_mem_yield(sg_kv_mem *m, size_t t, size_t reserve_bytes,
                       double *seconds);
/* The evaluation on tier t ended: the limit is the budget again (memory is
 * taken back lazily, as PUTs come). */
void sg_kv_mem_unyield(sg_kv_mem *m, size_t t);

/* Marks tier t failed as after a device error (for tests and for a device
 * the runtime took out of service): its blocks are dropped. */
void sg_kv_mem_fail_tier(sg_kv_mem *m, size_t t, const char *why);

size_t sg_kv_mem_tiers(const sg_kv_mem *m);
void sg_kv_mem_stats(const sg_kv_mem *m, sg_kv_stats *st);
void sg_kv_mem_tier_stats(const sg_kv_mem *m, size_t t, sg_kv_tier_stats *st);

/* Calls fn for every key (canonical form), most recently used last within
 * a tier. */
void sg_kv_mem_each(const sg_kv_mem *m,
                    void (*fn)(void *data, const char *key, size_t key_len),
                    void *data);

/* The size class of a block of n bytes (the slot it takes): n rounded up to
 * 2^k or 1.5 * 2^k, at least 4 KiB. Exposed for tests. */
size_t sg_kv_mem_class(size_t n);

#endif
