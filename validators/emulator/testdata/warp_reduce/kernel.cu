// Warp-shuffle reductions and votes: one partial per warp plus a block total.
#include <cuda_runtime.h>
#define FULL 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
  return v;
}

__device__ __forceinline__ int warp_max_xor(int v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(FULL, v, o));
  return v;
}

__global__ void warp_reduce_kernel(const float* __restrict__ x, const int* __restrict__ k, float* warp_sums,
                                   int* warp_max, unsigned* ballots, int* votes, float* incl, float* bcast16,
                                   float* block_total, int n) {
  __shared__ float part[32];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int gw = i >> 5;
  float v = i < n ? x[i] : 0.0f;
  int kv = i < n ? k[i] : INT_MIN;
  float s = warp_sum(v);
  int m = warp_max_xor(kv);
  unsigned b = __ballot_sync(FULL, v > 0.0f);
  int all = __all_sync(FULL, kv >= 0);
  int any = __any_sync(FULL, kv > 90);
  // Inclusive warp scan with __shfl_up_sync.
  float sc = v;
  for (int o = 1; o < 32; o <<= 1) {
    float t = __shfl_up_sync(FULL, sc, o);
    if (lane >= o) sc += t;
  }
  // Broadcast lane 3 of each 16-wide segment.
  float bc = __shfl_sync(FULL, v, 3, 16);
  if (i < n) {
    incl[i] = sc;
    bcast16[i] = bc;
  }
  if (lane == 0) {
    warp_sums[gw] = s;
    warp_max[gw] = m;
    ballots[gw] = b;
    votes[gw] = all * 2 + any;
    part[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    float t = lane < (int)(blockDim.x / 32) ? part[lane] : 0.0f;
    t = warp_sum(t);
    if (lane == 0) block_total[blockIdx.x] = t;
  }
}
