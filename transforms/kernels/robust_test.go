package kernels

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestDiscoverTruncated feeds every fixture cut at many points (and a Python
// file cut likewise): discovery must not fail internally (PKN900), whatever
// it makes of the broken code, and every inferred spec must validate.
func TestDiscoverTruncated(t *testing.T) {
	srcs := map[string][]byte{}
	for _, f := range fixtureFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(filepath.Dir(f))+".cu"] = b
	}
	if b, err := os.ReadFile(filepath.Join(repoRoot, "fixtures/kernels/_discovery/inline_relu.py")); err == nil {
		srcs["inline.py"] = b
	}
	dir := t.TempDir()
	for name, src := range srcs {
		for i := 1; i <= 17; i++ {
			cut := len(src) * i / 18
			p := filepath.Join(dir, name)
			writeFile(t, p, string(src[:cut]))
			inv, probs := Discover(context.Background(), dir, []string{name})
			for _, pr := range probs {
				if pr.Code == CodeInternal {
					t.Errorf("%s cut at %d: %s", name, cut, pr.Message)
				}
			}
			for _, k := range inv.Kernels {
				if k.Spec != nil {
					if msgs := ValidateSpec(k.Spec, k); len(msgs) > 0 {
						t.Errorf("%s cut at %d: inferred spec invalid: %v", name, cut, msgs)
					}
				}
			}
		}
	}
}

func FuzzDiscoverCUDA(f *testing.F) {
	f.Add([]byte("__global__ void k(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1; }\nvoid h(torch::Tensor y) { int n = y.numel(); k<<<(n+255)/256, 256>>>(y.data_ptr<float>(), n); }"))
	f.Add([]byte("template <int B> __global__ void __launch_bounds__(B) k() {} void h() { k<4><<<dim3(1,2), dim3(3)>>>(); }"))
	f.Add([]byte("<<<>>> __global__ __device__ ( ) { } <<<"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<14 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "k.cu"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		_, probs := Discover(context.Background(), dir, []string{"k.cu"})
		for _, p := range probs {
			if p.Code == CodeInternal {
				t.Fatalf("internal failure: %s", p.Message)
			}
		}
	})
}
