/* sg_alloc.h: allocation that never returns NULL.
 *
 * specgen's decision (docs/architecture.md): running out of memory aborts the
 * process with a message, as Redis does. Every allocation in specgen goes
 * through these, so no caller carries an out-of-memory branch that is never
 * tested. Candidates run in child processes with their own limits, so their
 * allocations never reach these.
 */
#ifndef SG_ALLOC_H
#define SG_ALLOC_H

#include <stddef.h>

void *sg_malloc(size_t size);
void *sg_calloc(size_t count, size_t size);
void *sg_realloc(void *ptr, size_t size);
/* Zeroed memory starting on an align-byte boundary (a power of two), size
 * rounded up to a multiple of it; freed with free(). For records laid out
 * by cache lines. */
void *sg_calloc_aligned(size_t align, size_t size);
/* Returns a copy the caller frees; NULL in gives NULL out. */
char *sg_strdup(const char *s);
/* Returns a NUL-terminated copy of the first len bytes; the caller frees it. */
char *sg_strndup(const char *s, size_t len);
/* printf into a new string the caller frees. */
char *sg_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
