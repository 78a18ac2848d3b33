// ATen/cuda/detail/KernelUtils.h — emulator shim (validators/emulator/host): the names it declares come from cudaemu_host.h, force-included before every translation unit of a host build.
#pragma once
#include "cudaemu_host.h"
#if !defined(CUDAEMU_HOST_TORCH)
#error "cudaemu: unsupported construct: #include <ATen/cuda/detail/KernelUtils.h> outside a torch extension build"
#endif
namespace at::cuda::detail {
constexpr int CUDA_NUM_THREADS = 1024;
inline int GET_BLOCKS(const int64_t N, const int64_t max_threads_per_block = CUDA_NUM_THREADS) {
  TORCH_INTERNAL_ASSERT(N > 0, "CUDA kernel launch blocks must be positive, but got N=", N);
  constexpr int64_t max_int = std::numeric_limits<int>::max();
  auto block_num = (N - 1) / max_threads_per_block + 1;
  TORCH_INTERNAL_ASSERT(block_num <= max_int, "Can't schedule too many blocks on CUDA device");
  return static_cast<int>(block_num);
}
}  // namespace at::cuda::detail
