package hostbuild

import (
	"strings"
	"testing"
)

func TestRewriteLaunches(t *testing.T) {
	table := KernelTable{}
	table.Add("k.cu", "template <int B> __global__ void block_max(const float* x, float* out, int n) {}\n__global__ void plain(float* y) {}\nnamespace ns { __global__ void q(int a) {} }")
	for _, tc := range []struct {
		name, src string
		want      []string // substrings of the rewrite
		kernel    string
	}{
		{"template after case label", "switch (b) { case 256: block_max<256><<<rows, 256>>>(x, o, n); break; }",
			[]string{"case 256: ::cudaemu::host::launch(CUDAEMU_SITE(\"block_max\"", "targ<256>()", "Config(rows, 256)", "block_max<256>(cudaemu_a...)", ", x, o, n)"}, "block_max"},
		{"qualified name", "ns :: q<<<1, 2, 0, stream>>>(3);", []string{"ns :: q(cudaemu_a...)", "Config(1, 2, 0, stream)", ", 3)"}, "q"},
		{"function pointer", "fp f = plain; f<<<g, b>>>(y);", []string{"CUDAEMU_SITE_FN(\"f\", \"\", f)", "f(cudaemu_a...)"}, "f"},
		{"multi-line args keep lines", "plain<<<1,\n 1>>>(\n y);\nint after;", []string{"Config(1,\n 1)", "plain(cudaemu_a...); }, \n y)"}, "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, sites, err := RewriteLaunches(tc.src, table)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("RewriteLaunches(%q) = %q; want it to contain %q", tc.src, got, w)
				}
			}
			if strings.Count(got, "\n") != strings.Count(tc.src, "\n") {
				t.Errorf("line count changed: %q", got)
			}
			if len(sites) != 1 || sites[0].Kernel != tc.kernel {
				t.Errorf("sites = %+v; want one launch of %s", sites, tc.kernel)
			}
		})
	}
}

func TestParseKernelsParams(t *testing.T) {
	table := KernelTable{}
	table.Add("k.cu", "template <typename T>\n__global__ void __launch_bounds__(256) k(const T* __restrict__ x, T* y, int n = 4) {}")
	ks := table["k"]
	if len(ks) != 1 || len(ks[0].Params) != 3 {
		t.Fatalf("ParseKernels = %+v; want k with 3 params", ks)
	}
	want := []ParamDecl{{"x", "const T* __restrict__"}, {"y", "T*"}, {"n", "int"}}
	for i, p := range ks[0].Params {
		if p != want[i] {
			t.Errorf("param %d = %+v; want %+v", i, p, want[i])
		}
	}
}
