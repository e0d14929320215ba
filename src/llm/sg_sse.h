/* sg_sse.h: an incremental parser for Server-Sent Events (text/event-stream).
 *
 * In the style of picohttpparser and llhttp: no I/O, no clock, all state in a
 * small struct, input accepted in any split (one byte at a time or a whole
 * response at once). The caller feeds bytes and gets events back one at a
 * time:
 *
 *   size_t used;
 *   sg_sse_event ev;
 *   while (len > 0) {
 *     int rc = sg_sse_feed(&p, buf, len, &used, &ev, &err);
 *     if (rc < 0) ...error, the parser is dead...
 *     buf += used; len -= used;
 *     if (rc == SG_SSE_EVENT) ...use ev (valid until the next feed)...
 *   }
 *
 * What it implements of the WHATWG event-stream format: lines end in LF, CRLF
 * or CR (a CR at the end of one read and an LF at the start of the next are
 * one line end); a UTF-8 byte order mark at the very start is skipped; lines
 * starting with ':' are comments (counted in `comments`, e.g. `: keep-alive`);
 * `data:` lines append to the event's data, joined by '\n'; `event:` sets the
 * event name; `id:` sets the last event id (kept across events); `retry:` is
 * recorded; one space after the colon is dropped; a field with no colon has
 * an empty value; unknown fields are ignored; a blank line dispatches the
 * event if it has data (an event with no data line is dropped, as the
 * standard says). `data: [DONE]` is an ordinary event here: the OpenAI chunk
 * interpreter (sg_llm_chunk) gives it its meaning.
 *
 * Bounded: a line longer than max_line_bytes or an event whose data exceeds
 * max_event_bytes is an error (SG_EFULL), never unbounded growth. After an
 * error every feed returns the same error.
 */
#ifndef SG_SSE_H
#define SG_SSE_H

#include "common/sg_buf.h"
#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Return values of sg_sse_feed besides negative SG_E* codes. */
enum { SG_SSE_NEED_MORE = 0, SG_SSE_EVENT = 1 };

#define SG_SSE_DEFAULT_MAX_LINE_BYTES (1u << 20)
#define SG_SSE_DEFAULT_MAX_EVENT_BYTES (4u << 20)

/* A dispatched event. The strings are NUL-terminated, borrowed from the
 * parser and valid until the next sg_sse_feed or sg_sse_free. */
typedef struct sg_sse_event {
  const char *data;  /* the data lines joined by '\n' */
  size_t data_len;
  const char *event; /* the event name, "" when none was given */
  const char *id;    /* the last event id seen so far, "" when none */
} sg_sse_event;

typedef struct sg_sse {
  sg_buf line;             /* the line being read (without its end) */
  sg_buf data;             /* the event's data so far */
  sg_buf event;            /* the event's name */
  sg_buf id;               /* the last event id */
  sg_buf out_data;         /* the dispatched event's data (handed out) */
  sg_buf out_event;        /* the dispatched event's name (handed out) */
  size_t max_line_bytes;
  size_t max_event_bytes;
  uint64_t comments;       /* comment lines seen (keep-alives) */
  uint64_t events;         /* events dispatched */
  int64_t retry_ms;        /* last `retry:` value, -1 when none */
  uint8_t bom_seen;        /* bytes of a leading BOM matched so far (0..3) */
  bool started;            /* past the point where a BOM could be */
  bool after_cr;           /* the last byte was a CR ending a line */
  bool has_data;           /* a data line was seen for this event */
  int error;               /* sticky error code, 0 while healthy */
} sg_sse;

/* An empty parser; 0 for either cap picks the default. */
void sg_sse_init(sg_sse *p, size_t max_line_bytes, size_t max_event_bytes);
void sg_sse_free(sg_sse *p);
/* Back to the state of a fresh stream (for a retried request), keeping caps. */
void sg_sse_reset(sg_sse *p);

/* Consumes bytes from buf until an event completes or the input runs out.
 * *used is how many bytes were consumed. Returns SG_SSE_EVENT with *ev filled
 * (the rest of the input has not been looked at yet), SG_SSE_NEED_MORE when
 * all len bytes were consumed without completing an event, or a negative
 * SG_E* code (SG_EFULL when a cap is exceeded) with err saying which. */
int sg_sse_feed(sg_sse *p, const char *buf, size_t len, size_t *used,
                sg_sse_event *ev, sg_err *err);

#endif
