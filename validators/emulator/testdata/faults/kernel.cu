// Kernels that fault or never finish: each launch must fail with a message,
// and the process must survive to run the next one.
__global__ void oob_write(float* y, long long stride) {
  y[(long long)threadIdx.x * stride] = 1.0f;  // far outside any allocation
}
__global__ void spin_wait(volatile int* flag, float* y) {
  if (threadIdx.x == 0) {
    while (*flag == 0) {}  // waits for thread 1, which never runs: no preemption
  }
  if (threadIdx.x == 1) *flag = 1;
  y[threadIdx.x] = 1.0f;
}
__device__ __noinline__ int deep(int d, volatile char* sink) {
  volatile char big[4096];
  big[d & 4095] = (char)d;
  int r = d == 0 ? 0 : deep(d - 1, sink);
  sink[0] = big[(d * 7) & 4095];
  return r + 1;
}
__global__ void stack_overflow(char* sink) { deep(1 << 20, sink); }
__global__ void div_zero(int* y, int z) { y[threadIdx.x] = 10 / z; }
__global__ void fine(float* y) { y[threadIdx.x] = 2.0f; }
__global__ void trap_kernel(float* y) { if (threadIdx.x == 3) __trap(); y[threadIdx.x] = 1.0f; }
__global__ void assert_kernel(const float* x) { assert(x[threadIdx.x] >= 0.0f); }
