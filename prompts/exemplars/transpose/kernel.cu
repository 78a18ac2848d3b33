// out[c][r] = alpha * in[r][c], one thread per element.
__global__ void transpose_scale_kernel(const float* __restrict__ in, float* __restrict__ out,
                                       float alpha, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = alpha * in[r * cols + c];
}
