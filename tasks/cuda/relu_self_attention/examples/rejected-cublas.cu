// rejected example for relu_self_attention: hands the products to cuBLAS (the
// rules forbid vendor libraries that do the work); the rest is left undone.
#include <cublas_v2.h>

extern "C" void relu_self_attention(const float *x, const float *W_attn, const float *b_attn,
                                    float *y, int batch, int seq_len, int n_embd, int n_head) {
  static cublasHandle_t h;
  if (!h) cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  // Only the v third of the projection, into y: wrong anyway, and forbidden.
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n_embd, batch * seq_len, n_embd, &one,
              W_attn + (size_t)2 * n_embd * n_embd, n_embd, x, n_embd, &zero, y, n_embd);
}
