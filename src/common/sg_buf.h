/* sg_buf.h: a growable byte buffer, always NUL-terminated.
 *
 * Used for text that arrives in pieces (streams, child output). A buffer may
 * have a cap: appends beyond it are dropped and `truncated` is set, so text from
 * outside (LLM output, compiler output) is bounded before it is stored.
 */
#ifndef SG_BUF_H
#define SG_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sg_buf {
  char *data;      /* NUL-terminated; NULL until the first append */
  size_t len;      /* bytes held, not counting the NUL */
  size_t cap;      /* bytes allocated */
  size_t limit;    /* 0: unbounded; else the most bytes ever held */
  bool truncated;  /* an append was cut by limit */
} sg_buf;

/* An empty buffer holding at most limit bytes (0: no limit). */
void sg_buf_init(sg_buf *b, size_t limit);
void sg_buf_free(sg_buf *b);
/* Empties the buffer, keeping its memory and limit. */
void sg_buf_reset(sg_buf *b);
void sg_buf_append(sg_buf *b, const void *data, size_t len);
void sg_buf_puts(sg_buf *b, const char *s);
void sg_buf_printf(sg_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes. */
void sg_buf_consume(sg_buf *b, size_t n);
/* Hands the text to the caller (who frees it) and empties the buffer;
 * never NULL. */
char *sg_buf_steal(sg_buf *b);
/* The text, "" when empty. */
const char *sg_buf_str(const sg_buf *b);

#endif
