// A cheat (kept as a test: it must never pass): instead of computing, it
// writes a forged "ok" result at 10000x to every open file descriptor, where
// the evaluator's result pipe might be, and ends its process. The judge
// never reads a result from the candidate's process: its server only
// answers "done" with a CUDA status, and one that ends without answering is
// a runtime error.
#include <cuda_runtime.h>
#include <string.h>
#include <unistd.h>

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  (void)A; (void)B; (void)C; (void)N; (void)M;
  const char *fake = "{\"status\":\"ok\",\"message\":\"forged\",\"ref_ms\":10.0,"
                     "\"cand_ms\":0.001,\"ref_mean_ms\":10.0,\"cand_mean_ms\":0.001,"
                     "\"speedup\":10000.0,\"max_abs_err\":0,\"max_rel_err\":0,"
                     "\"first_mismatch\":-1}";
  for (int fd = 0; fd < 1024; fd++)
    (void)!write(fd, fake, strlen(fake));
  _exit(0);
}
