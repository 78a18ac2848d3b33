// mmcv's softmax focal loss forward: the probability of the sample's own class read at a data-dependent index
// (softmax[index * num_classes + label], label = target[index]), the output written in both branches of a
// condition on that data (an ignored label, -1, gives 0), the weight NULL (as mmcv's tests pass it).
#include <torch/extension.h>

#define CUDA_1D_KERNEL_LOOP(i, n)                              \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += blockDim.x * gridDim.x)

__global__ void softmax_focal_kernel(const int nthreads, const float* softmax, const int64_t* target,
                                     const float* weight, float* output, const float gamma, const float alpha,
                                     const int num_classes) {
  CUDA_1D_KERNEL_LOOP(index, nthreads) {
    int64_t label = target[index];
    float pred = softmax[index * num_classes + label];

    if (label >= 0) {
      output[index] = -alpha * pow(1.f - pred, gamma) * log(max(pred, FLT_MIN));
    } else {
      output[index] = 0;
    }
    if (weight != NULL) {
      output[index] *= weight[label];
    }
  }
}

torch::Tensor softmax_focal(torch::Tensor softmax, torch::Tensor target, torch::Tensor weight, double gamma,
                            double alpha) {
  const int rows = softmax.size(0), num_classes = softmax.size(1);
  auto output = torch::empty({rows}, softmax.options());
  softmax_focal_kernel<<<(rows + 511) / 512, 512>>>(rows, softmax.data_ptr<float>(), target.data_ptr<int64_t>(),
                                                    weight.numel() ? weight.data_ptr<float>() : nullptr,
                                                    output.data_ptr<float>(), (float)gamma, (float)alpha,
                                                    num_classes);
  return output;
}
