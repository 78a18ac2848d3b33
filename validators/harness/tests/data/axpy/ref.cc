// Plain-loop reference for axpy implementing the pallasify_launch ABI.
#include <cstdio>
extern "C" int pallasify_launch(void **args, const long long *launch, char *err, int errlen) {
  const float *x = (const float *)args[0];
  const float *y = (const float *)args[1];
  float *out = (float *)args[2];
  float alpha = *(const float *)args[3];
  int n = *(const int *)args[4];
  long long threads = launch[0] * launch[3];
  if (threads < n) { snprintf(err, errlen, "grid too small: %lld threads for n=%d", threads, n); return 1; }
  for (int i = 0; i < n; i++) out[i] = alpha * x[i] + y[i];
  return 0;
}
extern "C" const char *pallasify_kernel_name(void) { return "axpy_kernel"; }
