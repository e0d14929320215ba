/* sg_alloc.c: abort-on-failure allocation (see sg_alloc.h for why). */
#include "common/sg_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t size) {
  fprintf(stderr, "specgen: out of memory allocating %zu bytes\n", size);
  abort();
}

void *sg_malloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (p == NULL)
    out_of_memory(size);
  return p;
}

void *sg_calloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (p == NULL)
    out_of_memory(count * size);
  return p;
}

void *sg_realloc(void *ptr, size_t size) {
  void *p = realloc(ptr, size ? size : 1);
  if (p == NULL)
    out_of_memory(size);
  return p;
}

void *sg_calloc_aligned(size_t align, size_t size) {
  size_t n = (size ? size : 1) + align - 1;
  n -= n % align;
  void *p = aligned_alloc(align, n);
  if (p == NULL)
    out_of_memory(n);
  memset(p, 0, n);
  return p;
}

char *sg_strdup(const char *s) {
  if (s == NULL)
    return NULL;
  return sg_strndup(s, strlen(s));
}

char *sg_strndup(const char *s, size_t len) {
  char *p = sg_malloc(len + 1);
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *sg_asprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = NULL;
  int n = vasprintf(&p, fmt, ap);
  va_end(ap);
  if (n < 0)
    out_of_memory(strlen(fmt));
  return p;
}
