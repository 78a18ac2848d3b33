// Pairwise or aligned box IoU as mmcv's bbox_overlaps writes it: a bool parameter picks one of two grid-stride
// loops (drafted once per value, run() picks by the call's value), a template helper returning four values through
// reference parameters, its float specialisation reading them as one float4, and T(offset) casts.
#include <torch/extension.h>

#define CUDA_1D_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

template <typename T>
__device__ __forceinline__ void read_box(const T* boxes, const int base, T& x1, T& y1, T& x2, T& y2) {
  x1 = boxes[base];
  y1 = boxes[base + 1];
  x2 = boxes[base + 2];
  y2 = boxes[base + 3];
}

template <>
__device__ __forceinline__ void read_box<float>(const float* boxes, const int base, float& x1, float& y1, float& x2,
                                                float& y2) {
  const float4 b = reinterpret_cast<const float4*>(boxes + base)[0];
  x1 = b.x;
  y1 = b.y;
  x2 = b.z;
  y2 = b.w;
}

template <typename T>
__device__ __forceinline__ T box_iou(const T* a, const T* b, const int i, const int j, const int mode,
                                     const int offset) {
  T ax1, ay1, ax2, ay2, bx1, by1, bx2, by2;
  read_box<T>(a, i << 2, ax1, ay1, ax2, ay2);
  read_box<T>(b, j << 2, bx1, by1, bx2, by2);
  const T area_a = (ax2 - ax1 + offset) * (ay2 - ay1 + offset);
  const T area_b = (bx2 - bx1 + offset) * (by2 - by1 + offset);
  const T w = fmaxf(fminf(ax2, bx2) - fmaxf(ax1, bx1) + offset, 0.f);
  const T h = fmaxf(fminf(ay2, by2) - fmaxf(ay1, by1) + offset, 0.f);
  const T inter = w * h;
  return inter / fmaxf(mode == 0 ? area_a + area_b - inter : area_a, T(offset));
}

template <typename T>
__global__ void box_iou_kernel(const T* boxes1, const T* boxes2, T* ious, const int n1, const int n2,
                               const int mode, const bool aligned, const int offset) {
  if (aligned) {
    CUDA_1D_KERNEL_LOOP(index, n1) { ious[index] = box_iou<T>(boxes1, boxes2, index, index, mode, offset); }
  } else {
    CUDA_1D_KERNEL_LOOP(index, n1 * n2) {
      ious[index] = box_iou<T>(boxes1, boxes2, index / n2, index % n2, mode, offset);
    }
  }
}

torch::Tensor box_iou_op(torch::Tensor boxes1, torch::Tensor boxes2, int64_t mode, bool aligned, int64_t offset) {
  const int n1 = boxes1.size(0), n2 = boxes2.size(0);
  auto ious = aligned ? torch::zeros({n1, 1}, boxes1.options()) : torch::zeros({n1, n2}, boxes1.options());
  const int total = ious.numel();
  box_iou_kernel<float><<<(total + 511) / 512, 512>>>(boxes1.data_ptr<float>(), boxes2.data_ptr<float>(),
                                                      ious.data_ptr<float>(), n1, n2, mode, aligned, offset);
  return ious;
}
