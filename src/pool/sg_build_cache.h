/* sg_build_cache.h: candidates' builds shared by the workers of one host
 * (docs/protocol.md, "The build cache").
 *
 * A compile worker (`specgen worker --compile-only`) builds a candidate and
 * stores the build here; the device worker that validates or profiles the
 * same candidate later finds it and skips the compile. One entry per key:
 *
 *   DIR/<16 hex digits>/build.json      what the entry holds (below)
 *   DIR/<16 hex digits>/candidate.so    the artifacts, named in build.json
 *   DIR/<16 hex digits>/reference.so
 *
 * build.json: {"format":1, "key":"<hex>", "evaluator":"cpu",
 * "task_dir":"/abs/tasks/cpu/hinge_loss", "compile_s":0.41,
 * "artifact":"candidate.so", "reference_artifact":"reference.so"}; the names
 * are relative to the entry, so an entry still works after DIR is moved
 * (an sg_eval_build's absolute paths are rebuilt on load).
 *
 * Concurrency: a writer builds the entry in DIR/tmp-<pid>-<n>/ and
 * rename()s it into place; when the entry exists already (another worker
 * won the race) rename fails and the writer removes its copy. So a reader
 * sees a whole entry or none, and entries are never modified. Eviction is
 * the runtime's business (it removes DIR when a run ends).
 *
 * Only builds that compiled (status ok) are stored.
 */
#ifndef SG_BUILD_CACHE_H
#define SG_BUILD_CACHE_H

#include "common/sg_error.h"
#include "eval/sg_eval.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_BUILD_CACHE_FORMAT 1
/* build.json is small; anything larger is not ours */
#define SG_BUILD_CACHE_META_MAX (64u * 1024)
/* an artifact larger than this is not copied into the cache */
#define SG_BUILD_CACHE_ARTIFACT_MAX (UINT64_C(1) << 30)

/* What a build depends on beyond the compiler that the host fixes. */
typedef struct sg_build_cache_key_in {
  const char *evaluator;   /* "cpu", "cuda", "kernelbench" */
  const char *task_dir;    /* the task's resolved (absolute) directory */
  const char *version;     /* specgen's version */
  const char *cuda_arch;   /* $SPECGEN_CUDA_ARCH, or NULL when unset */
  const char *source;      /* the candidate's exact bytes */
  size_t source_len;
} sg_build_cache_key_in;

/* FNV-1a 64 (sg_fnv1a64) over the fields, each preceded by its length,
 * so no two different inputs are the same byte string. Pure. NULL strings
 * hash unlike empty ones. */
uint64_t sg_build_cache_key(const sg_build_cache_key_in *in);

/* The key as 16 lowercase hex digits and a NUL. */
void sg_build_cache_key_hex(uint64_t key, char out[17]);

/* Looks the key up in dir. On a hit returns 0 and fills *build: artifact
 * and reference_artifact point into the entry; work_dir is a copy of
 * work_dir (the caller's scratch, where the run's sandbox works; the entry
 * itself is never written), not owned; *compile_s gets the seconds the
 * stored build took. SG_ENOENT: no entry (a clean miss). Any other negative
 * code: the entry is there but unusable (corrupt build.json, a missing
 * artifact, a wrong key); err names the file and what is wrong. The caller
 * treats every error as a miss. */
int sg_build_cache_lookup(const char *dir, uint64_t key, const char *work_dir,
                          sg_eval_build *build, double *compile_s, sg_err *err);

/* Stores build (status ok) under key: copies its artifacts into a new
 * entry. *stored is true when this call created the entry, false when one
 * existed already (this copy is then discarded). Creates dir if needed.
 * Errors (SG_EIO naming the path) leave no entry and no temporary behind. */
int sg_build_cache_store(const char *dir, uint64_t key, const char *evaluator,
                         const char *task_dir, const sg_eval_build *build,
                         double compile_s, bool *stored, sg_err *err);

#endif
