package pallas_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/pallas"
)

// TestPlaneHelpers runs the helpers of the plane form (testdata/
// plane_check.py): _plane's strides and offsets on max pooling's addresses
// and its refusals (a read one past the plane, steps that are not whole
// rows or the plane, a 1-D array, too many planes, no iterations, over the
// VMEM budget), _plane_view's orders at shapes whose XLA layouts were
// measured and _plane_layout's blocks and fallbacks, _window_read's
// windows equal to numpy's strided slices in interpret mode, with planes
// over 128 lanes and windows over 128 rows, then compiled by Mosaic for
// v5e, v6e and TPU7x.
func TestPlaneHelpers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := testPython(t)
	src := filepath.Join(t.TempDir(), "plane.py")
	if err := os.WriteFile(src, []byte(pallas.HelperSource("_plane", "_plane_scratch", "_plane_stage", "_window_read", "_plane_view", "_plane_layout")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "testdata/plane_check.py", src, "--compile").CombinedOutput()
	t.Logf("%s", lastLines(string(out), 30))
	if err != nil {
		t.Fatalf("plane helpers: %v", err)
	}
	if !strings.Contains(string(out), "\n0 failures") {
		t.Errorf("the check did not end with 0 failures")
	}
	if n := strings.Count(string(out), ": compiled"); n != 9 {
		t.Errorf("%d of 9 window cases compiled (3 shapes, 3 chips)", n)
	}
}
