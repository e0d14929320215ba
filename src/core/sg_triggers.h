/* sg_triggers.h: the trigger scanner (pure: no I/O, no clock).
 *
 * Reads the reasoning text of a generation as it streams, split anywhere, and
 * reports the points where forking a speculative generation is worthwhile:
 *   design  a concrete kernel-design decision (tile shape or size, thread or
 *           block mapping, a specific instruction or memory strategy)
 *   fence   a closed fenced code block in cuda, cpp, c or python
 *   kernel  a completed __global__ or C kernel function (full signature,
 *           brace-balanced body; braces in strings and comments ignored)
 *   phrase  an implementation phrase ("let me implement", "here is the plan")
 * Each trigger carries the byte offset (from the start of the text) where it
 * completed and the matched text. Noise (the same block quoted twice,
 * repetition loops, self-talk) is debounced and de-duplicated.
 */
#ifndef SG_TRIGGERS_H
#define SG_TRIGGERS_H

#include <stddef.h>
#include <stdint.h>

typedef enum sg_trigger_class {
  SG_TRIGGER_DESIGN,
  SG_TRIGGER_FENCE,
  SG_TRIGGER_KERNEL,
  SG_TRIGGER_PHRASE,
  SG_TRIGGER__COUNT
} sg_trigger_class;

/* "design", "fence", "kernel", "phrase"; and back (-1 if unknown). */
const char *sg_trigger_class_name(sg_trigger_class c);
int sg_trigger_class_parse(const char *name);

#define SG_TRIGGER_TEXT_MAX 160

typedef struct sg_trigger {
  sg_trigger_class cls;
  uint64_t offset;                  /* byte offset just past the match */
  char text[SG_TRIGGER_TEXT_MAX];   /* the matched text, cut to fit */
} sg_trigger;

typedef struct sg_scanner_opts {
  /* Which classes fire (bit 1<<class); 0 means all. */
  unsigned classes;
  /* No two triggers closer than this many bytes (a storm guard); 0: none. */
  uint64_t min_gap_bytes;
} sg_scanner_opts;

void sg_scanner_opts_default(sg_scanner_opts *opts);

typedef struct sg_scanner sg_scanner;

/* A new scanner (freed with sg_scanner_free); opts may be NULL for defaults. */
sg_scanner *sg_scanner_new(const sg_scanner_opts *opts);
void sg_scanner_free(sg_scanner *s);

typedef void (*sg_trigger_cb)(void *user, const sg_trigger *t);

/* Feeds the next len bytes of the text; calls cb for each trigger completed
 * by them, in offset order. */
void sg_scanner_feed(sg_scanner *s, const char *data, size_t len,
                     sg_trigger_cb cb, void *user);

/* Ends the text (added to the contract): fires what only the end can
 * complete, a sentence without its final newline or a closing fence on the
 * last line. Feed nothing after it. */
void sg_scanner_finish(sg_scanner *s, sg_trigger_cb cb, void *user);

/* Bytes fed so far. */
uint64_t sg_scanner_offset(const sg_scanner *s);

#endif
