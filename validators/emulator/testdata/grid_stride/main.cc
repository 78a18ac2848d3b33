int main() {
  const long long n4 = 10007;
  float4* in = new float4[n4];
  float4* out = new float4[n4];
  for (long long i = 0; i < n4; i++) in[i] = make_float4(i * 0.001f - 5.0f, (i % 17) * 0.25f - 2.0f, (i % 11) * 0.2f - 1.0f, (i % 23) * 0.5f - 6.0f);
  Params p{1.5f, -0.25f};
  char err[512] = "";
  int rc = cudaemu::launch(dim3(3, 2), dim3(32, 4), 0, [&] { grid_stride(in, out, p, n4); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (long long i = 0; i < n4; i++) {
    float4 v = in[i];
    float ex = 0.5f * v.x * (1.0f + tanhf(0.7978845608f * (v.x + 0.044715f * v.x * v.x * v.x))) * 1.5f - 0.25f;
    float ey = expf(v.y) * (1.0f / sqrtf(fabsf(v.z) + 1.0f));
    float ez = std::min(std::max(v.z, 0.0f), 1.0f) + std::max(v.w, 0.0f);
    unsigned bits; memcpy(&bits, &v.x, 4);
    float ew = (float)(int)nearbyintf(v.w * 3.0f) + (float)__builtin_popcount(bits & 0xff);
    CHECK(out[i].x == ex && out[i].y == ey && out[i].z == ez && out[i].w == ew, "i=%lld got (%g %g %g %g) want (%g %g %g %g)", i,
          out[i].x, out[i].y, out[i].z, out[i].w, ex, ey, ez, ew);
  }
  // Integer dot-product intrinsics (host-side call of the device functions).
  CHECK(__dp4a((int)0x80ff7f02, (int)0x02ff7f03, 10) == 2 * 3 + 127 * 127 + 1 - 256 + 10, "__dp4a signed");
  CHECK(__dp4a(0x01020304u, 0x01010101u, 0u) == 10u, "__dp4a unsigned");
  CHECK(__brev(1u) == 0x80000000u && __clz(1) == 31 && __ffs(8) == 4 && __popcll(~0ull) == 64, "bit intrinsics");
  CHECK(__byte_perm(0x33221100u, 0x77665544u, 0x5410u) == 0x55441100u, "__byte_perm");
  return 0;
}
