// rejected example for diag_matmul: loads code at run time (dlopen), which the
// rules forbid (it could reach the reference or a vendor library).
#include <cuda_runtime.h>
#include <dlfcn.h>

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  void *lib = dlopen("libcublas.so", RTLD_NOW);
  (void)lib;
}
