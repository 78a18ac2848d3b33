#include <signal.h>
static void after(float* y) {
  char err[512] = "";
  int rc = cudaemu::launch(dim3(1), dim3(32), 0, [&] { fine(y); }, err, sizeof err);
  CHECK(rc == 0 && y[31] == 2.0f, "launch after a fault failed: %s", err);
}
int main() {
  static float y[64];
  static int iy[64];
  static char sink[4];
  char err[512] = "";
  int rc = cudaemu::launch(dim3(1), dim3(4), 0, [&] { oob_write(y, 1LL << 40); }, err, sizeof err);
  CHECK(rc != 0, "oob write should fail");
  printf("ERR-OOB: %s\n", err);
  after(y);
  static int flag = 0;
  setenv("CUDAEMU_TIMEOUT_S", "1", 1);
  rc = cudaemu::launch(dim3(1), dim3(2), 0, [&] { spin_wait(&flag, y); }, err, sizeof err);
  CHECK(rc != 0, "spin wait should time out");
  printf("ERR-SPIN: %s\n", err);
  unsetenv("CUDAEMU_TIMEOUT_S");
  after(y);
  rc = cudaemu::launch(dim3(1), dim3(2), 0, [&] { stack_overflow(sink); }, err, sizeof err);
  CHECK(rc != 0, "stack overflow should fail");
  printf("ERR-STACK: %s\n", err);
  after(y);
  volatile int zero = 0;
  const int z = zero;
  rc = cudaemu::launch(dim3(1), dim3(2), 0, [&] { div_zero(iy, z); }, err, sizeof err);
  CHECK(rc != 0, "division by zero should fail");
  printf("ERR-FPE: %s\n", err);
  after(y);
  rc = cudaemu::launch(dim3(1), dim3(8), 0, [&] { trap_kernel(y); }, err, sizeof err);
  CHECK(rc != 0, "trap should fail");
  printf("ERR-TRAP: %s\n", err);
  float xs[8] = {1, 2, 3, -4, 5, 6, 7, 8};
  rc = cudaemu::launch(dim3(1), dim3(8), 0, [&] { assert_kernel(xs); }, err, sizeof err);
  CHECK(rc != 0, "assert should fail");
  printf("ERR-ASSERT: %s\n", err);
  after(y);
  // Handlers are restored after each launch.
  struct sigaction sa;
  sigaction(SIGSEGV, nullptr, &sa);
  CHECK(sa.sa_handler == SIG_DFL, "SIGSEGV handler not restored");
  return 0;
}
