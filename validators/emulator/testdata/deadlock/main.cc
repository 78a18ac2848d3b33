int main() {
  float x[300], y[300] = {};
  for (int i = 0; i < 300; i++) x[i] = i * 1.5f;
  char err[512] = "";
  int rc = cudaemu::launch(dim3(2), dim3(256), 0, [&] { early_return(x, y, 300); }, err, sizeof err);
#if defined(CUDAEMU_STRICT_BARRIERS)
  CHECK(rc != 0, "strict mode: expected a barrier error");
  printf("ERR-STRICT: %s\n", err);
#else
  CHECK(rc == 0, "early return before a barrier: %s", err);
  for (int i = 0; i < 300; i++) {
    int b = i / 256, t = i % 256;
    int nb = b * 256 + (t + 1) % 256;
    if (nb < 300) CHECK(y[i] == x[nb], "y[%d] got %g want %g", i, y[i], x[nb]);
  }
  int xi[64], out = -1;
  for (int i = 0; i < 64; i++) xi[i] = (i % 3) - 1;
  rc = cudaemu::launch(dim3(1), dim3(64), 0, [&] { count_exited(xi, &out, 50); }, err, sizeof err);
  int pos = 0;
  for (int i = 0; i < 50; i++) pos += xi[i] > 0;
  CHECK(rc == 0 && out == pos * 4 + 2 + 0, "barrier predicates with exited threads: rc=%d out=%d want %d (%s)", rc, out, pos * 4 + 2, err);
#endif
  rc = cudaemu::launch(dim3(1), dim3(64), 0, [&] { mixed_wait(y); }, err, sizeof err);
  CHECK(rc != 0, "expected a deadlock error");
  printf("ERR-MIXED: %s\n", err);
  // The emulator recovers: a following launch works.
  rc = cudaemu::launch(dim3(1), dim3(64), 0, [&] { spin_free(y); }, err, sizeof err);
  CHECK(rc == 0 && y[63] == 1.0f, "launch after deadlock failed: %s", err);
  rc = cudaemu::launch(dim3(1), dim3(2048), 0, [&] { spin_free(y); }, err, sizeof err);
  CHECK(rc != 0, "expected an invalid launch");
  printf("ERR-LAUNCH: %s\n", err);
  return 0;
}
