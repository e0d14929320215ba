/* sg_buf.c: growable, optionally capped byte buffer. */
#include "common/sg_buf.h"

#include "common/sg_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sg_buf_init(sg_buf *b, size_t limit) {
  memset(b, 0, sizeof *b);
  b->limit = limit;
}

void sg_buf_free(sg_buf *b) {
  free(b->data);
  size_t limit = b->limit;
  sg_buf_init(b, limit);
}

void sg_buf_reset(sg_buf *b) {
  b->len = 0;
  b->truncated = false;
  if (b->data)
    b->data[0] = '\0';
}

static void reserve(sg_buf *b, size_t extra) {
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need)
    cap *= 2;
  b->data = sg_realloc(b->data, cap);
  b->cap = cap;
}

void sg_buf_append(sg_buf *b, const void *data, size_t len) {
  if (b->limit && b->len + len > b->limit) {
    len = b->limit > b->len ? b->limit - b->len : 0;
    b->truncated = true;
  }
  reserve(b, len);
  if (len)
    memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
}

void sg_buf_puts(sg_buf *b, const char *s) { sg_buf_append(b, s, strlen(s)); }

void sg_buf_printf(sg_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0)
    return;
  char small[256];
  char *tmp = (size_t)n < sizeof small ? small : sg_malloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(tmp, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sg_buf_append(b, tmp, (size_t)n);
  if (tmp != small)
    free(tmp);
}

void sg_buf_consume(sg_buf *b, size_t n) {
  if (n >= b->len) {
    sg_buf_reset(b);
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  b->data[b->len] = '\0';
}

char *sg_buf_steal(sg_buf *b) {
  char *s = b->data ? b->data : sg_strdup("");
  size_t limit = b->limit;
  sg_buf_init(b, limit);
  return s;
}

const char *sg_buf_str(const sg_buf *b) { return b->data ? b->data : ""; }
