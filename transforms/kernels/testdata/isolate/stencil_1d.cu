// pallasify: isolated kernel stencil_1d_kernel from fixtures/kernels/stencil_1d/kernel.cu:12
#define RADIUS 3
#define BLOCK_SIZE 128
__constant__ float kStencil[2 * RADIUS + 1] = {0.02f, -0.1f, 0.25f, 0.5f, 0.2f, -0.05f, 0.01f};
__global__ void stencil_1d_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float temp[BLOCK_SIZE + 2 * RADIUS];
  const int gindex = blockIdx.x * blockDim.x + threadIdx.x;
  const int lindex = threadIdx.x + RADIUS;

  temp[lindex] = gindex < n ? in[gindex] : 0.0f;
  if (threadIdx.x < RADIUS) {
    const int left = gindex - RADIUS;
    const int right = gindex + BLOCK_SIZE;
    temp[lindex - RADIUS] = (left >= 0 && left < n) ? in[left] : 0.0f;
    temp[lindex + BLOCK_SIZE] = right < n ? in[right] : 0.0f;
  }
  __syncthreads();

  if (gindex < n) {
    float acc = 0.0f;
#pragma unroll
    for (int o = -RADIUS; o <= RADIUS; ++o) {
      acc += kStencil[o + RADIUS] * temp[lindex + o];
    }
    out[gindex] = acc;
  }
}
// entry: stencil_1d_kernel
