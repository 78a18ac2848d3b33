// Privatised histogram: per-block shared counts, merged with global atomics.
#include <cuda_runtime.h>
__global__ void histogram_kernel(const int* __restrict__ data, unsigned int* __restrict__ hist, int n, int nbins) {
  extern __shared__ unsigned int local[];
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int b = data[i];
    if (b >= 0 && b < nbins) atomicAdd(&local[b], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
    if (local[b]) atomicAdd(&hist[b], local[b]);
  }
}
__global__ void float_hist_kernel(const int* __restrict__ data, float* __restrict__ hist, float* maxv, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(&hist[data[i] & 7], 0.5f);
    atomicMax((int*)maxv, data[i]);
  }
}
