static uint16_t hb(__half h) { return __half_as_ushort(h); }
int main() {
  // Known encodings, round-to-nearest-even ties, overflow, subnormals, NaN.
  struct { float f; uint16_t h, b; } cases[] = {
    {1.0f, 0x3c00, 0x3f80}, {-2.0f, 0xc000, 0xc000}, {65504.0f, 0x7bff, 0x4780}, {65519.0f, 0x7bff, 0x4780},
    {65520.0f, 0x7c00, 0x4780}, {1e6f, 0x7c00, 0x4974}, {0.1f, 0x2e66, 0x3dcd}, {5.9604645e-08f, 0x0001, 0x3380},
    {2.9802322e-08f, 0x0000, 0x3300}, {4.4703484e-08f, 0x0001, 0x3340}, {0.0f, 0x0000, 0x0000}, {-0.0f, 0x8000, 0x8000},
    {1.00048828125f, 0x3c00, 0x3f80}, {1.00146484375f, 0x3c02, 0x3f80}, {1.00390625f, 0x3c04, 0x3f80},
    {1.01171875f, 0x3c0c, 0x3f82}, {INFINITY, 0x7c00, 0x7f80}, {-INFINITY, 0xfc00, 0xff80}, {6.1035156e-05f, 0x0400, 0x3880},
  };
  const int n = sizeof cases / sizeof cases[0] + 1;
  float x[n];
  for (int i = 0; i < n - 1; i++) x[i] = cases[i].f;
  x[n - 1] = NAN;
  __half h[n]; __nv_bfloat16 b[n]; float hbk[n], bbk[n];
  char err[512] = "";
  int rc = cudaemu::launch(dim3(1), dim3(8), 0, [&] { to_half(x, h, b, hbk, bbk, n); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int i = 0; i < n - 1; i++) {
    CHECK(hb(h[i]) == cases[i].h, "half(%.10g) got %04x want %04x", x[i], hb(h[i]), cases[i].h);
    CHECK(__bfloat16_as_ushort(b[i]) == cases[i].b, "bf16(%.10g) got %04x want %04x", x[i], __bfloat16_as_ushort(b[i]), cases[i].b);
  }
  CHECK((hb(h[n - 1]) & 0x7c00) == 0x7c00 && (hb(h[n - 1]) & 0x3ff), "half(NaN) got %04x", hb(h[n - 1]));
  CHECK(hbk[n - 1] != hbk[n - 1] && bbk[n - 1] != bbk[n - 1], "NaN round trip");
  // Exhaustive: every finite half round-trips, and every midpoint between
  // neighbours rounds to the even one.
  for (unsigned u = 0; u < 0x7c00; u++) {
    float f = __half2float(__ushort_as_half((uint16_t)u));
    CHECK(hb(__float2half(f)) == u, "roundtrip %04x", u);
    CHECK(hb(__float2half(-f)) == (u | 0x8000), "roundtrip -%04x", u);
    float g = __half2float(__ushort_as_half((uint16_t)(u + 1)));
    float mid = (float)(((double)f + (double)g) / 2);
    uint16_t want = (u & 1) ? u + 1 : u;
    if (u + 1 == 0x7c00) want = 0x7c00;  // the midpoint to infinity rounds up
    CHECK(hb(__float2half(mid)) == want, "midpoint %04x/%04x got %04x want %04x", u, u + 1, hb(__float2half(mid)), want);
    if (u + 1 < 0x7c00) CHECK(hb(__float2half(std::nextafter(mid, 0.0f))) == u, "below midpoint %04x", u);
  }
  for (unsigned u = 0; u < 0x7f80; u += 7) {
    float f = __bfloat162float(__ushort_as_bfloat16((uint16_t)u));
    CHECK(__bfloat16_as_ushort(__float2bfloat16(f)) == u, "bf16 roundtrip %04x", u);
  }
  const int m = 300;
  half a[m], bb2[m], s[m], fo[m]; half2 pr[m];
  for (int i = 0; i < m; i++) { a[i] = __float2half(i * 0.37f - 40.0f); bb2[i] = __float2half(1.5f - i * 0.011f); }
  rc = cudaemu::launch(dim3(3), dim3(128), 0, [&] { half_math(a, bb2, s, fo, pr, m); }, err, sizeof err);
  CHECK(rc == 0, "launch failed: %s", err);
  for (int i = 0; i < m; i++) {
    float fa = __half2float(a[i]), fb = __half2float(bb2[i]);
    CHECK(hb(s[i]) == hb(__float2half(fa + fb)), "sum %d", i);
    CHECK(hb(fo[i]) == hb(__float2half((float)((double)fa * fb + 0.25))), "fma %d", i);
    CHECK(hb(pr[i].x) == hb(__float2half(fa * 2)) && hb(pr[i].y) == hb(__float2half(fb * 2)), "half2 %d", i);
  }
  return 0;
}
