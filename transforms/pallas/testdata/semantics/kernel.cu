// C semantics the translator must keep: truncating integer division and
// remainder of negative values, shifts, ternaries, fmaxf with NaN, casts,
// rsqrtf, early return, a branch that assigns a local, an unrolled loop.
#include <torch/extension.h>

#define THREADS 128

__device__ __forceinline__ float mix(float v, int a) {
  return v > 0.0f ? fmaxf(v, 0.5f) : (float)(a % 4) * rsqrtf(fabsf(v) + 1.0f);
}

__global__ void semantics_kernel(const float* __restrict__ x, const int* __restrict__ k,
                                 float* __restrict__ y, int* __restrict__ q, float w, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int a = k[i];
  int r = a / 3 + a % 5 * 7 - (a >> 1);
  float acc = 0.0f;
#pragma unroll
  for (int t = 0; t < 3; ++t) {
    acc += x[i] * (float)(t + 1);
  }
  float v = x[i];
  if (a < 0) {
    v = -v * w;
    r = -r;
  } else {
    v = v + acc;
  }
  q[i] = r;
  y[i] = mix(v, a) + (float)(i % 3);
}

std::vector<torch::Tensor> semantics(torch::Tensor x, torch::Tensor k, double w) {
  auto y = torch::empty_like(x);
  auto q = torch::empty_like(k);
  const int n = x.numel();
  semantics_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>(x.data_ptr<float>(), k.data_ptr<int>(), y.data_ptr<float>(),
                                                             q.data_ptr<int>(), static_cast<float>(w), n);
  return {y, q};
}
