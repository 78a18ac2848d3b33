// mmcv's gather_points forward: the pointer-offset idiom (out += …; idx += …; points += …) inside a grid-stride
// loop, then a gather by value (points[idx[0]]). The grid covers m (one iteration per thread), as GET_BLOCKS does
// up to 4096 blocks.
#include <torch/extension.h>

#define CUDA_1D_KERNEL_LOOP(i, n)                              \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

__global__ void gather_points_kernel(int b, int c, int n, int m, const float *points, const int *__restrict__ idx,
                                     float *out) {
  int bs_idx = blockIdx.z;
  int c_idx = blockIdx.y;
  CUDA_1D_KERNEL_LOOP(pt_idx, m) {
    if (bs_idx >= b || c_idx >= c) return;

    out += bs_idx * c * m + c_idx * m + pt_idx;
    idx += bs_idx * m + pt_idx;
    points += bs_idx * c * n + c_idx * n;
    out[0] = points[idx[0]];
  }
}

torch::Tensor gather_points(torch::Tensor points, torch::Tensor idx) {
  const int b = points.size(0), c = points.size(1), n = points.size(2), m = idx.size(1);
  auto out = torch::empty({b, c, m}, points.options());
  dim3 blocks(std::min((m + 511) / 512, 4096), c, b);
  gather_points_kernel<<<blocks, 512>>>(b, c, n, m, points.data_ptr<float>(), idx.data_ptr<int>(),
                                        out.data_ptr<float>());
  return out;
}
