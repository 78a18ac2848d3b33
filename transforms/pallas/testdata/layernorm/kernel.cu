// LayerNorm forward, one block per row: mean and variance by warp shuffles
// and a shared-memory stage, gamma/beta per column.
#include <torch/extension.h>

#define WARP 32

__device__ float warp_sum(float v) {
  for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float block_sum(float v, float* tmp) {
  const int lane = threadIdx.x % WARP;
  const int wid = threadIdx.x / WARP;
  v = warp_sum(v);
  if (lane == 0) tmp[wid] = v;
  __syncthreads();
  v = (lane < blockDim.x / WARP) ? tmp[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ y, int cols, float eps) {
  __shared__ float tmp[WARP];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
  const float mean = block_sum(s, tmp) / cols;
  float sq = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = xr[j] - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq, tmp) / cols + eps);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
}

torch::Tensor layernorm(torch::Tensor x, torch::Tensor gamma, torch::Tensor beta, double eps) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  auto y = torch::empty_like(x);
  layernorm_kernel<<<rows, 128>>>(x.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
                                  y.data_ptr<float>(), cols, static_cast<float>(eps));
  return y;
}
