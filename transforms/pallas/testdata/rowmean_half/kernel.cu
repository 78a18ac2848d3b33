// Row mean of float16 rows, accumulated in float32 by a shared-memory tree; thread 0 writes the mean as a half.
#include <torch/extension.h>
#include <cuda_fp16.h>

#define BLOCK 256

__global__ void row_mean_half_kernel(const __half* __restrict__ x, __half* __restrict__ mean, int cols) {
  __shared__ float sdata[BLOCK];
  const int tid = threadIdx.x;
  const int row = blockIdx.x;
  float s = 0.0f;
  for (int j = tid; j < cols; j += blockDim.x) {
    s += __half2float(x[row * cols + j]);
  }
  sdata[tid] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) sdata[tid] += sdata[tid + stride];
    __syncthreads();
  }
  if (tid == 0) mean[row] = __float2half(sdata[0] / (float)cols);
}

torch::Tensor row_mean_half(torch::Tensor x) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  auto mean = torch::empty({rows}, x.options());
  row_mean_half_kernel<<<rows, BLOCK>>>(reinterpret_cast<const __half*>(x.data_ptr<at::Half>()),
                                        reinterpret_cast<__half*>(mean.data_ptr<at::Half>()), cols);
  return mean;
}
