package validators

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/triton"
)

// TestTritonDriveLaunchers drives fixtures/triton_drive's launchers (no
// tests there) in the sandbox and checks the launches as they were: the
// runtime constexprs of row_sum (77 columns: BLOCK = min(next_power_of_2(77),
// 64) = 64, TILES = cdiv(77, 64) = 2, grid the 5 rows), scale_rows after its
// assert's message chose 128 columns, half_relu after its TypeError chose
// float16 (and 77 x 5 = 385 elements: a last block that is masked), rms_norm
// on a view; the nested launcher is PTR010.
func TestTritonDriveLaunchers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Triton's interpreter (-short)")
	}
	py := testPython(t)
	root := filepath.Join("..", "fixtures", "triton_drive")
	files := map[string][]byte{}
	for _, f := range []string{"pkg/__init__.py", "pkg/ops.py"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	var ls []triton.Launcher
	for _, fn := range []string{"row_sum", "scale_rows", "half_relu", "rms_norm", "double"} {
		ls = append(ls, triton.Launcher{Module: "pkg.ops", Function: fn, Path: "pkg/ops.py"})
	}
	res, err := TritonDrive{}.Drive(context.Background(), triton.DriveRun{Files: files, Packages: []string{"pkg"},
		Launchers: ls, MaxLaunches: 4, Tries: 12, Python: py})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	status := map[string]triton.DrivenLauncher{}
	for _, l := range res.Launchers {
		status[l.Function] = l
	}
	for _, fn := range []string{"row_sum", "scale_rows", "half_relu", "rms_norm"} {
		if status[fn].Status != "ok" {
			t.Errorf("%s: %s %s (tries %v)", fn, status[fn].Code, status[fn].Error, status[fn].Tries)
		}
	}
	if d := status["double"]; d.Code != triton.CodeDriveLauncher {
		t.Errorf("double: %q %q, want %s", d.Code, d.Error, triton.CodeDriveLauncher)
	}
	if tr := status["scale_rows"].Tries; len(tr) < 2 || !strings.Contains(tr[0].Error, "multiple of 16") {
		t.Errorf("scale_rows tries %v: want the assert first, then a try that ran", tr)
	}
	first := map[string]triton.CapturedLaunch{}
	for _, l := range res.Launches {
		if _, ok := first[l.Kernel]; !ok && l.OK {
			first[l.Kernel] = l
		}
	}
	val := func(l triton.CapturedLaunch, name string) string { return fmt.Sprint(l.Constexprs[name].Value) }
	if l := first["_tiled_row_sum_kernel"]; fmt.Sprint(l.Grid) != "[5]" || val(l, "BLOCK") != "64" || val(l, "TILES") != "2" ||
		fmt.Sprint(l.Args["X"].Shape) != "[5 77]" {
		t.Errorf("row_sum launch: grid %v, X %v, constexprs %v", l.Grid, l.Args["X"].Shape, l.Constexprs)
	}
	if l := first["_scale_rows_kernel"]; fmt.Sprint(l.Args["X"].Shape) != "[5 128]" || val(l, "BLOCK") != "128" {
		t.Errorf("scale_rows launch: X %v, constexprs %v", l.Args["X"].Shape, l.Constexprs)
	}
	if l := first["_half_relu_kernel"]; l.Args["X"].DType != "float16" || fmt.Sprint(l.Grid) != "[4]" {
		t.Errorf("half_relu launch: X %s %v, grid %v", l.Args["X"].DType, l.Args["X"].Shape, l.Grid)
	}
	if l := first["_rms_kernel"]; l.Kernel == "" || !l.Args["Y"].Written {
		t.Errorf("rms_norm launch: %+v", l)
	}
	dtypes := map[string]bool{}
	for _, l := range res.Launches {
		if l.Kernel == "_rms_kernel" {
			dtypes[l.Args["X"].DType] = true
		}
	}
	if !dtypes["float32"] || !dtypes["float16"] || !dtypes["bfloat16"] {
		t.Errorf("rms_norm ran on %v: want float32, float16 and bfloat16", dtypes)
	}
}
