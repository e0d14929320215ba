/* sg_file.h: small file helpers for the runtime and the CLI (never the core). */
#ifndef SG_FILE_H
#define SG_FILE_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>

/* Reads a whole file of at most max_bytes into *out (NUL-terminated; the
 * caller frees it) and its length into *len (len may be NULL). Errors name the
 * path. */
int sg_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                 sg_err *err);

/* Writes len bytes to path atomically (a temporary file, then rename);
 * errors name path, never the temporary file. */
int sg_file_write(const char *path, const void *data, size_t len, sg_err *err);

/* Creates a directory and its parents (mode 0755); existing is fine. */
int sg_mkdir_p(const char *path, sg_err *err);

/* Removes a directory tree; a missing path is fine. */
int sg_rm_rf(const char *path, sg_err *err);

/* Creates a fresh directory <root>/<prefix>-XXXXXX into *out (owned): root
 * NULL or "" means $TMPDIR, else /tmp; a missing root is created. */
int sg_scratch_dir(const char *root, const char *prefix, char **out, sg_err *err);

/* The names of dir's entries that keep(dir, name) accepts (hidden ones
 * skipped; keep NULL: all), sorted by cmp over (char **) elements; *n is
 * their count. NULL when dir cannot be opened or nothing is kept. Free with
 * sg_file_list_free. */
char **sg_file_list(const char *dir, bool (*keep)(const char *dir, const char *name),
                    int (*cmp)(const void *, const void *), size_t *n);
void sg_file_list_free(char **names, size_t n);

#endif
