// RMSNorm over each row: y = x / sqrt(mean(x^2) + eps) * w; one block per row.
__global__ void rmsnorm_rows_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                    float* __restrict__ y, int cols, float eps) {
  __shared__ float buf[256];
  const int row = blockIdx.x;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = x[row * cols + c];
    s += v * v;
  }
  buf[threadIdx.x] = s;
  __syncthreads();
  for (int off = blockDim.x / 2; off > 0; off >>= 1) {
    if (threadIdx.x < off) buf[threadIdx.x] += buf[threadIdx.x + off];
    __syncthreads();
  }
  const float inv = rsqrtf(buf[0] / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    y[row * cols + c] = x[row * cols + c] * inv * w[c];
  }
}
