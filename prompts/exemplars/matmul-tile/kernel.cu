// Y = X W + b with one thread per output element (16x16 thread blocks).
__global__ void linear_bias_kernel(const float* __restrict__ X, const float* __restrict__ W,
                                   const float* __restrict__ b, float* __restrict__ Y, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += X[row * K + k] * W[k * N + col];
    Y[row * N + col] = acc + b[col];
  }
}
