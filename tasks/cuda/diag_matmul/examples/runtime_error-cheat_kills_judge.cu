// A cheat (kept as a test): it kills the process that started it, hoping to
// take the judge down with an answer half written. The evaluator survives:
// a judge that ends without a result is a runtime error.
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  (void)A; (void)B; (void)C; (void)N; (void)M;
  kill(getppid(), SIGKILL);
  for (;;)
    pause();
}
