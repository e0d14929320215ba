/* fuzz_replay.c: a model-stream record (llm.jsonl.gz, or its lines
 * uncompressed: the reader takes both) into the replay loader, then every
 * loaded generation asked for again through the matcher, as the replay
 * server asks. Any bytes must load or be refused with a message, never
 * crash; a main asked for by its own messages must find a match.
 *
 * The loader reads a file (it is given a path by `--replay DIR`), so the
 * input is written to one temporary file per run. */
#include "store/sg_replay.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[] = "/tmp/fuzz_replay_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return 0;
  size_t off = 0;
  while (off < size) {
    ssize_t n = write(fd, data + off, size - off);
    if (n <= 0)
      break;
    off += (size_t)n;
  }
  close(fd);
  sg_replay *rp = NULL;
  sg_err err;
  sg_err_clear(&err);
  int rc = sg_replay_load(path, &rp, &err);
  unlink(path);
  if (rc < 0) {
    if (rp != NULL || err.msg[0] == '\0')
      __builtin_trap(); /* refused, so nothing loaded, and a reason said */
    return 0;
  }
  for (size_t i = 0; i < sg_replay_count(rp); i++) {
    const sg_replay_gen *g = sg_replay_get(rp, i);
    size_t text_len = g->text ? strlen(g->text) : 0;
    sg_replay_query q = {.system = g->system ? g->system : "",
                         .user = g->user ? g->user : "",
                         .fork = g->fork,
                         .prefix = g->fork ? g->text : NULL,
                         .prefix_len = g->fork ? g->prefix_bytes : 0};
    if (q.prefix_len > text_len)
      q.prefix_len = text_len;
    const sg_replay_gen *got = NULL;
    sg_err_clear(&err);
    rc = sg_replay_match(rp, &q, &got, &err);
    if (!g->fork && rc != 0)
      __builtin_trap(); /* a recorded main is found by its own messages */
    if (rc == 0 && got == NULL)
      __builtin_trap();
  }
  sg_replay_free(rp);
  return 0;
}
