/* tmpfiles.h: scratch directories and files for the tests of this folder. */
#ifndef SG_TESTS_GPU_TMPFILES_H
#define SG_TESTS_GPU_TMPFILES_H

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "sg_test.h"

#include <stdlib.h>

/* A fresh directory under $TMPDIR (or /tmp); the caller removes and frees it. */
static inline char *tmp_dir(const char *prefix) {
  const char *t = getenv("TMPDIR");
  char *d = sg_asprintf("%s/%s-XXXXXX", t && *t ? t : "/tmp", prefix);
  SG_CHECK(mkdtemp(d) != NULL);
  return d;
}

/* Writes text to dir/name. */
static inline void put_file(const char *dir, const char *name, const char *text) {
  char *p = sg_asprintf("%s/%s", dir, name);
  sg_err err;
  SG_CHECK_OK(sg_file_write(p, text, strlen(text), &err), err);
  free(p);
}

#endif
