/* sg_task_kb.h: KernelBench files as tasks, without a wrapper (docs/tasks.md,
 * "KernelBench files").
 *
 * A KernelBench file (a Python file defining class Model, get_inputs and
 * get_init_inputs) is a kernelbench task by itself: its name is the file's
 * stem ("19_ReLU"), its candidates define ModelNew, and what KernelBench
 * leaves implicit comes from stated defaults: tolerance atol = rtol = 1e-2
 * (KernelBench's), the timing protocol of docs/gpu.md, device cuda:0.
 *
 * Three ways to name them:
 *   path/to/19_ReLU.py            one file
 *   path/to/level1/               a folder of them (sg_task_kb_list)
 *   kernelbench:level1/19         problem 19 of level 1 of the KernelBench
 *                                 checkout named by $SPECGEN_KERNELBENCH
 *   kernelbench:level1            that whole level (sg_task_kb_list)
 */
#ifndef SG_TASK_KB_H
#define SG_TASK_KB_H

#include "eval/sg_task.h"

#include <stdbool.h>

/* KernelBench's own tolerance, the default of a KernelBench file. */
#define SG_TASK_KB_ATOL 1e-2
#define SG_TASK_KB_RTOL 1e-2

/* True when name is a KernelBench reference: a path ending in ".py" or a
 * "kernelbench:" name. */
bool sg_task_kb_is_ref(const char *name);

/* Loads one KernelBench file (by path or kernelbench:LEVEL/N) as a task.
 * Errors name the file and what is missing (no class Model, ...), or the
 * setting ($SPECGEN_KERNELBENCH unset, no such level or problem). */
int sg_task_kb_load(const char *name, sg_task **out, sg_err *err);

/* Every KernelBench file of a folder (or of kernelbench:LEVEL), sorted by
 * problem number then name; files that are not KernelBench files (no class
 * Model) are skipped. SG_ENOENT when there is none. The caller frees with
 * sg_task_list_free. */
int sg_task_kb_list(const char *dir_or_level, sg_task ***out, size_t *n,
                    sg_err *err);

/* What text (a NUL-terminated Python file) lacks to be a KernelBench file:
 * "class Model", "def get_inputs()" or "def get_init_inputs()" (each at the
 * start of a line), or NULL when it has all three. */
const char *sg_task_kb_missing(const char *text);

/* The leading problem number of a KernelBench file name ("19_ReLU.py": 19),
 * or -1. */
long sg_task_kb_number(const char *file_name);

#endif
