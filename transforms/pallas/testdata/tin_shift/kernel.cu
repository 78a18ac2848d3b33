// mmcv tin_shift (forward): each thread shifts one (n, c, hw) column of the input along t by a loaded
// offset, writing out[(t + shift) ...] only where the shifted t stays in [0, t_size) (continue otherwise),
// into a buffer the host zero-fills. nthreads is the output's element count while the grid covers
// n * c * hw threads: the grid-stride loop does each column t_size times over, identically.
#include <torch/extension.h>

#define THREADS_PER_BLOCK 512
#define GET_BLOCKS(n) (((n) + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK)
#define CUDA_1D_KERNEL_LOOP(i, n)                                 \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

template <typename T>
__global__ void tin_shift_kernel(const int nthreads, const T* input, const int* shift, T* output,
                                 const int batch_size, const int channels, const int t_size,
                                 const int hw_size, const int group_size, const int group_channel) {
  CUDA_1D_KERNEL_LOOP(index, nthreads) {
    const int hw_index = index % hw_size;
    const int j = (index / hw_size) % channels;
    const int n_index = (index / hw_size / channels) % batch_size;
    int group_id = j / group_channel;
    int t_shift = shift[n_index * group_size + group_id];
    int offset = n_index * t_size * hw_size * channels + hw_size * j + hw_index;
    for (int i = 0; i < t_size; i++) {
      int now_t = i + t_shift;
      int data_id = i * hw_size * channels + offset;
      if (now_t < 0 || now_t >= t_size) {
        continue;
      }
      int out_id = now_t * hw_size * channels + offset;
      output[out_id] = input[data_id];
    }
  }
}

torch::Tensor tin_shift(torch::Tensor input, torch::Tensor shift) {
  auto output = torch::zeros_like(input);
  const int batch_size = input.size(0), t_size = input.size(1), channels = input.size(2),
            hw_size = input.size(3);
  const int group_size = shift.size(1);
  const int group_channel = channels / group_size;
  const int num_kernels = batch_size * hw_size * channels;
  tin_shift_kernel<float><<<GET_BLOCKS(num_kernels), THREADS_PER_BLOCK>>>(
      output.numel(), input.data_ptr<float>(), shift.data_ptr<int>(), output.data_ptr<float>(),
      batch_size, channels, t_size, hw_size, group_size, group_channel);
  return output;
}
