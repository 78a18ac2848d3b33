// Box IoU in __half intrinsics as mmcv's bbox_overlaps_cuda_kernel_half writes it: every __hadd, __hsub, __hmul
// and __hdiv one IEEE half operation (rounded to float16), __hge/__hle comparisons picking the larger or smaller
// half, __int2half_rn(offset), a __device__ body called with the kernel's pointers reinterpret_cast to __half.
#include <torch/extension.h>
#include <cuda_fp16.h>

#define CUDA_1D_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

template <typename T>
__device__ __forceinline__ void load_box(const T* bbox, const int base, T& x1, T& y1, T& x2, T& y2) {
  x1 = bbox[base];
  y1 = bbox[base + 1];
  x2 = bbox[base + 2];
  y2 = bbox[base + 3];
}

__device__ __forceinline__ __half half_area(const __half x1, const __half y1, const __half x2, const __half y2,
                                            const __half offset) {
  const __half w = __hadd(__hsub(x2, x1), offset);
  const __half h = __hadd(__hsub(y2, y1), offset);
  return __hmul(w, h);
}

__device__ __forceinline__ __half half_max(const __half a, const __half b) { return __hge(a, b) ? a : b; }

__device__ __forceinline__ __half half_min(const __half a, const __half b) { return __hle(a, b) ? a : b; }

__device__ void box_iou_half(const __half* bbox1, const __half* bbox2, __half* ious, const int num_bbox1,
                             const int num_bbox2, const int mode, const bool aligned, const int offset) {
  const int num_output = aligned ? num_bbox1 : num_bbox1 * num_bbox2;
  const __half h_offset = __int2half_rn(offset);
  CUDA_1D_KERNEL_LOOP(index, num_output) {
    const int b1 = aligned ? index : index / num_bbox2;
    const int b2 = aligned ? index : index % num_bbox2;
    __half b1_x1, b1_y1, b1_x2, b1_y2;
    load_box<__half>(bbox1, b1 << 2, b1_x1, b1_y1, b1_x2, b1_y2);
    const __half b1_area = half_area(b1_x1, b1_y1, b1_x2, b1_y2, h_offset);
    __half b2_x1, b2_y1, b2_x2, b2_y2;
    load_box<__half>(bbox2, b2 << 2, b2_x1, b2_y1, b2_x2, b2_y2);
    const __half b2_area = half_area(b2_x1, b2_y1, b2_x2, b2_y2, h_offset);
    const __half left = half_max(b1_x1, b2_x1), right = half_min(b1_x2, b2_x2);
    const __half top = half_max(b1_y1, b2_y1), bottom = half_min(b1_y2, b2_y2);
    const __half width = half_max(__hadd(__hsub(right, left), h_offset), __float2half(0.f));
    const __half height = half_max(__hadd(__hsub(bottom, top), h_offset), __float2half(0.f));
    const __half inter = __hmul(width, height);
    const __half base = half_max(mode == 0 ? __hsub(__hadd(b1_area, b2_area), inter) : b1_area, h_offset);
    ious[index] = __hdiv(inter, base);
  }
}

__global__ void box_iou_half_kernel(const at::Half* bbox1, const at::Half* bbox2, at::Half* ious,
                                    const int num_bbox1, const int num_bbox2, const int mode, const bool aligned,
                                    const int offset) {
  box_iou_half(reinterpret_cast<const __half*>(bbox1), reinterpret_cast<const __half*>(bbox2),
               reinterpret_cast<__half*>(ious), num_bbox1, num_bbox2, mode, aligned, offset);
}

torch::Tensor box_iou_half_op(torch::Tensor boxes1, torch::Tensor boxes2, int64_t mode, bool aligned,
                              int64_t offset) {
  const int n1 = boxes1.size(0), n2 = boxes2.size(0);
  auto ious = aligned ? torch::zeros({n1, 1}, boxes1.options()) : torch::zeros({n1, n2}, boxes1.options());
  const int total = ious.numel();
  box_iou_half_kernel<<<(total + 511) / 512, 512>>>(boxes1.data_ptr<at::Half>(), boxes2.data_ptr<at::Half>(),
                                                    ious.data_ptr<at::Half>(), n1, n2, mode, aligned, offset);
  return ious;
}
