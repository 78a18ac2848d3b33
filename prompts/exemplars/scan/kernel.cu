// Inclusive prefix sum along each row; one thread walks one row.
__global__ void row_cumsum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) {
      s += x[r * cols + c];
      y[r * cols + c] = s;
    }
  }
}
