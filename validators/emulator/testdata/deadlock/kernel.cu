// Barriers with exited threads (released, as in PTX; an error in strict
// mode), and a real deadlock: lanes split between a block barrier and a
// full-warp shuffle.
__global__ void early_return(const float* x, float* y, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[threadIdx.x] = x[i];
  __syncthreads();
  y[i] = s[(threadIdx.x + 1) % blockDim.x];
}
__global__ void count_exited(const int* x, int* out, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  int c = __syncthreads_count(x[i] > 0);
  int a = __syncthreads_and(x[i] > -100);
  int o = __syncthreads_or(x[i] > 1000);
  if (i == 0) out[0] = c * 4 + a * 2 + o;
}
__global__ void mixed_wait(float* y) {
  float v = (float)threadIdx.x;
  if ((threadIdx.x & 31) == 0) __syncthreads();
  else v = __shfl_xor_sync(0xffffffff, v, 1);
  y[threadIdx.x] = v;
}
__global__ void spin_free(float* y) { y[threadIdx.x] = 1.0f; }
