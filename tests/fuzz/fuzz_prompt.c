/* fuzz_prompt.c: the prompt template syntax (a user's template file) and the
 * feedback cap (compiler output, a kernel's stderr) on arbitrary bytes. The
 * expansion must end with 0 or an error, never read past the text; the cap
 * must stay within its size and give valid UTF-8. */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "run/sg_feedback.h"
#include "run/sg_prompt.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = sg_strndup((const char *)data, size);
  static const sg_prompt_var vars[] = {
      {"a", "A"}, {"empty", ""}, {"task.name", "t"}, {"code", "{{a}}"}};
  sg_err err;
  int check = sg_prompt_expand("fuzz.txt", text, vars, 4, NULL, &err);
  sg_buf out;
  sg_buf_init(&out, 1 << 16);
  int rc = sg_prompt_expand("fuzz.txt", text, vars, 4, &out, &err);
  /* checking finds every error that rendering finds */
  if (rc == SG_EPARSE && check == 0)
    abort();
  sg_buf_free(&out);

  size_t max = 64 + (size % 512);
  for (int head_only = 0; head_only < 2; head_only++) {
    char *c = sg_feedback_cap((const char *)data, size, max, head_only);
    if (strlen(c) > max)
      abort();
    json_t *j = json_string(c); /* NULL for invalid UTF-8 */
    if (j == NULL)
      abort();
    json_decref(j);
    free(c);
  }
  free(text);
  return 0;
}
