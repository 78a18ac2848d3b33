// pallasify: isolated kernel vec_add_scale_kernel from fixtures/kernels/vec_add_scale/kernel.cu:16
#include <algorithm>
__global__ void vec_add_scale_kernel(const float* __restrict__ a,
                                     const float* __restrict__ b,
                                     float* __restrict__ out,
                                     float alpha,
                                     int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x) {
    out[i] = alpha * (a[i] + b[i]);
  }
}
// entry: vec_add_scale_kernel
