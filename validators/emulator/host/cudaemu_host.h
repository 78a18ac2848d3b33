// cudaemu_host.h — the prelude of a host build: a repository's whole CUDA
// extension (or a standalone CUDA program) compiled as C++ with the emulator
// supplying the device side. It is force-included (-include) before every
// translation unit; the Go side (validators/hostbuild) rewrites each
// `kernel<<<grid, block, shmem, stream>>>(args)` into a call of
// cudaemu::host::launch, which runs the grid on the emulator and, when
// PALLASIFY_CAPTURE_DIR is set, records the launch (see hostrt.h and
// /work/notes/capture-contract.md).
//
// With CUDAEMU_HOST_TORCH (extensions) the real libtorch headers are included
// first, unchanged; then the emulator, the CUDA runtime API on host memory,
// ATen/c10's CUDA-side names (streams, guards, launch checks), and finally the
// device remapping that makes a CUDA extension's host code take its CUDA path
// for CPU tensors: kCUDA, DeviceType::CUDA and DispatchKey::CUDA name the CPU,
// and is_cuda() is is_cpu(). Tensors live on the CPU; what the op computes is
// the original code's.
#ifndef PALLASIFY_CUDAEMU_HOST_H
#define PALLASIFY_CUDAEMU_HOST_H

#if defined(CUDAEMU_HOST_TORCH)
#include <torch/extension.h>
#include <torch/library.h>
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/core/CPUAllocator.h>
#endif
#include <cxxabi.h>
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#define CUDAEMU_HOST 1
#if defined(CUDAEMU_HOST_TORCH)
namespace cudaemu {
template <class Raw> struct c10_of;
}
#define CUDAEMU_HALF_INTEROP(H)                                                                     \
  H(const typename ::cudaemu::c10_of<H##_raw>::type& v) : __x(v.x) {}                               \
  operator typename ::cudaemu::c10_of<H##_raw>::type() const {                                      \
    return typename ::cudaemu::c10_of<H##_raw>::type(__x, ::cudaemu::c10_of<H##_raw>::type::from_bits()); \
  }
struct __half_raw;
struct __nv_bfloat16_raw;
template <> struct cudaemu::c10_of<__half_raw> { using type = c10::Half; };
template <> struct cudaemu::c10_of<__nv_bfloat16_raw> { using type = c10::BFloat16; };
#endif
#include "cudaemu.h"
#include "hostrt.h"

// ---------------------------------------------------------------------------
// The CUDA runtime API on host memory.
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
#define cudaErrorInvalidValue 1
#define cudaErrorMemoryAllocation 2
#define cudaErrorInvalidConfiguration 9
#define cudaErrorInvalidDevice 101
#define cudaErrorNotReady 600
#define cudaErrorLaunchFailure 719
#define cudaErrorNotSupported 801
#define cudaStreamDefault 0
#define cudaStreamNonBlocking 1
#define cudaEventDefault 0
#define cudaEventBlockingSync 1
#define cudaEventDisableTiming 2
#define cudaHostAllocDefault 0
#define cudaHostAllocPortable 1
#define cudaHostAllocMapped 2
#define cudaMemAttachGlobal 1
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamLegacy ((cudaStream_t)0x1)
typedef cudaError_t CUresult;
#define CUDA_SUCCESS 0
typedef int CUdevice;
typedef void* CUstream;
typedef void* CUcontext;

struct CUevent_st {
  double t = 0;
};
typedef CUevent_st* cudaEvent_t;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  size_t sharedMemPerBlockOptin;
  int maxBlocksPerMultiProcessor;
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1, cudaFuncCachePreferL1 = 2, cudaFuncCachePreferEqual = 3 };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault = 0, cudaSharedMemBankSizeFourByte = 1, cudaSharedMemBankSizeEightByte = 2 };
struct cudaFuncAttributes {
  size_t sharedSizeBytes = 0, constSizeBytes = 0, localSizeBytes = 0;
  int maxThreadsPerBlock = 1024, numRegs = 32, ptxVersion = 80, binaryVersion = 80, cacheModeCA = 0;
  int maxDynamicSharedSizeBytes = CUDAEMU_MAX_DYN_SMEM;
};

namespace cudaemu::host {
inline double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
inline cudaError_t ok() { return cudaSuccess; }
inline cudaDeviceProp make_props() {
  cudaDeviceProp p{};
  snprintf(p.name, sizeof p.name, "%s", "pallasify cudaemu (CPU)");
  p.totalGlobalMem = 16ull << 30;
  p.sharedMemPerBlock = 48 * 1024;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.clockRate = 1410000;
  p.totalConstMem = 65536;
  p.major = 8;
  p.minor = 0;
  p.multiProcessorCount = 108;
  p.concurrentKernels = 1;
  p.unifiedAddressing = 1;
  p.l2CacheSize = 40 << 20;
  p.maxThreadsPerMultiProcessor = 2048;
  p.sharedMemPerMultiprocessor = CUDAEMU_MAX_DYN_SMEM;
  p.regsPerMultiprocessor = 65536;
  p.managedMemory = 1;
  p.sharedMemPerBlockOptin = CUDAEMU_MAX_DYN_SMEM;
  p.maxBlocksPerMultiProcessor = 32;
  return p;
}
inline cudaDeviceProp* props() {
  static cudaDeviceProp p = make_props();
  return &p;
}
}  // namespace cudaemu::host

template <class T> inline cudaError_t cudaMalloc(T** p, size_t n) {
  *p = static_cast<T*>(phr_malloc(n, "cudaMalloc"));
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T> inline cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
template <class T> inline cudaError_t cudaMallocManaged(T** p, size_t n, unsigned = cudaMemAttachGlobal) { return cudaMalloc(p, n); }
template <class T> inline cudaError_t cudaMallocHost(T** p, size_t n) {
  *p = static_cast<T*>(phr_malloc(n, "host"));
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T> inline cudaError_t cudaHostAlloc(T** p, size_t n, unsigned) { return cudaMallocHost(p, n); }
template <class T> inline cudaError_t cudaMallocPitch(T** p, size_t* pitch, size_t w, size_t h) {
  *pitch = (w + 255) / 256 * 256;
  return cudaMalloc(p, *pitch * h);
}
inline cudaError_t cudaFree(void* p) { phr_free(p); return cudaSuccess; }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
inline cudaError_t cudaFreeHost(void* p) { phr_free(p); return cudaSuccess; }
inline cudaError_t cudaHostRegister(void*, size_t, unsigned) { return cudaSuccess; }
inline cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) { *d = h; return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { if (n) memmove(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t = nullptr) { return cudaMemcpy(d, s, n, k); }
template <class S> inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, const S&) { return cudaMemcpy(d, s, n, k); }
inline cudaError_t cudaMemcpy2D(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind) {
  for (size_t r = 0; r < h; r++) memmove(static_cast<char*>(d) + r * dp, static_cast<const char*>(s) + r * sp, w);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t = nullptr) {
  return cudaMemcpy2D(d, dp, s, sp, w, h, k);
}
inline cudaError_t cudaMemcpyPeer(void* d, int, const void* s, int, size_t n) { return cudaMemcpy(d, s, n, cudaMemcpyDefault); }
inline cudaError_t cudaMemset(void* p, int v, size_t n) { if (n) memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) { return cudaMemset(p, v, n); }
template <class S> inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, const S&) { return cudaMemset(p, v, n); }
template <class T> inline cudaError_t cudaMemcpyToSymbol(T& sym, const void* src, size_t n, size_t off = 0, cudaMemcpyKind = cudaMemcpyHostToDevice) {
  memcpy(reinterpret_cast<char*>(&sym) + off, src, n);
  return cudaSuccess;
}
template <class T> inline cudaError_t cudaMemcpyToSymbolAsync(T& sym, const void* src, size_t n, size_t off = 0, cudaMemcpyKind k = cudaMemcpyHostToDevice, cudaStream_t = nullptr) {
  return cudaMemcpyToSymbol(sym, src, n, off, k);
}
template <class T> inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& sym, size_t n, size_t off = 0, cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  memcpy(dst, reinterpret_cast<const char*>(&sym) + off, n);
  return cudaSuccess;
}
template <class T> inline cudaError_t cudaGetSymbolAddress(void** p, T& sym) { *p = &sym; return cudaSuccess; }
inline cudaError_t cudaMemGetInfo(size_t* f, size_t* t) { *f = 15ull << 30; *t = 16ull << 30; return cudaSuccess; }
inline cudaError_t cudaMemPrefetchAsync(const void*, size_t, int, cudaStream_t = nullptr) { return cudaSuccess; }

inline cudaError_t cudaGetLastError() { return phr_get_error(1); }
inline cudaError_t cudaPeekAtLastError() { return phr_get_error(0); }
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return phr_error_message();
    case cudaErrorNotSupported: return "operation not supported (cudaemu)";
    default: return "unknown error (cudaemu)";
  }
}
inline const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorLaunchFailure ? "cudaErrorLaunchFailure" : "cudaErrorUnknown"; }
inline cudaError_t cudaDeviceSynchronize() { return phr_get_error(0); }
inline cudaError_t cudaThreadSynchronize() { return cudaDeviceSynchronize(); }
inline cudaError_t cudaDeviceReset() { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) { *p = *cudaemu::host::props(); return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  const cudaDeviceProp& p = *cudaemu::host::props();
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *v = 1024; break;
    case cudaDevAttrMaxBlockDimY: *v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *v = 64; break;
    case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
    case cudaDevAttrMaxGridDimY: *v = 65535; break;
    case cudaDevAttrMaxGridDimZ: *v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = static_cast<int>(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = static_cast<int>(p.sharedMemPerBlockOptin); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) { *v = CUDART_VERSION; return cudaSuccess; }
inline cudaError_t cudaRuntimeGetVersion(int* v) { *v = CUDART_VERSION; return cudaSuccess; }
inline cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return cudaSuccess; }
inline cudaError_t cudaDeviceSetLimit(int, size_t) { return cudaSuccess; }
inline cudaError_t cudaProfilerStart() { return cudaSuccess; }
inline cudaError_t cudaProfilerStop() { return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetCacheConfig(F, cudaFuncCache) { return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F) { *a = cudaFuncAttributes{}; return cudaSuccess; }
template <class F> inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F, int block, size_t) {
  *n = block > 0 ? std::max(1, 2048 / block) : 1;
  return cudaSuccess;
}
template <class F> inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* grid, int* block, F, size_t = 0, int limit = 0) {
  *block = limit > 0 && limit < 1024 ? limit : 1024;
  *grid = 108 * (2048 / *block);
  return cudaSuccess;
}

inline cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = nullptr; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { *s = nullptr; return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int) { *s = nullptr; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return phr_get_error(0); }
inline cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new CUevent_st; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) { if (e) e->t = cudaemu::host::now_s(); return cudaSuccess; }
template <class S> inline cudaError_t cudaEventRecord(cudaEvent_t e, const S&) { return cudaEventRecord(e); }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = static_cast<float>((b->t - a->t) * 1e3);
  return cudaSuccess;
}
inline CUresult cuInit(unsigned) { return CUDA_SUCCESS; }

// ---------------------------------------------------------------------------
// Launch and capture.
namespace cudaemu::host {

inline dim3 to_dim3(const dim3& d) { return d; }
inline dim3 to_dim3(const uint3& d) { return dim3(d.x, d.y, d.z); }
template <class I, class = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
inline dim3 to_dim3(I v) {
  const long long x = static_cast<long long>(v);
  return dim3(x < 0 || x > 0xffffffffLL ? 0u : static_cast<unsigned>(x));
}

// Config is the <<<grid, block[, shmem[, stream]]>>> of a launch.
struct Config {
  dim3 grid, block;
  size_t shmem = 0;
  long long shmem_signed = 0;
  template <class G, class B> Config(const G& g, const B& b) : grid(to_dim3(g)), block(to_dim3(b)) {}
  template <class G, class B, class S>
  Config(const G& g, const B& b, S s) : grid(to_dim3(g)), block(to_dim3(b)), shmem(static_cast<size_t>(s)), shmem_signed(static_cast<long long>(s)) {}
  template <class G, class B, class S, class T>
  Config(const G& g, const B& b, S s, const T&) : Config(g, b, s) {}
};

// Site names the launch in the source: the kernel, and what the Go side read
// of its __global__ declarations: per overload (separated by \036) the
// parameters (separated by \037) as name\035ctype.
struct Site {
  const char* file;
  int line;
  const char* kernel;
  const char* params;
  // fn is set when the launched expression is not a kernel's name (a
  // function-pointer variable): the kernel is then named from its symbol.
  const void* fn = nullptr;
};

// symbol_kernel names the kernel fn points to from its (demangled) symbol:
// "void unary<Neg>(float const*, float*, int)" gives kernel "unary",
// instance "unary<Neg>" and template args {"Neg"}.
inline bool symbol_kernel(const void* fn, std::string& kernel, std::string& instance, std::vector<std::string>& targs) {
  Dl_info info{};
  if (!fn || !dladdr(fn, &info) || !info.dli_sname) return false;
  int status = 0;
  char* d = ::abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? d : info.dli_sname;
  free(d);
  int depth = 0;
  size_t open = std::string::npos;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '<') depth++;
    else if (s[i] == '>') depth--;
    else if (s[i] == '(' && depth == 0) { open = i; break; }
  }
  std::string head = s.substr(0, open);
  if (head.rfind("void ", 0) == 0) head = head.substr(5);
  instance = head;
  size_t lt = head.find('<');
  kernel = head.substr(0, lt);
  if (size_t c = kernel.rfind("::"); c != std::string::npos) kernel = kernel.substr(c + 2);
  targs.clear();
  if (lt != std::string::npos && head.back() == '>') {
    std::string in = head.substr(lt + 1, head.size() - lt - 2);
    int dd = 0;
    size_t st = 0;
    for (size_t i = 0; i <= in.size(); i++) {
      if (i == in.size() || (in[i] == ',' && dd == 0)) {
        std::string a = in.substr(st, i - st);
        while (!a.empty() && a.front() == ' ') a.erase(a.begin());
        targs.push_back(a);
        st = i + 1;
      } else if (in[i] == '<' || in[i] == '(') dd++;
      else if (in[i] == '>' || in[i] == ')') dd--;
    }
  }
  return !kernel.empty();
}

template <class T> inline std::string type_name() {
  std::string p = __PRETTY_FUNCTION__;
  size_t i = p.find("T = ");
  if (i == std::string::npos) return "?";
  i += 4;
  size_t j = p.find_first_of(";]", i);
  return p.substr(i, j - i);
}
template <class T> inline std::string targ() { return type_name<T>(); }
template <auto V> inline std::string targ() {
  using VT = decltype(V);
  if constexpr (std::is_same_v<VT, bool>) return V ? "true" : "false";
  else if constexpr (std::is_integral_v<VT>) return std::to_string(V);
  else if constexpr (std::is_enum_v<VT>) return std::to_string(static_cast<long long>(V));
  else return "?";
}

inline std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}
inline std::string json_num(double v) {
  if (v != v || v == __builtin_huge_val() || v == -__builtin_huge_val()) return "null";
  char b[40];
  snprintf(b, sizeof b, "%.17g", v);
  return b;
}

template <class E> constexpr const char* dtype_of() {
  using T = std::remove_cv_t<E>;
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, __half>) return "float16";
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bfloat16";
#if defined(CUDAEMU_HOST_TORCH)
  else if constexpr (std::is_same_v<T, c10::Half>) return "float16";
  else if constexpr (std::is_same_v<T, c10::BFloat16>) return "bfloat16";
#endif
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    switch (sizeof(T)) { case 1: return "int8"; case 2: return "int16"; case 4: return "int32"; default: return "int64"; }
  } else if constexpr (std::is_integral_v<T>) {
    switch (sizeof(T)) { case 1: return "uint8"; case 2: return "uint16"; case 4: return "uint32"; default: return "uint64"; }
  } else if constexpr (std::is_void_v<T>) return "bytes";
  else if constexpr (abi::is_vector<T>::value) return dtype_of<decltype(T::x)>();
  else return "opaque";
}
template <class E> constexpr int lanes_of() {
  using T = std::remove_cv_t<E>;
  if constexpr (!std::is_void_v<T> && abi::is_vector<T>::value) return static_cast<int>(sizeof(T) / sizeof(T::x));
  else return 1;
}

// Arg is what the capture knows of one kernel argument.
struct Arg {
  std::string kind;  // scalar | pointer | struct
  std::string ctype, dtype;
  int lanes = 1;
  std::string value;  // JSON (scalars)
  const void* ptr = nullptr;
  std::vector<long long> shape, strides;  // from a tensor accessor
  // Resolved allocation.
  bool found = false;
  phr_alloc alloc{};
  size_t offset = 0, extent = 0;
  bool written = false, read = true, captured = false;
  bool read_known = false;
  // partial: the replay left some of the argument's bytes untouched (the
  // kernel writes only part of it), so its contents before the launch are
  // part of the result.
  bool partial = false;
};

#if defined(CUDAEMU_HOST_TORCH)
// A packed tensor accessor (PackedTensorAccessor32/64 derive from the
// generic one) carries its pointer, sizes and strides.
template <class IA, class IB, class T, size_t N, template <class> class PT, class I>
std::true_type accessor_base(const torch::headeronly::detail::GenericPackedTensorAccessor<IA, IB, T, N, PT, I>*);
std::false_type accessor_base(...);
template <class T> constexpr bool is_accessor = decltype(accessor_base(static_cast<const T*>(nullptr)))::value;
template <class IA, class IB, class T, size_t N, template <class> class PT, class I>
inline void describe_accessor(const torch::headeronly::detail::GenericPackedTensorAccessor<IA, IB, T, N, PT, I>& v, Arg& a) {
  a.kind = "pointer";
  a.dtype = dtype_of<T>();
  a.lanes = lanes_of<T>();
  a.ptr = v.data();
  for (size_t i = 0; i < N; i++) {
    a.shape.push_back(static_cast<long long>(v.size(static_cast<I>(i))));
    a.strides.push_back(static_cast<long long>(v.stride(static_cast<I>(i))));
  }
}
#else
template <class T> constexpr bool is_accessor = false;
#endif

template <class T> inline void describe(const T& v, Arg& a) {
  a.ctype = type_name<T>();
  if constexpr (is_accessor<T>) {
#if defined(CUDAEMU_HOST_TORCH)
    describe_accessor(v, a);
#endif
  } else if constexpr (std::is_pointer_v<T>) {
    using E = std::remove_pointer_t<T>;
    a.kind = "pointer";
    a.dtype = dtype_of<E>();
    a.lanes = lanes_of<E>();
    a.ptr = static_cast<const void*>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    a.kind = "scalar";
    a.dtype = "bool";
    a.value = v ? "true" : "false";
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    a.kind = "scalar";
    if constexpr (std::is_enum_v<T>) {
      a.dtype = dtype_of<std::underlying_type_t<T>>();
      a.value = std::to_string(static_cast<long long>(v));
    } else {
      a.dtype = dtype_of<T>();
      a.value = std::to_string(v);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    a.kind = "scalar";
    a.dtype = dtype_of<T>();
    a.value = json_num(static_cast<double>(v));
#if defined(CUDAEMU_HOST_TORCH)
  } else if constexpr (std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
#else
  } else if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
#endif
    a.kind = "scalar";
    a.dtype = dtype_of<T>();
    a.value = json_num(static_cast<double>(static_cast<float>(v)));
  } else {
    a.kind = "struct";
    a.dtype = "opaque";
    std::string hex;
    const unsigned char* b = reinterpret_cast<const unsigned char*>(&v);
    for (size_t i = 0; i < sizeof(T) && i < 512; i++) {
      char h[4];
      snprintf(h, sizeof h, "%02x", b[i]);
      hex += h;
    }
    a.value = json_str(hex);
  }
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t i = s.find(sep, start);
    out.push_back(s.substr(start, i == std::string::npos ? std::string::npos : i - start));
    if (i == std::string::npos) break;
    start = i + 1;
  }
  return out;
}

// param_decls returns the names and declared types of the overload with n
// parameters (empty when none matches).
inline std::vector<std::pair<std::string, std::string>> param_decls(const char* params, size_t n) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!params || !*params) return out;
  for (const std::string& ov : split(params, '\036')) {
    std::vector<std::string> ps = ov.empty() ? std::vector<std::string>{} : split(ov, '\037');
    if (ps.size() != n) continue;
    for (const std::string& p : ps) {
      size_t i = p.find('\035');
      out.emplace_back(p.substr(0, i), i == std::string::npos ? "" : p.substr(i + 1));
    }
    return out;
  }
  return out;
}

// Region is one allocation a launch's pointers point into.
struct Region {
  phr_alloc alloc{};
  std::vector<unsigned char> before, after;
};

inline void restore(std::vector<Region>& rs, bool to_after) {
  for (Region& r : rs) {
    const auto& src = to_after ? r.after : r.before;
    if (!src.empty()) memcpy(const_cast<void*>(r.alloc.base), src.data(), src.size());
  }
}
// same_as_after reports whether a replay reproduced the first run. In the
// poisoned range of allocation poisoned_id, a byte the first run left
// unchanged that still holds the poison counts as untouched (the kernel
// writes only part of the range).
inline bool same_as_after(const std::vector<Region>& rs, long long poisoned_id, size_t off, size_t len) {
  for (const Region& r : rs) {
    if (r.after.empty()) continue;
    const unsigned char* now = static_cast<const unsigned char*>(r.alloc.base);
    if (r.alloc.id != poisoned_id) {
      if (memcmp(now, r.after.data(), r.after.size()) != 0) return false;
      continue;
    }
    for (size_t k = 0; k < r.after.size(); k++) {
      if (now[k] == r.after[k]) continue;
      const bool in_poison = k >= off && k < off + len;
      if (in_poison && now[k] == 0xff && r.before[k] == r.after[k]) continue;
      return false;
    }
  }
  return true;
}

// left_untouched reports whether a replay, run with [off, off+len) of
// allocation id poisoned, left a byte of that range holding the poison that
// the first run did not change: the kernel never writes it. A byte whose
// value after the first run is itself the poison tells nothing.
inline bool left_untouched(const std::vector<Region>& rs, long long id, size_t off, size_t len) {
  for (const Region& r : rs) {
    if (r.alloc.id != id || r.after.empty()) continue;
    const unsigned char* now = static_cast<const unsigned char*>(r.alloc.base);
    for (size_t k = off; k < off + len && k < r.after.size(); k++)
      if (now[k] == 0xff && r.before[k] == r.after[k] && r.after[k] != 0xff) return true;
  }
  return false;
}

[[noreturn]] inline void launch_failed(const Site& site, const std::string& msg) {
  std::string m = std::string("cudaemu: kernel ") + site.kernel + " (" + site.file + ":" + std::to_string(site.line) + "): " + msg;
  phr_set_error(cudaErrorLaunchFailure, m.c_str());
#if defined(CUDAEMU_HOST_TORCH)
  TORCH_CHECK(false, m);
#else
  fprintf(stderr, "%s\n", m.c_str());
  exit(3);
#endif
}

// launch runs body(args...) as the kernel body of every thread of the grid
// of cfg; body calls the kernel itself, so overloads and template argument
// deduction are the compiler's as in the original launch.
template <class F, class... A>
inline void launch(const Site& site_in, const std::vector<std::string>& targs_in, const Config& cfg, F&& body, A&&... args) {
  Site site = site_in;
  std::vector<std::string> targs = targs_in;
  std::string fn_kernel, fn_instance;
  if (site.fn && symbol_kernel(site.fn, fn_kernel, fn_instance, targs)) site.kernel = fn_kernel.c_str();
  auto tup = std::make_tuple(args...);
  auto once = [&]() -> std::string {
    char err[1024];
    err[0] = 0;
    int rc = ::cudaemu::launch(cfg.grid, cfg.block, cfg.shmem, [&] { std::apply(body, tup); }, err, static_cast<int>(sizeof err));
    return rc == 0 ? std::string() : std::string(err[0] ? err : "launch failed");
  };
  std::string instance = site.kernel;
  if (!fn_instance.empty()) {
    instance = fn_instance;
  } else if (!targs.empty()) {
    instance += "<";
    for (size_t i = 0; i < targs.size(); i++) instance += (i ? ", " : "") + targs[i];
    instance += ">";
  }
  const long long seq = phr_capture_begin(site.kernel);
  if (cfg.shmem_signed < 0) launch_failed(site, "invalid launch: negative dynamic shared memory size");
  if (seq < 0) {
    std::string e = once();
    if (!e.empty()) launch_failed(site, e);
    return;
  }
  // Describe the arguments and snapshot the allocations they point into.
  std::vector<Arg> as(sizeof...(A));
  {
    size_t i = 0;
    std::apply([&](const auto&... v) { (describe(v, as[i++]), ...); }, tup);
  }
  std::vector<Region> regions;
  size_t budget = phr_capture_max_bytes();
  for (Arg& a : as) {
    if (a.kind != "pointer" || !a.ptr) continue;
    if (!phr_alloc_find(a.ptr, &a.alloc)) continue;
    a.found = true;
    a.offset = static_cast<size_t>(static_cast<const char*>(a.ptr) - static_cast<const char*>(a.alloc.base));
    a.extent = a.alloc.bytes - a.offset;
    bool have = false;
    for (Region& r : regions) have = have || r.alloc.id == a.alloc.id;
    if (!have && a.alloc.bytes <= budget) {
      budget -= a.alloc.bytes;
      Region r;
      r.alloc = a.alloc;
      const unsigned char* b = static_cast<const unsigned char*>(a.alloc.base);
      r.before.assign(b, b + a.alloc.bytes);
      regions.push_back(std::move(r));
    }
  }
  auto region_of = [&](const Arg& a) -> Region* {
    for (Region& r : regions)
      if (r.alloc.id == a.alloc.id) return &r;
    return nullptr;
  };
  const double t0 = now_s();
  std::string err = once();
  const double dur = now_s() - t0;
  for (Region& r : regions) {
    const unsigned char* b = static_cast<const unsigned char*>(r.alloc.base);
    r.after.assign(b, b + r.alloc.bytes);
  }
  for (Arg& a : as) {
    Region* r = a.found ? region_of(a) : nullptr;
    if (!r) continue;
    a.captured = true;
    a.written = memcmp(r->before.data() + a.offset, r->after.data() + a.offset, a.extent) != 0;
  }
  // Replays tell an output (its contents before the launch are never read)
  // from an inout: poison the argument's bytes, rerun from the saved state,
  // and compare with the first run.
  std::string roles_from = "diff";
  if (err.empty() && phr_capture_replay() && dur < 10.0) {
    roles_from = "replay";
    for (Arg& a : as) {
      if (!a.captured || !a.written) continue;
      restore(regions, false);
      memset(const_cast<char*>(static_cast<const char*>(a.alloc.base)) + a.offset, 0xff, a.extent);
      std::string e2 = once();
      a.read = !e2.empty() || !same_as_after(regions, a.alloc.id, a.offset, a.extent);
      a.partial = e2.empty() && left_untouched(regions, a.alloc.id, a.offset, a.extent);
      a.read_known = true;
    }
    restore(regions, true);
  }
  // Record.
  std::vector<std::pair<std::string, std::string>> decl = param_decls(site.params, as.size());
  char pre[32];
  snprintf(pre, sizeof pre, "%06lld", seq);
  std::string j = "{\"schema\":\"pallasify.capture/v1\",\"seq\":" + std::to_string(seq);
  j += ",\"kernel\":" + json_str(site.kernel) + ",\"instance\":" + json_str(instance) + ",\"template_args\":[";
  for (size_t i = 0; i < targs.size(); i++) j += (i ? "," : "") + json_str(targs[i]);
  j += "],\"grid\":[" + std::to_string(cfg.grid.x) + "," + std::to_string(cfg.grid.y) + "," + std::to_string(cfg.grid.z) + "]";
  j += ",\"block\":[" + std::to_string(cfg.block.x) + "," + std::to_string(cfg.block.y) + "," + std::to_string(cfg.block.z) + "]";
  j += ",\"shared_bytes\":" + std::to_string(cfg.shmem);
  j += ",\"site\":" + json_str(std::string(site.file) + ":" + std::to_string(site.line));
  j += ",\"args\":[";
  for (size_t i = 0; i < as.size(); i++) {
    Arg& a = as[i];
    if (i) j += ",";
    j += "{\"index\":" + std::to_string(i);
    if (i < decl.size()) {
      j += ",\"name\":" + json_str(decl[i].first);
      if (!decl[i].second.empty()) j += ",\"decl\":" + json_str(decl[i].second);
    }
    j += ",\"kind\":" + json_str(a.kind) + ",\"ctype\":" + json_str(a.ctype) + ",\"dtype\":" + json_str(a.dtype);
    if (a.lanes != 1) j += ",\"lanes\":" + std::to_string(a.lanes);
    if (a.kind != "pointer") {
      j += ",\"value\":" + a.value + "}";
      continue;
    }
    char addr[32];
    snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(a.ptr)));
    j += ",\"address\":" + json_str(addr);
    if (!a.shape.empty()) {
      j += ",\"shape_hint\":[";
      for (size_t k = 0; k < a.shape.size(); k++) j += (k ? "," : "") + std::to_string(a.shape[k]);
      j += "],\"strides\":[";
      for (size_t k = 0; k < a.strides.size(); k++) j += (k ? "," : "") + std::to_string(a.strides[k]);
      j += "]";
    }
    if (!a.found) {
      j += ",\"alloc\":null,\"origin\":\"unknown\"}";
      continue;
    }
    j += ",\"alloc\":{\"id\":" + std::to_string(a.alloc.id) + ",\"bytes\":" + std::to_string(a.alloc.bytes) + ",\"origin\":" + json_str(a.alloc.origin) + "}";
    j += ",\"offset_bytes\":" + std::to_string(a.offset) + ",\"extent_bytes\":" + std::to_string(a.extent);
    if (a.captured) {
      Region* r = region_of(a);
      std::string bn = std::string(pre) + "_a" + std::to_string(i) + "_before.bin";
      std::string an = std::string(pre) + "_a" + std::to_string(i) + "_after.bin";
      phr_capture_file(bn.c_str(), r->before.data() + a.offset, a.extent);
      phr_capture_file(an.c_str(), r->after.data() + a.offset, a.extent);
      // An argument written in part is an inout: what the kernel leaves
      // untouched keeps its contents from before the launch (zeros the
      // caller filled in), so a candidate must start from them too.
      const char* role = !a.written ? "input" : (a.read || a.partial ? "inout" : "output");
      j += std::string(",\"read\":") + (a.read ? "true" : "false") + ",\"written\":" + (a.written ? "true" : "false");
      if (a.partial) j += ",\"partial\":true";
      j += std::string(",\"read_known\":") + (a.read_known || !a.written ? "true" : "false");
      j += ",\"role\":" + json_str(role) + ",\"before\":" + json_str(bn) + ",\"after\":" + json_str(an);
    } else {
      j += ",\"captured\":false";
    }
    j += "}";
  }
  j += "],\"roles_from\":" + json_str(roles_from) + ",\"duration_s\":" + json_num(dur);
  if (!err.empty()) j += ",\"error\":" + json_str(err);
  j += "}";
  phr_capture_record(j.c_str());
  if (!err.empty()) launch_failed(site, err);
}

}  // namespace cudaemu::host

#define CUDAEMU_SITE(kernel, params) (::cudaemu::host::Site{__FILE__, __LINE__, kernel, params})
#define CUDAEMU_SITE_FN(kernel, params, fn) (::cudaemu::host::Site{__FILE__, __LINE__, kernel, params, reinterpret_cast<const void*>(fn)})

#if defined(CUDAEMU_HOST_TORCH)
#include "cudaemu_torch.h"
#endif

#endif  // PALLASIFY_CUDAEMU_HOST_H
