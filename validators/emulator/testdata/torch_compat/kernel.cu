// Kernels written for torch extensions: at::Half/at::BFloat16, acc_type, and a
// TU built with __CUDA_NO_HALF_OPERATORS__ that defines its own __half operators.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>

__device__ __forceinline__ __half operator+(const __half& a, const __half& b) { return __float2half(__half2float(a) + __half2float(b) + 1.0f); }

template <typename scalar_t>
__global__ void C10_LAUNCH_BOUNDS_1(256) scale_acc(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int n) {
  using acc_t = at::acc_type<scalar_t, true>;
  CUDA_KERNEL_LOOP(i, n) {
    acc_t v = x[i] * 0.5f;
    v += x[i];
    y[i] = static_cast<scalar_t>(v) + x[i] * 2;
  }
}
__global__ void own_half_plus(const __half* a, __half* out) {
  out[threadIdx.x] = a[threadIdx.x] + a[threadIdx.x];
  if (threadIdx.x == 1) printf("device printf: thread %d sum %.2f\n", (int)threadIdx.x, __half2float(out[threadIdx.x]));
}
