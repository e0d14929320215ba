/* fuzz_kb_file.c: a Python file's text into the check that makes it a
 * KernelBench task (sg_task_kb_missing). Any input must give an answer,
 * never a crash; an answer of "complete" must really hold all three
 * definitions. */
#include "eval/sg_task_kb.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = 0;
  const char *missing = sg_task_kb_missing(text);
  if (!missing && (!strstr(text, "class Model") || !strstr(text, "def get_inputs") ||
                   !strstr(text, "def get_init_inputs")))
    __builtin_trap();
  free(text);
  return 0;
}
