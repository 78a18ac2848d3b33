// pallasify: isolated kernel histogram_kernel from fixtures/kernels/histogram/kernel.cu:13
#include <algorithm>
__global__ void histogram_kernel(const int* __restrict__ bins,
                                 const float* __restrict__ weights,
                                 float* __restrict__ hist,
                                 int n,
                                 int num_bins) {
  extern __shared__ float local_hist[];
  for (int b = threadIdx.x; b < num_bins; b += blockDim.x) {
    local_hist[b] = 0.0f;
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int b = bins[i];
    if (b >= 0 && b < num_bins) {
      atomicAdd(&local_hist[b], weights[i]);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < num_bins; b += blockDim.x) {
    atomicAdd(&hist[b], local_hist[b]);
  }
}
// entry: histogram_kernel
