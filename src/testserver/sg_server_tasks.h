/* sg_server_tasks.h: loads tasks (docs/tasks.md) into the form the test
 * model uses (sg_fm_task): what the prompt can name, the shapes it reasons
 * about, and the example candidates it answers with.
 */
#ifndef SG_SERVER_TASKS_H
#define SG_SERVER_TASKS_H

#include "common/sg_error.h"
#include "testserver/sg_fakemodel.h"

#include <stddef.h>

/* Every task under root: root itself if it holds task.json, else its
 * subdirectories <name>/task.json and <evaluator>/<name>/task.json. root NULL:
 * the built-in tasks ($SPECGEN_TASKS_DIR, else the installed data directory,
 * else the source tree's tasks/). A directory without tasks gives 0 tasks; a
 * task.json that does not parse is an error naming the file and the field.
 * Sorted by name; the caller frees each with sg_fm_task_clear and the array
 * with free(). */
int sg_server_tasks_load(const char *root, sg_fm_task **out, size_t *n,
                         sg_err *err);

#endif
