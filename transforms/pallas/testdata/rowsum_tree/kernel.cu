// Row sums by a shared-memory tree bounded by blockDim.x (one block per row).
#include <torch/extension.h>

__global__ void row_sum_tree_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
  extern __shared__ float buf[];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
  buf[threadIdx.x] = s;
  __syncthreads();
  for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}

torch::Tensor row_sum_tree(torch::Tensor x) {
  const int rows = x.size(0);
  const int cols = x.size(1);
  auto out = torch::empty({rows}, x.options());
  row_sum_tree_kernel<<<rows, 256, 256 * sizeof(float)>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols);
  return out;
}
