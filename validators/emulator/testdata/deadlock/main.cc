int main() {
  float x[300] = {}, y[300] = {};
  char err[512] = "";
  int rc = cudaemu::launch(dim3(2), dim3(256), 0, [&] { early_return(x, y, 300); }, err, sizeof err);
  CHECK(rc != 0, "expected a deadlock error");
  printf("ERR1: %s\n", err);
  // The emulator recovers: a following launch works.
  rc = cudaemu::launch(dim3(1), dim3(64), 0, [&] { spin_free(y); }, err, sizeof err);
  CHECK(rc == 0 && y[63] == 1.0f, "launch after deadlock failed: %s", err);
  rc = cudaemu::launch(dim3(1), dim3(2048), 0, [&] { spin_free(y); }, err, sizeof err);
  CHECK(rc != 0, "expected an invalid launch");
  printf("ERR2: %s\n", err);
  return 0;
}
