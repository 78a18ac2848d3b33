// Loops the rule drafter refuses with PPL007 (TestLoopRefusals): each kernel is one reason. They share one
// signature: n elements, a window of k, data x, an int table cnt, an output out.
#include <torch/extension.h>

// the trip count is loaded data (roi_align's bin grid without a sampling ratio): no static bound
__global__ void data_trip_kernel(const int n, const int k, const float* x, const int* cnt, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = 0.0f;
    for (int j = 0; j < cnt[i]; j++) {
      s += x[i];
    }
    out[i] = s;
  }
}

// break ends the thread's loop early
__global__ void break_kernel(const int n, const int k, const float* x, const int* cnt, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = 0.0f;
    for (int j = 0; j < k; j++) {
      if (x[i] > j) {
        break;
      }
      s += 1.0f;
    }
    out[i] = s;
  }
}

// the end moves with the thread and is not clamped by a uniform bound
__global__ void unclamped_kernel(const int n, const int k, const float* x, const int* cnt, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = 0.0f;
    for (int j = 0; j < i % k; j++) {
      s += x[j];
    }
    out[i] = s;
  }
}

// a store inside the loop under a data-dependent condition
__global__ void data_store_kernel(const int n, const int k, const float* x, const int* cnt, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 0; j < k; j++) {
      if (x[i] > 0.0f) {
        out[i * k + j] = x[i];
      }
    }
  }
}

// return inside the loop
__global__ void return_kernel(const int n, const int k, const float* x, const int* cnt, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 0; j < k; j++) {
      out[i] = x[j];
      return;
    }
  }
}

// drafted, but every thread writes the same k elements: the draft's run() must raise, not pick an order
__global__ void overlap_kernel(const int n, const int k, const float* x, const int* cnt, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 0; j < k; j++) {
      out[j] = x[i];
    }
  }
}
