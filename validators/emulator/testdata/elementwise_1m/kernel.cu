#include <cuda_runtime.h>
__global__ void saxpy_gelu(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = a * x[i] + y[i];
    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
  }
}
