/* A @ B for symmetric A and B, driven by a queue of 32-row tiles: take a
 * tile, compute it, mark it done, until no tile is pending. */
#define TILE 32
#define MAX_TILES 1024

void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  int ntiles = (N + TILE - 1) / TILE;
  if (ntiles > MAX_TILES)
    ntiles = MAX_TILES;
  unsigned char pending[MAX_TILES];
  for (int t = 0; t < ntiles; t++)
    pending[t] = 1;
  int left = ntiles;
  int t = 0;
  while (left > 0) {
    if (pending[t]) {
      for (int i = t * TILE; i < (t + 1) * TILE && i < N; i++)
        for (int j = 0; j < N; j++) {
          float s = 0.0f;
          for (int k = 0; k < N; k++)
            s += A[(long)i * N + k] * B[(long)k * N + j];
          C[(long)i * N + j] = s;
        }
      pending[t] = 0;
    }
    t = (t + 1) % ntiles;
  }
}
