/* fuzz_extract.c: candidate extraction on arbitrary bytes.
 *
 * The first byte picks the language and the entry; the rest is the text, in
 * a buffer of exactly its size (no NUL), so a read past it is caught. A found
 * span must lie inside the text; other outcomes carry a reason. The found
 * span then goes through sg_tidy_candidate as the controller passes it. */
#include "core/sg_extract.h"
#include "core/sg_tidy.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const char *const langs[] = {"c", "cuda", "python", "other"};
  static const char *const entries[] = {NULL, "f", "ModelNew", "matmul"};
  const char *lang = langs[data[0] & 3];
  const char *entry = entries[(data[0] >> 2) & 3];
  size_t len = size - 1;
  char *text = malloc(len ? len : 1);
  memcpy(text, data + 1, len);
  sg_extracted x;
  sg_extract_candidate(text, len, lang, entry, &x);
  if (x.outcome == SG_EXTRACT_FOUND) {
    assert(x.start <= len && x.len <= len - x.start);
    assert(x.reason == NULL);
    size_t fixed_len = 0;
    int changes = 0;
    char *fixed = sg_tidy_candidate(text + x.start, x.len, lang, entry,
                                     &fixed_len, &changes);
    assert((fixed == NULL) == (changes == 0));
    assert(fixed == NULL || fixed[fixed_len] == '\0');
    free(fixed);
  } else {
    assert(x.reason != NULL && x.len == 0);
    assert(strcmp(sg_extract_outcome_name(x.outcome), "unknown") != 0);
  }
  free(text);
  return 0;
}
