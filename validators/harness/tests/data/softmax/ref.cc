// Plain-loop row softmax implementing the pallasify_launch ABI.
#include <cmath>
extern "C" int pallasify_launch(void **args, const long long *launch, char *err, int errlen) {
  (void)launch; (void)err; (void)errlen;
  const float *x = (const float *)args[0];
  float *out = (float *)args[1];
  int rows = *(const int *)args[2], cols = *(const int *)args[3];
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (long)r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; c++) m = fmaxf(m, xr[c]);
    float s = 0.f;
    for (int c = 0; c < cols; c++) s += expf(xr[c] - m);
    for (int c = 0; c < cols; c++) out[(long)r * cols + c] = expf(xr[c] - m) / s;
  }
  return 0;
}
extern "C" const char *pallasify_kernel_name(void) { return "softmax_rows"; }
