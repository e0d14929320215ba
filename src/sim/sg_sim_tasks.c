/* sg_sim_tasks.c: the paper's per-task figures (see sg_sim_tasks.h). */
#include "sim/sg_sim_tasks.h"

#include <string.h>

/* Table 6, T1-T10: CudaForge, AlphaEvolve, KernelAgent, SpecGen (0: none
 * valid, the paper's cross). */
static const double t6_glm[10][4] = {
    {8.81, 12.83, 21.23, 23.86}, {3.12, 1.61, 2.21, 3.54},  {0.76, 0, 0, 0.79},
    {57.23, 47.43, 56.98, 57.72}, {6.56, 2.45, 4.97, 6.60}, {3.60, 0.81, 2.57, 3.66},
    {2.92, 0.69, 2.60, 2.99},    {4.97, 4.15, 4.31, 5.13}, {4.94, 3.98, 5.11, 5.41},
    {5.34, 2.36, 4.67, 5.37}};
static const double t6_dsv4[10][4] = {
    {8.64, 7.98, 6.17, 8.76},    {0.88, 0.53, 0.23, 1.69}, {0.86, 0.61, 0.05, 0.90},
    {60.87, 59.47, 61.15, 61.54}, {4.76, 1.00, 4.98, 5.38}, {3.61, 3.36, 4.32, 5.94},
    {2.30, 1.29, 2.29, 3.00},    {3.72, 3.11, 3.50, 3.87}, {0.53, 0.82, 1.02, 1.19},
    {0.46, 0.71, 0.69, 0.73}};
/* Table 2, "w/o" rows: true where a valid kernel came out without the
 * reasoning prefix. */
static const bool t2_glm[10] = {false, true, false, false, false,
                                false, false, false, false, true};
static const bool t2_dsv4[10] = {false, false, false, true, true,
                                 true,  true,  true,  false, true};

bool sg_sim_task_get(const char *table, int task, sg_sim_task *out) {
  const double(*t6)[4];
  const bool *t2;
  if (strcmp(table, "glm") == 0) {
    t6 = t6_glm;
    t2 = t2_glm;
  } else if (strcmp(table, "dsv4") == 0) {
    t6 = t6_dsv4;
    t2 = t2_dsv4;
  } else {
    return false;
  }
  int i = ((task % 10) + 10) % 10;
  double best = 0;
  for (int k = 0; k < 4; k++)
    if (t6[i][k] > best)
      best = t6[i][k];
  out->best_known = best;
  out->no_prefix_valid = t2[i];
  return true;
}
