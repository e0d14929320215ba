/* 4D tensor x matrix: one thread per output element (b, i, j, k), each
 * computing a dot product over l. */
__global__ void tensor4d_kernel(const float *A, const float *B, float *C,
                                int rows, int l, int k) {
  int row = blockIdx.x;
  int col = blockIdx.y * blockDim.x + threadIdx.x;
  if (row >= rows || col >= k)
    return;
  float sum = 0.0f;
  for (int p = 0; p < l; p++)
    sum += A[(long)row * l + p] * B[(long)p * k + col];
  C[(long)row * k + col] = sum;
}

void tensor4d_matmul(const float *A, const float *B, float *C, int b, int i,
                     int j, int l, int k) {
  int rows = b * i * j;
  dim3 grid(rows, (k + 255) / 256);
  tensor4d_kernel<<<grid, 256>>>(A, B, C, rows, l, k);
}
