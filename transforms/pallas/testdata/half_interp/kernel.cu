// mmcv's three_interpolate forward instantiated for at::Half: the weighted sum of three gathered points computed
// in c10::Half arithmetic, where every product and sum is rounded to float16 (a float32 sum differs under
// cancellation). Pointer parameters moved inside the grid-stride loop, points gathered by idx.
#include <torch/extension.h>

#define CUDA_1D_KERNEL_LOOP(i, n)                              \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

template <typename T>
__global__ void three_interp_kernel(int b, int c, int m, int n, const T *points, const int *__restrict__ idx,
                                    const T *weight, T *out) {
  int bs_idx = blockIdx.z;
  int c_idx = blockIdx.y;
  CUDA_1D_KERNEL_LOOP(pt_idx, n) {
    if (bs_idx >= b || c_idx >= c) return;

    weight += bs_idx * n * 3 + pt_idx * 3;
    points += bs_idx * c * m + c_idx * m;
    idx += bs_idx * n * 3 + pt_idx * 3;
    out += bs_idx * c * n + c_idx * n;

    out[pt_idx] = weight[0] * points[idx[0]] + weight[1] * points[idx[1]] + weight[2] * points[idx[2]];
  }
}

torch::Tensor three_interp(torch::Tensor points, torch::Tensor idx, torch::Tensor weight) {
  const int b = points.size(0), c = points.size(1), m = points.size(2), n = idx.size(1);
  auto out = torch::empty({b, c, n}, points.options());
  dim3 blocks(std::min((n + 255) / 256, 4096), c, b);
  three_interp_kernel<at::Half><<<blocks, 256>>>(b, c, m, n, points.data_ptr<at::Half>(), idx.data_ptr<int>(),
                                                 weight.data_ptr<at::Half>(), out.data_ptr<at::Half>());
  return out;
}
