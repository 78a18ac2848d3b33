// Counts keys into bins with float atomics; keys outside [0, num_bins) are ignored.
__global__ void key_count_kernel(const int* __restrict__ keys, float* __restrict__ counts, int n, int num_bins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int k = keys[i];
    if (k >= 0 && k < num_bins) atomicAdd(&counts[k], 1.0f);
  }
}
