package triton

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

func TestDiscoverRepo(t *testing.T) {
	inv, err := Discover(context.Background(), filepath.Join("testdata", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Kernels) != 2 || inv.Unlaunched != 1 {
		t.Fatalf("kernels %d unlaunched %d, want 2 and 1", len(inv.Kernels), inv.Unlaunched)
	}
	k := inv.Kernel("", "relu_kernel")
	if k == nil {
		t.Fatal("relu_kernel not found")
	}
	if !slices.Equal(k.Decorators, []string{"autotune", "heuristics", "jit"}) || !k.Autotuned() {
		t.Errorf("decorators %v", k.Decorators)
	}
	if !slices.Equal(k.Constexprs(), []string{"BLOCK", "EVEN"}) {
		t.Errorf("constexprs %v", k.Constexprs())
	}
	if len(k.Launches) != 1 {
		t.Fatalf("launches %d, want 1 (through the aliased import)", len(k.Launches))
	}
	l := k.Launches[0]
	if l.Path != "pkg/ops.py" || l.Wrapper != "relu" || l.Grid != "grid" || l.GridDef == "" || len(l.Args) != 3 {
		t.Errorf("launch %+v", l)
	}
	if len(l.Allocs) != 1 || l.Allocs[0].Name != "y" || l.Returns != "y" {
		t.Errorf("allocs %+v returns %q", l.Allocs, l.Returns)
	}
	a, method := inv.AutogradFor(l)
	if a == nil || a.Class != "ReLUFunction" || method != "forward" {
		t.Errorf("autograd %+v %s", a, method)
	}
}

// TestDiscoverFixtures finds every Triton fixture kernel with its launch,
// wrapper, constexpr sizes and (for RMSNorm) the autograd.Function.
func TestDiscoverFixtures(t *testing.T) {
	inv, err := Discover(context.Background(), filepath.Join("..", "..", "fixtures", "triton"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Kernels) != 8 || inv.Unlaunched != 0 {
		t.Fatalf("kernels %d unlaunched %d, want 8 and 0", len(inv.Kernels), inv.Unlaunched)
	}
	soft := inv.Kernel("", "softmax_kernel")
	if soft == nil || len(soft.Launches) != 1 {
		t.Fatalf("softmax_kernel %+v", soft)
	}
	if l := soft.Launches[0]; l.Wrapper != "softmax" || l.Sizes["BLOCK_SIZE"] != "triton.next_power_of_2(n_cols)" || l.Grid != "(n_rows,)" {
		t.Errorf("softmax launch %+v", l)
	}
	bwd := inv.Kernel("", "rmsnorm_bwd_kernel")
	if bwd == nil || len(bwd.Launches) != 1 {
		t.Fatalf("rmsnorm_bwd_kernel %+v", bwd)
	}
	a, method := inv.AutogradFor(bwd.Launches[0])
	if a == nil || a.Class != "RMSNormFunction" || method != "backward" {
		t.Errorf("rmsnorm backward: autograd %+v %q", a, method)
	}
	mm := inv.Kernel("", "matmul_kernel")
	if mm == nil || len(mm.Launches) != 1 || !slices.Contains(mm.Constexprs(), "BLOCK_K") {
		t.Fatalf("matmul_kernel %+v", mm)
	}
	if l := mm.Launches[0]; l.GridDef == "" || len(l.Allocs) != 1 || l.Allocs[0].Name != "c" {
		t.Errorf("matmul launch %+v", l)
	}
}
