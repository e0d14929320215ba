/* fuzz_elf.c: bytes into the ELF dynamic-symbol reader the cpu evaluator
 * applies its rules with (sg_elf_dynamic_symbols). Any input must give a
 * symbol list or SG_EPARSE, never a read outside the buffer. */
#include "common/sg_alloc.h"
#include "eval/sg_eval_cpu.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* an exact-size copy, so an over-read is caught */
  uint8_t *copy = sg_malloc(size ? size : 1);
  memcpy(copy, data, size);
  sg_elf_sym *syms = NULL;
  size_t n = 0;
  sg_err err;
  int rc = sg_elf_dynamic_symbols(copy, size, &syms, &n, &err);
  if (rc == 0)
    sg_elf_symbols_free(syms, n);
  else if (rc != SG_EPARSE)
    __builtin_trap();
  free(copy);
  return 0;
}
