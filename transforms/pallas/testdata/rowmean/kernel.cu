// Row mean with a shared-memory tree: each thread sums its share of the row,
// the block folds the partial sums pairwise, thread 0 writes the mean.
#include <torch/extension.h>

#define BLOCK 256

__global__ void row_mean_kernel(const float* __restrict__ x, float* __restrict__ mean, int cols) {
  __shared__ float sdata[BLOCK];
  const int tid = threadIdx.x;
  const int row = blockIdx.x;
  float s = 0.0f;
  for (int j = tid; j < cols; j += blockDim.x) {
    s += x[row * cols + j];
  }
  sdata[tid] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) sdata[tid] += sdata[tid + stride];
    __syncthreads();
  }
  if (tid == 0) mean[row] = sdata[0] / (float)cols;
}

torch::Tensor row_mean(torch::Tensor x) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  auto mean = torch::empty({rows}, x.options());
  row_mean_kernel<<<rows, BLOCK>>>(x.data_ptr<float>(), mean.data_ptr<float>(), cols);
  return mean;
}
