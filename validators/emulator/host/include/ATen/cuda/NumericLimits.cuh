// ATen/cuda/NumericLimits.cuh — emulator shim (validators/emulator/host): the names it declares come from cudaemu_host.h, force-included before every translation unit of a host build.
#pragma once
#include "cudaemu_host.h"
#if !defined(CUDAEMU_HOST_TORCH)
#error "cudaemu: unsupported construct: #include <ATen/cuda/NumericLimits.cuh> outside a torch extension build"
#endif
namespace at {
template <class T> struct numeric_limits {
  static inline __host__ __device__ T lowest() { return std::numeric_limits<T>::lowest(); }
  static inline __host__ __device__ T max() { return std::numeric_limits<T>::max(); }
  static inline __host__ __device__ T lower_bound() { return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest(); }
  static inline __host__ __device__ T upper_bound() { return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max(); }
};
}  // namespace at
