// diag(A) @ B: scale each row of B by the matching diagonal entry, using a
// std::vector for the row scratch so nothing leaks.
#include <vector>

void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  std::vector<float> row(M);
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < M; j++)
      row[j] = B[(long)i * M + j];
    for (int j = 0; j < M; j++)
      C[(long)i * M + j] = A[i] * row[j];
  }
}
