/* sg_kv_cuda.c: the GPU backend (see sg_kv_dev.h), through the CUDA driver
 * loaded at run time (eval/sg_cuda_api.h) plus the few entry points only the
 * store needs (pinned host buffers, free memory), resolved from the same
 * library.
 *
 * Copies are cuMemcpyHtoD/DtoH from and into pinned host buffers: the copy
 * engines move the data by DMA at the link's speed, and the call returns when
 * the data has arrived, so a GET's bytes are in the host buffer before the
 * block can be evicted. Every call first makes this device's primary context
 * current: a store may serve several devices from one thread.
 */
#include "kvstore/sg_kv_dev.h"

#include "common/sg_alloc.h"
#include "eval/sg_cuda_api.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sg_kv_cuda {
  sg_cuda_api api;
  sg_CUresult (*cuMemGetInfo)(size_t *, size_t *);
  sg_CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  sg_CUresult (*cuMemFreeHost)(void *);
  sg_CUdevice dev;
  sg_CUcontext ctx;
  int ordinal;
  char name[16];
  char device_name[128];
};

#define SG_CU_MEMHOSTALLOC_PORTABLE 1u /* usable from every context */

static int cu_fail(sg_kv_cuda *c, sg_CUresult rc, const char *what,
                   sg_err *err) {
  char buf[256];
  return sg_err_set(err, SG_EIO, "%s: %s: %s", c->name, what,
                    sg_cuda_api_errstr(&c->api, rc, buf, sizeof buf));
}

static int cur(sg_kv_cuda *c, sg_err *err) {
  sg_CUresult rc = c->api.cuCtxSetCurrent(c->ctx);
  return rc ? cu_fail(c, rc, "cuCtxSetCurrent", err) : 0;
}

int sg_kv_cuda_open(int ordinal, sg_kv_cuda **out, sg_err *err) {
  sg_kv_cuda *c = sg_calloc(1, sizeof *c);
  c->ordinal = ordinal;
  snprintf(c->name, sizeof c->name, "cuda:%d", ordinal);
  int rc = sg_cuda_api_load(&c->api, err);
  if (rc < 0) {
    free(c);
    return rc;
  }
  c->cuMemGetInfo = (sg_CUresult(*)(size_t *, size_t *))dlsym(c->api.lib, "cuMemGetInfo_v2");
  c->cuMemHostAlloc = (sg_CUresult(*)(void **, size_t, unsigned))dlsym(c->api.lib, "cuMemHostAlloc");
  c->cuMemFreeHost = (sg_CUresult(*)(void *))dlsym(c->api.lib, "cuMemFreeHost");
  if (!c->cuMemGetInfo || !c->cuMemHostAlloc || !c->cuMemFreeHost) {
    free(c);
    return sg_err_set(err, SG_EUNSUPPORTED, "CUDA driver lacks cuMemGetInfo_v2, "
                      "cuMemHostAlloc or cuMemFreeHost (driver too old?)");
  }
  sg_CUresult r = c->api.cuInit(0);
  int count = 0;
  if (!r)
    r = c->api.cuDeviceGetCount(&count);
  if (!r && ordinal >= count) {
    free(c);
    return sg_err_set(err, SG_EUNSUPPORTED, "no device cuda:%d (%d present)",
                      ordinal, count);
  }
  if (!r)
    r = c->api.cuDeviceGet(&c->dev, ordinal);
  if (!r)
    r = c->api.cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
  if (r) {
    char buf[256];
    sg_err_set(err, SG_EUNSUPPORTED, "cuda:%d cannot be opened: %s", ordinal,
               sg_cuda_api_errstr(&c->api, r, buf, sizeof buf));
    free(c);
    return SG_EUNSUPPORTED;
  }
  c->api.cuDeviceGetName(c->device_name, (int)sizeof c->device_name, c->dev);
  *out = c;
  return 0;
}

void sg_kv_cuda_close(sg_kv_cuda *c) {
  if (!c)
    return;
  c->api.cuDevicePrimaryCtxRelease(c->dev);
  free(c);
}

const char *sg_kv_cuda_name(const sg_kv_cuda *c) { return c->device_name; }

static int cu_slab_alloc(void *ctx, size_t bytes, uint64_t *addr, sg_err *err) {
  sg_kv_cuda *c = ctx;
  if (cur(c, err) < 0)
    return SG_EIO;
  sg_CUdeviceptr p;
  sg_CUresult rc = c->api.cuMemAlloc(&p, bytes);
  if (rc)
    return cu_fail(c, rc, "cuMemAlloc", err);
  *addr = p;
  return 0;
}

static void cu_slab_free(void *ctx, uint64_t addr, size_t bytes) {
  (void)bytes;
  sg_kv_cuda *c = ctx;
  sg_err e;
  if (cur(c, &e) == 0)
    c->api.cuMemFree((sg_CUdeviceptr)addr);
}

static int cu_write(void *ctx, uint64_t dst, const void *src, size_t n,
                    sg_err *err) {
  sg_kv_cuda *c = ctx;
  if (cur(c, err) < 0)
    return SG_EIO;
  sg_CUresult rc = c->api.cuMemcpyHtoD((sg_CUdeviceptr)dst, src, n);
  return rc ? cu_fail(c, rc, "cuMemcpyHtoD", err) : 0;
}

static int cu_read(void *ctx, void *dst, uint64_t src, size_t n, sg_err *err) {
  sg_kv_cuda *c = ctx;
  if (cur(c, err) < 0)
    return SG_EIO;
  sg_CUresult rc = c->api.cuMemcpyDtoH(dst, (sg_CUdeviceptr)src, n);
  return rc ? cu_fail(c, rc, "cuMemcpyDtoH", err) : 0;
}

static int cu_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes) {
  sg_kv_cuda *c = ctx;
  sg_err e;
  if (cur(c, &e) < 0)
    return SG_EIO;
  return c->cuMemGetInfo(free_bytes, total_bytes) ? SG_EIO : 0;
}

static void *cu_host_alloc(void *ctx, size_t bytes) {
  sg_kv_cuda *c = ctx;
  sg_err e;
  void *p = NULL;
  if (cur(c, &e) < 0 ||
      c->cuMemHostAlloc(&p, bytes ? bytes : 1, SG_CU_MEMHOSTALLOC_PORTABLE))
    return NULL;
  return p;
}

static void cu_host_free(void *ctx, void *p, size_t bytes) {
  (void)bytes;
  sg_kv_cuda *c = ctx;
  sg_err e;
  if (p && cur(c, &e) == 0)
    c->cuMemFreeHost(p);
}

void sg_kv_cuda_backend(sg_kv_cuda *c, sg_kv_backend *be) {
  memset(be, 0, sizeof *be);
  be->ctx = c;
  be->name = c->name;
  be->slab_alloc = cu_slab_alloc;
  be->slab_free = cu_slab_free;
  be->write = cu_write;
  be->read = cu_read;
  be->mem_info = cu_mem_info;
  be->host_alloc = cu_host_alloc;
  be->host_free = cu_host_free;
}
