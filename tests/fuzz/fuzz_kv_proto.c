/* fuzz_kv_proto.c: the KV store's header parser (kvstore/sg_kv_proto.h) on
 * any bytes, as any client could send them.
 *
 * The input is cut into 186-byte headers, each copied to an exact-size
 * buffer so an over-read is caught. Whatever parses must have fields in
 * LMCache's ranges and a canonical key that is its own canonical form (two
 * spellings of a key must never land on two blocks; one exception, below),
 * and must pack back to
 * a header that parses to the same request. */
#include "kvstore/sg_kv_proto.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t off = 0; off + SG_KV_REQ_BYTES <= size || off == 0;
       off += SG_KV_REQ_BYTES) {
    uint8_t *buf = malloc(SG_KV_REQ_BYTES);
    memset(buf, ' ', SG_KV_REQ_BYTES);
    size_t n = size - off < SG_KV_REQ_BYTES ? size - off : SG_KV_REQ_BYTES;
    memcpy(buf, data + off, n);
    sg_kv_req r;
    sg_err err;
    if (sg_kv_req_parse(buf, &r, &err) == 0) {
      assert(r.command >= SG_KV_PUT && r.command <= SG_KV_HEALTH);
      assert(r.key_len <= SG_KV_KEY_MAX && r.key[r.key_len] == 0);
      /* Idempotent, except where merging tags moved a tag whose value ends
       * in whitespace to the end: parsing strips the key's ends, so that
       * text would read as another key (docs/kvstore.md). */
      char again[SG_KV_KEY_MAX + 1];
      size_t an;
      int rc = sg_kv_key_canon(r.key, r.key_len, again, &an, &err);
      unsigned char last = (unsigned char)r.key[r.key_len - 1];
      bool clean_end = !(last == ' ' || (last >= '\t' && last <= '\r') ||
                         (last >= 0x1c && last <= 0x1f));
      if (clean_end)
        assert(rc == 0 && an == r.key_len && memcmp(again, r.key, an) == 0);
      uint8_t *packed = malloc(SG_KV_REQ_BYTES);
      sg_kv_req_pack(&r, packed);
      sg_kv_req back;
      rc = sg_kv_req_parse(packed, &back, &err);
      assert(rc == 0 && back.command == r.command && back.length == r.length);
      assert(!clean_end ||
             (back.key_len == r.key_len && memcmp(back.key, r.key, r.key_len) == 0));
      free(packed);
    }
    free(buf);
    if (size < SG_KV_REQ_BYTES)
      break;
  }
  return 0;
}
