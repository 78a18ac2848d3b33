// Discrete Laplacian with zero boundaries: y[i] = x[i-1] - 2 x[i] + x[i+1].
__global__ void laplace_1d_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float l = i > 0 ? x[i - 1] : 0.0f;
    float r = i + 1 < n ? x[i + 1] : 0.0f;
    y[i] = l - 2.0f * x[i] + r;
  }
}
