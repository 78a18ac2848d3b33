// pallasify: isolated kernel leaky_relu_vec4_kernel from fixtures/kernels/leaky_relu_vec4/kernel.cu:12
__device__ __forceinline__ float leaky(float v, float slope) { return v > 0.0f ? v : v * slope; }
__global__ void leaky_relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                       float negative_slope, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = leaky(v.x, negative_slope);
    v.y = leaky(v.y, negative_slope);
    v.z = leaky(v.z, negative_slope);
    v.w = leaky(v.w, negative_slope);
    y[i] = v;
  }
}
// entry: leaky_relu_vec4_kernel
