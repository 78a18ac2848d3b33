int main() {
  const int n = 100003, nbins = 97;
  int* d = new int[n];
  uint32_t s = 7;
  for (int i = 0; i < n; i++) { s = s * 1103515245u + 12345u; d[i] = (int)((s >> 8) % 110) - 5; }
  unsigned* h = new unsigned[nbins]();
  char err[512] = "";
  int rc = cudaemu::launch(dim3(40), dim3(256), nbins * sizeof(unsigned), [&] { histogram_kernel(d, h, n, nbins); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  unsigned ref[nbins] = {};
  for (int i = 0; i < n; i++) if (d[i] >= 0 && d[i] < nbins) ref[d[i]]++;
  for (int b = 0; b < nbins; b++) CHECK(h[b] == ref[b], "bin %d got %u want %u", b, h[b], ref[b]);
  float fh[8] = {};
  int mx = INT_MIN;
  rc = cudaemu::launch(dim3((n + 127) / 128), dim3(128), 0, [&] { float_hist_kernel(d, fh, (float*)&mx, n); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  float fr[8] = {};
  int mref = INT_MIN;
  for (int i = 0; i < n; i++) { fr[d[i] & 7] += 0.5f; mref = d[i] > mref ? d[i] : mref; }
  for (int b = 0; b < 8; b++) CHECK(fh[b] == fr[b], "float bin %d got %g want %g", b, fh[b], fr[b]);
  CHECK(mx == mref, "atomicMax got %d want %d", mx, mref);
  return 0;
}
