package kernels

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capturedDouble is scale_add_kernel with its spec and cases from one
// float64 launch, before UseCapture.
func capturedDouble(t *testing.T) (*Kernel, *Spec, *Capture) {
	t.Helper()
	k := captureKernel(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "launches.jsonl"), []byte(fakeLaunch(t, dir, 1, 64, "float64", 64)), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := ReadLaunches(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, cp, err := SpecFromLaunches(k, ls)
	if err != nil {
		t.Fatal(err)
	}
	return k, spec, cp
}

// TestFloat32Instance: a template whose tests launch it at double only
// becomes its float32 instantiation when its spec is captured: the unit at
// float, every float64 parameter of the template's type float32, the
// captured buffers rounded to float32, and the spec saying which dtype the
// tests launched.
func TestFloat32Instance(t *testing.T) {
	k, spec, cp := capturedDouble(t)
	k.UseCapture(spec, cp)
	if !strings.Contains(k.Unit.Source, "scale_add_kernel<float>(const int n, const float* x") || !strings.HasSuffix(k.Unit.Entry, "scale_add_kernel<float>") {
		t.Errorf("unit not the float instance: entry %s\n%s", k.Unit.Entry, k.Unit.Source)
	}
	if k.TemplateArgs["T"] != "float" || spec.TemplateArgs["T"] != "float" {
		t.Errorf("template args %v, spec %v", k.TemplateArgs, spec.TemplateArgs)
	}
	for _, p := range spec.Params {
		want := map[string]string{"n": "int32", "x": "float32", "y": "float32", "alpha": "float32", "out": "float32"}[p.Name]
		if p.DType != want || strings.Contains(p.CType, "double") {
			t.Errorf("%s: dtype %s ctype %q, want %s", p.Name, p.DType, p.CType, want)
		}
	}
	if spec.LaunchedDType != "float64" || !strings.Contains(spec.Note, "validated at float32 (scale_add_kernel<float>") {
		t.Errorf("launched %q, note %q", spec.LaunchedDType, spec.Note)
	}
	c := cp.Cases[0]
	x := c.Args["x"].(*CapturedBuffer)
	out := c.Expected["out"]
	if x.DType != "float32" || len(x.Data) != 64*4 || out.DType != "float32" || len(out.Data) != 64*4 {
		t.Fatalf("buffers not float32: x %s %d bytes, out %s %d bytes", x.DType, len(x.Data), out.DType, len(out.Data))
	}
	for i := range 64 {
		if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out.Data[4*i:])), float32(1.5*float64(i)+1); got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
	if !strings.HasSuffix(c.Label, "float64 buffers rounded to float32") {
		t.Errorf("label %q", c.Label)
	}
	if Float32Instance(k) {
		t.Error("a float32 instance made again")
	}
}

// TestFloat32InstanceNeedsTheTemplatesType: a float64 parameter the kernel
// declares double itself (not the template parameter) keeps the kernel at
// float64, as does a kernel without template arguments.
func TestFloat32InstanceNeedsTheTemplatesType(t *testing.T) {
	k, spec, cp := capturedDouble(t)
	k.sig[1].base = "double" // x declared `const double*`
	k.UseCapture(spec, cp)
	if spec.LaunchedDType != "" || spec.Params[1].DType != "float64" || spec.Params[4].DType != "float64" ||
		!strings.Contains(k.Unit.Source, "scale_add_kernel<double>") {
		t.Errorf("converted a declared double: launched %q, x %s, out %s", spec.LaunchedDType, spec.Params[1].DType, spec.Params[4].DType)
	}
	if cp.Cases[0].Expected["out"].DType != "float64" {
		t.Error("captured buffers rounded")
	}
	k2, spec2, _ := capturedDouble(t)
	spec2.TemplateArgs = nil
	k2.Spec = spec2
	if Float32Instance(k2) || spec2.Params[1].DType != "float64" {
		t.Error("converted a spec without template arguments")
	}
}
