/* fuzz_task.c: task.json text into the task loader (sg_task_parse). Any
 * input must give a task or an error naming the file, never a crash. */
#include "eval/sg_task.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sg_task *t = NULL;
  sg_err err;
  int rc = sg_task_parse("task.json",
                         SG_SOURCE_ROOT "/tests/eval/data/tasks/cpu/vector_add",
                         (const char *)data, size, &t, &err);
  if (rc == 0) {
    if (!t || !t->name || (t->nargs == 0 && strcmp(t->evaluator, "kernelbench") != 0))
      __builtin_trap();
    sg_task_free(t);
  } else if (t || strncmp(err.msg, "task.json", 9) != 0) {
    __builtin_trap();
  }
  return 0;
}
