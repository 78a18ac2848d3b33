// Lanes leave before a full-mask shuffle: the remaining lanes can never complete it.
__global__ void partial_shuffle(const float* x, float* y, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  v += __shfl_down_sync(0xffffffff, v, 1);
  y[i] = v;
}
