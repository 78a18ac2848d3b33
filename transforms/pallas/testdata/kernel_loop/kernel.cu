// mmcv-style CUDA_1D_KERNEL_LOOP body macro with a runtime element count.
#include <torch/extension.h>

#define CUDA_1D_KERNEL_LOOP(i, n)                              \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

template <typename T>
__global__ void hard_swish_kernel(const int nthreads, const T* input, T* output) {
  CUDA_1D_KERNEL_LOOP(index, nthreads) {
    const T v = input[index];
    output[index] = v * min(max(v + (T)3., (T)0.), (T)6.) / (T)6.;
  }
}

torch::Tensor hard_swish(torch::Tensor input) {
  auto output = torch::empty_like(input);
  const int n = input.numel();
  hard_swish_kernel<float><<<std::min((n + 511) / 512, 4096), 512>>>(n, input.data_ptr<float>(), output.data_ptr<float>());
  return output;
}
