/* sg_task_files.h: a task given as a path (a task directory, or one file
 * such as a KernelBench file) travels to the workers as its files, so that
 * a worker on another host needs no copy of it (docs/protocol.md,
 * "task_files"; docs/remote.md).
 */
#ifndef SG_TASK_FILES_H
#define SG_TASK_FILES_H

#include "common/sg_error.h"

#include <jansson.h>

/* The client's side: path's files as {"name": "content"}: a directory's
 * regular top-level files with plain names (its examples/ and other
 * subdirectories stay behind; it must hold a task.json), or the one file
 * path is. Text only, at most SG_WORKER_TASK_FILES_COUNT files and
 * SG_WORKER_TASK_FILES_MAX bytes together; errors name the file. */
int sg_task_files_read(const char *path, json_t **out, sg_err *err);

/* The worker's side: the files written once under base/tasks/<digest of
 * names and contents>/ (written aside and renamed, so workers sharing base
 * see a whole task or none, and the same files always give the same
 * directory); *path is what to load the task from: that directory when the
 * files hold a task.json, else the one file in it. */
int sg_task_files_materialize(const json_t *files, const char *base, char **path,
                              sg_err *err);

#endif
