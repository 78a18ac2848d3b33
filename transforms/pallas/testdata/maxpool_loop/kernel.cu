// KernelBench-style max pooling: loops whose trip counts are kernel arguments (runtime values), loads at
// loop-dependent positions under a bound test, a maximum carried across iterations.
#include <torch/extension.h>
#include <float.h>

__global__ void max_pool_kernel(const float* input, float* output, int input_height, int input_width,
                                int pool_height, int pool_width, int stride, int output_height, int output_width) {
  int w_out = blockIdx.x * blockDim.x + threadIdx.x;
  int h_out = blockIdx.y * blockDim.y + threadIdx.y;
  int c = blockIdx.z;
  if (w_out < output_width && h_out < output_height) {
    float max_val = -FLT_MAX;
    int start_h = h_out * stride;
    int start_w = w_out * stride;
    for (int h = 0; h < pool_height; ++h) {
      for (int w = 0; w < pool_width; ++w) {
        int h_in = start_h + h;
        int w_in = start_w + w;
        if (h_in < input_height && w_in < input_width) {
          max_val = fmaxf(max_val, input[c * input_height * input_width + h_in * input_width + w_in]);
        }
      }
    }
    output[c * output_height * output_width + h_out * output_width + w_out] = max_val;
  }
}

torch::Tensor max_pool(torch::Tensor input, int kernel_size, int stride) {
  const int channels = input.size(0), ih = input.size(1), iw = input.size(2);
  const int oh = (ih - kernel_size) / stride + 1, ow = (iw - kernel_size) / stride + 1;
  auto output = torch::empty({channels, oh, ow}, input.options());
  dim3 block(16, 16);
  dim3 grid((ow + 15) / 16, (oh + 15) / 16, channels);
  max_pool_kernel<<<grid, block>>>(input.data_ptr<float>(), output.data_ptr<float>(), ih, iw, kernel_size,
                                   kernel_size, stride, oh, ow);
  return output;
}
