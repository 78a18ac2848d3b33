// mmcv's bilinear_interpolate (roi_align, deform_conv, ...): a template helper that returns early for points
// outside the feature map (`if (…) return 0;`), clamps its arguments and assigns two locals at once
// (`y_high = y_low = height - 1;`), then reads four neighbours at indices computed from loaded coordinates.
#include <torch/extension.h>

template <typename T>
__device__ T bilinear(const T* input, const int height, const int width, T y, T x) {
  if (y < -1.0 || y > height || x < -1.0 || x > width) return 0;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int y_low = (int)y;
  int x_low = (int)x;
  int y_high;
  int x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = (T)y_low;
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = (T)x_low;
  } else {
    x_high = x_low + 1;
  }
  T ly = y - y_low;
  T lx = x - x_low;
  T hy = 1. - ly, hx = 1. - lx;
  T v1 = input[y_low * width + x_low];
  T v2 = input[y_low * width + x_high];
  T v3 = input[y_high * width + x_low];
  T v4 = input[y_high * width + x_high];
  return hy * hx * v1 + hy * lx * v2 + ly * hx * v3 + ly * lx * v4;
}

// out[p][c]: channel c of the feature map sampled at point p, (y, x) = its anchor plus its offset (a
// deformable sampling's shape: anchors on the grid, offsets learnt)
__global__ void sample_points_kernel(const int n, const float* input, const float* anchors, const float* offsets,
                                     float* out, const int channels, const int height, const int width) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int p = i / channels;
  const int c = i % channels;
  const float y = anchors[2 * p] + offsets[2 * p];
  const float x = anchors[2 * p + 1] + offsets[2 * p + 1];
  out[i] = bilinear(input + c * height * width, height, width, y, x);
}

torch::Tensor sample_points(torch::Tensor input, torch::Tensor anchors, torch::Tensor offsets) {
  const int channels = input.size(0), height = input.size(1), width = input.size(2);
  auto out = torch::empty({anchors.size(0), channels}, input.options());
  const int n = out.numel();
  sample_points_kernel<<<(n + 255) / 256, 256>>>(n, input.data_ptr<float>(), anchors.data_ptr<float>(),
                                                 offsets.data_ptr<float>(), out.data_ptr<float>(), channels,
                                                 height, width);
  return out;
}
