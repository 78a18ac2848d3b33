static int run_case(int M, int N, int K) {
  float *A = new float[M * K], *B = new float[K * N], *C = new float[M * N];
  for (int i = 0; i < M * K; i++) A[i] = (float)((i * 37 % 101) - 50) / 64.0f;
  for (int i = 0; i < K * N; i++) B[i] = (float)((i * 53 % 97) - 48) / 32.0f;
  for (int i = 0; i < M * N; i++) C[i] = -12345.0f;
  char err[512] = "";
  int rc = cudaemu::launch(dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, [&] { matmul_tiled(A, B, C, M, N, K); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += A[i * K + k] * B[k * N + j];
      CHECK(C[i * N + j] == acc, "C[%d,%d] (M=%d N=%d K=%d) got %g want %g", i, j, M, N, K, C[i * N + j], acc);
    }
  delete[] A; delete[] B; delete[] C;
  return 0;
}
int main() {
  CHECK(run_case(37, 53, 29) == 0, "case 1");
  CHECK(run_case(1, 1, 1) == 0, "case 2");
  CHECK(run_case(16, 33, 17) == 0, "case 3");
  return 0;
}
