/* sg_jsonl.c: JSON lines (sg_jsonl.h). */
#include "pool/sg_jsonl.h"

#include "common/sg_alloc.h"

#include <stdlib.h>
#include <string.h>

static char *dump_line(const json_t *j, size_t flags, size_t *len) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | flags);
  if (s == NULL) /* only on out of memory: the project's rule is to abort */
    abort();
  size_t n = strlen(s);
  char *line = sg_malloc(n + 2);
  memcpy(line, s, n);
  line[n] = '\n';
  line[n + 1] = '\0';
  free(s);
  if (len != NULL)
    *len = n + 1;
  return line;
}

char *sg_jsonl_line(const json_t *j, size_t *len) {
  return dump_line(j, JSON_ENSURE_ASCII, len);
}

int sg_jsonl_print(FILE *f, const json_t *j, size_t extra_flags) {
  size_t n = 0;
  char *line = dump_line(j, extra_flags, &n);
  int rc = fwrite(line, 1, n, f) == n && fflush(f) == 0 ? 0 : -1;
  free(line);
  return rc;
}
