/* sg_hash.c: 64-bit FNV-1a and the normalized source key (sg_hash.h). */
#include "common/sg_hash.h"

#include <stdbool.h>
#include <string.h>

uint64_t sg_fnv1a64_update(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    h = sg_fnv1a64_byte(h, p[i]);
  return h;
}

uint64_t sg_fnv1a64(const void *data, size_t len) {
  return sg_fnv1a64_update(SG_FNV1A64_INIT, data, len);
}

static bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Walks src line by line, calling emit(ctx, bytes, n) with the normalized
 * text in pieces: a line's text without its trailing blanks, preceded by
 * the line ends it owes (held back while only blank lines were seen, so
 * leading and trailing blank lines never come out). */
static void walk(const char *src, size_t len, void (*emit)(void *, const char *, size_t),
                 void *ctx) {
  size_t i = 0, owed = 0;
  bool any = false;
  while (i < len) {
    size_t start = i;
    while (i < len && src[i] != '\n')
      i++;
    size_t end = i;
    while (end > start && blank(src[end - 1]))
      end--;
    if (end > start) {
      for (; any && owed > 0; owed--)
        emit(ctx, "\n", 1);
      emit(ctx, src + start, end - start);
      any = true;
    }
    owed = end > start ? 1 : owed + 1;
    if (i < len)
      i++; /* the '\n' */
  }
}

typedef struct norm_out {
  char *p;
  size_t n;
} norm_out;

static void emit_copy(void *ctx, const char *b, size_t n) {
  norm_out *o = ctx;
  memmove(o->p + o->n, b, n); /* out may be src itself: never ahead of it */
  o->n += n;
}

size_t sg_source_normalize(const char *src, size_t len, char *out) {
  norm_out o = {out, 0};
  walk(src, len, emit_copy, &o);
  return o.n;
}

static void emit_hash(void *ctx, const char *b, size_t n) {
  uint64_t *h = ctx;
  *h = sg_fnv1a64_update(*h, b, n);
}

uint64_t sg_source_key(const char *src, size_t len) {
  uint64_t h = SG_FNV1A64_INIT;
  walk(src, len, emit_hash, &h);
  return h;
}
