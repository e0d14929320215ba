/* Reference for tensor4d_matmul (KernelBench level 1,
 * 11_4D_tensor_matrix_multiplication.py): torch.einsum("bijl,lk->bijk", A, B)
 * with A of shape (b, i, j, l) and B of shape (l, k), giving C of shape
 * (b, i, j, k): C[b][i][j][k] = sum_l A[b][i][j][l] * B[l][k]. Row-major
 * float32; the dimensions are passed in the einsum's order b, i, j, l, k. */
void tensor4d_matmul(const float *A, const float *B, float *C, int b, int i,
                     int j, int l, int k) {
  for (int ib = 0; ib < b; ib++) {
    for (int ii = 0; ii < i; ii++) {
      for (int ij = 0; ij < j; ij++) {
        long row = ((long)ib * i + ii) * j + ij;
        const float *a = A + row * l;
        float *c = C + row * k;
        for (int ik = 0; ik < k; ik++) {
          float sum = 0.0f;
          for (int il = 0; il < l; il++)
            sum += a[il] * B[(long)il * k + ik];
          c[ik] = sum;
        }
      }
    }
  }
}
