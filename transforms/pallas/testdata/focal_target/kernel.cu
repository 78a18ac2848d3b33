// Sigmoid focal loss forward as mmcv writes it: int64 target[n] read at the element's row, the output
// accumulated in place by its own thread, the weight NULL (as mmcv's tests pass it; the spec says so).
#include <torch/extension.h>

__global__ void focal_loss_kernel(const int nthreads, const float* input, const int64_t* target, const float* weight,
                                  float* output, const float gamma, const float alpha, const int num_classes) {
  for (int index = blockIdx.x * blockDim.x + threadIdx.x; index < nthreads; index += blockDim.x * gridDim.x) {
    const int n = index / num_classes;
    const int c = index % num_classes;
    const int64_t t = target[n];
    const float flag_p = (t == c);
    const float flag_n = (t != c);
    const float p = 1.0f / (1.0f + expf(-input[index]));
    const float term_p = powf(1.0f - p, gamma) * logf(fmaxf(p, FLT_MIN));
    const float term_n = powf(p, gamma) * logf(fmaxf(1.0f - p, FLT_MIN));
    output[index] = 0.0f;
    output[index] += -flag_p * alpha * term_p;
    output[index] += -flag_n * (1.0f - alpha) * term_n;
    if (weight != NULL) {
      output[index] *= weight[t];
    }
  }
}

torch::Tensor focal_loss(torch::Tensor input, torch::Tensor target, torch::Tensor weight, double gamma, double alpha) {
  const int num_classes = input.size(1);
  auto output = torch::empty_like(input);
  const int n = input.numel();
  focal_loss_kernel<<<(n + 511) / 512, 512>>>(n, input.data_ptr<float>(), target.data_ptr<int64_t>(),
                                              weight.numel() ? weight.data_ptr<float>() : nullptr,
                                              output.data_ptr<float>(), (float)gamma, (float)alpha, num_classes);
  return output;
}
