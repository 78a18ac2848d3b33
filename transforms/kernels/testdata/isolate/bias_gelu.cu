// pallasify: isolated kernel bias_gelu_kernel from fixtures/kernels/bias_gelu/kernel.cu:13
#define THREADS_PER_BLOCK 256
__device__ __forceinline__ float gelu_erf(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}
__global__ void __launch_bounds__(THREADS_PER_BLOCK)
bias_gelu_kernel(const float* __restrict__ x,
                 const float* __restrict__ bias,
                 float* __restrict__ out,
                 int rows,
                 int cols) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= rows * cols) {
    return;
  }
  const int col = idx % cols;
  out[idx] = gelu_erf(x[idx] + __ldg(&bias[col]));
}
// entry: bias_gelu_kernel
