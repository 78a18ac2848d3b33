int main() {
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads, nw = blocks * threads / 32;
  float* x = new float[n];
  int* k = new int[n];
  uint32_t s = 12345;
  for (int i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = ((int)(s >> 8) % 2001 - 1000) / 256.0f;  // exact in float: sums are exact
    k[i] = (int)(s >> 4) % 100;
  }
  float *ws = new float[nw], *incl = new float[n], *bc = new float[n], *bt = new float[blocks];
  int *wm = new int[nw], *votes = new int[nw];
  unsigned* ballots = new unsigned[nw];
  char err[512] = "";
  int rc = cudaemu::launch(dim3(blocks), dim3(threads), 0, [&] { warp_reduce_kernel(x, k, ws, wm, ballots, votes, incl, bc, bt, n); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int w = 0; w < nw; w++) {
    float es = 0; int em = INT_MIN; unsigned eb = 0; int all = 1, any = 0;
    float run = 0;
    for (int l = 0; l < 32; l++) {
      int i = w * 32 + l;
      float v = i < n ? x[i] : 0.0f;
      int kv = i < n ? k[i] : INT_MIN;
      es += v; em = kv > em ? kv : em;
      if (v > 0) eb |= 1u << l;
      if (!(kv >= 0)) all = 0;
      if (kv > 90) any = 1;
      run += v;
      if (i < n) {
        CHECK(incl[i] == run, "scan i=%d got %g want %g", i, incl[i], run);
        int src = (l & ~15) + 3;
        float want = (w * 32 + src) < n ? x[w * 32 + src] : 0.0f;
        CHECK(bc[i] == want, "bcast i=%d got %g want %g", i, bc[i], want);
      }
    }
    CHECK(ws[w] == es, "warp %d sum got %g want %g", w, ws[w], es);
    CHECK(wm[w] == em, "warp %d max got %d want %d", w, wm[w], em);
    CHECK(ballots[w] == eb, "warp %d ballot got %08x want %08x", w, ballots[w], eb);
    CHECK(votes[w] == all * 2 + any, "warp %d votes got %d want %d", w, votes[w], all * 2 + any);
  }
  for (int b = 0; b < blocks; b++) {
    float e = 0;
    for (int i = b * threads; i < (b + 1) * threads && i < n; i++) e += x[i];
    CHECK(bt[b] == e, "block %d total got %g want %g", b, bt[b], e);
  }
  return 0;
}
