package pallas_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/pallas"
)

// TestHalfBitsExact runs the float16 bit helpers the drafts use (_h2f
// decodes a float16 array's int16 bits in the kernel, _f2h encodes a
// float32 value as __float2half rounds it) against numpy's float16
// conversion: all 65536 bit patterns decoded, every half value, tie and
// tie neighbour, the subnormal and overflow boundaries, inf, NaN and a
// stripe of float32 bit patterns encoded, in interpret mode; then the two
// compiled by Mosaic for v5e, v6e and TPU7x (no TPU here to run them on).
func TestHalfBitsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := testPython(t)
	src := filepath.Join(t.TempDir(), "half_bits.py")
	if err := os.WriteFile(src, []byte(pallas.HelperSource("_h2f", "_f2h")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "testdata/half_bits_check.py", src, "--compile").CombinedOutput()
	t.Logf("%s", lastLines(string(out), 12))
	if err != nil {
		t.Fatalf("float16 bit helpers: %v", err)
	}
	if n := strings.Count(string(out), " 0 differ from numpy"); n != 2 {
		t.Errorf("%d of the 2 sweeps (decoder, encoder) match numpy", n)
	}
	for _, want := range []string{"_h2f: 65536 float16 bit patterns", "v5e: compiled", "v6e: compiled", "tpu7x: compiled"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in the check's output", want)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
