// Grid-stride loop over a 2-D launch, plus vector types and math intrinsics.
#include <cuda_runtime.h>
#include <math_constants.h>
struct Params { float scale; float bias; };
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
__global__ void grid_stride(const float4* __restrict__ in, float4* __restrict__ out, Params p, long long n4) {
  const long long tid = (long long)(blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y) + threadIdx.y * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * gridDim.y * blockDim.x * blockDim.y;
  for (long long i = tid; i < n4; i += stride) {
    float4 v = __ldg(&in[i]);
    out[i] = make_float4(gelu(v.x) * p.scale + p.bias, __expf(v.y) * rsqrtf(fabsf(v.z) + 1.0f),
                         __saturatef(v.z) + fmaxf(v.w, 0.0f), (float)__float2int_rn(v.w * 3.0f) + (float)__popc(__float_as_uint(v.x) & 0xff));
  }
}
