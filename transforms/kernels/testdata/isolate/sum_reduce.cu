// pallasify: isolated kernel sum_reduce_kernel from fixtures/kernels/sum_reduce/kernel.cu:10
#define BLOCK 256
#define ELEMS_PER_BLOCK (2 * BLOCK)
__global__ void sum_reduce_kernel(const float* __restrict__ x, float* __restrict__ partial, int n) {
  __shared__ float sdata[BLOCK];
  const int tid = threadIdx.x;
  const int i = blockIdx.x * ELEMS_PER_BLOCK + threadIdx.x;
  float v = 0.0f;
  if (i < n) v = x[i];
  if (i + BLOCK < n) v += x[i + BLOCK];
  sdata[tid] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = sdata[0];
}
// entry: sum_reduce_kernel
