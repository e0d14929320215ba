/* sg_sim_tasks.h: per-task parameters from the paper's tables, for
 * `task.table` glm or dsv4 (T1-T10 of that model; workflow w is task
 * w mod 10).
 *
 * From Table 6 (best kernel over the KernelBench reference after 100
 * iterations, per system): the task's best known kernel, the largest value
 * of its column over the four systems, is its speed ceiling; its
 * from-scratch median is that over `speed.ceiling`. From Table 2 (best of
 * 100 non-reasoning generations without a reasoning prefix): where no
 * valid kernel came out (a cross), a fork before the useful prefix is
 * never valid on that task; where one did, it is valid with
 * `valid.no_prefix_p`. */
#ifndef SG_SIM_TASKS_H
#define SG_SIM_TASKS_H

#include <stdbool.h>

typedef struct sg_sim_task {
  double best_known;      /* Table 6: the largest speedup any system found */
  bool no_prefix_valid;   /* Table 2: some valid kernel without the prefix */
} sg_sim_task;

/* table: "glm" or "dsv4"; false for any other (synthetic tasks). */
bool sg_sim_task_get(const char *table, int task, sg_sim_task *out);

#endif
