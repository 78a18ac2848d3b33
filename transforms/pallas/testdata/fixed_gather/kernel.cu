// A gather by loaded index beside a read at a fixed index (table[0]): the in-kernel form reads both from the
// whole table in VMEM, the fixed one as a block of equal indices (_vtake takes a block; a scalar index crashed).
#include <torch/extension.h>
__global__ void shifted_gather_kernel(int n, int m, const float *table, const int *idx, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) {
    out[i] = table[idx[i]] - table[0];
  }
}
torch::Tensor shifted_gather(torch::Tensor table, torch::Tensor idx) {
  const int n = table.size(0), m = idx.size(0);
  auto out = torch::empty({m}, table.options());
  shifted_gather_kernel<<<(m + 255) / 256, 256>>>(n, m, table.data_ptr<float>(), idx.data_ptr<int>(), out.data_ptr<float>());
  return out;
}
