package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
)

// TestWireOpBoundary wires the one kernel of each fixtures/op_boundary
// project with its rule draft (the verdict stands in for the validator's)
// and compares the rewritten pkg/ops.py with ops.py.want (-update rewrites
// it):
//   - contiguous_alias: the host passes a.contiguous().data_ptr<float>()
//     inline, a pointer local set from b.to(kFloat).contiguous(), and a cast
//     around out.view({-1})'s data pointer; each maps to its tensor
//     parameter (was "kernel argument a is not one of axpby's tensor
//     parameters").
//   - load_inline_attr: the load_inline extension is called through an
//     attribute of another object (_holder.ext.twice(x)) and getattr(_ext,
//     "twice")(x); both are calls of the op (was "no Python call of twice
//     found").
func TestWireOpBoundary(t *testing.T) {
	for _, c := range []struct {
		name  string
		sites int
	}{{"contiguous_alias", 1}, {"load_inline_attr", 2}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			root := filepath.Join("..", "fixtures", "op_boundary", c.name)
			paths, err := kernels.ListFiles(root)
			if err != nil {
				t.Fatal(err)
			}
			inv, _ := kernels.Discover(ctx, root, paths)
			if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
				t.Fatalf("discovery: %+v", inv.Kernels)
			}
			k := inv.Kernels[0]
			res, err := pallas.Draft(ctx, k, pallas.Options{})
			if err != nil {
				t.Fatal(err)
			}
			read := func(p string) ([]byte, bool) {
				b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
				return b, err == nil
			}
			var py []string
			for _, p := range paths {
				if filepath.Ext(p) == ".py" {
					py = append(py, filepath.ToSlash(p))
				}
			}
			wk := pallas.WireKernel{Kernel: k, Module: res.Module, Drafter: pallas.DrafterRules, Verdict: "PROVEN (test)",
				Cases: []pallas.ValidatedCase{{Sizes: map[string]int64{"n": 40}}}}
			out, wired, probs := pallas.Wire(ctx, []pallas.WireKernel{wk}, read, py, nil)
			if len(probs) != 0 || len(wired) != 1 || wired[0].Sites != c.sites {
				t.Fatalf("wired %+v (want %d sites), problems %+v", wired, c.sites, probs)
			}
			var got []byte
			for _, f := range out {
				if f.Path == "pkg/ops.py" {
					got = f.Content
				}
			}
			golden := filepath.Join(root, "ops.py.want")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("pkg/ops.py differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}
