// float -> half / bfloat16 -> float round trips and half arithmetic.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void to_half(const float* __restrict__ x, __half* __restrict__ h, __nv_bfloat16* __restrict__ bf,
                        float* __restrict__ hb, float* __restrict__ bb, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    h[i] = __float2half(x[i]);
    bf[i] = __float2bfloat16(x[i]);
    hb[i] = __half2float(h[i]);
    bb[i] = __bfloat162float(bf[i]);
  }
}
__global__ void half_math(const half* a, const half* b, half* sum, half* fma_out, half2* pair, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sum[i] = a[i] + b[i];
  fma_out[i] = __hfma(a[i], b[i], __float2half(0.25f));
  pair[i] = __hmul2(__halves2half2(a[i], b[i]), __float2half2_rn(2.0f));
}
