// LayerNorm forward writing mean and rstd beside the output (one block per row, two-level reduction).
#include <torch/extension.h>

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__device__ float block_sum(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x % 32;
  const int wid = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) part[wid] = v;
  __syncthreads();
  v = (threadIdx.x < blockDim.x / 32) ? part[lane] : 0.0f;
  if (wid == 0) v = warp_sum(v);
  if (threadIdx.x == 0) part[0] = v;
  __syncthreads();
  v = part[0];
  __syncthreads();
  return v;
}

__global__ void layernorm_stats_kernel(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ mean,
                                       float* __restrict__ rstd, int cols, float eps) {
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
  const float mu = block_sum(s) / cols;
  float sq = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = xr[j] - mu;
    sq += d * d;
  }
  const float r = rsqrtf(block_sum(sq) / cols + eps);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = (xr[j] - mu) * r;
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    rstd[blockIdx.x] = r;
  }
}

std::vector<torch::Tensor> layernorm_stats(torch::Tensor x, double eps) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  auto y = torch::empty_like(x);
  auto mean = torch::empty({rows}, x.options());
  auto rstd = torch::empty({rows}, x.options());
  layernorm_stats_kernel<<<rows, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), mean.data_ptr<float>(),
                                        rstd.data_ptr<float>(), cols, static_cast<float>(eps));
  return {y, mean, rstd};
}
