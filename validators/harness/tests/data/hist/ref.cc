// Plain-loop histogram (the CUDA original uses atomicAdd) for the pallasify_launch ABI.
extern "C" int pallasify_launch(void **args, const long long *launch, char *err, int errlen) {
  (void)launch; (void)err; (void)errlen;
  const int *data = (const int *)args[0];
  int *bins = (int *)args[1];
  int n = *(const int *)args[2];
  for (int i = 0; i < n; i++) bins[data[i]] += 1;
  return 0;
}
extern "C" const char *pallasify_kernel_name(void) { return "histogram16"; }
