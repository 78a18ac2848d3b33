// pallasify: isolated kernel exclusive_scan_kernel from fixtures/kernels/exclusive_scan/kernel.cu:9
__global__ void exclusive_scan_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  extern __shared__ float buf[];  // 2 * blockDim.x floats
  const int tid = threadIdx.x;
  const int bd = blockDim.x;
  const float* xr = x + static_cast<size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<size_t>(blockIdx.x) * cols;

  float carry = 0.0f;
  for (int base = 0; base < cols; base += bd) {
    const int j = base + tid;
    // Shift right by one inside the tile so that an inclusive scan yields the exclusive one.
    buf[tid] = (tid > 0 && j - 1 < cols) ? xr[j - 1] : 0.0f;
    __syncthreads();
    int pout = 0;
    for (int offset = 1; offset < bd; offset <<= 1) {
      const int pin = pout;
      pout = 1 - pout;
      float v = buf[pin * bd + tid];
      if (tid >= offset) v += buf[pin * bd + tid - offset];
      buf[pout * bd + tid] = v;
      __syncthreads();
    }
    if (j < cols) yr[j] = carry + buf[pout * bd + tid];
    // Tile total: exclusive value at the tile's last element plus that element.
    const int last = min(bd, cols - base) - 1;
    carry += buf[pout * bd + last] + xr[base + last];
    __syncthreads();
  }
}
// entry: exclusive_scan_kernel
