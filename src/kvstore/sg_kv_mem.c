/* sg_kv_mem.c: blocks in slabs, LRU per tier, yields (see the header).
 *
 * Invariants (asserted): a tier's slab_total is the sum of its slabs' sizes
 * and, outside sg_kv_mem_put's own loop, never above its limit; every slab
 * holds at least one block (an empty slab is freed at once); an entry is in
 * exactly one hash chain and one tier's LRU list. */
#include "kvstore/sg_kv_mem.h"

#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_hash.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct slab slab;
typedef struct entry entry;

struct entry {
  entry *hnext;
  entry *prev, *next; /* the tier's LRU list: head is the oldest */
  slab *sl;
  uint32_t slot;
  uint64_t hash;
  uint64_t used_at; /* the store's tick when last put or hit */
  sg_kv_meta meta;
  size_t key_len;
  char key[SG_KV_KEY_MAX + 1];
};

struct slab {
  slab *prev, *next;
  uint64_t addr;
  size_t bytes, cls;
  size_t ti; /* its tier's index */
  uint32_t nslots, nfree;
  uint32_t *free_stack;
};

typedef struct tier {
  sg_kv_backend be;
  size_t budget, limit;
  size_t slab_total, used, blocks;
  slab *slabs;
  entry *head, *tail;
  bool failed;
  uint64_t yields, yield_freed;
  double yield_max_s, yield_total_s;
} tier;

struct sg_kv_mem {
  tier *t;
  size_t nt;
  entry **buckets;
  size_t nbuckets, nentries;
  uint64_t tick;
  sg_kv_mem_opts opts;
  sg_kv_stats st;
};

size_t sg_kv_mem_class(size_t n) {
  size_t c = 4096;
  while (c < n) {
    size_t mid = c + c / 2;
    if (mid >= n)
      return mid;
    c *= 2;
  }
  return c;
}

static uint64_t key_hash(const char *k, size_t n) { return sg_fnv1a64(k, n); }

static entry *find(const sg_kv_mem *m, const char *k, size_t n, uint64_t h) {
  for (entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->hnext)
    if (e->hash == h && e->key_len == n && memcmp(e->key, k, n) == 0)
      return e;
  return NULL;
}

static void hash_grow(sg_kv_mem *m) {
  size_t nb = m->nbuckets * 2;
  entry **b = sg_calloc(nb, sizeof *b);
  for (size_t i = 0; i < m->nbuckets; i++) {
    entry *e = m->buckets[i];
    while (e) {
      entry *next = e->hnext;
      e->hnext = b[e->hash & (nb - 1)];
      b[e->hash & (nb - 1)] = e;
      e = next;
    }
  }
  free(m->buckets);
  m->buckets = b;
  m->nbuckets = nb;
}

static void hash_remove(sg_kv_mem *m, entry *e) {
  entry **pp = &m->buckets[e->hash & (m->nbuckets - 1)];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  m->nentries--;
}

static void lru_unlink(tier *t, entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    t->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    t->tail = e->prev;
  e->prev = e->next = NULL;
}

static void lru_push(tier *t, entry *e) {
  e->prev = t->tail;
  e->next = NULL;
  if (t->tail)
    t->tail->next = e;
  else
    t->head = e;
  t->tail = e;
}

static void slab_release(tier *t, slab *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    t->slabs = s->next;
  if (s->next)
    s->next->prev = s->prev;
  t->slab_total -= s->bytes;
  t->be.slab_free(t->be.ctx, s->addr, s->bytes);
  free(s->free_stack);
  free(s);
}

/* Takes e out of everything and frees it; its slab goes when empty. */
static void drop(sg_kv_mem *m, tier *t, entry *e) {
  hash_remove(m, e);
  lru_unlink(t, e);
  slab *s = e->sl;
  s->free_stack[s->nfree++] = e->slot;
  t->used -= (size_t)e->meta.length;
  t->blocks--;
  if (s->nfree == s->nslots)
    slab_release(t, s);
  free(e);
}

static void evict(sg_kv_mem *m, tier *t, entry *e) {
  m->st.evictions++;
  m->st.evicted_bytes += (uint64_t)e->meta.length;
  drop(m, t, e);
}

static tier *tier_of(const sg_kv_mem *m, const entry *e) {
  assert(e->sl->ti < m->nt);
  return &m->t[e->sl->ti];
}

int sg_kv_mem_new(const sg_kv_backend *tiers, const size_t *budgets, size_t n,
                  const sg_kv_mem_opts *opts, sg_kv_mem **out, sg_err *err) {
  if (n == 0)
    return sg_err_set(err, SG_EINVAL, "kvstore: no device");
  sg_kv_mem *m = sg_calloc(1, sizeof *m);
  m->t = sg_calloc(n, sizeof *m->t);
  m->nt = n;
  for (size_t i = 0; i < n; i++) {
    m->t[i].be = tiers[i];
    m->t[i].budget = m->t[i].limit = budgets[i];
  }
  m->opts = *opts;
  if (!m->opts.slab_bytes)
    m->opts.slab_bytes = 64u << 20;
  m->nbuckets = 1024;
  m->buckets = sg_calloc(m->nbuckets, sizeof *m->buckets);
  *out = m;
  return 0;
}

void sg_kv_mem_free(sg_kv_mem *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->nt; i++) {
    tier *t = &m->t[i];
    while (t->head)
      drop(m, t, t->head);
    assert(!t->slabs && t->slab_total == 0);
  }
  free(m->buckets);
  free(m->t);
  free(m);
}

void sg_kv_mem_fail_tier(sg_kv_mem *m, size_t i, const char *why) {
  (void)why;
  tier *t = &m->t[i];
  while (t->head) {
    m->st.lost_blocks++;
    drop(m, t, t->head);
  }
  t->failed = true;
  t->limit = 0;
}

/* A free slot of class cls in a healthy tier, the one with the most room. */
static slab *free_slot(sg_kv_mem *m, size_t cls, tier **tp) {
  slab *best = NULL;
  for (size_t i = 0; i < m->nt; i++) {
    tier *t = &m->t[i];
    if (t->failed)
      continue;
    for (slab *s = t->slabs; s; s = s->next)
      if (s->cls == cls && s->nfree > 0 &&
          (!best || t->limit - t->slab_total > (*tp)->limit - (*tp)->slab_total)) {
        best = s;
        *tp = t;
        break;
      }
  }
  return best;
}

/* A new slab of class cls in the healthy tier with the most room for one,
 * or NULL. An allocation the device refuses (an evaluation holds the memory)
 * caps that tier where it is. */
static slab *new_slab(sg_kv_mem *m, size_t cls, tier **tp) {
  for (;;) {
    tier *best = NULL;
    for (size_t i = 0; i < m->nt; i++) {
      tier *t = &m->t[i];
      if (!t->failed && t->limit >= t->slab_total + cls &&
          (!best || t->limit - t->slab_total > best->limit - best->slab_total))
        best = t;
    }
    if (!best)
      return NULL;
    /* At most an eighth of the budget (but one block): a single slab of
     * one size class must not take a small budget whole, or blocks of
     * another size would evict everything to get room. */
    size_t room = best->limit - best->slab_total;
    size_t cap = best->budget / 8 > cls ? best->budget / 8 : cls;
    size_t want = m->opts.slab_bytes < room ? m->opts.slab_bytes : room;
    if (want > cap)
      want = cap;
    size_t nslots = want / cls ? want / cls : 1;
    uint64_t addr;
    sg_err e2;
    if (best->be.slab_alloc(best->be.ctx, nslots * cls, &addr, &e2) < 0) {
      best->limit = best->slab_total;
      continue;
    }
    slab *s = sg_calloc(1, sizeof *s);
    s->addr = addr;
    s->cls = cls;
    s->ti = (size_t)(best - m->t);
    s->bytes = nslots * cls;
    s->nslots = s->nfree = (uint32_t)nslots;
    s->free_stack = sg_malloc(nslots * sizeof *s->free_stack);
    for (uint32_t k = 0; k < nslots; k++)
      s->free_stack[k] = (uint32_t)nslots - 1 - k;
    s->next = best->slabs;
    if (best->slabs)
      best->slabs->prev = s;
    best->slabs = s;
    best->slab_total += s->bytes;
    *tp = best;
    return s;
  }
}

/* Evicts the oldest block among the healthy tiers that could hold a block
 * of class cls. false when there is none. */
static bool evict_for(sg_kv_mem *m, size_t cls) {
  tier *best = NULL;
  for (size_t i = 0; i < m->nt; i++) {
    tier *t = &m->t[i];
    if (t->failed || !t->head || t->limit < cls)
      continue;
    if (!best || t->head->used_at < best->head->used_at)
      best = t;
  }
  if (!best)
    return false;
  evict(m, best, best->head);
  return true;
}

static void tier_failed(sg_kv_mem *m, tier *t) {
  m->st.device_errors++;
  sg_kv_mem_fail_tier(m, (size_t)(t - m->t), "device error");
}

int sg_kv_mem_put(sg_kv_mem *m, const char *key, size_t key_len,
                  const sg_kv_meta *meta, const void *data, sg_err *err) {
  assert(key_len <= SG_KV_KEY_MAX && meta->length >= 0);
  size_t len = (size_t)meta->length;
  uint64_t h = key_hash(key, key_len);
  entry *old = find(m, key, key_len, h);
  if (old)
    drop(m, tier_of(m, old), old);
  m->st.puts++;
  size_t cls = sg_kv_mem_class(len ? len : 1);
  bool fits = m->opts.max_block_bytes == 0 || len <= m->opts.max_block_bytes;
  tier *t = NULL;
  slab *s = NULL;
  while (fits) {
    s = free_slot(m, cls, &t);
    if (!s)
      s = new_slab(m, cls, &t);
    if (s || !evict_for(m, cls))
      break;
  }
  if (!s) {
    m->st.put_rejected++;
    return sg_err_set(err, SG_EFULL,
                      "kvstore: no room for a block of %zu bytes (%s)", len,
                      fits ? "every device is full, yielding or failed"
                           : "over the largest block");
  }
  uint32_t slot = s->free_stack[--s->nfree];
  if (len && t->be.write(t->be.ctx, s->addr + (uint64_t)slot * s->cls, data,
                         len, err) < 0) {
    s->free_stack[s->nfree++] = slot;
    if (s->nfree == s->nslots)
      slab_release(t, s);
    m->st.put_rejected++;
    tier_failed(m, t);
    return sg_err_prefix(err, "kvstore: %s failed, its blocks are dropped",
                         t->be.name);
  }
  entry *e = sg_calloc(1, sizeof *e);
  e->sl = s;
  e->slot = slot;
  e->hash = h;
  e->used_at = ++m->tick;
  e->meta = *meta;
  e->key_len = key_len;
  memcpy(e->key, key, key_len);
  if (m->nentries >= m->nbuckets)
    hash_grow(m);
  e->hnext = m->buckets[h & (m->nbuckets - 1)];
  m->buckets[h & (m->nbuckets - 1)] = e;
  m->nentries++;
  lru_push(t, e);
  t->used += len;
  t->blocks++;
  m->st.put_bytes += len;
  return 0;
}

int sg_kv_mem_get(sg_kv_mem *m, const char *key, size_t key_len,
                  sg_kv_meta *meta, void *dst, size_t room, sg_err *err) {
  entry *e = find(m, key, key_len, key_hash(key, key_len));
  if (!dst) {
    /* A lookup before the copy: a miss is counted here, a hit by the
     * copy that follows. */
    if (!e) {
      m->st.gets++;
      m->st.misses++;
      return SG_ENOENT;
    }
    *meta = e->meta;
    return 0;
  }
  m->st.gets++;
  if (!e) {
    m->st.misses++;
    return SG_ENOENT;
  }
  size_t len = (size_t)e->meta.length;
  if (len > room) {
    m->st.misses++;
    return sg_err_set(err, SG_ERANGE, "kvstore: block of %zu bytes, room %zu",
                      len, room);
  }
  tier *t = tier_of(m, e);
  if (len && t->be.read(t->be.ctx, dst, e->sl->addr + (uint64_t)e->slot * e->sl->cls,
                        len, err) < 0) {
    m->st.misses++;
    tier_failed(m, t);
    return sg_err_prefix(err, "kvstore: %s failed, its blocks are dropped",
                         t->be.name);
  }
  *meta = e->meta;
  e->used_at = ++m->tick;
  lru_unlink(t, e);
  lru_push(t, e);
  m->st.hits++;
  m->st.get_bytes += len;
  return 0;
}

bool sg_kv_mem_contains(sg_kv_mem *m, const char *key, size_t key_len) {
  m->st.exists++;
  return find(m, key, key_len, key_hash(key, key_len)) != NULL;
}

size_t sg_kv_mem_yield(sg_kv_mem *m, size_t i, size_t reserve_bytes,
                       double *seconds) {
  assert(i < m->nt);
  tier *t = &m->t[i];
  double t0 = sg_clock_now_s();
  size_t before = t->slab_total;
  if (!t->failed) {
    size_t dev_free, dev_total;
    size_t limit = t->budget > reserve_bytes ? t->budget - reserve_bytes : 0;
    if (t->be.mem_info && t->be.mem_info(t->be.ctx, &dev_free, &dev_total) == 0) {
      /* What we hold is freeable too: keep what leaves reserve_bytes free. */
      size_t avail = t->slab_total + dev_free;
      limit = avail > reserve_bytes ? avail - reserve_bytes : 0;
      if (limit > t->budget)
        limit = t->budget;
    }
    t->limit = limit;
    while (t->slab_total > t->limit) {
      assert(t->head); /* slabs are never empty */
      evict(m, t, t->head);
    }
  }
  double dt = sg_clock_now_s() - t0;
  size_t freed = before - t->slab_total;
  t->yields++;
  t->yield_freed += freed;
  t->yield_total_s += dt;
  if (dt > t->yield_max_s)
    t->yield_max_s = dt;
  m->st.yields++;
  if (seconds)
    *seconds = dt;
  return freed;
}

void sg_kv_mem_unyield(sg_kv_mem *m, size_t i) {
  assert(i < m->nt);
  if (!m->t[i].failed)
    m->t[i].limit = m->t[i].budget;
}

size_t sg_kv_mem_tiers(const sg_kv_mem *m) { return m->nt; }

void sg_kv_mem_stats(const sg_kv_mem *m, sg_kv_stats *st) {
  *st = m->st;
  st->blocks = st->used_bytes = st->slab_bytes = 0;
  for (size_t i = 0; i < m->nt; i++) {
    st->blocks += m->t[i].blocks;
    st->used_bytes += m->t[i].used;
    st->slab_bytes += m->t[i].slab_total;
  }
}

void sg_kv_mem_tier_stats(const sg_kv_mem *m, size_t i, sg_kv_tier_stats *st) {
  const tier *t = &m->t[i];
  memset(st, 0, sizeof *st);
  st->name = t->be.name;
  st->failed = t->failed;
  st->budget_bytes = t->budget;
  st->limit_bytes = t->limit;
  st->slab_bytes = t->slab_total;
  st->used_bytes = t->used;
  st->blocks = t->blocks;
  st->yields = t->yields;
  st->yield_freed_bytes = t->yield_freed;
  st->yield_max_s = t->yield_max_s;
  st->yield_total_s = t->yield_total_s;
}

void sg_kv_mem_each(const sg_kv_mem *m,
                    void (*fn)(void *data, const char *key, size_t key_len),
                    void *data) {
  for (size_t i = 0; i < m->nt; i++)
    for (const entry *e = m->t[i].head; e; e = e->next)
      fn(data, e->key, e->key_len);
}
