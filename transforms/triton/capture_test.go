package triton

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// capturedJSON is what triton_capture.py records for fixtures/triton_capture's
// tests (two scale_shift launches, one multi_row_sum launch), plus one
// scale_shift launch on a strided view and one the interpreter did not
// finish.
const capturedJSON = `[
 {"kernel": "scale_shift_kernel", "module": "pkg.ops", "test": "t::big", "grid": [4], "order": ["X", "Y", "n", "alpha", "beta"], "ok": true,
  "args": {"X": {"tensor": true, "shape": [1000], "dtype": "float32", "strides": [1], "contiguous": true, "extent": 1000},
           "Y": {"tensor": true, "shape": [1000], "dtype": "float32", "strides": [1], "contiguous": true, "extent": 1000, "written": true},
           "n": {"scalar": "int", "value": 1000}, "alpha": {"scalar": "float", "value": 1.5}, "beta": {"scalar": "float", "value": -0.25}},
  "constexprs": {"BLOCK": {"scalar": "int", "value": 256}}},
 {"kernel": "scale_shift_kernel", "module": "pkg.ops", "test": "t::small", "grid": [1], "order": ["X", "Y", "n", "alpha", "beta"], "ok": true,
  "args": {"X": {"tensor": true, "shape": [37], "dtype": "float32", "strides": [1], "contiguous": true, "extent": 37},
           "Y": {"tensor": true, "shape": [37], "dtype": "float32", "strides": [1], "contiguous": true, "extent": 37, "written": true},
           "n": {"scalar": "int", "value": 37}, "alpha": {"scalar": "float", "value": 1.0}, "beta": {"scalar": "float", "value": 0.0}},
  "constexprs": {"BLOCK": {"scalar": "int", "value": 256}}},
 {"kernel": "scale_shift_kernel", "module": "pkg.ops", "test": "t::view", "grid": [1], "order": ["X", "Y", "n", "alpha", "beta"], "ok": true,
  "args": {"X": {"tensor": true, "shape": [8], "dtype": "float32", "strides": [2], "contiguous": false, "extent": 15},
           "Y": {"tensor": true, "shape": [8], "dtype": "float32", "strides": [1], "contiguous": true, "extent": 8, "written": true},
           "n": {"scalar": "int", "value": 8}, "alpha": {"scalar": "float", "value": 1.0}, "beta": {"scalar": "float", "value": 0.0}},
  "constexprs": {"BLOCK": {"scalar": "int", "value": 256}}},
 {"kernel": "scale_shift_kernel", "module": "other.mod", "test": "t::other", "grid": [1], "order": [], "ok": true, "args": {}, "constexprs": {}},
 {"kernel": "multi_row_sum_kernel", "module": "pkg.ops", "test": "t::bad", "grid": [1], "order": [], "ok": false, "error": "RuntimeError: x",
  "args": {}, "constexprs": {}},
 {"kernel": "multi_row_sum_kernel", "module": "pkg.ops", "test": "t::rows", "grid": [3], "order": ["X", "OUT", "n_rows", "n_cols", "stride", "rows_per_program"], "ok": true,
  "args": {"X": {"tensor": true, "shape": [10, 33], "dtype": "float32", "strides": [33, 1], "contiguous": true, "extent": 330},
           "OUT": {"tensor": true, "shape": [10], "dtype": "float32", "strides": [1], "contiguous": true, "extent": 10, "written": true},
           "n_rows": {"scalar": "int", "value": 10}, "n_cols": {"scalar": "int", "value": 33}, "stride": {"scalar": "int", "value": 33},
           "rows_per_program": {"scalar": "int", "value": 4}},
  "constexprs": {"BLOCK": {"scalar": "int", "value": 64}}}
]`

func captureFixture(t *testing.T) (*Inventory, []CapturedLaunch) {
	t.Helper()
	inv, err := Discover(context.Background(), filepath.Join("..", "..", "fixtures", "triton_capture"))
	if err != nil {
		t.Fatal(err)
	}
	var ls []CapturedLaunch
	if err := json.Unmarshal([]byte(capturedJSON), &ls); err != nil {
		t.Fatal(err)
	}
	return inv, ls
}

// TestCapturedSizesLeadTheSweep: the translated kernel's inferred spec takes
// the sizes of the captured launches it describes exactly (smallest
// first), and leaves out a strided view with the reason.
func TestCapturedSizesLeadTheSweep(t *testing.T) {
	inv, ls := captureFixture(t)
	k := inv.Kernel("pkg/ops.py", "scale_shift_kernel")
	a, _, err := Translate(context.Background(), inv, k)
	if err != nil {
		t.Fatal(err)
	}
	spec, call, err := Spec(a)
	if err != nil {
		t.Fatal(err)
	}
	ok, bad := ForKernel(ls, k)
	if len(ok) != 3 || len(bad) != 0 {
		t.Fatalf("launches of %s: %d finished, %d not; want 3 and 0 (another module's kernel of the same name is not its)", k.Name, len(ok), len(bad))
	}
	sizes, skipped := CapturedSizes(spec, call, ok)
	if len(sizes) != 2 || sizes[0]["n"] != 37 || sizes[1]["n"] != 1000 {
		t.Errorf("captured sizes %v, want n=37 then n=1000", sizes)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "t::view") || !strings.Contains(skipped[0], "contiguous false") {
		t.Errorf("left out %q, want the strided view of t::view", skipped)
	}
}

// TestSpecFromCapture: a kernel the rules refuse gets the spec of its
// smallest finished launch as it happened, and a kernel-mode call that
// replays it on the isolated kernel.
func TestSpecFromCapture(t *testing.T) {
	inv, ls := captureFixture(t)
	k := inv.Kernel("pkg/ops.py", "multi_row_sum_kernel")
	if _, _, err := Translate(context.Background(), inv, k); err == nil {
		t.Fatal("the rules translate multi_row_sum_kernel: the fixture no longer shows a refused kernel")
	}
	ok, bad := ForKernel(ls, k)
	if len(ok) != 1 || len(bad) != 1 {
		t.Fatalf("launches: %d finished, %d not; want 1 and 1", len(ok), len(bad))
	}
	spec, call, err := SpecFromCapture(inv, k, ok)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range spec.Params {
		s := p.Name + ":" + p.Role + ":" + p.DType + ":" + strings.Join(p.Shape, "x")
		if p.Value != nil {
			s += "=" + strconv.FormatFloat(*p.Value, 'g', -1, 64)
		}
		got = append(got, s)
	}
	want := "X:input:float32:10x33 OUT:inout:float32:10 n_rows:scalar:int32:=10 n_cols:scalar:int32:=33 stride:scalar:int32:=33 rows_per_program:scalar:int32:=4"
	if strings.Join(got, " ") != want {
		t.Errorf("params\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if err := call.Check(spec); err != nil {
		t.Fatal(err)
	}
	if strings.Join(call.Grid, ",") != "3" || call.Constexprs["BLOCK"] != "64" || strings.Join(call.Returns, ",") != "OUT" ||
		strings.Join(call.Args, ",") != "X,OUT,n_rows,n_cols,stride,rows_per_program" || len(call.Files) != 1 {
		t.Errorf("call %+v", call)
	}
	if !strings.Contains(spec.Note, "t::rows") {
		t.Errorf("note %q does not name the test", spec.Note)
	}
}
