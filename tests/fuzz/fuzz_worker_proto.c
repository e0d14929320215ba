/* fuzz_worker_proto.c: the worker protocol's parsers (sg_worker_proto.h) on
 * any bytes, as a remote client or worker could send them.
 *
 * The input, copied to an exact-size buffer so an over-read is caught, is
 * parsed as a request and as a reply. Whatever parses must serialize to one
 * line with no newline inside and parse back to the same type and id: the
 * worker echoes what it accepted, and a round trip that drifts would make
 * the two sides disagree.
 */
#include "pool/sg_jsonl.h"
#include "pool/sg_worker_proto.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_id(const char *a, const char *b) {
  assert((a == NULL) == (b == NULL));
  assert(!a || strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size ? size : 1);
  memcpy(buf, data, size);
  sg_err err;

  sg_worker_request req;
  if (sg_worker_request_parse(buf, size, &req, &err) == 0) {
    json_t *j = sg_worker_request_to_json(&req);
    size_t len;
    char *line = sg_jsonl_line(j, &len);
    json_decref(j);
    assert(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1));
    sg_worker_request back;
    int rc = sg_worker_request_parse(line, len - 1, &back, &err);
    assert(rc == 0);
    assert(back.type == req.type);
    same_id(back.id, req.id);
    assert(back.source_len == req.source_len);
    sg_worker_request_free(&back);
    free(line);
  }
  sg_worker_request_free(&req);

  sg_worker_reply rep;
  if (sg_worker_reply_parse(buf, size, &rep, &err) == 0) {
    json_t *j = sg_worker_reply_to_json(&rep);
    size_t len;
    char *line = sg_jsonl_line(j, &len);
    json_decref(j);
    sg_worker_reply back;
    int rc = sg_worker_reply_parse(line, len - 1, &back, &err);
    assert(rc == 0);
    assert(back.type == rep.type);
    same_id(back.id, rep.id);
    assert(back.cached == rep.cached);
    assert(back.compile_status == rep.compile_status);
    sg_worker_reply_free(&back);
    free(line);
  }
  sg_worker_reply_free(&rep);
  free(buf);
  return 0;
}
