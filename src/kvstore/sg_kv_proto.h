/* sg_kv_proto.h: LMCache's remote server protocol ("lm://host:port"), as
 * bytes: pure parsing and packing, no I/O (docs/kvstore.md).
 *
 * The wire format is LMCache's lmcache/v1/protocol.py, byte for byte: a
 * request is nine int32 fields and a 150-byte key (struct format
 * "iiiiiiiii150s", 186 bytes); a reply is nine int32 fields (36 bytes) and,
 * for a GET hit or a LIST, `length` bytes of payload. The integers are in the
 * client's native order, which is little-endian on every machine vLLM runs
 * on; we read and write little-endian explicitly.
 *
 * Validation follows what LMCache's server does when it deserializes a
 * header: an unknown command, memory format, dtype or location, a key that is
 * not UTF-8 or not a cache-engine key ("model@world@worker@hash@dtype[...]")
 * raises there and the server closes the connection; here the parser returns
 * SG_EPROTO with a message naming the field, and the server closes too.
 * Keys are compared as LMCache compares its parsed CacheEngineKey objects:
 * sg_kv_key_canon() turns the key text into one canonical spelling (numbers
 * in their plain form, the hash in lowercase hex, repeated tags merged), so
 * two spellings of the same key find the same block.
 */
#ifndef SG_KV_PROTO_H
#define SG_KV_PROTO_H

#include "common/sg_error.h"

#include <stddef.h>
#include <stdint.h>

#define SG_KV_KEY_MAX 150                        /* MAX_KEY_LENGTH */
#define SG_KV_REQ_BYTES (4 * 9 + SG_KV_KEY_MAX)  /* 186 */
#define SG_KV_REPLY_BYTES (4 * 9)                /* 36 */

/* ClientCommand (an IntEnum from 1). */
enum {
  SG_KV_PUT = 1,
  SG_KV_GET = 2,
  SG_KV_EXIST = 3,
  SG_KV_LIST = 4,
  SG_KV_HEALTH = 5,
};

/* ServerReturnCode. */
enum { SG_KV_SUCCESS = 200, SG_KV_FAIL = 400 };

/* Highest valid values of the enumerations the server decodes:
 * MemoryFormat 0..8 (UNDEFINED .. HS_TD), INT_TO_DTYPE 0..8,
 * INT_TO_LOCATION 0..2. */
#define SG_KV_FMT_MAX 8
#define SG_KV_DTYPE_MAX 8
#define SG_KV_LOCATION_MAX 2

/* The reply the reference server sends for a miss, EXIST, HEALTH: format
 * MemoryFormat(1), dtype torch.float16 (which DTYPE_TO_INT maps to 2), shape
 * zeros, location 0. */
#define SG_KV_FMT_DEFAULT 1
#define SG_KV_DTYPE_F16 2

/* A request header. key is the canonical key (not NUL-terminated inside
 * the protocol; key[key_len] is 0 here for convenience). */
typedef struct sg_kv_req {
  int32_t command, length, fmt, dtype, location;
  int32_t shape[4];
  char key[SG_KV_KEY_MAX + 1];
  size_t key_len;
} sg_kv_req;

typedef struct sg_kv_reply {
  int32_t code, length, fmt, dtype;
  int32_t shape[4];
  int32_t location;
} sg_kv_reply;

/* Parses exactly SG_KV_REQ_BYTES bytes. SG_EPROTO names the bad field. A
 * PUT with a negative length is refused too (LMCache would store an empty
 * block with a negative length; see docs/kvstore.md). */
int sg_kv_req_parse(const uint8_t *buf, sg_kv_req *r, sg_err *err);

/* Packs a request as LMCache's client does: the key (key_len bytes, at most
 * SG_KV_KEY_MAX) padded with spaces. For tests and benchmarks. */
void sg_kv_req_pack(const sg_kv_req *r, uint8_t *out);

void sg_kv_reply_pack(const sg_kv_reply *r, uint8_t *out);
void sg_kv_reply_unpack(const uint8_t *buf, sg_kv_reply *r);

/* The fixed reply for a miss / a failed EXIST (code FAIL) or a success
 * without payload (code SUCCESS). */
void sg_kv_reply_plain(sg_kv_reply *r, int32_t code);

/* The dtype a GET reply carries for a stored dtype: LMCache maps the int to
 * a torch dtype and back, and torch.half is torch.float16, so 1 comes back
 * as 2; every other value is unchanged. */
int32_t sg_kv_dtype_echo(int32_t dtype);

/* Canonical form of a key text (raw, n bytes, the whole 150-byte field with
 * its padding): UTF-8 checked, surrounding whitespace stripped, parsed as
 * LMCache's parse_cache_key does and printed back in canonical form into
 * out (size SG_KV_KEY_MAX + 1; the canonical form is never longer than the
 * text). SG_EPROTO with the reason when it is not a key. */
int sg_kv_key_canon(const char *raw, size_t n, char *out, size_t *out_len,
                    sg_err *err);

#endif
