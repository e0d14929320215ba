/* sg_fm_tokens.c: the test model's tokenizer and its prefix cache
 * (sg_fakemodel.h): text is cut into word, space and punctuation pieces,
 * each one token id; the cache remembers token sequences of recent prompts
 * so a request that starts with one is served from it, as a server's prefix
 * cache would. */
#include "testserver/sg_fakemodel.h"

#include "common/sg_alloc.h"
#include "common/sg_hash.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

enum { CL_WORD, CL_SPACE, CL_TAB, CL_NL, CL_PUNCT };

static int char_class(unsigned char c) {
  if (isalnum(c) || c == '_' || c >= 0x80)
    return CL_WORD;
  if (c == ' ')
    return CL_SPACE;
  if (c == '\t')
    return CL_TAB;
  if (c == '\n' || c == '\r')
    return CL_NL;
  return CL_PUNCT;
}

/* The length of the piece that starts at text[i]. */
static size_t piece_len(const unsigned char *t, size_t len, size_t i) {
  int c = char_class(t[i]);
  size_t n = 1;
  if (c == CL_PUNCT || t[i] == 0)
    return 1;
  if (c == CL_SPACE && i + 1 < len && char_class(t[i + 1]) == CL_WORD &&
      t[i + 1] != 0) {
    /* " word": the space joins the word, as BPE vocabularies do. */
    c = CL_WORD;
    n = 1;
  }
  while (n < SG_FM_PIECE_MAX && i + n < len && t[i + n] != 0 &&
         char_class(t[i + n]) == c)
    n++;
  return n;
}

size_t sg_fm_tokenize(const char *text, size_t len, int32_t *ids,
                      size_t *ends, size_t max) {
  const unsigned char *t = (const unsigned char *)text;
  size_t count = 0;
  for (size_t i = 0; i < len;) {
    size_t n = piece_len(t, len, i);
    if (count < max) {
      if (ids) {
        uint32_t id = (uint32_t)n << 24;
        for (size_t k = 0; k < n; k++)
          id |= (uint32_t)t[i + k] << (16 - 8 * k);
        ids[count] = (int32_t)id;
      }
      if (ends)
        ends[count] = i + n;
    }
    count++;
    i += n;
  }
  return count;
}

size_t sg_fm_token_piece(int32_t id, char piece[SG_FM_PIECE_MAX]) {
  if (id <= 0)
    return 0;
  uint32_t u = (uint32_t)id;
  size_t n = u >> 24;
  if (n < 1 || n > SG_FM_PIECE_MAX)
    return 0;
  for (size_t k = 0; k < SG_FM_PIECE_MAX; k++) {
    unsigned char b = (unsigned char)(u >> (16 - 8 * k));
    if ((k < n) != (b != 0))
      return 0; /* a used byte is NUL, or an unused one is not */
    if (k < n)
      piece[k] = (char)b;
  }
  return n;
}

int sg_fm_detokenize(const int32_t *ids, size_t n, sg_buf *out, sg_err *err) {
  for (size_t i = 0; i < n; i++) {
    char piece[SG_FM_PIECE_MAX];
    size_t len = sg_fm_token_piece(ids[i], piece);
    if (len == 0)
      return sg_err_set(err, SG_EINVAL, "token id %ld at index %zu is not in the vocabulary",
                        (long)ids[i], i);
    sg_buf_append(out, piece, len);
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Prefix cache model                                                        */

typedef struct cache_entry {
  int32_t *ids;
  size_t n, cap;
  uint64_t handle; /* 0: empty */
} cache_entry;

struct sg_fm_cache {
  cache_entry *entries;
  size_t max;
  size_t next; /* ring position of the next insert */
  size_t count;
  uint64_t serial;
};

/* A remembered sequence holds at most this many tokens (a bound on memory:
 * 64 entries of 4 bytes each, 64 MiB at most). */
#define CACHE_ENTRY_MAX_TOKENS (256u << 10)

sg_fm_cache *sg_fm_cache_new(size_t max_prompts) {
  assert(max_prompts > 0);
  sg_fm_cache *c = sg_calloc(1, sizeof *c);
  c->entries = sg_calloc(max_prompts, sizeof *c->entries);
  c->max = max_prompts;
  return c;
}

void sg_fm_cache_free(sg_fm_cache *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->max; i++)
    free(c->entries[i].ids);
  free(c->entries);
  free(c);
}

static void entry_append(cache_entry *e, const int32_t *ids, size_t n) {
  if (e->n + n > CACHE_ENTRY_MAX_TOKENS)
    n = CACHE_ENTRY_MAX_TOKENS - e->n;
  if (n == 0)
    return;
  if (e->n + n > e->cap) {
    size_t cap = e->cap ? e->cap : 64;
    while (cap < e->n + n)
      cap *= 2;
    e->ids = sg_realloc(e->ids, cap * sizeof *e->ids);
    e->cap = cap;
  }
  memcpy(e->ids + e->n, ids, n * sizeof *ids);
  e->n += n;
}

size_t sg_fm_cache_lookup_insert(sg_fm_cache *c, const int32_t *ids, size_t n,
                                 uint64_t *handle) {
  size_t best = 0;
  for (size_t e = 0; e < c->count; e++) {
    const cache_entry *ce = &c->entries[e];
    size_t m = ce->n < n ? ce->n : n;
    size_t k = 0;
    while (k < m && ce->ids[k] == ids[k])
      k++;
    if (k > best)
      best = k;
  }
  /* vLLM always computes the last prompt token (its logits start the
   * answer), so a fully seen prompt hits at most n-1 tokens. */
  if (n > 0 && best > n - 1)
    best = n - 1;
  best -= best % SG_FM_CACHE_BLOCK_TOKENS;

  cache_entry *slot = &c->entries[c->next];
  slot->n = 0;
  slot->handle = ++c->serial;
  entry_append(slot, ids, n);
  c->next = (c->next + 1) % c->max;
  if (c->count < c->max)
    c->count++;
  if (handle)
    *handle = slot->handle;
  return best;
}

void sg_fm_cache_extend(sg_fm_cache *c, uint64_t handle, const int32_t *ids, size_t n) {
  for (size_t e = 0; e < c->count; e++)
    if (c->entries[e].handle == handle) {
      entry_append(&c->entries[e], ids, n);
      return;
    }
}
