// y = alpha * silu(x), one thread per element.
__global__ void silu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = alpha * v / (1.0f + expf(-v));
  }
}
