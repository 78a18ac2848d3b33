#include <chrono>
int main() {
  const int M = 256, N = 256, K = 256;
  float *A = new float[M * K], *B = new float[K * N], *C = new float[M * N];
  for (int i = 0; i < M * K; i++) A[i] = (float)((i * 37 % 101) - 50) / 64.0f;
  for (int i = 0; i < K * N; i++) B[i] = (float)((i * 53 % 97) - 48) / 32.0f;
  char err[512] = "";
  double best = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    auto t0 = std::chrono::steady_clock::now();
    int rc = cudaemu::launch(dim3(N / 16, M / 16), dim3(16, 16), 0, [&] { matmul_tiled(A, B, C, M, N, K); }, err, sizeof err);
    auto t1 = std::chrono::steady_clock::now();
    CHECK(rc == 0, "launch failed: %s", err);
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    best = ms < best ? ms : best;
  }
  for (int i = 0; i < M; i += 17)
    for (int j = 0; j < N; j += 13) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += A[i * K + k] * B[k * N + j];
      CHECK(C[i * N + j] == acc, "C[%d,%d] got %g want %g", i, j, C[i * N + j], acc);
    }
  fprintf(stderr, "TIME matmul 256x256x256 launch: %.1f ms\n", best);
  return 0;
}
