/* fuzz_sse.c: the SSE parser and the OpenAI chunk interpreter on any bytes.
 *
 * The first byte picks the split: the rest of the input is fed in pieces of
 * (first byte % 17) + 1 bytes, each copied to an exact-size buffer so an
 * over-read is caught; every dispatched event goes through the chunk
 * interpreter. Small caps make the overflow paths reachable.
 */
#include "llm/sg_llm_chunk.h"
#include "llm/sg_sse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  size_t piece = (size_t)(data[0] % 17) + 1;
  data++;
  size--;
  sg_sse p;
  sg_sse_init(&p, 4096, 16384);
  size_t off = 0;
  while (off < size) {
    size_t n = size - off < piece ? size - off : piece;
    char *buf = malloc(n);
    memcpy(buf, data + off, n);
    const char *b = buf;
    size_t left = n;
    int rc = 0;
    while (left > 0) {
      size_t used;
      sg_sse_event ev;
      sg_err err;
      rc = sg_sse_feed(&p, b, left, &used, &ev, &err);
      if (rc < 0)
        break;
      b += used;
      left -= used;
      if (rc != SG_SSE_EVENT)
        break;
      sg_llm_chunk c;
      if (sg_llm_chunk_parse(ev.data, ev.data_len, &c, &err) == 0)
        sg_llm_chunk_free(&c);
    }
    free(buf);
    if (rc < 0)
      break;
    off += n;
  }
  sg_sse_free(&p);
  /* The error-body reader sees the raw bytes too. */
  sg_err e;
  sg_llm_error_from_body(500, (const char *)data, size, SG_EHTTP, &e);
  return 0;
}
