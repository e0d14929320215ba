/* sg_build_cache.c: the workers' shared build cache (sg_build_cache.h).
 *
 * The key is pure (sg_build_cache_key); lookup and store are small I/O
 * functions. What makes sharing safe: an entry appears by one rename() of a
 * complete directory, and nothing ever writes into an entry afterwards, so a
 * reader that finds build.json finds the artifacts it names. What a reader
 * must still survive: a directory someone else tampered with or truncated
 * (a full disk, a crash of a machine, a person). Every such entry is an
 * error the caller logs and treats as a miss; nothing here trusts a name
 * from build.json to stay inside the entry without checking.
 */
#include "pool/sg_build_cache.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define META_NAME "build.json"

/* ---- the key ------------------------------------------------------------------ */

static void add_field(sg_buf *b, const char *s, size_t len) {
  /* a length prefix makes the encoding unambiguous; NULL is length ~0 */
  uint64_t n = s ? (uint64_t)len : UINT64_MAX;
  unsigned char p[8];
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(n >> (8 * i));
  sg_buf_append(b, p, sizeof p);
  if (s)
    sg_buf_append(b, s, len);
}

static void add_str(sg_buf *b, const char *s) {
  add_field(b, s, s ? strlen(s) : 0);
}

uint64_t sg_build_cache_key(const sg_build_cache_key_in *in) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_puts(&b, "specgen-build-cache-1");
  add_str(&b, in->evaluator);
  add_str(&b, in->task_dir);
  add_str(&b, in->version);
  add_str(&b, in->cuda_arch);
  add_field(&b, in->source ? in->source : "", in->source_len);
  uint64_t h = sg_fnv1a64(b.data, b.len);
  sg_buf_free(&b);
  return h;
}

void sg_build_cache_key_hex(uint64_t key, char out[17]) {
  snprintf(out, 17, "%016" PRIx64, key);
}

/* ---- lookup ------------------------------------------------------------------- */

/* A name build.json may give: one plain file name inside the entry. */
static bool plain_name(const char *s) {
  return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 &&
         strcmp(s, "..") != 0 && strlen(s) <= 255;
}

static int entry_file(const char *entry, const char *meta, const json_t *j,
                      const char *field, char **out, sg_err *err) {
  const json_t *v = json_object_get(j, field);
  const char *name = json_string_value(v);
  if (!plain_name(name))
    return sg_err_set(err, SG_EPARSE, "%s: field \"%s\": expected a file name "
                      "inside the entry", meta, field);
  char *path = sg_asprintf("%s/%s", entry, name);
  struct stat st;
  const char *why = NULL;
  if (stat(path, &st) != 0)
    why = strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  if (why) {
    int rc = sg_err_set(err, SG_EIO, "%s: field \"%s\": %s: %s", meta, field,
                        path, why);
    free(path);
    return rc;
  }
  *out = path;
  return 0;
}

int sg_build_cache_lookup(const char *dir, uint64_t key, const char *work_dir,
                          sg_eval_build *build, double *compile_s, sg_err *err) {
  memset(build, 0, sizeof *build);
  *compile_s = NAN;
  char hex[17];
  sg_build_cache_key_hex(key, hex);
  char *entry = sg_asprintf("%s/%s", dir, hex);
  char *meta = sg_asprintf("%s/%s", entry, META_NAME);
  int rc = 0;
  struct stat st;
  if (stat(entry, &st) != 0) {
    rc = errno == ENOENT || errno == ENOTDIR
             ? sg_err_set(err, SG_ENOENT, "%s: no such entry", entry)
             : sg_err_set(err, SG_EIO, "%s: %s", entry, strerror(errno));
    goto out;
  }
  char *text = NULL;
  size_t len = 0;
  if ((rc = sg_file_read(meta, SG_BUILD_CACHE_META_MAX, &text, &len, err))) {
    /* the entry is there: a missing build.json is damage, not a miss */
    if (rc == SG_ENOENT) {
      rc = SG_EIO;
      if (err)
        err->code = rc;
    }
    goto out;
  }
  json_error_t je;
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  free(text);
  if (!json_is_object(j)) {
    rc = j ? sg_err_set(err, SG_EPARSE, "%s: expected a JSON object", meta)
           : sg_err_set(err, SG_EPARSE, "%s: not JSON: %s (line %d)", meta,
                        je.text, je.line);
    if (j)
      json_decref(j);
    goto out;
  }
  const json_t *fmt = json_object_get(j, "format");
  const char *k = json_string_value(json_object_get(j, "key"));
  const json_t *cs = json_object_get(j, "compile_s");
  if (!json_is_integer(fmt) || json_integer_value(fmt) != SG_BUILD_CACHE_FORMAT)
    rc = sg_err_set(err, SG_EPARSE, "%s: field \"format\": expected %d", meta,
                    SG_BUILD_CACHE_FORMAT);
  else if (!k || strcmp(k, hex) != 0)
    rc = sg_err_set(err, SG_EPARSE, "%s: field \"key\": expected \"%s\"", meta, hex);
  else if (!json_is_number(cs) || !(json_number_value(cs) >= 0))
    rc = sg_err_set(err, SG_EPARSE, "%s: field \"compile_s\": expected seconds", meta);
  else if ((rc = entry_file(entry, meta, j, "artifact", &build->artifact, err)) ==
               0 &&
           (rc = entry_file(entry, meta, j, "reference_artifact",
                            &build->reference_artifact, err)) == 0)
    *compile_s = json_number_value(cs);
  json_decref(j);
  if (rc == 0) {
    build->work_dir = work_dir ? sg_strdup(work_dir) : NULL;
    build->owns_work_dir = false;
  }
out:
  if (rc)
    sg_eval_build_free(build);
  free(entry);
  free(meta);
  return rc;
}

/* ---- store -------------------------------------------------------------------- */

static int copy_file(const char *src, const char *dst, sg_err *err) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return sg_err_set(err, SG_EIO, "%s: %s", src, strerror(errno));
  struct stat st;
  if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size > SG_BUILD_CACHE_ARTIFACT_MAX) {
    close(in);
    return sg_err_set(err, SG_EIO, "%s: not a regular file of at most %" PRIu64
                      " bytes", src, SG_BUILD_CACHE_ARTIFACT_MAX);
  }
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                 st.st_mode & 0777 ? st.st_mode & 0777 : 0644);
  if (out < 0) {
    int rc = sg_err_set(err, SG_EIO, "%s: %s", dst, strerror(errno));
    close(in);
    return rc;
  }
  char buf[1 << 16];
  int rc = 0;
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = sg_err_set(err, SG_EIO, "%s: %s", src, strerror(errno));
      break;
    }
    if (n == 0)
      break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(out, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        rc = sg_err_set(err, SG_EIO, "%s: %s", dst, w < 0 ? strerror(errno)
                                                          : "short write");
        break;
      }
      off += w;
    }
    if (rc)
      break;
  }
  close(in);
  if (close(out) != 0 && !rc)
    rc = sg_err_set(err, SG_EIO, "%s: %s", dst, strerror(errno));
  return rc;
}

/* "candidate" or "reference" plus the extension of path's file name. */
static char *entry_name(const char *stem, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot || dot == base || strlen(dot) > 16 || strchr(dot, '/'))
    dot = "";
  return sg_asprintf("%s%s", stem, dot);
}

/* Longer than 80 lines on purpose: the steps of an atomic publish (temporary
 * directory, copy, fsync, rename, the race lost) must be read in order. */
int sg_build_cache_store(const char *dir, uint64_t key, const char *evaluator,
                         const char *task_dir, const sg_eval_build *build,
                         double compile_s, bool *stored, sg_err *err) {
  *stored = false;
  if (!build->artifact || !build->reference_artifact)
    return sg_err_set(err, SG_EINVAL, "build cache: the build names no artifact");
  int rc = sg_mkdir_p(dir, err);
  if (rc)
    return rc;
  char hex[17];
  sg_build_cache_key_hex(key, hex);
  char *final = sg_asprintf("%s/%s", dir, hex);
  struct stat st;
  if (stat(final, &st) == 0) { /* someone stored it already */
    free(final);
    return 0;
  }
  /* a private directory; a name left by a dead writer of the same pid is
   * skipped */
  static unsigned seq;
  char *tmp = NULL;
  for (int tries = 0; tries < 100; tries++) {
    tmp = sg_asprintf("%s/tmp-%ld-%u", dir, (long)getpid(), seq++);
    if (mkdir(tmp, 0755) == 0)
      break;
    int e = errno;
    free(tmp);
    tmp = NULL;
    if (e != EEXIST) {
      rc = sg_err_set(err, SG_EIO, "%s: cannot create a directory: %s", dir,
                      strerror(e));
      break;
    }
  }
  if (!tmp) {
    free(final);
    return rc ? rc : sg_err_set(err, SG_EIO, "%s: no free temporary name", dir);
  }
  char *cand = entry_name("candidate", build->artifact);
  char *ref = entry_name("reference", build->reference_artifact);
  char *cand_path = sg_asprintf("%s/%s", tmp, cand);
  char *ref_path = sg_asprintf("%s/%s", tmp, ref);
  char *meta_path = sg_asprintf("%s/%s", tmp, META_NAME);
  if (!(rc = copy_file(build->artifact, cand_path, err)) &&
      !(rc = copy_file(build->reference_artifact, ref_path, err))) {
    json_t *j = json_object();
    json_object_set_new(j, "format", json_integer(SG_BUILD_CACHE_FORMAT));
    json_object_set_new(j, "key", json_string(hex));
    json_object_set_new(j, "evaluator", json_string(evaluator ? evaluator : ""));
    json_object_set_new(j, "task_dir", json_string(task_dir ? task_dir : ""));
    json_object_set_new(j, "compile_s",
                        json_real(isfinite(compile_s) && compile_s >= 0 ? compile_s : 0));
    json_object_set_new(j, "artifact", json_string(cand));
    json_object_set_new(j, "reference_artifact", json_string(ref));
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
    json_decref(j);
    if (!text)
      abort(); /* out of memory: the project's rule */
    rc = sg_file_write(meta_path, text, strlen(text), err);
    free(text);
  }
  if (rc == 0) {
    if (rename(tmp, final) == 0) {
      *stored = true;
    } else if (errno != EEXIST && errno != ENOTEMPTY) {
      rc = sg_err_set(err, SG_EIO, "renaming %s to %s: %s", tmp, final,
                      strerror(errno));
    }
  }
  if (!*stored) {
    sg_err ignore;
    (void)sg_rm_rf(tmp, &ignore); /* the race's loser, or a failed copy */
  }
  free(cand);
  free(ref);
  free(cand_path);
  free(ref_path);
  free(meta_path);
  free(tmp);
  free(final);
  return rc;
}
