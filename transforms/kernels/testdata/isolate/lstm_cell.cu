// pallasify: isolated kernel lstm_cell_kernel from fixtures/kernels/lstm_cell/kernel.cu:17
namespace {
__device__ __forceinline__ float sigmoidf(float v) { return 1.0f / (1.0f + expf(-v)); }
__global__ void lstm_cell_kernel(const float* __restrict__ gates,
                                 const float* __restrict__ c_prev,
                                 float* __restrict__ h_next,
                                 float* __restrict__ c_next,
                                 int hidden) {
  const int b = blockIdx.y;
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= hidden) return;
  const float* g = gates + static_cast<size_t>(b) * 4 * hidden;
  const float in_gate = sigmoidf(g[j]);
  const float forget_gate = sigmoidf(g[hidden + j]);
  const float cell_gate = tanhf(g[2 * hidden + j]);
  const float out_gate = sigmoidf(g[3 * hidden + j]);
  const size_t off = static_cast<size_t>(b) * hidden + j;
  const float c = forget_gate * c_prev[off] + in_gate * cell_gate;
  c_next[off] = c;
  h_next[off] = out_gate * tanhf(c);
}
} // namespace
// entry: lstm_cell_kernel
