/* sg_jsonl.h: JSON lines, the one writer: every JSON-lines stream specgen
 * writes (the worker protocol, the exec: search protocol, `--json` event
 * output) is one compact JSON value per line, ended by "\n". Readers split
 * on "\n", so a value never holds a raw newline (jansson escapes them in
 * strings, and compact output has none between tokens). */
#ifndef SG_JSONL_H
#define SG_JSONL_H

#include <jansson.h>
#include <stdio.h>

/* j as one line: compact, ASCII only (\uXXXX escapes), "\n"-terminated,
 * NUL-terminated; *len (if not NULL) excludes the NUL. Owned by the
 * caller. Aborts only on out of memory (the project's rule). */
char *sg_jsonl_line(const json_t *j, size_t *len);

/* Writes j to f as one line with extra jansson flags (for instance
 * JSON_REAL_PRECISION(6)) and flushes, so a reader sees each line as it is
 * written. Returns 0, or -1 when the write failed. */
int sg_jsonl_print(FILE *f, const json_t *j, size_t extra_flags);

#endif
