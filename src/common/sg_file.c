/* sg_file.c: whole-file reads and atomic writes. */
#include "common/sg_file.h"

#include "common/sg_alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sg_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                 sg_err *err) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return sg_err_set(err, errno == ENOENT ? SG_ENOENT : SG_EIO, "%s: %s", path,
                      strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = sg_malloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > max_bytes) {
        free(buf);
        close(fd);
        return sg_err_set(err, SG_ERANGE, "%s: larger than %zu bytes", path,
                          max_bytes);
      }
      cap *= 2;
      buf = sg_realloc(buf, cap);
    }
    ssize_t r = read(fd, buf + n, cap - n - 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return sg_err_set(err, SG_EIO, "%s: %s", path, strerror(e));
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max_bytes) {
    free(buf);
    return sg_err_set(err, SG_ERANGE, "%s: larger than %zu bytes", path,
                      max_bytes);
  }
  buf[n] = '\0';
  *out = buf;
  if (len)
    *len = n;
  return 0;
}

int sg_file_write(const char *path, const void *data, size_t len, sg_err *err) {
  char *tmp = sg_asprintf("%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  /* messages name the file asked for: the temporary one is ours */
  if (fd < 0) {
    int rc = sg_err_set(err, SG_EIO, "%s: %s", path, strerror(errno));
    free(tmp);
    return rc;
  }
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      int rc = sg_err_set(err, SG_EIO, "%s: %s", path, strerror(errno));
      close(fd);
      unlink(tmp);
      free(tmp);
      return rc;
    }
    p += w;
    left -= (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int rc = sg_err_set(err, SG_EIO, "%s: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return rc;
  }
  free(tmp);
  return 0;
}

int sg_mkdir_p(const char *path, sg_err *err) {
  char *p = sg_strdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      int rc = sg_err_set(err, SG_EIO, "mkdir %s: %s", p, strerror(errno));
      free(p);
      return rc;
    }
    *s = '/';
  }
  int rc = 0;
  if (mkdir(p, 0755) != 0 && errno != EEXIST)
    rc = sg_err_set(err, SG_EIO, "mkdir %s: %s", p, strerror(errno));
  free(p);
  return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int sg_scratch_dir(const char *root, const char *prefix, char **out, sg_err *err) {
  *out = NULL;
  if (!root || !*root)
    root = getenv("TMPDIR");
  if (!root || !*root)
    root = "/tmp";
  int rc = sg_mkdir_p(root, err);
  if (rc)
    return rc;
  char *dir = sg_asprintf("%s/%s-XXXXXX", root, prefix);
  if (!mkdtemp(dir)) {
    rc = sg_err_set(err, SG_EIO, "%s: cannot create a scratch directory: %s", root,
                    strerror(errno));
    free(dir);
    return rc;
  }
  *out = dir;
  return 0;
}

int sg_rm_rf(const char *path, sg_err *err) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0
                           : sg_err_set(err, SG_EIO, "%s: %s", path,
                                        strerror(errno));
  if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return sg_err_set(err, SG_EIO, "removing %s: %s", path, strerror(errno));
  return 0;
}

char **sg_file_list(const char *dir, bool (*keep)(const char *dir, const char *name),
                    int (*cmp)(const void *, const void *), size_t *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  char **names = NULL;
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || (keep && !keep(dir, de->d_name)))
      continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      names = sg_realloc(names, cap * sizeof *names);
    }
    names[(*n)++] = sg_strdup(de->d_name);
  }
  closedir(d);
  if (*n)
    qsort(names, *n, sizeof *names, cmp);
  return names;
}

void sg_file_list_free(char **names, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}
