/* sg_sse.c: incremental Server-Sent Events parser (see sg_sse.h).
 *
 * How it works: bytes are copied into `line` until a line end; the complete
 * line is then interpreted as a field (data, event, id, retry), a comment, or
 * a blank line that dispatches the event. A CR ends a line at once and sets
 * `after_cr`, so an LF that follows, in this read or the next, is swallowed:
 * that is what makes a CRLF split across two reads one line end. The leading
 * BOM is matched byte by byte, so it too may be split across reads; bytes of a
 * partial match that turns out not to be a BOM are put back into the line.
 *
 * Invariants: line.len <= max_line_bytes; data.len <= max_event_bytes. Nothing
 * reads past buf + len (the tests place input against the end of a buffer so
 * ASan catches an over-read).
 */
#include "llm/sg_sse.h"

#include <assert.h>
#include <string.h>

static const unsigned char k_bom[3] = {0xEF, 0xBB, 0xBF};

void sg_sse_init(sg_sse *p, size_t max_line_bytes, size_t max_event_bytes) {
  memset(p, 0, sizeof *p);
  sg_buf_init(&p->line, 0);
  sg_buf_init(&p->data, 0);
  sg_buf_init(&p->event, 0);
  sg_buf_init(&p->id, 0);
  sg_buf_init(&p->out_data, 0);
  sg_buf_init(&p->out_event, 0);
  p->max_line_bytes = max_line_bytes ? max_line_bytes : SG_SSE_DEFAULT_MAX_LINE_BYTES;
  p->max_event_bytes =
      max_event_bytes ? max_event_bytes : SG_SSE_DEFAULT_MAX_EVENT_BYTES;
  p->retry_ms = -1;
}

void sg_sse_free(sg_sse *p) {
  sg_buf_free(&p->line);
  sg_buf_free(&p->data);
  sg_buf_free(&p->event);
  sg_buf_free(&p->id);
  sg_buf_free(&p->out_data);
  sg_buf_free(&p->out_event);
}

void sg_sse_reset(sg_sse *p) {
  size_t ml = p->max_line_bytes, me = p->max_event_bytes;
  sg_sse_free(p);
  sg_sse_init(p, ml, me);
}

static int fail(sg_sse *p, sg_err *err, int code, const char *what, size_t cap) {
  p->error = code;
  return sg_err_set(err, code, "SSE %s longer than %zu bytes", what, cap);
}

static int line_append(sg_sse *p, const char *s, size_t n, sg_err *err) {
  if (n > p->max_line_bytes - p->line.len)
    return fail(p, err, SG_EFULL, "line", p->max_line_bytes);
  sg_buf_append(&p->line, s, n);
  return 0;
}

/* Interprets the complete line in p->line. Returns SG_SSE_EVENT when a blank
 * line dispatched an event, 0 otherwise, or a negative code. */
static int process_line(sg_sse *p, sg_sse_event *ev, sg_err *err) {
  const char *s = p->line.data ? p->line.data : "";
  size_t n = p->line.len;
  if (n == 0) {
    if (!p->has_data) {
      /* An event without data is not dispatched; its name is forgotten. */
      sg_buf_reset(&p->event);
      return 0;
    }
    /* Hand the data and name out by swapping buffers: no copy. */
    sg_buf t = p->out_data;
    p->out_data = p->data;
    p->data = t;
    sg_buf_reset(&p->data);
    t = p->out_event;
    p->out_event = p->event;
    p->event = t;
    sg_buf_reset(&p->event);
    p->has_data = false;
    p->events++;
    ev->data = sg_buf_str(&p->out_data);
    ev->data_len = p->out_data.len;
    ev->event = sg_buf_str(&p->out_event);
    ev->id = sg_buf_str(&p->id);
    return SG_SSE_EVENT;
  }
  if (s[0] == ':') {
    p->comments++;
    return 0;
  }
  const char *colon = memchr(s, ':', n);
  size_t flen = colon ? (size_t)(colon - s) : n;
  const char *v = colon ? colon + 1 : s + n;
  size_t vlen = (size_t)(s + n - v);
  if (vlen > 0 && v[0] == ' ') {
    v++;
    vlen--;
  }
  if (flen == 4 && memcmp(s, "data", 4) == 0) {
    size_t extra = vlen + (p->has_data ? 1 : 0);
    if (extra > p->max_event_bytes - p->data.len)
      return fail(p, err, SG_EFULL, "event data", p->max_event_bytes);
    if (p->has_data)
      sg_buf_append(&p->data, "\n", 1);
    sg_buf_append(&p->data, v, vlen);
    p->has_data = true;
  } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
    sg_buf_reset(&p->event);
    sg_buf_append(&p->event, v, vlen);
  } else if (flen == 2 && memcmp(s, "id", 2) == 0) {
    if (memchr(v, '\0', vlen) == NULL) { /* the standard ignores such ids */
      sg_buf_reset(&p->id);
      sg_buf_append(&p->id, v, vlen);
    }
  } else if (flen == 5 && memcmp(s, "retry", 5) == 0) {
    int64_t ms = 0;
    bool ok = vlen > 0 && vlen < 16;
    for (size_t i = 0; ok && i < vlen; i++) {
      if (v[i] < '0' || v[i] > '9')
        ok = false;
      else
        ms = ms * 10 + (v[i] - '0');
    }
    if (ok)
      p->retry_ms = ms;
  }
  /* Any other field is ignored, as the standard says. */
  return 0;
}

int sg_sse_feed(sg_sse *p, const char *buf, size_t len, size_t *used,
                sg_sse_event *ev, sg_err *err) {
  *used = 0;
  if (p->error)
    return sg_err_set(err, p->error, "SSE parser already failed on this stream");
  size_t i = 0;
  while (!p->started && i < len) {
    if ((unsigned char)buf[i] == k_bom[p->bom_seen]) {
      p->bom_seen++;
      i++;
      if (p->bom_seen == 3)
        p->started = true;
      continue;
    }
    p->started = true;
    /* A partial match that was not a BOM: those bytes belong to the line. */
    if (p->bom_seen > 0) {
      int rc = line_append(p, (const char *)k_bom, p->bom_seen, err);
      if (rc < 0)
        return rc;
    }
  }
  while (i < len) {
    if (p->after_cr) {
      p->after_cr = false;
      if (buf[i] == '\n') {
        i++;
        continue;
      }
    }
    size_t j = i;
    while (j < len && buf[j] != '\n' && buf[j] != '\r')
      j++;
    if (j > i) {
      int rc = line_append(p, buf + i, j - i, err);
      if (rc < 0) {
        *used = j;
        return rc;
      }
    }
    if (j == len) {
      i = len;
      break;
    }
    p->after_cr = buf[j] == '\r';
    i = j + 1;
    int rc = process_line(p, ev, err);
    sg_buf_reset(&p->line);
    if (rc != 0) {
      *used = i;
      return rc;
    }
  }
  assert(i == len);
  *used = i;
  return SG_SSE_NEED_MORE;
}
