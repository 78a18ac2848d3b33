// pallasify: isolated kernel transpose_kernel from fixtures/kernels/transpose/kernel.cu:10
constexpr int TILE_DIM = 32;
constexpr int BLOCK_ROWS = 8;
__global__ void transpose_kernel(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];  // +1 avoids bank conflicts

  int x = blockIdx.x * TILE_DIM + threadIdx.x;  // input column
  int y = blockIdx.y * TILE_DIM + threadIdx.y;  // input row
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < cols && y + j < rows) {
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    }
  }
  __syncthreads();

  x = blockIdx.y * TILE_DIM + threadIdx.x;  // output column (input row)
  y = blockIdx.x * TILE_DIM + threadIdx.y;  // output row (input column)
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < rows && y + j < cols) {
      out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}
// entry: transpose_kernel
