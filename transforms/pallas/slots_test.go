package pallas

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// TestSlotStoreRefusals: a store at a loaded offset is drafted only into an
// inout array, at B + e·K with e bounded to a uniform range by the store's
// condition; every other one stays refused (PPL006), and two threads whose
// slots overlap make run() raise (not tested here: run() is Python).
func TestSlotStoreRefusals(t *testing.T) {
	cases := []struct{ name, body, role, msg string }{
		{"into an output", "int j = s[i]; if (j >= 0 && j < 4) y[i * 4 + j] = x[i];", "output", "is not inout"},
		{"no range", "y[i * 4 + s[i]] = x[i];", "inout", "without a uniform range"},
		{"one bound only", "int j = s[i]; if (j >= 0) y[i * 4 + j] = x[i];", "inout", "without a uniform range"},
		{"not linear", "int j = s[i] * s[i]; if (j >= 0 && j < 4) y[i * 4 + j] = x[i];", "inout", "not B + e·K"},
		{"bounded", "int j = s[i]; if (j >= 0 && j < 4) y[i * 4 + j] = x[i];", "inout", ""},
		{"bounded by continue in a runtime loop", "for (int t = 0; t < n; t++) { int j = t + s[i]; if (j < 0 || j >= 4) continue; y[i * 4 + j] = x[i]; }", "inout", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "__global__ void k(const float* x, const int* s, float* y, int n) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    " + c.body + "\n  }\n}\n"
			if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			inv, _ := kernels.Discover(context.Background(), dir, []string{"k.cu"})
			if len(inv.Kernels) != 1 {
				t.Fatalf("discovery: %+v", inv.Kernels)
			}
			k := inv.Kernels[0]
			k.Class = kernels.ClassElementwise
			k.Spec = &kernels.Spec{Name: "k", Class: kernels.ClassElementwise, Symbols: []string{"n"},
				Params: []kernels.Param{
					{Name: "x", Kind: "pointer", CType: "const float*", DType: "float32", Role: "input", Shape: []string{"n", "4"}},
					{Name: "s", Kind: "pointer", CType: "const int*", DType: "int32", Role: "input", Shape: []string{"n"}},
					{Name: "y", Kind: "pointer", CType: "float*", DType: "float32", Role: c.role, Shape: []string{"n", "4"}},
					{Name: "n", Kind: "scalar", CType: "int", DType: "int32", Role: "size", Expr: "n"},
				},
				Launch: kernels.Launch{Grid: [3]string{"(n + 255) / 256", "1", "1"}, Block: [3]string{"256", "1", "1"}, SharedBytes: "0"}}
			res, err := Draft(context.Background(), k, Options{})
			if c.msg == "" {
				if err != nil {
					t.Fatalf("got %v, want a draft", err)
				}
				if !strings.Contains(res.Module, "_loop_dst(") || !strings.Contains(res.Module, "for slot in range(4)") {
					t.Errorf("the draft has no slots checked while tracing:\n%s", res.Module)
				}
				return
			}
			r, ok := AsRefusal(err)
			if !ok || r.Code != CodeDataIndex || !strings.Contains(r.Message, c.msg) {
				t.Errorf("got %v, want %s containing %q", err, CodeDataIndex, c.msg)
			}
		})
	}
}

// TestResidueChain: the thread's index is periodic only inside residues
// over uniform factors (a division alone, a bare use or a loaded divisor
// are not).
func TestResidueChain(t *testing.T) {
	cases := []struct {
		s    string
		want []string
	}{
		{"_c_rem(iv_x, p_hw, jnp.int32)", []string{"(p_hw)"}},
		{"(_c_rem(_c_div(_c_div(iv_x, p_hw, jnp.int32), s_c, jnp.int32), p_n, jnp.int32) * 4)", []string{"(p_hw)", "(s_c)", "(p_n)"}},
		{"_c_div(iv_x, p_hw, jnp.int32)", nil},
		{"iv_x + 1", nil},
		{"_c_rem(iv_x, ld0, jnp.int32)", nil},
		{"_c_rem(iv_x, (p_a * 2), jnp.int32)", []string{"((p_a * 2))"}},
	}
	for _, c := range cases {
		loc := reIndexX.FindStringIndex(c.s)
		got, ok := residueChain(c.s, loc[0], loc[1])
		if ok != (c.want != nil) || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("residueChain(%q) = %v, %v; want %v", c.s, got, ok, c.want)
		}
	}
	if !subMultiset([]string{"a", "b"}, []string{"b", "c", "a"}) || subMultiset([]string{"a", "a"}, []string{"a", "b"}) {
		t.Error("subMultiset")
	}
}
