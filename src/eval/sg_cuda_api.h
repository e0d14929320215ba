/* sg_cuda_api.h: the CUDA driver API, loaded at run time with dlopen.
 *
 * specgen builds and runs where CUDA is absent: nothing links libcuda. The
 * cuda evaluator's child process calls sg_cuda_api_load() and gets a table of
 * the few driver entry points it uses; a machine without a driver gets a clear
 * error ("libcuda.so.1 not loadable: ..."), which the evaluator reports as
 * infra_error, never a crash. The types below are the driver's ABI types,
 * declared here so that no CUDA header is needed to build specgen.
 */
#ifndef SG_CUDA_API_H
#define SG_CUDA_API_H

#include "common/sg_error.h"

#include <stddef.h>

typedef int sg_CUresult;            /* CUresult; 0 is CUDA_SUCCESS */
typedef int sg_CUdevice;
typedef void *sg_CUcontext;
typedef void *sg_CUstream;
typedef void *sg_CUevent;
typedef unsigned long long sg_CUdeviceptr;
/* CUipcMemHandle: an opaque 64-byte handle, passed by value. */
typedef struct sg_CUipcMemHandle {
  char reserved[64];
} sg_CUipcMemHandle;
#define SG_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1

#define SG_CUDA_ERROR_NOT_READY 600

/* Device attributes used here (values from the driver's cuda.h). */
#define SG_CU_ATTR_MULTIPROCESSOR_COUNT 16
#define SG_CU_ATTR_L2_CACHE_SIZE 38
#define SG_CU_ATTR_COMPUTE_CAPABILITY_MAJOR 75
#define SG_CU_ATTR_COMPUTE_CAPABILITY_MINOR 76

typedef struct sg_cuda_api {
  void *lib;
  sg_CUresult (*cuInit)(unsigned);
  sg_CUresult (*cuDriverGetVersion)(int *);
  sg_CUresult (*cuDeviceGetCount)(int *);
  sg_CUresult (*cuDeviceGet)(sg_CUdevice *, int);
  sg_CUresult (*cuDeviceGetName)(char *, int, sg_CUdevice);
  sg_CUresult (*cuDeviceGetAttribute)(int *, int, sg_CUdevice);
  sg_CUresult (*cuDevicePrimaryCtxRetain)(sg_CUcontext *, sg_CUdevice);
  sg_CUresult (*cuDevicePrimaryCtxRelease)(sg_CUdevice);
  sg_CUresult (*cuCtxSetCurrent)(sg_CUcontext);
  sg_CUresult (*cuCtxSynchronize)(void);
  sg_CUresult (*cuMemAlloc)(sg_CUdeviceptr *, size_t);
  sg_CUresult (*cuMemFree)(sg_CUdeviceptr);
  sg_CUresult (*cuMemcpyHtoD)(sg_CUdeviceptr, const void *, size_t);
  sg_CUresult (*cuMemcpyDtoH)(void *, sg_CUdeviceptr, size_t);
  sg_CUresult (*cuMemsetD32Async)(sg_CUdeviceptr, unsigned, size_t, sg_CUstream);
  sg_CUresult (*cuEventCreate)(sg_CUevent *, unsigned);
  sg_CUresult (*cuEventRecord)(sg_CUevent, sg_CUstream);
  sg_CUresult (*cuEventSynchronize)(sg_CUevent);
  sg_CUresult (*cuEventQuery)(sg_CUevent);
  sg_CUresult (*cuEventElapsedTime)(float *, sg_CUevent, sg_CUevent);
  sg_CUresult (*cuEventDestroy)(sg_CUevent);
  sg_CUresult (*cuGetErrorName)(sg_CUresult, const char **);
  sg_CUresult (*cuGetErrorString)(sg_CUresult, const char **);
  sg_CUresult (*cuProfilerStart)(void);
  sg_CUresult (*cuProfilerStop)(void);
  /* CUDA IPC: the judge shares its buffers with the processes that run the
   * candidate and the reference (sg_cuda_server.h). */
  sg_CUresult (*cuIpcGetMemHandle)(sg_CUipcMemHandle *, sg_CUdeviceptr);
  sg_CUresult (*cuIpcOpenMemHandle)(sg_CUdeviceptr *, sg_CUipcMemHandle, unsigned);
  sg_CUresult (*cuIpcCloseMemHandle)(sg_CUdeviceptr);
} sg_cuda_api;

/* Loads libcuda.so.1 (or $SG_LIBCUDA, for tests) and resolves the table.
 * Returns SG_EUNSUPPORTED with a message saying what was missing when there
 * is no driver. The library stays loaded for the life of the process. */
int sg_cuda_api_load(sg_cuda_api *api, sg_err *err);

/* "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
 * into buf (size n); works with a partly loaded table. */
const char *sg_cuda_api_errstr(const sg_cuda_api *api, sg_CUresult rc,
                               char *buf, size_t n);

#endif
