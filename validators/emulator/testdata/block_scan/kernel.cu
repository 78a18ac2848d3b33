// Blelloch work-efficient exclusive scan of each block's tile in dynamic
// shared memory (2 * blockDim.x elements per block), plus a Hillis-Steele
// inclusive scan using __syncthreads_count as an extra barrier check.
#include <cuda_runtime.h>
__global__ void blelloch_scan(const float* __restrict__ in, float* __restrict__ out, float* __restrict__ sums, int n) {
  extern __shared__ __align__(sizeof(float)) unsigned char smem_raw[];
  float* temp = reinterpret_cast<float*>(smem_raw);
  const int tid = threadIdx.x;
  const int m = 2 * blockDim.x;
  const int base = blockIdx.x * m;
  temp[2 * tid] = base + 2 * tid < n ? in[base + 2 * tid] : 0.0f;
  temp[2 * tid + 1] = base + 2 * tid + 1 < n ? in[base + 2 * tid + 1] : 0.0f;
  int offset = 1;
  for (int d = m >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (tid < d) {
      int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      temp[bi] += temp[ai];
    }
    offset *= 2;
  }
  if (tid == 0) {
    sums[blockIdx.x] = temp[m - 1];
    temp[m - 1] = 0.0f;
  }
  for (int d = 1; d < m; d *= 2) {
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
      int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      float t = temp[ai];
      temp[ai] = temp[bi];
      temp[bi] += t;
    }
  }
  __syncthreads();
  if (base + 2 * tid < n) out[base + 2 * tid] = temp[2 * tid];
  if (base + 2 * tid + 1 < n) out[base + 2 * tid + 1] = temp[2 * tid + 1];
}

__global__ void hillis_steele(const int* __restrict__ in, int* __restrict__ out, int* __restrict__ counts) {
  extern __shared__ int buf[];
  const int tid = threadIdx.x;
  int* a = buf;
  int* b = buf + blockDim.x;
  a[tid] = in[blockIdx.x * blockDim.x + tid];
  int c = __syncthreads_count(a[tid] > 0);
  for (int o = 1; o < (int)blockDim.x; o <<= 1) {
    b[tid] = tid >= o ? a[tid] + a[tid - o] : a[tid];
    __syncthreads();
    int* t = a; a = b; b = t;
  }
  out[blockIdx.x * blockDim.x + tid] = a[tid];
  int all = __syncthreads_and(a[tid] >= -1000000);
  int any = __syncthreads_or(tid == 5);
  if (tid == 0) counts[blockIdx.x] = c * 4 + all * 2 + any;
}
