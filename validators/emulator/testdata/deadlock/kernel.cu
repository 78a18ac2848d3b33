// A barrier after a divergent early return: undefined in CUDA, an error here.
__global__ void early_return(const float* x, float* y, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[threadIdx.x] = x[i];
  __syncthreads();
  y[i] = s[(threadIdx.x + 1) % blockDim.x];
}
__global__ void spin_free(float* y) { y[threadIdx.x] = 1.0f; }
