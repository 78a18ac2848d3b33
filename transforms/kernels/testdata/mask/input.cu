// __global__ in a comment stays; so does "a <<<string>>>".
#include <cuda_runtime.h>
#define BLOCK 128
__constant__ float coef[4];
__managed__ int counter;
template <typename T, int B>
__global__ void __launch_bounds__(BLOCK, (2))
scale(const T* __restrict__ x, T* y, int n) {
  __shared__ float tile[B];
  extern __shared__ float dyn[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * coef[0];
}
__host__ __device__ __forceinline__ float twice(float v) { return 2.f * v; }
__device__ __noinline__ float thrice(float v) { return 3.f * v; }
void launch(const float* x, float* y, int n) {
  const char* s = "<<<not a launch>>>";
  scale<float, BLOCK><<<(n + BLOCK - 1) / BLOCK,
                        BLOCK, 0,
                        0>>>(x, y, n);
}
