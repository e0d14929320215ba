/* sg_shm.c: the shared-memory files a device process leaves behind (see the
 * header). */
#include "eval/sg_shm.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The number that s spells in base, up to stop (a char that ends it);
 * -1 when there is none or something else follows. */
static long number_to(const char *s, int base, char stop, const char **end) {
  char *e = NULL;
  if (*s < '0' || (*s > '9' && base == 10) || *s == '+' || *s == '-')
    return -1;
  long v = strtol(s, &e, base);
  if (e == s || *e != stop)
    return -1;
  *end = e;
  return v;
}

bool sg_shm_owned_by(const char *name, long pid) {
  const char *end = NULL;
  if (pid <= 0 || !name)
    return false;
  if (strncmp(name, "torch_", 6) == 0) /* torch_<pid>_<random>_<n> */
    return number_to(name + 6, 10, '_', &end) == pid;
  if (strncmp(name, "cuda.shm.", 9) == 0) { /* cuda.shm.<device>.<hex pid>.<n> */
    const char *dot = strchr(name + 9, '.');
    return dot && number_to(dot + 1, 16, '.', &end) == pid;
  }
  return false;
}

size_t sg_shm_remove_owned(const char *dir, long pid) {
  if (!dir)
    dir = getenv("SPECGEN_SHM_DIR") && *getenv("SPECGEN_SHM_DIR") ? getenv("SPECGEN_SHM_DIR")
                                                                   : "/dev/shm";
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!sg_shm_owned_by(e->d_name, pid))
      continue;
    char *path = sg_asprintf("%s/%s", dir, e->d_name);
    n += unlink(path) == 0;
    free(path);
  }
  closedir(d);
  return n;
}

size_t sg_shm_remove_listed(const char *dir, const char *pids_path) {
  char *text = NULL;
  sg_err err;
  if (!pids_path || sg_file_read(pids_path, 4096, &text, NULL, &err))
    return 0;
  size_t n = 0;
  for (const char *p = text + strspn(text, " \t\n"); *p; p += strspn(p, " \t\n")) {
    size_t digits = strspn(p, "0123456789");
    if (digits == 0 || digits > 9 || (p[digits] && !strchr(" \t\n", p[digits])))
      break;
    n += sg_shm_remove_owned(dir, strtol(p, NULL, 10));
    p += digits;
  }
  free(text);
  return n;
}
