/* fuzz_think.c: the inline <think> splitter on any bytes, in any split.
 *
 * The first byte picks the mode (% 3) and the piece size ((byte / 3) % 13 + 1);
 * the rest is fed in pieces, each in an exact-size buffer so an over-read is
 * caught, and again whole. The reasoning and content must come out the same
 * both ways, byte for byte, with no empty piece: any difference aborts.
 */
#include "llm/sg_llm_chunk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct sink {
  char *r, *c;
  size_t nr, nc;
} sink;

static void put(void *d, bool reasoning, const char *s, size_t n) {
  sink *k = d;
  if (n == 0)
    abort();
  char **buf = reasoning ? &k->r : &k->c;
  size_t *len = reasoning ? &k->nr : &k->nc;
  *buf = realloc(*buf, *len + n);
  memcpy(*buf + *len, s, n);
  *len += n;
}

static void split(sg_llm_think_mode mode, const uint8_t *data, size_t size, size_t piece,
                  sink *out) {
  memset(out, 0, sizeof *out);
  sg_llm_think t;
  sg_llm_think_init(&t, mode);
  for (size_t off = 0; off < size; off += piece) {
    size_t n = size - off < piece ? size - off : piece;
    char *buf = malloc(n);
    memcpy(buf, data + off, n);
    sg_llm_think_feed(&t, buf, n, put, out);
    free(buf);
  }
  sg_llm_think_flush(&t, put, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  sg_llm_think_mode mode = (sg_llm_think_mode)(data[0] % 3);
  size_t piece = (size_t)((data[0] / 3) % 13) + 1;
  data++;
  size--;
  sink a, b;
  split(mode, data, size, piece, &a);
  split(mode, data, size, size ? size : 1, &b);
  if (a.nr != b.nr || a.nc != b.nc || (a.nr && memcmp(a.r, b.r, a.nr)) ||
      (a.nc && memcmp(a.c, b.c, a.nc)))
    abort();
  /* Nothing is lost but the tags and, before an opening tag, whitespace. */
  if (a.nr + a.nc > size)
    abort();
  free(a.r);
  free(a.c);
  free(b.r);
  free(b.c);
  return 0;
}
