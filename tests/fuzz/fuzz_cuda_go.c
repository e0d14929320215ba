/* fuzz_cuda_go.c: the go line of a cuda runner started ahead
 * (sg_cuda_harness.h, "SEED PATH") on any bytes, NULs included. Whatever
 * parses has an absolute path without a NUL that fits the buffer and is
 * the line's tail; whatever does not says why, as "go: ...". */
#include "eval/sg_cuda_harness.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[256], msg[256];
  uint64_t seed = 0;
  msg[0] = '\0';
  const char *line = (const char *)data;
  if (sg_cuda_go_parse(line, size, &seed, path, sizeof path, msg, sizeof msg) == 0) {
    size_t n = strlen(path);
    assert(n > 0 && n < sizeof path && path[0] == '/');
    assert(n < size && memcmp(line + size - n, path, n) == 0);
    assert(line[size - n - 1] == ' ');
    char digits[32];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)seed);
    /* the seed is the digits before the space (leading zeros allowed) */
    size_t d = size - n - 1, k = strlen(digits);
    assert(d >= k && memcmp(line + d - k, digits, k) == 0);
  } else {
    assert(strncmp(msg, "go: ", 4) == 0);
  }
  return 0;
}
