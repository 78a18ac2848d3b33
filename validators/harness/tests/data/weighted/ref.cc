// The kernel as the repository has it: an optional weight tested against NULL
// (mmcv's focal losses pass an empty tensor's data_ptr() when there is none).
#include <cstddef>
extern "C" int pallasify_launch(void **args, const long long *launch, char *err, int errlen) {
  int n = *(const int *)args[0];
  const float *x = (const float *)args[1];
  const float *weight = (const float *)args[2];
  float *out = (float *)args[3];
  for (int i = 0; i < n; i++) out[i] = weight != NULL ? x[i] * weight[i] : 2.0f * x[i];
  return 0;
}
extern "C" const char *pallasify_kernel_name(void) { return "weighted_kernel"; }
