package pipeline_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

// rowBiasHost stands in for the CPU build and the test run of
// testdata/launcher_sizes: its test launches row_bias_kernel once, on a
// 4 x 4 input (rows = cols), and the launch is recorded as the emulator
// records it, with the tensors' shapes.
type rowBiasHost struct{}

func (rowBiasHost) Build(_ context.Context, req pipeline.BuildRequest) (*pipeline.BuiltExtension, error) {
	return &pipeline.BuiltExtension{Module: req.Module, Key: "row-bias-fake"}, nil
}

func (rowBiasHost) Run(_ context.Context, req pipeline.CaptureRun) (*pipeline.CaptureResult, error) {
	const rows, cols = 4, 4
	f32 := func(vs []float32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	x, bias, out := make([]float32, rows*cols), []float32{1, -1, 0.5, 2}, make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(i)
		out[i] = 2*x[i] + bias[i%cols]
	}
	files := map[string][]byte{"x.bin": f32(x), "bias.bin": f32(bias), "out_before.bin": make([]byte, 4*rows*cols),
		"out_after.bin": f32(out)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(req.CaptureDir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	ptr := func(i int, name, role, before, after string, shape ...int) map[string]any {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return map[string]any{"index": i, "name": name, "kind": "pointer", "ctype": "float*", "dtype": "float32",
			"address": "0x" + strconv.FormatInt(int64(0x1000*(i+1)), 16),
			"alloc":   map[string]any{"id": i, "bytes": 4 * n, "origin": "torch"}, "extent_bytes": 4 * n,
			"shape_hint": shape, "read": role == "input", "written": role == "output", "read_known": true, "role": role,
			"before": before, "after": after}
	}
	scalar := func(i int, name string, v int) map[string]any {
		return map[string]any{"index": i, "name": name, "kind": "scalar", "ctype": "int", "dtype": "int32", "value": v}
	}
	l := map[string]any{"schema": kernels.CaptureSchema, "seq": 0, "kernel": "row_bias_kernel",
		"instance": "row_bias_kernel", "grid": []int{1, 1, 1}, "block": []int{256, 1, 1}, "shared_bytes": 0,
		"roles_from": "access", "args": []any{ptr(0, "x", "input", "x.bin", "x.bin", rows, cols),
			ptr(1, "bias", "input", "bias.bin", "bias.bin", cols),
			ptr(2, "out", "output", "out_before.bin", "out_after.bin", rows, cols), scalar(3, "rows", rows),
			scalar(4, "cols", cols)}}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(req.CaptureDir, "launches.jsonl"), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return &pipeline.CaptureResult{Passed: 1}, nil
}

func (rowBiasHost) ReadCaptures(dir string) ([]kernels.CapturedLaunch, error) {
	return kernels.ReadLaunches(dir)
}

func (rowBiasHost) Preprocess(_ context.Context, src string) (string, error) { return src, nil }

// TestSizesFromTheLauncherProvenApart: the repository's only launch of
// row_bias_kernel has rows = cols = 4, so the launch's values cannot tell
// the two apart (the spec would fix both at 4 and the op raise at any other
// shape). The launcher names them (rows = x.size(0), cols = x.size(1)):
// the captured spec makes them sizes of their own, the validator runs the
// original and the draft at shapes where they differ and past the
// launch's, and the draft is proven on every one.
func TestSizesFromTheLauncherProvenApart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := e2ePython(t)
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "launcher_sizes"))); err != nil {
		t.Fatal(err)
	}
	sv := validators.NewStageValidator(validators.Options{Python: py, Timeout: 240 * time.Second})
	t.Cleanup(func() { sv.Close() })
	w := pipeline.NewKernelWork(sv)
	w.Kernels.Capture = &pipeline.CaptureStage{Host: rowBiasHost{}, CacheDir: t.TempDir()}
	w.Wire = true
	opts := pipeline.Options{Root: root, Version: "test"}
	w.Install(&opts)
	run, err := pipeline.Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var k *pipeline.Kernel
	for _, x := range run.Kernels {
		if x.Name == "row_bias_kernel" {
			k = x
		}
	}
	if k == nil {
		t.Fatalf("row_bias_kernel not found: %+v", run.Kernels)
	}
	if k.SpecSource != pipeline.SpecTests || k.Draft == nil || k.Draft.Verdict != pipeline.VerdictProven {
		t.Fatalf("row_bias_kernel: spec %s, draft %+v", k.SpecSource, k.Draft)
	}
	apart, wider := false, false
	for _, s := range k.Draft.Shapes {
		sizes := map[string]int{}
		for _, kv := range strings.Split(s, ",") {
			name, v, _ := strings.Cut(kv, "=")
			sizes[name], _ = strconv.Atoi(v)
		}
		apart = apart || sizes["rows"] != sizes["cols"]
		wider = wider || sizes["rows"] > 4 && sizes["cols"] > 4
	}
	if !apart || !wider {
		t.Errorf("proven at %v: want shapes where rows and cols differ, and both past the launch's 4", k.Draft.Shapes)
	}
	t.Logf("proven at %v (%d cases)", k.Draft.Shapes, k.Draft.Stats.Cases)
	// the wired op takes any rows and cols: no one-shape guard
	if k.Draft.Module == "" {
		t.Fatalf("row_bias_kernel proven but not wired: %+v", k.Draft)
	}
	for _, f := range run.Files {
		if f.Path == k.Draft.Module {
			if src := string(f.Updated); !strings.Contains(src, "def row_bias_jax(") || strings.Contains(src, "proven for") {
				t.Errorf("%s: want row_bias_jax with no one-shape guard:\n%s", f.Path, src)
			}
			return
		}
	}
	t.Errorf("generated module %s not in the run's files", k.Draft.Module)
}
