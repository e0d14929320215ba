/* sg_kv_dev.h: the store's backends, one per device: locked host memory
 * (sg_kv_host_*: the fallback where no GPU exists, so the store runs and is
 * tested everywhere) and GPU memory through the CUDA driver loaded at run
 * time (sg_kv_cuda_*: cuMemAlloc slabs, copies by the copy engines from
 * pinned host buffers, cuMemGetInfo for yields).
 */
#ifndef SG_KV_DEV_H
#define SG_KV_DEV_H

#include "common/sg_error.h"
#include "kvstore/sg_kv_mem.h"

#include <stdbool.h>

typedef struct sg_kv_host sg_kv_host;

/* Host memory: slabs are mmap'ed and mlock'ed where the limit allows (the
 * backend says whether they were: sg_kv_host_locked). Never fails to
 * create. */
sg_kv_host *sg_kv_host_new(void);
void sg_kv_host_free(sg_kv_host *h);
void sg_kv_host_backend(sg_kv_host *h, sg_kv_backend *be);
/* Slabs allocated so far that could not be locked (RLIMIT_MEMLOCK). */
unsigned long sg_kv_host_unlocked(const sg_kv_host *h);

typedef struct sg_kv_cuda sg_kv_cuda;

/* Opens CUDA device `ordinal` (loads libcuda, retains its primary
 * context). SG_EUNSUPPORTED with the reason where there is no driver or no
 * such device. */
int sg_kv_cuda_open(int ordinal, sg_kv_cuda **out, sg_err *err);
void sg_kv_cuda_close(sg_kv_cuda *c);
void sg_kv_cuda_backend(sg_kv_cuda *c, sg_kv_backend *be);
/* The device's name ("NVIDIA H200"). */
const char *sg_kv_cuda_name(const sg_kv_cuda *c);

/* Parses "host" or "cuda:N" (N >= 0). */
int sg_kv_device_parse(const char *spec, bool *is_cuda, int *ordinal,
                       sg_err *err);

#endif
