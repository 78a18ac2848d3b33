// mmcv-style window loops (psamask, carafe): bounds that vary with the thread, clamped by uniform ones
// (max(0, …) … min(H, …)) or shifted by a uniform window size, a continue, sums carried across iterations.
#include <torch/extension.h>

#define CUDA_1D_KERNEL_LOOP(i, n)                              \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

__global__ void window_sum_kernel(const int nthreads, const float* input, const float* weight, float* output,
                                  const int height, const int width, const int half_h, const int half_w,
                                  const int kernel_size) {
  CUDA_1D_KERNEL_LOOP(index, nthreads) {
    const int w = index % width;
    const int h = (index / width) % height;
    const int n = index / width / height;
    // clamped (psamask): window rows [hstart, hend) of 2 * half_h + 1 that fall inside the image
    const int hstart = max(0, half_h - h);
    const int hend = min(2 * half_h + 1, height + half_h - h);
    float acc = 0.0f;
    int count = 0;
    for (int hidx = hstart; hidx < hend; hidx++) {
      const int y = hidx + h - half_h;
      // shifted: kernel_size columns from w - half_w
      for (int x = w - half_w; x < w - half_w + kernel_size; x++) {
        if (x < 0 || x >= width) {
          continue;
        }
        const float v = input[(n * height + y) * width + x];
        if (v < 0.0f) {
          continue;
        }
        acc += v * weight[hidx * kernel_size + (x - w + half_w)];
        count++;
      }
    }
    output[index] = count > 0 ? acc / count : 0.0f;
  }
}

torch::Tensor window_sum(torch::Tensor input, torch::Tensor weight, int half_h, int half_w) {
  const int n = input.size(0), height = input.size(1), width = input.size(2);
  const int kernel_size = weight.size(1);
  auto output = torch::empty_like(input);
  const int nthreads = input.numel();
  window_sum_kernel<<<(nthreads + 255) / 256, 256>>>(nthreads, input.data_ptr<float>(), weight.data_ptr<float>(),
                                                     output.data_ptr<float>(), height, width, half_h, half_w,
                                                     kernel_size);
  return output;
}
