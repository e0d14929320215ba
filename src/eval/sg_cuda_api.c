/* sg_cuda_api.c: resolving the CUDA driver API with dlopen (see the header).
 *
 * Versioned entry points: cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on,
 * and the unversioned names are kept only for old binaries, sometimes with an
 * older ABI. Each entry is looked up by its current versioned name first. */
#include "eval/sg_cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *resolve(void *lib, const char *const *names) {
  for (; *names; names++) {
    void *p = dlsym(lib, *names);
    if (p)
      return p;
  }
  return NULL;
}

#define SG_NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

int sg_cuda_api_load(sg_cuda_api *api, sg_err *err) {
  memset(api, 0, sizeof *api);
  const char *path = getenv("SG_LIBCUDA");
  if (!path || !*path)
    path = "libcuda.so.1";
  api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!api->lib)
    return sg_err_set(err, SG_EUNSUPPORTED, "no CUDA driver: %s not loadable: %s",
                      path, dlerror());
  struct {
    void **slot;
    const char *const *names;
  } tab[] = {
      {(void **)&api->cuInit, SG_NAMES("cuInit")},
      {(void **)&api->cuDriverGetVersion, SG_NAMES("cuDriverGetVersion")},
      {(void **)&api->cuDeviceGetCount, SG_NAMES("cuDeviceGetCount")},
      {(void **)&api->cuDeviceGet, SG_NAMES("cuDeviceGet")},
      {(void **)&api->cuDeviceGetName, SG_NAMES("cuDeviceGetName")},
      {(void **)&api->cuDeviceGetAttribute, SG_NAMES("cuDeviceGetAttribute")},
      {(void **)&api->cuDevicePrimaryCtxRetain, SG_NAMES("cuDevicePrimaryCtxRetain")},
      {(void **)&api->cuDevicePrimaryCtxRelease,
       SG_NAMES("cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease")},
      {(void **)&api->cuCtxSetCurrent, SG_NAMES("cuCtxSetCurrent")},
      {(void **)&api->cuCtxSynchronize, SG_NAMES("cuCtxSynchronize")},
      {(void **)&api->cuMemAlloc, SG_NAMES("cuMemAlloc_v2")},
      {(void **)&api->cuMemFree, SG_NAMES("cuMemFree_v2")},
      {(void **)&api->cuMemcpyHtoD, SG_NAMES("cuMemcpyHtoD_v2")},
      {(void **)&api->cuMemcpyDtoH, SG_NAMES("cuMemcpyDtoH_v2")},
      {(void **)&api->cuMemsetD32Async, SG_NAMES("cuMemsetD32Async")},
      {(void **)&api->cuEventCreate, SG_NAMES("cuEventCreate")},
      {(void **)&api->cuEventRecord, SG_NAMES("cuEventRecord")},
      {(void **)&api->cuEventSynchronize, SG_NAMES("cuEventSynchronize")},
      {(void **)&api->cuEventQuery, SG_NAMES("cuEventQuery")},
      {(void **)&api->cuEventElapsedTime,
       SG_NAMES("cuEventElapsedTime_v2", "cuEventElapsedTime")},
      {(void **)&api->cuEventDestroy, SG_NAMES("cuEventDestroy_v2")},
      {(void **)&api->cuGetErrorName, SG_NAMES("cuGetErrorName")},
      {(void **)&api->cuGetErrorString, SG_NAMES("cuGetErrorString")},
      {(void **)&api->cuProfilerStart, SG_NAMES("cuProfilerStart")},
      {(void **)&api->cuProfilerStop, SG_NAMES("cuProfilerStop")},
      {(void **)&api->cuIpcGetMemHandle, SG_NAMES("cuIpcGetMemHandle")},
      {(void **)&api->cuIpcOpenMemHandle,
       SG_NAMES("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle")},
      {(void **)&api->cuIpcCloseMemHandle, SG_NAMES("cuIpcCloseMemHandle")},
  };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    *tab[i].slot = resolve(api->lib, tab[i].names);
    if (!*tab[i].slot)
      return sg_err_set(err, SG_EUNSUPPORTED,
                        "CUDA driver %s lacks %s (driver too old?)", path,
                        tab[i].names[0]);
  }
  return 0;
}

const char *sg_cuda_api_errstr(const sg_cuda_api *api, sg_CUresult rc,
                               char *buf, size_t n) {
  const char *name = NULL, *text = NULL;
  if (api->cuGetErrorName)
    api->cuGetErrorName(rc, &name);
  if (api->cuGetErrorString)
    api->cuGetErrorString(rc, &text);
  snprintf(buf, n, "%s (%d): %s", name ? name : "CUDA error", rc,
           text ? text : "unknown");
  return buf;
}
