/* sg_kv_host.c: the host-memory backend (see sg_kv_dev.h). Slabs are
 * locked so that, like device memory, they are never paged out; where the
 * memlock limit refuses, the slab stays unlocked and the count is reported
 * (sg_kv_host_unlocked), never hidden. */
#include "kvstore/sg_kv_dev.h"

#include "common/sg_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct sg_kv_host {
  unsigned long unlocked;
};

sg_kv_host *sg_kv_host_new(void) { return sg_calloc(1, sizeof(sg_kv_host)); }

void sg_kv_host_free(sg_kv_host *h) { free(h); }

unsigned long sg_kv_host_unlocked(const sg_kv_host *h) { return h->unlocked; }

static int host_slab_alloc(void *ctx, size_t bytes, uint64_t *addr,
                           sg_err *err) {
  sg_kv_host *h = ctx;
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return sg_err_set(err, SG_EFULL, "kvstore: host slab of %zu bytes: out of "
                      "memory", bytes);
  if (mlock(p, bytes) != 0)
    h->unlocked++;
  *addr = (uint64_t)(uintptr_t)p;
  return 0;
}

static void host_slab_free(void *ctx, uint64_t addr, size_t bytes) {
  (void)ctx;
  munmap((void *)(uintptr_t)addr, bytes); /* also unlocks */
}

static int host_write(void *ctx, uint64_t dst, const void *src, size_t n,
                      sg_err *err) {
  (void)ctx, (void)err;
  memcpy((void *)(uintptr_t)dst, src, n);
  return 0;
}

static int host_read(void *ctx, void *dst, uint64_t src, size_t n,
                     sg_err *err) {
  (void)ctx, (void)err;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return 0;
}

void sg_kv_host_backend(sg_kv_host *h, sg_kv_backend *be) {
  memset(be, 0, sizeof *be);
  be->ctx = h;
  be->name = "host";
  be->slab_alloc = host_slab_alloc;
  be->slab_free = host_slab_free;
  be->write = host_write;
  be->read = host_read;
}

int sg_kv_device_parse(const char *spec, bool *is_cuda, int *ordinal,
                       sg_err *err) {
  if (strcmp(spec, "host") == 0) {
    *is_cuda = false;
    *ordinal = 0;
    return 0;
  }
  if (strncmp(spec, "cuda:", 5) == 0 && spec[5] >= '0' && spec[5] <= '9') {
    char *end;
    long v = strtol(spec + 5, &end, 10);
    if (*end == 0 && v < 1024) {
      *is_cuda = true;
      *ordinal = (int)v;
      return 0;
    }
  }
  return sg_err_set(err, SG_EINVAL, "device \"%s\": expected host or cuda:N",
                    spec);
}
