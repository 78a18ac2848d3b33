// mmcv psamask (collect, forward): each thread writes the window of the buffer its mask covers, at
// loop-dependent positions; the window's rows and columns are clamped to the feature map (max(0, …) …
// min(h_mask, …)), so writes of different threads and iterations never overlap.
#include <torch/extension.h>

#define CUDA_KERNEL_LOOP(i, n)                                 \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

template <typename T>
__global__ void window_collect_kernel(const int nthreads, const int h_feature, const int w_feature,
                                      const int h_mask, const int w_mask, const int half_h_mask,
                                      const int half_w_mask, const T* mask_data, T* buffer_data) {
  CUDA_KERNEL_LOOP(index, nthreads) {
    const int w = index % w_feature;
    const int h = (index / w_feature) % h_feature;
    const int n = index / w_feature / h_feature;
    const int hstart = max(0, half_h_mask - h);
    const int hend = min(h_mask, h_feature + half_h_mask - h);
    const int wstart = max(0, half_w_mask - w);
    const int wend = min(w_mask, w_feature + half_w_mask - w);
    for (int hidx = hstart; hidx < hend; hidx++) {
      for (int widx = wstart; widx < wend; widx++) {
        buffer_data[(n * h_feature * w_feature + (hidx + h - half_h_mask) * w_feature +
                     (widx + w - half_w_mask)) * h_feature * w_feature + h * w_feature + w] =
            mask_data[((n * h_mask * w_mask + hidx * w_mask + widx) * h_feature + h) * w_feature + w];
      }
    }
  }
}

torch::Tensor window_collect(torch::Tensor mask, int h_mask, int w_mask) {
  const int num = mask.size(0), h_feature = mask.size(2), w_feature = mask.size(3);
  auto buffer = torch::zeros({num, h_feature * w_feature, h_feature, w_feature}, mask.options());
  const int nthreads = num * h_feature * w_feature;
  window_collect_kernel<float><<<(nthreads + 511) / 512, 512>>>(nthreads, h_feature, w_feature, h_mask, w_mask,
                                                                (h_mask - 1) / 2, (w_mask - 1) / 2,
                                                                mask.data_ptr<float>(), buffer.data_ptr<float>());
  return buffer;
}
