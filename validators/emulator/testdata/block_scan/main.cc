int main() {
  const int n = 3001, threads = 128, per = 2 * threads, blocks = (n + per - 1) / per;
  float *in = new float[n], *out = new float[n], *sums = new float[blocks];
  for (int i = 0; i < n; i++) in[i] = (float)((i * 7919) % 13) - 6.0f;
  char err[512] = "";
  int rc = cudaemu::launch(dim3(blocks), dim3(threads), per * sizeof(float), [&] { blelloch_scan(in, out, sums, n); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int b = 0; b < blocks; b++) {
    float run = 0;
    for (int j = 0; j < per && b * per + j < n; j++) {
      int i = b * per + j;
      CHECK(out[i] == run, "scan[%d] got %g want %g", i, out[i], run);
      run += in[i];
    }
    CHECK(sums[b] == run, "block %d sum got %g want %g", b, sums[b], run);
  }
  for (int t2 : {96, 1024}) {
  const int b2 = 5;
  int *ii = new int[t2 * b2], *oo = new int[t2 * b2], *cnt = new int[b2];
  for (int i = 0; i < t2 * b2; i++) ii[i] = (i * 31) % 17 - 8;
  rc = cudaemu::launch(dim3(b2), dim3(t2), 2 * t2 * sizeof(int), [&] { hillis_steele(ii, oo, cnt); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int b = 0; b < b2; b++) {
    int run = 0, pos = 0;
    for (int t = 0; t < t2; t++) {
      run += ii[b * t2 + t];
      pos += ii[b * t2 + t] > 0;
      CHECK(oo[b * t2 + t] == run, "hs[%d,%d] got %d want %d", b, t, oo[b * t2 + t], run);
    }
    CHECK(cnt[b] == pos * 4 + 2 + 1, "block %d counts got %d want %d", b, cnt[b], pos * 4 + 3);
  }
  }
  return 0;
}
