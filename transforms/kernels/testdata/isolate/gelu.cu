// pallasify: isolated kernel gelu_kernel from fixtures/kernels/gelu/kernel.cu:18
#include <cstdint>
constexpr int kBlockSize = 512;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;
__device__ __forceinline__ float gelu_tanh(float x) {
  const float inner = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
template <typename scalar_t>
__global__ void __launch_bounds__(kBlockSize)
gelu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = static_cast<scalar_t>(gelu_tanh(static_cast<float>(x[i])));
  }
}
template __global__ void gelu_kernel<float>(const float* __restrict__ x, float* __restrict__ y, int64_t n);
// entry: gelu_kernel<float>
