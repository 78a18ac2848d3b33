#include <torch/extension.h>

// rows and cols are the input's own dims, independent in this code whatever
// sizes a test passes (the repository's test uses a 4 x 4 input).
__global__ void row_bias_kernel(const float* x, const float* bias, float* out, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) out[i] = 2.0f * x[i] + bias[i % cols];
}

torch::Tensor row_bias(torch::Tensor x, torch::Tensor bias) {
  TORCH_CHECK(bias.size(0) == x.size(1), "one bias per column");
  const int rows = x.size(0), cols = x.size(1);
  auto out = torch::empty_like(x);
  row_bias_kernel<<<(rows * cols + 255) / 256, 256>>>(x.data_ptr<float>(), bias.data_ptr<float>(),
                                                      out.data_ptr<float>(), rows, cols);
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("row_bias", &row_bias); }
