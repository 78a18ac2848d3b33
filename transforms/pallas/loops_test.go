package pallas_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
)

// TestLoopRefusals: loops the drafter cannot iterate exactly are refused
// with PPL007 and a message naming why.
func TestLoopRefusals(t *testing.T) {
	want := map[string]string{
		"data_trip_kernel":  "depends on loaded data",
		"break_kernel":      "break inside a loop",
		"unclamped_kernel":  "no uniform upper bound",
		"data_store_kernel": "data-dependent condition",
		"return_kernel":     "return inside a loop",
	}
	ctx := context.Background()
	inv, _ := kernels.Discover(ctx, "testdata/loop_refusals", []string{"kernel.cu"})
	seen := 0
	for _, k := range inv.Kernels {
		msg, ok := want[k.Name]
		if !ok {
			continue
		}
		seen++
		k.Class = kernels.ClassElementwise
		k.Spec = loopSpec(k.Name)
		_, err := pallas.Draft(ctx, k, pallas.Options{})
		r, ok := pallas.AsRefusal(err)
		if !ok || r.Code != pallas.CodeLoop || !strings.Contains(r.Message, msg) {
			t.Errorf("%s: want %s (%q), got %v", k.Name, pallas.CodeLoop, msg, err)
			continue
		}
		t.Logf("%s: %s", k.Name, r)
	}
	if seen != len(want) {
		t.Fatalf("discovered %d of %d kernels", seen, len(want))
	}
}

// loopSpec is the spec the refusal kernels share: n elements, a window of k.
func loopSpec(name string) *kernels.Spec {
	return &kernels.Spec{
		Name:    name,
		Class:   kernels.ClassElementwise,
		Symbols: []string{"n", "k"},
		Params: []kernels.Param{
			{Name: "n", Kind: "scalar", CType: "const int", DType: "int32", Role: "size", Expr: "n"},
			{Name: "k", Kind: "scalar", CType: "const int", DType: "int32", Role: "size", Expr: "k"},
			{Name: "x", Kind: "pointer", CType: "const float*", DType: "float32", Role: "input", Shape: []string{"n"}},
			{Name: "cnt", Kind: "pointer", CType: "const int*", DType: "int32", Role: "input", Shape: []string{"n"}},
			{Name: "out", Kind: "pointer", CType: "float*", DType: "float32", Role: "output", Shape: []string{"n * k"}},
		},
		Launch: kernels.Launch{Grid: [3]string{"(n + 255) / 256", "1", "1"}, Block: [3]string{"256", "1", "1"}, SharedBytes: "0"},
	}
}

// TestLoopStoreOverlapRaises: a store inside a runtime loop is drafted as a
// scatter whose addresses run() checks before the kernel runs: where
// threads write the same element (the order would decide), it raises.
func TestLoopStoreOverlapRaises(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python (-short)")
	}
	py := testPython(t)
	ctx := context.Background()
	inv, _ := kernels.Discover(ctx, "testdata/loop_refusals", []string{"kernel.cu"})
	for _, k := range inv.Kernels {
		if k.Name != "overlap_kernel" {
			continue
		}
		k.Class = kernels.ClassElementwise
		k.Spec = loopSpec(k.Name)
		res, err := pallas.Draft(ctx, k, pallas.Options{})
		if err != nil {
			t.Fatalf("overlap_kernel: %v", err)
		}
		mod := writeDraft(t, res.Module)
		script := draftScript + `n, k = int(sys.argv[2]), 3
args = {"n": n, "k": k, "x": np.arange(n, dtype=np.float32), "cnt": np.zeros(n, np.int32)}
try:
    out = m.run(args, interpret=True)["out"]
except ValueError as e:
    print("raised:", e)
else:
    print("ran:", np.asarray(out).reshape(-1)[:k].tolist())
`
		for _, c := range []struct{ n, want string }{{"1", "ran: [0.0, 0.0, 0.0]"}, {"5", "raised: a loop's stores overlap"}} {
			out, err := exec.Command(py, "-c", script, mod, c.n).CombinedOutput()
			if err != nil || !strings.Contains(string(out), c.want) {
				t.Errorf("n=%s: want %q, got %v\n%s", c.n, c.want, err, tail(string(out)))
			}
		}
		return
	}
	t.Fatal("overlap_kernel not discovered")
}
