// cudaemu_torch.h — ATen/c10's CUDA-side names for a host build (included by
// cudaemu_host.h with CUDAEMU_HOST_TORCH): streams, guards, device
// properties, launch checks, atomics helpers, and the device remapping.
#ifndef PALLASIFY_CUDAEMU_TORCH_H
#define PALLASIFY_CUDAEMU_TORCH_H

// RestrictPtrTraits exists only for nvcc in the torch headers.
namespace torch::headeronly {
template <typename T> struct RestrictPtrTraits {
  using PtrType = T* __restrict;
};
}  // namespace torch::headeronly
namespace at {
using torch::headeronly::RestrictPtrTraits;
}

namespace c10::cuda {
// CUDAStream: every stream is the default stream of the one emulated device;
// work is synchronous.
struct CUDAStream {
  enum Unchecked { UNCHECKED };
  CUDAStream() = default;
  explicit CUDAStream(c10::Stream) {}
  CUDAStream(Unchecked, c10::Stream) {}
  cudaStream_t stream() const { return nullptr; }
  operator cudaStream_t() const { return nullptr; }
  c10::DeviceIndex device_index() const { return 0; }
  c10::Device device() const { return c10::Device(c10::DeviceType::CPU); }
  c10::StreamId id() const { return 0; }
  bool query() const { return true; }
  void synchronize() const {}
  int priority() const { return 0; }
  c10::Stream unwrap() const { return c10::Stream(c10::Stream::DEFAULT, device()); }
  operator c10::Stream() const { return unwrap(); }
  bool operator==(const CUDAStream&) const { return true; }
  bool operator!=(const CUDAStream&) const { return false; }
};
inline CUDAStream getCurrentCUDAStream(c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getDefaultCUDAStream(c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getStreamFromPool(bool = false, c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getStreamFromPool(int, c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getStreamFromExternal(cudaStream_t, c10::DeviceIndex) { return {}; }
inline void setCurrentCUDAStream(CUDAStream) {}
inline c10::DeviceIndex device_count() noexcept { return 1; }
inline c10::DeviceIndex current_device() { return 0; }
inline void set_device(c10::DeviceIndex, bool = false) {}
inline void device_synchronize() {}
inline void stream_synchronize(cudaStream_t) {}

// Guards do nothing: there is one device.
struct CUDAGuard {
  CUDAGuard() = delete;
  explicit CUDAGuard(c10::DeviceIndex) {}
  explicit CUDAGuard(c10::Device) {}
  CUDAGuard(const CUDAGuard&) = delete;
  void set_device(c10::Device) {}
  void reset_device(c10::Device) {}
  void set_index(c10::DeviceIndex) {}
  c10::Device original_device() const { return c10::Device(c10::DeviceType::CPU); }
  c10::Device current_device() const { return c10::Device(c10::DeviceType::CPU); }
};
struct OptionalCUDAGuard {
  OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(std::optional<c10::Device>) {}
  explicit OptionalCUDAGuard(c10::Device) {}
  explicit OptionalCUDAGuard(c10::DeviceIndex) {}
  explicit OptionalCUDAGuard(std::optional<c10::DeviceIndex>) {}
  void set_device(c10::Device) {}
  void reset_device(c10::Device) {}
  void set_index(c10::DeviceIndex) {}
  void reset() {}
  std::optional<c10::Device> original_device() const { return std::nullopt; }
  std::optional<c10::Device> current_device() const { return std::nullopt; }
};
struct CUDAStreamGuard {
  explicit CUDAStreamGuard(c10::Stream) {}
  explicit CUDAStreamGuard(CUDAStream) {}
  void reset_stream(c10::Stream) {}
  CUDAStream original_stream() const { return {}; }
  CUDAStream current_stream() const { return {}; }
};
struct OptionalCUDAStreamGuard {
  OptionalCUDAStreamGuard() = default;
  explicit OptionalCUDAStreamGuard(c10::Stream) {}
  explicit OptionalCUDAStreamGuard(std::optional<c10::Stream>) {}
  void reset_stream(c10::Stream) {}
  void reset() {}
};
struct CUDAMultiStreamGuard {
  template <class S> explicit CUDAMultiStreamGuard(const S&) {}
};

namespace CUDACachingAllocator {
inline void* raw_alloc(size_t n) { return phr_malloc(n, "cudaMalloc"); }
inline void* raw_alloc_with_stream(size_t n, cudaStream_t) { return raw_alloc(n); }
inline void raw_delete(void* p) { phr_free(p); }
inline void emptyCache() {}
}  // namespace CUDACachingAllocator
}  // namespace c10::cuda

namespace at::cuda {
using c10::cuda::CUDAGuard;
using c10::cuda::CUDAMultiStreamGuard;
using c10::cuda::CUDAStream;
using c10::cuda::CUDAStreamGuard;
using c10::cuda::OptionalCUDAGuard;
using c10::cuda::OptionalCUDAStreamGuard;
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
using c10::cuda::getStreamFromExternal;
using c10::cuda::getStreamFromPool;
using c10::cuda::setCurrentCUDAStream;
using c10::cuda::device_count;
using c10::cuda::current_device;
using c10::cuda::set_device;
using c10::cuda::device_synchronize;
namespace CUDACachingAllocator = c10::cuda::CUDACachingAllocator;
inline cudaDeviceProp* getCurrentDeviceProperties() { return ::cudaemu::host::props(); }
inline cudaDeviceProp* getDeviceProperties(c10::DeviceIndex) { return ::cudaemu::host::props(); }
inline int warp_size() { return 32; }
inline bool is_available() { return true; }
inline c10::Allocator* getCUDADeviceAllocator() { return c10::GetCPUAllocator(); }
// CUDAEvent: host timestamps.
struct CUDAEvent {
  double t = 0;
  bool recorded = false;
  CUDAEvent() = default;
  explicit CUDAEvent(unsigned) {}
  void record() { t = ::cudaemu::host::now_s(); recorded = true; }
  void record(const CUDAStream&) { record(); }
  void recordOnce(const CUDAStream&) { if (!recorded) record(); }
  void block(const CUDAStream&) {}
  void synchronize() const {}
  bool query() const { return true; }
  bool isCreated() const { return recorded; }
  float elapsed_time(const CUDAEvent& o) const { return static_cast<float>((o.t - t) * 1e3); }
};
}  // namespace at::cuda
namespace at::cuda::detail {
inline bool hasCUDA() { return true; }
}

template <typename T>
__host__ __device__ __forceinline__ T ATenCeilDiv(T a, T b) { return (a + b - 1) / b; }
template <typename T>
__host__ __device__ __forceinline__ T THCCeilDiv(T a, T b) { return (a + b - 1) / b; }
template <typename T>
__host__ __device__ __forceinline__ T THCRoundUp(T a, T b) { return THCCeilDiv(a, b) * b; }

// Launch checks.
namespace cudaemu::host {
inline void check(cudaError_t e, const char* what, const char* file, int line) {
  TORCH_CHECK(e == cudaSuccess, "CUDA error: ", cudaGetErrorString(e), " (", what, " at ", file, ":", line, ")");
}
}  // namespace cudaemu::host
#define C10_CUDA_CHECK(EXPR) ::cudaemu::host::check((EXPR), #EXPR, __FILE__, __LINE__)
#define C10_CUDA_CHECK_WARN(EXPR) ((void)(EXPR))
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#define C10_CUDA_IGNORE_ERROR(EXPR) ((void)(EXPR))
#define C10_CUDA_CLEAR_ERROR() ((void)cudaGetLastError())
#define AT_CUDA_CHECK(EXPR) C10_CUDA_CHECK(EXPR)
#define THCudaCheck(EXPR) C10_CUDA_CHECK(EXPR)
#define THCudaCheckWarn(EXPR) ((void)(EXPR))
#define TORCH_CUDA_CHECK(EXPR) C10_CUDA_CHECK(EXPR)

// THC-era state.
struct THCState {};
inline THCState* cudaemu_thc_state() {
  static THCState s;
  return &s;
}
#define THCState_getCurrentStream(state) ((cudaStream_t) nullptr)
#define THCudaMalloc(state, n) phr_malloc((n), "cudaMalloc")
#define THCudaFree(state, p) phr_free(p)
#define THArgCheck(cond, arg, ...) TORCH_CHECK((cond), "invalid argument ", (arg))
#define THAssertMsg(cond, ...) TORCH_CHECK((cond), __VA_ARGS__)

// ATen's device-side helpers (ATen/cuda/DeviceUtils.cuh, Atomic.cuh).
template <class T>
__device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = 32, unsigned mask = 0xffffffffu) { return __shfl_sync(mask, value, srcLane, width); }
template <class T>
__device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = 32, unsigned mask = 0xffffffffu) { return __shfl_xor_sync(mask, value, laneMask, width); }
template <class T>
__device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned delta, int width = 32, unsigned mask = 0xffffffffu) { return __shfl_up_sync(mask, value, delta, width); }
template <class T>
__device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned delta, int width = 32, unsigned mask = 0xffffffffu) { return __shfl_down_sync(mask, value, delta, width); }
__device__ __forceinline__ unsigned WARP_BALLOT(int pred, unsigned mask = 0xffffffffu) { return __ballot_sync(mask, pred); }
__device__ __forceinline__ unsigned ACTIVE_MASK() { return __activemask(); }
template <class T> __device__ __forceinline__ T doLdg(const T* p) { return *p; }
template <class T, class U> __device__ __forceinline__ T gpuAtomicAdd(T* p, U v) { return atomicAdd(p, static_cast<T>(v)); }
template <class T, class U> __device__ __forceinline__ void gpuAtomicAddNoReturn(T* p, U v) { atomicAdd(p, static_cast<T>(v)); }
template <class T, class U> __device__ __forceinline__ T gpuAtomicMax(T* p, U v) { return atomicMax(p, static_cast<T>(v)); }
template <class T, class U> __device__ __forceinline__ T gpuAtomicMin(T* p, U v) { return atomicMin(p, static_cast<T>(v)); }
template <class T, class U> __device__ __forceinline__ T gpuAtomicMul(T* p, U v) { T o = *p; *p = o * static_cast<T>(v); return o; }
namespace at::native {
template <class T, class I, class U>
__device__ __forceinline__ void fastAtomicAdd(T* t, I index, I, U value, bool) { atomicAdd(t + index, static_cast<T>(value)); }
template <class T> __device__ __forceinline__ T ceil_div(T a, T b) { return (a + b - 1) / b; }
}  // namespace at::native

// ---------------------------------------------------------------------------
// Device remapping: code after this point takes its CUDA path for CPU
// tensors. Torch's own headers were read above and keep their meaning.
#define kCUDA kCPU
#define CUDA CPU
#define is_cuda is_cpu

#endif  // PALLASIFY_CUDAEMU_TORCH_H
