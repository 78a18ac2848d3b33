int main() {
  float x[64] = {}, y[64] = {};
  char err[512] = "";
  int rc = cudaemu::launch(dim3(1), dim3(64), 0, [&] { partial_shuffle(x, y, 40); }, err, sizeof err);
  CHECK(rc != 0, "expected a warp deadlock error");
  printf("ERR1: %s\n", err);
  return 0;
}
