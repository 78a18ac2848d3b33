package validators

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// axpyCapture is one captured axpy launch (out = alpha*x + y) of n elements.
func axpyCapture(t *testing.T, n int, alpha float64) []byte {
	t.Helper()
	f32 := func(f func(i int) float32) []byte {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f(i)))
		}
		return b
	}
	x := func(i int) float32 { return float32(i%97) / 7 }
	y := func(i int) float32 { return 1 - float32(i%13) }
	shape := []int64{int64(n)}
	c := kernels.CapturedCase{Label: "launch 1 (axpy_kernel) of tests/test_axpy.py", Sizes: map[string]int64{"n": int64(n)},
		Launch: [7]int64{int64((n + 255) / 256), 1, 1, 256, 1, 1, 0},
		Args: map[string]any{"x": &kernels.CapturedBuffer{DType: "float32", Shape: shape, Data: f32(x)},
			"y": &kernels.CapturedBuffer{DType: "float32", Shape: shape, Data: f32(y)}, "alpha": alpha, "n": n},
		Expected: map[string]kernels.CapturedBuffer{"out": {DType: "float32", Shape: shape,
			Data: f32(func(i int) float32 { return float32(alpha)*x(i) + y(i) })}}}
	b, err := kernels.CapturedCasesJSON("axpy", []kernels.CapturedCase{c})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A candidate right on every generated shape but wrong at the size the
// repository really launches is rejected on the captured launch; the same
// candidate without the capture is proven (and the capture is part of the
// cache key).
func TestValidateCapturedCases(t *testing.T) {
	py := testPython(t)
	capped, err := os.ReadFile("harness/tests/data/axpy/capped_grid.py")
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	opt := Options{Python: py, CacheDir: cache, Quick: true, Seeds: 2, Timeout: 120 * time.Second, NoSandbox: (&sbWrap{}).check() != nil}
	req := axpyRequest(t, string(capped))
	v, err := Validate(context.Background(), req, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Proven() {
		t.Fatalf("without captures: %s %q\n%s", v.Verdict, v.Reason, v.Output)
	}
	req.Captured = axpyCapture(t, 4099, 0.75)
	v, err = Validate(context.Background(), req, opt)
	if err != nil {
		t.Fatal(err)
	}
	if v.Cached || v.Verdict != Rejected || v.Code() != "V-MISMATCH" || !strings.Contains(v.Reason, "launch 1 (axpy_kernel) of tests/test_axpy.py") {
		t.Fatalf("with the capture: %s %q cached=%v\n%s", v.Verdict, v.Reason, v.Cached, v.Output)
	}
	req.Candidate = []byte(goodAxpy(t))
	if v, err = Validate(context.Background(), req, opt); err != nil || !v.Proven() {
		t.Fatalf("good candidate on the capture: %v %+v", err, v)
	}
}
