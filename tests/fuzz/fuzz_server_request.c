/* fuzz_server_request.c: the test server's readers of what clients send:
 * request bodies (chat when the first byte is even, else completions) and
 * where a continued answer goes on, the
 * X-Specgen-Fault spec, and the tokenizer's round trip. */
#include "common/sg_buf.h"
#include "testserver/sg_fakemodel.h"
#include "testserver/sg_llm_server.h"
#include "testserver/sg_server_request.h"

#include <assert.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool chat = (data[0] & 1) == 0;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;

  json_t *body = json_loadb(text, len, 0, NULL);
  if (body) {
    sg_server_request r;
    sg_server_request_init(&r);
    int rc = sg_server_request_parse(body, chat, &r);
    if (rc == 0) {
      /* The context is a prefix of the prompt, always. */
      assert(r.context.len <= r.prompt.len);
      assert(memcmp(sg_buf_str(&r.context), sg_buf_str(&r.prompt), r.context.len) == 0);
      assert(r.model != NULL);
      /* A continued answer goes on inside the answer it is given. */
      const char *ans = sg_buf_str(&r.prompt);
      const char *after = sg_server_answer_after(sg_buf_str(&r.answer_prefix), ans);
      assert(after >= ans && after <= ans + strlen(ans));
    } else {
      assert(rc == SG_EINVAL && r.msg[0] != '\0');
    }
    sg_server_request_free(&r);
    json_decref(body);
  }

  char *spec = strndup(text, len < 200 ? len : 200);
  sg_llm_fault f;
  sg_err err;
  sg_err_clear(&err);
  if (sg_llm_fault_parse(spec, &f, &err) == 0)
    assert(f.kind >= SG_LLM_FAULT_NONE && f.kind < SG_LLM_FAULT__COUNT);
  else
    assert(err.msg[0] != '\0');
  free(spec);

  size_t n = sg_fm_tokenize(text, len, NULL, NULL, 0);
  int32_t *ids = malloc((n + 1) * sizeof *ids);
  sg_fm_tokenize(text, len, ids, NULL, n);
  sg_buf back;
  sg_buf_init(&back, 0);
  int rc = sg_fm_detokenize(ids, n, &back, &err);
  /* Text with a NUL byte has no token for it; everything else round-trips. */
  if (memchr(text, 0, len) == NULL) {
    assert(rc == 0 && back.len == len && memcmp(back.data ? back.data : "", text, len) == 0);
  }
  sg_buf_free(&back);
  free(ids);
  return 0;
}
