int main() {
  at::Half x[5] = {1.0f, 2.0f, 3.0f, -4.0f, 0.25f}, y[5];
  char err[512] = "";
  int rc = cudaemu::launch(dim3(2), dim3(2), 0, [&] { scale_acc<at::Half>(x, y, 5); }, err, sizeof err);
  CHECK(rc == 0, "%s", err);
  for (int i = 0; i < 5; i++) {
    float f = float(x[i]);
    CHECK(float(y[i]) == float(at::Half(f * 0.5f + f)) + f * 2, "half %d got %g", i, float(y[i]));
  }
  at::BFloat16 bx[3] = {1.0f, 2.0f, -3.0f}, by[3];
  rc = cudaemu::launch(dim3(1), dim3(3), 0, [&] { scale_acc<at::BFloat16>(bx, by, 3); }, err, sizeof err);
  CHECK(rc == 0 && float(by[2]) == -10.5f, "bf16 got %g: %s", float(by[2]), err);
  double dx[2] = {1, 2}, dy[2];
  rc = cudaemu::launch(dim3(1), dim3(2), 0, [&] { scale_acc<double>(dx, dy, 2); }, err, sizeof err);
  CHECK(rc == 0 && dy[1] == 7.0, "double got %g", dy[1]);
  __half a[2] = {__float2half(1.0f), __float2half(2.5f)}, o[2];
  rc = cudaemu::launch(dim3(1), dim3(2), 0, [&] { own_half_plus(a, o); }, err, sizeof err);
  CHECK(rc == 0 && __half2float(o[1]) == 6.0f, "the TU's own __half operator+ must win: got %g", __half2float(o[1]));
  return 0;
}
