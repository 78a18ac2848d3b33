int main() {
  const int threads = 96, blocks = 3, n = threads * blocks;
  int x[n], ts[n], sc[n], bs[blocks], rk[n];
  for (int i = 0; i < n; i++) x[i] = (i * 17) % 43;
  char err[512] = "";
  int rc = cudaemu::launch(dim3(blocks), dim3(threads), 0, [&] { cg_kernel(x, ts, sc, bs, rk); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int i = 0; i < n; i++) {
    int s16 = 0, b16 = i & ~15, any = 0;
    for (int j = b16; j < b16 + 16; j++) { s16 += x[j]; any |= x[j] > 40; }
    CHECK(ts[i] == s16, "tile16 sum %d got %d want %d", i, ts[i], s16);
    int run = 0;
    for (int j = i & ~31; j <= i; j++) run += x[j];
    CHECK(sc[i] == run, "scan32 %d got %d want %d", i, sc[i], run);
    int t = i % threads;
    int want = (t % 16) * 1000 + (t / 32) * 10 + 1 + (any ? 100 : 0);
    CHECK(rk[i] == want, "rank %d got %d want %d", i, rk[i], want);
  }
  for (int b = 0; b < blocks; b++) {
    int s = 0;
    for (int j = b * threads; j < (b + 1) * threads; j++) s += x[j];
    CHECK(bs[b] == s, "block %d sum got %d want %d", b, bs[b], s);
  }
  return 0;
}
