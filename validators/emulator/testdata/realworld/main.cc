int main() {
  char err[512] = "";
  {
    const int n1 = 7, n2 = 203;
    float *x = new float[n1 * n2], *g = new float[n2], *b = new float[n2], *y = new float[n1 * n2], mean[n1], rstd[n1];
    for (int i = 0; i < n1 * n2; i++) x[i] = sinf(i * 0.37f) * 3.0f + (i / n2);
    for (int j = 0; j < n2; j++) { g[j] = 1.0f + j * 0.001f; b[j] = j * 0.01f; }
    int rc = cudaemu::launch(dim3(3), dim3(32, 4), 0, [&] { layer_norm_fwd<float, float>(x, g, b, y, mean, rstd, n1, n2, 1e-5f); }, err, sizeof err);
    CHECK(rc == 0, "layer_norm: %s", err);
    for (int r = 0; r < n1; r++) {
      double mu = 0, var = 0;
      for (int j = 0; j < n2; j++) mu += x[r * n2 + j];
      mu /= n2;
      for (int j = 0; j < n2; j++) var += (x[r * n2 + j] - mu) * (x[r * n2 + j] - mu);
      var /= n2;
      CHECK(fabs(mean[r] - mu) < 1e-5 * (1 + fabs(mu)), "mean[%d] got %g want %g", r, mean[r], mu);
      double rs = 1.0 / sqrt(var + 1e-5);
      CHECK(fabs(rstd[r] - rs) < 1e-5 * rs, "rstd[%d] got %g want %g", r, rstd[r], rs);
      for (int j = 0; j < n2; j++) {
        double want = g[j] * (x[r * n2 + j] - mu) * rs + b[j];
        CHECK(fabs(y[r * n2 + j] - want) < 2e-5 * (1 + fabs(want)), "y[%d,%d] got %g want %g", r, j, y[r * n2 + j], want);
      }
    }
  }
  {
    const int n = 1001;
    at::Half* p = new at::Half[n];
    at::Half* g = new at::Half[n];
    float *m = new float[n](), *v = new float[n]();
    for (int i = 0; i < n; i++) { p[i] = at::Half(0.5f + i * 0.001f); g[i] = at::Half((i % 7) * 0.1f - 0.3f); }
    int rc = cudaemu::launch(dim3((n + 127) / 128), dim3(128), 0, [&] { adam_step<at::Half>(p, g, m, v, 1e-2f, 0.9f, 0.999f, 1e-8f, 1, (int64_t)n); }, err, sizeof err);
    CHECK(rc == 0, "adam: %s", err);
    for (int i = 0; i < n; i++) {
      float gr = float(g[i]);
      float want = 0.5f + i * 0.001f;
      if (gr != 0.0f) want -= 1e-2f * (gr > 0 ? 1.0f : -1.0f);
      CHECK(fabsf(float(p[i]) - float(at::Half(want))) <= 2e-3f, "adam p[%d] got %g want %g", i, float(p[i]), want);
    }
  }
  {
    const int n = 37;
    __half x[n], y[n];
    for (int i = 0; i < n; i++) { x[i] = __float2half(i * 0.5f); y[i] = __float2half(1.0f); }
    int rc = cudaemu::launch(dim3(1), dim3(32), 0, [&] { half2_axpy(x, y, 2.0f, n); }, err, sizeof err);
    CHECK(rc == 0, "half2: %s", err);
    for (int i = 0; i < n; i++) CHECK(__half2float(y[i]) == i * 1.0f + 1.0f, "half2 y[%d] got %g", i, __half2float(y[i]));
  }
  {
    const int n4 = 1000;
    alignas(16) static float x[4 * n4];
    for (int i = 0; i < 4 * n4; i++) x[i] = (float)((i * 7919) % 4001) * 0.25f;
    float out = 0.0f;
    int rc = cudaemu::launch(dim3(4), dim3(64), 0, [&] { float4_max(x, &out, n4); }, err, sizeof err);
    CHECK(rc == 0 && out == 1000.0f, "float4 max got %g (%s)", out, err);
  }
  return 0;
}
