// cudaemu.h — run an isolated CUDA translation unit on the CPU with CUDA
// semantics (C++20, g++ >= 12).
//
// A launch runs the whole grid: blocks in sequence, one fiber per thread,
// cooperatively scheduled. __syncthreads is a block barrier, warp-synchronous
// operations (__shfl*_sync, __ballot_sync, __syncwarp, ...) are warp barriers
// that exchange values between the 32 lanes of a warp. Because fibers only
// switch at those synchronisation points, plain read-modify-write sequences are
// atomic, and static __shared__ variables (mapped to `static`) are per block
// (blocks never overlap). Fiber stacks are pooled and reused: a thread that
// never synchronises runs to completion on the stack its predecessor used, so
// kernels without barriers cost one context switch pair per thread.
//
// Dynamic shared memory (`extern __shared__ T name[];`) must be rewritten to a
// pointer by the Go side (emulator.Prepare) to `T* const name =
// reinterpret_cast<T*>(::cudaemu::dyn_smem);`.
//
// Errors inside a launch (barrier deadlock, __trap, a failed device assert, an
// invalid launch) end the launch with a message; see cudaemu::launch.
//
// Limits: no preemption (a thread spinning on a flag set by another thread or
// block loops forever; the sandbox's wall limit stops it), no inline PTX, no
// textures/surfaces, no cooperative grid sync, no dynamic parallelism, no
// tensor-core (wmma/mma) APIs. Device printf goes to stderr.
#ifndef PALLASIFY_CUDAEMU_H
#define PALLASIFY_CUDAEMU_H

#include <math.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
// Fibers switch with a few instructions of x86-64 assembly; elsewhere (or
// with -DCUDAEMU_UCONTEXT) with ucontext.
#if defined(__x86_64__) && !defined(CUDAEMU_UCONTEXT)
#define CUDAEMU_ASM_SWITCH 1
#endif
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#if !defined(CUDAEMU_ASM_SWITCH)
#include <ucontext.h>
#endif

#ifndef CUDAEMU_STACK_SIZE
#define CUDAEMU_STACK_SIZE (64 * 1024)
#endif
#ifndef CUDAEMU_MAX_DYN_SMEM
#define CUDAEMU_MAX_DYN_SMEM (228 * 1024)
#endif
// CPU seconds a launch may take before it is stopped (a thread spinning on a
// flag another thread or block would set never yields on the emulator);
// overridden at run time by the environment variable CUDAEMU_TIMEOUT_S.
#ifndef CUDAEMU_TIMEOUT_S
#define CUDAEMU_TIMEOUT_S 120
#endif
#ifndef CUDAEMU_PRINTF_LIMIT
#define CUDAEMU_PRINTF_LIMIT 256
#endif

// ---------------------------------------------------------------------------
// Keywords and attributes.
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __constant__
#define __managed__
#define __restrict__ __restrict
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __inline_hint__ inline
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __device_builtin__
#define __cudart_builtin__
#define __CUDACC__ 1
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 800
#endif
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 0
#define CUDART_VERSION 12000
#define CUDA_VERSION 12000
#define CUDAEMU 1

#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_2_OVER_PI_F 0.636619772f
#define CUDART_PIO2_F 1.570796327f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_SQRT_2PI_F 2.506628275f
#define CUDART_L2E_F 1.442695041f
#define CUDART_LN2_F 0.693147181f
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#define CUDART_MAX_NORMAL_F FLT_MAX
#define CUDART_MIN_DENORM_F 1.40129846e-45f

// ---------------------------------------------------------------------------
// Built-in index types.
struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
typedef int cudaError_t;
typedef void* cudaStream_t;
#define cudaSuccess 0

// The current thread's coordinates. External linkage (inline variables) so the
// compiler reloads them after every opaque call, i.e. after a fiber switch.
inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
constexpr int warpSize = 32;

namespace cudaemu {

alignas(256) inline unsigned char dyn_smem[CUDAEMU_MAX_DYN_SMEM];

// ---------------------------------------------------------------------------
// Context switching.
#if defined(CUDAEMU_ASM_SWITCH)
extern "C" void cudaemu_ctx_switch(void** save_sp, void* new_sp) __attribute__((visibility("hidden")));
extern "C" void cudaemu_ctx_boot() __attribute__((visibility("hidden")));
asm(R"(
  .text
  .p2align 4
  .weak cudaemu_ctx_switch
  .hidden cudaemu_ctx_switch
  .type cudaemu_ctx_switch,@function
cudaemu_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cudaemu_ctx_switch,.-cudaemu_ctx_switch
  .p2align 4
  .weak cudaemu_ctx_boot
  .hidden cudaemu_ctx_boot
  .type cudaemu_ctx_boot,@function
cudaemu_ctx_boot:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size cudaemu_ctx_boot,.-cudaemu_ctx_boot
)");
#endif

enum : unsigned char { kNotStarted, kRunnable, kWaitBlock, kWaitWarp, kDone };
enum WarpOp : unsigned char { kOpSync, kOpShfl, kOpBallot, kOpMatchAny, kOpMatchAll, kOpRedAdd, kOpRedMin, kOpRedMax, kOpRedUMin, kOpRedUMax, kOpRedAnd, kOpRedOr, kOpRedXor };

struct Thread {
#if defined(CUDAEMU_ASM_SWITCH)
  void* sp;
#else
  ucontext_t uc;
#endif
  int stack;  // index into the stack pool, -1 when none
  unsigned char state;
  unsigned char op;
  const char* opname;  // for diagnostics: the call the thread waits in
  uint3 tid;
  int linear;
  unsigned wmask;  // the warp op's member mask (restricted to existing lanes)
  int wsrc;        // shuffle source lane (-1: out of range, keep own value)
  unsigned long long wval;
  unsigned long long wres;
  int pred;
};

struct Emu {
  Thread thr[1024];
  char* stacks[1024];
  int free_stacks[1024];
  int nfree = 0;
  int nstacks = 0;
#if defined(CUDAEMU_ASM_SWITCH)
  void* sched_sp = nullptr;
#else
  ucontext_t sched_uc;
#endif
  Thread* cur = nullptr;
  int nthreads = 0;
  int nwarps = 0;
  int nwait_block = 0;
  int ndone = 0;
  int bar_count = 0;  // threads whose predicate held at the last barrier
  int bar_total = 0;  // threads that took part in it (exited ones do not)
  int failed = 0;
  char msg[1024];
  void (*fn)(void*) = nullptr;
  void* ctx = nullptr;
  int printed = 0;
  bool direct = false;                 // CUDAEMU_NOSYNC: one fiber runs every thread in turn
  void (*entry)(Thread*) = nullptr;    // the fiber entry being started
  volatile sig_atomic_t timed_out = 0;
  volatile sig_atomic_t in_libc = 0;  // inside stdio: the timer must not jump away
  int timeout_s = 0;
  char* altstack = nullptr;
  pthread_t owner{};  // the thread running the launch
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
};

inline Emu& emu() {
  static Emu e;
  return e;
}

inline void set_thread_coords(const Thread& t) { threadIdx = t.tid; }

[[noreturn]] inline void fiber_exit();
inline void release_block_barrier();

inline void fiber_main(Thread* t) {
  Emu& e = emu();
  e.fn(e.ctx);
  t->state = kDone;
  fiber_exit();
}

// direct_main runs the whole grid on one fiber, each thread a plain call: the
// fast path for kernels that never synchronise (CUDAEMU_NOSYNC, set by the Go
// side when the translation unit names no synchronising primitive). The fiber
// still lets a fault or a timeout abandon the launch.
inline void direct_main(Thread* t) {
  Emu& e = emu();
  const dim3 g = gridDim, b = blockDim;
  for (unsigned bz = 0; bz < g.z; bz++)
    for (unsigned by = 0; by < g.y; by++)
      for (unsigned bx = 0; bx < g.x; bx++) {
        blockIdx = uint3{bx, by, bz};
        int i = 0;
        for (unsigned z = 0; z < b.z; z++)
          for (unsigned y = 0; y < b.y; y++)
            for (unsigned x = 0; x < b.x; x++, i++) {
              t->tid = uint3{x, y, z};
              t->linear = i;
              threadIdx = t->tid;
              e.fn(e.ctx);
            }
      }
  t->state = kDone;
  fiber_exit();
}

#if !defined(CUDAEMU_ASM_SWITCH)
inline void fiber_tramp(unsigned hi, unsigned lo) {
  Thread* t = reinterpret_cast<Thread*>((static_cast<uintptr_t>(hi) << 32) | static_cast<uintptr_t>(lo));
  emu().entry(t);
}
#endif

// Switch from the running fiber back to the scheduler.
inline void yield_to_scheduler() {
  Emu& e = emu();
  Thread* t = e.cur;
#if defined(CUDAEMU_ASM_SWITCH)
  cudaemu_ctx_switch(&t->sp, e.sched_sp);
#else
  swapcontext(&t->uc, &e.sched_uc);
#endif
  set_thread_coords(*e.cur);
}

[[noreturn]] inline void fiber_exit() {
  yield_to_scheduler();
  __builtin_trap();  // a finished fiber is never resumed
}

// fail records an error and abandons the current fiber (from device code) or
// returns (from the scheduler).
inline void set_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void set_error(const char* fmt, ...) {
  Emu& e = emu();
  if (e.failed) return;
  e.failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e.msg, sizeof e.msg, fmt, ap);
  va_end(ap);
}

[[noreturn]] inline void device_fail() {
  Emu& e = emu();
  e.cur->state = kDone;
  fiber_exit();
}

inline bool in_kernel() { return emu().cur != nullptr; }

inline char* stack_alloc(int* idx) {
  Emu& e = emu();
  if (e.nfree > 0) {
    *idx = e.free_stacks[--e.nfree];
    return e.stacks[*idx];
  }
  const size_t page = 4096;
  void* m = mmap(nullptr, CUDAEMU_STACK_SIZE + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  mprotect(m, page, PROT_NONE);  // guard page below the stack
  *idx = e.nstacks;
  e.stacks[e.nstacks++] = static_cast<char*>(m) + page;
  return e.stacks[*idx];
}

inline void stack_release(Thread& t) {
  Emu& e = emu();
  if (t.stack >= 0) {
    e.free_stacks[e.nfree++] = t.stack;
    t.stack = -1;
  }
}

// Resume (or start) thread t on its fiber until it blocks or finishes.
inline bool resume(Thread& t, void (*entry)(Thread*) = &fiber_main) {
  Emu& e = emu();
  if (t.state == kNotStarted) {
    e.entry = entry;
    char* base = stack_alloc(&t.stack);
    if (!base) {
      set_error("cudaemu: cannot allocate a fiber stack (%d threads alive)", e.nstacks);
      return false;
    }
#if defined(CUDAEMU_ASM_SWITCH)
    uintptr_t top = (reinterpret_cast<uintptr_t>(base) + CUDAEMU_STACK_SIZE) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top - 72);
    sp[0] = nullptr;                                                   // r15
    sp[1] = nullptr;                                                   // r14
    sp[2] = reinterpret_cast<void*>(entry);                            // r13: entry
    sp[3] = &t;                                                        // r12: argument
    sp[4] = nullptr;                                                   // rbx
    sp[5] = nullptr;                                                   // rbp
    sp[6] = reinterpret_cast<void*>(&cudaemu_ctx_boot);                // return address
    t.sp = sp;
#else
    getcontext(&t.uc);
    t.uc.uc_stack.ss_sp = base;
    t.uc.uc_stack.ss_size = CUDAEMU_STACK_SIZE;
    t.uc.uc_link = nullptr;
    uintptr_t p = reinterpret_cast<uintptr_t>(&t);
    makecontext(&t.uc, reinterpret_cast<void (*)()>(&fiber_tramp), 2, static_cast<unsigned>(p >> 32), static_cast<unsigned>(p & 0xffffffffu));
#endif
  }
  t.state = kRunnable;
  e.cur = &t;
  set_thread_coords(t);
#if defined(CUDAEMU_ASM_SWITCH)
  cudaemu_ctx_switch(&e.sched_sp, t.sp);
#else
  swapcontext(&e.sched_uc, &t.uc);
#endif
  e.cur = nullptr;
  if (t.state == kDone) {
    stack_release(t);
    e.ndone++;
#if !defined(CUDAEMU_STRICT_BARRIERS)
    if (e.nwait_block > 0 && e.nwait_block + e.ndone == e.nthreads && !e.failed) release_block_barrier();
#endif
  }
  return !e.failed;
}

inline const char* state_name(const Thread& t) {
  switch (t.state) {
    case kDone: return "has exited";
    case kWaitBlock: return "waits at __syncthreads()";
    case kWaitWarp: return "waits at a warp-synchronous call";
    default: return "is runnable";
  }
}

// ---------------------------------------------------------------------------
// Block barrier. As in PTX (`exit`: "if the exiting threads are holding up
// the barrier, the barrier is released"), threads that have exited count as
// arrived, so `if (i >= n) return; ... __syncthreads();` works as on a GPU.
// Define CUDAEMU_STRICT_BARRIERS to make a barrier reached after any thread
// of the block exited an error instead.
inline void release_block_barrier() {
  Emu& e = emu();
  int count = 0, total = 0;
  for (int i = 0; i < e.nthreads; i++) {
    Thread& o = e.thr[i];
    if (o.state == kWaitBlock) {
      count += o.pred != 0;
      total++;
      o.state = kRunnable;
    }
  }
  e.bar_count = count;
  e.bar_total = total;
  e.nwait_block = 0;
}

inline void block_barrier(const char* name, int pred) {
  Emu& e = emu();
  Thread* t = e.cur;
  if (!t) {
    set_error("cudaemu: %s called outside a kernel launch", name);
    return;
  }
  if (e.direct) {
    set_error("cudaemu: %s reached in a kernel built without synchronisation support (CUDAEMU_NOSYNC); rebuild without it", name);
    device_fail();
  }
  t->pred = pred;
  t->opname = name;
#if defined(CUDAEMU_STRICT_BARRIERS)
  if (e.ndone > 0) {
    // Some thread of the block already exited: strict mode refuses the barrier.
    int first = -1;
    for (int i = 0; i < e.nthreads; i++)
      if (e.thr[i].state == kDone) { first = i; break; }
    set_error("cudaemu: barrier deadlock in block (%u,%u,%u): thread (%u,%u,%u) waits at %s but %d thread(s) of the block already exited (first: thread (%u,%u,%u)); every thread of a block must reach each __syncthreads()",
              blockIdx.x, blockIdx.y, blockIdx.z, t->tid.x, t->tid.y, t->tid.z, name, e.ndone,
              e.thr[first].tid.x, e.thr[first].tid.y, e.thr[first].tid.z);
    device_fail();
  }
#endif
  if (e.nwait_block + 1 + e.ndone == e.nthreads) {
    // Last arrival: release everyone, compute the predicate reductions.
    t->state = kWaitBlock;
    release_block_barrier();
    return;
  }
  e.nwait_block++;
  t->state = kWaitBlock;
  yield_to_scheduler();
  if (e.failed) device_fail();
}

// ---------------------------------------------------------------------------
// Warp barrier with data exchange.
inline unsigned existing_lanes(int warp) {
  Emu& e = emu();
  int n = e.nthreads - warp * 32;
  if (n >= 32) return 0xffffffffu;
  return n <= 0 ? 0u : ((1u << n) - 1u);
}

inline void warp_complete(int base, unsigned mask) {
  Emu& e = emu();
  Thread* g = &e.thr[base];
  const unsigned op = e.cur->op;
  unsigned long long r = 0;
  switch (op) {
    case kOpShfl:
      for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1)) continue;
        int s = g[l].wsrc;
        if (s < 0) g[l].wres = g[l].wval;
        else if (mask >> s & 1) g[l].wres = g[s].wval;
        else g[l].wres = ~0ull;  // undefined in CUDA: an inactive source lane; poison (NaN / -1)
      }
      return;
    case kOpBallot:
      for (int l = 0; l < 32; l++)
        if ((mask >> l & 1) && g[l].wval) r |= 1ull << l;
      break;
    case kOpMatchAny:
      for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1)) continue;
        unsigned m = 0;
        for (int k = 0; k < 32; k++)
          if ((mask >> k & 1) && g[k].wval == g[l].wval) m |= 1u << k;
        g[l].wres = m;
      }
      return;
    case kOpMatchAll: {
      bool all = true;
      for (int l = 0; l < 32; l++)
        if ((mask >> l & 1) && g[l].wval != e.cur->wval) all = false;
      r = all ? mask : 0;
      break;
    }
    case kOpRedAdd: case kOpRedMin: case kOpRedMax: case kOpRedUMin: case kOpRedUMax:
    case kOpRedAnd: case kOpRedOr: case kOpRedXor: {
      bool first = true;
      for (int l = 0; l < 32; l++) {
        if (!(mask >> l & 1)) continue;
        unsigned v = static_cast<unsigned>(g[l].wval);
        if (first) { r = v; first = false; continue; }
        unsigned a = static_cast<unsigned>(r);
        switch (op) {
          case kOpRedAdd: a += v; break;
          case kOpRedMin: a = static_cast<unsigned>(static_cast<int>(a) < static_cast<int>(v) ? static_cast<int>(a) : static_cast<int>(v)); break;
          case kOpRedMax: a = static_cast<unsigned>(static_cast<int>(a) > static_cast<int>(v) ? static_cast<int>(a) : static_cast<int>(v)); break;
          case kOpRedUMin: a = a < v ? a : v; break;
          case kOpRedUMax: a = a > v ? a : v; break;
          case kOpRedAnd: a &= v; break;
          case kOpRedOr: a |= v; break;
          case kOpRedXor: a ^= v; break;
        }
        r = a;
      }
      break;
    }
    default:
      break;
  }
  for (int l = 0; l < 32; l++)
    if (mask >> l & 1) g[l].wres = r;
}

// warp_op posts this lane's value, waits until every lane of mask arrived, and
// returns this lane's result.
inline unsigned long long warp_op(const char* name, unsigned op, unsigned mask, unsigned long long val, int src) {
  Emu& e = emu();
  Thread* t = e.cur;
  if (!t) {
    set_error("cudaemu: %s called outside a kernel launch", name);
    return 0;
  }
  if (e.direct) {
    set_error("cudaemu: %s reached in a kernel built without synchronisation support (CUDAEMU_NOSYNC); rebuild without it", name);
    device_fail();
  }
  const int lane = t->linear & 31;
  const int warp = t->linear >> 5;
  const int base = warp * 32;
  unsigned m = mask & existing_lanes(warp);
  if (!(mask >> lane & 1)) {
    set_error("cudaemu: %s in block (%u,%u,%u): thread (%u,%u,%u) (warp %d, lane %d) is not in its own member mask 0x%08x",
              name, blockIdx.x, blockIdx.y, blockIdx.z, t->tid.x, t->tid.y, t->tid.z, warp, lane, mask);
    device_fail();
  }
  t->op = static_cast<unsigned char>(op);
  t->opname = name;
  t->wmask = m;
  t->wval = val;
  t->wsrc = src;
  // Complete when every other lane of the mask waits here with the same mask and op.
  bool ready = true;
  for (int l = 0; l < 32 && ready; l++) {
    if (l == lane || !(m >> l & 1)) continue;
    const Thread& o = e.thr[base + l];
    if (o.state != kWaitWarp) ready = false;
    else if (o.wmask != m || o.op != op) {
      set_error("cudaemu: warp-synchronous mismatch in block (%u,%u,%u), warp %d: lane %d calls %s with mask 0x%08x while lane %d waits in %s with mask 0x%08x",
                blockIdx.x, blockIdx.y, blockIdx.z, warp, lane, name, m, l, o.opname, o.wmask);
      device_fail();
    }
  }
  if (ready) {
    warp_complete(base, m);
    for (int l = 0; l < 32; l++)
      if (l != lane && (m >> l & 1)) e.thr[base + l].state = kRunnable;
    return t->wres;
  }
  t->state = kWaitWarp;
  yield_to_scheduler();
  if (e.failed) device_fail();
  return t->wres;
}

// ---------------------------------------------------------------------------
// Faults and timeouts. During a launch, SIGSEGV/SIGBUS/SIGFPE raised by
// kernel code (an out-of-bounds access, a fiber stack overflow, an integer
// division by zero, SIGILL from a trap) and the CPU-time limit (SIGVTALRM) end the launch with an
// error instead of killing the host process: the handler, on an alternate
// signal stack, abandons the faulting fiber and switches to the scheduler.
// Faults outside kernel code go to the previous handlers.
struct SignalState {
  struct sigaction old_segv, old_bus, old_fpe, old_ill, old_alrm;
  stack_t old_stack;
  struct itimerval old_timer;
  bool active = false;
};
inline SignalState& sigstate() {
  static SignalState s;
  return s;
}

inline void restore_signals();

inline void fault_handler(int sig, siginfo_t* si, void*) {
  Emu& e = emu();
  if (!pthread_equal(pthread_self(), e.owner)) {
    // Another thread of the host process: not ours to handle.
    if (sig == SIGVTALRM) pthread_kill(e.owner, SIGVTALRM);
    else restore_signals();
    return;
  }
  if (sig == SIGVTALRM) {
    e.timed_out = 1;
    if (!e.cur || e.in_libc) return;  // the timer repeats; the scheduler also checks the flag
    set_error("cudaemu: launch exceeded its CPU-time limit of %d s in block (%u,%u,%u), thread (%u,%u,%u) (a thread spinning on a flag set by another thread or block never yields on the emulator)",
              e.timeout_s, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  } else {
    if (!e.cur) {
      // Not kernel code: let the previous handler see the fault when the
      // instruction re-executes.
      restore_signals();
      return;
    }
    const char* what = sig == SIGSEGV ? "segmentation fault" : sig == SIGBUS ? "bus error" : sig == SIGILL ? "illegal instruction (undefined behaviour reached?)" : "arithmetic exception (integer division by zero?)";
    const char* addr = static_cast<const char*>(si ? si->si_addr : nullptr);
    const char* hint = "";
    if ((sig == SIGSEGV || sig == SIGBUS) && e.cur->stack >= 0) {
      const char* base = e.stacks[e.cur->stack];
      if (addr >= base - 4096 && addr < base) hint = " (fiber stack overflow: too much local memory; raise CUDAEMU_STACK_SIZE)";
    }
    if (!*hint && (sig == SIGSEGV || sig == SIGBUS)) hint = " (out-of-bounds memory access in the kernel?)";
    set_error("cudaemu: %s at address %p in block (%u,%u,%u), thread (%u,%u,%u)%s", what, static_cast<const void*>(addr),
              blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, hint);
  }
  e.cur->state = kDone;
  fiber_exit();
}

inline void install_signals(int timeout_s) {
  SignalState& st = sigstate();
  Emu& e = emu();
  if (!e.altstack) e.altstack = static_cast<char*>(malloc(64 * 1024));
  if (!e.altstack) return;
  stack_t ss{};
  ss.ss_sp = e.altstack;
  ss.ss_size = 64 * 1024;
  sigaltstack(&ss, &st.old_stack);
  struct sigaction sa{};
  sa.sa_sigaction = &fault_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &st.old_segv);
  sigaction(SIGBUS, &sa, &st.old_bus);
  sigaction(SIGFPE, &sa, &st.old_fpe);
  sigaction(SIGILL, &sa, &st.old_ill);
  sigaction(SIGVTALRM, &sa, &st.old_alrm);
  struct itimerval it{};
  it.it_value.tv_sec = timeout_s;
  it.it_interval.tv_usec = 50000;
  setitimer(ITIMER_VIRTUAL, &it, &st.old_timer);
  st.active = true;
}

inline void restore_signals() {
  SignalState& st = sigstate();
  if (!st.active) return;
  st.active = false;
  struct itimerval zero{};
  setitimer(ITIMER_VIRTUAL, &zero, nullptr);
  sigaction(SIGSEGV, &st.old_segv, nullptr);
  sigaction(SIGBUS, &st.old_bus, nullptr);
  sigaction(SIGFPE, &st.old_fpe, nullptr);
  sigaction(SIGILL, &st.old_ill, nullptr);
  sigaction(SIGVTALRM, &st.old_alrm, nullptr);
  sigaltstack(&st.old_stack, nullptr);
  setitimer(ITIMER_VIRTUAL, &st.old_timer, nullptr);
}

inline int launch_timeout() {
  const char* v = getenv("CUDAEMU_TIMEOUT_S");
  if (v && *v) {
    int t = atoi(v);
    if (t > 0) return t;
  }
  return CUDAEMU_TIMEOUT_S;
}

// ---------------------------------------------------------------------------
// Launch.

inline int check_launch(dim3 g, dim3 b, size_t shmem) {
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) {
    set_error("cudaemu: invalid launch: grid (%u,%u,%u) block (%u,%u,%u) has a zero dimension", g.x, g.y, g.z, b.x, b.y, b.z);
    return 1;
  }
  unsigned long long nt = 1ull * b.x * b.y * b.z;
  if (nt > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64) {
    set_error("cudaemu: invalid launch: block (%u,%u,%u) exceeds CUDA limits (at most 1024 threads, z <= 64)", b.x, b.y, b.z);
    return 1;
  }
  if (g.x > 2147483647u || g.y > 65535u || g.z > 65535u) {
    set_error("cudaemu: invalid launch: grid (%u,%u,%u) exceeds CUDA limits (x < 2^31, y,z <= 65535)", g.x, g.y, g.z);
    return 1;
  }
  if (shmem > CUDAEMU_MAX_DYN_SMEM) {
    set_error("cudaemu: invalid launch: %zu bytes of dynamic shared memory exceed the %d-byte limit", shmem, CUDAEMU_MAX_DYN_SMEM);
    return 1;
  }
  return 0;
}

inline int run_block() {
  Emu& e = emu();
  const int n = e.nthreads;
  e.ndone = 0;
  e.nwait_block = 0;
  for (int i = 0; i < n; i++) {
    Thread& t = e.thr[i];
    t.state = kNotStarted;
    t.stack = -1;
  }
  for (;;) {
    bool progress = false;
    for (int i = 0; i < n; i++) {
      Thread& t = e.thr[i];
      if (t.state == kNotStarted || t.state == kRunnable) {
        progress = true;
        if (!resume(t)) return 1;
      }
    }
    if (e.timed_out) {
      set_error("cudaemu: launch exceeded its CPU-time limit of %d s in block (%u,%u,%u)", e.timeout_s, blockIdx.x, blockIdx.y, blockIdx.z);
      return 1;
    }
    if (e.ndone == n) return 0;
    if (!progress) break;
  }
  // Nobody can run: a deadlock. Describe the first waiting thread and why.
  for (int i = 0; i < n; i++) {
    const Thread& t = e.thr[i];
    if (t.state == kWaitWarp) {
      const int warp = i >> 5, base = warp * 32;
      for (int l = 0; l < 32; l++) {
        if (!(t.wmask >> l & 1)) continue;
        const Thread& o = e.thr[base + l];
        if (o.state != kWaitWarp) {
          set_error("cudaemu: warp deadlock in block (%u,%u,%u), warp %d: lane %d waits in %s (mask 0x%08x) but lane %d %s",
                    blockIdx.x, blockIdx.y, blockIdx.z, warp, i & 31, t.opname, t.wmask, l, state_name(o));
          return 1;
        }
      }
    }
  }
  for (int i = 0; i < n; i++) {
    const Thread& t = e.thr[i];
    if (t.state == kWaitBlock) {
      for (int k = 0; k < n; k++) {
        const Thread& o = e.thr[k];
        if (o.state != kWaitBlock) {
          set_error("cudaemu: barrier deadlock in block (%u,%u,%u): thread (%u,%u,%u) waits at %s but thread (%u,%u,%u) %s",
                    blockIdx.x, blockIdx.y, blockIdx.z, t.tid.x, t.tid.y, t.tid.z, t.opname, o.tid.x, o.tid.y, o.tid.z, state_name(o));
          return 1;
        }
      }
    }
  }
  set_error("cudaemu: deadlock in block (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z);
  return 1;
}

inline void reset_threads() {
  Emu& e = emu();
  for (int i = 0; i < e.nthreads; i++) {
    stack_release(e.thr[i]);
    e.thr[i].state = kDone;
  }
  e.cur = nullptr;
}

// launch_fn runs fn(ctx) as the kernel body of every thread of the grid.
// Returns 0, or 1 with the message in err.
inline int launch_fn(dim3 g, dim3 b, size_t shmem, void (*fn)(void*), void* ctx, char* err, int errlen) {
  Emu& e = emu();
  pthread_mutex_lock(&e.mu);
  e.failed = 0;
  e.msg[0] = 0;
  e.timed_out = 0;
  e.printed = 0;  // the device printf limit is per launch
  e.timeout_s = launch_timeout();
  e.owner = pthread_self();
  int rc = check_launch(g, b, shmem);
#if !defined(CUDAEMU_NO_SIGNALS)
  if (rc == 0) install_signals(e.timeout_s);
#endif
#if defined(__x86_64__) && defined(CUDAEMU_FTZ)
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040);  // flush-to-zero and denormals-are-zero, like --use_fast_math
#endif
  if (rc == 0) {
    memset(dyn_smem, 0xff, shmem);  // uninitialised shared memory reads as NaN / -1
    e.fn = fn;
    e.ctx = ctx;
    gridDim = g;
    blockDim = b;
    e.nthreads = static_cast<int>(b.x * b.y * b.z);
    e.nwarps = (e.nthreads + 31) / 32;
    int i = 0;
    for (unsigned z = 0; z < b.z; z++)
      for (unsigned y = 0; y < b.y; y++)
        for (unsigned x = 0; x < b.x; x++, i++) {
          e.thr[i].tid = uint3{x, y, z};
          e.thr[i].linear = i;
          e.thr[i].stack = -1;
        }
#if defined(CUDAEMU_NOSYNC)
    e.direct = true;
#else
    e.direct = false;
#endif
    if (e.direct) {
      Thread& t = e.thr[0];
      t.state = kNotStarted;
      e.ndone = 0;
      rc = resume(t, &direct_main) ? 0 : 1;
      if (rc == 0 && e.timed_out) {
        set_error("cudaemu: launch exceeded its CPU-time limit of %d s", e.timeout_s);
        rc = 1;
      }
    }
    for (unsigned bz = 0; bz < g.z && rc == 0 && !e.direct; bz++)
      for (unsigned by = 0; by < g.y && rc == 0; by++)
        for (unsigned bx = 0; bx < g.x && rc == 0; bx++) {
          blockIdx = uint3{bx, by, bz};
          rc = run_block();
        }
    reset_threads();
  }
#if !defined(CUDAEMU_NO_SIGNALS)
  restore_signals();
#endif
#if defined(__x86_64__) && defined(CUDAEMU_FTZ)
  _mm_setcsr(csr);
#endif
  if (rc && err && errlen > 0) snprintf(err, static_cast<size_t>(errlen), "%s", e.msg[0] ? e.msg : "cudaemu: launch failed");
  pthread_mutex_unlock(&e.mu);
  return rc;
}

template <class F>
int launch(dim3 g, dim3 b, size_t shmem, F&& f, char* err = nullptr, int errlen = 0) {
  using FT = std::remove_reference_t<F>;
  return launch_fn(g, b, shmem, [](void* c) { (*static_cast<FT*>(c))(); }, const_cast<void*>(static_cast<const void*>(&f)), err, errlen);
}

// ---------------------------------------------------------------------------
// ABI support for generated wrappers: call a kernel with void* arguments.
namespace abi {
template <class K> struct sig;
template <int I, class T, class... R> struct nth { using type = typename nth<I - 1, R...>::type; };
template <class T, class... R> struct nth<0, T, R...> { using type = T; };
template <class... P> struct sig<void (*)(P...)> {
  static constexpr int arity = sizeof...(P);
  template <int I> using param = typename nth<I, P...>::type;
};
template <class P> inline P arg(void* a) {
  if constexpr (std::is_pointer_v<P>) return static_cast<P>(a);
  else return *static_cast<std::remove_cv_t<P>*>(a);
}
template <class... P, size_t... I>
inline int invoke_impl(void (*k)(P...), void** args, const long long* launch_cfg, char* err, int errlen, std::index_sequence<I...>) {
  for (int i = 0; i < 7; i++) {
    if (launch_cfg[i] < 0 || launch_cfg[i] > 0xffffffffLL) {
      if (err && errlen > 0) snprintf(err, static_cast<size_t>(errlen), "cudaemu: invalid launch: value %lld at launch[%d]", launch_cfg[i], i);
      return 1;
    }
  }
  dim3 g(static_cast<unsigned>(launch_cfg[0]), static_cast<unsigned>(launch_cfg[1]), static_cast<unsigned>(launch_cfg[2]));
  dim3 b(static_cast<unsigned>(launch_cfg[3]), static_cast<unsigned>(launch_cfg[4]), static_cast<unsigned>(launch_cfg[5]));
  auto body = [&]() { k(arg<P>(args[I])...); };
  return launch(g, b, static_cast<size_t>(launch_cfg[6]), body, err, errlen);
}
template <class... P>
inline int invoke(void (*k)(P...), void** args, const long long* launch_cfg, char* err, int errlen) {
  return invoke_impl(k, args, launch_cfg, err, errlen, std::index_sequence_for<P...>{});
}
// is_vector marks CUDA vector types (float4, int2, half2, ...): a pointer to
// one may address a buffer of its component dtype.
template <class E> struct is_vector : std::false_type {};
// elem_ok: the pointee (or scalar) of P fits a dtype of n bytes.
template <class P> constexpr bool elem_ok(size_t n) {
  if constexpr (std::is_pointer_v<P>) {
    using E = std::remove_cv_t<std::remove_pointer_t<P>>;
    if constexpr (std::is_void_v<E>) return true;
    else return sizeof(E) == n || (is_vector<E>::value && sizeof(E) % n == 0);
  } else {
    return sizeof(P) == n;
  }
}
}  // namespace abi

// ---------------------------------------------------------------------------
// Bit helpers.
template <class To, class From>
inline To bitcast(const From& f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  memcpy(&t, &f, sizeof t);
  return t;
}
template <class T>
inline unsigned long long to_bits(const T& v) {
  static_assert(sizeof(T) <= 8, "cudaemu: warp shuffles move at most 8 bytes");
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}
template <class...> inline constexpr bool unsupported = false;

inline void dev_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void dev_printf(const char* fmt, ...) {
  Emu& e = emu();
  if (e.printed > CUDAEMU_PRINTF_LIMIT) return;
  if (e.printed++ == CUDAEMU_PRINTF_LIMIT) {
    fprintf(stderr, "[cudaemu] device printf: output limit (%d calls per launch) reached, further output suppressed\n", CUDAEMU_PRINTF_LIMIT);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  e.in_libc = 1;
  // Host code (a standalone program's own check) prints to stdout as usual.
  vfprintf(e.cur ? stderr : stdout, fmt, ap);
  e.in_libc = 0;
  va_end(ap);
}

inline const char* e_msg() { return emu().msg; }
inline void device_assert_fail(const char* expr, const char* file, int line) {
  set_error("cudaemu: device assertion failed: %s (%s:%d) in block (%u,%u,%u), thread (%u,%u,%u)", expr, file, line,
            blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  if (in_kernel()) device_fail();
#if defined(CUDAEMU_HOST)
  // Host code (CUDAEMU_HOST builds run the program's own host side): a failed
  // assert ends the process as the C library's would.
  fprintf(stderr, "%s\n", e_msg());
  abort();
#endif
}

}  // namespace cudaemu

#undef assert
#define assert(e) ((e) ? (void)0 : ::cudaemu::device_assert_fail(#e, __FILE__, __LINE__))
#define printf(...) ::cudaemu::dev_printf(__VA_ARGS__)

// ---------------------------------------------------------------------------
// Synchronisation.
inline void __syncthreads() { cudaemu::block_barrier("__syncthreads()", 1); }
inline int __syncthreads_count(int pred) {
  cudaemu::block_barrier("__syncthreads_count()", pred);
  return cudaemu::emu().bar_count;
}
inline int __syncthreads_and(int pred) {
  cudaemu::block_barrier("__syncthreads_and()", pred);
  return cudaemu::emu().bar_count == cudaemu::emu().bar_total;
}
inline int __syncthreads_or(int pred) {
  cudaemu::block_barrier("__syncthreads_or()", pred);
  return cudaemu::emu().bar_count != 0;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { cudaemu::warp_op("__syncwarp()", cudaemu::kOpSync, mask, 0, -1); }
inline void __threadfence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __nanosleep(unsigned) {}
[[noreturn]] inline void __trap() {
  cudaemu::set_error("cudaemu: __trap() called in block (%u,%u,%u), thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  if (cudaemu::in_kernel()) cudaemu::device_fail();
  abort();
}
[[noreturn]] inline void __brkpt() { __trap(); }

inline unsigned __activemask() {
  cudaemu::Emu& e = cudaemu::emu();
  if (!e.cur) return 0;
  const int warp = e.cur->linear >> 5;
  unsigned m = 0, ex = cudaemu::existing_lanes(warp);
  for (int l = 0; l < 32; l++)
    if ((ex >> l & 1) && e.thr[warp * 32 + l].state != cudaemu::kDone) m |= 1u << l;
  return m;
}
inline unsigned __lanemask_lt() { return (1u << (threadIdx.x & 31)) - 1u; }

// Warp shuffles (width is a power of two <= 32).
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
  const int lane = cudaemu::emu().cur ? (cudaemu::emu().cur->linear & 31) : 0;
  const int s = (lane & ~(width - 1)) + (src & (width - 1));
  return cudaemu::from_bits<T>(cudaemu::warp_op("__shfl_sync()", cudaemu::kOpShfl, mask, cudaemu::to_bits(var), s));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  const int lane = cudaemu::emu().cur ? (cudaemu::emu().cur->linear & 31) : 0;
  const int s = (lane & (width - 1)) >= static_cast<int>(delta) ? lane - static_cast<int>(delta) : -1;
  return cudaemu::from_bits<T>(cudaemu::warp_op("__shfl_up_sync()", cudaemu::kOpShfl, mask, cudaemu::to_bits(var), s));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  const int lane = cudaemu::emu().cur ? (cudaemu::emu().cur->linear & 31) : 0;
  const int s = (lane & (width - 1)) + static_cast<int>(delta) < width ? lane + static_cast<int>(delta) : -1;
  return cudaemu::from_bits<T>(cudaemu::warp_op("__shfl_down_sync()", cudaemu::kOpShfl, mask, cudaemu::to_bits(var), s));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  const int lane = cudaemu::emu().cur ? (cudaemu::emu().cur->linear & 31) : 0;
  int s = lane ^ lane_mask;
  if (s >= ((lane / width) + 1) * width || s > 31) s = -1;
  return cudaemu::from_bits<T>(cudaemu::warp_op("__shfl_xor_sync()", cudaemu::kOpShfl, mask, cudaemu::to_bits(var), s));
}
// Pre-CUDA-9 spellings: the whole (active) warp takes part.
template <class T> inline T __shfl(T var, int src, int width = 32) { return __shfl_sync(__activemask(), var, src, width); }
template <class T> inline T __shfl_up(T var, unsigned d, int width = 32) { return __shfl_up_sync(__activemask(), var, d, width); }
template <class T> inline T __shfl_down(T var, unsigned d, int width = 32) { return __shfl_down_sync(__activemask(), var, d, width); }
template <class T> inline T __shfl_xor(T var, int m, int width = 32) { return __shfl_xor_sync(__activemask(), var, m, width); }

inline unsigned __ballot_sync(unsigned mask, int pred) {
  return static_cast<unsigned>(cudaemu::warp_op("__ballot_sync()", cudaemu::kOpBallot, mask, pred != 0, -1));
}
inline int __all_sync(unsigned mask, int pred) {
  const unsigned m = mask & cudaemu::existing_lanes(cudaemu::emu().cur ? cudaemu::emu().cur->linear >> 5 : 0);
  return static_cast<unsigned>(cudaemu::warp_op("__all_sync()", cudaemu::kOpBallot, mask, pred != 0, -1)) == m;
}
inline int __any_sync(unsigned mask, int pred) {
  return cudaemu::warp_op("__any_sync()", cudaemu::kOpBallot, mask, pred != 0, -1) != 0;
}
inline int __uni_sync(unsigned mask, int pred) {
  const unsigned m = mask & cudaemu::existing_lanes(cudaemu::emu().cur ? cudaemu::emu().cur->linear >> 5 : 0);
  unsigned b = static_cast<unsigned>(cudaemu::warp_op("__uni_sync()", cudaemu::kOpBallot, mask, pred != 0, -1));
  return b == 0 || b == m;
}
inline unsigned __ballot(int pred) { return __ballot_sync(__activemask(), pred); }
inline int __all(int pred) { return __all_sync(__activemask(), pred); }
inline int __any(int pred) { return __any_sync(__activemask(), pred); }
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value) {
  return static_cast<unsigned>(cudaemu::warp_op("__match_any_sync()", cudaemu::kOpMatchAny, mask, cudaemu::to_bits(value), -1));
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {
  unsigned r = static_cast<unsigned>(cudaemu::warp_op("__match_all_sync()", cudaemu::kOpMatchAll, mask, cudaemu::to_bits(value), -1));
  *pred = r != 0;
  return r;
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return static_cast<unsigned>(cudaemu::warp_op("__reduce_add_sync()", cudaemu::kOpRedAdd, mask, v, -1)); }
inline int __reduce_add_sync(unsigned mask, int v) { return static_cast<int>(cudaemu::warp_op("__reduce_add_sync()", cudaemu::kOpRedAdd, mask, static_cast<unsigned>(v), -1)); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return static_cast<unsigned>(cudaemu::warp_op("__reduce_min_sync()", cudaemu::kOpRedUMin, mask, v, -1)); }
inline int __reduce_min_sync(unsigned mask, int v) { return static_cast<int>(cudaemu::warp_op("__reduce_min_sync()", cudaemu::kOpRedMin, mask, static_cast<unsigned>(v), -1)); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return static_cast<unsigned>(cudaemu::warp_op("__reduce_max_sync()", cudaemu::kOpRedUMax, mask, v, -1)); }
inline int __reduce_max_sync(unsigned mask, int v) { return static_cast<int>(cudaemu::warp_op("__reduce_max_sync()", cudaemu::kOpRedMax, mask, static_cast<unsigned>(v), -1)); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return static_cast<unsigned>(cudaemu::warp_op("__reduce_and_sync()", cudaemu::kOpRedAnd, mask, v, -1)); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return static_cast<unsigned>(cudaemu::warp_op("__reduce_or_sync()", cudaemu::kOpRedOr, mask, v, -1)); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return static_cast<unsigned>(cudaemu::warp_op("__reduce_xor_sync()", cudaemu::kOpRedXor, mask, v, -1)); }

// ---------------------------------------------------------------------------
// Atomics. Fibers switch only at synchronisation points, so a plain
// read-modify-write is atomic. All return the old value.
template <class T> inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <class T> inline T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <class T> inline T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <class T> inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <class T> inline T atomicMax(T* p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <class T> inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <class T> inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <class T> inline T atomicXor(T* p, T v) { T o = *p; *p = o ^ v; return o; }
template <class T> inline T atomicCAS(T* p, T cmp, T v) { T o = *p; if (cudaemu::to_bits(o) == cudaemu::to_bits(cmp)) *p = v; return o; }
inline unsigned atomicInc(unsigned* p, unsigned v) { unsigned o = *p; *p = (o >= v) ? 0u : o + 1u; return o; }
inline unsigned atomicDec(unsigned* p, unsigned v) { unsigned o = *p; *p = (o == 0u || o > v) ? v : o - 1u; return o; }
// Mixed argument types (e.g. atomicAdd(int*, unsigned) from literals) convert to the pointee.
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicAdd(T* p, U v) { return atomicAdd(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicSub(T* p, U v) { return atomicSub(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicExch(T* p, U v) { return atomicExch(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicMin(T* p, U v) { return atomicMin(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicMax(T* p, U v) { return atomicMax(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicOr(T* p, U v) { return atomicOr(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicAnd(T* p, U v) { return atomicAnd(p, static_cast<T>(v)); }
template <class T, class U, class = std::enable_if_t<!std::is_same_v<T, U>>> inline T atomicXor(T* p, U v) { return atomicXor(p, static_cast<T>(v)); }
#define CUDAEMU_SCOPED_ATOMIC(name) \
  template <class T, class... A> inline auto name##_block(T* p, A... a) { return name(p, a...); } \
  template <class T, class... A> inline auto name##_system(T* p, A... a) { return name(p, a...); }
CUDAEMU_SCOPED_ATOMIC(atomicAdd)
CUDAEMU_SCOPED_ATOMIC(atomicSub)
CUDAEMU_SCOPED_ATOMIC(atomicExch)
CUDAEMU_SCOPED_ATOMIC(atomicMin)
CUDAEMU_SCOPED_ATOMIC(atomicMax)
CUDAEMU_SCOPED_ATOMIC(atomicAnd)
CUDAEMU_SCOPED_ATOMIC(atomicOr)
CUDAEMU_SCOPED_ATOMIC(atomicXor)
CUDAEMU_SCOPED_ATOMIC(atomicCAS)
#undef CUDAEMU_SCOPED_ATOMIC

// ---------------------------------------------------------------------------
// Loads and stores with cache hints.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// ---------------------------------------------------------------------------
// Math: the C library supplies the float functions (expf, logf, ...); these
// are the CUDA-only ones and the intrinsics.
// C23 added some CUDA names to <math.h> (rsqrt, sinpi, cospi): ours are
// renamed by macros so they never clash with a newer C library.
#define rsqrtf cudaemu_rsqrtf
#define rsqrt cudaemu_rsqrt
#define sinpif cudaemu_sinpif
#define cospif cudaemu_cospif
#define sinpi cudaemu_sinpi
#define cospi cudaemu_cospi
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float sinpif(float x) { return sinf(CUDART_PI_F * x); }
inline float cospif(float x) { return cosf(CUDART_PI_F * x); }
inline double sinpi(double x) { return sin(CUDART_PI * x); }
inline double cospi(double x) { return cos(CUDART_PI * x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.707106781186547524f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }
inline float erfcxf(float x) { return static_cast<float>(exp(static_cast<double>(x) * x) * erfc(static_cast<double>(x))); }
inline double erfinv(double y) {
  if (y <= -1.0) return y == -1.0 ? -CUDART_INF : CUDART_NAN;
  if (y >= 1.0) return y == 1.0 ? CUDART_INF : CUDART_NAN;
  // Giles' approximation refined with two Newton steps.
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 6.25) {
    w -= 3.125;
    x = -3.6444120640178196996e-21; x = -1.685059138182016589e-19 + x * w; x = 1.2858480715256400167e-18 + x * w;
    x = 1.115787767802518096e-17 + x * w; x = -1.333171662854620906e-16 + x * w; x = 2.0972767875968561637e-17 + x * w;
    x = 6.6376381343583238325e-15 + x * w; x = -4.0545662729752068639e-14 + x * w; x = -8.1519341976054721522e-14 + x * w;
    x = 2.6335093153082322977e-12 + x * w; x = -1.2975133253453532498e-11 + x * w; x = -5.4154120542946279317e-11 + x * w;
    x = 1.051212273321532285e-09 + x * w; x = -4.1126339803469836976e-09 + x * w; x = -2.9070369957882005086e-08 + x * w;
    x = 4.2347877827932403518e-07 + x * w; x = -1.3654692000834678645e-06 + x * w; x = -1.3882523362786468719e-05 + x * w;
    x = 0.0001867342080340571352 + x * w; x = -0.00074070253416626697512 + x * w; x = -0.0060336708714301490533 + x * w;
    x = 0.24015818242558961693 + x * w; x = 1.6536545626831027356 + x * w;
  } else if (w < 16.0) {
    w = sqrt(w) - 3.25;
    x = 2.2137376921775787049e-09; x = 9.0756561938885390979e-08 + x * w; x = -2.7517406297064545428e-07 + x * w;
    x = 1.8239629214389227755e-08 + x * w; x = 1.5027403968909827627e-06 + x * w; x = -4.013867526981545969e-06 + x * w;
    x = 2.9234449089955446044e-06 + x * w; x = 1.2475304481671778723e-05 + x * w; x = -4.7318229009055733981e-05 + x * w;
    x = 6.8284851459573175448e-05 + x * w; x = 2.4031110387097893999e-05 + x * w; x = -0.0003550375203628474796 + x * w;
    x = 0.00095328937973738049703 + x * w; x = -0.0016882755560235047313 + x * w; x = 0.0024914420961078508066 + x * w;
    x = -0.0037512085075692412107 + x * w; x = 0.005370914553590063617 + x * w; x = 1.0052589676941592334 + x * w;
    x = 3.0838856104922207635 + x * w;
  } else {
    w = sqrt(w) - 5.0;
    x = -2.7109920616438573243e-11; x = -2.5556418169965252055e-10 + x * w; x = 1.5076572693500548083e-09 + x * w;
    x = -3.7894654401267369937e-09 + x * w; x = 7.6157012080783393804e-09 + x * w; x = -1.4960026627149240478e-08 + x * w;
    x = 2.9147953450901080826e-08 + x * w; x = -6.7711997758452339498e-08 + x * w; x = 2.2900482228026654717e-07 + x * w;
    x = -9.9298272942317002539e-07 + x * w; x = 4.5260625972231537039e-06 + x * w; x = -1.9681778105531670567e-05 + x * w;
    x = 7.5995277030017761139e-05 + x * w; x = -0.00021503011930044477347 + x * w; x = -0.00013871931833623122026 + x * w;
    x = 1.0103004648645343977 + x * w; x = 4.8499064014085844221 + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; i++) x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
  return x;
}
inline float erfinvf(float y) { return static_cast<float>(erfinv(y)); }
inline double erfcinv(double y) { return -erfinv(y - 1.0); }
inline float erfcinvf(float y) { return static_cast<float>(erfcinv(y)); }
inline double normcdfinv(double p) { return -1.4142135623730951 * erfcinv(2.0 * p); }
inline float normcdfinvf(float p) { return static_cast<float>(normcdfinv(p)); }
inline float exp10f_(float x) { return powf(10.0f, x); }
inline float saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }
inline float __saturatef(float x) { return saturatef(x); }
inline float fdividef(float a, float b) { return a / b; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f_(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline double __dsqrt_rn(double x) { return sqrt(x); }

inline int __float_as_int(float x) { return cudaemu::bitcast<int>(x); }
inline unsigned __float_as_uint(float x) { return cudaemu::bitcast<unsigned>(x); }
inline float __int_as_float(int x) { return cudaemu::bitcast<float>(x); }
inline float __uint_as_float(unsigned x) { return cudaemu::bitcast<float>(x); }
inline long long __double_as_longlong(double x) { return cudaemu::bitcast<long long>(x); }
inline double __longlong_as_double(long long x) { return cudaemu::bitcast<double>(x); }
inline int __double2hiint(double x) { return static_cast<int>(cudaemu::bitcast<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(cudaemu::bitcast<unsigned long long>(x) & 0xffffffffu); }
inline double __hiloint2double(int hi, int lo) {
  return cudaemu::bitcast<double>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) | static_cast<unsigned>(lo));
}

namespace cudaemu {
// Float-to-integer conversions saturate and map NaN to 0, like the GPU.
template <class I, class F>
inline I sat_cvt(F r) {
  if (r != r) return 0;
  if (r <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}
}  // namespace cudaemu
#define CUDAEMU_CVT(name, I, F, round) \
  inline I name(F x) { return cudaemu::sat_cvt<I, F>(round(x)); }
CUDAEMU_CVT(__float2int_rn, int, float, nearbyintf)
CUDAEMU_CVT(__float2int_rz, int, float, truncf)
CUDAEMU_CVT(__float2int_rd, int, float, floorf)
CUDAEMU_CVT(__float2int_ru, int, float, ceilf)
CUDAEMU_CVT(__float2uint_rn, unsigned, float, nearbyintf)
CUDAEMU_CVT(__float2uint_rz, unsigned, float, truncf)
CUDAEMU_CVT(__float2uint_rd, unsigned, float, floorf)
CUDAEMU_CVT(__float2uint_ru, unsigned, float, ceilf)
CUDAEMU_CVT(__float2ll_rn, long long, float, nearbyintf)
CUDAEMU_CVT(__float2ll_rz, long long, float, truncf)
CUDAEMU_CVT(__float2ll_rd, long long, float, floorf)
CUDAEMU_CVT(__float2ll_ru, long long, float, ceilf)
CUDAEMU_CVT(__double2int_rn, int, double, nearbyint)
CUDAEMU_CVT(__double2int_rz, int, double, trunc)
CUDAEMU_CVT(__double2int_rd, int, double, floor)
CUDAEMU_CVT(__double2int_ru, int, double, ceil)
CUDAEMU_CVT(__double2ll_rn, long long, double, nearbyint)
CUDAEMU_CVT(__double2ll_rz, long long, double, trunc)
#undef CUDAEMU_CVT
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
inline float __ull2float_rn(unsigned long long x) { return static_cast<float>(x); }
inline double __int2double_rn(int x) { return static_cast<double>(x); }
inline double __ll2double_rn(long long x) { return static_cast<double>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }

// Integer intrinsics.
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) | __brev(static_cast<unsigned>(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; i++) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return static_cast<long long>((static_cast<__int128>(a) * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64); }
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __hadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b) >> 1); }
inline int __rhadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) + b + 1) >> 1); }
inline unsigned __sad(int a, int b, unsigned c) { return (a > b ? static_cast<unsigned>(a - b) : static_cast<unsigned>(b - a)) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (s & 31));
}
inline int __dp4a(int a, int b, int c) {
  int r = c;
  for (int i = 0; i < 4; i++) r += static_cast<signed char>(a >> (8 * i)) * static_cast<signed char>(b >> (8 * i));
  return r;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  unsigned r = c;
  for (int i = 0; i < 4; i++) r += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
  return r;
}
inline int __dp2a_lo(int a, int b, int c) {
  return c + static_cast<short>(a) * static_cast<signed char>(b) + static_cast<short>(a >> 16) * static_cast<signed char>(b >> 8);
}
inline int __dp2a_hi(int a, int b, int c) {
  return c + static_cast<short>(a) * static_cast<signed char>(b >> 16) + static_cast<short>(a >> 16) * static_cast<signed char>(b >> 24);
}
#define __builtin_assume(x) ((void)0)
#define __assume(x) ((void)0)
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) { return __funnelshift_l(lo, hi, s > 32 ? 32 : s); }
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) { return __funnelshift_r(lo, hi, s > 32 ? 32 : s); }

// CUDA's global min/max overloads. Same-type ones are non-templates so they
// win over std::min/std::max under `using namespace std`.
#define CUDAEMU_MINMAX(T) \
  inline T min(T a, T b) { return a < b ? a : b; } \
  inline T max(T a, T b) { return a > b ? a : b; }
CUDAEMU_MINMAX(int)
CUDAEMU_MINMAX(unsigned int)
CUDAEMU_MINMAX(long)
CUDAEMU_MINMAX(unsigned long)
CUDAEMU_MINMAX(long long)
CUDAEMU_MINMAX(unsigned long long)
CUDAEMU_MINMAX(short)
CUDAEMU_MINMAX(unsigned short)
CUDAEMU_MINMAX(signed char)
CUDAEMU_MINMAX(unsigned char)
#undef CUDAEMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && !std::is_same_v<A, B>>>
inline std::common_type_t<A, B> min(A a, B b) { using C = std::common_type_t<A, B>; return min(static_cast<C>(a), static_cast<C>(b)); }
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && !std::is_same_v<A, B>>>
inline std::common_type_t<A, B> max(A a, B b) { using C = std::common_type_t<A, B>; return max(static_cast<C>(a), static_cast<C>(b)); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }

// ---------------------------------------------------------------------------
// Vector types.
#define CUDAEMU_VEC(T, N1, N2, N3, N4, A2, A4)                                                           \
  struct N1 { T x; };                                                                                     \
  struct __attribute__((aligned(A2))) N2 { T x, y; };                                                     \
  struct N3 { T x, y, z; };                                                                               \
  struct __attribute__((aligned(A4))) N4 { T x, y, z, w; };                                               \
  inline N1 make_##N1(T x) { return N1{x}; }                                                              \
  inline N2 make_##N2(T x, T y) { return N2{x, y}; }                                                      \
  inline N3 make_##N3(T x, T y, T z) { return N3{x, y, z}; }                                              \
  inline N4 make_##N4(T x, T y, T z, T w) { return N4{x, y, z, w}; }
CUDAEMU_VEC(float, float1, float2, float3, float4, 8, 16)
CUDAEMU_VEC(int, int1, int2, int3, int4, 8, 16)
CUDAEMU_VEC(unsigned int, uint1, uint2, uint_3_, uint4, 8, 16)
CUDAEMU_VEC(signed char, char1, char2, char3, char4, 2, 4)
CUDAEMU_VEC(unsigned char, uchar1, uchar2, uchar3, uchar4, 2, 4)
CUDAEMU_VEC(short, short1, short2, short3, short4, 4, 8)
CUDAEMU_VEC(unsigned short, ushort1, ushort2, ushort3, ushort4, 4, 8)
CUDAEMU_VEC(long long, longlong1, longlong2, longlong3, longlong4, 16, 16)
CUDAEMU_VEC(unsigned long long, ulonglong1, ulonglong2, ulonglong3, ulonglong4, 16, 16)
CUDAEMU_VEC(double, double1, double2, double3, double4, 16, 16)
CUDAEMU_VEC(long, long1, long2, long3, long4, 16, 16)
CUDAEMU_VEC(unsigned long, ulong1, ulong2, ulong3, ulong4, 16, 16)
#undef CUDAEMU_VEC
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

// ---------------------------------------------------------------------------
// Half precision and bfloat16: storage structs, arithmetic through float,
// conversions round to nearest even. The operators are templates with a
// defaulted parameter so that a translation unit defining its own (as code
// built with -D__CUDA_NO_HALF_OPERATORS__ does) wins overload resolution
// instead of clashing.
namespace cudaemu {
inline unsigned short f2h_bits(float f) {
  unsigned x = bitcast<unsigned>(f);
  unsigned sign = (x >> 16) & 0x8000u;
  unsigned ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<unsigned short>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return static_cast<unsigned short>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                                      // subnormal half (or zero)
    if (ax < 0x33000000u) return static_cast<unsigned short>(sign);            // < 2^-25: rounds to 0
    unsigned e = ax >> 23;
    unsigned m = (ax & 0x7fffffu) | 0x800000u;
    unsigned shift = 126 - e;  // 14..24 + ...
    unsigned r = m >> shift;
    unsigned rem = m & ((1u << shift) - 1u);
    unsigned half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return static_cast<unsigned short>(sign | r);
  }
  unsigned r = ax - 0x38000000u;  // rebias exponent (127 -> 15)
  unsigned m = r >> 13;
  unsigned rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (m & 1u))) m++;
  return static_cast<unsigned short>(sign | m);
}
inline float h2f_bits(unsigned short h) {
  unsigned sign = static_cast<unsigned>(h & 0x8000u) << 16;
  unsigned e = (h >> 10) & 0x1fu;
  unsigned m = h & 0x3ffu;
  unsigned x;
  if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
  else if (e != 0) x = sign | ((e + 112u) << 23) | (m << 13);
  else if (m == 0) x = sign;
  else {
    int k = 0;
    while (!(m & 0x400u)) { m <<= 1; k++; }
    x = sign | ((113u - static_cast<unsigned>(k)) << 23) | ((m & 0x3ffu) << 13);
  }
  return bitcast<float>(x);
}
inline unsigned short f2bf_bits(float f) {
  unsigned x = bitcast<unsigned>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<unsigned short>(x >> 16);
}
inline float bf2f_bits(unsigned short b) { return bitcast<float>(static_cast<unsigned>(b) << 16); }
}  // namespace cudaemu

struct __half_raw { unsigned short x; };
// CUDAEMU_HALF_INTEROP adds conversions to and from the host library's
// half types (c10::Half, c10::BFloat16) in CUDAEMU_HOST_TORCH builds.
#ifndef CUDAEMU_HALF_INTEROP
#define CUDAEMU_HALF_INTEROP(H)
#endif
struct __nv_bfloat16_raw { unsigned short x; };

#define CUDAEMU_HALFLIKE(H, TOB, FROMB)                                                                        \
  struct __attribute__((aligned(2))) H {                                                                       \
    unsigned short __x;                                                                                        \
    H() = default;                                                                                             \
    constexpr H(const H##_raw& r) : __x(r.x) {}                                                                \
    H(float f) : __x(cudaemu::TOB(f)) {}                                                                       \
    H(double f) : __x(cudaemu::TOB(static_cast<float>(f))) {}                                                  \
    H(int v) : __x(cudaemu::TOB(static_cast<float>(v))) {}                                                     \
    H(unsigned v) : __x(cudaemu::TOB(static_cast<float>(v))) {}                                                \
    H(long long v) : __x(cudaemu::TOB(static_cast<float>(v))) {}                                               \
    H(unsigned long long v) : __x(cudaemu::TOB(static_cast<float>(v))) {}                                      \
    H(short v) : __x(cudaemu::TOB(static_cast<float>(v))) {}                                                   \
    H(unsigned short v) : __x(cudaemu::TOB(static_cast<float>(v))) {}                                          \
    operator float() const { return cudaemu::FROMB(__x); }                                                     \
    operator H##_raw() const { return H##_raw{__x}; }                                                          \
    CUDAEMU_HALF_INTEROP(H)                                                                                    \
    H& operator=(float f) { __x = cudaemu::TOB(f); return *this; }                                             \
    H& operator=(double f) { __x = cudaemu::TOB(static_cast<float>(f)); return *this; }                        \
    H& operator=(const H##_raw& r) { __x = r.x; return *this; }                                                \
  };                                                                                                           \
  template <class D_ = void> inline H operator+(const H& a, const H& b) { return H(float(a) + float(b)); }                                \
  template <class D_ = void> inline H operator-(const H& a, const H& b) { return H(float(a) - float(b)); }                                \
  template <class D_ = void> inline H operator*(const H& a, const H& b) { return H(float(a) * float(b)); }                                \
  template <class D_ = void> inline H operator/(const H& a, const H& b) { return H(float(a) / float(b)); }                                \
  template <class D_ = void> inline H operator-(const H& a) { H r; r.__x = static_cast<unsigned short>(a.__x ^ 0x8000u); return r; }      \
  template <class D_ = void> inline H operator+(const H& a) { return a; }                                                                 \
  template <class D_ = void> inline H& operator+=(H& a, const H& b) { a = a + b; return a; }                                              \
  template <class D_ = void> inline H& operator-=(H& a, const H& b) { a = a - b; return a; }                                              \
  template <class D_ = void> inline H& operator*=(H& a, const H& b) { a = a * b; return a; }                                              \
  template <class D_ = void> inline H& operator/=(H& a, const H& b) { a = a / b; return a; }                                              \
  template <class D_ = void> inline H& operator++(H& a) { a = a + H(1.0f); return a; }                                                    \
  template <class D_ = void> inline H& operator--(H& a) { a = a - H(1.0f); return a; }                                                    \
  template <class D_ = void> inline bool operator==(const H& a, const H& b) { return float(a) == float(b); }                              \
  template <class D_ = void> inline bool operator!=(const H& a, const H& b) { return float(a) != float(b); }                              \
  template <class D_ = void> inline bool operator<(const H& a, const H& b) { return float(a) < float(b); }                                \
  template <class D_ = void> inline bool operator>(const H& a, const H& b) { return float(a) > float(b); }                                \
  template <class D_ = void> inline bool operator<=(const H& a, const H& b) { return float(a) <= float(b); }                              \
  template <class D_ = void> inline bool operator>=(const H& a, const H& b) { return float(a) >= float(b); }

CUDAEMU_HALFLIKE(__half, f2h_bits, h2f_bits)
CUDAEMU_HALFLIKE(__nv_bfloat16, f2bf_bits, bf2f_bits)
#undef CUDAEMU_HALFLIKE
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

struct __attribute__((aligned(4))) __half2 {
  __half x, y;
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;
template <> struct cudaemu::abi::is_vector<float1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<float2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<float3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<float4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<int1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<int2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<int3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<int4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uint1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uint2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uint4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<char1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<char2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<char3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<char4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uchar1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uchar2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uchar3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uchar4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<short1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<short2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<short3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<short4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ushort1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ushort2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ushort3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ushort4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<longlong1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<longlong2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<longlong3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<longlong4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulonglong1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulonglong2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulonglong3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulonglong4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<double1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<double2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<double3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<double4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<long1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<long2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<long3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<long4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulong1> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulong2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulong3> : std::true_type {};
template <> struct cudaemu::abi::is_vector<ulong4> : std::true_type {};
template <> struct cudaemu::abi::is_vector<uint_3_> : std::true_type {};
template <> struct cudaemu::abi::is_vector<__half2> : std::true_type {};
template <> struct cudaemu::abi::is_vector<__nv_bfloat162> : std::true_type {};

// Conversions.
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __half __int2half_rn(int v) { return __half(static_cast<float>(v)); }
inline int __half2int_rn(__half h) { return __float2int_rn(float(h)); }
inline int __half2int_rz(__half h) { return __float2int_rz(float(h)); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline __half __ushort_as_half(unsigned short v) { __half h; h.__x = v; return h; }
inline __half __short_as_half(short v) { __half h; h.__x = static_cast<unsigned short>(v); return h; }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 make_half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __float2half2_rn(float f) { return __half2{__half(f), __half(f)}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float22half2_rn(float2 v) { return __half2{__half(v.x), __half(v.y)}; }
inline float2 __half22float2(__half2 v) { return float2{float(v.x), float(v.y)}; }
inline __half2 __half2half2(__half a) { return __half2{a, a}; }
inline __half __low2half(__half2 v) { return v.x; }
inline __half __high2half(__half2 v) { return v.y; }
inline float __low2float(__half2 v) { return float(v.x); }
inline float __high2float(__half2 v) { return float(v.y); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2{a.x, b.x}; }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2{a.y, b.y}; }

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rz(float f) {
  __nv_bfloat16 b;
  unsigned x = cudaemu::bitcast<unsigned>(f);
  b.__x = ((x & 0x7fffffffu) > 0x7f800000u) ? static_cast<unsigned short>((x >> 16) | 0x40u) : static_cast<unsigned short>(x >> 16);
  return b;
}
inline __nv_bfloat16 __double2bfloat16(double f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __nv_bfloat16(static_cast<float>(v)); }
inline int __bfloat162int_rn(__nv_bfloat16 h) { return __float2int_rn(float(h)); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return static_cast<short>(h.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short v) { __nv_bfloat16 h; h.__x = v; return h; }
inline __nv_bfloat16 __short_as_bfloat16(short v) { __nv_bfloat16 h; h.__x = static_cast<unsigned short>(v); return h; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162{a, b}; }
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162{a, b}; }
inline __nv_bfloat162 __float2bfloat162_rn(float f) { return __nv_bfloat162{__nv_bfloat16(f), __nv_bfloat16(f)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 v) { return __nv_bfloat162{__nv_bfloat16(v.x), __nv_bfloat16(v.y)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 v) { return float2{float(v.x), float(v.y)}; }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162{a, a}; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 v) { return v.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 v) { return v.y; }
inline float __low2float(__nv_bfloat162 v) { return float(v.x); }
inline float __high2float(__nv_bfloat162 v) { return float(v.y); }
inline __half __float2half_rz(float f) {
  // Truncate the magnitude: round to nearest even, step back if that rounded up.
  __half h(f);
  float back = float(h);
  if (fabsf(back) > fabsf(f) && !isinf(f)) h.__x = static_cast<unsigned short>(h.__x - 1u);
  return h;
}

// Half/bfloat16 arithmetic functions (scalar and paired), through float.
#define CUDAEMU_H_ARITH(H, H2)                                                                                    \
  inline H __hadd(H a, H b) { return a + b; }                                                                     \
  inline H __hsub(H a, H b) { return a - b; }                                                                     \
  inline H __hmul(H a, H b) { return a * b; }                                                                     \
  inline H __hdiv(H a, H b) { return a / b; }                                                                     \
  inline H __hneg(H a) { return -a; }                                                                             \
  inline H __habs(H a) { H r; r.__x = static_cast<unsigned short>(a.__x & 0x7fffu); return r; }                 \
  inline H __hfma(H a, H b, H c) { return H(static_cast<float>(static_cast<double>(float(a)) * float(b) + float(c))); } \
  inline H __hadd_sat(H a, H b) { return H(saturatef(float(a) + float(b))); }                                     \
  inline H __hmul_sat(H a, H b) { return H(saturatef(float(a) * float(b))); }                                     \
  inline H __hmax(H a, H b) { return H(fmaxf(float(a), float(b))); }                                             \
  inline H __hmin(H a, H b) { return H(fminf(float(a), float(b))); }                                             \
  inline H __hmax_nan(H a, H b) { float x = a, y = b; return (x != x || y != y) ? H(CUDART_NAN_F) : H(fmaxf(x, y)); } \
  inline H __hmin_nan(H a, H b) { float x = a, y = b; return (x != x || y != y) ? H(CUDART_NAN_F) : H(fminf(x, y)); } \
  inline bool __heq(H a, H b) { return a == b; }                                                                  \
  inline bool __hne(H a, H b) { return a != b; }                                                                  \
  inline bool __hlt(H a, H b) { return a < b; }                                                                   \
  inline bool __hle(H a, H b) { return a <= b; }                                                                  \
  inline bool __hgt(H a, H b) { return a > b; }                                                                   \
  inline bool __hge(H a, H b) { return a >= b; }                                                                  \
  inline bool __hisnan(H a) { float x = a; return x != x; }                                                       \
  inline int __hisinf(H a) { float x = a; return isinf(x) ? (x < 0 ? -1 : 1) : 0; }                              \
  inline H hexp(H a) { return H(expf(float(a))); }                                                                \
  inline H hexp2(H a) { return H(exp2f(float(a))); }                                                              \
  inline H hexp10(H a) { return H(powf(10.0f, float(a))); }                                                       \
  inline H hlog(H a) { return H(logf(float(a))); }                                                                \
  inline H hlog2(H a) { return H(log2f(float(a))); }                                                              \
  inline H hlog10(H a) { return H(log10f(float(a))); }                                                            \
  inline H hsqrt(H a) { return H(sqrtf(float(a))); }                                                              \
  inline H hrsqrt(H a) { return H(1.0f / sqrtf(float(a))); }                                                      \
  inline H hrcp(H a) { return H(1.0f / float(a)); }                                                               \
  inline H hsin(H a) { return H(sinf(float(a))); }                                                                \
  inline H hcos(H a) { return H(cosf(float(a))); }                                                                \
  inline H htanh(H a) { return H(tanhf(float(a))); }                                                              \
  inline H hfloor(H a) { return H(floorf(float(a))); }                                                            \
  inline H hceil(H a) { return H(ceilf(float(a))); }                                                              \
  inline H htrunc(H a) { return H(truncf(float(a))); }                                                            \
  inline H hrint(H a) { return H(rintf(float(a))); }                                                              \
  inline H2 __hadd2(H2 a, H2 b) { return H2{a.x + b.x, a.y + b.y}; }                                              \
  inline H2 __hsub2(H2 a, H2 b) { return H2{a.x - b.x, a.y - b.y}; }                                              \
  inline H2 __hmul2(H2 a, H2 b) { return H2{a.x * b.x, a.y * b.y}; }                                              \
  inline H2 __h2div(H2 a, H2 b) { return H2{a.x / b.x, a.y / b.y}; }                                              \
  inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }               \
  inline H2 __hneg2(H2 a) { return H2{-a.x, -a.y}; }                                                              \
  inline H2 __habs2(H2 a) { return H2{__habs(a.x), __habs(a.y)}; }                                                \
  inline H2 __hmax2(H2 a, H2 b) { return H2{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }                                \
  inline H2 __hmin2(H2 a, H2 b) { return H2{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }                                \
  inline H2 h2exp(H2 a) { return H2{hexp(a.x), hexp(a.y)}; }                                                      \
  inline H2 h2log(H2 a) { return H2{hlog(a.x), hlog(a.y)}; }                                                      \
  inline H2 h2sqrt(H2 a) { return H2{hsqrt(a.x), hsqrt(a.y)}; }                                                   \
  inline H2 h2rsqrt(H2 a) { return H2{hrsqrt(a.x), hrsqrt(a.y)}; }                                                \
  template <class D_ = void> inline H2 operator+(const H2& a, const H2& b) { return __hadd2(a, b); }                                         \
  template <class D_ = void> inline H2 operator-(const H2& a, const H2& b) { return __hsub2(a, b); }                                         \
  template <class D_ = void> inline H2 operator*(const H2& a, const H2& b) { return __hmul2(a, b); }                                         \
  template <class D_ = void> inline H2 operator/(const H2& a, const H2& b) { return __h2div(a, b); }                                         \
  template <class D_ = void> inline H2& operator+=(H2& a, const H2& b) { a = a + b; return a; }                                              \
  template <class D_ = void> inline H2& operator*=(H2& a, const H2& b) { a = a * b; return a; }
CUDAEMU_H_ARITH(__half, __half2)
CUDAEMU_H_ARITH(__nv_bfloat16, __nv_bfloat162)
#undef CUDAEMU_H_ARITH

// Shuffles of half2 and friends go through the generic templates (4 bytes).



// ---------------------------------------------------------------------------
// Device-side PyTorch names that kernels written for torch extensions use:
// c10::Half / c10::BFloat16 (arithmetic with float promotes to float, as in
// c10/util/Half-inl.h), at::acc_type / at::opmath_type, and common macros.
#if !defined(CUDAEMU_HOST_TORCH)  // a host build uses the real c10 headers
namespace c10 {
#define CUDAEMU_C10_FLOAT(NAME, RAW)                                                                          \
  struct alignas(2) NAME {                                                                                    \
    unsigned short x;                                                                                         \
    NAME() = default;                                                                                         \
    NAME(float f) : x(RAW(f).__x) {}                                                                          \
    NAME(double f) : x(RAW(static_cast<float>(f)).__x) {}                                                     \
    NAME(int v) : x(RAW(static_cast<float>(v)).__x) {}                                                        \
    NAME(long long v) : x(RAW(static_cast<float>(v)).__x) {}                                                  \
    NAME(const RAW& h) : x(h.__x) {}                                                                          \
    operator float() const { RAW h; h.__x = x; return float(h); }                                             \
    operator RAW() const { RAW h; h.__x = x; return h; }                                                      \
  };                                                                                                          \
  template <class D_ = void> inline NAME operator+(const NAME& a, const NAME& b) { return NAME(float(a) + float(b)); } \
  template <class D_ = void> inline NAME operator-(const NAME& a, const NAME& b) { return NAME(float(a) - float(b)); } \
  template <class D_ = void> inline NAME operator*(const NAME& a, const NAME& b) { return NAME(float(a) * float(b)); } \
  template <class D_ = void> inline NAME operator/(const NAME& a, const NAME& b) { return NAME(float(a) / float(b)); } \
  template <class D_ = void> inline NAME operator-(const NAME& a) { return NAME(-float(a)); }                 \
  template <class D_ = void> inline NAME& operator+=(NAME& a, const NAME& b) { a = a + b; return a; }         \
  template <class D_ = void> inline NAME& operator-=(NAME& a, const NAME& b) { a = a - b; return a; }         \
  template <class D_ = void> inline NAME& operator*=(NAME& a, const NAME& b) { a = a * b; return a; }         \
  template <class D_ = void> inline NAME& operator/=(NAME& a, const NAME& b) { a = a / b; return a; }         \
  inline float operator+(NAME a, float b) { return float(a) + b; }                                            \
  inline float operator-(NAME a, float b) { return float(a) - b; }                                            \
  inline float operator*(NAME a, float b) { return float(a) * b; }                                            \
  inline float operator/(NAME a, float b) { return float(a) / b; }                                            \
  inline float operator+(float a, NAME b) { return a + float(b); }                                            \
  inline float operator-(float a, NAME b) { return a - float(b); }                                            \
  inline float operator*(float a, NAME b) { return a * float(b); }                                            \
  inline float operator/(float a, NAME b) { return a / float(b); }                                            \
  inline double operator+(NAME a, double b) { return double(float(a)) + b; }                                  \
  inline double operator-(NAME a, double b) { return double(float(a)) - b; }                                  \
  inline double operator*(NAME a, double b) { return double(float(a)) * b; }                                  \
  inline double operator/(NAME a, double b) { return double(float(a)) / b; }                                  \
  inline double operator+(double a, NAME b) { return a + double(float(b)); }                                 \
  inline double operator-(double a, NAME b) { return a - double(float(b)); }                                  \
  inline double operator*(double a, NAME b) { return a * double(float(b)); }                                  \
  inline double operator/(double a, NAME b) { return a / double(float(b)); }                                  \
  inline NAME operator+(NAME a, int b) { return a + NAME(b); }                                                \
  inline NAME operator-(NAME a, int b) { return a - NAME(b); }                                                \
  inline NAME operator*(NAME a, int b) { return a * NAME(b); }                                                \
  inline NAME operator/(NAME a, int b) { return a / NAME(b); }                                                \
  inline NAME operator+(int a, NAME b) { return NAME(a) + b; }                                                \
  inline NAME operator-(int a, NAME b) { return NAME(a) - b; }                                                \
  inline NAME operator*(int a, NAME b) { return NAME(a) * b; }                                                \
  inline NAME operator/(int a, NAME b) { return NAME(a) / b; }                                                \
  inline float& operator+=(float& a, const NAME& b) { return a += float(b); }                                 \
  inline float& operator-=(float& a, const NAME& b) { return a -= float(b); }                                 \
  inline float& operator*=(float& a, const NAME& b) { return a *= float(b); }                                 \
  inline float& operator/=(float& a, const NAME& b) { return a /= float(b); }
CUDAEMU_C10_FLOAT(Half, __half)
CUDAEMU_C10_FLOAT(BFloat16, __nv_bfloat16)
#undef CUDAEMU_C10_FLOAT
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <> struct OpMath<__half> { using type = float; };
template <> struct OpMath<__nv_bfloat16> { using type = float; };
}  // namespace c10
namespace at {
using c10::BFloat16;
using c10::Half;
template <class T, bool is_cuda = true> struct AccumulateType { using type = typename c10::OpMath<T>::type; };
template <bool is_cuda> struct AccumulateType<float, is_cuda> { using type = float; };
template <bool is_cuda> struct AccumulateType<double, is_cuda> { using type = double; };
template <bool is_cuda> struct AccumulateType<int, is_cuda> { using type = long long; };
template <bool is_cuda> struct AccumulateType<long long, is_cuda> { using type = long long; };
template <bool is_cuda> struct AccumulateType<long, is_cuda> { using type = long long; };
template <class T, bool is_cuda = true> using acc_type = typename AccumulateType<T, is_cuda>::type;
template <class T> using opmath_type = typename c10::OpMath<T>::type;
}  // namespace at
#define C10_HOST_DEVICE
#define C10_DEVICE
#define C10_HOST
#define C10_UNUSED __attribute__((unused))
#define C10_LIKELY(x) __builtin_expect(!!(x), 1)
#define C10_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define C10_LAUNCH_BOUNDS_0
#define C10_LAUNCH_BOUNDS_1(x)
#define C10_LAUNCH_BOUNDS_2(x, y)
#define C10_WARP_SIZE 32
#define C10_RESTRICT __restrict
#define __ubsan_ignore_float_divide_by_zero__
#define __ubsan_ignore_undefined__
#define __ubsan_ignore_signed_int_overflow__
#define __ubsan_ignore_function__
#endif  // !CUDAEMU_HOST_TORCH
#undef CUDA_KERNEL_ASSERT
#define CUDA_KERNEL_ASSERT(cond) assert(cond)
#ifndef CUDA_KERNEL_LOOP
#define CUDA_KERNEL_LOOP(i, n) \
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < (n); i += static_cast<int>(blockDim.x * gridDim.x))
#endif

// ---------------------------------------------------------------------------
// cooperative_groups: thread blocks and warp tiles (grid and multi-grid
// groups are unsupported: all blocks would have to be resident at once).
namespace cooperative_groups {
struct thread_block {
  void sync() const { __syncthreads(); }
  unsigned thread_rank() const { return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x; }
  unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  unsigned num_threads() const { return size(); }
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
  static void barrier_wait() { __syncthreads(); }
};
inline thread_block this_thread_block() { return thread_block{}; }
inline void sync(const thread_block& g) { g.sync(); }

template <unsigned N, class Parent = void>
struct thread_block_tile {
  static_assert(N > 0 && N <= 32 && (N & (N - 1)) == 0, "cudaemu: thread_block_tile size must be a power of two <= 32");
  thread_block_tile() = default;
  template <class P2> thread_block_tile(const thread_block_tile<N, P2>&) {}
  static unsigned lane() { return static_cast<unsigned>(cudaemu::emu().cur ? cudaemu::emu().cur->linear & 31 : 0); }
  static unsigned mask() { return N == 32 ? 0xffffffffu : (((1u << N) - 1u) << (lane() & ~(N - 1))); }
  void sync() const { __syncwarp(mask()); }
  unsigned thread_rank() const { return lane() & (N - 1); }
  static constexpr unsigned size() { return N; }
  static constexpr unsigned num_threads() { return N; }
  unsigned meta_group_rank() const { return static_cast<unsigned>(cudaemu::emu().cur ? cudaemu::emu().cur->linear : 0) / N; }
  unsigned meta_group_size() const { return (blockDim.x * blockDim.y * blockDim.z + N - 1) / N; }
  template <class T> T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, N); }
  template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(mask(), v, d, N); }
  template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(mask(), v, d, N); }
  template <class T> T shfl_xor(T v, int m) const { return __shfl_xor_sync(mask(), v, m, N); }
  int any(int p) const { return __any_sync(mask(), p); }
  int all(int p) const { return __all_sync(mask(), p); }
  unsigned ballot(int p) const { return (__ballot_sync(mask(), p) >> (lane() & ~(N - 1))) & (N == 32 ? 0xffffffffu : ((1u << N) - 1u)); }
  template <class T> unsigned match_any(T v) const { return __match_any_sync(mask(), v) >> (lane() & ~(N - 1)); }
};
template <unsigned N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>{}; }
template <unsigned N, class P> inline void sync(const thread_block_tile<N, P>& g) { g.sync(); }

template <class T> struct plus { T operator()(const T& a, const T& b) const { return a + b; } };
template <class T> struct less { T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(const T& a, const T& b) const { return a & b; } };
template <class T> struct bit_or { T operator()(const T& a, const T& b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(const T& a, const T& b) const { return a ^ b; } };

// reduce over a tile (butterfly, every lane gets the result).
template <unsigned N, class P, class T, class Op>
inline T reduce(const thread_block_tile<N, P>& g, T v, Op op) {
  for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, static_cast<int>(o)));
  return v;
}
template <unsigned N, class P, class T, class Op>
inline T inclusive_scan(const thread_block_tile<N, P>& g, T v, Op op) {
  for (unsigned o = 1; o < N; o <<= 1) {
    T t = g.shfl_up(v, o);
    if (g.thread_rank() >= o) v = op(v, t);
  }
  return v;
}
template <unsigned N, class P, class T>
inline T inclusive_scan(const thread_block_tile<N, P>& g, T v) { return inclusive_scan(g, v, plus<T>()); }
template <unsigned N, class P, class T, class Op>
inline T exclusive_scan(const thread_block_tile<N, P>& g, T v, Op op) {
  T inc = inclusive_scan(g, v, op);
  T prev = g.shfl_up(inc, 1);
  return g.thread_rank() == 0 ? T{} : prev;
}
template <unsigned N, class P, class T>
inline T exclusive_scan(const thread_block_tile<N, P>& g, T v) { return exclusive_scan(g, v, plus<T>()); }

template <class T = void> inline int this_grid() {
  static_assert(cudaemu::unsupported<T>, "cudaemu: unsupported construct: cooperative grid sync (cooperative_groups::this_grid)");
  return 0;
}
template <class T = void> inline int this_multi_grid() {
  static_assert(cudaemu::unsupported<T>, "cudaemu: unsupported construct: cooperative multi-grid sync (this_multi_grid)");
  return 0;
}
}  // namespace cooperative_groups

// ---------------------------------------------------------------------------
// Constructs the emulator cannot run: using them is a compile-time error that
// names the construct.
struct cudaTextureObject_t_ { unsigned long long v; };
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
#define CUDAEMU_UNSUPPORTED(name, what)                                                                 \
  template <class... A> inline int name(A...) {                                                         \
    static_assert(cudaemu::unsupported<A...>, "cudaemu: unsupported construct: " what);                 \
    return 0;                                                                                           \
  }
CUDAEMU_UNSUPPORTED(tex1Dfetch, "texture fetch tex1Dfetch (texture objects/references)")
CUDAEMU_UNSUPPORTED(tex1D, "texture fetch tex1D (texture objects/references)")
CUDAEMU_UNSUPPORTED(tex2D, "texture fetch tex2D (texture objects/references)")
CUDAEMU_UNSUPPORTED(tex3D, "texture fetch tex3D (texture objects/references)")
CUDAEMU_UNSUPPORTED(tex1DLayered, "texture fetch tex1DLayered (texture objects/references)")
CUDAEMU_UNSUPPORTED(tex2DLayered, "texture fetch tex2DLayered (texture objects/references)")
CUDAEMU_UNSUPPORTED(surf1Dread, "surface access surf1Dread")
CUDAEMU_UNSUPPORTED(surf1Dwrite, "surface access surf1Dwrite")
CUDAEMU_UNSUPPORTED(surf2Dread, "surface access surf2Dread")
CUDAEMU_UNSUPPORTED(surf2Dwrite, "surface access surf2Dwrite")
CUDAEMU_UNSUPPORTED(cudaLaunchDevice, "dynamic parallelism (cudaLaunchDevice)")
#if !defined(CUDAEMU_HOST)  // host builds define the runtime's cudaDeviceSynchronize
CUDAEMU_UNSUPPORTED(cudaDeviceSynchronize, "dynamic parallelism (device-side cudaDeviceSynchronize)")
#endif
#undef CUDAEMU_UNSUPPORTED
template <class T = void> inline long long clock64() {
  static_assert(cudaemu::unsupported<T>, "cudaemu: unsupported construct: clock64() (cycle-counter timing)");
  return 0;
}
template <class T = void> inline long long __globaltimer() {
  static_assert(cudaemu::unsupported<T>, "cudaemu: unsupported construct: __globaltimer() (timing)");
  return 0;
}

#endif  // PALLASIFY_CUDAEMU_H
