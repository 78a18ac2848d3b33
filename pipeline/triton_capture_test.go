package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

// TestTritonCaptureFromTests migrates fixtures/triton_capture with
// --capture: its own tests/test_ops.py runs under Triton's interpreter in
// the sandbox and both kernels get their spec from the launches it made
// (spec source "tests"). The translated scale_shift_kernel is proven on the
// two captured sizes (n=37, n=1000) ahead of its inferred sweep; the
// refused multi_row_sum_kernel keeps its rule refusal, and its spec and
// kernel-mode call are the captured launch as it happened ((10, 33) in, 10
// out, grid 3, BLOCK=64), which the interpreter runs again as a reference.
func TestTritonCaptureFromTests(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := e2ePython(t)
	sv := validators.NewStageValidator(validators.Options{Python: py, Timeout: 240 * time.Second})
	t.Cleanup(func() { sv.Close() })
	w := pipeline.NewKernelWork(sv)
	w.Wire = true
	opts := pipeline.Options{Root: "../fixtures/triton_capture", Version: "test",
		Capture: &pipeline.CaptureConfig{Python: py, CacheDir: t.TempDir(), Triton: validators.TritonTests{}}}
	w.Install(&opts)
	run, err := pipeline.Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*pipeline.Kernel{}
	for _, k := range run.Kernels {
		byName[k.Name] = k
	}
	flat, multi := byName["scale_shift_kernel"], byName["multi_row_sum_kernel"]
	if flat == nil || multi == nil {
		t.Fatalf("kernels found: %v", byName)
	}
	for _, k := range []*pipeline.Kernel{flat, multi} {
		if k.SpecSource != pipeline.SpecTests || !k.Emulated || k.TestsPassed != 1 {
			t.Errorf("%s: spec source %q, emulated %v, tests passed %d; want tests, true, 1", k.Name, k.SpecSource, k.Emulated, k.TestsPassed)
		}
	}
	if flat.Captured != 2 || multi.Captured != 1 {
		t.Errorf("captured launches %d and %d, want 2 and 1", flat.Captured, multi.Captured)
	}
	if flat.Draft == nil || flat.Draft.Verdict != pipeline.VerdictProven {
		t.Fatalf("scale_shift_kernel: %+v", flat.Draft)
	}
	if got := strings.Join(flat.Draft.Shapes, " "); !strings.HasPrefix(got, "n=37 n=1000 n=1 ") {
		t.Errorf("validated shapes %q: want the captured n=37 n=1000 ahead of the inferred sweep", got)
	}
	if multi.Draft == nil || multi.Draft.Verdict != pipeline.VerdictNotDrafted || !strings.HasPrefix(multi.Draft.Reason, "PTR") {
		t.Fatalf("multi_row_sum_kernel: %+v, want not drafted with the rules' PTR refusal", multi.Draft)
	}
	d := w.Kernels.Triton.Draft(multi.ID)
	if d == nil || d.Refusal == nil || d.Spec == nil || d.Call.Mode != "kernel" {
		t.Fatalf("the refused kernel's draft carries no captured spec and call: %+v", d)
	}
	shapes := map[string]string{}
	for _, p := range d.Spec.Params {
		shapes[p.Name] = p.Role + " " + strings.Join(p.Shape, "x")
		if p.Kind == "scalar" && p.Value == nil {
			t.Errorf("scalar %s is not fixed at its captured value", p.Name)
		}
	}
	if shapes["X"] != "input 10x33" || shapes["OUT"] != "inout 10" {
		t.Errorf("captured spec params %v: want X input 10x33, OUT inout 10", shapes)
	}
	if strings.Join(d.Call.Grid, ",") != "3" || d.Call.Constexprs["BLOCK"] != "64" {
		t.Errorf("captured call grid %v constexprs %v: want [3], BLOCK=64", d.Call.Grid, d.Call.Constexprs)
	}
	k := w.Kernels.Lookup(multi.ID)
	if k == nil || k.SpecStatus != kernels.SpecCaptured || k.Spec != d.Spec {
		t.Fatalf("the inventory kernel does not hold the captured spec: %+v", k)
	}
	probe, err := sv.ProbeTriton(context.Background(), k, d.Call)
	if err != nil {
		t.Fatal(err)
	}
	if !probe.OK || probe.Launches != 1 {
		t.Errorf("the interpreter reference of the refused kernel on its captured spec: ok %v, launches %d (%s)", probe.OK, probe.Launches, probe.Error)
	}
}
