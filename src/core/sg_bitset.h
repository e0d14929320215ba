/* sg_bitset.h: a growable set of small integers whose lowest member at or
 * after a point is found a word at a time. The scheduler keeps its idle
 * devices and its workflows with waiting requests in these, so that finding
 * work costs O(n / 64), not a scan (docs/benchmarks.md, "Scale"). */
#ifndef SG_BITSET_H
#define SG_BITSET_H

#include "common/sg_alloc.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A set of small integers, lowest first. Zeroed: empty. */
typedef struct sg_bitset {
  uint64_t *w;
  size_t nw;
} sg_bitset;

static inline void sg_bitset_grow(sg_bitset *b, size_t bit) {
  size_t need = bit / 64 + 1;
  if (need <= b->nw)
    return;
  size_t n = b->nw ? b->nw : 1;
  while (n < need)
    n *= 2;
  b->w = sg_realloc(b->w, n * sizeof *b->w);
  memset(b->w + b->nw, 0, (n - b->nw) * sizeof *b->w);
  b->nw = n;
}

static inline void sg_bitset_set(sg_bitset *b, size_t bit) {
  sg_bitset_grow(b, bit);
  b->w[bit / 64] |= 1ull << (bit % 64);
}

static inline void sg_bitset_clear(sg_bitset *b, size_t bit) {
  if (bit / 64 < b->nw)
    b->w[bit / 64] &= ~(1ull << (bit % 64));
}

/* The lowest member >= from, or SIZE_MAX. */
static inline size_t sg_bitset_next(const sg_bitset *b, size_t from) {
  size_t i = from / 64;
  if (i >= b->nw)
    return SIZE_MAX;
  uint64_t w = b->w[i] & (~0ull << (from % 64));
  for (;;) {
    if (w != 0)
      return i * 64 + (size_t)__builtin_ctzll(w);
    if (++i >= b->nw)
      return SIZE_MAX;
    w = b->w[i];
  }
}

static inline void sg_bitset_free(sg_bitset *b) { free(b->w); }

#endif
