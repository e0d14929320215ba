/* test_kv_mem.c: the store's block memory (kvstore/sg_kv_mem.h) on the real
 * host backend and on a test backend that fails on command (a device that
 * vanishes) or reports device free memory (yields): LRU order, budgets,
 * slabs freed when empty, yields that leave the evaluation its reserve,
 * never wrong data. */
#include "kvstore/sg_kv_dev.h"
#include "kvstore/sg_kv_mem.h"
#include "sg_test.h"

#include <stdlib.h>
#include <string.h>

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

/* The host backend, wrapped: fails every copy once `fail` is set, and
 * reports `dev_total - slabs` as the device's free memory when dev_total
 * is set. */
typedef struct wrap {
  sg_kv_backend inner;
  bool fail;
  size_t dev_total, slabs;
  int allocs, frees;
} wrap;

static int w_alloc(void *ctx, size_t n, uint64_t *addr, sg_err *err) {
  wrap *w = ctx;
  if (w->dev_total && w->slabs + n > w->dev_total)
    return sg_err_set(err, SG_EFULL, "device full");
  int rc = w->inner.slab_alloc(w->inner.ctx, n, addr, err);
  if (rc == 0)
    w->slabs += n, w->allocs++;
  return rc;
}
static void w_free(void *ctx, uint64_t addr, size_t n) {
  wrap *w = ctx;
  w->slabs -= n;
  w->frees++;
  w->inner.slab_free(w->inner.ctx, addr, n);
}
static int w_write(void *ctx, uint64_t dst, const void *src, size_t n,
                   sg_err *err) {
  wrap *w = ctx;
  if (w->fail)
    return sg_err_set(err, SG_EIO, "device lost");
  return w->inner.write(w->inner.ctx, dst, src, n, err);
}
static int w_read(void *ctx, void *dst, uint64_t src, size_t n, sg_err *err) {
  wrap *w = ctx;
  if (w->fail)
    return sg_err_set(err, SG_EIO, "device lost");
  return w->inner.read(w->inner.ctx, dst, src, n, err);
}
static int w_info(void *ctx, size_t *f, size_t *t) {
  wrap *w = ctx;
  if (!w->dev_total)
    return SG_EUNSUPPORTED;
  *t = w->dev_total;
  *f = w->dev_total - w->slabs;
  return 0;
}

static sg_kv_host *host;

static void wrap_init(wrap *w, const char *name) {
  memset(w, 0, sizeof *w);
  if (!host)
    host = sg_kv_host_new();
  sg_kv_host_backend(host, &w->inner);
  (void)name;
}

static sg_kv_backend wrap_backend(wrap *w, const char *name) {
  sg_kv_backend b = {.ctx = w, .name = name, .slab_alloc = w_alloc,
                     .slab_free = w_free, .write = w_write, .read = w_read,
                     .mem_info = w_info};
  return b;
}

static void key_of(int i, char *k, size_t *n) {
  *n = (size_t)snprintf(k, SG_KV_KEY_MAX + 1, "m@1@0@%x@half", i);
}

static void fill(uint8_t *p, size_t n, int seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i * 31 + (size_t)seed * 17);
}

static int put(sg_kv_mem *m, int i, size_t n) {
  char k[SG_KV_KEY_MAX + 1];
  size_t kn;
  key_of(i, k, &kn);
  uint8_t *d = malloc(n ? n : 1);
  fill(d, n, i);
  sg_kv_meta meta = {.length = (int32_t)n, .fmt = 1, .dtype = 3,
                     .shape = {(int32_t)n, 0, 0, 0}};
  sg_err err;
  int rc = sg_kv_mem_put(m, k, kn, &meta, d, &err);
  free(d);
  return rc;
}

/* 0 when block i is present with its own bytes, SG_ENOENT when absent;
 * fails the test on wrong bytes. */
static int get(sg_kv_mem *m, int i, size_t n) {
  char k[SG_KV_KEY_MAX + 1];
  size_t kn;
  key_of(i, k, &kn);
  uint8_t *d = malloc(n + 1), *want = malloc(n + 1);
  fill(want, n, i);
  sg_kv_meta meta;
  sg_err err;
  int rc = sg_kv_mem_get(m, k, kn, &meta, d, n + 1, &err);
  if (rc == 0) {
    SG_CHECK_EQ_INT(meta.length, n);
    SG_CHECK(memcmp(d, want, n) == 0);
  }
  free(d);
  free(want);
  return rc;
}

static void test_size_classes(void) {
  SG_CHECK_EQ_INT(sg_kv_mem_class(1), 4096);
  SG_CHECK_EQ_INT(sg_kv_mem_class(4096), 4096);
  SG_CHECK_EQ_INT(sg_kv_mem_class(4097), 6144);
  SG_CHECK_EQ_INT(sg_kv_mem_class(6145), 8192);
  SG_CHECK_EQ_INT(sg_kv_mem_class(MiB), MiB);
  SG_CHECK_EQ_INT(sg_kv_mem_class(MiB + 1), 3 * MiB / 2);
  for (size_t n = 1; n < 64 * MiB; n = n * 3 / 2 + 7) {
    size_t c = sg_kv_mem_class(n);
    SG_CHECK(c >= n && (c < 4096 * 2 || c < n * 3 / 2 + 4096));
  }
}

static void test_lru_eviction_and_refresh(void) {
  wrap w;
  wrap_init(&w, "t");
  sg_kv_backend b = wrap_backend(&w, "t");
  size_t budget = 1 * MiB;
  sg_kv_mem_opts o = {.slab_bytes = 256 * KiB, .max_block_bytes = budget};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(&b, &budget, 1, &o, &m, &err), err);
  for (int i = 0; i < 16; i++)
    SG_CHECK_OK(put(m, i, 64 * KiB), err);
  SG_CHECK_OK(get(m, 0, 64 * KiB), err); /* 0 is now the newest */
  char k[SG_KV_KEY_MAX + 1];
  size_t kn;
  key_of(1, k, &kn);
  SG_CHECK(sg_kv_mem_contains(m, k, kn)); /* EXIST does not refresh */
  for (int i = 16; i < 20; i++)
    SG_CHECK_OK(put(m, i, 64 * KiB), err);
  SG_CHECK_EQ_INT(get(m, 0, 64 * KiB), 0);
  for (int i = 1; i <= 4; i++)
    SG_CHECK_EQ_INT(get(m, i, 64 * KiB), SG_ENOENT);
  for (int i = 5; i < 20; i++)
    SG_CHECK_EQ_INT(get(m, i, 64 * KiB), 0);
  sg_kv_stats st;
  sg_kv_mem_stats(m, &st);
  SG_CHECK_EQ_INT(st.evictions, 4);
  SG_CHECK(st.slab_bytes <= budget);
  SG_CHECK_EQ_INT(st.blocks, 16);
  /* Too large for the budget: refused, nothing evicted. */
  SG_CHECK_EQ_INT(put(m, 99, budget + 1), SG_EFULL);
  sg_kv_mem_stats(m, &st);
  SG_CHECK_EQ_INT(st.evictions, 4);
  sg_kv_mem_free(m);
  SG_CHECK_EQ_INT(w.slabs, 0);
  SG_CHECK_EQ_INT(w.allocs, w.frees);
}

static void test_mixed_sizes_stay_in_budget(void) {
  wrap w;
  wrap_init(&w, "t");
  sg_kv_backend b = wrap_backend(&w, "t");
  size_t budget = 4 * MiB;
  sg_kv_mem_opts o = {.slab_bytes = 1 * MiB, .max_block_bytes = budget};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(&b, &budget, 1, &o, &m, &err), err);
  static const size_t sizes[] = {5000, 40 * KiB, 300 * KiB, 1500 * KiB, 17,
                                 0, 3 * MiB};
  for (int i = 0; i < 400; i++) {
    size_t n = sizes[(i * 7) % 7];
    SG_CHECK_OK(put(m, i, n), err);
    SG_CHECK(w.slabs <= budget);
    SG_CHECK_EQ_INT(get(m, i, n), 0); /* the newest is always there */
    if (i >= 3) {
      int rc = get(m, i - 3, sizes[((i - 3) * 7) % 7]);
      SG_CHECK(rc == 0 || rc == SG_ENOENT);
    }
  }
  sg_kv_mem_free(m);
  SG_CHECK_EQ_INT(w.slabs, 0);
}

static void test_yield_leaves_the_reserve(void) {
  /* A device of 10 MiB whose free memory the backend reports. */
  wrap w;
  wrap_init(&w, "t");
  w.dev_total = 10 * MiB;
  sg_kv_backend b = wrap_backend(&w, "t");
  size_t budget = 8 * MiB;
  sg_kv_mem_opts o = {.slab_bytes = 1 * MiB, .max_block_bytes = budget};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(&b, &budget, 1, &o, &m, &err), err);
  for (int i = 0; i < 32; i++)
    SG_CHECK_OK(put(m, i, 256 * KiB), err);
  SG_CHECK_EQ_INT(w.slabs, 8 * MiB);
  /* The evaluation needs 6 MiB free: 2 are free, so 4 must go. */
  double secs;
  size_t freed = sg_kv_mem_yield(m, 0, 6 * MiB, &secs);
  SG_CHECK_EQ_INT(freed, 4 * MiB);
  SG_CHECK_EQ_INT(w.dev_total - w.slabs, 6 * MiB);
  SG_CHECK(secs >= 0);
  /* The oldest went first. */
  SG_CHECK_EQ_INT(get(m, 0, 256 * KiB), SG_ENOENT);
  SG_CHECK_EQ_INT(get(m, 31, 256 * KiB), 0);
  /* While yielding, PUTs stay within the lowered limit. */
  for (int i = 100; i < 120; i++)
    SG_CHECK_OK(put(m, i, 256 * KiB), err);
  SG_CHECK(w.dev_total - w.slabs >= 6 * MiB);
  sg_kv_mem_unyield(m, 0);
  for (int i = 200; i < 240; i++)
    SG_CHECK_OK(put(m, i, 256 * KiB), err);
  SG_CHECK_EQ_INT(w.slabs, 8 * MiB);
  /* A reserve larger than the device: the store empties. */
  sg_kv_mem_yield(m, 0, 100 * MiB, NULL);
  SG_CHECK_EQ_INT(w.slabs, 0);
  SG_CHECK_EQ_INT(put(m, 300, 4 * KiB), SG_EFULL);
  sg_kv_tier_stats ts;
  sg_kv_mem_tier_stats(m, 0, &ts);
  SG_CHECK_EQ_INT(ts.yields, 2);
  SG_CHECK_EQ_INT(ts.yield_freed_bytes, 12 * MiB);
  sg_kv_mem_free(m);
}

static void test_yield_on_host_uses_the_budget(void) {
  sg_kv_host *h = sg_kv_host_new();
  sg_kv_backend b;
  sg_kv_host_backend(h, &b);
  size_t budget = 4 * MiB;
  sg_kv_mem_opts o = {.slab_bytes = 1 * MiB, .max_block_bytes = budget};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(&b, &budget, 1, &o, &m, &err), err);
  for (int i = 0; i < 16; i++)
    SG_CHECK_OK(put(m, i, 256 * KiB), err);
  SG_CHECK_EQ_INT(sg_kv_mem_yield(m, 0, 3 * MiB, NULL), 3 * MiB);
  sg_kv_tier_stats ts;
  sg_kv_mem_tier_stats(m, 0, &ts);
  SG_CHECK_EQ_INT(ts.limit_bytes, 1 * MiB);
  SG_CHECK_EQ_INT(ts.blocks, 4);
  sg_kv_mem_free(m);
  sg_kv_host_free(h);
}

static void test_device_that_vanishes(void) {
  wrap w0, w1;
  wrap_init(&w0, "a");
  wrap_init(&w1, "b");
  sg_kv_backend b[2] = {wrap_backend(&w0, "cuda:0"), wrap_backend(&w1, "cuda:1")};
  size_t budgets[2] = {2 * MiB, 2 * MiB};
  sg_kv_mem_opts o = {.slab_bytes = 1 * MiB, .max_block_bytes = 2 * MiB};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(b, budgets, 2, &o, &m, &err), err);
  for (int i = 0; i < 12; i++)
    SG_CHECK_OK(put(m, i, 256 * KiB), err);
  SG_CHECK(w0.slabs > 0 && w1.slabs > 0); /* spread over both */
  w0.fail = true;
  /* Every GET: the right bytes or a miss, never wrong data. */
  int hits = 0, misses = 0;
  for (int i = 0; i < 12; i++) {
    int rc = get(m, i, 256 * KiB);
    SG_CHECK(rc == 0 || rc == SG_EIO || rc == SG_ENOENT);
    rc == 0 ? hits++ : misses++;
  }
  SG_CHECK(hits > 0 && misses > 0);
  sg_kv_stats st;
  sg_kv_mem_stats(m, &st);
  SG_CHECK_EQ_INT(st.device_errors, 1);
  SG_CHECK(st.lost_blocks > 0);
  SG_CHECK_EQ_INT(w0.slabs, 0);
  sg_kv_tier_stats ts;
  sg_kv_mem_tier_stats(m, 0, &ts);
  SG_CHECK(ts.failed);
  /* New blocks go to the device that is left. */
  for (int i = 50; i < 60; i++)
    SG_CHECK_OK(put(m, i, 256 * KiB), err);
  SG_CHECK_EQ_INT(get(m, 59, 256 * KiB), 0);
  w1.fail = true;
  SG_CHECK_EQ_INT(put(m, 70, 256 * KiB), SG_EIO);
  SG_CHECK_EQ_INT(put(m, 71, 256 * KiB), SG_EFULL);
  SG_CHECK_EQ_INT(get(m, 59, 256 * KiB), SG_ENOENT);
  sg_kv_mem_free(m);
}

static void test_replace_and_empty(void) {
  wrap w;
  wrap_init(&w, "t");
  sg_kv_backend b = wrap_backend(&w, "t");
  size_t budget = 1 * MiB;
  sg_kv_mem_opts o = {.slab_bytes = 1 * MiB, .max_block_bytes = budget};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(&b, &budget, 1, &o, &m, &err), err);
  SG_CHECK_OK(put(m, 1, 0), err);
  SG_CHECK_EQ_INT(get(m, 1, 0), 0);
  SG_CHECK_OK(put(m, 1, 5000), err);
  SG_CHECK_EQ_INT(get(m, 1, 5000), 0);
  sg_kv_stats st;
  sg_kv_mem_stats(m, &st);
  SG_CHECK_EQ_INT(st.blocks, 1);
  SG_CHECK_EQ_INT(st.used_bytes, 5000);
  /* a destination too small: an error, not a short copy */
  char k[SG_KV_KEY_MAX + 1];
  size_t kn;
  key_of(1, k, &kn);
  uint8_t small[10];
  sg_kv_meta meta;
  SG_CHECK_EQ_INT(sg_kv_mem_get(m, k, kn, &meta, small, sizeof small, &err),
                  SG_ERANGE);
  sg_kv_mem_free(m);
}

/* A small budget with the default 64 MiB slab: one size class must not
 * take the whole budget, so a block of another size evicts nothing. */
static void test_small_budget_holds_two_sizes(void) {
  wrap w;
  wrap_init(&w, "t");
  sg_kv_backend b = wrap_backend(&w, "t");
  size_t budget = 8 * MiB;
  sg_kv_mem_opts o = {.max_block_bytes = budget};
  sg_kv_mem *m;
  sg_err err;
  SG_CHECK_OK(sg_kv_mem_new(&b, &budget, 1, &o, &m, &err), err);
  SG_CHECK_OK(put(m, 1, 100000), err);
  SG_CHECK(w.slabs <= budget / 8);
  SG_CHECK_OK(put(m, 2, 5000), err);
  SG_CHECK_OK(put(m, 3, 2 * MiB), err); /* larger than an eighth: its own */
  SG_CHECK_EQ_INT(get(m, 1, 100000), 0);
  SG_CHECK_EQ_INT(get(m, 2, 5000), 0);
  SG_CHECK_EQ_INT(get(m, 3, 2 * MiB), 0);
  sg_kv_stats st;
  sg_kv_mem_stats(m, &st);
  SG_CHECK_EQ_INT(st.evictions, 0);
  sg_kv_mem_free(m);
}

SG_TEST_MAIN(SG_TEST(test_size_classes), SG_TEST(test_small_budget_holds_two_sizes), SG_TEST(test_lru_eviction_and_refresh),
             SG_TEST(test_mixed_sizes_stay_in_budget),
             SG_TEST(test_yield_leaves_the_reserve),
             SG_TEST(test_yield_on_host_uses_the_budget),
             SG_TEST(test_device_that_vanishes),
             SG_TEST(test_replace_and_empty))
