// pallasify: isolated kernel softmax_rows_kernel from fixtures/kernels/softmax_rows/kernel.cu:63
#include <cmath>
#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu
__device__ __forceinline__ float warp_reduce_max(float v) {
#pragma unroll
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, offset));
  }
  return v;
}
__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1) {
    v += __shfl_down_sync(FULL_MASK, v, offset);
  }
  return v;
}
__device__ float block_reduce_max(float v, float* red) {
  const int lane = threadIdx.x % WARP_SIZE;
  const int wid = threadIdx.x / WARP_SIZE;
  v = warp_reduce_max(v);
  if (lane == 0) red[wid] = v;
  __syncthreads();
  if (wid == 0) {
    v = (lane < blockDim.x / WARP_SIZE) ? red[lane] : -INFINITY;
    v = warp_reduce_max(v);
    if (lane == 0) red[0] = v;
  }
  __syncthreads();
  v = red[0];
  __syncthreads();
  return v;
}
__device__ float block_reduce_sum(float v, float* red) {
  const int lane = threadIdx.x % WARP_SIZE;
  const int wid = threadIdx.x / WARP_SIZE;
  v = warp_reduce_sum(v);
  if (lane == 0) red[wid] = v;
  __syncthreads();
  if (wid == 0) {
    v = (lane < blockDim.x / WARP_SIZE) ? red[lane] : 0.0f;
    v = warp_reduce_sum(v);
    if (lane == 0) red[0] = v;
  }
  __syncthreads();
  v = red[0];
  __syncthreads();
  return v;
}
__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  extern __shared__ float row[];  // cols floats
  __shared__ float red[WARP_SIZE];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;

  float m = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = xr[j];
    row[j] = v;
    m = fmaxf(m, v);
  }
  m = block_reduce_max(m, red);

  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float e = expf(row[j] - m);
    row[j] = e;
    s += e;
  }
  s = block_reduce_sum(s, red);

  const float inv = 1.0f / s;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    yr[j] = row[j] * inv;
  }
}
// entry: softmax_rows_kernel
