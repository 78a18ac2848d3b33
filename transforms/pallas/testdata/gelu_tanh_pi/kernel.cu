// tanh-approximated GELU with M_PI and M_SQRT2-style constants.
#include <torch/extension.h>
#include <math.h>

__global__ void gelu_tanh_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  const float k = sqrtf(2.0f / (float)M_PI);
  y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v))) + (float)M_E * 0.0f;
}

torch::Tensor gelu_tanh(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int n = x.numel();
  gelu_tanh_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
